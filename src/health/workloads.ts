/**
 * Core workloads: apps/Deployment, StatefulSet, DaemonSet, ReplicaSet, core Pod, batch/Job.
 * Rules follow kstatus (`pkg/kstatus/status/core.go`) and Argo CD's gitops-engine health checks
 * (research/failure-signals.md §0 and §6). Only a Deployment has a failure signal of its own
 * (`Progressing=False reason ProgressDeadlineExceeded`); StatefulSet and DaemonSet never fail
 * by themselves, so "stuck" is decide's timer over `since`.
 *
 * For every workload `attempted.images` carries the pod template's images (init containers
 * first): locate matches them against git history to find the commit that introduced them.
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
  generationNotObserved,
  health,
  isTerminating,
  isTrue,
  num,
  podSpecImages,
  rec,
  str,
  terminating,
  type Condition,
} from './status.ts';
import type { Health } from './types.ts';

/** `attempted.images` from `spec.template.spec`, or nothing when the template has no images. */
function templateRevision(object: KubeObject): { attempted?: { images: string[] } } {
  const images = podSpecImages(rec(rec(rec(object.spec).template).spec));
  return images.length > 0 ? { attempted: { images } } : {};
}

function notObserved(object: KubeObject): Health {
  return health({
    state: 'progressing',
    reason: 'LatestGenerationNotObserved',
    message: `generation ${generation(object)} not yet observed by the controller`,
  });
}

/** "When did the current progress last move": a condition's update time, else its transition time. */
function progressSince(c: Condition | undefined): string | undefined {
  return c ? (c.lastUpdateTime ?? c.lastTransitionTime) : undefined;
}

export function assessDeployment(object: KubeObject): Health {
  return health({ ...deploymentHealth(object), ...templateRevision(object) });
}

function deploymentHealth(object: KubeObject): Health {
  if (isTerminating(object)) return terminating(object);
  const spec = rec(object.spec);
  const status = rec(object.status);
  const list = conditions(object);
  const progressing = findCondition(list, 'Progressing');
  if (bool(spec.paused)) {
    return health({ state: 'suspended', reason: 'DeploymentPaused', message: 'deployment is paused', since: progressing?.reason === 'DeploymentPaused' ? conditionSince(progressing) : undefined });
  }
  if (generationNotObserved(object)) return notObserved(object);
  if (progressing?.reason === 'ProgressDeadlineExceeded') {
    return health({
      state: 'failed',
      reason: 'ProgressDeadlineExceeded',
      message: progressing.message || 'deployment exceeded its progress deadline',
      since: conditionSince(progressing),
      failureClass: 'analysis',
      terminal: true,
    });
  }
  const wanted = num(spec.replicas) ?? 1;
  const replicas = num(status.replicas) ?? 0;
  const updated = num(status.updatedReplicas) ?? 0;
  const ready = num(status.readyReplicas) ?? 0;
  const available = num(status.availableReplicas) ?? 0;
  const since = progressSince(progressing);
  const waiting = (reason: string, message: string): Health => health({ state: 'progressing', reason, message, since });
  if (wanted > updated) return waiting('LessUpdated', `${updated} of ${wanted} replicas updated`);
  if (replicas > updated) return waiting('OldReplicasPending', `${replicas - updated} old replicas pending termination`);
  if (updated > available) return waiting('LessAvailable', `${available} of ${updated} updated replicas available`);
  if (wanted > ready) return waiting('LessReady', `${ready} of ${wanted} replicas ready`);
  // Without progressDeadlineSeconds the controller never writes a meaningful Progressing condition.
  const hasDeadline = spec.progressDeadlineSeconds !== undefined && num(spec.progressDeadlineSeconds) !== 2147483647;
  if (hasDeadline && !(isTrue(progressing) && progressing?.reason === 'NewReplicaSetAvailable')) {
    return waiting('ReplicaSetNotAvailable', progressing?.message || 'new replica set not yet available');
  }
  const availableCondition = findCondition(list, 'Available');
  if (!isTrue(availableCondition)) return waiting('DeploymentNotAvailable', availableCondition?.message || 'deployment not available');
  return health({ state: 'healthy', reason: 'NewReplicaSetAvailable', message: `${available} of ${wanted} replicas available`, since });
}

