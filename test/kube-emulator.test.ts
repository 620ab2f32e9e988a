import test from 'ava';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { deployment } from './support/objects.ts';
import { KubeApiError, startKubeEmulator, yamlObjects, type KubeEmulator, type KubeObject } from './support/kube-emulator.ts';

// Everything here is driven through the real @kubernetes/client-node; the emulator's own API only
// seeds objects, injects faults and inspects what arrived.

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until<T>(what: string, probe: () => T | undefined | false, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

/** The Status object of a refused client-node call. */
function status(err: unknown): { code: number; reason: string; message: string; details?: { causes?: Array<{ field: string; reason: string; message: string }> } } {
  if (!(err instanceof k8s.ApiException)) throw err;
  const body = err.body as unknown;
  return (typeof body === 'string' ? JSON.parse(body) : body) as ReturnType<typeof status>;
}

/** Our objects typed for client-node (whose ObjectMeta has Date timestamps). */
const k = (o: object) => o as k8s.KubernetesObject;

function canary(name: string, namespace = 'prod', extra: Record<string, unknown> = {}): KubeObject {
  return {
    apiVersion: 'flagger.app/v1beta1',
    kind: 'Canary',
    metadata: { name, namespace },
    spec: { targetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name }, analysis: { interval: '1m', threshold: 5, stepWeight: 10, maxWeight: 50 } },
    ...extra,
  };
}

const CANARIES = { group: 'flagger.app', version: 'v1beta1', plural: 'canaries' };

/** makeInformer on Canaries in one namespace, recording what its callbacks report. */
function canaryInformer(kube: KubeEmulator, namespace = 'prod') {
  const kc = kube.kubeConfig();
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const informer = k8s.makeInformer<KubeObject & k8s.KubernetesObject>(
    kc,
    `/apis/flagger.app/v1beta1/namespaces/${namespace}/canaries`,
    () => custom.listNamespacedCustomObject({ ...CANARIES, namespace }),
  );
  const seen: string[] = [];
  const errors: Array<Error & { statusCode?: number; code?: unknown; cause?: { code?: string } }> = [];
  let connects = 0;
  informer.on('add', (o) => seen.push(`add ${o.metadata?.name}`));
  informer.on('update', (o) => seen.push(`update ${o.metadata?.name}`));
  informer.on('delete', (o) => seen.push(`delete ${o.metadata?.name}`));
  informer.on('error', (e) => errors.push(e as (typeof errors)[number]));
  informer.on('connect', () => connects++);
  return { informer, seen, errors, connects: () => connects };
}

const WATCH = /canaries\?.*watch=true/;
const LIST = /canaries$/;

test('KubernetesObjectApi reads, lists, creates and patches a Canary and a Deployment', async (t) => {
  const kube = await startKubeEmulator({ namespaces: ['default', 'prod'] });
  t.teardown(() => kube.close());
  const objects = k8s.KubernetesObjectApi.makeApiClient(kube.kubeConfig());

  const created = await objects.create(k(canary('podinfo', 'prod', { status: { phase: 'Succeeded' } })));
  t.is(created.metadata?.generation, 1);
  t.truthy(created.metadata?.uid);
  t.regex(created.metadata?.resourceVersion ?? '', /^\d+$/);
  t.false('status' in created, 'the status subresource: create drops status');

  const read = await objects.read({ apiVersion: 'flagger.app/v1beta1', kind: 'Canary', metadata: { name: 'podinfo', namespace: 'prod' } });
  t.is(read.metadata?.uid, created.metadata?.uid);

  // The default patch type is strategic merge, which the real server refuses for custom kinds.
  const strategic = await objects.patch(k({ ...canary('podinfo'), spec: { suspend: true } })).catch((e: unknown) => e);
  t.is(status(strategic).code, 415);
  const patched = await objects.patch(k({ apiVersion: 'flagger.app/v1beta1', kind: 'Canary', metadata: { name: 'podinfo', namespace: 'prod' }, spec: { suspend: true } }),
    undefined, undefined, undefined, undefined, k8s.PatchStrategy.MergePatch) as KubeObject;
  t.is(patched.metadata.generation, 2, 'a spec change bumps generation');
  t.deepEqual(patched.spec, { ...canary('podinfo').spec as object, suspend: true });

  // Status goes through the status subresource and leaves generation alone.
  const custom = kube.kubeConfig().makeApiClient(k8s.CustomObjectsApi);
  const withStatus = await custom.patchNamespacedCustomObjectStatus({ ...CANARIES, namespace: 'prod', name: 'podinfo', body: { status: { phase: 'Progressing', canaryWeight: 10 } } },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch)) as KubeObject;
  t.deepEqual(withStatus.status, { phase: 'Progressing', canaryWeight: 10 });
  t.is(withStatus.metadata.generation, 2);

  const deploy = deployment({ name: 'podinfo', namespace: 'prod', image: 'ghcr.io/stefanprodan/podinfo:6.7.0', state: 'available' });
  await objects.create(deploy);
  const bumped = await objects.patch(k({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'podinfo', namespace: 'prod' }, spec: { replicas: 3 } })) as k8s.V1Deployment;
  t.is(bumped.spec?.replicas, 3, 'strategic merge is accepted for built-in kinds');
  t.is(bumped.metadata?.generation, 2);

  const deployments = await objects.list('apps/v1', 'Deployment', 'prod');
  t.deepEqual(deployments.items.map((d) => d.metadata?.name), ['podinfo']);
  t.is(deployments.items[0]!.kind, undefined, 'built-in list items carry no kind, as from a real server');
  const canaries = await objects.list('flagger.app/v1beta1', 'Canary', 'prod');
  t.is(canaries.items[0]!.kind, 'Canary', 'custom list items keep theirs');

  const missing = await objects.read({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'nope', namespace: 'prod' } }).catch((e: unknown) => e);
  t.like(status(missing), { code: 404, reason: 'NotFound', message: 'deployments.apps "nope" not found' });
});

