import test from 'ava';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { lastgood, ROOT } from './support/cli.ts';
import { git, tempDir } from './support/git.ts';

/** `npm run demo` is the first thing a person runs: it must work offline and say what it did. */
test('the demo builds its repository, reverts the bad release, and a second run writes nothing', async (t) => {
  const demo = spawnSync(process.execPath, [path.join(ROOT, 'demo/demo.ts')], { cwd: ROOT, encoding: 'utf8' });
  t.is(demo.status, 0, demo.stderr);
  t.regex(demo.stdout, /podinfo-prod: FAILED \(analysis\)/);
  t.regex(demo.stdout, /bad commit: 349edffd86e90846692f498d82676f0ee5085cb3/);
  t.regex(demo.stdout, /last-known-good: f5462339b46e2805db7d31280d891206e9e7891e/);
  t.regex(demo.stdout, /-    newTag: 7\.0\.0 # bumped by the release pipeline\n\s*\+    newTag: 6\.9\.3 # bumped by the release pipeline/);
  const repo = path.join(ROOT, '.demo/gitops');
  const head = git(repo, 'rev-parse', 'main');
  t.is(git(repo, 'rev-parse', 'main^'), '349edffd86e90846692f498d82676f0ee5085cb3');
  t.is(git(repo, 'diff', '--name-only', 'main^', 'main'), 'apps/podinfo/overlays/prod/cache.yaml\napps/podinfo/overlays/prod/kustomization.yaml');

  const again = await lastgood(['run', '--config', '.demo/lastgood.yaml', '--snapshot', '.demo/cluster.yaml', '--now', '2026-11-21T09:52:00Z', '--json']);
  t.is(again.code, 0, again.stderr);
  t.is(JSON.parse(again.stdout).targets[0].created, false);
  t.is(git(repo, 'rev-parse', 'main'), head);
});

test('`lastgood demo DIR` writes the worked example into a new folder and prints the command that runs it; a folder in use is refused', async (t) => {
  const dir = path.join(tempDir('lastgood-demo-cmd-'), 'my demo');
  const r = await lastgood(['demo', dir], { cwd: path.dirname(dir) });
  t.is(r.code, 0, r.stderr);
  t.regex(r.stdout, /^wrote 'my demo'\/:$/m);
  t.regex(r.stdout, /349edffd86e9 {2}podinfo: release 7\.0\.0 to prod with the new cache backend {3}<- the bad release/);
  const run = /^ {2}(lastgood run .*)$/m.exec(r.stdout)![1]!;
  t.is(run, "lastgood run --config 'my demo/lastgood.yaml' --snapshot 'my demo/cluster.yaml' --now 2026-11-21T09:52:00Z");
  // the printed command, as a shell would split it, reverts the bad release
  const args = [...run.matchAll(/'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2]!).slice(1);
  const reverted = await lastgood([...args, '--json'], { cwd: path.dirname(dir) });
  t.is(reverted.code, 0, reverted.stderr);
  const [target] = JSON.parse(reverted.stdout).targets;
  t.is(target.created, true);
  t.deepEqual(target.bad, ['349edffd86e90846692f498d82676f0ee5085cb3']);
  t.is(git(path.join(dir, 'gitops'), 'rev-parse', 'main^'), '349edffd86e90846692f498d82676f0ee5085cb3');

  const again = await lastgood(['demo', dir], { cwd: path.dirname(dir) });
  t.is(again.code, 2);
  t.regex(again.stderr, /my demo: the folder is not empty; give a new or empty one/);
  t.is(git(path.join(dir, 'gitops'), 'rev-parse', 'main^'), '349edffd86e90846692f498d82676f0ee5085cb3', 'nothing rewritten');

  // a folder under a file cannot be made: bad usage naming it, not Node's error with a stack
  const under = path.join(dir, 'lastgood.yaml', 'demo');
  const refused = await lastgood(['demo', under]);
  t.is(refused.code, 2, refused.stderr);
  t.is(refused.stderr, `lastgood: demo ${path.resolve(under)}: lies under a file, not a folder; nothing was written\n`);
});
