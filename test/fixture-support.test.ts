import test from 'ava';
import fc from 'fast-check';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { commit, commitMany, fromTemplate, git, makeRepo } from './support/git.ts';
import { runSync } from './support/spawner.ts';

/**
 * The fixture helpers of issue 38 make the histories the tests stood on before: `commitMany` (one
 * git fast-import) writes the trees and messages `commit` (git add -A && git commit) writes, and
 * leaves the working copy as clean; `fromTemplate` gives each use a copy of its own that git sees
 * as clean.
 */

const file = fc.constantFrom('a.yaml', 'apps/x/values.yaml', 'apps/x/base/kustomization.yaml', 'docs/note.md');
const edits = fc.dictionary(file, fc.option(fc.constantFrom('one\n', 'two: 2\n', '# three\n'), { nil: null }), { maxKeys: 4 });
const message = fc.constantFrom('one line', 'subject\n\nbody line\n', 'trailing newlines\n\n\n');

test('commitMany writes the trees and messages that commit writes, one after another, and leaves the working copy clean', (t) => {
  fc.assert(
    fc.property(fc.array(fc.record({ files: edits, message }), { minLength: 1, maxLength: 4 }), (commits) => {
      const byCommit = makeRepo();
      commit(byCommit, { 'README.md': 'root\n' }, 'root');
      const one = commits.map((c) => commit(byCommit, c.files, c.message));
      const byImport = makeRepo();
      commit(byImport, { 'README.md': 'root\n' }, 'root');
      const many = commitMany(byImport, commits);
      t.is(many.length, one.length);
      // the message raw (git() trims): everything after the commit's headers
      const shape = (repo: string, sha: string) => `${git(repo, 'rev-parse', `${sha}^{tree}`)} ${git(repo, 'rev-list', '--count', sha)} ${runSync('git', ['cat-file', 'commit', sha], { cwd: repo }).split('\n\n').slice(1).join('\n\n')}`;
      for (const [i, sha] of many.entries()) t.is(shape(byImport, sha), shape(byCommit, one[i]!));
      t.is(git(byImport, 'status', '--porcelain'), '');
      t.is(git(byImport, 'rev-parse', 'HEAD'), many[many.length - 1]!);
    }),
    { numRuns: 8 },
  );
});

test('fromTemplate builds once and gives each use its own copy, clean to git, with the built values', (t) => {
  let builds = 0;
  const build = (root: string) => {
    builds += 1;
    const work = makeRepo({ dir: path.join(root, 'work') });
    return { head: commit(work, { 'a.yaml': 'a: 1\n' }, 'first') };
  };
  const first = fromTemplate('fixture-support test', build);
  const second = fromTemplate('fixture-support test', build);
  t.is(builds, 1);
  t.not(first.root, second.root);
  t.deepEqual(first.value, second.value);
  writeFileSync(path.join(first.root, 'work', 'a.yaml'), 'a: 2\n');
  t.is(git(path.join(first.root, 'work'), 'status', '--porcelain'), 'M a.yaml');
  t.is(git(path.join(second.root, 'work'), 'status', '--porcelain'), '', 'a copy is its own');
  t.is(git(path.join(second.root, 'work'), 'rev-parse', 'HEAD'), second.value.head);
});
