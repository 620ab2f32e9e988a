import test from 'ava';
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { parse as parseYaml } from 'yaml';
import { METRIC_NAMES } from '../src/controller/metrics.ts';
import type { TargetsDocument } from '../src/controller/status.ts';
import { BIN, lastgood } from './support/cli.ts';
import { tempDir, writeFile } from './support/git.ts';
import { startKubeEmulator, type KubeEmulator } from './support/kube-emulator.ts';
import { kustomization } from './support/objects.ts';
import { createController } from '../src/controller/controller.ts';
import { backend, cluster, commitsSince, config, configText, failCanary, gitopsRepo, memoryLogger, startController, until } from './support/controller-scenario.ts';

/**
 * What the running controller shows (issue 24), through the real controller against the
 * Kubernetes API emulator: GET /targets and `lastgood status`, every metric from the first scrape
 * (counters at 0, bounded labels), and its logs: JSON lines with ISO 8601 times and no key twice,
 * or a readable format for a terminal.
 */

const KUSTOMIZATION_ONLY = `
      - { apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: apps }`;
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

async function emptyCluster(): Promise<KubeEmulator> {
  return startKubeEmulator({ namespaces: ['default', 'prod', 'flux-system', 'lastgood'] });
}

async function get(port: number, path: string): Promise<{ status: number; text: string }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: res.status, text: await res.text() };
}

/** The samples of a Prometheus text exposition: `name{labels}` → value. */
function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^(\S+?(?:\{[^}]*\})?) (\S+)$/.exec(line);
    if (m) out.set(m[1]!, Number(m[2]));
  }
  return out;
}

test('every metric is there from the first scrape, counters at 0, labelled only with what the config names', async (t) => {
  const repo = gitopsRepo();
  const kube = await emptyCluster();
  t.teardown(() => kube.close());
  kube.apply(kustomization({ attempted: `main@sha1:${repo.c2}`, applied: `main@sha1:${repo.c2}`, ready: 'True' }));
  // the first lists of the targets' kinds are held: the scrape below comes before anything was assessed
  const held = kube.hold(/(kustomizations|deployments)\?/);
  const be = await backend('local', repo);
  const cfg = config(configText({ url: be.url, resources: KUSTOMIZATION_ONLY, controller: '  leaderElection: false\n' }).replace('targets:\n', 'targets:\n  - name: redis-prod\n    paths: [apps/redis/]\n    resources:\n      - { apiVersion: apps/v1, kind: Deployment, namespace: prod, name: redis }\n'));
  // started, not awaited: start() resolves once the first lists are in, and they are held
  const controller = createController({ config: cfg, kc: kube.kubeConfig(), repo: await be.open(), log: memoryLogger().log, processMetrics: false });
  const starting = controller.start();
  t.teardown(async () => {
    held.release();
    await controller.stop();
    await starting.catch(() => undefined);
  });
  const port = (await until('the endpoints', () => controller.address)).port;
  t.is((await get(port, '/readyz')).status, 503, 'not synced: nothing was assessed');
  const text = (await get(port, '/metrics')).text;
  t.is((await get(port, '/readyz')).status, 503);
  const s = samples(text);
  for (const name of METRIC_NAMES) t.regex(text, new RegExp(`^# TYPE ${name} `, 'm'), name);
  const targets = ['redis-prod', 'podinfo-prod'];
  for (const target of targets) {
    for (const verdict of ['healthy', 'progressing', 'failed', 'stuck']) t.is(s.get(`lastgood_target_verdict{target="${target}",verdict="${verdict}"}`), 0);
    for (const outcome of ['created', 'existing', 'nothing-to-write', 'refused', 'impossible', 'error']) t.is(s.get(`lastgood_reverts_total{target="${target}",outcome="${outcome}"}`), 0);
    t.is(s.get(`lastgood_target_reverted{target="${target}"}`), 0);
    t.is(s.get(`lastgood_target_last_sync_timestamp_seconds{target="${target}"}`), 0);
  }
  for (const verdict of ['healthy', 'progressing', 'failed', 'stuck']) t.is(s.get(`lastgood_targets{verdict="${verdict}"}`), 0);
  for (const action of ['none', 'wait', 'revert', 'alert']) t.is(s.get(`lastgood_decisions_total{action="${action}"}`), 0);
  for (const kind of ['Kustomization', 'Deployment']) t.is(s.get(`lastgood_watch_restarts_total{kind="${kind}"}`), 0);
  for (const system of ['git', 'github', 'gitlab', 'gitea', 'bitbucket', 'azure-devops', 'kubernetes', 'webhook', 'prometheus']) t.is(s.get(`lastgood_remote_errors_total{system="${system}"}`), 0);
  t.is(s.get('lastgood_failure_to_revert_seconds_count'), 0);
  t.is(s.get('lastgood_failure_to_revert_seconds_bucket{le="+Inf"}'), 0);
  t.is(s.get('lastgood_lkg_recorded_total'), 0);
  t.is(s.get('lastgood_leader'), 1, 'leader election off in the scenario: this replica acts');
  // bounded labels: every target label is a configured target, every kind a configured kind
  const labelValues = (label: string) => new Set([...text.matchAll(new RegExp(`${label}="([^"]*)"`, 'g'))].map((m) => m[1]!));
  t.deepEqual([...labelValues('target')].sort(), [...targets].sort());
  t.deepEqual([...labelValues('kind')].sort(), ['Deployment', 'Kustomization']);

  const status = JSON.parse((await get(port, '/targets')).text) as TargetsDocument;
  t.false(status.synced);
  t.deepEqual(status.targets.map((x) => [x.name, x.verdict, x.decision]), [['redis-prod', 'unknown', null], ['podinfo-prod', 'unknown', null]]);

  // the lists answer: assessed, the series move
  held.release();
  await until('synced', async () => (await get(port, '/readyz')).status === 200);
  const later = samples((await get(port, '/metrics')).text);
  t.is(later.get('lastgood_target_verdict{target="podinfo-prod",verdict="healthy"}'), 1);
  t.is(later.get('lastgood_targets{verdict="healthy"}'), 1);
  t.true(later.get('lastgood_target_last_sync_timestamp_seconds{target="podinfo-prod"}')! > 0);
});

