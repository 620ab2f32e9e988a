import { RemoteError } from '../../errors.ts';
import type { SmartHttp } from './http.ts';
import { DELIM, FLUSH, PacketReader, ProtocolError, packetText, pktLine, readSideBand, type Packet } from './pkt-line.ts';

/**
 * The git wire protocol as lastgood needs it, over SmartHttp:
 * - fetching speaks protocol v2 (gitprotocol-v2(5)): `ls-refs` with ref prefixes, and `fetch` with
 *   wants, haves, the client's shallow boundary, `deepen` and `filter` (partial clone) — one
 *   round, `done` sent at once (a stateless request, as git does over HTTP);
 * - pushing speaks receive-pack (gitprotocol-pack(5)): `<old> <new> <ref>` commands, one pack,
 *   `report-status` telling ok/ng per ref. The server compares `<old>` with the ref under its lock.
 */

export const ZERO_OID = '0'.repeat(40);
const AGENT = 'agent=lastgood/0.1';

/**
 * The upload-pack side of a server, whichever protocol it speaks: version 2 (every current host),
 * or version 0 (a `git http-backend` whose web server does not pass the Git-Protocol header on,
 * as many nginx and Apache setups do not), which lists its refs in the discovery answer.
 */
export interface UploadPack {
  readonly version: 0 | 2;
  /** the server takes a partial-clone filter */
  readonly filter: boolean;
  /** the server sends any reachable object asked for by id (v2 always; v0 with allow-reachable-sha1-in-want) */
  readonly wantAny: boolean;
  /** the refs under the prefixes, name → oid, as they are now */
  listRefs(prefixes: string[]): Promise<Map<string, string>>;
  /** one stateless fetch round: everything the wants need that the haves do not already give */
  fetch(req: FetchRequest): Promise<FetchResponse>;
}

export interface FetchRequest {
  wants: string[];
  haves?: string[];
  /** the commits the client has without their parents */
  shallows?: string[];
  /** cut the history this many commits below each want */
  deepen?: number;
  /** a partial-clone filter (blob:none); only when the server advertises `filter` */
  filter?: string;
}

export interface FetchResponse {
  /** the packfile, side-band removed; empty when the server had nothing to send */
  pack: Buffer;
  /** shallow-info: the new boundary, and former boundary commits now complete */
  shallow: string[];
  unshallow: string[];
}

/** `GET info/refs?service=git-upload-pack` asking for version 2; a version 0 answer is taken as it is. */
export async function discoverUploadPack(http: SmartHttp): Promise<UploadPack> {
  const body = await http.discover('git-upload-pack', { 'git-protocol': 'version=2' });
  const reader = new PacketReader(body);
  let first = reader.next();
  // the v0 banner, which some servers send before a v2 answer too
  if (first && packetText(first)?.startsWith('# service=')) {
    reader.next(); // its flush
    first = reader.next();
  }
  if (first && packetText(first) === 'version 2') {
    let fetchArgs = new Set<string>();
    let objectFormat = 'sha1';
    for (let p = reader.next(); p && p.kind === 'data'; p = reader.next()) {
      const [key, value = ''] = packetText(p)!.split('=', 2) as [string, string?];
      if (key === 'fetch') fetchArgs = new Set(value.split(' ').filter(Boolean));
      else if (key === 'object-format') objectFormat = value;
    }
    checkFormat(http, objectFormat);
    return new UploadPackV2(http, fetchArgs);
  }
  const advert = parseAdvertisement(first ? [first, ...rest(reader)] : []);
  checkFormat(http, [...advert.caps].find((c) => c.startsWith('object-format='))?.slice(14) ?? 'sha1');
  if (!advert.caps.has('shallow')) throw new RemoteError('git', `${http.description} cannot serve shallow fetches (no "shallow" capability): lastgood does not clone a whole history`);
  return new UploadPackV0(http, advert);
}

