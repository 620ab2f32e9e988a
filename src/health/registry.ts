import { groupKind, type KubeObject } from '../observe/types.ts';
import type { Assessor, Health } from './types.ts';

/**
 * Assessors keyed by "group/Kind" (core kinds by "Kind"), with a generic kstatus-style fallback.
 * Modules in this folder register themselves; index.ts imports them all.
 */
const assessors = new Map<string, Assessor>();
/** assessors whose answer depends on the clock as well as the object (a Pod's restart back-off) */
const clocked = new Set<Assessor>();
let fallback: Assessor | undefined;

export function registerAssessor(keys: string | string[], assessor: Assessor, opts: { usesClock?: boolean } = {}): void {
  for (const key of Array.isArray(keys) ? keys : [keys]) assessors.set(key, assessor);
  if (opts.usesClock) clocked.add(assessor);
}

export function registerFallback(assessor: Assessor): void {
  fallback = assessor;
}

export function assessorFor(object: Pick<KubeObject, 'apiVersion' | 'kind'>): Assessor | undefined {
  return assessors.get(groupKind(String(object.apiVersion ?? ''), String(object.kind ?? ''))) ?? fallback;
}

export function registeredKinds(): string[] {
  return [...assessors.keys()].sort();
}

/**
 * Assessments of objects read from the API server (the controller re-judges a target on every
 * change of one of its objects): by object identity and resourceVersion, which the server changes
 * with every write, so only the object that changed is assessed again. Objects without a
 * resourceVersion (snapshots, events, tests) are assessed every time; so are clock-dependent kinds.
 */
const memo = new WeakMap<KubeObject, { resourceVersion: string; health: Health }>();

/** Assess one object. Never throws: an assessor that throws yields `unknown` with the error as message. */
export function assess(object: KubeObject, now: Date): Health {
  const assessor = assessorFor(object);
  if (!assessor) return { state: 'unknown', reason: 'NoAssessor', message: `no assessor for ${object.apiVersion}/${object.kind}` };
  const resourceVersion = typeof object.metadata?.resourceVersion === 'string' ? object.metadata.resourceVersion : undefined;
  const known = resourceVersion ? memo.get(object) : undefined;
  if (known && known.resourceVersion === resourceVersion) return known.health;
  let h: Health;
  try {
    h = assessor(object, now);
  } catch (error) {
    h = { state: 'unknown', reason: 'AssessorError', message: error instanceof Error ? error.message : String(error) };
  }
  if (resourceVersion && !clocked.has(assessor)) memo.set(object, { resourceVersion, health: h });
  return h;
}
