/**
 * revert: lastgood's 3-way revert on the object database (planRevert + writing the tree and commit
 * objects with isomorphic-git) vs native `git revert --no-edit <bad>` in a clone of the same
 * repository, on each generated size (bench/generate-repo.ts), in the same run.
 *
 * - Each measurement runs in its own child process so that peak memory is that run's alone:
 *   lastgood in `node bench/revert.bench.ts --child …`, which prints its own elapsed time (from
 *   opening the repository to the commit written, excluding Node's start-up and module loading,
 *   reported separately as `processMs`) and `process.resourceUsage().maxRSS`;
 *   git under `/usr/bin/time -f %M` (max RSS in KiB). Without /usr/bin/time, git's rssMb is null
 *   (spawnSync does not report a child's resource usage).
 * - ms = median of the repetitions; the clone is reset to the bad commit before each git run.
 * - LASTGOOD_BENCH_SIZES=small,medium limits the sizes (default: all three).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchRepo, SIZES, type SizeName } from './generate-repo.ts';

export const prefix = 'revert';

const here = fileURLToPath(import.meta.url);
const REPS: Record<SizeName, number> = { small: 7, medium: 5, large: 3 };
const GIT_ENV = { ...process.env, GIT_AUTHOR_NAME: 'Bench', GIT_AUTHOR_EMAIL: 'bench@example.com', GIT_COMMITTER_NAME: 'Bench', GIT_COMMITTER_EMAIL: 'bench@example.com', GIT_CONFIG_NOSYSTEM: '1' };

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

const round = (x: number) => Math.round(x * 10) / 10;

/** Child mode: one lastgood revert, printing {ms, rssMb} as JSON. */
async function child(gitdir: string, bad: string, paths: string[]): Promise<void> {
  const { LocalRepo } = await import('../src/deliver/local/index.ts');
  const { planRevert } = await import('../src/revert/threeway.ts');
  const started = performance.now();
  const repo = new LocalRepo(gitdir);
  const plan = await planRevert(repo, { head: bad, bad: [bad], paths });
  const author = { name: 'lastgood', email: 'lastgood@example.com', timestamp: 1_790_000_000, timezoneOffset: 0 };
  const commit = await repo.writeChangeCommit({ target: 'bench', branch: 'main', parent: bad, files: plan.files, message: `Revert ${bad}\n`, author, bad: [bad], lastKnownGood: bad });
  const ms = performance.now() - started;
  process.stdout.write(JSON.stringify({ ms, rssMb: process.resourceUsage().maxRSS / 1024, commit, files: plan.files.length }) + '\n');
}

function runLastgood(gitdir: string, bad: string, paths: string[]): { ms: number; processMs: number; rssMb: number; files: number } {
  const t0 = performance.now();
  const out = execFileSync(process.execPath, [here, '--child', gitdir, bad, ...paths], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  const processMs = performance.now() - t0;
  const r = JSON.parse(out.trim().split('\n').pop()!) as { ms: number; rssMb: number; files: number };
  return { ...r, processMs };
}

const TIME = existsSync('/usr/bin/time') ? '/usr/bin/time' : undefined;

function runGit(work: string, bad: string): { ms: number; rssMb: number | null } {
  execFileSync('git', ['reset', '-q', '--hard', bad], { cwd: work, env: GIT_ENV });
  const args = ['revert', '--no-edit', bad];
  const t0 = performance.now();
  const r = TIME ? spawnSync(TIME, ['-f', 'maxrss=%M', 'git', ...args], { cwd: work, env: GIT_ENV, encoding: 'utf8' }) : spawnSync('git', args, { cwd: work, env: GIT_ENV, encoding: 'utf8' });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`git revert failed: ${r.stderr}`);
  const kib = /maxrss=(\d+)/.exec(r.stderr ?? '')?.[1];
  return { ms, rssMb: kib ? Number(kib) / 1024 : null };
}

export default async function* () {
  const wanted = (process.env.LASTGOOD_BENCH_SIZES ?? 'small,medium,large').split(',').map((s) => s.trim()) as SizeName[];
  for (const size of wanted) {
    if (!(size in SIZES)) continue;
    const repo = await benchRepo(size);
    const work = path.join(os.tmpdir(), `lastgood-bench-${size}-work`);
    if (!existsSync(path.join(work, '.git'))) {
      rmSync(work, { recursive: true, force: true });
      process.stderr.write(`revert bench: cloning ${size} for native git\n`);
      execFileSync('git', ['clone', '-q', repo.gitdir, work], { env: GIT_ENV });
    }
    const ours: Array<ReturnType<typeof runLastgood>> = [];
    const theirs: Array<ReturnType<typeof runGit>> = [];
    for (let i = 0; i < REPS[size]; i++) {
      process.stderr.write(`revert bench: ${size} repetition ${i + 1}/${REPS[size]}\n`);
      ours.push(runLastgood(repo.gitdir, repo.bad, repo.paths));
      theirs.push(runGit(work, repo.bad));
    }
    const lastgood = { ms: round(median(ours.map((o) => o.ms))), processMs: round(median(ours.map((o) => o.processMs))), rssMb: round(Math.max(...ours.map((o) => o.rssMb))) };
    const gitRss = theirs.map((t) => t.rssMb).filter((x): x is number => x !== null);
    const baseline = { name: 'native git', ms: round(median(theirs.map((t) => t.ms))), rssMb: gitRss.length ? round(Math.max(...gitRss)) : null };
    yield { bench: 'revert', size, files: repo.files, commits: repo.commits, lastgood, baseline, ratio: Math.round((lastgood.ms / baseline.ms) * 100) / 100 };
  }
}

if (import.meta.main && process.argv[2] === '--child') {
  const [gitdir, bad, ...paths] = process.argv.slice(3);
  await child(gitdir!, bad!, paths);
}
