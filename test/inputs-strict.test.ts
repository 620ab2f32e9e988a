import test from 'ava';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { InputError } from '../src/errors.ts';
import { readEvent } from '../src/observe/event.ts';
import { parseTime } from '../src/observe/times.ts';
import { runAction } from './support/action.ts';
import { lastgood, ROOT } from './support/cli.ts';
import { lastgoodEngine } from './support/engine-run.ts';
import { commit, fingerprint, git, makeRepo, tempDir, writeFile } from './support/git.ts';
import { startGitHubEmulator } from './support/github-emulator.ts';
import { kustomization, yamlDocs } from './support/objects.ts';
import { RENDER } from './support/render-off.ts';

/**
 * Issue 15 classes 5, 6 and 9: paths and names, times, and no internal error for user input.
 * Every bad input gives the documented exit code (2, or 3 for an outside system) with a message
 * naming the file and the field, through the spawned CLI (or the Action), never "internal error".
 * The config's rules case by case (paths, names, freezeUntil) are asked of the config loader as
 * `lastgood validate` calls it, in-process (support/engine-run.ts; issue 38); the door's own
 * answer to a bad config (exit 2, the file and line, no stack) is asked of the spawned CLI.
 */

const NOW = '2026-11-01T12:05:00Z';
const P = 'apps/podinfo/prod/';
const RESOURCE = '{ apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: apps }';

function configWith(dir: string, opts: { url?: string; repoExtra?: string; paths?: string; name?: string; extra?: string; target?: string } = {}): string {
  return writeFile(dir, 'lastgood.yaml', `repo:
  url: ${opts.url ?? './repo'}
${opts.repoExtra ?? ''}defaults: { mode: commit, strategy: restore, confirmations: 1 }
targets:
  - name: ${opts.name ?? 'podinfo-prod'}
    paths: ${opts.paths ?? `[${P}]`}
    resources:
      - ${RESOURCE}
${opts.target ?? ''}${opts.extra ?? ''}
${RENDER()}`);
}

function noInternalError(t: { false(v: boolean, m?: string): void }, r: { stderr: string; stdout: string }): void {
  t.false(/internal error|\n\s+at /.test(r.stderr + r.stdout), r.stderr);
}

/** c1: good release; c2: bad release. A working copy. */
function repoScenario() {
  const repo = makeRepo();
  const good = commit(repo, { [`${P}kustomization.yaml`]: 'images: [{ name: podinfo, newTag: 6.0.0 }]\n' }, 'podinfo 6.0.0');
  const bad = commit(repo, { [`${P}kustomization.yaml`]: 'images: [{ name: podinfo, newTag: 6.1.0 }]\n' }, 'podinfo 6.1.0');
  const dir = tempDir('lastgood-strict-');
  return { repo, good, bad, dir };
}

// ---- class 5: paths and names ----------------------------------------------------------------

for (const paths of ['["./."]', '[".//"]', '["./"]', '["apps/.."]', '["  "]', '[".git/hooks/"]', '["./apps/../../etc/"]']) {
  test(`path ${paths} is refused at validation, naming the file, line and field`, async (t) => {
    const dir = tempDir('lastgood-strict-');
    const r = await lastgoodEngine(['validate', '--config', configWith(dir, { paths })]);
    t.is(r.code, 2, r.stderr);
    t.regex(r.stderr, /lastgood\.yaml:6: targets\[0\]\.paths\[0\]: a path must/);
    noInternalError(t, r);
  });
}

test('paths that normalise to a folder are fine ("./apps//x/" is "apps/x/")', async (t) => {
  const r = await lastgood(['validate', '--config', configWith(tempDir('lastgood-strict-'), { paths: '["./apps//podinfo/./prod/"]' })]);
  t.is(r.code, 0, r.stderr);
});

for (const name of ['a..b', 'x.lock', 'podinfo.lock']) {
  test(`target name "${name}" is refused at validation (it could not name a git branch)`, async (t) => {
    const r = await lastgoodEngine(['validate', '--config', configWith(tempDir('lastgood-strict-'), { name })]);
    t.is(r.code, 2, r.stderr);
    t.regex(r.stderr, /lastgood\.yaml:5: targets\[0\]\.name: a target name must not/);
    noInternalError(t, r);
  });
}

