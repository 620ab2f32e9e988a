import test from 'ava';
import { testClock } from './support/clock.ts';
import { startKubeEmulator, type KubeEmulator } from './support/kube-emulator.ts';
import { deployment, kustomization } from './support/objects.ts';
import {
  backend, canaryObject, cluster, commitsSince, config, configText, evaluations, failCanary, gitopsRepo, iso, startController, until, type BackendKind,
} from './support/controller-scenario.ts';

/**
 * The controller over time: timers fire with no new event (stuckAfter, a policy wait, the next
 * confirmation), healthy revisions are recorded once, readiness follows the watches. Time is a
 * clock the tests drive (support/clock.ts): what is asserted is the clock time a decision was made
 * at, never how long the machine took.
 */

/** The soak the recording tests run with (config `soak`). */
const SOAK_MS = 5 * 60_000;

const KUSTOMIZATION_ONLY = `
      - { apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: apps }`;

async function emptyCluster(): Promise<KubeEmulator> {
  return startKubeEmulator({ namespaces: ['default', 'prod', 'flux-system', 'lastgood'] });
}

/** The only cluster writes allowed while a target is decided and acted on: the controller's own Lease renewals and its Event. */
function noClusterWrites(kube: KubeEmulator): string[] {
  return kube.requests().filter((r) => r.method !== 'GET' && !/leases|events/.test(r.url)).map((w) => `${w.method} ${w.url}`);
}

test('stuckAfter fires on time with no new event: a Kustomization reconciling for longer than stuckAfter is stuck, and its policy reverts', async (t) => {
  const repo = gitopsRepo();
  const kube = await emptyCluster();
  t.teardown(() => kube.close());
  const clock = testClock();
  const since = clock.now();
  kube.apply(kustomization({ attempted: `main@sha1:${repo.c3}`, applied: `main@sha1:${repo.c2}`, ready: 'Unknown', since: iso(since) }));
  const be = await backend('local', repo);
  const cfg = config(configText({ url: be.url, resources: KUSTOMIZATION_ONLY, target: '    stuckAfter: 1500ms\n    onFailure: { stuck: revert }\n' }));
  const { seen, onEvaluated } = evaluations();
  const { controller, acted } = await startController(kube, cfg, be.open(), { clock, onEvaluated });
  t.teardown(() => controller.stop());
  await until('ready and leading', () => controller.ready && controller.isLeader);
  const first = await until('the first observation', () => seen[0]);
  t.like(first, { at: since, verdict: 'progressing', action: 'none' });
  const deadline = since + 1500 + 1;
  t.is(first.nextAt, deadline, 'the target is looked at again the moment stuckAfter runs out');
  t.true(clock.pending.includes(deadline), `a timer at the deadline: ${clock.pending.map((p) => p - since).join(', ')}`);
  clock.advanceTo(deadline - 1);
  t.is(seen.length, 1, 'nothing to look at before the deadline');
  t.deepEqual(acted, []);
  clock.advanceTo(deadline);
  const outcome = await until('the act', () => acted[0]);
  const acting = seen.find((s) => s.act)!;
  t.like(acting, { at: deadline, verdict: 'stuck', action: 'revert', changedAt: undefined }, 'decided at the deadline, with no event');
  t.like(outcome, { verdict: 'stuck', action: 'revert', bad: [repo.c3], lastKnownGood: repo.c2 });
  t.is(commitsSince(repo.bare, repo.c4).length, 1);
  t.deepEqual(noClusterWrites(kube), []);
});

