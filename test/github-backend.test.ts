import test from 'ava';
import { firstParentLog } from '../src/history/graph.ts';
import path from 'node:path';
import { closeSupersededPullRequests, createGitHubBackend, pullRequestMarker, type GitHubBackendOptions } from '../src/deliver/github/index.ts';
import { InputError, RemoteError } from '../src/errors.ts';
import type { Change } from '../src/repo/types.ts';
import { startGitHubEmulator, type Emulator } from './support/github-emulator.ts';
import { commit, git, makeRepo, tempDir } from './support/git.ts';

const TOKEN = 'ghs_emulatorTokenForTests0123456789';
const OWNER = 'acme';
const REPO = 'gitops';

interface Fixture {
  bare: string;
  /** commits on main, oldest first */
  c: string[];
  head: string;
}

let template: Fixture | undefined;

/** A fresh bare copy (hard-linked objects) of one template repository, built once per file. */
function buildRepo(): Fixture {
  template ??= buildTemplate();
  const bare = path.join(tempDir('lastgood-gh-'), 'gitops.git');
  git(template.bare, 'clone', '-q', '--bare', template.bare, bare);
  return { ...template, bare, c: [...template.c] };
}

/** A config repository: podinfo gets a good and a bad release, another app changes in between. */
function buildTemplate(): Fixture {
  const work = makeRepo();
  const c: string[] = [];
  c.push(commit(work, { 'README.md': '# gitops\n', 'apps/podinfo/deployment.yaml': 'image: podinfo:6.0.0\n', 'apps/podinfo/service.yaml': 'port: 9898\n', 'apps/other/app.yaml': 'image: other:1\n' }, 'initial'));
  c.push(commit(work, { 'apps/podinfo/deployment.yaml': 'image: podinfo:6.1.0\n', 'apps/podinfo/hpa.yaml': 'max: 4\n' }, 'podinfo 6.1.0 (good)'));
  c.push(commit(work, { 'apps/other/app.yaml': 'image: other:2\n' }, 'other 2'));
  c.push(commit(work, { 'apps/podinfo/deployment.yaml': 'image: podinfo:6.2.0\n', 'apps/podinfo/hpa.yaml': null, 'apps/podinfo/config.yaml': 'debug: true\n' }, 'podinfo 6.2.0 (bad)\n\nwith a body\n'));
  c.push(commit(work, { 'apps/other/app.yaml': 'image: other:3\n' }, 'other 3'));
  const bare = path.join(tempDir('lastgood-gh-'), 'gitops.git');
  git(work, 'clone', '-q', '--bare', work, bare);
  return { bare, c, head: c[c.length - 1]! };
}

async function setup(t: { teardown(fn: () => unknown): void }, extra: Partial<Parameters<typeof startGitHubEmulator>[0]> = {}, backendExtra: Partial<GitHubBackendOptions> = {}) {
  const fx = buildRepo();
  const emulator = await startGitHubEmulator({ bareRepo: fx.bare, owner: OWNER, repo: REPO, token: TOKEN, ...extra });
  t.teardown(() => emulator.close());
  const backend = createGitHubBackend({ owner: OWNER, repo: REPO, token: TOKEN, baseUrl: emulator.url, writeIntervalMs: 0, retryUnitMs: 5, ...backendExtra });
  return { fx, emulator, backend };
}

const AUTHOR = { name: 'lastgood', email: 'lastgood@example.com', timestamp: 1_793_000_000, timezoneOffset: -120 };