test('discovery maps every kind lastgood reads to its resource', async (t) => {
  const kube = await startKubeEmulator();
  t.teardown(() => kube.close());
  const objects = k8s.KubernetesObjectApi.makeApiClient(kube.kubeConfig());
  const expected: Array<[string, string, string, boolean]> = [
    ['v1', 'Pod', 'pods', true], ['v1', 'Event', 'events', true], ['v1', 'ConfigMap', 'configmaps', true], ['v1', 'Namespace', 'namespaces', false],
    ['apps/v1', 'Deployment', 'deployments', true], ['apps/v1', 'StatefulSet', 'statefulsets', true], ['apps/v1', 'DaemonSet', 'daemonsets', true],
    ['apps/v1', 'ReplicaSet', 'replicasets', true], ['batch/v1', 'Job', 'jobs', true], ['coordination.k8s.io/v1', 'Lease', 'leases', true],
    ['events.k8s.io/v1', 'Event', 'events', true], ['flagger.app/v1beta1', 'Canary', 'canaries', true],
    ['argoproj.io/v1alpha1', 'Rollout', 'rollouts', true], ['argoproj.io/v1alpha1', 'AnalysisRun', 'analysisruns', true],
    ['argoproj.io/v1alpha1', 'Experiment', 'experiments', true], ['argoproj.io/v1alpha1', 'Application', 'applications', true],
    ['kustomize.toolkit.fluxcd.io/v1', 'Kustomization', 'kustomizations', true], ['helm.toolkit.fluxcd.io/v2', 'HelmRelease', 'helmreleases', true],
    ['kargo.akuity.io/v1alpha1', 'Promotion', 'promotions', true], ['kargo.akuity.io/v1alpha1', 'Stage', 'stages', true], ['kargo.akuity.io/v1alpha1', 'Freight', 'freights', true],
  ];
  // list() finds the resource through discovery; the path it builds shows plural and scope.
  for (const [apiVersion, kind, plural, namespaced] of expected) {
    await objects.list(apiVersion, kind, 'default');
    const base = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
    t.is(kube.requests().at(-1)!.url, `${base}${namespaced ? '/namespaces/default' : ''}/${plural}`, `${apiVersion} ${kind}`);
  }
  const apis = await kube.kubeConfig().makeApiClient(k8s.ApisApi).getAPIVersions();
  t.true(apis.groups.some((g) => g.name === 'kargo.akuity.io' && g.preferredVersion?.version === 'v1alpha1'));
});

