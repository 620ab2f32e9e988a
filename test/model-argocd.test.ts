import { mkdirSync, rmSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { LocalRepo } from '../src/deliver/local/index.ts';
import type { KubeObject } from '../src/observe/types.ts';
import { modelTarget } from '../src/model/index.ts';
import type { TargetModel } from '../src/model/types.ts';
import { render } from '../src/verify/render.ts';
import { asText, everyBackend, evidenceOf, History, type EngineSetup } from './support/history.ts';
import { application, crdProblems, deployment } from './support/objects.ts';
import { configMap, deploy, IMAGE } from './support/podinfo-manifests.ts';
import { testRenderer } from './support/renderer.ts';

/**
 * Issue 18: what Argo CD's repo-server builds for an Application (src/model/argocd.ts): the source
 * type, `.argocd-source*.yaml` overrides written by argocd-image-updater, symlinks followed inside
 * the repository, Helm value files, multi-source `$ref`. Histories built with native git and run
 * through every backend (local, GitHub emulator, git over HTTP), asserting the bad commits, the
 * last-known-good, the refusal reason or the exact bytes (`git revert` as the oracle).
 */

const REPO = 'https://github.com/acme/gitops.git';
const APP = { apiVersion: 'argoproj.io/v1alpha1', kind: 'Application', namespace: 'argocd', name: 'podinfo-prod' };
const D = { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'prod', name: 'podinfo' };


/** A symlink in the working copy (git stores its target text), committed by the next commit. */
function link(h: History, file: string, target: string): void {
  const full = path.join(h.dir, file);
  mkdirSync(path.dirname(full), { recursive: true });
  rmSync(full, { force: true });
  symlinkSync(target, full);
}

function setup(app: object, extra: object[] = []): EngineSetup {
  return { resources: [APP, D], objects: [app, ...extra] };
}

test('symlinks under Argo CD: a link retargeted inside the paths is a change, reverted; the file it points at changed outside the paths is refused naming it', async (t) => {
  const h = new History();
  h.commit({ 'apps/podinfo/deploy.yaml': deploy('6.9.3'), 'shared/config-a.yaml': configMap('info'), 'shared/config-b.yaml': configMap('debug') }, 'initial');
  link(h, 'apps/podinfo/config.yaml', '../../shared/config-a.yaml');
  const applied = h.commit({}, 'podinfo: the shared config a');
  link(h, 'apps/podinfo/config.yaml', '../../shared/config-b.yaml');
  const relinked = h.commit({}, 'podinfo: point the config at b');
  const source = { repoURL: REPO, path: 'apps/podinfo', targetRevision: 'main' };
  const app = application({ source, history: [applied, relinked] });
  const o = await everyBackend(t, h, ['apps/podinfo/'], evidenceOf([app], [APP]), setup(app));
  t.falsy(o.refused, o.refused);
  t.deepEqual(o.located!.bad.map((c) => c.oid), [relinked], 'Argo CD follows the link: retargeting it changes what it builds');
  t.is(o.located!.lastKnownGood, applied);
  t.is(o.after!.get('apps/podinfo/config.yaml')!.toString(), '../../shared/config-a.yaml', 'the link points at a again');
  t.deepEqual(o.verification!.changed.map((d) => d.path), ['apps/podinfo/config.yaml', 'shared/config-a.yaml', 'shared/config-b.yaml'], 'after the revert Argo CD reads a, not b');

  // the file the link reads is edited outside the target's paths: the bad change is there, a revert of the paths cannot undo it
  const edited = h.commit({ 'shared/config-b.yaml': configMap('trace') }, 'shared: trace logs');
  const app2 = application({ source, history: [relinked, edited] });
  const o2 = await everyBackend(t, h, ['apps/podinfo/'], evidenceOf([app2], [APP]), setup(app2));
  t.regex(o2.refused!, /the bad change is in files that Argo CD Application argocd\/podinfo-prod \(path apps\/podinfo\) reads for this target outside its paths \(apps\/podinfo\/\): shared\/config-b\.yaml/);
  t.regex(o2.refused!, new RegExp(`by ${edited.slice(0, 12)} "shared: trace logs"`));
});

test('symlinks under Argo CD: a link that leaves the repository breaks the build (the model says so), and the commit that made it is reverted', async (t) => {
  const h = new History();
  h.commit({ 'apps/podinfo/deploy.yaml': deploy('6.9.3'), 'shared/config-a.yaml': configMap('info') }, 'initial');
  link(h, 'apps/podinfo/config.yaml', '../../shared/config-a.yaml');
  const applied = h.commit({}, 'podinfo: the shared config');
  link(h, 'apps/podinfo/config.yaml', '../../../etc/podinfo/config.yaml');
  const bad = h.commit({}, 'podinfo: read the host config');
  const app = application({ source: { repoURL: REPO, path: 'apps/podinfo', targetRevision: 'main' }, history: [applied, bad] });

  const model = modelTarget({ reader: new LocalRepo(h.dir), target: { name: 'podinfo', paths: ['apps/podinfo/'], resources: [APP, D] }, observed: [{ object: app as unknown as KubeObject, source: 'test' }] });
  t.deepEqual((await model.at(bad)).missing, ['illegal filepath in symlink at config.yaml: apps/podinfo/config.yaml points to ../../../etc/podinfo/config.yaml, outside the repository (Argo CD refuses the application)']);
  t.deepEqual((await model.at(applied)).missing, []);

  const o = await everyBackend(t, h, ['apps/podinfo/'], evidenceOf([app], [APP]), setup(app));
  t.falsy(o.refused, o.refused);
  t.deepEqual(o.located!.bad.map((c) => c.oid), [bad]);
  t.is(o.after!.get('apps/podinfo/config.yaml')!.toString(), '../../shared/config-a.yaml');
});

test('.argocd-source image override: the image updater\'s write-back commit is the bad one and is reverted; the human commit before it is not', async (t) => {
  const h = new History();
  const kustomization = `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - deploy.yaml
`;
  // what argocd-image-updater writes back (write-back-method: git) for a kustomize application
  const override = (tag: string) => `kustomize:
  images:
  - ${IMAGE}:${tag}
`;
  h.commit({ 'apps/podinfo/prod/kustomization.yaml': kustomization, 'apps/podinfo/prod/deploy.yaml': deploy('6.9.0'), 'apps/podinfo/prod/.argocd-source-podinfo-prod.yaml': override('6.9.3') }, 'initial');
  const applied = h.commit({ 'apps/podinfo/prod/deploy.yaml': deploy('6.9.0', '  replicas: 3\n') }, 'podinfo: three replicas');
  const bot = h.commit({ 'apps/podinfo/prod/.argocd-source-podinfo-prod.yaml': override('7.0.0') }, `build: automatic update of podinfo-prod\n\nupdates image stefanprodan/podinfo tag '6.9.3' to '7.0.0'\n`);
  const app = application({ source: { repoURL: REPO, path: 'apps/podinfo/prod', targetRevision: 'main' }, history: [applied, bot], images: [`${IMAGE}:7.0.0`] });
  const evidence = evidenceOf([app, deployment({ image: `${IMAGE}:7.0.0`, state: 'deadline' })], [APP, D]);
  const o = await everyBackend(t, h, ['apps/podinfo/prod/'], evidence, setup(app));
  t.falsy(o.refused, o.refused);
  t.deepEqual(o.located!.bad.map((c) => c.oid), [bot]);
  t.is(o.located!.lastKnownGood, applied);
  t.is(o.after!.get('apps/podinfo/prod/.argocd-source-podinfo-prod.yaml')!.toString(), override('6.9.3'));
  t.is(o.after!.get('apps/podinfo/prod/deploy.yaml')!.toString(), deploy('6.9.0', '  replicas: 3\n'), 'the human commit is kept');
  t.deepEqual(o.verification!.changed.map((d) => [d.path, d.role]), [['apps/podinfo/prod/.argocd-source-podinfo-prod.yaml', 'source-params']]);
  const setters = o.verification!.models.head.setters.filter((s) => s.what === 'image').map((s) => [s.where, s.inRepo, `${s.image!.repository}:${s.image!.tag}`]);
  t.deepEqual(setters.find((s) => s[0] === 'apps/podinfo/prod/.argocd-source-podinfo-prod.yaml'), ['apps/podinfo/prod/.argocd-source-podinfo-prod.yaml', true, 'stefanprodan/podinfo:7.0.0']);
});

test('.argocd-source Helm parameters: the write-back commit that set image.tag is found through the merged values and reverted', async (t) => {
  const h = new History();
  const chart = `apiVersion: v2
name: podinfo
version: 6.5.4
appVersion: 6.5.4
`;
  const values = `replicaCount: 2
image:
  repository: ${IMAGE}
  tag: 6.5.4
  pullPolicy: IfNotPresent
`;
  const template = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: {{ .Values.replicaCount }}
  template:
    spec:
      containers:
        - name: podinfo
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
`;
  const override = (tag: string) => `helm:
  parameters:
  - name: image.name
    value: ${IMAGE}
    forcestring: true
  - name: image.tag
    value: ${tag}
    forcestring: true
`;
  h.commit({ 'charts/podinfo/Chart.yaml': chart, 'charts/podinfo/values.yaml': values, 'charts/podinfo/templates/deployment.yaml': template }, 'initial');
  const applied = h.commit({ 'charts/podinfo/.argocd-source-podinfo-prod.yaml': override('6.5.5') }, 'build: automatic update of podinfo-prod');
  const bot = h.commit({ 'charts/podinfo/.argocd-source-podinfo-prod.yaml': override('7.0.0') }, 'build: automatic update of podinfo-prod');
  const app = application({ source: { repoURL: REPO, path: 'charts/podinfo', targetRevision: 'main' }, history: [applied, bot] });
  const evidence = evidenceOf([app, deployment({ image: `${IMAGE}:7.0.0`, state: 'deadline' })], [APP, D]);
  const o = await everyBackend(t, h, ['charts/podinfo/'], evidence, setup(app));
  t.falsy(o.refused, o.refused);
  t.deepEqual(o.located!.bad.map((c) => c.oid), [bot]);
  t.is(o.after!.get('charts/podinfo/.argocd-source-podinfo-prod.yaml')!.toString(), override('6.5.5'));
  const images = (m: TargetModel) => m.setters.filter((s) => s.what === 'image').map((s) => `${s.where} ${s.image!.tag}`);
  t.deepEqual(images(o.verification!.models.head), ['charts/podinfo/.argocd-source-podinfo-prod.yaml 7.0.0'], 'the parameter overrides values.yaml: only what runs is set');
  t.deepEqual(images(o.verification!.models.after), ['charts/podinfo/.argocd-source-podinfo-prod.yaml 6.5.5']);
});

test('an image set by the Application\'s own spec (kustomize.images, the image updater\'s default write-back): refused, no revert of the repository changes it', async (t) => {
  const h = new History();
  const kustomization = `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - deploy.yaml
`;
  h.commit({ 'apps/podinfo/prod/kustomization.yaml': kustomization, 'apps/podinfo/prod/deploy.yaml': deploy('6.9.3') }, 'initial');
  const applied = h.commit({ 'README.md': 'gitops\n' }, 'docs');
  const replicas = h.commit({ 'apps/podinfo/prod/deploy.yaml': deploy('6.9.3', '  replicas: 3\n') }, 'podinfo: three replicas');
  const source = { repoURL: REPO, path: 'apps/podinfo/prod', targetRevision: 'main', kustomize: { images: [`${IMAGE}:7.0.0`] } };
  const app = application({ source, history: [applied, replicas], images: [`${IMAGE}:7.0.0`] });
  const o = await everyBackend(t, h, ['apps/podinfo/prod/'], evidenceOf([app, deployment({ image: `${IMAGE}:7.0.0`, state: 'deadline' })], [APP, D]), setup(app));
  t.is(o.refused, `verify: ${IMAGE}:7.0.0 is set by Application argocd/podinfo-prod spec.source.kustomize.images, a field of a cluster object that no revert of the repository changes (bad: ${replicas.slice(0, 12)})`);
});

const chartYaml = (version: string) => `apiVersion: v2
name: podinfo
description: Podinfo Helm chart for Kubernetes
version: ${version}
appVersion: ${version}
`;
const chartValues = `replicaCount: 1
image:
  repository: ${IMAGE}
  tag: 6.5.4
`;
const podinfoValues = (tag: string, replicas = 2) => `replicaCount: ${replicas}
image:
  tag: ${tag}
`;
const template = (probe: string) => `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: {{ .Values.replicaCount }}
  template:
    spec:
      containers:
        - name: podinfo
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
          readinessProbe: { httpGet: { path: ${probe}, port: 9898 } }
`;

test('a Helm source whose value file changes: the commit that changed it is bad and reverted; a change to another environment\'s values in the same sync is kept', async (t) => {
  const h = new History();
  h.commit({
    'charts/podinfo/Chart.yaml': chartYaml('6.5.4'),
    'charts/podinfo/values.yaml': chartValues,
    'charts/podinfo/templates/deployment.yaml': template('/readyz'),
    'envs/prod/podinfo.yaml': podinfoValues('6.5.4'),
    'envs/staging/podinfo.yaml': podinfoValues('6.5.4', 1),
  }, 'initial');
  const applied = h.commit({ 'README.md': 'gitops\n' }, 'docs');
  const bad = h.commit({ 'envs/prod/podinfo.yaml': podinfoValues('7.0.0') }, 'prod: podinfo 7.0.0');
  const staging = h.commit({ 'envs/staging/podinfo.yaml': podinfoValues('7.0.1', 1) }, 'staging: podinfo 7.0.1');
  const source = { repoURL: REPO, path: 'charts/podinfo', targetRevision: 'main', helm: { releaseName: 'podinfo', valueFiles: ['../../envs/prod/podinfo.yaml'] } };
  const app = application({ source, history: [applied, staging] });
  const evidence = evidenceOf([app, deployment({ image: `${IMAGE}:7.0.0`, state: 'deadline' })], [APP, D]);
  const o = await everyBackend(t, h, ['envs/prod/'], evidence, setup(app));
  t.falsy(o.refused, o.refused);
  t.deepEqual(o.located!.bad.map((c) => c.oid), [bad], 'staging\'s values are not read for this Application');
  t.is(o.located!.lastKnownGood, applied);
  t.deepEqual(asText(o.after), { 'envs/prod/podinfo.yaml': podinfoValues('6.5.4') });
  t.deepEqual(o.verification!.models.head.setters.filter((s) => s.what === 'image').map((s) => [s.where, s.image!.tag]), [['envs/prod/podinfo.yaml', '7.0.0']]);

  // a template change shipped in the same sync lies in the chart, outside the paths: refused naming it
  const probe = h.commit({ 'charts/podinfo/templates/deployment.yaml': template('/healthz') }, 'chart: probe /healthz');
  const again = h.commit({ 'envs/prod/podinfo.yaml': podinfoValues('7.0.1') }, 'prod: podinfo 7.0.1');
  const app2 = application({ source, history: [staging, again] });
  const o2 = await everyBackend(t, h, ['envs/prod/'], evidenceOf([app2, deployment({ image: `${IMAGE}:7.0.1`, state: 'deadline' })], [APP, D]), setup(app2));
  t.regex(o2.refused!, /outside its paths \(envs\/prod\/\): charts\/podinfo\/templates\/deployment\.yaml/);
  t.regex(o2.refused!, new RegExp(`by ${probe.slice(0, 12)} "chart: probe /healthz"`));
});

test('multi-source: a chart from a Helm repository with values from the ref source ($values/...): the values commit is bad and reverted; a commit beside it is not', async (t) => {
  const h = new History();
  h.commit({ 'envs/prod/podinfo/values.yaml': podinfoValues('6.5.4'), 'envs/prod/redis/values.yaml': 'architecture: standalone\n' }, 'initial');
  const applied = h.commit({ 'README.md': 'gitops\n' }, 'docs');
  const bad = h.commit({ 'envs/prod/podinfo/values.yaml': podinfoValues('6.5.4', 8) }, 'prod: podinfo 8 replicas');
  const redis = h.commit({ 'envs/prod/redis/values.yaml': 'architecture: replication\n' }, 'prod: redis replication');
  const sources = [
    { repoURL: 'https://stefanprodan.github.io/podinfo', chart: 'podinfo', targetRevision: '6.5.4', helm: { releaseName: 'podinfo', valueFiles: ['$values/envs/prod/podinfo/values.yaml'] } },
    { repoURL: REPO, targetRevision: 'main', ref: 'values' },
  ];
  const app = application({ sources, history: [['6.5.4', applied], ['6.5.4', redis]] });
  const o = await everyBackend(t, h, ['envs/prod/podinfo/'], evidenceOf([app], [APP]), setup(app));
  t.falsy(o.refused, o.refused);
  t.deepEqual(o.located!.bad.map((c) => c.oid), [bad], 'the redis commit of the same sync changed nothing this Application reads');
  t.is(o.located!.lastKnownGood, applied);
  t.deepEqual(asText(o.after), { 'envs/prod/podinfo/values.yaml': podinfoValues('6.5.4') });
  const head = o.verification!.models.head;
  t.deepEqual([...head.inputs.keys()], ['envs/prod/podinfo/values.yaml']);
  t.deepEqual(head.setters.filter((s) => s.what === 'chart').map((s) => [s.where, s.inRepo, s.chart!.version]), [['Application argocd/podinfo-prod spec.sources[0].targetRevision', false, '6.5.4']]);
  t.true(o.verification!.notes.some((n) => /cannot verify: .*chart podinfo 6\.5\.4 comes from https:\/\/stefanprodan\.github\.io\/podinfo/.test(n)));
});

test('the source type as Argo CD decides it: a kustomization beside a Chart.yaml wins; an explicit directory block reads plain files with include, exclude and the skip marker', async (t) => {
  const h = new History();
  const c = h.commit({
    'apps/a/Chart.yaml': chartYaml('1.0.0'),
    'apps/a/kustomization.yaml': 'resources:\n  - deploy.yaml\n',
    'apps/a/deploy.yaml': deploy('1.0.0'),
    'apps/a/unused.yaml': deploy('9.9.9'),
    'apps/b/deploy.yaml': deploy('2.0.0'),
    'apps/b/draft.yaml': deploy('3.0.0'),
    'apps/b/skipped.yaml': `# +argocd:skip-file-rendering\n${deploy('4.0.0')}`,
    'apps/b/notes.txt': 'x\n',
    'apps/b/sub/deep.yaml': deploy('5.0.0'),
  }, 'initial');
  const reader = new LocalRepo(h.dir);
  const modelOf = async (source: Record<string, unknown>) => {
    const app = application({ source: { repoURL: REPO, targetRevision: 'main', ...source }, history: [c] });
    return modelTarget({ reader, target: { name: 'x', paths: ['apps/'], resources: [APP] }, observed: [{ object: app as unknown as KubeObject, source: 'test' }] }).at(c);
  };
  const a = await modelOf({ path: 'apps/a' });
  t.deepEqual([...a.inputs.keys()].sort(), ['apps/a/deploy.yaml', 'apps/a/kustomization.yaml']);
  t.truthy(a.render, 'a kustomize source can be rendered');
  const b = await modelOf({ path: 'apps/b', directory: { recurse: true, exclude: 'draft.yaml' } });
  t.deepEqual([...b.inputs.keys()].sort(), ['apps/b/deploy.yaml', 'apps/b/skipped.yaml', 'apps/b/sub/deep.yaml']);
  t.deepEqual(b.setters.map((s) => s.image!.tag).sort(), ['2.0.0', '5.0.0'], 'the skipped file sets nothing');
  const only = await modelOf({ path: 'apps/b', directory: { include: '{deploy,draft}.yaml' } });
  t.deepEqual([...only.inputs.keys()].sort(), ['apps/b/deploy.yaml', 'apps/b/draft.yaml']);
  const plugin = await modelOf({ path: 'apps/b', plugin: { name: 'kustomize-with-sops' } });
  t.deepEqual(plugin.opaque, ['Application argocd/podinfo-prod spec.source renders with a config management plugin (kustomize-with-sops): the model cannot see what it builds']);
  const two = await modelOf({ path: 'apps/b', directory: {}, kustomize: {} });
  t.deepEqual(two.missing, ['Application argocd/podinfo-prod spec.source: multiple application sources defined: kustomize,directory (Argo CD refuses it)']);
});

