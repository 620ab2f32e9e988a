/**
 * Recovery hooks (policy `{ hook: …, then: … }`): a user-defined step run before lastgood acts.
 * A URL gets the verdict as a JSON POST (2xx is success); a command gets it on stdin (exit 0 is
 * success). Both have a timeout. The engine runs hooks only in `run`, never in `check` and never
 * with --dry-run. A hook's URL may carry a token: it is registered as a secret and never printed.
 */
import { spawn } from 'node:child_process';
import { redact, registerSecret } from '../errors.ts';
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

/** Runs a hook. Never throws: every failure is a result with ok=false and the reason. */
export async function runHook(hook: Pick<HookPlan, 'spec' | 'timeoutMs'>, payload: unknown): Promise<HookResult> {
  const started = Date.now();
  const body = JSON.stringify(payload);
  const result = 'url' in hook.spec ? await postHook(hook.spec.url, body, hook.timeoutMs) : await commandHook(hook.spec.command, body, hook.timeoutMs);
  return { ...result, detail: redact(result.detail), ms: Date.now() - started };
}

async function postHook(url: string, body: string, timeoutMs: number): Promise<Omit<HookResult, 'ms'>> {
  registerSecret(url);
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'user-agent': 'lastgood' },
      body,
      signal: AbortSignal.timeout(timeoutMs),
      redirect: 'error',
    });
    const text = (await response.text().catch(() => '')).trim().replace(/\s+/g, ' ').slice(0, 200);
    if (response.ok) return { ok: true, detail: `answered ${response.status}${text ? `: ${text}` : ''}` };
    return { ok: false, detail: `answered ${response.status} ${response.statusText}${text ? `: ${text}` : ''}` };
  } catch (error) {
    if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) return { ok: false, detail: `no answer within ${timeoutMs / 1000}s` };
    // the error code only: messages name the host and port, and a hook URL may be a secret
    const cause = error instanceof Error ? ((error.cause as NodeJS.ErrnoException | undefined)?.code ?? (error.cause instanceof Error ? error.cause.name : error.name)) : 'error';
    return { ok: false, detail: `request failed: ${cause}` };
  }
}

function commandHook(command: string[], body: string, timeoutMs: number): Promise<Omit<HookResult, 'ms'>> {
  return new Promise((resolve) => {
    const [program, ...args] = command as [string, ...string[]];
    let stderr = '';
    let stdout = '';
    let timedOut = false;
    let settled = false;
    const finish = (r: Omit<HookResult, 'ms'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(r);
    };
    const child = spawn(program, args, { stdio: ['pipe', 'pipe', 'pipe'], env: process.env });
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.stdout.on('data', (d: Buffer) => (stdout = (stdout + d.toString()).slice(-2000)));
    child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-2000)));
    child.on('error', (error) => finish({ ok: false, detail: `${program} could not start: ${error.message}` }));
    child.on('close', (code, signal) => {
      const tail = (stderr.trim() || stdout.trim()).split('\n').pop()?.slice(0, 200) ?? '';
      if (timedOut) return finish({ ok: false, detail: `${program} did not finish within ${timeoutMs / 1000}s (killed)` });
      if (code === 0) return finish({ ok: true, detail: `${program} exited 0${tail ? `: ${tail}` : ''}` });
      finish({ ok: false, detail: `${program} ${signal ? `was killed by ${signal}` : `exited ${code}`}${tail ? `: ${tail}` : ''}` });
    });
    // a hook that does not read stdin must not fail the run with EPIPE
    child.stdin.on('error', () => {});
    child.stdin.end(body);
  });
}
