/**
 * The per-target tracker of observations over time: what a door that observes a target more than
 * once (the controller, the Action's `wait`) needs between one observation and the next. Pure:
 * plain data in, the next state and "when to look again" out; no clock, no timers, no I/O.
 *
 *   track = observe(track, verdict, now)                 // count the observation
 *   const e = evaluate(track, { verdict, target, now, intervalMs, guards })
 *   e.decision, e.settled, e.act, e.nextAt              // what decide says now, and when it may change
 *   track = acted(track, e.failureKey, ok, now)          // the door acted on this failure
 *
 * - Confirmations: consecutive failed observations; any other verdict starts the count again.
 * - Settled (the Action stops waiting): healthy, stuck, or failed and confirmed (enough failed
 *   observations in a row, or the engine's own final verdict).
 * - Stuck by watching: a target still progressing when the door's deadline passes (the Action's
 *   `wait`), or progressing for longer than stuckAfter as this process watched it when no object
 *   tells since when, is stuck; its `onFailure.stuck` policy decides.
 * - Once per failure: a failure (verdict, class and failing revision) acted on is not acted on
 *   again until the target is healthy again, even if another failure came in between; an attempt
 *   that failed is retried with a growing backoff. A healthy observation forgets them: the next
 *   failure is new (the repository still knows what was done).
 * - When to look again: the earliest moment the decision can change with no new event: stuckAfter
 *   running out, a policy `wait` ending, the next confirmation, freezeUntil, a cooldown ending,
 *   maxAge passing, the retry after a failed attempt; and, for a door that records verified
 *   last-known-good revisions, the moment a healthy revision will have soaked (decide/soak.ts).
 * - Healthy runs: when this door first saw the target healthy at its revision, and whether it saw
 *   it otherwise right before (a failure, another revision): a flapping target starts its soak
 *   again at every healthy observation that follows another state.
 */
import { formatDuration } from '../config/duration.ts';
import { decide, type DecideTarget } from './decide.ts';
import { failingRevision } from './guards.ts';
import { healthyRevision, soaked, type HealthyRun, type Soak } from './soak.ts';
import type { Decision, RepoGuards, Verdict, VerdictState } from './types.ts';
import { backoffDelay } from '../retry.ts';

/** The target settings the tracker reads (decide's, with stuckAfter). */
export type TrackedTarget = DecideTarget & { stuckAfterMs: number };

/** What the tracker remembers of one target between observations. */
export interface Track {
  /** consecutive failed observations, the last one included */
  readonly failedInARow: number;
  /** the verdict of the last observation, and when (ms) this process first saw the target in it */
  readonly state?: VerdictState;
  readonly stateSeenAt?: number;
  /** the failures the door acted on since the target was last healthy (newest last): key, when, whether it went through, attempts */
  readonly acted?: readonly Acted[];
  /** the current run of healthy observations at one revision, when the target is healthy */
  readonly healthy?: HealthyRun;
}

export interface Acted {
  readonly key: string;
  readonly at: number;
  readonly ok: boolean;
  readonly attempts: number;
}

/** How many acted-on failures a track remembers (a target flapping between more failing revisions than this without healing is acted on again; the repository still knows). */
export const ACTED_MEMORY = 8;

export const NEW_TRACK: Track = { failedInARow: 0 };

/** Counts one observation of the target. */
export function observe(track: Track, verdict: Verdict, now: number): Track {
  const next: { -readonly [K in keyof Track]: Track[K] } = {
    failedInARow: verdict.verdict === 'failed' ? track.failedInARow + 1 : 0,
    state: verdict.verdict,
    stateSeenAt: track.state === verdict.verdict && track.stateSeenAt !== undefined ? track.stateSeenAt : now,
  };
  if (track.acted && verdict.verdict !== 'healthy') next.acted = track.acted;
  const revision = healthyRevision(verdict);
  if (revision) {
    // the same run while healthy at the same revision; anything else seen before starts a new one
    next.healthy = track.state === 'healthy' && track.healthy?.revision === revision
      ? track.healthy
      : { revision, since: now, broken: track.state !== undefined };
  }
  return next;
}