test('kustomize under Argo CD loads files from the kustomization\'s own folder only (LoadRestrictionsRootOnly), unless argocd-cm says otherwise', async (t) => {
  const h = new History();
  const c = h.commit({
    'apps/podinfo/prod/kustomization.yaml': 'resources:\n  - ../base\n  - ../shared/extra.yaml\n',
    'apps/podinfo/base/kustomization.yaml': 'resources:\n  - deploy.yaml\n',
    'apps/podinfo/base/deploy.yaml': deploy('6.9.3'),
    'apps/podinfo/shared/extra.yaml': configMap('x'),
  }, 'initial');
  const reader = new LocalRepo(h.dir);
  const app = application({ source: { repoURL: REPO, path: 'apps/podinfo/prod', targetRevision: 'main' }, history: [c] });
  const observed = (extra: object[]) => [app, ...extra].map((o) => ({ object: o as unknown as KubeObject, source: 'test' }));
  const strict = await modelTarget({ reader, target: { name: 'x', paths: ['apps/podinfo/'], resources: [APP] }, observed: observed([]) }).at(c);
  t.deepEqual(strict.missing, ['resource ../shared/extra.yaml in apps/podinfo/prod lies outside that kustomization\'s folder: Argo CD builds with kustomize\'s LoadRestrictionsRootOnly, which refuses it']);
  const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'argocd-cm', namespace: 'argocd' }, data: { 'kustomize.buildOptions': '--load-restrictor LoadRestrictionsNone' } };
  const loose = await modelTarget({ reader, target: { name: 'x', paths: ['apps/podinfo/'], resources: [APP] }, observed: observed([cm]) }).at(c);
  t.deepEqual(loose.missing, []);
  t.true(loose.inputs.has('apps/podinfo/shared/extra.yaml'));
  t.deepEqual(loose.render?.argocd?.buildOptions, ['--load-restrictor', 'LoadRestrictionsNone']);
});

