/**
 * whole-run/*: the whole `lastgood run` (observe → assess → decide → locate → plan → verify with
 * the render on → deliver) as users run it, beside what a person does by hand on the same input in
 * the same run (issue 33), and the controller's failure-to-revert latency.
 *
 * Rows `whole-run/<backend>/<shape>`, for each size (the generated repositories of
 * bench/generate-repo.ts: small, medium, large; and `monorepo`, test/support/monorepo.ts's shape as
 * bench/monorepo.bench.ts caches it), backend and engine shape:
 * - shapes: `generated`, a Flux Kustomization with path ./apps, where apps/ has no
 *   kustomization.yaml (Flux generates one: every folder below with a kustomization is a
 *   resource); `listing`, path ./clusters/prod, whose kustomization.yaml lists every application's
 *   prod overlay. The monorepo has one shape, `listing` (path ./apps, apps/kustomization.yaml lists
 *   every prod overlay).
 * - the target: the bad commit's application's prod overlay (apps/app-00000/overlays/prod/;
 *   app-00042 in the monorepo), resources the Flux Kustomization and its Deployment
 *   prod/app-NNNNN; the failure as monorepoScenario (test/support/monorepo.ts) has it: the
 *   Kustomization attempted the bad commit after applying its parent (the monorepo: the commit Flux
 *   last applied, a few bot commits below), Ready False HealthCheckFailed, the Deployment
 *   ProgressDeadlineExceeded on the bad image, `--now` ten minutes after the bad commit;
 *   `defaults: { mode, confirmations: 1, maxAge: 1h }`, `render: { kustomize: auto }`.
 * - backends: `local` (repo.url the bare repository's path; commit mode), `git-remote` (git's own
 *   `git http-backend`, test/support/git-http-server.ts, over http on 127.0.0.1; repo.cacheDir an
 *   empty folder: a cold run; commit mode), `github` (the GitHub emulator,
 *   test/support/github-emulator.ts, `provider: github` and `apiUrl`; pull-request mode, the labels
 *   existing in the repository, no reviewers; `requests`: what the emulator answered during the run,
 *   REST and GraphQL alike).
 * - lastgood: `node bin/lastgood.js run --config FILE --snapshot FILE --now ISO --json`, a new process
 *   per repetition under GNU time (Node's compile cache as bin/lastgood.js sets it: the first
 *   repetition of a bench process may fill it), on a fresh `git clone --bare --shared` of the cached
 *   repository; the JSON must say a revert was created (a commit, or a pull request) and rendered, and
 *   the target's folder on main (the PR's branch) must be as before the bad commit, or the bench fails.
 * - baseline, "git revert + kubectl kustomize": in a working clone made before timing,
 *   `git revert --no-edit <bad>` then `kubectl kustomize <the target's overlay>`, in one shell under
 *   GNU time; the clone is reset to the head between repetitions, outside the timed part. The same
 *   for every backend: that is what a person does.
 * - the two sides run interleaved, the same number of repetitions (which goes first alternates).
 *   ms: wall clock, median; cpuMs: user + system CPU of the process and its children (lastgood's
 *   includes kubectl kustomize); rssMb: peak resident memory of the largest process (GNU time %M),
 *   the highest of the repetitions; ratio: median over median; ratioPaired: the median of each
 *   repetition's own ratio (steadier on a shared machine).
 *
 * Row `whole-run/controller/latency` (per shape): a real `lastgood controller` process (KUBECONFIG:
 * the Kubernetes API emulator, test/support/kube-emulator.ts; repository: git over HTTPS to
 * `git http-backend`, its mirror in repo.cacheDir; render on) on the repository of
 * LASTGOOD_BENCH_CONTROLLER_SIZE (default large), then 20 failures in sequence: each time a new bad
 * commit (a new image tag in the target's prod overlay) is pushed, the Kustomization and the
 * Deployment are written failing at it (Kustomization Ready False HealthCheckFailed, attempted the new
 * commit after applying the one before; Deployment ProgressDeadlineExceeded on the new image), and the
 * time is taken from that write to the revert commit on main (the served repository's ref, polled
 * every 5 ms); then the cluster is written healthy at the revert (Flux applied it) and the next
 * failure waits until the controller has seen that. Policy for 20 reverts of one target in a row:
 * `confirmations: 1` (the default 2 waits controller.interval, 10 s, for a second assessment) and
 * `cooldown: off` (the default 30m holds a second revert of the target); everything else as
 * installed (leader election on, Events on, maxAge 20m). p50Ms, p99Ms (nearest rank: of 20, the
 * slowest), minMs; firstMs: one more failure before those, the controller's first revert, which
 * fills its mirror (a new cache folder; a controller's mirror is on its volume, kept across restarts);
 * decidedP50Ms: from the write to the controller's "decided" log line (its clock is this one), the
 * rest being the repository's work; rssMb: the controller process's peak resident memory (VmHWM,
 * read before it is stopped). LASTGOOD_BENCH_CONTROLLER_LOG=FILE keeps its log (FILE.<shape>).
 *
 * Environment: LASTGOOD_BENCH_SIZES (default small,medium,large,monorepo), LASTGOOD_BENCH_BACKENDS
 * (default local,git-remote,github,controller), LASTGOOD_BENCH_SHAPES (default generated,listing),
 * LASTGOOD_BENCH_REPS (default 5 small, 3 medium, large and monorepo), LASTGOOD_BENCH_CONTROLLER_SIZE
 * (default large), LASTGOOD_BENCH_CONTROLLER_FAILURES (default 20), LASTGOOD_BENCH_CONTROLLER_BACKEND
 * (git-remote, local or github; default git-remote), LASTGOOD_BENCH_PROFILE=DIR (each `lastgood run`
 * process writes a V8 CPU profile there). `--only PREFIX` (bench/run.ts) is read here too:
 * a row it would not print is not measured.
 *
 * Needs GNU time (/usr/bin/time) and kubectl (the baseline's `kubectl kustomize`; lastgood's render
 * finds kustomize or kubectl on the PATH): without them the bench fails, it does not skip.
 */
