/**
 * Flagger `Canary` (flagger.app/v1beta1). Source: pkg/apis/flagger/v1beta1/status.go,
 * pkg/controller/scheduler.go (research/failure-signals.md §1).
 *
 * - Time in phase comes from the `Promoted` condition's `lastUpdateTime` (stamped when its
 *   status/reason change, and its reason is the phase). `status.lastTransitionTime` is rewritten
 *   on nearly every tick, even while Failed, so it is never used.
 * - Failed with `canaryWeight` > 0 (Flagger ≥ 1.44, PR #1931): analysis passed but the primary did
 *   not become ready; `handleFailedPromotion` routes all traffic to the canary and records Failed with
 *   the canary's weight → failure class `promotion`. `rollback()`, the ordinary analysis failure,
 *   always records `canaryWeight: 0` (fluxcd/flagger pkg/controller/scheduler.go v1.44.0).
 *   The Promoted condition then still says "Canary analysis failed, Deployment scaled to zero."
 *   (`MakeStatusConditions` in pkg/canary/status.go was not changed), which is untrue here: it is not
 *   repeated in the Health message.
 */
import type { KubeObject } from '../observe/types.ts';
import { registerAssessor } from './registry.ts';
import type { Health } from './types.ts';
import { conditions, findCondition, health, num, rec, str, type Condition } from './status.ts';

const PROGRESSING_PHASES: Record<string, string> = {
  '': 'canary not yet initialised',
  Initializing: 'initialising: creating the primary',
  Waiting: 'waiting for approval (confirm-rollout gate)',
  Progressing: 'canary analysis in progress',
  WaitingPromotion: 'waiting for approval (confirm-promotion gate)',
  Promoting: 'analysis passed: rolling out the primary',
  Finalising: 'analysis passed: routing all traffic to the primary',
  Terminating: 'canary deleted: reverting the target',
};

/** Promotion-failure phases: a Failed canary whose Promoted condition still names them failed after analysis passed. */
const PROMOTION_PHASES = new Set(['Promoting', 'Finalising']);

export function assessCanary(object: KubeObject): Health {
  const status = rec(object.status);
  const promoted = findCondition(conditions(object), 'Promoted');
  // Older objects and docs omit `phase`; the Promoted condition's reason is the phase.
  const phase = str(status.phase) ?? promoted?.reason ?? '';
  const since = promotedSince(promoted);
  const message = promoted?.message || str(status.message) || '';
  const weight = num(status.canaryWeight) ?? 0;

  if (phase === 'Succeeded' || phase === 'Initialized') {
    return health({ state: 'healthy', reason: phase, message: message || `canary ${phase.toLowerCase()}`, since });
  }
  if (phase === 'Failed') {
    if (isPromotionFailure(object, weight, promoted)) {
      const detail = message && !FLAGGER_FAILED_TEXT.test(message) ? ` (${message})` : '';
      return health({
        state: 'failed',
        reason: 'PromotionFailed',
        message: `promotion failed after analysis passed: the primary is not ready and Flagger keeps the canary serving${weight > 0 ? ` at weight ${weight}` : ''}${detail}`,
        since,
        failureClass: 'promotion',
        terminal: true,
        revertHazard: PROMOTION_FAILURE_HAZARD,
      });
    }
    return health({ state: 'failed', reason: 'Failed', message: message || 'canary analysis failed', since, failureClass: 'analysis', terminal: true });
  }
  if (phase === 'Terminated') {
    // Deleted with revertOnDeletion: says nothing about a revision.
    return health({ state: 'unknown', reason: 'Terminated', message: message || 'canary terminated', since });
  }
  const description = PROGRESSING_PHASES[phase];
  if (description !== undefined) {
    const extra = phase === 'Progressing' ? ` (weight ${weight}, iterations ${num(status.iterations) ?? 0}, failed checks ${num(status.failedChecks) ?? 0})` : '';
    return health({ state: 'progressing', reason: phase || 'Pending', message: (message || description) + extra, since });
  }
  return health({ state: 'unknown', reason: 'UnknownPhase', message: `unknown canary phase ${JSON.stringify(phase)}`, since });
}

function promotedSince(promoted: Condition | undefined): string | undefined {
  return promoted ? (promoted.lastUpdateTime ?? promoted.lastTransitionTime) : undefined;
}

/** The Promoted condition's text for every Failed canary (pkg/canary/status.go `MakeStatusConditions`). */
const FLAGGER_FAILED_TEXT = /^Canary analysis failed, \S+ scaled to zero\.?$/;

/**
 * Checked in fluxcd/flagger pkg/controller/scheduler.go (v1.44.0, `advanceCanary`): a new revision
 * of the target (a revert) makes `shouldAdvance` true; `IsPrimaryReady` still fails without retry
 * (ProgressDeadlineExceeded); the phase is now Failed, not Promoting/Finalising, so the ordinary
 * `rollback()` runs instead of `handleFailedPromotion`: it routes 100 % to the primary and scales
 * the canary to zero.
 */
const PROMOTION_FAILURE_HAZARD: NonNullable<Health['revertHazard']> = {
  kind: 'flagger-promotion-failure',
  message:
    'Flagger keeps the canary serving all traffic after this failed promotion; while the primary is not ready, a new revision (the revert) makes Flagger take its ordinary rollback() path, which routes all traffic to the broken primary and scales the healthy canary to zero (fluxcd/flagger pkg/controller/scheduler.go advanceCanary, v1.44.0).',
};

function isPromotionFailure(object: KubeObject, weight: number, promoted: Condition | undefined): boolean {
  // rollback() always records weight 0; only handleFailedPromotion leaves a Failed canary with traffic.
  if (weight > 0) return true;
  // A failure reported while the condition still names a promotion phase (captured mid-transition).
  if (promoted && PROMOTION_PHASES.has(promoted.reason)) return true;
  // The Warning event "Promotion of <name>.<ns> failed, primary not ready: …" (handleFailedPromotion).
  return [str(rec(object.status).message), promoted?.message].some((m) => m !== undefined && /promotion .*failed|primary not ready/i.test(m));
}

registerAssessor('flagger.app/Canary', assessCanary);