test('a chart at the app path is read as Helm loads it: .helmignore, local (file://) dependencies, vendored ones, and one fetched at build time said so', async (t) => {
  const h = new History();
  const parent = `apiVersion: v2
name: shop
version: 1.2.0
dependencies:
  - name: common
    version: 0.3.0
    repository: file://../common
  - name: redis
    version: 18.1.0
    repository: oci://registry-1.docker.io/bitnamicharts
  - name: postgresql
    version: 15.2.0
    repository: https://charts.bitnami.com/bitnami
`;
  h.commit({
    'charts/shop/Chart.yaml': parent,
    'charts/shop/values.yaml': 'image:\n  repository: ghcr.io/acme/shop\n  tag: 1.2.0\n',
    'charts/shop/templates/deployment.yaml': template('/readyz'),
    'charts/shop/templates/.scratch.yaml': 'ignored by default\n',
    'charts/shop/.helmignore': '*.md\nci/\n',
    'charts/shop/README.md': '# shop\n',
    'charts/shop/ci/test-values.yaml': 'x: 1\n',
    'charts/shop/charts/redis-18.1.0.tgz': 'not really a tarball\n',
    'charts/common/Chart.yaml': 'apiVersion: v2\nname: common\nversion: 0.3.0\ntype: library\n',
    'charts/common/templates/_labels.tpl': '{{- define "common.labels" -}}{{- end -}}\n',
  }, 'initial');
  const c = h.rev('HEAD');
  const app = application({ source: { repoURL: REPO, path: 'charts/shop', targetRevision: 'main' }, history: [c] });
  const m = await modelTarget({ reader: new LocalRepo(h.dir), target: { name: 'shop', paths: ['charts/'], resources: [APP] }, observed: [{ object: app as unknown as KubeObject, source: 'test' }] }).at(c);
  t.deepEqual([...m.inputs.keys()].sort(), [
    'charts/common/Chart.yaml',
    'charts/common/templates/_labels.tpl',
    'charts/shop/.helmignore',
    'charts/shop/Chart.yaml',
    'charts/shop/charts/redis-18.1.0.tgz',
    'charts/shop/templates/deployment.yaml',
    'charts/shop/values.yaml',
  ]);
  t.deepEqual(m.opaque, ['dependency postgresql 15.2.0 of charts/shop/Chart.yaml is fetched from https://charts.bitnami.com/bitnami at build time (not vendored in charts/): its templates are not in this repository']);
  t.deepEqual(m.setters.filter((s) => s.what !== 'values').map((s) => [s.what, s.where, s.chart?.version ?? s.image?.tag]), [['chart', 'charts/shop/Chart.yaml', '1.2.0'], ['image', 'charts/shop/values.yaml', '1.2.0']]);
});

