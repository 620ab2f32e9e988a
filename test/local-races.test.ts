import { spawn } from 'node:child_process';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import test from 'ava';
import { git, isAncestor } from './support/git.ts';
import { RACE_ROUNDS, RACE_RUNS } from './support/races.ts';
import { failedSnapshot, foreignCommit, KUSTOMIZATION, kustomizationFile, revertsOf, run, runPaused, scenario, type Scenario } from './support/revert-scenario.ts';

/**
 * Issue 15, class 1: no lost update on a branch. Real git, real lastgood processes: a foreign
 * writer in the gap between plan and write, git holding the ref lock, a lock nobody releases, and
 * RACE_RUNS concurrent runs per round against one bare repository and one working copy.
 */


for (const bare of [true, false]) {
  const kind = bare ? 'bare repository' : 'working copy';

  test(`${kind}: a foreign commit landing between plan and write survives; the revert is written again on top of it`, async (t) => {
    const s = scenario({ bare, render: true });
    const planned = git(s.repo, 'rev-parse', 'main');
    const paused = runPaused(s, 'before-ref-write');
    await paused.reached;
    const foreign = await foreignCommit(s.repo, bare, 7);
    t.is(git(s.repo, 'rev-parse', 'main^'), planned);
    paused.release();
    const r = await paused.done;
    t.is(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout).targets[0];
    t.true(out.created);
    t.is(git(s.repo, 'rev-parse', 'main'), out.commit, 'reported created, and it is the branch');
    t.is(git(s.repo, 'rev-parse', 'main^'), foreign, 'written on top of the foreign commit, which is kept');
    t.is(git(s.repo, 'show', 'main:apps/redis/values.yaml'), 'replicas: 7');
    // apps/redis is another application of the Flux Kustomization, off the target's way: the same plan is delivered on the new head (busy-branch.test.ts)
    t.notRegex(r.stderr, /planning again/, 'not planned again: the same plan, on the new head');
    t.deepEqual(revertsOf(s.repo, s.bad), [out.commit]);
    if (!bare) t.is(git(s.repo, 'status', '--porcelain'), '');
  });
}

test('git holds the ref lock when lastgood writes: lastgood backs off, sees git\'s commit, plans again on it', async (t) => {
  const s = scenario({ bare: true });
  const old = git(s.repo, 'rev-parse', 'main');
  const tree = git(s.repo, 'rev-parse', 'main^{tree}');
  const foreign = git(s.repo, 'commit-tree', tree, '-p', old, '-m', 'a person\'s commit');
  const gitTx = spawn('git', ['update-ref', '--stdin'], { cwd: s.repo, stdio: ['pipe', 'pipe', 'inherit'] });
  let gitOut = '';
  gitTx.stdout.on('data', (d) => (gitOut += d));
  gitTx.stdin.write(`start\nupdate refs/heads/main ${foreign} ${old}\nprepare\n`);
  while (!gitOut.includes('prepare: ok')) await sleep(5);
  const paused = runPaused(s, 'ref-busy');
  await paused.reached;
  // lastgood found refs/heads/main.lock held; git now commits its transaction
  const committed = new Promise((resolve) => gitTx.on('close', resolve));
  gitTx.stdin.end('commit\n');
  await committed;
  t.is(git(s.repo, 'rev-parse', 'main'), foreign);
  paused.release();
  const r = await paused.done;
  t.is(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout).targets[0];
  t.true(out.created);
  t.is(git(s.repo, 'rev-parse', 'main^'), foreign, 'git\'s commit is kept under the revert');
  t.is(git(s.repo, 'rev-parse', 'main'), out.commit);
});

test('lastgood holds the ref lock: git\'s own update-ref is refused meanwhile, and its retry lands on top of the revert', async (t) => {
  const s = scenario({ bare: true });
  const paused = runPaused(s, 'ref-written');
  await paused.reached;
  const old = git(s.repo, 'rev-parse', 'main');
  const tree = git(s.repo, 'rev-parse', 'main^{tree}');
  const foreign = git(s.repo, 'commit-tree', tree, '-p', old, '-m', 'a person\'s commit');
  t.throws(() => git(s.repo, '-c', 'core.filesRefLockTimeout=0', 'update-ref', 'refs/heads/main', foreign, old), { message: /main\.lock|cannot lock ref/ });
  paused.release();
  const r = await paused.done;
  t.is(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout).targets[0];
  t.is(git(s.repo, 'rev-parse', 'main'), out.commit);
  // the person's compare-and-swap now fails on the moved branch instead of erasing the revert
  t.throws(() => git(s.repo, 'update-ref', 'refs/heads/main', foreign, old));
  await foreignCommit(s.repo, true, 9);
  t.is(git(s.repo, 'rev-parse', 'main^'), out.commit);
});

