import test from 'ava';
import path from 'node:path';
import { pino } from 'pino';
import { ConfigSchema } from '../src/config/schema.ts';
import { createGitHubBackend } from '../src/deliver/github/index.ts';
import { run } from '../src/engine/index.ts';
import { RemoteError } from '../src/errors.ts';
import type { Observed } from '../src/observe/types.ts';
import type { Change, DeliveryMode } from '../src/repo/types.ts';
import { startGitHubEmulator, type EmulatorOptions } from './support/github-emulator.ts';
import { commit, git, makeRepo, tempDir } from './support/git.ts';
import { kustomization } from './support/objects.ts';

/**
 * Issue 14: lastgood's commits on GitHub are made by GitHub itself (GraphQL createCommitOnBranch),
 * signed and Verified, with `expectedHeadOid` as the compare-and-swap on the branch; what the
 * mutation cannot express goes through REST and says so; branch protection refusals name the rule.
 * Everything through the real @octokit/rest / @octokit/graphql against the GitHub emulator.
 */

const TOKEN = 'ghs_signedCommitsTestToken0123456789';
const P = 'apps/podinfo/overlays/prod/';
const NOW = new Date('2026-11-01T12:05:00Z');

interface Scenario {
  bare: string;
  good: string;
  bad: string;
  later: string;
}

function scenario(): Scenario {
  const work = makeRepo();
  const good = commit(work, { [`${P}values.yaml`]: 'image:\n  tag: 1.0.0\n', 'apps/other/x.yaml': 'a: 1\n' }, 'podinfo 1.0.0');
  const bad = commit(work, { [`${P}values.yaml`]: 'image:\n  tag: 1.1.0\n' }, 'podinfo 1.1.0');
  const later = commit(work, { 'apps/other/x.yaml': 'a: 2\n' }, 'other: a=2');
  const bare = path.join(tempDir('lastgood-signed-'), 'gitops.git');
  git(work, 'clone', '-q', '--bare', work, bare);
  return { bare, good, bad, later };
}

async function emulate(t: { teardown(fn: () => unknown): void }, s: Scenario, extra: Partial<EmulatorOptions> = {}) {
  const emulator = await startGitHubEmulator({ bareRepo: s.bare, owner: 'acme', repo: 'gitops', token: TOKEN, ...extra });
  t.teardown(() => emulator.close());
  const backend = createGitHubBackend({ owner: 'acme', repo: 'gitops', token: TOKEN, baseUrl: emulator.url, writeIntervalMs: 0, retryUnitMs: 1 });
  return { emulator, backend };
}

/** The engine's whole path (guards, locate, plan, deliver) for one failing target. */
function runFailing(s: Scenario, backend: ReturnType<typeof createGitHubBackend>, mode: DeliveryMode, emulatorUrl: string) {
  const config = ConfigSchema.parse({
    repo: { url: 'https://github.com/acme/gitops', apiUrl: emulatorUrl },
    defaults: { mode, confirmations: 1 },
    targets: [{ name: 'podinfo-prod', paths: [P], resources: [{ apiVersion: 'kustomize.toolkit.fluxcd.io/v1', kind: 'Kustomization', namespace: 'flux-system', name: 'apps' }] }],
  });
  const observed: Observed[] = [{ object: kustomization({ attempted: `main@sha1:${s.bad}`, applied: `main@sha1:${s.good}`, ready: 'False' }) as Observed['object'], source: 'test' }];
  return run({ config, observed, now: NOW, repo: backend, dryRun: false, log: pino({ level: 'silent' }) });
}

test('commit mode: the revert commit is created by createCommitOnBranch, signed by GitHub, on top of the head', async (t) => {
  const s = scenario();
  const { emulator, backend } = await emulate(t, s);
  const report = await runFailing(s, backend, 'commit', emulator.url);
  const out = report.targets[0]!;
  t.is(out.action, 'revert', out.reason);
  t.true(out.created);
  const head = git(s.bare, 'rev-parse', 'main');
  t.is(out.commit, head);
  t.is(git(s.bare, 'rev-parse', 'main^'), s.later);
  t.is(git(s.bare, 'show', `main:${P}values.yaml`), 'image:\n  tag: 1.0.0');
  t.true(emulator.signed.has(head), 'Verified');
  t.regex(git(s.bare, 'cat-file', 'commit', head), /^gpgsig /m);
  t.regex(git(s.bare, 'log', '-1', '--format=%(trailers)', head), new RegExp(`Lastgood-Target: podinfo-prod\\nLastgood-Reverts: ${s.bad}`));
  t.deepEqual(emulator.log.filter((r) => r.write).map((r) => r.operationId), ['graphql:mutation(createCommitOnBranch)']);
  t.deepEqual(emulator.violations, []);
});

