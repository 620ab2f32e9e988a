/**
 * git-remote/cold and git-remote/warm: a revert of one target folder (the generated repositories'
 * bad commit: apps/app-00000/overlays/prod/) delivered to a git server over smart HTTP, by
 * lastgood's git backend and by native git, on the same repositories in the same run.
 *
 * The server is test/support/git-http-server.ts (git's own `git http-backend` on 127.0.0.1, with
 * uploadpack.allowFilter as GitHub and GitLab have it), over a fresh `git clone --bare --shared`
 * of the generated repository for each measurement, so every push lands on the same history.
 *
 * - cold, native git: `git clone --depth 50 --single-branch --no-checkout`, the folder restored
 *   to the bad commit's parent in the index, `git commit`, `git push`, in one shell;
 *   lastgood: a new Node process with an empty cache dir that does what the engine does for the
 *   target through the backend: head, the newest commit touching the folder (the bad one), the
 *   folder's files at its parent and at head, deliver in commit mode.
 * - warm: before each repetition someone pushes a new bad commit to the folder (git plumbing on
 *   the server's repository, not timed); native git: `git fetch --depth 50` + the same restore,
 *   commit and push in the clone made cold; lastgood: the same job again in the process that made
 *   the cold one (its mirror warm), timed inside the process.
 * - time: wall clock, median of the repetitions; rssMb: peak resident set of the job's processes
 *   (GNU time's %M: the largest process of the job; for warm, the whole lastgood process's life,
 *   run with the Node flags of the controller's Deployment, as a long-running process is; cold,
 *   with none, its young generation bounded as the CLI bounds it, src/engine/heap.ts);
 *   ratio: median over median; ratioPaired: the median of each repetition's ratio; startupMs
 *   (cold): the lastgood process's time before its first request (Node, loading the modules);
 *   cpuMs: the cold process's CPU (user + system, GNU time), steadier than wall on a shared machine;
 *   requests: the HTTP requests the server answered for the cold job.
 * - LASTGOOD_BENCH_SIZES=small,medium limits the sizes (default: all three);
 *   LASTGOOD_BENCH_PROFILE=DIR writes each job process's CPU profile there.
 *
 * The job process is bench/git-remote-job.ts bundled as the CLI is (bench/bundle.ts: the esbuild
 * options of scripts/build-cli.ts, into a temporary folder, before anything is timed), run with
 * plain `node` and no NODE_COMPILE_CACHE: the cold row compiles the whole bundle, as a new
 * installation's first run does (LASTGOOD_BENCH_JOB=source runs the TypeScript sources instead).
 */
import { execFileSync, spawn } from 'node:child_process';
import { CONTROLLER_NODE_OPTIONS } from '../src/controller/install.ts';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { bundleJob, coldEnv } from './bundle.ts';
import { benchRepo, SIZES, type SizeName } from './generate-repo.ts';

export const prefix = 'git-remote';

