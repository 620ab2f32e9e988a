import jsYaml from 'js-yaml';
import { groupKind } from '../observe/types.ts';

/** One object of a build, keyed "group/Kind namespace/name" ("Kind name" for a core, cluster-scoped one). */
export interface RenderedObject {
  key: string;
  object: Record<string, unknown>;
}

export function objectKeyOf(o: Record<string, unknown>): string {
  const meta = (o.metadata ?? {}) as { name?: unknown; namespace?: unknown };
  const gk = groupKind(String(o.apiVersion ?? ''), String(o.kind ?? ''));
  const name = String(meta.name ?? '');
  return meta.namespace ? `${gk} ${String(meta.namespace)}/${name}` : `${gk} ${name}`;
}

/**
 * The documents of a kustomize build, in order, each with its own text exactly as kustomize printed
 * it. kustomize joins documents with "---\n" (kustomize api/resmap/reswrangler.go AsYaml, L285-307),
 * and a document's own lines never start with "---" at column 0 (block scalars are indented).
 */
export function splitDocuments(output: string): string[] {
  if (output.trim() === '') return [];
  return output.split(/^---\n/m).filter((d) => d.trim() !== '');
}

/**
 * Parse a build's documents. The core schema (no timestamps, no binary): a rendered value keeps the
 * type YAML 1.2 gives it, as the Kubernetes API server reads it.
 */
export function parseObjects(docs: string[]): RenderedObject[] {
  const out: RenderedObject[] = [];
  for (const d of docs) {
    const o = jsYaml.load(d, { schema: jsYaml.CORE_SCHEMA });
    if (!o || typeof o !== 'object' || Array.isArray(o)) continue;
    const object = o as Record<string, unknown>;
    out.push({ key: objectKeyOf(object), object });
  }
  return out;
}

/** Deep equality of parsed YAML values (plain objects, arrays, scalars). */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    return a.length === bb.length && a.every((v, i) => deepEqual(v, bb[i]));
  }
  const ak = Object.keys(a);
  const bk = Object.keys(b);
  if (ak.length !== bk.length) return false;
  return ak.every((k) => Object.hasOwn(b, k) && deepEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

const escapeSegment = (s: string) => s.replaceAll('~', '~0').replaceAll('/', '~1');

/**
 * An array whose items are all objects with a distinct string `name` is keyed by name, the way
 * strategic merge patches merge containers, initContainers, env, volumes, ports and
 * imagePullSecrets (their patchMergeKey is `name`); any other array by index. So a reordered or
 * inserted container does not make every later container look changed.
 */
function nameKeys(a: unknown[]): string[] | undefined {
  if (a.length === 0) return undefined;
  const names: string[] = [];
  for (const item of a) {
    if (!item || typeof item !== 'object' || Array.isArray(item)) return undefined;
    const n = (item as { name?: unknown }).name;
    if (typeof n !== 'string') return undefined;
    names.push(n);
  }
  return new Set(names).size === names.length ? names : undefined;
}

/**
 * Flatten an object to leaves: JSON-pointer-like paths ("/spec/template/spec/containers/name=app/image",
 * "/spec/ports/0/port") → scalar, or an empty object/array (so that their presence counts).
 */
export function flatten(value: unknown, prefix = '', out = new Map<string, unknown>()): Map<string, unknown> {
  if (Array.isArray(value)) {
    if (value.length === 0) out.set(prefix, []);
    const names = nameKeys(value);
    value.forEach((v, i) => flatten(v, `${prefix}/${names ? `name=${escapeSegment(names[i]!)}` : i}`, out));
  } else if (value && typeof value === 'object') {
    const entries = Object.entries(value);
    if (entries.length === 0) out.set(prefix, {});
    for (const [k, v] of entries) flatten(v, `${prefix}/${escapeSegment(k)}`, out);
  } else {
    out.set(prefix, value);
  }
  return out;
}
