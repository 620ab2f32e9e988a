import { createHash, hash } from 'node:crypto';
import { crc32, inflateSync } from 'node:zlib';

/**
 * Indexes a packfile (gitformat-pack(5)) the way `git index-pack` does, in two passes and with
 * native zlib: the first pass inflates every object once to find where it ends (zlib tells how
 * many input bytes the stream used) and hashes the whole objects on the spot; the second resolves
 * the deltas from their bases, children after parents (git's builtin/index-pack.c
 * `resolve_deltas`), holding only the bases on the current chain. isomorphic-git's
 * `GitPackIndex.fromPack` inflates every object several times in JavaScript, which is what made a
 * 50,000-file fetch slow (issue 12).
 *
 * Per-object facts live in typed arrays and object ids in one buffer (20 bytes each), not in
 * an object per entry: a tree-only pack of a large repository has tens of thousands of objects,
 * and the live heap stays a few megabytes.
 */

export type ObjectType = 'commit' | 'tree' | 'blob' | 'tag';
const TYPE_NAMES: Array<ObjectType | undefined> = [undefined, 'commit', 'tree', 'blob', 'tag'];
export const TYPE_CODES: Record<ObjectType, number> = { commit: 1, tree: 2, blob: 3, tag: 4 };
const OFS_DELTA = 6;
const REF_DELTA = 7;
const NO_BASE = -1;

export interface IndexedPack {
  /** how many objects the pack holds */
  count: number;
  /** the pack's trailing SHA-1, hex: its name (pack-<sha>.pack) */
  checksum: string;
  /** the .idx file (version 2) */
  idx: Buffer;
  /** the object ids, hex, in pack order */
  oids(): string[];
}

/** A pack that is not what it claims (bad header, checksum, delta or base). */
export class PackError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PackError';
  }
}

/** An object outside the pack (the base of a ref-delta in a thin pack); undefined when absent. */
export type ExternalBase = (oid: string) => Promise<{ type: ObjectType; content: Uint8Array } | undefined>;

export function objectId(type: ObjectType, content: Uint8Array): string {
  return createHash('sha1').update(`${type} ${content.length}\0`).update(content).digest('hex');
}

function objectIdInto(type: ObjectType, content: Uint8Array, out: Buffer, at: number): void {
  // the one-shot hash is twice as fast as a Hash object per object
  hash('sha1', Buffer.concat([Buffer.from(`${type} ${content.length}\0`, 'latin1'), content]), 'buffer').copy(out, at);
}

/** Inflated deltas kept from the first pass for the second, at most this many bytes. */
const KEEP_BYTES = 32 * 1024 * 1024;

/** Inflates one zlib stream whose inflated size is known: an output chunk of that size, not zlib's 16 KiB default (most of the garbage of a tree-only pack). */
function inflateKnown(input: Buffer, size: number): { data: Buffer; used: number } {
  const { buffer, engine } = inflateSync(input, { info: true, chunkSize: Math.max(64, size + 64) }) as unknown as { buffer: Buffer; engine: { bytesWritten: number } };
  return { data: buffer, used: engine.bytesWritten };
}

