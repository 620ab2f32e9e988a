import test from 'ava';
import { lastgoodEngine } from './support/engine-run.ts';
import { commit, git, makeRepo, tempDir, writeFile } from './support/git.ts';
import { everyBackend, evidenceOf, History, type EngineSetup } from './support/history.ts';
import { deployment, kustomization, yamlDocs } from './support/objects.ts';
import { testRenderer } from './support/renderer.ts';

/**
 * Issue 34, class 1: Flux `postBuild.substituteFrom` a ConfigMap that the repository itself makes
 * (a configMapGenerator, or a plain manifest, applied by the parent Kustomization). Its values at a
 * revision are what kustomize-controller substitutes (src/model/substitute.ts): the literal is an
 * input of the target, images are set through it, and the render folds them in. Before, such a
 * change was read by nothing ("cannot verify"). A source made nowhere in the repository stays
 * unverified and says so. Every backend with `git revert` as the oracle; a whole run (the engine as `lastgood run` calls it) with the render on.
 */

const IMAGE = 'ghcr.io/stefanprodan/podinfo';
const KS = { apiVersion: 'kustomize.toolkit.fluxcd.io/v1', kind: 'Kustomization', namespace: 'flux-system', name: 'podinfo' };
const DEPLOY = { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'prod', name: 'podinfo' };
const gitRepository = {
  apiVersion: 'source.toolkit.fluxcd.io/v1', kind: 'GitRepository', metadata: { name: 'flux-system', namespace: 'flux-system' },
  spec: { interval: '1m0s', ref: { branch: 'main' }, url: 'ssh://git@github.com/acme/gitops' },
  status: { conditions: [{ type: 'Ready', status: 'True', reason: 'Succeeded', message: 'stored artifact', lastTransitionTime: '2026-11-01T11:00:00Z' }] },
};
const kz = (r: string[], extra = '') => `apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n${r.map((x) => `  - ${x}`).join('\n')}\n${extra}`;
const deploymentYaml = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: podinfo
  namespace: prod
spec:
  selector:
    matchLabels: { app: podinfo }
  template:
    metadata:
      labels: { app: podinfo }
    spec:
      containers:
        - name: podinfo
          image: \${PODINFO_IMAGE}:\${PODINFO_TAG}
`;
/** The variables, made by a configMapGenerator (literals) in a kustomization the parent applies. */
const generator = (tag: string) => `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: flux-system
configMapGenerator:
  - name: podinfo-vars
    literals:
      - PODINFO_IMAGE=${IMAGE}
      - PODINFO_TAG=${tag}
generatorOptions:
  disableNameSuffixHash: true
`;
/** The same variables as a plain manifest. */
const manifest = (tag: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: podinfo-vars\n  namespace: flux-system\ndata:\n  PODINFO_IMAGE: ${IMAGE}\n  PODINFO_TAG: "${tag}"\n`;

/** The Kustomization as the cluster reports it: applied by flux-system (its labels), variables from podinfo-vars. */
function podinfoKs(o: { attempted: string; applied: string; ready: 'True' | 'False' }) {
  const k = kustomization({ name: 'podinfo', attempted: `main@sha1:${o.attempted}`, applied: `main@sha1:${o.applied}`, ready: o.ready });
  (k.metadata as Record<string, unknown>).labels = { 'kustomize.toolkit.fluxcd.io/name': 'flux-system', 'kustomize.toolkit.fluxcd.io/namespace': 'flux-system' };
  k.spec = { ...k.spec, path: './apps/podinfo/app', postBuild: { substituteFrom: [{ kind: 'ConfigMap', name: 'podinfo-vars' }] } } as typeof k.spec;
  return k;
}
function parentKs(attempted: string) {
  const k = kustomization({ name: 'flux-system', attempted: `main@sha1:${attempted}`, applied: `main@sha1:${attempted}`, ready: 'True' });
  k.spec = { ...k.spec, path: './clusters/prod' };
  return k;
}
const setup = (objects: object[]): EngineSetup => ({ resources: [KS, DEPLOY], objects: [...objects, gitRepository] });

