/**
 * Table tests for every assess rule, with builders named after what they build
 * (`canary({ phase: 'Failed', weight: 100 })`). Each row states the Health fields it cares about;
 * `t.like` checks only those, so a row fails when the rule it names changes.
 */
import test from 'ava';
import { assess, parseRevision, registeredKinds, type Health } from '../src/health/index.ts';
import { parseChartVersion, type ChartSuffixSource } from '../src/health/revision.ts';
import type { KubeObject } from '../src/observe/types.ts';

const NOW = new Date('2026-08-25T12:00:00Z');
const T0 = '2026-08-25T10:00:00Z';
const T0_ISO = '2026-08-25T10:00:00.000Z';
const T1 = '2026-08-25T11:00:00Z';
const T1_ISO = '2026-08-25T11:00:00.000Z';
const SHA_A = '4c1e2d3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d';
const SHA_B = '9a3f5c2e1b0d4f6a8c7e9b1d3f5a7c9e2b4d6f80';

type Cond = { type: string; status: string; reason?: string; message?: string; lastTransitionTime?: string; lastUpdateTime?: string; observedGeneration?: number };
const cond = (type: string, status: string, reason = '', message = '', at = T0): Cond => ({ type, status, reason, message, lastTransitionTime: at });

function object(apiVersion: string, kind: string, spec: unknown, status: unknown, metadata: Record<string, unknown> = {}): KubeObject {
  return { apiVersion, kind, metadata: { name: 'app', namespace: 'prod', ...metadata }, ...(spec === undefined ? {} : { spec }), ...(status === undefined ? {} : { status }) } as KubeObject;
}

function podTemplate(images: string[], initImages: string[] = []) {
  return {
    metadata: { labels: { app: 'app' } },
    spec: { initContainers: initImages.map((image, i) => ({ name: `init${i}`, image })), containers: images.map((image, i) => ({ name: `c${i}`, image })) },
  };
}

// ---------- builders ----------

function canary(o: { phase?: string; weight?: number; promotedReason?: string; promotedStatus?: string; updatedAt?: string; transitionedAt?: string; statusTransition?: string }) {
  const reason = o.promotedReason ?? o.phase ?? '';
  const promotedStatus = o.promotedStatus ?? (['Succeeded', 'Initialized'].includes(reason) ? 'True' : reason === 'Failed' ? 'False' : 'Unknown');
  return object('flagger.app/v1beta1', 'Canary', { targetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'app' } }, {
    ...(o.phase !== undefined ? { phase: o.phase } : {}),
    canaryWeight: o.weight ?? 0,
    failedChecks: 0,
    iterations: 0,
    lastTransitionTime: o.statusTransition ?? '2026-08-25T11:59:59Z',
    conditions: [{ type: 'Promoted', status: promotedStatus, reason, message: `canary ${reason}`, lastTransitionTime: o.transitionedAt ?? T0, lastUpdateTime: o.updatedAt ?? T1 }],
  });
}

function rollout(o: {
  phase?: string;
  abort?: boolean;
  conditions?: Cond[];
  generation?: number;
  observedGeneration?: string | number;
  paused?: boolean;
  pauseReason?: string;
  progressDeadlineAbort?: boolean;
  replicas?: number;
  updated?: number;
  available?: number;
  stable?: string;
  current?: string;
  images?: string[];
}) {
  return object(
    'argoproj.io/v1alpha1',
    'Rollout',
    {
      replicas: o.replicas ?? 3,
      ...(o.paused ? { paused: true } : {}),
      ...(o.progressDeadlineAbort ? { progressDeadlineAbort: true } : {}),
      strategy: { canary: { steps: [{ setWeight: 20 }, { pause: {} }] } },
      template: podTemplate(o.images ?? ['ghcr.io/acme/app:2.0.0']),
    },
    {
      ...(o.phase ? { phase: o.phase, message: '' } : {}),
      ...(o.abort ? { abort: true, abortedAt: T1 } : {}),
      observedGeneration: o.observedGeneration ?? String(o.generation ?? 1),
      replicas: o.replicas ?? 3,
      updatedReplicas: o.updated ?? o.replicas ?? 3,
      availableReplicas: o.available ?? o.updated ?? o.replicas ?? 3,
      readyReplicas: o.available ?? o.updated ?? o.replicas ?? 3,
      currentPodHash: o.current ?? 'aaa',
      stableRS: o.stable ?? o.current ?? 'aaa',
      ...(o.pauseReason ? { controllerPause: true, pauseConditions: [{ reason: o.pauseReason, startTime: T0 }] } : {}),
      conditions: o.conditions ?? [],
    },
    { generation: o.generation ?? 1 },
  );
}

function analysisRun(phase: string) {
  return object('argoproj.io/v1alpha1', 'AnalysisRun', { metrics: [] }, { phase, startedAt: T0, metricResults: [{ name: 'success-rate', phase, measurements: [{ phase, startedAt: T0, finishedAt: T1 }] }] });
}

function application(o: {
  health?: string;
  sync?: string;
  revision?: string;
  revisions?: string[];
  operationPhase?: string;
  finishedAt?: string;
  reconciledAt?: string;
  conditions?: Cond[];
  history?: string[];
  automated?: boolean;
  images?: string[];
  syncResultRevision?: string;
}) {
  return object(
    'argoproj.io/v1alpha1',
    'Application',
    { project: 'default', ...(o.automated ? { syncPolicy: { automated: {} } } : {}) },
    {
      ...(o.health ? { health: { status: o.health, lastTransitionTime: T0 } } : {}),
      sync: { status: o.sync ?? 'Synced', ...(o.revision ? { revision: o.revision } : {}), ...(o.revisions ? { revisions: o.revisions } : {}) },
      ...(o.reconciledAt ? { reconciledAt: o.reconciledAt } : {}),
      ...(o.operationPhase
        ? { operationState: { phase: o.operationPhase, message: `sync ${o.operationPhase}`, startedAt: T0, ...(o.finishedAt ? { finishedAt: o.finishedAt } : {}), syncResult: { revision: o.syncResultRevision ?? o.revision } } }
        : {}),
      ...(o.conditions ? { conditions: o.conditions } : {}),
      ...(o.history ? { history: o.history.map((revision, id) => ({ id, revision, deployedAt: T0 })) } : {}),
      ...(o.images ? { summary: { images: o.images } } : {}),
    },
  );
}

function kustomization(o: { attempted?: string; applied?: string; ready?: 'True' | 'False' | 'Unknown'; reason?: string; message?: string; reconciling?: string; stalled?: string; suspend?: boolean; history?: { revision: string; status: string }[]; generation?: number; readyGeneration?: number }) {
  const conditions: Cond[] = [];
  if (o.reconciling) conditions.push(cond('Reconciling', 'True', o.reconciling, 'Reconciliation in progress'));
  if (o.stalled) conditions.push(cond('Stalled', 'True', o.stalled, 'stalled', T1));
  if (o.ready) conditions.push({ ...cond('Ready', o.ready, o.reason ?? (o.ready === 'True' ? 'ReconciliationSucceeded' : o.ready === 'False' ? 'HealthCheckFailed' : 'Progressing'), o.message ?? `ready ${o.ready}`), ...(o.readyGeneration !== undefined ? { observedGeneration: o.readyGeneration } : {}) });
  return object(
    'kustomize.toolkit.fluxcd.io/v1',
    'Kustomization',
    { interval: '5m', path: './apps', ...(o.suspend ? { suspend: true } : {}) },
    {
      ...(o.attempted ? { lastAttemptedRevision: o.attempted } : {}),
      ...(o.applied ? { lastAppliedRevision: o.applied } : {}),
      ...(o.history ? { history: o.history.map((h) => ({ digest: 'sha256:00', lastReconciledStatus: h.status, metadata: { revision: h.revision } })) } : {}),
      conditions,
    },
    { generation: o.generation ?? 1 },
  );
}

