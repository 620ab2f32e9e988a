import test from 'ava';
import { startKubeEmulator, type KubeEmulator } from './support/kube-emulator.ts';
import { deployment, kustomization } from './support/objects.ts';
import {
  backend, canaryObject, cluster, commitsSince, config, configText, failCanary, gitopsRepo, startController, until, type BackendKind,
} from './support/controller-scenario.ts';

/**
 * The controller over time: timers fire with no new event (stuckAfter, a policy wait, the next
 * confirmation), healthy revisions are recorded once, readiness follows the watches.
 */

const KUSTOMIZATION_ONLY = `
      - { apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: apps }`;

async function emptyCluster(): Promise<KubeEmulator> {
  return startKubeEmulator({ namespaces: ['default', 'prod', 'flux-system', 'lastgood'] });
}

/** Resolves when the controller acted, with how long after `from`; asserts the cluster saw no write in between. */
async function actedAfter(kube: KubeEmulator, acted: unknown[], from: number): Promise<number> {
  const rv = kube.resourceVersion;
  await until('the act', () => acted.length > 0, 10_000);
  if (kube.resourceVersion !== rv) {
    // the only writes allowed are the controller's own: its Lease renewals and its Event
    const writes = kube.requests().filter((r) => r.method !== 'GET' && !/leases|events/.test(r.url));
    if (writes.length) throw new Error(`the cluster changed: ${writes.map((w) => w.url).join(', ')}`);
  }
  return Date.now() - from;
}

test('stuckAfter fires on time with no new event: a Kustomization reconciling for longer than stuckAfter is stuck, and its policy reverts', async (t) => {
  const repo = gitopsRepo();
  const kube = await emptyCluster();
  t.teardown(() => kube.close());
  const since = Date.now();
  kube.apply(kustomization({ attempted: `main@sha1:${repo.c3}`, applied: `main@sha1:${repo.c2}`, ready: 'Unknown', since: new Date(since).toISOString() }));
  const be = await backend('local', repo);
  const cfg = config(configText({ url: be.url, resources: KUSTOMIZATION_ONLY, target: '    stuckAfter: 1500ms\n    onFailure: { stuck: revert }\n' }));
  const { controller, acted } = await startController(kube, cfg, be.open());
  t.teardown(() => controller.stop());
  const ms = await actedAfter(kube, acted, since);
  t.true(ms >= 1500 && ms < 2500, `acted ${ms} ms after the reconcile began (stuckAfter 1500ms)`);
  const [outcome] = acted as Array<{ verdict: string; action: string; bad: string[]; lastKnownGood: string }>;
  t.like(outcome, { verdict: 'stuck', action: 'revert', bad: [repo.c3], lastKnownGood: repo.c2 });
  t.is(commitsSince(repo.bare, repo.c4).length, 1);
});

test('a policy wait fires on time with no new event: held for the wait, reverted when it ends', async (t) => {
  const repo = gitopsRepo();
  const kube = await emptyCluster();
  t.teardown(() => kube.close());
  const since = Date.now();
  kube.apply(kustomization({ attempted: `main@sha1:${repo.c3}`, applied: `main@sha1:${repo.c2}`, ready: 'False', since: new Date(since).toISOString() }));
  const be = await backend('local', repo);
  const cfg = config(configText({ url: be.url, resources: KUSTOMIZATION_ONLY, target: '    onFailure: { analysis: { wait: 1500ms, then: revert } }\n' }));
  const decisions: string[] = [];
  const { controller, acted } = await startController(kube, cfg, be.open(), { onEvaluated: (_n, e) => decisions.push(`${e.decision.action}/${e.decision.heldBy ?? ''}`) });
  t.teardown(() => controller.stop());
  const ms = await actedAfter(kube, acted, since);
  t.true(ms >= 1500 && ms < 2500, `acted ${ms} ms after the failure began (wait 1500ms)`);
  t.is(decisions[0], 'wait/wait', 'held while the wait runs');
  t.true(decisions.length <= 3, `looked again when the wait ended, not in a loop: ${decisions.join(', ')}`);
  t.is(commitsSince(repo.bare, repo.c4).length, 1);
});

