import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import test from 'ava';
import { BIN } from './support/cli.ts';
import { fingerprint, git } from './support/git.ts';
import { NOW, revertsOf, run, runPaused, scenario, type Scenario } from './support/revert-scenario.ts';

/**
 * Issue 15, class 2: crash-safe writes. `kill -9` exactly at each write point (LASTGOOD_TEST_PAUSE
 * pauses the run there): the branch is always the old value or the new one, never empty or
 * broken; git fsck is clean; the locks a killed run leaves are the ones git would leave, and the
 * next run says how to recover. In a working copy, a kill between the ref and the index is
 * reported by the next run with the exact command that finishes it, never taken for a person's
 * change.
 */

type Point = 'index-locked' | 'ref-locked' | 'ref-written' | 'ref-renamed' | 'worktree-write' | 'worktree-temp' | 'index-written' | 'index-renamed';

const BARE_POINTS: Point[] = ['ref-locked', 'ref-written', 'ref-renamed'];
// worktree-temp: a file of the work tree written, not yet renamed into place (issue 19 class 6)
const WORKING_COPY_POINTS: Point[] = ['index-locked', 'ref-locked', 'ref-written', 'ref-renamed', 'worktree-write', 'worktree-temp', 'index-written', 'index-renamed'];
/** points at which the branch has already moved */
const AFTER_RENAME = new Set<Point>(['ref-renamed', 'worktree-write', 'worktree-temp', 'index-written', 'index-renamed']);
/** points at which a working-copy run holds .git/index.lock */
const INDEX_LOCKED = new Set<Point>(['index-locked', 'ref-locked', 'ref-written', 'ref-renamed', 'worktree-write', 'worktree-temp', 'index-written']);

const gitdirOf = (s: Scenario) => (s.bare ? s.repo : path.join(s.repo, '.git'));

/** The branch after a kill: a full SHA that git reads, and the run's lock files. */
function afterKill(s: Scenario): { head: string; loose: string | undefined; refLock: boolean; indexLock: boolean } {
  const gitdir = gitdirOf(s);
  const looseFile = path.join(gitdir, 'refs/heads/main');
  return {
    head: git(s.repo, 'rev-parse', '--verify', 'main'),
    loose: existsSync(looseFile) ? readFileSync(looseFile, 'utf8') : undefined,
    refLock: existsSync(`${looseFile}.lock`),
    indexLock: existsSync(path.join(gitdir, 'index.lock')),
  };
}

interface Trial {
  s: Scenario;
  old: string;
  state: ReturnType<typeof afterKill>;
}

async function killAt(bare: boolean, point: Point): Promise<Trial> {
  const s = scenario({ bare });
  const old = git(s.repo, 'rev-parse', 'main');
  const paused = runPaused(s, point);
  await paused.reached;
  await paused.kill();
  return { s, old, state: afterKill(s) };
}

function checkState(t: import('ava').ExecutionContext, { s, old, state }: Trial, point: Point): void {
  if (state.loose !== undefined) t.regex(state.loose, /^[0-9a-f]{40}\n$/, 'the loose ref is a whole SHA, never empty');
  if (AFTER_RENAME.has(point)) {
    t.not(state.head, old);
    t.is(git(s.repo, 'rev-parse', 'main^'), old, 'the new value is lastgood\'s commit on top of the old one');
    t.deepEqual(revertsOf(s.repo, s.bad), [state.head]);
  } else {
    t.is(state.head, old, 'the old value');
  }
  t.is(state.refLock, point === 'ref-locked' || point === 'ref-written', 'the ref lock is left exactly while it was held, as a killed git leaves it');
  t.is(state.indexLock, !s.bare && INDEX_LOCKED.has(point));
  t.is(git(s.repo, 'fsck', '--no-progress', '--no-dangling'), '', 'git fsck is clean');
  // nothing of the run's own in the work tree: no temporary file for `git add -A` to commit
  if (!s.bare) t.deepEqual(git(s.repo, 'status', '--porcelain', '--untracked-files=all').split('\n').filter((l) => l.startsWith('??')), [], 'no untracked file left');
}

