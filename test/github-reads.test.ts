import { execFileSync } from 'node:child_process';
import path from 'node:path';
import test from 'ava';
import fc from 'fast-check';
import { createGitHubBackend } from '../src/deliver/github/index.ts';
import { LocalRepo } from '../src/deliver/local/index.ts';
import { firstParentLog } from '../src/history/graph.ts';
import type { RepoReader } from '../src/repo/types.ts';
import { startGitHubEmulator } from './support/github-emulator.ts';
import { git, tempDir } from './support/git.ts';

/**
 * The GitHub backend answers the RepoReader primitives from a cache that GraphQL fills many answers
 * at a time (a path's state along a whole linear run, inferred from `git log -- <path>`). The rule:
 * over any history (linear runs, merges both ways, files that become executable, symlinks inside
 * the folder, a folder deleted and created again), every primitive answers exactly what the local
 * backend answers. (The one shape the inference cannot see — a parent folder of a path that is
 * absent throughout turning into a symlink and back — is documented in src/deliver/github/reads.ts and not
 * generated here.)
 */

type Op =
  | { kind: 'write'; file: number; text: number }
  | { kind: 'delete'; file: number }
  | { kind: 'drop-app' }
  | { kind: 'branch' }
  | { kind: 'merge' };

const FILES = [
  { path: 'app/a.yaml', mode: '100644' },
  { path: 'app/sub/b.yaml', mode: '100644' },
  { path: 'app/run.sh', mode: '100755' },
  { path: 'app/link', mode: '120000' },
  { path: 'app/run.sh', mode: '100644' }, // the same file, no longer executable
  { path: 'other/c.txt', mode: '100644' },
  { path: 'docs/n.md', mode: '100644' },
];

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('write' as const), file: fc.nat(FILES.length - 1), text: fc.nat(3) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('delete' as const), file: fc.nat(FILES.length - 1) }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'drop-app' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'branch' as const }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'merge' as const }) },
);

/** Writes the history with git fast-import: main, and a side branch merged back now and then. */
function build(ops: Op[]): { bare: string; commits: number } {
  const state = { main: new Map<string, { mode: string; text: string }>(), side: undefined as Map<string, { mode: string; text: string }> | undefined };
  const out: string[] = [];
  let mark = 0;
  let t = 1_700_000_000;
  let mainTip = 0;
  let sideTip = 0;
  const emit = (branch: 'main' | 'side', files: Map<string, { mode: string; text: string }>, parents: number[], message: string) => {
    mark++;
    t += 60;
    out.push(`commit refs/heads/${branch}`, `mark :${mark}`, `committer Dev <dev@example.com> ${t} +0000`, `data ${message.length}`, message);
    if (parents[0]) out.push(`from :${parents[0]}`);
    for (const p of parents.slice(1)) out.push(`merge :${p}`);
    out.push('deleteall');
    for (const [f, e] of [...files].sort()) out.push(`M ${e.mode} inline ${f}`, `data ${Buffer.byteLength(e.text)}`, e.text);
    out.push('');
    return mark;
  };
  state.main.set('app/a.yaml', { mode: '100644', text: 'a: 0\n' });
  state.main.set('other/c.txt', { mode: '100644', text: 'c\n' });
  mainTip = emit('main', state.main, [], 'initial');
  let onSide = false;
  for (const [i, op] of ops.entries()) {
    const files = onSide && state.side ? state.side : state.main;
    if (op.kind === 'branch') {
      state.side = new Map(state.main);
      sideTip = mainTip;
      onSide = true;
      continue;
    }
    if (op.kind === 'merge') {
      if (!state.side) continue;
      // the side branch's files win where they differ (a merge commit of its own tree)
      for (const [f, e] of state.side) state.main.set(f, e);
      mainTip = emit('main', state.main, [mainTip, sideTip], `merge ${i}`);
      state.side = undefined;
      onSide = false;
      continue;
    }
    if (op.kind === 'write') {
      const f = FILES[op.file]!;
      // a symlink's text is its target; a folder and a file of the same name never coexist here
      files.set(f.path, { mode: f.mode, text: f.mode === '120000' ? `a${op.text}.yaml` : `v${op.text} ${i}\n` });
    } else if (op.kind === 'delete') files.delete(FILES[op.file]!.path);
    else for (const f of [...files.keys()]) if (f.startsWith('app/')) files.delete(f);
    if (files.size === 0) files.set('other/c.txt', { mode: '100644', text: `refill ${i}\n` });
    if (onSide && state.side) sideTip = emit('side', state.side, [sideTip], `side ${i}`);
    else mainTip = emit('main', state.main, [mainTip], `main ${i}`);
  }
  const bare = path.join(tempDir('lastgood-reads-'), 'repo.git');
  execFileSync('git', ['init', '-q', '--bare', '-b', 'main', bare]);
  execFileSync('git', ['fast-import', '--quiet'], { cwd: bare, input: out.join('\n') + '\n' });
  return { bare, commits: mark };
}