export function assessStatefulSet(object: KubeObject): Health {
  return health({ ...statefulSetHealth(object), ...templateRevision(object) });
}

function statefulSetHealth(object: KubeObject): Health {
  if (isTerminating(object)) return terminating(object);
  if (generationNotObserved(object)) return notObserved(object);
  const spec = rec(object.spec);
  const status = rec(object.status);
  const strategy = rec(spec.updateStrategy);
  if (str(strategy.type) === 'OnDelete') {
    return health({ state: 'healthy', reason: 'OnDelete', message: 'OnDelete strategy: pods are replaced only when deleted' });
  }
  const wanted = num(spec.replicas) ?? 1;
  const replicas = num(status.replicas) ?? 0;
  const ready = num(status.readyReplicas) ?? 0;
  const updated = num(status.updatedReplicas) ?? 0;
  const current = num(status.currentReplicas) ?? 0;
  const partition = num(rec(strategy.rollingUpdate).partition) ?? 0;
  // The alpha Progressing condition (k8s 1.37) when present tells when progress last moved.
  const since = progressSince(findCondition(conditions(object), 'Progressing'));
  const waiting = (reason: string, message: string): Health => health({ state: 'progressing', reason, message, since });
  if (wanted > replicas) return waiting('LessReplicas', `${replicas} of ${wanted} replicas created`);
  if (replicas > wanted) return waiting('ExtraPods', `${replicas - wanted} extra pods pending termination`);
  if (partition > 0) {
    // Pods below the partition stay at the old revision on purpose: currentRevision never catches up.
    if (wanted > ready) return waiting('LessReady', `${ready} of ${wanted} replicas ready`);
    if (updated < wanted - partition) return waiting('LessUpdated', `${updated} of ${wanted - partition} replicas above partition ${partition} updated`);
    return health({ state: 'healthy', reason: 'PartitionRolledOut', message: `partitioned roll out complete (${updated} updated)` });
  }
  const currentRevision = str(status.currentRevision);
  const updateRevision = str(status.updateRevision);
  // Checked before the counts: a roll out stuck on a bad pod says which revision it is stuck on.
  if (updateRevision !== undefined && currentRevision !== updateRevision) {
    return waiting('RevisionMismatch', `rolling out ${updateRevision} (current ${currentRevision ?? 'none'}): ${updated} of ${wanted} updated, ${ready} ready`);
  }
  if (wanted > ready) return waiting('LessReady', `${ready} of ${wanted} replicas ready`);
  if (wanted > current) return waiting('LessCurrent', `${current} of ${wanted} replicas at the current revision`);
  return health({ state: 'healthy', reason: 'RolledOut', message: `${ready} of ${wanted} replicas ready at ${currentRevision ?? 'the current revision'}` });
}

export function assessDaemonSet(object: KubeObject): Health {
  return health({ ...daemonSetHealth(object), ...templateRevision(object) });
}

function daemonSetHealth(object: KubeObject): Health {
  if (isTerminating(object)) return terminating(object);
  const spec = rec(object.spec);
  const status = rec(object.status);
  if (str(rec(spec.updateStrategy).type) === 'OnDelete') {
    return health({ state: 'healthy', reason: 'OnDelete', message: 'OnDelete strategy: pods are replaced only when deleted' });
  }
  if (generationNotObserved(object)) return notObserved(object);
  const desired = num(status.desiredNumberScheduled);
  if (desired === undefined) return health({ state: 'progressing', reason: 'NoDesiredNumber', message: 'status.desiredNumberScheduled not yet set' });
  const counts: [string, string, number][] = [
    ['LessCurrent', 'scheduled', num(status.currentNumberScheduled) ?? 0],
    ['LessUpdated', 'updated', num(status.updatedNumberScheduled) ?? 0],
    ['LessAvailable', 'available', num(status.numberAvailable) ?? 0],
    ['LessReady', 'ready', num(status.numberReady) ?? 0],
  ];
  for (const [reason, what, n] of counts) {
    if (desired > n) return health({ state: 'progressing', reason, message: `${n} of ${desired} pods ${what}` });
  }
  return health({ state: 'healthy', reason: 'RolledOut', message: `${desired} of ${desired} pods available` });
}

