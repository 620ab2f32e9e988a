/**
 * An Argo CD notification sent as a `repository_dispatch` by a webhook template in
 * argocd-notifications-cm (docs/action.md, "Argo CD notifications", gives the template). Argo CD has no GitHub dispatch
 * service of its own: the webhook service posts whatever body the template renders, so lastgood
 * defines the `client_payload` and reads it here:
 *
 *   { "source": "argocd",
 *     "app": { "name", "namespace" },
 *     "health": { "status", "message" },
 *     "sync": { "status", "revision" },
 *     "operationState": { "phase", "message", "startedAt", "finishedAt", "syncRevision" },
 *     "reconciledAt" }
 *
 * Go templates render a missing field as "<no value>" (or ""), which is read as absent.
 * A template may instead send the whole Application as `application` ({{toJson .app}}): it is
 * then used as it is.
 */
import { z } from 'zod';
import type { KubeObject } from './types.ts';

/** "", "<no value>" (text/template's rendering of a missing field) and null are absent. */
const text = z.preprocess((v) => (v === '' || v === '<no value>' || v === null ? undefined : v), z.string().optional());

export const ArgoCdNotification = z
  .object({
    source: text,
    app: z.object({ name: z.string().min(1), namespace: text }).loose(),
    health: z.object({ status: text, message: text, lastTransitionTime: text }).loose().optional(),
    sync: z.object({ status: text, revision: text }).loose().optional(),
    operationState: z.object({ phase: text, message: text, startedAt: text, finishedAt: text, syncRevision: text }).loose().optional(),
    reconciledAt: text,
  })
  .loose();

export const ArgoCdApplicationPayload = z
  .object({
    application: z
      .object({
        apiVersion: z.string().startsWith('argoproj.io/'),
        kind: z.literal('Application'),
        metadata: z.object({ name: z.string().min(1), namespace: z.string().optional() }).loose(),
      })
      .loose(),
  })
  .loose();

export type ArgoCdPayload = z.output<typeof ArgoCdNotification>;

export function isArgoCdNotification(payload: Record<string, unknown>): boolean {
  return payload.source === 'argocd' || isObject(payload.app) || isObject(payload.application);
}

export function hasFullApplication(payload: Record<string, unknown>): boolean {
  return isObject(payload.application);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function argoCdObject(p: ArgoCdPayload): KubeObject {
  const status: Record<string, unknown> = {};
  if (p.health?.status) status.health = { status: p.health.status, ...(p.health.message ? { message: p.health.message } : {}), ...(p.health.lastTransitionTime ? { lastTransitionTime: p.health.lastTransitionTime } : {}) };
  if (p.sync?.status || p.sync?.revision) status.sync = { ...(p.sync.status ? { status: p.sync.status } : {}), ...(p.sync.revision ? { revision: p.sync.revision } : {}) };
  const op = p.operationState;
  if (op?.phase) {
    status.operationState = {
      phase: op.phase,
      ...(op.message ? { message: op.message } : {}),
      ...(op.startedAt ? { startedAt: op.startedAt } : {}),
      ...(op.finishedAt ? { finishedAt: op.finishedAt } : {}),
      ...(op.syncRevision ? { syncResult: { revision: op.syncRevision } } : {}),
    };
  }
  if (p.reconciledAt) status.reconciledAt = p.reconciledAt;
  return {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Application',
    metadata: { name: p.app.name, ...(p.app.namespace ? { namespace: p.app.namespace } : {}) },
    status,
  };
}

export function describeArgoCd(object: KubeObject): string {
  const s = (object.status ?? {}) as { health?: { status?: string }; sync?: { status?: string; revision?: string }; operationState?: { phase?: string } };
  const parts = [s.health?.status && `health ${s.health.status}`, s.sync?.status && `sync ${s.sync.status}`, s.operationState?.phase && `last sync ${s.operationState.phase}`].filter(Boolean);
  const ns = object.metadata.namespace ? `${object.metadata.namespace}/` : '';
  return `Argo CD notification for Application ${ns}${object.metadata.name}: ${parts.join(', ') || 'no status'}${s.sync?.revision ? ` at ${s.sync.revision}` : ''}`;
}