const renderer = (t: ExecutionContext) => testRenderer(t);

test('a kustomize source whose files are symlinks renders as Argo CD builds it: the render reads each file where the kustomization names it', async (t) => {
  const h = new History();
  h.commit({
    'apps/podinfo/prod/kustomization.yaml': 'resources:\n  - deploy.yaml\n  - config.yaml\n',
    'apps/podinfo/prod/deploy.yaml': deploy('6.9.3'),
    'apps/podinfo/shared/config-debug.yaml': configMap('debug'),
  }, 'initial');
  link(h, 'apps/podinfo/prod/config.yaml', '../shared/config-debug.yaml');
  const c = h.commit({}, 'prod reads the shared config');
  const reader = new LocalRepo(h.dir);
  const app = application({ source: { repoURL: REPO, path: 'apps/podinfo/prod', targetRevision: 'main' }, history: [c] });
  const m = await modelTarget({ reader, target: { name: 'podinfo', paths: ['apps/podinfo/'], resources: [APP] }, observed: [{ object: app as unknown as KubeObject, source: 'test' }] }).at(c);
  // root-only loading: the link lies in the kustomization's folder, the file it points at does not (kustomize refuses that)
  t.deepEqual([...m.inputs.keys()].sort(), ['apps/podinfo/prod/deploy.yaml', 'apps/podinfo/prod/kustomization.yaml']);
  t.deepEqual(m.missing, ['resource config.yaml in apps/podinfo/prod is a symlink to apps/podinfo/shared/config-debug.yaml, outside that kustomization\'s folder (kustomize\'s LoadRestrictionsRootOnly refuses it)']);
  const loose = await modelTarget({ reader, target: { name: 'podinfo', paths: ['apps/podinfo/'], resources: [APP] }, observed: [app, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'argocd-cm', namespace: 'argocd' }, data: { 'kustomize.buildOptions': '--load-restrictor LoadRestrictionsNone' } }].map((o) => ({ object: o as unknown as KubeObject, source: 'test' })) }).at(c);
  t.deepEqual(loose.missing, []);
  t.deepEqual([...loose.inputs.keys()].sort(), ['apps/podinfo/prod/config.yaml', 'apps/podinfo/prod/deploy.yaml', 'apps/podinfo/prod/kustomization.yaml', 'apps/podinfo/shared/config-debug.yaml']);
  const r = await renderer(t);
  if (!r) return;
  const files = new Map<string, Uint8Array>();
  for (const [p, oid] of loose.render!.files) files.set(p, await reader.readBlob(oid));
  const out = await render(r, { files, root: loose.render!.root, engine: 'argocd', ...(loose.render!.argocd ? { argocd: loose.render!.argocd } : {}) });
  if (!('objects' in out)) return t.fail(out.failed);
  t.deepEqual(out.objects.map((o) => o.key).sort(), ['ConfigMap prod/podinfo-config', 'apps/Deployment prod/podinfo']);
});

test('the Applications these tests build are valid against Argo CD\'s CRD (as the API server checks them)', async (t) => {
  const sha = 'a'.repeat(40);
  for (const app of [
    application({ source: { repoURL: REPO, path: 'apps/podinfo', targetRevision: 'main' }, history: [sha, sha], images: [`${IMAGE}:7.0.0`] }),
    application({ source: { repoURL: REPO, path: 'charts/podinfo', targetRevision: 'main', helm: { releaseName: 'podinfo', valueFiles: ['../../envs/prod/podinfo.yaml'], parameters: [{ name: 'image.tag', value: '7.0.0', forceString: true }] } }, history: [sha] }),
    application({ sources: [{ repoURL: 'https://stefanprodan.github.io/podinfo', chart: 'podinfo', targetRevision: '6.5.4', helm: { valueFiles: ['$values/envs/prod/podinfo/values.yaml'] } }, { repoURL: REPO, targetRevision: 'main', ref: 'values' }], history: [['6.5.4', sha]] }),
  ]) t.deepEqual(await crdProblems(app), []);
});