export async function indexPack(pack: Buffer, external?: ExternalBase): Promise<IndexedPack> {
  if (pack.length < 32 || pack.toString('latin1', 0, 4) !== 'PACK') throw new PackError('not a packfile (no PACK header)');
  const version = pack.readUInt32BE(4);
  if (version !== 2 && version !== 3) throw new PackError(`unsupported pack version ${version}`);
  const count = pack.readUInt32BE(8);
  const body = pack.length - 20;
  const checksum = pack.subarray(body).toString('hex');
  if (createHash('sha1').update(pack.subarray(0, body)).digest('hex') !== checksum) throw new PackError('pack checksum mismatch (truncated or corrupted in transit)');
  if (count > (body - 12) / 2) throw new PackError(`the pack claims ${count} objects in ${body} bytes`);

  const offset = new Float64Array(count);
  const dataStart = new Float64Array(count);
  const end = new Float64Array(count);
  const size = new Float64Array(count);
  /** the type code; for a delta, once resolved, its base's type */
  const type = new Uint8Array(count);
  const isDelta = new Uint8Array(count);
  const resolved = new Uint8Array(count);
  /** ofs-delta: the base's index; ref-delta: NO_BASE and the base id in refBase */
  const baseIndex = new Int32Array(count).fill(NO_BASE);
  const refBase = new Map<number, string>();
  const oids = Buffer.alloc(count * 20);
  const indexAt = new Map<number, number>();
  /** the deltas pass 1 inflated, kept for pass 2 while the budget lasts (inflated again after) */
  const kept: Array<Buffer | undefined> = new Array(count);
  let keptBytes = 0;

  // pass 1: boundaries, whole objects hashed
  let at = 12;
  for (let i = 0; i < count; i++) {
    if (at >= body) throw new PackError(`pack ends after ${i} of ${count} objects`);
    offset[i] = at;
    indexAt.set(at, i);
    let byte = pack[at++]!;
    const code = (byte >> 4) & 7;
    let n = byte & 15;
    let shift = 4;
    while (byte & 0x80) {
      byte = pack[at++]!;
      n += (byte & 0x7f) * 2 ** shift;
      shift += 7;
    }
    size[i] = n;
    if (code === OFS_DELTA) {
      byte = pack[at++]!;
      let rel = byte & 0x7f;
      while (byte & 0x80) {
        byte = pack[at++]!;
        rel = (rel + 1) * 128 + (byte & 0x7f);
      }
      const base = indexAt.get(offset[i]! - rel);
      if (base === undefined) throw new PackError(`object at ${offset[i]}: no object at its delta base offset`);
      baseIndex[i] = base;
      isDelta[i] = 1;
    } else if (code === REF_DELTA) {
      refBase.set(i, pack.toString('hex', at, at + 20));
      at += 20;
      isDelta[i] = 1;
    } else if (!TYPE_NAMES[code]) throw new PackError(`object at ${offset[i]}: unknown type ${code}`);
    dataStart[i] = at;
    const { data, used } = inflateKnown(pack.subarray(at, body), n);
    if (data.length !== n) throw new PackError(`object at ${offset[i]}: ${data.length} bytes inflated, ${n} announced`);
    at += used;
    end[i] = at;
    // a delta is needed again in pass 2 for sure; a whole object only when it is a base (re-inflated then)
    if (isDelta[i] && keptBytes + n <= KEEP_BYTES) {
      kept[i] = data;
      keptBytes += n;
    }
    if (!isDelta[i]) {
      type[i] = code;
      objectIdInto(TYPE_NAMES[code]!, data, oids, i * 20);
      resolved[i] = 1;
    }
  }
  if (at !== body) throw new PackError(`${body - at} stray bytes after the last object`);

  // pass 2: deltas, from each resolved base down its children
  const ofsChildren = new Map<number, number[]>();
  const refChildren = new Map<string, number[]>();
  for (let i = 0; i < count; i++) {
    if (baseIndex[i] !== NO_BASE) push(ofsChildren, baseIndex[i]!, i);
    else if (refBase.has(i)) push(refChildren, refBase.get(i)!, i);
  }
  const inflated = (i: number) => kept[i] ?? inflateKnown(pack.subarray(dataStart[i]!, end[i]!), size[i]!).data;
  const hexAt = (i: number) => oids.toString('hex', i * 20, i * 20 + 20);
  /** Resolves the children of a base (index, or -1 for an object outside the pack) with the given content and type. */
  const resolveChildren = (base: number, baseOid: string, baseType: number, content: Buffer) => {
    // an explicit stack: delta chains can be long (git allows depth 4095)
    const stack: Array<{ index: number; oid: string; content: Buffer }> = [{ index: base, oid: baseOid, content }];
    while (stack.length) {
      const { index, oid, content: c } = stack.pop()!;
      const kids = [...(index >= 0 ? ofsChildren.get(index) ?? [] : []), ...(refChildren.get(oid) ?? [])];
      refChildren.delete(oid);
      for (const kid of kids) {
        if (resolved[kid]) continue;
        const out = applyDelta(c, inflated(kid));
        type[kid] = baseType;
        objectIdInto(TYPE_NAMES[baseType]!, out, oids, kid * 20);
        resolved[kid] = 1;
        stack.push({ index: kid, oid: hexAt(kid), content: out });
      }
    }
  };
  for (let i = 0; i < count; i++) {
    if (isDelta[i]) continue;
    if (ofsChildren.has(i) || (refChildren.size > 0 && refChildren.has(hexAt(i)))) resolveChildren(i, hexAt(i), type[i]!, inflated(i));
    kept[i] = undefined;
  }
  // ref-deltas whose base is outside the pack (a thin pack), or a delta resolved only above
  for (let progress = true; progress && refChildren.size > 0; ) {
    progress = false;
    for (const [oid, kids] of [...refChildren]) {
      if (kids.every((k) => resolved[k])) {
        refChildren.delete(oid);
        continue;
      }
      let inPack = -1;
      for (let i = 0; i < count && inPack < 0; i++) if (resolved[i] && hexAt(i) === oid) inPack = i;
      let base: { type: number; content: Buffer } | undefined;
      if (inPack >= 0) base = { type: type[inPack]!, content: contentOf(inPack) };
      else {
        const ext = await external?.(oid);
        if (ext) base = { type: TYPE_CODES[ext.type], content: Buffer.from(ext.content) };
      }
      if (!base) continue;
      resolveChildren(inPack, oid, base.type, base.content);
      progress = true;
    }
  }
  for (let i = 0; i < count; i++) {
    if (!resolved[i]) throw new PackError(`deltas have no base in the pack or the repository (first: the object at ${offset[i]}, base ${refBase.get(i) ?? `at ${offset[baseIndex[i]!]}`})`);
  }

  /** The content of a resolved object of this pack (a delta: its chain applied again). */
  function contentOf(i: number): Buffer {
    if (!isDelta[i]) return inflated(i);
    if (baseIndex[i] !== NO_BASE) return applyDelta(contentOf(baseIndex[i]!), inflated(i));
    throw new PackError('a ref-delta cannot be the base of a base outside the pack');
  }

  const crcs = new Uint32Array(count);
  for (let i = 0; i < count; i++) crcs[i] = crc32(pack.subarray(offset[i]!, end[i]!));
  return {
    count,
    checksum,
    idx: writeIdx({ count, oids, crcs, offsets: offset }, pack.subarray(body)),
    oids: () => Array.from({ length: count }, (_, i) => hexAt(i)),
  };
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

/** Applies a git delta (copy/insert instructions, gitformat-pack(5) "Deltified representation") to `base`. */
export function applyDelta(base: Buffer, delta: Buffer): Buffer {
  let at = 0;
  const varint = () => {
    let value = 0;
    let shift = 0;
    let byte: number;
    do {
      byte = delta[at++]!;
      value += (byte & 0x7f) * 2 ** shift;
      shift += 7;
    } while (byte & 0x80);
    return value;
  };
  const baseSize = varint();
  if (baseSize !== base.length) throw new PackError(`delta expects a base of ${baseSize} bytes, the base has ${base.length}`);
  const outSize = varint();
  const out = Buffer.allocUnsafe(outSize);
  let written = 0;
  while (at < delta.length) {
    const op = delta[at++]!;
    if (op & 0x80) {
      let from = 0;
      let length = 0;
      for (let bit = 0; bit < 4; bit++) if (op & (1 << bit)) from += delta[at++]! * 2 ** (8 * bit);
      for (let bit = 0; bit < 3; bit++) if (op & (1 << (4 + bit))) length += delta[at++]! << (8 * bit);
      if (length === 0) length = 0x10000;
      if (from + length > base.length || written + length > outSize) throw new PackError('delta copies outside its base or result');
      base.copy(out, written, from, from + length);
      written += length;
    } else if (op > 0) {
      if (at + op > delta.length || written + op > outSize) throw new PackError('delta inserts past its end');
      delta.copy(out, written, at, at + op);
      at += op;
      written += op;
    } else throw new PackError('delta opcode 0 is reserved');
  }
  if (written !== outSize) throw new PackError(`delta produced ${written} bytes, ${outSize} announced`);
  return out;
}

/** A version 2 pack index (gitformat-pack(5) "Version 2 pack-*.idx files"). */
export function writeIdx(objects: { count: number; oids: Buffer; crcs: Uint32Array; offsets: Float64Array }, packChecksum: Buffer): Buffer {
  const { count, oids, crcs, offsets } = objects;
  // hex keys compare natively; Buffer#compare with offsets costs a microsecond a call
  const hex = oids.toString('hex', 0, count * 20);
  const keys = Array.from({ length: count }, (_, i) => hex.slice(i * 40, i * 40 + 40));
  const order = Array.from({ length: count }, (_, i) => i).sort((a, b) => (keys[a]! < keys[b]! ? -1 : keys[a]! > keys[b]! ? 1 : 0));
  const large = order.filter((i) => offsets[i]! >= 0x80000000);
  const buf = Buffer.alloc(8 + 256 * 4 + count * 28 + large.length * 8 + 40);
  buf.writeUInt32BE(0xff744f63, 0);
  buf.writeUInt32BE(2, 4);
  const fanout = new Uint32Array(256);
  for (let i = 0; i < count; i++) fanout[oids[i * 20]!]!++;
  let running = 0;
  for (let i = 0; i < 256; i++) {
    running += fanout[i]!;
    buf.writeUInt32BE(running, 8 + i * 4);
  }
  let at = 8 + 1024;
  for (const i of order) at += oids.copy(buf, at, i * 20, i * 20 + 20);
  for (const i of order) at = buf.writeUInt32BE(crcs[i]! >>> 0, at);
  let largeIndex = 0;
  for (const i of order) at = buf.writeUInt32BE(offsets[i]! >= 0x80000000 ? (0x80000000 | largeIndex++) >>> 0 : offsets[i]!, at);
  for (const i of large) at = buf.writeBigUInt64BE(BigInt(offsets[i]!), at);
  at += packChecksum.copy(buf, at);
  createHash('sha1').update(buf.subarray(0, at)).digest().copy(buf, at);
  return buf;
}
