/**
 * Upstream semantics of issue 11, each on fixtures (real upstream objects where they exist,
 * SYNTHETIC ones otherwise) and on the message formats the controllers write:
 * Argo Rollouts Experiment, Flux HelmRelease remediation and chart revisions, Flagger ≥ 1.44's failed
 * promotion and its revert hazard, Kargo rollbacks, Argo CD retries and history, the objects a
 * parent names as failing, and the images of failing containers.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import test from 'ava';
import { parseAllDocuments } from 'yaml';
import { assess } from '../src/health/index.ts';
import { healthCheckObjects } from '../src/health/flux.ts';
import { readSnapshots } from '../src/observe/snapshot.ts';
import type { KubeObject } from '../src/observe/types.ts';
import { ROOT } from './support/cli.ts';

const NOW = new Date('2026-08-25T00:00:00Z');
const fixture = async (file: string): Promise<KubeObject> => {
  const observed = await readSnapshots([path.join(ROOT, 'fixtures', file)]);
  if (observed.length !== 1) throw new Error(`${file}: expected one object`);
  return observed[0]!.object;
};
const clone = (o: KubeObject): KubeObject => structuredClone(o);

// ---------- Argo Rollouts Experiment (argo-cd resource_customizations/argoproj.io/Experiment) ----------

test('Experiment: Argo CD test data — a failed or errored experiment is terminal, with the reason Argo Rollouts wrote', async (t) => {
  t.like(assess(await fixture('upstream/experiment/argocd-failedExperiment.yaml'), NOW), { state: 'failed', reason: 'Failed', failureClass: 'analysis', terminal: true });
  const errored = assess(await fixture('upstream/experiment/argocd-errorExperiment.yaml'), NOW);
  t.like(errored, { state: 'failed', reason: 'Error', failureClass: 'promotion', terminal: true });
  t.regex(errored.message, /AnalysisTemplate verification failed/);
  t.deepEqual(assess(await fixture('upstream/experiment/argocd-successfulExperiment.yaml'), NOW).attempted?.images, ['argoproj/rollouts-demo:blue', 'argoproj/rollouts-demo:yellow']);
});

// ---------- Flux HelmRelease ----------

test('HelmRelease rolled back and stalled: terminal failure naming the rollback; chart built from git gives the commit', async (t) => {
  const h = assess(await fixture('synthetic/helmrelease-rollback-remediated-git-chart.yaml'), NOW);
  t.like(h, { state: 'failed', reason: 'RetriesExceeded', terminal: true, failureClass: 'analysis' });
  t.regex(h.message, /RollbackSucceeded: Helm rollback to previous release prod\/podinfo\.v4/);
  t.deepEqual(h.attempted, { raw: '6.6.0+9f8e7d6c5b4a', chart: '6.6.0', chartName: 'podinfo', sha: '9f8e7d6c5b4a' });
  // history[0] is the rollback's own release of the previous chart: deployed, so the last success,
  // with when it last went out (lastDeployed: locate looks for a values change only after it)
  t.deepEqual(h.lastSucceeded, { raw: '6.5.4+1a2b3c4d5e6f', chart: '6.5.4', chartName: 'podinfo', sha: '1a2b3c4d5e6f', at: '2026-08-22T15:19:30Z' });
});

test('HelmRelease: the objects its failed wait names are failingObjects too (helm-controller waits with fluxcd/pkg ssa)', async (t) => {
  const release = clone(await fixture('synthetic/helmrelease-rollback-remediated-git-chart.yaml'));
  const released = release.status.conditions.find((c: { type: string }) => c.type === 'Released');
  released.message = "Helm upgrade failed for release prod/podinfo with chart podinfo@6.6.0+9f8e7d6c5b4a: timeout waiting for: [Deployment/prod/podinfo status: 'InProgress']";
  t.deepEqual(assess(release, NOW).failingObjects, [{ kind: 'Deployment', namespace: 'prod', name: 'podinfo', status: 'InProgress' }]);
});

test('HelmRelease docs history (OCI chart): the +<12 hex> suffix is the OCI digest, never read as a commit', async (t) => {
  const text = await readFile(path.join(ROOT, 'fixtures/upstream/flux-helmrelease/helm-controller-docs-history-example.yaml'), 'utf8');
  const doc = parseAllDocuments(text).map((d) => d.toJS() as KubeObject)[0]!;
  const h = assess(doc, NOW);
  t.deepEqual(h.lastSucceeded, { raw: '6.6.1+0cc9a8446c95', chart: '6.6.1', chartName: 'podinfo', at: '2024-05-07T04:54:55Z' });
});

// ---------- Flux Kustomization: the objects a health check names ----------

const healthCheckMessages: [name: string, message: string, expected: { kind: string; namespace?: string; name: string; status?: string }[]][] = [
  [
    'kustomize-controller ≥ 1.0 with fluxcd/pkg ssa',
    "health check failed after 5m0s: timeout waiting for: [Deployment/prod/podinfo status: 'InProgress', Canary/prod/podinfo status: 'Failed']",
    [
      { kind: 'Deployment', namespace: 'prod', name: 'podinfo', status: 'InProgress' },
      { kind: 'Canary', namespace: 'prod', name: 'podinfo', status: 'Failed' },
    ],
  ],
  ['fail-fast on stalled resources', "health check failed after 109.868605ms: failed early due to stalled resources: [Job/observability/seed status: 'Failed']", [{ kind: 'Job', namespace: 'observability', name: 'seed', status: 'Failed' }]],
  ['the Healthy condition (no prefix)', "timeout waiting for: [Deployment/prod/podinfo status: 'InProgress']", [{ kind: 'Deployment', namespace: 'prod', name: 'podinfo', status: 'InProgress' }]],
  ['kustomize-controller v0.16–v0.x ("Health check failed after …, timeout …")', "Health check failed after 5m0.015112257s, timeout waiting for: [Deployment/cluster-baseline-settings/mic status: 'Failed']", [{ kind: 'Deployment', namespace: 'cluster-baseline-settings', name: 'mic', status: 'Failed' }]],
  [
    'a status with the kstatus error after it, commas included, and a cluster-scoped object',
    "timeout waiting for: [HelmRelease/prod/api status: 'Failed': Helm upgrade failed, rolled back, ClusterRole/api-reader status: 'InProgress']",
    [
      { kind: 'HelmRelease', namespace: 'prod', name: 'api', status: 'Failed' },
      { kind: 'ClusterRole', name: 'api-reader', status: 'InProgress' },
    ],
  ],
  ["an object whose status could not be determined", "timeout waiting for: [can't determine status for Deployment/prod/podinfo]", [{ kind: 'Deployment', namespace: 'prod', name: 'podinfo' }]],
  ['kustomize-controller v0.13 controllers/kustomization_healthcheck.go', "Health check failed for [Deployment 'prod/podinfo' (status 'InProgress'), Service 'prod/podinfo' (status 'Failed')]", [
    { kind: 'Deployment', namespace: 'prod', name: 'podinfo', status: 'InProgress' },
    { kind: 'Service', namespace: 'prod', name: 'podinfo', status: 'Failed' },
  ]],
  ['kustomize-controller v0.6 (no status)', "Health check timed out for [Deployment 'prod/podinfo']", [{ kind: 'Deployment', namespace: 'prod', name: 'podinfo' }]],
  ['a failure that names no objects', 'kustomize build failed: accumulating resources: …', []],
];

for (const [name, message, expected] of healthCheckMessages) {
  test(`Kustomization failingObjects: ${name}`, (t) => {
    t.deepEqual(healthCheckObjects(message), expected);
  });
}

test('Kustomization fixture: failingObjects carry the bare Kind Flux writes and the status as reported', async (t) => {
  const h = assess(await fixture('synthetic/kustomization-health-check-names-objects.yaml'), NOW);
  t.deepEqual(h.failingObjects, [
    { kind: 'Deployment', namespace: 'prod', name: 'podinfo', status: 'InProgress' },
    { kind: 'Canary', namespace: 'prod', name: 'podinfo', status: 'Failed' },
  ]);
  t.like(assess(await fixture('synthetic/kustomization-healthcheckfailed.yaml'), NOW), { failingObjects: [{ kind: 'Deployment', namespace: 'prod', name: 'podinfo' }] });
});

// ---------- Flagger ≥ 1.44 failed promotion ----------

test('Flagger failed promotion: no misleading "scaled to zero" text; the revert hazard read from scheduler.go', async (t) => {
  const h = assess(await fixture('synthetic/flagger-canary-failed-promotion.yaml'), NOW);
  t.like(h, { state: 'failed', reason: 'PromotionFailed', failureClass: 'promotion', terminal: true });
  t.notRegex(h.message, /scaled to zero/);
  t.regex(h.message, /keeps the canary serving at weight 100/);
  t.is(h.revertHazard?.kind, 'flagger-promotion-failure');
  t.regex(h.revertHazard!.message, /rollback\(\).*routes all traffic to the broken primary and scales the healthy canary to zero.*scheduler\.go/);
  // A failed analysis says what Flagger says, and has no hazard.
  const analysis = clone(await fixture('synthetic/flagger-canary-failed-promotion.yaml'));
  analysis.status.canaryWeight = 0;
  const failed = assess(analysis, NOW);
  t.like(failed, { reason: 'Failed', failureClass: 'analysis', message: 'Canary analysis failed, Deployment scaled to zero.' });
  t.is(failed.revertHazard, undefined);
});

// ---------- Kargo ----------

test('Kargo: a rollback Promotion and a Stage promoting its stable Freight carry the engine-rollback hazard', async (t) => {
  const promotion = assess(await fixture('synthetic/kargo-promotion-rollback-failed.yaml'), NOW);
  t.like(promotion, { state: 'failed', reason: 'Errored', revertHazard: { kind: 'engine-rollback' } });
  t.regex(promotion.revertHazard!.message, /kargo\.akuity\.io\/rollback/);

  const stage = await fixture('synthetic/kargo-stage-rollback-in-flight.yaml');
  const inFlight = assess(stage, NOW);
  t.like(inFlight, { state: 'progressing', revertHazard: { kind: 'engine-rollback' } });
  t.regex(inFlight.revertHazard!.message, /Warehouse\/guestbook's stable Freight 0f1e2d3c/);

  const forward = clone(stage);
  forward.status.currentPromotion.freight.name = '2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c';
  t.is(assess(forward, NOW).revertHazard, undefined, 'promoting other Freight is no rollback');
  const errored = await fixture('upstream/kargo/kargo-SYNTHETIC-promotion-errored-argocd-update.yaml');
  t.is(assess(errored, NOW).revertHazard, undefined, 'an ordinary Promotion has no hazard');
});

// ---------- Argo CD ----------

test('Argo CD Degraded: the suspect is the sync before the health onset, not the later auto-synced commit', async (t) => {
  const h = assess(await fixture('synthetic/argocd-application-degraded-later-sync.yaml'), NOW);
  t.like(h, { state: 'failed', reason: 'Degraded', since: '2026-08-24T09:04:00.000Z' });
  t.is(h.terminal, undefined);
  t.deepEqual(h.attempted, { raw: '2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c', sha: '2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c' }, 'the live images belong to the later commit, not to the suspect');
  t.is(h.lastSucceeded?.sha, '1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b');
  t.is(h.notes?.length, 1);
  t.regex(h.notes![0]!, /synced 3c4d5e6f7a8b after the health turned Degraded.*began with 2b3c4d5e6f7a.*later commit is not the suspect/);
  t.deepEqual(h.failingObjects, [{ kind: 'apps/Deployment', namespace: 'prod', name: 'podinfo', status: 'Degraded' }]);
});

test('Argo CD Degraded: a later commit that changed no manifest (Synced, never in history) is not the suspect either', async (t) => {
  const app = clone(await fixture('synthetic/argocd-application-degraded-later-sync.yaml'));
  app.status.history.pop();
  app.status.sync.revision = '4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e';
  const h = assess(app, NOW);
  t.like(h, { attempted: { sha: '2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c', images: ['ghcr.io/stefanprodan/podinfo:6.7.1'] }, lastSucceeded: { sha: '1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b' } });
  t.regex(h.notes![0]!, /^the compared revision 4d5e6f7a8b9c came after the health turned Degraded/);
});

test('Argo CD Degraded: onset after the newest sync → that sync is the suspect, with the live images, no note', async (t) => {
  const app = clone(await fixture('synthetic/argocd-application-degraded-later-sync.yaml'));
  app.status.health.lastTransitionTime = '2026-08-24T09:33:00Z';
  const h = assess(app, NOW);
  t.like(h, { attempted: { sha: '3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d', images: ['ghcr.io/stefanprodan/podinfo:6.7.1'] }, lastSucceeded: { sha: '2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c' } });
  t.is(h.notes, undefined);
});

test('Argo CD Degraded: a re-sync of the same commit proves nothing — lastSucceeded is the newest sync at another revision', async (t) => {
  const app = clone(await fixture('synthetic/argocd-application-degraded-later-sync.yaml'));
  app.status.history[2].revision = app.status.history[1].revision;
  app.status.sync.revision = app.status.history[1].revision;
  app.status.health.lastTransitionTime = '2026-08-24T09:33:00Z';
  t.like(assess(app, NOW), { attempted: { sha: '2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c' }, lastSucceeded: { sha: '1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b' } });
});

test('Argo CD Degraded: a health onset during a sync (after deployStartedAt, before deployedAt) blames that sync', async (t) => {
  const app = clone(await fixture('synthetic/argocd-application-degraded-later-sync.yaml'));
  app.status.history[2].deployedAt = '2026-08-24T09:50:00Z'; // a long PostSync hook
  app.status.health.lastTransitionTime = '2026-08-24T09:40:00Z';
  t.like(assess(app, NOW), { attempted: { sha: '3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d' }, lastSucceeded: { sha: '2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c' } });
});

test('Argo CD Degraded: onset before every recorded sync → no suspect in history, no lastSucceeded, a note', async (t) => {
  const app = clone(await fixture('synthetic/argocd-application-degraded-later-sync.yaml'));
  app.status.health.lastTransitionTime = '2026-08-24T07:00:00Z';
  const h = assess(app, NOW);
  t.is(h.attempted?.sha, '3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d');
  t.is(h.lastSucceeded, undefined);
  t.regex(h.notes![0]!, /before the oldest recorded sync/);
});

test('Argo CD Degraded, onset unknown: the suspect is the deployment that runs (newest history entry), not a compared commit never synced', async (t) => {
  const app = clone(await fixture('synthetic/argocd-application-degraded-later-sync.yaml'));
  delete app.status.health.lastTransitionTime;
  app.status.sync = { status: 'OutOfSync', revision: '4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e' };
  const h = assess(app, NOW);
  t.like(h, { attempted: { sha: '3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d' }, lastSucceeded: { sha: '2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c' } });
  t.regex(h.notes![0]!, /compared revision 4d5e6f7a8b9c was never synced/);
  // Without history (a notification payload): the compared revision, nothing before it.
  delete app.status.history;
  t.like(assess(app, NOW), { attempted: { sha: '4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e' }, lastSucceeded: undefined });
});

test('Argo CD multi-source history keeps revisions[] whole (index-aligned with spec.sources)', async (t) => {
  const app = clone(await fixture('synthetic/argocd-application-degraded-later-sync.yaml'));
  const chart = (v: string) => [app.status.history[0].revision, v];
  app.status.history = [
    { id: 1, revisions: chart('1.14.0'), deployedAt: '2026-08-24T08:00:00Z' },
    { id: 2, revisions: chart('1.15.0'), deployedAt: '2026-08-24T09:00:00Z' },
  ];
  app.status.sync = { status: 'Synced', revisions: chart('1.15.0') };
  const h = assess(app, NOW);
  t.deepEqual(h.attempted?.sources?.map((s) => s.chart ?? s.sha), ['1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b', '1.15.0']);
  t.deepEqual(h.lastSucceeded?.sources?.map((s) => s.chart ?? s.sha), ['1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b', '1.14.0']);
});

test('Argo CD sync failed: the sync result names the object that failed to apply', async (t) => {
  const h = assess(await fixture('synthetic/argocd-application-sync-failed.yaml'), NOW);
  t.deepEqual(h.failingObjects, [{ kind: 'apps/Deployment', namespace: 'prod', name: 'podinfo', status: 'SyncFailed' }]);
});

test('Argo CD retrying a failed automated sync without retry.refresh: a note that the revert waits, and why', async (t) => {
  const app = await fixture('synthetic/argocd-application-sync-retrying.yaml');
  const h = assess(app, NOW);
  t.like(h, { state: 'progressing', reason: 'SyncRunning', attempted: { sha: '5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f' }, lastSucceeded: { sha: '1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b' } });
  t.is(h.notes?.length, 1);
  t.regex(h.notes![0]!, /retrying the failed sync of 5e6f7a8b9c0d \(retry 2 of 5\): a revert commit will not be synced until these retries end/);
  t.regex(h.notes![0]!, /spec\.syncPolicy\.retry\.refresh: true \(Argo CD ≥ 3\.2\)/);

  const refresh = clone(app);
  refresh.status.operationState.operation.retry.refresh = true;
  t.is(assess(refresh, NOW).notes, undefined, 'with refresh the next retry takes the latest revision');

  const endless = clone(app);
  endless.status.operationState.operation.retry.limit = -1;
  t.regex(assess(endless, NOW).notes![0]!, /no limit.*they never end/);

  const defaults = clone(app);
  delete defaults.status.operationState.operation.retry;
  delete defaults.spec.syncPolicy.retry;
  t.regex(assess(defaults, NOW).notes![0]!, /retry 2 of 5/, 'automated syncs retry 5 times by default');

  const manual = clone(app);
  manual.status.operationState.operation.initiatedBy = { username: 'admin' };
  delete manual.spec.syncPolicy.automated;
  t.is(assess(manual, NOW).notes, undefined);

  const over = clone(app);
  over.status.operationState.phase = 'Failed';
  over.status.operationState.message = 'one or more objects failed to apply (retried 5 times).';
  t.is(assess(over, NOW).notes, undefined, 'Failed means the retries are over: a new commit is synced');
});

// ---------- Pods: the failing containers' images ----------

test('Pod: failingImages are the spec images of the failing containers, init containers included', async (t) => {
  const h = assess(await fixture('synthetic/pod-init-container-crashloop.yaml'), NOW);
  t.like(h, { state: 'failed', reason: 'CrashLoopBackOff', failingImages: ['acme/migrate:2.0.0'] });
  t.deepEqual(assess(await fixture('upstream/pod/gitops-engine-pod-imagepullbackoff.yaml'), NOW).failingImages, ['gcr.io/heptio-images/ks-guestbook-demo:0.3']);
  t.deepEqual(assess(await fixture('upstream/pod/gitops-engine-pod-error.yaml'), NOW).failingImages, ['alpine:latest']);
  t.is(assess(await fixture('upstream/pod/gitops-engine-pod-running-restart-always.yaml'), NOW).failingImages, undefined);
});