/** Restores apps/podinfo/ to c[1] on top of head: two blobs reused, one deleted, one uploaded. */
function revertChange(fx: Fixture, overrides: Partial<Change> = {}): Change {
  const oid = (rev: string, file: string) => git(fx.bare, 'rev-parse', `${rev}:${file}`);
  return {
    target: 'podinfo-prod',
    branch: 'main',
    paths: ['apps/podinfo/'],
    parent: fx.head,
    files: [
      { path: 'apps/podinfo/deployment.yaml', mode: '100644', oid: oid(fx.c[1]!, 'apps/podinfo/deployment.yaml') },
      { path: 'apps/podinfo/hpa.yaml', mode: '100644', oid: oid(fx.c[1]!, 'apps/podinfo/hpa.yaml') },
      { path: 'apps/podinfo/config.yaml', delete: true },
      { path: 'apps/podinfo/NOTE.md', mode: '100644', content: new TextEncoder().encode('reverted by lastgood\n') },
    ],
    message: `Revert podinfo-prod to ${fx.c[1]!.slice(0, 12)}\n\nLastgood-Target: podinfo-prod\nLastgood-Reverts: ${fx.c[3]}\nLastgood-Restores: ${fx.c[1]}\n`,
    author: AUTHOR,
    bad: [fx.c[3]!],
    lastKnownGood: fx.c[1]!,
    pullRequest: {
      title: 'Revert podinfo-prod to its last-known-good revision',
      body: '## Evidence\n\n- flagger.app/Canary prod/podinfo state=failed reason=Failed\n',
      labels: ['lastgood', 'revert'],
      reviewers: ['alice'],
      assignees: ['bob'],
      draft: true,
      autoMerge: false,
    },
    ...overrides,
  };
}

const noViolations = (t: { deepEqual(a: unknown, b: unknown, m?: string): void }, emulator: Emulator) => t.deepEqual(emulator.violations, [], 'OpenAPI violations');

test('reader methods agree with native git', async (t) => {
  const { fx, emulator, backend } = await setup(t);
  const { bare, c, head } = fx;

  t.is(await backend.head('main'), head);
  await t.throwsAsync(backend.head('nope'), { instanceOf: InputError });
  t.is(await backend.resolveCommit(c[2]!.slice(0, 8)), c[2]);
  t.is(await backend.resolveCommit(c[2]!), c[2]);
  t.is(await backend.resolveCommit('deadbeef'), undefined);
  t.is(await backend.resolveCommit('not-a-sha'), undefined);

  const info = await backend.readCommit(c[3]!);
  t.deepEqual(info.parents, [c[2]]);
  t.is(info.tree, git(bare, 'rev-parse', `${c[3]}^{tree}`));
  t.is(info.message.trimEnd(), git(bare, 'log', '-1', '--format=%B', c[3]!).trimEnd());
  t.is(info.author.email, 'dev@example.com');
  t.is(info.author.timestamp, Number(git(bare, 'log', '-1', '--format=%at', c[3]!)));

  const native = (...args: string[]) => git(bare, 'rev-list', '--first-parent', ...args).split('\n').filter(Boolean);
  const oids = (list: Array<{ oid: string }>) => list.map((x) => x.oid);
  // history semantics are the engine's (src/history/graph.ts), read through this backend's primitives
  t.deepEqual(oids(await firstParentLog(backend, head, { paths: ['apps/podinfo/'] })), native(head, '--', 'apps/podinfo'));
  t.deepEqual(oids(await firstParentLog(backend, head, { paths: ['apps/podinfo/', 'apps/other/app.yaml'] })), native(head, '--', 'apps/podinfo', 'apps/other/app.yaml'));
  t.deepEqual(oids(await firstParentLog(backend, head, { paths: ['apps/podinfo/'], exclude: c[1] })), native(`${c[1]}..${head}`, '--', 'apps/podinfo'));
  t.deepEqual(oids(await firstParentLog(backend, head, { paths: ['apps/podinfo/'], exclude: c[2] })), [c[3]]);
  t.deepEqual(oids(await firstParentLog(backend, head, { paths: ['apps/podinfo/'], limit: 2 })), native(head, '-n', '2', '--', 'apps/podinfo'));
  t.deepEqual(oids(await firstParentLog(backend, head)), native(head));
  t.deepEqual(oids(await firstParentLog(backend, head, { exclude: c[2], limit: 5 })), [c[4], c[3]]);
  t.deepEqual(await firstParentLog(backend, head, { paths: ['apps/none/'] }), []);

  const lsTree = (rev: string, p: string) =>
    new Map(
      git(bare, 'ls-tree', '-r', rev, '--', p)
        .split('\n')
        .filter(Boolean)
        .map((line) => {
          const [meta = '', file = ''] = line.split('\t');
          const [mode = '', , oid = ''] = meta.split(' ');
          return [file, { oid, mode }] as const;
        }),
    );
  t.deepEqual(await backend.listFiles(c[1]!, ['apps/podinfo/']), lsTree(c[1]!, 'apps/podinfo/'));
  t.deepEqual(await backend.listFiles(head, ['apps/podinfo/', 'README.md']), new Map([...lsTree(head, 'apps/podinfo/'), ...lsTree(head, 'README.md')]));
  t.is((await backend.listFiles(head, ['apps/missing/'])).size, 0);

  t.is(await backend.pathOid(head, 'apps/podinfo/deployment.yaml'), git(bare, 'rev-parse', `${head}:apps/podinfo/deployment.yaml`));
  t.is(await backend.pathOid(head, 'apps/podinfo/'), git(bare, 'rev-parse', `${head}:apps/podinfo`));
  t.is(await backend.pathOid(head, 'apps/podinfo/hpa.yaml'), undefined);

  const blob = await backend.readBlob(git(bare, 'rev-parse', `${c[1]}:apps/podinfo/deployment.yaml`));
  t.is(new TextDecoder().decode(blob), 'image: podinfo:6.1.0\n');

  t.true(await backend.isAncestor(c[0]!, head));
  t.true(await backend.isAncestor(head, head));
  t.false(await backend.isAncestor(head, c[0]!));
  noViolations(t, emulator);
});

