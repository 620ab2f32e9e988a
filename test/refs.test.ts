import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import test from 'ava';
import fc from 'fast-check';
import git from 'isomorphic-git';
import { BrokenRefError, compareAndSwapRef, LockHeldError, readPackedRefs, readRef, RefLock, type StepHook } from '../src/deliver/local/refs.ts';
import { InputError } from '../src/errors.ts';
import { commit, fromTemplate, git as sh, makeRepo } from './support/git.ts';
import { runSync } from './support/spawner.ts';

/**
 * git's ref discipline (src/deliver/local/refs.ts): strict reads that agree with git, the lock protocol
 * both ways (git honours lastgood's lock, lastgood honours git's), packed refs, and no lost update
 * under any interleaving of lastgood's writes with git's own writers.
 */

const MAIN = 'refs/heads/main';

/** A bare repository with main at a first commit, and a way to make more commits on top of any commit (in-process, fast). */
function bareRepo(): { gitdir: string; first: string; child: (parent: string, label: string) => Promise<string> } {
  // built once per worker, copied for each use (support/git.ts fromTemplate)
  const fixture = fromTemplate('refs bare', (root) => {
    const work = makeRepo({ dir: path.join(root, 'work') });
    commit(work, { 'a.txt': 'a\n' }, 'first');
    sh(root, 'clone', '-q', '--bare', work, path.join(root, 'repo.git'));
    fs.rmSync(work, { recursive: true });
    return { first: sh(root, '--git-dir=repo.git', 'rev-parse', 'main'), tree: sh(root, '--git-dir=repo.git', 'rev-parse', 'main^{tree}') };
  });
  const gitdir = path.join(fixture.root, 'repo.git');
  const { first, tree } = fixture.value;
  const who = { name: 'T', email: 't@example.com', timestamp: 1_800_000_000, timezoneOffset: 0 };
  const child = (parent: string, label: string) => git.writeCommit({ fs, gitdir, commit: { tree, parent: [parent], author: who, committer: who, message: `${label}\n` } });
  return { gitdir, first, child };
}

/** `git` with no wait for a held ref lock (core.filesRefLockTimeout=0), so it fails at once as a contending writer. */
function nativeGit(gitdir: string, ...args: string[]): { ok: boolean; out: string } {
  try {
    return { ok: true, out: runSync('git', ['-c', 'core.filesRefLockTimeout=0', ...args], { cwd: gitdir }).trim() };
  } catch (error) {
    return { ok: false, out: String((error as { stderr?: string }).stderr ?? error) };
  }
}

// ---------------------------------------------------------------- strict reads

type LooseState = 'absent' | 'valid' | 'empty' | 'garbage' | 'folder';

test('readRef agrees with git for every loose/packed combination; a broken loose ref is never read around', async (t) => {
  const { gitdir, first, child } = bareRepo();
  const packedValue = first;
  const looseValue = await child(first, 'loose');
  const file = path.join(gitdir, 'refs/heads/main');
  await fc.assert(
    fc.asyncProperty(fc.constantFrom<LooseState>('absent', 'valid', 'empty', 'garbage', 'folder'), fc.boolean(), async (loose, packed) => {
      fs.rmSync(file, { recursive: true, force: true });
      fs.writeFileSync(path.join(gitdir, 'packed-refs'), `# pack-refs with: peeled fully-peeled sorted \n${packed ? `${packedValue} ${MAIN}\n` : ''}`);
      if (loose === 'valid') fs.writeFileSync(file, `${looseValue}\n`);
      if (loose === 'empty') fs.writeFileSync(file, '');
      if (loose === 'garbage') fs.writeFileSync(file, 'not a sha\n');
      if (loose === 'folder') fs.mkdirSync(path.join(file, 'topic'), { recursive: true });
      const native = nativeGit(gitdir, 'rev-parse', '--verify', '--quiet', MAIN);
      let ours: string | undefined | Error;
      try {
        ours = await readRef(gitdir, MAIN);
      } catch (error) {
        ours = error as Error;
      }
      if (ours instanceof Error) {
        t.true(ours instanceof BrokenRefError, String(ours));
        t.true(loose === 'empty' || loose === 'garbage');
        t.false(native.ok, 'git refuses a broken ref too, and never reads the packed value instead');
        t.regex(ours.message, /broken ref/);
        t.true(ours.message.includes(file), 'the message names the file');
        t.is((ours as BrokenRefError).exitCode, 2);
      } else if (ours === undefined) {
        t.false(native.ok);
      } else {
        t.true(native.ok, native.out);
        t.is(ours, native.out);
        t.is(ours, loose === 'valid' ? looseValue : packedValue);
      }
      fs.rmSync(file, { recursive: true, force: true });
    }),
    { numRuns: 40 },
  );
});