test('a wrong bearer token is refused with 401', async (t) => {
  const kube = await startKubeEmulator();
  t.teardown(() => kube.close());
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'emulator', server: kube.url, skipTLSVerify: true }], users: [{ name: 'intruder', token: 'wrong' }],
    contexts: [{ name: 'emulator', cluster: 'emulator', user: 'intruder' }], currentContext: 'emulator',
  });
  const err = await kc.makeApiClient(k8s.CoreV1Api).listNamespace().catch((e: unknown) => e);
  t.is((err as k8s.ApiException<unknown>).code, 401);
});

test('an informer on Canaries in one namespace reports adds, updates and deletes', async (t) => {
  const kube = await startKubeEmulator({ namespaces: ['default', 'prod', 'staging'] });
  t.teardown(() => kube.close());
  kube.apply(canary('a'));
  const { informer, seen, errors } = canaryInformer(kube);
  t.teardown(() => informer.stop());
  await informer.start();
  t.deepEqual(seen, ['add a']);

  kube.apply(canary('b'));
  kube.apply(canary('other', 'staging'));
  kube.setStatus(canary('a'), { phase: 'Progressing', canaryWeight: 10 });
  kube.delete(canary('b'));
  await until('the delete', () => seen.includes('delete b'));
  t.deepEqual(seen, ['add a', 'add b', 'update a', 'delete b']);
  t.is((informer.get('a', 'prod')?.status as { canaryWeight?: number }).canaryWeight, 10);
  t.deepEqual(errors, []);

  // A finalizer holds a delete: the informer sees deletionTimestamp first, the delete when it is removed.
  kube.apply(canary('c', 'prod', { metadata: { name: 'c', namespace: 'prod', finalizers: ['flagger.app/finalizer'] } }));
  kube.delete(canary('c'));
  await until('deletionTimestamp', () => informer.get('c', 'prod')?.metadata?.deletionTimestamp);
  kube.apply(canary('c', 'prod', { metadata: { name: 'c', namespace: 'prod', finalizers: [] } }));
  await until('the delete of c', () => seen.includes('delete c'));
});

test('dropWatches() mid-stream: client-node stops the informer and calls error; start() resumes from its resourceVersion', async (t) => {
  const kube = await startKubeEmulator({ namespaces: ['default', 'prod'] });
  t.teardown(() => kube.close());
  kube.apply(canary('a'));
  const { informer, seen, errors } = canaryInformer(kube);
  t.teardown(() => informer.stop());
  await informer.start();
  await until('the watch', () => kube.openWatches(WATCH) === 1);

  t.is(kube.dropWatches(), 1);
  const [err] = await until('the error callback', () => errors.length > 0 && errors);
  t.is(err!.name, 'TypeError');
  t.is(err!.message, 'terminated');
  t.is(err!.cause?.code, 'UND_ERR_SOCKET');
  await sleep(300);
  t.is(kube.openWatches(), 0, 'the informer does not reconnect by itself');

  kube.apply(canary('b'));
  const lists = kube.requests(LIST).length;
  await informer.start();
  await until('b', () => seen.includes('add b'));
  t.is(kube.requests(LIST).length, lists, 'resumed from the last resourceVersion, without a relist');
  t.regex(kube.requests(WATCH).at(-1)!.url, /resourceVersion=\d+/);
});

test('a clean end of the watch stream: the informer reconnects by itself', async (t) => {
  const kube = await startKubeEmulator({ namespaces: ['default', 'prod'] });
  t.teardown(() => kube.close());
  const { informer, seen, errors } = canaryInformer(kube);
  t.teardown(() => informer.stop());
  await informer.start();
  await until('the watch', () => kube.openWatches(WATCH) === 1);
  t.is(kube.dropWatches({ graceful: true }), 1);
  kube.apply(canary('a'));
  await until('a', () => seen.includes('add a'));
  t.deepEqual(errors, []);
  t.is(kube.requests(WATCH).length, 2);
});

