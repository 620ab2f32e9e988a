/**
 * monorepo/*: what lastgood really does for one failing target on the repositories large teams
 * have (issue 22), on each backend, beside native git doing the same job in the same run.
 *
 * The repository is test/support/monorepo.ts: 20,200 files (2,200 applications under one Flux
 * Kustomization, `apps`), 2,000 commits by an image bot and by people (merged pull requests
 * among them), the target's folder touched by one older commit (`once`) or by none since the
 * initial layout (`never`), then the bad commit and five bot commits on top. The job is the
 * engine's `run()` (guards → locate over the model → plan → verify → deliver, commit mode; the
 * render check off, as native git renders nothing) for the failing target.
 *
 * Backends and their native baselines:
 * - `local`: the bare repository itself; native: `git revert --no-edit <bad>` in a working clone.
 * - `git-remote`: lastgood's git backend (RemoteRepo: a shallow blob-less mirror in a cache
 *   folder) against git's own `git http-backend` (test/support/git-http-server.ts, partial clone
 *   allowed); native: `git clone --filter=blob:none --depth 50 --sparse` + `git sparse-checkout set
 *   <folder>` + `git revert` + `git push` (cold), `git fetch --depth 50` + `git reset --hard` +
 *   revert + push in that clone (warm).
 * - `github`: the GitHub backend against the emulator (test/support/github-emulator.ts) on the
 *   same repository; native: the git-remote baselines (the same job done with git).
 *
 * Rows: `monorepo/<backend>/cold` (a new process: Node's start-up, an empty cache) and
 * `monorepo/<backend>/warm` (the same process again, after someone pushed another bad release and
 * the bot went on: a controller's steady state). ms: wall, median of the repetitions (cold: the
 * whole process; warm: the run inside it; native: the whole command); cpuMs: the process's CPU;
 * rssMb: peak resident memory (lastgood: the job process's whole life; warm, run with the Node flags
 * of the controller's Deployment; cold, with none, its young generation bounded as the CLI bounds
 * it, src/engine/heap.ts; native: GNU time's %M, the largest process); bytes and requests:
 * what the server sent and how many HTTP requests it answered for the job; ratio = ms / native
 * ms, ratioPaired = median of each repetition's own ratio, bytesRatio = bytes / native bytes.
 *
 * LASTGOOD_BENCH_MONOREPO=once,never and LASTGOOD_BENCH_BACKENDS=local,git-remote,github limit
 * what runs; LASTGOOD_BENCH_PROFILE=DIR writes each job process's CPU profile there. The job
 * process is bench/monorepo-job.ts, bundled as the CLI is (bench/bundle.ts: the esbuild options of
 * scripts/build-cli.ts, into a temporary folder, before anything is timed; LASTGOOD_BENCH_JOB=source
 * runs its sources), with plain `node` and no NODE_COMPILE_CACHE: a cold row compiles the whole
 * bundle, as a new installation's first run does.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { CONTROLLER_NODE_OPTIONS } from '../src/controller/install.ts';
import { appendCommits, botBump, cachedMonorepo, overlayKustomization, type Monorepo } from '../test/support/monorepo.ts';
import { TOKEN, type Backend, type Failure, type JobResult } from './monorepo-job.ts';
import { bundleJob, coldEnv } from './bundle.ts';

export const prefix = 'monorepo';

const JOB_SOURCE = path.join(path.dirname(fileURLToPath(import.meta.url)), 'monorepo-job.ts');
const TIME = '/usr/bin/time';
const REPS = 3;
const SHAPE = { apps: 2_200, files: 20_200, commits: 2_000 } as const;
const GIT_ENV = {
  ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_TERMINAL_PROMPT: '0',
  GIT_AUTHOR_NAME: 'Bench', GIT_AUTHOR_EMAIL: 'bench@example.com', GIT_COMMITTER_NAME: 'Bench', GIT_COMMITTER_EMAIL: 'bench@example.com',
};

/** LASTGOOD_BENCH_PROFILE=DIR: each job process writes a V8 CPU profile there (the profile behind a ratio). */
const PROFILE_FLAGS = process.env.LASTGOOD_BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.LASTGOOD_BENCH_PROFILE}`] : [];

/** A job process kept open across runs; its peak RSS is known when it exits. */
function jobProcess(entry: string, backend: Backend, location: string, repoFile: string, opts: { flags?: string[] } = {}) {
  const out = path.join(mkdtempSync(path.join(os.tmpdir(), 'lastgood-bench-time-')), 'rss');
  const started = performance.now();
  const child = spawn(TIME, ['-o', out, '-f', '%M', process.execPath, ...(opts.flags ?? []), ...PROFILE_FLAGS, entry, '--job', backend, location, repoFile], { env: coldEnv(GIT_ENV), stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const closed = new Promise<number | null>((resolve) => child.on('close', resolve));
  return {
    started,
    async run(failure: Failure): Promise<JobResult> {
      child.stdin.write(`${JSON.stringify(failure)}\n`);
      const next = await lines.next();
      if (next.done) throw new Error(`the ${backend} job process ended (exit ${await closed})`);
      const r = JSON.parse(next.value) as JobResult;
      if (!r.created) throw new Error(`the ${backend} job wrote no revert: ${r.error}`);
      return r;
    },
    async close(): Promise<number> {
      child.stdin.end('exit\n');
      const code = await closed;
      if (code !== 0) throw new Error(`the ${backend} job process exited ${code}`);
      const rss = Number(readFileSync(out, 'utf8').trim().split('\n').pop()) / 1024;
      rmSync(path.dirname(out), { recursive: true, force: true });
      return rss;
    },
  };
}

// ---- native git ---------------------------------------------------------------------------------

interface Timed {
  ms: number;
  rssMb: number;
}

/** A shell command under GNU time: wall ms and the peak RSS of its largest process. */
async function timed(script: string, cwd?: string): Promise<Timed> {
  const out = path.join(mkdtempSync(path.join(os.tmpdir(), 'lastgood-bench-time-')), 'rss');
  const started = performance.now();
  await new Promise<void>((resolve, reject) => {
    const child = spawn(TIME, ['-o', out, '-f', '%M', 'sh', '-c', script], { cwd, env: GIT_ENV, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`${script} exited ${code}: ${err}`))));
  });
  const ms = performance.now() - started;
  const rssMb = Number(readFileSync(out, 'utf8').trim().split('\n').pop()) / 1024;
  rmSync(path.dirname(out), { recursive: true, force: true });
  return { ms, rssMb };
}

const nativeColdScript = (url: string, dir: string, folder: string, bad: string) =>
  `git clone -q --filter=blob:none --depth 50 --single-branch --branch main --sparse ${url} ${dir} && cd ${dir} && git sparse-checkout set ${folder} && git revert --no-edit ${bad} >/dev/null && git push -q origin HEAD:main`;
const nativeWarmScript = (bad: string) => `git fetch -q --depth 50 origin main && git reset -q --hard FETCH_HEAD && git revert --no-edit ${bad} >/dev/null && git push -q origin HEAD:main`;

// ---- the served repositories --------------------------------------------------------------------

/** A fresh copy of the generated repository (objects borrowed from it: free). */
function freshCopy(dir: string, source: string): string {
  rmSync(dir, { recursive: true, force: true });
  execFileSync('git', ['clone', '-q', '--bare', '--shared', source, dir], { env: GIT_ENV });
  return dir;
}

/** Another bad release of the target on top of `gitdir`'s main, and the bot going on: the next failure. */
function nextFailure(gitdir: string, repo: Monorepo, n: number, clock: { at: number }): Failure {
  const rev = (spec: string) => execFileSync('git', ['rev-parse', spec], { cwd: gitdir, encoding: 'utf8' }).trim();
  const applied = rev('main');
  clock.at += 3_600;
  const tag = `3.${n}.0`;
  const [bad] = appendCommits(gitdir, [{ files: { [`${repo.paths[0]}kustomization.yaml`]: overlayKustomization(repo.app, 'prod', tag) }, message: `${repo.app}: release ${tag} to prod\n`, at: clock.at - 600 }]);
  appendCommits(gitdir, [botBump('app-00007', 'prod', `9.${n}.0`, clock.at - 400), botBump('app-00008', 'dev', `9.${n}.0`, clock.at - 200)]);
  return { bad: bad!, applied, now: new Date(clock.at * 1000).toISOString(), badImage: `registry.example.com/${repo.app}:${tag}` };
}

/** The revert landed: the target's folder at main is as at the bad commit's parent. */
function assertReverted(gitdir: string, folder: string, bad: string, who: string): void {
  const at = (rev: string) => execFileSync('git', ['rev-parse', `${rev}:${folder.replace(/\/$/, '')}`], { cwd: gitdir, encoding: 'utf8' }).trim();
  if (at('main') !== at(`${bad}^`)) throw new Error(`${who}: the target's folder at main is not what it was before the bad commit`);
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const round = (x: number, digits = 0) => Math.round(x * 10 ** digits) / 10 ** digits;

