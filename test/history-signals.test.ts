import test from 'ava';
import { asText, everyBackend, evidenceOf, History } from './support/history.ts';
import { canary, deployment, kustomization } from './support/objects.ts';

/**
 * Issue 11, classes 3 and 4: the newest commit is not always the bad one, and images match
 * exactly. Every signal a target's objects give (the exact image a failing workload runs, a
 * HelmRelease's chart version or values, a Kargo Promotion's commit) names the commit that
 * introduced what fails; a later commit that changed something else is kept. Through every
 * backend, with `git revert` as the oracle for the bytes.
 */

const K = { apiVersion: 'kustomize.toolkit.fluxcd.io/v1', kind: 'Kustomization', namespace: 'flux-system', name: 'apps' };
const C = { apiVersion: 'flagger.app/v1beta1', kind: 'Canary', namespace: 'prod', name: 'podinfo' };


const overlay = (tag: string, extra = '') => `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - ../../base
images:
  - name: ghcr.io/stefanprodan/podinfo
    newTag: ${tag}
${extra}`;
const PROD = 'apps/podinfo/overlays/prod/';

test('Kustomization Ready at a later harmless commit, Canary failed: the commit that introduced the canary\'s image is bad, the later one is kept', async (t) => {
  const h = new History();
  h.commit({ [`${PROD}kustomization.yaml`]: overlay('6.0.0'), [`${PROD}replicas.yaml`]: 'replicas: 2\n' }, 'initial');
  const bad = h.commit({ [`${PROD}kustomization.yaml`]: overlay('6.1.0') }, 'podinfo 6.1.0');
  const later = h.commit({ [`${PROD}replicas.yaml`]: 'replicas: 3\n' }, 'podinfo: three replicas');
  const evidence = evidenceOf(
    [
      kustomization({ attempted: `main@sha1:${later}`, applied: `main@sha1:${later}`, ready: 'True' }),
      canary({ phase: 'Failed' }),
      deployment({ image: 'ghcr.io/stefanprodan/podinfo:6.1.0', state: 'available' }),
    ],
    [K, C],
  );
  const o = await everyBackend(t, h, [PROD], evidence);
  t.deepEqual(o.located!.bad.map((c) => c.oid), [bad]);
  t.is(o.located!.lastKnownGood, h.rev(`${bad}^`));
  t.deepEqual(o.located!.later.map((c) => c.oid), [later]);
  t.is(o.after!.get(`${PROD}kustomization.yaml`)!.toString(), overlay('6.0.0'));
  t.is(o.after!.get(`${PROD}replicas.yaml`)!.toString(), 'replicas: 3\n', 'the later commit is kept');
  t.regex(o.located!.explanation, /reports the failing revision [0-9a-f]{12} as applied/, 'the applied revision is reported');
  t.regex(o.located!.explanation, /image ghcr\.io\/stefanprodan\/podinfo:6\.1\.0 of Canary prod\/podinfo: introduced by/);
});

const values = (services: Record<string, string>) =>
  Object.entries(services)
    .map(([name, tag]) => `${name}:\n  image:\n    repository: ghcr.io/acme/${name}\n    tag: "${tag}"\n`)
    .join('');