// A kill at a write point is deterministic (the run is paused there): one trial per point. The
// working-copy points are each killed and recovered below; the random kills cover the moments in between.
let trials = 0;
for (const point of BARE_POINTS) {
  trials++;
  test(`kill -9 at ${point} (bare): the branch is old or new, never broken; fsck clean`, async (t) => {
    checkState(t, await killAt(true, point), point);
  });
}

/** Runs again after a crash as a person would: remove the lock the message names, follow the command it gives; every step checked. */
async function recover(t: import('ava').ExecutionContext, { s, old, state }: Trial, point: Point): Promise<void> {
  if (state.refLock || state.indexLock) {
    const r = await run(s);
    t.is(r.code, 3, r.stdout + r.stderr);
    const lock = state.indexLock ? path.join(gitdirOf(s), 'index.lock') : path.join(gitdirOf(s), 'refs/heads/main.lock');
    t.true(r.stderr.includes(`another git process holds ${lock}`), r.stderr);
    t.is(git(s.repo, 'rev-parse', 'main'), state.head, 'nothing moved');
    if (!s.bare) t.throws(() => git(s.repo, 'commit', '--allow-empty', '-qm', 'x'), { message: /index\.lock/ }, 'git refuses too, for the same lock');
    rmSync(lock);
    if (state.indexLock && state.refLock) rmSync(path.join(gitdirOf(s), 'refs/heads/main.lock'));
  }
  let r = await run(s);
  if (!s.bare && AFTER_RENAME.has(point) && point !== 'index-renamed') {
    // the branch moved, the index did not follow: reported with the command that finishes it
    t.is(r.code, 2, r.stdout + r.stderr);
    t.regex(r.stderr, /the working copy is half-updated: main is at lastgood's commit/);
    const command = /"git restore --source=HEAD --staged --worktree -- ([^"]+)"/.exec(r.stderr);
    t.truthy(command, r.stderr);
    t.deepEqual(command![1]!.split(' ').sort(), ['apps/podinfo/overlays/prod/hpa.yaml', 'apps/podinfo/overlays/prod/kustomization.yaml']);
    git(s.repo, 'restore', '--source=HEAD', '--staged', '--worktree', '--', ...command![1]!.split(' '));
    r = await run(s);
  }
  t.is(r.code, 0, r.stdout + r.stderr);
  t.is(r.created, !AFTER_RENAME.has(point), 'a revert already on the branch is reported, not made again');
  t.is(r.commit, git(s.repo, 'rev-parse', 'main'));
  t.is(git(s.repo, 'rev-parse', 'main^'), old);
  t.deepEqual(revertsOf(s.repo, s.bad), [r.commit]);
  if (!s.bare) t.is(git(s.repo, 'status', '--porcelain', '--untracked-files=all'), '', 'the working copy is main, nothing else');
  if (!s.bare) t.false(existsSync(path.join(gitdirOf(s), 'lastgood-tmp')), 'the temporary folder is removed by the next run');
  t.is(git(s.repo, 'fsck', '--no-progress', '--no-dangling'), '');
}

test('a temporary file an interrupted (older) run left in a target folder is recognised and removed, not refused as a person\'s change', async (t) => {
  const s = scenario({ bare: false });
  const folder = path.join(s.repo, 'apps/podinfo/overlays/prod');
  writeFileSync(path.join(folder, '.kustomization.yaml.lastgood-0123456789ab'), 'half a file');
  writeFileSync(path.join(folder, '.hpa.yaml.lastgood-link'), 'x');
  const r = await run(s);
  t.is(r.code, 0, r.stdout + r.stderr);
  t.true(r.created);
  t.regex(r.stdout, /removed apps\/podinfo\/overlays\/prod\/\.hpa\.yaml\.lastgood-link, apps\/podinfo\/overlays\/prod\/\.kustomization\.yaml\.lastgood-0123456789ab: temporary files of an interrupted lastgood run/);
  t.is(git(s.repo, 'status', '--porcelain', '--untracked-files=all'), '');
});