function checkFormat(http: SmartHttp, format: string): void {
  if (format !== 'sha1') throw new RemoteError('git', `${http.description} uses object format ${format}: only sha1 repositories are supported`);
}

function* rest(reader: PacketReader) {
  for (let p = reader.next(); p; p = reader.next()) yield p;
}

/** A v0 ref advertisement: `<oid> <ref>\0<caps>` first, then `<oid> <ref>` lines. */
function parseAdvertisement(packets: Iterable<Packet>): { refs: Map<string, string>; caps: Set<string> } {
  const refs = new Map<string, string>();
  let caps = new Set<string>();
  let first = true;
  for (const p of packets) {
    if (p.kind !== 'data') continue;
    let line = p.data.toString('utf8').replace(/\n$/, '');
    if (line.startsWith('# service=')) continue;
    const nul = line.indexOf('\0');
    if (first && nul >= 0) {
      caps = new Set(line.slice(nul + 1).split(' ').filter(Boolean));
      line = line.slice(0, nul);
    }
    first = false;
    const [oid, name] = line.split(' ');
    if (oid && name && oid !== ZERO_OID && name !== 'capabilities^{}' && !name.endsWith('^{}')) refs.set(name, oid);
  }
  return { refs, caps };
}

function command(name: string, args: string[]): Buffer {
  return Buffer.concat([pktLine(`command=${name}\n`), pktLine(`${AGENT}\n`), pktLine('object-format=sha1\n'), DELIM, ...args.map((a) => pktLine(`${a}\n`)), FLUSH]);
}

class UploadPackV2 implements UploadPack {
  readonly version = 2 as const;
  readonly filter: boolean;
  readonly wantAny = true;
  private readonly http: SmartHttp;
  constructor(http: SmartHttp, fetchArgs: Set<string>) {
    this.http = http;
    this.filter = fetchArgs.has('filter');
  }

  async listRefs(prefixes: string[]): Promise<Map<string, string>> {
    return lsRefs(this.http, prefixes);
  }

  async fetch(req: FetchRequest): Promise<FetchResponse> {
    const args = ['no-progress', 'ofs-delta'];
    for (const w of req.wants) args.push(`want ${w}`);
    for (const s of req.shallows ?? []) args.push(`shallow ${s}`);
    if (req.deepen !== undefined) args.push(`deepen ${req.deepen}`);
    if (req.filter) args.push(`filter ${req.filter}`);
    for (const h of req.haves ?? []) args.push(`have ${h}`);
    args.push('done');
    const body = await this.http.post('git-upload-pack', command('fetch', args), { retry: true, headers: { 'git-protocol': 'version=2' } });
    const reader = new PacketReader(body);
    const out: FetchResponse = { pack: Buffer.alloc(0), shallow: [], unshallow: [] };
    try {
      for (let p = reader.next(); p; p = reader.next()) {
        if (p.kind !== 'data') continue;
        const section = packetText(p)!;
        if (section.startsWith('ERR ')) throw new RemoteError('git', `the server refused the fetch: ${section.slice(4)}`);
        if (section === 'packfile') {
          out.pack = readSideBand(reader).data;
          break;
        }
        // acknowledgments, shallow-info, wanted-refs, packfile-uris: lines until a delimiter
        for (let q = reader.next(); q && q.kind === 'data'; q = reader.next()) {
          if (section === 'shallow-info') shallowLine(packetText(q)!, out);
        }
      }
    } catch (error) {
      if (error instanceof ProtocolError) throw new RemoteError('git', `fetching from ${this.http.description}: ${error.message}`, { cause: error });
      throw error;
    }
    return out;
  }
}

function shallowLine(line: string, out: FetchResponse): void {
  const [kind, oid] = line.split(' ');
  if (kind === 'shallow' && oid) out.shallow.push(oid);
  if (kind === 'unshallow' && oid) out.unshallow.push(oid);
}