for (const order of ['worker first', 'shop first'] as const) {
  test(`release train (${order}): shop and shop-worker share version 1.4.0; only the failing service's bump is bad`, async (t) => {
    const h = new History();
    const file = 'apps/prod/images.yaml';
    h.commit({ [file]: values({ shop: '1.3.0', 'shop-worker': '1.3.0' }), 'apps/prod/other.yaml': 'x: 1\n' }, 'initial');
    const shopFirst = order === 'shop first';
    const c1 = h.commit({ [file]: shopFirst ? values({ shop: '1.4.0', 'shop-worker': '1.3.0' }) : values({ shop: '1.3.0', 'shop-worker': '1.4.0' }) }, shopFirst ? 'shop 1.4.0' : 'shop-worker 1.4.0');
    const c2 = h.commit({ [file]: values({ shop: '1.4.0', 'shop-worker': '1.4.0' }) }, shopFirst ? 'shop-worker 1.4.0' : 'shop 1.4.0');
    const shopBump = shopFirst ? c1 : c2;
    const evidence = evidenceOf([deployment({ name: 'shop', image: 'ghcr.io/acme/shop:1.4.0', state: 'deadline' })]);
    const o = await everyBackend(t, h, ['apps/prod/'], evidence);
    t.deepEqual(o.located!.bad.map((c) => c.oid), [shopBump]);
    t.regex(o.after!.get(file)!.toString(), /repository: ghcr\.io\/acme\/shop\n    tag: "1\.3\.0"/);
    t.regex(o.after!.get(file)!.toString(), /shop-worker\n    tag: "1\.4\.0"/, 'the worker keeps its bump');
  });
}

test('a pod with a sidecar: the commit that introduced the failing app image is bad, not the sidecar\'s old one', async (t) => {
  const h = new History();
  const manifest = (app: string, sidecar: string) => `apiVersion: apps/v1
kind: Deployment
metadata: { name: shop, namespace: prod }
spec:
  template:
    spec:
      initContainers:
        - name: migrate
          image: registry.local:5000/acme/migrate:2.0
      containers:
        - name: app
          image: ${app}
        - name: proxy
          image: ${sidecar}
`;
  h.commit({ 'apps/shop/deploy.yaml': manifest('registry.local:5000/acme/shop:1.0', 'envoyproxy/envoy:v1.30.0') }, 'initial');
  h.commit({ 'apps/shop/deploy.yaml': manifest('registry.local:5000/acme/shop:1.0', 'envoyproxy/envoy:v1.31.0') }, 'envoy 1.31');
  const bad = h.commit({ 'apps/shop/deploy.yaml': manifest('registry.local:5000/acme/shop:1.1', 'envoyproxy/envoy:v1.31.0') }, 'shop 1.1');
  const d = deployment({ name: 'shop', image: 'registry.local:5000/acme/shop:1.1', state: 'deadline' });
  d.spec.template.spec.containers.push({ name: 'proxy', image: 'envoyproxy/envoy:v1.31.0' });
  (d.spec.template.spec as Record<string, unknown>).initContainers = [{ name: 'migrate', image: 'registry.local:5000/acme/migrate:2.0' }];
  const o = await everyBackend(t, h, ['apps/shop/'], evidenceOf([d]));
  t.deepEqual(o.located!.bad.map((c) => c.oid), [bad]);
  t.regex(o.located!.explanation, /envoy:v1\.31\.0 of Deployment prod\/shop: introduced earlier by/);
});

test('kustomize images with newName, newTag and digest, and Helm values with a registry, match exactly', async (t) => {
  const h = new History();
  const k = (digest: string) => `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
images:
  - name: podinfo
    newName: ghcr.io/stefanprodan/podinfo
    newTag: 6.1.0
    digest: sha256:${digest}
`;
  const helm = (tag: string) => `image:\n  registry: quay.io\n  repository: acme/api\n  tag: ${tag}\n`;
  const d1 = 'a'.repeat(64);
  const d2 = 'b'.repeat(64);
  h.commit({ 'apps/web/kustomization.yaml': k(d1), 'apps/web/api-values.yaml': helm('2.0.0') }, 'initial');
  const digestBump = h.commit({ 'apps/web/kustomization.yaml': k(d2) }, 'podinfo rebuilt');
  const apiBump = h.commit({ 'apps/web/api-values.yaml': helm('2.1.0') }, 'api 2.1.0');
  const byDigest = await everyBackend(t, h, ['apps/web/'], evidenceOf([deployment({ name: 'web', image: `ghcr.io/stefanprodan/podinfo:6.1.0@sha256:${d2}`, state: 'deadline' })]));
  t.deepEqual(byDigest.located!.bad.map((c) => c.oid), [digestBump]);
  const byRegistry = await everyBackend(t, h, ['apps/web/'], evidenceOf([deployment({ name: 'api', image: 'quay.io/acme/api:2.1.0', state: 'deadline' })]));
  t.deepEqual(byRegistry.located!.bad.map((c) => c.oid), [apiBump]);
});

