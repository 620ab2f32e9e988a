import { groupKind, type KubeObject } from '../observe/types.ts';
import type { Assessor, Health } from './types.ts';

/**
 * Assessors keyed by "group/Kind" (core kinds by "Kind"), with a generic kstatus-style fallback.
 * Modules in this folder register themselves; index.ts imports them all.
 */
const assessors = new Map<string, Assessor>();
let fallback: Assessor | undefined;

export function registerAssessor(keys: string | string[], assessor: Assessor): void {
  for (const key of Array.isArray(keys) ? keys : [keys]) assessors.set(key, assessor);
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

/** Assess one object. Never throws: an assessor that throws yields `unknown` with the error as message. */
export function assess(object: KubeObject, now: Date): Health {
  const assessor = assessorFor(object);
  if (!assessor) return { state: 'unknown', reason: 'NoAssessor', message: `no assessor for ${object.apiVersion}/${object.kind}` };
  try {
    return assessor(object, now);
  } catch (error) {
    return { state: 'unknown', reason: 'AssessorError', message: error instanceof Error ? error.message : String(error) };
  }
}