for (const [how, vars] of [['a configMapGenerator', (tag: string) => ({ 'apps/podinfo/vars/kustomization.yaml': generator(tag) })], ['a plain ConfigMap manifest', (tag: string) => ({ 'apps/podinfo/vars/vars.yaml': manifest(tag), 'apps/podinfo/vars/kustomization.yaml': kz(['vars.yaml']) })]] as const) {
  for (const shape of ['range', 'no range'] as const) {
    test(`substituteFrom a ConfigMap made in the target's paths by ${how}: the commit that changed the tag literal is bad and reverted (${shape})`, async (t) => {
      const h = new History();
      h.commit({
        'clusters/prod/kustomization.yaml': kz(['../../apps/podinfo/vars', 'podinfo.yaml']),
        'clusters/prod/podinfo.yaml': 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: prod\n',
        ...vars('6.5.3'),
        'apps/podinfo/app/kustomization.yaml': kz(['deployment.yaml']),
        'apps/podinfo/app/deployment.yaml': deploymentYaml,
      }, 'initial');
      const applied = h.commit({ 'README.md': 'x\n' }, 'docs');
      const bump = h.commit(vars('6.5.4'), 'podinfo 6.5.4');
      const k = podinfoKs({ attempted: bump, applied: shape === 'range' ? applied : bump, ready: shape === 'range' ? 'False' : 'True' });
      const d = deployment({ image: `${IMAGE}:6.5.4`, state: 'deadline' });
      const o = await everyBackend(t, h, ['apps/podinfo/'], evidenceOf([k, d], [KS, DEPLOY]), setup([k, d, parentKs(bump)]));
      t.falsy(o.refused, o.refused);
      t.deepEqual(o.located!.bad.map((c) => c.oid), [bump]);
      t.is(o.located!.lastKnownGood, applied);
      const images = (m: 'head' | 'after') => o.verification!.models[m].setters.filter((s) => s.what === 'image').map((s) => `${s.where} ${s.image!.tag}`);
      t.deepEqual(images('head'), ['apps/podinfo/app/deployment.yaml 6.5.4']);
      t.deepEqual(images('after'), ['apps/podinfo/app/deployment.yaml 6.5.3']);
      t.true(o.verification!.changed.every((c) => c.role === 'substitute'), JSON.stringify(o.verification!.changed));
      t.deepEqual(o.verification!.models.head.opaque, [], 'nothing left unverified');
    });
  }
}

test('substituteFrom a ConfigMap the parent makes outside the target\'s paths: refused, naming that file and the commit (a revert limited to the paths would not undo it)', async (t) => {
  const h = new History();
  h.commit({
    'clusters/prod/kustomization.yaml': kz(['../../apps/podinfo/vars.yaml'], generator('6.5.3').split('\n').slice(3).join('\n')),
    'apps/podinfo/vars.yaml': 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: prod\n',
    'apps/podinfo/app/kustomization.yaml': kz(['deployment.yaml']),
    'apps/podinfo/app/deployment.yaml': deploymentYaml,
  }, 'initial');
  const applied = h.commit({ 'README.md': 'x\n' }, 'docs');
  const bump = h.commit({ 'clusters/prod/kustomization.yaml': kz(['../../apps/podinfo/vars.yaml'], generator('6.5.4').split('\n').slice(3).join('\n')) }, 'podinfo 6.5.4 (cluster vars)');
  const k = podinfoKs({ attempted: bump, applied, ready: 'False' });
  const d = deployment({ image: `${IMAGE}:6.5.4`, state: 'deadline' });
  const o = await everyBackend(t, h, ['apps/podinfo/'], evidenceOf([k, d], [KS, DEPLOY]), setup([k, d, parentKs(bump)]));
  t.regex(o.refused!, new RegExp(`the bad change is in files that Flux Kustomization flux-system/podinfo \\(spec\\.path \\./apps/podinfo/app\\) reads for this target outside its paths \\(apps/podinfo/\\): clusters/prod/kustomization\\.yaml \\(by ${bump.slice(0, 12)} "podinfo 6\\.5\\.4 \\(cluster vars\\)"\\)`));
});