test('a policy wait fires on time with no new event: held for the wait, reverted when it ends', async (t) => {
  const repo = gitopsRepo();
  const kube = await emptyCluster();
  t.teardown(() => kube.close());
  const clock = testClock();
  const since = clock.now();
  kube.apply(kustomization({ attempted: `main@sha1:${repo.c3}`, applied: `main@sha1:${repo.c2}`, ready: 'False', since: iso(since) }));
  const be = await backend('local', repo);
  const cfg = config(configText({ url: be.url, resources: KUSTOMIZATION_ONLY, target: '    onFailure: { analysis: { wait: 1500ms, then: revert } }\n' }));
  const { seen, onEvaluated } = evaluations();
  const { controller, acted } = await startController(kube, cfg, be.open(), { clock, onEvaluated });
  t.teardown(() => controller.stop());
  await until('ready and leading', () => controller.ready && controller.isLeader);
  const first = await until('the first observation', () => seen[0]);
  t.like(first, { at: since, action: 'wait', heldBy: 'wait' }, 'held while the wait runs');
  const deadline = since + 1500 + 1;
  t.is(first.nextAt, deadline);
  clock.advanceTo(deadline - 1);
  t.is(seen.length, 1);
  clock.advanceTo(deadline);
  const outcome = await until('the act', () => acted[0]);
  t.like(seen.find((s) => s.act), { at: deadline, action: 'revert', changedAt: undefined });
  t.true(seen.length <= 3, `looked again when the wait ended, not in a loop: ${seen.map((s) => `${s.action}/${s.heldBy ?? ''}@${s.at - since}`).join(', ')}`);
  t.like(outcome, { action: 'revert', bad: [repo.c3] });
  t.is(commitsSince(repo.bare, repo.c4).length, 1);
  t.deepEqual(noClusterWrites(kube), []);
});

const APPLICATION_ONLY = `
      - { apiVersion: argoproj.io/v1alpha1, kind: Application, namespace: argocd, name: podinfo-prod }`;

/** An Argo CD Application synced to `revision` (after `previous`), with the given health; Degraded is a failure Argo CD never calls final. */
function application(revision: string, previous: string, health: 'Healthy' | 'Degraded', now: number): object {
  const at = (ago: number) => iso(now - ago);
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
  const clock = testClock();
  kube.apply(application(repo.c3, repo.c2, 'Healthy', clock.now()));
  const be = await backend('local', repo);
  const cfg = config(configText({ url: be.url, resources: APPLICATION_ONLY, interval: '300ms', controller: '  record: false\n' }));
  const { seen, onEvaluated } = evaluations();
  const { controller, acted } = await startController(kube, cfg, be.open(), { clock, onEvaluated });
  t.teardown(() => controller.stop());
  await until('ready and leading', () => controller.ready && controller.isLeader && seen.length > 0);
  clock.advance(1000);
  const failedAt = clock.now();
  kube.apply(application(repo.c3, repo.c2, 'Degraded', failedAt));
  const firstFailed = await until('the failure observed', () => seen.find((s) => s.verdict === 'failed'));
  t.like(firstFailed, { at: failedAt, action: 'wait', heldBy: 'confirmations' }, '1/2 confirmations');
  t.is(firstFailed.nextAt, failedAt + 300, 'observed again an interval later');
  clock.advanceTo(failedAt + 300);
  const outcome = await until('the act', () => acted[0]);
  const after = seen.filter((s) => s.at >= failedAt);
  t.deepEqual(after.slice(0, 2).map((s) => `${s.action}@${s.at - failedAt}`), ['wait@0', 'revert@300'], '1/2 confirmations, then 2/2 an interval later');
  t.is(outcome.action, 'revert');
  t.deepEqual(outcome.bad, [repo.c3]);
});