test('deliver pull-request opens one PR with the right tree, labels and marker; a second run updates nothing', async (t) => {
  const { fx, emulator, backend } = await setup(t);
  const change = revertChange(fx);
  const first = await backend.deliver(change, 'pull-request');

  t.true(first.created);
  t.is(first.branch, `lastgood/podinfo-prod/${fx.c[3]!.slice(0, 12)}`);
  t.is(first.pullRequest?.number, 1);
  t.regex(first.pullRequest?.url ?? '', /\/acme\/gitops\/pull\/1$/);
  t.is(git(fx.bare, 'rev-parse', first.branch), first.commit);
  t.is(git(fx.bare, 'rev-parse', 'main'), fx.head, 'pull-request mode leaves main alone');

  // the commit: parent = head, made and signed by GitHub (createCommitOnBranch: the token's user is
  // the author, GitHub the committer), tree = head with podinfo restored
  t.is(git(fx.bare, 'rev-parse', `${first.commit}^`), fx.head);
  t.is(git(fx.bare, 'log', '-1', '--format=%an <%ae> / %cn <%ce>', first.commit), 'lastgood-bot <lastgood-bot@users.noreply.github.com> / GitHub <noreply@github.com>');
  t.true(emulator.signed.has(first.commit), 'Verified');
  t.regex(git(fx.bare, 'cat-file', 'commit', first.commit), /^gpgsig -----BEGIN PGP SIGNATURE-----/m);
  t.is(git(fx.bare, 'log', '-1', '--format=%B', first.commit).trimEnd(), change.message.trimEnd());
  t.is(git(fx.bare, 'ls-tree', '-r', '--name-only', first.commit, 'apps/podinfo/'), ['apps/podinfo/NOTE.md', 'apps/podinfo/deployment.yaml', 'apps/podinfo/hpa.yaml', 'apps/podinfo/service.yaml'].join('\n'));
  for (const file of ['apps/podinfo/deployment.yaml', 'apps/podinfo/hpa.yaml', 'apps/podinfo/service.yaml']) {
    t.is(git(fx.bare, 'rev-parse', `${first.commit}:${file}`), git(fx.bare, 'rev-parse', `${fx.c[1]}:${file}`), file);
  }
  t.is(git(fx.bare, 'show', `${first.commit}:apps/podinfo/NOTE.md`), 'reverted by lastgood');
  t.is(git(fx.bare, 'rev-parse', `${first.commit}:apps/other`), git(fx.bare, 'rev-parse', `${fx.head}:apps/other`), 'the other app is untouched');

  t.is(emulator.pulls.length, 1);
  const pr = emulator.pulls[0]!;
  t.is(pr.head, first.branch);
  t.is(pr.base, 'main');
  t.true(pr.draft);
  t.deepEqual(pr.labels, ['lastgood', 'revert']);
  t.deepEqual(pr.reviewers, ['alice']);
  t.deepEqual(pr.assignees, ['bob']);
  t.is(pr.title, change.pullRequest!.title);
  t.true(pr.body!.startsWith(change.pullRequest!.body.trimEnd()));
  t.true(pr.body!.includes(pullRequestMarker(change)));
  t.true(pr.body!.includes(`<!-- lastgood:target=podinfo-prod bad=${fx.c[3]} -->`));
  // no REST git-data write: the branch, the commit and the PR are one GraphQL mutation document
  t.deepEqual(emulator.log.filter((r) => r.write).map((r) => r.operationId), [
    'graphql:mutation(createRef,createCommitOnBranch,createPullRequest)',
    // labels the repository does not have yet: REST creates them (GraphQL cannot)
    'issues/add-labels',
    'graphql:mutation(requestReviews,addAssigneesToAssignable)',
  ]);

  const writesBefore = emulator.log.filter((r) => r.write).length;
  const refBefore = git(fx.bare, 'rev-parse', first.branch);
  const second = await backend.deliver(change, 'pull-request');
  t.false(second.created);
  t.deepEqual(second.pullRequest, first.pullRequest);
  t.is(second.commit, first.commit);
  t.is(emulator.pulls.length, 1);
  t.is(git(fx.bare, 'rev-parse', first.branch), refBefore, 'the branch did not move');
  const newWrites = emulator.log.filter((r) => r.write).slice(writesBefore).map((r) => r.operationId);
  // the PR already shows this change: nothing is written
  t.deepEqual(newWrites, []);
  t.is(pr.comments.length, 0);

  // other evidence of the same failure (another cluster's words, a later time), the same tree: the
  // request is not rewritten and no comment is made (issue 35: a fleet rewrote it N−1 times)
  const writesBeforeEvidence = emulator.log.filter((r) => r.write).length;
  const updated = await backend.deliver(revertChange(fx, { pullRequest: { ...change.pullRequest!, body: '## Evidence\n\n- the canary failed again at 10:42\n' } }), 'pull-request');
  t.false(updated.created);
  t.is(updated.pullRequest?.number, 1);
  t.is(emulator.pulls.length, 1);
  t.false(pr.body!.includes('failed again at 10:42'), 'the description is the first one, as written');
  t.true(pr.body!.includes(pullRequestMarker(change)));
  t.is(pr.comments.length, 0);
  t.is(emulator.log.filter((r) => r.write).length, writesBeforeEvidence, 'nothing written');

  // a different tree (the plan changed): the PR branch is force-moved to the new commit, the description follows, one comment says so
  const moved = await backend.deliver(revertChange(fx, { files: change.files.slice(0, 1), pullRequest: { ...change.pullRequest!, body: '## Evidence\n\n- the canary failed again at 10:42\n' } }), 'pull-request');
  t.false(moved.created);
  t.true(pr.body!.includes('failed again at 10:42'));
  t.is(pr.comments.length, 1);
  t.regex(pr.comments[0]!.body, /lastgood planned this revert again \(the branch it reverts on moved\) and updated the description\. The branch now points at [0-9a-f]{40}\./);
  t.not(moved.commit, first.commit);
  t.is(git(fx.bare, 'rev-parse', first.branch), moved.commit);
  t.true(emulator.signed.has(moved.commit), 'the new commit is signed too (made on a short-lived branch, then the PR branch moved to it)');
  t.is(git(fx.bare, 'for-each-ref', '--format=%(refname)', 'refs/heads/lastgood-tmp'), '', 'the short-lived branch is gone');
  t.is(emulator.pulls.length, 1);
  t.is(pr.state, 'open');
  noViolations(t, emulator);
});

