/**
 * Argo Rollouts `Rollout` and `AnalysisRun` (argoproj.io/v1alpha1).
 * Source: argo-rollouts utils/rollout/rolloututil.go (`GetRolloutPhase`, `CalculateRolloutPhase`),
 * utils/conditions; Argo CD's Rollout health Lua (research/failure-signals.md §2).
 *
 * Order: spec not yet observed → progressing; then the failure signals (InvalidSpec, abort,
 * ProgressDeadlineExceeded), which win over `status.phase` so the reason is precise; then
 * `status.phase` (v1.0+) when present, else the phase is computed as the controller would.
 */
import type { KubeObject } from '../observe/types.ts';
import { registerAssessor } from './registry.ts';
import {
  arr,
  bool,
  conditions,
  conditionSince,
  findCondition,
  generation,
  health,
  isoTime,
  isTerminating,
  latest,
  metadataOf,
  num,
  podSpecImages,
  rec,
  str,
  terminating,
  type Condition,
} from './status.ts';
import type { Health } from './types.ts';

export function assessRollout(object: KubeObject): Health {
  const images = podSpecImages(rec(rec(rec(object.spec).template).spec));
  return health({ ...rolloutHealth(object), ...(images.length > 0 ? { attempted: { images } } : {}) });
}

function rolloutHealth(object: KubeObject): Health {
  if (isTerminating(object)) return terminating(object);
  const spec = rec(object.spec);
  const status = rec(object.status);
  const list = conditions(object);
  const progressing = findCondition(list, 'Progressing');
  const waiting = (reason: string, message: string, since = progressSince(progressing)): Health =>
    health({ state: 'progressing', reason, message, since });

  if (object.status === undefined || object.status === null || Object.keys(status).length === 0) {
    return waiting('NotObserved', 'waiting for rollout spec update to be observed');
  }
  if (!generationObserved(object)) return waiting('LatestGenerationNotObserved', 'waiting for rollout spec update to be observed');
  const workloadGeneration = str(rec(metadataOf(object).annotations)['rollout.argoproj.io/workload-generation']);
  if (workloadGeneration !== undefined && workloadGeneration !== str(status.workloadObservedGeneration)) {
    return waiting('WorkloadGenerationNotObserved', 'waiting for rollout spec update to be observed (workloadRef)');
  }
  if (bool(status.controllerPause) && arr(status.pauseConditions).length === 0) {
    return waiting('WaitingForUnpause', 'waiting for rollout to unpause');
  }

  const failure = rolloutFailure(object, list);
  if (failure) return failure;

  const phase = str(status.phase);
  const message = str(status.message) ?? '';
  if (phase === 'Degraded') {
    return health({ state: 'failed', reason: 'Degraded', message: message || 'rollout is degraded', since: conditionSince(progressing), failureClass: 'analysis', terminal: true });
  }
  const pause = pauseState(spec, status, list);
  if (phase === 'Paused' || (phase === undefined && pause)) {
    return pause ?? health({ state: 'suspended', reason: message || 'Paused', message: message || 'rollout is paused' });
  }
  if (phase === 'Progressing') return waiting(progressing?.reason || 'Progressing', message || progressing?.message || 'rollout is progressing');
  if (phase === 'Healthy') return healthyRollout(list);
  if (phase !== undefined) return health({ state: 'unknown', reason: 'UnknownPhase', message: `unknown rollout phase ${JSON.stringify(phase)}` });

  // Before v1.0 there is no status.phase: compute it from replica counts as the controller does.
  const wanted = num(spec.replicas);
  const replicas = num(status.replicas) ?? 0;
  const updated = num(status.updatedReplicas) ?? 0;
  const available = num(status.availableReplicas) ?? 0;
  const currentPodHash = str(status.currentPodHash);
  if (wanted !== undefined && updated < wanted) return waiting('LessUpdated', 'Waiting for roll out to finish: More replicas need to be updated');
  const strategy = rec(spec.strategy);
  const blueGreen = rec(status.blueGreen);
  const activeSelector = str(blueGreen.activeSelector) ?? str(status.activeSelector);
  if (strategy.blueGreen !== undefined) {
    if (available < updated) return waiting('LessAvailable', 'Waiting for roll out to finish: updated replicas are still becoming available');
    if (activeSelector !== undefined && activeSelector !== currentPodHash) return waiting('ActiveServiceCutoverPending', 'active service cutover pending');
    if (replicas > updated) return waiting('OldReplicasPending', 'Waiting for roll out to finish: old replicas are pending termination');
    return healthyRollout(list);
  }
  if (replicas > updated) return waiting('OldReplicasPending', 'Waiting for roll out to finish: old replicas are pending termination');
  if (available < updated) return waiting('LessAvailable', 'Waiting for roll out to finish: updated replicas are still becoming available');
  const stableRS = str(status.stableRS) ?? str(rec(status.canary).stableRS);
  if (stableRS !== undefined && currentPodHash !== undefined && stableRS !== currentPodHash) {
    return waiting('StepsNotComplete', 'waiting for all steps to complete');
  }
  return healthyRollout(list);
}