const APPLICATION_ONLY = `
      - { apiVersion: argoproj.io/v1alpha1, kind: Application, namespace: argocd, name: podinfo-prod }`;

/** An Argo CD Application synced to `revision` (after `previous`), with the given health; Degraded is a failure Argo CD never calls final. */
function application(revision: string, previous: string, health: 'Healthy' | 'Degraded'): object {
  const at = (ago: number) => new Date(Date.now() - ago).toISOString();
  const source = { repoURL: 'https://github.com/acme/gitops', path: 'apps/podinfo/overlays/prod', targetRevision: 'main' };
  return {
    apiVersion: 'argoproj.io/v1alpha1', kind: 'Application', metadata: { name: 'podinfo-prod', namespace: 'argocd' },
    spec: { project: 'default', source, destination: { server: 'https://kubernetes.default.svc', namespace: 'prod' } },
    status: {
      sync: { status: 'Synced', revision, comparedTo: { source, destination: { server: 'https://kubernetes.default.svc', namespace: 'prod' } } },
      health: { status: health, ...(health === 'Degraded' ? { message: 'Deployment "podinfo" exceeded its progress deadline' } : {}), lastTransitionTime: at(0) },
      operationState: {
        operation: { sync: { revision } }, phase: 'Succeeded', message: 'successfully synced (all tasks run)',
        syncResult: { revision }, startedAt: at(20_000), finishedAt: at(10_000),
      },
      reconciledAt: at(0),
      history: [{ id: 1, revision: previous, deployedAt: at(600_000), deployStartedAt: at(610_000) }, { id: 2, revision, deployedAt: at(10_000), deployStartedAt: at(20_000) }],
    },
  };
}

test('confirmations: a failure the engine does not call final is confirmed by the next observation, an interval later, with no new event', async (t) => {
  const repo = gitopsRepo();
  const kube = await startKubeEmulator({ namespaces: ['default', 'argocd', 'lastgood'] });
  t.teardown(() => kube.close());
  kube.apply(application(repo.c3, repo.c2, 'Healthy'));
  const be = await backend('local', repo);
  const cfg = config(configText({ url: be.url, resources: APPLICATION_ONLY, interval: '300ms', controller: '  record: false\n' }));
  const seen: Array<{ action: string; at: number }> = [];
  const { controller, acted } = await startController(kube, cfg, be.open(), { onEvaluated: (_n, e, at) => seen.push({ action: e.decision.action, at }) });
  t.teardown(() => controller.stop());
  await until('ready and leading', () => controller.ready && controller.isLeader);
  const failedAt = Date.now();
  kube.apply(application(repo.c3, repo.c2, 'Degraded'));
  const ms = await actedAfter(kube, acted, failedAt);
  t.true(ms >= 300 && ms < 1300, `confirmed and acted ${ms} ms after the failure (interval 300ms)`);
  const after = seen.filter((s) => s.at >= failedAt).map((s) => s.action);
  t.deepEqual(after.slice(0, 2), ['wait', 'revert'], '1/2 confirmations, then 2/2');
  const [outcome] = acted as Array<{ bad: string[]; action: string }>;
  t.is(outcome!.action, 'revert');
  t.deepEqual(outcome!.bad, [repo.c3]);
});