for (const gone of ['event', 'status'] as const) {
  test(`after compact(), a resumed watch gets 410 (${gone === 'event' ? 'in-stream ERROR event' : 'HTTP 410'}) and the informer relists`, async (t) => {
    const kube = await startKubeEmulator({ namespaces: ['default', 'prod'], gone });
    t.teardown(() => kube.close());
    kube.apply(canary('a'));
    const { informer, seen, errors } = canaryInformer(kube);
    t.teardown(() => informer.stop());
    await informer.start();
    await until('the watch', () => kube.openWatches(WATCH) === 1);

    // Hold the reconnect so that the changes and the compaction happen while no watch is open.
    kube.delay(WATCH, 200, 1);
    kube.dropWatches({ graceful: true });
    kube.apply(canary('b'));
    kube.delete(canary('a'));
    kube.compact();
    await until('the relist', () => seen.includes('add b') && seen.includes('delete a'));
    t.deepEqual(errors, []);
    t.deepEqual(informer.list().map((o) => o.metadata?.name), ['b']);
    t.is(kube.requests(LIST).length, 2);

    kube.apply(canary('c'));
    await until('c after the relist', () => seen.includes('add c'));
    // first watch, the refused resume (200 + ERROR event, or 410), the watch after the relist
    t.deepEqual(kube.requests(WATCH).map((r) => r.status), [200, gone === 'event' ? 200 : 410, 200]);
  });
}

test('a 500 on the watch: client-node calls error and stops; restarting works', async (t) => {
  const kube = await startKubeEmulator({ namespaces: ['default', 'prod'] });
  t.teardown(() => kube.close());
  const { informer, seen, errors } = canaryInformer(kube);
  t.teardown(() => informer.stop());
  kube.failNext(WATCH, 1, 500);
  await informer.start();
  const [err] = await until('the error callback', () => errors.length > 0 && errors);
  t.is(err!.statusCode, 500);
  t.is(err!.message, 'Internal Server Error');
  t.is(kube.openWatches(), 0);

  await informer.start();
  kube.apply(canary('a'));
  await until('a', () => seen.includes('add a'));
  t.is(errors.length, 1);
});

test('a 500 on the list: start() resolves, the error callback fires, restarting works', async (t) => {
  const kube = await startKubeEmulator({ namespaces: ['default', 'prod'] });
  t.teardown(() => kube.close());
  kube.apply(canary('a'));
  const { informer, seen, errors } = canaryInformer(kube);
  t.teardown(() => informer.stop());
  kube.failNext(LIST, 1, 500);
  await informer.start();
  t.is(errors.length, 1);
  t.is((errors[0] as unknown as k8s.ApiException<unknown>).code, 500);
  t.deepEqual(seen, []);
  await informer.start();
  t.deepEqual(seen, ['add a']);
});

test('stop() also calls the error callback (with an AbortError): a restart-on-error loop must know it stopped', async (t) => {
  const kube = await startKubeEmulator({ namespaces: ['default', 'prod'] });
  t.teardown(() => kube.close());
  const { informer, errors } = canaryInformer(kube);
  await informer.start();
  await until('the watch', () => kube.openWatches(WATCH) === 1);
  await informer.stop();
  const [err] = await until('the error callback', () => errors.length > 0 && errors);
  t.is(err!.name, 'AbortError');
});

test('an idle watch is cut by client-node after its inactivity timeout and resumed without an error', async (t) => {
  const kube = await startKubeEmulator({ namespaces: ['default', 'prod'] });
  t.teardown(() => kube.close());
  const kc = kube.kubeConfig();
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const watch = new k8s.Watch(kc);
  // 30 s by default (private): a watch with no event for that long is aborted with a TimeoutError.
  (watch as unknown as { requestTimeoutMs: number }).requestTimeoutMs = 300;
  const informer = new k8s.ListWatch<k8s.KubernetesObject>('/apis/flagger.app/v1beta1/namespaces/prod/canaries', watch,
    () => custom.listNamespacedCustomObject({ ...CANARIES, namespace: 'prod' }), false);
  const errors: unknown[] = [];
  informer.on('error', (e) => errors.push(e));
  t.teardown(() => informer.stop());
  await informer.start();
  await until('two reconnects', () => kube.requests(WATCH).length >= 3, 5000);
  t.deepEqual(errors, []);
  t.is(kube.requests(LIST).length, 1);
  kube.apply(canary('a'));
  await until('a', () => informer.get('a', 'prod'));
});

