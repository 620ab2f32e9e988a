import test from 'ava';
import path from 'node:path';
import { Octokit } from '@octokit/rest';
import { startGitHubEmulator } from './support/github-emulator.ts';
import { commit, git, makeRepo, tempDir } from './support/git.ts';

/**
 * The emulator's GraphQL endpoint is only worth its tests if it refuses what GitHub refuses: a
 * document is validated against GitHub's published schema (@octokit/graphql-schema) and GitHub's
 * own limits, and a field it does not emulate is reported, never answered with made-up data.
 */

const TOKEN = 'ghs_graphqlEmulatorToken0123456789ab';

async function setup(t: { teardown(fn: () => unknown): void }) {
  const work = makeRepo();
  const c1 = commit(work, { 'app/a.yaml': 'a: 1\n' }, 'one');
  const c2 = commit(work, { 'app/a.yaml': 'a: 2\n' }, 'two');
  const bare = path.join(tempDir('lastgood-gql-'), 'gitops.git');
  git(work, 'clone', '-q', '--bare', work, bare);
  const emulator = await startGitHubEmulator({ bareRepo: bare, owner: 'acme', repo: 'gitops', token: TOKEN });
  t.teardown(() => emulator.close());
  const octokit = new Octokit({ auth: TOKEN, baseUrl: emulator.url });
  return { emulator, octokit, c1, c2, bare };
}

test('a field GitHub does not have fails validation, and the emulator records it', async (t) => {
  const { emulator, octokit } = await setup(t);
  const error = await t.throwsAsync(octokit.graphql('query { repository(owner: "acme", name: "gitops") { id noSuchField } }'));
  t.regex(error!.message, /Cannot query field "noSuchField" on type "Repository"/);
  t.true(emulator.violations.some((v) => /noSuchField/.test(v)));
});

test('a connection without first or last breaks GitHub\'s node limit and is recorded', async (t) => {
  const { emulator, octokit } = await setup(t);
  await octokit.graphql('query { repository(owner: "acme", name: "gitops") { pullRequests { totalCount } } }');
  t.true(emulator.violations.some((v) => /needs first or last between 1 and 100/.test(v)));
});

test('a field of the schema that the emulator does not implement is reported, not invented', async (t) => {
  const { emulator, octokit } = await setup(t);
  await octokit.graphql('query { repository(owner: "acme", name: "gitops") { stargazerCount } }').catch(() => undefined);
  t.true(emulator.violations.some((v) => /Repository\.stargazerCount is not emulated/.test(v)));
});

test('history by path, files with modes, and createCommitOnBranch as a compare-and-swap, with GitHub\'s error types', async (t) => {
  const { emulator, octokit, c1, c2, bare } = await setup(t);
  const data = await octokit.graphql<{ repository: { object: { history: { nodes: Array<{ oid: string; file: { mode: number; oid: string } | null }> } } } }>(
    `query($oid: GitObjectID!) { repository(owner: "acme", name: "gitops") { object(oid: $oid) { ... on Commit { history(path: "app/a.yaml", first: 10) { nodes { oid file(path: "app/a.yaml") { mode oid } } } } } } }`,
    { oid: c2 },
  );
  t.deepEqual(data.repository.object.history.nodes.map((n) => n.oid), [c2, c1]);
  t.is(data.repository.object.history.nodes[0]!.file!.mode, 0o100644);
  t.is(data.repository.object.history.nodes[0]!.file!.oid, git(bare, 'rev-parse', `${c2}:app/a.yaml`));

  const input = (expected: string) => ({
    branch: { repositoryNameWithOwner: 'acme/gitops', branchName: 'main' }, expectedHeadOid: expected,
    message: { headline: 'change', body: 'Lastgood-Target: x' }, fileChanges: { additions: [{ path: 'app/b.yaml', contents: Buffer.from('b: 1\n').toString('base64') }], deletions: [{ path: 'app/a.yaml' }] },
  });
  const doc = 'mutation($input: CreateCommitOnBranchInput!) { createCommitOnBranch(input: $input) { commit { oid } } }';
  const stale = await t.throwsAsync(octokit.graphql(doc, { input: input(c1) })) as Error & { errors?: Array<{ type: string }> };
  t.is(stale.errors?.[0]?.type, 'STALE_DATA');
  t.is(git(bare, 'rev-parse', 'main'), c2, 'nothing written');
  const made = await octokit.graphql<{ createCommitOnBranch: { commit: { oid: string } } }>(doc, { input: input(c2) });
  const oid = made.createCommitOnBranch.commit.oid;
  t.is(git(bare, 'rev-parse', 'main'), oid);
  t.is(git(bare, 'log', '-1', '--format=%B', oid).trim(), 'change\n\nLastgood-Target: x');
  t.is(git(bare, 'ls-tree', '-r', '--name-only', oid), 'app/b.yaml');
  t.true(emulator.signed.has(oid));
  t.deepEqual(emulator.violations, []);
});
