/**
 * Flux `Kustomization` (kustomize.toolkit.fluxcd.io) and `HelmRelease` (helm.toolkit.fluxcd.io).
 * Source: fluxcd/pkg apis/meta, kustomize-controller, helm-controller (research/failure-signals.md §4).
 *
 * Flux keeps `Reconciling=True reason ProgressingWithRetry` after a failure, so kstatus calls a
 * failing Kustomization "InProgress" forever. Here `Ready=False` is the failure, `Ready=Unknown` /
 * `Reconciling=True` with a non-False Ready is progress, and `Stalled=True` is terminal.
 */
import type { KubeObject } from '../observe/types.ts';
import { registerAssessor } from './registry.ts';
import { revisionOf } from './revision.ts';
import { arr, bool, conditions, conditionSince, findCondition, generation, health, isTerminating, isTrue, num, rec, str, terminating, type Condition } from './status.ts';
import type { Health, Revision } from './types.ts';

/** Ready=False reasons that are waiting, not failing. */
const WAITING_REASONS = new Set(['DependencyNotReady', 'HealthCheckCanceled', 'Progressing', 'ProgressingWithRetry']);

/** Ready=False reasons that are a verdict on the attempted revision's content: retrying the same revision will not change them. */
const KUSTOMIZATION_TERMINAL_REASONS = new Set(['BuildFailed', 'HealthCheckFailed', 'ReconciliationFailed', 'PruneFailed']);

/**
 * Ready=False reasons where the new revision was not judged (source fetch failed, client/factory
 * errors): the revision may be fine and the condition self-heals → class `promotion`.
 */
const NOT_JUDGED_REASONS = new Set(['ArtifactFailed', 'SourceNotReady', 'RESTClientError', 'FactoryError', 'ConfigFactoryErr', 'StateError', 'ResourceManagerError', 'AccessDenied']);

export function assessKustomization(object: KubeObject): Health {
  const status = rec(object.status);
  const revisions = kustomizationRevisions(status);
  return withRevisions(assessFluxConditions(object, KUSTOMIZATION_TERMINAL_REASONS), revisions);
}

function kustomizationRevisions(status: Record<string, unknown>): { attempted?: Revision; lastSucceeded?: Revision } {
  const attempted = revisionOf(status.lastAttemptedRevision);
  let lastSucceeded = revisionOf(status.lastAppliedRevision);
  if (!lastSucceeded) {
    // kustomize-controller ≥ 1.7: history is newest first.
    for (const entry of arr(status.history)) {
      const e = rec(entry);
      if (str(e.lastReconciledStatus) === 'ReconciliationSucceeded') {
        lastSucceeded = revisionOf(rec(e.metadata).revision);
        if (lastSucceeded) break;
      }
    }
  }
  return { ...(attempted ? { attempted } : {}), ...(lastSucceeded ? { lastSucceeded } : {}) };
}

/** The Flux condition rules shared by Kustomization and HelmRelease. */
function assessFluxConditions(object: KubeObject, terminalReasons: Set<string>): Health {
  if (isTerminating(object)) return terminating(object);
  if (bool(rec(object.spec).suspend)) {
    return health({ state: 'suspended', reason: 'Suspended', message: 'reconciliation is suspended (spec.suspend)' });
  }
  const list = conditions(object);
  const stalled = list.find((c) => c.type === 'Stalled' && isTrue(c));
  if (stalled) {
    return health({
      state: 'failed',
      reason: stalled.reason || 'Stalled',
      message: stalled.message,
      since: conditionSince(stalled),
      failureClass: NOT_JUDGED_REASONS.has(stalled.reason) ? 'promotion' : 'analysis',
      terminal: true,
    });
  }
  const ready = findCondition(list, 'Ready');
  const reconciling = list.find((c) => c.type === 'Reconciling' && isTrue(c));
  if (!ready) {
    if (reconciling) return fromCondition('progressing', reconciling);
    return health({ state: 'progressing', reason: 'NotReconciled', message: 'no Ready condition yet' });
  }
  if (ready.status === 'True') {
    if (isStale(object, ready)) {
      return health({ state: 'progressing', reason: 'LatestGenerationNotObserved', message: `generation ${generation(object)} not yet reconciled`, since: conditionSince(ready) });
    }
    return fromCondition('healthy', ready);
  }
  if (ready.status === 'False') {
    if (WAITING_REASONS.has(ready.reason)) return fromCondition('progressing', ready);
    return health({
      state: 'failed',
      reason: ready.reason || 'ReconciliationFailed',
      message: ready.message,
      since: conditionSince(ready),
      failureClass: NOT_JUDGED_REASONS.has(ready.reason) ? 'promotion' : 'analysis',
      terminal: terminalReasons.has(ready.reason),
    });
  }
  return fromCondition('progressing', ready.reason ? ready : (reconciling ?? ready));
}