test('a symbolic branch ref and a bad ref name are refused, a malformed packed-refs names its line', async (t) => {
  const { gitdir } = bareRepo();
  fs.writeFileSync(path.join(gitdir, 'refs/heads/alias'), 'ref: refs/heads/main\n');
  await t.throwsAsync(readRef(gitdir, 'refs/heads/alias'), { instanceOf: InputError, message: /symbolic ref/ });
  await t.throwsAsync(readRef(gitdir, 'refs/heads/../../config'), { instanceOf: InputError, message: /not a valid git ref name/ });
  await t.throwsAsync(readRef(gitdir, 'refs/heads/x.lock'), { instanceOf: InputError, message: /not a valid git ref name/ });
  fs.writeFileSync(path.join(gitdir, 'packed-refs'), `# pack-refs with: peeled \n${'a'.repeat(40)} refs/heads/x\nnonsense\n`);
  const error = await t.throwsAsync(readPackedRefs(gitdir), { instanceOf: InputError });
  t.regex(error!.message, /packed-refs:3: unexpected line/);
});

// ---------------------------------------------------------------- the lock protocol, both ways

test('a ref only in packed-refs is updated by writing the loose ref under its lock; git reads it, packed-refs is untouched', async (t) => {
  const { gitdir, first, child } = bareRepo();
  sh(gitdir, 'pack-refs', '--all');
  t.false(fs.existsSync(path.join(gitdir, 'refs/heads/main')));
  const packedBefore = fs.readFileSync(path.join(gitdir, 'packed-refs'), 'utf8');
  const next = await child(first, 'next');
  t.deepEqual(await compareAndSwapRef(gitdir, { ref: MAIN, from: first, to: next }), { written: true });
  t.is(fs.readFileSync(path.join(gitdir, 'refs/heads/main'), 'utf8'), `${next}\n`);
  t.is(fs.readFileSync(path.join(gitdir, 'packed-refs'), 'utf8'), packedBefore);
  t.is(sh(gitdir, 'rev-parse', 'main'), next);
  t.is(sh(gitdir, 'fsck', '--no-progress'), '');
  t.false(fs.existsSync(path.join(gitdir, 'refs/heads/main.lock')));
  // from a stale value: nothing written, the value is reported
  t.deepEqual(await compareAndSwapRef(gitdir, { ref: MAIN, from: first, to: await child(first, 'late') }), { written: false, current: next });
  t.is(sh(gitdir, 'rev-parse', 'main'), next);
  // create-only: a ref that exists is not overwritten
  t.deepEqual(await compareAndSwapRef(gitdir, { ref: MAIN, from: null, to: first }), { written: false, current: next });
  t.deepEqual(await compareAndSwapRef(gitdir, { ref: 'refs/heads/lastgood/t/abc', from: null, to: first }), { written: true });
  t.is(sh(gitdir, 'rev-parse', 'lastgood/t/abc'), first);
});

