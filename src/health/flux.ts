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
import { parseChartVersion, revisionOf, type ChartSuffixSource } from './revision.ts';
import { arr, bool, conditions, conditionSince, findCondition, generation, health, isTerminating, isTrue, num, rec, str, terminating, type Condition } from './status.ts';
import type { Health, ObjectRef, Revision } from './types.ts';

/** Ready=False reasons that are waiting, not failing. */
const WAITING_REASONS = new Set(['DependencyNotReady', 'HealthCheckCanceled', 'Progressing', 'ProgressingWithRetry']);

/**
 * Ready=False reasons that are the engine's verdict on the attempted revision's content: retrying
 * the same revision will not change them. `ValidationFailed` (legacy v1beta1/v1beta2: the dry-run
 * validation of the built manifests failed) and `BuildFailed` (kustomize build, generators,
 * decryption) are final as `HealthCheckFailed` is (fluxcd/kustomize-controller api/v1beta2/condition_types.go).
 */
const KUSTOMIZATION_TERMINAL_REASONS = new Set(['BuildFailed', 'ValidationFailed', 'HealthCheckFailed', 'ReconciliationFailed', 'PruneFailed']);

/**
 * Ready=False reasons where the new revision was not judged (source fetch failed, client/factory
 * errors): the revision may be fine and the condition self-heals → class `promotion`.
 */
const NOT_JUDGED_REASONS = new Set(['ArtifactFailed', 'SourceNotReady', 'RESTClientError', 'FactoryError', 'ConfigFactoryErr', 'StateError', 'ResourceManagerError', 'AccessDenied']);

/**
 * `ArtifactFailed` covers a missing source or artifact and a failed download, which the controller
 * requeues and which heal by themselves, and `kustomization path not found`, which no retry of
 * the same revision and spec can change (fluxcd/kustomize-controller
 * internal/controller/kustomization_controller.go; the same in legacy controllers/ v0.x).
 */
function kustomizationTerminal(c: Condition): boolean {
  if (c.reason === 'ArtifactFailed') return /kustomization path not found/i.test(c.message);
  return KUSTOMIZATION_TERMINAL_REASONS.has(c.reason);
}

export function assessKustomization(object: KubeObject): Health {
  const status = rec(object.status);
  const revisions = kustomizationRevisions(status);
  const assessed = assessFluxConditions(object, kustomizationTerminal);
  const failingObjects = assessed.state === 'failed' ? healthCheckObjects(assessed.message) : [];
  return withRevisions({ ...assessed, failingObjects }, revisions);
}

