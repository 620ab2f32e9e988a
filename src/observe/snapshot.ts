import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import jsYaml from 'js-yaml';
import { InputError } from '../errors.ts';
import { scrubDeep } from '../scrub.ts';
import { checkStatusTimes } from './times.ts';
import { splitStream, type DocumentSpan, type ListSpan, type Range } from './snapshot-split.ts';
import type { KubeObject, ObjectId, Observed } from './types.ts';

/**
 * observe/snapshot: objects from files, folders and stdin ("-"), as `kubectl get -o yaml|json`
 * prints them: YAML or JSON, multi-document, `kind: List`. js-yaml reads (fast on large dumps);
 * `json: true` makes a duplicate key keep the last value instead of failing, as the API server does.
 *
 * Outside text stops here: every string of every object is scrubbed of secrets and bounded
 * (src/scrub.ts), and every status time must parse (a time ahead of the clock is the engine's to
 * refuse, for every door alike: observe/times.ts clockRefusal). No objects at all is bad input: an empty snapshot would make every resource NotFound.
 *
 * A large snapshot is not held parsed (issue 22: 100,000 objects took 535 MB): each document, and
 * each item of a List in kubectl's shape, is parsed on its own (observe/snapshot-split.ts), checked
 * as above, and dropped; what is kept is its identity and its bytes, and `object` parses it again
 * when the engine reads it (the engine reads a target's few objects). Where any piece does not
 * parse on its own, the whole file is parsed at once as before: its errors, with the line in the
 * whole file, and its objects are exactly those of that parse.
 */
export async function readSnapshots(paths: string[], opts: { stdin?: NodeJS.ReadableStream; eager?: boolean } = {}): Promise<Observed[]> {
  const out: Observed[] = [];
  const files: string[] = [];
  const add = (objects: Observed[]) => {
    for (const o of objects) out.push(o);
  };
  for (const p of paths) {
    if (p === '-') {
      files.push('stdin');
      add(readSnapshotBytes(await readStream(opts.stdin ?? process.stdin), '-', opts));
      continue;
    }
    const expanded = await expand(p);
    files.push(...(expanded.length ? expanded : [`${p} (no .yaml, .yml or .json files)`]));
    for (const file of expanded) add(readSnapshotBytes(await readBytes(file), file, opts));
  }
  if (out.length === 0 && paths.length > 0) {
    const one = paths.length === 1 && paths[0] !== '-' && files.length <= 1;
    throw new InputError(`no Kubernetes objects in ${one ? 'the snapshot' : files.join(', ')}: nothing to judge (an empty snapshot would make every resource NotFound)`, one ? { file: paths[0]! } : {});
  }
  return out;
}

/**
 * One file's objects from its bytes; `source` names the file in errors. `eager`: every object
 * parsed and kept (`lastgood health`, which prints them all) instead of parsed when read.
 */
export function readSnapshotBytes(bytes: Buffer, source: string, opts: { eager?: boolean } = {}): Observed[] {
  const docs = opts.eager ? undefined : splitStream(bytes);
  if (docs) {
    try {
      return objectsOfSpans(bytes, docs, source);
    } catch {
      // a piece that does not parse alone: the whole parse below says why, or reads it
    }
  }
  return parseSnapshot(bytes.toString('utf8'), source);
}

async function readBytes(file: string): Promise<Buffer> {
  try {
    return await readFile(file);
  } catch (error) {
    throw new InputError(`cannot read snapshot: ${(error as NodeJS.ErrnoException).code ?? error}`, { file, cause: error });
  }
}

const SNAPSHOT_FILE = /\.(ya?ml|json)$/i;

async function expand(p: string): Promise<string[]> {
  let info;
  try {
    info = await stat(p);
  } catch (error) {
    throw new InputError(`cannot read snapshot: ${(error as NodeJS.ErrnoException).code ?? error}`, { file: p, cause: error });
  }
  if (!info.isDirectory()) return [p];
  const entries = await readdir(p, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile() && SNAPSHOT_FILE.test(e.name))
    .map((e) => path.join(e.parentPath, e.name))
    .sort();
}

