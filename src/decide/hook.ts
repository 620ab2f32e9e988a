/**
 * Recovery hooks (policy `{ hook: …, then: … }`): a user-defined step run before lastgood acts.
 * A URL gets the verdict as a JSON POST (2xx is success); a command gets it on stdin (exit 0 is
 * success). Both have a timeout. The engine runs hooks only in `run`, never in `check` and never
 * with --dry-run. A hook's URL may carry a token: it is registered as a secret and never printed.
 * A command runs in its own process group, killed whole at the timeout (SIGTERM, then SIGKILL
 * after a grace), and without lastgood's tokens in its environment unless the config passes them.
 */
import { spawn } from 'node:child_process';
import { redact, registerSecret } from '../errors.ts';
import { containsSecret, SECRET_ENV, SECRET_NAME } from '../scrub.ts';
import type { Decision, HookPlan, Verdict } from './types.ts';

export interface HookResult {
  ok: boolean;
  /** one line for people: what the hook answered, or why it failed (never the URL) */
  detail: string;
  ms: number;
}

/** The JSON document a hook receives. */
export function hookPayload(verdict: Verdict, decision: Pick<Decision, 'action' | 'reason'>, now: Date): Record<string, unknown> {
  return {
    kind: 'lastgood.hook/v1',
    time: now.toISOString(),
    target: verdict.target,
    verdict: verdict.verdict,
    class: verdict.class ?? null,
    since: verdict.since ?? null,
    summary: verdict.summary,
    action: decision.action,
    reason: decision.reason,
    evidence: verdict.evidence.map((e) => ({
      apiVersion: e.apiVersion, kind: e.kind, namespace: e.namespace ?? null, name: e.name,
      state: e.state, reason: e.reason, message: e.message, since: e.since ?? null,
      revision: e.attempted?.raw ?? e.attempted?.sha ?? null,
    })),
  };
}

/** Hook timeouts are validated to 1s–1h (config/schema.ts); clamped here too, so a timer can never overflow and fire at once. */
const MAX_TIMEOUT_MS = 3_600_000;
/** After SIGTERM, how long a hook's processes get before SIGKILL. */
export const KILL_GRACE_MS = 2000;
/** After the hook's own process exited, how long its output may still arrive (a background child may hold the pipes). */
const DRAIN_MS = 200;

/** Runs a hook. Never throws: every failure is a result with ok=false and the reason. */
export async function runHook(hook: Pick<HookPlan, 'spec' | 'timeoutMs'>, payload: unknown, opts: { env?: NodeJS.ProcessEnv } = {}): Promise<HookResult> {
  const started = Date.now();
  const body = JSON.stringify(payload);
  const timeoutMs = Math.min(Math.max(hook.timeoutMs, 1), MAX_TIMEOUT_MS);
  const result = 'url' in hook.spec
    ? await postHook(hook.spec.url, body, timeoutMs)
    : await commandHook(hook.spec.command, body, timeoutMs, hookEnvironment(opts.env ?? process.env, hook.spec.env?.inherit ?? []));
  return { ...result, detail: redact(result.detail), ms: Date.now() - started };
}

/**
 * The environment of a command hook: lastgood's own, minus its tokens and webhook URLs
 * (SECRET_ENV), every variable whose name looks secret (SECRET_NAME), and every variable holding a registered
 * secret; `inherit` names those to pass through anyway.
 */
export function hookEnvironment(env: NodeJS.ProcessEnv, inherit: string[]): NodeJS.ProcessEnv {
  const allowed = new Set(inherit);
  const out: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || GIT_CONFIG_ENV.test(name)) continue;
    const secret = SECRET_ENV.includes(name) || SECRET_NAME.test(name) || containsSecret(value);
    if (!secret || allowed.has(name)) out[name] = value;
  }
  return { ...out, ...gitConfigEnvironment(env, allowed) };
}

const GIT_CONFIG_ENV = /^GIT_CONFIG_(COUNT|KEY_\d+|VALUE_\d+)$/;

/**
 * git's configuration from the environment (GIT_CONFIG_COUNT, GIT_CONFIG_KEY_<n>,
 * GIT_CONFIG_VALUE_<n>; git's config.c git_config_from_parameters) goes to a hook whole or not at
 * all: git refuses to run ("unable to parse command-line config") when one of the group is missing,
 * and a KEY_<n> name alone looked secret to the rule above. It is left out when a value is a
 * secret, or a key names one (an http.extraHeader, a credential helper), unless the config passes
 * every variable of the group through `inherit`.
 */
function gitConfigEnvironment(env: NodeJS.ProcessEnv, allowed: Set<string>): NodeJS.ProcessEnv {
  const count = Number(env.GIT_CONFIG_COUNT);
  if (!Number.isInteger(count) || count <= 0) return {};
  const group: NodeJS.ProcessEnv = { GIT_CONFIG_COUNT: String(count) };
  let secret = false;
  for (let i = 0; i < count; i++) {
    const key = env[`GIT_CONFIG_KEY_${i}`];
    const value = env[`GIT_CONFIG_VALUE_${i}`];
    if (key === undefined || value === undefined) return {};
    group[`GIT_CONFIG_KEY_${i}`] = key;
    group[`GIT_CONFIG_VALUE_${i}`] = value;
    if (SECRET_NAME.test(key) || containsSecret(value) || containsSecret(key)) secret = true;
  }
  if (secret && !Object.keys(group).every((name) => allowed.has(name))) return {};
  return group;
}

