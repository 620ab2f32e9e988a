import anyTest, { type TestFn } from 'ava';
import path from 'node:path';
import { runAction } from './support/action.ts';
import { lastgood } from './support/cli.ts';
import { lastgoodEngine } from './support/engine-run.ts';
import { git, tempDir, writeFile } from './support/git.ts';
import { freePort, startPrometheus, withPrometheus, type PrometheusServer } from './support/prometheus.ts';
import { at, cluster, config, ERROR_RATIO_CHECK, metrics, NEW_HASH, shopRepo, T0 } from './support/analysis-scenario.ts';

/**
 * Metric analysis end to end: the engine as `lastgood run`/`check` call it (in this process,
 * support/engine-run.ts; the CLI's `validate` and the Action's door are started as a user does) and a real
 * Prometheus serving a TSDB backfilled by promtool: PromQL is evaluated by Prometheus. The
 * templates are the upstream projects' own examples (fixtures/analysis/, with their sources).
 */

const test = withPrometheus(anyTest as TestFn<{ prom: PrometheusServer }>);
const FIXTURES = path.resolve('fixtures/analysis');

anyTest.before(async (t) => {
  if (withPrometheus(anyTest) !== anyTest) return;
  (t.context as { prom?: PrometheusServer }).prom = await startPrometheus(metrics());
});
anyTest.after.always(async (t) => {
  await (t.context as { prom?: PrometheusServer }).prom?.stop();
});

function setup(t: { context: { prom: PrometheusServer } }, namespace: string, analysis: string, extra: { replicaSet?: boolean; prometheus?: string; defaults?: string } = {}) {
  const repo = shopRepo();
  const dir = tempDir('lastgood-analysis-');
  const cfg = writeFile(dir, 'lastgood.yaml', config({ repo: repo.work, prometheus: extra.prometheus ?? t.context.prom.url, namespace, analysis, ...(extra.defaults ? { defaults: extra.defaults } : {}) }));
  const snapshot = writeFile(dir, 'cluster.yaml', cluster({ namespace, applied: repo.c4, ...(extra.replicaSet === false ? { replicaSet: false } : {}) }));
  return { repo, cfg, snapshot, dir };
}

const json = (stdout: string) => JSON.parse(stdout) as { targets: Array<Record<string, any>> };
const head = (repo: string) => git(repo, 'rev-parse', 'main');

test('a bad rollout fails its error-ratio check: one revert of the release commit, with the query, value, condition and time in the commit', async (t) => {
  const { repo, cfg, snapshot } = setup(t, 'prod', ERROR_RATIO_CHECK);
  const r = await lastgoodEngine(['run', '--config', cfg, '--snapshot', snapshot, '--now', at(10 * 60_000), '--json']);
  t.is(r.code, 0, r.stderr);
  const [target] = json(r.stdout).targets;
  t.like(target, { verdict: 'failed', class: 'analysis', action: 'revert', bad: [repo.c3], lastKnownGood: repo.c2, created: true });
  const check = target!.evidence.find((e: any) => e.kind === 'Analysis');
  t.like(check, { apiVersion: 'lastgood.dev/v1alpha1', namespace: 'prod', name: 'error-ratio', state: 'failed', reason: 'AnalysisFailed', since: at(2 * 60_000) });
  // evaluated by Prometheus: 8% of the new pods' requests fail, from the first measurement a minute after the ReplicaSet was created
  t.like(check.analysis, { phase: 'Failed', taken: 2, failed: 2, count: 5, rollout: { revision: `shop-${NEW_HASH.prod}`, start: at(0), startedBy: `ReplicaSet shop-${NEW_HASH.prod} created` } });
  t.deepEqual(check.analysis.measurements.map((m: any) => [m.at, m.phase, m.value]), [[at(60_000), 'Failed', '[0.08]'], [at(120_000), 'Failed', '[0.08]']]);
  t.regex(check.analysis.queries[0].query, new RegExp(`pod=~"shop-${NEW_HASH.prod}-\\.\\*"`));
  t.regex(check.message, /failed \(2\) > failureLimit \(1\)/);

  const made = git(repo.work, 'log', '--format=%H', `${repo.c4}..main`).split('\n').filter(Boolean);
  t.is(made.length, 1, 'exactly one revert commit');
  const message = git(repo.work, 'log', '-1', '--format=%B');
  t.regex(message, new RegExp(`^Lastgood-Reverts: ${repo.c3}$`, 'm'));
  t.regex(message, new RegExp(`^Lastgood-Restores: ${repo.c2}$`, 'm'));
  t.regex(message, /^Lastgood-Evidence: lastgood\.dev\/Analysis prod\/error-ratio state=failed reason=AnalysisFailed$/m);
  t.regex(message, /result\[0\] > 0\.05/);
  t.regex(message, /\[0\.08\]/);
  t.is(git(repo.work, 'show', 'main:apps/shop/deployment.yaml').match(/image: (.*)/)![1], 'ghcr.io/acme/shop:1.4.0');

  // a second run finds its own revert and writes nothing
  const again = await lastgoodEngine(['run', '--config', cfg, '--snapshot', snapshot, '--now', at(11 * 60_000), '--json']);
  t.is(again.code, 0, again.stderr);
  t.is(git(repo.work, 'log', '--format=%H', `${repo.c4}..main`).split('\n').filter(Boolean).length, 1);
});

