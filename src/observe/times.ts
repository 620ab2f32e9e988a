/**
 * Times from outside (objects' status, event payloads, --now, freezeUntil, a git host's commit
 * and deployment dates) and the one rule of time every door follows (issue 19):
 *
 * - they are strict ISO 8601 with a zone (RFC 3339, as Kubernetes writes them). A lenient parse
 *   let `--now 1` mean 2001 and an event `timestamp: "soon"` skip maxAge (issue 15): an
 *   unparseable time is bad input naming the file and field;
 * - the clocks of the cluster, the runner and the git host differ a little: a time up to
 *   CLOCK_SKEW_MS ahead of this clock is read as "now" (an age is never negative, `ageMs`);
 * - beyond that, the observation is refused as evidence (`clockRefusal`), with the field, the
 *   time and the clock in the reason: its age would be negative, and would pass every maxAge,
 *   wait and stuckAfter check. The engine applies it to every observed object (decide/verdict.ts
 *   toEvidence), whichever door read it, and decide holds the target while it stands.
 */
import { formatDuration } from '../config/duration.ts';
import { InputError } from '../errors.ts';
import type { Health } from '../health/types.ts';
import type { KubeObject } from './types.ts';

/** How far a time may lie ahead of `now` and still be read (clocks of cluster, runner and git host differ a little). */
export const CLOCK_SKEW_MS = 5 * 60_000;

/** How long ago `from` was at `now` (ms): never negative (a time within the skew tolerance is "now"). */
export function ageMs(from: number, now: number): number {
  return Math.max(0, now - from);
}

const ISO = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?([Zz]|[+-]\d{2}:?\d{2})$/;

/** Milliseconds since the epoch of a strict ISO 8601 time with a zone, or undefined. */
export function parseTime(text: string): number | undefined {
  const m = ISO.exec(text.trim());
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s = '0', frac = '0', zone] = m;
  const year = Number(y), month = Number(mo), day = Number(d), hour = Number(h), minute = Number(mi), second = Number(s);
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth || hour > 23 || minute > 59 || second > 60) return undefined;
  let offsetMin = 0;
  if (zone && zone.toUpperCase() !== 'Z') {
    const z = /^([+-])(\d{2}):?(\d{2})$/.exec(zone)!;
    const oh = Number(z[2]), om = Number(z[3]);
    if (oh > 23 || om > 59) return undefined;
    offsetMin = (z[1] === '-' ? -1 : 1) * (oh * 60 + om);
  }
  const ms = Date.UTC(year, month - 1, day, hour, minute, Math.min(second, 59)) + Math.floor(Number(`0.${frac}`) * 1000) - offsetMin * 60_000;
  return Number.isFinite(ms) ? ms : undefined;
}

export const TIME_FORMAT_HINT = 'expected an ISO 8601 time with a zone, like 2026-11-01T12:00:00Z';

/** Status fields that hold times: lastTransitionTime, finishedAt, reconciledAt, …Timestamp. */
const TIME_KEY = /(Time|At|Timestamp)$/;
/** …At fields that echo a free-form annotation, not a time (Flux: lastHandledReconcileAt, lastHandledForceAt, …). */
const NOT_TIME_KEY = /^lastHandled/;

/** Every time field under `status` must parse; returns nothing, throws an InputError naming the file and field. */
export function checkStatusTimes(object: KubeObject, file: string, what = describe(object)): void {
  const walk = (v: unknown, path: string, seen: Set<object>): void => {
    if (typeof v !== 'object' || v === null || seen.has(v) || v instanceof Date) return;
    seen.add(v);
    if (Array.isArray(v)) {
      v.forEach((item, i) => walk(item, `${path}[${i}]`, seen));
      return;
    }
    for (const [k, value] of Object.entries(v as Record<string, unknown>)) {
      const field = `${path}.${k}`;
      if (typeof value === 'string' && TIME_KEY.test(k) && !NOT_TIME_KEY.test(k) && value.trim() !== '' && parseTime(value) === undefined) {
        throw new InputError(`${what}: ${field} ${JSON.stringify(value.slice(0, 60))} is not a valid time (${TIME_FORMAT_HINT})`, { file });
      }
      walk(value, field, seen);
    }
  };
  walk(object.status, 'status', new Set());
}

/**
 * The one rule of time for an observed object: its Health's time (`since`: when its state began,
 * from the object's own condition times) more than CLOCK_SKEW_MS ahead of `now` is refused as
 * evidence. Returns the reason (the file, the object, the field, the time and the clock), or
 * undefined when the time can be read.
 */
export function clockRefusal(object: KubeObject, h: Pick<Health, 'since'>, now: Date, source: string | undefined): string | undefined {
  if (!h.since) return undefined;
  const since = Date.parse(h.since);
  if (!(since > now.getTime() + CLOCK_SKEW_MS)) return undefined;
  const field = fieldWithTime(object.status, since);
  const file = source && source !== 'kube' ? `${source.replace(/^event:/, '')}: ` : '';
  return `${file}${describe(object)}: ${field ? `${field} ` : ''}${h.since} is in the future of the clock (${now.toISOString()}) by ${formatDuration(since - now.getTime())}, more than the ${formatDuration(CLOCK_SKEW_MS)} allowed for clock skew: refused as evidence (check the clocks of the cluster and of this machine, or --now)`;
}

/** A time in the future of `now` beyond the skew: the InputError to throw, naming the file and field. */
export function futureTimeError(field: string, ms: number, now: Date, file: string): InputError | undefined {
  if (!(ms > now.getTime() + CLOCK_SKEW_MS)) return undefined;
  return new InputError(`${field} ${new Date(ms).toISOString()} is in the future of the clock (${now.toISOString()}) by more than ${CLOCK_SKEW_MS / 60_000}m: refused (check the sender's clock)`, { file });
}

function fieldWithTime(status: unknown, ms: number): string | undefined {
  let found: string | undefined;
  const walk = (v: unknown, path: string, seen: Set<object>): void => {
    if (found || typeof v !== 'object' || v === null || seen.has(v)) return;
    seen.add(v);
    if (v instanceof Date) return;
    for (const [k, value] of Object.entries(v as Record<string, unknown>)) {
      const field = Array.isArray(v) ? `${path}[${k}]` : `${path}.${k}`;
      const t = typeof value === 'string' ? parseTime(value) : value instanceof Date ? value.getTime() : undefined;
      if (t === ms && TIME_KEY.test(k)) {
        found = field;
        return;
      }
      walk(value, field, seen);
    }
  };
  walk(status, 'status', new Set());
  return found;
}

function describe(o: KubeObject): string {
  return `${o.kind} ${o.metadata?.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata?.name}`;
}
