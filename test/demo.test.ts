import test from 'ava';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { lastgood, ROOT } from './support/cli.ts';
import { git } from './support/git.ts';

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

  const again = await lastgood(['run', '--config', 'demo/lastgood.yaml', '--snapshot', 'demo/cluster.yaml', '--now', '2026-11-21T09:52:00Z', '--json']);
  t.is(again.code, 0, again.stderr);
  t.is(JSON.parse(again.stdout).targets[0].created, false);
  t.is(git(repo, 'rev-parse', 'main'), head);
});