/** `ls-refs`: the refs under the prefixes, name → oid (peeled tags are not asked for). */
export async function lsRefs(http: SmartHttp, prefixes: string[], opts: { retry?: boolean } = {}): Promise<Map<string, string>> {
  const body = await http.post('git-upload-pack', command('ls-refs', prefixes.map((p) => `ref-prefix ${p}`)), { retry: opts.retry ?? true, headers: { 'git-protocol': 'version=2' } });
  const out = new Map<string, string>();
  const reader = new PacketReader(body);
  for (let p = reader.next(); p && p.kind === 'data'; p = reader.next()) {
    const [oid, name] = packetText(p)!.split(' ');
    if (oid && name && /^[0-9a-f]{40}$/.test(oid)) out.set(name, oid);
  }
  return out;
}

/**
 * Protocol version 0 over stateless HTTP (gitprotocol-pack(5), gitprotocol-http(5)): the refs
 * come with the discovery; a fetch sends its wants (the first carrying the capabilities), the
 * shallow boundary, deepen and filter, a flush, the haves and `done`; the answer is the
 * shallow-update lines, a NAK or ACK, then the side-banded pack.
 */
class UploadPackV0 implements UploadPack {
  readonly version = 0 as const;
  readonly filter: boolean;
  readonly wantAny: boolean;
  private readonly http: SmartHttp;
  private readonly caps: Set<string>;
  /** the discovery's refs, used once: later listings ask again */
  private advertised: Map<string, string> | undefined;
  constructor(http: SmartHttp, advert: { refs: Map<string, string>; caps: Set<string> }) {
    this.http = http;
    this.caps = advert.caps;
    this.advertised = advert.refs;
    this.filter = advert.caps.has('filter');
    this.wantAny = advert.caps.has('allow-reachable-sha1-in-want') || advert.caps.has('allow-any-sha1-in-want');
  }

  async listRefs(prefixes: string[]): Promise<Map<string, string>> {
    let refs = this.advertised;
    this.advertised = undefined;
    refs ??= parseAdvertisement(rest(new PacketReader(await this.http.discover('git-upload-pack')))).refs;
    return new Map([...refs].filter(([name]) => prefixes.some((p) => name.startsWith(p))));
  }

  async fetch(req: FetchRequest): Promise<FetchResponse> {
    const wanted = ['side-band-64k', 'ofs-delta', 'shallow', 'no-progress'].filter((c) => this.caps.has(c));
    if (req.filter && this.caps.has('filter')) wanted.push('filter');
    const lines = req.wants.map((w, i) => `want ${w}${i === 0 ? ` ${[...wanted, AGENT].join(' ')}` : ''}`);
    for (const s of req.shallows ?? []) lines.push(`shallow ${s}`);
    if (req.deepen !== undefined) lines.push(`deepen ${req.deepen}`);
    if (req.filter && this.caps.has('filter')) lines.push(`filter ${req.filter}`);
    const body = Buffer.concat([...lines.map((l) => pktLine(`${l}\n`)), FLUSH, ...(req.haves ?? []).map((h) => pktLine(`have ${h}\n`)), pktLine('done\n')]);
    const answer = await this.http.post('git-upload-pack', body, { retry: true });
    const reader = new PacketReader(answer);
    const out: FetchResponse = { pack: Buffer.alloc(0), shallow: [], unshallow: [] };
    // the shallow-update section (and its flush) comes only when the request deepens: shallow lines alone get none
    const shallowing = req.deepen !== undefined;
    try {
      if (shallowing) {
        for (let p = reader.next(); p && p.kind === 'data'; p = reader.next()) {
          const line = packetText(p)!;
          if (line.startsWith('ERR ')) throw new RemoteError('git', `the server refused the fetch: ${line.slice(4)}`);
          shallowLine(line, out);
        }
      }
      // NAK, or ACK lines, then the pack
      for (let p = reader.next(); p; p = reader.next()) {
        if (p.kind !== 'data') continue;
        const line = packetText(p)!;
        if (line.startsWith('ERR ')) throw new RemoteError('git', `the server refused the fetch: ${line.slice(4)}`);
        if (line === 'NAK' || line.startsWith('ACK ')) {
          if (line === 'NAK' || !/ (continue|common|ready)$/.test(line)) break;
          continue;
        }
        throw new ProtocolError(`unexpected line before the pack: ${JSON.stringify(line.slice(0, 80))}`);
      }
      out.pack = this.caps.has('side-band-64k') ? readSideBand(reader).data : reader.rest();
    } catch (error) {
      if (error instanceof ProtocolError) throw new RemoteError('git', `fetching from ${this.http.description}: ${error.message}`, { cause: error });
      throw error;
    }
    return out;
  }
}

