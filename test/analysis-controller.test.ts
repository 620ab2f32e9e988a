import anyTest, { type TestFn } from 'ava';
import path from 'node:path';
import { LocalRepo } from '../src/deliver/local/index.ts';
import type { AnalysisResult } from '../src/analysis/index.ts';
import { git, tempDir } from './support/git.ts';
import { startKubeEmulator } from './support/kube-emulator.ts';
import { kustomization } from './support/objects.ts';
import { startPrometheus, withPrometheus } from './support/prometheus.ts';
import { ERROR_RATIO, metrics, NEW_HASH, OLD_HASH, shopRepo } from './support/analysis-scenario.ts';
import { commitsSince, config, startController, until } from './support/controller-scenario.ts';

/**
 * The controller with metric checks: a plain Deployment rolls out in the Kubernetes API emulator
 * (the real list/watch protocol, @kubernetes/client-node), its new pods' error ratio is served by
 * a real Prometheus, and the controller measures each check as its time comes. The revert is
 * made on the measurement that reaches the failure limit: no later measurement is taken first.
 */

const test = withPrometheus(anyTest as TestFn);
const iso = (t: number) => new Date(t).toISOString();

function deploymentObject(o: { image: string; generation: number; rs: string; reason: string; since: string }) {
  return {
    apiVersion: 'apps/v1', kind: 'Deployment',
    metadata: { name: 'shop', namespace: 'prod', generation: o.generation },
    spec: { replicas: 2, progressDeadlineSeconds: 600, selector: { matchLabels: { app: 'shop' } }, template: { metadata: { labels: { app: 'shop' } }, spec: { containers: [{ name: 'shop', image: o.image }] } } },
    status: deploymentStatus(o),
  };
}

function deploymentStatus(o: { generation: number; rs: string; reason: string; since: string }) {
  const done = o.reason === 'NewReplicaSetAvailable';
  return {
    observedGeneration: o.generation, replicas: 2, updatedReplicas: done ? 2 : 1, readyReplicas: 2, availableReplicas: done ? 2 : 1,
    conditions: [
      { type: 'Available', status: 'True', reason: 'MinimumReplicasAvailable', message: 'Deployment has minimum availability.', lastUpdateTime: o.since, lastTransitionTime: o.since },
      { type: 'Progressing', status: 'True', reason: o.reason, message: done ? `ReplicaSet "${o.rs}" has successfully progressed.` : `Created new replica set "${o.rs}"`, lastUpdateTime: o.since, lastTransitionTime: o.since },
    ],
  };
}

function replicaSet(name: string, hash: string, image: string, created: string) {
  return {
    apiVersion: 'apps/v1', kind: 'ReplicaSet',
    metadata: { name, namespace: 'prod', creationTimestamp: created, labels: { app: 'shop', 'pod-template-hash': hash } },
    spec: { replicas: 2, selector: { matchLabels: { app: 'shop', 'pod-template-hash': hash } }, template: { metadata: { labels: { app: 'shop', 'pod-template-hash': hash } }, spec: { containers: [{ name: 'shop', image }] } } },
  };
}

