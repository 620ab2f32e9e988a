/**
 * observe/event: a webhook payload → the Kubernetes objects it speaks about, so that the normal
 * pipeline (assess → verdict → decide → locate → plan → deliver) handles an event exactly as it
 * handles a snapshot. Four senders are understood (one file each, with its upstream source):
 *
 * - Flux notification-controller `githubdispatch` provider (event-flux.ts)
 * - Argo CD notifications, a webhook template posting a `repository_dispatch` (event-argocd.ts)
 * - Flagger event webhooks, relayed as a `repository_dispatch` (event-flagger.ts)
 * - Alertmanager webhook v4, relayed as a `repository_dispatch` (event-alertmanager.ts)
 *
 * The file is the workflow's event payload (GITHUB_EVENT_PATH: GitHub's `repository_dispatch`
 * webhook, event_type in `action` and the sender's body in `client_payload`), the body of a
 * dispatch request (`event_type` + `client_payload`), or the sender's body itself.
 * Anything else is an InputError naming the file: nothing is written.
 *
 * Outside text stops here: every string of the payload is scrubbed of secrets and bounded before
 * it is read (src/scrub.ts). Event times are strict ISO 8601 with a zone (Flagger: Unix
 * milliseconds); an unparseable one is bad input, and one ahead of the clock is refused.
 */
import { readTextWithin } from '../read-within.ts';
import type { z } from 'zod';
import type { Config } from '../config/schema.ts';
import { InputError } from '../errors.ts';
import { scrubbedCopy } from '../scrub.ts';
import { alertMatchesResource, alertObject, AlertmanagerNotification, ALERT_API_VERSION, ALERT_KIND, describeAlertmanager, isAlertmanagerNotification, TARGET_LABEL, type AlertPayload } from './event-alertmanager.ts';
import { argoCdObject, ArgoCdApplicationPayload, ArgoCdNotification, describeArgoCd, hasFullApplication, isArgoCdNotification } from './event-argocd.ts';
import { describeFlaggerEvent, FlaggerEvent, flaggerObject, isFlaggerEvent } from './event-flagger.ts';
import { describeFluxEvent, FluxEvent, fluxObject, isFluxEvent } from './event-flux.ts';
import { checkStatusTimes, futureTimeError, parseTime, TIME_FORMAT_HINT } from './times.ts';
import { groupKind, keyOf, type KubeObject, type Observed } from './types.ts';

export type EventSender = 'flux' | 'argocd' | 'flagger' | 'alertmanager';

export interface ParsedEvent {
  sender: EventSender;
  /** the file the payload was read from */
  file: string;
  /** the repository_dispatch event_type, when the payload came wrapped in one */
  dispatchType?: string;
  /** one line for people: what the event says */
  summary: string;
  /** Flux, Argo CD, Flagger: the object the event is about, with the status it reports */
  objects: KubeObject[];
  /** Alertmanager: the alerts, matched to targets by their labels */
  alerts: AlertPayload[];
}

/**
 * The most an event payload may hold (README, docs/security.md): read no further. Above GitHub's
 * own cap on a webhook's payload (25 MB: it delivers none larger), so any event GitHub delivers is read.
 */
export const MAX_EVENT_BYTES = 32 << 20;

/** Reads and parses an event payload file; `now` (default: the clock) refuses times ahead of it. */
export async function readEvent(file: string, opts: { now?: Date } = {}): Promise<ParsedEvent> {
  let text: string | undefined;
  try {
    text = readTextWithin(file, MAX_EVENT_BYTES);
  } catch (error) {
    throw new InputError(`cannot read the event payload: ${(error as NodeJS.ErrnoException).code ?? error}`, { file, cause: error });
  }
  if (text === undefined) throw new InputError(`the event payload is larger than ${MAX_EVENT_BYTES >> 20} MiB, the most lastgood reads as one (GitHub delivers no webhook payload over 25 MB)`, { file });
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw new InputError(`the event payload is not JSON: ${(error as Error).message}`, { file, cause: error });
  }
  // the payload's own times are checked here; the objects' state times, by the engine for every door (times.ts clockRefusal)
  return parseEvent(data, file, { now: opts.now ?? new Date() });
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Unwraps a repository_dispatch and recognises the sender by the payload's shape; with `now`, times ahead of it are refused. */
export function parseEvent(data: unknown, file: string, opts: { now?: Date } = {}): ParsedEvent {
  const event = parsePayload(data, file, opts.now);
  for (const object of event.objects) checkStatusTimes(object, file, `the event's ${object.kind} ${object.metadata.namespace ? `${object.metadata.namespace}/` : ''}${object.metadata.name}`);
  return event;
}