export interface ReceivePackAdvert {
  refs: Map<string, string>;
  caps: Set<string>;
}

/** `GET info/refs?service=git-receive-pack`: the refs as the server has them and what it can do. */
export async function discoverReceivePack(http: SmartHttp): Promise<ReceivePackAdvert> {
  return parseAdvertisement(rest(new PacketReader(await http.discover('git-receive-pack'))));
}

export interface RefUpdate {
  ref: string;
  /** the value the ref must still have (ZERO_OID: it must not exist) */
  old: string;
  new: string;
}

export interface PushResult {
  /** "ok" or the server's reason per ref */
  refs: Map<string, { ok: true } | { ok: false; reason: string }>;
  /** the server's unpack status ("ok" or why the pack was refused) */
  unpack: string;
  /** what the server's hooks said (side band 2, "remote: …" in git's output): a refusal's own words */
  messages: string[];
}

/** The lines a server sent on side band 2 (hook output, a host's refusal text), without blank lines. */
function progressLines(body: Buffer, advert: ReceivePackAdvert): string[] {
  if (!advert.caps.has('side-band-64k')) return [];
  try {
    return readSideBand(new PacketReader(body)).progress.split(/\r?\n|\r/).map((l) => l.trim()).filter(Boolean);
  } catch {
    return [];
  }
}

/** One receive-pack request: the commands and a pack of exactly the objects the server lacks. */
export async function pushPack(http: SmartHttp, advert: ReceivePackAdvert, updates: RefUpdate[], pack: Buffer): Promise<PushResult> {
  const wanted = ['report-status', 'side-band-64k', 'quiet', 'ofs-delta'].filter((c) => advert.caps.has(c));
  if (!advert.caps.has('report-status')) throw new RemoteError('git', `${http.description} does not offer report-status: lastgood cannot tell whether a push landed`);
  if (updates.length > 1 && advert.caps.has('atomic')) wanted.push('atomic');
  const commands = updates.map((u, i) => pktLine(`${u.old} ${u.new} ${u.ref}${i === 0 ? `\0${[...wanted, AGENT].join(' ')}` : ''}\n`));
  const body = await http.post('git-receive-pack', Buffer.concat([...commands, FLUSH, pack]), { retry: false });
  let report = body;
  let progress = '';
  if (advert.caps.has('side-band-64k')) {
    try {
      ({ data: report, progress } = readSideBand(new PacketReader(body)));
    } catch (error) {
      throw new RemoteError('git', `pushing to ${http.description}: ${(error as Error).message}`, { cause: error });
    }
  }
  const result: PushResult = { refs: new Map(), unpack: '', messages: progressLines(body, advert) };
  const reader = new PacketReader(report);
  for (let p = reader.next(); p && p.kind === 'data'; p = reader.next()) {
    const line = packetText(p)!;
    if (line.startsWith('unpack ')) result.unpack = line.slice(7);
    else if (line.startsWith('ok ')) result.refs.set(line.slice(3), { ok: true });
    else if (line.startsWith('ng ')) {
      const rest = line.slice(3);
      const space = rest.indexOf(' ');
      result.refs.set(space < 0 ? rest : rest.slice(0, space), { ok: false, reason: space < 0 ? 'refused' : rest.slice(space + 1) });
    }
  }
  return result;
}
