import test from 'ava';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { DIST, runAction as run, type ActionResult, type RunActionOptions } from './support/action.ts';
import { ROOT } from './support/cli.ts';
import { commit, fingerprint, git, makeRepo, tempDir, writeFile } from './support/git.ts';
import { deployment, kustomization, yamlDocs } from './support/objects.ts';
import { startGitHubEmulator } from './support/github-emulator.ts';
import { until } from './support/controller-scenario.ts';
import { RENDER } from './support/render-off.ts';

/**
 * The Action as the runner runs it (DESIGN.md "Real parts"): `node dist/action.js` with INPUT_*
 * variables (defaults from action.yml, hyphens kept: INPUT_GITHUB-TOKEN), GITHUB_EVENT_PATH at a
 * real payload (fixtures/events), GITHUB_OUTPUT and GITHUB_STEP_SUMMARY files, GITHUB_WORKSPACE.
 * The repository is a real bare git repository (the local backend) until the GitHub emulator exists.
 */

const FIXTURES = path.join(ROOT, 'fixtures', 'events');
const FIXTURE_SHA = '5b8a2d2a0d8d6c5e0ad2c2e8e2f9e4b1c3d7a6f0';
const TOKEN = 'ghs_lastgoodTestToken0123456789abcdefABCDEF';
const TARGET_PATH = 'apps/podinfo/overlays/prod/';

/** The runner runs the Action with this token as the `github-token` default. */
const runAction = (opts: Omit<RunActionOptions, 'token'>): Promise<ActionResult> => run({ ...opts, token: TOKEN });

interface Scenario {
  workspace: string;
  repo: string;
  c2: string; c3: string; c4: string;
}

function overlay(tag: string): string {
  return `apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../../base\nimages:\n  - name: ghcr.io/stefanprodan/podinfo\n    newTag: ${tag}\n`;
}

const RESOURCES = {
  kustomization: '{ apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: apps }',
  application: '{ apiVersion: argoproj.io/v1alpha1, kind: Application, namespace: argocd, name: podinfo-prod }',
  canary: '{ apiVersion: flagger.app/v1beta1, kind: Canary, namespace: prod, name: podinfo }',
  deployment: '{ apiVersion: apps/v1, kind: Deployment, namespace: prod, name: podinfo }',
};

/** c1 initial, c2 good podinfo change, c3 bad podinfo release, c4 unrelated redis change; a bare repo and a workspace with lastgood.yaml. */
function scenario(opts: { mode?: string; resources?: Array<keyof typeof RESOURCES>; extra?: string; repo?: string; render?: boolean } = {}): Scenario {
  const work = makeRepo();
  commit(work, { 'apps/podinfo/base/deployment.yaml': 'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: podinfo\n', [`${TARGET_PATH}kustomization.yaml`]: overlay('6.0.0'), 'apps/redis/values.yaml': 'replicas: 1\n' }, 'initial platform');
  const c2 = commit(work, { [`${TARGET_PATH}replicas.yaml`]: 'replicas: 2\n' }, 'podinfo: two replicas in prod');
  const c3 = commit(work, { [`${TARGET_PATH}kustomization.yaml`]: overlay('6.1.0') }, 'podinfo: release 6.1.0');
  const c4 = commit(work, { 'apps/redis/values.yaml': 'replicas: 3\n' }, 'redis: three replicas');
  const workspace = tempDir('lastgood-ws-');
  const repo = path.join(workspace, 'gitops.git');
  git(workspace, 'clone', '-q', '--bare', work, repo);
  const resources = (opts.resources ?? ['kustomization', 'application', 'canary', 'deployment']).map((r) => `      - ${RESOURCES[r]}`).join('\n');
  writeFile(workspace, 'lastgood.yaml', `repo:
${opts.repo ?? '  url: ./gitops.git'}
  branch: main
${RENDER(opts.render)}defaults:
  mode: ${opts.mode ?? 'commit'}
  strategy: restore
  confirmations: 1
targets:
  - name: podinfo-prod
    paths: [${TARGET_PATH}]
    resources:
${resources}
${opts.extra ?? ''}`);
  return { workspace, repo, c2, c3, c4 };
}