for (const kind of ['local', 'http', 'github'] as BackendKind[]) {
  test(`${kind}: healthy, the verified last-known-good is recorded once per revision, across changes and restarts`, async (t) => {
    const repo = gitopsRepo();
    const clock = testClock();
    // healthy for longer than the soak already, as the objects' own condition times say
    const kube = await cluster(repo, { canaryPhase: 'Succeeded', clock, healthyFor: 3_600_000 });
    const earlier = iso(clock.now() - 3_600_000);
    t.teardown(() => kube.close());
    const be = await backend(kind, repo);
    t.teardown(() => be.close());
    if (!(await be.open()).notes) return t.fail(`the ${kind} backend keeps no records`);
    // read through a backend of its own each time, as another process would
    const notes = async () => (await be.open()).notes!().list('podinfo-prod');
    const cfg = config(configText({ url: be.url, ...(be.apiUrl ? { apiUrl: be.apiUrl } : {}), ...(be.repoSettings ? { repoSettings: be.repoSettings } : {}) }));
    const first = await startObserved(kube, cfg, be.open(), clock);
    t.teardown(() => first.controller.stop());
    await until('the record of c3', async () => (await notes()).length === 1);
    // more changes of the healthy target: nothing more is recorded
    for (let i = 0; i < 4; i++) {
      const before = first.seen.length;
      kube.setStatus({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'prod', name: 'podinfo' }, { ...(deployment({ image: 'ghcr.io/stefanprodan/podinfo:6.1.0', state: 'available', since: earlier }) as { status: object }).status, observedGeneration: 3 + i });
      await until('the change observed', () => first.seen.length > before);
    }
    await first.controller.idle();
    await first.controller.stop();
    const recorded = await notes();
    t.is(recorded.length, 1);
    t.is(recorded[0]!.commit, repo.c3);
    t.regex(recorded[0]!.evidence, /Canary prod\/podinfo state=healthy/);

    // a restart: what was recorded is read from the repository, not recorded again
    const second = await startObserved(kube, cfg, be.open(), clock);
    t.teardown(() => second.controller.stop());
    await until('ready, leading and observed', () => second.controller.ready && second.controller.isLeader && second.seen.length > 0);
    await second.controller.idle();
    t.is((await notes()).length, 1);

    // Flux applies c4, healthy: c4 is recorded
    kube.setStatus({ apiVersion: 'kustomize.toolkit.fluxcd.io/v1', kind: 'Kustomization', namespace: 'flux-system', name: 'apps' }, (kustomization({ attempted: `main@sha1:${repo.c4}`, applied: `main@sha1:${repo.c4}`, ready: 'True', since: iso(clock.now()) }) as { status: unknown }).status);
    const c4At = clock.now();
    await until('c4 observed, to be looked at again when it will have soaked', () => second.seen.some((s) => s.verdict === 'healthy' && s.nextAt === c4At + SOAK_MS));
    t.is((await notes()).length, 1, 'not recorded before the soak');
    // c4 is healthy since now: recorded once it has stayed healthy for the soak, with no further event
    clock.advance(SOAK_MS);
    await until('the record of c4', async () => (await notes()).length === 2);
    t.deepEqual((await notes()).map((r) => r.commit).sort(), [repo.c3, repo.c4].sort());
    t.regex(await second.controller.metrics.registry.metrics(), /^lastgood_lkg_recorded_total 1$/m);
  });
}

/** A controller whose evaluations are recorded, on the test's clock. */
async function startObserved(kube: KubeEmulator, cfg: ReturnType<typeof config>, backendOrPromise: Parameters<typeof startController>[2], clock: ReturnType<typeof testClock>) {
  const { seen, onEvaluated } = evaluations();
  return { ...(await startController(kube, cfg, backendOrPromise, { clock, onEvaluated })), seen };
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
  await until('ready', async () => (await fetch(`${base}/readyz`)).status === 200);
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
  const clock = testClock();
  const { seen, onEvaluated } = evaluations();
  const { controller, acted } = await startController(kube, config(configText({ url: be.url })), be.open(), { clock, onEvaluated });
  t.teardown(() => controller.stop());
  await until('evaluated', () => seen.length > 0);
  // a day later (every timer the controller set has fired): still nothing to act on
  clock.advance(86_400_000);
  await controller.idle();
  t.deepEqual([...new Set(seen.map((s) => s.verdict))], ['progressing']);
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
  const clock = testClock();
  const { controller, acted, lines } = await startController(kube, cfg, be.open(), { clock });
  t.teardown(() => controller.stop());
  await until('ready and leading', () => controller.ready && controller.isLeader);
  failCanary(kube, 'Failed', clock);
  const failure = await until('the failed attempt', () => lines.find((l) => l.msg === 'acting failed; will retry'));
  t.is(failure.target, 'podinfo-prod');
  t.regex(String(failure.err), /^github: /);
  t.is(failure.retryAt, iso(clock.now() + 1000), 'retried a second later (the first backoff step)');
  t.is(be.github!.pulls.length, 0);
  // the host answers again; the retry comes when the backoff ends, with no new event
  clock.advance(1000);
  const outcome = await until('the revert', () => acted.find((o) => !o.error));
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
  const { seen, onEvaluated } = evaluations();
  const { controller, acted } = await startController(kube, config(configText({ url: be.url, target: '    onFailure: { analysis: alert }\n' })), be.open(), { onEvaluated });
  t.teardown(() => controller.stop());
  await until('ready and leading', () => controller.ready && controller.isLeader);
  failCanary(kube);
  const outcome = await until('the alert', () => acted[0]);
  t.like(outcome, { verdict: 'failed', action: 'alert' });
  await until('the Event', () => kube.events().length === 1);
  t.like(kube.events()[0], { reason: 'NotReverted', type: 'Warning', action: 'Alert' });
  const before = seen.length;
  failCanary(kube);
  await until('the second failure observed', () => seen.length > before);
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