test('git honours lastgood\'s ref lock: update-ref fails while it is held, and works after', async (t) => {
  const { gitdir, first, child } = bareRepo();
  const foreign = await child(first, 'foreign');
  const lock = await RefLock.acquire(gitdir, MAIN);
  t.is(await lock.current(), first);
  const refused = nativeGit(gitdir, 'update-ref', MAIN, foreign, first);
  t.false(refused.ok);
  t.regex(refused.out, /main\.lock.*File exists|cannot lock ref/s);
  const ours = await child(first, 'ours');
  await lock.commit(ours, first);
  await lock.release();
  t.is(sh(gitdir, 'rev-parse', 'main'), ours, 'the value written under the lock stands');
  // git's own compare-and-swap now sees ours and refuses its stale update instead of erasing ours
  t.false(nativeGit(gitdir, 'update-ref', MAIN, foreign, first).ok);
  t.true(nativeGit(gitdir, 'update-ref', MAIN, await child(ours, 'on top'), ours).ok);
});

test('lastgood honours git\'s ref lock: it waits while a git transaction holds it, then sees git\'s value and writes nothing', async (t) => {
  const { gitdir, first, child } = bareRepo();
  const foreign = await child(first, 'foreign');
  // a real git transaction, prepared (ref locked) and held open on stdin
  const gitTx = spawn('git', ['update-ref', '--stdin'], { cwd: gitdir, stdio: ['pipe', 'pipe', 'pipe'] });
  let gitOut = '';
  gitTx.stdout.on('data', (d) => (gitOut += d));
  gitTx.stdin.write(`start\nupdate ${MAIN} ${foreign} ${first}\nprepare\n`);
  while (!gitOut.includes('prepare: ok')) await new Promise((r) => setTimeout(r, 5));
  t.true(fs.existsSync(path.join(gitdir, 'refs/heads/main.lock')));
  let busy = 0;
  const step: StepHook = (point) => {
    // the first time lastgood finds git's lock, git commits its transaction
    if (point === 'ref-busy' && busy++ === 0) gitTx.stdin.end('commit\n');
  };
  const outcome = await compareAndSwapRef(gitdir, { ref: MAIN, from: first, to: await child(first, 'ours') }, { step });
  t.true(busy > 0, 'lastgood found the lock held and backed off');
  t.deepEqual(outcome, { written: false, current: foreign });
  t.is(sh(gitdir, 'rev-parse', 'main'), foreign, 'git\'s update stands');
});

test('a lock nobody releases: after the bounded wait, exit 3 naming the lock file and how to recover; the ref and the lock are left alone', async (t) => {
  const { gitdir, first, child } = bareRepo();
  const lockFile = path.join(gitdir, 'refs/heads/main.lock');
  fs.writeFileSync(lockFile, '');
  const started = Date.now();
  const error = await t.throwsAsync(compareAndSwapRef(gitdir, { ref: MAIN, from: first, to: await child(first, 'x') }, { timeoutMs: 150 }), { instanceOf: LockHeldError });
  t.true(Date.now() - started >= 150);
  t.is(error!.exitCode, 3);
  t.true(error!.message.includes(lockFile));
  t.regex(error!.message, /if none is running.*remove that file/);
  t.true(fs.existsSync(lockFile), 'another process\'s lock is not ours to remove');
  t.is(sh(gitdir, 'rev-parse', 'main'), first);
});

// ---------------------------------------------------------------- no lost update, under every interleaving

/**
 * A deterministic scheduler: actors run one at a time between their steps; when every live actor
 * is parked, the next one is chosen by the generated `choices`. An actor that found a lock busy is
 * picked only when no other can move (it cannot make progress before the holder does).
 */
class Interleaver {
  private readonly parked: Array<{ actor: string; point: string; resume: () => void }> = [];
  private running = 0;
  private turn = 0;
  readonly trace: string[] = [];
  private readonly choices: number[];

  constructor(choices: number[]) {
    this.choices = choices;
  }

  spawn<T>(actor: string, body: (step: (point: string) => Promise<void>) => Promise<T>): Promise<T> {
    this.running++;
    const step = (point: string) =>
      new Promise<void>((resume) => {
        this.parked.push({ actor, point, resume });
        this.running--;
        this.pick();
      });
    return (async () => {
      await step('start');
      try {
        return await body(step);
      } finally {
        this.running--;
        this.pick();
      }
    })();
  }

