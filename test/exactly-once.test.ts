import test from 'ava';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { lastgoodEngine } from './support/engine-run.ts';
import { commit, git, makeRepo, tempDir, writeFile } from './support/git.ts';
import { startGitHubEmulator, type Fault } from './support/github-emulator.ts';
import { webhookReceiver } from './support/webhook.ts';
import { startGitHttpServer } from './support/git-http-server.ts';
import { kustomization, yamlDocs } from './support/objects.ts';
import { backend, cluster, config, configText, evaluations, failCanary, gitopsRepo, startController, until } from './support/controller-scenario.ts';
import { RENDER } from './support/render-off.ts';

/**
 * Issue 19 class 1: a write whose answer was lost is still ours. Faults are injected after the
 * server applied the write (a 502 from a proxy, a secondary rate limit reported after the
 * mutation ran, a connection dropped after git finished): the revert is recognised by what it is
 * (its parent and trailers, its pull request's branch and marker), reported as this run's, and
 * every side effect happens exactly once across the retry and later reruns: labels, reviewers,
 * assignees, the notification, a superseded pull request's comment, the deployment record.
 * Through the engine as the CLI calls it (support/engine-run.ts), against the GitHub emulator and
 * git's own http-backend.
 */

const TOKEN = 'ghs_exactlyOnceToken0123456789abcdef';
const P = 'apps/podinfo/overlays/prod/';
const NOW = ['--now', '2026-11-01T12:05:00Z'];


function gitops() {
  const work = makeRepo();
  const good = commit(work, { [`${P}values.yaml`]: 'image:\n  tag: 1.0.0\n', 'apps/other/x.yaml': 'a: 1\n' }, 'podinfo 1.0.0');
  const bad = commit(work, { [`${P}values.yaml`]: 'image:\n  tag: 1.1.0\n' }, 'podinfo 1.1.0');
  const later = commit(work, { 'apps/other/x.yaml': 'a: 2\n' }, 'other: a=2');
  const bare = path.join(tempDir('lastgood-once-'), 'gitops.git');
  git(work, 'clone', '-q', '--bare', work, bare);
  return { bare, good, bad, later };
}