test('a name-scoped ListWatch (fieldSelector) sees only its object', async (t) => {
  const kube = await startKubeEmulator({ namespaces: ['default', 'prod'] });
  t.teardown(() => kube.close());
  kube.apply(canary('a'));
  kube.apply(canary('b'));
  const kc = kube.kubeConfig();
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  // makeInformer takes no fieldSelector; ListWatch does (for the watch, and the list must pass it too).
  const informer = new k8s.ListWatch<k8s.KubernetesObject>('/apis/flagger.app/v1beta1/namespaces/prod/canaries', new k8s.Watch(kc),
    () => custom.listNamespacedCustomObject({ ...CANARIES, namespace: 'prod', fieldSelector: 'metadata.name=a' }), false, undefined, 'metadata.name=a');
  const seen: string[] = [];
  informer.on('change', (o) => seen.push(o.metadata?.name ?? ''));
  t.teardown(() => informer.stop());
  await informer.start();
  kube.setStatus(canary('b'), { phase: 'Failed' });
  kube.setStatus(canary('a'), { phase: 'Failed' });
  await until('a twice', () => seen.length >= 2);
  await sleep(100);
  t.deepEqual(seen, ['a', 'a']);
  t.regex(kube.requests(WATCH).at(-1)!.url, /fieldSelector=metadata.name%3Da/);

  const bad = await custom.listNamespacedCustomObject({ ...CANARIES, namespace: 'prod', fieldSelector: 'spec.suspend=true' }).catch((e: unknown) => e);
  t.like(status(bad), { code: 400, message: 'unable to parse requirement: field label not supported: spec.suspend' });
});

test('BOOKMARK events reach a raw Watch that allows them; timeoutSeconds ends the stream cleanly', async (t) => {
  const kube = await startKubeEmulator({ namespaces: ['default', 'prod'], bookmarkIntervalMs: 100 });
  t.teardown(() => kube.close());
  kube.apply(canary('a'));
  const watch = new k8s.Watch(kube.kubeConfig());
  const events: Array<{ type: string; rv: string }> = [];
  let ended: unknown = 'open';
  const controller = await watch.watch('/apis/flagger.app/v1beta1/namespaces/prod/canaries',
    { allowWatchBookmarks: true, resourceVersion: kube.resourceVersion, timeoutSeconds: 1 },
    (type, obj: KubeObject) => events.push({ type, rv: obj.metadata.resourceVersion ?? '' }),
    (err) => { ended = err; });
  t.teardown(() => controller.abort());
  await until('a periodic bookmark', () => events.some((e) => e.type === 'BOOKMARK'));
  kube.apply(canary('b'));
  kube.bookmark();
  await until('ADDED and a bookmark after it', () => {
    const i = events.findIndex((e) => e.type === 'ADDED');
    return i >= 0 && events.slice(i + 1).some((e) => e.type === 'BOOKMARK' && e.rv === kube.resourceVersion);
  });
  t.deepEqual(events.filter((e) => e.type !== 'BOOKMARK').map((e) => e.type), ['ADDED']);
  await until('the server-side timeout', () => ended !== 'open', 5000);
  t.is(ended, null);
});

test('Leases: two clients racing an update, one wins and the other gets 409 Conflict', async (t) => {
  const kube = await startKubeEmulator({ namespaces: ['default', 'lastgood'] });
  t.teardown(() => kube.close());
  const [a, b] = [kube.kubeConfig().makeApiClient(k8s.CoordinationV1Api), kube.kubeConfig().makeApiClient(k8s.CoordinationV1Api)];
  const lease = { metadata: { name: 'lastgood-controller', namespace: 'lastgood' }, spec: { holderIdentity: 'pod-a', leaseDurationSeconds: 15, renewTime: new k8s.V1MicroTime() } };
  await a.createNamespacedLease({ namespace: 'lastgood', body: lease });
  const again = await b.createNamespacedLease({ namespace: 'lastgood', body: lease }).catch((e: unknown) => e);
  t.like(status(again), { code: 409, reason: 'AlreadyExists', message: 'leases.coordination.k8s.io "lastgood-controller" already exists' });

  const [readA, readB] = await Promise.all([a, b].map((api) => api.readNamespacedLease({ name: 'lastgood-controller', namespace: 'lastgood' })));
  t.is(typeof readA!.spec?.renewTime, 'string', 'client-node hands MicroTime back as a string, not a Date');
  const take = (api: k8s.CoordinationV1Api, read: k8s.V1Lease, holder: string) =>
    api.replaceNamespacedLease({ name: 'lastgood-controller', namespace: 'lastgood', body: { ...read, spec: { ...read.spec, holderIdentity: holder, renewTime: new k8s.V1MicroTime() } } });
  const results = await Promise.allSettled([take(a, readA!, 'pod-a'), take(b, readB!, 'pod-b')]);
  t.is(results.filter((r) => r.status === 'fulfilled').length, 1);
  const lost = results.find((r) => r.status === 'rejected')!;
  t.like(status(lost.reason), { code: 409, reason: 'Conflict' });
  t.regex(status(lost.reason).message, /the object has been modified/);

  // A plain Date serialises with milliseconds, which the real server's MicroTime decoder refuses.
  const current = await a.readNamespacedLease({ name: 'lastgood-controller', namespace: 'lastgood' });
  const millis = await a.replaceNamespacedLease({ name: 'lastgood-controller', namespace: 'lastgood', body: { ...current, spec: { ...current.spec, renewTime: new Date() } } }).catch((e: unknown) => e);
  t.like(status(millis), { code: 400, reason: 'BadRequest' });
});