for (const kind of ['local', 'http', 'github'] as BackendKind[]) {
  test(`${kind}: healthy, the verified last-known-good is recorded once per revision, across changes and restarts`, async (t) => {
    const repo = gitopsRepo();
    const kube = await cluster(repo, { canaryPhase: 'Succeeded' });
    t.teardown(() => kube.close());
    const be = await backend(kind, repo);
    t.teardown(() => be.close());
    if (!(await be.open()).notes) return t.fail(`the ${kind} backend keeps no records`);
    // read through a backend of its own each time, as another process would
    const notes = async () => (await be.open()).notes!().list('podinfo-prod');
    const cfg = config(configText({ url: be.url, ...(be.apiUrl ? { apiUrl: be.apiUrl } : {}), ...(be.repoSettings ? { repoSettings: be.repoSettings } : {}) }));
    const first = await startController(kube, cfg, be.open());
    t.teardown(() => first.controller.stop());
    await until('the record of c3', async () => (await notes()).length === 1);
    // more changes of the healthy target: nothing more is recorded
    for (let i = 0; i < 4; i++) {
      kube.setStatus({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'prod', name: 'podinfo' }, { ...(deployment({ image: 'ghcr.io/stefanprodan/podinfo:6.1.0', state: 'available' }) as { status: object }).status, observedGeneration: 3 + i });
      await new Promise((r) => setTimeout(r, 50));
    }
    await first.controller.idle();
    await first.controller.stop();
    const recorded = await notes();
    t.is(recorded.length, 1);
    t.is(recorded[0]!.commit, repo.c3);
    t.regex(recorded[0]!.evidence, /Canary prod\/podinfo state=healthy/);

    // a restart: what was recorded is read from the repository, not recorded again
    const second = await startController(kube, cfg, be.open());
    t.teardown(() => second.controller.stop());
    await until('ready and leading', () => second.controller.ready && second.controller.isLeader);
    await new Promise((r) => setTimeout(r, 300));
    await second.controller.idle();
    t.is((await notes()).length, 1);

    // Flux applies c4, healthy: c4 is recorded
    kube.setStatus({ apiVersion: 'kustomize.toolkit.fluxcd.io/v1', kind: 'Kustomization', namespace: 'flux-system', name: 'apps' }, (kustomization({ attempted: `main@sha1:${repo.c4}`, applied: `main@sha1:${repo.c4}`, ready: 'True', since: new Date().toISOString() }) as { status: unknown }).status);
    await until('the record of c4', async () => (await notes()).length === 2);
    t.deepEqual((await notes()).map((r) => r.commit).sort(), [repo.c3, repo.c4].sort());
    t.regex(await second.controller.metrics.registry.metrics(), /^lastgood_lkg_recorded_total 1$/m);
  });
}

test('readiness follows the watches: 503 while a kind cannot be listed (the watch restarts with backoff), 200 once listed; /healthz is 200 throughout', async (t) => {
  const repo = gitopsRepo();
  const kube = await cluster(repo, { canaryPhase: 'Succeeded' });
  t.teardown(() => kube.close());
  kube.failNext(/canaries\?limit=/, 3, 500);
  const be = await backend('local', repo);
  const { controller } = await startController(kube, config(configText({ url: be.url, controller: '  record: false\n' })), be.open());
  t.teardown(() => controller.stop());
  const base = `http://127.0.0.1:${controller.address!.port}`;
  const first = await fetch(`${base}/readyz`);
  t.is(first.status, 503);
  t.like(await first.json(), { ready: false, synced: false });
  t.is((await fetch(`${base}/healthz`)).status, 200);
  await until('ready', async () => (await fetch(`${base}/readyz`)).status === 200, 10_000);
  t.is(kube.requests(/canaries\?limit=/).filter((r) => r.status === 500).length, 3);
  t.regex(await (await fetch(`${base}/metrics`)).text(), /^lastgood_watch_restarts_total\{kind="Canary"\} 3$/m);
  t.is((await fetch(`${base}/nothing`)).status, 404);
  await controller.stop();
  t.false(controller.ready);
});

test('a target whose objects are not all found is progressing, never failed: nothing is written', async (t) => {
  const repo = gitopsRepo();
  const kube = await emptyCluster();
  t.teardown(() => kube.close());
  kube.apply(canaryObject({ phase: 'Succeeded' }));
  const be = await backend('local', repo);
  const decisions: string[] = [];
  const { controller, acted } = await startController(kube, config(configText({ url: be.url })), be.open(), { onEvaluated: (_n, e) => decisions.push(e.verdict.verdict) });
  t.teardown(() => controller.stop());
  await until('evaluated', () => decisions.length > 0);
  await new Promise((r) => setTimeout(r, 200));
  t.deepEqual([...new Set(decisions)], ['progressing']);
  t.deepEqual(acted, []);
  t.is(commitsSince(repo.bare, repo.c4).length, 0);
});