/** A fixture as the runner would hand it over: the placeholder SHA replaced, times moved to a minute ago. */
function eventFile(s: Scenario, fixture: string, edit?: (payload: any) => void): string {
  const recent = new Date(Date.now() - 60_000);
  let text = readFileSync(path.join(FIXTURES, fixture), 'utf8')
    .replaceAll(FIXTURE_SHA, s.c3)
    .replace(/"20\d\d-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z"/g, `"${recent.toISOString()}"`)
    .replace(/"timestamp": "\d{13}"/g, `"timestamp": "${recent.getTime()}"`);
  if (edit) {
    const data = JSON.parse(text);
    edit(data);
    text = JSON.stringify(data, null, 2);
  }
  return writeFile(s.workspace, '.runner/event.json', text);
}

/** kubectl-style snapshot: the Kustomization applied c3 and is Ready (Flagger and alerts judge the release). */
function healthyKustomizationSnapshot(s: Scenario): string {
  return writeFile(s.workspace, 'cluster.yaml', yamlDocs(
    kustomization({ attempted: `main@sha1:${s.c3}`, applied: `main@sha1:${s.c3}`, ready: 'True', since: new Date(Date.now() - 120_000).toISOString() }),
    // the workload runs the release's image: what names the bad commit when Flux itself is Ready
    deployment({ image: 'ghcr.io/stefanprodan/podinfo:6.1.0', state: 'available' }),
  ));
}

function assertNoToken(t: any, r: ActionResult): void {
  const outside = [r.stderr, r.summary, JSON.stringify(r.outputs), r.stdout.replace(`::add-mask::${TOKEN}`, '')].join('\n');
  t.false(outside.includes(TOKEN), 'the token appears outside its add-mask command');
  t.true(r.stdout.includes(`::add-mask::${TOKEN}`), 'the token is masked');
}

test.before(() => {
  if (!existsSync(DIST)) throw new Error('dist/action.js is missing: run node scripts/build-action.ts');
});

test('Flux githubdispatch HealthCheckFailed: reverts on the branch, outputs and summary say so', async (t) => {
  // rendered as the engine builds it, as the Action does by default
  const s = scenario({ render: true });
  const r = await runAction({ workspace: s.workspace, eventPath: eventFile(s, 'flux-kustomization-health-check-failed.json') });
  t.is(r.code, 0, r.stdout + r.stderr);
  t.is(r.outputs.verdict, 'failed');
  t.is(r.outputs.action, 'revert');
  t.is(r.outputs.target, 'podinfo-prod');
  t.is(r.outputs['bad-revision'], s.c3);
  t.is(r.outputs['last-known-good'], s.c2);
  const head = git(s.repo, 'rev-parse', 'main');
  t.is(r.outputs.commit, head);
  t.not(head, s.c4);
  t.is(git(s.repo, 'rev-parse', 'main~1'), s.c4, 'the revert sits on top of the branch');
  t.regex(git(s.repo, 'show', `main:${TARGET_PATH}kustomization.yaml`), /newTag: 6\.0\.0/);
  t.is(git(s.repo, 'show', 'main:apps/redis/values.yaml'), 'replicas: 3', 'unrelated later change kept');
  t.regex(git(s.repo, 'log', '-1', '--format=%B', 'main'), new RegExp(`Lastgood-Reverts: ${s.c3}`));
  t.is(r.outputs['pull-request-url'], '');
  t.deepEqual(JSON.parse(r.outputs.report!).targets.map((x: any) => [x.name, x.action]), [['podinfo-prod', 'revert']]);
  t.regex(r.summary, /^## lastgood: `podinfo-prod` FAILED \(analysis\) — reverted/m);
  // the event's and the cluster's words are quoted as code (revert/markup.ts)
  t.regex(r.summary, /\*\*Event:\*\* `Flux error event for Kustomization flux-system\/apps: HealthCheckFailed/);
  t.regex(r.summary, /\| `kustomize\.toolkit\.fluxcd\.io\/Kustomization flux-system\/apps` \| failed \| `HealthCheckFailed` \|/);
  t.true(r.summary.includes(`\`${s.c3.slice(0, 12)}\``));
  t.regex(r.stdout, /::notice title=lastgood%3A podinfo-prod::podinfo-prod failed: reverted by/);
  assertNoToken(t, r);
});

