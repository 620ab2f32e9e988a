import test from 'ava';
import fc from 'fast-check';
import type { Evidence, RepoGuards, Verdict, VerdictState } from '../src/decide/types.ts';
import { verdictFor } from '../src/decide/verdict.ts';
import { acted, evaluate, NEW_TRACK, observe, retryDelay, type EvaluateInput, type Track, type TrackedTarget } from '../src/decide/tracker.ts';

/** The tracker with plain data: verdicts made by the engine's own verdictFor from hand-written evidence. */

const T0 = Date.parse('2026-11-01T12:00:00Z');
const iso = (ms: number) => new Date(ms).toISOString();
const MIN = 60_000;

const target: TrackedTarget & { name: string } = {
  name: 'podinfo-prod',
  confirmations: 2,
  stuckAfterMs: 15 * MIN,
  onFailure: { analysis: 'revert', promotion: { waitMs: 10 * MIN, then: 'revert' }, stuck: 'alert' },
  settle: false,
};

const SHA = 'c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3';
function ev(state: Evidence['state'], extra: Partial<Evidence> = {}): Evidence {
  return {
    apiVersion: 'flagger.app/v1beta1', kind: 'Canary', groupKind: 'flagger.app/Canary', namespace: 'prod', name: 'podinfo',
    state, reason: state === 'failed' ? 'Failed' : 'R', message: '', attempted: { sha: SHA }, ...extra,
  };
}

/** A verdict of the given state at `now`; failures began at `since` (default: now). */
function verdict(state: VerdictState, now: number, opts: { since?: number; terminal?: boolean; cls?: 'analysis' | 'promotion'; sha?: string; noSince?: boolean } = {}): Verdict {
  const since = opts.noSince ? undefined : iso(opts.since ?? now);
  const attempted = { sha: opts.sha ?? SHA };
  const evidence =
    state === 'healthy' ? [ev('healthy', { attempted })]
    : state === 'failed' ? [ev('failed', { failureClass: opts.cls ?? 'analysis', terminal: opts.terminal ?? false, attempted, ...(since ? { since } : {}) })]
    : [ev('progressing', { attempted, ...(since ? { since } : {}) })];
  const v = verdictFor(target, evidence, new Date(now));
  if (state !== 'progressing' && v.verdict !== state) throw new Error(`built a ${v.verdict} verdict, wanted ${state}`);
  return v;
}

const input = (v: Verdict, now: number, extra: Partial<EvaluateInput> = {}): EvaluateInput => ({ verdict: v, target, now, intervalMs: 10_000, ...extra });

/** observe then evaluate, as a door does. */
function step(track: Track, v: Verdict, now: number, extra: Partial<EvaluateInput> = {}) {
  const next = observe(track, v, now);
  return { track: next, e: evaluate(next, input(v, now, extra)) };
}

test('confirmations: a non-final failure is acted on at the second failed observation in a row, not the first', (t) => {
  let track = NEW_TRACK;
  let r = step(track, verdict('failed', T0), T0);
  t.is(r.e.decision.action, 'wait');
  t.is(r.e.decision.heldBy, 'confirmations');
  t.false(r.e.act);
  t.false(r.e.settled);
  t.is(r.e.nextAt, T0 + 10_000, 'looks again after the interval, with no new event');
  track = r.track;
  r = step(track, verdict('failed', T0 + 10_000, { since: T0 }), T0 + 10_000);
  t.is(r.e.decision.action, 'revert');
  t.true(r.e.act);
  t.true(r.e.settled);
});

test("confirmations: the engine's final verdict needs none", (t) => {
  const { e } = step(NEW_TRACK, verdict('failed', T0, { terminal: true }), T0);
  t.is(e.decision.action, 'revert');
  t.true(e.act);
  t.true(e.settled);
});

const states = fc.constantFrom<VerdictState>('healthy', 'progressing', 'failed');

test('property: failedInARow is the length of the trailing run of failed observations', (t) => {
  fc.assert(fc.property(fc.array(states, { maxLength: 40 }), (seq) => {
    let track = NEW_TRACK;
    seq.forEach((s, i) => (track = observe(track, verdict(s, T0 + i * 1000, { since: T0 }), T0 + i * 1000)));
    let run = 0;
    for (let i = seq.length - 1; i >= 0 && seq[i] === 'failed'; i--) run++;
    return track.failedInARow === run;
  }));
  t.pass();
});