async function githubSetup(t: { teardown(fn: () => unknown): void }, mode: 'commit' | 'pull-request') {
  const repo = gitops();
  const emulator = await startGitHubEmulator({ bareRepo: repo.bare, owner: 'acme', repo: 'gitops', token: TOKEN, labels: ['lastgood'] });
  t.teardown(() => emulator.close());
  const hook = await webhookReceiver(t);
  const dir = tempDir();
  const config = writeFile(dir, 'lastgood.yaml', `repo:
  url: https://github.com/acme/gitops
  apiUrl: ${emulator.url}
${RENDER()}defaults: { mode: ${mode}, confirmations: 1 }
pullRequest: { labels: [lastgood, rollback], reviewers: [alice], assignees: [bob] }
targets:
  - name: podinfo-prod
    paths: [${P}]
    resources:
      - { apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: apps }
`);
  const snapshot = writeFile(dir, 'cluster.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${repo.bad}`, applied: `main@sha1:${repo.good}`, ready: 'False' })));
  const run = async () => {
    const r = await lastgoodEngine(['run', ...NOW, '--config', config, '--snapshot', snapshot, '--json'], { env: { GITHUB_TOKEN: TOKEN, LASTGOOD_WEBHOOK_URL: hook.url } });
    return { ...r, outcome: r.stdout ? JSON.parse(r.stdout).targets[0] : undefined };
  };
  return { ...repo, emulator, hook, config, run };
}

const lostAnswers: Array<[string, Omit<Fault, 'field'>]> = [
  ['a 502 after it was applied', { status: 502, afterApply: true }],
  ['a secondary rate limit reported after it ran', { status: 403, secondaryRateLimit: true, retryAfter: 0, afterApply: true }],
];

const commitsOnMain = (bare: string, since: string) => git(bare, 'rev-list', `${since}..main`).split('\n').filter(Boolean);

for (const [name, fault] of lostAnswers) {
  test(`GitHub, commit mode, ${name}: the revert is this run's (created, no "branch moved"), announced once, and a rerun writes and sends nothing`, async (t) => {
    const s = await githubSetup(t, 'commit');
    s.emulator.inject({ ...fault, field: 'createCommitOnBranch' });
    const r = await s.run();
    t.is(r.code, 0, r.stderr + r.stdout);
    t.like(r.outcome, { action: 'revert', created: true });
    const made = commitsOnMain(s.bare, s.later);
    t.is(made.length, 1, 'one revert');
    t.is(r.outcome.commit, made[0]);
    t.notRegex(r.stderr, /branch moved|planning again/);
    t.regex(r.stderr + JSON.stringify(r.outcome.notes ?? []), /answer was lost/);
    t.deepEqual(s.hook.received.map((n) => `${n.event} ${n.commit}`), [`reverted ${made[0]}`], 'announced once');
    const logged = s.emulator.log.length;
    const again = await s.run();
    t.is(again.code, 0, again.stderr);
    t.like(again.outcome, { action: 'revert', created: false, commit: made[0] });
    t.is(commitsOnMain(s.bare, s.later).length, 1);
    t.is(s.hook.received.length, 1, 'not announced again');
    // the claim it lost (the notification was claimed by the first run) wrote nothing: no blob, no ref
    t.deepEqual(s.emulator.log.slice(logged).filter((r) => r.write).map((r) => `${r.method} ${r.path}`), [], 'a rerun writes nothing');
    t.deepEqual(s.emulator.violations, []);
  });

  test(`GitHub, pull-request mode, ${name}: one pull request, labelled, reviewers and assignees requested, announced once; a rerun adds nothing`, async (t) => {
    const s = await githubSetup(t, 'pull-request');
    s.emulator.inject({ ...fault, field: 'createPullRequest' });
    const r = await s.run();
    t.is(r.code, 0, r.stderr + r.stdout);
    t.like(r.outcome, { action: 'revert', created: true });
    t.is(s.emulator.pulls.length, 1);
    const pull = s.emulator.pulls[0]!;
    t.deepEqual(pull.labels.sort(), ['lastgood', 'rollback']);
    t.deepEqual(pull.reviewers, ['alice']);
    t.deepEqual(pull.assignees, ['bob']);
    t.deepEqual(s.hook.received.map((n) => n.event), ['reverted']);
    const again = await s.run();
    t.is(again.code, 0, again.stderr);
    t.like(again.outcome, { action: 'revert', created: false, pullRequest: r.outcome.pullRequest });
    t.is(s.emulator.pulls.length, 1);
    t.deepEqual(pull.reviewers, ['alice'], 'not requested twice');
    t.is(s.hook.received.length, 1, 'not announced again');
    t.deepEqual(s.emulator.violations, []);
  });
}

test('GitHub, pull-request mode: a run that dies after opening the pull request (its labels, reviewers and notification lost) is finished by the next run, once', async (t) => {
  const s = await githubSetup(t, 'pull-request');
  // labelling fails on every attempt of the client (1 + 3 retries): the run ends in an error after the pull request exists
  s.emulator.inject({ status: 502, times: 4, match: (method, p) => method === 'POST' && /\/issues\/\d+\/labels$/.test(p) });
  const first = await s.run();
  t.is(first.code, 3, first.stderr + first.stdout);
  t.is(s.emulator.pulls.length, 1);
  t.deepEqual(s.emulator.pulls[0]!.reviewers, []);
  t.deepEqual(s.hook.received.map((n) => n.event), ['revert-failed'], 'what happened was said');
  const again = await s.run();
  t.is(again.code, 0, again.stderr + again.stdout);
  t.like(again.outcome, { action: 'revert', created: false });
  const pull = s.emulator.pulls[0]!;
  t.deepEqual(pull.labels.sort(), ['lastgood', 'rollback']);
  t.deepEqual(pull.reviewers, ['alice']);
  t.deepEqual(pull.assignees, ['bob']);
  t.deepEqual(s.hook.received.map((n) => n.event), ['revert-failed', 'reverted'], 'the revert announced by the run that finished it');
  const third = await s.run();
  t.is(third.code, 0, third.stderr);
  t.is(s.hook.received.length, 2, 'once');
  t.deepEqual(s.emulator.violations, []);
});

test('GitHub: the superseded pull request\'s comment, whose answer was lost, is posted once; the pull request is closed', async (t) => {
  const s = await githubSetup(t, 'pull-request');
  t.is((await s.run()).code, 0);
  const dir = path.dirname(s.config);
  const healthy = writeFile(dir, 'healthy.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${s.later}`, applied: `main@sha1:${s.later}`, ready: 'True' })));
  s.emulator.inject({ status: 502, afterApply: true, match: (method, p) => method === 'POST' && /\/issues\/\d+\/comments$/.test(p) });
  const r = await lastgoodEngine(['run', ...NOW, '--config', s.config, '--snapshot', healthy, '--json'], { env: { GITHUB_TOKEN: TOKEN } });
  t.is(r.code, 0, r.stderr + r.stdout);
  const pull = s.emulator.pulls[0]!;
  t.is(pull.state, 'closed');
  t.is(pull.comments.filter((c) => /no longer needed/.test(c.body)).length, 1, pull.comments.map((c) => c.body).join('\n'));
  t.deepEqual(s.emulator.violations, []);
});

test('GitHub: a deployment record whose answers were lost is one deployment with one status', async (t) => {
  const repo = gitops();
  const emulator = await startGitHubEmulator({ bareRepo: repo.bare, owner: 'acme', repo: 'gitops', token: TOKEN });
  t.teardown(() => emulator.close());
  const dir = tempDir();
  const config = writeFile(dir, 'lastgood.yaml', `repo:\n  url: https://github.com/acme/gitops\n  apiUrl: ${emulator.url}\n${RENDER()}targets:\n  - name: podinfo-prod\n    paths: [${P}]\n    resources:\n      - { apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: apps }\n`);
  const healthy = writeFile(dir, 'healthy.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${repo.later}`, applied: `main@sha1:${repo.later}`, ready: 'True', since: '2026-11-01T11:00:00Z' })));
  emulator.inject({ status: 502, afterApply: true, match: (method, p) => method === 'POST' && /\/deployments$/.test(p) });
  emulator.inject({ status: 502, afterApply: true, match: (method, p) => method === 'POST' && /\/deployments\/\d+\/statuses$/.test(p) });
  const r = await lastgoodEngine(['check', ...NOW, '--config', config, '--snapshot', healthy, '--record', '--json'], { env: { GITHUB_TOKEN: TOKEN } });
  t.is(r.code, 0, r.stderr + r.stdout);
  t.regex(JSON.parse(r.stdout).targets[0].reason, /recorded [0-9a-f]{12} as verified last-known-good/);
  t.is(emulator.deployments.length, 1);
  t.deepEqual(emulator.deployments[0]!.statuses.map((x) => x.state), ['success']);
  t.deepEqual(emulator.violations, []);
});

/** The repository behind git's own http-backend, commit mode, a webhook; `run` is one `lastgood run --json`. */
async function httpSetup(t: { teardown(fn: () => unknown): void }) {
  const repo = gitops();
  const server = await startGitHttpServer({ root: path.dirname(repo.bare) });
  t.teardown(() => server.close());
  const hook = await webhookReceiver(t);
  const dir = tempDir();
  const config = writeFile(dir, 'lastgood.yaml', `repo:\n  url: ${server.url}/${path.basename(repo.bare)}\n  insecure: true\n${RENDER()}defaults: { mode: commit, confirmations: 1 }\ntargets:\n  - name: podinfo-prod\n    paths: [${P}]\n    resources:\n      - { apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: apps }\n`);
  const snapshot = writeFile(dir, 'cluster.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${repo.bad}`, applied: `main@sha1:${repo.good}`, ready: 'False' })));
  const run = async () => {
    const r = await lastgoodEngine(['run', ...NOW, '--config', config, '--snapshot', snapshot, '--json'], { env: { LASTGOOD_WEBHOOK_URL: hook.url } });
    return { ...r, outcome: JSON.parse(r.stdout).targets[0] };
  };
  return { repo, server, hook, run };
}

test('git over HTTPS: a push whose connection dropped after git stored it is this run\'s revert, announced once; the notes claim too', async (t) => {
  const { repo, server, hook, run } = await httpSetup(t);
  // the branch push, then the notes push of the claim: both land, neither answer arrives
  server.inject({ service: 'git-receive-pack', method: 'POST', drop: 'after', times: 2 });
  const r = await run();
  t.is(r.code, 0, r.stderr + r.stdout);
  t.like(r.outcome, { action: 'revert', created: true });
  t.is(commitsOnMain(repo.bare, repo.later).length, 1);
  t.deepEqual(hook.received.map((n) => n.event), ['reverted']);
  t.regex(git(repo.bare, 'notes', '--ref=lastgood', 'show', repo.bad), /^lastgood done target=podinfo-prod effect=notified revert=[0-9a-f]{40} at=/);
  const again = await run();
  t.like(again.outcome, { action: 'revert', created: false });
  t.is(hook.received.length, 1, 'not announced again');
});

test('git over HTTPS: the notes ref locked by another writer at the claim\'s push (git: cannot lock ref) is a lost race, tried again: announced once, claimed in the notes, a rerun stays quiet', async (t) => {
  const { repo, server, hook, run } = await httpSetup(t);
  // another writer holds git's lock on the notes ref while the claim is pushed (another replica in
  // the middle of its own update, which then fails: the ref is left as it was); the lock is gone by
  // the next request. The branch push before it goes through untouched.
  const lock = path.join(repo.bare, 'refs', 'notes', 'lastgood.lock');
  server.inject({ service: 'git-receive-pack', method: 'POST' });
  server.inject({
    service: 'git-receive-pack', method: 'POST',
    before: async () => {
      mkdirSync(path.dirname(lock), { recursive: true });
      writeFileSync(lock, '');
      server.inject({ before: async () => rmSync(lock) });
    },
  });
  const r = await run();
  t.is(r.code, 0, r.stderr + r.stdout);
  t.like(r.outcome, { action: 'revert', created: true });
  t.true(server.log.some((x) => x.fault && x.service === 'git-receive-pack' && x.method === 'POST' && x.pushCommands?.some((c) => c.endsWith('refs/notes/lastgood'))), 'the locked push was the claim\'s');
  t.deepEqual(hook.received.map((n) => n.event), ['reverted']);
  t.regex(git(repo.bare, 'notes', '--ref=lastgood', 'show', repo.bad), /^lastgood done target=podinfo-prod effect=notified revert=[0-9a-f]{40} at=/);
  const again = await run();
  t.like(again.outcome, { action: 'revert', created: false });
  t.is(hook.received.length, 1, 'not announced again');
});

test('a revert found made by a person is not announced as lastgood\'s', async (t) => {
  const repo = makeRepo();
  const good = commit(repo, { [`${P}values.yaml`]: 'image:\n  tag: 1.0.0\n' }, 'podinfo 1.0.0');
  const bad = commit(repo, { [`${P}values.yaml`]: 'image:\n  tag: 1.1.0\n' }, 'podinfo 1.1.0');
  git(repo, 'revert', '--no-edit', bad);
  const hook = await webhookReceiver(t);
  const dir = tempDir();
  const config = writeFile(dir, 'lastgood.yaml', `repo:\n  url: ${repo}\n${RENDER()}defaults: { mode: commit, confirmations: 1 }\ntargets:\n  - name: podinfo-prod\n    paths: [${P}]\n    resources:\n      - { apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: apps }\n`);
  const snapshot = writeFile(dir, 'cluster.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${bad}`, applied: `main@sha1:${good}`, ready: 'False' })));
  const r = await lastgoodEngine(['run', ...NOW, '--config', config, '--snapshot', snapshot, '--json'], { env: { LASTGOOD_WEBHOOK_URL: hook.url } });
  t.is(r.code, 0, r.stderr + r.stdout);
  t.is(JSON.parse(r.stdout).targets[0].created, false);
  t.deepEqual(hook.received, []);
});


test('the controller, GitHub, the pull request\'s answer lost: the revert is its own, and its Event is written once', async (t) => {
  const repo = gitopsRepo();
  const kube = await cluster(repo);
  t.teardown(() => kube.close());
  const be = await backend('github', repo);
  t.teardown(() => be.close());
  be.github!.inject({ status: 502, afterApply: true, field: 'createPullRequest' });
  const cfg = config(configText({ url: be.url, apiUrl: be.apiUrl!, mode: 'pull-request' }));
  const { seen, onEvaluated } = evaluations();
  const { controller, acted } = await startController(kube, cfg, be.open(), { onEvaluated });
  t.teardown(() => controller.stop());
  await until('ready and leading', () => controller.ready && controller.isLeader);
  failCanary(kube);
  const outcome = await until('the revert', () => acted[0]);
  t.like(outcome, { action: 'revert', created: true });
  t.is(be.github!.pulls.length, 1);
  await until('the Event', () => kube.events().length > 0);
  t.like(kube.events()[0], { reason: 'RevertPullRequestOpened' });
  const before = acted.length;
  const observed = seen.length;
  failCanary(kube);
  await until('the change observed', () => seen.length > observed);
  await controller.idle();
  t.is(acted.length, before, 'acted once');
  t.is(kube.events().length, 1);
});