async function readStream(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks);
}

/** Parses one file's text into objects; `source` names the file in errors. */
export function parseSnapshot(text: string, source: string): Observed[] {
  try {
    return objectsOf(text, source);
  } catch (error) {
    // Upstream test data is sometimes a Go template ({{ .ns }}); read its placeholders as plain words.
    if (!GO_PLACEHOLDER.test(text)) throw error;
    try {
      return objectsOf(text.replace(GO_PLACEHOLDER_ALL, '$1'), source);
    } catch {
      throw error;
    }
  }
}

const GO_PLACEHOLDER = /\{\{-?\s*\.?([\w.]+)\s*-?\}\}/;
const GO_PLACEHOLDER_ALL = new RegExp(GO_PLACEHOLDER.source, 'g');

function objectsOf(text: string, source: string): Observed[] {
  let docs: unknown[];
  try {
    docs = loadAll(text);
  } catch (error) {
    throw yamlError(error, source);
  }
  const out: Observed[] = [];
  docs.forEach((doc, index) => collect(doc, source, index, out));
  return out;
}

function loadAll(text: string): unknown[] {
  return jsYaml.loadAll(text, null, { json: true }).filter((d) => d !== null && d !== undefined);
}

function yamlError(error: unknown, source: string): InputError {
  const mark = (error as { mark?: { line?: number } }).mark;
  const reason = (error as { reason?: string }).reason ?? (error as Error).message;
  return new InputError(`cannot parse as YAML or JSON: ${reason}`, { file: source, line: mark?.line !== undefined ? mark.line + 1 : undefined, cause: error });
}

function collect(doc: unknown, source: string, index: number, out: Observed[]): void {
  if (isList(doc)) {
    for (const item of doc.items) collect(item, source, index, out);
    return;
  }
  out.push({ object: checked(doc, source, index), source });
}

function isList(doc: unknown): doc is { kind: string; items: unknown[] } {
  const o = doc as Record<string, unknown> | null;
  return typeof o === 'object' && o !== null && !Array.isArray(o) && typeof o.kind === 'string' && /List$/.test(o.kind) && Array.isArray(o.items);
}

/** One document (or List item) as a Kubernetes object: checked, scrubbed, its status times read. */
function checked(doc: unknown, source: string, index: number): KubeObject {
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
    throw new InputError(`document ${index + 1} is not a Kubernetes object`, { file: source });
  }
  const o = doc as Record<string, unknown>;
  const metadata = o.metadata as Record<string, unknown> | undefined;
  if (typeof o.apiVersion !== 'string' || typeof o.kind !== 'string' || typeof metadata?.name !== 'string') {
    throw new InputError(`document ${index + 1} is not a Kubernetes object (apiVersion, kind and metadata.name are required)`, { file: source });
  }
  if (metadata.namespace !== undefined && typeof metadata.namespace !== 'string') {
    throw new InputError(`document ${index + 1}: metadata.namespace is not a string`, { file: source });
  }
  const object = scrubDeep(o) as unknown as KubeObject;
  checkStatusTimes(object, source, `document ${index + 1} (${object.kind} ${typeof metadata.namespace === 'string' ? `${metadata.namespace}/` : ''}${object.metadata.name})`);
  return object;
}

/**
 * The objects of a split stream, each piece parsed on its own; throws where a piece does not
 * parse alone or is not what the whole parse would make of it (the caller then parses the whole).
 */
function objectsOfSpans(bytes: Buffer, docs: DocumentSpan[], source: string): Observed[] {
  const out: Observed[] = [];
  const names = new Interner();
  const lazy = (doc: unknown, range: Range, item: boolean) => {
    if (isList(doc)) return collect(doc, source, 0, out);
    const object = checked(doc, source, 0);
    out.push(new SnapshotObject(bytes, range.start, range.end, item, source, names.id(object)));
  };
  for (const doc of docs) {
    if (doc.list && isListEnvelope(bytes, doc.list)) {
      const { itemStarts, itemsEnd } = doc.list;
      for (let i = 0; i < itemStarts.length; i++) {
        const range = { start: itemStarts[i]!, end: itemStarts[i + 1] ?? itemsEnd };
        lazy(parsePiece(bytes, range, true), range, true);
      }
      continue;
    }
    const parsed = loadAll(decode(bytes, doc));
    if (parsed.length > 1) throw new Error('a piece holds more than one document');
    if (parsed.length === 1) lazy(parsed[0], doc, false);
  }
  return out;
}

