/**
 * Flagger `Canary` (flagger.app/v1beta1). Source: pkg/apis/flagger/v1beta1/status.go,
 * pkg/controller/scheduler.go (research/failure-signals.md §1).
 *
 * - Time in phase comes from the `Promoted` condition's `lastUpdateTime` (stamped when its
 *   status/reason change, and its reason is the phase). `status.lastTransitionTime` is rewritten
 *   on nearly every tick, even while Failed, so it is never used.
 * - Failed with `canaryWeight` at the total weight (Flagger ≥ 1.44, PR #1931): analysis passed but
 *   the primary did not become ready; traffic stays on the canary → failure class `promotion`.
 *   A normal analysis failure routes everything back to the primary (`canaryWeight: 0`).
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

/** Flagger routes weights out of 100 (handleFailedPromotion sets the canary to the full weight). */
const TOTAL_WEIGHT = 100;

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
    const promotion = isPromotionFailure(object, weight, promoted);
    return health({
      state: 'failed',
      reason: promotion ? 'PromotionFailed' : 'Failed',
      message: promotion
        ? `promotion failed after analysis passed: primary not ready, canary kept at weight ${weight}${message ? ` (${message})` : ''}`
        : message || 'canary analysis failed',
      since,
      failureClass: promotion ? 'promotion' : 'analysis',
      terminal: true,
    });
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

function isPromotionFailure(object: KubeObject, weight: number, promoted: Condition | undefined): boolean {
  if (weight >= TOTAL_WEIGHT) return true;
  // A failure reported while the condition still names a promotion phase (captured mid-transition).
  if (promoted && PROMOTION_PHASES.has(promoted.reason)) return true;
  return /promotion .*failed|primary not ready/i.test(str(rec(object.status).message) ?? '');
}

registerAssessor('flagger.app/Canary', assessCanary);