const TOKEN = 'ghs_readsPropertyToken0123456789abcd';
const PATHS = ['app', 'app/sub', 'app/a.yaml', 'app/run.sh', 'app/link', 'app/sub/b.yaml', 'other/c.txt', 'missing/x'];

/** What a primitive answered, or the error it threw (its message: both backends refuse alike). */
async function answer<T>(fn: () => Promise<T>): Promise<T | string> {
  try {
    return await fn();
  } catch (error) {
    return `error: ${(error as Error).message}`;
  }
}

test('over random histories the GitHub backend answers every primitive as the local backend does', async (t) => {
  let checked = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(opArb, { minLength: 4, maxLength: 30 }), async (ops) => {
      const { bare } = build(ops);
      const local: RepoReader = new LocalRepo(bare);
      const emulator = await startGitHubEmulator({ bareRepo: bare, owner: 'acme', repo: 'gitops', token: TOKEN });
      try {
        const github = createGitHubBackend({ owner: 'acme', repo: 'gitops', token: TOKEN, baseUrl: emulator.url, writeIntervalMs: 0, retryUnitMs: 1 });
        const head = await github.head('main');
        t.is(head, await local.head('main'));
        const all = git(bare, 'rev-list', '--all').split('\n').filter(Boolean);
        for (const c of all) {
          const [g, l] = [await github.readCommit(c), await local.readCommit(c)];
          t.deepEqual([g.parents, g.tree, g.message.trimEnd()], [l.parents, l.tree, l.message.trimEnd()]);
          for (const p of PATHS) {
            t.deepEqual(await answer(() => github.pathOid(c, p)), await answer(() => local.pathOid(c, p)), `pathOid ${c.slice(0, 8)} ${p}`);
          }
          t.deepEqual(await answer(() => github.listFiles(c, ['app/', 'other/c.txt'])), await answer(() => local.listFiles(c, ['app/', 'other/c.txt'])), `listFiles ${c.slice(0, 8)}`);
          checked++;
        }
        for (const paths of [['app/'], ['app/sub/', 'app/run.sh'], ['app/link']]) {
          const oids = async (r: RepoReader) => (await firstParentLog(r, head, { paths })).map((x) => x.oid);
          t.deepEqual(await answer(() => oids(github)), await answer(() => oids(local)), `firstParentLog ${paths.join(',')}`);
        }
        const blobs = git(bare, 'rev-list', '--objects', '--all').split('\n').map((l) => l.split(' ')[0]!).filter((o) => git(bare, 'cat-file', '-t', o) === 'blob').slice(0, 5);
        for (const b of blobs) t.deepEqual(Buffer.from(await github.readBlob(b)), Buffer.from(await local.readBlob(b)));
        t.deepEqual(emulator.violations, []);
      } finally {
        await emulator.close();
      }
    }),
    { numRuns: 6, seed: 1414 },
  );
  t.true(checked > 20);
});

test('a first-parent scan of a long linear history for two paths costs a handful of requests', async (t) => {
  // app/a.yaml changes every 97th commit, other/c.txt every 7th; app/sub/b.yaml in every other one, docs in the rest
  const ops: Op[] = Array.from({ length: 600 }, (_, i) => ({ kind: 'write' as const, file: i % 97 === 0 ? 0 : i % 7 === 0 ? 5 : i % 2 === 0 ? 1 : 6, text: i % 4 }));
  const { bare } = build(ops);
  const emulator = await startGitHubEmulator({ bareRepo: bare, owner: 'acme', repo: 'gitops', token: TOKEN });
  t.teardown(() => emulator.close());
  const github = createGitHubBackend({ owner: 'acme', repo: 'gitops', token: TOKEN, baseUrl: emulator.url, writeIntervalMs: 0, retryUnitMs: 1 });
  const head = await github.head('main');
  const found = await firstParentLog(github, head, { paths: ['app/a.yaml', 'other/c.txt'] });
  const native = git(bare, 'rev-list', '--first-parent', head, '--', 'app/a.yaml', 'other/c.txt').split('\n').filter(Boolean);
  t.deepEqual(found.map((c) => c.oid), native);
  // the head with its recent 200 commits and one fill of both paths over them; below them one read
  // of the next 2,000 commits, and the fills of the rest of the line
  t.true(emulator.requests <= 5, `${emulator.requests} requests`);

  // a path that changes in every other commit: each fill lists 100 changes, so it costs one request per 200 commits, and stays exact
  const dense = await firstParentLog(github, head, { paths: ['app/sub/'] });
  t.deepEqual(dense.map((c) => c.oid), git(bare, 'rev-list', '--first-parent', head, '--', 'app/sub').split('\n').filter(Boolean));
  t.true(emulator.requests <= 5 + Math.ceil(600 / 100) + 1, `${emulator.requests} requests`);
  t.deepEqual(emulator.violations, []);
});
