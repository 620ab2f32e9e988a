import fs from 'node:fs';
import path from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import { deflateSync, inflateSync } from 'node:zlib';
import { InputError } from '../../errors.ts';
import { applyDelta, type ObjectType } from '../git-remote/pack-index.ts';

/**
 * Reads a git object database as git does: packs through their `.idx` (a binary search in the
 * index file, never a table of every object), each object read at its offset in the `.pack` with
 * a positioned read and inflated with native zlib; loose objects; the folders of
 * `objects/info/alternates`. Deltas are resolved from their bases, which a small bounded cache
 * keeps (git's `delta_base_cache`, core.deltaBaseCacheLimit, in sha1-file.c/packfile.c).
 *
 * Why not isomorphic-git's `readObject`: it reads every pack whole into memory at the first
 * object (340 MB of resident memory for a 50,000-file repository, issue 22), parses each `.idx`
 * into a Map of every object id, lists `objects/pack` and stats the loose folder on every read,
 * and inflates in JavaScript (pako): most of a local revert's time. isomorphic-git still writes
 * objects, refs, the index and packs for a push.
 *
 * Memory held: each `.idx` file (28 bytes an object), a few open file descriptors, and the delta
 * bases cache (at most BASE_CACHE_BYTES).
 */

/** Delta bases kept for the next delta of the same chain (git's default is 96 MiB; lastgood reads little). */
const BASE_CACHE_BYTES = 16 * 1024 * 1024;
/** Open pack files, process-wide: packs are immutable by name, so one descriptor serves every reader. */
const MAX_OPEN_PACKS = 32;

export interface GitObject {
  type: ObjectType;
  content: Buffer;
}

/** An object the database does not have (isomorphic-git's NotFoundError shape, which callers test). */
export class MissingObjectError extends Error {
  readonly code = 'NotFoundError';
  readonly data: { what: string };
  constructor(oid: string) {
    super(`Could not find ${oid}.`);
    this.name = 'NotFoundError';
    this.data = { what: oid };
  }
}

const TYPES: Array<ObjectType | undefined> = [undefined, 'commit', 'tree', 'blob', 'tag'];
const OFS_DELTA = 6;
const REF_DELTA = 7;

interface Pack {
  /** the .pack file */
  file: string;
  idx: Buffer;
  count: number;
  /** where the 64-bit offsets table starts */
  largeAt: number;
}

/**
 * Packs are read through windows of PACK_WINDOW bytes, the least recently used dropped past
 * WINDOWS_KEPT of them (git's core.packedGitWindowSize / packedGitLimit, with smaller numbers):
 * the objects of one folder's versions lie close together, so most reads need no system call.
 */
const PACK_WINDOW = 1024 * 1024;
const WINDOWS_KEPT = 48;
const windows = new Map<string, Buffer>();

/** `length` bytes of a pack file at `at` (fewer at its end), from the windows or the file. */
function packBytes(file: string, at: number, length: number): Buffer {
  const start = Math.floor(at / PACK_WINDOW) * PACK_WINDOW;
  if (at + length <= start + PACK_WINDOW) {
    const key = `${file}:${start}`;
    let w = windows.get(key);
    if (w) {
      windows.delete(key);
      windows.set(key, w);
    } else {
      const buf = Buffer.allocUnsafe(PACK_WINDOW);
      const got = fs.readSync(packFd(file), buf, 0, PACK_WINDOW, start);
      w = buf.subarray(0, got);
      windows.set(key, w);
      if (windows.size > WINDOWS_KEPT) windows.delete(windows.keys().next().value as string);
    }
    return w.subarray(at - start, Math.min(w.length, at - start + length));
  }
  const buf = Buffer.allocUnsafe(length);
  const got = fs.readSync(packFd(file), buf, 0, length, at);
  return buf.subarray(0, got);
}

const openPacks = new Map<string, number>();
function packFd(file: string): number {
  let fd = openPacks.get(file);
  if (fd !== undefined) {
    openPacks.delete(file);
    openPacks.set(file, fd);
    return fd;
  }
  fd = fs.openSync(file, 'r');
  openPacks.set(file, fd);
  if (openPacks.size > MAX_OPEN_PACKS) {
    const [oldest, oldFd] = openPacks.entries().next().value as [string, number];
    openPacks.delete(oldest);
    fs.closeSync(oldFd);
  }
  return fd;
}