test('a secondary rate limit (403 + retry-after) is waited out and retried', async (t) => {
  const { fx, emulator, backend } = await setup(t);
  emulator.inject({ status: 403, secondaryRateLimit: true, times: 1, match: (method, p) => method === 'POST' && p.endsWith('/git/trees') });
  emulator.inject({ status: 403, secondaryRateLimit: true, times: 1, match: (_method, p) => p === '/graphql' });
  const result = await backend.deliver(revertChange(fx, { files: [{ path: 'apps/podinfo/run.sh', mode: '100755', content: new TextEncoder().encode('#!/bin/sh\n') }] }), 'pull-request');
  t.true(result.created);
  const trees = emulator.log.filter((r) => r.operationId === 'git/create-tree');
  t.deepEqual(trees.map((r) => r.status), [403, 201], 'REST (an executable file goes through the git-data API)');
  t.deepEqual(emulator.log.filter((r) => r.path === '/graphql').slice(0, 2).map((r) => r.status), [403, 200], 'GraphQL');
  t.is(emulator.pulls.length, 1);
  noViolations(t, emulator);
});

test('a server error (500) is retried, then the call succeeds', async (t) => {
  const { fx, emulator, backend } = await setup(t);
  emulator.inject({ status: 500, times: 2, match: (method, p) => method === 'POST' && p === '/graphql' });
  const result = await backend.deliver(revertChange(fx), 'pull-request');
  t.true(result.created);
  t.deepEqual(emulator.log.filter((r) => r.path === '/graphql').slice(0, 3).map((r) => r.status), [500, 500, 200]);
  t.is(emulator.pulls.length, 1);
  noViolations(t, emulator);
});

