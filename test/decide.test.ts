import test from 'ava';
import { decide } from '../src/decide/decide.ts';
import type { Evidence, Verdict } from '../src/decide/types.ts';
import { verdictFor } from '../src/decide/verdict.ts';

const now = new Date('2026-11-01T12:20:00Z');
const ev = (state: Evidence['state'], extra: Partial<Evidence> = {}): Evidence => ({ apiVersion: 'flagger.app/v1beta1', kind: 'Canary', groupKind: 'flagger.app/Canary', namespace: 'prod', name: 'podinfo', state, reason: 'R', message: '', ...extra });
const target = { name: 't', stuckAfterMs: 15 * 60_000, confirmations: 2, onFailure: { analysis: 'revert' as const, promotion: { wait: '10m', then: 'revert' as const }, stuck: 'alert' as const } };

test('verdict: any failed object fails the target; promotion only when every failure says so', (t) => {
  t.is(verdictFor(target, [ev('healthy'), ev('failed', { failureClass: 'analysis' })], now).class, 'analysis');
  t.is(verdictFor(target, [ev('healthy'), ev('failed', { failureClass: 'promotion' })], now).class, 'promotion');
  t.is(verdictFor(target, [ev('failed', { failureClass: 'promotion' }), ev('failed', { failureClass: 'analysis' })], now).class, 'analysis');
  t.is(verdictFor(target, [ev('healthy'), ev('healthy')], now).verdict, 'healthy');
});

test('verdict: progressing past stuckAfter is stuck; suspended and unknown are never stuck', (t) => {
  t.is(verdictFor(target, [ev('progressing', { since: '2026-11-01T12:10:00Z' })], now).verdict, 'progressing');
  t.is(verdictFor(target, [ev('progressing', { since: '2026-11-01T12:04:00Z' })], now).verdict, 'stuck');
  t.is(verdictFor(target, [ev('suspended', { since: '2026-11-01T10:00:00Z' })], now).verdict, 'progressing');
  t.is(verdictFor(target, [ev('unknown', { reason: 'NotFound' })], now).verdict, 'progressing');
});

const failed = (cls: 'analysis' | 'promotion', since: string, terminal = false): Verdict => verdictFor(target, [ev('failed', { failureClass: cls, since, terminal })], now);

test('decide: analysis failures revert once confirmed, or at once when the engine says it is final', (t) => {
  t.is(decide({ verdict: failed('analysis', '2026-11-01T12:19:00Z'), target, now, observations: 1 }).action, 'wait');
  t.is(decide({ verdict: failed('analysis', '2026-11-01T12:19:00Z'), target, now, observations: 2 }).action, 'revert');
  t.is(decide({ verdict: failed('analysis', '2026-11-01T12:19:00Z', true), target, now, observations: 1 }).action, 'revert');
});

test('decide: promotion failures wait for self-heal, then revert', (t) => {
  const early = decide({ verdict: failed('promotion', '2026-11-01T12:15:00Z', true), target, now, observations: 1 });
  t.is(early.action, 'wait');
  t.regex(early.reason, /waiting 5m more/);
  t.is(decide({ verdict: failed('promotion', '2026-11-01T12:05:00Z', true), target, now, observations: 1 }).action, 'revert');
});

test('decide: stuck alerts by default, none ignores', (t) => {
  const stuck = verdictFor(target, [ev('progressing', { since: '2026-11-01T11:00:00Z' })], now);
  t.is(decide({ verdict: stuck, target, now, observations: 1 }).action, 'alert');
  t.is(decide({ verdict: stuck, target: { ...target, onFailure: { ...target.onFailure, stuck: 'none' } }, now, observations: 1 }).action, 'none');
});