function parsePayload(raw: unknown, file: string, now: Date | undefined): ParsedEvent {
  if (!isRecord(raw)) throw new InputError('the event payload is not a JSON object', { file });
  // a copy: the caller's object is left as it is
  const data = scrubbedCopy(raw);
  let payload: Record<string, unknown> = data;
  let dispatchType: string | undefined;
  if ('client_payload' in data) {
    // GitHub's repository_dispatch webhook puts event_type in `action`; a dispatch request body has `event_type`.
    const type = data.action ?? data.event_type;
    dispatchType = typeof type === 'string' ? type : undefined;
    if (!isRecord(data.client_payload)) throw new InputError(`repository_dispatch${dispatchType ? ` "${dispatchType}"` : ''} has no client_payload object: nothing to read`, { file });
    payload = data.client_payload;
  }
  const base = { file, ...(dispatchType ? { dispatchType } : {}) };
  const wrapped = payload !== data;
  const time = (name: string, value: string | undefined): void => {
    const field = wrapped ? `client_payload.${name}` : name;
    if (value === undefined || value === '') return;
    const ms = parseTime(value);
    if (ms === undefined) throw new InputError(`${field} ${JSON.stringify(value.slice(0, 60))} is not a valid time (${TIME_FORMAT_HINT})`, { file });
    const future = now && futureTimeError(field, ms, now, file);
    if (future) throw future;
  };
  if (isFluxEvent(payload)) {
    const e = validate(FluxEvent, payload, 'Flux notification-controller event', file);
    time('timestamp', e.timestamp);
    return { ...base, sender: 'flux', summary: describeFluxEvent(e), objects: [fluxObject(e)], alerts: [] };
  }
  if (isAlertmanagerNotification(payload)) {
    const n = validate(AlertmanagerNotification, payload, 'Alertmanager webhook notification', file);
    n.alerts.forEach((a, i) => {
      time(`alerts[${i}].startsAt`, a.startsAt);
      // endsAt of a firing alert lies ahead by design (Alertmanager's resolve timeout): parsed, never refused for that
      if (a.endsAt && parseTime(a.endsAt) === undefined) time(`alerts[${i}].endsAt`, a.endsAt);
    });
    return { ...base, sender: 'alertmanager', summary: describeAlertmanager(n), objects: [], alerts: n.alerts };
  }
  if (isArgoCdNotification(payload)) {
    const object = hasFullApplication(payload)
      ? (validate(ArgoCdApplicationPayload, payload, 'Argo CD notification', file).application as unknown as KubeObject)
      : argoCdObject(validate(ArgoCdNotification, payload, 'Argo CD notification', file));
    return { ...base, sender: 'argocd', summary: describeArgoCd(object), objects: [object], alerts: [] };
  }
  if (isFlaggerEvent(payload)) {
    const e = validate(FlaggerEvent, payload, 'Flagger event webhook', file);
    const ms = e.metadata?.timestamp;
    if (ms !== undefined && ms !== '') {
      const field = wrapped ? 'client_payload.metadata.timestamp' : 'metadata.timestamp';
      if (!/^\d{1,15}$/.test(ms)) throw new InputError(`${field} ${JSON.stringify(ms.slice(0, 60))} is not a valid time (Flagger sends Unix milliseconds)`, { file });
      const future = now && futureTimeError(field, Number(ms), now, file);
      if (future) throw future;
    }
    return { ...base, sender: 'flagger', summary: describeFlaggerEvent(e), objects: [flaggerObject(e)], alerts: [] };
  }
  throw new InputError(
    `not an event lastgood understands${dispatchType ? ` (repository_dispatch "${dispatchType}")` : ''}: expected a Flux event (involvedObject), an Argo CD notification (app), a Flagger event (name, namespace, phase) or an Alertmanager notification (alerts)`,
    { file },
  );
}

function validate<S extends z.ZodType>(schema: S, payload: unknown, what: string, file: string): z.output<S> {
  const result = schema.safeParse(payload);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const where = issue.path.length ? `${issue.path.map(String).join('.')}: ` : '';
  throw new InputError(`not a valid ${what}: ${where}${issue.message}`, { file, cause: result.error });
}

export interface EventMatch {
  /** the configured targets the event is about, in config order (empty: nothing to do) */
  targets: string[];
  /** the config to run with: for alerts, each matched target also lists the synthetic Alert resource */
  config: Config;
  /** the event's objects, as observations (source "event:<file>") */
  observed: Observed[];
  /** why nothing matched, for people */
  unmatched?: string;
}

type Resource = Config['targets'][number]['resources'][number];

/**
 * Which targets an event concerns. Flux, Argo CD and Flagger objects match a target that lists
 * the same kind, namespace and name (and API group, when the event names one). Alerts match by
 * labels (event-alertmanager.ts `alertMatchesResource`), or by a `lastgood_target` label.
 */