test('persistent server errors become a RemoteError (exit 3) after bounded retries', async (t) => {
  const { fx, emulator, backend } = await setup(t, {}, { maxRetries: 2 });
  emulator.inject({ status: 502, times: 10, match: (_method, p) => p === '/graphql' });
  const error = await t.throwsAsync(backend.deliver(revertChange(fx), 'commit'), { instanceOf: RemoteError });
  t.is(error?.status, 502);
  t.is(error?.exitCode, 3);
  t.is(emulator.log.filter((r) => r.path === '/graphql').length, 3, 'one try and two retries');
  noViolations(t, emulator);
});

/** Pushes a commit touching apps/other/ straight into the bare repository, as another writer would. */
async function concurrentPush(emulator: Emulator, n: number): Promise<string> {
  const env = { GIT_INDEX_FILE: path.join(tempDir('lastgood-index-'), 'index'), GIT_AUTHOR_NAME: 'Other', GIT_AUTHOR_EMAIL: 'o@example.com', GIT_COMMITTER_NAME: 'Other', GIT_COMMITTER_EMAIL: 'o@example.com' };
  const g = emulator.git;
  const head = await g.text(['rev-parse', 'refs/heads/main']);
  await g.run(['read-tree', head], undefined, env);
  const blob = await g.writeBlob(Buffer.from(`concurrent: ${n}\n`));
  await g.run(['update-index', '--add', '--cacheinfo', `100644,${blob},apps/other/concurrent-${n}.yaml`], undefined, env);
  const tree = (await g.run(['write-tree'], undefined, env)).toString().trim();
  const sha = (await g.run(['commit-tree', tree, '-p', head, '-m', `concurrent ${n}`], undefined, env)).toString().trim();
  await g.updateRef('refs/heads/main', sha, head);
  return sha;
}