/** A bounded map of recently used objects, by byte size (least recently used first out). */
class ByteLru<V extends { content: Buffer }> {
  private readonly map = new Map<string, V>();
  private bytes = 0;
  private readonly limit: number;
  constructor(limit: number) {
    this.limit = limit;
  }
  get(key: string): V | undefined {
    const v = this.map.get(key);
    if (v !== undefined) {
      this.map.delete(key);
      this.map.set(key, v);
    }
    return v;
  }
  set(key: string, value: V): void {
    if (value.content.length > this.limit / 4 || this.map.has(key)) return;
    this.map.set(key, value);
    this.bytes += value.content.length + 64;
    while (this.bytes > this.limit) {
      const [k, v] = this.map.entries().next().value as [string, V];
      this.map.delete(k);
      this.bytes -= v.content.length + 64;
    }
  }
}

export class ObjectStore {
  private readonly objectDirs: string[];
  private packs: Pack[] | undefined;
  private readonly bases = new ByteLru<GitObject>(BASE_CACHE_BYTES);

  /** `missing`: the error for an object the database lacks (default MissingObjectError, which the git backend's mirror fetches) */
  private readonly missing: (oid: string) => Error;

  constructor(gitdir: string, missing: (oid: string) => Error = (oid) => new MissingObjectError(oid)) {
    this.missing = missing;
    const own = path.join(gitdir, 'objects');
    this.objectDirs = [own, ...alternates(own)];
  }

  /** Forget the list of packs (a fetch added one): the next miss lists them again anyway. */
  rescan(): void {
    this.packs = undefined;
  }

  has(oid: string): boolean {
    return this.locate(oid) !== undefined || this.loosePath(oid) !== undefined;
  }

  /** The object, or the `missing` error. */
  read(oid: string): GitObject {
    const found = this.tryRead(oid);
    if (!found) throw this.missing(oid);
    return found;
  }

  tryRead(oid: string): GitObject | undefined {
    const at = this.locate(oid);
    if (at) return this.readPacked(at.pack, at.offset, oid);
    const loose = this.loosePath(oid);
    return loose ? readLoose(loose, oid) : undefined;
  }

  /** The full id of a unique abbreviation (4 to 40 hex digits), undefined when unknown or ambiguous. */
  expand(prefix: string): string | undefined {
    const p = prefix.toLowerCase();
    if (!/^[0-9a-f]{4,40}$/.test(p)) return undefined;
    if (p.length === 40) return this.has(p) ? p : undefined;
    const found = new Set<string>();
    for (const pack of this.packList()) for (const oid of prefixMatches(pack, p)) found.add(oid);
    for (const dir of this.objectDirs) {
      let names: string[] = [];
      try {
        names = fs.readdirSync(path.join(dir, p.slice(0, 2)));
      } catch {
        continue;
      }
      for (const n of names) if (`${p.slice(0, 2)}${n}`.startsWith(p) && n.length === 38) found.add(`${p.slice(0, 2)}${n}`);
    }
    return found.size === 1 ? [...found][0] : undefined;
  }

  private packList(): Pack[] {
    if (this.packs) return this.packs;
    const packs: Pack[] = [];
    for (const dir of this.objectDirs) {
      const packDir = path.join(dir, 'pack');
      let names: string[] = [];
      try {
        names = fs.readdirSync(packDir);
      } catch {
        continue;
      }
      for (const n of names.filter((x) => x.endsWith('.idx')).sort()) {
        const file = path.join(packDir, n.replace(/\.idx$/, '.pack'));
        if (!fs.existsSync(file)) continue;
        const idx = fs.readFileSync(path.join(packDir, n));
        if (idx.length < 8 + 1024 || idx.readUInt32BE(0) !== 0xff744f63 || idx.readUInt32BE(4) !== 2) {
          throw new InputError(`${path.join(packDir, n)} is not a version 2 pack index: the repository is damaged or written by an unknown git`);
        }
        const count = idx.readUInt32BE(8 + 255 * 4);
        packs.push({ file, idx, count, largeAt: 8 + 1024 + count * 28 });
      }
    }
    this.packs = packs;
    return packs;
  }