export function matchEvent(event: ParsedEvent, config: Config): EventMatch {
  const source = `event:${event.file}`;
  if (event.sender === 'alertmanager') return matchAlerts(event, config, source);
  const targets = new Set<string>();
  const observed: Observed[] = [];
  const seen = new Set<string>();
  for (const object of event.objects) {
    for (const t of config.targets) {
      const r = t.resources.find((res) => sameObject(res, object));
      if (!r) continue;
      targets.add(t.name);
      // The target may name another API version of the same kind: observe it under that one.
      const apiVersion = r.apiVersion;
      const key = `${apiVersion}|${object.metadata.namespace ?? ''}|${object.metadata.name}`;
      if (seen.has(key)) continue;
      seen.add(key);
      observed.push({ object: { ...object, apiVersion, kind: r.kind }, source });
    }
  }
  const names = config.targets.map((t) => t.name).filter((n) => targets.has(n));
  const what = event.objects.map((o) => `${o.kind} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`).join(', ');
  return { targets: names, config, observed, ...(names.length === 0 ? { unmatched: `no configured target lists ${what}` } : {}) };
}

function sameObject(r: Resource, o: KubeObject): boolean {
  if (r.kind !== o.kind || r.name !== o.metadata.name || (r.namespace ?? '') !== (o.metadata.namespace ?? '')) return false;
  const eventGroup = o.apiVersion ? groupKind(o.apiVersion, o.kind) : undefined;
  return eventGroup === undefined || eventGroup === groupKind(r.apiVersion, r.kind);
}

function matchAlerts(event: ParsedEvent, config: Config, source: string): EventMatch {
  // target name → alerts grouped by "namespace|alertname"
  const byTarget = new Map<string, Map<string, AlertPayload[]>>();
  const add = (target: string, alert: AlertPayload) => {
    const groups = byTarget.get(target) ?? new Map<string, AlertPayload[]>();
    const key = `${alert.labels.exported_namespace || alert.labels.namespace || ''}|${alert.labels.alertname}`;
    groups.set(key, [...(groups.get(key) ?? []), alert]);
    byTarget.set(target, groups);
  };
  for (const alert of event.alerts) {
    const named = alert.labels[TARGET_LABEL] ?? alert.annotations[TARGET_LABEL];
    if (named !== undefined) {
      if (config.targets.some((t) => t.name === named)) add(named, alert);
      continue;
    }
    for (const t of config.targets) if (t.resources.some((r) => alertMatchesResource(alert.labels, r))) add(t.name, alert);
  }
  const observed: Observed[] = [];
  const targets = config.targets.map((t) => {
    const groups = byTarget.get(t.name);
    if (!groups) return t;
    const resources = [...t.resources];
    for (const alerts of groups.values()) {
      const object = alertObject(alerts);
      observed.push({ object, source });
      resources.push({ apiVersion: ALERT_API_VERSION, kind: ALERT_KIND, name: object.metadata.name, ...(object.metadata.namespace ? { namespace: object.metadata.namespace } : {}) });
    }
    return { ...t, resources };
  });
  const names = config.targets.map((t) => t.name).filter((n) => byTarget.has(n));
  const alertNames = [...new Set(event.alerts.map((a) => a.labels.alertname))].join(', ');
  return {
    targets: names,
    config: { ...config, targets },
    observed,
    ...(names.length === 0 ? { unmatched: `no alert (${alertNames}) matches a configured target's resources by its labels, and none has a ${TARGET_LABEL} label` } : {}),
  };
}

/**
 * The objects to judge: what the cluster (or a snapshot) shows, and the event's objects for
 * what it does not show. The cluster's copy wins: it is the current state, the event a moment ago.
 */
export function withEventObjects(cluster: Observed[], event: Observed[]): Observed[] {
  if (event.length === 0) return cluster;
  const known = new Set(cluster.map(keyOf));
  return [...cluster, ...event.filter((o) => !known.has(keyOf(o)))];
}

/**
 * What a door judges for an event (the Action; `lastgood run --event`, a GitLab CI job on a
 * webhook trigger): the targets the event concerns (only `target`, when one is named) and the
 * config to judge them with. Event only (no cluster, no snapshot), a target is judged on the
 * objects the event reports: its other resources cannot be seen, so they are left out.
 */
export function eventScope(match: EventMatch, opts: { target?: string; eventOnly: boolean }): { config: Config; targets: string[]; unmatched?: string } {
  const config = opts.eventOnly ? onlyObserved(match.config, match.observed) : match.config;
  const targets = match.targets.filter((n) => !opts.target || n === opts.target);
  if (targets.length > 0) return { config, targets };
  return { config, targets, unmatched: match.unmatched ?? `the event concerns ${match.targets.join(', ')}, not the target "${opts.target}"` };
}

/** The config with each target's resources cut down to the objects observed (event-only runs). */
function onlyObserved(config: Config, observed: Observed[]): Config {
  const key = (apiVersion: string, kind: string, namespace: string | undefined, name: string) => `${groupKind(apiVersion, kind)}|${namespace ?? ''}|${name}`;
  const seen = new Set(observed.map(({ object: o }) => key(o.apiVersion, o.kind, o.metadata.namespace, o.metadata.name)));
  return {
    ...config,
    targets: config.targets.map((t) => {
      const resources = t.resources.filter((r) => seen.has(key(r.apiVersion, r.kind, r.namespace, r.name)));
      return resources.length > 0 ? { ...t, resources } : t;
    }),
  };
}