export interface EvaluateInput {
  /** the engine's verdict of this observation */
  verdict: Verdict;
  target: TrackedTarget;
  /** ms since the epoch */
  now: number;
  /** how soon to observe again a failure that waits for confirmations (the door's interval) */
  intervalMs: number;
  /** what the repository says about the target's past reverts, where the door has read it */
  guards?: RepoGuards;
  /** the door's own deadline has passed (the Action's `wait`: how long it waited): a progressing target is stuck */
  deadline?: string;
  /** the door records verified last-known-good revisions after this soak: say whether the healthy revision has soaked, and look again when it will have */
  soakMs?: number;
}

export interface Evaluation {
  /** the verdict decided on: the engine's, or stuck by watching (`byTracker`) */
  verdict: Verdict;
  /** true when the tracker made the verdict (stuck by watching); the engine's own verdict is progressing */
  byTracker: boolean;
  decision: Decision;
  /** nothing more to wait for: healthy, stuck, or failed and confirmed */
  settled: boolean;
  /** names the failure (verdict, class, failing revision); undefined when the target is not failed or stuck */
  failureKey?: string;
  /** the decision asks the door to act (revert, alert, a hook) on a failure not yet acted on (or due for a retry) */
  act: boolean;
  /** ms since the epoch: the earliest moment the decision may change without a new event; undefined: only a change can */
  nextAt?: number;
  /** with `soakMs`: whether the healthy revision has stayed healthy for the soak (may be recorded), or why not */
  soak?: Soak;
}

/** Backoff after a failed attempt to act: 1 s, doubling, at most 5 minutes. */
export const RETRY_BASE_MS = 1000;
export const RETRY_MAX_MS = 5 * 60_000;

export function retryDelay(attempts: number): number {
  return backoffDelay(attempts - 1, { baseMs: RETRY_BASE_MS, maxMs: RETRY_MAX_MS });
}

/** What decide says about the target now, whether the door should act, and when to look again. */
export function evaluate(track: Track, input: EvaluateInput): Evaluation {
  const { target, now } = input;
  const stuck = stuckByWatching(track, input);
  const verdict = stuck ?? input.verdict;
  const decision = decide({ verdict, target, now: new Date(now), observations: Math.max(1, track.failedInARow), guards: input.guards });
  const failing = verdict.verdict === 'failed' || verdict.verdict === 'stuck';
  const failureKey = failing ? keyOf(verdict) : undefined;
  const terminal = verdict.evidence.some((e) => e.state === 'failed' && e.terminal);
  const settled = verdict.verdict === 'healthy' || verdict.verdict === 'stuck' || (verdict.verdict === 'failed' && (terminal || track.failedInARow >= target.confirmations));

  const wantsToAct = failing && (decision.action === 'revert' || decision.action === 'alert' || decision.hook !== undefined);
  const previous = failureKey === undefined ? undefined : track.acted?.find((a) => a.key === failureKey);
  const retryAt = previous && !previous.ok ? previous.at + retryDelay(previous.attempts) : undefined;
  const act = wantsToAct && (!previous || (retryAt !== undefined && now >= retryAt));

  const times: Array<number | undefined> = [];
  if (verdict.verdict === 'progressing' && !input.deadline) {
    const since = verdict.since ? Date.parse(verdict.since) : track.stateSeenAt;
    if (since !== undefined && !Number.isNaN(since)) times.push(since + target.stuckAfterMs + 1);
  }
  if (failing) {
    const failedAt = failureTime(verdict, target);
    if (decision.heldBy === 'confirmations') times.push(now + input.intervalMs);
    if (decision.heldBy === 'wait' && failedAt !== undefined) times.push(failedAt + (policyWaitMs(verdict, target) ?? 0) + 1);
    if (decision.heldBy === 'freeze' && target.freezeUntil) times.push(Date.parse(target.freezeUntil));
    if (decision.heldBy === 'cooldown' && input.guards?.lastRevert && target.cooldownMs) times.push(Date.parse(input.guards.lastRevert.at) + target.cooldownMs + 1);
    if (decision.heldBy !== 'maxAge' && target.maxAgeMs !== undefined && failedAt !== undefined) times.push(failedAt + target.maxAgeMs + 1);
    if (wantsToAct && retryAt !== undefined) times.push(retryAt);
  }
  let soak: Soak | undefined;
  if (input.soakMs !== undefined && verdict.verdict === 'healthy') {
    soak = soaked({ verdict, soakMs: input.soakMs, now, ...(track.healthy ? { watched: track.healthy } : {}) });
    if (!soak.ok && soak.at !== undefined) times.push(soak.at);
  }
  let nextAt: number | undefined;
  for (const t of times) if (t !== undefined && !Number.isNaN(t) && t > now && (nextAt === undefined || t < nextAt)) nextAt = t;

  return { verdict, byTracker: stuck !== undefined, decision, settled, act, ...(failureKey ? { failureKey } : {}), ...(nextAt !== undefined ? { nextAt } : {}), ...(soak ? { soak } : {}) };
}

