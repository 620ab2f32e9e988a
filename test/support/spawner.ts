import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { mkdtempSync, openSync, readSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { PassThrough, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';

/**
 * The tests' own commands (git and the shell that commits, the CLI runs, the git HTTP server's
 * `git http-backend`, the emulators' git), started by a small helper process instead of by the
 * test worker.
 *
 * Linux starts a process with fork(), which copies the page tables of the process that forks, and
 * exec() in the child then tears the copy down: both cost in proportion to the forking process's
 * memory. A test worker holds 150–300 MB (emulators, API descriptions, scenarios running side by
 * side); a spawn from it cost ~3–5 ms of CPU in the two processes, from a 40 MB process ~1.5 ms
 * (measured with /bin/true; `perf` put fork's copy_page_range and exec's unmap_page_range at 8% of
 * a loaded suite's CPU). The tests start ~16,000 such commands; moved here, a run of the whole
 * suite (ava alone, quiet) went from 312 s to 287 s.
 *
 * `runSync` (execFileSync's part the tests use): spawner-child.js, started on first use, one per
 * worker, talks over two FIFOs: a request is a JSON line, its answer a JSON line; the worker blocks
 * on the answer as execFileSync blocks on the child. `spawnRelayed` (spawn's part the git HTTP
 * server uses): spawner-relay.js, over its stdin and stdout. Each ends when the worker does.
 */

const HELPER = path.join(path.dirname(fileURLToPath(import.meta.url)), 'spawner-child.js');

let link: { requests: number; answers: number } | undefined;

function connect(): { requests: number; answers: number } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'lastgood-spawner-'));
  const requests = path.join(dir, 'requests');
  const answers = path.join(dir, 'answers');
  execFileSync('mkfifo', [requests, answers]);
  const child = spawn(process.execPath, [HELPER, requests, answers], { stdio: ['ignore', 'ignore', 'inherit'] });
  child.unref();
  // each open waits for the helper to open the other end, in the same order
  const r = openSync(requests, 'w');
  const a = openSync(answers, 'r');
  return { requests: r, answers: a };
}

interface Answer {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  error?: { message: string; code?: string };
}

/** Bytes read past the last answer's line (none: answers come one at a time), kept for the next. */
let pending = Buffer.alloc(0);

function readAnswer(fd: number): Answer {
  const parts: Buffer[] = [];
  let part = pending;
  for (;;) {
    const newline = part.indexOf(10);
    if (newline !== -1) {
      parts.push(part.subarray(0, newline));
      pending = part.subarray(newline + 1);
      return JSON.parse(Buffer.concat(parts).toString('utf8')) as Answer;
    }
    parts.push(part);
    part = Buffer.allocUnsafe(1 << 16);
    const n = readSync(fd, part, 0, part.length, null);
    if (n === 0) throw new Error('the test spawner helper ended before it answered');
    part = part.subarray(0, n);
  }
}

/** What runSync takes: execFileSync's options as the tests use them (stdin is empty unless `input` is given). */
export interface RunOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  input?: string | Buffer;
}

/**
 * Runs `file args` as `execFileSync(file, args, { ...opts, encoding: 'utf8' })` does, stderr always
 * captured: its stdout, or a thrown Error with `status`, `signal`, `stdout` and `stderr` (and the
 * command's words in the message, as Node words it) when it fails.
 */
export function runSync(file: string, args: string[], opts: RunOptions = {}): string {
  return runSyncBuffer(file, args, opts).toString('utf8');
}

/** runSync, with stdout as bytes (a blob's content). */
export function runSyncBuffer(file: string, args: string[], opts: RunOptions = {}): Buffer {
  link ??= connect();
  const request = { file, args, cwd: opts.cwd ?? process.cwd(), env: opts.env ?? process.env, input: opts.input === undefined ? undefined : Buffer.from(opts.input).toString('base64') };
  const line = Buffer.from(JSON.stringify(request) + '\n');
  for (let at = 0; at < line.length; ) at += writeSync(link.requests, line, at);
  const answer = readAnswer(link.answers);
  const stdout = Buffer.from(answer.stdout, 'base64');
  if (answer.error || answer.status !== 0) {
    const stderr = Buffer.from(answer.stderr, 'base64').toString('utf8');
    const message = answer.error ? `spawnSync ${file} ${answer.error.code ?? ''}: ${answer.error.message}` : `Command failed: ${[file, ...args].join(' ')}\n${stderr}`;
    throw Object.assign(new Error(message), { status: answer.status, signal: answer.signal, stdout: stdout.toString('utf8'), stderr, ...(answer.error?.code ? { code: answer.error.code } : {}) });
  }
  return stdout;
}