test('Flux info event (reconciled): healthy, nothing written', async (t) => {
  const s = scenario();
  const before = fingerprint(s.repo);
  const r = await runAction({ workspace: s.workspace, eventPath: eventFile(s, 'flux-kustomization-reconciled.json') });
  t.is(r.code, 0, r.stdout + r.stderr);
  t.is(r.outputs.verdict, 'healthy');
  t.is(r.outputs.action, 'none');
  t.is(r.outputs.commit, '');
  t.is(fingerprint(s.repo), before);
  t.regex(r.summary, /`podinfo-prod` HEALTHY/);
});

test('Argo CD sync failed (pull-request mode): the revert goes to the lastgood/<target>/<bad12> branch', async (t) => {
  const s = scenario({ mode: 'pull-request' });
  const r = await runAction({ workspace: s.workspace, eventPath: eventFile(s, 'argocd-sync-failed.json') });
  t.is(r.code, 0, r.stdout + r.stderr);
  t.is(r.outputs.verdict, 'failed');
  t.is(r.outputs.action, 'revert');
  t.is(r.outputs['bad-revision'], s.c3);
  const branch = `lastgood/podinfo-prod/${s.c3.slice(0, 12)}`;
  t.is(git(s.repo, 'rev-parse', branch), r.outputs.commit!);
  t.is(git(s.repo, 'rev-parse', 'main'), s.c4, 'main untouched in pull-request mode');
  t.regex(r.summary, /`argoproj\.io\/Application argocd\/podinfo-prod` \| failed \| `SyncFailed`/);
  t.regex(r.summary, /Event:\*\* `Argo CD notification for Application argocd\/podinfo-prod: health Healthy, sync OutOfSync, last sync Failed/);
});

test('Argo CD health Degraded, dry run: would revert, writes nothing, shows the diff', async (t) => {
  const s = scenario();
  const before = fingerprint(s.repo);
  const r = await runAction({ workspace: s.workspace, eventPath: eventFile(s, 'argocd-app-degraded.json'), with: { 'dry-run': 'true' } });
  t.is(r.code, 0, r.stdout + r.stderr);
  t.is(r.outputs.verdict, 'failed');
  t.is(r.outputs.action, 'revert');
  t.is(r.outputs['bad-revision'], s.c3);
  t.is(r.outputs.commit, '');
  t.is(fingerprint(s.repo), before);
  t.regex(r.summary, /would revert/);
  t.regex(r.summary, /```diff[\s\S]*-    newTag: 6\.1\.0[\s\S]*\+    newTag: 6\.0\.0/);
});

