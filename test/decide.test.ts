import test from 'ava';
import { decide } from '../src/decide/decide.ts';
import type { Evidence, Verdict } from '../src/decide/types.ts';
import { evidenceFor, verdictFor } from '../src/decide/verdict.ts';
import type { KubeObject } from '../src/observe/types.ts';
import { deployment } from './support/objects.ts';

const now = new Date('2026-11-01T12:20:00Z');
const ev = (state: Evidence['state'], extra: Partial<Evidence> = {}): Evidence => ({ apiVersion: 'flagger.app/v1beta1', kind: 'Canary', groupKind: 'flagger.app/Canary', namespace: 'prod', name: 'podinfo', state, reason: 'R', message: '', ...extra });
const target = { name: 't', stuckAfterMs: 15 * 60_000, confirmations: 2, onFailure: { analysis: 'revert' as const, promotion: { waitMs: 10 * 60_000, then: 'revert' as const }, stuck: 'alert' as const } };

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

/* Health right after a sync is not trusted (issue 7, item 3): proved through verdictFor with real-looking objects. */


const resourceOf = (o: KubeObject) => ({ apiVersion: o.apiVersion, kind: o.kind, namespace: o.metadata.namespace, name: o.metadata.name });
const verdictOf = (...objects: KubeObject[]) => {
  const t = { ...target, resources: objects.map(resourceOf) };
  return verdictFor(t, evidenceFor(t, objects.map((object) => ({ object, source: 'test' })), now), now);
};

function application(o: { health: 'Healthy' | 'Degraded' | 'Progressing'; reconciledAt: string; finishedAt: string; phase?: string }): KubeObject {
  const sha = '3f2a6c1d9e8b7a6f5e4d3c2b1a0f9e8d7c6b5a49';
  return {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Application',
    metadata: { name: 'podinfo-prod', namespace: 'argocd', generation: 7 },
    spec: { project: 'default', source: { repoURL: 'https://github.com/acme/gitops', path: 'apps/podinfo/overlays/prod', targetRevision: 'main' }, destination: { server: 'https://kubernetes.default.svc', namespace: 'prod' }, syncPolicy: { automated: { prune: true, selfHeal: true } } },
    status: {
      sync: { status: 'Synced', revision: sha, comparedTo: { source: { repoURL: 'https://github.com/acme/gitops', path: 'apps/podinfo/overlays/prod', targetRevision: 'main' } } },
      health: { status: o.health, ...(o.health === 'Degraded' ? { message: 'Deployment "podinfo" exceeded its progress deadline' } : {}), lastTransitionTime: '2026-11-01T11:00:00Z' },
      operationState: {
        operation: { sync: { revision: sha }, initiatedBy: { automated: true } },
        phase: o.phase ?? 'Succeeded', message: 'successfully synced (all tasks run)',
        syncResult: { revision: sha, resources: [{ group: 'apps', version: 'v1', kind: 'Deployment', namespace: 'prod', name: 'podinfo', status: 'Synced', message: 'deployment.apps/podinfo configured', syncPhase: 'Sync' }] },
        startedAt: '2026-11-01T12:10:00Z', finishedAt: o.finishedAt,
      },
      reconciledAt: o.reconciledAt,
      history: [{ id: 12, revision: sha, deployedAt: o.finishedAt, deployStartedAt: '2026-11-01T12:10:00Z' }],
      resourceHealthSource: 'appTree',
    },
  };
}

test('after a sync: an Argo CD Application whose health was computed before the sync finished is progressing, not healthy', (t) => {
  const stale = verdictOf(application({ health: 'Healthy', reconciledAt: '2026-11-01T12:10:01Z', finishedAt: '2026-11-01T12:10:05Z' }));
  t.is(stale.verdict, 'progressing', stale.summary);
  const fresh = verdictOf(application({ health: 'Healthy', reconciledAt: '2026-11-01T12:10:30Z', finishedAt: '2026-11-01T12:10:05Z' }));
  t.is(fresh.verdict, 'healthy', fresh.summary);
});

test('after a sync: a Degraded health from before the sync finished is not a failure (no revert on stale health)', (t) => {
  const stale = verdictOf(application({ health: 'Degraded', reconciledAt: '2026-11-01T12:10:01Z', finishedAt: '2026-11-01T12:10:05Z' }));
  t.is(stale.verdict, 'progressing', stale.summary);
  t.is(decide({ verdict: stale, target, now, observations: 5 }).action, 'none');
  const fresh = verdictOf(application({ health: 'Degraded', reconciledAt: '2026-11-01T12:15:00Z', finishedAt: '2026-11-01T12:10:05Z' }));
  t.is(fresh.verdict, 'failed', fresh.summary);
});

test('after a sync: a Deployment whose observedGeneration lags its generation is progressing, even with a stale healthy or failed status', (t) => {
  const available = deployment({ image: 'ghcr.io/stefanprodan/podinfo:6.1.0', state: 'available' }) as KubeObject;
  t.is(verdictOf(available).verdict, 'healthy');
  const newSpec = { ...available, metadata: { ...available.metadata, generation: 3 } };
  t.is(verdictOf(newSpec).verdict, 'progressing');
  const deadline = deployment({ image: 'ghcr.io/stefanprodan/podinfo:6.1.0', state: 'deadline' }) as KubeObject;
  t.is(verdictOf(deadline).verdict, 'failed');
  const deadlineOfOldSpec = { ...deadline, metadata: { ...deadline.metadata, generation: 3 } };
  const v = verdictOf(deadlineOfOldSpec);
  t.is(v.verdict, 'progressing', v.summary);
  t.is(decide({ verdict: v, target, now, observations: 5 }).action, 'none');
});