const helmRelease = (o: { version: string; applied?: string; reason?: string; specVersion?: string }) => ({
  apiVersion: 'helm.toolkit.fluxcd.io/v2',
  kind: 'HelmRelease',
  metadata: { name: 'podinfo', namespace: 'prod', generation: 2 },
  spec: { interval: '5m', chart: { spec: { chart: 'podinfo', version: o.specVersion ?? o.version, sourceRef: { kind: 'HelmRepository', name: 'podinfo' } } } },
  status: {
    observedGeneration: 2,
    lastAttemptedRevision: o.version,
    history: o.applied ? [{ chartName: 'podinfo', chartVersion: o.applied, status: 'deployed', name: 'podinfo', namespace: 'prod', version: 3, digest: 'sha256:' + 'c'.repeat(64), firstDeployed: '2026-11-01T11:00:00Z', lastDeployed: '2026-11-01T11:00:00Z', configDigest: 'sha256:' + 'd'.repeat(64) }] : [],
    conditions: [{ type: 'Ready', status: 'False', reason: o.reason ?? 'UpgradeFailed', message: 'Helm upgrade failed for release prod/podinfo: context deadline exceeded', lastTransitionTime: '2026-11-01T12:00:00Z' }],
  },
});
const release = (version: string, values: string) => `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: podinfo
  namespace: prod
spec:
  chart:
    spec:
      chart: podinfo
      version: ${version}
      sourceRef: { kind: HelmRepository, name: podinfo }
  values:
${values}`;

test('HelmRelease chart bump: the commit that pinned the failing chart version is bad; a later values edit is kept', async (t) => {
  const h = new History();
  h.commit({ 'apps/podinfo/release.yaml': release('6.5.3', '    replicaCount: 2\n'), 'apps/podinfo/notes.yaml': 'a: 1\n' }, 'initial');
  const bad = h.commit({ 'apps/podinfo/release.yaml': release('6.5.4', '    replicaCount: 2\n') }, 'podinfo chart 6.5.4');
  const later = h.commit({ 'apps/podinfo/notes.yaml': 'a: 2\n' }, 'notes');
  const evidence = evidenceOf(
    [kustomization({ attempted: `main@sha1:${later}`, applied: `main@sha1:${later}`, ready: 'True' }), helmRelease({ version: '6.5.4', applied: '6.5.3' })],
  );
  const o = await everyBackend(t, h, ['apps/podinfo/'], evidence);
  t.deepEqual(o.located!.bad.map((c) => c.oid), [bad]);
  t.is(o.located!.how, 'chart');
  t.is(o.after!.get('apps/podinfo/release.yaml')!.toString(), release('6.5.3', '    replicaCount: 2\n'));
  t.is(o.after!.get('apps/podinfo/notes.yaml')!.toString(), 'a: 2\n');
});

test('HelmRelease whose chart did not change: the commit that changed its values is bad', async (t) => {
  const h = new History();
  h.commit({ 'apps/podinfo/release.yaml': release('6.5.4', '    replicaCount: 2\n'), 'apps/podinfo/notes.yaml': 'a: 1\n' }, 'initial');
  const bad = h.commit({ 'apps/podinfo/release.yaml': release('6.5.4', '    replicaCount: 2\n    resources: { limits: { memory: 8Mi } }\n') }, 'podinfo: tight memory');
  const later = h.commit({ 'apps/podinfo/notes.yaml': 'a: 2\n' }, 'notes');
  const evidence = evidenceOf([kustomization({ attempted: `main@sha1:${later}`, applied: `main@sha1:${later}`, ready: 'True' }), helmRelease({ version: '6.5.4', applied: '6.5.4' })]);
  const o = await everyBackend(t, h, ['apps/podinfo/'], evidence);
  t.deepEqual(o.located!.bad.map((c) => c.oid), [bad]);
  t.is(o.located!.how, 'values');
});