test('one-shot before the failure limit is reached: says what it measured and what it could not conclude yet, writes nothing', async (t) => {
  const { repo, cfg, snapshot } = setup(t, 'prod', ERROR_RATIO_CHECK);
  const r = await lastgoodEngine(['run', '--config', cfg, '--snapshot', snapshot, '--now', at(90_000)]);
  t.is(r.code, 0, r.stderr);
  t.regex(r.stdout, /shop-prod: PROGRESSING/);
  t.regex(r.stdout, /error-ratio \(lastgood\.yaml\) for shop-5d8f7c9b6a: not concluded yet: 1 of 5 measurements taken, 1 failed, 0 inconclusive; next measurement at 2026-11-20T10:02/);
  t.regex(r.stdout, /Running: 1 of 5 measurements, 1 failed, 0 inconclusive, 0 in error; window from 2026-11-20T10:00:00\.000Z \(ReplicaSet shop-5d8f7c9b6a created\)/);
  t.regex(r.stdout, /next measurement at 2026-11-20T10:02:00\.000Z/);
  t.regex(r.stdout, /last: \[0\.08\] at 2026-11-20T10:01:00\.000Z: Failed \(failureCondition "result\[0\] > 0\.05" is true\)/);
  t.is(head(repo.work), repo.c4);
});

test('a good rollout passes: recorded as verified last-known-good once its checks have concluded (and the soak passed), not before', async (t) => {
  const { repo, cfg, snapshot } = setup(t, 'good', ERROR_RATIO_CHECK);
  const early = await lastgoodEngine(['check', '--config', cfg, '--snapshot', snapshot, '--now', at(3 * 60_000), '--record', '--json']);
  t.is(early.code, 0, early.stderr);
  t.like(json(early.stdout).targets[0], { verdict: 'progressing' });
  t.is(git(repo.work, 'notes', '--ref=lastgood', 'list'), '', 'nothing recorded while the checks run');

  // the checks have concluded, and the target has stayed healthy since for the soak (5m, issue 19)
  const later = await lastgoodEngine(['check', '--config', cfg, '--snapshot', snapshot, '--now', at(15 * 60_000), '--record', '--json']);
  t.is(later.code, 0, later.stderr);
  const [target] = json(later.stdout).targets;
  t.like(target, { verdict: 'healthy', lastKnownGood: repo.c4, verified: true });
  t.like(target!.evidence.find((e: any) => e.kind === 'Analysis'), { state: 'healthy', reason: 'AnalysisSuccessful', analysis: { phase: 'Successful', taken: 5, failed: 0 } });
  t.regex(git(repo.work, 'notes', '--ref=lastgood', 'show', repo.c4), /target=shop-good/);
});

