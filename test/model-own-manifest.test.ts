import test from 'ava';
import jsYaml from 'js-yaml';
import { lastgoodEngine } from './support/engine-run.ts';
import { commit, fingerprint, git, makeRepo, tempDir, writeFile } from './support/git.ts';
import { everyBackend, evidenceOf, History, type EngineSetup } from './support/history.ts';
import { repoHelmRelease } from './support/helm-manifests.ts';
import { deployment, helmRelease, kustomization, yamlDocs } from './support/objects.ts';
import { testRenderer } from './support/renderer.ts';

/**
 * Issue 34, class 0: the engine object's own manifest, kept in git and applied by a parent, is an
 * input. A Flux Kustomization declared in `ks.yaml` in the target's paths: its `images`,
 * `postBuild.substitute` at a revision are the file's (src/model/flux.ts ownSpec); a HelmRelease
 * applied by a parent from the target's paths: its chart pin and values are setters
 * (src/model/helm.ts). Before, the first was refused ("ks.yaml changed in the target's paths, but
 * the build does not read it") and the second "not set by anything the engine reads". Siblings
 * that must stay untouched: another Kustomization's manifest in the same paths, an override
 * written only to the cluster object (an image updater). Every backend, `git revert` as the
 * content oracle; a whole run (the engine as `lastgood run` calls it) with the render check on (kubectl kustomize).
 */

const IMAGE = 'ghcr.io/stefanprodan/podinfo';
const KS = { apiVersion: 'kustomize.toolkit.fluxcd.io/v1', kind: 'Kustomization', namespace: 'flux-system', name: 'podinfo' };
const DEPLOY = { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'prod', name: 'podinfo' };
const gitRepository = {
  apiVersion: 'source.toolkit.fluxcd.io/v1', kind: 'GitRepository', metadata: { name: 'flux-system', namespace: 'flux-system' },
  spec: { interval: '1m0s', ref: { branch: 'main' }, url: 'ssh://git@github.com/acme/gitops' },
  status: { conditions: [{ type: 'Ready', status: 'True', reason: 'Succeeded', message: 'stored artifact', lastTransitionTime: '2026-11-01T11:00:00Z' }] },
};

const kz = (r: string[]) => `apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n${r.map((x) => `  - ${x}`).join('\n')}\n`;
/** The Flux Kustomization kept in git, as the flux2 examples lay it out beside the app. */
const ks = (o: { name?: string; path?: string; tag?: string; substitute?: Record<string, string> }) => `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: ${o.name ?? 'podinfo'}
  namespace: flux-system
spec:
  interval: 10m
  path: ${o.path ?? './apps/podinfo/app'}
  prune: true
  targetNamespace: prod
  sourceRef:
    kind: GitRepository
    name: flux-system
${o.tag ? `  images:\n    - name: ${IMAGE}\n      newTag: ${o.tag}\n` : ''}${o.substitute ? `  postBuild:\n    substitute:\n${Object.entries(o.substitute).map(([k, v]) => `      ${k}: "${v}"`).join('\n')}\n` : ''}`;
const deploymentYaml = (image: string) => `apiVersion: apps/v1
kind: Deployment
metadata:
  name: podinfo
spec:
  selector:
    matchLabels: { app: podinfo }
  template:
    metadata:
      labels: { app: podinfo }
    spec:
      containers:
        - name: podinfo
          image: ${image}
`;
const specOf = (manifest: string) => (jsYaml.load(manifest) as { spec: Record<string, unknown> }).spec;

/** The Kustomization as the cluster reports it: its spec is the manifest's at the attempted revision. */
function fluxObject(manifest: string, o: { attempted: string; applied: string; ready: 'True' | 'False' }) {
  const k = kustomization({ name: 'podinfo', attempted: `main@sha1:${o.attempted}`, applied: `main@sha1:${o.applied}`, ready: o.ready });
  k.spec = specOf(manifest) as typeof k.spec;
  return k;
}