/**
 * `status.observedGeneration` is a string since v0.10; before that it was a pod-template hash,
 * which may look numeric. As Argo CD's Lua does: a value that is not a number, or is greater than
 * metadata.generation, is a legacy hash and counts as observed.
 */
function generationObserved(object: KubeObject): boolean {
  const gen = generation(object);
  const raw = rec(object.status).observedGeneration;
  const observed = typeof raw === 'string' && !/^\d+$/.test(raw) ? undefined : num(raw);
  if (gen === undefined || observed === undefined || observed > gen) return true;
  return observed === gen;
}

/** InvalidSpec, abort (analysis failed or manual), ProgressDeadlineExceeded: all make the Rollout Degraded. */
function rolloutFailure(object: KubeObject, list: Condition[]): Health | undefined {
  const status = rec(object.status);
  const invalid = list.find((c) => c.type === 'InvalidSpec' && c.status !== 'False');
  if (invalid) {
    return health({ state: 'failed', reason: 'InvalidSpec', message: invalid.message || 'rollout spec is invalid', since: conditionSince(invalid), failureClass: 'analysis', terminal: true });
  }
  const progressing = findCondition(list, 'Progressing');
  if (bool(status.abort) || progressing?.reason === 'RolloutAborted') {
    const analysis = failedAnalysisMessage(status);
    return health({
      state: 'failed',
      reason: 'RolloutAborted',
      message: progressing?.reason === 'RolloutAborted' && progressing.message ? progressing.message : analysis || 'Rollout is aborted',
      since: isoTime(status.abortedAt) ?? conditionSince(progressing),
      failureClass: 'analysis',
      terminal: true,
    });
  }
  if (progressing?.reason === 'ProgressDeadlineExceeded') {
    // Without spec.progressDeadlineAbort the new pods keep receiving their share of traffic.
    const aborts = bool(rec(object.spec).progressDeadlineAbort);
    return health({
      state: 'failed',
      reason: 'ProgressDeadlineExceeded',
      message: (progressing.message || 'rollout exceeded its progress deadline') + (aborts ? '' : ' (not aborted: spec.progressDeadlineAbort is off)'),
      since: conditionSince(progressing),
      failureClass: 'analysis',
      terminal: true,
    });
  }
  return undefined;
}

function failedAnalysisMessage(status: Record<string, unknown>): string | undefined {
  const canary = rec(status.canary);
  const blueGreen = rec(status.blueGreen);
  for (const run of [canary.currentStepAnalysisRunStatus, canary.currentBackgroundAnalysisRunStatus, blueGreen.prePromotionAnalysisRunStatus, blueGreen.postPromotionAnalysisRunStatus]) {
    const r = rec(run);
    const s = str(r.status);
    if (s === 'Failed' || s === 'Error') return `analysis run ${str(r.name) ?? ''} ${s}: ${str(r.message) ?? ''}`.trim();
  }
  return undefined;
}