test('Prometheus unreachable: unknown, said so, exit 3, nothing written', async (t) => {
  const closed = await freePort();
  const { repo, cfg, snapshot } = setup(t, 'prod', ERROR_RATIO_CHECK, { prometheus: `http://127.0.0.1:${closed}` });
  const r = await lastgoodEngine(['run', '--config', cfg, '--snapshot', snapshot, '--now', at(10 * 60_000), '--json']);
  t.is(r.code, 3, r.stderr);
  const [target] = json(r.stdout).targets;
  t.is(target!.verdict, 'progressing', 'never failed on a check that could not be measured');
  t.is(target!.action, 'none');
  t.like(target!.evidence.find((e: any) => e.kind === 'Analysis'), { state: 'unknown', reason: 'PrometheusUnreachable' });
  t.regex(target!.error.message, new RegExp(`prometheus: http://127\\.0\\.0\\.1:${closed} unreachable: ECONNREFUSED`));
  t.regex(r.stderr, /unreachable/);
  t.is(head(repo.work), repo.c4);
});

test('a query Prometheus refuses (bad_data, a typo in the PromQL): measured in error, and once beyond consecutiveErrorLimit the check ends in error with exit 4, never progressing forever; nothing written', async (t) => {
  const typo = ERROR_RATIO_CHECK.replace("query: '", "query: 'sum(rate(") + '\n    consecutiveErrorLimit: 2';
  const { repo, cfg, snapshot } = setup(t, 'prod', typo);
  // early: two measurements in error (the first at 1m, then 10 s later), within the limit: still measuring, and says why
  const early = await lastgoodEngine(['run', '--config', cfg, '--snapshot', snapshot, '--now', at(75_000), '--json']);
  t.is(early.code, 0, early.stderr);
  const measuring = json(early.stdout).targets[0]!.evidence.find((e: any) => e.kind === 'Analysis');
  t.like(measuring, { state: 'progressing', reason: 'AnalysisRunning' });
  t.regex(measuring.message, /0 of 5 measurements taken, 0 failed, 0 inconclusive, 2 in error \(last: .*bad_data.*; 2 in a row allowed\)/);
  // later: three in a row > consecutiveErrorLimit (2): Error, as Argo Rollouts ends the run
  const r = await lastgoodEngine(['run', '--config', cfg, '--snapshot', snapshot, '--now', at(10 * 60_000), '--json']);
  t.is(r.code, 4, r.stderr);
  const [target] = json(r.stdout).targets;
  t.is(target!.action, 'none', 'never reverted on measurements it could not take');
  const check = target!.evidence.find((e: any) => e.kind === 'Analysis');
  t.like(check, { state: 'unknown', reason: 'AnalysisError', analysis: { phase: 'Error', errors: 3 } });
  t.regex(check.message, /ended in error: consecutiveErrors \(3\) > consecutiveErrorLimit \(2\)/);
  t.regex(target!.error.message, /error-ratio \(lastgood\.yaml\) ended in error: consecutiveErrors \(3\) > consecutiveErrorLimit \(2\); last: .*bad_data/);
  t.is(target!.error.code, 4);
  t.is(head(repo.work), repo.c4, 'nothing written');
  const text = await lastgoodEngine(['check', '--config', cfg, '--snapshot', snapshot, '--now', at(10 * 60_000)]);
  t.is(text.code, 4);
  t.regex(text.stdout, /^shop-prod: PROGRESSING — CHECK IN ERROR \(exit 4\)$/m);
  t.regex(text.stdout, /^ {2}error \(exit 4\): Analysis prod\/error-ratio: error-ratio \(lastgood\.yaml\) ended in error/m);
});

test('an inconclusive check holds the target and says so; nothing is written', async (t) => {
  const analysis = `checks:
  - name: error-ratio
    query: '${'sum(rate(http_requests_total{namespace="{{namespace}}",pod=~"{{workload}}-{{podTemplateHash}}-.*",code=~"5.."}[1m])) / sum(rate(http_requests_total{namespace="{{namespace}}",pod=~"{{workload}}-{{podTemplateHash}}-.*"}[1m]))'}'
    successCondition: result[0] < 0.01
    failureCondition: result[0] > 0.05
    initialDelay: 1m
    interval: 1m
    count: 3`;
  const { repo, cfg, snapshot } = setup(t, 'meh', analysis);
  const r = await lastgoodEngine(['run', '--config', cfg, '--snapshot', snapshot, '--now', at(10 * 60_000)]);
  t.is(r.code, 0, r.stderr);
  t.regex(r.stdout, /shop-meh: PROGRESSING/);
  t.regex(r.stdout, /lastgood\.dev\/Analysis meh\/error-ratio suspended \(AnalysisInconclusive\)/);
  t.regex(r.stdout, /held: error-ratio \(lastgood\.yaml\) for shop-4b7c8d9e1f is inconclusive, a person decides/);
  t.regex(r.stdout, /Inconclusive: 1 of 3 measurements, 0 failed, 1 inconclusive/);
  t.regex(r.stdout, /neither successCondition "result\[0\] < 0\.01" nor failureCondition "result\[0\] > 0\.05" is true/);
  const j = await lastgoodEngine(['check', '--config', cfg, '--snapshot', snapshot, '--now', at(10 * 60_000), '--json']);
  t.regex(json(j.stdout).targets[0]!.evidence.find((e: any) => e.kind === 'Analysis').message, /inconclusive \(1\) > inconclusiveLimit \(0\)/);
  t.is(head(repo.work), repo.c4);
});