test('Flagger canary failed, event only: failed but no revision to revert → step fails (exit 1), nothing written', async (t) => {
  const s = scenario();
  const before = fingerprint(s.repo);
  const r = await runAction({ workspace: s.workspace, eventPath: eventFile(s, 'flagger-canary-failed.json') });
  t.is(r.code, 1, r.stdout + r.stderr);
  t.is(r.outputs.verdict, 'failed');
  t.is(r.outputs.action, 'alert');
  t.is(fingerprint(s.repo), before);
  t.regex(r.stdout, /::error title=lastgood%3A podinfo-prod::podinfo-prod failed and was not reverted: revert impossible: cannot tell which commit is bad/);
  t.regex(r.summary, /`flagger\.app\/Canary prod\/podinfo` \| failed \| `Failed` \| [^|]+ \| `Canary failed! Scaling down podinfo\.prod/);
  t.regex(r.summary, /not reverted/);
});

test('Flagger canary failed with a snapshot standing in for the cluster: the Kustomization names the release, reverted', async (t) => {
  const s = scenario();
  const r = await runAction({ workspace: s.workspace, eventPath: eventFile(s, 'flagger-canary-failed.json'), with: { snapshot: healthyKustomizationSnapshot(s) } });
  t.is(r.code, 0, r.stdout + r.stderr);
  t.is(r.outputs.action, 'revert');
  t.is(r.outputs['bad-revision'], s.c3);
  t.is(git(s.repo, 'rev-parse', 'main'), r.outputs.commit!);
  t.regex(git(s.repo, 'log', '-1', '--format=%B', 'main'), /Lastgood-Evidence: flagger\.app\/Canary prod\/podinfo state=failed reason=Failed/);
});

test('Alertmanager firing alert matched by labels (deployment, namespace): the alert is evidence, reverted', async (t) => {
  const s = scenario();
  const r = await runAction({ workspace: s.workspace, eventPath: eventFile(s, 'alertmanager-firing.json'), with: { snapshot: healthyKustomizationSnapshot(s) } });
  t.is(r.code, 0, r.stdout + r.stderr);
  t.is(r.outputs.verdict, 'failed');
  t.is(r.outputs.action, 'revert');
  t.is(r.outputs['bad-revision'], s.c3);
  t.regex(r.summary, /`lastgood\.dev\/Alert prod\/PodinfoHighErrorRate` \| failed \| `AlertFiring` \| [^|]+ \| `podinfo in prod answers 12% of requests with 5xx/);
  t.regex(git(s.repo, 'log', '-1', '--format=%B', 'main'), /Lastgood-Evidence: lastgood\.dev\/Alert prod\/PodinfoHighErrorRate state=failed reason=AlertFiring/);
});