test('Events: core v1 and events.k8s.io/v1 Events are stored and listable', async (t) => {
  const kube = await startKubeEmulator({ namespaces: ['default', 'prod'] });
  t.teardown(() => kube.close());
  const kc = kube.kubeConfig();
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const events = kc.makeApiClient(k8s.EventsV1Api);
  const regarding = { apiVersion: 'flagger.app/v1beta1', kind: 'Canary', name: 'podinfo', namespace: 'prod' };
  await core.createNamespacedEvent({ namespace: 'prod', body: {
    metadata: { generateName: 'podinfo.' }, involvedObject: regarding, reason: 'RevertOpened', message: 'opened a revert', type: 'Normal',
    source: { component: 'lastgood' }, firstTimestamp: new Date(), lastTimestamp: new Date(), count: 1,
  } });
  await events.createNamespacedEvent({ namespace: 'prod', body: {
    metadata: { name: 'podinfo.revert' }, eventTime: new k8s.V1MicroTime(), reportingController: 'lastgood.dev/controller', reportingInstance: 'lastgood-0',
    action: 'Revert', reason: 'RevertOpened', type: 'Normal', regarding, note: 'opened a revert',
  } });
  t.deepEqual(kube.events().map((e) => `${e.apiVersion} ${e.reason as string}`), ['v1 RevertOpened', 'events.k8s.io/v1 RevertOpened']);

  const listed = await core.listNamespacedEvent({ namespace: 'prod', fieldSelector: 'involvedObject.name=podinfo,reason=RevertOpened' });
  t.is(listed.items.length, 1);
  t.regex(listed.items[0]!.metadata.name ?? '', /^podinfo\.[0-9a-f]{5}$/);

  const incomplete = await events.createNamespacedEvent({ namespace: 'prod', body: { metadata: { name: 'x' }, eventTime: new k8s.V1MicroTime(), reason: 'X', type: 'Normal', action: 'X', reportingInstance: 'i' } }).catch((e: unknown) => e);
  t.like(status(incomplete), { code: 422, reason: 'Invalid' });
  t.deepEqual(status(incomplete).details?.causes?.map((c) => c.field), ['reportingController']);
});

test('schema: a Canary status with a wrong type is refused with 422 Invalid', async (t) => {
  const kube = await startKubeEmulator({ namespaces: ['default', 'prod'] });
  t.teardown(() => kube.close());
  kube.apply(canary('podinfo'));
  const custom = kube.kubeConfig().makeApiClient(k8s.CustomObjectsApi);
  const err = await custom.patchNamespacedCustomObjectStatus({ ...CANARIES, namespace: 'prod', name: 'podinfo', body: { status: { canaryWeight: 'ten', phase: 'Progressing' } } },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch)).catch((e: unknown) => e);
  const s = status(err);
  t.like(s, { code: 422, reason: 'Invalid' });
  t.is(s.message, 'Canary.flagger.app "podinfo" is invalid: status.canaryWeight: Invalid value: "ten": status.canaryWeight in body must be of type number: "ten"');
  t.deepEqual(s.details?.causes?.map((c) => [c.field, c.reason]), [['status.canaryWeight', 'FieldValueTypeInvalid']]);

  const enumErr = await custom.patchNamespacedCustomObjectStatus({ ...CANARIES, namespace: 'prod', name: 'podinfo', body: { status: { phase: 'Exploded' } } },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch)).catch((e: unknown) => e);
  t.like(status(enumErr), { code: 422 });
  t.regex(status(enumErr).message, /status.phase: Unsupported value: "Exploded"/);

  const e = t.throws(() => kube.apply(canary('bad', 'prod', { status: { canaryWeight: 'ten' } })), { instanceOf: KubeApiError });
  t.is(e?.code, 422);
  t.deepEqual(kube.validate(canary('nospec', 'prod', { spec: { targetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'x' } } })), ['spec.analysis: Required value']);

  // Fields the schema lacks are pruned with a Warning header; fieldValidation=Strict refuses them.
  const objects = k8s.KubernetesObjectApi.makeApiClient(kube.kubeConfig());
  const pruned = await objects.create(k(canary('extra', 'prod', { spec: { ...canary('x').spec as object, surprise: true } }))) as KubeObject;
  t.false('surprise' in (pruned.spec as object));
  const strict = await custom.createNamespacedCustomObject({ ...CANARIES, namespace: 'prod', body: canary('strict', 'prod', { spec: { ...canary('x').spec as object, surprise: true } }), fieldValidation: 'Strict' }).catch((x: unknown) => x);
  t.like(status(strict), { code: 400, message: 'strict decoding error: unknown field "spec.surprise"' });
});