function helmRelease(o: {
  ready?: 'True' | 'False' | 'Unknown';
  reason?: string;
  released?: [string, string];
  test?: [string, string];
  remediated?: boolean;
  reconciling?: string;
  stalled?: string;
  attempted?: string;
  attemptedDigest?: string;
  history?: { chart: string; status: string; testFailed?: boolean; ociDigest?: string }[];
  chart?: { chart?: string; version?: string; sourceKind?: string };
  chartRefKind?: string;
}) {
  const conditions: Cond[] = [];
  if (o.stalled) conditions.push(cond('Stalled', 'True', o.stalled, 'Failed to upgrade after 3 attempt(s)', T1));
  if (o.reconciling) conditions.push(cond('Reconciling', 'True', o.reconciling));
  // helm-controller's summarize() copies the Remediated condition into Ready when there is one.
  if (o.ready) conditions.push(cond('Ready', o.ready, o.reason ?? '', o.remediated ? 'rolled back' : `ready ${o.reason}`));
  if (o.released) conditions.push(cond('Released', o.released[0], o.released[1], `released ${o.released[1]}`));
  if (o.test) conditions.push(cond('TestSuccess', o.test[0], o.test[1], `test ${o.test[1]}`));
  if (o.remediated) conditions.push(cond('Remediated', 'True', o.reason === 'UninstallSucceeded' ? 'UninstallSucceeded' : 'RollbackSucceeded', 'rolled back'));
  const spec = {
    interval: '10m',
    ...(o.chart ? { chart: { spec: { ...(o.chart.chart ? { chart: o.chart.chart } : {}), ...(o.chart.version ? { version: o.chart.version } : {}), sourceRef: { kind: o.chart.sourceKind ?? 'HelmRepository', name: 'src' } } } } : {}),
    ...(o.chartRefKind ? { chartRef: { kind: o.chartRefKind, name: 'src' } } : {}),
  };
  return object('helm.toolkit.fluxcd.io/v2', 'HelmRelease', spec, {
    ...(o.attempted ? { lastAttemptedRevision: o.attempted } : {}),
    ...(o.attemptedDigest ? { lastAttemptedRevisionDigest: o.attemptedDigest } : {}),
    ...(o.history
      ? {
          history: o.history.map((h) => ({
            chartName: 'app',
            chartVersion: h.chart,
            status: h.status,
            ...(h.ociDigest ? { ociDigest: h.ociDigest } : {}),
            ...(h.testFailed ? { testHooks: { 't': { phase: 'Failed' } } } : {}),
          })),
        }
      : {}),
    conditions,
  });
}

function promotion(o: { phase: string; steps?: { as: string; uses: string; status?: string; startedAt?: string }[]; state?: Record<string, unknown>; currentStep?: number; images?: string[]; annotations?: Record<string, string> }) {
  const steps = o.steps ?? [];
  return object(
    'kargo.akuity.io/v1alpha1',
    'Promotion',
    { stage: 'prod', freight: 'f1', steps: steps.map((s) => ({ as: s.as, uses: s.uses })) },
    {
      phase: o.phase,
      message: `promotion ${o.phase}`,
      startedAt: T0,
      ...(['Succeeded', 'Failed', 'Errored', 'Aborted'].includes(o.phase) ? { finishedAt: T1 } : {}),
      ...(o.currentStep !== undefined ? { currentStep: o.currentStep } : {}),
      stepExecutionMetadata: steps.filter((s) => s.status).map((s) => ({ alias: s.as, status: s.status, ...(s.startedAt ? { startedAt: s.startedAt } : {}) })),
      ...(o.state ? { state: o.state } : {}),
      ...(o.images ? { freight: { name: 'f1', images: o.images.map((i) => ({ repoURL: i.split(':')[0], tag: i.split(':')[1] })) } } : {}),
    },
    o.annotations ? { annotations: o.annotations } : {},
  );
}

const GIT_STEPS = (pushStatus: string) => [
  { as: 'clone', uses: 'git-clone', status: 'Succeeded' },
  { as: 'commit', uses: 'git-commit', status: 'Succeeded' },
  { as: 'push', uses: 'git-push', status: pushStatus, startedAt: T0 },
];

function stage(o: { conditions: Cond[]; freightHistory?: { id: string; images: string[] }[] }) {
  return object('kargo.akuity.io/v1alpha1', 'Stage', { shard: '' }, {
    conditions: o.conditions,
    ...(o.freightHistory
      ? { freightHistory: o.freightHistory.map((f) => ({ id: f.id, items: { 'Warehouse/w': { name: f.id, images: f.images.map((i) => ({ repoURL: i.split(':')[0], tag: i.split(':')[1] })) } } })) }
      : {}),
  });
}

function deployment(o: { replicas?: number; updated?: number; available?: number; total?: number; progressing?: Cond; available_?: string; paused?: boolean; generation?: number; observedGeneration?: number; images?: string[]; initImages?: string[]; deadline?: boolean }) {
  const replicas = o.replicas ?? 2;
  return object(
    'apps/v1',
    'Deployment',
    { replicas, ...(o.paused ? { paused: true } : {}), ...(o.deadline === false ? {} : { progressDeadlineSeconds: 600 }), template: podTemplate(o.images ?? ['ghcr.io/acme/app:2.0.0'], o.initImages) },
    {
      observedGeneration: o.observedGeneration ?? o.generation ?? 1,
      replicas: o.total ?? replicas,
      updatedReplicas: o.updated ?? replicas,
      readyReplicas: o.available ?? o.updated ?? replicas,
      availableReplicas: o.available ?? o.updated ?? replicas,
      conditions: [
        cond('Available', o.available_ ?? 'True', 'MinimumReplicasAvailable'),
        o.progressing ?? { ...cond('Progressing', 'True', 'NewReplicaSetAvailable', 'ReplicaSet "app-1" has successfully progressed.'), lastUpdateTime: T1 },
      ],
    },
    { generation: o.generation ?? 1 },
  );
}

function statefulSet(o: { onDelete?: boolean; ready?: number; current?: number; updated?: number; currentRevision?: string; updateRevision?: string; partition?: number }) {
  return object(
    'apps/v1',
    'StatefulSet',
    { replicas: 3, updateStrategy: o.onDelete ? { type: 'OnDelete' } : { type: 'RollingUpdate', ...(o.partition ? { rollingUpdate: { partition: o.partition } } : {}) }, template: podTemplate(['ghcr.io/acme/db:2']) },
    { observedGeneration: 1, replicas: 3, readyReplicas: o.ready ?? 3, currentReplicas: o.current ?? 3, updatedReplicas: o.updated ?? 3, currentRevision: o.currentRevision ?? 'db-1', updateRevision: o.updateRevision ?? 'db-1' },
    { generation: 1 },
  );
}

