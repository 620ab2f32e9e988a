/**
 * A Flux notification-controller event, as the `githubdispatch` provider sends it: a
 * `repository_dispatch` whose `event_type` is "Kind/name.namespace" and whose `client_payload`
 * is the event itself (fluxcd/pkg apis/event/v1beta1 `Event`, marshalled as is by
 * notification-controller internal/notifier/github_dispatch.go).
 *
 * notification-controller strips the involved object's API group from metadata keys before
 * dispatching (internal/server/event_handlers.go `cleanupMetadata`), so the revision arrives as
 * `metadata.revision`; older controllers and events posted by hand keep
 * `kustomize.toolkit.fluxcd.io/revision`: both are read.
 *
 * The event becomes the object it is about, with the status the controller had when it sent it:
 * an `error` event → `Ready=False` with the event's reason and message, and the revision as
 * `lastAttemptedRevision`; an `info` event → `Ready=True` (`lastAppliedRevision` too), or
 * `Ready=Unknown` + `Reconciling=True` for the reasons Flux uses while it is still working.
 *
 * helm-controller's remediation events are `info` but report a failed release
 * (fluxcd/helm-controller internal/reconcile/rollback_remediation.go, uninstall_remediation.go):
 * `RollbackSucceeded` carries the chart version of the previous release it rolled back to
 * (`eventMeta(prev.ChartVersion, …)`), so the revision is the last success, not the attempt;
 * `UninstallSucceeded` carries the version of the failed release it removed (`cur.ChartVersion`).
 * Both become `Ready=False` with `Remediated=True`. An `oci-digest` key marks an OCI chart, whose
 * `+<suffix>` is a digest, not a commit.
 */
import { z } from 'zod';
import type { KubeObject } from './types.ts';

export const FluxEvent = z
  .object({
    involvedObject: z
      .object({
        kind: z.string().min(1),
        name: z.string().min(1),
        namespace: z.string().optional(),
        apiVersion: z.string().optional(),
        uid: z.string().optional(),
      })
      .loose(),
    severity: z.enum(['info', 'error', 'trace']),
    timestamp: z.string().optional(),
    message: z.string().default(''),
    reason: z.string().min(1),
    metadata: z.record(z.string(), z.string()).optional(),
    reportingController: z.string().optional(),
    reportingInstance: z.string().optional(),
  })
  .loose();

export type FluxEventPayload = z.output<typeof FluxEvent>;

export function isFluxEvent(payload: Record<string, unknown>): boolean {
  return typeof payload.involvedObject === 'object' && payload.involvedObject !== null;
}

/** API versions for involved objects whose event does not name one (events always have, in practice). */
const DEFAULT_API_VERSION: Record<string, string> = {
  Kustomization: 'kustomize.toolkit.fluxcd.io/v1',
  HelmRelease: 'helm.toolkit.fluxcd.io/v2',
  GitRepository: 'source.toolkit.fluxcd.io/v1',
  OCIRepository: 'source.toolkit.fluxcd.io/v1',
  HelmRepository: 'source.toolkit.fluxcd.io/v1',
  HelmChart: 'source.toolkit.fluxcd.io/v1',
  Bucket: 'source.toolkit.fluxcd.io/v1',
  ImageUpdateAutomation: 'image.toolkit.fluxcd.io/v1',
};

/** Info reasons that mean "still working", not "done" (kustomize-controller, helm-controller). */
const PROGRESSING_REASONS = new Set(['Progressing', 'ProgressingWithRetry', 'DependencyNotReady', 'HealthCheckCanceled']);

/** The revision the event is about: `revision`, or a group-prefixed `…/revision` key. */
export function fluxRevision(metadata: Record<string, string> | undefined): string | undefined {
  if (!metadata) return undefined;
  if (metadata.revision) return metadata.revision;
  const key = Object.keys(metadata).find((k) => k.endsWith('/revision'));
  return key ? metadata[key] : undefined;
}

/** A metadata value by its plain key or its group-prefixed form ("helm.toolkit.fluxcd.io/oci-digest"). */
function metadataValue(metadata: Record<string, string> | undefined, key: string): string | undefined {
  if (!metadata) return undefined;
  if (metadata[key]) return metadata[key];
  const prefixed = Object.keys(metadata).find((k) => k.endsWith(`/${key}`));
  return prefixed ? metadata[prefixed] : undefined;
}

export function fluxObject(event: FluxEventPayload): KubeObject {
  const { involvedObject: io } = event;
  const revision = fluxRevision(event.metadata);
  const time = event.timestamp;
  const condition = (type: string, status: string) => ({ type, status, reason: event.reason, message: event.message, ...(time ? { lastTransitionTime: time } : {}) });
  let conditions;
  const status: Record<string, unknown> = {};
  const ociDigest = metadataValue(event.metadata, 'oci-digest');
  if (io.kind === 'HelmRelease' && (event.reason === 'RollbackSucceeded' || event.reason === 'UninstallSucceeded')) {
    conditions = [condition('Ready', 'False'), condition('Remediated', 'True')];
    if (revision && event.reason === 'RollbackSucceeded') {
      // The release rolled back to, as helm-controller records it in its history (newest first).
      status.history = [{ chartVersion: revision, status: 'deployed', ...(ociDigest ? { ociDigest } : {}) }];
    } else if (revision) {
      status.lastAttemptedRevision = revision;
      if (ociDigest) status.lastAttemptedRevisionDigest = ociDigest;
    }
  } else if (event.severity === 'error') {
    conditions = [condition('Ready', 'False')];
    if (revision) status.lastAttemptedRevision = revision;
    if (revision && ociDigest && io.kind === 'HelmRelease') status.lastAttemptedRevisionDigest = ociDigest;
  } else if (PROGRESSING_REASONS.has(event.reason)) {
    conditions = [condition('Ready', 'Unknown'), condition('Reconciling', 'True')];
    if (revision) status.lastAttemptedRevision = revision;
  } else {
    conditions = [condition('Ready', 'True')];
    if (revision) {
      status.lastAttemptedRevision = revision;
      status.lastAppliedRevision = revision;
    }
  }
  status.conditions = conditions;
  return {
    apiVersion: io.apiVersion ?? DEFAULT_API_VERSION[io.kind] ?? '',
    kind: io.kind,
    metadata: { name: io.name, ...(io.namespace ? { namespace: io.namespace } : {}) },
    status,
  };
}

export function describeFluxEvent(event: FluxEventPayload): string {
  const io = event.involvedObject;
  const revision = fluxRevision(event.metadata);
  return `Flux ${event.severity} event for ${io.kind} ${io.namespace ? `${io.namespace}/` : ''}${io.name}: ${event.reason}${revision ? ` at ${revision}` : ''}`;
}