test('Alertmanager alert that matches no target: a clear no-op (verdict none)', async (t) => {
  const s = scenario();
  const before = fingerprint(s.repo);
  const path = eventFile(s, 'alertmanager-firing.json', (e) => {
    for (const a of e.client_payload.alerts) a.labels.namespace = 'staging';
  });
  const r = await runAction({ workspace: s.workspace, eventPath: path });
  t.is(r.code, 0, r.stdout + r.stderr);
  t.is(r.outputs.verdict, 'none');
  t.is(r.outputs.action, 'none');
  t.is(fingerprint(s.repo), before);
  t.regex(r.summary, /## lastgood: nothing to do/);
  t.regex(r.summary, /no alert \(PodinfoHighErrorRate\) matches a configured target/);
});

test('an event for an object no target lists: no-op with verdict none, exit 0, nothing written', async (t) => {
  const s = scenario();
  const before = fingerprint(s.repo);
  const path = eventFile(s, 'flux-kustomization-health-check-failed.json', (e) => {
    e.action = 'Kustomization/infra.flux-system';
    e.client_payload.involvedObject.name = 'infra';
  });
  const r = await runAction({ workspace: s.workspace, eventPath: path });
  t.is(r.code, 0, r.stdout + r.stderr);
  t.is(r.outputs.verdict, 'none');
  t.is(r.outputs.action, 'none');
  t.is(r.outputs['bad-revision'], '');
  t.is(fingerprint(s.repo), before);
  t.regex(r.summary, /no configured target lists Kustomization flux-system\/infra/);
  t.regex(r.stdout, /nothing to do: no configured target lists Kustomization flux-system\/infra/);
});

test('a malformed payload: clear failure naming the file (exit 2), no outputs, nothing written', async (t) => {
  const s = scenario();
  const before = fingerprint(s.repo);
  const file = eventFile(s, 'malformed-flux-missing-reason.json');
  const r = await runAction({ workspace: s.workspace, eventPath: file });
  t.is(r.code, 2, r.stdout + r.stderr);
  t.regex(r.stdout, /::error title=lastgood,file=\.runner\/event\.json::.*event\.json: not a valid Flux notification-controller event: reason: /);
  t.deepEqual(r.outputs, {});
  t.is(fingerprint(s.repo), before);

  writeFileSync(file, '{"action": "Kustomization/apps.flux-system", "client_payload": {"involvedObject": ');
  const r2 = await runAction({ workspace: s.workspace, eventPath: file });
  t.is(r2.code, 2);
  t.regex(r2.stdout, /event\.json: the event payload is not JSON/);
  t.is(fingerprint(s.repo), before);

  writeFileSync(file, JSON.stringify({ action: 'deploy', client_payload: { ref: 'main' } }));
  const r3 = await runAction({ workspace: s.workspace, eventPath: file });
  t.is(r3.code, 2);
  t.regex(r3.stdout, /not an event lastgood understands \(repository_dispatch "deploy"\)/);
});

test('bad inputs fail up front (exit 2) and write nothing', async (t) => {
  const s = scenario();
  const before = fingerprint(s.repo);
  const event = eventFile(s, 'flux-kustomization-health-check-failed.json');
  const bad = [
    [{ mode: 'push' }, /input mode: "push" is not commit or pull-request/],
    [{ 'dry-run': 'maybe' }, /input dry-run: "maybe" is not true or false/],
    [{ wait: 'soon' }, /input wait: "soon" is not a duration/],
    [{ target: 'nope' }, /unknown target "nope"/],
    [{ config: 'missing.yaml' }, /missing\.yaml: cannot read the config/],
  ] as const;
  for (const [inputs, message] of bad) {
    const r = await runAction({ workspace: s.workspace, eventPath: event, with: inputs as Record<string, string> });
    t.is(r.code, 2, `${JSON.stringify(inputs)}: ${r.stdout}`);
    t.regex(r.stdout, message);
  }
  t.is(fingerprint(s.repo), before);
});

test('in-pipeline: no event (push workflow), a snapshot shows the failure: reverted', async (t) => {
  const s = scenario();
  const push = writeFile(s.workspace, '.runner/push.json', JSON.stringify({ ref: 'refs/heads/main', after: s.c4, commits: [] }));
  const snapshot = writeFile(s.workspace, 'cluster.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${s.c3}`, applied: `main@sha1:${s.c2}`, ready: 'False', since: new Date(Date.now() - 60_000).toISOString() })));
  const r = await runAction({ workspace: s.workspace, eventName: 'push', eventPath: push, with: { snapshot } });
  t.is(r.code, 0, r.stdout + r.stderr);
  t.is(r.outputs.action, 'revert');
  t.is(r.outputs['bad-revision'], s.c3);
  t.is(r.outputs['last-known-good'], s.c2);
  t.notRegex(r.summary, /Event:/);
});

test('in-pipeline with nothing to observe: clear failure (exit 2)', async (t) => {
  const s = scenario();
  const push = writeFile(s.workspace, '.runner/push.json', JSON.stringify({ ref: 'refs/heads/main' }));
  const r = await runAction({ workspace: s.workspace, eventName: 'push', eventPath: push });
  t.is(r.code, 2);
  t.regex(r.stdout, /nothing to observe/);
});

test('wait: polls until the target fails, then acts before the wait ends', async (t) => {
  const s = scenario({ resources: ['kustomization'] });
  const recent = () => new Date(Date.now() - 1000).toISOString();
  const snapshot = writeFile(s.workspace, 'cluster.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${s.c3}`, applied: `main@sha1:${s.c2}`, ready: 'Unknown', since: recent() })));
  const push = writeFile(s.workspace, '.runner/push.json', '{}');
  // a wait far longer than this test may take (ava's timeout): the step ends because the target failed, not because the wait ran out
  let said = '';
  const pending = runAction({ workspace: s.workspace, eventName: 'push', eventPath: push, with: { snapshot, wait: '1h', interval: '200ms' }, onStdout: (out) => (said = out) });
  await until('the Action waiting on a progressing target', () => /waiting \(.* of 1h\): podinfo-prod: progressing/.test(said));
  t.is(git(s.repo, 'rev-parse', 'main'), s.c4, 'nothing written while progressing');
  writeFileSync(snapshot, yamlDocs(kustomization({ attempted: `main@sha1:${s.c3}`, applied: `main@sha1:${s.c2}`, ready: 'False', since: recent() })));
  const r = await pending;
  t.is(r.code, 0, r.stdout + r.stderr);
  t.is(r.outputs.verdict, 'failed');
  t.is(r.outputs.action, 'revert');
  t.is(git(s.repo, 'rev-parse', 'main'), r.outputs.commit!);
  t.regex(r.summary, /Waited 1h for a verdict/);
});

test('wait: still progressing when the wait ends → stuck; the stuck policy (alert) fails the step', async (t) => {
  const s = scenario({ resources: ['kustomization'] });
  const before = fingerprint(s.repo);
  const snapshot = writeFile(s.workspace, 'cluster.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${s.c3}`, applied: `main@sha1:${s.c2}`, ready: 'Unknown', since: new Date().toISOString() })));
  const push = writeFile(s.workspace, '.runner/push.json', '{}');
  const r = await runAction({ workspace: s.workspace, eventName: 'push', eventPath: push, with: { snapshot, wait: '1s', interval: '200ms' } });
  t.is(r.code, 1, r.stdout + r.stderr);
  t.is(r.outputs.verdict, 'stuck');
  t.is(r.outputs.action, 'alert');
  t.true(r.ms >= 800, `took ${r.ms} ms`);
  t.regex(r.summary, /stuck: still .* after waiting 1s/);
  t.regex(r.stdout, /^waiting \(\d+s of 1s\): podinfo-prod: progressing: Kustomization flux-system\/apps/m, 'progress is shown while waiting');
  t.is(fingerprint(s.repo), before);
});

test('through the GitHub API (emulator): a revert pull request, found again by a second run', async (t) => {
  const s = scenario({ mode: 'pull-request', repo: '  url: https://github.com/acme/gitops\n  apiUrl: API_URL' });
  const emulator = await startGitHubEmulator({ bareRepo: s.repo, owner: 'acme', repo: 'gitops', token: TOKEN });
  t.teardown(() => emulator.close());
  const configFile = path.join(s.workspace, 'lastgood.yaml');
  writeFileSync(configFile, readFileSync(configFile, 'utf8').replace('API_URL', emulator.url));
  const event = eventFile(s, 'flux-kustomization-health-check-failed.json');
  const r = await runAction({ workspace: s.workspace, eventPath: event });
  t.is(r.code, 0, r.stdout + r.stderr);
  t.is(r.outputs.action, 'revert');
  t.is(emulator.pulls.length, 1);
  const pull = emulator.pulls[0]!;
  t.is(pull.head, `lastgood/podinfo-prod/${s.c3.slice(0, 12)}`);
  t.is(r.outputs['pull-request-number'], String(pull.number));
  t.regex(r.outputs['pull-request-url']!, new RegExp(`/pull/${pull.number}$`));
  t.regex(r.summary, new RegExp(`Pull request: ${r.outputs['pull-request-url']!.replace(/[.?]/g, '\\$&')}`));
  t.true(r.summary.includes(`https://github.com/acme/gitops/commit/${s.c3}`), 'commit links point at the repository on GitHub');
  t.is(git(s.repo, 'rev-parse', 'main'), s.c4, 'main untouched');
  t.deepEqual(emulator.violations, []);
  t.false(emulator.bodies.some((b) => b.includes(TOKEN)), 'the token is never sent in a body');
  assertNoToken(t, r);

  const again = await runAction({ workspace: s.workspace, eventPath: event });
  t.is(again.code, 0, again.stdout + again.stderr);
  t.is(emulator.pulls.length, 1, 'the second run finds the open pull request');
  t.is(again.outputs['pull-request-number'], String(pull.number));
  t.regex(again.summary, /already/);
});

/**
 * A minimal stand-in for the Kubernetes API (no Kubernetes emulator exists yet): discovery for
 * kustomize.toolkit.fluxcd.io/v1 and GET of one Kustomization, enough for @kubernetes/client-node's
 * KubernetesObjectApi.read. It proves the bundled client, the kubeconfig input and the polling.
 */
async function fakeKubeApi(object: () => object): Promise<{ url: string; requests: string[]; auth: Set<string>; close(): Promise<void> }> {
  const { createServer } = await import('node:http');
  const requests: string[] = [];
  const auth = new Set<string>();
  const server = createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    auth.add(String(req.headers.authorization));
    const send = (status: number, body: object) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const url = (req.url ?? '').split('?')[0];
    if (url === '/apis/kustomize.toolkit.fluxcd.io/v1') {
      return send(200, { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: 'kustomize.toolkit.fluxcd.io/v1', resources: [{ name: 'kustomizations', singularName: 'kustomization', namespaced: true, kind: 'Kustomization', verbs: ['get', 'list', 'watch'] }] });
    }
    if (url === '/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/flux-system/kustomizations/apps') return send(200, object());
    send(404, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404, message: `${url} not found` });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, requests, auth, close: () => new Promise((r) => server.close(() => r())) };
}

test('in-pipeline against a Kubernetes API (kubeconfig given inline): waits for the verdict, then reverts', async (t) => {
  const s = scenario({ resources: ['kustomization'] });
  const since = new Date(Date.now() - 1000).toISOString();
  let served = 0;
  // progressing for the first three reads, failed from the fourth: the Action must keep polling
  const api = await fakeKubeApi(() => kustomization({ attempted: `main@sha1:${s.c3}`, applied: `main@sha1:${s.c2}`, ready: ++served > 3 ? 'False' : 'Unknown', since }));
  t.teardown(() => api.close());
  const kubeToken = 'kube-token-0123456789abcdef';
  const kubeconfig = `apiVersion: v1
kind: Config
clusters: [{ name: test, cluster: { server: ${api.url}, insecure-skip-tls-verify: true } }]
users: [{ name: ci, user: { token: ${kubeToken} } }]
contexts: [{ name: test, context: { cluster: test, user: ci } }]
current-context: test
`;
  const push = writeFile(s.workspace, '.runner/push.json', '{}');
  const pending = runAction({ workspace: s.workspace, eventName: 'push', eventPath: push, with: { kubeconfig, wait: '30s', interval: '200ms' } });
  const r = await pending;
  t.is(r.code, 0, r.stdout + r.stderr);
  t.is(r.outputs.verdict, 'failed');
  t.is(r.outputs.action, 'revert');
  t.is(r.outputs['bad-revision'], s.c3);
  t.is(git(s.repo, 'rev-parse', 'main'), r.outputs.commit!);
  t.is(api.requests.filter((q) => q.endsWith('/kustomizations/apps')).length, 4, `polled: ${api.requests.join(', ')}`);
  t.deepEqual([...api.auth], [`Bearer ${kubeToken}`]);
  t.true(r.stdout.includes(`::add-mask::${kubeToken}`), 'the kubeconfig credentials are masked');
  t.false(r.stdout.includes('::add-mask::kind: Config'), 'and only them');
  t.false((r.stderr + r.summary).includes(kubeToken));
});
