import test from 'ava';
import { spawnSync } from 'node:child_process';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml, parseAllDocuments, stringify } from 'yaml';
import { METRIC_NAMES } from '../src/controller/metrics.ts';
import { lastgood, ROOT } from './support/cli.ts';
import { docsPage } from './support/docs.ts';
import { tempDir, writeFile } from './support/git.ts';
import { startKubeEmulator } from './support/kube-emulator.ts';
import { kustomization } from './support/objects.ts';
import { backend, config, configText, gitopsRepo, startController } from './support/controller-scenario.ts';

/**
 * The dashboards and alerts `lastgood install --monitoring` ships (issue 24), tested for real: the
 * alert rules pass `promtool check rules` and `promtool test rules` (Prometheus's own unit tests,
 * fixtures/monitoring/prometheus-rule.test.yaml, with series that exercise each alert), using the
 * Prometheus Debian packages (.ci/run installs it); every query of the Grafana dashboard parses
 * with Prometheus's parser and names only metrics a running controller exports; the manifests are
 * accepted by the Kubernetes emulator under the Prometheus Operator's CRDs.
 */

const MONITORING = path.join(ROOT, 'templates', 'monitoring');

function which(bin: string): string | undefined {
  const r = spawnSync(bin, ['--version'], { encoding: 'utf8' });
  return r.error ? undefined : bin;
}
const PROMTOOL = which('promtool');
const MISSING = 'promtool is not installed (apt-get install -y prometheus; .ci/run does)';

/** promtool's answer, or the test says it could not run (and fails where CI requires Prometheus). */
function promtool(t: { log(m: string): void; fail(m: string): void; pass(): void }, args: string[], cwd: string): { status: number; out: string } | undefined {
  if (!PROMTOOL) {
    if (process.env.LASTGOOD_REQUIRE_PROMETHEUS === '1') t.fail(MISSING);
    else {
      t.log(`NOT RUN: ${MISSING}`);
      t.pass();
    }
    return undefined;
  }
  const r = spawnSync(PROMTOOL, args, { cwd, encoding: 'utf8' });
  return { status: r.status ?? -1, out: `${r.stdout}${r.stderr}` };
}

const rule = () => parseYaml(readFileSync(path.join(MONITORING, 'prometheus-rule.yaml'), 'utf8')) as { spec: { groups: Array<{ name: string; rules: Array<{ alert: string; expr: string }> }> } };
const dashboard = () => JSON.parse(readFileSync(path.join(MONITORING, 'grafana-dashboard.json'), 'utf8')) as { uid: string; panels: Array<{ type: string; title: string; datasource?: { uid: string }; targets?: Array<{ expr: string }> }>; annotations: { list: Array<{ expr: string }> }; templating: { list: Array<{ name: string; query: unknown }> } };
const dashboardQueries = () => {
  const d = dashboard();
  return [...d.panels.flatMap((p) => (p.targets ?? []).map((x) => ({ where: p.title, expr: x.expr }))), ...d.annotations.list.map((a) => ({ where: 'annotation', expr: a.expr }))];
};
/** Grafana's variables, as Grafana fills them in before it asks Prometheus */
const filled = (expr: string) => expr.replaceAll('$__rate_interval', '2m').replaceAll('$namespace', 'lastgood');