function daemonSet(o: { onDelete?: boolean; desired?: number; updated?: number; available?: number }) {
  const desired = o.desired ?? 3;
  return object(
    'apps/v1',
    'DaemonSet',
    { updateStrategy: { type: o.onDelete ? 'OnDelete' : 'RollingUpdate' }, template: podTemplate(['ghcr.io/acme/agent:1']) },
    { observedGeneration: 1, desiredNumberScheduled: desired, currentNumberScheduled: desired, updatedNumberScheduled: o.updated ?? desired, numberAvailable: o.available ?? desired, numberReady: o.available ?? desired },
    { generation: 1 },
  );
}

function pod(o: { phase?: string; waiting?: string; ready?: boolean; unschedulableSince?: string; exitCode?: number; lastExitCode?: number; restarts?: number; initWaiting?: string }) {
  const state = o.waiting
    ? { waiting: { reason: o.waiting, message: `${o.waiting} message` } }
    : o.exitCode !== undefined
      ? { terminated: { exitCode: o.exitCode, reason: o.exitCode === 0 ? 'Completed' : 'Error', startedAt: T0, finishedAt: T1 } }
      : { running: { startedAt: T0 } };
  return object('v1', 'Pod', { initContainers: [{ name: 'init', image: 'busybox:1' }], containers: [{ name: 'app', image: 'ghcr.io/acme/app:2.0.0' }] }, {
    phase: o.phase ?? 'Running',
    conditions: [
      ...(o.unschedulableSince ? [cond('PodScheduled', 'False', 'Unschedulable', '0/3 nodes are available: 3 Insufficient cpu.', o.unschedulableSince)] : []),
      cond('Ready', o.ready ? 'True' : 'False', o.ready ? '' : 'ContainersNotReady'),
    ],
    ...(o.initWaiting ? { initContainerStatuses: [{ name: 'init', image: 'docker.io/library/busybox:1', ready: false, restartCount: 5, state: { waiting: { reason: o.initWaiting } } }] } : {}),
    containerStatuses: [
      {
        name: 'app',
        // the runtime's resolved name: failingImages must name the spec image instead
        image: 'ghcr.io/acme/app@sha256:0000000000000000000000000000000000000000000000000000000000000000',
        ready: !!o.ready,
        restartCount: o.restarts ?? 3,
        state,
        ...(o.lastExitCode !== undefined ? { lastState: { terminated: { exitCode: o.lastExitCode, reason: 'Error' } } } : {}),
      },
    ],
  });
}

function experiment(phase: string | undefined, extra: Record<string, unknown> = {}) {
  return object(
    'argoproj.io/v1alpha1',
    'Experiment',
    { templates: [{ name: 'canary', template: podTemplate(['ghcr.io/acme/app:2.0.0']) }] },
    phase === undefined ? undefined : { phase, conditions: [{ ...cond('Progressing', 'True', 'NewReplicaSetAvailable'), lastUpdateTime: T1 }], ...extra },
  );
}

function job(o: { failed?: boolean; complete?: boolean; suspend?: boolean }) {
  return object('batch/v1', 'Job', { ...(o.suspend ? { suspend: true } : {}), template: podTemplate(['ghcr.io/acme/migrate:3']) }, {
    startTime: T0,
    conditions: [...(o.failed ? [cond('Failed', 'True', 'BackoffLimitExceeded', 'Job has reached the specified backoff limit', T1)] : []), ...(o.complete ? [cond('Complete', 'True', '', '', T1)] : [])],
  });
}

// ---------- the table ----------

// Expected values are partial all the way down (t.like), so nested objects need not be whole Health fields.
type Row = [name: string, object: KubeObject, expected: { [K in keyof Health]?: unknown } & Record<string, unknown>];

