import { commit, makeRepo } from './git.ts';
import { openMetrics, type PodSet } from './metric-series.ts';
import { RENDER } from './render-off.ts';

/**
 * Metric analysis scenarios: a GitOps repository for a plain Deployment `shop` (c1 initial with
 * 1.4.0, c2 a good change, c3 the release 1.5.0, c4 an unrelated change), the cluster as
 * `kubectl get deploy,rs,kustomization -o yaml` shows it after the rollout of c3, and the metrics
 * of the workload's pods before and after the rollout (T0), for Prometheus to serve.
 *
 * Namespaces tell the scenarios apart: `prod` 1.5.0 serves 8% errors (bad), `good` 0.3% (good),
 * `meh` 3% (between the two conditions of an inconclusive check), `test` is Flagger's podinfo
 * (latency 0.8 s after the rollout).
 */

export const T0 = Date.parse('2026-11-20T10:00:00Z');
export const iso = (t: number) => new Date(t).toISOString();
export const at = (offsetMs: number) => iso(T0 + offsetMs);

export const OLD_HASH = '6c8b7d9f4';
export const NEW_HASH: Record<string, string> = { prod: '5d8f7c9b6a', good: '7f9c6b5d48', meh: '4b7c8d9e1f', test: '84d5c9b7f6' };
const ERRORS: Record<string, number> = { prod: 0.08, good: 0.003, meh: 0.03, test: 0.002 };

/** The pods' series around a rollout at `t0`: the old revision serves until a minute after it, the new one from 15 s after it, for an hour. */
export function podSets(t0 = T0): PodSet[] {
  const sets: PodSet[] = [];
  for (const ns of Object.keys(NEW_HASH)) {
    const workload = ns === 'test' ? 'podinfo' : 'shop';
    sets.push({ namespace: ns, prefix: `${workload}-${OLD_HASH}`, service: `${workload}.${ns}.svc.cluster.local`, from: t0 - 3_600_000, to: t0 + 60_000, rate: 10, errorRatio: 0.004, latency: 0.08 });
    sets.push({ namespace: ns, prefix: `${workload}-${NEW_HASH[ns]}`, service: `${workload}.${ns}.svc.cluster.local`, from: t0 + 15_000, to: t0 + 3_600_000, rate: 10, errorRatio: ERRORS[ns]!, latency: ns === 'test' ? 0.8 : 0.08 });
  }
  return sets;
}

export function metrics(t0 = T0): string {
  return openMetrics(podSets(t0));
}

export interface ShopRepo {
  work: string;
  c1: string; c2: string; c3: string; c4: string;
}

const deployment = (tag: string) => `apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: shop\nspec:\n  template:\n    spec:\n      containers:\n        - name: shop\n          image: ghcr.io/acme/shop:${tag}\n`;

export function shopRepo(): ShopRepo {
  const work = makeRepo();
  const c1 = commit(work, { 'apps/shop/deployment.yaml': deployment('1.4.0'), 'apps/redis/values.yaml': 'replicas: 1\n' }, 'initial platform');
  const c2 = commit(work, { 'apps/shop/pdb.yaml': 'apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: shop\n' }, 'shop: a disruption budget');
  const c3 = commit(work, { 'apps/shop/deployment.yaml': deployment('1.5.0') }, 'shop: release 1.5.0');
  const c4 = commit(work, { 'apps/redis/values.yaml': 'replicas: 3\n' }, 'redis: three replicas');
  return { work, c1, c2, c3, c4 };
}

