import { spawn } from 'node:child_process';
import { constants, promises as fs, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * The kustomize lastgood renders with: a `kustomize` binary, or the one built into `kubectl`
 * (`kubectl kustomize`). Spawned with an argument array (never a shell), a minimal environment
 * (no token ever reaches it), a timeout and bounded output.
 */
export interface Renderer {
  /** the argument vector that builds; the kustomization directory and flags are appended
   *  (`[path, 'build']` for kustomize, `[path, 'kustomize']` for kubectl) */
  command: string[];
  /** the kustomize version, "v5.5.0" */
  version: string;
  kind: 'kustomize' | 'kubectl';
}

export interface Unavailable {
  unavailable: string;
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
  /** set when the process could not run, timed out, or printed more than allowed */
  problem?: string;
  /** the bound it hit, when it was stopped for one (not the input's fault: the machine's bound) */
  limit?: 'time' | 'output' | 'memory';
}

export interface RunLimits {
  timeoutMs: number;
  maxOutputBytes: number;
  cwd?: string;
  /** HOME for the child (kubectl wants one); a directory lastgood owns */
  home?: string;
  /** the child's resident memory, polled where the system tells it (Linux /proc): beyond this it is stopped */
  maxRssBytes?: number;
}

/** How often a child's memory is looked at; a Go build grows by tens of MB in this time at most. */
const RSS_POLL_MS = 50;

/** The resident memory of a process, bytes (Linux /proc/PID/status VmRSS); undefined where unknown. */
function residentBytes(pid: number): number | undefined {
  try {
    const kb = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb === undefined ? undefined : Number(kb) * 1024;
  } catch {
    return undefined;
  }
}

/** Only what a kustomize build needs; nothing of lastgood's own environment (tokens) is passed on. */
function childEnv(home: string | undefined): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C', LC_ALL: 'C' };
  if (home) env.HOME = home;
  return env;
}

export function runBounded(file: string, args: string[], limits: RunLimits): Promise<RunResult> {
  return new Promise((resolve) => {
    let stdout: Buffer[] = [];
    let stderr: Buffer[] = [];
    let size = 0;
    let problem: string | undefined;
    let limit: RunResult['limit'];
    let settled = false;
    const child = spawn(file, args, { cwd: limits.cwd, env: childEnv(limits.home), stdio: ['ignore', 'pipe', 'pipe'], shell: false });
    const stop = (why: string, bound: NonNullable<RunResult['limit']>) => {
      if (!problem) [problem, limit] = [why, bound];
      child.kill('SIGKILL');
    };
    const timer = setTimeout(() => stop(`${path.basename(file)} did not finish within ${Math.round(limits.timeoutMs / 1000)} s`, 'time'), limits.timeoutMs);
    const watch = limits.maxRssBytes !== undefined && child.pid !== undefined
      ? setInterval(() => {
        const rss = residentBytes(child.pid!);
        if (rss !== undefined && rss > limits.maxRssBytes!) stop(`${path.basename(file)} used more than ${Math.round(limits.maxRssBytes! / (1 << 20))} MiB of memory`, 'memory');
      }, RSS_POLL_MS)
      : undefined;
    watch?.unref();
    const take = (into: Buffer[], chunk: Buffer) => {
      size += chunk.length;
      if (size > limits.maxOutputBytes) {
        stop(`${path.basename(file)} printed more than ${limits.maxOutputBytes} bytes`, 'output');
        return;
      }
      into.push(chunk);
    };
    child.stdout.on('data', (c: Buffer) => take(stdout, c));
    child.stderr.on('data', (c: Buffer) => take(stderr, c));
    const done = (code: number | null, err?: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (watch) clearInterval(watch);
      if (err) problem ??= `${file} could not run: ${(err as NodeJS.ErrnoException).code ?? err.message}`;
      resolve({ code, stdout: Buffer.concat(stdout).toString('utf8'), stderr: Buffer.concat(stderr).toString('utf8'), problem, ...(limit ? { limit } : {}) });
      stdout = [];
      stderr = [];
    };
    child.on('error', (err) => done(null, err));
    child.on('close', (code) => done(code));
  });
}

async function isExecutable(p: string): Promise<boolean> {
  try {
    const st = await fs.stat(p);
    if (!st.isFile()) return false;
    await fs.access(p, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

async function onPath(name: string, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const p = path.join(dir, name);
    if (await isExecutable(p)) return p;
  }
  return undefined;
}

const PROBE = { timeoutMs: 20_000, maxOutputBytes: 1 << 20 };

/** The kustomize version a binary reports: `kustomize version`, or kubectl's `kustomizeVersion`. */
async function probe(file: string, kind: Renderer['kind']): Promise<string | Unavailable> {
  if (kind === 'kustomize') {
    const r = await runBounded(file, ['version'], PROBE);
    const v = /v?\d+\.\d+\.\d+/.exec(r.stdout + r.stderr)?.[0];
    if (r.problem || r.code !== 0 || !v) return { unavailable: `${file} version failed: ${r.problem ?? firstLines(r.stderr || r.stdout, 3)}` };
    return v.startsWith('v') ? v : `v${v}`;
  }
  const r = await runBounded(file, ['version', '--client', '-o', 'json'], PROBE);
  let v: string | undefined;
  try {
    v = (JSON.parse(r.stdout) as { kustomizeVersion?: string }).kustomizeVersion;
  } catch {
    v = /Kustomize Version: (v?[\d.]+)/.exec(r.stdout)?.[1];
  }
  if (r.problem || !v) return { unavailable: `${file} version --client did not name its kustomize: ${r.problem ?? firstLines(r.stderr || r.stdout, 3)}` };
  return v;
}

export function firstLines(text: string, n: number): string {
  return text.trim().split('\n').slice(0, n).join('\n');
}

/**
 * `kustomize` on the PATH, else `kubectl kustomize`. `configured`: a path to one of the two
 * binaries (kind from its name), or 'off'. Needs kustomize v5 (what Flux and Argo CD ship: the
 * render relies on `sortOptions`, added in kustomize v5.0).
 */
export async function detectRenderer(opts: { configured?: string; env?: NodeJS.ProcessEnv } = {}): Promise<Renderer | Unavailable> {
  const env = opts.env ?? process.env;
  let found: { file: string; kind: Renderer['kind'] } | undefined;
  if (opts.configured === 'off') return { unavailable: 'rendering is turned off (render.kustomize: off)' };
  if (opts.configured) {
    if (!(await isExecutable(opts.configured))) return { unavailable: `the configured renderer ${opts.configured} is not an executable file` };
    found = { file: opts.configured, kind: /kubectl/i.test(path.basename(opts.configured)) ? 'kubectl' : 'kustomize' };
  } else {
    const k = await onPath('kustomize', env);
    const c = k ? undefined : await onPath('kubectl', env);
    if (k) found = { file: k, kind: 'kustomize' };
    else if (c) found = { file: c, kind: 'kubectl' };
  }
  if (!found) return { unavailable: 'neither kustomize nor kubectl is on the PATH' };
  const version = await probe(found.file, found.kind);
  if (typeof version !== 'string') return version;
  const major = Number(/^v?(\d+)/.exec(version)?.[1] ?? 0);
  if (major < 5) return { unavailable: `${found.file} has kustomize ${version}; rendering as Flux and Argo CD do needs kustomize v5 or later` };
  return { command: [found.file, found.kind === 'kustomize' ? 'build' : 'kustomize'], version, kind: found.kind };
}