/** Paused by the user (spec.paused) or by the controller (pause step, inconclusive analysis). */
function pauseState(spec: Record<string, unknown>, status: Record<string, unknown>, list: Condition[]): Health | undefined {
  const pausedCondition = list.find((c) => c.type === 'Paused' && c.status === 'True');
  const pauseConditions = arr(status.pauseConditions).map(rec);
  const first = pauseConditions[0];
  if (first) {
    const reason = str(first.reason) ?? 'Paused';
    return health({ state: 'suspended', reason, message: `Rollout is paused (${reason})`, since: isoTime(first.startTime) ?? conditionSince(pausedCondition) });
  }
  if (bool(spec.paused)) {
    return health({ state: 'suspended', reason: 'ManuallyPaused', message: 'Rollout is paused (spec.paused)', since: isoTime(status.pauseStartTime) ?? conditionSince(pausedCondition) });
  }
  return undefined;
}

function healthyRollout(list: Condition[]): Health {
  const progressing = findCondition(list, 'Progressing');
  const completed = findCondition(list, 'Completed');
  const healthy = findCondition(list, 'Healthy');
  return health({ state: 'healthy', reason: 'Healthy', message: 'rollout is fully promoted', since: latest(progressSince(progressing), conditionSince(completed), conditionSince(healthy)) });
}

function progressSince(c: Condition | undefined): string | undefined {
  return c ? (c.lastUpdateTime ?? c.lastTransitionTime) : undefined;
}

export function assessAnalysisRun(object: KubeObject): Health {
  if (isTerminating(object)) return terminating(object);
  const status = rec(object.status);
  const phase = str(status.phase) ?? 'Pending';
  const message = str(status.message) ?? metricMessage(status) ?? '';
  const startedAt = isoTime(status.startedAt) ?? firstMeasurementTime(status, 'startedAt');
  const finishedAt = lastMeasurementTime(status) ?? startedAt;
  switch (phase) {
    case 'Pending':
    case 'Running':
      return health({ state: 'progressing', reason: phase, message: message || `analysis ${phase.toLowerCase()}`, since: startedAt });
    case 'Successful':
      return health({ state: 'healthy', reason: 'Successful', message: message || 'analysis successful', since: finishedAt });
    case 'Failed':
      return health({ state: 'failed', reason: 'Failed', message: message || 'analysis failed', since: finishedAt, failureClass: 'analysis', terminal: true });
    case 'Error':
      // The metric provider failed: the revision was not judged.
      return health({ state: 'failed', reason: 'Error', message: message || 'analysis errored', since: finishedAt, failureClass: 'promotion', terminal: true });
    case 'Inconclusive':
      // The Rollout pauses for a human to decide.
      return health({ state: 'suspended', reason: 'Inconclusive', message: message || 'analysis inconclusive', since: finishedAt });
    default:
      return health({ state: 'unknown', reason: 'UnknownPhase', message: `unknown analysis phase ${JSON.stringify(phase)}` });
  }
}

function metricMessage(status: Record<string, unknown>): string | undefined {
  for (const m of arr(status.metricResults).map(rec)) {
    const phase = str(m.phase);
    if (phase === 'Failed' || phase === 'Error' || phase === 'Inconclusive') return `metric ${JSON.stringify(str(m.name) ?? '')} ${phase}${str(m.message) ? `: ${str(m.message)}` : ''}`;
  }
  return undefined;
}

function measurementTimes(status: Record<string, unknown>, field: 'startedAt' | 'finishedAt'): string[] {
  const times: string[] = [];
  for (const m of arr(status.metricResults).map(rec)) {
    for (const measurement of arr(m.measurements).map(rec)) {
      const t = isoTime(measurement[field]);
      if (t) times.push(t);
    }
  }
  return times;
}