/** The cluster after the rollout of c3 (Flux applied c4): the Deployment, its new ReplicaSet (unless left out), the Kustomization. */
export function cluster(o: { namespace: string; applied: string; workload?: string; replicaSet?: boolean; image?: string }): string {
  const name = o.workload ?? 'shop';
  const hash = NEW_HASH[o.namespace]!;
  const image = o.image ?? 'ghcr.io/acme/shop:1.5.0';
  const rs = `${name}-${hash}`;
  const docs = [`apiVersion: apps/v1
kind: Deployment
metadata: { name: ${name}, namespace: ${o.namespace}, generation: 3 }
spec:
  replicas: 2
  progressDeadlineSeconds: 600
  selector: { matchLabels: { app: ${name} } }
  template: { metadata: { labels: { app: ${name} } }, spec: { containers: [ { name: ${name}, image: "${image}" } ] } }
status:
  observedGeneration: 3
  replicas: 2
  updatedReplicas: 2
  readyReplicas: 2
  availableReplicas: 2
  conditions:
    - { type: Available, status: "True", reason: MinimumReplicasAvailable, message: Deployment has minimum availability., lastUpdateTime: "${at(-86_400_000)}", lastTransitionTime: "${at(-86_400_000)}" }
    - { type: Progressing, status: "True", reason: NewReplicaSetAvailable, message: 'ReplicaSet "${rs}" has successfully progressed.', lastUpdateTime: "${at(40_000)}", lastTransitionTime: "${at(-86_400_000)}" }
`];
  if (o.replicaSet !== false) {
    docs.push(`apiVersion: apps/v1
kind: ReplicaSet
metadata: { name: ${rs}, namespace: ${o.namespace}, creationTimestamp: "${at(0)}", labels: { app: ${name}, pod-template-hash: ${hash} } }
spec: { replicas: 2, selector: { matchLabels: { app: ${name}, pod-template-hash: ${hash} } }, template: { metadata: { labels: { app: ${name}, pod-template-hash: ${hash} } }, spec: { containers: [ { name: ${name}, image: "${image}" } ] } } }
status: { replicas: 2, readyReplicas: 2, availableReplicas: 2, observedGeneration: 1 }
`);
  }
  docs.push(`apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: { name: apps, namespace: flux-system, generation: 1 }
spec: { interval: 5m, path: ./apps, prune: true, sourceRef: { kind: GitRepository, name: flux-system } }
status:
  observedGeneration: 1
  lastAppliedRevision: main@sha1:${o.applied}
  lastAttemptedRevision: main@sha1:${o.applied}
  conditions:
    - { type: Ready, status: "True", reason: ReconciliationSucceeded, message: "Applied revision: main@sha1:${o.applied}", lastTransitionTime: "${at(-10_000)}" }
`);
  return docs.join('---\n');
}

export const ERROR_RATIO = 'sum(rate(http_requests_total{namespace="{{namespace}}",pod=~"{{workload}}-{{podTemplateHash}}-.*",code=~"5.."}[1m])) / sum(rate(http_requests_total{namespace="{{namespace}}",pod=~"{{workload}}-{{podTemplateHash}}-.*"}[1m]))';

/** lastgood.yaml for the shop target in one namespace, with this `analysis:` block (indented under the target). */
export function config(o: { repo: string; prometheus: string; namespace: string; analysis: string; workload?: string; mode?: string; defaults?: string }): string {
  return `repo:
  url: ${o.repo}
  branch: main
${RENDER()}defaults:
  mode: ${o.mode ?? 'commit'}
${o.defaults ?? ''}analysis:
  prometheus: { address: "${o.prometheus}" }
targets:
  - name: shop-${o.namespace}
    paths: [apps/shop/]
    resources:
      - { apiVersion: apps/v1, kind: Deployment, namespace: ${o.namespace}, name: ${o.workload ?? 'shop'} }
      - { apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: apps }
    analysis:
${o.analysis.replace(/^/gm, '      ')}
`;
}

/** docs/metrics.md's check: the new pods' 5xx ratio, measured each minute from a minute after the rollout, five times; two failures fail it. */
export const ERROR_RATIO_CHECK = `checks:
  - name: error-ratio
    query: '${ERROR_RATIO}'
    failureCondition: result[0] > 0.05
    initialDelay: 1m
    interval: 1m
    count: 5
    failureLimit: 1`;