test('schema rules from the upstream CRDs: defaults, patterns, int-or-string, oneOf', async (t) => {
  const kube = await startKubeEmulator({ namespaces: ['default', 'flux-system', 'prod'] });
  t.teardown(() => kube.close());
  const objects = k8s.KubernetesObjectApi.makeApiClient(kube.kubeConfig());
  const ks = { apiVersion: 'kustomize.toolkit.fluxcd.io/v1', kind: 'Kustomization', metadata: { name: 'apps', namespace: 'flux-system' }, spec: { interval: '10m', prune: true, sourceRef: { kind: 'GitRepository', name: 'flux-system' } } };
  const created = await objects.create(k(ks)) as KubeObject;
  t.deepEqual(created.status, { observedGeneration: -1 }, 'the CRD default for status, as a fresh Kustomization shows');
  t.is((created.spec as { force?: boolean }).force, false);
  t.deepEqual(kube.validate({ ...ks, spec: { ...ks.spec, interval: 'soon' } }), ["spec.interval: Invalid value: \"soon\": spec.interval in body should match '^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$'"]);

  const rollout = (maxSurge: unknown, status?: unknown) => ({
    apiVersion: 'argoproj.io/v1alpha1', kind: 'Rollout', metadata: { name: 'r', namespace: 'prod' },
    spec: { strategy: { canary: { maxSurge } } }, ...(status ? { status } : {}),
  });
  t.deepEqual(kube.validate(rollout('25%')), []);
  t.deepEqual(kube.validate(rollout(1)), []);
  t.is(kube.validate(rollout(true)).length, 1);
  // argo-cd's degraded_statusPhaseMessage.yaml has `conditions: {}`: refused, as by a real server.
  t.deepEqual(kube.validate(rollout(1, { conditions: {} })), ['status.conditions: Invalid value: "object": status.conditions in body must be of type array: "object"']);

  const ambiguous = canary('x', 'prod', { spec: { ...canary('x').spec as object, analysis: { interval: '1m', threshold: 5, iterations: 10, stepWeight: 10 } } });
  t.regex(kube.validate(ambiguous)[0] ?? '', /spec.analysis: .* must validate one and only one schema \(oneOf\), 2 matched/);
});

test('upstream flagger-canary fixtures: statuses valid; `spec: {}` lacks the required spec fields', async (t) => {
  const kube = await startKubeEmulator();
  t.teardown(() => kube.close());
  const dir = new URL('../fixtures/upstream/flagger-canary/', import.meta.url);
  const spec = canary('x').spec;
  const verdicts: Record<string, string[]> = {};
  for (const file of readdirSync(dir).sort()) {
    for (const obj of yamlObjects(readFileSync(new URL(file, dir), 'utf8'))) {
      // The docs snippet is a bare status block: give it a Canary around it.
      const whole = obj.kind ? obj : { ...canary('podinfo', 'default'), status: (obj as unknown as { status: unknown }).status };
      verdicts[file] = kube.validate(whole);
      const loaded = kube.apply({ ...whole, spec });
      t.deepEqual(loaded.status, whole.status, `${file}: status stored as is`);
      t.is(loaded.metadata.generation, whole.metadata.generation ?? 1, `${file}: generation kept`);
    }
  }
  const argo = ['argocd-degraded.yaml', 'argocd-finalising.yaml', 'argocd-initialized.yaml', 'argocd-progressing.yaml', 'argocd-promoting.yaml', 'argocd-succeeded.yaml'];
  t.deepEqual(verdicts, {
    ...Object.fromEntries(argo.map((f) => [f, ['spec.targetRef: Required value', 'spec.analysis: Required value']])),
    'flagger-docs-succeeded-status.yaml': [],
  });
  t.is(kube.list('flagger.app/v1beta1', 'Canary').length, 1, 'all are default/podinfo');
});

