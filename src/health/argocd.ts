/**
 * Argo CD `Application` (argoproj.io/v1alpha1). Source: pkg/apis/application/v1alpha1/types.go,
 * controller/sync.go, Kargo's Argo CD health check pkg/health/checker/builtin/argocd.go
 * (research/failure-signals.md §5).
 *
 * Order: a running operation → progressing; the last operation Failed/Error → failed (auto-sync
 * will not retry that revision); ComparisonError/InvalidSpecError → failed; then app health, but
 * only once `status.reconciledAt >= operationState.finishedAt`: before that the health was
 * computed before the last sync finished and is not yet trusted → progressing.
 */
import type { KubeObject } from '../observe/types.ts';
import { registerAssessor } from './registry.ts';
import { parseRevision } from './revision.ts';
import { arr, conditions, health, isoTime, isTerminating, rec, str, terminating } from './status.ts';
import type { Health, Revision } from './types.ts';

type Rec = Record<string, unknown>;

export function assessApplication(object: KubeObject): Health {
  const status = rec(object.status);
  const assessed = applicationHealth(object);
  const attempted = attemptedRevision(status, assessed);
  const lastSucceeded = lastSyncedRevision(status, assessed.state === 'failed' ? attempted : undefined);
  return health({ ...assessed, ...(attempted ? { attempted } : {}), ...(lastSucceeded ? { lastSucceeded } : {}) });
}

function applicationHealth(object: KubeObject): Health {
  if (isTerminating(object)) return terminating(object);
  const status = rec(object.status);
  const operationState = rec(status.operationState);
  const phase = str(operationState.phase);
  const startedAt = isoTime(operationState.startedAt);
  const finishedAt = isoTime(operationState.finishedAt);
  const operationMessage = str(operationState.message) ?? '';

  if (object.operation !== undefined && object.operation !== null && phase !== 'Running' && phase !== 'Terminating') {
    return health({ state: 'progressing', reason: 'OperationRequested', message: 'a sync operation is requested', since: startedAt });
  }
  if (phase === 'Running' || phase === 'Terminating') {
    return health({ state: 'progressing', reason: phase === 'Running' ? 'SyncRunning' : 'SyncTerminating', message: operationMessage || `sync ${phase.toLowerCase()}`, since: startedAt });
  }
  if (phase === 'Failed' || phase === 'Error') {
    return health({
      state: 'failed',
      reason: phase === 'Failed' ? 'SyncFailed' : 'SyncError',
      message: operationMessage || failedResourceMessage(operationState) || `sync ${phase.toLowerCase()}`,
      since: finishedAt ?? startedAt,
      // "Failed": objects did not apply or a sync hook failed (the manifests); "Error": the operation itself broke.
      failureClass: phase === 'Failed' ? 'analysis' : 'promotion',
      // Auto-sync does not retry a revision whose last sync failed; it waits for a new commit.
      terminal: true,
    });
  }
  const errorCondition = conditions(object).find((c) => c.type === 'ComparisonError' || c.type === 'InvalidSpecError');
  if (errorCondition) {
    return health({
      state: 'failed',
      reason: errorCondition.type,
      message: errorCondition.message,
      since: errorCondition.lastTransitionTime,
      // Often the repo or the cluster (credentials, unreachable), not the revision's content.
      failureClass: 'promotion',
    });
  }

  const appHealth = rec(status.health);
  const healthStatus = str(appHealth.status);
  const healthMessage = str(appHealth.message) ?? '';
  const healthSince = isoTime(appHealth.lastTransitionTime);
  const reconciledAt = isoTime(status.reconciledAt);
  if (healthStatus && reconciledAt && finishedAt && Date.parse(reconciledAt) < Date.parse(finishedAt)) {
    return health({
      state: 'progressing',
      reason: 'HealthNotYetAssessed',
      message: `health ${healthStatus} was computed at ${reconciledAt}, before the last sync finished at ${finishedAt}`,
      since: finishedAt,
    });
  }
  const sync = rec(status.sync);
  const syncStatus = str(sync.status);
  switch (healthStatus) {
    case 'Healthy': {
      if (syncStatus === 'OutOfSync' && autoSyncEnabled(object)) {
        return health({ state: 'progressing', reason: 'OutOfSync', message: 'healthy but out of sync: an automated sync is due', since: healthSince });
      }
      return health({ state: 'healthy', reason: 'Healthy', message: healthMessage || (syncStatus ? `healthy, ${syncStatus}` : 'healthy'), since: healthSince });
    }
    case 'Progressing':
      return health({ state: 'progressing', reason: 'Progressing', message: healthMessage || 'application is progressing', since: healthSince });
    case 'Suspended':
      return health({ state: 'suspended', reason: 'Suspended', message: healthMessage || 'application is suspended', since: healthSince });
    case 'Degraded':
      return health({ state: 'failed', reason: 'Degraded', message: healthMessage || degradedResourceMessage(status) || 'application is degraded', since: healthSince, failureClass: 'analysis' });
    case 'Missing':
      return health({ state: 'progressing', reason: 'Missing', message: healthMessage || 'resources are missing (not yet synced)', since: healthSince });
    case undefined:
      return health({ state: 'progressing', reason: 'NotReconciled', message: 'application health not yet computed' });
    default:
      return health({ state: 'unknown', reason: healthStatus, message: healthMessage || `health ${healthStatus}`, since: healthSince });
  }
}

