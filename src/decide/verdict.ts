import { assess } from '../health/index.ts';
import { groupKind, keyOf, objectKey, type KubeObject, type Observed } from '../observe/types.ts';
import type { ObjectRef } from '../health/types.ts';
import type { ResolvedTarget } from '../config/schema.ts';
import { formatDuration } from '../config/duration.ts';
import { ageMs, clockRefusal } from '../observe/times.ts';
import type { Evidence, Verdict } from './types.ts';

type Resource = ResolvedTarget['resources'][number];

/**
 * Finds each of the target's configured resources among the observed objects (API version may
 * differ). With `others` (the resources of every other target), a shared parent's failure that
 * names only other targets' objects is marked `foreign`: it is not this target's failure.
 */
export function evidenceFor(target: Pick<ResolvedTarget, 'resources'>, observed: Observed[], now: Date, others: Resource[][] = []): Evidence[] {
  // by identity: a snapshot's objects are parsed only when found (observe/snapshot.ts)
  const index = new Map<string, Observed>();
  for (const o of observed) index.set(keyOf(o), o);
  const evidence = target.resources.map((r): Evidence => {
    const gk = groupKind(r.apiVersion, r.kind);
    const found = index.get(objectKey(gk, r.namespace, r.name));
    if (!found) {
      return {
        apiVersion: r.apiVersion, kind: r.kind, groupKind: gk, namespace: r.namespace, name: r.name,
        state: 'unknown', reason: 'NotFound', message: 'the object was not found in what was observed',
      };
    }
    return withTargetImages(toEvidence(found.object, found.source, now), found.object, index);
  });
  for (const e of evidence) attribute(e, target.resources, others);
  return evidence;
}

const CANARY = 'flagger.app/Canary';
const ALERT = 'lastgood.dev/Alert';
const WORKLOAD_KINDS: Record<string, string> = { deployment: 'apps/Deployment', statefulset: 'apps/StatefulSet', daemonset: 'apps/DaemonSet', rollout: 'argoproj.io/Rollout' };

/** The workload an object fails about without naming its images: a Canary's target, an alert's `deployment`-style label. */
function workloadOf(e: Evidence, object: KubeObject): Array<{ kind: string; name: string }> {
  if (e.groupKind === CANARY) {
    const targetRef = (object.spec as { targetRef?: { kind?: unknown; name?: unknown } } | undefined)?.targetRef;
    const name = typeof targetRef?.name === 'string' ? targetRef.name : object.metadata.name;
    const kind = typeof targetRef?.kind === 'string' ? targetRef.kind.toLowerCase() : 'deployment';
    return WORKLOAD_KINDS[kind] ? [{ kind: WORKLOAD_KINDS[kind], name }] : [];
  }
  if (e.groupKind === ALERT) {
    const labels = object.metadata.labels ?? {};
    return Object.entries(WORKLOAD_KINDS).filter(([label]) => labels[label]).map(([label, kind]) => ({ kind, name: labels[label]! }));
  }
  return [];
}

/**
 * A Flagger Canary does not say which images it tries; its target workload does (Flagger copies it
 * to `<name>-primary` on promotion, so the target holds the new revision). Likewise an alert about
 * a Deployment. Where that workload was observed too, its images are the failing object's
 * attempted images: what locate matches against the history.
 */
function withTargetImages(e: Evidence, object: KubeObject, index: Map<string, Observed>): Evidence {
  if (e.attempted?.images?.length) return e;
  for (const w of workloadOf(e, object)) {
    const workload = index.get(objectKey(w.kind, object.metadata.namespace, w.name));
    const images = workload ? assess(workload.object, new Date(0)).attempted?.images : undefined;
    if (images?.length) return { ...e, attempted: { ...(e.attempted ?? {}), images } };
  }
  return e;
}

/** The objects a target owns, as a parent's status names them: its resources, and a Canary's workloads (`<name>`, `<name>-primary`). */
function owned(resources: Resource[]): Array<{ kind: string; namespace?: string; name: string }> {
  const out: Array<{ kind: string; namespace?: string; name: string }> = [];
  for (const r of resources) {
    const gk = groupKind(r.apiVersion, r.kind);
    out.push({ kind: gk, namespace: r.namespace, name: r.name });
    if (gk === CANARY) for (const name of [r.name, `${r.name}-primary`]) out.push({ kind: 'apps/Deployment', namespace: r.namespace, name });
  }
  return out;
}

/** A named object is one of `refs` when kind (with or without its group), namespace and name agree. */
function names(refs: Array<{ kind: string; namespace?: string; name: string }>, o: ObjectRef): boolean {
  const bare = (k: string) => k.slice(k.lastIndexOf('/') + 1);
  return refs.some((r) => r.name === o.name && (r.namespace ?? '') === (o.namespace ?? r.namespace ?? '') && (r.kind === o.kind || bare(r.kind) === bare(o.kind)));
}