export function assessReplicaSet(object: KubeObject): Health {
  return health({ ...replicaSetHealth(object), ...templateRevision(object) });
}

function replicaSetHealth(object: KubeObject): Health {
  if (isTerminating(object)) return terminating(object);
  if (generationNotObserved(object)) return notObserved(object);
  const wanted = num(rec(object.spec).replicas) ?? 1;
  const status = rec(object.status);
  const failure = findCondition(conditions(object), 'ReplicaFailure');
  if (isTrue(failure)) return health({ state: 'progressing', reason: failure?.reason || 'ReplicaFailure', message: failure?.message ?? '', since: conditionSince(failure) });
  const available = num(status.availableReplicas) ?? 0;
  const ready = num(status.readyReplicas) ?? 0;
  if (wanted > ready) return health({ state: 'progressing', reason: 'LessReady', message: `${ready} of ${wanted} replicas ready` });
  if (wanted > available) return health({ state: 'progressing', reason: 'LessAvailable', message: `${available} of ${wanted} replicas available` });
  return health({ state: 'healthy', reason: 'ReplicasAvailable', message: `${available} of ${wanted} replicas available` });
}

/** Container waiting reasons that mean the pod cannot run its image as configured. */
const BROKEN_WAITING_REASONS = new Set([
  'CrashLoopBackOff',
  'ImagePullBackOff',
  'ErrImagePull',
  'ErrImageNeverPull',
  'InvalidImageName',
  'CreateContainerConfigError',
  'CreateContainerError',
  'RunContainerError',
]);

/** kstatus waits this long before calling an unschedulable pod failed. */
const UNSCHEDULABLE_GRACE_MS = 15_000;

export function assessPod(object: KubeObject, now: Date): Health {
  const images = podSpecImages(object.spec);
  return health({ ...podHealth(object, now), ...(images.length > 0 ? { attempted: { images } } : {}) });
}

interface FailingContainer {
  name: string;
  /** the image as the pod spec names it (not the resolved `imageID`): what git holds */
  image?: string;
  reason: string;
  message: string;
}

/**
 * The containers (init containers first) that cannot run their image as configured: waiting with a
 * broken reason, or terminated with a non-zero exit code after restarts (between two CrashLoopBackOff
 * waits), or running unready after such a crash (gitops-engine pkg/health/health_pod.go calls that
 * Degraded). In a pod whose phase is Failed, any non-zero exit counts.
 */
function failingContainers(object: KubeObject, podFailed: boolean): FailingContainer[] {
  const spec = rec(object.spec);
  const status = rec(object.status);
  const specImage = (name: string, list: unknown): string | undefined => str(rec(arr(list).find((c) => str(rec(c).name) === name)).image);
  const out: FailingContainer[] = [];
  for (const [statuses, specList] of [[status.initContainerStatuses, spec.initContainers], [status.containerStatuses, spec.containers]] as const) {
    for (const entry of arr(statuses)) {
      const container = rec(entry);
      const name = str(container.name) ?? 'container';
      const image = specImage(name, specList) ?? str(container.image);
      const state = rec(container.state);
      const restarts = num(container.restartCount) ?? 0;
      const waiting = rec(state.waiting);
      const waitingReason = str(waiting.reason);
      const terminated = rec(state.terminated);
      const lastTerminated = rec(rec(container.lastState).terminated);
      const exitCode = num(terminated.exitCode);
      const lastExitCode = num(lastTerminated.exitCode);
      let failure: Omit<FailingContainer, 'name' | 'image'> | undefined;
      if (waitingReason && BROKEN_WAITING_REASONS.has(waitingReason)) {
        failure = { reason: waitingReason, message: str(waiting.message) ?? waitingReason };
      } else if (exitCode !== undefined && exitCode !== 0 && (restarts > 0 || podFailed)) {
        failure = { reason: str(terminated.reason) ?? 'Error', message: str(terminated.message) ?? `exited with code ${exitCode}${restarts > 0 ? ` after ${restarts} restarts` : ''}` };
      } else if (state.running !== undefined && container.ready !== true && lastExitCode !== undefined && lastExitCode !== 0 && restarts > 0) {
        failure = { reason: str(lastTerminated.reason) ?? 'Error', message: `running again after exiting with code ${lastExitCode} (${restarts} restarts), not ready` };
      }
      if (failure) out.push({ name, ...(image ? { image } : {}), ...failure });
    }
  }
  return out;
}