import { execFile, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { cachedMonorepo, monorepoScenario, overlayKustomization } from '../test/support/monorepo.ts';
import { deployment, kustomization, yamlDocs } from '../test/support/objects.ts';
import { benchRepo, LISTING_ROOT, SIZES, type SizeName } from './generate-repo.ts';

export const prefix = 'whole-run';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const BIN = path.join(ROOT, 'bin', 'lastgood.js');
const TIME = '/usr/bin/time';
const TOKEN = 'ghs_benchTokenNotARealOne000000000000';
const BASELINE = 'git revert + kubectl kustomize';
/** the monorepo bench's shape and cache (bench/monorepo.bench.ts): one repository for both */
const MONOREPO = { apps: 2_200, files: 20_200, commits: 2_000, touches: 'once' } as const;
const GIT_ENV = {
  ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_TERMINAL_PROMPT: '0',
  GIT_AUTHOR_NAME: 'Bench', GIT_AUTHOR_EMAIL: 'bench@example.com', GIT_COMMITTER_NAME: 'Bench', GIT_COMMITTER_EMAIL: 'bench@example.com',
};

type Size = SizeName | 'monorepo';
type Backend = 'local' | 'git-remote' | 'github';
type Shape = 'generated' | 'listing';
const REPS: Record<Size, number> = { small: 5, medium: 3, large: 3, monorepo: 3 };

const run = promisify(execFile);
/** LASTGOOD_BENCH_PROFILE=DIR: each `lastgood run` process writes a V8 CPU profile there. */
const PROFILE_FLAGS = process.env.LASTGOOD_BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.LASTGOOD_BENCH_PROFILE}`] : [];
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const round = (x: number, digits = 0) => Math.round(x * 10 ** digits) / 10 ** digits;
const say = (line: string) => process.stderr.write(`${line}\n`);

function list<T extends string>(name: string, fallback: string, allowed: readonly T[]): T[] {
  const values = (process.env[name] ?? fallback).split(',').map((s) => s.trim()).filter(Boolean);
  for (const v of values) if (!allowed.includes(v as T)) throw new Error(`${name}: "${v}" is not one of ${allowed.join(', ')}`);
  return values as T[];
}

/** bench/run.ts prints only the rows under --only: a row it would drop is not measured. */
const onlyAt = process.argv.indexOf('--only');
const only = onlyAt >= 0 ? process.argv[onlyAt + 1] ?? '' : '';
const wanted = (bench: string) => !only || bench.startsWith(only);

// ---- timing -------------------------------------------------------------------------------------

interface Timed {
  ms: number;
  cpuMs: number;
  rssMb: number;
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A command under GNU time: wall ms, CPU ms (user + system, children included), peak RSS of its largest process. */
async function timed(command: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<Timed> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'lastgood-bench-time-'));
  const out = path.join(dir, 'time');
  const started = performance.now();
  const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(TIME, ['-o', out, '-f', '%U %S %M', command, ...args], { cwd: opts.cwd, env: opts.env ?? GIT_ENV, stdio: ['ignore', 'pipe', 'pipe'] });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    child.stdout.on('data', (d: Buffer) => stdout.push(d));
    child.stderr.on('data', (d: Buffer) => stderr.push(d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout: Buffer.concat(stdout).toString('utf8'), stderr: Buffer.concat(stderr).toString('utf8') }));
  });
  const ms = performance.now() - started;
  // GNU time writes "Command exited with non-zero status N" first when it did
  const [user, system, kb] = readFileSync(out, 'utf8').trim().split('\n').pop()!.split(' ').map(Number);
  rmSync(dir, { recursive: true, force: true });
  return { ms, cpuMs: (user! + system!) * 1000, rssMb: kb! / 1024, code, stdout, stderr };
}

// ---- the input ----------------------------------------------------------------------------------

/** One repository and its failure: what both sides get. */
interface Input {
  size: Size;
  /** the cached bare repository (never written: every run works on a --shared clone of it) */
  gitdir: string;
  head: string;
  bad: string;
  /** what Flux last applied: the bad range is applied..bad */
  applied: string;
  app: string;
  paths: string[];
  badImage: string;
  /** ten minutes after the bad commit */
  now: string;
  files: number;
  commits: number;
}

const rev = (gitdir: string, spec: string) => execFileSync('git', ['rev-parse', spec], { cwd: gitdir, env: GIT_ENV, encoding: 'utf8' }).trim();

async function inputOf(size: Size): Promise<Input> {
  if (size === 'monorepo') {
    const m = await cachedMonorepo(path.join(os.tmpdir(), 'lastgood-bench-monorepo'), MONOREPO);
    return { size, gitdir: m.gitdir, head: m.head, bad: m.bad, applied: m.applied, app: m.app, paths: m.paths, badImage: m.badImage, now: m.now, files: m.files, commits: m.commits };
  }
  const r = await benchRepo(size);
  const committed = Number(execFileSync('git', ['log', '-1', '--format=%ct', r.bad], { cwd: r.gitdir, env: GIT_ENV, encoding: 'utf8' }).trim());
  return {
    size, gitdir: r.gitdir, head: r.bad, bad: r.bad, applied: rev(r.gitdir, `${r.bad}^`), app: 'app-00000', paths: r.paths,
    badImage: 'registry.example.com/app-00000:2.0.0', now: new Date((committed + 600) * 1000).toISOString(), files: r.files, commits: r.commits,
  };
}

/** The Flux Kustomization of a shape: its name and spec.path. */
function engineObject(input: Input, shape: Shape): { name: string; path: string } {
  if (input.size === 'monorepo') return { name: 'apps', path: './apps' };
  return shape === 'generated' ? { name: 'apps', path: './apps' } : { name: 'prod', path: `./${LISTING_ROOT}` };
}

/** The config and the snapshot of one run, written to `dir`. */
function writeScenario(dir: string, input: Input, shape: Shape, repo: Record<string, unknown>, mode: 'commit' | 'pull-request'): { config: string; snapshot: string } {
  const scenario = monorepoScenario(input, { url: String(repo.url), mode });
  const engine = engineObject(input, shape);
  const [ks, dep] = scenario.objects as [{ metadata: { name: string }; spec: { path: string } }, object];
  ks.metadata.name = engine.name;
  ks.spec.path = engine.path;
  const config = {
    ...scenario.config,
    repo: { ...scenario.config.repo, ...repo },
    // the render on, as installed (monorepoScenario turns it off for the tests about something else)
    render: { kustomize: 'auto' },
    targets: scenario.config.targets.map((t) => ({ ...t, resources: t.resources.map((r) => (r.kind === 'Kustomization' ? { ...r, name: engine.name } : r)) })),
  };
  const configFile = path.join(dir, 'lastgood.yaml');
  const snapshot = path.join(dir, 'cluster.yaml');
  // JSON is YAML: the config as a user would write it, field for field
  writeFileSync(configFile, `${JSON.stringify(config, null, 2)}\n`);
  writeFileSync(snapshot, yamlDocs(ks, dep));
  return { config: configFile, snapshot };
}

/** A fresh copy of the cached repository (objects borrowed from it: the cache is never written). */
function freshCopy(dir: string, source: string): string {
  rmSync(dir, { recursive: true, force: true });
  execFileSync('git', ['clone', '-q', '--bare', '--shared', source, dir], { env: GIT_ENV });
  return dir;
}

/** The tree of the target's folder at a revision (async: a server in this process may be answering). */
async function folderAt(gitdir: string, spec: string, folder: string): Promise<string> {
  return (await run('git', ['rev-parse', `${spec}:${folder.replace(/\/$/, '')}`], { cwd: gitdir, env: GIT_ENV })).stdout.trim();
}

// ---- one row ------------------------------------------------------------------------------------

interface LastgoodRun extends Timed {
  requests?: number;
  rendered: string;
}

async function wholeRunRow(input: Input, work: string, backend: Backend, shape: Shape, reps: number, services: Services): Promise<Record<string, unknown> & { bench: string }> {
  const bench = `whole-run/${backend}/${shape}`;
  const folder = input.paths[0]!;
  const overlay = folder.replace(/\/$/, '');
  const mode = backend === 'github' ? 'pull-request' : 'commit';
  const root = mkdtempSync(path.join(os.tmpdir(), 'lastgood-bench-whole-'));
  const ours: LastgoodRun[] = [];
  const theirs: Timed[] = [];
  try {
    for (let rep = 0; rep < reps; rep++) {
      const baseline = async () => {
        await run('git', ['reset', '-q', '--hard', input.head], { cwd: work, env: GIT_ENV });
        const t = await timed('sh', ['-c', `git revert --no-edit ${input.bad} >/dev/null && kubectl kustomize ${overlay} >/dev/null`], { cwd: work });
        if (t.code !== 0) throw new Error(`${bench} ${input.size}: the baseline failed (exit ${t.code}): ${t.stderr.trim()}`);
        theirs.push(t);
      };
      const ourRun = async () => ours.push(await lastgoodRun(input, backend, shape, mode, path.join(root, `run-${rep}`), services, rep === 0));
      // interleaved, the first alternating: a neighbour's burst lands on either side alike
      if (rep % 2 === 0) {
        await baseline();
        await ourRun();
      } else {
        await ourRun();
        await baseline();
      }
      const o = ours.at(-1)!;
      const b = theirs.at(-1)!;
      say(`${bench} ${input.size} #${rep + 1}: lastgood ${round(o.ms)} ms (${round(o.cpuMs)} ms CPU, ${round(o.rssMb)} MB${o.requests !== undefined ? `, ${o.requests} requests` : ''}), by hand ${round(b.ms)} ms (${round(b.cpuMs)} ms CPU, ${round(b.rssMb)} MB)`);
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
  say(`${bench} ${input.size}: ${ours[0]!.rendered}`);
  const ms = median(ours.map((o) => o.ms));
  const base = median(theirs.map((t) => t.ms));
  return {
    bench, size: input.size, shape, files: input.files, commits: input.commits, mode, reps,
    lastgood: {
      ms: round(ms), cpuMs: round(median(ours.map((o) => o.cpuMs))), rssMb: round(Math.max(...ours.map((o) => o.rssMb)), 1),
      ...(ours[0]!.requests !== undefined ? { requests: median(ours.map((o) => o.requests!)) } : {}),
    },
    baseline: { name: BASELINE, ms: round(base), cpuMs: round(median(theirs.map((t) => t.cpuMs))), rssMb: round(Math.max(...theirs.map((t) => t.rssMb)), 1) },
    ratio: round(ms / base, 2),
    ratioPaired: round(median(ours.map((o, i) => o.ms / theirs[i]!.ms)), 2),
  };
}