test('commit mode: a concurrent push is detected by the non-forced ref update, re-planned, and lands on top', async (t) => {
  const replans: string[] = [];
  let fx!: ReturnType<typeof buildRepo>;
  const { emulator, backend, fx: built } = await setup(t, {}, {
    replan: async (head) => {
      replans.push(head);
      return revertChange(fx, { parent: head });
    },
  });
  fx = built;
  let pushed: string | undefined;
  emulator.onBeforeRefUpdate(async (ref) => {
    if (ref === 'refs/heads/main' && !pushed) pushed = await concurrentPush(emulator, 1);
  });
  const result = await backend.deliver(revertChange(fx), 'commit');
  t.true(result.created);
  t.is(result.branch, 'main');
  t.deepEqual(replans, [pushed]);
  t.is(git(fx.bare, 'rev-parse', 'main'), result.commit);
  t.is(git(fx.bare, 'rev-parse', 'main^'), pushed!);
  t.is(git(fx.bare, 'rev-parse', 'main~2'), fx.head);
  t.is(git(fx.bare, 'show', 'main:apps/other/concurrent-1.yaml'), 'concurrent: 1', 'the concurrent commit is kept');
  t.is(git(fx.bare, 'show', 'main:apps/podinfo/deployment.yaml'), 'image: podinfo:6.1.0');
  t.is(git(fx.bare, 'rev-list', '--count', 'main'), String(fx.c.length + 2), 'one revert commit, no duplicates');
  // createCommitOnBranch's expectedHeadOid refused the first write; the second, on the new head, landed
  t.is(emulator.log.filter((r) => r.operationId === 'graphql:mutation(createCommitOnBranch)').length, 2);
  t.true(emulator.signed.has(result.commit));
  noViolations(t, emulator);
});

test('commit mode: a branch that keeps moving gives up after the bounded attempts with a RemoteError', async (t) => {
  let fx!: ReturnType<typeof buildRepo>;
  let pushes = 0;
  const { emulator, backend, fx: built } = await setup(t, {}, { concurrentPushAttempts: 3, replan: async (head) => revertChange(fx, { parent: head }) });
  fx = built;
  emulator.onBeforeRefUpdate(async (ref) => {
    if (ref === 'refs/heads/main') await concurrentPush(emulator, ++pushes);
  });
  const error = await t.throwsAsync(backend.deliver(revertChange(fx), 'commit'), { instanceOf: RemoteError });
  t.regex(error?.message ?? '', /kept moving.*3 attempts/);
  t.is(pushes, 3);
  t.false(git(fx.bare, 'log', '--format=%s', 'main').includes('Revert podinfo-prod'));
  noViolations(t, emulator);
});

test('commit mode without replan: a moved branch is a StaleHeadError and nothing is written', async (t) => {
  const { fx, emulator, backend } = await setup(t);
  const moved = await concurrentPush(emulator, 1);
  const error = await t.throwsAsync(backend.deliver(revertChange(fx), 'commit'));
  t.is(error?.name, 'StaleHeadError');
  t.is(git(fx.bare, 'rev-parse', 'main'), moved);
  t.is(emulator.log.filter((r) => r.write).length, 0);
  noViolations(t, emulator);
});

test('a bad token is a RemoteError that names the token problem and never shows the token', async (t) => {
  const { fx, emulator } = await setup(t);
  const badToken = 'ghp_notTheRightToken1234567890abcdefXYZ';
  const backend = createGitHubBackend({ owner: OWNER, repo: REPO, token: badToken, baseUrl: emulator.url, writeIntervalMs: 0, retryUnitMs: 5 });
  const error = await t.throwsAsync(backend.deliver(revertChange(fx), 'pull-request'), { instanceOf: RemoteError });
  t.is(error?.status, 401);
  t.is(error?.exitCode, 3);
  t.regex(error?.message ?? '', /token/i);
  t.regex(error?.message ?? '', /invalid, expired or revoked/);
  for (const text of [error?.message, error?.stack, String(error), JSON.stringify(error)]) {
    t.false(String(text).includes(badToken));
  }
  t.is(emulator.log.filter((r) => r.status === 401).length, emulator.requests, 'every request was refused');

  // with the good token: a full delivery never puts the token in a body GitHub receives
  const good = createGitHubBackend({ owner: OWNER, repo: REPO, token: TOKEN, baseUrl: emulator.url, writeIntervalMs: 0, retryUnitMs: 5 });
  await good.deliver(revertChange(fx, { pullRequest: { ...revertChange(fx).pullRequest!, body: `Evidence; token was ${TOKEN}` } }), 'pull-request');
  t.true(emulator.bodies.length > 0);
  t.false(emulator.bodies.some((b) => b.includes(TOKEN)), 'the token is not in any request body');
  t.false(emulator.pulls[0]!.body!.includes(TOKEN));
  noViolations(t, emulator);
});

