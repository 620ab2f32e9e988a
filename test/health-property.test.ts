/**
 * Property: `assess` never throws and always answers one of the five states, whatever the object:
 * arbitrary JSON, and objects with a registered apiVersion/kind and random (often ill-typed) status.
 * Assessors must not even rely on the registry's guard: `AssessorError` would mean one threw.
 */
import test from 'ava';
import fc from 'fast-check';
import { assess, HEALTH_STATES, registeredKinds } from '../src/health/index.ts';
import type { KubeObject } from '../src/observe/types.ts';

const NOW = new Date('2026-08-25T00:00:00Z');
const STATES = new Set<string>(HEALTH_STATES);

/** "group/Kind" → a plausible apiVersion for it. */
function apiVersionOf(groupKind: string): { apiVersion: string; kind: string } {
  const slash = groupKind.lastIndexOf('/');
  return slash < 0 ? { apiVersion: 'v1', kind: groupKind } : { apiVersion: `${groupKind.slice(0, slash)}/v1`, kind: groupKind.slice(slash + 1) };
}

const kinds = [...registeredKinds(), 'example.com/Thing', 'ConfigMap'].map(apiVersionOf);

const scalar = fc.oneof(fc.string(), fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.date({ noInvalidDate: true }).map((d) => d.toISOString()));
const conditionType = fc.constantFrom('Ready', 'Stalled', 'Reconciling', 'Healthy', 'Progressing', 'Available', 'Promoted', 'InvalidSpec', 'Failed', 'Complete', 'PodScheduled', 'Released', 'Remediated', 'TestSuccess', 'Verified', 'Promoting', 'ComparisonError', 'Paused');
const condition = fc.record(
  {
    type: fc.oneof(conditionType, scalar),
    status: fc.oneof(fc.constantFrom('True', 'False', 'Unknown'), scalar),
    reason: fc.oneof(fc.constantFrom('ProgressDeadlineExceeded', 'RolloutAborted', 'HealthCheckFailed', 'RetriesExceeded', 'LastPromotionErrored', 'Unschedulable', 'Promoting', 'Failed'), scalar),
    message: scalar,
    lastTransitionTime: scalar,
    lastUpdateTime: scalar,
    observedGeneration: scalar,
  },
  { requiredKeys: [] },
);
const phase = fc.constantFrom('Failed', 'Succeeded', 'Running', 'Errored', 'Aborted', 'Progressing', 'Promoting', 'Healthy', 'Degraded', 'Paused', 'Pending', 'Error', 'Inconclusive', 'Terminated', 'Waiting');
const status = fc.oneof(
  fc.jsonValue(),
  fc.record(
    {
      phase: fc.oneof(phase, scalar),
      conditions: fc.oneof(fc.array(fc.oneof(condition, fc.jsonValue()), { maxLength: 5 }), fc.jsonValue()),
      observedGeneration: scalar,
      canaryWeight: scalar,
      abort: scalar,
      replicas: scalar,
      updatedReplicas: scalar,
      availableReplicas: scalar,
      readyReplicas: scalar,
      currentPodHash: scalar,
      stableRS: scalar,
      pauseConditions: fc.jsonValue(),
      health: fc.oneof(fc.record({ status: fc.oneof(fc.constantFrom('Healthy', 'Degraded', 'Progressing', 'Missing'), scalar) }), fc.jsonValue()),
      sync: fc.jsonValue(),
      operationState: fc.oneof(fc.record({ phase: fc.oneof(phase, scalar), finishedAt: scalar, retryCount: scalar, operation: fc.jsonValue(), syncResult: fc.jsonValue() }), fc.jsonValue()),
      resources: fc.jsonValue(),
      initContainerStatuses: fc.jsonValue(),
      analysisRuns: fc.jsonValue(),
      templateStatuses: fc.jsonValue(),
      currentPromotion: fc.jsonValue(),
      metadata: fc.jsonValue(),
      lastAttemptedRevisionDigest: scalar,
      reconciledAt: scalar,
      history: fc.oneof(fc.jsonValue(), fc.array(fc.record({ revision: scalar, revisions: fc.jsonValue(), deployedAt: scalar, id: scalar, chartVersion: scalar, status: scalar, ociDigest: scalar }, { requiredKeys: [] }), { maxLength: 4 })),
      lastAttemptedRevision: scalar,
      lastAppliedRevision: scalar,
      state: fc.jsonValue(),
      stepExecutionMetadata: fc.jsonValue(),
      currentStep: scalar,
      freightHistory: fc.jsonValue(),
      containerStatuses: fc.jsonValue(),
      metricResults: fc.jsonValue(),
    },
    { requiredKeys: [] },
  ),
);
const metadata = fc.oneof(
  fc.record({ name: fc.string(), namespace: fc.string(), generation: scalar, deletionTimestamp: fc.option(scalar, { nil: undefined }), annotations: fc.jsonValue() }, { requiredKeys: ['name'] }),
  fc.jsonValue(),
);
const registeredObject = fc.record({
  kind: fc.constantFrom(...kinds),
  metadata,
  spec: fc.oneof(fc.jsonValue(), fc.record({ replicas: scalar, paused: scalar, suspend: scalar, template: fc.jsonValue(), updateStrategy: fc.jsonValue(), steps: fc.jsonValue(), syncPolicy: fc.jsonValue() }, { requiredKeys: [] })),
  status,
  operation: fc.option(fc.jsonValue(), { nil: undefined }),
}).map(({ kind, ...rest }) => ({ ...kind, ...rest }) as unknown as KubeObject);

function checkAssessment(object: unknown): void {
  const h = assess(object as KubeObject, NOW);
  if (!STATES.has(h.state)) throw new Error(`state ${String(h.state)} is not one of the five`);
  if (h.reason === 'AssessorError') throw new Error(`an assessor threw: ${h.message}`);
  if (typeof h.reason !== 'string' || typeof h.message !== 'string') throw new Error('reason and message are strings');
  if (h.state === 'failed' && !h.failureClass) throw new Error('failed without a class');
  if (h.since !== undefined && Number.isNaN(Date.parse(h.since))) throw new Error(`since ${h.since} is not a time`);
  JSON.stringify(h);
}

test('assess never throws on arbitrary JSON objects', (t) => {
  fc.assert(fc.property(fc.object(), (o) => checkAssessment(o)), { numRuns: 500 });
  fc.assert(fc.property(fc.jsonValue(), (o) => checkAssessment(typeof o === 'object' && o !== null ? o : { value: o })), { numRuns: 300 });
  t.pass();
});

test('assess never throws on registered kinds with random status, and answers one of the five states', (t) => {
  const seen = new Set<string>();
  fc.assert(
    fc.property(registeredObject, (o) => {
      checkAssessment(o);
      seen.add(assess(o, NOW).state);
    }),
    { numRuns: 2000 },
  );
  t.true(seen.size >= 4, `states reached: ${[...seen].join(', ')}`);
});