/** A List's head and tail, each parsed alone: together a `…List` mapping without `items`. */
function isListEnvelope(bytes: Buffer, list: ListSpan): boolean {
  const part = (range: Range): Record<string, unknown> | undefined => {
    const text = decode(bytes, range);
    const docs = jsYaml.loadAll(text, null, { json: true });
    // nothing but comments (and the `---` line) is no mapping; `~` or `null` is a null the whole parse would refuse
    if (docs.length === 0 || (docs.length === 1 && docs[0] === null && ONLY_COMMENTS.test(text))) return {};
    const d = docs[0];
    return docs.length === 1 && typeof d === 'object' && d !== null && !Array.isArray(d) && !Object.hasOwn(d, 'items') ? (d as Record<string, unknown>) : undefined;
  };
  const head = part(list.head);
  const tail = part(list.tail);
  if (!head || !tail) return false;
  const kind = Object.hasOwn(tail, 'kind') ? tail.kind : head.kind;
  return typeof kind === 'string' && /List$/.test(kind);
}

const ONLY_COMMENTS = /^(?:---[ \t]*(?:#.*)?\r?\n)?(?:[ \t]*(?:#.*)?(?:\r?\n|$))*$/;

/** One piece parsed alone: a whole document, or a List item (its `- ` entry: a sequence of one). */
function parsePiece(bytes: Buffer, range: Range, item: boolean): unknown {
  const docs = loadAll(decode(bytes, range));
  if (!item) {
    if (docs.length !== 1) throw new Error('a piece is not one document');
    return docs[0];
  }
  const seq = docs[0];
  if (docs.length !== 1 || !Array.isArray(seq) || seq.length !== 1) throw new Error('an item is not one sequence entry');
  return seq[0];
}

function decode(bytes: Buffer, range: Range): string {
  return bytes.toString('utf8', range.start, range.end);
}

/**
 * An object of a snapshot, kept as its identity and its bytes; `object` parses and scrubs it when
 * first read (the same parse that checked it: js-yaml and scrubDeep give the same object again).
 */
class SnapshotObject implements Observed {
  readonly #bytes: Buffer;
  readonly #start: number;
  readonly #end: number;
  readonly #item: boolean;
  #object: KubeObject | undefined;
  readonly source: string;
  readonly id: ObjectId;

  constructor(bytes: Buffer, start: number, end: number, item: boolean, source: string, id: ObjectId) {
    this.#bytes = bytes;
    this.#start = start;
    this.#end = end;
    this.#item = item;
    this.source = source;
    this.id = id;
  }

  get object(): KubeObject {
    return (this.#object ??= scrubDeep(parsePiece(this.#bytes, { start: this.#start, end: this.#end }, this.#item)) as KubeObject);
  }
}

/**
 * Identities that share their strings: API versions, kinds and namespaces repeat, and a name cut
 * from a parsed piece would keep that piece's whole text alive (V8 slices strings).
 */
class Interner {
  readonly #strings = new Map<string, string>();

  #shared(s: string): string {
    let kept = this.#strings.get(s);
    if (kept === undefined) this.#strings.set((kept = copy(s)), kept);
    return kept;
  }

  id(o: KubeObject): ObjectId {
    const id: ObjectId = { apiVersion: this.#shared(o.apiVersion), kind: this.#shared(o.kind), name: copy(o.metadata.name) };
    if (o.metadata.namespace !== undefined) id.namespace = this.#shared(o.metadata.namespace);
    return id;
  }
}

/** A string of its own (not a slice of a larger one). */
function copy(s: string): string {
  return s.length < 13 ? s : (JSON.parse(JSON.stringify(s)) as string);
}