const rows: Row[] = [
  // Flagger Canary
  ...['Initializing', 'Waiting', 'Progressing', 'WaitingPromotion', 'Promoting', 'Finalising', 'Terminating'].map(
    (phase): Row => [`canary ${phase} is progressing since the Promoted condition's lastUpdateTime`, canary({ phase }), { state: 'progressing', reason: phase, since: T1_ISO }],
  ),
  ['canary Succeeded is healthy', canary({ phase: 'Succeeded' }), { state: 'healthy', reason: 'Succeeded', since: T1_ISO }],
  ['canary Initialized is healthy', canary({ phase: 'Initialized' }), { state: 'healthy', reason: 'Initialized' }],
  ['canary Terminated is unknown', canary({ phase: 'Terminated' }), { state: 'unknown', reason: 'Terminated' }],
  ['canary Failed at weight 0 is an analysis failure', canary({ phase: 'Failed', weight: 0 }), { state: 'failed', reason: 'Failed', failureClass: 'analysis', terminal: true, since: T1_ISO }],
  [
    'canary Failed at weight 100 (Flagger 1.44) is a promotion failure with the revert hazard',
    canary({ phase: 'Failed', weight: 100 }),
    { state: 'failed', reason: 'PromotionFailed', failureClass: 'promotion', terminal: true, revertHazard: { kind: 'flagger-promotion-failure' } },
  ],
  ['canary Failed at any weight above 0 is a promotion failure (rollback() always records 0)', canary({ phase: 'Failed', weight: 50 }), { state: 'failed', reason: 'PromotionFailed', failureClass: 'promotion' }],
  ['canary Failed at weight 0 has no revert hazard', canary({ phase: 'Failed', weight: 0 }), { state: 'failed', revertHazard: undefined }],
  ['canary Failed while the condition names Promoting is a promotion failure', canary({ phase: 'Failed', promotedReason: 'Promoting', promotedStatus: 'False' }), { state: 'failed', failureClass: 'promotion' }],
  ['canary Failed while the condition names Finalising is a promotion failure', canary({ phase: 'Failed', promotedReason: 'Finalising', promotedStatus: 'False' }), { state: 'failed', failureClass: 'promotion' }],
  ['canary since ignores status.lastTransitionTime', canary({ phase: 'Promoting', updatedAt: '2026-08-20T10:00:00Z', statusTransition: '2026-08-25T11:59:00Z' }), { since: '2026-08-20T10:00:00.000Z' }],
  ['canary without phase takes it from the Promoted reason', canary({ promotedReason: 'Succeeded' }), { state: 'healthy', reason: 'Succeeded' }],
  ['canary without status is progressing', object('flagger.app/v1beta1', 'Canary', {}, undefined), { state: 'progressing', reason: 'Pending' }],

  // Argo Rollouts Rollout
  ['rollout phase Healthy is healthy, with the template images', rollout({ phase: 'Healthy' }), { state: 'healthy', attempted: { images: ['ghcr.io/acme/app:2.0.0'] } }],
  ['rollout phase Progressing is progressing', rollout({ phase: 'Progressing', updated: 1 }), { state: 'progressing' }],
  ['rollout phase Paused is suspended', rollout({ phase: 'Paused', pauseReason: 'CanaryPauseStep' }), { state: 'suspended', reason: 'CanaryPauseStep', since: T0_ISO }],
  ['rollout paused on an inconclusive analysis is suspended', rollout({ pauseReason: 'InconclusiveAnalysisRun', updated: 1 }), { state: 'suspended', reason: 'InconclusiveAnalysisRun' }],
  ['rollout spec.paused is suspended', rollout({ paused: true, updated: 1 }), { state: 'suspended', reason: 'ManuallyPaused' }],
  ['rollout phase Degraded is failed', rollout({ phase: 'Degraded' }), { state: 'failed', reason: 'Degraded', failureClass: 'analysis' }],
  [
    'rollout abort is a terminal analysis failure since abortedAt',
    rollout({ phase: 'Degraded', abort: true, conditions: [cond('Progressing', 'False', 'RolloutAborted', 'Rollout aborted update to revision 2: metric "success-rate" assessed Failed')] }),
    { state: 'failed', reason: 'RolloutAborted', failureClass: 'analysis', terminal: true, since: T1_ISO, message: 'Rollout aborted update to revision 2: metric "success-rate" assessed Failed' },
  ],
  ['rollout InvalidSpec is failed', rollout({ conditions: [cond('InvalidSpec', 'True', 'InvalidSpec', 'The Rollout "app" is invalid')] }), { state: 'failed', reason: 'InvalidSpec', terminal: true }],
  [
    'rollout ProgressDeadlineExceeded without progressDeadlineAbort is failed, and says it is not aborted',
    rollout({ conditions: [cond('Progressing', 'False', 'ProgressDeadlineExceeded', 'ReplicaSet "app-2" has timed out progressing.')], updated: 1 }),
    { state: 'failed', reason: 'ProgressDeadlineExceeded', terminal: true, message: 'ReplicaSet "app-2" has timed out progressing. (not aborted: spec.progressDeadlineAbort is off)' },
  ],
  [
    'rollout ProgressDeadlineExceeded with progressDeadlineAbort is failed',
    rollout({ progressDeadlineAbort: true, conditions: [cond('Progressing', 'False', 'ProgressDeadlineExceeded', 'ReplicaSet "app-2" has timed out progressing.')] }),
    { state: 'failed', reason: 'ProgressDeadlineExceeded', message: 'ReplicaSet "app-2" has timed out progressing.' },
  ],
  ['rollout observedGeneration "1" (string) behind generation 2 is progressing', rollout({ phase: 'Healthy', generation: 2, observedGeneration: '1' }), { state: 'progressing', reason: 'LatestGenerationNotObserved' }],
  ['rollout observedGeneration 1 (number) behind generation 2 is progressing', rollout({ phase: 'Healthy', generation: 2, observedGeneration: 1 }), { state: 'progressing', reason: 'LatestGenerationNotObserved' }],
  ['rollout legacy hash observedGeneration counts as observed', rollout({ phase: 'Healthy', generation: 2, observedGeneration: '7d84d44bb8' }), { state: 'healthy' }],
  ['rollout without phase: stable != current is waiting for steps', rollout({ current: 'bbb', stable: 'aaa' }), { state: 'progressing', reason: 'StepsNotComplete' }],
  ['rollout without phase: fewer updated replicas is progressing', rollout({ updated: 1 }), { state: 'progressing', reason: 'LessUpdated' }],
  ['rollout without phase, all promoted, is healthy', rollout({}), { state: 'healthy' }],
  ['rollout without status is progressing', object('argoproj.io/v1alpha1', 'Rollout', { replicas: 1 }, undefined, { generation: 1 }), { state: 'progressing', reason: 'NotObserved' }],

  // AnalysisRun
  ['analysis run Running is progressing', analysisRun('Running'), { state: 'progressing', since: T0_ISO }],
  ['analysis run Successful is healthy', analysisRun('Successful'), { state: 'healthy', since: T1_ISO }],
  ['analysis run Failed is an analysis failure', analysisRun('Failed'), { state: 'failed', failureClass: 'analysis', terminal: true }],
  ['analysis run Error is a promotion failure (the provider broke)', analysisRun('Error'), { state: 'failed', failureClass: 'promotion' }],
  ['analysis run Inconclusive is suspended', analysisRun('Inconclusive'), { state: 'suspended' }],

  // Argo Rollouts Experiment
  ['experiment Failed is a terminal analysis failure', experiment('Failed'), { state: 'failed', reason: 'Failed', failureClass: 'analysis', terminal: true, since: T1_ISO, attempted: { images: ['ghcr.io/acme/app:2.0.0'] } }],
  ['experiment Error is a terminal promotion failure', experiment('Error', { message: 'AnalysisTemplate verification failed' }), { state: 'failed', reason: 'Error', failureClass: 'promotion', terminal: true, message: 'AnalysisTemplate verification failed' }],
  ['experiment Running is progressing', experiment('Running'), { state: 'progressing', reason: 'Running' }],
  ['experiment Pending is progressing', experiment('Pending'), { state: 'progressing', reason: 'Pending' }],
  ['experiment Successful is healthy', experiment('Successful'), { state: 'healthy', reason: 'Successful' }],
  ['experiment Inconclusive is suspended', experiment('Inconclusive'), { state: 'suspended', reason: 'Inconclusive' }],
  ['experiment without status is progressing', experiment(undefined), { state: 'progressing', reason: 'NotReconciled' }],
  [
    'experiment Failed names the failed analysis',
    experiment('Failed', { analysisRuns: [{ name: 'success-rate', analysisRun: 'exp-1-success-rate', phase: 'Failed', message: 'metric "error-rate" assessed Failed' }] }),
    { message: 'analysis success-rate (exp-1-success-rate) Failed: metric "error-rate" assessed Failed' },
  ],

  // Argo CD Application
  ['application Healthy is healthy', application({ health: 'Healthy', revision: SHA_A }), { state: 'healthy', attempted: { sha: SHA_A } }],
  ['application Progressing is progressing', application({ health: 'Progressing' }), { state: 'progressing', since: T0_ISO }],
  ['application Suspended is suspended', application({ health: 'Suspended' }), { state: 'suspended' }],
  ['application Degraded is an analysis failure', application({ health: 'Degraded' }), { state: 'failed', reason: 'Degraded', failureClass: 'analysis' }],
  ['application Missing is progressing', application({ health: 'Missing' }), { state: 'progressing', reason: 'Missing' }],
  ['application Unknown is unknown', application({ health: 'Unknown' }), { state: 'unknown' }],
  ['application with a running sync is progressing', application({ health: 'Healthy', operationPhase: 'Running' }), { state: 'progressing', reason: 'SyncRunning', since: T0_ISO }],
  [
    'application sync Failed is a terminal analysis failure at the synced revision; the newest history entry is the last success',
    application({ health: 'Healthy', operationPhase: 'Failed', finishedAt: T1, revision: SHA_B, history: [SHA_A] }),
    { state: 'failed', reason: 'SyncFailed', failureClass: 'analysis', terminal: true, since: T1_ISO, attempted: { sha: SHA_B }, lastSucceeded: { sha: SHA_A } },
  ],
  [
    'application re-sync of a revision that synced before failed: that revision is the last success too (history records only successful syncs)',
    application({ health: 'Healthy', operationPhase: 'Failed', finishedAt: T1, revision: SHA_B, history: [SHA_A, SHA_B] }),
    { state: 'failed', reason: 'SyncFailed', attempted: { sha: SHA_B }, lastSucceeded: { sha: SHA_B } },
  ],
  ['application sync Error is terminal', application({ health: 'Healthy', operationPhase: 'Error', finishedAt: T1 }), { state: 'failed', reason: 'SyncError', terminal: true }],
  ['application sync Error is a promotion failure', application({ health: 'Healthy', operationPhase: 'Error', finishedAt: T1 }), { state: 'failed', reason: 'SyncError', failureClass: 'promotion' }],
  [
    'application health older than the last sync is not yet trusted',
    application({ health: 'Healthy', operationPhase: 'Succeeded', finishedAt: T1, reconciledAt: T0 }),
    { state: 'progressing', reason: 'HealthNotYetAssessed', since: T1_ISO },
  ],
  ['application health reconciled after the last sync is trusted', application({ health: 'Degraded', operationPhase: 'Succeeded', finishedAt: T0, reconciledAt: T1 }), { state: 'failed', reason: 'Degraded' }],
  ['application ComparisonError is failed', application({ health: 'Healthy', conditions: [cond('ComparisonError', 'True', '', 'rpc error: repository not found')] }), { state: 'failed', reason: 'ComparisonError', failureClass: 'promotion' }],
  [
    'application Healthy but OutOfSync with auto-sync switched off (automated.enabled: false) is healthy',
    { ...application({ health: 'Healthy', sync: 'OutOfSync' }), spec: { syncPolicy: { automated: { enabled: false } } } } as KubeObject,
    { state: 'healthy' },
  ],
  ['application Healthy but OutOfSync with auto-sync is progressing', application({ health: 'Healthy', sync: 'OutOfSync', automated: true }), { state: 'progressing', reason: 'OutOfSync' }],
  [
    'application multi-source revisions become per-source revisions',
    application({ health: 'Healthy', revisions: [SHA_A.toUpperCase(), '1.15.0'], images: ['ghcr.io/acme/app:2'] }),
    { attempted: { sha: SHA_A, sources: [{ raw: SHA_A.toUpperCase(), sha: SHA_A }, { raw: '1.15.0', chart: '1.15.0' }], images: ['ghcr.io/acme/app:2'] } },
  ],
  ['application Degraded skips the failing revision in history for lastSucceeded', application({ health: 'Degraded', revision: SHA_B, history: [SHA_A, SHA_B] }), { lastSucceeded: { sha: SHA_A } }],

  // Flux Kustomization
  [
    'kustomization Ready=True is healthy with both revisions',
    kustomization({ ready: 'True', attempted: `main@sha1:${SHA_B}`, applied: `main@sha1:${SHA_B}` }),
    { state: 'healthy', since: T0_ISO, attempted: { sha: SHA_B, ref: 'main' }, lastSucceeded: { sha: SHA_B } },
  ],
  ['kustomization Ready=Unknown + Reconciling is progressing', kustomization({ ready: 'Unknown', reconciling: 'Progressing' }), { state: 'progressing', reason: 'Progressing' }],
  [
    'kustomization HealthCheckFailed with ProgressingWithRetry is a terminal analysis failure',
    kustomization({ ready: 'False', reason: 'HealthCheckFailed', reconciling: 'ProgressingWithRetry', attempted: `main@sha1:${SHA_B}`, applied: `main@sha1:${SHA_A}` }),
    { state: 'failed', reason: 'HealthCheckFailed', failureClass: 'analysis', terminal: true, attempted: { sha: SHA_B }, lastSucceeded: { sha: SHA_A } },
  ],
  ['kustomization BuildFailed is a terminal analysis failure', kustomization({ ready: 'False', reason: 'BuildFailed' }), { state: 'failed', failureClass: 'analysis', terminal: true }],
  ['kustomization legacy ValidationFailed is a terminal analysis failure', kustomization({ ready: 'False', reason: 'ValidationFailed' }), { state: 'failed', failureClass: 'analysis', terminal: true }],
  [
    'kustomization ArtifactFailed "kustomization path not found" is terminal (no retry of that revision and spec changes it), class promotion',
    kustomization({ ready: 'False', reason: 'ArtifactFailed', message: 'kustomization path not found: stat /tmp/kustomization-1464362706/invalid: no such file or directory' }),
    { state: 'failed', failureClass: 'promotion', terminal: true },
  ],
  [
    'kustomization ArtifactFailed for a missing source artifact is a non-terminal promotion failure (the controller requeues; it heals)',
    kustomization({ ready: 'False', reason: 'ArtifactFailed', message: 'Source artifact not found, retrying in 30s' }),
    { state: 'failed', failureClass: 'promotion', terminal: false },
  ],
  ['kustomization DependencyNotReady is progressing', kustomization({ ready: 'False', reason: 'DependencyNotReady' }), { state: 'progressing' }],
  ['kustomization Stalled is terminal', kustomization({ ready: 'False', reason: 'InvalidCELExpression', stalled: 'InvalidCELExpression' }), { state: 'failed', reason: 'InvalidCELExpression', terminal: true, since: T1_ISO }],
  ['kustomization suspended', kustomization({ ready: 'True', suspend: true }), { state: 'suspended' }],
  ['kustomization Ready=True for an older generation is progressing', kustomization({ ready: 'True', generation: 3, readyGeneration: 2 }), { state: 'progressing', reason: 'LatestGenerationNotObserved' }],
  [
    'kustomization without lastAppliedRevision takes the last success from history',
    kustomization({ ready: 'False', attempted: `main@sha1:${SHA_B}`, history: [{ revision: `main@sha1:${SHA_B}`, status: 'HealthCheckFailed' }, { revision: `main@sha1:${SHA_A}`, status: 'ReconciliationSucceeded' }] }),
    { lastSucceeded: { sha: SHA_A } },
  ],
  ['kustomization legacy main/<sha> revisions', kustomization({ ready: 'True', applied: `main/${SHA_A}` }), { lastSucceeded: { ref: 'main', sha: SHA_A } }],
  ['kustomization without conditions is progressing', kustomization({}), { state: 'progressing' }],

  // Flux HelmRelease
  ['helm release Ready=True is healthy', helmRelease({ ready: 'True', reason: 'UpgradeSucceeded', attempted: '6.6.0', history: [{ chart: '6.6.0', status: 'deployed' }] }), { state: 'healthy', attempted: { chart: '6.6.0' }, lastSucceeded: { chart: '6.6.0' } }],
  ['helm release InstallFailed retrying is failed, not terminal', helmRelease({ ready: 'False', reason: 'InstallFailed', reconciling: 'ProgressingWithRetry' }), { state: 'failed', reason: 'InstallFailed', terminal: false }],
  [
    'helm release rolled back names the failed upgrade and is terminal once no retry is pending',
    helmRelease({ ready: 'False', reason: 'RollbackSucceeded', released: ['False', 'UpgradeFailed'], remediated: true }),
    { state: 'failed', reason: 'RollbackSucceeded', failureClass: 'analysis', terminal: true, message: 'rolled back; UpgradeFailed: released UpgradeFailed' },
  ],
  [
    'helm release uninstalled after a failed install is a terminal failure',
    helmRelease({ ready: 'False', reason: 'UninstallSucceeded', released: ['False', 'InstallFailed'], remediated: true }),
    { state: 'failed', reason: 'UninstallSucceeded', terminal: true },
  ],
  [
    'helm release rolled back with remediation retries left (Reconciling ProgressingWithRetry) is failed, not terminal: helm-controller upgrades again',
    helmRelease({ ready: 'False', reason: 'RollbackSucceeded', released: ['False', 'UpgradeFailed'], remediated: true, reconciling: 'ProgressingWithRetry' }),
    { state: 'failed', reason: 'RollbackSucceeded', terminal: false },
  ],
  [
    'helm release chart built from a GitRepository: the +<12 hex> build suffix is the commit, chart and chartName kept',
    helmRelease({
      ready: 'False',
      reason: 'UpgradeFailed',
      attempted: '6.6.0+9F8E7D6C5B4A',
      chart: { chart: 'podinfo', sourceKind: 'GitRepository' },
      history: [{ chart: '6.6.0+9f8e7d6c5b4a', status: 'failed' }, { chart: '6.5.4+1a2b3c4d5e6f.3', status: 'superseded' }],
    }),
    {
      attempted: { raw: '6.6.0+9F8E7D6C5B4A', chart: '6.6.0', chartName: 'podinfo', sha: '9f8e7d6c5b4a' },
      lastSucceeded: { raw: '6.5.4+1a2b3c4d5e6f.3', chart: '6.5.4', chartName: 'app', sha: '1a2b3c4d5e6f' },
    },
  ],
  [
    'helm release from an OCIRepository: the build suffix is a digest, not a commit',
    helmRelease({ ready: 'True', reason: 'UpgradeSucceeded', attempted: '6.6.1+0cc9a8446c95', attemptedDigest: 'sha256:0cc9a8446c95009ef382f5eade883a67c257f77d50f84e78ecef2aac9428d1e5', chartRefKind: 'OCIRepository' }),
    { attempted: { raw: '6.6.1+0cc9a8446c95', chart: '6.6.1', sha: undefined } },
  ],
  [
    'helm release history entry with an ociDigest: its suffix is not a commit, whatever the source',
    helmRelease({ ready: 'True', reason: 'UpgradeSucceeded', history: [{ chart: '6.6.0+cdd538a0167e', status: 'deployed', ociDigest: 'sha256:cdd538a0167e4b51152b71a477e51eb6737553510ce8797dbcc537e1342311bb' }] }),
    { lastSucceeded: { chart: '6.6.0', sha: undefined } },
  ],
  [
    'helm release without lastAttemptedRevision attempts the exact spec version; a range is not a revision',
    helmRelease({ ready: 'Unknown', reason: 'Progressing', reconciling: 'Progressing', chart: { chart: 'podinfo', version: '6.7.0' } }),
    { attempted: { raw: '6.7.0', chart: '6.7.0', chartName: 'podinfo' } },
  ],
  ['helm release with a version range and no attempt has no attempted revision', helmRelease({ ready: 'Unknown', reason: 'Progressing', chart: { chart: 'podinfo', version: '6.5.*' } }), { attempted: undefined }],
  ['helm release TestFailed is an analysis failure', helmRelease({ ready: 'False', reason: 'TestFailed', test: ['False', 'TestFailed'] }), { state: 'failed', failureClass: 'analysis' }],
  [
    'helm release Stalled RetriesExceeded is terminal; the last success skips failed and test-failed releases',
    helmRelease({
      stalled: 'RetriesExceeded',
      ready: 'False',
      reason: 'UpgradeFailed',
      attempted: '6.6.0',
      history: [{ chart: '6.6.0', status: 'failed' }, { chart: '6.5.5', status: 'superseded', testFailed: true }, { chart: '6.5.4', status: 'superseded' }],
    }),
    { state: 'failed', reason: 'RetriesExceeded', terminal: true, attempted: { chart: '6.6.0' }, lastSucceeded: { chart: '6.5.4' } },
  ],
  ['helm release running an upgrade is progressing', helmRelease({ ready: 'Unknown', reason: 'Progressing', reconciling: 'Progressing' }), { state: 'progressing' }],

  // Kargo Promotion
  ['promotion Pending is progressing', promotion({ phase: 'Pending' }), { state: 'progressing', reason: 'Pending' }],
  [
    'promotion Running names the running step and its start time',
    promotion({ phase: 'Running', currentStep: 2, steps: GIT_STEPS('Running').map((s) => (s.as === 'push' ? { ...s, startedAt: T1 } : s)) }),
    { state: 'progressing', message: 'running step push (git-push): promotion Running', since: T1_ISO },
  ],
  ['promotion Succeeded is healthy, with the pushed commit', promotion({ phase: 'Succeeded', steps: GIT_STEPS('Succeeded'), state: { commit: { commit: SHA_B }, push: { commit: SHA_B.toUpperCase(), branch: 'main' } } }), { state: 'healthy', attempted: { sha: SHA_B, ref: 'main' } }],
  ['promotion Failed is a terminal analysis failure', promotion({ phase: 'Failed', steps: [{ as: 'step-1', uses: 'fail', status: 'Failed' }] }), { state: 'failed', reason: 'Failed', failureClass: 'analysis', terminal: true, since: T1_ISO }],
  ['promotion Errored is a terminal promotion failure', promotion({ phase: 'Errored', steps: GIT_STEPS('Errored') }), { state: 'failed', reason: 'Errored', failureClass: 'promotion', terminal: true }],
  [
    'promotion whose push errored has no commit to revert (the local commit never reached the repo)',
    promotion({ phase: 'Errored', steps: GIT_STEPS('Errored'), state: { commit: { commit: SHA_B } } }),
    { state: 'failed', attempted: undefined },
  ],
  ['promotion Aborted is unknown', promotion({ phase: 'Aborted' }), { state: 'unknown', reason: 'Aborted' }],
  [
    'promotion annotated kargo.akuity.io/rollback is the engine rollback (revert hazard)',
    promotion({ phase: 'Failed', steps: [{ as: 'step-1', uses: 'fail', status: 'Failed' }], annotations: { 'kargo.akuity.io/rollback': 'true' } }),
    { state: 'failed', revertHazard: { kind: 'engine-rollback' } },
  ],
  ['promotion with kargo.akuity.io/rollback other than "true" is not a rollback', promotion({ phase: 'Running', annotations: { 'kargo.akuity.io/rollback': 'false' } }), { state: 'progressing', revertHazard: undefined }],
  ['promotion freight images are attempted images', promotion({ phase: 'Running', images: ['ghcr.io/acme/app:2.0.0'] }), { attempted: { images: ['ghcr.io/acme/app:2.0.0'] } }],

  // Kargo Stage
  ['stage Ready=True is healthy; freightHistory[0] is the last success', stage({ conditions: [cond('Ready', 'True', 'Ready')], freightHistory: [{ id: 'fc2', images: ['ghcr.io/acme/app:2'] }, { id: 'fc1', images: ['ghcr.io/acme/app:1'] }] }), { state: 'healthy', lastSucceeded: { raw: 'fc2', images: ['ghcr.io/acme/app:2'] } }],
  ['stage promoting is progressing', stage({ conditions: [cond('Promoting', 'True', 'ActivePromotion'), cond('Ready', 'False', 'ActivePromotion')] }), { state: 'progressing', reason: 'ActivePromotion' }],
  ['stage after a failed promotion is an analysis failure', stage({ conditions: [cond('Ready', 'False', 'LastPromotionFailed', 'failed: Always fails')] }), { state: 'failed', failureClass: 'analysis', terminal: true }],
  ['stage after an errored promotion is a promotion failure', stage({ conditions: [cond('Ready', 'False', 'LastPromotionErrored')] }), { state: 'failed', failureClass: 'promotion' }],
  ['stage verification failed is an analysis failure', stage({ conditions: [cond('Ready', 'False', 'VerificationFailed'), cond('Verified', 'False', 'VerificationFailed')] }), { state: 'failed', reason: 'VerificationFailed', failureClass: 'analysis' }],
  ['stage unhealthy is failed', stage({ conditions: [cond('Ready', 'False', 'Unhealthy'), cond('Healthy', 'False', 'Unhealthy')] }), { state: 'failed', reason: 'Unhealthy' }],
  ['stage pending verification is progressing', stage({ conditions: [cond('Ready', 'False', 'PendingVerification'), cond('Verified', 'Unknown', 'VerificationPending')] }), { state: 'progressing' }],

  // apps/Deployment
  ['deployment rolled out is healthy with its images (init first)', deployment({ images: ['ghcr.io/acme/app:2.0.0', 'envoy:1'], initImages: ['busybox:1'] }), { state: 'healthy', since: T1_ISO, attempted: { images: ['busybox:1', 'ghcr.io/acme/app:2.0.0', 'envoy:1'] } }],
  [
    'deployment ProgressDeadlineExceeded is a terminal analysis failure',
    deployment({ updated: 1, available: 0, progressing: cond('Progressing', 'False', 'ProgressDeadlineExceeded', 'ReplicaSet "app-2" has timed out progressing.', T1) }),
    { state: 'failed', reason: 'ProgressDeadlineExceeded', failureClass: 'analysis', terminal: true, since: T1_ISO },
  ],
  ['deployment paused is suspended', deployment({ paused: true }), { state: 'suspended' }],
  ['deployment with a new generation is progressing', deployment({ generation: 2, observedGeneration: 1 }), { state: 'progressing', reason: 'LatestGenerationNotObserved' }],
  ['deployment updating is progressing', deployment({ updated: 1, progressing: cond('Progressing', 'True', 'ReplicaSetUpdated') }), { state: 'progressing', reason: 'LessUpdated' }],
  ['deployment with old pods terminating is progressing', deployment({ total: 3 }), { state: 'progressing', reason: 'OldReplicasPending' }],
  ['deployment not Available is progressing', deployment({ available_: 'False', deadline: false }), { state: 'progressing', reason: 'DeploymentNotAvailable' }],

  // StatefulSet, DaemonSet, ReplicaSet
  ['statefulset rolled out is healthy', statefulSet({}), { state: 'healthy', attempted: { images: ['ghcr.io/acme/db:2'] } }],
  ['statefulset OnDelete is healthy', statefulSet({ onDelete: true, current: 0 }), { state: 'healthy', reason: 'OnDelete' }],
  ['statefulset stuck on a revision mismatch is progressing', statefulSet({ updateRevision: 'db-2', updated: 1 }), { state: 'progressing', reason: 'RevisionMismatch' }],
  ['statefulset short of ready is progressing', statefulSet({ ready: 2 }), { state: 'progressing', reason: 'LessReady' }],
  ['statefulset partitioned roll out done is healthy', statefulSet({ partition: 2, updated: 1, updateRevision: 'db-2' }), { state: 'healthy', reason: 'PartitionRolledOut' }],
  ['daemonset rolled out is healthy', daemonSet({}), { state: 'healthy', attempted: { images: ['ghcr.io/acme/agent:1'] } }],
  ['daemonset updating is progressing', daemonSet({ updated: 1 }), { state: 'progressing', reason: 'LessUpdated' }],
  ['daemonset OnDelete is healthy', daemonSet({ onDelete: true, updated: 0 }), { state: 'healthy' }],
  ['replicaset short of ready is progressing', object('apps/v1', 'ReplicaSet', { replicas: 2, template: podTemplate(['a:1']) }, { replicas: 2, readyReplicas: 1, availableReplicas: 1 }), { state: 'progressing', attempted: { images: ['a:1'] } }],

  // Pod, Job
  [
    'pod CrashLoopBackOff is failed; failingImages is the failing container\'s spec image',
    pod({ waiting: 'CrashLoopBackOff' }),
    { state: 'failed', reason: 'CrashLoopBackOff', failureClass: 'analysis', attempted: { images: ['busybox:1', 'ghcr.io/acme/app:2.0.0'] }, failingImages: ['ghcr.io/acme/app:2.0.0'] },
  ],
  ['pod CreateContainerConfigError is failed', pod({ phase: 'Pending', waiting: 'CreateContainerConfigError' }), { state: 'failed', reason: 'CreateContainerConfigError', failingImages: ['ghcr.io/acme/app:2.0.0'] }],
  ['pod InvalidImageName is failed', pod({ phase: 'Pending', waiting: 'InvalidImageName' }), { state: 'failed', reason: 'InvalidImageName', failingImages: ['ghcr.io/acme/app:2.0.0'] }],
  ['pod container terminated non-zero after restarts is failed', pod({ exitCode: 1, restarts: 2 }), { state: 'failed', reason: 'Error', failingImages: ['ghcr.io/acme/app:2.0.0'] }],
  ['pod container terminated non-zero without restarts is not yet failed', pod({ exitCode: 1, restarts: 0 }), { state: 'progressing', failingImages: undefined }],
  ['pod running unready after a crash is failed (gitops-engine: Degraded)', pod({ lastExitCode: 137, restarts: 4 }), { state: 'failed', failingImages: ['ghcr.io/acme/app:2.0.0'] }],
  ['pod init container in CrashLoopBackOff names the init image', pod({ phase: 'Pending', initWaiting: 'CrashLoopBackOff' }), { state: 'failed', reason: 'CrashLoopBackOff', failingImages: ['busybox:1'] }],
  ['pod Failed with a non-zero exit names the image', pod({ phase: 'Failed', exitCode: 2, restarts: 0 }), { state: 'failed', terminal: true, failingImages: ['ghcr.io/acme/app:2.0.0'] }],
  ['pod ImagePullBackOff is failed', pod({ phase: 'Pending', waiting: 'ImagePullBackOff' }), { state: 'failed', reason: 'ImagePullBackOff' }],
  ['pod ErrImagePull is failed', pod({ phase: 'Pending', waiting: 'ErrImagePull' }), { state: 'failed', reason: 'ErrImagePull' }],
  ['pod unschedulable for long is a promotion failure', pod({ phase: 'Pending', unschedulableSince: T0 }), { state: 'failed', reason: 'Unschedulable', failureClass: 'promotion', since: T0_ISO }],
  ['pod unschedulable for a few seconds is progressing', pod({ phase: 'Pending', unschedulableSince: '2026-08-25T11:59:55Z' }), { state: 'progressing', reason: 'Unschedulable' }],
  ['pod running and ready is healthy', pod({ ready: true }), { state: 'healthy', failingImages: undefined }],
  ['pod Succeeded is healthy', pod({ phase: 'Succeeded' }), { state: 'healthy', reason: 'Completed' }],
  ['pod Failed is failed', pod({ phase: 'Failed' }), { state: 'failed' }],
  ['job Failed is terminal', job({ failed: true }), { state: 'failed', reason: 'BackoffLimitExceeded', terminal: true, since: T1_ISO, attempted: { images: ['ghcr.io/acme/migrate:3'] } }],
  ['job Complete is healthy', job({ complete: true }), { state: 'healthy' }],
  ['job running is progressing', job({}), { state: 'progressing', since: T0 }],
  ['job suspended is suspended', job({ suspend: true }), { state: 'suspended' }],

  // generic rules
  ['a plain Service is healthy', object('v1', 'Service', { type: 'ClusterIP', ports: [{ port: 80 }] }, {}), { state: 'healthy' }],
  ['a LoadBalancer Service without an address is progressing', object('v1', 'Service', { type: 'LoadBalancer' }, { loadBalancer: {} }), { state: 'progressing' }],
  ['a ConfigMap (no status) is healthy', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { a: 'b' } } as KubeObject, { state: 'healthy', reason: 'Current' }],
  ['a custom resource with Stalled=True is a terminal failure', object('example.com/v1', 'Thing', {}, { conditions: [cond('Stalled', 'True', 'Broken', 'it broke')] }), { state: 'failed', reason: 'Broken', terminal: true }],
  ['a custom resource with Reconciling=True is progressing', object('example.com/v1', 'Thing', {}, { conditions: [cond('Reconciling', 'True', 'Working')] }), { state: 'progressing', reason: 'Working' }],
  ['a custom resource with Ready=False is progressing, never failed', object('example.com/v1', 'Thing', {}, { conditions: [cond('Ready', 'False', 'NotYet')] }), { state: 'progressing' }],
  ['a custom resource with Ready=True is healthy', object('example.com/v1', 'Thing', {}, { conditions: [cond('Ready', 'True', 'Done')] }), { state: 'healthy', since: T0_ISO }],
  ['a custom resource behind its generation is progressing', object('example.com/v1', 'Thing', {}, { observedGeneration: 1 }, { generation: 2 }), { state: 'progressing', reason: 'LatestGenerationNotObserved' }],
  ['an object being deleted is progressing', object('example.com/v1', 'Thing', {}, {}, { deletionTimestamp: T0 }), { state: 'progressing', reason: 'Terminating', since: T0_ISO }],
];