function firstMeasurementTime(status: Record<string, unknown>, field: 'startedAt' | 'finishedAt'): string | undefined {
  return measurementTimes(status, field).sort()[0];
}

function lastMeasurementTime(status: Record<string, unknown>): string | undefined {
  return latest(...measurementTimes(status, 'finishedAt'));
}

/**
 * Experiment (argoproj.io/v1alpha1). `status.phase` is an AnalysisPhase that "takes into
 * consideration ReplicaSet degradations and AnalysisRun statuses" (argo-rollouts
 * pkg/apis/rollouts/v1alpha1/experiment_types.go). Failed/Error → failed and terminal (a Rollout's
 * experiment step then aborts it); Pending/Running → progressing; Successful → healthy, as Argo CD's
 * resource_customizations/argoproj.io/Experiment/health.lua; Inconclusive → suspended, as for an
 * AnalysisRun (Argo CD's Lua gives no status for it). Without status → progressing.
 */
export function assessExperiment(object: KubeObject): Health {
  const images: string[] = [];
  for (const template of arr(rec(object.spec).templates)) {
    for (const image of podSpecImages(rec(rec(template).template).spec)) if (!images.includes(image)) images.push(image);
  }
  return health({ ...experimentHealth(object), ...(images.length > 0 ? { attempted: { images } } : {}) });
}

function experimentHealth(object: KubeObject): Health {
  if (isTerminating(object)) return terminating(object);
  const status = rec(object.status);
  if (object.status === undefined || object.status === null) {
    return health({ state: 'progressing', reason: 'NotReconciled', message: 'waiting for the experiment status to be reconciled' });
  }
  const phase = str(status.phase) ?? 'Pending';
  const message = str(status.message) ?? experimentCause(status) ?? '';
  const list = conditions(object);
  const since = latest(...list.map((c) => c.lastUpdateTime ?? c.lastTransitionTime), isoTime(status.availableAt));
  switch (phase) {
    case 'Pending':
    case 'Running':
      return health({ state: 'progressing', reason: phase, message: message || `experiment ${phase.toLowerCase()}`, since });
    case 'Successful':
      return health({ state: 'healthy', reason: 'Successful', message: message || 'experiment successful', since });
    case 'Failed':
      return health({ state: 'failed', reason: 'Failed', message: message || 'experiment failed', since, failureClass: 'analysis', terminal: true });
    case 'Error':
      // As for an AnalysisRun: the experiment could not run (a template or a provider broke), the revision was not judged.
      return health({ state: 'failed', reason: 'Error', message: message || 'experiment errored', since, failureClass: 'promotion', terminal: true });
    case 'Inconclusive':
      return health({ state: 'suspended', reason: 'Inconclusive', message: message || 'experiment inconclusive', since });
    default:
      return health({ state: 'unknown', reason: 'UnknownPhase', message: `unknown experiment phase ${JSON.stringify(phase)}` });
  }
}

/** The analysis run or template that did not succeed, for the message. */
function experimentCause(status: Record<string, unknown>): string | undefined {
  for (const run of arr(status.analysisRuns).map(rec)) {
    const phase = str(run.phase);
    if (phase === 'Failed' || phase === 'Error' || phase === 'Inconclusive') return `analysis ${str(run.name) ?? ''} (${str(run.analysisRun) ?? ''}) ${phase}${str(run.message) ? `: ${str(run.message)}` : ''}`;
  }
  for (const template of arr(status.templateStatuses).map(rec)) {
    const s = str(template.status);
    if (s === 'Failed' || s === 'Error') return `template ${str(template.name) ?? ''} ${s}${str(template.message) ? `: ${str(template.message)}` : ''}`;
  }
  return undefined;
}

registerAssessor('argoproj.io/Rollout', assessRollout);
registerAssessor('argoproj.io/Experiment', assessExperiment);
registerAssessor('argoproj.io/AnalysisRun', assessAnalysisRun);
