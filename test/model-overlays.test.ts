import test from 'ava';
import { everyBackend, evidenceOf, History } from './support/history.ts';
import { deployment } from './support/objects.ts';

/**
 * Issue 34, class 4: no engine object observed (only the workload), and the target's paths hold a
 * base and several overlays. The failing object is mapped to the overlay whose build makes it (its
 * `namespace:`, `namePrefix`/`nameSuffix`), and the bad commit is searched in what that build reads:
 * the prod commit, not the staging one that brought the same image first. Every backend, `git
 * revert` as the oracle.
 */

const IMAGE = 'ghcr.io/stefanprodan/podinfo';
const D = { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'prod', name: 'podinfo' };
const base = `apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: podinfo\nspec:\n  template:\n    spec:\n      containers:\n        - name: podinfo\n          image: ${IMAGE}:6.5.0\n`;
const overlay = (namespace: string, tag: string, extra = '') => `apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: ${namespace}\n${extra}resources:\n  - ../../base\nimages:\n  - name: ${IMAGE}\n    newTag: ${tag}\n`;

function repo(extra: { prod?: string; staging?: string } = {}) {
  const h = new History();
  h.commit({
    'apps/podinfo/base/kustomization.yaml': 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - deployment.yaml\n',
    'apps/podinfo/base/deployment.yaml': base,
    'apps/podinfo/overlays/staging/kustomization.yaml': overlay('staging', '6.5.3', extra.staging),
    'apps/podinfo/overlays/prod/kustomization.yaml': overlay('prod', '6.5.3', extra.prod),
  }, 'initial');
  return h;
}

test('the staging commit brought the image first; the prod Deployment fails: the prod overlay\'s commit is bad, staging untouched', async (t) => {
  const h = repo();
  const staging = h.commit({ 'apps/podinfo/overlays/staging/kustomization.yaml': overlay('staging', '6.5.4') }, 'staging: podinfo 6.5.4');
  const good = h.commit({ 'README.md': 'x\n' }, 'docs');
  const prod = h.commit({ 'apps/podinfo/overlays/prod/kustomization.yaml': overlay('prod', '6.5.4') }, 'prod: podinfo 6.5.4');
  const d = deployment({ image: `${IMAGE}:6.5.4`, state: 'deadline' });
  const o = await everyBackend(t, h, ['apps/podinfo/'], evidenceOf([d], [D]), { resources: [D], objects: [d] });
  t.falsy(o.refused, o.refused);
  t.deepEqual(o.located!.bad.map((c) => c.oid), [prod]);
  t.is(o.located!.lastKnownGood, good);
  t.is(o.after!.get('apps/podinfo/overlays/prod/kustomization.yaml')!.toString(), overlay('prod', '6.5.3'));
  t.is(o.after!.get('apps/podinfo/overlays/staging/kustomization.yaml')!.toString(), overlay('staging', '6.5.4'), 'staging keeps its release');
  t.not(staging, prod);
  t.regex(o.verification!.models.head.describe, /the kustomization apps\/podinfo\/overlays\/prod builds Deployment prod\/podinfo/);
});

test('two overlays into one namespace told apart by namePrefix: the one whose build makes the failing object\'s name is read', async (t) => {
  const h = repo({ prod: 'namePrefix: blue-\n', staging: 'namePrefix: green-\n' });
  // both overlays build into prod here; only the prefix tells them apart
  h.commit({ 'apps/podinfo/overlays/staging/kustomization.yaml': overlay('prod', '6.5.3', 'namePrefix: green-\n') }, 'green in prod');
  const green = h.commit({ 'apps/podinfo/overlays/staging/kustomization.yaml': overlay('prod', '6.5.4', 'namePrefix: green-\n') }, 'green: 6.5.4');
  const good = h.commit({ 'README.md': 'x\n' }, 'docs');
  const blue = h.commit({ 'apps/podinfo/overlays/prod/kustomization.yaml': overlay('prod', '6.5.4', 'namePrefix: blue-\n') }, 'blue: 6.5.4');
  const d = deployment({ name: 'blue-podinfo', image: `${IMAGE}:6.5.4`, state: 'deadline' });
  const ref = { ...D, name: 'blue-podinfo' };
  const o = await everyBackend(t, h, ['apps/podinfo/'], evidenceOf([d], [ref]), { resources: [ref], objects: [d] });
  t.falsy(o.refused, o.refused);
  t.deepEqual(o.located!.bad.map((c) => c.oid), [blue]);
  t.is(o.located!.lastKnownGood, good);
  t.not(green, blue);
});

test('the sibling: where no overlay\'s build makes the failing object, the whole paths are read as before (and said so)', async (t) => {
  const h = repo();
  const bump = h.commit({ 'apps/podinfo/overlays/staging/kustomization.yaml': overlay('staging', '6.5.4') }, 'staging: podinfo 6.5.4');
  const d = deployment({ namespace: 'qa', image: `${IMAGE}:6.5.4`, state: 'deadline' });
  const ref = { ...D, namespace: 'qa' };
  const o = await everyBackend(t, h, ['apps/podinfo/'], evidenceOf([d], [ref]), { resources: [ref], objects: [d] });
  t.deepEqual(o.located?.bad.map((c) => c.oid), [bump], 'the paths model, as before: the only commit that brought the image');
  t.notRegex(o.verification?.models.head.describe ?? '', /builds Deployment/);
});

test('a range that changed only the staging overlay, the prod Deployment failing: refused, saying the staging file is not read by the build of the target\'s objects (not "nothing in the repository changed")', async (t) => {
  const { kustomization } = await import('./support/objects.ts');
  const h = repo();
  const applied = h.commit({ 'README.md': 'x\n' }, 'docs');
  const staging = h.commit({ 'apps/podinfo/overlays/staging/kustomization.yaml': overlay('staging', '6.5.4') }, 'staging: podinfo 6.5.4');
  // the Kustomization as an event carries it: a range, no spec (so the model is the paths')
  const k = kustomization({ attempted: `main@sha1:${staging}`, applied: `main@sha1:${applied}`, ready: 'False' });
  delete (k as { spec?: unknown }).spec;
  const K = { apiVersion: 'kustomize.toolkit.fluxcd.io/v1', kind: 'Kustomization', namespace: 'flux-system', name: 'apps' };
  const d = deployment({ image: `${IMAGE}:6.5.3`, state: 'deadline' });
  const o = await everyBackend(t, h, ['apps/podinfo/'], evidenceOf([k, d], [K, D]), { resources: [K, D], objects: [k, d] });
  t.regex(o.refused!, /but between them nothing that the build of the target's objects reads for this target changed: apps\/podinfo\/overlays\/staging\/kustomization\.yaml changed in the target's paths, but the build does not read it \(.*the kustomization apps\/podinfo\/overlays\/prod builds Deployment prod\/podinfo/);
  t.falsy(o.located);
  t.deepEqual(h.git('diff', '--name-only', applied, staging).split('\n'), ['apps/podinfo/overlays/staging/kustomization.yaml'], 'the condition: only the staging overlay changed');
});