test('two failing workloads whose images came from different commits, and no revision range to bound them: refused, naming both', async (t) => {
  const h = new History();
  h.commit({ 'apps/a/d.yaml': 'image: ghcr.io/acme/a:1\n', 'apps/b/d.yaml': 'image: ghcr.io/acme/b:1\n' }, 'initial');
  const ca = h.commit({ 'apps/a/d.yaml': 'image: ghcr.io/acme/a:2\n' }, 'a 2');
  const cb = h.commit({ 'apps/b/d.yaml': 'image: ghcr.io/acme/b:2\n' }, 'b 2');
  const evidence = evidenceOf([deployment({ name: 'a', image: 'ghcr.io/acme/a:2', state: 'deadline' }), deployment({ name: 'b', image: 'ghcr.io/acme/b:2', state: 'deadline' })]);
  const o = await everyBackend(t, h, ['apps/'], evidence);
  t.regex(o.refused!, /signals disagree: they name 2 different commits/);
  t.true(o.refused!.includes(ca.slice(0, 12)) && o.refused!.includes(cb.slice(0, 12)));
});

test('with a revision range, an image that ran before the applied revision is not blamed: the range decides', async (t) => {
  const h = new History();
  h.commit({ 'apps/shop/d.yaml': 'image: ghcr.io/acme/shop:1.0\nenv: a\n' }, 'initial');
  const applied = h.commit({ 'README.md': 'x\n' }, 'docs');
  const bad = h.commit({ 'apps/shop/d.yaml': 'image: ghcr.io/acme/shop:1.0\nenv: b\n' }, 'shop: env b');
  const evidence = evidenceOf([
    kustomization({ attempted: `main@sha1:${bad}`, applied: `main@sha1:${applied}`, ready: 'False' }),
    deployment({ name: 'shop', image: 'ghcr.io/acme/shop:1.0', state: 'deadline' }),
  ]);
  const o = await everyBackend(t, h, ['apps/shop/'], evidence);
  t.deepEqual(o.located!.bad.map((c) => c.oid), [bad]);
  t.regex(o.located!.explanation, /at or before the applied revision/);
});

test('a Kargo Promotion\'s own commit is the bad one', async (t) => {
  const h = new History();
  h.commit({ 'stages/prod/values.yaml': 'image: ghcr.io/acme/shop:1.0\n' }, 'initial');
  const promoted = h.commit({ 'stages/prod/values.yaml': 'image: ghcr.io/acme/shop:1.1\n' }, 'kargo: promote freight abc to prod');
  h.commit({ 'stages/test/values.yaml': 'image: ghcr.io/acme/shop:1.2\n' }, 'kargo: promote to test');
  const promotion = {
    apiVersion: 'kargo.akuity.io/v1alpha1',
    kind: 'Promotion',
    metadata: { name: 'prod.abc', namespace: 'shop' },
    spec: { stage: 'prod', freight: 'abc', steps: [{ uses: 'git-commit', as: 'commit' }, { uses: 'git-push', as: 'push' }, { uses: 'argocd-update', as: 'sync' }] },
    status: {
      phase: 'Errored', message: 'step sync: Argo CD sync failed', finishedAt: '2026-11-01T12:00:00Z',
      stepExecutionMetadata: [{ alias: 'commit', status: 'Succeeded' }, { alias: 'push', status: 'Succeeded' }, { alias: 'sync', status: 'Errored', message: 'sync failed' }],
      state: { push: { commit: promoted, branch: 'main' } },
    },
  };
  const o = await everyBackend(t, h, ['stages/prod/'], evidenceOf([promotion]));
  t.deepEqual(o.located!.bad.map((c) => c.oid), [promoted]);
  t.is(o.located!.how, 'commit');
});