test('list paging: limit and continue; a continue token from before compact() is 410', async (t) => {
  const kube = await startKubeEmulator({ namespaces: ['default', 'prod'] });
  t.teardown(() => kube.close());
  for (const name of ['a', 'b', 'c', 'd', 'e']) kube.apply(canary(name, 'prod', { metadata: { name, namespace: 'prod', labels: { tier: name < 'c' ? 'front' : 'back' } } }));
  const custom = kube.kubeConfig().makeApiClient(k8s.CustomObjectsApi);
  const names: string[] = [];
  let token: string | undefined;
  do {
    const page = await custom.listNamespacedCustomObject({ ...CANARIES, namespace: 'prod', limit: 2, ...(token ? { _continue: token } : {}) }) as { items: KubeObject[]; metadata: { continue?: string } };
    names.push(...page.items.map((o) => o.metadata.name!));
    token = page.metadata.continue;
  } while (token);
  t.deepEqual(names, ['a', 'b', 'c', 'd', 'e']);

  const front = await custom.listNamespacedCustomObject({ ...CANARIES, namespace: 'prod', labelSelector: 'tier in (front),!missing' }) as { items: KubeObject[] };
  t.deepEqual(front.items.map((o) => o.metadata.name), ['a', 'b']);

  const first = await custom.listNamespacedCustomObject({ ...CANARIES, namespace: 'prod', limit: 2 }) as { metadata: { continue: string } };
  kube.apply(canary('f'));
  kube.compact();
  const expired = await custom.listNamespacedCustomObject({ ...CANARIES, namespace: 'prod', limit: 2, _continue: first.metadata.continue }).catch((e: unknown) => e);
  t.like(status(expired), { code: 410, reason: 'Expired' });
});

test('faults: failNext answers N times then recovers; delay holds a response, which client-node waits out unless given a signal', async (t) => {
  const kube = await startKubeEmulator({ namespaces: ['default', 'prod'] });
  t.teardown(() => kube.close());
  kube.apply(canary('a'));
  const custom = kube.kubeConfig().makeApiClient(k8s.CustomObjectsApi);
  const get = () => custom.getNamespacedCustomObject({ ...CANARIES, namespace: 'prod', name: 'a' });
  kube.failNext(/canaries\/a$/, 2, 503);
  t.is(status(await get().catch((e: unknown) => e)).code, 503);
  t.is(status(await get().catch((e: unknown) => e)).code, 503);
  t.is((await get() as KubeObject).metadata.name, 'a');
  t.deepEqual(kube.requests(/canaries\/a$/).map((r) => r.status), [503, 503, 200]);

  kube.delay(/canaries\/a$/, 600, 1);
  const started = Date.now();
  await get();
  t.true(Date.now() - started >= 550, 'no client-side timeout by default');
  kube.delay(/canaries\/a$/, 60_000, 1);
  // A middleware can give each request a signal: the only per-request timeout client-node offers.
  const timeout = {
    middleware: [{
      pre: (ctx: k8s.RequestContext) => { ctx.setSignal(AbortSignal.timeout(100)); return new k8s.Observable(Promise.resolve(ctx)); },
      post: (r: k8s.ResponseContext) => new k8s.Observable(Promise.resolve(r)),
    }],
    middlewareMergeStrategy: 'append' as const,
  };
  const before = Date.now();
  const err = await custom.getNamespacedCustomObject({ ...CANARIES, namespace: 'prod', name: 'a' }, timeout).catch((e: unknown) => e);
  t.is((err as Error).name, 'TimeoutError');
  t.true(Date.now() - before < 60_000, 'cut by its own signal, not by the answer a minute later');
});