test('a plain Deployment rolls out 1.5.0, its error ratio fails the check: one revert, on the measurement that reached the failure limit', async (t) => {
  const start = Date.now();
  // the new pods' series begin before the rollout in the TSDB: the check measures from the ReplicaSet's creation on
  const prom = await startPrometheus(metrics(start - 5 * 60_000));
  t.teardown(() => prom.stop());
  const repo = shopRepo();
  const bare = path.join(tempDir('lastgood-analysis-ctl-'), 'gitops.git');
  git(path.dirname(bare), 'clone', '-q', '--bare', repo.work, bare);

  const kube = await startKubeEmulator({ namespaces: ['default', 'prod', 'flux-system', 'lastgood'] });
  t.teardown(() => kube.close());
  const oldRs = `shop-${OLD_HASH}`;
  const newRs = `shop-${NEW_HASH.prod}`;
  // before: Flux applied c2, the Deployment runs 1.4.0 (its ReplicaSet ten minutes old)
  kube.apply(kustomization({ attempted: `main@sha1:${repo.c2}`, applied: `main@sha1:${repo.c2}`, ready: 'True', since: iso(start - 600_000) }));
  kube.apply(replicaSet(oldRs, OLD_HASH, 'ghcr.io/acme/shop:1.4.0', iso(start - 600_000)));
  kube.apply(deploymentObject({ image: 'ghcr.io/acme/shop:1.4.0', generation: 2, rs: oldRs, reason: 'NewReplicaSetAvailable', since: iso(start - 590_000) }));

  const cfg = config(`repo:
  url: ${bare}
  branch: main
defaults:
  mode: commit
  soak: 1s                # recorded once healthy for a second (the checks concluded): the soak itself is test/soak.test.ts's
analysis:
  prometheus: { address: "${prom.url}" }
controller:
  listen: 127.0.0.1:0
  namespace: lastgood
  interval: 200ms
  leaderElection: false
targets:
  - name: shop-prod
    paths: [apps/shop/]
    resources:
      - { apiVersion: apps/v1, kind: Deployment, namespace: prod, name: shop }
      - { apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: apps }
    analysis:
      checks:
        - name: error-ratio
          query: '${ERROR_RATIO}'
          failureCondition: result[0] > 0.05
          interval: 1s
          count: 10
          failureLimit: 2
`);
  const analysed: Array<{ rollout?: string; failed: number; taken: number; acted: number }> = [];
  let acted: unknown[] = [];
  const running = await startController(kube, cfg, new LocalRepo(bare), {
    onAnalysed: (_target: string, result: AnalysisResult) => {
      const a = result.evidence.find((e) => e.analysis)?.analysis;
      if (a) analysed.push({ ...(result.rollout ? { rollout: result.rollout } : {}), failed: a.failed, taken: a.taken, acted: acted.length });
    },
  });
  acted = running.acted;
  const { controller } = running;
  t.teardown(() => controller.stop());

  // 1.4.0 passes its ten measurements: the target is healthy, c2 is recorded as verified last-known-good
  await until('1.4.0 recorded as last-known-good', () => /target=shop-prod/.test(safeNotes(bare, repo.c2)), 60_000);
  t.deepEqual(running.acted, []);

  // Flux applies c4: the Deployment's spec changes to 1.5.0 and its controller creates the new ReplicaSet
  const rolledOut = Date.now();
  kube.apply(kustomization({ attempted: `main@sha1:${repo.c4}`, applied: `main@sha1:${repo.c4}`, ready: 'True', since: iso(rolledOut) }));
  kube.apply(replicaSet(newRs, NEW_HASH.prod!, 'ghcr.io/acme/shop:1.5.0', iso(rolledOut)));
  kube.apply(deploymentObject({ image: 'ghcr.io/acme/shop:1.5.0', generation: 3, rs: newRs, reason: 'NewReplicaSetCreated', since: iso(rolledOut) }));
  kube.setStatus({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'prod', name: 'shop' }, deploymentStatus({ generation: 3, rs: newRs, reason: 'NewReplicaSetAvailable', since: iso(rolledOut + 500) }));

  const outcome = await until('the revert', () => running.acted[0], 60_000) as { action: string; bad: string[]; lastKnownGood: string; verified: boolean; evidence: Array<{ kind: string; analysis?: { failed: number; taken: number; measurements: Array<{ at: string; phase: string; value: string }> } }> };
  await controller.idle();
  t.is(outcome.action, 'revert');
  t.deepEqual(outcome.bad, [repo.c3]);
  t.is(outcome.lastKnownGood, repo.c2);
  t.true(outcome.verified, 'the last-known-good was observed healthy under its own checks');

  // decided on the measurement that reached the limit (failed 3 > failureLimit 2): none after it
  const check = outcome.evidence.find((e) => e.kind === 'Analysis')!.analysis!;
  t.is(check.failed, 3);
  t.is(check.taken, 3);
  t.deepEqual(check.measurements.map((m) => m.phase), ['Failed', 'Failed', 'Failed']);
  for (const m of check.measurements) t.is(Math.round(Number(/^\[(.*)\]$/.exec(m.value)![1]) * 1000) / 1000, 0.08, 'PromQL over the new pods: 8% errors');
  const newRollout = analysed.filter((a) => a.rollout?.includes(newRs));
  t.true(newRollout.filter((a) => a.failed <= 2).every((a) => a.acted === 0), 'nothing was done before the failure limit was reached');

  const made = commitsSince(bare, repo.c4);
  t.is(made.length, 1, 'one revert');
  t.regex(made[0]!.message, new RegExp(`^Lastgood-Reverts: ${repo.c3}$`, 'm'));
  t.regex(made[0]!.message, /^Lastgood-Evidence: lastgood\.dev\/Analysis prod\/error-ratio state=failed reason=AnalysisFailed$/m);
  t.true(kube.requests(new RegExp(`/replicasets/${newRs}`)).some((r) => r.method === 'GET' && !r.watch), 'the new ReplicaSet is read by name');
  t.true(kube.requests().every((r) => !(r.method !== 'GET' && /replicasets|deployments/.test(r.url))), 'read-only: the workload is never paused or scaled');
});

function safeNotes(bare: string, commit: string): string {
  try {
    return git(bare, 'notes', '--ref=lastgood', 'show', commit);
  } catch {
    return '';
  }
}