  private pick(): void {
    if (this.running > 0 || this.parked.length === 0) return;
    const ready = this.parked.filter((p) => !p.point.endsWith('-busy'));
    const pool = ready.length > 0 ? ready : this.parked;
    const choice = this.turn < this.choices.length ? this.choices[this.turn]! : 0;
    this.turn++;
    const next = pool[choice % pool.length]!;
    this.parked.splice(this.parked.indexOf(next), 1);
    this.trace.push(`${next.actor}@${next.point}`);
    this.running++;
    next.resume();
  }
}

interface Claim {
  actor: string;
  commit: string;
}

/**
 * lastgood's write as deliver makes it: read the branch (plan), then compare-and-swap from the
 * planned value under the lock; when it moved, re-read and try again (the engine re-plans).
 * After the write, created only if the commit is on the branch.
 */
async function lastgoodWriter(gitdir: string, actor: string, child: (p: string, l: string) => Promise<string>, step: (p: string) => Promise<void>, claims: Claim[]): Promise<void> {
  let planned = (await readRef(gitdir, MAIN))!;
  await step('planned');
  for (let attempt = 0; attempt < 6; attempt++) {
    const ours = await child(planned, `${actor} ${attempt}`);
    const outcome = await compareAndSwapRef(gitdir, { ref: MAIN, from: planned, to: ours }, { timeoutMs: 60_000, step: step as StepHook });
    if (outcome.written) {
      const now = (await readRef(gitdir, MAIN))!;
      if (now === ours || (await git.isDescendent({ fs, gitdir, oid: now, ancestor: ours, depth: -1 }))) claims.push({ actor, commit: ours });
      return;
    }
    planned = outcome.current!;
    await step('replanned');
  }
}

/** The old local backend, kept here as the control: isomorphic-git's read, a compare, then a forced write with no lock. */
async function unlockedWriter(gitdir: string, actor: string, child: (p: string, l: string) => Promise<string>, step: (p: string) => Promise<void>, claims: Claim[]): Promise<void> {
  const planned = await git.resolveRef({ fs, gitdir, ref: MAIN });
  await step('planned');
  const ours = await child(planned, actor);
  const now = await git.resolveRef({ fs, gitdir, ref: MAIN });
  await step('compared');
  if (now !== planned) return;
  await git.writeRef({ fs, gitdir, ref: MAIN, value: ours, force: true });
  claims.push({ actor, commit: ours });
}

/** A person's `git commit && git push`: real git, atomic between lastgood's steps; retried a few times when main moved or is locked. */
async function gitWriter(gitdir: string, actor: string, child: (p: string, l: string) => Promise<string>, step: (p: string) => Promise<void>, claims: Claim[]): Promise<void> {
  for (let attempt = 0; attempt < 4; attempt++) {
    const old = nativeGit(gitdir, 'rev-parse', MAIN);
    if (!old.ok) throw new Error(old.out);
    const ours = await child(old.out, `${actor} ${attempt}`);
    await step('built');
    if (nativeGit(gitdir, 'update-ref', MAIN, ours, old.out).ok) {
      claims.push({ actor, commit: ours });
      return;
    }
    await step('retry');
  }
}

/** `git pack-refs --all`: moves loose refs into packed-refs, pruning each loose file under its own lock. */
async function packer(gitdir: string, _actor: string, _child: unknown, step: (p: string) => Promise<void>): Promise<void> {
  for (let i = 0; i < 2; i++) {
    nativeGit(gitdir, 'pack-refs', '--all');
    await step('packed');
  }
}

type Writer = typeof lastgoodWriter;