test('Argo CD auto-synced a harmless later commit after the failure began: the deployment at the failure\'s onset is bad, the later one is kept', async (t) => {
  const h = new History();
  const good = h.commit({ [`${PROD}kustomization.yaml`]: overlay('6.0.0'), [`${PROD}replicas.yaml`]: 'replicas: 2\n' }, 'initial');
  const bad = h.commit({ [`${PROD}kustomization.yaml`]: overlay('6.1.0') }, 'podinfo 6.1.0');
  const later = h.commit({ [`${PROD}replicas.yaml`]: 'replicas: 3\n' }, 'podinfo: three replicas');
  const app = {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Application',
    metadata: { name: 'podinfo-prod', namespace: 'argocd' },
    spec: { project: 'default', source: { repoURL: 'https://github.com/acme/gitops.git', path: PROD, targetRevision: 'main' }, destination: { namespace: 'prod', server: 'https://kubernetes.default.svc' }, syncPolicy: { automated: { prune: true } } },
    status: {
      reconciledAt: '2026-11-01T12:04:00Z',
      health: { status: 'Degraded', message: 'Deployment "podinfo" exceeded its progress deadline', lastTransitionTime: '2026-11-01T11:04:00Z' },
      sync: { status: 'Synced', revision: later },
      operationState: { phase: 'Succeeded', startedAt: '2026-11-01T11:29:58Z', finishedAt: '2026-11-01T11:30:00Z', operation: { sync: { revision: later } }, syncResult: { revision: later } },
      summary: { images: ['ghcr.io/stefanprodan/podinfo:6.1.0'] },
      history: [
        { id: 1, revision: good, deployStartedAt: '2026-11-01T09:59:58Z', deployedAt: '2026-11-01T10:00:00Z' },
        { id: 2, revision: bad, deployStartedAt: '2026-11-01T10:59:58Z', deployedAt: '2026-11-01T11:00:00Z' },
        { id: 3, revision: later, deployStartedAt: '2026-11-01T11:29:58Z', deployedAt: '2026-11-01T11:30:00Z' },
      ],
    },
  };
  const o = await everyBackend(t, h, [PROD], evidenceOf([app]));
  t.deepEqual(o.located!.bad.map((c) => c.oid), [bad]);
  t.deepEqual(o.located!.later.map((c) => c.oid), [later]);
  t.is(o.after!.get(`${PROD}replicas.yaml`)!.toString(), 'replicas: 3\n', 'the later commit is kept');
  t.is(o.after!.get(`${PROD}kustomization.yaml`)!.toString(), overlay('6.0.0'));
});

test('an image bot\'s commit (Flux image-policy markers) is named when its image fails; the human commit after it is kept', async (t) => {
  const h = new History();
  const values = (tag: string, replicas: number) => `image:\n  repository: ghcr.io/acme/shop # {"$imagepolicy": "flux-system:shop:name"}\n  tag: ${tag} # {"$imagepolicy": "flux-system:shop:tag"}\n  pullPolicy: IfNotPresent\nreplicas: ${replicas}\n`;
  h.commit({ 'apps/shop/values.yaml': values('1.3.0', 2) }, 'initial');
  const bot = h.commit({ 'apps/shop/values.yaml': values('1.4.0', 2) }, '[ci skip] Update image ghcr.io/acme/shop to 1.4.0');
  const human = h.commit({ 'apps/shop/values.yaml': values('1.4.0', 3) }, 'shop: three replicas');
  const o = await everyBackend(t, h, ['apps/shop/'], evidenceOf([deployment({ name: 'shop', image: 'ghcr.io/acme/shop:1.4.0', state: 'deadline' })]));
  t.deepEqual(o.located!.bad.map((c) => c.oid), [bot]);
  t.deepEqual(o.located!.later.map((c) => c.oid), [human]);
  t.is(o.after!.get('apps/shop/values.yaml')!.toString(), values('1.3.0', 3));
});