test('the alert rules pass promtool check rules and promtool test rules (each alert fires where it must, and only there)', (t) => {
  const dir = tempDir('lastgood-promtool-');
  writeFileSync(path.join(dir, 'rules.yaml'), stringify({ groups: rule().spec.groups }));
  copyFileSync(path.join(ROOT, 'fixtures', 'monitoring', 'prometheus-rule.test.yaml'), path.join(dir, 'prometheus-rule.test.yaml'));
  const check = promtool(t, ['check', 'rules', 'rules.yaml'], dir);
  if (!check) return;
  t.is(check.status, 0, check.out);
  t.regex(check.out, /SUCCESS: 5 rules found/);
  const unit = promtool(t, ['test', 'rules', 'prometheus-rule.test.yaml'], dir)!;
  t.is(unit.status, 0, unit.out);
  // every alert is exercised by the unit tests, firing at least once
  const tests = parseYaml(readFileSync(path.join(dir, 'prometheus-rule.test.yaml'), 'utf8')) as { tests: Array<{ alert_rule_test: Array<{ alertname: string; exp_alerts: unknown[] }> }> };
  const firing = new Set(tests.tests.flatMap((x) => x.alert_rule_test.filter((a) => a.exp_alerts.length > 0).map((a) => a.alertname)));
  const quiet = new Set(tests.tests.flatMap((x) => x.alert_rule_test.filter((a) => a.exp_alerts.length === 0).map((a) => a.alertname)));
  for (const r of rule().spec.groups.flatMap((g) => g.rules)) {
    t.true(firing.has(r.alert), `${r.alert} is tested firing`);
    t.true(quiet.has(r.alert), `${r.alert} is tested quiet`);
  }
  // and the tests bite: a rule that waits longer fails them
  writeFileSync(path.join(dir, 'rules.yaml'), stringify({ groups: rule().spec.groups }).replace('for: 15m', 'for: 20m'));
  t.not(promtool(t, ['test', 'rules', 'prometheus-rule.test.yaml'], dir)!.status, 0);
});

test("every query of the dashboard and the alerts parses (Prometheus's parser) and names only metrics a running controller exports", async (t) => {
  // a running controller's scrape: what it really exports
  const repo = gitopsRepo();
  const kube = await startKubeEmulator({ namespaces: ['default', 'prod', 'flux-system', 'lastgood'] });
  t.teardown(() => kube.close());
  kube.apply(kustomization({ attempted: `main@sha1:${repo.c2}`, applied: `main@sha1:${repo.c2}`, ready: 'True' }));
  const be = await backend('local', repo);
  const resources = '\n      - { apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: apps }';
  const { controller } = await startController(kube, config(configText({ url: be.url, resources, controller: '  leaderElection: false\n' })), be.open(), { processMetrics: true });
  t.teardown(() => controller.stop());
  const scrape = await (await fetch(`http://127.0.0.1:${controller.address!.port}/metrics`)).text();
  const exported = new Set(scrape.split('\n').filter((l) => l && !l.startsWith('#')).map((l) => /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(l)![0]));
  for (const name of METRIC_NAMES) t.regex(scrape, new RegExp(`^# HELP ${name} \\S`, 'm'), `${name} is exported, with its help`);

  const queries = [...dashboardQueries(), ...rule().spec.groups.flatMap((g) => g.rules.map((r) => ({ where: r.alert, expr: r.expr })))];
  t.true(queries.length >= 15);
  for (const q of queries) {
    const names = [...new Set(q.expr.match(/\blastgood_[a-z0-9_]+/g) ?? [])];
    t.true(names.length > 0, `${q.where}: names a lastgood metric`);
    for (const n of names) t.true(exported.has(n), `${q.where}: ${n} is not in the controller's scrape`);
  }

  // Prometheus's parser: each query as a recording rule, through promtool check rules
  const dir = tempDir('lastgood-dashboard-');
  writeFileSync(path.join(dir, 'queries.yaml'), stringify({ groups: [{ name: 'dashboard', rules: dashboardQueries().map((q, i) => ({ record: `lastgood:dashboard_query_${i}`, expr: filled(q.expr) })) }] }));
  const check = promtool(t, ['check', 'rules', 'queries.yaml'], dir);
  if (!check) return;
  t.is(check.status, 0, check.out);
  // and the parser bites
  writeFileSync(path.join(dir, 'broken.yaml'), stringify({ groups: [{ name: 'x', rules: [{ record: 'x:y', expr: 'sum by (target) (lastgood_targets' }] }] }));
  t.not(promtool(t, ['check', 'rules', 'broken.yaml'], dir)!.status, 0);
});