  /** Where the object lies in a pack (re-listing the packs once when it is not found: a fetch may have added one). */
  private locate(oid: string): { pack: Pack; offset: number } | undefined {
    const key = Buffer.from(oid, 'hex');
    if (key.length !== 20) return undefined;
    for (let pass = 0; pass < 2; pass++) {
      for (const pack of this.packList()) {
        const i = indexOf(pack, key);
        if (i >= 0) return { pack, offset: offsetOf(pack, i) };
      }
      if (pass === 0 && this.packs !== undefined && this.hasNewPacks()) this.packs = undefined;
      else break;
    }
    return undefined;
  }

  private hasNewPacks(): boolean {
    const known = new Set(this.packs!.map((p) => p.file));
    for (const dir of this.objectDirs) {
      try {
        for (const n of fs.readdirSync(path.join(dir, 'pack'))) if (n.endsWith('.idx') && !known.has(path.join(dir, 'pack', n.replace(/\.idx$/, '.pack')))) return true;
      } catch {
        // no pack folder
      }
    }
    return false;
  }

  private loosePath(oid: string): string | undefined {
    for (const dir of this.objectDirs) {
      const p = path.join(dir, oid.slice(0, 2), oid.slice(2));
      if (fs.existsSync(p)) return p;
    }
    return undefined;
  }

  /** An object at `offset` of a pack, its delta chain resolved. */
  private readPacked(pack: Pack, offset: number, oid: string): GitObject {
    const key = (at: number) => `${pack.file}:${at}`;
    // down the chain to a whole object (or one the cache holds), then the deltas applied upwards
    const chain: Array<{ offset: number; delta: Buffer }> = [];
    let found: GitObject | undefined;
    for (let at = offset; !found; ) {
      if (chain.length > 10_000) throw corrupt(pack, oid, 'a delta chain longer than 10,000');
      found = this.bases.get(key(at));
      if (found) break;
      const h = readHeader(pack.file, at);
      if (h.type >= 1 && h.type <= 4) {
        found = { type: TYPES[h.type]!, content: inflateAt(h.dataAt, h.size, pack, oid) };
        if (chain.length > 0) this.bases.set(key(at), found);
        break;
      }
      chain.push({ offset: at, delta: inflateAt(h.dataAt, h.size, pack, oid) });
      if (h.type === OFS_DELTA) at -= h.baseDistance!;
      else if (h.type === REF_DELTA) found = this.read(h.baseOid!);
      else throw corrupt(pack, oid, `an entry of unknown type ${h.type} at offset ${at}`);
    }
    let content = found.content;
    for (let i = chain.length - 1; i >= 0; i--) {
      try {
        content = applyDelta(content, chain[i]!.delta);
      } catch (error) {
        throw corrupt(pack, oid, (error as Error).message);
      }
      // each version of a chain is the base of the next: the versions of one folder share them
      this.bases.set(key(chain[i]!.offset), { type: found.type, content });
    }
    return { type: found.type, content };
  }
}

function corrupt(pack: Pack, oid: string, why: string): InputError {
  return new InputError(`object ${oid} in ${pack.file} cannot be read (${why}): the repository is damaged; \`git fsck\` tells more`);
}

/** The folders of objects/info/alternates (a `git clone --shared` borrows its objects). */
function alternates(objects: string, depth = 0): string[] {
  let text: string;
  try {
    text = fs.readFileSync(path.join(objects, 'info', 'alternates'), 'utf8');
  } catch {
    return [];
  }
  const out: string[] = [];
  for (const line of text.split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'))) {
    const dir = path.resolve(objects, line);
    out.push(dir);
    if (depth < 5) out.push(...alternates(dir, depth + 1));
  }
  return out;
}

/** The object's position in the index, or -1 (the fan-out table narrows it to its first byte). */
function indexOf(pack: Pack, key: Buffer): number {
  const { idx } = pack;
  const first = key[0]!;
  let lo = first === 0 ? 0 : idx.readUInt32BE(8 + (first - 1) * 4);
  let hi = idx.readUInt32BE(8 + first * 4);
  const base = 8 + 1024;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const cmp = key.compare(idx, base + mid * 20, base + mid * 20 + 20);
    if (cmp === 0) return mid;
    if (cmp < 0) hi = mid;
    else lo = mid + 1;
  }
  return -1;
}