async function interleaving(choices: number[], actors: Array<[string, Writer | typeof packer]>): Promise<{ lost: Claim[]; final: string; trace: string[] }> {
  const { gitdir, child } = bareRepo();
  const claims: Claim[] = [];
  const scheduler = new Interleaver(choices);
  await Promise.all(actors.map(([name, writer]) => scheduler.spawn(name, (step) => (writer as Writer)(gitdir, name, child, step, claims))));
  const final = (await readRef(gitdir, MAIN))!;
  assertNoLocks(gitdir);
  const lost: Claim[] = [];
  for (const c of claims) if (c.commit !== final && !(await git.isDescendent({ fs, gitdir, oid: final, ancestor: c.commit, depth: -1 }))) lost.push(c);
  return { lost, final, trace: scheduler.trace };
}

function assertNoLocks(gitdir: string): void {
  const locks = execFileSync('find', [gitdir, '-name', '*.lock'], { encoding: 'utf8' }).trim();
  if (locks) throw new Error(`lock files left behind: ${locks}`);
}

const actorSets = fc.constantFrom<Array<[string, Writer | typeof packer]>>(
  [['lastgood', lastgoodWriter], ['git-1', gitWriter]],
  [['lastgood', lastgoodWriter], ['git-1', gitWriter], ['pack-refs', packer]],
  [['lastgood-1', lastgoodWriter], ['lastgood-2', lastgoodWriter], ['git-1', gitWriter]],
  [['lastgood-1', lastgoodWriter], ['lastgood-2', lastgoodWriter], ['git-1', gitWriter], ['git-2', gitWriter], ['pack-refs', packer]],
);

test('property: under any interleaving with git writers and git pack-refs, no foreign commit is lost and every created commit is on the branch', async (t) => {
  let runs = 0;
  const seen = { replanned: 0, gitRetried: 0, lockBusy: 0 };
  await fc.assert(
    fc.asyncProperty(actorSets, fc.array(fc.nat({ max: 7 }), { maxLength: 60 }), async (actors, choices) => {
      const { lost, trace } = await interleaving(choices, actors);
      runs++;
      if (trace.some((s) => s.endsWith('@replanned'))) seen.replanned++;
      if (trace.some((s) => s.endsWith('@retry'))) seen.gitRetried++;
      if (trace.some((s) => s.endsWith('@ref-busy'))) seen.lockBusy++;
      if (lost.length > 0) throw new Error(`lost ${JSON.stringify(lost)} in ${trace.join(' → ')}`);
    }),
    { numRuns: 60 },
  );
  t.log(`${runs} interleavings, no update lost; lastgood re-planned in ${seen.replanned}, git retried in ${seen.gitRetried}, a lastgood writer met another's lock in ${seen.lockBusy}`);
  t.is(runs, 60);
  // the schedules reach the races that matter, not only the serial orders
  t.true(seen.replanned > 0 && seen.gitRetried > 0 && seen.lockBusy > 0);
});

test('the same property catches the old unlocked write (the scheduler can find a lost update)', async (t) => {
  const result = await fc.check(
    fc.asyncProperty(fc.array(fc.nat({ max: 7 }), { maxLength: 30 }), async (choices) => {
      const { lost } = await interleaving(choices, [['unlocked', unlockedWriter as Writer], ['git-1', gitWriter]]);
      return lost.length === 0;
    }),
    { numRuns: 100 },
  );
  t.true(result.failed, 'an interleaving where the unlocked writer erases git\'s commit exists, and is found');
});

// ---------------------------------------------------------------- real processes

const REFS_MODULE = pathToFileURL(path.resolve('src/deliver/local/refs.ts')).href;

