/**
 * Lenient readers for the status of objects as they come from snapshots, the API or events.
 * Upstream objects are often partial or not schema-valid (`conditions: {}`, numbers as strings),
 * and assessors must never throw, so every reader here accepts `unknown` and returns a typed value
 * or `undefined`.
 */
import type { KubeObject } from '../observe/types.ts';
import type { Health } from './types.ts';

export type Rec = Record<string, unknown>;

/** `v` when it is a plain object, else an empty object. */
export function rec(v: unknown): Rec {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Rec) : {};
}

/** `v` when it is an array, else an empty array. */
export function arr(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

/** A non-empty string, or undefined. Numbers and booleans are written as strings. */
export function str(v: unknown): string | undefined {
  if (typeof v === 'string') return v === '' ? undefined : v;
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  if (typeof v === 'boolean') return String(v);
  return undefined;
}

/** A finite number; numeric strings ("3") are accepted because some controllers write them (Argo Rollouts). */
export function num(v: unknown): number | undefined {
  if (typeof v === 'number') return Number.isFinite(v) ? v : undefined;
  if (typeof v === 'string' && /^\s*-?\d+(\.\d+)?\s*$/.test(v)) return Number(v);
  return undefined;
}

export function bool(v: unknown): boolean {
  return v === true || v === 'true';
}

/** A time as ISO-8601 (normalised through Date), or undefined when it does not parse. */
export function isoTime(v: unknown): string | undefined {
  if (typeof v !== 'string' && !(v instanceof Date)) return undefined;
  const ms = v instanceof Date ? v.getTime() : Date.parse(v);
  if (!Number.isFinite(ms)) return undefined;
  try {
    return new Date(ms).toISOString();
  } catch {
    return undefined;
  }
}

/** The later of several ISO times (undefined entries ignored). */
export function latest(...times: (string | undefined)[]): string | undefined {
  let best: string | undefined;
  for (const t of times) if (t !== undefined && (best === undefined || Date.parse(t) > Date.parse(best))) best = t;
  return best;
}

export interface Condition {
  type: string;
  /** "True" | "False" | "Unknown" (as written; booleans are normalised to "True"/"False") */
  status: string;
  reason: string;
  message: string;
  lastTransitionTime?: string;
  lastUpdateTime?: string;
  observedGeneration?: number;
}

/** `status.conditions` (or another list) as typed conditions; entries without a type are dropped. */
export function conditionsOf(list: unknown): Condition[] {
  const out: Condition[] = [];
  for (const item of arr(list)) {
    const c = rec(item);
    const type = str(c.type);
    if (!type) continue;
    const rawStatus = c.status;
    const status = rawStatus === true ? 'True' : rawStatus === false ? 'False' : (str(rawStatus) ?? 'Unknown');
    const condition: Condition = { type, status, reason: str(c.reason) ?? '', message: str(c.message) ?? '' };
    const ltt = isoTime(c.lastTransitionTime);
    if (ltt) condition.lastTransitionTime = ltt;
    const lut = isoTime(c.lastUpdateTime);
    if (lut) condition.lastUpdateTime = lut;
    const og = num(c.observedGeneration);
    if (og !== undefined) condition.observedGeneration = og;
    out.push(condition);
  }
  return out;
}

export function conditions(object: KubeObject): Condition[] {
  return conditionsOf(rec(object.status).conditions);
}

export function findCondition(list: Condition[], type: string): Condition | undefined {
  return list.find((c) => c.type === type);
}

export function isTrue(c: Condition | undefined): boolean {
  return c?.status === 'True';
}

export function isFalse(c: Condition | undefined): boolean {
  return c?.status === 'False';
}

/** When a condition last changed: its transition time, else its update time. */
export function conditionSince(c: Condition | undefined): string | undefined {
  return c ? (c.lastTransitionTime ?? c.lastUpdateTime) : undefined;
}

export function metadataOf(object: KubeObject): Rec {
  return rec((object as { metadata?: unknown }).metadata);
}

export function generation(object: KubeObject): number | undefined {
  return num(metadataOf(object).generation);
}

/** True when the controller has not yet observed the newest spec (status.observedGeneration < metadata.generation). */
export function generationNotObserved(object: KubeObject): boolean {
  const gen = generation(object);
  const observed = num(rec(object.status).observedGeneration);
  return gen !== undefined && observed !== undefined && observed !== gen && observed < gen;
}

export function isTerminating(object: KubeObject): boolean {
  return metadataOf(object).deletionTimestamp !== undefined && metadataOf(object).deletionTimestamp !== null;
}

/** The `Health` of an object being deleted (kstatus: Terminating). */
export function terminating(object: KubeObject): Health {
  const since = isoTime(metadataOf(object).deletionTimestamp);
  return { state: 'progressing', reason: 'Terminating', message: 'object is being deleted', ...(since ? { since } : {}) };
}

/**
 * The container images of a pod template's spec (`initContainers` first, then `containers`),
 * deduplicated in order. `podSpec` is `spec.template.spec` for workloads, `spec` for a Pod.
 */
export function podSpecImages(podSpec: unknown): string[] {
  const images: string[] = [];
  const spec = rec(podSpec);
  for (const list of [spec.initContainers, spec.containers]) {
    for (const container of arr(list)) {
      const image = str(rec(container).image);
      if (image && !images.includes(image)) images.push(image);
    }
  }
  return images;
}

/** Builds a Health without undefined optional fields (so objects compare and print cleanly). */
export function health(fields: Health): Health {
  const out: Health = { state: fields.state, reason: fields.reason, message: fields.message };
  if (fields.since !== undefined) out.since = fields.since;
  if (fields.state === 'failed') out.failureClass = fields.failureClass ?? 'analysis';
  if (fields.terminal !== undefined) out.terminal = fields.terminal;
  if (fields.attempted !== undefined && Object.keys(fields.attempted).length > 0) out.attempted = fields.attempted;
  if (fields.lastSucceeded !== undefined && Object.keys(fields.lastSucceeded).length > 0) out.lastSucceeded = fields.lastSucceeded;
  if (fields.inFlight !== undefined) out.inFlight = fields.inFlight;
  if (fields.failingObjects?.length) out.failingObjects = fields.failingObjects;
  if (fields.failingImages?.length) out.failingImages = fields.failingImages;
  if (fields.revertHazard !== undefined) out.revertHazard = fields.revertHazard;
  if (fields.notes?.length) out.notes = fields.notes;
  return out;
}