test('the dashboard: one datasource variable for every panel, a namespace variable, a stable uid', (t) => {
  const d = dashboard();
  t.is(d.uid, 'lastgood-controller');
  t.deepEqual(d.templating.list.map((v) => v.name), ['datasource', 'namespace']);
  for (const p of d.panels.filter((x) => x.type !== 'row')) {
    t.is(p.datasource?.uid, '${datasource}', p.title);
    for (const q of p.targets ?? []) t.true(q.expr.includes('namespace="$namespace"'), `${p.title}: ${q.expr}`);
  }
  // what the issue asks a team sees: verdicts, reverts over time, failure-to-revert, remote errors, leader
  const text = JSON.stringify(d.panels.map((p) => p.targets?.map((x) => x.expr)));
  for (const metric of ['lastgood_target_verdict', 'lastgood_reverts_total', 'lastgood_failure_to_revert_seconds_bucket', 'lastgood_remote_errors_total', 'lastgood_leader']) t.true(text.includes(metric), metric);
});

test('lastgood install --monitoring: the PrometheusRule, ServiceMonitor and dashboard ConfigMap, accepted under the Prometheus Operator CRDs, the rules as tested', async (t) => {
  const cfg = writeFile(tempDir('lastgood-mon-'), 'lastgood.yaml', configText({ url: 'https://github.com/acme/gitops' }).replace('namespace: lastgood', 'namespace: ops'));
  const r = await lastgood(['install', '--config', cfg, '--monitoring']);
  t.is(r.code, 0, r.stderr);
  const docs = parseAllDocuments(r.stdout).map((d) => d.toJS() as { apiVersion: string; kind: string; metadata: { name: string; namespace: string; labels: Record<string, string> }; spec?: { groups?: unknown; selector?: unknown; endpoints?: Array<{ port: string }> }; data?: Record<string, string> });
  t.deepEqual(docs.map((d) => `${d.kind} ${d.metadata.namespace}/${d.metadata.name}`), ['PrometheusRule ops/lastgood', 'ServiceMonitor ops/lastgood-controller', 'ConfigMap ops/lastgood-grafana-dashboard']);
  t.deepEqual(docs[0]!.spec!.groups, rule().spec.groups, 'the rules printed are the rules tested');
  t.deepEqual(JSON.parse(docs[2]!.data!['lastgood.json']!), dashboard());
  t.is(docs[2]!.metadata.labels.grafana_dashboard, '1');
  // the ServiceMonitor finds the controller's Service (install's own), by its labels and port name
  const install = await lastgood(['install', '--config', cfg, '--registry', 'registry.example']);
  t.is(install.code, 0, install.stderr);
  const service = parseAllDocuments(install.stdout).map((d) => d.toJS() as { kind: string; metadata: { labels: Record<string, string> }; spec: { ports: Array<{ name: string }> } }).find((d) => d.kind === 'Service')!;
  t.like(service.metadata.labels, (docs[1]!.spec!.selector as { matchLabels: Record<string, string> }).matchLabels);
  t.is(service.spec.ports[0]!.name, docs[1]!.spec!.endpoints![0]!.port);

  const kube = await startKubeEmulator({ namespaces: ['default', 'ops'] });
  t.teardown(() => kube.close());
  for (const doc of docs) t.notThrows(() => kube.apply(doc), `${doc.kind} ${doc.metadata.name}`);
  // the CRD schema bites: a rule without an expression is refused
  const broken = structuredClone(docs[0]!) as unknown as { metadata: { name: string }; spec: { groups: Array<{ rules: Array<Record<string, unknown>> }> } };
  broken.metadata.name = 'broken';
  broken.spec.groups[0]!.rules[0]!.expr = undefined;
  delete broken.spec.groups[0]!.rules[0]!.expr;
  t.throws(() => kube.apply(broken), { message: /expr/ });
});

test('every metric is named and explained in docs/monitoring.md', (t) => {
  // the "Monitoring" page: the README's section it was
  const section = docsPage('monitoring');
  t.true(section.length > 100, 'a "Monitoring" section');
  for (const name of METRIC_NAMES) t.regex(section, new RegExp(`\\| \`${name}(\\{[^}]*\\})?\` \\|`), `${name} in the metrics table`);
  for (const r of rule().spec.groups.flatMap((g) => g.rules)) t.true(section.includes(r.alert), r.alert);
});