for (const [name, input, expected] of rows) {
  test(name, (t) => {
    const h = assess(input, NOW);
    t.like(h, expected as Record<string, unknown>);
    if (h.state === 'failed') t.truthy(h.failureClass, 'a failed Health always has a class');
    else t.is(h.failureClass, undefined, 'only failed Health has a class');
  });
}

test('every kind family of the issue has its own assessor', (t) => {
  const kinds = registeredKinds();
  for (const kind of [
    'flagger.app/Canary',
    'argoproj.io/Rollout',
    'argoproj.io/AnalysisRun',
    'argoproj.io/Experiment',
    'argoproj.io/Application',
    'kustomize.toolkit.fluxcd.io/Kustomization',
    'helm.toolkit.fluxcd.io/HelmRelease',
    'kargo.akuity.io/Promotion',
    'kargo.akuity.io/Stage',
    'apps/Deployment',
    'apps/StatefulSet',
    'apps/DaemonSet',
    'apps/ReplicaSet',
    'Pod',
    'batch/Job',
  ]) {
    t.true(kinds.includes(kind), kind);
  }
});

const revisions: [string, Record<string, unknown>][] = [
  [`main@sha1:${SHA_A.toUpperCase()}`, { ref: 'main', sha: SHA_A }],
  [`refs/heads/main@sha1:${SHA_A}`, { ref: 'main', sha: SHA_A }],
  [`v1.0.1@sha1:${SHA_A}`, { ref: 'v1.0.1', sha: SHA_A }],
  [`sha1:${SHA_A}`, { sha: SHA_A }],
  [`main/${SHA_A}`, { ref: 'main', sha: SHA_A }],
  [`feature/x/${SHA_A}`, { ref: 'feature/x', sha: SHA_A }],
  ['latest@sha256:dbdb109711ffb3be77504d2670dbe13c24dd63d8d7f1fb489d350e5bfe930dd3', { ref: 'latest', sha: undefined }],
  ['sha256:dbdb109711ffb3be77504d2670dbe13c24dd63d8d7f1fb489d350e5bfe930dd3', { sha: undefined }],
  [SHA_A, { sha: SHA_A }],
  ['6.5.4', { sha: undefined, ref: undefined }],
  ['', { sha: undefined }],
];