/** A child started by spawner-relay.js: spawn()'s streams and events, as far as the tests use them. */
export interface RelayedChild extends EventEmitter {
  readonly stdin: Writable;
  readonly stdout: PassThrough;
  readonly stderr: PassThrough;
}

interface Relay {
  process: ChildProcess;
  children: Map<number, RelayedChild>;
  nextId: number;
}

let relay: Relay | undefined;

function startRelay(): Relay {
  const child = spawn(process.execPath, [path.join(path.dirname(HELPER), 'spawner-relay.js')], { stdio: ['pipe', 'pipe', 'inherit'] });
  const r: Relay = { process: child, children: new Map(), nextId: 1 };
  createInterface({ input: child.stdout!, crlfDelay: Infinity }).on('line', (line) => {
    const m = JSON.parse(line) as { id: number; t: string; d?: string; code?: number | string | null; signal?: string | null; message?: string };
    const c = r.children.get(m.id);
    if (!c) return;
    if (m.t === 'out') c.stdout.write(Buffer.from(m.d!, 'base64'));
    else if (m.t === 'err') c.stderr.write(Buffer.from(m.d!, 'base64'));
    else {
      r.children.delete(m.id);
      holdWorker(r);
      // as a spawned child's: 'close' after every byte of its output was given out
      let open = 2;
      const ended = () => {
        if (--open > 0) return;
        if (m.t === 'error') c.emit('error', Object.assign(new Error(m.message), { code: m.code }));
        else c.emit('close', m.code, m.signal);
      };
      c.stdout.once('end', ended).end();
      c.stderr.once('end', ended).end();
      // a stream nobody reads never ends: read it to its end
      c.stdout.resume();
      c.stderr.resume();
    }
  });
  // a relay that dies leaves no child waiting for ever: each fails, as a spawn that could not start
  child.on('exit', (code, signal) => {
    relay = undefined;
    for (const c of r.children.values()) c.emit('error', new Error(`the test spawner relay ended (${signal ?? code}) while a child ran`));
    r.children.clear();
  });
  holdWorker(r);
  return r;
}

/** The relay keeps the worker alive only while a child of it runs, as a spawned child does. */
function holdWorker(r: Relay): void {
  const handles = [r.process, r.process.stdin, r.process.stdout] as { ref?(): void; unref?(): void }[];
  for (const h of handles) (r.children.size > 0 ? h.ref : h.unref)?.call(h);
}

/** `spawn(file, args, { env, stdio: 'pipe' })`, started by the relay: stdout, stderr, stdin and `close` (code, signal). */
export function spawnRelayed(file: string, args: string[], opts: { env: NodeJS.ProcessEnv; cwd?: string }): RelayedChild {
  const r = (relay ??= startRelay());
  const id = r.nextId++;
  const send = (message: object) => r.process.stdin!.write(JSON.stringify({ id, ...message }) + '\n');
  const child = Object.assign(new EventEmitter(), {
    stdout: new PassThrough(),
    stderr: new PassThrough(),
    stdin: new Writable({
      write(chunk: Buffer, _encoding, done) {
        send({ t: 'in', d: chunk.toString('base64') });
        done();
      },
      final(done) {
        send({ t: 'end' });
        done();
      },
    }),
  });
  r.children.set(id, child);
  holdWorker(r);
  send({ t: 'spawn', file, args, env: opts.env, cwd: opts.cwd ?? process.cwd() });
  return child;
}

/** What a relayed command printed and how it ended (`code` null: ended by `signal`). */
export interface RelayedResult {
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
}

/** Runs `file args` through the relay to its end, with `input` (if any) on its stdin; rejects only when it cannot start. */
export function collectRelayed(file: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string } = {}): Promise<RelayedResult> {
  return new Promise((resolve, reject) => {
    const child = spawnRelayed(file, args, { env: opts.env ?? process.env, ...(opts.cwd ? { cwd: opts.cwd } : {}) });
    let stdout = '';
    let stderr = '';
    // decoded by the streams: a character split between two chunks is kept whole (`+=` of each Buffer broke it)
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code: number | null, signal: string | null) => resolve({ code, signal, stdout, stderr }));
    child.stdin.end(opts.input ?? '');
  });
}

/**
 * `promisify(execFile)(file, args, { cwd, env, encoding: 'utf8' })`, started by the relay: stdout and
 * stderr, or a rejection with `code`, `stdout` and `stderr` when the command fails.
 */
export async function runRelayed(file: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<{ stdout: string; stderr: string }> {
  const r = await collectRelayed(file, args, opts);
  if (r.code !== 0) throw Object.assign(new Error(`Command failed: ${[file, ...args].join(' ')}\n${r.stderr}`), r);
  return { stdout: r.stdout, stderr: r.stderr };
}
