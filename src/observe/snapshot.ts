import { closeSync, createReadStream, openSync, readSync } from 'node:fs';
import { open, readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { InputError } from '../errors.ts';
import { loadAllYaml, rethrowBound } from '../yaml-read.ts';
import { scrubDeep, scrubText } from '../scrub.ts';
import { checkStatusTimes } from './times.ts';
import { StreamSplitter, type Range, type SplitEvents } from './snapshot-split.ts';
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
 * A large snapshot is never held whole (issue 22: 100,000 objects took 535 MB): a file streams
 * through observe/snapshot-split.ts, each document, and each item of a List in kubectl's shape,
 * is parsed on its own as soon as its lines are in, checked as above, and dropped; what is kept is
 * its identity and where its bytes are (the file and offsets; stdin's bytes, which cannot be read
 * again), and `object` reads and parses it again when the engine reads it (the engine reads a
 * target's few objects). Where any piece does not parse on its own, the whole file is parsed at
 * once as before: its errors, with the line in the whole file, and its objects are exactly those
 * of that parse.
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
      add(readSnapshotBytes(await readStream(opts.stdin ?? process.stdin, 'stdin'), '-', opts));
      continue;
    }
    const expanded = await expand(p);
    files.push(...(expanded.length ? expanded : [`${p} (no .yaml, .yml or .json files)`]));
    for (const file of expanded) add(await readSnapshotFile(file, opts));
  }
  if (out.length === 0 && paths.length > 0) {
    const one = paths.length === 1 && paths[0] !== '-' && files.length <= 1;
    throw new InputError(`no Kubernetes objects in ${one ? 'the snapshot' : files.join(', ')}: nothing to judge (an empty snapshot would make every resource NotFound)`, one ? { file: paths[0]! } : {});
  }
  return out;
}

/**
 * One snapshot's objects from its bytes (stdin's, or a test's); `source` names it in errors.
 * `eager`: every object parsed and kept (`lastgood health`, which prints them all) instead of
 * parsed when read.
 */
export function readSnapshotBytes(bytes: Buffer, source: string, opts: { eager?: boolean } = {}): Observed[] {
  if (!opts.eager) {
    try {
      const reader = new SplitReader(source, (range) => bytes.toString('utf8', range.start, range.end));
      const splitter = new StreamSplitter(reader);
      splitter.push(bytes);
      splitter.end();
      return reader.done();
    } catch {
      // a piece that does not parse alone: the whole parse below says why, or reads it
    }
  }
  return parseSnapshot(bytes.toString('utf8'), source);
}

/** One file's objects, streamed (see readSnapshots); `eager` as for readSnapshotBytes. */
export async function readSnapshotFile(file: string, opts: { eager?: boolean; chunkBytes?: number; maxPieceBytes?: number } = {}): Promise<Observed[]> {
  let kind: Awaited<ReturnType<typeof stat>>;
  try {
    kind = await stat(file);
  } catch (error) {
    throw new InputError(`cannot read snapshot: ${(error as NodeJS.ErrnoException).code ?? error}`, { file, cause: error });
  }
  // a pipe (`--snapshot <(kubectl get …)`), a device: read as a stream, within the bound
  if (!kind.isFile()) return readSnapshotBytes(await readStream(createReadStream(file), file), file, opts);
  if (kind.size > MAX_SNAPSHOT_BYTES) {
    throw new InputError(`the snapshot is ${Math.round(kind.size / (1 << 20))} MiB, more than the ${MAX_SNAPSHOT_BYTES >> 20} MiB lastgood reads from one: give it the target's objects (kubectl get … -o yaml of what the targets list)`, { file });
  }
  if (!opts.eager) {
    let objects: Observed[] | undefined;
    try {
      objects = await streamFile(file, opts.chunkBytes ?? CHUNK_BYTES, opts.maxPieceBytes);
    } catch {
      // as in readSnapshotBytes (a file that cannot be read says so below)
    }
    if (objects) return objects;
  }
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new InputError(`cannot read snapshot: ${(error as NodeJS.ErrnoException).code ?? error}`, { file, cause: error });
  }
  return parseSnapshot(text, file);
}