test('Argo Rollouts AnalysisTemplate (upstream example, background: interval 5m, failureLimit 3): fails on the fourth failed measurement, as Argo Rollouts would', async (t) => {
  const analysis = `window: 30m
argo:
  templates: [ { templateName: success-rate } ]
  args: [ { name: service-name, value: "{{workload}}.{{namespace}}.svc.cluster.local" } ]`;
  const { repo, cfg, snapshot } = setup(t, 'prod', analysis);
  const template = path.join(FIXTURES, 'argo-rollouts-success-rate-background.yaml');
  // the template has no namespace: kubectl get -o yaml would show the one it lives in
  const ns = writeFile(path.dirname(snapshot), 'template.yaml', (await import('node:fs')).readFileSync(template, 'utf8').replace('  name: success-rate', '  name: success-rate\n  namespace: prod'));
  const before = await lastgoodEngine(['run', '--config', cfg, '--snapshot', snapshot, '--snapshot', ns, '--now', at(24 * 60_000), '--json', '--dry-run']);
  t.is(before.code, 0, before.stderr);
  const running = json(before.stdout).targets[0]!.evidence.find((e: any) => e.kind === 'Analysis');
  // irate over 5m: at T0 only the old pods answer (0.996), at T0+5m both (0.958), from T0+10m the new ones (0.92 < 0.95)
  t.like(running, { state: 'progressing', analysis: { source: 'AnalysisTemplate prod/success-rate', phase: 'Running', failed: 3, taken: 5 } });
  t.deepEqual(running.analysis.measurements.map((m: any) => m.phase), ['Successful', 'Successful', 'Failed', 'Failed', 'Failed']);

  const r = await lastgoodEngine(['run', '--config', cfg, '--snapshot', snapshot, '--snapshot', ns, '--now', at(26 * 60_000), '--json']);
  t.is(r.code, 0, r.stderr);
  const [target] = json(r.stdout).targets;
  t.like(target, { verdict: 'failed', action: 'revert', bad: [repo.c3] });
  const check = target!.evidence.find((e: any) => e.kind === 'Analysis');
  t.like(check, { state: 'failed', since: at(25 * 60_000), analysis: { semantics: 'argo', phase: 'Failed', failed: 4 } });
  t.regex(check.message, /failed \(4\) > failureLimit \(3\)/);
  t.regex(check.analysis.queries[0].query, /destination_service=~"shop\.prod\.svc\.cluster\.local"/);
  t.is(check.analysis.queries[0].condition, 'successCondition: result[0] >= 0.95');
});

test('an AnalysisTemplate in the snapshot as the upstream docs print it (no metadata.namespace): not found in the workload\'s namespace, and the message says a namespace-less one is there and what to add (exit 2)', async (t) => {
  const { repo, cfg, snapshot } = setup(t, 'prod', `argo:
  templates: [ { templateName: success-rate } ]
  args: [ { name: service-name, value: "{{workload}}.{{namespace}}.svc.cluster.local" } ]`);
  const r = await lastgoodEngine(['run', '--config', cfg, '--snapshot', snapshot, '--snapshot', path.join(FIXTURES, 'argo-rollouts-success-rate-background.yaml'), '--now', at(10 * 60_000), '--json']);
  t.is(r.code, 2, r.stderr);
  t.regex(json(r.stdout).targets[0]!.error.message, /AnalysisTemplate prod\/success-rate not found; what was observed holds the AnalysisTemplate success-rate without metadata\.namespace \(as the upstream docs print them\): add `namespace: prod` to it/);
  t.is(head(repo.work), repo.c4);
});

