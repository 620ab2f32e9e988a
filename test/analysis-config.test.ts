import test from 'ava';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { checkObject, describe, loadCrds } from './support/kube-schema.ts';
import { yamlObjects } from './support/kube-emulator.ts';
import { parseConfig } from '../src/config/load.ts';
import { resolveTarget } from '../src/config/schema.ts';
import { installManifests } from '../src/controller/install.ts';
import { rolloutOf, type Lookup } from '../src/analysis/rollout.ts';
import type { KubeObject } from '../src/observe/types.ts';

/** lastgood.yaml's metric checks, and how a rollout is detected from a workload. */

const base = (analysis: string, resources = '      - { apiVersion: apps/v1, kind: Deployment, namespace: prod, name: shop }') => `repo: { url: https://github.com/acme/gitops }
targets:
  - name: shop
    paths: [apps/shop/]
    resources:
${resources}
    analysis:
${analysis.replace(/^/gm, '      ')}
`;

const CHECK = `checks:
  - name: error-ratio
    query: up{namespace="{{namespace}}"}
    failureCondition: result[0] > 0.05`;

test('the analysis workload is the target\'s one Deployment or StatefulSet, or the one named among its resources', (t) => {
  const config = parseConfig(base(CHECK), 'c.yaml');
  t.like(resolveTarget(config, config.targets[0]!).analysis, { workload: { kind: 'Deployment', namespace: 'prod', name: 'shop' }, windowMs: 600_000 });
  const two = '      - { apiVersion: apps/v1, kind: Deployment, namespace: prod, name: shop }\n      - { apiVersion: apps/v1, kind: StatefulSet, namespace: prod, name: db }';
  t.throws(() => parseConfig(base(CHECK, two), 'c.yaml'), { message: /c\.yaml:\d+: targets\[0\]\.analysis: the target lists 2 workloads \(Deployment shop, StatefulSet db\): name one in analysis\.workload/ });
  const named = parseConfig(base(`workload: { kind: StatefulSet, name: db }\n${CHECK}`, two), 'c.yaml');
  t.like(resolveTarget(named, named.targets[0]!).analysis, { workload: { kind: 'StatefulSet', name: 'db' } });
  t.throws(() => parseConfig(base(`workload: { kind: Deployment, name: other }\n${CHECK}`), 'c.yaml'), { message: /analysis\.workload Deployment other is not one of the target's resources/ });
  t.throws(() => parseConfig(base(CHECK, '      - { apiVersion: v1, kind: Service, namespace: prod, name: shop }'), 'c.yaml'), { message: /lists no Deployment or StatefulSet/ });
});

test('checks are refused as Argo Rollouts would refuse them, and providers other than Prometheus by name', (t) => {
  t.throws(() => parseConfig(base(`${CHECK}\n    count: 3`), 'c.yaml'), { message: /checks\[0\]: interval must be specified when count > 1/ });
  t.throws(() => parseConfig(base(`${CHECK}\n    provider: datadog`), 'c.yaml'), { message: /checks\[0\]\.provider: provider "datadog" is not supported: lastgood evaluates prometheus metrics \(datadog is on the provider seam, not yet built\)/ });
  t.throws(() => parseConfig(base(`${CHECK}\n  - name: error-ratio\n    query: up`), 'c.yaml'), { message: /duplicate check name "error-ratio"/ });
  t.throws(() => parseConfig(base('window: 10m'), 'c.yaml'), { message: /name at least one check/ });
  t.throws(() => parseConfig(base('argo: { templates: [] }'), 'c.yaml'), { message: /name at least one template/ });
  t.throws(() => parseConfig(base(`${CHECK}`).replace('analysis:\n      checks', 'analysis:\n      checks').replace('repo: {', 'analysis: { prometheus: { address: "http://u:p@prom:9090" } }\nrepo: {'), 'c.yaml'), { message: /analysis\.prometheus\.address: an http\(s\) URL without credentials/ });
});

const iso = (t: number) => new Date(t).toISOString();
const lookupIn = (objects: KubeObject[]): Lookup => async (ref) => objects.find((o) => o.kind === ref.kind && o.metadata.name === ref.name && o.metadata.namespace === ref.namespace);

test('a StatefulSet\'s rollout starts when its updateRevision\'s ControllerRevision was created; without it, lastgood says it cannot tell', async (t) => {
  const sts = { apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: 'db', namespace: 'prod', generation: 4 }, spec: { template: { spec: { containers: [{ name: 'db', image: 'postgres:16.4' }] } } }, status: { observedGeneration: 4, updateRevision: 'db-7c9f5d8b6', currentRevision: 'db-5b8d7c9f4' } } as KubeObject;
  const cr = { apiVersion: 'apps/v1', kind: 'ControllerRevision', metadata: { name: 'db-7c9f5d8b6', namespace: 'prod', creationTimestamp: iso(1_000_000) } } as KubeObject;
  const state = await rolloutOf(sts, 'db', lookupIn([cr]));
  t.true('rollout' in state);
  if (!('rollout' in state)) return;
  t.like(state.rollout, { start: 1_000_000, exact: true, facts: { revision: 'db-7c9f5d8b6', podTemplateHash: 'db-7c9f5d8b6', image: 'postgres:16.4', imageTag: '16.4', kind: 'StatefulSet' } });
  t.deepEqual(await rolloutOf(sts, 'db', lookupIn([])), { unknown: 'StatefulSet prod/db does not tell when revision db-7c9f5d8b6 began: give its ControllerRevision (a snapshot with it, or the cluster)' });
});

test('a Deployment whose new spec its controller has not observed has not started its rollout: nothing is measured yet', async (t) => {
  const dep = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'shop', namespace: 'prod', generation: 5 }, spec: {}, status: { observedGeneration: 4 } } as KubeObject;
  t.deepEqual(await rolloutOf(dep, 'shop', lookupIn([])), { waiting: 'Deployment prod/shop: generation 5 not yet observed by its controller: the rollout has not started' });
  const created = { ...dep, metadata: { ...dep.metadata, generation: 4 }, status: { observedGeneration: 4, conditions: [{ type: 'Progressing', status: 'True', reason: 'NewReplicaSetCreated', message: 'Created new replica set "shop-5d8f7c9b6a"', lastUpdateTime: iso(2_000_000) }] } } as KubeObject;
  const state = await rolloutOf(created, 'shop', lookupIn([]));
  t.like(state, { rollout: { start: 2_000_000, exact: true, facts: { podTemplateHash: '5d8f7c9b6a', revision: 'shop-5d8f7c9b6a' }, startedBy: 'Progressing=NewReplicaSetCreated (ReplicaSet shop-5d8f7c9b6a)' } });
});