function fromCondition(state: 'healthy' | 'progressing', c: Condition): Health {
  return health({ state, reason: c.reason || c.type, message: c.message, since: conditionSince(c) });
}

/**
 * Ready=True but about an older generation. Flux bumps `status.observedGeneration` only on
 * success, and writes the generation a condition was computed for in the condition itself.
 */
function isStale(object: KubeObject, ready: Condition): boolean {
  const gen = generation(object);
  if (gen === undefined) return false;
  const observed = ready.observedGeneration ?? num(rec(object.status).observedGeneration);
  return observed !== undefined && observed >= 0 && observed < gen;
}

function withRevisions(h: Health, revisions: { attempted?: Revision; lastSucceeded?: Revision }): Health {
  return health({ ...h, ...revisions });
}

/** Ready=False reasons of a HelmRelease where retrying cannot help without a new spec. */
const HELMRELEASE_TERMINAL_REASONS = new Set(['MissingRollbackTarget', 'InvalidCELExpression']);

export function assessHelmRelease(object: KubeObject): Health {
  const status = rec(object.status);
  let assessed = assessFluxConditions(object, HELMRELEASE_TERMINAL_REASONS);
  const list = conditions(object);
  if (assessed.state === 'failed') {
    // Ready=False "RollbackSucceeded" hides the cause: name the failed action (Released/TestSuccess) too.
    const cause = [findCondition(list, 'TestSuccess'), findCondition(list, 'Released')].find((c) => c?.status === 'False');
    if (cause && cause.reason !== assessed.reason && !assessed.message.includes(cause.message)) {
      assessed = { ...assessed, message: `${assessed.message}${assessed.message ? '; ' : ''}${cause.reason}: ${cause.message}` };
    }
    // Remediated (rolled back or uninstalled) and no longer retrying: helm-controller is done with this revision.
    const remediated = findCondition(list, 'Remediated');
    if (isTrue(remediated) && !list.some((c) => c.type === 'Reconciling' && isTrue(c))) assessed = { ...assessed, terminal: true };
  }
  return withRevisions(assessed, helmReleaseRevisions(status));
}

/** HelmRelease revisions are chart versions (`chart`), not git SHAs; map to git through the parent Kustomization. */
function helmReleaseRevisions(status: Record<string, unknown>): { attempted?: Revision; lastSucceeded?: Revision } {
  const out: { attempted?: Revision; lastSucceeded?: Revision } = {};
  const attempted = str(status.lastAttemptedRevision);
  if (attempted) out.attempted = { raw: attempted, chart: attempted };
  // helm-controller v2: history is newest first, "up to the last successfully completed release".
  for (const entry of arr(status.history)) {
    const e = rec(entry);
    const releaseStatus = str(e.status);
    if (releaseStatus !== 'deployed' && releaseStatus !== 'superseded') continue;
    const tests = Object.values(rec(e.testHooks)).map((h) => str(rec(h).phase));
    if (tests.includes('Failed')) continue;
    const chart = str(e.chartVersion);
    if (chart) {
      out.lastSucceeded = { raw: str(e.chartName) ? `${str(e.chartName)}@${chart}` : chart, chart };
      break;
    }
  }
  // v2beta1 kept the last applied chart version directly.
  const applied = str(status.lastAppliedRevision);
  if (!out.lastSucceeded && applied) out.lastSucceeded = { raw: applied, chart: applied };
  return out;
}

registerAssessor('kustomize.toolkit.fluxcd.io/Kustomization', assessKustomization);
registerAssessor('helm.toolkit.fluxcd.io/HelmRelease', assessHelmRelease);