/** `spec.syncPolicy.automated` set and not switched off (Argo CD ≥ 3.0 has `automated.enabled`). */
function autoSyncEnabled(object: KubeObject): boolean {
  const automated = rec(object.spec).syncPolicy === undefined ? undefined : rec(rec(object.spec).syncPolicy).automated;
  return automated !== undefined && automated !== null && rec(automated).enabled !== false;
}

function failedResourceMessage(operationState: Rec): string | undefined {
  for (const r of arr(rec(operationState.syncResult).resources).map(rec)) {
    if (str(r.status) === 'SyncFailed' || str(r.hookPhase) === 'Failed' || str(r.hookPhase) === 'Error') {
      return `${str(r.kind) ?? 'resource'} ${str(r.namespace) ? `${str(r.namespace)}/` : ''}${str(r.name) ?? ''}: ${str(r.message) ?? ''}`.trim();
    }
  }
  return undefined;
}

/** Argo CD < 3.0 (or health persistence on) keeps per-resource health: name the first degraded one. */
function degradedResourceMessage(status: Rec): string | undefined {
  for (const r of arr(status.resources).map(rec)) {
    const h = rec(r.health);
    if (str(h.status) === 'Degraded') return `${str(r.kind) ?? 'resource'} ${str(r.name) ?? ''} is Degraded${str(h.message) ? `: ${str(h.message)}` : ''}`;
  }
  return undefined;
}

/**
 * The revision being tried: the last operation's result while it runs or after it failed,
 * else the desired (compared) revision in `status.sync`. The live images go with it.
 */
function attemptedRevision(status: Rec, assessed: Health): Revision | undefined {
  const operationState = rec(status.operationState);
  const syncResult = rec(operationState.syncResult);
  const operationSync = rec(rec(operationState.operation).sync);
  const sync = rec(status.sync);
  const fromOperation = assessed.reason.startsWith('Sync');
  const candidates: Rec[] = fromOperation ? [syncResult, operationSync, sync] : [sync, syncResult];
  let revision: Revision | undefined;
  for (const c of candidates) {
    revision = revisionFrom(c.revision, c.revisions);
    if (revision) break;
  }
  const images = arr(rec(status.summary).images).map(str).filter((i): i is string => i !== undefined);
  if (images.length > 0) revision = { ...(revision ?? {}), images };
  return revision;
}

/**
 * The newest successful sync in `status.history` (appended only for successful, non-partial
 * syncs). When the application failed, a history entry at the failing revision is skipped: it
 * synced but is the revision under suspicion.
 */
function lastSyncedRevision(status: Rec, failing: Revision | undefined): Revision | undefined {
  const history = arr(status.history).map(rec);
  for (let i = history.length - 1; i >= 0; i--) {
    const entry = history[i]!;
    const revision = revisionFrom(entry.revision, entry.revisions);
    if (!revision) continue;
    if (failing?.sha && revision.sha === failing.sha) continue;
    return revision;
  }
  return undefined;
}

/** A single `revision` or multi-source `revisions[]` (git SHAs or chart versions) as one Revision. */
export function revisionFrom(single: unknown, multiple: unknown): Revision | undefined {
  const list = arr(multiple).map(str);
  if (list.length > 0 && list.some((r) => r !== undefined)) {
    const sources = list.map((r) => sourceRevision(r ?? ''));
    const first = sources.find((s) => s.sha);
    return { raw: list.map((r) => r ?? '').join(','), ...(first?.sha ? { sha: first.sha } : {}), sources };
  }
  const raw = str(single);
  return raw ? sourceRevision(raw) : undefined;
}

/** A git SHA, or else a Helm chart version (Argo CD reports chart sources by version). */
function sourceRevision(raw: string): Revision {
  const revision = parseRevision(raw);
  if (!revision.sha && /^v?\d+\.\d+/.test(raw)) revision.chart = raw;
  return revision;
}

registerAssessor('argoproj.io/Application', assessApplication);