test('property: a non-final failure is reverted exactly when it has been seen failed `confirmations` times in a row', (t) => {
  fc.assert(fc.property(fc.array(states, { minLength: 1, maxLength: 30 }), fc.integer({ min: 1, max: 5 }), (seq, confirmations) => {
    const tgt = { ...target, confirmations };
    let track = NEW_TRACK;
    let run = 0;
    for (const [i, s] of seq.entries()) {
      const now = T0 + i * 1000;
      track = observe(track, verdict(s, now, { since: T0 }), now);
      run = s === 'failed' ? run + 1 : 0;
      const e = evaluate(track, { verdict: verdict(s, now, { since: T0 }), target: tgt, now, intervalMs: 5000 });
      if ((e.decision.action === 'revert') !== (s === 'failed' && run >= confirmations)) return false;
    }
    return true;
  }));
  t.pass();
});

test('property: a door that acts whenever told acts at most once per failure between healthy observations', (t) => {
  const obs = fc.record({ state: states, sha: fc.constantFrom('a'.repeat(40), 'b'.repeat(40)), terminal: fc.boolean(), ok: fc.boolean() });
  fc.assert(fc.property(fc.array(obs, { maxLength: 40 }), (seq) => {
    let track = NEW_TRACK;
    let acts = new Map<string, number>();
    let lastErrorAt = new Map<string, number>();
    for (const [i, o] of seq.entries()) {
      const now = T0 + i * 500;
      const v = verdict(o.state, now, { since: T0, sha: o.sha, terminal: o.terminal });
      track = observe(track, v, now);
      if (o.state === 'healthy') acts = new Map();
      const e = evaluate(track, input(v, now));
      if (!e.act) continue;
      const key = e.failureKey!;
      const okBefore = (acts.get(key) ?? 0) > 0 && !lastErrorAt.has(key);
      if (okBefore) return false; // acted on a failure that had already gone through
      const errAt = lastErrorAt.get(key);
      if (errAt !== undefined && now < errAt + retryDelay(1)) return false; // retried before its backoff
      acts.set(key, (acts.get(key) ?? 0) + 1);
      if (o.ok) lastErrorAt.delete(key);
      else lastErrorAt.set(key, now);
      track = acted(track, key, o.ok, now);
    }
    return true;
  }));
  t.pass();
});

test('a failed attempt is retried after its backoff, which grows; a success ends the retries', (t) => {
  const v = verdict('failed', T0, { terminal: true });
  let track = observe(NEW_TRACK, v, T0);
  let e = evaluate(track, input(v, T0));
  track = acted(track, e.failureKey!, false, T0);
  e = evaluate(track, input(v, T0 + 500));
  t.false(e.act);
  t.is(e.nextAt, T0 + retryDelay(1));
  e = evaluate(track, input(v, T0 + retryDelay(1)));
  t.true(e.act);
  track = acted(track, e.failureKey!, false, T0 + 1000);
  t.is(track.acted?.at(-1)?.attempts, 2);
  t.is(evaluate(track, input(v, T0 + 2000)).nextAt, T0 + 1000 + retryDelay(2));
  t.true(retryDelay(2) > retryDelay(1));
  track = acted(track, e.failureKey!, true, T0 + 3000);
  t.false(evaluate(track, input(v, T0 + 10 * MIN)).act);
});

test('a new failing revision is a new failure; a healthy observation forgets what was acted on', (t) => {
  let track = observe(NEW_TRACK, verdict('failed', T0, { terminal: true }), T0);
  let e = evaluate(track, input(verdict('failed', T0, { terminal: true }), T0));
  track = acted(track, e.failureKey!, true, T0);
  const other = verdict('failed', T0 + 1000, { terminal: true, sha: 'd'.repeat(40) });
  track = observe(track, other, T0 + 1000);
  e = evaluate(track, input(other, T0 + 1000));
  t.true(e.act, 'another revision fails: act');
  track = acted(track, e.failureKey!, true, T0 + 1000);
  track = observe(track, verdict('healthy', T0 + 2000), T0 + 2000);
  t.is(track.acted, undefined);
});

