/**
 * git's pkt-line framing (gitprotocol-common(5)): four hex digits of length (the digits included)
 * then the payload; "0000" flush, "0001" delimiter (protocol v2), "0002" response end.
 * Side-band multiplexing (gitprotocol-pack(5)): the first payload byte names the band: 1 pack
 * data, 2 progress, 3 a fatal error.
 */

export const FLUSH = Buffer.from('0000');
export const DELIM = Buffer.from('0001');

/** The largest payload one pkt-line may carry (65520 bytes with the four length digits). */
export const MAX_PAYLOAD = 65516;

export function pktLine(payload: string | Uint8Array): Buffer {
  const body = typeof payload === 'string' ? Buffer.from(payload, 'utf8') : Buffer.from(payload);
  if (body.length > MAX_PAYLOAD) throw new RangeError(`pkt-line payload of ${body.length} bytes is over ${MAX_PAYLOAD}`);
  return Buffer.concat([Buffer.from((body.length + 4).toString(16).padStart(4, '0'), 'ascii'), body]);
}

export type Packet =
  | { kind: 'data'; data: Buffer }
  | { kind: 'flush' }
  | { kind: 'delim' }
  | { kind: 'end' };

/** A malformed answer from the server (bad framing, a band we do not know). */
export class ProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProtocolError';
  }
}

/** Reads pkt-lines from a whole buffer; `offset` tells how far it got (a v0 pack may follow the lines unframed). */
export class PacketReader {
  offset = 0;
  private readonly buf: Buffer;
  constructor(buf: Buffer) {
    this.buf = buf;
  }

  get done(): boolean {
    return this.offset >= this.buf.length;
  }

  /** The next packet; undefined at the end of the buffer. */
  next(): Packet | undefined {
    if (this.offset >= this.buf.length) return undefined;
    if (this.offset + 4 > this.buf.length) throw new ProtocolError('truncated pkt-line length');
    const hex = this.buf.toString('ascii', this.offset, this.offset + 4);
    if (!/^[0-9a-f]{4}$/i.test(hex)) throw new ProtocolError(`bad pkt-line length ${JSON.stringify(hex)}`);
    const len = parseInt(hex, 16);
    if (len === 0) return this.advance(4, { kind: 'flush' });
    if (len === 1) return this.advance(4, { kind: 'delim' });
    if (len === 2) return this.advance(4, { kind: 'end' });
    if (len < 4) throw new ProtocolError(`bad pkt-line length ${len}`);
    if (this.offset + len > this.buf.length) throw new ProtocolError('truncated pkt-line');
    const data = this.buf.subarray(this.offset + 4, this.offset + len);
    return this.advance(len, { kind: 'data', data });
  }

  /** The rest of the buffer, unframed. */
  rest(): Buffer {
    const out = this.buf.subarray(this.offset);
    this.offset = this.buf.length;
    return out;
  }

  private advance(n: number, p: Packet): Packet {
    this.offset += n;
    return p;
  }
}

/** A data packet as text without its trailing newline. */
export function packetText(p: Packet): string | undefined {
  return p.kind === 'data' ? p.data.toString('utf8').replace(/\n$/, '') : undefined;
}

/**
 * Side-band demultiplexing: concatenates band 1 (the pack), collects band 2 (progress) and fails
 * on band 3 (the server's fatal error) until a flush or the end of the buffer.
 */
export function readSideBand(reader: PacketReader): { data: Buffer; progress: string } {
  const chunks: Buffer[] = [];
  let progress = '';
  for (let p = reader.next(); p && p.kind === 'data'; p = reader.next()) {
    const band = p.data[0];
    const body = p.data.subarray(1);
    if (band === 1) chunks.push(body);
    else if (band === 2) progress += body.toString('utf8');
    else if (band === 3) throw new ProtocolError(`the server failed: ${body.toString('utf8').trim()}`);
    else throw new ProtocolError(`unknown side band ${band}`);
  }
  return { data: Buffer.concat(chunks), progress };
}
