/**
 * A rollback's recovery, in phases (issue 37): how long production was broken, and how much of that
 * was detection, the revert, review, sync and the rollout. Pure: times in, phases and words out.
 *
 *   began      the failure began (the failed objects' own `since`: what the revert's evidence says)
 *   confirmed  lastgood confirmed it and decided to revert (the run's time)
 *   written    the revert was written: the commit pushed, or the pull request opened
 *   merged     the pull request was merged (the commit that brought it to the branch); none in commit mode
 *   synced     the GitOps engine applied a revision containing the revert (first seen applied)
 *   healthy    the target was healthy at that revision (the start of the healthy run that then soaked)
 *
 * Times come from different clocks (a commit's time is whole seconds, the host's merge time its
 * own): each is taken as no earlier than the one before, so a phase is never negative.
 */
import { formatDuration } from '../config/duration.ts';

export interface RecoveryTimes {
  began: number;
  confirmed: number;
  written: number;
  /** pull-request mode only */
  merged?: number;
  synced: number;
  healthy: number;
}

export type RecoveryPhase = 'detect' | 'revert' | 'review' | 'sync' | 'rollout';
export const RECOVERY_PHASES: readonly RecoveryPhase[] = ['detect', 'revert', 'review', 'sync', 'rollout'];

/** The times in order: each no earlier than the one before (clocks differ; a phase is never negative). */
export function ordered(t: RecoveryTimes): RecoveryTimes {
  const confirmed = Math.max(t.began, t.confirmed);
  const written = Math.max(confirmed, t.written);
  const merged = t.merged === undefined ? undefined : Math.max(written, t.merged);
  const synced = Math.max(merged ?? written, t.synced);
  const healthy = Math.max(synced, t.healthy);
  return { began: t.began, confirmed, written, ...(merged !== undefined ? { merged } : {}), synced, healthy };
}

/** Each phase's length (ms), in order; `review` only in pull-request mode. */
export function phases(times: RecoveryTimes): Array<{ phase: RecoveryPhase; ms: number }> {
  const t = ordered(times);
  return [
    { phase: 'detect', ms: t.confirmed - t.began },
    { phase: 'revert', ms: t.written - t.confirmed },
    ...(t.merged !== undefined ? [{ phase: 'review' as const, ms: t.merged - t.written }] : []),
    { phase: 'sync', ms: t.synced - (t.merged ?? t.written) },
    { phase: 'rollout', ms: t.healthy - t.synced },
  ];
}

/** Each phase's length in seconds, as the log, the notification and the metrics give it. */
export function phaseSeconds(times: RecoveryTimes): Array<{ phase: RecoveryPhase; seconds: number }> {
  return phases(times).map((p) => ({ phase: p.phase, seconds: p.ms / 1000 }));
}

/** From the failure's start to healthy again (ms). */
export function recoveryMs(times: RecoveryTimes): number {
  return ordered(times).healthy - times.began;
}

/** "recovered at 2026-11-28T12:07:00Z, 6m12s after the failure began (detect 30s, …)" */
export function recoverySentence(times: RecoveryTimes): string {
  const at = new Date(ordered(times).healthy).toISOString().replace(/\.\d{3}Z$/, 'Z');
  const total = recoveryMs(times);
  return `recovered at ${at}, ${formatDuration(total)} after the failure began (${phases(times).map((p) => `${p.phase} ${formatDuration(p.ms)}`).join(', ')})`;
}

/** The earliest time a failed object's evidence says its failure began (ms), if any says. */
export function failureBegan(since: Array<string | undefined>): number | undefined {
  let began: number | undefined;
  for (const s of since) {
    const t = s ? Date.parse(s) : Number.NaN;
    if (!Number.isNaN(t) && (began === undefined || t < began)) began = t;
  }
  return began;
}