for (const point of WORKING_COPY_POINTS) {
  trials++;
  test(`after a kill at ${point} (working copy), the next runs say how to recover and then finish the job once`, async (t) => {
    const trial = await killAt(false, point);
    checkState(t, trial, point);
    await recover(t, trial, point);
  });
}

trials++;
test('after a kill at ref-written (bare), the next run names the ref lock; once it is removed, the revert is made once', async (t) => {
  const trial = await killAt(true, 'ref-written');
  checkState(t, trial, 'ref-written');
  await recover(t, trial, 'ref-written');
});

const RANDOM_KILLS = 9;
trials += RANDOM_KILLS;

test(`at least 20 crash trials`, (t) => {
  t.true(trials >= 20, `${trials} trials`);
});

test('kills at random moments of a run (bare): the branch is old or new, never broken; fsck clean', async (t) => {
  // a kill lands at a random moment of a run that is still running: the spread is the length of the
  // last run that finished before its kill came (runs are slower while this file's other tests run)
  let duration = 0;
  let moved = 0;
  let kills = 0;
  for (let i = 0; kills < RANDOM_KILLS && i < 4 * RANDOM_KILLS; i++) {
    const s = scenario({ bare: true });
    const old = git(s.repo, 'rev-parse', 'main');
    const started = Date.now();
    const child = spawn(process.execPath, [BIN, 'run', ...NOW, '--config', s.config, '--snapshot', s.snapshot], { stdio: 'ignore' });
    let exited = false;
    const closed = new Promise((resolve) => child.on('close', resolve)).then(() => (exited = true));
    if (duration > 0) await Promise.race([sleep(duration * Math.random()), closed]);
    if (exited || duration === 0) {
      // finished before its kill: a new measure of a whole run, and no trial
      await closed;
      duration = Date.now() - started;
      t.is(git(s.repo, 'rev-parse', 'main^'), old, 'a run left alone makes its revert');
      continue;
    }
    child.kill('SIGKILL');
    await closed;
    kills++;
    const state = afterKill(s);
    if (state.loose !== undefined) t.regex(state.loose, /^[0-9a-f]{40}\n$/);
    t.true(state.head === old || git(s.repo, 'rev-parse', 'main^') === old);
    if (state.head !== old) moved++;
    t.is(git(s.repo, 'fsck', '--no-progress', '--no-dangling'), '');
  }
  t.is(kills, RANDOM_KILLS, `${kills} kills reached a running process`);
  t.log(`${moved} of ${kills} kills at random moments of a running process came after the branch moved`);
});

test('the state the issue found (an empty loose main over a stale packed-refs value) is refused with the file named, nothing written', async (t) => {
  const s = scenario({ bare: true });
  const stale = git(s.repo, 'rev-parse', 'main~1');
  const pushed = git(s.repo, 'rev-parse', 'main');
  // packed-refs has an older main; the newer one (a person's push) was in the loose file, now empty
  writeFileSync(path.join(s.repo, 'packed-refs'), `# pack-refs with: peeled fully-peeled sorted \n${stale} refs/heads/main\n`);
  writeFileSync(path.join(s.repo, 'refs/heads/main'), '');
  const before = fingerprint(s.repo);
  const r = await run(s);
  t.is(r.code, 2, r.stdout + r.stderr);
  t.true(r.stderr.includes(path.join(s.repo, 'refs/heads/main')), r.stderr);
  t.regex(r.stderr, /is empty: git calls this a broken ref/);
  t.is(fingerprint(s.repo), before, 'nothing written');
  t.throws(() => execFileSync('git', ['rev-parse', '--verify', '--quiet', 'main'], { cwd: s.repo, stdio: 'pipe' }), undefined, 'git does not read the packed value either');
  // restored from what the person pushed, the run goes on
  writeFileSync(path.join(s.repo, 'refs/heads/main'), `${pushed}\n`);
  const again = await run(s);
  t.is(again.code, 0, again.stderr);
  t.is(git(s.repo, 'rev-parse', 'main^'), pushed, 'the person\'s commit is kept');
});