test('every valid target name makes a valid branch name (git check-ref-format)', async (t) => {
  const repo = makeRepo();
  for (const name of ['a', 'a.b', 'a-b_c.d', 'x.locked', 'lock', '0.1.2']) {
    const r = await lastgoodEngine(['validate', '--config', configWith(tempDir('lastgood-strict-'), { name })]);
    t.is(r.code, 0, `${name}: ${r.stderr}`);
    t.notThrows(() => git(repo, 'check-ref-format', `refs/heads/lastgood/${name}/0123456789ab`), name);
  }
});

// ---- class 6: times --------------------------------------------------------------------------

test('parseTime: strict ISO 8601 with a zone', (t) => {
  t.is(parseTime('2026-11-01T12:00:00Z'), Date.parse('2026-11-01T12:00:00Z'));
  t.is(parseTime('2026-11-01T14:00:00+02:00'), Date.parse('2026-11-01T12:00:00Z'));
  t.is(parseTime('2026-11-01T12:00:00.123456789Z'), Date.parse('2026-11-01T12:00:00.123Z'));
  t.is(parseTime('0001-01-01T00:00:00Z'), Date.UTC(1, 0, 1) - Date.UTC(1900, 0, 1) + Date.UTC(1900, 0, 1));
  for (const bad of ['1', 'soon', '2026-11-01', '2026-11-01T12:00:00', '2026-02-30T00:00:00Z', '2026-13-01T00:00:00Z', 'Sun, 01 Nov 2026 12:00:00 GMT', '']) t.is(parseTime(bad), undefined, bad);
});

