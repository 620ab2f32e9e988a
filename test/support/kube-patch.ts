/**
 * Patch formats the Kubernetes emulator accepts: JSON merge patch (RFC 7386; also used for
 * strategic merge patch on built-in kinds and for server-side apply, which is close enough for
 * tests: lists are replaced whole) and JSON patch (RFC 6902).
 */

type Json = unknown;

function isObject(v: Json): v is Record<string, Json> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** RFC 7386: objects merge key by key, `null` deletes, anything else replaces. */
export function mergePatch(target: Json, patch: Json): Json {
  if (!isObject(patch)) return structuredClone(patch);
  const out: Record<string, Json> = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key], value);
  }
  return out;
}

export class PatchError extends Error {}

interface Operation {
  op: 'add' | 'remove' | 'replace' | 'move' | 'copy' | 'test';
  path: string;
  from?: string;
  value?: Json;
}

function pointer(path: string): string[] {
  if (path === '') return [];
  if (!path.startsWith('/')) throw new PatchError(`invalid JSON pointer ${JSON.stringify(path)}`);
  return path.slice(1).split('/').map((p) => p.replaceAll('~1', '/').replaceAll('~0', '~'));
}

function parentOf(doc: Json, tokens: string[], path: string): { parent: Json; key: string } {
  let node = doc;
  for (const t of tokens.slice(0, -1)) {
    node = Array.isArray(node) ? node[Number(t)] : isObject(node) ? node[t] : undefined;
    if (node === undefined) throw new PatchError(`doc is missing path: "${path}"`);
  }
  return { parent: node, key: tokens[tokens.length - 1] ?? '' };
}

function get(doc: Json, path: string): Json {
  let node = doc;
  for (const t of pointer(path)) {
    node = Array.isArray(node) ? node[Number(t)] : isObject(node) ? node[t] : undefined;
    if (node === undefined) throw new PatchError(`doc is missing path: "${path}"`);
  }
  return node;
}

function remove(doc: Json, path: string): Json {
  const { parent, key } = parentOf(doc, pointer(path), path);
  if (Array.isArray(parent)) {
    const i = Number(key);
    if (!Number.isInteger(i) || i < 0 || i >= parent.length) throw new PatchError(`remove operation does not apply: doc is missing path: "${path}"`);
    return parent.splice(i, 1)[0];
  }
  if (!isObject(parent) || !(key in parent)) throw new PatchError(`remove operation does not apply: doc is missing path: "${path}"`);
  const old = parent[key];
  delete parent[key];
  return old;
}

function add(doc: Json, path: string, value: Json): Json {
  const tokens = pointer(path);
  if (tokens.length === 0) return value;
  const { parent, key } = parentOf(doc, tokens, path);
  if (Array.isArray(parent)) {
    const i = key === '-' ? parent.length : Number(key);
    if (!Number.isInteger(i) || i < 0 || i > parent.length) throw new PatchError(`add operation does not apply: index out of range: "${path}"`);
    parent.splice(i, 0, value);
  } else if (isObject(parent)) {
    parent[key] = value;
  } else {
    throw new PatchError(`add operation does not apply: doc is missing path: "${path}"`);
  }
  return doc;
}

/** RFC 6902, applied to a copy. */
export function jsonPatch(target: Json, ops: Json): Json {
  if (!Array.isArray(ops)) throw new PatchError('a JSON patch must be an array of operations');
  let doc = structuredClone(target);
  for (const raw of ops as Operation[]) {
    switch (raw.op) {
      case 'add': doc = add(doc, raw.path, structuredClone(raw.value)); break;
      case 'remove': remove(doc, raw.path); break;
      case 'replace': get(doc, raw.path); if (raw.path === '') doc = structuredClone(raw.value); else { remove(doc, raw.path); doc = add(doc, raw.path, structuredClone(raw.value)); } break;
      case 'move': { const v = remove(doc, raw.from ?? ''); doc = add(doc, raw.path, v); break; }
      case 'copy': doc = add(doc, raw.path, structuredClone(get(doc, raw.from ?? ''))); break;
      case 'test': if (JSON.stringify(get(doc, raw.path)) !== JSON.stringify(raw.value)) throw new PatchError(`testing value ${raw.path} failed`); break;
      default: throw new PatchError(`Unexpected kind: ${String((raw as { op?: unknown }).op)}`);
    }
  }
  return doc;
}