test('property: a policy wait fires on time — held until it ends, and looked at again exactly then', (t) => {
  fc.assert(fc.property(fc.integer({ min: 1, max: 30 }), fc.integer({ min: 0, max: 29 * MIN }), (waitMin, elapsed) => {
    fc.pre(elapsed < waitMin * MIN);
    const tgt: TrackedTarget = { ...target, onFailure: { ...target.onFailure, promotion: { waitMs: waitMin * MIN, then: 'revert' } }, maxAgeMs: undefined };
    const now = T0 + elapsed;
    const v = verdict('failed', now, { since: T0, terminal: true, cls: 'promotion' });
    const track = observe(NEW_TRACK, v, now);
    const e = evaluate(track, { verdict: v, target: tgt, now, intervalMs: 10_000 });
    if (e.decision.heldBy !== 'wait' || e.act) return false;
    if (e.nextAt !== T0 + waitMin * MIN + 1) return false;
    const later = verdict('failed', e.nextAt, { since: T0, terminal: true, cls: 'promotion' });
    const at = evaluate(observe(track, later, e.nextAt), { verdict: later, target: tgt, now: e.nextAt, intervalMs: 10_000 });
    return at.decision.action === 'revert' && at.act;
  }));
  t.pass();
});

test('property: stuckAfter fires on time — a target progressing since S is looked at again at S + stuckAfter, and is stuck then', (t) => {
  fc.assert(fc.property(fc.integer({ min: 1, max: 60 }), fc.integer({ min: 0, max: 59 * MIN }), (stuckMin, elapsed) => {
    fc.pre(elapsed < stuckMin * MIN);
    const tgt = { ...target, stuckAfterMs: stuckMin * MIN };
    const now = T0 + elapsed;
    const v = verdictFor(tgt, [ev('progressing', { since: iso(T0) })], new Date(now));
    if (v.verdict !== 'progressing') return false;
    const e = evaluate(observe(NEW_TRACK, v, now), { verdict: v, target: tgt, now, intervalMs: 10_000 });
    if (e.nextAt !== T0 + stuckMin * MIN + 1) return false;
    return verdictFor(tgt, [ev('progressing', { since: iso(T0) })], new Date(e.nextAt)).verdict === 'stuck';
  }));
  t.pass();
});

test('property: nextAt is always in the future, and evaluate neither changes its inputs nor depends on anything else', (t) => {
  const obs = fc.record({ state: states, since: fc.integer({ min: -40 * MIN, max: 0 }), terminal: fc.boolean(), cls: fc.constantFrom<'analysis' | 'promotion'>('analysis', 'promotion') });
  fc.assert(fc.property(fc.array(obs, { minLength: 1, maxLength: 20 }), (seq) => {
    let track = NEW_TRACK;
    for (const [i, o] of seq.entries()) {
      const now = T0 + i * 7000;
      const v = verdict(o.state, now, { since: now + o.since, terminal: o.terminal, cls: o.cls });
      track = observe(track, v, now);
      const frozen = deepFreeze(structuredClone({ track, v }));
      const a = evaluate(frozen.track, input(frozen.v, now));
      const b = evaluate(frozen.track, input(frozen.v, now));
      if (JSON.stringify(a) !== JSON.stringify(b)) return false;
      if (a.nextAt !== undefined && a.nextAt <= now) return false;
    }
    return true;
  }));
  t.pass();
});

function deepFreeze<T>(o: T): T {
  if (o && typeof o === 'object') {
    Object.freeze(o);
    for (const v of Object.values(o)) deepFreeze(v);
  }
  return o;
}

test('settled, as the Action waits: healthy, stuck, or failed and confirmed; progressing and an unconfirmed failure are not', (t) => {
  t.true(step(NEW_TRACK, verdict('healthy', T0), T0).e.settled);
  t.false(step(NEW_TRACK, verdict('progressing', T0), T0).e.settled);
  t.false(step(NEW_TRACK, verdict('failed', T0), T0).e.settled);
  t.true(step(NEW_TRACK, verdict('failed', T0, { terminal: true }), T0).e.settled);
  const stuck = verdictFor(target, [ev('progressing', { since: iso(T0 - 20 * MIN) })], new Date(T0));
  t.is(stuck.verdict, 'stuck');
  t.true(step(NEW_TRACK, stuck, T0).e.settled);
});

