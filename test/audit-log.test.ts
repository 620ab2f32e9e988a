import test from 'ava';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Octokit } from '@octokit/rest';
import { AuditLogSchema, logJsonSchema, type AuditLog, type RequestEntry } from '../src/audit/schema.ts';
import { readAuditLog } from '../src/audit/timeline.ts';
import { formatLogJson } from '../src/audit/format.ts';
import { forgeScenario, P, TARGET, values } from './support/forge-scenario.ts';
import { closeModelRequest, mergeModelRequest } from './support/forge-emulator.ts';
import { HOSTS } from './support/hosts-under-test.ts';
import { BIN, lastgood, ROOT } from './support/cli.ts';
import { docsPage } from './support/docs.ts';
import { lastgoodEngine } from './support/engine-run.ts';
import { addAndCommit, git, makeRepo, tempDir, writeFile } from './support/git.ts';
import { startGitHubEmulator } from './support/github-emulator.ts';
import { startGitHttpServer } from './support/git-http-server.ts';
import { kustomization, yamlDocs } from './support/objects.ts';
import { RENDER } from './support/render-off.ts';
import { npxShim } from './support/npx-shim.ts';

/**
 * `lastgood log` on real histories, through every backend (issue 24): a history made by lastgood
 * itself (`run` writing reverts, `check --record` writing verified records), with what people do
 * around it (a `git revert` of a revert, a new release, a second failure), read back through a
 * local working copy, git over HTTPS (git's own http-backend), the GitHub API emulator and the
 * merge-request hosts' emulators; requests in each state on GitHub and on every merge-request host,
 * review branches on a plain git host. The whole JSON document and the whole text are asserted.
 */

const TARGETS = ['podinfo', 'redis', 'web'] as const;
/** the commit-mode history has a fourth target */
const ALL = [...TARGETS, 'api'] as const;
type Target = (typeof ALL)[number];
const T = (hhmm: string) => `2026-11-10T${hhmm}:00Z`;
const GH_TOKEN = 'ghs_auditLogToken0123456789abcdef';
const GIT_TOKEN = 'glpat-AuditLogToken0123456789';