function offsetOf(pack: Pack, i: number): number {
  const { idx, count } = pack;
  const small = idx.readUInt32BE(8 + 1024 + count * 24 + i * 4);
  if (!(small & 0x80000000)) return small;
  return Number(idx.readBigUInt64BE(pack.largeAt + (small & 0x7fffffff) * 8));
}

function* prefixMatches(pack: Pack, prefix: string): Generator<string> {
  const { idx } = pack;
  const first = parseInt(prefix.slice(0, 2), 16);
  const lo = first === 0 ? 0 : idx.readUInt32BE(8 + (first - 1) * 4);
  const hi = idx.readUInt32BE(8 + first * 4);
  const base = 8 + 1024;
  for (let i = lo; i < hi; i++) {
    const hex = idx.toString('hex', base + i * 20, base + i * 20 + 20);
    if (hex.startsWith(prefix)) yield hex;
    else if (hex > prefix) return;
  }
}

interface Header {
  type: number;
  size: number;
  dataAt: number;
  baseDistance?: number;
  baseOid?: string;
}

/** The entry header at `at` (gitformat-pack(5)): type, inflated size, and a delta's base. */
function readHeader(file: string, at: number): Header {
  const headerBuf = packBytes(file, at, 64);
  const n = headerBuf.length;
  let i = 0;
  let byte = headerBuf[i++]!;
  const type = (byte >> 4) & 7;
  let size = byte & 15;
  let shift = 4;
  while (byte & 0x80) {
    byte = headerBuf[i++]!;
    size += (byte & 0x7f) * 2 ** shift;
    shift += 7;
  }
  if (type === OFS_DELTA) {
    byte = headerBuf[i++]!;
    let distance = byte & 0x7f;
    while (byte & 0x80) {
      byte = headerBuf[i++]!;
      distance = (distance + 1) * 128 + (byte & 0x7f);
    }
    return { type, size, dataAt: at + i, baseDistance: distance };
  }
  if (type === REF_DELTA) {
    if (i + 20 > n) throw new Error('truncated ref-delta header');
    return { type, size, dataAt: at + i + 20, baseOid: headerBuf.toString('hex', i, i + 20) };
  }
  return { type, size, dataAt: at + i };
}

/** Inflates the zlib stream at `at` whose inflated size is `size` (reading more of the file while it is cut short). */
function inflateAt(at: number, size: number, pack: Pack, oid: string): Buffer {
  // deflate adds a few bytes per 16 KiB block; a stream rarely exceeds its data by more than this
  let want = size + 64 + (size >> 6);
  for (;;) {
    const input = packBytes(pack.file, at, want);
    try {
      const out = inflateSync(input, { chunkSize: Math.max(64, size + 64) });
      if (out.length !== size) throw corrupt(pack, oid, `an entry inflates to ${out.length} bytes, ${size} announced`);
      return out;
    } catch (error) {
      if (error instanceof InputError) throw error;
      if (input.length < want || want > size * 4 + (1 << 20)) throw corrupt(pack, oid, (error as Error).message);
      want *= 2;
    }
  }
}

function readLoose(file: string, oid: string): GitObject {
  let raw: Buffer;
  try {
    raw = inflateSync(fs.readFileSync(file));
  } catch (error) {
    throw new InputError(`the loose object ${oid} (${file}) cannot be read: ${(error as Error).message}; \`git fsck\` tells more`);
  }
  const nul = raw.indexOf(0);
  const [typeName, sizeText] = raw.toString('latin1', 0, nul).split(' ');
  const type = typeName as ObjectType;
  if (!TYPES.includes(type) || Number(sizeText) !== raw.length - nul - 1) throw new InputError(`the loose object ${oid} (${file}) has a bad header: the repository is damaged`);
  return { type, content: raw.subarray(nul + 1) };
}

/** A tree entry name git refuses (isomorphic-git's UnsafeFilepathError shape, which tree-walk.ts turns into a refusal with the path). */
export class UnsafeEntryError extends Error {
  readonly code = 'UnsafeFilepathError';
  readonly data: { filepath: string };
  constructor(name: string) {
    super(`The filepath "${name}" contains unsafe character sequences`);
    this.name = 'UnsafeFilepathError';
    this.data = { filepath: name };
  }
}