test('a revert that fails on the git host is retried with backoff, and made once the host answers again', async (t) => {
  const repo = gitopsRepo();
  const kube = await cluster(repo);
  t.teardown(() => kube.close());
  const be = await backend('github', repo);
  t.teardown(() => be.close());
  // every GraphQL request fails for a while: more than the client's own retries
  be.github!.inject({ status: 502, times: 5, match: (method, p) => method === 'POST' && p.startsWith('/graphql') });
  const cfg = config(configText({ url: be.url, apiUrl: be.apiUrl!, mode: 'pull-request' }));
  const { controller, acted, lines } = await startController(kube, cfg, be.open());
  t.teardown(() => controller.stop());
  await until('ready and leading', () => controller.ready && controller.isLeader);
  failCanary(kube);
  const failure = await until('the failed attempt', () => lines.find((l) => l.msg === 'acting failed; will retry'), 10_000);
  t.is(failure.target, 'podinfo-prod');
  t.regex(String(failure.err), /^github: /);
  const outcome = await until('the revert', () => acted.find((o) => !o.error), 20_000);
  t.is(outcome.action, 'revert');
  t.true(outcome.created);
  t.is(be.github!.pulls.length, 1);
  t.regex(await controller.metrics.registry.metrics(), /^lastgood_remote_errors_total\{system="github"\} [1-9]/m);
});

test('policy alert: the failure is reported once (a Warning Event on the failing object), nothing is written', async (t) => {
  const repo = gitopsRepo();
  const kube = await cluster(repo);
  t.teardown(() => kube.close());
  const be = await backend('local', repo);
  const { controller, acted } = await startController(kube, config(configText({ url: be.url, target: '    onFailure: { analysis: alert }\n' })), be.open());
  t.teardown(() => controller.stop());
  await until('ready and leading', () => controller.ready && controller.isLeader);
  failCanary(kube);
  const outcome = await until('the alert', () => acted[0]);
  t.like(outcome, { verdict: 'failed', action: 'alert' });
  await until('the Event', () => kube.events().length === 1);
  t.like(kube.events()[0], { reason: 'NotReverted', type: 'Warning', action: 'Alert' });
  failCanary(kube);
  await new Promise((r) => setTimeout(r, 300));
  await controller.idle();
  t.is(acted.length, 1, 'alerted once');
  t.is(kube.events().length, 1);
  t.is(commitsSince(repo.bare, repo.c4).length, 0);
});

test('a namespace with more objects than one list page: listed in pages, the target\'s object found', async (t) => {
  const repo = gitopsRepo();
  const kube = await emptyCluster();
  t.teardown(() => kube.close());
  for (let i = 0; i < 1100; i++) kube.apply(deployment({ name: `other-${String(i).padStart(4, '0')}`, image: 'ghcr.io/acme/other:1', state: 'available' }));
  kube.apply(deployment({ name: 'zz-podinfo', image: 'ghcr.io/stefanprodan/podinfo:6.1.0', state: 'available' }));
  const be = await backend('local', repo);
  const verdicts: string[] = [];
  const { controller } = await startController(kube, config(configText({ url: be.url, resources: '\n      - { apiVersion: apps/v1, kind: Deployment, namespace: prod, name: zz-podinfo }' })), be.open(), { onEvaluated: (_n, e) => verdicts.push(e.verdict.verdict) });
  t.teardown(() => controller.stop());
  await until('evaluated', () => verdicts.length > 0);
  t.deepEqual(verdicts, ['healthy']);
  const lists = kube.requests(/deployments\?/).filter((r) => !r.watch).map((r) => r.url);
  t.is(lists.length, 3, lists.join('\n'));
  t.true(lists.every((u) => /limit=500/.test(u)));
  t.is(lists.filter((u) => /continue=/.test(u)).length, 2);
});