interface Measured {
  ms: number;
  cpuMs?: number;
  rssMb: number;
  bytes?: number;
  requests?: number;
}

function row(bench: string, shape: string, repo: Monorepo, ours: Measured[], native: Measured[], extra: Record<string, unknown> = {}) {
  const ms = median(ours.map((o) => o.ms));
  const base = median(native.map((n) => n.ms));
  const bytes = ours.every((o) => o.bytes !== undefined) ? median(ours.map((o) => o.bytes!)) : undefined;
  const nativeBytes = native.every((n) => n.bytes !== undefined) ? median(native.map((n) => n.bytes!)) : undefined;
  const requests = ours.every((o) => o.requests !== undefined) ? median(ours.map((o) => o.requests!)) : undefined;
  const nativeRequests = native.every((n) => n.requests !== undefined) ? median(native.map((n) => n.requests!)) : undefined;
  const rss = Math.max(...ours.map((o) => o.rssMb));
  const nativeRss = Math.max(...native.map((n) => n.rssMb));
  return {
    bench, shape, files: repo.files, commits: repo.commits,
    lastgood: { ms: round(ms), ...(ours[0]!.cpuMs !== undefined ? { cpuMs: round(median(ours.map((o) => o.cpuMs!))) } : {}), rssMb: round(rss, 1), ...(bytes !== undefined ? { bytes } : {}), ...(requests !== undefined ? { requests } : {}) },
    baseline: { name: 'native git', ms: round(base), rssMb: round(nativeRss, 1), ...(nativeBytes !== undefined ? { bytes: nativeBytes } : {}), ...(nativeRequests !== undefined ? { requests: nativeRequests } : {}) },
    ratio: round(ms / base, 2),
    ratioPaired: round(median(ours.map((o, i) => o.ms / native[Math.min(i, native.length - 1)]!.ms)), 2),
    rssRatio: round(rss / nativeRss, 2),
    ...(bytes !== undefined && nativeBytes ? { bytesRatio: round(bytes / nativeBytes, 2) } : {}),
    ...extra,
  };
}

