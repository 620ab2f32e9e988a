import { createHash } from 'node:crypto';
import { deflateSync } from 'node:zlib';
import { TYPE_CODES, type ObjectType } from './pack-index.ts';

/**
 * A packfile (gitformat-pack(5), version 2) of whole objects, no deltas, for a push: the header,
 * each object's type-and-size header (git's pack-write.c `encode_in_pack_object_header`) and its
 * zlib-deflated content, and the SHA-1 of all of it. A push carries a commit and the trees and
 * files on its changed paths: a few objects, where deltas would save little.
 *
 * Why not isomorphic-git's `packObjects`: it deflates each object through the web
 * CompressionStream and a `Response` (its `browserDeflate`), which makes Node compile undici (its
 * fetch) in every process that pushes (~50 ms of CPU, a fifth of a small cold revert's work), and
 * it costs a stream per object.
 */
export function writePack(objects: Iterable<{ type: ObjectType; content: Uint8Array }>): Buffer {
  const parts: Buffer[] = [];
  let count = 0;
  for (const { type, content } of objects) {
    parts.push(entryHeader(TYPE_CODES[type], content.byteLength), deflateSync(content));
    count++;
  }
  const header = Buffer.alloc(12);
  header.write('PACK', 0, 'latin1');
  header.writeUInt32BE(2, 4);
  header.writeUInt32BE(count, 8);
  const body = Buffer.concat([header, ...parts]);
  return Buffer.concat([body, createHash('sha1').update(body).digest()]);
}

/** type in bits 4-6 of the first byte, the size in its low 4 bits then 7 bits a byte, high bit = more */
function entryHeader(type: number, size: number): Buffer {
  const bytes: number[] = [];
  let byte = (type << 4) | (size & 0x0f);
  let rest = Math.floor(size / 16);
  while (rest > 0) {
    bytes.push(byte | 0x80);
    byte = rest & 0x7f;
    rest = Math.floor(rest / 128);
  }
  bytes.push(byte);
  return Buffer.from(bytes);
}