test('pull-request mode: the PR branch\'s commit is signed; branch, commit and PR are one mutation document', async (t) => {
  const s = scenario();
  const { emulator, backend } = await emulate(t, s, { labels: ['lastgood', 'rollback'] });
  const report = await runFailing(s, backend, 'pull-request', emulator.url);
  const out = report.targets[0]!;
  t.true(out.created, out.reason);
  const pull = emulator.pulls[0]!;
  t.is(pull.head, `lastgood/podinfo-prod/${s.bad.slice(0, 12)}`);
  const tip = git(s.bare, 'rev-parse', pull.head);
  t.is(out.commit, tip);
  t.true(emulator.signed.has(tip));
  t.is(git(s.bare, 'rev-parse', `${tip}^`), s.later);
  t.is(git(s.bare, 'rev-parse', 'main'), s.later, 'main is untouched');
  t.deepEqual(pull.labels, ['lastgood', 'rollback']);
  t.deepEqual(emulator.log.filter((r) => r.write).map((r) => r.operationId), [
    'graphql:mutation(createRef,createCommitOnBranch,createPullRequest)',
    'graphql:mutation(addLabelsToLabelable)',
  ]);
  t.deepEqual(emulator.violations, []);
});

test('a head that moves between plan and write: the write is refused (expectedHeadOid), the engine re-plans, nothing is lost', async (t) => {
  const s = scenario();
  const { emulator, backend } = await emulate(t, s);
  // another writer pushes to main right when lastgood writes
  let pushed: string | undefined;
  emulator.onBeforeRefUpdate(async (ref) => {
    if (ref !== 'refs/heads/main' || pushed) return;
    const g = emulator.git;
    const head = await g.text(['rev-parse', 'refs/heads/main']);
    const tree = await g.text(['rev-parse', `${head}^{tree}`]);
    pushed = (await g.run(['commit-tree', tree, '-p', head, '-m', 'someone else'], undefined, { GIT_AUTHOR_NAME: 'O', GIT_AUTHOR_EMAIL: 'o@example.com', GIT_COMMITTER_NAME: 'O', GIT_COMMITTER_EMAIL: 'o@example.com' })).toString().trim();
    await g.updateRef('refs/heads/main', pushed, head);
  });
  const report = await runFailing(s, backend, 'commit', emulator.url);
  const out = report.targets[0]!;
  t.true(out.created, out.reason);
  t.truthy(pushed);
  t.is(git(s.bare, 'rev-parse', 'main'), out.commit!);
  t.is(git(s.bare, 'rev-parse', 'main^'), pushed!, 'the other writer\'s commit is kept, the revert is on top of it');
  t.is(git(s.bare, 'log', '--format=%s', 'main').split('\n').filter((l) => /revert/i.test(l)).length, 1, 'one revert');
  const writes = emulator.log.filter((r) => r.operationId === 'graphql:mutation(createCommitOnBranch)');
  t.is(writes.length, 2, 'refused once, then written on the new head');
  t.deepEqual(emulator.violations, []);
});

/** A change createCommitOnBranch cannot express: a file with mode 100755. */
function executableChange(s: Scenario, parent: string, overrides: Partial<Change> = {}): Change {
  return {
    target: 'podinfo-prod', branch: 'main', paths: [P], parent,
    files: [{ path: `${P}hook.sh`, mode: '100755', content: new TextEncoder().encode('#!/bin/sh\necho ok\n') }],
    message: `Revert podinfo-prod\n\nLastgood-Target: podinfo-prod\nLastgood-Reverts: ${s.bad}\nLastgood-Restores: ${s.good}\n`,
    author: { name: 'lastgood', email: 'lastgood@example.com', timestamp: 1_793_000_000, timezoneOffset: 0 },
    bad: [s.bad], lastKnownGood: s.good,
    ...overrides,
  };
}