export interface ParsedTreeEntry {
  path: string;
  oid: string;
  mode: string;
  type: 'blob' | 'tree' | 'commit';
}

const MODE_TYPES: Record<string, ParsedTreeEntry['type']> = { '040000': 'tree', '100644': 'blob', '100755': 'blob', '120000': 'blob', '160000': 'commit' };

/**
 * A tree object's entries, read as isomorphic-git reads them (its GitTree parseBuffer): "40000"
 * written as "040000", the type from the mode, and the names git's verify_path() refuses
 * (separators, ".", "..", ".git" and its NTFS/HFS aliases) refused.
 */
export function parseTree(content: Buffer, oid: string): ParsedTreeEntry[] {
  const out: ParsedTreeEntry[] = [];
  let at = 0;
  while (at < content.length) {
    const space = content.indexOf(32, at);
    const nul = space < 0 ? -1 : content.indexOf(0, space);
    if (space < 0 || nul < 0 || nul + 21 > content.length) throw new InputError(`tree ${oid} is damaged (an entry is cut short at byte ${at})`);
    let mode = content.toString('latin1', at, space);
    if (mode === '40000') mode = '040000';
    const type = MODE_TYPES[mode];
    if (!type) throw new InputError(`tree ${oid} has an entry of unknown mode ${mode}`);
    const name = content.toString('utf8', space + 1, nul);
    if (unsafeName(name)) throw new UnsafeEntryError(name);
    out.push({ path: name, oid: content.toString('hex', nul + 1, nul + 21), mode, type });
    at = nul + 21;
  }
  return out;
}

function unsafeName(name: string): boolean {
  // most names are plain: letters, digits, dots, dashes, underscores, not starting with a dot
  if (/^[A-Za-z0-9_-][A-Za-z0-9._-]*$/.test(name) && !/^git~[1-9]/i.test(name)) return false;
  if (name.includes('/') || name.includes('\\')) return true;
  const hfs = name.replace(/[\u200C-\u200F\u202A-\u202E\u206A-\u206F\uFEFF]/g, '');
  if (hfs === '.' || hfs === '..') return true;
  const normalized = hfs.split(':')[0]!.toLowerCase().replace(/[. ]+$/, '');
  return normalized === '.git' || /^\.?git~[1-9]$/.test(normalized);
}

export interface ParsedPerson {
  name: string;
  email: string;
  timestamp: number;
  timezoneOffset: number;
}

export interface ParsedCommit {
  tree: string;
  parents: string[];
  message: string;
  author: ParsedPerson;
  committer: ParsedPerson;
}

/**
 * A commit object, read as isomorphic-git reads it (GitCommit.parse): one `tree` header first, the
 * `parent` headers right after it, the first of any other header, continuation lines joined; the
 * message with CRs removed, no leading newlines and one trailing newline; time zones as minutes
 * west of UTC (JavaScript's getTimezoneOffset sign).
 */
export function parseCommit(content: Buffer, oid: string): ParsedCommit {
  const text = content.toString('utf8');
  const split = text.indexOf('\n\n');
  const head = split < 0 ? text : text.slice(0, split);
  const lines: string[] = [];
  for (const l of head.split('\n')) {
    if (l.startsWith(' ') && lines.length > 0) lines[lines.length - 1] += `\n${l.slice(1)}`;
    else lines.push(l);
  }
  const keyOf = (h: string) => h.slice(0, h.indexOf(' '));
  const valueOf = (h: string) => h.slice(h.indexOf(' ') + 1);
  if (lines.length === 0 || keyOf(lines[0]!) !== 'tree') throw new InputError(`commit ${oid} is damaged: its first header is not its tree`);
  const tree = valueOf(lines[0]!);
  const parents: string[] = [];
  let i = 1;
  for (; i < lines.length && keyOf(lines[i]!) === 'parent'; i++) parents.push(valueOf(lines[i]!));
  const headers = new Map<string, string>();
  for (; i < lines.length; i++) if (!headers.has(keyOf(lines[i]!))) headers.set(keyOf(lines[i]!), valueOf(lines[i]!));
  const message = `${(split < 0 ? '' : text.slice(split + 2)).replace(/\r/g, '').replace(/^\n+/, '').replace(/\n+$/, '')}\n`;
  return { tree, parents, message, author: person(headers.get('author'), oid), committer: person(headers.get('committer'), oid) };
}