const configMap = (name: string, version: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  namespace: prod\ndata:\n  version: "${version}"\n`;

/** A commit at a given time, by a given person (native git). */
function commitAt(repo: string, when: string, files: Record<string, string>, message: string, who = { name: 'Dev', email: 'dev@example.com' }): string {
  for (const [file, content] of Object.entries(files)) writeFile(repo, file, content);
  return addAndCommit(repo, ['-q', '-m', message], gitEnv(when, who));
}

function gitEnv(when: string, who = { name: 'Dev', email: 'dev@example.com' }): NodeJS.ProcessEnv {
  return {
    ...process.env, GIT_CONFIG_NOSYSTEM: '1', HOME: os.tmpdir(),
    GIT_AUTHOR_NAME: who.name, GIT_AUTHOR_EMAIL: who.email, GIT_COMMITTER_NAME: who.name, GIT_COMMITTER_EMAIL: who.email,
    GIT_AUTHOR_DATE: when, GIT_COMMITTER_DATE: when,
  };
}

/** render off (./support/render-off.ts): these tests read the log of what was written */
function configText(url: string, extra = '', mode = 'commit', targets: readonly Target[] = TARGETS): string {
  return `repo:\n  url: ${url}\n  branch: main\n${extra}${RENDER()}defaults: { mode: ${mode}, confirmations: 1, cooldown: off, maxAge: off }\ntargets:\n${targets.map((t) => `  - name: ${t}\n    paths: [apps/${t}/]\n    resources:\n      - { apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: ${t} }\n`).join('')}`;
}

/** The target's Kustomization: applied `applied`, attempted `attempted`, ready or failed since `since`. */
function snapshot(dir: string, target: Target, o: { attempted: string; applied: string; ready: 'True' | 'False'; since: string }): string {
  return writeFile(dir, `${target}-${o.attempted.slice(0, 8)}-${o.ready}.yaml`, yamlDocs(kustomization({
    name: target, attempted: `main@sha1:${o.attempted}`, applied: `main@sha1:${o.applied}`, ready: o.ready, since: o.since,
    message: o.ready === 'False' ? `health check failed after 5m0s: timeout waiting for: [ConfigMap/prod/${target} status: 'InProgress']` : undefined,
  })));
}

async function runRevert(config: string, dir: string, target: Target, when: string, attempted: string, applied: string, env: Record<string, string> = {}): Promise<string> {
  const snap = snapshot(dir, target, { attempted, applied, ready: 'False', since: when });
  const r = await lastgoodEngine(['run', '--now', when, '--config', config, '--target', target, '--snapshot', snap, '--json'], { env });
  if (r.code !== 0) throw new Error(`run ${target} at ${when}: exit ${r.code}\n${r.stderr}\n${r.stdout}`);
  const out = JSON.parse(r.stdout).targets[0];
  if (out.action !== 'revert' || !out.commit) throw new Error(`run ${target} at ${when}: ${out.action}: ${out.reason}`);
  return out.commit as string;
}

async function record(config: string, dir: string, target: Target, when: string, healthy: string, env: Record<string, string> = {}): Promise<void> {
  // healthy for ten minutes: longer than the soak (5m by default) a verified record waits for
  const since = new Date(Date.parse(when) - 10 * 60_000).toISOString().replace('.000Z', 'Z');
  const snap = snapshot(dir, target, { attempted: healthy, applied: healthy, ready: 'True', since });
  const r = await lastgoodEngine(['check', '--record', '--now', when, '--config', config, '--target', target, '--snapshot', snap, '--json'], { env });
  if (r.code !== 0 || !/\brecorded [0-9a-f]{12} as verified/.test(JSON.parse(r.stdout).targets[0].reason)) throw new Error(`record: ${r.stderr}${r.stdout}`);
}

interface History {
  work: string;
  dir: string;
  config: string;
  c0: string;
  bad1: string;
  r1: string;
  p1: string;
  bad2: string;
  r2: string;
  bad3: string;
  r3: string;
  bad4: string;
  r4: string;
  later: string;
  release: string;
  bad5: string;
  r5: string;
  p5: string;
}

/**
 * The commit-mode history, made by lastgood itself on a local working copy:
 *
 *   09:00 c0      bootstrap (podinfo 1.0.0, redis 7.0, web v1)       09:10 check --record: podinfo verified at c0
 *   09:20 bad1    podinfo 1.1.0                                      09:30 r1 = lastgood's revert of bad1
 *   09:40 p1      Alice: git revert r1 (undoes it)
 *   09:50 bad2    redis 7.2                                          10:00 r2 = revert of bad2
 *   10:10 bad3    web v2                                             10:20 r3 = revert of bad3
 *   10:30 bad4    web v3 (a release after r3)                        10:40 r4 = revert of bad4 (supersedes r3)
 *   10:50 later   redis 7.4 (a release after r2)
 *   11:00 release podinfo 1.2.0
 *   11:05 bad5    api v2                                             11:10 r5 = revert of bad5
 *   11:20 p5      Carol: api v2 again, written by hand (undoes r5 by its content)
 */
async function commitModeHistory(): Promise<History> {
  const work = makeRepo();
  const dir = tempDir('lastgood-audit-');
  const config = writeFile(dir, 'lastgood.yaml', configText(work, '', 'commit', ALL));
  const c0 = commitAt(work, T('09:00'), {
    'apps/podinfo/configmap.yaml': configMap('podinfo', '1.0.0'), 'apps/redis/configmap.yaml': configMap('redis', '7.0'), 'apps/web/configmap.yaml': configMap('web', 'v1'),
    'apps/api/configmap.yaml': configMap('api', 'v1'),
  }, 'bootstrap prod');
  await record(config, dir, 'podinfo', T('09:10'), c0);
  const bad1 = commitAt(work, T('09:20'), { 'apps/podinfo/configmap.yaml': configMap('podinfo', '1.1.0') }, 'podinfo 1.1.0');
  const r1 = await runRevert(config, dir, 'podinfo', T('09:30'), bad1, c0);
  execFileSync('git', ['revert', '--no-edit', r1], { cwd: work, env: gitEnv(T('09:40'), { name: 'Alice', email: 'alice@example.com' }), stdio: 'pipe' });
  const p1 = git(work, 'rev-parse', 'HEAD');
  const bad2 = commitAt(work, T('09:50'), { 'apps/redis/configmap.yaml': configMap('redis', '7.2') }, 'redis 7.2');
  const r2 = await runRevert(config, dir, 'redis', T('10:00'), bad2, p1);
  const bad3 = commitAt(work, T('10:10'), { 'apps/web/configmap.yaml': configMap('web', 'v2') }, 'web v2');
  const r3 = await runRevert(config, dir, 'web', T('10:20'), bad3, r2);
  const bad4 = commitAt(work, T('10:30'), { 'apps/web/configmap.yaml': configMap('web', 'v3') }, 'web v3');
  const r4 = await runRevert(config, dir, 'web', T('10:40'), bad4, r3);
  const later = commitAt(work, T('10:50'), { 'apps/redis/configmap.yaml': configMap('redis', '7.4') }, 'redis 7.4');
  const release = commitAt(work, T('11:00'), { 'apps/podinfo/configmap.yaml': configMap('podinfo', '1.2.0') }, 'podinfo 1.2.0');
  const bad5 = commitAt(work, T('11:05'), { 'apps/api/configmap.yaml': configMap('api', 'v2') }, 'api v2');
  const r5 = await runRevert(config, dir, 'api', T('11:10'), bad5, release);
  const p5 = commitAt(work, T('11:20'), { 'apps/api/configmap.yaml': configMap('api', 'v2') }, 'api v2 again: the alert was noise', { name: 'Carol', email: 'carol@example.com' });
  return { work, dir, config, c0, bad1, r1, p1, bad2, r2, bad3, r3, bad4, r4, later, release, bad5, r5, p5 };
}

const NOW = T('11:30');
const evidence = (t: Target) => [`kustomize.toolkit.fluxcd.io/Kustomization flux-system/${t} state=failed reason=HealthCheckFailed`];
const details = (t: Target, since: string) => [`kustomize.toolkit.fluxcd.io/Kustomization flux-system/${t}: failed (HealthCheckFailed) since ${since.replace('Z', '.000Z')}: health check failed after 5m0s: timeout waiting for: [ConfigMap/prod/${t} status: 'InProgress']`];
const at = (hhmm: string) => T(hhmm).replace('Z', '.000Z');
const subject = (t: Target, lkg: string) => `lastgood: revert ${t} to ${lkg.slice(0, 12)} (Kustomization flux-system/${t} HealthCheckFailed)`;

/** The entries every backend must agree on, links aside (`url` is the host's). */
function expectedTargets(h: History, url: (sha: string) => string | null, verified: AuditLog['targets'][number]['entries']) {
  const revert = (t: Target, commit: string, when: string, bad: string, lkg: string, holds: object) => ({
    kind: 'revert', at: at(when), commit, landedAs: commit, via: 'commit', request: null, subject: subject(t, lkg), strategy: 'revert',
    // podinfo's last-known-good c0 was recorded healthy before its revert
    verdict: 'failed', class: 'analysis', reverts: [bad], restores: lkg, lastKnownGoodVerified: lkg === h.c0, evidence: evidence(t),
    details: details(t, T(when)), reason: null, url: url(commit), holds,
  });
  const ended = (state: string, commit: string, when: string, who: string, subj: string) => ({ state, commit, at: at(when), author: who, subject: subj });
  const dev = 'Dev <dev@example.com>';
  return [
    {
      name: 'podinfo', paths: ['apps/podinfo/'],
      entries: [
        { kind: 'person-revert', at: at('09:40'), commit: h.p1, author: 'Alice <alice@example.com>', subject: `Revert "${subject('podinfo', h.c0)}"`, undid: h.r1, how: 'git revert', url: url(h.p1) },
        revert('podinfo', h.r1, '09:30', h.bad1, h.c0, ended('undone', h.p1, '09:40', 'Alice <alice@example.com>', `Revert "${subject('podinfo', h.c0)}"`)),
        ...verified,
      ],
    },
    {
      name: 'redis', paths: ['apps/redis/'],
      entries: [revert('redis', h.r2, '10:00', h.bad2, h.p1, ended('released-since', h.later, '10:50', dev, 'redis 7.4'))],
    },
    {
      name: 'web', paths: ['apps/web/'],
      entries: [
        revert('web', h.r4, '10:40', h.bad4, h.r3, { state: 'holds', commit: null, at: null, author: null, subject: null }),
        revert('web', h.r3, '10:20', h.bad3, h.r2, ended('superseded', h.r4, '10:40', 'lastgood <lastgood@users.noreply.github.com>', subject('web', h.r3))),
      ],
    },
    {
      name: 'api', paths: ['apps/api/'],
      entries: [
        { kind: 'person-revert', at: at('11:20'), commit: h.p5, author: 'Carol <carol@example.com>', subject: 'api v2 again: the alert was noise', undid: h.r5, how: 'content', url: url(h.p5) },
        revert('api', h.r5, '11:10', h.bad5, h.release, ended('undone', h.p5, '11:20', 'Carol <carol@example.com>', 'api v2 again: the alert was noise')),
      ],
    },
  ];
}

async function logJson(config: string, args: string[] = [], env: Record<string, string> = {}): Promise<AuditLog> {
  const r = await lastgood(['log', '--now', NOW, '--config', config, '--json', ...args], { env });
  if (r.code !== 0) throw new Error(`log: exit ${r.code}: ${r.stderr}`);
  // the document validates against its published schema (strict: no field the schema does not name)
  return AuditLogSchema.parse(JSON.parse(r.stdout));
}

test('log through a local working copy: every revert, whether it holds, the person who undid one, the verified record', async (t) => {
  const h = await commitModeHistory();
  const before = git(h.work, 'for-each-ref');
  const log = await logJson(h.config);
  t.is(log.head, h.p5);
  t.deepEqual(log.window, { since: '2026-11-03T11:30:00.000Z', until: '2026-11-10T11:30:00.000Z', why: 'default: the last 7 days', commitsRead: 15, limit: 5000, stoppedBy: 'root', oldestRead: at('09:00') });
  t.deepEqual(log.notes, []);
  const verified = [{ kind: 'verified' as const, at: at('09:10'), commit: h.c0, evidence: evidence('podinfo')[0]!.replace('failed reason=HealthCheckFailed', 'healthy reason=ReconciliationSucceeded'), where: 'git notes refs/notes/lastgood', url: null }];
  t.deepEqual(log.targets, expectedTargets(h, () => null, verified) as AuditLog['targets']);
  t.is(git(h.work, 'for-each-ref'), before, 'the log wrote nothing');

  // the text a terminal-less reader gets, exactly
  const text = await lastgood(['log', '--now', NOW, '--config', h.config]);
  t.is(text.code, 0, text.stderr);
  const s = (sha: string) => sha.slice(0, 12);
  const pad = ' '.repeat(53);
  t.is(text.stdout, [
    `main at ${s(h.p5)} in ${h.work}, 2026-11-03T11:30:00Z to 2026-11-10T11:30:00Z (default: the last 7 days): 15 commits read, the whole history`,
    '',
    "podinfo (apps/podinfo/): 1 revert, 1 verified last-known-good, 1 person's revert",
    `  2026-11-10T09:40:00Z  person revert  ${s(h.p1)}  Alice <alice@example.com> undid lastgood's revert ${s(h.r1)} (git revert): Revert "${subject('podinfo', h.c0)}"`,
    `  2026-11-10T09:30:00Z  revert         ${s(h.r1)}  failed (analysis): reverts ${s(h.bad1)}, back to ${s(h.c0)} (verified); undone by ${s(h.p1)} (Alice <alice@example.com>, 2026-11-10T09:40:00Z)`,
    `${pad}evidence: ${evidence('podinfo')[0]}`,
    `  2026-11-10T09:10:00Z  verified       ${s(h.c0)}  observed healthy (git notes refs/notes/lastgood): ${verified[0]!.evidence}`,
    '',
    'redis (apps/redis/): 1 revert',
    `  2026-11-10T10:00:00Z  revert  ${s(h.r2)}  failed (analysis): reverts ${s(h.bad2)}, back to ${s(h.p1)} (unverified); changed since by ${s(h.later)} (Dev <dev@example.com>, 2026-11-10T10:50:00Z): redis 7.4`,
    `                                              evidence: ${evidence('redis')[0]}`,
    '',
    'web (apps/web/): 2 reverts',
    `  2026-11-10T10:40:00Z  revert  ${s(h.r4)}  failed (analysis): reverts ${s(h.bad4)}, back to ${s(h.r3)} (unverified); holds`,
    `                                              evidence: ${evidence('web')[0]}`,
    `  2026-11-10T10:20:00Z  revert  ${s(h.r3)}  failed (analysis): reverts ${s(h.bad3)}, back to ${s(h.r2)} (unverified); superseded by lastgood's revert ${s(h.r4)} (2026-11-10T10:40:00Z)`,
    `                                              evidence: ${evidence('web')[0]}`,
    '',
    "api (apps/api/): 1 revert, 1 person's revert",
    `  2026-11-10T11:20:00Z  person revert  ${s(h.p5)}  Carol <carol@example.com> undid lastgood's revert ${s(h.r5)}: api v2 again: the alert was noise`,
    `  2026-11-10T11:10:00Z  revert         ${s(h.r5)}  failed (analysis): reverts ${s(h.bad5)}, back to ${s(h.release)} (unverified); undone by ${s(h.p5)} (Carol <carol@example.com>, 2026-11-10T11:20:00Z)`,
    `${pad}evidence: ${evidence('api')[0]}`,
    '',
  ].join('\n'));

  // on a terminal (script(1) gives one) the same text, coloured; NO_COLOR keeps it plain
  const inPty = (env: Record<string, string>) => spawnSync('script', ['-qec', [process.execPath, BIN, 'log', '--now', NOW, '--config', h.config].map((a) => `'${a}'`).join(' '), '/dev/null'], { encoding: 'utf8', env: { ...process.env, ...env } });
  if (spawnSync('script', ['--version']).error) t.log('script(1) is not installed: the terminal output is not checked');
  else {
    const tty = inPty({}).stdout.replace(/\r\n/g, '\n');
    t.regex(tty, /\x1b\[31mperson revert\x1b\[0m/);
    t.regex(tty, /; \x1b\[32mholds\x1b\[0m/);
    t.is(tty.replace(/\x1b\[[\d;]*m/g, ''), text.stdout, 'the colours are all that differ');
    t.is(inPty({ NO_COLOR: '1' }).stdout.replace(/\r\n/g, '\n'), text.stdout);
  }

  // a window: --since a time leaves out what came before it, and says where it stopped
  const recent = await logJson(h.config, ['--since', '2026-11-10T10:05:00Z', '--target', 'web']);
  t.is(recent.window.stoppedBy, 'since');
  t.is(recent.window.why, '--since 2026-11-10T10:05:00Z');
  t.deepEqual(recent.targets.map((x) => x.name), ['web']);
  t.deepEqual(recent.targets[0]!.entries.map((e) => e.kind === 'revert' && [e.commit, e.holds.state]), [[h.r4, 'holds'], [h.r3, 'superseded']]);
  const week = await logJson(h.config, ['--since', '2h', '--target', 'podinfo']);
  t.is(week.window.since, '2026-11-10T09:30:00.000Z');
  t.deepEqual(week.targets[0]!.entries.map((e) => e.kind), ['person-revert', 'revert'], 'the verified record of 09:10 is before the window');
});

test('log through git over HTTPS and through the GitHub API: the same timeline, with the host\'s links and records', async (t) => {
  const h = await commitModeHistory();
  const root = tempDir('lastgood-audit-remote-');
  const bare = path.join(root, 'gitops.git');
  git(root, 'clone', '-q', '--mirror', h.work, bare); // branches and refs/notes/lastgood
  const before = git(bare, 'for-each-ref');
  const server = await startGitHttpServer({ root, token: GIT_TOKEN });
  t.teardown(() => server.close());
  const remoteConfig = writeFile(h.dir, 'remote.yaml', configText(`${server.url}/gitops.git`, '  insecure: true\n  auth: { tokenEnv: LASTGOOD_GIT_TOKEN }\n', 'commit', ALL));
  const remote = await logJson(remoteConfig, [], { LASTGOOD_GIT_TOKEN: GIT_TOKEN });
  const verified = [{ kind: 'verified' as const, at: at('09:10'), commit: h.c0, evidence: evidence('podinfo')[0]!.replace('failed reason=HealthCheckFailed', 'healthy reason=ReconciliationSucceeded'), where: `git notes refs/notes/lastgood on ${server.url}/gitops.git`, url: null }];
  t.deepEqual(remote.targets, expectedTargets(h, () => null, verified) as AuditLog['targets']);
  t.is(remote.window.commitsRead, 15);
  t.deepEqual(server.log.filter((r) => r.service === 'git-receive-pack'), [], 'no push, not even a discovery for one');

  const emulator = await startGitHubEmulator({ bareRepo: bare, owner: 'acme', repo: 'gitops', token: GH_TOKEN, permissions: { contents: 'read', pullRequests: 'read', deployments: 'write' } });
  t.teardown(() => emulator.close());
  const ghConfig = writeFile(h.dir, 'github.yaml', configText('https://github.com/acme/gitops', `  apiUrl: ${emulator.url}\n`, 'commit', ALL));
  // on GitHub the verified records are deployments: one made the way lastgood makes them
  await record(ghConfig, h.dir, 'podinfo', T('11:20'), h.release, { GITHUB_TOKEN: GH_TOKEN });
  const deployedAt = emulator.deployments[0]!.statuses[0]!.created;
  emulator.resetLog();
  const github = await logJson(ghConfig, ['--since', '2026-11-01T00:00:00Z'], { GITHUB_TOKEN: GH_TOKEN });
  const link = (sha: string) => `https://github.com/acme/gitops/commit/${sha}`;
  const deployment = { kind: 'verified' as const, at: new Date(deployedAt).toISOString(), commit: h.release, evidence: 'kustomize.toolkit.fluxcd.io/Kustomization flux-system/podinfo state=healthy reason=ReconciliationSucceeded', where: 'GitHub deployments', url: link(h.release) };
  const expected = expectedTargets(h, link, []);
  expected[0]!.entries.unshift(deployment as never);
  t.deepEqual(github.targets, expected as AuditLog['targets']);
  t.deepEqual(emulator.log.filter((r) => r.write), [], 'reads only: the token may be read-only');
  // the branch with its history, the pull requests, then per target its deployments and its paths along the history
  t.true(emulator.log.length <= 2 + 2 * ALL.length, `${emulator.log.length} requests: ${emulator.log.map((r) => r.operationId).join(', ')}`);
  t.deepEqual(emulator.violations, []);
  t.is(git(bare, 'for-each-ref'), before.replace(/\n?$/, ''), 'nothing was written to the repository');
  for (const text of [JSON.stringify(github), JSON.stringify(remote)]) t.false(text.includes(GH_TOKEN) || text.includes(GIT_TOKEN));
});

/**
 * Pull-request mode on GitHub: three failures, three pull requests: one merged (its revert lands
 * through the merge commit), one left open, one closed unmerged.
 */
test('log on GitHub: pull requests open, merged and closed unmerged, and the revert a merge brought', async (t) => {
  const work = makeRepo();
  const c0 = commitAt(work, T('09:00'), { 'apps/podinfo/configmap.yaml': configMap('podinfo', '1.0.0'), 'apps/redis/configmap.yaml': configMap('redis', '7.0'), 'apps/web/configmap.yaml': configMap('web', 'v1') }, 'bootstrap prod');
  const bad1 = commitAt(work, T('09:10'), { 'apps/podinfo/configmap.yaml': configMap('podinfo', '1.1.0') }, 'podinfo 1.1.0');
  const bad2 = commitAt(work, T('09:20'), { 'apps/redis/configmap.yaml': configMap('redis', '7.2') }, 'redis 7.2');
  const bad3 = commitAt(work, T('09:30'), { 'apps/web/configmap.yaml': configMap('web', 'v2') }, 'web v2');
  const bare = path.join(tempDir('lastgood-audit-gh-'), 'gitops.git');
  git(work, 'clone', '-q', '--bare', work, bare);
  const emulator = await startGitHubEmulator({ bareRepo: bare, owner: 'acme', repo: 'gitops', token: GH_TOKEN });
  t.teardown(() => emulator.close());
  const dir = tempDir('lastgood-audit-');
  const config = writeFile(dir, 'lastgood.yaml', configText('https://github.com/acme/gitops', `  apiUrl: ${emulator.url}\n`, 'pull-request'));
  const env = { GITHUB_TOKEN: GH_TOKEN };
  const head1 = await runRevert(config, dir, 'podinfo', T('09:40'), bad1, c0, env);
  const head2 = await runRevert(config, dir, 'redis', T('09:41'), bad2, c0, env);
  const head3 = await runRevert(config, dir, 'web', T('09:42'), bad3, c0, env);
  const octokit = new Octokit({ auth: GH_TOKEN, baseUrl: emulator.url });
  const merged = await octokit.rest.pulls.merge({ owner: 'acme', repo: 'gitops', pull_number: 1, merge_method: 'merge' });
  await octokit.rest.pulls.update({ owner: 'acme', repo: 'gitops', pull_number: 3, state: 'closed' });
  const [p1, p2, p3] = emulator.pulls;
  const ro = await startGitHubEmulator({ bareRepo: bare, owner: 'acme', repo: 'gitops', token: GH_TOKEN, permissions: { contents: 'read', pullRequests: 'read', deployments: 'read' } });
  t.teardown(() => ro.close());
  // the same pull requests, seen through a read-only token
  ro.pulls.push(...emulator.pulls);
  const roConfig = writeFile(dir, 'ro.yaml', configText('https://github.com/acme/gitops', `  apiUrl: ${ro.url}\n`, 'pull-request'));
  const log = await logJson(roConfig, ['--since', '2026-11-01T00:00:00Z'], env);
  const iso = (s: string | null) => (s ? new Date(s).toISOString() : null);
  const htmlUrl = async (n: number) => (await new Octokit({ auth: GH_TOKEN, baseUrl: ro.url }).rest.pulls.get({ owner: 'acme', repo: 'gitops', pull_number: n })).data.html_url;
  const urls = [await htmlUrl(1), await htmlUrl(2), await htmlUrl(3)];
  const request = (p: typeof p1, target: Target, headSha: string, bad: string, state: string) => ({
    kind: 'request', at: iso(p!.created), noun: 'pull request', number: p!.number, url: urls[p!.number - 1],
    branch: `lastgood/${target}/${bad.slice(0, 12)}`, head: headSha, title: p!.title, state, mergedAt: state === 'merged' ? iso(p!.closed) : null,
    closedAt: state === 'open' ? null : iso(p!.closed), mergeCommit: state === 'merged' ? merged.data.sha : null, class: 'analysis', reverts: [bad], restores: c0, evidence: evidence(target),
  });
  const link = (sha: string) => `https://github.com/acme/gitops/commit/${sha}`;
  const mergeTime = git(bare, 'show', '-s', '--format=%cI', merged.data.sha);
  t.deepEqual(log.targets, [
    {
      name: 'podinfo', paths: ['apps/podinfo/'],
      entries: [
        {
          kind: 'revert', at: new Date(mergeTime).toISOString(), commit: head1, landedAs: merged.data.sha, via: 'request',
          request: { noun: 'pull request', number: 1, url: urls[0]! }, subject: subject('podinfo', c0), strategy: 'revert',
          verdict: 'failed', class: 'analysis', reverts: [bad1], restores: c0, lastKnownGoodVerified: false, evidence: evidence('podinfo'),
          details: details('podinfo', T('09:40')), reason: null, url: link(merged.data.sha), holds: { state: 'holds', commit: null, at: null, author: null, subject: null },
        },
        request(p1, 'podinfo', head1, bad1, 'merged'),
      ].sort((a, b) => (a.at! < b.at! ? 1 : a.at! > b.at! ? -1 : a.kind === 'revert' ? -1 : 1)),
    },
    { name: 'redis', paths: ['apps/redis/'], entries: [request(p2, 'redis', head2, bad2, 'open')] },
    { name: 'web', paths: ['apps/web/'], entries: [request(p3, 'web', head3, bad3, 'closed')] },
  ] as AuditLog['targets']);
  t.deepEqual(ro.log.filter((r) => r.write), []);
  t.deepEqual(ro.violations, []);
  t.deepEqual(emulator.violations, []);

  const md = await lastgood(['log', '--now', NOW, '--config', roConfig, '--since', '2026-11-01T00:00:00Z', '--markdown', '--target', 'web'], { env });
  t.is(md.code, 0, md.stderr);
  t.true(md.stdout.endsWith(`| pull request | [#3](${urls[2]}) | **closed**: \`lastgood/web/${bad3.slice(0, 12)}\`, reverts \`${bad3.slice(0, 12)}\` |\n`), md.stdout);
});

/** On a host lastgood opens no requests on, its review branches are what it pushed: merged into the branch, or still open. */
test('log over git and a local repository in pull-request mode: review branches merged and open', async (t) => {
  const work = makeRepo();
  const c0 = commitAt(work, T('09:00'), { 'apps/podinfo/configmap.yaml': configMap('podinfo', '1.0.0'), 'apps/redis/configmap.yaml': configMap('redis', '7.0'), 'apps/web/configmap.yaml': configMap('web', 'v1') }, 'bootstrap prod');
  const bad1 = commitAt(work, T('09:10'), { 'apps/podinfo/configmap.yaml': configMap('podinfo', '1.1.0') }, 'podinfo 1.1.0');
  const bad2 = commitAt(work, T('09:20'), { 'apps/redis/configmap.yaml': configMap('redis', '7.2') }, 'redis 7.2');
  const root = tempDir('lastgood-audit-branches-');
  const bare = path.join(root, 'gitops.git');
  git(root, 'clone', '-q', '--bare', work, bare);
  const server = await startGitHttpServer({ root, token: GIT_TOKEN });
  t.teardown(() => server.close());
  const dir = tempDir('lastgood-audit-');
  const config = writeFile(dir, 'lastgood.yaml', configText(`${server.url}/gitops.git`, '  insecure: true\n  auth: { tokenEnv: LASTGOOD_GIT_TOKEN }\n', 'pull-request'));
  const env = { LASTGOOD_GIT_TOKEN: GIT_TOKEN };
  const head1 = await runRevert(config, dir, 'podinfo', T('09:40'), bad1, c0, env);
  const head2 = await runRevert(config, dir, 'redis', T('09:41'), bad2, c0, env);
  // a person merges the podinfo branch on the host
  const clone = path.join(tempDir('lastgood-audit-clone-'), 'c');
  git(path.dirname(clone), 'clone', '-q', bare, clone);
  execFileSync('git', ['merge', '--no-ff', '-q', '-m', 'Merge lastgood/podinfo', `origin/lastgood/podinfo/${bad1.slice(0, 12)}`], { cwd: clone, env: gitEnv(T('09:50'), { name: 'Bob', email: 'bob@example.com' }) });
  const merge = git(clone, 'rev-parse', 'HEAD');
  git(clone, 'push', '-q', 'origin', 'main');
  const branchEntry = (target: Target, head: string, bad: string, state: string) => ({
    kind: 'request', at: at(state === 'merged' ? '09:40' : '09:41'), noun: 'branch', number: null, url: null, branch: `lastgood/${target}/${bad.slice(0, 12)}`, head,
    title: subject(target, c0), state, mergedAt: null, closedAt: null, mergeCommit: null, class: 'analysis', reverts: [bad], restores: c0, evidence: evidence(target),
  });
  const expected = [
    {
      name: 'podinfo', paths: ['apps/podinfo/'],
      entries: [
        {
          kind: 'revert', at: at('09:50'), commit: head1, landedAs: merge, via: 'merge', request: null, subject: subject('podinfo', c0), strategy: 'revert',
          verdict: 'failed', class: 'analysis', reverts: [bad1], restores: c0, lastKnownGoodVerified: false, evidence: evidence('podinfo'),
          details: details('podinfo', T('09:40')), reason: null, url: null, holds: { state: 'holds', commit: null, at: null, author: null, subject: null },
        },
        branchEntry('podinfo', head1, bad1, 'merged'),
      ],
    },
    { name: 'redis', paths: ['apps/redis/'], entries: [branchEntry('redis', head2, bad2, 'open')] },
    { name: 'web', paths: ['apps/web/'], entries: [] },
  ];
  t.deepEqual((await logJson(config, [], env)).targets, expected as AuditLog['targets']);

  // the same read from a local clone of the host (its branches are the host's)
  const local = path.join(tempDir('lastgood-audit-local-'), 'gitops.git');
  git(path.dirname(local), 'clone', '-q', '--mirror', bare, local);
  const localConfig = writeFile(dir, 'local.yaml', configText(local, '', 'pull-request'));
  t.deepEqual((await logJson(localConfig)).targets, expected as AuditLog['targets']);
});

test('log: bad usage exits 2 and names the problem; the published schema is the committed one', async (t) => {
  const dir = tempDir('lastgood-audit-');
  const work = makeRepo();
  commitAt(work, T('09:00'), { 'apps/podinfo/configmap.yaml': configMap('podinfo', '1.0.0') }, 'bootstrap');
  const config = writeFile(dir, 'lastgood.yaml', configText(work));
  const since = await lastgood(['log', '--config', config, '--since', 'last tuesday']);
  t.is(since.code, 2);
  t.regex(since.stderr, /--since "last tuesday": not a duration \(7d, 36h, 90m\) nor an ISO 8601 time/);
  const both = await lastgood(['log', '--config', config, '--json', '--markdown']);
  t.is(both.code, 2);
  t.regex(both.stderr, /--json and --markdown cannot be used together/);
  const unknown = await lastgood(['log', '--config', config, '--target', 'nope']);
  t.is(unknown.code, 2);
  t.regex(unknown.stderr, /unknown target "nope"/);
  // nothing in the window: each target says so
  const empty = await lastgood(['log', '--config', config, '--now', NOW, '--target', 'web']);
  t.is(empty.code, 0, empty.stderr);
  t.regex(empty.stdout, /\nweb \(apps\/web\/\): nothing in this window\n$/);

  const printed = await lastgood(['schema', '--log']);
  t.is(printed.code, 0);
  t.deepEqual(JSON.parse(printed.stdout), logJsonSchema());
  t.deepEqual(JSON.parse(readFileSync(path.join(ROOT, 'templates/log.schema.json'), 'utf8')), logJsonSchema(), 'templates/log.schema.json is stale: lastgood schema --log > templates/log.schema.json');
});

/** The example of docs/auditing.md, run as written in a copy of the clone: it prints what the page shows (SHAs, times and the clone's path aside). */
test("docs/auditing.md's example runs as written and prints what it shows", (t) => {
  // the "Auditing" page: the README's section it was
  const section = docsPage('auditing');
  const blocks = [...section.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map((m) => ({ lang: m[1]!, body: m[2]! }));
  const commands = blocks.find((b) => b.lang === 'sh')!.body.split('\n').filter(Boolean);
  const shown = blocks.find((b) => b.lang === '')!.body;
  const dir = tempDir('lastgood-readme-audit-');
  // `npx lastgood` is this clone's CLI (npx-shim.ts), as it is the installed package's
  const env = { ...process.env, PATH: `${npxShim()}:${path.join(ROOT, 'node_modules', '.bin')}:${process.env.PATH}`, HOME: dir, GIT_CONFIG_NOSYSTEM: '1' };
  const outputs = commands.map((c) => execFileSync('bash', ['-c', c], { cwd: dir, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }));
  const normal = (text: string) => text.replace(/\b[0-9a-f]{12}\b/g, 'SHA').replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/g, 'TIME').replace(/ in \S*lastgood-demo\/gitops,/, ' in …/lastgood-demo/gitops,');
  t.is(normal(outputs.at(-1)!), normal(shown));
});

/**
 * What each merge-request host tells of a request's end, as its API gives it: GitLab a merge time
 * (its `closed_at` stays null on a merge), Gitea, Bitbucket Data Center and Azure DevOps a merge
 * time that is also the close time, Bitbucket Cloud neither (its pull requests carry no close time).
 */
const TELLS: Record<(typeof HOSTS)[number]['provider'], { mergedAt: boolean; closedAtOnMerge: boolean; closedAt: boolean }> = {
  gitlab: { mergedAt: true, closedAtOnMerge: false, closedAt: true },
  gitea: { mergedAt: true, closedAtOnMerge: true, closedAt: true },
  bitbucket: { mergedAt: false, closedAtOnMerge: false, closedAt: false },
  'bitbucket-server': { mergedAt: true, closedAtOnMerge: true, closedAt: true },
  'azure-devops': { mergedAt: true, closedAtOnMerge: true, closedAt: true },
};

/**
 * On each merge-request host (GitLab, Gitea/Forgejo, Bitbucket Cloud and Data Center, Azure DevOps,
 * through the clients lastgood uses against emulators checked against each host's published API
 * description): three failures, three requests opened by `run`: one merged by a person (its revert
 * reaches the branch through the merge commit, changed since by the next release), one closed
 * unmerged, one left open. The host's clock is the test's, so every time is asserted.
 */
for (const host of HOSTS) {
  test(`log on ${host.provider}: a request merged, one closed unmerged and one open, from the host's API`, async (t) => {
    const s = await forgeScenario(t, host);
    const model = s.emulator.model;
    const D = (hhmm: string) => `2026-11-01T${hhmm}:00Z`;
    let clock = D('12:10');
    model.now = () => clock;
    const pushAt = (when: string, tag: string) => {
      const sha = commitAt(s.work, when, { [`${P}values.yaml`]: values(tag) }, `podinfo ${tag}`);
      git(s.work, 'push', '-q', 'origin', 'HEAD:main');
      return sha;
    };
    const first = (await s.runOnce()).targets[0]!;
    t.is(first.action, 'revert', first.reason);
    // a person merges the first request on the host at 12:20
    const branch1 = `lastgood/${TARGET}/${s.bad.slice(0, 12)}`;
    git(s.work, 'fetch', '-q', 'origin', branch1);
    execFileSync('git', ['merge', '--no-ff', '-q', '-m', `Merge ${branch1}`, 'FETCH_HEAD'], { cwd: s.work, env: gitEnv(D('12:20'), { name: 'Maintainer', email: 'maintainer@example.com' }) });
    const merge = git(s.work, 'rev-parse', 'HEAD');
    git(s.work, 'push', '-q', 'origin', 'HEAD:main');
    clock = D('12:20');
    mergeModelRequest(model, model.requests[0]!, merge);
    // the next release fails: a second request, closed unmerged at 12:40
    const bad2 = pushAt(D('12:25'), '1.2.0');
    clock = D('12:30');
    const second = (await s.runOnce(s.failed(bad2, merge))).targets[0]!;
    t.is(second.action, 'revert', second.reason);
    clock = D('12:40');
    closeModelRequest(model, model.requests[1]!);
    // and the one after: a third request, left open
    const bad3 = pushAt(D('12:45'), '1.3.0');
    clock = D('12:50');
    const third = (await s.runOnce(s.failed(bad3, bad2))).targets[0]!;
    t.is(third.action, 'revert', third.reason);
    t.deepEqual(model.requests.map((r) => r.state), ['merged', 'closed', 'open']);

    s.emulator.resetLog();
    const repo = await s.backend();
    const read = (since: string) => readAuditLog({ repo, branch: 'main', targets: [{ name: TARGET, paths: [P] }], since: new Date(since), why: `--since ${since}`, now: new Date(D('13:00')) });
    const log = await read(D('00:00'));
    AuditLogSchema.parse(JSON.parse(formatLogJson(log)));
    const iso = (hhmm: string) => D(hhmm).replace('Z', '.000Z');
    const noun = host.provider === 'gitlab' ? 'merge request' : 'pull request';
    const url = (n: number) => `${s.emulator.url}${host.requestPage(n)}`;
    const tells = TELLS[host.provider];
    const subject = (lkg: string) => `lastgood: revert ${TARGET} to ${lkg.slice(0, 12)} (Kustomization flux-system/apps HealthCheckFailed)`;
    const evidence = ['kustomize.toolkit.fluxcd.io/Kustomization flux-system/apps state=failed reason=HealthCheckFailed'];
    const request = (n: number, head: string, bad: string, lkg: string, created: string, state: 'merged' | 'closed' | 'open', ended?: string) => ({
      kind: 'request', at: iso(created), noun, number: n, url: url(n), branch: `lastgood/${TARGET}/${bad.slice(0, 12)}`, head, title: `lastgood: revert ${TARGET} to ${lkg.slice(0, 12)} (failed, analysis)`, state,
      mergedAt: state === 'merged' && tells.mergedAt ? iso(ended!) : null,
      closedAt: (state === 'closed' && tells.closedAt) || (state === 'merged' && tells.closedAtOnMerge) ? iso(ended!) : null,
      mergeCommit: state === 'merged' ? merge : null, class: 'analysis', reverts: [bad], restores: lkg, evidence,
    });
    t.deepEqual(log.targets, [{
      name: TARGET, paths: [P],
      entries: [
        request(3, third.commit!, bad3, bad2, '12:50', 'open'),
        request(2, second.commit!, bad2, merge, '12:30', 'closed', '12:40'),
        {
          kind: 'revert', at: iso('12:20'), commit: first.commit!, landedAs: merge, via: 'request', request: { noun, number: 1, url: url(1) }, subject: subject(s.good), strategy: 'revert',
          verdict: 'failed', class: 'analysis', reverts: [s.bad], restores: s.good, lastKnownGoodVerified: false, evidence,
          details: ["kustomize.toolkit.fluxcd.io/Kustomization flux-system/apps: failed (HealthCheckFailed) since 2026-11-01T12:00:00.000Z: health check failed after 5m0s: timeout waiting for: [Deployment/prod/podinfo status: 'InProgress']"],
          reason: null, url: `${s.emulator.url}${host.commitPage(merge)}`,
          holds: { state: 'released-since', commit: bad2, at: iso('12:25'), author: 'Dev <dev@example.com>', subject: 'podinfo 1.2.0' },
        },
        request(1, first.commit!, s.bad, s.good, '12:10', 'merged', '12:20'),
      ],
    }] as AuditLog['targets']);
    t.deepEqual(log.notes, []);

    // a window from 12:30: the request merged at 12:20 is before it; the closed one and the open one are in it
    const later = await read(D('12:30'));
    t.deepEqual(later.targets[0]!.entries.filter((e): e is RequestEntry => e.kind === 'request').map((e) => [e.number, e.state]), [[3, 'open'], [2, 'closed']]);
    t.deepEqual(s.emulator.log.filter((r) => r.write), [], 'the log wrote nothing');
    t.deepEqual(s.emulator.violations, []);
  });
}