test('/targets and lastgood status: the verdict and since when, what the decision waits for, the last-known-good, the last action', async (t) => {
  const repo = gitopsRepo();
  const kube = await emptyCluster();
  t.teardown(() => kube.close());
  kube.apply(kustomization({ attempted: `main@sha1:${repo.c2}`, applied: `main@sha1:${repo.c2}`, ready: 'True' }));
  const be = await backend('local', repo);
  // a policy that waits: the decision holds, and says until when
  const waiting = config(configText({ url: be.url, resources: KUSTOMIZATION_ONLY, controller: '  leaderElection: false\n', target: '    onFailure: { analysis: { wait: 15m, then: revert } }\n' }));
  const first = await startController(kube, waiting, be.open());
  t.teardown(() => first.controller.stop());
  const port = first.controller.address!.port;
  const targets = async () => (JSON.parse((await get(port, '/targets')).text) as TargetsDocument).targets[0]!;
  const healthy = await until('recorded healthy', async () => {
    const x = await targets();
    return x.verdict === 'healthy' && x.lastKnownGood ? x : undefined;
  });
  t.like(healthy, { name: 'podinfo-prod', verdict: 'healthy', revision: repo.c2, decision: { action: 'none', heldBy: null }, waitingFor: null, lastAction: null });
  t.like(healthy.lastKnownGood, { commit: repo.c2, source: 'recorded' });
  t.regex(healthy.lastKnownGood!.at!, ISO);

  const since = new Date(Math.floor(Date.now() / 1000) * 1000).toISOString();
  kube.apply(kustomization({ attempted: `main@sha1:${repo.c3}`, applied: `main@sha1:${repo.c2}`, ready: 'False', since }));
  const held = await until('failed and held', async () => {
    const x = await targets();
    return x.verdict === 'failed' ? x : undefined;
  });
  const deadline = new Date(Date.parse(since) + 15 * 60_000).toISOString();
  t.like(held, {
    verdict: 'failed', class: 'analysis', since, revision: repo.c3,
    decision: { action: 'wait', heldBy: 'wait' }, waitingFor: { guard: 'wait', until: deadline, confirmations: null },
    lastKnownGood: { commit: repo.c2 }, lastAction: null,
  });
  t.regex(held.decision!.reason, /waiting \S+ more for it to heal, then revert/);
  t.regex(held.assessedAt!, ISO);

  // lastgood status prints it as a table
  const table = await lastgood(['status', '--controller', `http://127.0.0.1:${port}`]);
  t.is(table.code, 0, table.stderr);
  const lines = table.stdout.split('\n');
  t.regex(lines[0]!, /^controller \S+ \(leader\) at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  t.regex(lines[1]!, /^TARGET +VERDICT +SINCE +DECISION +WAITING FOR +LAST-KNOWN-GOOD +LAST ACTION$/);
  const cells = lines[2]!.split(/ {2,}/);
  t.deepEqual(cells, ['podinfo-prod', 'failed (analysis)', since.replace('.000Z', 'Z'), 'wait', `wait until ${deadline.replace('.000Z', 'Z')}`, repo.c2.slice(0, 12)]);
  const json = await lastgood(['status', '--controller', `http://127.0.0.1:${port}/`, '--json']);
  t.is(json.code, 0, json.stderr);
  t.is((JSON.parse(json.stdout) as TargetsDocument).targets[0]!.waitingFor!.until, deadline);
  await first.controller.stop();

  // the same failure under a policy that reverts: the last action, with what it wrote
  const second = await startController(kube, config(configText({ url: be.url, resources: KUSTOMIZATION_ONLY, controller: '  leaderElection: false\n' })), be.open());
  t.teardown(() => second.controller.stop());
  const outcome = await until('the revert', () => second.acted[0]);
  const after = (JSON.parse((await get(second.controller.address!.port, '/targets')).text) as TargetsDocument).targets[0]!;
  const [made] = commitsSince(repo.bare, repo.c4);
  t.is(outcome.commit, made!.sha);
  t.like(after, { verdict: 'failed', lastKnownGood: { commit: repo.c2, source: 'repository' } });
  t.like(after.lastAction, { action: 'revert', commit: made!.sha, pullRequest: null, created: true, lastKnownGood: repo.c2, error: null });
  t.regex(after.lastAction!.at, ISO);
  const metrics = samples((await get(second.controller.address!.port, '/metrics')).text);
  t.is(metrics.get('lastgood_target_reverted{target="podinfo-prod"}'), 1);
  t.is(metrics.get('lastgood_target_verdict{target="podinfo-prod",verdict="failed"}'), 1);
  t.is(metrics.get('lastgood_reverts_total{target="podinfo-prod",outcome="created"}'), 1);
  const row = (await lastgood(['status', '--controller', `http://127.0.0.1:${second.controller.address!.port}`])).stdout.split('\n')[2]!;
  t.regex(row, new RegExp(` {2}${repo.c2.slice(0, 12)} +revert ${made!.sha.slice(0, 12)} ${after.lastAction!.at.replace(/\.\d{3}Z$/, 'Z')}$`));
});

test('lastgood status: a controller that does not answer is an outside system failing (exit 3), a bad address bad usage (exit 2)', async (t) => {
  // a port nothing listens on
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise((resolve) => server.close(resolve));
  const gone = await lastgood(['status', '--controller', `http://127.0.0.1:${port}`]);
  t.is(gone.code, 3);
  t.true(gone.stderr.includes(`lastgood: controller: http://127.0.0.1:${port}/targets did not answer (ECONNREFUSED); is the controller running, and the port forwarded`), gone.stderr);
  const bad = await lastgood(['status', '--controller', 'ftp://example']);
  t.is(bad.code, 2);
  t.regex(bad.stderr, /--controller ftp:\/\/example: expected an http:\/\/ or https:\/\/ URL/);
});

interface Proc {
  child: ChildProcess;
  text: () => string;
  exited: Promise<number | null>;
}

function controllerProcess(configFile: string, kube: KubeEmulator, env: Record<string, string> = {}): Proc {
  const child = spawn(process.execPath, [BIN, 'controller', '--config', configFile], {
    env: { ...process.env, KUBECONFIG: kube.kubeconfigPath, LASTGOOD_LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let text = '';
  child.stderr!.on('data', (d: Buffer) => (text += d.toString('utf8')));
  return { child, text: () => text, exited: new Promise((resolve) => child.on('exit', (code) => resolve(code))) };
}

test('the controller process logs JSON lines with ISO 8601 times and no key twice, through a revert', async (t) => {
  const repo = gitopsRepo();
  const kube = await cluster(repo);
  t.teardown(() => kube.close());
  const configFile = writeFile(tempDir('lastgood-obs-'), 'lastgood.yaml', configText({ url: repo.bare, controller: '  leaderElection: false\n' }));
  const p = controllerProcess(configFile, kube);
  t.teardown(() => void p.child.kill('SIGKILL'));
  await until('the watches', () => /"msg":"watch synced"/.test(p.text()), 20_000);
  failCanary(kube);
  await until('the revert', () => /"msg":"revert done"/.test(p.text()), 20_000);
  p.child.kill('SIGTERM');
  t.is(await p.exited, 0);
  const lines = p.text().split('\n').filter(Boolean);
  t.true(lines.length >= 5, p.text());
  for (const line of lines) {
    // YAML 1.2 reads JSON; uniqueKeys refuses a key written twice in one object
    const doc = parseYaml(line, { uniqueKeys: true }) as Record<string, unknown>;
    t.regex(String(doc.time), ISO, line);
    t.is(typeof doc.level, 'number');
  }
  // the engine logs the delivery through the target's child logger (target, revision bound) with its own target and revision
  const delivered = lines.find((l) => l.includes('"msg":"delivered revert"'));
  t.truthy(delivered, p.text());
  t.is(delivered!.match(/"target":/g)!.length, 1, delivered);
  t.is(delivered!.match(/"revision":/g)!.length, 1, delivered);
  t.like(JSON.parse(delivered!), { target: 'podinfo-prod', revision: repo.c3 });
});

test('LASTGOOD_LOG_FORMAT=pretty: one readable line per event for a terminal', async (t) => {
  const repo = gitopsRepo();
  const kube = await cluster(repo);
  t.teardown(() => kube.close());
  const configFile = writeFile(tempDir('lastgood-obs-'), 'lastgood.yaml', configText({ url: repo.bare, controller: '  leaderElection: false\n' }));
  const p = controllerProcess(configFile, kube, { LASTGOOD_LOG_FORMAT: 'pretty' });
  t.teardown(() => void p.child.kill('SIGKILL'));
  await until('the watches', () => / watch synced /.test(p.text()), 20_000);
  p.child.kill('SIGTERM');
  t.is(await p.exited, 0);
  const lines = p.text().split('\n').filter(Boolean);
  t.regex(lines[0]!, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z INFO  starting controller=\S+ targets=1 repo=\S+ namespace=lastgood leaderElection=false$/);
  t.true(lines.some((l) => /^\S+Z INFO  watch synced controller=\S+ kind=Canary\.flagger\.app\/v1beta1 namespace=prod$/.test(l)), p.text());
  t.true(lines.some((l) => /^\S+Z INFO  decided controller=\S+ target=podinfo-prod .*verdict=progressing action=none reason="/.test(l)), p.text());
  t.false(p.text().includes('{"level"'), 'no JSON');
  t.false(p.text().includes('\x1b['), 'no colours when stderr is not a terminal');
});