const JOB_SOURCE = path.join(path.dirname(fileURLToPath(import.meta.url)), 'git-remote-job.ts');
/** LASTGOOD_BENCH_PROFILE=DIR: each job process writes a V8 CPU profile there. */
const PROFILE_FLAGS = process.env.LASTGOOD_BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.LASTGOOD_BENCH_PROFILE}`] : [];
const TIME = '/usr/bin/time';
const REPS: Record<SizeName, number> = { small: 5, medium: 5, large: 3 };
const GIT_ENV = {
  ...process.env,
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_TERMINAL_PROMPT: '0',
  GIT_AUTHOR_NAME: 'Bench',
  GIT_AUTHOR_EMAIL: 'bench@example.com',
  GIT_COMMITTER_NAME: 'Bench',
  GIT_COMMITTER_EMAIL: 'bench@example.com',
};

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

const round = (x: number, digits = 0) => Math.round(x * 10 ** digits) / 10 ** digits;

interface Timed {
  ms: number;
  cpuMs: number;
  rssMb: number;
}

/** Runs a command under GNU time: wall ms, CPU ms (user + system) and the peak RSS of its largest process. */
async function timed(command: string, args: string[], opts: { cwd?: string; input?: string; env?: NodeJS.ProcessEnv } = {}): Promise<Timed & { stdout: string }> {
  const out = path.join(mkdtempSync(path.join(os.tmpdir(), 'lastgood-bench-time-')), 'rss');
  const started = performance.now();
  const stdout = await new Promise<string>((resolve, reject) => {
    const child = spawn(TIME, ['-o', out, '-f', '%U %S %M', command, ...args], { cwd: opts.cwd, env: opts.env ?? GIT_ENV, stdio: ['pipe', 'pipe', 'pipe'] });
    let text = '';
    let err = '';
    child.stdout.on('data', (d) => (text += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(text) : reject(new Error(`${command} ${args.join(' ')} exited ${code}: ${err}`))));
    child.stdin.end(opts.input ?? '');
  });
  const ms = performance.now() - started;
  const [user, system, kb] = readFileSync(out, 'utf8').trim().split('\n').pop()!.split(' ').map(Number);
  rmSync(path.dirname(out), { recursive: true, force: true });
  return { ms, cpuMs: (user! + system!) * 1000, rssMb: kb! / 1024, stdout };
}

/** A lastgood job process kept open across repetitions (warm); RSS is known when it exits. */
function jobProcess(entry: string, url: string, cacheDir: string, folder: string) {
  const out = path.join(mkdtempSync(path.join(os.tmpdir(), 'lastgood-bench-time-')), 'rss');
  // the long-running process runs with the Node flags the controller's Deployment sets (src/controller/install.ts)
  const child = spawn(TIME, ['-o', out, '-f', '%M', process.execPath, ...CONTROLLER_NODE_OPTIONS.split(' '), entry, '--job', url, cacheDir, folder], { env: GIT_ENV, stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const closed = new Promise<number | null>((resolve) => child.on('close', resolve));
  return {
    async run(): Promise<{ ms: number }> {
      child.stdin.write('go\n');
      const next = await lines.next();
      if (next.done) throw new Error(`the job process ended (exit ${await closed})`);
      return JSON.parse(next.value) as { ms: number };
    },
    async close(): Promise<number> {
      child.stdin.end('exit\n');
      const code = await closed;
      if (code !== 0) throw new Error(`the job process exited ${code}`);
      const rss = Number(readFileSync(out, 'utf8').trim().split('\n').pop()) / 1024;
      rmSync(path.dirname(out), { recursive: true, force: true });
      return rss;
    },
  };
}

// ---- the native side ----------------------------------------------------------------------------

const restoreScript = (folder: string) => `git read-tree HEAD && git restore --staged --source=HEAD~1 -- ${folder} && git commit -q -m 'Revert ${folder}' && git push -q origin HEAD:main`;
const nativeCold = (url: string, dir: string, folder: string) => `git clone -q --depth 50 --single-branch --no-checkout --branch main ${url} ${dir} && cd ${dir} && ${restoreScript(folder)}`;
const nativeWarm = (folder: string) => `git fetch -q --depth 50 origin main && git reset -q --soft FETCH_HEAD && ${restoreScript(folder)}`;

// ---- the server ---------------------------------------------------------------------------------

/** A fresh served copy of the generated repository (objects shared with it, so it costs nothing). */
function servedCopy(root: string, source: string): string {
  const bare = path.join(root, 'gitops.git');
  rmSync(bare, { recursive: true, force: true });
  execFileSync('git', ['clone', '-q', '--bare', '--shared', source, bare], { env: GIT_ENV });
  return bare;
}

/** Someone else's bad commit to the folder, made on the server's repository (not timed). */
function pushBadCommit(bare: string, folder: string, n: number): void {
  const file = `${folder}kustomization.yaml`;
  const index = path.join(mkdtempSync(path.join(os.tmpdir(), 'lastgood-bench-index-')), 'index');
  const env = { ...GIT_ENV, GIT_INDEX_FILE: index };
  const git = (args: string[], input?: string) => execFileSync('git', args, { cwd: bare, env, encoding: 'utf8', ...(input !== undefined ? { input } : {}) }).trim();
  const blob = git(['hash-object', '-w', '--stdin'], `apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: prod\nresources:\n  - ../../base\nimages:\n  - name: registry.example.com/app-00000\n    newTag: 9.9.${n}\n`);
  git(['read-tree', 'main']);
  git(['update-index', '--cacheinfo', `100644,${blob},${file}`]);
  const tree = git(['write-tree']);
  const commit = git(['commit-tree', tree, '-p', 'main', '-m', `app-00000 prod: 9.9.${n} (bad)`]);
  git(['update-ref', 'refs/heads/main', commit]);
  rmSync(path.dirname(index), { recursive: true, force: true });
}

/** The revert landed: the folder at main equals the folder before the bad commit. */
function assertReverted(bare: string, folder: string, who: string): void {
  const at = (rev: string) => execFileSync('git', ['rev-parse', `${rev}:${folder.replace(/\/$/, '')}`], { cwd: bare, encoding: 'utf8' }).trim();
  if (at('main') !== at('main~2')) throw new Error(`${who}: the folder at main is not the folder before the bad commit`);
}

export default async function* () {
  if (!existsSync(TIME)) {
    process.stderr.write(`git-remote: ${TIME} (GNU time) is needed to measure peak RSS: apt-get install time\n`);
    return;
  }
  const { startGitHttpServer } = await import('../test/support/git-http-server.ts');
  const sizes = (process.env.LASTGOOD_BENCH_SIZES?.split(',') ?? Object.keys(SIZES)) as SizeName[];
  for (const size of sizes) {
    const repo = await benchRepo(size);
    const folder = repo.paths[0]!;
    const root = mkdtempSync(path.join(os.tmpdir(), 'lastgood-bench-serve-'));
    const entry = await bundleJob(JOB_SOURCE, path.join(root, 'job'));
    const server = await startGitHttpServer({ root });
    const url = `${server.url}/gitops.git`;
    try {
      // cold
      const cold = { lastgood: [] as Timed[], native: [] as Timed[], startup: [] as number[], requests: [] as number[] };
      for (let rep = 0; rep < REPS[size]; rep++) {
        const bare = servedCopy(root, repo.gitdir);
        const work = mkdtempSync(path.join(os.tmpdir(), 'lastgood-bench-native-'));
        cold.native.push(await timed('sh', ['-c', nativeCold(url, path.join(work, 'clone'), folder)]));
        assertReverted(bare, folder, 'native git');
        rmSync(work, { recursive: true, force: true });

        servedCopy(root, repo.gitdir);
        const cache = mkdtempSync(path.join(os.tmpdir(), 'lastgood-bench-cache-'));
        const from = server.log.length;
        const lastgood = await timed(process.execPath, [...PROFILE_FLAGS, entry, '--job', url, cache, folder], { input: 'go\nexit\n', env: coldEnv(GIT_ENV) });
        cold.lastgood.push(lastgood);
        cold.startup.push((JSON.parse(lastgood.stdout) as { startupMs: number }).startupMs);
        cold.requests.push(server.log.length - from);
        assertReverted(bare, folder, 'lastgood');
        rmSync(cache, { recursive: true, force: true });
        process.stderr.write(`git-remote/cold ${size} #${rep + 1}: lastgood ${round(lastgood.ms)} ms (${round(lastgood.cpuMs)} ms CPU, ${cold.requests.at(-1)} requests), native ${round(cold.native.at(-1)!.ms)} ms (${round(cold.native.at(-1)!.cpuMs)} ms CPU)\n`);
      }
      const r = row('git-remote/cold', size, cold.lastgood.map((x) => x.ms), Math.max(...cold.lastgood.map((x) => x.rssMb)), cold.native.map((x) => x.ms), Math.max(...cold.native.map((x) => x.rssMb)));
      const cpu = median(cold.lastgood.map((x) => x.cpuMs));
      const nativeCpu = median(cold.native.map((x) => x.cpuMs));
      yield {
        ...r,
        lastgood: { ...r.lastgood, cpuMs: round(cpu), requests: median(cold.requests) },
        baseline: { ...r.baseline, cpuMs: round(nativeCpu) },
        cpuRatio: round(cpu / nativeCpu, 2),
        startupMs: round(median(cold.startup)),
      };

      // warm: native git in the clone it made, lastgood in the process that made the mirror
      const bare = servedCopy(root, repo.gitdir);
      const work = mkdtempSync(path.join(os.tmpdir(), 'lastgood-bench-native-'));
      const clone = path.join(work, 'clone');
      await timed('sh', ['-c', nativeCold(url, clone, folder)]);
      const cache = mkdtempSync(path.join(os.tmpdir(), 'lastgood-bench-cache-'));
      const proc = jobProcess(entry, url, cache, folder);
      pushBadCommit(bare, folder, 0);
      await proc.run(); // cold, not counted
      const warm = { lastgood: [] as number[], native: [] as Timed[] };
      for (let rep = 1; rep <= REPS[size]; rep++) {
        pushBadCommit(bare, folder, rep * 2);
        warm.native.push(await timed('sh', ['-c', nativeWarm(folder)], { cwd: clone }));
        assertReverted(bare, folder, 'native git');
        pushBadCommit(bare, folder, rep * 2 + 1);
        warm.lastgood.push((await proc.run()).ms);
        assertReverted(bare, folder, 'lastgood');
        process.stderr.write(`git-remote/warm ${size} #${rep}: lastgood ${round(warm.lastgood.at(-1)!)} ms, native ${round(warm.native.at(-1)!.ms)} ms\n`);
      }
      const rss = await proc.close();
      yield row('git-remote/warm', size, warm.lastgood, rss, warm.native.map((x) => x.ms), Math.max(...warm.native.map((x) => x.rssMb)));
      rmSync(work, { recursive: true, force: true });
      rmSync(cache, { recursive: true, force: true });
    } finally {
      await server.close();
      rmSync(root, { recursive: true, force: true });
    }
  }
}

function row(bench: string, size: SizeName, lastgoodMs: number[], lastgoodRss: number, nativeMs: number[], nativeRss: number) {
  const ms = median(lastgoodMs);
  const base = median(nativeMs);
  return {
    bench,
    size,
    files: SIZES[size].files,
    commits: SIZES[size].commits,
    lastgood: { ms: round(ms), rssMb: round(lastgoodRss, 1) },
    baseline: { name: 'native git', ms: round(base), rssMb: round(nativeRss, 1) },
    ratio: round(ms / base, 2),
    // the median of each repetition's own ratio (the two sides run back to back): steadier on a shared machine
    ratioPaired: round(median(lastgoodMs.map((x, i) => x / nativeMs[i]!)), 2),
    rssRatio: round(lastgoodRss / nativeRss, 2),
  };
}