/** The door acted on a failure (ok: it went through, whatever the engine decided; not ok: an error, retried later). */
export function acted(track: Track, key: string, ok: boolean, now: number): Track {
  const previous = track.acted?.find((a) => a.key === key);
  const attempts = previous && !previous.ok ? previous.attempts + 1 : 1;
  const others = (track.acted ?? []).filter((a) => a.key !== key);
  return { ...track, acted: [...others, { key, at: now, ok, attempts }].slice(-ACTED_MEMORY) };
}

/**
 * A progressing target made stuck by the door's watch: its deadline passed (`deadline`), or it has
 * been progressing longer than stuckAfter since this process first saw it and no object tells
 * since when (where one does, the engine's own verdict turns stuck by itself).
 */
function stuckByWatching(track: Track, input: EvaluateInput): Verdict | undefined {
  const { verdict, target, now } = input;
  if (verdict.verdict !== 'progressing') return undefined;
  const still = verdict.summary.replace(/^progressing: /, '');
  if (input.deadline !== undefined) return stuckVerdict(verdict, `stuck: still ${still} after waiting ${input.deadline}`);
  if (verdict.since || track.state !== 'progressing' || track.stateSeenAt === undefined) return undefined;
  const watched = now - track.stateSeenAt;
  if (watched <= target.stuckAfterMs) return undefined;
  return stuckVerdict(verdict, `stuck: still ${still} after ${formatDuration(watched)} watched (limit ${formatDuration(target.stuckAfterMs)})`);
}

function stuckVerdict(verdict: Verdict, summary: string): Verdict {
  return { target: verdict.target, verdict: 'stuck', class: 'stuck', evidence: verdict.evidence, summary };
}

/** One failure of a target: the same verdict and class at the same failing revision (else the same images, else the same start). */
function keyOf(verdict: Verdict): string {
  const revision = failingRevision(verdict.evidence);
  const images = revision ? undefined : verdict.evidence.filter((e) => e.state === 'failed').flatMap((e) => e.attempted?.images ?? []).join(',');
  return `${verdict.verdict}/${verdict.class ?? ''}/${revision ?? (images || verdict.since || '')}`;
}

/** When the failure began, as decide measures it (stuck: the moment it passed stuckAfter). */
function failureTime(verdict: Verdict, target: TrackedTarget): number | undefined {
  if (!verdict.since) return undefined;
  const since = Date.parse(verdict.since);
  if (Number.isNaN(since)) return undefined;
  return verdict.verdict === 'stuck' ? since + target.stuckAfterMs : since;
}

function policyWaitMs(verdict: Verdict, target: TrackedTarget): number | undefined {
  const cls = verdict.class ?? (verdict.verdict === 'stuck' ? 'stuck' : 'analysis');
  const policy = target.onFailure[cls];
  return typeof policy === 'object' ? policy.waitMs : undefined;
}