/** The servers of the remote backends, one each for the whole bench, over a folder of fresh copies. */
interface Services {
  root: string;
  gitServer?: Awaited<ReturnType<typeof import('../test/support/git-http-server.ts').startGitHttpServer>>;
  startGitHub?: typeof import('../test/support/github-emulator.ts').startGitHubEmulator;
}

/** One `lastgood run`, a new process on a fresh copy of the repository; checks that it wrote the revert. */
async function lastgoodRun(input: Input, backend: Backend, shape: Shape, mode: 'commit' | 'pull-request', dir: string, services: Services, first: boolean): Promise<LastgoodRun> {
  const folder = input.paths[0]!;
  rmSync(dir, { recursive: true, force: true });
  execFileSync('mkdir', ['-p', dir]);
  let bare: string;
  let repo: Record<string, unknown>;
  let env: NodeJS.ProcessEnv = GIT_ENV;
  let emulator: Awaited<ReturnType<NonNullable<Services['startGitHub']>>> | undefined;
  let requestsFrom = 0;
  if (backend === 'local') {
    bare = freshCopy(path.join(dir, 'gitops.git'), input.gitdir);
    repo = { url: bare };
  } else if (backend === 'git-remote') {
    bare = freshCopy(path.join(services.root, 'gitops.git'), input.gitdir);
    // cold: an empty cache folder
    repo = { url: `${services.gitServer!.url}/gitops.git`, insecure: true, cacheDir: path.join(dir, 'cache') };
    requestsFrom = services.gitServer!.log.length;
  } else {
    bare = freshCopy(path.join(dir, 'gitops.git'), input.gitdir);
    emulator = await services.startGitHub!({ bareRepo: bare, owner: 'acme', repo: 'gitops', token: TOKEN, labels: ['lastgood', 'rollback'], commitGraph: true });
    repo = { url: 'https://github.com/acme/gitops', provider: 'github', apiUrl: emulator.url };
    env = { ...GIT_ENV, GITHUB_TOKEN: TOKEN };
  }
  try {
    const files = writeScenario(dir, input, shape, repo, mode);
    const t = await timed(process.execPath, [...PROFILE_FLAGS, BIN, 'run', '--config', files.config, '--snapshot', files.snapshot, '--now', input.now, '--json'], { env });
    const what = `whole-run/${backend}/${shape} ${input.size}`;
    let report: { targets?: Array<{ action?: string; created?: boolean; commit?: string | null; pullRequest?: string | null; branch?: string; reason?: string; error?: unknown; notes?: string[]; checked?: { rendered?: { summary: string }; notRendered?: string } }> };
    try {
      report = JSON.parse(t.stdout) as typeof report;
    } catch {
      throw new Error(`${what}: lastgood exited ${t.code} without a JSON report: ${t.stderr.trim().slice(-2000)}`);
    }
    const target = report.targets?.[0];
    if (t.code !== 0 || !target || target.action !== 'revert' || target.created !== true || !(target.commit || target.pullRequest)) {
      throw new Error(`${what}: lastgood created no revert (exit ${t.code}): ${JSON.stringify(target ? { action: target.action, created: target.created, reason: target.reason, error: target.error } : report)} ${t.stderr.trim().slice(-2000)}`);
    }
    if (!target.checked?.rendered) throw new Error(`${what}: the revert was not rendered: ${target.checked?.notRendered ?? JSON.stringify(target.notes)}`);
    // the revert is there: the folder on main (or on the PR's branch) is as before the bad commit
    const branch = mode === 'pull-request' ? target.branch! : 'main';
    if ((await folderAt(bare, branch, folder)) !== (await folderAt(bare, `${input.bad}^`, folder))) throw new Error(`${what}: the target's folder on ${branch} is not what it was before the bad commit`);
    let requests: number | undefined;
    if (emulator) {
      if (emulator.pulls.length !== 1) throw new Error(`${what}: ${emulator.pulls.length} pull requests, not 1`);
      if (emulator.violations.length > 0) throw new Error(`${what}: GitHub emulator violations: ${emulator.violations.join('; ')}`);
      requests = emulator.requests;
      if (first) {
        const byOperation: Record<string, number> = {};
        for (const r of emulator.log) byOperation[r.operationId ?? r.path] = (byOperation[r.operationId ?? r.path] ?? 0) + 1;
        say(`${what}: the GitHub requests: ${JSON.stringify(byOperation)}`);
        if (process.env.LASTGOOD_BENCH_BODIES) writeFileSync(process.env.LASTGOOD_BENCH_BODIES, emulator.bodies.join('\n\n'));
        say(`${what}: the emulator's time per request, ms: ${emulator.log.map((r) => `${r.operationId ?? r.path} ${Math.round(r.ms ?? 0)}`).join(', ')}`);
      }
    } else if (backend === 'git-remote') {
      requests = services.gitServer!.log.length - requestsFrom;
      if (first) {
        const byCommand: Record<string, number> = {};
        for (const r of services.gitServer!.log.slice(requestsFrom)) byCommand[`${r.method} ${r.command ?? r.path}`] = (byCommand[`${r.method} ${r.command ?? r.path}`] ?? 0) + 1;
        say(`${what}: the git requests: ${JSON.stringify(byCommand)}`);
        const log = services.gitServer!.log.slice(requestsFrom);
        say(`${what}: the server's time per request (start ms, took ms): ${log.map((r) => `${r.method} ${r.command ?? r.path} ${Math.round(r.at! - log[0]!.at!)} ${Math.round(r.ms ?? 0)}`).join(', ')}`);
      }
    }
    const rendered = `${target.checked.rendered.summary} (${(target.notes ?? []).filter((n) => n.startsWith('rendered')).join('; ')})`;
    return { ...t, ...(requests !== undefined ? { requests } : {}), rendered };
  } finally {
    await emulator?.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---- the controller -----------------------------------------------------------------------------

interface ControllerProcess {
  pid: number;
  lines: Array<Record<string, unknown>>;
  exited: Promise<number | null>;
  stderr(): string;
}

function startController(configFile: string, env: NodeJS.ProcessEnv): ControllerProcess {
  const child = spawn(process.execPath, [BIN, 'controller', '--config', configFile], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  const lines: Array<Record<string, unknown>> = [];
  let text = '';
  createInterface({ input: child.stderr }).on('line', (line) => {
    text += `${line}\n`;
    try {
      lines.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      lines.push({ text: line });
    }
  });
  // a bench that dies on an error it did not catch takes the controller with it
  const orphan = () => child.kill('SIGKILL');
  process.on('exit', orphan);
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => {
    process.off('exit', orphan);
    resolve(code);
  }));
  return { pid: child.pid!, lines, exited, stderr: () => text };
}

/** Waits for a condition (5 ms polls); `timeoutMs` only ends a bench that would hang. */
async function until<T>(what: string, probe: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 600_000): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** main of a bare repository, read from its files (a loose ref, else packed-refs): no process per poll. */
function mainOf(gitdir: string): string {
  try {
    return readFileSync(path.join(gitdir, 'refs', 'heads', 'main'), 'utf8').trim();
  } catch {
    const line = readFileSync(path.join(gitdir, 'packed-refs'), 'utf8').split('\n').find((l) => l.endsWith(' refs/heads/main'));
    return line!.split(' ')[0]!;
  }
}

/** A new bad commit on main of the served repository: the target's overlay gets image tag `tag` (git plumbing, not timed). */
async function pushBadCommit(gitdir: string, input: Input, tag: string, at: number): Promise<string> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'lastgood-bench-index-'));
  const env = { ...GIT_ENV, GIT_INDEX_FILE: path.join(dir, 'index'), GIT_AUTHOR_DATE: `${at} +0000`, GIT_COMMITTER_DATE: `${at} +0000` };
  const git = async (args: string[], stdin?: string) => {
    // stdin only for the one that reads it: a write to a git that exited without reading is EPIPE
    const child = spawn('git', args, { cwd: gitdir, env, stdio: [stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'inherit'] });
    if (stdin !== undefined) child.stdin!.end(stdin);
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString('utf8')));
    const code = await new Promise<number | null>((resolve, reject) => {
      child.on('error', reject);
      child.on('close', resolve);
    });
    if (code !== 0) throw new Error(`git ${args.join(' ')} exited ${code}`);
    return out.trim();
  };
  const blob = await git(['hash-object', '-w', '--stdin'], overlayKustomization(input.app, 'prod', tag));
  await git(['read-tree', 'main']);
  await git(['update-index', '--cacheinfo', `100644,${blob},${input.paths[0]}kustomization.yaml`]);
  const tree = await git(['write-tree']);
  const commit = await git(['commit-tree', tree, '-p', 'main', '-m', `${input.app}: release ${tag} to prod`]);
  await git(['update-ref', 'refs/heads/main', commit]);
  rmSync(dir, { recursive: true, force: true });
  return commit;
}

