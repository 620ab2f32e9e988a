/** What surrounds a revert: commit links, recovery hooks, notifications, closing superseded revert requests. */
import { resolveNotify } from '../config/schema.ts';
import type { HookPlan, Verdict } from '../decide/types.ts';
import { hookPayload, runHook } from '../decide/hook.ts';
import { notify, notifyUnmerged, type NotifyOptions } from '../report/notify.ts';
import { claimEffect } from '../report/once.ts';
import type { TargetOutcome, Report, RunOptions } from './types.ts';

/** Links to commits for PR bodies and summaries: the door's, else the backend's host (none for a local repository or an unknown host). */
export function commitLinks(opts: Pick<RunOptions, 'repo' | 'commitUrl'>): ((sha: string) => string) | undefined {
  if (opts.commitUrl) return opts.commitUrl;
  const { repo } = opts;
  if (!repo.commitUrl?.('0'.repeat(40))) return undefined;
  return (sha) => repo.commitUrl!(sha)!;
}

/**
 * Runs a recovery hook before lastgood acts (never with --dry-run), and records what it said.
 * Returns true when the revert goes ahead: the hook succeeded, or failed with onHookFailure: revert.
 */
export async function hookBefore(outcome: TargetOutcome, hook: HookPlan, opts: Pick<RunOptions, 'dryRun' | 'now' | 'log'> & { verdict: Verdict }): Promise<boolean> {
  if (opts.dryRun) {
    outcome.reason = `${outcome.reason}; dry run: hook not run`;
    return hook.then === 'revert';
  }
  const result = await runHook(hook, hookPayload(opts.verdict, outcome, opts.now));
  opts.log.info({ target: outcome.name, ok: result.ok, ms: result.ms }, 'ran recovery hook');
  if (result.ok) {
    outcome.reason = `${outcome.reason}; hook succeeded (${result.detail})`;
    return hook.then === 'revert';
  }
  outcome.action = hook.onFailure;
  outcome.reason = `hook failed (${result.detail}), onHookFailure: ${hook.onFailure}; ${outcome.reason}`;
  return hook.onFailure === 'revert';
}

/** A hook of a policy whose action is not revert; true when it asks for a revert after all (a failure with onHookFailure: revert). */
export async function hookAlone(outcome: TargetOutcome, hook: HookPlan, opts: Pick<RunOptions, 'dryRun' | 'now' | 'log'> & { verdict: Verdict }): Promise<boolean> {
  const revert = await hookBefore(outcome, hook, opts);
  if (revert) outcome.action = 'revert';
  return revert;
}

/**
 * Notifications at the end of a run (never with --dry-run); failures are logged and change nothing.
 * A revert is announced once, whichever run finds it made (report/once.ts).
 */
export async function notifyOutcomes(report: Report, opts: Pick<RunOptions, 'config' | 'env' | 'log' | 'now' | 'dryRun' | 'repo' | 'commitUrl' | 'failureAnnounced'>): Promise<void> {
  if (opts.dryRun) return;
  await notify(report, {
    ...notifyOptions(opts),
    claim: (t) => claimEffect(opts.repo, t, 'notified', opts.now, opts.log),
    ...(opts.failureAnnounced ? { except: ['revert-failed'] as const } : {}),
  });
}

/** The reminder that a revert request is still open while its target stays failed (the controller's remindUnmerged). */
export async function remindUnmerged(outcome: TargetOutcome, opts: Pick<RunOptions, 'config' | 'env' | 'log' | 'now' | 'repo' | 'commitUrl'>): Promise<void> {
  await notifyUnmerged(outcome, notifyOptions(opts));
}

/** Where and how a run's notifications go: the config's channels, the environment, links to the host's commit pages. */
export function notifyOptions(opts: Pick<RunOptions, 'config' | 'env' | 'log' | 'now' | 'repo' | 'commitUrl'>): NotifyOptions {
  const commitUrl = commitLinks(opts);
  return { ...(opts.config.notify ? { config: resolveNotify(opts.config.notify)! } : {}), env: opts.env, log: opts.log, now: opts.now, ...(commitUrl ? { commitUrl } : {}) };
}

/**
 * A healthy target makes its open revert pull requests moot when the healthy revision contains
 * their bad commit (a fix landed on top, or the bad commit turned out fine): close them, saying why.
 */
export async function closeSuperseded(outcome: TargetOutcome, opts: RunOptions): Promise<void> {
  if (!opts.repo.closeSupersededReverts) return;
  const sha = outcome.evidence.map((e) => e.attempted?.sha).find(Boolean);
  const healthy = sha ? await opts.repo.resolveCommit(sha) : undefined;
  if (!healthy) return;
  const closed = await opts.repo.closeSupersededReverts(outcome.name, healthy);
  if (closed.length) outcome.reason = `${outcome.reason}; closed superseded revert pull request${closed.length > 1 ? 's' : ''} ${closed.map((n) => `#${n}`).join(', ')}`;
}