test('a read-only token gets an error naming the missing permission', async (t) => {
  const { fx, emulator, backend } = await setup(t, { permissions: { contents: 'read', pullRequests: 'write' } });
  const error = await t.throwsAsync(backend.deliver(revertChange(fx), 'pull-request'), { instanceOf: RemoteError });
  t.is(error?.status, 403);
  t.regex(error?.message ?? '', /"contents: write"/);

  const { fx: fx2, emulator: emulator2, backend: backend2 } = await setup(t, { permissions: { contents: 'write', pullRequests: 'read' } });
  const error2 = await t.throwsAsync(backend2.deliver(revertChange(fx2), 'pull-request'), { instanceOf: RemoteError });
  t.regex(error2?.message ?? '', /"pull-requests: write"/);
  noViolations(t, emulator);
  noViolations(t, emulator2);
});

test('a reviewer that cannot be requested is a warning, not a failure; autoMerge merges through REST', async (t) => {
  const { fx, emulator, backend } = await setup(t);
  const change = revertChange(fx);
  const result = await backend.deliver({ ...change, pullRequest: { ...change.pullRequest!, reviewers: ['lastgood-bot'], draft: false, autoMerge: true } }, 'pull-request');
  t.true(result.created);
  t.is(result.warnings?.length, 1);
  t.regex(result.warnings?.[0] ?? '', /reviewers lastgood-bot.*cannot be requested from pull request author/);
  const pr = emulator.pulls[0]!;
  t.true(pr.merged);
  t.is(git(fx.bare, 'rev-parse', 'main'), pr.mergeCommit!);
  t.is(git(fx.bare, 'show', 'main:apps/podinfo/deployment.yaml'), 'image: podinfo:6.1.0');
  noViolations(t, emulator);
});

test('closeSupersededPullRequests closes the target\'s older revert PRs and keeps the named one', async (t) => {
  const { fx, emulator, backend } = await setup(t);
  // the newer failure's revert first: delivering the older one (stale evidence) must not close it
  const b = await backend.deliver(revertChange(fx, { bad: [fx.c[4]!] }), 'pull-request');
  const a = await backend.deliver(revertChange(fx), 'pull-request');
  const other = await backend.deliver(revertChange(fx, { target: 'other-prod', bad: [fx.c[4]!] }), 'pull-request');
  t.is(emulator.pulls.length, 3);
  t.true(emulator.pulls.every((p) => p.state === 'open'));
  const closed = await closeSupersededPullRequests(backend as Parameters<typeof closeSupersededPullRequests>[0], 'podinfo-prod', fx.c[4]);
  t.deepEqual(closed, [a.pullRequest!.number]);
  const byNumber = (n: number) => emulator.pulls.find((p) => p.number === n)!;
  t.is(byNumber(a.pullRequest!.number).state, 'closed');
  t.regex(byNumber(a.pullRequest!.number).comments[0]?.body ?? '', /newer healthy revision/);
  t.is(byNumber(b.pullRequest!.number).state, 'open');
  t.is(byNumber(other.pullRequest!.number).state, 'open');
  // by options instead of a backend: closes the rest of the target
  const rest = await closeSupersededPullRequests({ owner: OWNER, repo: REPO, token: TOKEN, baseUrl: emulator.url, writeIntervalMs: 0 }, 'podinfo-prod');
  t.deepEqual(rest, [b.pullRequest!.number]);
  noViolations(t, emulator);
});