function appRepo(first: string): { h: History; applied: string } {
  const h = new History();
  h.commit({
    'clusters/prod/kustomization.yaml': kz(['../../apps/podinfo/ks.yaml', '../../apps/podinfo/ks-canary.yaml']),
    'apps/podinfo/ks.yaml': first,
    'apps/podinfo/ks-canary.yaml': ks({ name: 'podinfo-canary', path: './apps/podinfo/canary', tag: '6.5.3' }),
    'apps/podinfo/app/kustomization.yaml': kz(['deployment.yaml']),
    'apps/podinfo/app/deployment.yaml': deploymentYaml(`${IMAGE}:6.5.0`),
    'apps/podinfo/canary/kustomization.yaml': kz(['deployment.yaml']),
    'apps/podinfo/canary/deployment.yaml': deploymentYaml(`${IMAGE}:6.5.0`),
  }, 'initial');
  return { h, applied: h.commit({ 'README.md': 'gitops\n' }, 'docs') };
}

const PATHS = ['apps/podinfo/'];
const setup = (k: object, d: object): EngineSetup => ({ resources: [KS, DEPLOY], objects: [k, d, gitRepository] });

for (const shape of ['range', 'no range'] as const) {
  test(`a Flux Kustomization kept in git: the commit that bumped its spec.images is bad and reverted (${shape})`, async (t) => {
    const { h, applied } = appRepo(ks({ tag: '6.5.3' }));
    const bump = h.commit({ 'apps/podinfo/ks.yaml': ks({ tag: '6.5.4' }) }, 'podinfo 6.5.4');
    const k = fluxObject(ks({ tag: '6.5.4' }), { attempted: bump, applied: shape === 'range' ? applied : bump, ready: shape === 'range' ? 'False' : 'True' });
    const d = deployment({ image: `${IMAGE}:6.5.4`, state: 'deadline' });
    const o = await everyBackend(t, h, PATHS, evidenceOf([k, d], [KS, DEPLOY]), setup(k, d));
    t.falsy(o.refused, o.refused);
    t.deepEqual(o.located!.bad.map((c) => c.oid), [bump]);
    t.is(o.located!.lastKnownGood, applied);
    t.is(o.after!.get('apps/podinfo/ks.yaml')!.toString(), ks({ tag: '6.5.3' }));
    t.deepEqual(o.verification!.changed.map((c) => [c.path, c.role]), [['apps/podinfo/ks.yaml', 'engine-object']]);
    const images = (m: 'head' | 'after') => o.verification!.models[m].setters.filter((s) => s.what === 'image').map((s) => [s.where, s.inRepo, s.image!.tag]);
    t.deepEqual(images('head'), [['apps/podinfo/app/deployment.yaml', true, '6.5.0'], ['apps/podinfo/ks.yaml', true, '6.5.4']]);
    t.deepEqual(images('after'), [['apps/podinfo/app/deployment.yaml', true, '6.5.0'], ['apps/podinfo/ks.yaml', true, '6.5.3']]);
  });
}

test('a Flux Kustomization kept in git: a postBuild.substitute change is what the engine builds, and is reverted', async (t) => {
  const { h, applied } = appRepo(ks({ substitute: { TAG: '6.5.3' } }));
  h.commit({ 'apps/podinfo/app/deployment.yaml': deploymentYaml(`${IMAGE}:\${TAG}`) }, 'podinfo: tag from the Kustomization');
  const good = h.commit({ 'apps/podinfo/ks.yaml': ks({ substitute: { TAG: '6.5.3' } }) + '# reviewed\n' }, 'ks: comment');
  const bump = h.commit({ 'apps/podinfo/ks.yaml': ks({ substitute: { TAG: '6.5.4' } }) + '# reviewed\n' }, 'podinfo 6.5.4 by substitution');
  const k = fluxObject(ks({ substitute: { TAG: '6.5.4' } }), { attempted: bump, applied: good, ready: 'False' });
  const d = deployment({ image: `${IMAGE}:6.5.4`, state: 'deadline' });
  const o = await everyBackend(t, h, PATHS, evidenceOf([k, d], [KS, DEPLOY]), setup(k, d));
  t.falsy(o.refused, o.refused);
  t.deepEqual(o.located!.bad.map((c) => c.oid), [bump]);
  t.is(o.located!.lastKnownGood, good);
  t.not(applied, good);
  t.is(o.after!.get('apps/podinfo/ks.yaml')!.toString(), ks({ substitute: { TAG: '6.5.3' } }) + '# reviewed\n');
});