function podHealth(object: KubeObject, now: Date): Health {
  if (isTerminating(object)) return terminating(object);
  const status = rec(object.status);
  const phase = str(status.phase) ?? 'Pending';
  const list = conditions(object);
  if (phase === 'Succeeded') return health({ state: 'healthy', reason: 'Completed', message: str(status.message) ?? 'pod completed' });
  const failing = failingContainers(object, phase === 'Failed');
  const failingImages = [...new Set(failing.map((c) => c.image).filter((i): i is string => i !== undefined))];
  if (phase === 'Failed') {
    const first = failing[0];
    return health({
      state: 'failed',
      reason: str(status.reason) ?? 'PodFailed',
      message: str(status.message) ?? (first ? `${first.name}: ${first.message}` : 'pod failed'),
      failureClass: 'analysis',
      terminal: true,
      failingImages,
    });
  }
  const first = failing[0];
  if (first) {
    return health({ state: 'failed', reason: first.reason, message: `${first.name}: ${first.message}`, since: podConditionSince(list, 'Ready'), failureClass: 'analysis', failingImages });
  }
  const scheduled = findCondition(list, 'PodScheduled');
  if (phase === 'Pending' && scheduled?.status === 'False' && scheduled.reason === 'Unschedulable') {
    const since = conditionSince(scheduled);
    const age = since ? now.getTime() - Date.parse(since) : Number.POSITIVE_INFINITY;
    if (age > UNSCHEDULABLE_GRACE_MS) {
      // Often capacity (a cluster autoscaler may still add a node): the pod spec may be fine.
      return health({ state: 'failed', reason: 'Unschedulable', message: scheduled.message, since, failureClass: 'promotion' });
    }
    return health({ state: 'progressing', reason: 'Unschedulable', message: scheduled.message, since });
  }
  const ready = findCondition(list, 'Ready');
  if (phase === 'Running' && isTrue(ready)) return health({ state: 'healthy', reason: 'Running', message: 'pod is running and ready', since: conditionSince(ready) });
  return health({ state: 'progressing', reason: ready?.reason || phase, message: ready?.message || `pod is ${phase}`, since: conditionSince(ready) });
}

function podConditionSince(list: Condition[], type: string): string | undefined {
  return conditionSince(findCondition(list, type));
}

export function assessJob(object: KubeObject): Health {
  return health({ ...jobHealth(object), ...templateRevision(object) });
}

function jobHealth(object: KubeObject): Health {
  if (isTerminating(object)) return terminating(object);
  const list = conditions(object);
  const failed = list.find((c) => c.type === 'Failed' && isTrue(c));
  if (failed) {
    return health({ state: 'failed', reason: failed.reason || 'JobFailed', message: failed.message || 'job failed', since: conditionSince(failed), failureClass: 'analysis', terminal: true });
  }
  const complete = list.find((c) => c.type === 'Complete' && isTrue(c));
  if (complete) return health({ state: 'healthy', reason: 'Complete', message: complete.message || 'job completed', since: conditionSince(complete) });
  if (bool(rec(object.spec).suspend)) return health({ state: 'suspended', reason: 'Suspended', message: 'job is suspended' });
  const status = rec(object.status);
  return health({
    state: 'progressing',
    reason: 'JobRunning',
    message: `active ${num(status.active) ?? 0}, succeeded ${num(status.succeeded) ?? 0}, failed ${num(status.failed) ?? 0}`,
    since: str(status.startTime),
  });
}

registerAssessor(['apps/Deployment', 'extensions/Deployment'], assessDeployment);
registerAssessor('apps/StatefulSet', assessStatefulSet);
registerAssessor(['apps/DaemonSet', 'extensions/DaemonSet'], assessDaemonSet);
registerAssessor(['apps/ReplicaSet', 'extensions/ReplicaSet'], assessReplicaSet);
registerAssessor('Pod', assessPod, { usesClock: true });
registerAssessor('batch/Job', assessJob);