for (const now of ['1', 'soon', '2026-11-01', '2026-11-01T12:05:00', '2026-02-30T12:00:00Z']) {
  test(`--now ${now} is refused (exit 2)`, async (t) => {
    const s = repoScenario();
    const snap = writeFile(s.dir, 'cluster.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${s.bad}`, applied: `main@sha1:${s.good}`, ready: 'False' })));
    const before = fingerprint(s.repo);
    const r = await lastgood(['run', '--now', now, '--config', configWith(s.dir, { url: s.repo }), '--snapshot', snap]);
    t.is(r.code, 2, r.stderr);
    t.regex(r.stderr, /--now .*not a valid time/);
    t.is(fingerprint(s.repo), before, 'nothing written');
    noInternalError(t, r);
  });
}

test('--now with an offset is the same instant', async (t) => {
  const s = repoScenario();
  const snap = writeFile(s.dir, 'cluster.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${s.bad}`, applied: `main@sha1:${s.good}`, ready: 'False' })));
  const r = await lastgood(['check', '--now', '2026-11-01T13:05:00+01:00', '--config', configWith(s.dir, { url: s.repo }), '--snapshot', snap, '--json']);
  t.is(r.code, 0, r.stderr);
  t.is(JSON.parse(r.stdout).targets[0].action, 'revert');
});

test('an unparseable time in a snapshot is bad input naming the file and the field', async (t) => {
  const s = repoScenario();
  const snap = writeFile(s.dir, 'cluster.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${s.bad}`, applied: `main@sha1:${s.good}`, ready: 'False', since: 'soon' })));
  const r = await lastgood(['run', '--now', NOW, '--config', configWith(s.dir, { url: s.repo }), '--snapshot', snap]);
  t.is(r.code, 2, r.stderr);
  t.regex(r.stderr, /cluster\.yaml: document 1 \(Kustomization flux-system\/apps\): status\.conditions\[0\]\.lastTransitionTime "soon" is not a valid time/);
  t.is(git(s.repo, 'rev-parse', 'main'), s.bad, 'nothing reverted');
  noInternalError(t, r);
  // Flux echoes a free-form annotation in lastHandledReconcileAt: not a time, not refused
  const k = kustomization({ attempted: `main@sha1:${s.bad}`, applied: `main@sha1:${s.good}`, ready: 'False' });
  (k.status as Record<string, unknown>).lastHandledReconcileAt = '1699999999';
  const ok = await lastgood(['check', '--now', NOW, '--config', configWith(s.dir, { url: s.repo }), '--snapshot', writeFile(s.dir, 'handled.yaml', yamlDocs(k))]);
  t.is(ok.code, 0, ok.stderr);
});

test('a failure time ahead of --now (beyond 5 minutes of skew) is refused; within the skew it is read', async (t) => {
  const s = repoScenario();
  const config = configWith(s.dir, { url: s.repo });
  const future = writeFile(s.dir, 'future.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${s.bad}`, applied: `main@sha1:${s.good}`, ready: 'False', since: '2026-11-01T13:00:00Z' })));
  const r = await lastgood(['run', '--now', NOW, '--config', config, '--snapshot', future]);
  t.is(r.code, 2, r.stderr);
  t.regex(r.stderr, /future\.yaml: Kustomization flux-system\/apps: status\.conditions\[0\]\.lastTransitionTime 2026-11-01T13:00:00\.000Z is in the future/);
  t.is(git(s.repo, 'rev-parse', 'main'), s.bad, 'nothing reverted');
  noInternalError(t, r);
  const skewed = writeFile(s.dir, 'skewed.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${s.bad}`, applied: `main@sha1:${s.good}`, ready: 'False', since: '2026-11-01T12:08:00Z' })));
  const ok = await lastgood(['check', '--now', NOW, '--config', config, '--snapshot', skewed, '--json']);
  t.is(ok.code, 0, ok.stderr);
});

test('freezeUntil must be a valid time with a zone', async (t) => {
  for (const value of ['tomorrow', '2026-11-01T12:00:00', '2026-02-30T00:00:00Z']) {
    const r = await lastgoodEngine(['validate', '--config', configWith(tempDir('lastgood-strict-'), { target: `    freezeUntil: "${value}"\n` })]);
    t.is(r.code, 2, r.stderr);
    t.regex(r.stderr, /lastgood\.yaml:9: targets\[0\]\.freezeUntil: /, value);
  }
});

// events: Flux timestamp, Flagger's Unix milliseconds, Alertmanager startsAt

function fluxEvent(timestamp: string): object {
  const fixture = JSON.parse(readFileSync(path.join(ROOT, 'fixtures/events/flux-kustomization-health-check-failed.json'), 'utf8'));
  fixture.client_payload.timestamp = timestamp;
  return fixture;
}

test('an event time that does not parse, or lies ahead of the clock, is bad input naming the file and field', async (t) => {
  const dir = tempDir('lastgood-strict-ev-');
  const now = new Date('2026-11-22T03:15:00Z');
  const soon = writeFile(dir, 'soon.json', JSON.stringify(fluxEvent('soon')));
  await t.throwsAsync(readEvent(soon, { now }), { instanceOf: InputError, message: `${soon}: client_payload.timestamp "soon" is not a valid time (expected an ISO 8601 time with a zone, like 2026-11-01T12:00:00Z)` });
  const ahead = writeFile(dir, 'ahead.json', JSON.stringify(fluxEvent('2026-11-22T04:00:00Z')));
  await t.throwsAsync(readEvent(ahead, { now }), { instanceOf: InputError, message: /ahead\.json: client_payload\.timestamp 2026-11-22T04:00:00\.000Z is in the future/ });
  const fine = writeFile(dir, 'fine.json', JSON.stringify(fluxEvent('2026-11-22T03:19:00Z')));
  t.is((await readEvent(fine, { now })).sender, 'flux', 'within the skew');

  const flagger = JSON.parse(readFileSync(path.join(ROOT, 'fixtures/events/flagger-canary-failed.json'), 'utf8'));
  const payload = flagger.client_payload ?? flagger;
  payload.metadata.timestamp = 'soon';
  const f = writeFile(dir, 'flagger.json', JSON.stringify(flagger));
  await t.throwsAsync(readEvent(f, { now }), { instanceOf: InputError, message: /flagger\.json: (client_payload\.)?metadata\.timestamp "soon" is not a valid time/ });

  const alert = JSON.parse(readFileSync(path.join(ROOT, 'fixtures/events/alertmanager-firing.json'), 'utf8'));
  (alert.client_payload ?? alert).alerts[0].startsAt = 'yesterday';
  const a = writeFile(dir, 'alert.json', JSON.stringify(alert));
  await t.throwsAsync(readEvent(a, { now }), { instanceOf: InputError, message: /alert\.json: (client_payload\.)?alerts\[0\]\.startsAt "yesterday" is not a valid time/ });

  // the bound (32 MiB): /dev/zero and a padded payload are refused, read no further
  const over = `the event payload is larger than 32 MiB, the most lastgood reads as one (GitHub delivers no webhook payload over 25 MB)`;
  await t.throwsAsync(readEvent('/dev/zero', { now }), { instanceOf: InputError, message: `/dev/zero: ${over}` });
  const padded = writeFile(dir, 'padded.json', JSON.stringify({ ...fluxEvent('2026-11-22T03:19:00Z'), pad: 'x'.repeat(32 << 20) }));
  await t.throwsAsync(readEvent(padded, { now }), { instanceOf: InputError, message: `${padded}: ${over}` });
});

test('Action: an event timestamp "soon" fails the step with exit 2 and an annotation naming the file; nothing written', async (t) => {
  const s = repoScenario();
  const workspace = s.dir;
  const bare = path.join(workspace, 'gitops.git');
  git(workspace, 'clone', '-q', '--bare', s.repo, bare);
  configWith(workspace, { url: './gitops.git' });
  const event = writeFile(workspace, '.runner/event.json', JSON.stringify(fluxEvent('soon')));
  const before = fingerprint(bare);
  const r = await runAction({ workspace, token: 'ghs_strictInputsToken0123456789abcdef', eventPath: event });
  t.is(r.code, 2, r.stdout + r.stderr);
  t.regex(r.stdout, /::error title=lastgood,file=\.runner\/event\.json::.*client_payload\.timestamp "soon" is not a valid time/);
  t.is(fingerprint(bare), before);
  noInternalError(t, r);
});

// ---- class 9: no internal errors for user input ----------------------------------------------

test('a YAML alias bomb in the config is a config error with the file and line, not an internal error', async (t) => {
  const dir = tempDir('lastgood-strict-');
  const levels = 'abcdefghi'.split('');
  const bomb = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]', ...levels.slice(1).map((l, i) => `${l}: &${l} [${Array(9).fill(`*${levels[i]}`).join(',')}]`)].join('\n');
  const config = writeFile(dir, 'lastgood.yaml', `${bomb}\nrepo: { url: ./repo }\ntargets: []\n`);
  // expanded, the bomb is 9^9 strings: it would not end (or fit in memory) before ava's timeout
  const r = await lastgood(['validate', '--config', config]);
  t.is(r.code, 2, r.stderr);
  t.regex(r.stderr, /lastgood\.yaml:2: cannot read the YAML: .*alias/i);
  noInternalError(t, r);
});

test('the config\'s bounds (1 MiB, 200,000 separators): beyond them a config error with the file (and the line), read no further', async (t) => {
  const dir = tempDir('lastgood-strict-');
  const base = readFileSync(configWith(dir), 'utf8');
  // 21 MiB of comments: refused at 1 MiB, never read whole
  const big = writeFile(dir, 'big.yaml', `${base}${'# a comment line of forty bytes, padded.\n'.repeat(550_000)}`);
  const tooBig = await lastgoodEngine(['validate', '--config', big]);
  t.is(tooBig.code, 2, tooBig.stdout);
  t.is(tooBig.stderr, `lastgood: ${big}: the config is larger than 1 MiB, the most lastgood reads as lastgood.yaml\n`);
  // /dev/zero: the bound stops the read at once
  const zero = await lastgoodEngine(['validate', '--config', '/dev/zero']);
  t.is(zero.code, 2);
  t.is(zero.stderr, 'lastgood: /dev/zero: the config is larger than 1 MiB, the most lastgood reads as lastgood.yaml\n');
  // the most nodes per byte YAML has (a flow list of one-character scalars): within 1 MiB, refused at the line that passes the count
  const baseLines = base.split('\n').length - 1;
  const flow = writeFile(dir, 'flow.yaml', `${base}x:\n  - [${Array(250_000).fill('1').join(',')}]\n`);
  const tooMany = await lastgoodEngine(['validate', '--config', flow]);
  t.is(tooMany.code, 2, tooMany.stdout);
  t.is(tooMany.stderr, `lastgood: ${flow}:${baseLines + 2}: more than 200,000 YAML nodes by here (counted as the separators that start one: , : - [ { and line breaks), the most lastgood models in a config\n`);
  // a config of 2,000 targets is well within both
  const targets = Array.from({ length: 2_000 }, (_, i) => `  - name: app-${i}\n    paths: [apps/app-${i}/overlays/prod/]\n    resources:\n      - { apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: app-${i} }\n`).join('');
  const many = writeFile(dir, 'many.yaml', `repo: { url: ./repo }\ndefaults: { mode: commit }\ntargets:\n${targets}`);
  const fine = await lastgoodEngine(['validate', '--config', many]);
  t.is(fine.code, 0, fine.stderr);
  t.regex(fine.stdout, /valid \(2000 targets: app-0, /);
});

test('an empty snapshot says "no objects" (exit 2), not every resource NotFound', async (t) => {
  const s = repoScenario();
  const config = configWith(s.dir, { url: s.repo });
  const empty = writeFile(s.dir, 'empty.yaml', '# kubectl printed nothing\n---\n');
  const r = await lastgood(['run', '--now', NOW, '--config', config, '--snapshot', empty]);
  t.is(r.code, 2, r.stderr);
  t.regex(r.stderr, /empty\.yaml: no Kubernetes objects in the snapshot/);
  const folder = tempDir('lastgood-strict-empty-');
  const f = await lastgood(['check', '--config', config, '--snapshot', folder, '--snapshot', empty]);
  t.is(f.code, 2, f.stderr);
  t.regex(f.stderr, /no Kubernetes objects in .*no \.yaml, \.yml or \.json files.*empty\.yaml/);
  const stdin = await lastgood(['health', '-'], { input: '' });
  t.is(stdin.code, 2, stdin.stderr);
  t.regex(stdin.stderr, /no Kubernetes objects in stdin/);
  noInternalError(t, r);
});

test('an unsupported repo.url is a config error with the file and line of repo.url', async (t) => {
  const dir = tempDir('lastgood-strict-');
  const config = configWith(dir, { url: 'ftp://files.example.com/gitops.git' });
  const snap = writeFile(dir, 'cluster.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${'a'.repeat(40)}`, ready: 'False' })));
  const r = await lastgood(['run', '--now', NOW, '--config', config, '--snapshot', snap]);
  t.is(r.code, 2, r.stderr);
  t.regex(r.stderr, /lastgood\.yaml:2: repo\.url "ftp:\/\/files\.example\.com\/gitops\.git" is not supported/);
  const flag = await lastgood(['run', '--now', NOW, '--config', config, '--snapshot', snap, '--repo', 'svn://x/y']);
  t.is(flag.code, 2, flag.stderr);
  t.regex(flag.stderr, /--repo "svn:\/\/x\/y" is not supported/);
  // validate refuses it too, as the door says it: a config that validates is one a run does not refuse for repo.url
  const validated = await lastgood(['validate', '--config', config]);
  t.is(validated.code, 2, validated.stdout);
  t.is(validated.stderr, r.stderr);
});

test('validate refuses every repo.url a run refuses before the network (unsupported, credentials, plain http, not a repository of its host), naming its line', async (t) => {
  const dir = tempDir('lastgood-strict-');
  const cases: Array<[string, RegExp]> = [
    ['ssh://git@github.com/acme/gitops', /lastgood\.yaml:2: repo\.url "ssh:\/\/github\.com\/acme\/gitops" is not supported/],
    [`https://x-access-token:ghp_${'a'.repeat(36)}@github.com/acme/gitops`, /lastgood\.yaml:2: repo\.url "https:\/\/github\.com\/acme\/gitops" is not supported with credentials in the URL/],
    ['http://gitlab.example.com/acme/gitops', /lastgood\.yaml:2: repo\.url http:\/\/gitlab\.example\.com\/acme\/gitops is plain http/],
    ['https://gitlab.com/acme', /lastgood\.yaml:2: repo\.url "https:\/\/gitlab\.com\/acme" is not a repository URL of gitlab/],
  ];
  for (const [url, said] of cases) {
    const r = await lastgoodEngine(['validate', '--config', configWith(dir, { url })]);
    t.is(r.code, 2, `${url}: ${r.stdout}`);
    t.regex(r.stderr, said, url);
    t.false(r.stderr.includes('ghp_'), 'the token is not repeated');
  }
  // what needs the secrets is not validate's: repo.auth naming a variable this machine has not set is valid here
  const auth = await lastgoodEngine(['validate', '--config', configWith(dir, { url: 'https://gitlab.example.com/acme/gitops', repoExtra: '  auth: { tokenEnv: LASTGOOD_TEST_UNSET_TOKEN }\n' })]);
  t.is(auth.code, 0, auth.stderr);
});

test('a branch that keeps moving while the revert is planned: exit 3 with what happened, nothing written', async (t) => {
  const s = repoScenario();
  // the recovery hook runs right before delivery, and moves the branch every time with a commit to
  // the target's paths, so the plan must be made again (and the hook run again) each time: a commit
  // that touches nothing the plan read is written on top of instead (test/busy-branch.test.ts)
  const mover = ['sh', '-c', `date +%s%N > '${s.repo}/${P}moved.txt' && git -C '${s.repo}' add -A && git -C '${s.repo}' -c user.name=x -c user.email=x@example.com commit -q -m moved`];
  const config = configWith(s.dir, { url: s.repo, extra: `    onFailure:\n      analysis: { hook: { command: ${JSON.stringify(mover)}, timeout: 10s }, then: revert }\n` });
  const snap = writeFile(s.dir, 'cluster.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${s.bad}`, applied: `main@sha1:${s.good}`, ready: 'False' })));
  const r = await lastgood(['run', '--now', NOW, '--config', config, '--snapshot', snap]);
  t.is(r.code, 3, r.stderr + r.stdout);
  t.regex(r.stderr, /lastgood: (podinfo-prod: )?branch main kept moving while the revert was planned/);
  const log = git(s.repo, 'log', '--format=%s', 'main');
  t.false(/Lastgood|revert/i.test(log), log);
  noInternalError(t, r);
});

test('a crafted tree entry named ".." in the target paths is bad repository input naming the path', async (t) => {
  const s = repoScenario();
  const bare = path.join(s.dir, 'crafted.git');
  git(s.dir, 'clone', '-q', '--bare', s.repo, bare);
  // git's own plumbing writes what porcelain refuses: a tree with an entry named ".."
  const plumbing = (args: string[], input?: string) => execFileSync('git', ['--git-dir', bare, '-c', 'user.name=x', '-c', 'user.email=x@example.com', ...args], { input, encoding: 'utf8' }).trim();
  const kust = plumbing(['hash-object', '-w', '--stdin'], 'images: [{ name: podinfo, newTag: 6.2.0 }]\n');
  const evil = plumbing(['hash-object', '-w', '--stdin'], 'replicas: 0\n');
  const prod = plumbing(['mktree'], `100644 blob ${kust}\tkustomization.yaml\n100644 blob ${evil}\t..\n`);
  const podinfo = plumbing(['mktree'], `040000 tree ${prod}\tprod\n`);
  const apps = plumbing(['mktree'], `040000 tree ${podinfo}\tpodinfo\n`);
  const root = plumbing(['mktree'], `040000 tree ${apps}\tapps\n`);
  const crafted = plumbing(['commit-tree', root, '-p', s.bad, '-m', 'podinfo 6.2.0']);
  plumbing(['update-ref', 'refs/heads/main', crafted]);
  const config = configWith(s.dir, { url: bare });
  const snap = writeFile(s.dir, 'cluster.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${crafted}`, applied: `main@sha1:${s.bad}`, ready: 'False' })));
  const before = fingerprint(bare);
  const r = await lastgood(['run', '--now', NOW, '--config', config, '--snapshot', snap]);
  t.is(r.code, 2, r.stderr + r.stdout);
  t.regex(r.stderr, /tree entry named "\.\." in "apps\/podinfo\/prod"/);
  t.is(fingerprint(bare), before, 'nothing written');
  noInternalError(t, r);
});

test('GitHub: a repository the token cannot see is reported as such, not as a missing branch', async (t) => {
  const s = repoScenario();
  const bare = path.join(s.dir, 'gitops.git');
  git(s.dir, 'clone', '-q', '--bare', s.repo, bare);
  const token = 'ghs_strictInputsGitHubToken0123456789ab';
  const emulator = await startGitHubEmulator({ bareRepo: bare, owner: 'acme', repo: 'gitops', token });
  t.teardown(() => emulator.close());
  const config = writeFile(s.dir, 'gh.yaml', `repo:\n  url: https://github.com/acme/hidden\n  apiUrl: ${emulator.url}\ndefaults: { mode: pull-request, confirmations: 1 }\ntargets:\n  - name: podinfo-prod\n    paths: [${P}]\n    resources:\n      - ${RESOURCE}\n`);
  const snap = writeFile(s.dir, 'cluster.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${s.bad}`, applied: `main@sha1:${s.good}`, ready: 'False' })));
  const r = await lastgood(['run', '--now', NOW, '--config', config, '--snapshot', snap], { env: { GITHUB_TOKEN: token } });
  t.is(r.code, 2, r.stderr);
  t.regex(r.stderr, /repository acme\/hidden not found or not visible to the token \(needs "contents: read"/);
  t.false(r.stderr.includes('does not exist'));
  t.false((r.stdout + r.stderr).includes(token));
  const missing = writeFile(s.dir, 'gh2.yaml', readFileSync(config, 'utf8').replace('acme/hidden', 'acme/gitops').replace('confirmations: 1 }', 'confirmations: 1 }\n').replace('repo:\n', 'repo:\n  branch: nope\n'));
  const m = await lastgood(['run', '--now', NOW, '--config', missing, '--snapshot', snap], { env: { GITHUB_TOKEN: token } });
  t.is(m.code, 2, m.stderr);
  t.regex(m.stderr, /branch "nope" does not exist/);
  t.deepEqual(emulator.violations, []);
});