function person(value: string | undefined, oid: string): ParsedPerson {
  const m = value === undefined ? null : /^(.*) <(.*)> (.*) (.*)$/.exec(value);
  if (!m) throw new InputError(`commit ${oid} is damaged: no readable author or committer`);
  const tz = /(\+|-)(\d\d)(\d\d)/.exec(m[4]!);
  const minutes = tz ? (tz[1] === '+' ? 1 : -1) * (Number(tz[2]) * 60 + Number(tz[3])) : 0;
  return { name: m[1]!, email: m[2]!, timestamp: Number(m[3]), timezoneOffset: minutes === 0 ? 0 : -minutes };
}

/** The id git gives an object of this type and content. */
export function objectOid(type: ObjectType, content: Uint8Array): string {
  return createHash('sha1').update(`${type} ${content.byteLength}\0`).update(content).digest('hex');
}

/**
 * Writes a loose object (objects/xx/yyyy, zlib-deflated `type size\0content`) unless the database
 * has it; returns its id. The file is written whole or not at all: a temporary file (git's
 * `tmp_obj_` prefix, which fsck and gc know as leftovers) renamed into place. Not fsynced: git's
 * own default leaves loose objects to the file system (core.fsync's default excludes
 * `loose-object`); the ref that names them is fsynced under its lock (refs.ts).
 */
export function writeLooseObject(store: ObjectStore, gitdir: string, type: ObjectType, content: Uint8Array): string {
  const oid = objectOid(type, content);
  if (store.has(oid)) return oid;
  const dir = path.join(gitdir, 'objects', oid.slice(0, 2));
  fs.mkdirSync(dir, { recursive: true });
  const tmp = path.join(dir, `tmp_obj_${randomBytes(6).toString('hex')}`);
  try {
    fs.writeFileSync(tmp, deflateSync(Buffer.concat([Buffer.from(`${type} ${content.byteLength}\0`, 'latin1'), content])), { flag: 'wx', mode: 0o444 });
    fs.renameSync(tmp, path.join(dir, oid.slice(2)));
  } catch (error) {
    // a full disk leaves no half-written object behind (writeFileSync created the file before it failed)
    fs.rmSync(tmp, { force: true });
    throw error;
  }
  return oid;
}

/** A tree object's bytes, as git (and isomorphic-git's GitTree) write them: sorted as if folders ended with "/", "40000" for folders. */
export function serializeTree(entries: Array<{ path: string; oid: string; mode: string }>): Buffer {
  const key = (e: { path: string; mode: string }) => (e.mode === '040000' || e.mode === '40000' ? `${e.path}/` : e.path);
  const sorted = [...entries].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
  return Buffer.concat(sorted.map((e) => Buffer.concat([Buffer.from(`${e.mode.replace(/^0/, '')} ${e.path}\0`, 'utf8'), Buffer.from(e.oid, 'hex')])));
}

/** A commit object's bytes, as isomorphic-git's GitCommit.render writes them (the message's line ends normalised, one trailing newline). */
export function serializeCommit(c: { tree: string; parents: string[]; author: ParsedPerson; committer: ParsedPerson; message: string }): Buffer {
  const who = (p: ParsedPerson) => {
    // isomorphic-git's formatTimezoneOffset, -0 ("-0000") kept
    const east = p.timezoneOffset === 0 ? p.timezoneOffset : -p.timezoneOffset;
    const sign = Math.sign(east) || (Object.is(east, -0) ? -1 : 1);
    const abs = Math.abs(p.timezoneOffset);
    return `${p.name} <${p.email}> ${p.timestamp} ${sign === -1 ? '-' : '+'}${String(Math.floor(abs / 60)).padStart(2, '0')}${String(abs % 60).padStart(2, '0')}`;
  };
  const message = `${c.message.replace(/\r/g, '').replace(/^\n+/, '').replace(/\n+$/, '')}\n`;
  return Buffer.from(`tree ${c.tree}\n${c.parents.map((p) => `parent ${p}\n`).join('')}author ${who(c.author)}\ncommitter ${who(c.committer)}\n\n${message}`, 'utf8');
}