test('a mode change (or a symlink) goes through the REST git-data API, and the delivery and the PR say so', async (t) => {
  const s = scenario();
  const { emulator, backend } = await emulate(t, s);
  const commitMode = await backend.deliver(executableChange(s, s.later), 'commit');
  t.true(commitMode.created);
  t.regex(commitMode.warnings?.join('\n') ?? '', /REST git-data API, not createCommitOnBranch \(createCommitOnBranch cannot write file modes, symlinks or submodules: apps\/podinfo\/overlays\/prod\/hook\.sh is an executable file \(100755\)\).*unsigned/);
  t.is(git(s.bare, 'ls-tree', 'main', `${P}hook.sh`).split(' ')[0], '100755', 'the mode is written');
  t.false(emulator.signed.has(commitMode.commit), 'a user token\'s REST commit is unsigned');
  t.true(emulator.log.some((r) => r.operationId === 'git/create-commit'));

  const symlink = executableChange(s, commitMode.commit, { files: [{ path: `${P}current`, mode: '120000', content: new TextEncoder().encode('values.yaml') }], pullRequest: { title: 'Revert', body: 'evidence', labels: [], reviewers: [], assignees: [], draft: false, autoMerge: false } });
  const pr = await backend.deliver(symlink, 'pull-request');
  t.true(pr.created);
  t.regex(pr.warnings?.join('\n') ?? '', /current is a symlink \(120000\)/);
  // quoted as code: it names files of the repository (revert/markup.ts)
  t.regex(emulator.pulls[0]!.body ?? '', /lastgood: this revert's commit was `written through the REST git-data API/);
  t.is(git(s.bare, 'ls-tree', pr.branch, `${P}current`).split(' ')[0], '120000');
  t.deepEqual(emulator.violations, []);
});

test('an installation token\'s REST commit is signed by GitHub too (no custom author is sent), and the delivery says so truthfully', async (t) => {
  const s = scenario();
  const { emulator, backend } = await emulate(t, s, { tokenKind: 'installation' });
  const result = await backend.deliver(executableChange(s, s.later), 'commit');
  t.true(emulator.signed.has(result.commit));
  t.regex(result.warnings?.join('\n') ?? '', /REST git-data API.*GitHub signed it \(Verified\)/);
  t.notRegex(result.warnings?.join('\n') ?? '', /unsigned/);
  // GitHub signs an API commit only without a custom author or committer: the token's identity is the author
  t.regex(git(s.bare, 'log', '-1', '--format=%an <%ae>', result.commit), /^lastgood-bot </);
  t.deepEqual(emulator.violations, []);
});

test('a planned deletion of a path the parent does not have is left out: GitHub would refuse the whole commit for it', async (t) => {
  const s = scenario();
  const { emulator, backend } = await emulate(t, s);
  const change = executableChange(s, s.later, {
    files: [
      { path: `${P}values.yaml`, mode: '100644', content: new TextEncoder().encode('image:\n  tag: 1.0.0\n') },
      { path: `${P}gone.yaml`, delete: true },
    ],
  });
  const commitMode = await backend.deliver(change, 'commit');
  t.true(commitMode.created);
  t.is(git(s.bare, 'show', `main:${P}values.yaml`), 'image:\n  tag: 1.0.0');
  t.is(git(s.bare, 'diff', '--name-only', s.later, 'main'), `${P}values.yaml`, 'only the real change');
  // the REST path (a mode) too
  const rest = executableChange(s, commitMode.commit, { files: [...executableChange(s, commitMode.commit).files, { path: `${P}gone.yaml`, delete: true }] });
  const viaRest = await backend.deliver(rest, 'commit');
  t.true(viaRest.created);
  t.deepEqual(emulator.violations, []);
});

test('"Require signed commits": createCommitOnBranch is accepted; the unsigned REST path is refused with a message naming the rule', async (t) => {
  const s = scenario();
  const { emulator, backend } = await emulate(t, s, { protection: { main: { requiredSignatures: true } } });
  const signed = await runFailing(s, backend, 'commit', emulator.url);
  t.true(signed.targets[0]!.created, signed.targets[0]!.reason);
  t.true(emulator.signed.has(git(s.bare, 'rev-parse', 'main')));

  const head = git(s.bare, 'rev-parse', 'main');
  const error = await t.throwsAsync(backend.deliver(executableChange(s, head), 'commit'), { instanceOf: RemoteError });
  t.regex(error!.message, /refused by branch protection on main \("Require signed commits"\): Repository rule violations found Commits must have verified signatures\./);
  t.regex(error!.message, /GitHub App or GITHUB_TOKEN/);
  t.is(git(s.bare, 'rev-parse', 'main'), head, 'nothing written to main');
  t.deepEqual(emulator.violations, []);
});

test('"Require a pull request": a direct write is refused, naming the rule; pull-request mode works', async (t) => {
  const s = scenario();
  const { emulator, backend } = await emulate(t, s, { protection: { main: { requirePullRequest: true } } });
  const direct = await runFailing(s, backend, 'commit', emulator.url);
  const out = direct.targets[0]!;
  t.is(out.error?.code, 3);
  t.regex(out.error?.message ?? '', /refused by branch protection on main \("Require a pull request before merging"\).*Changes must be made through a pull request.*use mode: pull-request/);
  t.is(git(s.bare, 'rev-parse', 'main'), s.later);
  const pr = await runFailing(s, backend, 'pull-request', emulator.url);
  t.true(pr.targets[0]!.created, pr.targets[0]!.reason);
  t.is(emulator.pulls.length, 1);
  t.deepEqual(emulator.violations, []);
});