const chartVersions: [raw: string, source: ChartSuffixSource, expected: Record<string, unknown>][] = [
  ['6.5.4', 'unknown', { chart: '6.5.4', sha: undefined }],
  ['6.5.4+1a2b3c4d5e6f', 'git', { chart: '6.5.4', sha: '1a2b3c4d5e6f' }],
  ['6.5.4+1A2B3C4D5E6F', 'unknown', { chart: '6.5.4', sha: '1a2b3c4d5e6f' }],
  ['6.5.4+1a2b3c4d5e6f.7', 'git', { chart: '6.5.4', sha: '1a2b3c4d5e6f' }],
  ['6.5.4+7', 'git', { chart: '6.5.4', sha: undefined }],
  ['6.5.4+1a2b3c4d5e6f', 'not-git', { chart: '6.5.4', sha: undefined }],
  ['6.5.4-rc.1+abc', 'unknown', { chart: '6.5.4-rc.1', sha: undefined }],
];

for (const [raw, source, expected] of chartVersions) {
  test(`parseChartVersion(${JSON.stringify(raw)}, ${source})`, (t) => {
    const revision = parseChartVersion(raw, source);
    t.is(revision.raw, raw, 'raw keeps the original');
    for (const [key, value] of Object.entries(expected)) t.is((revision as Record<string, unknown>)[key], value, key);
  });
}

for (const [raw, expected] of revisions) {
  test(`parseRevision(${JSON.stringify(raw)})`, (t) => {
    const revision = parseRevision(raw);
    t.is(revision.raw, raw, 'raw keeps the original');
    for (const [key, value] of Object.entries(expected)) t.is((revision as Record<string, unknown>)[key], value, key);
  });
}
