import test from 'ava';
import { LocalRepo } from '../src/deliver/local/index.ts';
import { ObjectCache, TreeView } from '../src/model/tree.ts';
import { commit, makeRepo } from './support/git.ts';

/** TreeView's folder walks: what they find is where it is, whichever folder was walked first (the walks are memoised by tree oid). */

test('findNamed: files found in nested folders carry their whole path once, at every depth and on a second walk', async (t) => {
  const work = makeRepo();
  const head = commit(work, {
    'apps/.sourceignore': 'a\n',
    'apps/a/.sourceignore': 'b\n',
    'apps/a/b/.sourceignore': 'c\n',
    'apps/a/b/c/d/.sourceignore': 'e\n',
    'apps/x/kustomization.yaml': 'resources: []\n',
  }, 'layout');
  const cache = new ObjectCache(new LocalRepo(work));
  const expected = ['apps/.sourceignore', 'apps/a/.sourceignore', 'apps/a/b/.sourceignore', 'apps/a/b/c/d/.sourceignore'];
  const first = await (await TreeView.at(cache, head)).findNamed('apps', '.sourceignore');
  t.deepEqual(first.map((f) => f.path), expected);
  // a walk that starts lower reuses the remembered sub-walks: still whole paths
  const lower = await (await TreeView.at(cache, head)).findNamed('apps/a', '.sourceignore');
  t.deepEqual(lower.map((f) => f.path), expected.slice(1));
  const again = await (await TreeView.at(cache, head)).findNamed('apps', '.sourceignore');
  t.deepEqual(again, first);
});