test("the door's deadline: a target still progressing is stuck, and the stuck policy decides", (t) => {
  const v = verdict('progressing', T0, { since: T0 - MIN });
  const { e } = step(NEW_TRACK, v, T0, { deadline: '1s' });
  t.true(e.byTracker);
  t.is(e.verdict.verdict, 'stuck');
  t.regex(e.verdict.summary, /^stuck: still Canary prod\/podinfo progressing .* after waiting 1s$/);
  t.is(e.decision.action, 'alert');
  t.true(e.act);
  t.true(e.settled);
});

test('stuck by watching: no object tells since when, so the time this process has watched it counts', (t) => {
  let track = NEW_TRACK;
  let r = step(track, verdict('progressing', T0, { noSince: true }), T0);
  t.is(r.e.nextAt, T0 + target.stuckAfterMs + 1);
  track = r.track;
  r = step(track, verdict('progressing', T0 + 5 * MIN, { noSince: true }), T0 + 5 * MIN);
  t.is(r.e.verdict.verdict, 'progressing');
  r = step(r.track, verdict('progressing', T0 + 15 * MIN + 1, { noSince: true }), T0 + 15 * MIN + 1);
  t.is(r.e.verdict.verdict, 'stuck');
  t.true(r.e.byTracker);
  t.regex(r.e.verdict.summary, /after 15m watched \(limit 15m\)/);
  t.is(r.e.decision.action, 'alert');
});

test('the timers of the guards: freezeUntil, cooldown and maxAge each set when to look again', (t) => {
  const v = verdict('failed', T0, { since: T0 - MIN, terminal: true });
  const track = observe(NEW_TRACK, v, T0);
  const frozen = evaluate(track, { ...input(v, T0), target: { ...target, freezeUntil: iso(T0 + 3 * MIN) } });
  t.is(frozen.decision.heldBy, 'freeze');
  t.is(frozen.nextAt, T0 + 3 * MIN);

  const guards: RepoGuards = { lastRevert: { commit: 'e'.repeat(40), at: iso(T0 - 5 * MIN), deployed: true } };
  const cooling = evaluate(track, { ...input(v, T0, { guards }), target: { ...target, cooldownMs: 30 * MIN } });
  t.is(cooling.decision.heldBy, 'cooldown');
  t.false(cooling.act);
  t.is(cooling.nextAt, T0 + 25 * MIN + 1);

  const held = evaluate(track, { ...input(v, T0, { guards }), target: { ...target, cooldownMs: 30 * MIN, maxAgeMs: 20 * MIN } });
  t.is(held.nextAt, T0 - MIN + 20 * MIN + 1, 'maxAge passes before the cooldown ends');
  const old = verdict('failed', held.nextAt!, { since: T0 - MIN, terminal: true });
  const ignored = evaluate(observe(track, old, held.nextAt!), { ...input(old, held.nextAt!, { guards }), target: { ...target, cooldownMs: 30 * MIN, maxAgeMs: 20 * MIN } });
  t.is(ignored.decision.action, 'none');
  t.is(ignored.decision.heldBy, 'maxAge');
  t.false(ignored.act);
  t.is(ignored.nextAt, undefined, 'nothing left to wait for');
});

test('alerts and hooks are acts too; none is not', (t) => {
  const v = verdict('failed', T0, { terminal: true });
  const track = observe(NEW_TRACK, v, T0);
  t.true(evaluate(track, { ...input(v, T0), target: { ...target, onFailure: { ...target.onFailure, analysis: 'alert' } } }).act);
  t.false(evaluate(track, { ...input(v, T0), target: { ...target, onFailure: { ...target.onFailure, analysis: 'none' } } }).act);
  const hook = { hook: { command: ['true'], timeoutMs: 10_000 }, then: 'none' as const, onHookFailure: 'alert' as const };
  t.true(evaluate(track, { ...input(v, T0), target: { ...target, onFailure: { ...target.onFailure, analysis: hook } } }).act);
});
