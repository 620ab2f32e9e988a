/**
 * A Flagger event webhook (`type: event` in a Canary's analysis.webhooks): Flagger POSTs
 * `CanaryWebhookPayload` for every event it records (fluxcd/flagger pkg/controller/webhook.go
 * `CallEventWebhook`; docs/gitbook/usage/webhooks.md "Event webhooks"):
 *
 *   { "name", "namespace", "phase", "checksum",
 *     "metadata": { "eventMessage", "eventType": "Normal"|"Warning", "timestamp": "<unix ms>" } }
 *
 * Flagger cannot call the GitHub API itself (no auth headers), so a small relay forwards the body
 * as the `client_payload` of a `repository_dispatch` (docs/action.md, "Flagger and Alertmanager: a relay"). Newer Flagger versions
 * may add canaryWeight/failedChecks/iterations (top level, or as strings in metadata): read
 * where present, because a Failed canary at full weight is a promotion failure.
 *
 * The event becomes a Canary whose status carries the phase and a `Promoted` condition with the
 * event's message and time, which is what the Canary assessor reads.
 *
 * Flagger ≥ 1.44 records the Warning "Promotion of <target>.<ns> failed, primary not ready: <err>"
 * in `handleFailedPromotion` before it syncs the status, so the payload's `phase` is still
 * `Promoting` or `Finalising` (webhook.go `CallEventWebhook` sends `r.Status.Phase`): that event is
 * the failed promotion, and becomes a Canary in phase Failed (fluxcd/flagger pkg/controller/scheduler.go).
 */
import { z } from 'zod';
import type { KubeObject } from './types.ts';

export const FlaggerEvent = z
  .object({
    name: z.string().min(1),
    namespace: z.string().min(1),
    phase: z.string(),
    checksum: z.string().optional(),
    canaryWeight: z.number().optional(),
    failedChecks: z.number().optional(),
    iterations: z.number().optional(),
    metadata: z.record(z.string(), z.string()).optional(),
  })
  .loose();

export type FlaggerEventPayload = z.output<typeof FlaggerEvent>;

export function isFlaggerEvent(payload: Record<string, unknown>): boolean {
  return typeof payload.phase === 'string' && typeof payload.name === 'string' && !('involvedObject' in payload);
}

/** Flagger's timestamp is Unix milliseconds as a string. */
export function flaggerTime(metadata: Record<string, string> | undefined): string | undefined {
  const ms = metadata?.timestamp;
  if (!ms || !/^\d+$/.test(ms)) return undefined;
  return new Date(Number(ms)).toISOString().replace('.000Z', 'Z');
}

function numberFrom(top: number | undefined, meta: string | undefined): number | undefined {
  if (top !== undefined) return top;
  return meta !== undefined && /^\d+$/.test(meta) ? Number(meta) : undefined;
}

/** handleFailedPromotion's Warning: "Promotion of <target>.<namespace> failed, primary not ready: <err>". */
const PROMOTION_FAILED = /^Promotion of \S+ failed, primary not ready/;

/** The phase the event stands for: a failed-promotion Warning is Failed whatever phase it was sent in. */
function eventPhase(e: FlaggerEventPayload): string {
  const message = e.metadata?.eventMessage ?? '';
  if (e.metadata?.eventType !== 'Normal' && PROMOTION_FAILED.test(message)) return 'Failed';
  return e.phase;
}

export function flaggerObject(e: FlaggerEventPayload): KubeObject {
  const time = flaggerTime(e.metadata);
  const phase = eventPhase(e);
  const promoted = ['Succeeded', 'Initialized'].includes(phase) ? 'True' : phase === 'Failed' ? 'False' : 'Unknown';
  const weight = numberFrom(e.canaryWeight, e.metadata?.canaryWeight);
  const failedChecks = numberFrom(e.failedChecks, e.metadata?.failedChecks);
  const iterations = numberFrom(e.iterations, e.metadata?.iterations);
  return {
    apiVersion: 'flagger.app/v1beta1',
    kind: 'Canary',
    metadata: { name: e.name, namespace: e.namespace },
    status: {
      phase,
      ...(weight !== undefined ? { canaryWeight: weight } : {}),
      ...(failedChecks !== undefined ? { failedChecks } : {}),
      ...(iterations !== undefined ? { iterations } : {}),
      conditions: [
        {
          type: 'Promoted', status: promoted, reason: phase, message: e.metadata?.eventMessage ?? '',
          ...(time ? { lastUpdateTime: time, lastTransitionTime: time } : {}),
        },
      ],
    },
  };
}

export function describeFlaggerEvent(e: FlaggerEventPayload): string {
  return `Flagger ${e.metadata?.eventType ?? ''} event for Canary ${e.namespace}/${e.name}: phase ${e.phase || '(none)'}${e.metadata?.eventMessage ? ` — ${e.metadata.eventMessage}` : ''}`.replace('  ', ' ');
}