test('a newer failure of the target closes the revert PR of the older one, with a comment linking the new PR, once; other targets are left alone', async (t) => {
  const { fx, emulator, backend } = await setup(t);
  const older = await backend.deliver(revertChange(fx), 'pull-request');
  const other = await backend.deliver(revertChange(fx, { target: 'other-prod' }), 'pull-request');
  const newer = await backend.deliver(revertChange(fx, { bad: [fx.c[4]!] }), 'pull-request');
  t.true(newer.created);
  const byNumber = (n: number) => emulator.pulls.find((p) => p.number === n)!;
  t.is(byNumber(older.pullRequest!.number).state, 'closed');
  t.deepEqual(byNumber(older.pullRequest!.number).comments.map((c) => c.body), [
    `Superseded by ${newer.pullRequest!.url}: a newer failure of \`podinfo-prod\` (${fx.c[4]!.slice(0, 12)}) needs its own revert. Closing this one. (lastgood)`,
  ]);
  t.is(byNumber(newer.pullRequest!.number).state, 'open');
  t.is(byNumber(other.pullRequest!.number).state, 'open');
  // a rerun finds its PR and writes nothing more on the closed one
  const again = await backend.deliver(revertChange(fx, { bad: [fx.c[4]!] }), 'pull-request');
  t.false(again.created);
  t.is(byNumber(older.pullRequest!.number).comments.length, 1);
  noViolations(t, emulator);
});

test('GitHub URLs are recognised for the registry; GHES needs an API URL; no token is refused', async (t) => {
  const { parseGitHubUrl, gitHubBackendFactory } = await import('../src/deliver/github/index.ts');
  t.deepEqual(parseGitHubUrl('https://github.com/acme/gitops.git'), { owner: 'acme', repo: 'gitops', baseUrl: 'https://api.github.com' });
  t.deepEqual(parseGitHubUrl('https://x-access-token:abc@github.com/acme/gitops'), { owner: 'acme', repo: 'gitops', baseUrl: 'https://api.github.com' });
  t.is(parseGitHubUrl('https://git.example.com/acme/gitops'), undefined);
  t.deepEqual(parseGitHubUrl('https://git.example.com/acme/gitops', 'https://git.example.com/api/v3'), { owner: 'acme', repo: 'gitops', baseUrl: 'https://git.example.com/api/v3' });
  t.is(parseGitHubUrl('./local/path'), undefined);
  t.true(gitHubBackendFactory.matches('https://github.com/acme/gitops', {}));
  await t.throwsAsync(gitHubBackendFactory.open('https://github.com/acme/gitops', {}), { instanceOf: InputError, message: /needs a token/ });
  const backend = await gitHubBackendFactory.open('https://github.com/acme/gitops', { token: 'ghp_factoryToken000000000000000000000' });
  t.is(backend.kind, 'github');
  t.is(backend.description, 'https://github.com/acme/gitops');
});

test('after the PR was closed, a new run reuses the stale branch name and opens a new PR', async (t) => {
  const { fx, emulator, backend } = await setup(t);
  const first = await backend.deliver(revertChange(fx), 'pull-request');
  emulator.pulls[0]!.state = 'closed';
  const again = await backend.deliver(revertChange(fx, { files: revertChange(fx).files.slice(0, 2) }), 'pull-request');
  t.true(again.created);
  t.is(again.branch, first.branch);
  t.is(again.pullRequest?.number, 2);
  t.is(git(fx.bare, 'rev-parse', again.branch), again.commit, 'the stale branch was moved to the new commit');
  // the stale branch is moved back to the parent, committed on and opened in one mutation document
  t.deepEqual(emulator.log.filter((r) => r.write && r.operationId?.includes('createPullRequest')).map((r) => r.operationId), [
    'graphql:mutation(createRef,createCommitOnBranch,createPullRequest)',
    'graphql:mutation(updateRef,createCommitOnBranch,createPullRequest)',
  ]);
  noViolations(t, emulator);
});