async function postHook(url: string, body: string, timeoutMs: number): Promise<Omit<HookResult, 'ms'>> {
  registerSecret(url);
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'user-agent': 'lastgood' },
      body,
      // the signal covers the answer's body too: a server that trickles it is cut at the timeout
      signal: AbortSignal.timeout(timeoutMs),
      redirect: 'error',
    });
    // a body cut by the timeout is no answer; any other failure to read it leaves the status to speak
    const text = (await response.text().catch((error: unknown) => {
      if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) throw error;
      return '';
    })).trim().replace(/\s+/g, ' ').slice(0, 200);
    if (response.ok) return { ok: true, detail: `answered ${response.status}${text ? `: ${text}` : ''}` };
    return { ok: false, detail: `answered ${response.status} ${response.statusText}${text ? `: ${text}` : ''}` };
  } catch (error) {
    if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) return { ok: false, detail: `no answer within ${timeoutMs / 1000}s` };
    // the error code only: messages name the host and port, and a hook URL may be a secret
    const cause = error instanceof Error ? ((error.cause as NodeJS.ErrnoException | undefined)?.code ?? (error.cause instanceof Error ? error.cause.name : error.name)) : 'error';
    return { ok: false, detail: `request failed: ${cause}` };
  }
}

/** Process groups of the command hooks running now: ended with lastgood when a signal ends it. */
const running = new Set<number>();

function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false; // ESRCH: the group is gone
  }
}

const FORWARDED: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/**
 * A hook runs in its own process group (so that its whole tree can be killed), which also keeps
 * it from the terminal's and launcher's signals: while hooks run, a signal that ends lastgood
 * ends them first, then takes its default course.
 */
function onSignal(signal: NodeJS.Signals): void {
  for (const pgid of running) signalGroup(pgid, 'SIGTERM');
  running.clear();
  untrackSignals();
  if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
}

function trackSignals(): void {
  if (running.size === 1) for (const s of FORWARDED) process.on(s, onSignal);
}

function untrackSignals(): void {
  if (running.size === 0) for (const s of FORWARDED) process.off(s, onSignal);
}

function commandHook(command: string[], body: string, timeoutMs: number, env: NodeJS.ProcessEnv): Promise<Omit<HookResult, 'ms'>> {
  return new Promise((resolve) => {
    const [program, ...args] = command as [string, ...string[]];
    let stderr = '';
    let stdout = '';
    let timedOut = false;
    let settled = false;
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    let killTimer: NodeJS.Timeout | undefined;
    let drainTimer: NodeJS.Timeout | undefined;
    // detached: a new process group led by the hook, so that the timeout kills everything it started
    const child = spawn(program, args, { stdio: ['pipe', 'pipe', 'pipe'], env, detached: true });
    const pgid = child.pid;
    if (pgid !== undefined) {
      running.add(pgid);
      trackSignals();
    }
    /** SIGTERM to the whole group, SIGKILL to what is left after the grace. */
    const killGroup = () => {
      if (pgid === undefined || !signalGroup(pgid, 'SIGTERM')) return;
      killTimer ??= setTimeout(() => signalGroup(pgid, 'SIGKILL'), KILL_GRACE_MS);
    };
    const finish = (r: Omit<HookResult, 'ms'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(drainTimer);
      // what the hook left behind (a background child holding our pipes) is ended, and not waited for
      killGroup();
      if (pgid !== undefined) running.delete(pgid);
      untrackSignals();
      child.stdout.destroy();
      child.stderr.destroy();
      child.stdin.destroy();
      if (killTimer && pgid !== undefined && !signalGroup(pgid, 0)) clearTimeout(killTimer);
      resolve(r);
    };
    const conclude = () => {
      const tail = (stderr.trim() || stdout.trim()).split('\n').pop()?.slice(0, 200) ?? '';
      if (timedOut) return finish({ ok: false, detail: `${program} did not finish within ${timeoutMs / 1000}s (killed)` });
      const { code, signal } = exit!;
      if (code === 0) return finish({ ok: true, detail: `${program} exited 0${tail ? `: ${tail}` : ''}` });
      finish({ ok: false, detail: `${program} ${signal ? `was killed by ${signal}` : `exited ${code}`}${tail ? `: ${tail}` : ''}` });
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, timeoutMs);
    child.stdout.on('data', (d: Buffer) => (stdout = (stdout + d.toString()).slice(-2000)));
    child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-2000)));
    child.on('error', (error) => finish({ ok: false, detail: `${program} could not start: ${error.message}` }));
    // 'exit', not 'close': an orphaned grandchild may hold stdout open for as long as it lives
    child.on('exit', (code, signal) => {
      exit = { code, signal };
      drainTimer = setTimeout(conclude, DRAIN_MS);
    });
    child.on('close', () => {
      if (exit) conclude();
    });
    // a hook that does not read stdin must not fail the run with EPIPE
    child.stdin.on('error', () => {});
    child.stdin.end(body);
  });
}
