import test from 'ava';
import fc from 'fast-check';
import { LocalRepo } from '../src/deliver/local/index.ts';
import { planRestore } from '../src/revert/restore.ts';
import { commit, commitMany, git, makeRepo } from './support/git.ts';

/** Property: a restore touches only its target's paths, and afterwards they equal the last-known-good. */

const seg = fc.constantFrom('a', 'b', 'c');
const filePath = fc.tuple(seg, seg, fc.constantFrom('x.yaml', 'y.yaml')).map((p) => p.join('/'));
const edits = fc.dictionary(filePath, fc.option(fc.constantFrom('one\n', 'two\n', 'three\n'), { nil: null }), { minKeys: 1, maxKeys: 6 });

test('restore changes only files under the target paths, and makes them equal to the LKG', async (t) => {
  await fc.assert(
    fc.asyncProperty(fc.array(edits, { minLength: 2, maxLength: 5 }), fc.constantFrom('a/', 'a/b/', 'b/c/', 'c/a/x.yaml'), async (history, target) => {
      const dir = makeRepo();
      const shas = [commit(dir, { 'README.md': 'root\n' }, 'root'), ...commitMany(dir, history.map((files, i) => ({ files, message: `c${i}` })))];
      const repo = new LocalRepo(dir);
      const head = shas[shas.length - 1]!;
      const lkg = shas[1]!;
      const files = await planRestore(repo, { head, lastKnownGood: lkg, paths: [target] });
      for (const f of files) t.true(f.path === target || f.path.startsWith(target.endsWith('/') ? target : `${target}/`), `${f.path} is outside ${target}`);
      const sha = await repo.writeChangeCommit({ target: 't', branch: 'main', parent: head, files, message: 'restore\n', author: { name: 'a', email: 'a@b', timestamp: 0, timezoneOffset: 0 }, bad: [], lastKnownGood: lkg });
      const clean = target.replace(/\/$/, '');
      const lsAt = (rev: string) => git(dir, 'ls-tree', '-r', rev, '--', clean);
      t.is(lsAt(sha), lsAt(lkg));
      const outside = git(dir, 'diff', '--name-only', head, sha).split('\n').filter(Boolean).filter((p) => !(p === clean || p.startsWith(`${clean}/`)));
      t.deepEqual(outside, []);
    }),
    { numRuns: 15 },
  );
});
