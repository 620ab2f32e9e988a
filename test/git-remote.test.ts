import test from 'ava';
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { lastgood } from './support/cli.ts';
import { lastgoodEngine } from './support/engine-run.ts';
import { commit, commitMany, git, makeRepo, tempDir, writeFile } from './support/git.ts';
import { startGitHttpServer, type GitHttpServer } from './support/git-http-server.ts';
import { kustomization, yamlDocs } from './support/objects.ts';
import { RACE_RUNS } from './support/races.ts';
import { RENDER } from './support/render-off.ts';

/**
 * The git backend end to end (issue 12): the CLI as a user runs it, against git's own
 * `git http-backend` over real bare repositories on 127.0.0.1.
 */

const NOW = ['--now', '2026-11-01T12:05:00Z'];
const TOKEN = 'glpat-RemoteTestToken0123456789';
const P = 'apps/podinfo/overlays/prod/';
const values = (tag: string, replicas = 2) => `# prod values\nimage:\n  tag: ${tag}\nreplicas: ${replicas}\n`;

const execFileAsync = promisify(execFile);
/** Native git against the in-process server must not block the event loop. */
async function nativeGit(cwd: string, ...args: string[]): Promise<string> {
  const env = { ...process.env, GIT_TERMINAL_PROMPT: '0', GIT_CONFIG_NOSYSTEM: '1', GIT_AUTHOR_NAME: 'Other', GIT_AUTHOR_EMAIL: 'other@example.com', GIT_COMMITTER_NAME: 'Other', GIT_COMMITTER_EMAIL: 'other@example.com' };
  return (await execFileAsync('git', ['-c', `http.extraHeader=Authorization: Bearer ${TOKEN}`, ...args], { cwd, env, encoding: 'utf8' })).stdout.trim();
}

interface Fixture {
  bare: string;
  good: string;
  bad: string;
  dir: string;
  config: string;
  snapshot: string;
  server: GitHttpServer;
  url: string;
  env: Record<string, string>;
}