test('siblings stay untouched: another Kustomization\'s manifest in the same paths is not read for the target, and an override on the cluster object names no commit', async (t) => {
  const { h, applied } = appRepo(ks({ tag: '6.5.3' }));
  // the canary Kustomization's file changed, the target's did not: nothing the target's build reads changed
  const canary = h.commit({ 'apps/podinfo/ks-canary.yaml': ks({ name: 'podinfo-canary', path: './apps/podinfo/canary', tag: '6.5.4' }) }, 'canary: 6.5.4');
  const k = fluxObject(ks({ tag: '6.5.3' }), { attempted: canary, applied, ready: 'False' });
  const d = deployment({ image: `${IMAGE}:6.5.3`, state: 'deadline' });
  const o = await everyBackend(t, h, PATHS, evidenceOf([k, d], [KS, DEPLOY]), setup(k, d));
  t.regex(o.refused!, /apps\/podinfo\/ks-canary\.yaml changed in the target's paths, but the build does not read it; a revert would change nothing the cluster runs/);

  // an image updater wrote 6.6.0 to the cluster object only: no commit set it, none is named
  const bare = new History();
  bare.commit({ 'apps/podinfo/app/kustomization.yaml': kz(['deployment.yaml']), 'apps/podinfo/app/deployment.yaml': deploymentYaml(`${IMAGE}:6.5.0`) }, 'initial');
  const docs = bare.commit({ 'README.md': 'x\n' }, 'docs');
  const k2 = fluxObject(ks({ tag: '6.6.0' }), { attempted: docs, applied: docs, ready: 'True' });
  const d2 = deployment({ image: `${IMAGE}:6.6.0`, state: 'deadline' });
  const o2 = await everyBackend(t, bare, PATHS, evidenceOf([k2, d2], [KS, DEPLOY]), setup(k2, d2));
  t.regex(o2.refused!, /image ghcr\.io\/stefanprodan\/podinfo:6\.6\.0 of Deployment prod\/podinfo: set by Kustomization flux-system\/podinfo spec\.images, a field of the cluster object that no revert of the repository changes/);
  t.falsy(o2.located, 'no commit named (before: the first commit of the repository)');
});

// ---- a HelmRelease applied by a parent from the target's paths -----------------------------------

const HR = { apiVersion: 'helm.toolkit.fluxcd.io/v2', kind: 'HelmRelease', namespace: 'prod', name: 'podinfo' };
const APPS = { apiVersion: 'kustomize.toolkit.fluxcd.io/v1', kind: 'Kustomization', namespace: 'flux-system', name: 'apps' };
const release = repoHelmRelease;

/** The repository: clusters/prod applies the release; the Kustomization the target lists builds the app's config beside it. */
function helmRepo(first: string): { h: History; applied: string } {
  const h = new History();
  h.commit({
    'clusters/prod/kustomization.yaml': kz(['../../apps/podinfo/release.yaml']),
    'apps/podinfo/release.yaml': first,
    'apps/podinfo/config/kustomization.yaml': kz(['configmap.yaml']),
    'apps/podinfo/config/configmap.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: podinfo-dashboards\n  namespace: prod\n',
  }, 'initial');
  return { h, applied: h.commit({ 'README.md': 'gitops\n' }, 'docs') };
}
const appsObject = (attempted: string) => {
  const k = kustomization({ attempted: `main@sha1:${attempted}`, applied: `main@sha1:${attempted}`, ready: 'True' });
  k.spec = { ...k.spec, path: './apps/podinfo/config' };
  return k;
};
const outcomes = {
  UpgradeFailed: (v: string, deployed: string) => ({ reason: 'UpgradeFailed', history: [{ chartVersion: v, lastDeployed: '2026-11-01T12:00:00Z', status: 'failed' }, { chartVersion: deployed, lastDeployed: '2026-11-01T09:00:00Z', status: 'deployed' }] }),
  RetriesExceeded: (v: string, deployed: string) => ({ reason: 'RetriesExceeded', history: [{ chartVersion: v, lastDeployed: '2026-11-01T12:00:00Z', status: 'failed' }, { chartVersion: deployed, lastDeployed: '2026-11-01T09:00:00Z', status: 'deployed' }] }),
  // remediation rolled back: the newest release is the old chart again, deployed
  RolledBack: (v: string, deployed: string) => ({ reason: 'RetriesExceeded', history: [{ chartVersion: deployed, lastDeployed: '2026-11-01T12:02:00Z', status: 'deployed' }, { chartVersion: v, lastDeployed: '2026-11-01T12:00:00Z', status: 'failed' }, { chartVersion: deployed, lastDeployed: '2026-11-01T09:00:00Z', status: 'superseded' }] }),
};

for (const [name, outcome] of Object.entries(outcomes)) {
  test(`a HelmRelease applied by a parent from the target's paths, chart bumped and ${name}: the bump is reverted exactly`, async (t) => {
    const { h, applied } = helmRepo(release('6.5.3'));
    const bump = h.commit({ 'apps/podinfo/release.yaml': release('6.5.4') }, 'podinfo chart 6.5.4');
    const hr = helmRelease({ spec: specOf(release('6.5.4')), attempted: '6.5.4', ...outcome('6.5.4', '6.5.3') });
    const k = appsObject(bump);
    const o = await everyBackend(t, h, PATHS, evidenceOf([k, hr], [APPS, HR]), { resources: [APPS, HR], objects: [k, hr, gitRepository] });
    t.falsy(o.refused, o.refused);
    t.deepEqual(o.located!.bad.map((c) => c.oid), [bump]);
    t.is(o.located!.lastKnownGood, applied);
    t.is(o.after!.get('apps/podinfo/release.yaml')!.toString(), release('6.5.3'));
    t.deepEqual(o.verification!.models.after.setters.filter((s) => s.what === 'chart').map((s) => [s.where, s.chart!.version]), [['apps/podinfo/release.yaml', '6.5.3']]);
  });
}

test('a HelmRelease applied by a parent from the target\'s paths: a values change (chart unchanged) that failed the upgrade is reverted, the chart bump before it kept', async (t) => {
  const { h } = helmRepo(release('6.5.3'));
  const bump = h.commit({ 'apps/podinfo/release.yaml': release('6.5.4') }, 'podinfo chart 6.5.4');
  const values = h.commit({ 'apps/podinfo/release.yaml': release('6.5.4', 5) }, 'podinfo: five replicas');
  const hr = helmRelease({ spec: specOf(release('6.5.4', 5)), attempted: '6.5.4', reason: 'UpgradeFailed', history: [{ chartVersion: '6.5.4', lastDeployed: '2026-11-01T12:00:00Z', status: 'failed' }, { chartVersion: '6.5.4', lastDeployed: new Date((Number(h.git('show', '-s', '--format=%ct', bump)) + 1) * 1000).toISOString().replace('.000', ''), status: 'deployed' }] });
  const k = appsObject(values);
  const o = await everyBackend(t, h, PATHS, evidenceOf([k, hr], [APPS, HR]), { resources: [APPS, HR], objects: [k, hr, gitRepository] });
  t.falsy(o.refused, o.refused);
  t.deepEqual(o.located!.bad.map((c) => c.oid), [values]);
  t.is(o.located!.lastKnownGood, bump);
  t.is(o.after!.get('apps/podinfo/release.yaml')!.toString(), release('6.5.4'));
});

// ---- a whole run, rendered --------------------------------------------------------------------------

test('a whole run, render on: a Flux Kustomization kept in git is rendered with its spec at each revision; the images bump is reverted and the render shows the tag going back', async (t) => {
  if (!(await testRenderer(t))) return;
  const repo = makeRepo();
  commit(repo, {
    'clusters/prod/kustomization.yaml': kz(['../../apps/podinfo/ks.yaml']),
    'apps/podinfo/ks.yaml': ks({ tag: '6.5.3' }),
    'apps/podinfo/app/kustomization.yaml': kz(['deployment.yaml']),
    'apps/podinfo/app/deployment.yaml': deploymentYaml(`${IMAGE}:6.5.0`),
  }, 'initial');
  const applied = commit(repo, { 'README.md': 'x\n' }, 'docs');
  const bump = commit(repo, { 'apps/podinfo/ks.yaml': ks({ tag: '6.5.4' }) }, 'podinfo 6.5.4');
  const dir = tempDir('lastgood-own-');
  const config = writeFile(dir, 'lastgood.yaml', `repo:\n  url: ${repo}\ndefaults:\n  mode: commit\n  confirmations: 1\ntargets:\n  - name: podinfo-prod\n    paths: [apps/podinfo/]\n    resources:\n      - { apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: podinfo }\n      - { apiVersion: apps/v1, kind: Deployment, namespace: prod, name: podinfo }\n`);
  const k = fluxObject(ks({ tag: '6.5.4' }), { attempted: bump, applied, ready: 'False' });
  const snapshot = writeFile(dir, 'cluster.yaml', yamlDocs(k, deployment({ image: `${IMAGE}:6.5.4`, state: 'deadline' }), gitRepository));
  const before = fingerprint(repo);
  const r = await lastgoodEngine(['run', '--now', '2026-11-01T12:05:00Z', '--config', config, '--snapshot', snapshot, '--json']);
  t.is(r.code, 0, r.stdout + r.stderr);
  const out = JSON.parse(r.stdout).targets[0];
  t.deepEqual(out.bad, [bump]);
  t.not(fingerprint(repo), before);
  t.is(git(repo, 'show', 'main:apps/podinfo/ks.yaml') + '\n', ks({ tag: '6.5.3' }));
  t.regex(out.checked.rendered.diff, /^-\s+- image: ghcr\.io\/stefanprodan\/podinfo:6\.5\.4\n\+\s+- image: ghcr\.io\/stefanprodan\/podinfo:6\.5\.3$/m, 'rendered: the last-known-good\'s tag, from the Kustomization\'s spec as its file says at that revision');
});

// ---- an Argo CD Application kept in git (app of apps) ----------------------------------------------

const ARGO_APP = { apiVersion: 'argoproj.io/v1alpha1', kind: 'Application', namespace: 'argocd', name: 'podinfo-prod' };
const argoApp = (image: string, path = 'apps/podinfo/prod') => `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: podinfo-prod
  namespace: argocd
spec:
  project: default
  source:
    repoURL: https://github.com/acme/gitops.git
    targetRevision: main
    path: ${path}
    kustomize:
      images:
        - ${image}
  destination:
    server: https://kubernetes.default.svc
    namespace: prod
  syncPolicy:
    automated: { prune: true, selfHeal: true }
`;

test('an Argo CD Application kept in git and applied by an app of apps: the commit that changed its kustomize.images is bad and reverted; the same override written only to the cluster object is refused', async (t) => {
  const h = new History();
  h.commit({
    'apps/root/kustomization.yaml': kz(['../podinfo/app.yaml']),
    'apps/podinfo/app.yaml': argoApp(`${IMAGE}:6.9.3`),
    'apps/podinfo/prod/kustomization.yaml': kz(['deployment.yaml']),
    'apps/podinfo/prod/deployment.yaml': deploymentYaml(`${IMAGE}:6.9.0`),
  }, 'initial');
  const applied = h.commit({ 'README.md': 'gitops\n' }, 'docs');
  const bump = h.commit({ 'apps/podinfo/app.yaml': argoApp(`${IMAGE}:7.0.0`) }, 'podinfo 7.0.0');
  const { application } = await import('./support/objects.ts');
  const app = application({ source: (specOf(argoApp(`${IMAGE}:7.0.0`)) as { source: Record<string, unknown> }).source, history: [applied, bump], images: [`${IMAGE}:7.0.0`] });
  const d = deployment({ image: `${IMAGE}:7.0.0`, state: 'deadline' });
  const o = await everyBackend(t, h, PATHS, evidenceOf([app, d], [ARGO_APP, DEPLOY]), { resources: [ARGO_APP, DEPLOY], objects: [app] });
  t.falsy(o.refused, o.refused);
  t.deepEqual(o.located!.bad.map((c) => c.oid), [bump]);
  t.is(o.located!.lastKnownGood, applied);
  t.is(o.after!.get('apps/podinfo/app.yaml')!.toString(), argoApp(`${IMAGE}:6.9.3`));
  t.deepEqual(o.verification!.models.after.setters.filter((s) => s.what === 'image').map((s) => [s.where, s.inRepo, s.image!.tag]).sort(), [['apps/podinfo/app.yaml', true, '6.9.3'], ['apps/podinfo/prod/deployment.yaml', true, '6.9.0']]);

  // the Application's file is not in the target's paths: its spec is the cluster's, which no commit changes
  const o2 = await everyBackend(t, h, ['apps/podinfo/prod/'], evidenceOf([app, d], [ARGO_APP, DEPLOY]), { resources: [ARGO_APP, DEPLOY], objects: [app] });
  t.regex(o2.refused!, /is set by Application argocd\/podinfo-prod spec\.source\.kustomize\.images, a field of a cluster object that no revert of the repository changes|set by Application argocd\/podinfo-prod spec\.source\.kustomize\.images, a field of the cluster object/);
});

const appSet = (image: string) => `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata:
  name: podinfo
  namespace: argocd
spec:
  generators:
    - list:
        elements:
          - env: prod
  template:
    metadata:
      name: 'podinfo-{{env}}'
    spec:
      project: default
      source:
        repoURL: https://github.com/acme/gitops.git
        targetRevision: main
        path: 'apps/podinfo/{{env}}'
        kustomize:
          images:
            - ${image}
      destination:
        server: https://kubernetes.default.svc
        namespace: '{{env}}'
`;

test('an Argo CD Application an ApplicationSet in git generates: the commit that changed the template\'s kustomize.images is bad and reverted (templated fields keep the cluster\'s rendered values)', async (t) => {
  const h = new History();
  h.commit({
    'apps/podinfo/appset.yaml': appSet(`${IMAGE}:6.9.3`),
    'apps/podinfo/prod/kustomization.yaml': kz(['deployment.yaml']),
    'apps/podinfo/prod/deployment.yaml': deploymentYaml(`${IMAGE}:6.9.0`),
  }, 'initial');
  const applied = h.commit({ 'README.md': 'gitops\n' }, 'docs');
  const bump = h.commit({ 'apps/podinfo/appset.yaml': appSet(`${IMAGE}:7.0.0`) }, 'podinfo 7.0.0 in the template');
  const { application } = await import('./support/objects.ts');
  const app = application({ name: 'podinfo-prod', source: { repoURL: 'https://github.com/acme/gitops.git', targetRevision: 'main', path: 'apps/podinfo/prod', kustomize: { images: [`${IMAGE}:7.0.0`] } }, history: [applied, bump], images: [`${IMAGE}:7.0.0`] });
  (app.metadata as Record<string, unknown>).ownerReferences = [{ apiVersion: 'argoproj.io/v1alpha1', kind: 'ApplicationSet', name: 'podinfo', uid: '3f1c9a52-0d4e-4c5b-9a1e-6f2b7c8d9e0a', controller: true, blockOwnerDeletion: true }];
  const d = deployment({ image: `${IMAGE}:7.0.0`, state: 'deadline' });
  const o = await everyBackend(t, h, PATHS, evidenceOf([app, d], [ARGO_APP, DEPLOY]), { resources: [ARGO_APP, DEPLOY], objects: [app] });
  t.falsy(o.refused, o.refused);
  t.deepEqual(o.located!.bad.map((c) => c.oid), [bump]);
  t.is(o.located!.lastKnownGood, applied);
  t.is(o.after!.get('apps/podinfo/appset.yaml')!.toString(), appSet(`${IMAGE}:6.9.3`));
  t.deepEqual(o.verification!.models.after.setters.filter((s) => s.what === 'image').map((s) => [s.where, s.image!.tag]).sort(), [['apps/podinfo/appset.yaml', '6.9.3'], ['apps/podinfo/prod/deployment.yaml', '6.9.0']]);
  t.regex(o.verification!.models.head.describe, /path apps\/podinfo\/prod/, 'the templated path is the cluster\'s rendered one');
});

test('a HelmRelease with a values-only patch of it beside (a later commit): the chart bump is still reverted; the patch is neither its manifest nor a chart pin', async (t) => {
  const h = new History();
  const kzWith = (patches: string[]) => `${kz(['release.yaml'])}${patches.length ? `patches:\n${patches.map((p) => `  - path: ${p}`).join('\n')}\n` : ''}`;
  h.commit({ 'clusters/prod/kustomization.yaml': kz(['../../apps/podinfo']), 'apps/podinfo/kustomization.yaml': kzWith([]), 'apps/podinfo/release.yaml': release('6.5.3') }, 'podinfo 6.5.3');
  const applied = h.commit({ 'README.md': 'gitops\n' }, 'docs');
  const bump = h.commit({ 'apps/podinfo/release.yaml': release('6.5.4') }, 'podinfo chart 6.5.4');
  const logs = h.commit({ 'apps/podinfo/kustomization.yaml': kzWith(['logs.yaml']), 'apps/podinfo/logs.yaml': 'apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: podinfo\n  namespace: prod\nspec:\n  values:\n    logLevel: debug\n' }, 'podinfo: debug logs');
  const k = kustomization({ attempted: `main@sha1:${bump}`, applied: `main@sha1:${applied}`, ready: 'False' });
  k.spec = { ...k.spec, path: './clusters/prod' };
  const hr = helmRelease({ spec: specOf(release('6.5.4')), attempted: '6.5.4', history: [{ chartVersion: '6.5.4', lastDeployed: '2026-11-01T12:00:00Z', status: 'failed' }, { chartVersion: '6.5.3', lastDeployed: '2026-11-01T09:00:00Z', status: 'deployed' }] });
  const o = await everyBackend(t, h, PATHS, evidenceOf([k, hr], [APPS, HR]), { resources: [APPS, HR], objects: [k, hr, gitRepository] });
  t.falsy(o.refused, o.refused);
  t.deepEqual(o.located!.bad.map((c) => c.oid), [bump]);
  t.is(o.after!.get('apps/podinfo/release.yaml')!.toString(), release('6.5.3'));
  t.is(o.after!.get('apps/podinfo/logs.yaml')!.toString().includes('logLevel: debug'), true, 'the later patch is kept');
  t.deepEqual(o.verification!.models.after.setters.filter((s) => s.what === 'chart').map((s) => [s.where, s.chart!.version]), [['apps/podinfo/release.yaml', '6.5.3']]);
  t.not(logs, bump);
});

/** The Application kept in git: a chart of this repository, its image tag as a Helm parameter and values in its spec. */
const helmApp = (o: { tag: string; replicas?: number; path?: string }) => `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: podinfo-prod
  namespace: argocd
spec:
  project: default
  source:
    repoURL: https://github.com/acme/gitops.git
    targetRevision: main
    path: ${o.path ?? 'charts/podinfo'}
    helm:
      releaseName: podinfo
      parameters:
        - name: image.tag
          value: "${o.tag}"
      valuesObject:
        replicaCount: ${o.replicas ?? 2}
  destination:
    server: https://kubernetes.default.svc
    namespace: prod
`;
const chartFiles = (dir: string) => ({
  [`${dir}/Chart.yaml`]: 'apiVersion: v2\nname: podinfo\nversion: 6.5.0\n',
  [`${dir}/values.yaml`]: `replicaCount: 1\nimage:\n  repository: ${IMAGE}\n  tag: 6.5.0\n`,
  [`${dir}/templates/deployment.yaml`]: 'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  replicas: {{ .Values.replicaCount }}\n  template:\n    spec:\n      containers:\n        - name: podinfo\n          image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"\n',
});

for (const [what, before, after] of [
  ['helm.parameters (the image tag)', { tag: '6.9.3' }, { tag: '7.0.0' }],
  ['helm.valuesObject and helm.parameters together', { tag: '6.9.3', replicas: 2 }, { tag: '7.0.0', replicas: 4 }],
  ['path (a new chart folder) and helm.parameters', { tag: '6.9.3' }, { tag: '7.0.0', path: 'charts/podinfo-v2' }],
] as const) {
  test(`an Argo CD Application kept in git with a Helm source: a commit that changed its ${what} is bad and reverted`, async (t) => {
    const h = new History();
    h.commit({ 'apps/podinfo/app.yaml': helmApp(before), ...chartFiles('charts/podinfo'), ...chartFiles('charts/podinfo-v2') }, 'initial');
    const applied = h.commit({ 'README.md': 'gitops\n' }, 'docs');
    const bump = h.commit({ 'apps/podinfo/app.yaml': helmApp(after) }, `podinfo: ${what}`);
    const { application } = await import('./support/objects.ts');
    const app = application({ source: (specOf(helmApp(after)) as { source: Record<string, unknown> }).source, history: [applied, bump], images: [`${IMAGE}:7.0.0`] });
    const d = deployment({ image: `${IMAGE}:7.0.0`, state: 'deadline' });
    const o = await everyBackend(t, h, ['apps/podinfo/'], evidenceOf([app, d], [ARGO_APP, DEPLOY]), { resources: [ARGO_APP, DEPLOY], objects: [app] });
    t.falsy(o.refused, o.refused);
    t.deepEqual(o.located!.bad.map((c) => c.oid), [bump]);
    t.is(o.located!.lastKnownGood, applied);
    t.is(o.after!.get('apps/podinfo/app.yaml')!.toString(), helmApp(before));
    t.deepEqual(o.verification!.models.after.setters.filter((s) => s.what === 'image').map((s) => [s.where, s.inRepo, s.image!.tag]), [['apps/podinfo/app.yaml', true, '6.9.3']]);
  });
}

test('another cluster\'s copy of the Kustomization in the target\'s paths is not taken for it: the parent that applies it (observed) does not read that file', async (t) => {
  const h = new History();
  const clusterKs = (env: string, tag: string) => ks({ path: `./apps/podinfo/${env}`, tag });
  h.commit({
    'clusters/prod/kustomization.yaml': kz(['podinfo.yaml']),
    'clusters/prod/podinfo.yaml': clusterKs('prod', '6.5.3'),
    'clusters/staging/kustomization.yaml': kz(['podinfo.yaml']),
    'clusters/staging/podinfo.yaml': clusterKs('staging', '6.5.3'),
    'apps/podinfo/prod/kustomization.yaml': kz(['deployment.yaml']),
    'apps/podinfo/prod/deployment.yaml': deploymentYaml(`${IMAGE}:6.5.0`),
    'apps/podinfo/staging/kustomization.yaml': kz(['deployment.yaml']),
    'apps/podinfo/staging/deployment.yaml': deploymentYaml(`${IMAGE}:6.5.0`),
  }, 'initial');
  const applied = h.commit({ 'README.md': 'x\n' }, 'docs');
  const staging = h.commit({ 'clusters/staging/podinfo.yaml': clusterKs('staging', '6.5.4') }, 'staging: podinfo 6.5.4');
  // the prod cluster: its podinfo Kustomization, applied by flux-system from ./clusters/prod (its labels say so)
  const k = fluxObject(clusterKs('prod', '6.5.3'), { attempted: staging, applied, ready: 'False' });
  (k.metadata as Record<string, unknown>).labels = { 'kustomize.toolkit.fluxcd.io/name': 'flux-system', 'kustomize.toolkit.fluxcd.io/namespace': 'flux-system' };
  const parent = kustomization({ name: 'flux-system', attempted: `main@sha1:${staging}`, applied: `main@sha1:${staging}`, ready: 'True' });
  parent.spec = { ...parent.spec, path: './clusters/prod' };
  const d = deployment({ image: `${IMAGE}:6.5.3`, state: 'deadline' });
  // the target's paths hold the staging copy only (a config that names the wrong cluster folder)
  const o = await everyBackend(t, h, ['clusters/staging/', 'apps/podinfo/prod/'], evidenceOf([k, d], [KS, DEPLOY]), { resources: [KS, DEPLOY], objects: [k, parent, d, gitRepository] });
  t.regex(o.refused!, /clusters\/staging\/podinfo\.yaml changed in the target's paths, but the build does not read it/);
  t.falsy(o.located, 'the staging copy\'s commit is not taken for prod\'s');
});
