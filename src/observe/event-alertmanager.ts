/**
 * An Alertmanager webhook notification (webhook_config, payload version 4: prometheus.io
 * docs/alerting/latest/configuration/#webhook_config), forwarded by a relay as the
 * `client_payload` of a `repository_dispatch` (Alertmanager cannot shape the body GitHub needs).
 *
 * An alert is not a Kubernetes object, so it is observed as one of lastgood's own:
 * `lastgood.dev/v1alpha1 Alert`, named after `alertname`, in the namespace the alert labels name.
 * A firing alert carries `Stalled=True` (reason AlertFiring; the rule's own `for:` already
 * confirmed it), a resolved one `Ready=True`; the generic assessor reads those as failed
 * (terminal) and healthy. The alert is added to the resources of the target it matches (see
 * `alertMatchesResource`), so the verdict, the evidence table and the commit trailers show it.
 */
import { z } from 'zod';
import type { KubeObject } from './types.ts';

const Labels = z.record(z.string(), z.string());

export const Alert = z
  .object({
    status: z.enum(['firing', 'resolved']),
    labels: Labels.refine((l) => typeof l.alertname === 'string' && l.alertname !== '', { message: 'an alert needs an alertname label' }),
    annotations: Labels.default({}),
    startsAt: z.string().optional(),
    endsAt: z.string().optional(),
    generatorURL: z.string().optional(),
    fingerprint: z.string().optional(),
  })
  .loose();

export const AlertmanagerNotification = z
  .object({
    version: z.string().optional(),
    groupKey: z.string().optional(),
    truncatedAlerts: z.number().optional(),
    status: z.enum(['firing', 'resolved']).optional(),
    receiver: z.string().optional(),
    groupLabels: Labels.optional(),
    commonLabels: Labels.optional(),
    commonAnnotations: Labels.optional(),
    externalURL: z.string().optional(),
    alerts: z.array(Alert).min(1, 'the notification has no alerts'),
  })
  .loose();

export type AlertPayload = z.output<typeof Alert>;
export type AlertmanagerPayload = z.output<typeof AlertmanagerNotification>;

export const ALERT_API_VERSION = 'lastgood.dev/v1alpha1';
export const ALERT_KIND = 'Alert';
/** An alert label (or annotation) that names the lastgood target outright. */
export const TARGET_LABEL = 'lastgood_target';

export function isAlertmanagerNotification(payload: Record<string, unknown>): boolean {
  return Array.isArray(payload.alerts);
}

/** The namespace an alert is about: `exported_namespace` (metrics scraped from a controller pod) before `namespace`. */
export function alertNamespace(labels: Record<string, string>): string | undefined {
  return labels.exported_namespace || labels.namespace || undefined;
}

/**
 * The matching rule (docs/action.md, "Flagger and Alertmanager: a relay"): an alert is about target resource R when
 * - it names R: a label called after R's kind in lower case equals R's name
 *   (`deployment="podinfo"`, `canary=…`, `kustomization=…`, `helmrelease=…`, `rollout=…`,
 *   `application=…`), or `name` equals R's name and there is no `kind` label or it equals R's kind; and
 * - namespaces agree: for a namespaced R, `exported_namespace` (else `namespace`) equals R's namespace.
 * A `lastgood_target` label or annotation overrides this and names the target directly.
 */
export function alertMatchesResource(labels: Record<string, string>, r: { kind: string; namespace?: string; name: string }): boolean {
  const byKindLabel = labels[r.kind.toLowerCase()] === r.name;
  const byName = labels.name === r.name && (labels.kind === undefined || labels.kind.toLowerCase() === r.kind.toLowerCase());
  if (!byKindLabel && !byName) return false;
  return r.namespace === undefined || alertNamespace(labels) === r.namespace;
}

/** One synthetic Alert object for the alerts of one alertname and namespace (firing if any fires). */
export function alertObject(alerts: AlertPayload[]): KubeObject {
  const first = alerts[0]!;
  const firing = alerts.filter((a) => a.status === 'firing');
  const shown = firing[0] ?? first;
  const message = shown.annotations.summary || shown.annotations.description || shown.annotations.message || shown.labels.alertname!;
  const namespace = alertNamespace(first.labels);
  const condition = firing.length > 0
    ? { type: 'Stalled', status: 'True', reason: 'AlertFiring', message: firing.length > 1 ? `${message} (${firing.length} alerts firing)` : message, ...time(earliest(firing.map((a) => a.startsAt))) }
    : { type: 'Ready', status: 'True', reason: 'AlertResolved', message, ...time(latest(alerts.map((a) => a.endsAt))) };
  return {
    apiVersion: ALERT_API_VERSION,
    kind: ALERT_KIND,
    metadata: { name: first.labels.alertname!, ...(namespace ? { namespace } : {}), labels: first.labels },
    status: { conditions: [condition] },
  };
}

function time(t: string | undefined): { lastTransitionTime?: string } {
  return t ? { lastTransitionTime: t } : {};
}

/** Alertmanager writes "0001-01-01T00:00:00Z" for an unset time. */
function valid(t: string | undefined): t is string {
  return t !== undefined && !t.startsWith('0001-') && !Number.isNaN(Date.parse(t));
}

function earliest(times: Array<string | undefined>): string | undefined {
  return times.filter(valid).sort((a, b) => Date.parse(a) - Date.parse(b))[0];
}

function latest(times: Array<string | undefined>): string | undefined {
  return times.filter(valid).sort((a, b) => Date.parse(b) - Date.parse(a))[0];
}

export function describeAlertmanager(p: AlertmanagerPayload): string {
  const names = [...new Set(p.alerts.map((a) => a.labels.alertname))];
  const firing = p.alerts.filter((a) => a.status === 'firing').length;
  return `Alertmanager notification: ${names.join(', ')} (${firing} firing, ${p.alerts.length - firing} resolved)`;
}