test('Argo Rollouts AnalysisTemplate (upstream example, one measurement, address from an argument with a default): evaluated against lastgood\'s Prometheus', async (t) => {
  const analysis = `argo:
  analysisTemplates: [ { name: success-rate } ]
  args: [ { name: service-name, value: "{{workload}}.{{namespace}}.svc.cluster.local" } ]`;
  const { cfg, snapshot, dir } = setup(t, 'good', analysis);
  const fs = await import('node:fs');
  const tpl = writeFile(dir, 'template.yaml', fs.readFileSync(path.join(FIXTURES, 'argo-rollouts-success-rate-step.yaml'), 'utf8').replace('  name: success-rate', '  name: success-rate\n  namespace: good'));
  const r = await lastgoodEngine(['check', '--config', cfg, '--snapshot', snapshot, '--snapshot', tpl, '--now', at(60_000), '--json']);
  t.is(r.code, 0, r.stderr);
  const [target] = json(r.stdout).targets;
  t.like(target, { verdict: 'healthy' });
  t.like(target!.evidence.find((e: any) => e.kind === 'Analysis'), { state: 'healthy', analysis: { phase: 'Successful', taken: 1 } });
});

test('a Flagger Canary\'s analysis with the upstream latency MetricTemplate: Flagger\'s rules (halted ticks, threshold 5), evaluated against Prometheus', async (t) => {
  const repo = shopRepo();
  const dir = tempDir('lastgood-analysis-');
  const cfg = writeFile(dir, 'lastgood.yaml', config({ repo: repo.work, prometheus: t.context.prom.url, namespace: 'test', workload: 'podinfo', analysis: 'canary: { name: podinfo }' }));
  const snapshot = writeFile(dir, 'cluster.yaml', cluster({ namespace: 'test', workload: 'podinfo', applied: repo.c4 }));
  const args = ['--config', cfg, '--snapshot', snapshot, '--snapshot', path.join(FIXTURES, 'flagger-podinfo-canary.yaml'), '--snapshot', path.join(FIXTURES, 'flagger-latency-metrictemplate.yaml'), '--json'];
  // analysis.interval 15s, threshold 5: the first tick sees the old pods (p99 0.0995 s); then the new pods' p99 (0.99 s > 0.5) halts each tick; the fifth halt fails it
  const running = json((await lastgoodEngine(['check', ...args, '--now', at(85_000)])).stdout).targets[0]!;
  t.like(running.evidence.find((e: any) => e.kind === 'Analysis'), { state: 'progressing', analysis: { source: 'Canary test/podinfo', semantics: 'flagger', failed: 4, taken: 5 } });
  const r = await lastgoodEngine(['check', ...args, '--now', at(95_000)]);
  t.is(r.code, 0, r.stderr);
  const [target] = json(r.stdout).targets;
  t.like(target, { verdict: 'failed', class: 'analysis', action: 'revert' });
  const check = target!.evidence.find((e: any) => e.kind === 'Analysis');
  t.like(check, { state: 'failed', since: at(90_000), analysis: { phase: 'Failed', failed: 5 } });
  t.regex(check.message, /latency 0\.995 > 0\.5 \(thresholdRange\.max\)/);
  t.regex(check.analysis.queries[0].query, /kubernetes_namespace="test",\s*kubernetes_pod_name=~"podinfo-\[0-9a-zA-Z\]\+\(-\[0-9a-zA-Z\]\+\)",\s*path="root"\s*\}\[30s\]/);
  t.true(target!.notes.some((n: string) => /request-success-rate is one of Flagger's builtin checks/.test(n)), 'the builtin metric is said to be skipped');
});

test('providers other than Prometheus are refused, naming the provider and the template: exit 2, nothing written', async (t) => {
  const { repo, cfg, snapshot, dir } = setup(t, 'prod', `argo:
  templates: [ { templateName: always-pass, clusterScope: true } ]`);
  const r = await lastgoodEngine(['run', '--config', cfg, '--snapshot', snapshot, '--snapshot', path.join(FIXTURES, 'argo-rollouts-cluster-always-pass.yaml'), '--now', at(10 * 60_000), '--json']);
  t.is(r.code, 2, r.stderr);
  t.regex(json(r.stdout).targets[0]!.error.message, /ClusterAnalysisTemplate always-pass metric pass: provider "job" is not supported: lastgood evaluates prometheus metrics/);
  t.is(head(repo.work), repo.c4);

  const flagger = writeFile(dir, 'lastgood-flagger.yaml', config({ repo: repo.work, prometheus: t.context.prom.url, namespace: 'prod', analysis: `flagger:
  interval: 1m
  metrics:
    - name: 404s percentage
      templateRef: { name: not-found-percentage, namespace: istio-system }
      thresholdRange: { max: 5 }` }));
  const d = await lastgoodEngine(['check', '--config', flagger, '--snapshot', snapshot, '--snapshot', path.join(FIXTURES, 'flagger-datadog-metrictemplate.yaml'), '--now', at(10 * 60_000), '--json']);
  t.is(d.code, 2, d.stderr);
  t.regex(json(d.stdout).targets[0]!.error.message, /MetricTemplate istio-system\/not-found-percentage: provider "datadog" is not supported/);
});

test('without the ReplicaSet the window starts at the Deployment\'s last progress, and the evidence says it is approximate', async (t) => {
  const { cfg, snapshot } = setup(t, 'prod', ERROR_RATIO_CHECK, { replicaSet: false });
  const r = await lastgoodEngine(['check', '--config', cfg, '--snapshot', snapshot, '--now', at(10 * 60_000), '--json']);
  t.is(r.code, 0, r.stderr);
  const check = json(r.stdout).targets[0]!.evidence.find((e: any) => e.kind === 'Analysis');
  t.is(check.analysis.rollout.start, at(40_000));
  t.regex(check.analysis.rollout.startedBy, /approximate/);
  t.is(check.analysis.measurements[0].at, at(100_000));
  t.is(check.state, 'failed');
  t.regex(check.message, /window start approximate/);
});

test('lastgood.yaml checks are validated when the config is read: file, line, field', async (t) => {
  const { cfg } = setup(t, 'prod', `checks:
  - name: error-ratio
    query: 'up{pod="{{pod}}"}'
    failureCondition: result[0] > 0.05`);
  const r = await lastgood(['validate', '--config', cfg]);
  t.is(r.code, 2);
  t.regex(r.stderr, /lastgood\.yaml:\d+: targets\[0\]\.analysis\.checks\[0\]\.query: unknown variable: the variables are \{\{target\}\}/);
  const bad = writeFile(path.dirname(cfg), 'bad.yaml', (await import('node:fs')).readFileSync(cfg, 'utf8').replace('up{pod="{{pod}}"}', 'up').replace('result[0] > 0.05', 'result[0] >>> 1'));
  const b = await lastgood(['validate', '--config', bad]);
  t.is(b.code, 2);
  t.regex(b.stderr, /bad\.yaml:\d+: targets\[0\]\.analysis\.checks\[0\]\.failureCondition: not an expression Argo Rollouts evaluates/);
  void T0;
});

test('the Action measures the same checks (in-pipeline, snapshot): the bad rollout is reverted, the outputs say so', async (t) => {
  // the Action runs on the real clock, days after this rollout: maxAge off, or the failure would be old news
  const { repo, dir } = setup(t, 'prod', ERROR_RATIO_CHECK, { defaults: '  maxAge: "off"\n' });
  const r = await runAction({ workspace: dir, token: 'ghs_analysisActionToken0123456789', eventName: 'push', with: { config: 'lastgood.yaml', snapshot: 'cluster.yaml' } });
  t.is(r.code, 0, r.stderr + r.stdout);
  t.is(r.outputs.verdict, 'failed');
  t.is(r.outputs.action, 'revert');
  t.is(r.outputs['bad-revision'], repo.c3);
  t.is(r.outputs['last-known-good'], repo.c2);
  t.regex(r.summary, /lastgood\.dev\/Analysis/);
  t.is(git(repo.work, 'log', '--format=%H', `${repo.c4}..main`).split('\n').filter(Boolean).length, 1);
});