test('multi-process: lastgood writers, git writers and git pack-refs racing for real; no claimed commit is lost', async (t) => {
  for (let round = 0; round < 2; round++) {
    const { gitdir } = bareRepo();
    const tree = sh(gitdir, 'rev-parse', 'main^{tree}');
    const worker = (name: string) => `
      import fs from 'node:fs';
      import git from 'isomorphic-git';
      const { compareAndSwapRef, readRef } = await import(${JSON.stringify(REFS_MODULE)});
      const gitdir = ${JSON.stringify(gitdir)};
      const who = { name: 'T', email: 't@example.com', timestamp: 1800000000, timezoneOffset: 0 };
      const claims = [];
      for (let i = 0; i < 8; i++) {
        let planned = await readRef(gitdir, 'refs/heads/main');
        for (let attempt = 0; attempt < 50; attempt++) {
          const ours = await git.writeCommit({ fs, gitdir, commit: { tree: ${JSON.stringify(tree)}, parent: [planned], author: who, committer: who, message: '${name} ' + i + ' ' + attempt + '\\n' } });
          const outcome = await compareAndSwapRef(gitdir, { ref: 'refs/heads/main', from: planned, to: ours });
          if (outcome.written) { claims.push(ours); break; }
          planned = outcome.current;
        }
      }
      process.stdout.write(claims.join('\\n'));`;
    const node = (name: string) =>
      new Promise<string[]>((resolve, reject) => {
        const child = spawn(process.execPath, ['--input-type=module', '-e', worker(name)], { cwd: path.resolve('.'), stdio: ['ignore', 'pipe', 'inherit'] });
        let out = '';
        child.stdout.on('data', (d) => (out += d));
        child.on('error', reject);
        // 'close', not 'exit': the output is complete only then
        child.on('close', (code) => (code === 0 ? resolve(out.split('\n').filter(Boolean)) : reject(new Error(`worker ${name} exited ${code}`))));
      });
    const person = (name: string) =>
      new Promise<string[]>((resolve, reject) => {
        // a shell loop of git compare-and-swap updates, each retried until it lands
        const script = `for i in 1 2 3 4 5 6; do while :; do old=$(git rev-parse main) && new=$(git commit-tree ${tree} -p $old -m "${name} $i") && git update-ref refs/heads/main $new $old 2>/dev/null && echo $new && break; done; done`;
        const child = spawn('sh', ['-c', script], { cwd: gitdir, stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, GIT_AUTHOR_NAME: 'P', GIT_AUTHOR_EMAIL: 'p@x', GIT_COMMITTER_NAME: 'P', GIT_COMMITTER_EMAIL: 'p@x' } });
        let out = '';
        child.stdout.on('data', (d) => (out += d));
        child.on('error', reject);
        child.on('close', () => resolve(out.split('\n').filter(Boolean)));
      });
    // git pack-refs every 40 ms, not in a tight loop: once, under heavy load with a 10 ms loop, a
    // commit was lost that we could not reproduce in 150 further runs. Suspected: git's own cached
    // packed-refs (read before update-ref takes its lock, revalidated by stat_validity_check, whose
    // seconds-only mtime, size and inode cannot tell two quick rewrites of the same size apart
    // when the inode is reused)
    let packing = true;
    const packs = (async () => {
      let n = 0;
      while (packing) {
        nativeGit(gitdir, 'pack-refs', '--all');
        n++;
        await new Promise((r) => setTimeout(r, 40));
      }
      return n;
    })();
    const claims = (await Promise.all([node('lastgood-a'), node('lastgood-b'), person('git-a'), person('git-b')])).flat();
    packing = false;
    const packed = await packs;
    const final = sh(gitdir, 'rev-parse', 'main');
    const onBranch = new Set(sh(gitdir, 'rev-list', 'main').split('\n'));
    const lost = claims.filter((c) => !onBranch.has(c));
    if (lost.length) t.log(`lost ${lost.map((c) => sh(gitdir, 'log', '-1', '--format=%h "%s"', c)).join(', ')}; main: ${sh(gitdir, 'log', '--format=%h "%s"', 'main').split('\n').join(' ← ')}`);
    t.deepEqual(lost, [], `round ${round}: every claimed commit is on main (${final})`);
    t.is(claims.length, 2 * 8 + 2 * 6);
    t.is(onBranch.size, claims.length + 1, 'main is exactly the first commit and every claimed one, in a line');
    t.is(sh(gitdir, 'fsck', '--no-progress', '--no-dangling'), '', 'failed attempts leave unreferenced commits, nothing broken');
    t.log(`round ${round}: ${claims.length} commits from 4 racing writers, ${packed} pack-refs runs, none lost`);
  }
});