test('a ref lock nobody releases: exit 3 naming the lock file and how to recover, nothing written', async (t) => {
  const s = scenario({ bare: true });
  const lock = path.join(s.repo, 'refs/heads/main.lock');
  writeFileSync(lock, '');
  const refs = git(s.repo, 'for-each-ref');
  const r = await run(s);
  t.is(r.code, 3, r.stdout + r.stderr);
  t.true(r.stderr.includes(lock), r.stderr);
  t.regex(r.stderr, /another git process holds .*; if none is running .*remove that file and run again. No ref and no working-copy file was changed/);
  t.is(git(s.repo, 'for-each-ref'), refs, 'no ref moved');
  t.deepEqual(revertsOf(s.repo, s.bad), []);
  t.true(existsSync(lock), 'the lock is not lastgood\'s to remove');
  rmSync(lock);
  const again = await run(s);
  t.is(again.code, 0, again.stderr);
  t.true(again.created);
});

test('pull-request mode, concurrent runs: the review branch is created once, every run names that commit', async (t) => {
  const s = scenario({ bare: true, mode: 'pull-request' });
  const main = git(s.repo, 'rev-parse', 'main');
  const results = await Promise.all(Array.from({ length: 10 }, () => run(s)));
  for (const r of results) t.is(r.code, 0, r.stderr);
  t.is(results.filter((r) => r.created === true).length, 1);
  const commits = new Set(results.map((r) => r.commit));
  t.is(commits.size, 1);
  const branch = `lastgood/podinfo-prod/${s.bad.slice(0, 12)}`;
  t.deepEqual([git(s.repo, 'rev-parse', branch)], [...commits]);
  t.is(git(s.repo, 'rev-parse', 'main'), main, 'main is not written in pull-request mode');
  t.is(git(s.repo, 'fsck', '--no-progress', '--no-dangling'), '');
});

const ROUNDS = RACE_ROUNDS;
const RUNS = RACE_RUNS;

/** A new bad release on main (the image tag moves), made the way a person or a bot would. */
async function badRelease(s: Scenario, n: number): Promise<string> {
  if (!s.bare) {
    writeFileSync(path.join(s.repo, KUSTOMIZATION), kustomizationFile(`6.${n}.0`));
    git(s.repo, 'commit', '-q', '-m', `podinfo: release 6.${n}.0`, '--', KUSTOMIZATION);
    return git(s.repo, 'rev-parse', 'HEAD');
  }
  const clone = path.join(s.dir, `release-${n}`);
  git(s.dir, 'clone', '-q', s.repo, clone);
  writeFileSync(path.join(clone, KUSTOMIZATION), kustomizationFile(`6.${n}.0`));
  git(clone, 'commit', '-q', '-am', `podinfo: release 6.${n}.0`);
  git(clone, 'push', '-q', 'origin', 'main');
  return git(clone, 'rev-parse', 'HEAD');
}

for (const bare of [true, false]) {
  const kind = bare ? 'one bare repository' : 'one working copy';
  test(`${RUNS} concurrent runs × ${ROUNDS} rounds against ${kind}, with a person's commits racing: exactly one "created", the others name it, nothing lost`, async (t) => {
    const s = scenario({ bare });
    let bad = s.bad;
    let snapshot = s.snapshot;
    let foreignCount = 0;
    for (let round = 0; round < ROUNDS; round++) {
      if (round > 0) {
        const applied = git(s.repo, 'rev-parse', 'main');
        bad = await badRelease(s, round + 1);
        snapshot = failedSnapshot(s.dir, `round-${round}.yaml`, bad, applied);
      }
      const runs = Promise.all(Array.from({ length: RUNS }, () => run({ config: s.config, snapshot })));
      // a person's commits to another file land while the runs plan and write
      const foreign = Promise.all([1, 2].map(async (i) => {
        await sleep(150 * i + Math.random() * 200);
        return foreignCommit(s.repo, bare, 10 * round + i);
      }));
      const [results, foreignShas] = await Promise.all([runs, foreign]);
      foreignCount += foreignShas.length;
      for (const r of results) t.is(r.code, 0, `round ${round}: ${r.stdout}${r.stderr}`);
      const created = results.filter((r) => r.created === true);
      t.is(created.length, 1, `round ${round}: exactly one run says created`);
      const revert = created[0]?.commit ?? '';
      t.deepEqual([...new Set(results.map((r) => r.commit))], [revert], `round ${round}: every run names the one revert`);
      t.deepEqual(revertsOf(s.repo, bad), [revert], `round ${round}: one revert of the bad release on main`);
      for (const f of foreignShas) t.true(isAncestor(s.repo, f, 'main'), `round ${round}: the person's commit ${f} is on main`);
      t.is(git(s.repo, 'show', `main:${KUSTOMIZATION}`), kustomizationFile('6.0.0').trim(), 'the target paths are the last-known-good');
      t.is(git(s.repo, 'fsck', '--no-progress', '--no-dangling'), '');
      if (!bare) t.is(git(s.repo, 'status', '--porcelain'), '', `round ${round}: the working copy follows main`);
    }
    t.log(`${ROUNDS} rounds × ${RUNS} runs against ${kind}: exactly-once held every round; ${foreignCount} racing commits by a person, none lost`);
  });
}