const CHUNK_BYTES = 1 << 20;

async function streamFile(file: string, chunkBytes: number, maxPieceBytes: number | undefined): Promise<Observed[]> {
  const reader = new SplitReader(file, (range) => readRange(file, range));
  const splitter = new StreamSplitter(reader, maxPieceBytes === undefined ? {} : { maxPieceBytes });
  const handle = await open(file, 'r');
  try {
    for (;;) {
      const chunk = Buffer.allocUnsafe(chunkBytes);
      const { bytesRead } = await handle.read(chunk, 0, chunkBytes, null);
      if (bytesRead === 0) break;
      splitter.push(chunk.subarray(0, bytesRead));
    }
  } finally {
    await handle.close();
  }
  splitter.end();
  return reader.done();
}

/** One object's bytes, read again from its file when the engine reads the object. */
function readRange(file: string, range: Range): string {
  const fd = openSync(file, 'r');
  try {
    const buf = Buffer.alloc(range.end - range.start);
    let got = 0;
    while (got < buf.length) {
      const n = readSync(fd, buf, got, buf.length - got, range.start + got);
      if (n === 0) break;
      got += n;
    }
    return buf.toString('utf8', 0, got);
  } catch (error) {
    throw new InputError(`cannot read snapshot: ${(error as NodeJS.ErrnoException).code ?? error}`, { file, cause: error });
  } finally {
    closeSync(fd);
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

/**
 * What lastgood reads of one snapshot (a file, stdin, a pipe): a dump of the target's objects is
 * kilobytes, a whole cluster's `kubectl get -A -o yaml` rarely more than tens of megabytes. Beyond
 * this, or on bytes that are not text (a NUL: `/dev/zero`, `/dev/urandom`, a binary), reading
 * stops with a refusal (exit 2) instead of filling the memory.
 */
export const MAX_SNAPSHOT_BYTES = 128 << 20;

/** A stream's bytes, within MAX_SNAPSHOT_BYTES and text (stdin, a pipe, a device). */
async function readStream(stream: NodeJS.ReadableStream, source: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const piece of stream) {
    const chunk = typeof piece === 'string' ? Buffer.from(piece) : piece;
    notText(chunk, source);
    size += chunk.length;
    if (size > MAX_SNAPSHOT_BYTES) {
      (stream as Partial<Readable>).destroy?.();
      throw new InputError(`the snapshot is larger than ${MAX_SNAPSHOT_BYTES >> 20} MiB, the most lastgood reads from one: give it the target's objects (kubectl get … -o yaml of what the targets list)`, { file: source });
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

function notText(chunk: Buffer, source: string): void {
  if (chunk.includes(0)) throw new InputError('the snapshot is not text (it holds a NUL byte): give YAML or JSON, as `kubectl get -o yaml` prints it', { file: source });
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
    // the empty documents too, so that a document is named by its place in the file (`---` counted)
    docs = loadAll(text, source, { keepEmpty: true });
  } catch (error) {
    rethrowBound(error);
    throw yamlError(error, source);
  }
  const out: Observed[] = [];
  docs.forEach((doc, index) => {
    if (doc !== null && doc !== undefined) collect(doc, source, index, out);
  });
  return out;
}

/** The documents of a snapshot's text; without `keepEmpty`, the empty ones (`---` with nothing after it) left out. */
function loadAll(text: string, source?: string, opts: { keepEmpty?: boolean } = {}): unknown[] {
  const docs = loadAllYaml(text, { json: true, maxBytes: MAX_SNAPSHOT_BYTES, ...(source ? { where: source } : {}) });
  return opts.keepEmpty ? docs : docs.filter((d) => d !== null && d !== undefined);
}

function yamlError(error: unknown, source: string): InputError {
  const mark = (error as { mark?: { line?: number } }).mark;
  const reason = (error as { reason?: string }).reason ?? (error as Error).message;
  return new InputError(`cannot parse as YAML or JSON: ${reason}`, { file: source, line: mark?.line !== undefined ? mark.line + 1 : undefined, cause: error });
}

function collect(doc: unknown, source: string, index: number, out: Observed[]): void {
  if (isList(doc)) {
    // an item is named by its place in the List: a kubectl List is one document of thousands of objects
    doc.items.forEach((item, i) => out.push({ object: admitted(item, source, `document ${index + 1}, item ${i + 1} of its ${doc.kind}`, true), source }));
    return;
  }
  out.push({ object: admitted(doc, source, `document ${index + 1}`, true), source });
}

function isList(doc: unknown): doc is { kind: string; items: unknown[] } {
  const o = doc as Record<string, unknown> | null;
  return typeof o === 'object' && o !== null && !Array.isArray(o) && typeof o.kind === 'string' && /List$/.test(o.kind) && Array.isArray(o.items);
}

/**
 * One document (or List item) as a Kubernetes object: checked, scrubbed, its status times read.
 * Without the scrub when `scrub` is false: the stream reader's first parse, which only admits the
 * object and keeps its identity (scrubbed: Interner) — the engine gets the object from the second
 * parse, which scrubs it (SnapshotObject). Scrubbing changes no type, and no status time from one
 * that parses to one that does not.
 */
function admitted(doc: unknown, source: string, where: string, scrub: boolean): KubeObject {
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
    throw new InputError(`${where} is not a Kubernetes object`, { file: source });
  }
  const o = doc as Record<string, unknown>;
  const metadata = o.metadata as Record<string, unknown> | undefined;
  if (typeof o.apiVersion !== 'string' || typeof o.kind !== 'string' || typeof metadata?.name !== 'string') {
    throw new InputError(`${where} is not a Kubernetes object (apiVersion, kind and metadata.name are required)`, { file: source });
  }
  if (metadata.namespace !== undefined && typeof metadata.namespace !== 'string') {
    throw new InputError(`${where}: metadata.namespace is not a string`, { file: source });
  }
  const object = (scrub ? scrubDeep(o) : o) as unknown as KubeObject;
  checkStatusTimes(object, source, `${where} (${object.kind} ${typeof metadata.namespace === 'string' ? `${metadata.namespace}/` : ''}${object.metadata.name})`);
  return object;
}

/**
 * The objects of a split stream, each piece parsed on its own as the splitter gives it out; throws
 * where a piece does not parse alone or is not what the whole parse would make of it (the caller
 * then parses the whole).
 */
class SplitReader implements SplitEvents {
  readonly #out: Observed[] = [];
  readonly #source: string;
  readonly #text: (range: Range) => string;
  readonly #names = new Interner();
  #head: string | undefined;

  constructor(source: string, text: (range: Range) => string) {
    this.#source = source;
    this.#text = text;
  }

  done(): Observed[] {
    return this.#out;
  }

  document(range: Range, bytes: Buffer): void {
    const parsed = loadAll(bytes.toString('utf8'), this.#source);
    if (parsed.length > 1) throw new Error('a piece holds more than one document');
    if (parsed.length === 1) this.#add(parsed[0], range, false);
  }

  listHead(_range: Range, bytes: Buffer): void {
    this.#head = bytes.toString('utf8');
  }

  item(range: Range, bytes: Buffer): void {
    this.#add(pieceOf(bytes.toString('utf8'), true), range, true);
  }

  listTail(_range: Range, bytes: Buffer): void {
    if (this.#head === undefined) throw new Error('a List tail without its head');
    const envelope = envelopeOf(this.#head, bytes.toString('utf8'));
    if (typeof envelope.kind !== 'string' || !/List$/.test(envelope.kind)) throw new Error('the items are not those of a List');
    this.#head = undefined;
  }

  #add(doc: unknown, range: Range, item: boolean): void {
    if (isList(doc)) return collect(doc, this.#source, 0, this.#out);
    const object = admitted(doc, this.#source, 'document 1', false);
    this.#out.push(new SnapshotObject(this.#text, range.start, range.end, item, this.#source, this.#names.id(object)));
  }
}

/** Stands for a List's items between its head and tail (a value no snapshot holds). */
const ITEMS_HELD_APART = 'lastgood-items-held-apart-5c0e9b';

/**
 * A List without its items: the lines before `items:` and after the entries, parsed together with
 * a stand-in `items:` between them, so that they are read as in the whole document (a line after
 * the entries that is no key of the mapping, such as `{{ .ns }}`, fails here as it fails there; a
 * key given both before and after the items keeps the later value, as there; a second `items:`
 * replaces the stand-in, and the file goes to the whole parse).
 */
function envelopeOf(head: string, tail: string): Record<string, unknown> {
  const docs = loadAllYaml(`${head}items: ${ITEMS_HELD_APART}\n${tail}`, { json: true, maxBytes: MAX_SNAPSHOT_BYTES });
  const d = docs[0];
  if (docs.length === 1 && typeof d === 'object' && d !== null && !Array.isArray(d) && (d as Record<string, unknown>).items === ITEMS_HELD_APART) return d as Record<string, unknown>;
  throw new Error('not the head and tail of a List');
}

/** One piece parsed alone: a whole document, or a List item (its `- ` entry: a sequence of one). */
function pieceOf(text: string, item: boolean): unknown {
  const docs = loadAll(text);
  if (!item) {
    if (docs.length !== 1) throw new Error('a piece is not one document');
    return docs[0];
  }
  const seq = docs[0];
  if (docs.length !== 1 || !Array.isArray(seq) || seq.length !== 1) throw new Error('an item is not one sequence entry');
  return seq[0];
}

/**
 * An object of a snapshot, kept as its identity and where its bytes are; `object` reads and parses
 * it when first read: the same parse, scrub and check that admitted it (a file changed since is
 * refused, not judged under another object's name).
 */
class SnapshotObject implements Observed {
  readonly #text: (range: Range) => string;
  readonly #start: number;
  readonly #end: number;
  readonly #item: boolean;
  #object: KubeObject | undefined;
  readonly source: string;
  readonly id: ObjectId;

  constructor(text: (range: Range) => string, start: number, end: number, item: boolean, source: string, id: ObjectId) {
    this.#text = text;
    this.#start = start;
    this.#end = end;
    this.#item = item;
    this.source = source;
    this.id = id;
  }

  get object(): KubeObject {
    return (this.#object ??= this.#read());
  }

  #read(): KubeObject {
    let doc: unknown;
    try {
      doc = pieceOf(this.#text({ start: this.#start, end: this.#end }), this.#item);
    } catch (error) {
      if (error instanceof InputError) throw error;
      throw new InputError(`${this.#what()} could not be read again: the file changed while lastgood read it`, { file: this.source, cause: error });
    }
    const object = isList(doc) ? undefined : admitted(doc, this.source, 'document 1', true);
    const m = object?.metadata;
    if (!object || object.apiVersion !== this.id.apiVersion || object.kind !== this.id.kind || m!.name !== this.id.name || m!.namespace !== this.id.namespace) {
      throw new InputError(`${this.#what()} is no longer there: the file changed while lastgood read it`, { file: this.source });
    }
    return object;
  }

  #what(): string {
    return `${this.id.kind} ${this.id.namespace ? `${this.id.namespace}/` : ''}${this.id.name}`;
  }
}

/**
 * Scrubbed identities (as scrubDeep makes them) that share their strings: API versions, kinds and
 * namespaces repeat, and a name cut from a parsed piece would keep that piece's whole text alive
 * (V8 slices strings).
 */
class Interner {
  readonly #strings = new Map<string, string>();

  #shared(raw: string): string {
    let kept = this.#strings.get(raw);
    if (kept === undefined) this.#strings.set(copy(raw), (kept = copy(scrubText(raw))));
    return kept;
  }

  id(o: KubeObject): ObjectId {
    const id: ObjectId = { apiVersion: this.#shared(o.apiVersion), kind: this.#shared(o.kind), name: copy(scrubText(o.metadata.name)) };
    if (o.metadata.namespace !== undefined) id.namespace = this.#shared(o.metadata.namespace);
    return id;
  }
}

/** A string of its own (not a slice of a larger one). */
function copy(s: string): string {
  return s.length < 13 ? s : (JSON.parse(JSON.stringify(s)) as string);
}