test('install grants get on what the checks read (the rollout\'s ReplicaSets, the templates, the Canary and its MetricTemplates), and nothing to write', async (t) => {
  const text = `repo: { url: https://github.com/acme/gitops }
analysis: { prometheus: { address: http://prometheus.monitoring:9090 } }
targets:
  - name: shop
    paths: [apps/shop/]
    resources:
      - { apiVersion: apps/v1, kind: Deployment, namespace: prod, name: shop }
    analysis:
      argo: { templates: [ { templateName: success-rate } ] }
      canary: { name: podinfo }
`;
  const out = await installManifests({ config: parseConfig(text, 'c.yaml'), configText: text, image: 'registry.example/lastgood:0.1.0' });
  t.regex(out.yaml, /- apiGroups: \[ apps \]\n\s+resources: \[ replicasets \]\n\s+verbs: \[ get \]/);
  t.regex(out.yaml, /- apiGroups: \[ argoproj\.io \]\n\s+resources: \[ analysistemplates \]\n\s+verbs: \[ get \]/);
  t.regex(out.yaml, /- apiGroups: \[ flagger\.app \]\n\s+resources: \[ canaries, metrictemplates \]\n\s+verbs: \[ get \]/);
  const role = parseAllDocuments(out.yaml).map((d) => d.toJS() as { kind: string; rules: Array<{ resources: string[]; verbs: string[] }> }).find((d) => d.kind === 'ClusterRole')!;
  for (const rule of role.rules) t.true(rule.verbs.every((v) => ['get', 'list', 'watch'].includes(v) || (v === 'create' && rule.resources.join() === 'events')), JSON.stringify(rule));
});

test('the upstream templates in fixtures/analysis/ are valid for their CRDs (Argo Rollouts\' AnalysisTemplate / ClusterAnalysisTemplate, Flagger\'s MetricTemplate and Canary)', (t) => {
  const types = loadCrds([
    path.resolve('fixtures/analysis/crds/argo-rollouts-analysis-template-crd.yaml'),
    path.resolve('fixtures/analysis/crds/argo-rollouts-cluster-analysis-template-crd.yaml'),
    path.resolve('fixtures/crds/flagger-crds.yaml'),
  ]);
  const files = readdirSync('fixtures/analysis').filter((f) => f.endsWith('.yaml'));
  t.true(files.length >= 6);
  for (const file of files) {
    for (const object of yamlObjects(readFileSync(path.join('fixtures/analysis', file), 'utf8'))) {
      const type = types.find((ty) => `${ty.group}/${ty.version}` === object.apiVersion && ty.kind === object.kind);
      t.truthy(type, `${file}: a CRD for ${object.apiVersion} ${object.kind}`);
      const result = checkObject(type!.schema!, object as unknown as Record<string, unknown>);
      t.deepEqual(result.errors, [], `${file}: ${result.errors.map(describe).join('; ')}`);
      t.deepEqual(result.unknown, [], `${file}: fields the CRD does not know`);
    }
    t.regex(readFileSync(path.join('fixtures/analysis', file), 'utf8'), /^# Source: https:\/\/github\.com\/[\s\S]*# Commit: [0-9a-f]{40}\n# License: Apache-2\.0/m, `${file} keeps its source, commit and licence`);
  }
});