/**
 * A shared parent (one Flux Kustomization, one Argo CD Application for several targets) fails
 * because of some objects; it fails this target only when one of them is this target's, or when
 * none is any target's (then nobody can tell, and every target that lists it is failed).
 */
function attribute(e: Evidence, mine: Resource[], others: Resource[][]): void {
  if (e.state !== 'failed' || !e.failingObjects?.length || others.length === 0) return;
  const ours = owned(mine);
  if (e.failingObjects.some((o) => names(ours, o))) return;
  const theirs = e.failingObjects.filter((o) => others.some((resources) => names(owned(resources), o)));
  if (theirs.length === 0) return;
  e.foreign = `fails because of ${theirs.map((o) => `${o.kind}/${o.namespace ? `${o.namespace}/` : ''}${o.name}${o.status ? ` (${o.status})` : ''}`).join(', ')}, which belong${theirs.length === 1 ? 's' : ''} to another target`;
}

export function toEvidence(object: KubeObject, source: string, now: Date): Evidence {
  const h = assess(object, now);
  const identity = {
    apiVersion: object.apiVersion, kind: object.kind, groupKind: groupKind(object.apiVersion, object.kind),
    namespace: object.metadata.namespace, name: object.metadata.name,
  };
  // the one rule of time, whichever door observed the object: beyond the skew tolerance, not evidence
  const refused = clockRefusal(object, h, now, source);
  if (refused) return { ...identity, state: 'unknown', reason: 'ClockSkew', message: refused, source, clockRefused: refused };
  const e: Evidence = { ...identity, ...h, source };
  if (h.state === 'failed') e.failureClass = h.failureClass ?? 'analysis';
  const hold = object.metadata.annotations?.[HOLD_ANNOTATION];
  if (typeof hold === 'string') e.hold = hold.trim() || 'no reason given';
  return e;
}

/** On any watched object of a target, this annotation stops lastgood from writing for the target; its value is the reason. */
export const HOLD_ANNOTATION = 'lastgood.dev/hold';

/**
 * The target's verdict from its objects' health. Any failed object fails the target (class
 * `promotion` only when every failed object says promotion). Otherwise a target that is not all
 * healthy is progressing, and stuck once an object has been progressing longer than `stuckAfter`
 * (time in state from the objects' own condition times; suspended objects are never stuck).
 */
export function verdictFor(target: Pick<ResolvedTarget, 'name' | 'stuckAfterMs'>, evidence: Evidence[], now: Date): Verdict {
  const failed = evidence.filter((e) => e.state === 'failed' && !e.foreign);
  if (failed.length > 0) {
    const cls = failed.every((e) => e.failureClass === 'promotion') ? 'promotion' : 'analysis';
    const since = earliest(failed.map((e) => e.since));
    const first = failed[0]!;
    return {
      target: target.name, verdict: 'failed', class: cls, since, evidence,
      summary: `failed (${cls}): ${describe(first)} ${first.reason}${since ? ` ${formatDuration(ageMs(Date.parse(since), now.getTime()))} ago` : ''}`,
    };
  }
  const foreign = evidence.filter((e) => e.foreign);
  const elsewhere = foreign.length ? `; ${foreign.map((e) => `${describe(e)} ${e.foreign}`).join('; ')}` : '';
  if (evidence.every((e) => e.state === 'healthy' || e.foreign)) {
    const own = evidence.length - foreign.length;
    return { target: target.name, verdict: 'healthy', evidence, summary: `healthy: ${own} object${own === 1 ? '' : 's'} healthy${elsewhere}` };
  }
  const progressing = evidence.filter((e) => e.state === 'progressing');
  const since = earliest(progressing.map((e) => e.since));
  if (since && now.getTime() - Date.parse(since) > target.stuckAfterMs) {
    const oldest = progressing.find((e) => e.since === since)!;
    return {
      target: target.name, verdict: 'stuck', class: 'stuck', since, evidence,
      summary: `stuck: ${describe(oldest)} ${oldest.reason} for ${formatDuration(ageMs(Date.parse(since), now.getTime()))} (limit ${formatDuration(target.stuckAfterMs)})`,
    };
  }
  const waiting = evidence.find((e) => e.state !== 'healthy' && !e.foreign)!;
  return {
    target: target.name, verdict: 'progressing', since, evidence,
    summary: `progressing: ${describe(waiting)} ${waiting.state} (${waiting.reason})${since ? ` for ${formatDuration(ageMs(Date.parse(since), now.getTime()))}` : ''}`,
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