// ---- the bench ----------------------------------------------------------------------------------

export default async function* () {
  if (!existsSync(TIME)) {
    process.stderr.write(`monorepo: ${TIME} (GNU time) is needed to measure peak RSS: apt-get install time\n`);
    return;
  }
  const { startGitHttpServer } = await import('../test/support/git-http-server.ts');
  const { startGitHubEmulator } = await import('../test/support/github-emulator.ts');
  const shapes = (process.env.LASTGOOD_BENCH_MONOREPO ?? 'once,never').split(',') as Array<'once' | 'never'>;
  const backends = (process.env.LASTGOOD_BENCH_BACKENDS ?? 'local,git-remote,github').split(',') as Backend[];
  const flags = CONTROLLER_NODE_OPTIONS.split(' ');
  for (const touches of shapes) {
    const shape = touches === 'once' ? 'monorepo' : 'monorepo-untouched';
    process.stderr.write(`monorepo: ${shape} (${SHAPE.files} files, ${SHAPE.commits} commits)\n`);
    const repo = await cachedMonorepo(path.join(os.tmpdir(), `lastgood-bench-${shape}`), { ...SHAPE, touches });
    const root = mkdtempSync(path.join(os.tmpdir(), 'lastgood-bench-mono-'));
    const entry = await bundleJob(JOB_SOURCE, path.join(root, 'job'));
    const repoFile = path.join(root, 'repo.json');
    writeFileSync(repoFile, JSON.stringify(repo));
    const first: Failure = { bad: repo.bad, applied: repo.applied, now: repo.now, badImage: repo.badImage };
    const folder = repo.paths[0]!.replace(/\/$/, '');
    const server = await startGitHttpServer({ root });
    const served = path.join(root, 'gitops.git');
    const url = `${server.url}/gitops.git`;
    /** what the server answered from `from` on: bytes of upload-pack answers, all requests */
    const traffic = (from: number) => {
      const log = server.log.slice(from);
      return { bytes: log.filter((r) => r.service === 'git-upload-pack').reduce((a, r) => a + r.bytesOut, 0), requests: log.length };
    };
    try {
      // native git over HTTPS, cold and warm: the baseline of git-remote and github
      const coldNative: Measured[] = [];
      const warmNative: Measured[] = [];
      if (backends.some((b) => b !== 'local')) {
        for (let rep = 0; rep < REPS; rep++) {
          freshCopy(served, repo.gitdir);
          const work = mkdtempSync(path.join(os.tmpdir(), 'lastgood-bench-native-'));
          const from = server.log.length;
          coldNative.push({ ...(await timed(nativeColdScript(url, path.join(work, 'clone'), folder, repo.bad))), ...traffic(from) });
          assertReverted(served, folder, repo.bad, 'native git');
          rmSync(work, { recursive: true, force: true });
        }
        freshCopy(served, repo.gitdir);
        const work = mkdtempSync(path.join(os.tmpdir(), 'lastgood-bench-native-'));
        const clone = path.join(work, 'clone');
        await timed(nativeColdScript(url, clone, folder, repo.bad));
        const clock = { at: Date.parse(repo.now) / 1000 };
        for (let rep = 1; rep <= REPS; rep++) {
          const f = nextFailure(served, repo, rep, clock);
          const from = server.log.length;
          warmNative.push({ ...(await timed(nativeWarmScript(f.bad), clone)), ...traffic(from) });
          assertReverted(served, folder, f.bad, 'native git');
        }
        rmSync(work, { recursive: true, force: true });
      }

      for (const backend of backends) {
        const cold: Measured[] = [];
        const warm: Measured[] = [];
        let nativeLocal: Measured[] = [];
        let nativeLocalWarm: Measured[] = [];
        let startup: number[] = [];
        let rss = 0;
        if (backend === 'local') {
          // native: git revert in a working clone of the same repository
          const work = mkdtempSync(path.join(os.tmpdir(), 'lastgood-bench-native-'));
          execFileSync('git', ['clone', '-q', repo.gitdir, path.join(work, 'clone')], { env: GIT_ENV });
          const clone = path.join(work, 'clone');
          for (let rep = 0; rep < REPS; rep++) {
            execFileSync('git', ['reset', '-q', '--hard', repo.head], { cwd: clone, env: GIT_ENV });
            nativeLocal.push(await timed(`git revert --no-edit ${repo.bad} >/dev/null`, clone));
          }
          const clock = { at: Date.parse(repo.now) / 1000 };
          for (let rep = 1; rep <= REPS; rep++) {
            const f = nextFailure(clone, repo, rep, clock);
            execFileSync('git', ['reset', '-q', '--hard', 'main'], { cwd: clone, env: GIT_ENV });
            nativeLocalWarm.push(await timed(`git revert --no-edit ${f.bad} >/dev/null`, clone));
          }
          rmSync(work, { recursive: true, force: true });
        }
        const open = async (): Promise<{ location: string; close: () => Promise<void>; traffic: () => { bytes?: number; requests?: number } }> => {
          freshCopy(served, repo.gitdir);
          if (backend === 'local') {
            // a plain copy: lastgood reads packs of its own folder (alternates work too, but a user's repository has none)
            rmSync(served, { recursive: true, force: true });
            execFileSync('git', ['clone', '-q', '--bare', repo.gitdir, served], { env: GIT_ENV });
            return { location: served, close: async () => undefined, traffic: () => ({}) };
          }
          if (backend === 'git-remote') {
            const cacheDir = mkdtempSync(path.join(os.tmpdir(), 'lastgood-bench-cache-'));
            const from = server.log.length;
            return { location: JSON.stringify({ url, cacheDir }), close: async () => rmSync(cacheDir, { recursive: true, force: true }), traffic: () => traffic(from) };
          }
          const emulator = await startGitHubEmulator({ bareRepo: served, owner: 'acme', repo: 'gitops', token: TOKEN, commitGraph: true });
          let mark = 0;
          return {
            location: emulator.url,
            close: async () => {
              if (emulator.violations.length > 0) throw new Error(`emulator violations: ${emulator.violations.slice(0, 3).join('; ')}`);
              await emulator.close();
            },
            traffic: () => {
              const log = emulator.log.slice(mark);
              mark = emulator.log.length;
              return { bytes: log.reduce((a, r) => a + (r.bytesOut ?? 0), 0), requests: log.length };
            },
          };
        };
        // cold: a new process each time
        for (let rep = 0; rep < REPS; rep++) {
          const o = await open();
          const p = jobProcess(entry, backend, o.location, repoFile);
          const r = await p.run(first);
          const wall = performance.now() - p.started;
          const peak = await p.close();
          cold.push({ ms: wall, cpuMs: r.cpuMs, rssMb: peak, ...o.traffic() });
          startup.push(r.startupMs ?? 0);
          assertReverted(served, folder, repo.bad, `lastgood ${backend}`);
          await o.close();
          process.stderr.write(`monorepo/${backend}/cold ${shape} #${rep + 1}: ${round(wall)} ms, ${round(r.cpuMs)} ms CPU, ${round(peak)} MB\n`);
        }
        // warm: one process, run again after each new failure
        {
          const o = await open();
          const p = jobProcess(entry, backend, o.location, repoFile, { flags });
          await p.run(first);
          o.traffic();
          // GitHub stamps the revert it wrote with the server's clock: the next failures come after it (else the cooldown holds them)
          const clock = { at: Math.max(Date.parse(repo.now) / 1000, Math.ceil(Date.now() / 1000)) };
          for (let rep = 1; rep <= REPS; rep++) {
            const f = nextFailure(served, repo, rep, clock);
            const before = backend === 'git-remote' ? server.log.length : undefined;
            const r = await p.run(f);
            const t = before !== undefined ? traffic(before) : o.traffic();
            warm.push({ ms: r.ms, cpuMs: r.cpuMs, rssMb: r.rssMb, ...(backend === 'local' ? {} : t) });
            assertReverted(served, folder, f.bad, `lastgood ${backend}`);
            process.stderr.write(`monorepo/${backend}/warm ${shape} #${rep}: ${round(r.ms)} ms, ${round(r.cpuMs)} ms CPU\n`);
          }
          rss = await p.close();
          await o.close();
        }
        const nCold = backend === 'local' ? nativeLocal : coldNative;
        const nWarm = backend === 'local' ? nativeLocalWarm : warmNative;
        yield row(`monorepo/${backend}/cold`, shape, repo, cold, nCold, { startupMs: round(median(startup)) });
        yield row(`monorepo/${backend}/warm`, shape, repo, warm.map((w) => ({ ...w, rssMb: rss })), nWarm);
        nativeLocal = [];
        nativeLocalWarm = [];
        startup = [];
      }
    } finally {
      await server.close();
      rmSync(root, { recursive: true, force: true });
    }
  }
}