async function controllerRow(input: Input, shape: Shape, backend: Backend, failures: number): Promise<Record<string, unknown> & { bench: string }> {
  const bench = 'whole-run/controller/latency';
  const { startKubeEmulator } = await import('../test/support/kube-emulator.ts');
  const root = mkdtempSync(path.join(os.tmpdir(), 'lastgood-bench-ctl-'));
  const served = freshCopy(path.join(root, 'gitops.git'), input.gitdir);
  const kube = await startKubeEmulator({ namespaces: ['default', 'prod', 'flux-system', 'lastgood'] });
  let server: Services['gitServer'];
  let emulator: Awaited<ReturnType<NonNullable<Services['startGitHub']>>> | undefined;
  let proc: ControllerProcess | undefined;
  try {
    let repo: string;
    let env: NodeJS.ProcessEnv = { ...GIT_ENV, KUBECONFIG: kube.kubeconfigPath, LASTGOOD_LOG_LEVEL: 'info' };
    if (backend === 'git-remote') {
      server = await (await import('../test/support/git-http-server.ts')).startGitHttpServer({ root });
      // the controller's volume: its mirror is kept between reverts
      repo = `  url: ${server.url}/gitops.git\n  insecure: true\n  cacheDir: ${path.join(root, 'cache')}\n`;
    } else if (backend === 'github') {
      emulator = await (await import('../test/support/github-emulator.ts')).startGitHubEmulator({ bareRepo: served, owner: 'acme', repo: 'gitops', token: TOKEN, labels: ['lastgood', 'rollback'], commitGraph: true });
      repo = `  url: https://github.com/acme/gitops\n  provider: github\n  apiUrl: ${emulator.url}\n`;
      env = { ...env, GITHUB_TOKEN: TOKEN };
    } else repo = `  url: ${served}\n`;
    const engine = engineObject(input, shape);
    const configFile = path.join(root, 'lastgood.yaml');
    writeFileSync(configFile, `repo:
${repo}  branch: main
  author: { name: lastgood, email: lastgood@example.com }
render: { kustomize: auto }
defaults:
  mode: commit
  # 20 reverts of one target in a row: act on the first failed assessment, and no cooldown between reverts
  confirmations: 1
  cooldown: "off"
controller:
  listen: 127.0.0.1:0
  namespace: lastgood
targets:
  - name: ${input.app}-prod
    paths: [${input.paths[0]}]
    resources:
      - { apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: ${engine.name} }
      - { apiVersion: apps/v1, kind: Deployment, namespace: prod, name: ${input.app} }
`);
    const iso = (ms: number) => new Date(ms).toISOString();
    const ks = (o: { attempted: string; applied: string; ready: 'True' | 'False'; since: string }) => {
      const k = kustomization({
        name: engine.name, attempted: `main@sha1:${o.attempted}`, applied: `main@sha1:${o.applied}`, ready: o.ready, since: o.since,
        ...(o.ready === 'False' ? { message: `health check failed after 5m0s: timeout waiting for: [Deployment/prod/${input.app} status: 'InProgress']` } : {}),
      });
      return { ...k, spec: { ...k.spec, path: engine.path } };
    };
    const good = 'registry.example.com/' + input.app + ':2.0.0';
    // the cluster is healthy at the head: Flux applied it, the Deployment is available
    let head = mainOf(served);
    const earlier = iso(Date.now() - 120_000);
    kube.apply(ks({ attempted: head, applied: head, ready: 'True', since: earlier }));
    kube.apply(deployment({ name: input.app, namespace: 'prod', image: good, state: 'available', since: earlier }));

    proc = startController(configFile, env);
    const p = proc;
    const started = performance.now();
    await until('the controller to see the target healthy', () => {
      if (p.lines.some((l) => l.level === 60 || l.level === 50)) throw new Error(`the controller logged an error: ${p.stderr().slice(-3000)}`);
      return p.lines.some((l) => l.msg === 'decided' && l.verdict === 'healthy');
    }, 120_000);
    say(`${bench} ${input.size} ${shape}: the controller is up, the target healthy, after ${round(performance.now() - started)} ms`);

    const latencies: number[] = [];
    const decided: number[] = [];
    let firstMs = 0;
    let clock = Math.floor(Date.now() / 1000);
    // failure 0 is the controller's first revert, which fills its mirror (a new cache folder): reported
    // apart, as firstMs; a controller's mirror is on its volume, kept across restarts
    for (let i = 0; i <= failures; i++) {
      const tag = `3.${i}.0`;
      const bad = await pushBadCommit(served, input, tag, ++clock);
      const from = p.lines.length;
      const wall0 = Date.now();
      const since = iso(wall0);
      const t0 = performance.now();
      kube.apply(ks({ attempted: bad, applied: head, ready: 'False', since }));
      kube.apply(deployment({ name: input.app, namespace: 'prod', image: `registry.example.com/${input.app}:${tag}`, state: 'deadline', since }));
      const revert = await until(`the revert of ${bad.slice(0, 12)}`, () => {
        const now = mainOf(served);
        if (now !== bad) return now;
        if (p.lines.slice(from).some((l) => l.level === 50 || l.level === 60)) throw new Error(`the controller logged an error: ${p.lines.slice(from).map((l) => JSON.stringify(l)).join('\n')}`);
        return undefined;
      }, 30 * 60_000);
      const ms = performance.now() - t0;
      // when the controller decided to act, by its log (the same clock): the rest is the repository's work
      const decision = p.lines.slice(from).find((l) => l.msg === 'decided' && l.verdict === 'failed');
      const decidedMs = typeof decision?.time === 'string' ? Date.parse(decision.time) - wall0 : NaN;
      if (i === 0) firstMs = ms;
      else {
        latencies.push(ms);
        decided.push(decidedMs);
      }
      // it is lastgood's revert of this commit, and the folder is back as before it
      const message = (await run('git', ['log', '-1', '--format=%B', revert], { cwd: served, env: GIT_ENV })).stdout;
      if (!message.includes(`Lastgood-Reverts: ${bad}`)) throw new Error(`${bench}: main moved to ${revert}, which is not lastgood's revert of ${bad}: ${message}`);
      if ((await folderAt(served, revert, input.paths[0]!)) !== (await folderAt(served, `${bad}^`, input.paths[0]!))) throw new Error(`${bench}: the revert ${revert} does not restore the folder`);
      if (!/rendered/i.test(message)) throw new Error(`${bench}: the revert's message says nothing of a render: ${message}`);
      say(`${bench} ${input.size} ${shape} #${i}${i === 0 ? ' (first: fills the mirror)' : ''}: ${round(ms)} ms to ${revert.slice(0, 12)} (decided after ${round(decidedMs)} ms)`);
      // Flux applies the revert and the target is healthy again; the next failure waits until the controller saw it
      head = revert;
      clock++;
      const healthyFrom = p.lines.length;
      const healed = iso(Date.now());
      // the Deployment first: Flux's health check (wait: true) says Ready only once it is available
      kube.apply(deployment({ name: input.app, namespace: 'prod', image: good, state: 'available', since: healed }));
      kube.apply(ks({ attempted: revert, applied: revert, ready: 'True', since: healed }));
      await until('the controller to see the target healthy again', () => p.lines.slice(healthyFrom).some((l) => l.msg === 'decided' && l.verdict === 'healthy'), 120_000);
      // what follows a revert (the Event on the failing object) is done before the next failure
      await until('the controller to log the revert', () => p.lines.slice(from).some((l) => l.msg === 'revert done'), 120_000);
      await new Promise((r) => setTimeout(r, 200));
    }
    if (process.env.LASTGOOD_BENCH_CONTROLLER_LOG) writeFileSync(`${process.env.LASTGOOD_BENCH_CONTROLLER_LOG}.${shape}`, p.stderr());
    const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${p.pid}/status`, 'utf8'))?.[1];
    const sorted = [...latencies].sort((a, b) => a - b);
    const rank = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
    return {
      bench, size: input.size, shape, backend, files: input.files, commits: input.commits, failures,
      p50Ms: round(median(latencies)), p99Ms: round(rank(0.99)), minMs: round(sorted[0]!), firstMs: round(firstMs), decidedP50Ms: round(median(decided)),
      rssMb: hwm ? round(Number(hwm) / 1024, 1) : null,
    };
  } finally {
    if (proc) {
      process.kill(proc.pid, 'SIGTERM');
      const code = await Promise.race([proc.exited, new Promise<'hung'>((r) => setTimeout(() => r('hung'), 30_000).unref())]);
      if (code === 'hung') process.kill(proc.pid, 'SIGKILL');
    }
    await emulator?.close();
    await server?.close();
    await kube.close();
    rmSync(root, { recursive: true, force: true });
  }
}

// ---- the bench ----------------------------------------------------------------------------------

export default async function* (): AsyncGenerator<Record<string, unknown> & { bench: string }> {
  const sizes = list<Size>('LASTGOOD_BENCH_SIZES', 'small,medium,large,monorepo', ['small', 'medium', 'large', 'monorepo']);
  const backends = list<Backend | 'controller'>('LASTGOOD_BENCH_BACKENDS', 'local,git-remote,github,controller', ['local', 'git-remote', 'github', 'controller']);
  const shapes = list<Shape>('LASTGOOD_BENCH_SHAPES', 'generated,listing', ['generated', 'listing']);
  const controllerSize = list<SizeName>('LASTGOOD_BENCH_CONTROLLER_SIZE', 'large', Object.keys(SIZES) as SizeName[])[0]!;
  const controllerBackend = list<Backend>('LASTGOOD_BENCH_CONTROLLER_BACKEND', 'git-remote', ['local', 'git-remote', 'github'])[0]!;
  const failures = Number(process.env.LASTGOOD_BENCH_CONTROLLER_FAILURES ?? 20);
  const repsOverride = process.env.LASTGOOD_BENCH_REPS ? Number(process.env.LASTGOOD_BENCH_REPS) : undefined;
  if (!existsSync(TIME)) throw new Error(`whole-run: ${TIME} (GNU time) measures peak RSS and CPU: apt-get install time`);
  try {
    execFileSync('kubectl', ['version', '--client'], { stdio: 'ignore' });
  } catch {
    throw new Error('whole-run: kubectl is needed (the baseline is `kubectl kustomize`; lastgood renders with kustomize or kubectl kustomize)');
  }

  const services: Services = { root: mkdtempSync(path.join(os.tmpdir(), 'lastgood-bench-serve-')) };
  try {
    if (backends.includes('git-remote')) services.gitServer = await (await import('../test/support/git-http-server.ts')).startGitHttpServer({ root: services.root });
    if (backends.includes('github')) services.startGitHub = (await import('../test/support/github-emulator.ts')).startGitHubEmulator;
    for (const size of sizes) {
      const rows = backends.filter((b): b is Backend => b !== 'controller').flatMap((b) => (size === 'monorepo' ? ['listing' as const] : shapes).map((s) => ({ backend: b, shape: s }))).filter((r) => wanted(`whole-run/${r.backend}/${r.shape}`));
      if (rows.length === 0) continue;
      const input = await inputOf(size);
      say(`whole-run: ${size} (${input.files} files, ${input.commits} commits), ${rows.length} rows`);
      // the person's working clone, made before anything is timed (reset to the head before each revert)
      const work = path.join(services.root, `work-${size}`);
      execFileSync('git', ['clone', '-q', input.gitdir, work], { env: GIT_ENV });
      try {
        for (const r of rows) yield await wholeRunRow(input, work, r.backend, r.shape, repsOverride ?? REPS[size], services);
      } finally {
        rmSync(work, { recursive: true, force: true });
      }
    }
  } finally {
    await services.gitServer?.close();
    rmSync(services.root, { recursive: true, force: true });
  }

  if (backends.includes('controller') && wanted('whole-run/controller/latency')) {
    const input = await inputOf(controllerSize);
    for (const shape of shapes) yield await controllerRow(input, shape, controllerBackend, failures);
  }
}
