/**
 * Argo CD `Application` (argoproj.io/v1alpha1). Source: pkg/apis/application/v1alpha1/types.go,
 * controller/sync.go, Kargo's Argo CD health check pkg/health/checker/builtin/argocd.go
 * (research/failure-signals.md §5).
 *
 * Order: a running operation → progressing; the last operation Failed/Error → failed (auto-sync
 * will not retry that revision); ComparisonError/InvalidSpecError → failed; then app health, but
 * only once `status.reconciledAt >= operationState.finishedAt`: before that the health was
 * computed before the last sync finished and is not yet trusted → progressing.
 *
 * Besides the state: which sync brought the failure (`applicationRevisions`), the objects named as
 * failing (`applicationFailingObjects`), and a note while a failed sync is retried (`retryNote`).
 */
import type { KubeObject } from '../observe/types.ts';
import { registerAssessor } from './registry.ts';
import { parseRevision } from './revision.ts';
import { arr, bool, conditions, health, isoTime, isTerminating, num, rec, str, terminating } from './status.ts';
import type { Health, ObjectRef, Revision } from './types.ts';

type Rec = Record<string, unknown>;

export function assessApplication(object: KubeObject): Health {
  const status = rec(object.status);
  const assessed = applicationHealth(object);
  const { attempted, lastSucceeded, notes } = applicationRevisions(object, assessed);
  const failingObjects = assessed.state === 'failed' ? applicationFailingObjects(status) : [];
  const retry = retryNote(object);
  return health({
    ...assessed,
    ...(attempted ? { attempted } : {}),
    ...(lastSucceeded ? { lastSucceeded } : {}),
    failingObjects,
    notes: [...notes, ...(retry ? [retry] : [])],
  });
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

/** One `status.history[]` entry: a successful sync (Argo CD appends one per successful, non-partial sync, oldest first). */
interface Deployment {
  id?: number;
  revision: Revision;
  deployedAt?: string;
  /** when the sync began applying (`deployStartedAt`): its effects, a failure included, may start here */
  startedAt?: string;
}

function deployments(status: Rec): Deployment[] {
  const out: Deployment[] = [];
  for (const entry of arr(status.history).map(rec)) {
    const revision = revisionFrom(entry.revision, entry.revisions);
    if (!revision) continue;
    const id = num(entry.id);
    const deployedAt = isoTime(entry.deployedAt);
    const startedAt = isoTime(entry.deployStartedAt);
    out.push({ revision, ...(id !== undefined ? { id } : {}), ...(deployedAt ? { deployedAt } : {}), ...(startedAt ? { startedAt } : {}) });
  }
  return out;
}

/** Two revisions name the same commit(s): SHAs when both have one (single source), else the raw text. */
function sameRevision(a: Revision, b: Revision): boolean {
  if (!a.sources && !b.sources && a.sha && b.sha) return a.sha === b.sha;
  return (a.raw ?? '').toLowerCase() === (b.raw ?? '').toLowerCase();
}

/** The newest deployment before index `before` at another revision than `than`: what ran before the suspect. */
function previousDeployment(history: Deployment[], before: number, than: Revision): Deployment | undefined {
  for (let i = before - 1; i >= 0; i--) if (!sameRevision(history[i]!.revision, than)) return history[i];
  return undefined;
}

function describe(revision: Revision): string {
  return revision.sha ? revision.sha.slice(0, 12) : (revision.raw ?? '?');
}

/**
 * Which revision the Application attempts and which it last succeeded with. `status.history[]`
 * records successful syncs (RevisionHistory: id, revision(s), deployedAt), not health, so:
 *
 * - sync failed (operationState Failed/Error): attempted = the operation's revision; lastSucceeded =
 *   the newest history entry (history only records successful syncs).
 * - Degraded, onset known (`status.health.lastTransitionTime`): the suspect is the newest history
 *   entry deployed at or before the onset (the deployment the failure followed), "deployed" counted
 *   from `deployStartedAt` when present (a Deployment can exceed its deadline while PostSync hooks
 *   still run, before `deployedAt`); attempted = its
 *   revision, lastSucceeded = the newest entry before it at another revision (a re-sync of the same
 *   commit proves nothing). When the current revision (`status.sync.revision`, else the newest entry)
 *   differs from the suspect, Argo CD synced a later commit after the failure began: a note says the
 *   later commit is not the suspect. When every entry was deployed after the onset, the failure is
 *   older than the recorded history: attempted = the current revision, no lastSucceeded, and a note.
 * - Degraded, onset unknown: the suspect is the deployment that runs, the newest history entry
 *   (not `status.sync.revision`, which may be a newer commit not yet synced, or a commit that changed
 *   no manifest and was never synced); lastSucceeded = the newest entry before it at another
 *   revision. Without history: the operation's, else the compared revision, and no lastSucceeded.
 * - other failures (ComparisonError, InvalidSpecError): attempted = the compared revision;
 *   lastSucceeded = the newest history entry at another revision.
 * - not failed: attempted = the compared revision, lastSucceeded = the newest history entry.
 *
 * Multi-source revisions (`revisions[]`, index-aligned with `spec.sources`) are kept whole. The
 * live images (`status.summary.images`) go with attempted when attempted is what runs.
 */
function applicationRevisions(object: KubeObject, assessed: Health): { attempted?: Revision; lastSucceeded?: Revision; notes: string[] } {
  const status = rec(object.status);
  const history = deployments(status);
  const newest = history.at(-1);
  const current = currentRevision(status, assessed);
  const images = arr(rec(status.summary).images).map(str).filter((i): i is string => i !== undefined);
  const withImages = (r: Revision | undefined): Revision | undefined => (images.length > 0 ? { ...(r ?? {}), images } : r);

  if (assessed.reason === 'SyncFailed' || assessed.reason === 'SyncError') {
    return { attempted: withImages(current), lastSucceeded: newest?.revision, notes: [] };
  }
  if (assessed.state === 'failed' && assessed.reason === 'Degraded') {
    const onset = isoTime(rec(status.health).lastTransitionTime);
    const dated = history.some((d) => (d.startedAt ?? d.deployedAt) !== undefined);
    if (onset && dated) {
      let index = -1;
      for (let i = history.length - 1; i >= 0; i--) {
        const at = history[i]!.startedAt ?? history[i]!.deployedAt;
        if (at !== undefined && Date.parse(at) <= Date.parse(onset)) {
          index = i;
          break;
        }
      }
      if (index < 0) {
        const note = `health turned Degraded at ${onset}, before the oldest recorded sync (${history[0]!.startedAt ?? history[0]!.deployedAt ?? '?'}): the deployment that brought the failure is not in status.history`;
        return { attempted: withImages(current ?? newest?.revision), notes: [note] };
      }
      const suspect = history[index]!;
      const later = current ?? newest!.revision;
      const notes: string[] = [];
      if (!sameRevision(later, suspect.revision)) {
        // A later commit that changed no manifest is Synced without a sync, so it is not in history.
        const synced = history.slice(index + 1).some((d) => sameRevision(d.revision, later));
        notes.push(
          `${synced ? `Argo CD synced ${describe(later)}` : `the compared revision ${describe(later)} came`} after the health turned Degraded at ${onset}: the failure began with ${describe(suspect.revision)} (history id ${suspect.id ?? '?'}, deployed ${suspect.deployedAt}), so the later commit is not the suspect`,
        );
      }
      const live = index === history.length - 1;
      return { attempted: live ? withImages(suspect.revision) : suspect.revision, lastSucceeded: previousDeployment(history, index, suspect.revision)?.revision, notes };
    }
    if (newest) {
      const notes: string[] = [];
      if (current && !sameRevision(current, newest.revision)) {
        notes.push(`the compared revision ${describe(current)} was never synced: the degraded state runs ${describe(newest.revision)}, the newest entry of status.history`);
      }
      return { attempted: withImages(newest.revision), lastSucceeded: previousDeployment(history, history.length - 1, newest.revision)?.revision, notes };
    }
    return { attempted: withImages(current), notes: [] };
  }
  if (assessed.state === 'failed') {
    const lastSucceeded = current ? [...history].reverse().find((d) => !sameRevision(d.revision, current)) : newest;
    return { attempted: withImages(current), lastSucceeded: lastSucceeded?.revision, notes: [] };
  }
  return { attempted: withImages(current), lastSucceeded: newest?.revision, notes: [] };
}

/**
 * The revision in play: the last operation's result while it runs or after it failed, else the
 * desired (compared) revision in `status.sync`.
 */
function currentRevision(status: Rec, assessed: Health): Revision | undefined {
  const operationState = rec(status.operationState);
  const syncResult = rec(operationState.syncResult);
  const operationSync = rec(rec(operationState.operation).sync);
  const sync = rec(status.sync);
  const fromOperation = assessed.reason.startsWith('Sync');
  const candidates: Rec[] = fromOperation ? [syncResult, operationSync, sync] : [sync, syncResult];
  for (const c of candidates) {
    const revision = revisionFrom(c.revision, c.revisions);
    if (revision) return revision;
  }
  return undefined;
}

/** "group/Kind" for a resource Argo CD names (core resources have an empty group). */
function groupKindOf(r: Rec): string {
  const group = str(r.group);
  const kind = str(r.kind) ?? 'Unknown';
  return group ? `${group}/${kind}` : kind;
}

/**
 * The objects that make the Application fail: `status.resources[]` whose health is Degraded or
 * Missing (Argo CD < 3.0, or with controller.resource.health.persist), and the sync result's
 * resources that failed to apply or whose hook failed (ResourceResult in
 * argo-cd pkg/apis/application/v1alpha1/types.go).
 */
function applicationFailingObjects(status: Rec): ObjectRef[] {
  const out: ObjectRef[] = [];
  const add = (r: Rec, objectStatus: string) => {
    const name = str(r.name);
    if (!name) return;
    const ref: ObjectRef = { kind: groupKindOf(r), ...(str(r.namespace) ? { namespace: str(r.namespace)! } : {}), name, status: objectStatus };
    if (!out.some((o) => o.kind === ref.kind && o.namespace === ref.namespace && o.name === ref.name)) out.push(ref);
  };
  for (const r of arr(status.resources).map(rec)) {
    const h = str(rec(r.health).status);
    if (h === 'Degraded' || h === 'Missing') add(r, h);
  }
  for (const r of arr(rec(rec(status.operationState).syncResult).resources).map(rec)) {
    const hookPhase = str(r.hookPhase);
    if (hookPhase === 'Failed' || hookPhase === 'Error') add(r, hookPhase);
    else if (str(r.status) === 'SyncFailed') add(r, 'SyncFailed');
  }
  return out;
}

/**
 * While a failed sync is being retried (operationState Running with retryCount ≥ 1), the operation
 * stays in progress, so auto-sync does not start a sync of a newer commit (autoSync skips while
 * `app.Operation` is set), and each retry reuses the failing revision unless the retry strategy has
 * `refresh: true` (Argo CD ≥ 3.2, which clears the operation's revision before a retry). Automated
 * syncs retry 5 times by default when spec.syncPolicy.retry is absent. Source: argo-cd
 * controller/appcontroller.go (`processRequestedAppOperation`, `autoSync`),
 * pkg/apis/application/v1alpha1/types.go (`RetryStrategy.Refresh`).
 */
function retryNote(object: KubeObject): string | undefined {
  const status = rec(object.status);
  const operationState = rec(status.operationState);
  const retryCount = num(operationState.retryCount) ?? 0;
  if (str(operationState.phase) !== 'Running' || retryCount < 1) return undefined;
  const operation = rec(operationState.operation);
  const syncPolicy = rec(rec(object.spec).syncPolicy);
  const automated = bool(rec(operation.initiatedBy).automated) || autoSyncEnabled(object);
  if (!automated) return undefined;
  const retry = operation.retry !== undefined ? rec(operation.retry) : syncPolicy.retry !== undefined ? rec(syncPolicy.retry) : { limit: 5 };
  if (bool(retry.refresh)) return undefined;
  const limit = num(retry.limit);
  const revision = revisionFrom(rec(operation.sync).revision, rec(operation.sync).revisions);
  const attempts = limit === undefined ? `retry ${retryCount}` : limit < 0 ? `retry ${retryCount}, no limit` : `retry ${retryCount} of ${limit}`;
  return (
    `Argo CD keeps retrying the failed sync${revision ? ` of ${describe(revision)}` : ''} (${attempts}): a revert commit will not be synced until these retries end` +
    `${limit !== undefined && limit < 0 ? ' (they never end: terminate the operation)' : ''}, because a retry reuses the failing revision and auto-sync waits for the operation; ` +
    'set spec.syncPolicy.retry.refresh: true (Argo CD ≥ 3.2) to retry with the latest revision, or terminate the sync'
  );
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
