import { assess } from '../health/index.ts';
import { groupKind, type KubeObject, type Observed } from '../observe/types.ts';
import type { ResolvedTarget } from '../config/schema.ts';
import { formatDuration } from '../config/duration.ts';
import type { Evidence, Verdict } from './types.ts';

/** Finds each of the target's configured resources among the observed objects (API version may differ). */
export function evidenceFor(target: Pick<ResolvedTarget, 'resources'>, observed: Observed[], now: Date): Evidence[] {
  const index = new Map<string, Observed>();
  for (const o of observed) index.set(objectKey(groupKind(o.object.apiVersion, o.object.kind), o.object.metadata.namespace, o.object.metadata.name), o);
  return target.resources.map((r) => {
    const gk = groupKind(r.apiVersion, r.kind);
    const found = index.get(objectKey(gk, r.namespace, r.name));
    if (!found) {
      return {
        apiVersion: r.apiVersion, kind: r.kind, groupKind: gk, namespace: r.namespace, name: r.name,
        state: 'unknown', reason: 'NotFound', message: 'the object was not found in what was observed',
      };
    }
    return toEvidence(found.object, found.source, now);
  });
}

export function toEvidence(object: KubeObject, source: string, now: Date): Evidence {
  const h = assess(object, now);
  const e: Evidence = {
    apiVersion: object.apiVersion, kind: object.kind, groupKind: groupKind(object.apiVersion, object.kind),
    namespace: object.metadata.namespace, name: object.metadata.name,
    ...h, source,
  };
  if (h.state === 'failed') e.failureClass = h.failureClass ?? 'analysis';
  const hold = object.metadata.annotations?.[HOLD_ANNOTATION];
  if (typeof hold === 'string') e.hold = hold.trim() || 'no reason given';
  return e;
}

/** On any watched object of a target, this annotation stops lastgood from writing for the target; its value is the reason. */
export const HOLD_ANNOTATION = 'lastgood.dev/hold';

function objectKey(gk: string, namespace: string | undefined, name: string): string {
  return `${gk}|${namespace ?? ''}|${name}`;
}

/**
 * The target's verdict from its objects' health. Any failed object fails the target (class
 * `promotion` only when every failed object says promotion). Otherwise a target that is not all
 * healthy is progressing, and stuck once an object has been progressing longer than `stuckAfter`
 * (time in state from the objects' own condition times; suspended objects are never stuck).
 */
export function verdictFor(target: Pick<ResolvedTarget, 'name' | 'stuckAfterMs'>, evidence: Evidence[], now: Date): Verdict {
  const failed = evidence.filter((e) => e.state === 'failed');
  if (failed.length > 0) {
    const cls = failed.every((e) => e.failureClass === 'promotion') ? 'promotion' : 'analysis';
    const since = earliest(failed.map((e) => e.since));
    const first = failed[0]!;
    return {
      target: target.name, verdict: 'failed', class: cls, since, evidence,
      summary: `failed (${cls}): ${describe(first)} ${first.reason}${since ? ` ${formatDuration(now.getTime() - Date.parse(since))} ago` : ''}`,
    };
  }
  if (evidence.every((e) => e.state === 'healthy')) {
    return { target: target.name, verdict: 'healthy', evidence, summary: `healthy: ${evidence.length} object${evidence.length === 1 ? '' : 's'} healthy` };
  }
  const progressing = evidence.filter((e) => e.state === 'progressing');
  const since = earliest(progressing.map((e) => e.since));
  if (since && now.getTime() - Date.parse(since) > target.stuckAfterMs) {
    const oldest = progressing.find((e) => e.since === since)!;
    return {
      target: target.name, verdict: 'stuck', class: 'stuck', since, evidence,
      summary: `stuck: ${describe(oldest)} ${oldest.reason} for ${formatDuration(now.getTime() - Date.parse(since))} (limit ${formatDuration(target.stuckAfterMs)})`,
    };
  }
  const waiting = evidence.find((e) => e.state !== 'healthy')!;
  return {
    target: target.name, verdict: 'progressing', since, evidence,
    summary: `progressing: ${describe(waiting)} ${waiting.state} (${waiting.reason})${since ? ` for ${formatDuration(now.getTime() - Date.parse(since))}` : ''}`,
  };
}

export function describe(e: Pick<Evidence, 'kind' | 'namespace' | 'name'>): string {
  return `${e.kind} ${e.namespace ? `${e.namespace}/` : ''}${e.name}`;
}

function earliest(times: Array<string | undefined>): string | undefined {
  let best: string | undefined;
  for (const t of times) if (t && !Number.isNaN(Date.parse(t)) && (!best || Date.parse(t) < Date.parse(best))) best = t;
  return best;
}