/** A config repository with some history, the bad release on top, served over smart HTTP with a token. */
async function fixture(t: { teardown(fn: () => unknown): void }, opts: { mode?: 'commit' | 'pull-request'; extra?: string; history?: number; url?: (u: string) => string; allowFilter?: boolean; protocol?: 0 | 2; render?: boolean } = {}): Promise<Fixture> {
  const work = makeRepo();
  commitMany(work, Array.from({ length: opts.history ?? 3 }, (_, i) => ({ files: { [`docs/note-${i % 5}.md`]: `note ${i}\n`, 'apps/other/x.yaml': `x: ${i}\n` }, message: `housekeeping ${i}` })));
  const good = commit(work, { [`${P}values.yaml`]: values('1.0.0'), [`${P}kustomization.yaml`]: 'resources: [values.yaml]\n' }, 'podinfo 1.0.0');
  commit(work, { 'apps/other/x.yaml': 'x: later\n' }, 'other app');
  const bad = commit(work, { [`${P}values.yaml`]: values('1.1.0') }, 'podinfo 1.1.0');
  const root = tempDir('lastgood-remote-root-');
  const bare = path.join(root, 'gitops.git');
  git(root, 'clone', '-q', '--bare', work, bare);
  const server = await startGitHttpServer({ root, token: TOKEN, ...(opts.allowFilter === false ? { allowFilter: false } : {}), ...(opts.protocol !== undefined ? { protocol: opts.protocol } : {}) });
  t.teardown(() => server.close());
  const url = opts.url ? opts.url(`${server.url}/gitops.git`) : `${server.url}/gitops.git`;
  const dir = tempDir('lastgood-remote-cfg-');
  const config = writeFile(dir, 'lastgood.yaml', `repo:
  url: ${url}
  branch: main
  insecure: true
  auth: { tokenEnv: LASTGOOD_GIT_TOKEN }
${opts.extra ?? ''}${RENDER(opts.render)}defaults: { mode: ${opts.mode ?? 'commit'}, confirmations: 1 }
targets:
  - name: podinfo
    paths: [${P}]
    resources:
      - { apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: apps }
`);
  const snapshot = writeFile(dir, 'cluster.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${bad}`, applied: `main@sha1:${good}`, ready: 'False' })));
  return { bare, good, bad, dir, config, snapshot, server, url, env: { LASTGOOD_GIT_TOKEN: TOKEN } };
}

/** `lastgood run --json` through the engine in this process (support/engine-run.ts): what the backend does is the subject */
const run = (f: Fixture, extra: string[] = [], env: Record<string, string> = {}) => lastgoodEngine(['run', ...NOW, '--config', f.config, '--snapshot', f.snapshot, '--json', ...extra], { env: { ...f.env, ...env } });
/** the spawned CLI, where the door is part of the subject: processes racing, what it prints of a credential or a refusal */
const runCli = (f: Fixture, extra: string[] = [], env: Record<string, string> = {}) => lastgood(['run', ...NOW, '--config', f.config, '--snapshot', f.snapshot, '--json', ...extra], { env: { ...f.env, ...env } });
/** lastgood's pushes (native git's, from the tests' other clones, are left out) */
const pushes = (s: GitHttpServer) => s.log.filter((r) => r.service === 'git-receive-pack' && r.method === 'POST' && r.agent.includes('lastgood'));
const fetches = (s: GitHttpServer) => s.log.filter((r) => r.command === 'fetch' && r.agent.includes('lastgood'));
const allObjects = (bare: string) => git(bare, 'cat-file', '--batch-all-objects', '--batch-check=%(objectname)').split('\n');

test('cold revert over smart HTTP: fetches shallow without blobs, pushes only the new objects', async (t) => {
  // rendered as the engine builds it: the render's reads go through the same shallow, blob-less mirror
  const f = await fixture(t, { history: 80, render: true });
  const before = allObjects(f.bare);
  const r = await run(f);
  t.is(r.code, 0, r.stderr + r.stdout);
  const out = JSON.parse(r.stdout) as { targets: Array<{ action: string; commit: string; created: boolean; bad: string[]; lastKnownGood: string }> };
  const [target] = out.targets;
  t.is(target!.action, 'revert');
  t.true(target!.created);
  t.deepEqual(target!.bad, [f.bad]);
  t.is(git(f.bare, 'rev-parse', 'main'), target!.commit);
  t.is(git(f.bare, 'rev-parse', 'main^'), f.bad);
  t.is(git(f.bare, 'show', `main:${P}values.yaml`), values('1.0.0').trim());
  t.regex(git(f.bare, 'log', '-1', '--format=%B', 'main'), new RegExp(`Lastgood-Reverts: ${f.bad}`));
  git(f.bare, 'fsck', '--strict');
  // the fetches asked for partial clones, cut at a depth; the push carried the commit, the trees on the path, the new blob
  t.true(fetches(f.server).length >= 1);
  const [push] = pushes(f.server);
  t.truthy(push);
  t.deepEqual(push!.pushCommands, [`${f.bad} ${target!.commit} refs/heads/main`]);
  // exactly the objects the server did not have (git's own count): here the commit alone, since
  // the restored tree is the tree before the bad commit
  t.is(push!.pushedObjects, allObjects(f.bare).filter((o) => !before.includes(o)).length);
  t.is(push!.pushedObjects, 1);
  t.is(pushes(f.server).length, 1);
  t.false(r.stdout.includes(TOKEN) || r.stderr.includes(TOKEN));
});

test('a server without partial clone, or speaking only protocol version 0: a plain shallow fetch, the same revert', async (t) => {
  for (const server of [{ allowFilter: false }, { protocol: 0 as const }]) {
    const f = await fixture(t, { ...server, history: 60 });
    const r = await run(f);
    t.is(r.code, 0, r.stderr + r.stdout);
    t.is(git(f.bare, 'show', `main:${P}values.yaml`), values('1.0.0').trim());
    t.is(git(f.bare, 'rev-parse', 'main^'), f.bad);
  }
});

test('warm mirror (repo.cacheDir): the second run fetches only what is new', async (t) => {
  const cache = tempDir('lastgood-remote-cache-');
  const f = await fixture(t, { history: 40, extra: `  cacheDir: ${cache}\n` });
  const first = await run(f);
  t.is(first.code, 0, first.stderr + first.stdout);
  const mirrors = readdirSync(cache).filter((n) => n.endsWith('.git'));
  t.is(mirrors.length, 1, 'one mirror per repository');
  const coldBytes = fetches(f.server).reduce((n, r) => n + r.bytesOut, 0);

  // someone pushes more, then the same failure is seen again: the revert is found, nothing is written
  const other = path.join(tempDir('lastgood-remote-other-'), 'clone');
  await nativeGit(path.dirname(other), 'clone', '-q', f.url, other);
  commit(other, { 'apps/other/y.yaml': 'y: 1\n' }, 'another app');
  await nativeGit(other, 'push', '-q', 'origin', 'main');
  const before = f.server.log.length;
  const second = await run(f);
  t.is(second.code, 0, second.stderr + second.stdout);
  const [target] = (JSON.parse(second.stdout) as { targets: Array<{ created: boolean }> }).targets;
  t.false(target!.created, 'the first run\'s revert is found');
  const warm = fetches(f.server).filter((r) => f.server.log.indexOf(r) >= before);
  t.true(warm.length >= 1 && warm.length <= 2, `${warm.length} fetches`);
  const warmBytes = warm.reduce((n, r) => n + r.bytesOut, 0);
  t.true(warmBytes * 4 < coldBytes, `warm fetch ${warmBytes} bytes, cold ${coldBytes}`);
  t.is(pushes(f.server).length, 1, 'no second push');
});

test('check --record pushes a verified note; lkg reads it back; a concurrent note is merged, not lost', async (t) => {
  const f = await fixture(t);
  const healthy = writeFile(f.dir, 'healthy.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${f.good}`, applied: `main@sha1:${f.good}`, ready: 'True', since: '2026-11-01T11:50:00Z' })));
  // someone else records a note on another commit between our read and our push
  const other = path.join(tempDir('lastgood-remote-notes-'), 'clone');
  await nativeGit(path.dirname(other), 'clone', '-q', f.url, other);
  f.server.inject({
    service: 'git-receive-pack',
    method: 'POST',
    before: async () => {
      await nativeGit(other, 'notes', '--ref=lastgood', 'add', '-m', 'lastgood verified target=other at=2026-11-01T11:00:00Z evidence=by hand', 'HEAD~1');
      await nativeGit(other, 'push', '-q', 'origin', 'refs/notes/lastgood');
    },
  });
  const rec = await lastgoodEngine(['check', '--config', f.config, '--snapshot', healthy, '--record', '--now', '2026-11-01T12:00:00Z', '--json'], { env: f.env });
  t.is(rec.code, 0, rec.stderr + rec.stdout);
  const notes = git(f.bare, 'notes', '--ref=lastgood', 'list');
  t.is(notes.split('\n').length, 2, notes);
  t.regex(git(f.bare, 'notes', '--ref=lastgood', 'show', f.good), /lastgood verified target=podinfo/);
  const lkg = await lastgood(['lkg', '--config', f.config, '--json'], { env: f.env });
  t.is(lkg.code, 0, lkg.stderr);
  t.regex(lkg.stdout, new RegExp(f.good));
  // the revert then says its last-known-good was verified
  const r = await run(f);
  t.is(r.code, 0, r.stderr + r.stdout);
  t.regex(git(f.bare, 'log', '-1', '--format=%B', 'main'), /verified/i);
});

test('pull-request mode pushes lastgood/<target>/<bad12> once, prints where to open the request, and a second run finds it', async (t) => {
  const f = await fixture(t, { mode: 'pull-request' });
  const r = await run(f, [], {});
  t.is(r.code, 0, r.stderr + r.stdout);
  const branch = `lastgood/podinfo/${f.bad.slice(0, 12)}`;
  const [target] = (JSON.parse(r.stdout) as { targets: Array<{ branch: string; commit: string; created: boolean; notes?: string[] }> }).targets;
  t.is(target!.branch, branch);
  t.true(target!.created);
  t.is(git(f.bare, 'rev-parse', `refs/heads/${branch}`), target!.commit);
  t.is(git(f.bare, 'rev-parse', 'main'), f.bad, 'the branch under review is not touched');
  t.is(git(f.bare, 'show', `${branch}:${P}values.yaml`), values('1.0.0').trim());
  t.true(target!.notes?.includes(`pushed ${branch}; open a merge request from it into main (set repo.provider for lastgood to open it)`), JSON.stringify(target!.notes));
  const again = await run(f);
  t.is(again.code, 0, again.stderr + again.stdout);
  const [second] = (JSON.parse(again.stdout) as { targets: Array<{ commit: string; created: boolean }> }).targets;
  t.false(second!.created);
  t.is(second!.commit, target!.commit);
  t.is(pushes(f.server).length, 1, 'one push in all');
});

test('pull-request mode: when main moved, a second run moves the review branch to the new plan, from the value it read', async (t) => {
  const f = await fixture(t, { mode: 'pull-request' });
  const first = await run(f);
  t.is(first.code, 0, first.stderr + first.stdout);
  const branch = `lastgood/podinfo/${f.bad.slice(0, 12)}`;
  const before = git(f.bare, 'rev-parse', `refs/heads/${branch}`);
  const other = path.join(tempDir('lastgood-remote-pr-'), 'clone');
  await nativeGit(path.dirname(other), 'clone', '-q', f.url, other);
  const moved = commit(other, { 'apps/other/w.yaml': 'w: 1\n' }, 'another app, meanwhile');
  await nativeGit(other, 'push', '-q', 'origin', 'main');
  const second = await run(f);
  t.is(second.code, 0, second.stderr + second.stdout);
  const after = git(f.bare, 'rev-parse', `refs/heads/${branch}`);
  t.not(after, before);
  t.is(git(f.bare, 'rev-parse', `${branch}^`), moved, 'the new plan is made on the new head');
  const push = pushes(f.server).at(-1)!;
  t.deepEqual(push.pushCommands, [`${before} ${after} refs/heads/${branch}`], 'moved from the value it read, never forced');
});

test(`${RACE_RUNS} concurrent runs against the same failure make exactly one revert commit (half of them sharing one cacheDir)`, async (t) => {
  const cache = tempDir('lastgood-remote-shared-');
  const f = await fixture(t);
  const shared = { ...f, config: writeFile(f.dir, 'shared.yaml', readFileSync(f.config, 'utf8').replace('  insecure: true\n', `  insecure: true\n  cacheDir: ${cache}\n`)) };
  const results = await Promise.all(Array.from({ length: RACE_RUNS }, (_, i) => runCli(i % 2 ? shared : f)));
  for (const r of results) t.is(r.code, 0, r.stderr + r.stdout);
  const log = git(f.bare, 'log', '--format=%H %s', `${f.bad}..main`).split('\n').filter(Boolean);
  t.is(log.length, 1, log.join('\n'));
  const created = results.filter((r) => (JSON.parse(r.stdout) as { targets: Array<{ created: boolean }> }).targets[0]!.created);
  t.is(created.length, 1);
  git(f.bare, 'fsck', '--strict');
  const [mirror] = readdirSync(cache).filter((n) => n.endsWith('.git'));
  git(path.join(cache, mirror!), 'fsck', '--connectivity-only');
});

test('a foreign commit pushed while lastgood pushes survives: the revert is planned again on top of it', async (t) => {
  const f = await fixture(t);
  const other = path.join(tempDir('lastgood-remote-race-'), 'clone');
  await nativeGit(path.dirname(other), 'clone', '-q', f.url, other);
  let foreign = '';
  f.server.inject({
    service: 'git-receive-pack',
    method: 'POST',
    before: async () => {
      foreign = commit(other, { 'apps/other/z.yaml': 'z: 1\n' }, 'someone else, meanwhile');
      await nativeGit(other, 'push', '-q', 'origin', 'main');
    },
  });
  const r = await run(f);
  t.is(r.code, 0, r.stderr + r.stdout);
  t.is(git(f.bare, 'rev-parse', 'main^'), foreign, 'the revert lands on top of the foreign commit');
  t.is(git(f.bare, 'show', 'main:apps/other/z.yaml'), 'z: 1');
  t.is(git(f.bare, 'show', `main:${P}values.yaml`), values('1.0.0').trim());
  t.is(pushes(f.server).length, 2, 'the first push was refused by the server, the second landed');
});

test('wrong credentials: exit 3, the permission named, no secret anywhere', async (t) => {
  const f = await fixture(t);
  const wrong = 'glpat-WrongTokenValue987654321';
  const r = await runCli(f, [], { LASTGOOD_GIT_TOKEN: wrong });
  t.is(r.code, 3, r.stderr + r.stdout);
  t.regex(r.stderr + r.stdout, /401/);
  t.regex(r.stderr + r.stdout, /read access to the repository/);
  t.regex(r.stderr + r.stdout, /environment variable LASTGOOD_GIT_TOKEN/);
  for (const secret of [wrong, TOKEN, Buffer.from(`oauth2:${wrong}`).toString('base64'), Buffer.from(`lastgood:${wrong}`).toString('base64')]) {
    t.false((r.stdout + r.stderr).includes(secret), 'no credential in the output');
  }
});

test('a push refused with 403 says that write access is missing', async (t) => {
  const f = await fixture(t);
  f.server.inject({ service: 'git-receive-pack', method: 'GET', status: 403 });
  const r = await runCli(f);
  t.is(r.code, 3, r.stderr + r.stdout);
  t.regex(r.stderr + r.stdout, /denied write access to the repository \(push\) \(403\)/);
  t.is(git(f.bare, 'rev-parse', 'main'), f.bad);
  t.false((r.stdout + r.stderr).includes(TOKEN));
});

test('server errors and an auth challenge on reads are retried', async (t) => {
  const f = await fixture(t);
  f.server.inject({ service: 'git-upload-pack', command: 'fetch', status: 500, times: 2 });
  f.server.inject({ service: 'git-upload-pack', command: 'ls-refs', status: 503 });
  f.server.inject({ service: 'git-receive-pack', method: 'GET', status: 502 });
  const r = await run(f);
  t.is(r.code, 0, r.stderr + r.stdout);
  t.is(git(f.bare, 'show', `main:${P}values.yaml`), values('1.0.0').trim());
  t.true(f.server.log.filter((x) => x.status !== undefined && x.status >= 500).length >= 4);
});

test('a server that keeps failing: exit 3 after the retries, the remote unchanged', async (t) => {
  const f = await fixture(t);
  f.server.inject({ service: 'git-upload-pack', command: 'fetch', status: 500, times: 50 });
  const r = await run(f);
  t.is(r.code, 3, r.stderr + r.stdout);
  t.regex(r.stderr + r.stdout, /after 4 attempts: the server answered 500/);
  t.is(git(f.bare, 'rev-parse', 'main'), f.bad);
});

test('a connection dropped mid-push: the remote is unchanged or complete, never half-written, and the run ends with one revert', async (t) => {
  for (const drop of ['before', 'after'] as const) {
    const f = await fixture(t);
    f.server.inject({ service: 'git-receive-pack', method: 'POST', drop });
    const r = await run(f);
    t.is(r.code, 0, `${drop}: ${r.stderr}${r.stdout}`);
    const log = git(f.bare, 'log', '--format=%H', `${f.bad}..main`).split('\n').filter(Boolean);
    t.is(log.length, 1, `${drop}: exactly one revert commit`);
    t.is(git(f.bare, 'show', `main:${P}values.yaml`), values('1.0.0').trim());
    git(f.bare, 'fsck', '--strict');
    t.is(pushes(f.server).length, drop === 'before' ? 2 : 1, `${drop}: ${drop === 'before' ? 'sent again' : 'found landed, not sent again'}`);
  }
});

test('credentials in repo.url are refused with where to put them; http without repo.insecure is refused', async (t) => {
  const f = await fixture(t, { url: (u) => u.replace('http://', `http://oauth2:${TOKEN}@`) });
  const r = await runCli(f);
  t.is(r.code, 2, r.stderr);
  t.regex(r.stderr, /lastgood\.yaml:2: repo\.url .* credentials in the URL.*repo\.auth/);
  t.false(r.stderr.includes(TOKEN));
  t.is(f.server.requests, 0, 'nothing was sent');

  const dir = tempDir('lastgood-remote-http-');
  const config = writeFile(dir, 'lastgood.yaml', `repo:\n  url: ${f.server.url}/gitops.git\ntargets:\n  - name: podinfo\n    paths: [${P}]\n    resources: [{ apiVersion: v1, kind: ConfigMap, name: a }]\n`);
  const plain = await lastgood(['run', ...NOW, '--config', config, '--snapshot', f.snapshot], { env: f.env });
  t.is(plain.code, 2, plain.stderr);
  t.regex(plain.stderr, /lastgood\.yaml:2: repo\.url .* is plain http.*repo\.insecure: true/);
});

test('dry run fetches but writes nothing', async (t) => {
  const f = await fixture(t);
  const r = await run(f, ['--dry-run']);
  t.is(r.code, 0, r.stderr + r.stdout);
  t.is(pushes(f.server).length, 0);
  t.is(git(f.bare, 'rev-parse', 'main'), f.bad);
  t.false(existsSync(path.join(f.bare, 'refs', 'heads', 'lastgood')));
});