test('the sibling: substituteFrom a ConfigMap made nowhere in the repository stays unverified and says so; nothing is attributed to a literal', async (t) => {
  const h = new History();
  h.commit({
    'clusters/prod/kustomization.yaml': kz(['podinfo.yaml']),
    'clusters/prod/podinfo.yaml': 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: prod\n',
    'apps/podinfo/app/kustomization.yaml': kz(['deployment.yaml']),
    'apps/podinfo/app/deployment.yaml': deploymentYaml,
  }, 'initial');
  const applied = h.commit({ 'README.md': 'x\n' }, 'docs');
  const docs = h.commit({ 'apps/podinfo/NOTES.md': 'tag lives in the cluster\n' }, 'notes');
  const k = podinfoKs({ attempted: docs, applied, ready: 'False' });
  const d = deployment({ image: `${IMAGE}:6.5.4`, state: 'deadline' });
  const o = await everyBackend(t, h, ['apps/podinfo/'], evidenceOf([k, d], [KS, DEPLOY]), setup([k, d, parentKs(docs)]));
  t.regex(o.refused!, /apps\/podinfo\/NOTES\.md changed in the target's paths, but the build does not read it/);
});

test('a whole run, render on: the variables made in the repository are rendered at each revision (not placeholders), and the rendered diff shows the tag going back', async (t) => {
  if (!(await testRenderer(t))) return;
  const repo = makeRepo();
  commit(repo, {
    'clusters/prod/kustomization.yaml': kz(['../../apps/podinfo/vars']),
    'apps/podinfo/vars/kustomization.yaml': generator('6.5.3'),
    'apps/podinfo/app/kustomization.yaml': kz(['deployment.yaml']),
    'apps/podinfo/app/deployment.yaml': deploymentYaml,
  }, 'initial');
  const applied = commit(repo, { 'README.md': 'x\n' }, 'docs');
  const bump = commit(repo, { 'apps/podinfo/vars/kustomization.yaml': generator('6.5.4') }, 'podinfo 6.5.4');
  const dir = tempDir('lastgood-subst-');
  const config = writeFile(dir, 'lastgood.yaml', `repo:\n  url: ${repo}\ndefaults:\n  mode: commit\n  confirmations: 1\ntargets:\n  - name: podinfo-prod\n    paths: [apps/podinfo/]\n    resources:\n      - { apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: podinfo }\n      - { apiVersion: apps/v1, kind: Deployment, namespace: prod, name: podinfo }\n`);
  const snapshot = writeFile(dir, 'cluster.yaml', yamlDocs(podinfoKs({ attempted: bump, applied, ready: 'False' }), parentKs(bump), deployment({ image: `${IMAGE}:6.5.4`, state: 'deadline' }), gitRepository));
  const r = await lastgoodEngine(['run', '--now', '2026-11-01T12:05:00Z', '--config', config, '--snapshot', snapshot, '--json']);
  t.is(r.code, 0, r.stdout + r.stderr);
  const out = JSON.parse(r.stdout).targets[0];
  t.deepEqual(out.bad, [bump]);
  t.is(git(repo, 'show', 'main:apps/podinfo/vars/kustomization.yaml') + '\n', generator('6.5.3'));
  t.regex(out.checked.rendered.diff, /^-\s+- image: ghcr\.io\/stefanprodan\/podinfo:6\.5\.4\n\+\s+- image: ghcr\.io\/stefanprodan\/podinfo:6\.5\.3$/m);
  t.notRegex(out.checked.rendered.diff, /lastgood-substituteFrom/);
});