/** Where a health-check message lists objects: "timeout waiting for: [", "failed early due to stalled resources: [", legacy "Health check failed for [". */
const OBJECT_LIST = /(?:timeout waiting for|failed early due to stalled resources|Health check (?:failed|timed out) for)\s*:?\s*\[/i;
/** fluxcd/pkg ssa/manager_wait.go `WaitForSetWithContext`: "<Kind>/<namespace>/<name> status: '<Status>'" (utils.FmtObjMetadata; no namespace for cluster-scoped objects). */
const SSA_ITEM = /(?:^|[[,]\s*)([A-Za-z][A-Za-z0-9]*)\/(?:([a-z0-9][a-z0-9.-]*)\/)?([^\s/,\]']+) status: '([^']*)'/g;
/** The same file: "can't determine status for <Kind>/<namespace>/<name>". */
const SSA_UNDETERMINED = /can't determine status for ([A-Za-z][A-Za-z0-9]*)\/(?:([a-z0-9][a-z0-9.-]*)\/)?([^\s/,\]']+)/g;
/** kustomize-controller ≤ v0.15 controllers/kustomization_healthcheck.go: "<Kind> '<namespace>/<name>'" with " (status '<Status>')" since v0.13. */
const LEGACY_ITEM = /([A-Za-z][A-Za-z0-9]*) '([^'/]*)\/([^']+)'(?: \(status '([^']*)'\))?/g;

/** The objects a Kustomization's health-check failure names, as written (bare Kind: Flux messages carry no group). */
export function healthCheckObjects(message: string): ObjectRef[] {
  const start = OBJECT_LIST.exec(message);
  if (!start) return [];
  const list = message.slice(start.index + start[0].length);
  const out: ObjectRef[] = [];
  const add = (kind: string, namespace: string | undefined, name: string, status: string | undefined) => {
    if (out.some((o) => o.kind === kind && o.namespace === namespace && o.name === name)) return;
    out.push({ kind, ...(namespace ? { namespace } : {}), name, ...(status ? { status } : {}) });
  };
  for (const m of list.matchAll(SSA_ITEM)) add(m[1]!, m[2], m[3]!, m[4]);
  for (const m of list.matchAll(SSA_UNDETERMINED)) add(m[1]!, m[2], m[3]!, undefined);
  if (out.length === 0) for (const m of list.matchAll(LEGACY_ITEM)) add(m[1]!, m[2], m[3]!, m[4]);
  return out;
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
function assessFluxConditions(object: KubeObject, isTerminal: (ready: Condition) => boolean): Health {
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
      terminal: isTerminal(ready),
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

/**
 * A HelmRelease. `Ready=False` reason `RollbackSucceeded`/`UninstallSucceeded` with `Remediated=True`
 * is a failed release: helm-controller put the previous release back (or removed the failed one),
 * while git still declares the failed chart. It is terminal once no retry is pending: with
 * remediation retries left helm-controller marks `Reconciling=True` (ProgressingWithRetry) and
 * upgrades to the same chart again (fluxcd/helm-controller internal/reconcile/atomic_release.go,
 * rollback_remediation.go; `summarize` in release.go makes any remediated state Ready=False).
 */
export function assessHelmRelease(object: KubeObject): Health {
  const list = conditions(object);
  let assessed = assessFluxConditions(object, (c) => HELMRELEASE_TERMINAL_REASONS.has(c.reason));
  if (assessed.state === 'failed') {
    // Ready=False "RollbackSucceeded" hides the cause: name the failed action (Released/TestSuccess) too.
    const cause = [findCondition(list, 'TestSuccess'), findCondition(list, 'Released')].find((c) => c?.status === 'False');
    if (cause && cause.reason !== assessed.reason && !assessed.message.includes(cause.message)) {
      assessed = { ...assessed, message: `${assessed.message}${assessed.message ? '; ' : ''}${cause.reason}: ${cause.message}` };
    }
    const remediated = findCondition(list, 'Remediated');
    const retrying = list.some((c) => c.type === 'Reconciling' && isTrue(c));
    if (isTrue(remediated) && remediated!.message && !assessed.message.includes(remediated!.message)) {
      // Say what runs now: "Helm rollback to previous release prod/podinfo.v5 with chart podinfo@6.5.4 succeeded".
      assessed = { ...assessed, message: `${assessed.message}${assessed.message ? '; ' : ''}${remediated!.reason}: ${remediated!.message}` };
    }
    if (isTrue(remediated) && !retrying) assessed = { ...assessed, terminal: true };
    // helm-controller waits with the same fluxcd/pkg ssa poller: "… timeout waiting for: [Deployment/prod/podinfo status: 'InProgress']".
    assessed = { ...assessed, failingObjects: healthCheckObjects(assessed.message) };
  }
  return withRevisions(assessed, helmReleaseRevisions(object));
}

/** Which kind of source a HelmRelease's chart comes from, for the meaning of a `+<suffix>` in its versions. */
function chartSuffixSource(object: KubeObject): ChartSuffixSource {
  const spec = rec(object.spec);
  const status = rec(object.status);
  if (str(status.lastAttemptedRevisionDigest)) return 'not-git';
  const kind = str(rec(rec(rec(spec.chart).spec).sourceRef).kind) ?? str(rec(spec.chartRef).kind);
  if (kind === 'GitRepository') return 'git';
  // OCIRepository/ExternalArtifact/Bucket: a digest; HelmRepository: a generation or the chart author's own metadata.
  if (kind === 'OCIRepository' || kind === 'ExternalArtifact' || kind === 'Bucket' || kind === 'HelmRepository') return 'not-git';
  return 'unknown';
}

/** An exact chart version (not a range such as "6.5.*" or ">=6.0.0"). */
const EXACT_VERSION = /^v?\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/;

/**
 * HelmRelease revisions are chart versions (`chart`, with `chartName`), not git SHAs, except that a
 * chart built from a GitRepository carries the commit in its build suffix (parseChartVersion).
 * attempted: `status.lastAttemptedRevision`, else the desired `spec.chart.spec.version` when exact;
 * lastSucceeded: the newest history snapshot deployed or superseded without failed tests, else v2beta1's
 * `status.lastAppliedRevision`.
 */
function helmReleaseRevisions(object: KubeObject): { attempted?: Revision; lastSucceeded?: Revision } {
  const status = rec(object.status);
  const chartSpec = rec(rec(rec(object.spec).chart).spec);
  const chartName = str(chartSpec.chart);
  const suffix = chartSuffixSource(object);
  const out: { attempted?: Revision; lastSucceeded?: Revision } = {};
  const attempted = str(status.lastAttemptedRevision);
  const desired = str(chartSpec.version);
  if (attempted) out.attempted = parseChartVersion(attempted, suffix, chartName);
  else if (desired && EXACT_VERSION.test(desired)) out.attempted = parseChartVersion(desired, suffix, chartName);
  // helm-controller v2: history is newest first, "up to the last successfully completed release".
  for (const entry of arr(status.history)) {
    const e = rec(entry);
    const releaseStatus = str(e.status);
    if (releaseStatus !== 'deployed' && releaseStatus !== 'superseded') continue;
    const tests = Object.values(rec(e.testHooks)).map((h) => str(rec(h).phase));
    if (tests.includes('Failed')) continue;
    const chart = str(e.chartVersion);
    if (chart) {
      out.lastSucceeded = parseChartVersion(chart, str(e.ociDigest) ? 'not-git' : suffix, str(e.chartName) ?? chartName);
      // when that release last went out (snapshot_types.go lastDeployed): a values change older than it ran then
      const at = str(e.lastDeployed) ?? str(e.firstDeployed);
      if (at) out.lastSucceeded.at = at;
      break;
    }
  }
  const applied = str(status.lastAppliedRevision);
  if (!out.lastSucceeded && applied) out.lastSucceeded = parseChartVersion(applied, suffix, chartName);
  return out;
}

registerAssessor('kustomize.toolkit.fluxcd.io/Kustomization', assessKustomization);
registerAssessor('helm.toolkit.fluxcd.io/HelmRelease', assessHelmRelease);
