import { spawnRelayed } from './spawner.ts';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync, gzipSync } from 'node:zlib';
import { keepAliveAsHosts } from './http-keepalive.ts';

/**
 * A git smart-HTTP server for tests: every request runs git's own `git http-backend` as a CGI
 * program over the bare repositories under `root` (GIT_PROJECT_ROOT), so clients talk to the real
 * protocol implementation, pushes included (http.receivepack=true).
 *
 * With `token`, every request must carry it: `Authorization: Bearer <token>` / `token <token>`, or
 * Basic auth where the user or the password is the token (GitHub's convention); otherwise 401
 * with a Basic challenge, so clients' onAuth/credential paths run.
 *
 * Faults can be injected per request (`inject`): an HTTP status, a slow answer, a dropped
 * connection before git runs or after it finished, an auth challenge, a redirect, or a hook that
 * runs first (someone else pushing meanwhile). `log` records what every request asked for,
 * including the ref commands and object count of each push.
 *
 * The server runs in the test's own process: drive native git against it with an asynchronous
 * child process (execFile/spawn), never execFileSync or support/git.ts's `git()` (they wait for
 * the child with the process blocked), or the server cannot answer. Its `git http-backend`
 * processes are started by the worker's small relay process (support/spawner.ts).
 */
export interface GitHttpServer {
  /** base URL, e.g. http://127.0.0.1:PORT; a repository `root/x.git` is at `${url}/x.git` */
  url: string;
  /** requests served so far (all of them, 401s included) */
  readonly requests: number;
  /** requests refused for missing or wrong credentials */
  readonly unauthorized: number;
  /** every request, in order: what was asked and what was answered */
  readonly log: RequestRecord[];
  /** Queues a fault for the next requests it matches (in order of injection). */
  inject(fault: Fault): void;
  close(): Promise<void>;
}

/** What the server saw of one request. */
export interface RequestRecord {
  method: string;
  /** the path after the repository, e.g. "info/refs", "git-upload-pack" */
  path: string;
  /** the service: git-upload-pack or git-receive-pack */
  service: string;
  /** for git-upload-pack POSTs: the protocol v2 command (ls-refs, fetch) */
  command?: string;
  /** the request body's size (inflated) */
  bytesIn: number;
  /** what git answered, in bytes (headers excluded) */
  bytesOut: number;
  /** for pushes: the objects in the pack and the ref commands */
  pushedObjects?: number;
  pushCommands?: string[];
  /** an Authorization header came with the request */
  authorization: boolean;
  /** the client's User-Agent */
  agent: string;
  status?: number;
  /** when the request came (performance.now()) and how long the answer took, ms (the benches read them) */
  at?: number;
  ms?: number;
  /** the fault injected into this request */
  fault?: string;
}

/**
 * A fault for matching requests:
 * - `status`: answer with this HTTP status (500, 503; 401 sends a Basic challenge) instead of git;
 * - `delayMs`: hold the request this long, then serve it (a slow server; a client's timeout fires);
 * - `drop: 'before'`: close the connection without running git (nothing happened on the server);
 * - `drop: 'after'`: run git to the end, then close the connection instead of answering (it happened, the client never hears);
 * - `before`: run this first (e.g. someone else pushes), then serve the request;
 * - `redirect`: answer 302 to this base URL (+ the same path);
 * - `corrupt`: run git to the end, then flip one byte inside the pack it sent (damaged on the wire:
 *   the pack's checksum no longer matches);
 * - `gzip`: run git to the end, then send its answer gzip-compressed with `Content-Encoding: gzip`,
 *   as a web server in front of git with compression on does.
 */
export interface Fault {
  service?: 'git-upload-pack' | 'git-receive-pack';
  method?: 'GET' | 'POST';
  /** for git-upload-pack POSTs: only this protocol v2 command */
  command?: 'ls-refs' | 'fetch';
  /** how many matching requests it affects (default 1) */
  times?: number;
  status?: number;
  delayMs?: number;
  drop?: 'before' | 'after';
  before?: () => Promise<void>;
  redirect?: string;
  corrupt?: true;
  gzip?: true;
}

export interface GitHttpServerOptions {
  root: string;
  token?: string;
  /** advertise partial clone (uploadpack.allowFilter), as GitHub and GitLab do (default true) */
  allowFilter?: boolean;
  /** 0: do not pass the Git-Protocol header on (a web server set up without it), so git speaks version 0 */
  protocol?: 0 | 2;
  /** version 0: send any reachable object asked for by id (uploadpack.allowReachableSHA1InWant) */
  allowReachableSHA1InWant?: boolean;
}

export async function startGitHttpServer(opts: GitHttpServerOptions): Promise<GitHttpServer> {
  let requests = 0;
  let unauthorized = 0;
  const log: RequestRecord[] = [];
  const faults: Array<Fault & { left: number }> = [];
  const held = new Set<() => void>();
  let closed = false;
  const server = http.createServer((req, res) => {
    requests++;
    const url = new URL(req.url ?? '/', 'http://localhost');
    const rel = /\.git\/(.*)$/.exec(url.pathname)?.[1] ?? url.pathname.replace(/^\//, '');
    const service = rel === 'info/refs' ? url.searchParams.get('service') ?? '' : rel;
    const record: RequestRecord = { method: req.method ?? 'GET', path: rel, service, bytesIn: 0, bytesOut: 0, authorization: Boolean(req.headers.authorization), agent: req.headers['user-agent'] ?? '' };
    record.at = performance.now();
    log.push(record);
    res.on('finish', () => {
      record.status = res.statusCode;
      record.ms = performance.now() - record.at!;
    });
    if (opts.token !== undefined && !authorized(req.headers.authorization, opts.token)) {
      unauthorized++;
      res.writeHead(401, { 'www-authenticate': 'Basic realm="lastgood-test"', 'content-type': 'text/plain' });
      res.end('authentication required\n');
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        let body = Buffer.concat(chunks);
        try {
          const encoding = req.headers['content-encoding'];
          if (encoding === 'gzip' || encoding === 'x-gzip') body = gunzipSync(body);
        } catch {
          res.writeHead(400, { 'content-type': 'text/plain' }).end('bad gzip body\n');
          return;
        }
        record.bytesIn = body.length;
        if (service === 'git-upload-pack' && req.method === 'POST') record.command = /command=([a-z-]+)/.exec(body.subarray(0, 64).toString('latin1'))?.[1];
        if (service === 'git-receive-pack' && req.method === 'POST') Object.assign(record, describePush(body));
        const fault = takeFault(faults, record);
        if (fault) {
          record.fault = JSON.stringify({ ...fault, before: fault.before ? 'fn' : undefined, left: undefined });
          if (fault.before) await fault.before();
          if (fault.delayMs) {
            // held until its time or the server's close, whichever is first: a timer left running keeps the test's process alive
            await new Promise<void>((resolve) => {
              const release = () => {
                clearTimeout(timer);
                held.delete(release);
                resolve();
              };
              const timer = setTimeout(release, fault.delayMs);
              held.add(release);
            });
            if (closed) return;
          }
          if (fault.redirect) {
            res.writeHead(302, { location: `${fault.redirect.replace(/\/$/, '')}${url.pathname}${url.search}` }).end();
            return;
          }
          if (fault.status) {
            res.writeHead(fault.status, { 'content-type': 'text/plain', ...(fault.status === 401 ? { 'www-authenticate': 'Basic realm="lastgood-test"' } : {}) });
            res.end(`injected ${fault.status}\n`);
            return;
          }
          if (fault.drop === 'before') {
            req.socket.destroy();
            return;
          }
        }
        runBackend(opts, req, body, res, fault?.drop === 'after', record, fault?.corrupt === true, fault?.gzip === true);
      })().catch((error: unknown) => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(`test server: ${(error as Error).message}\n`);
      });
    });
  });
  keepAliveAsHosts(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get requests() {
      return requests;
    },
    get unauthorized() {
      return unauthorized;
    },
    log,
    inject: (fault) => faults.push({ ...fault, left: fault.times ?? 1 }),
    close: () =>
      new Promise<void>((resolve, reject) => {
        closed = true;
        for (const release of [...held]) release();
        server.closeAllConnections();
        server.close((e) => (e ? reject(e) : resolve()));
      }),
  };
}

function takeFault(faults: Array<Fault & { left: number }>, r: RequestRecord): Fault | undefined {
  const i = faults.findIndex((f) => f.left > 0 && (!f.service || f.service === r.service) && (!f.method || f.method === r.method) && (!f.command || f.command === r.command));
  if (i < 0) return undefined;
  const f = faults[i]!;
  if (--f.left <= 0) faults.splice(i, 1);
  return f;
}

/** The ref commands of a receive-pack request and how many objects its pack holds. */
function describePush(body: Buffer): { pushCommands: string[]; pushedObjects: number } {
  const commands: string[] = [];
  let at = 0;
  while (at + 4 <= body.length) {
    const len = parseInt(body.toString('latin1', at, at + 4), 16);
    if (!len) {
      at += 4;
      break;
    }
    commands.push(body.toString('utf8', at + 4, at + len).split('\0')[0]!.trim());
    at += len;
  }
  const pack = body.subarray(at);
  return { pushCommands: commands, pushedObjects: pack.length >= 12 && pack.toString('latin1', 0, 4) === 'PACK' ? pack.readUInt32BE(8) : 0 };
}

function authorized(header: string | undefined, token: string): boolean {
  if (!header) return false;
  const [scheme = '', value = ''] = header.split(/\s+/, 2);
  if (/^(bearer|token)$/i.test(scheme)) return value === token;
  if (/^basic$/i.test(scheme)) {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    const user = colon < 0 ? decoded : decoded.slice(0, colon);
    const password = colon < 0 ? '' : decoded.slice(colon + 1);
    return user === token || password === token;
  }
  return false;
}

function runBackend(opts: GitHttpServerOptions, req: http.IncomingMessage, body: Buffer, res: http.ServerResponse, dropAfter: boolean, record: RequestRecord, corrupt = false, gzip = false): void {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const child = spawnRelayed('git', ['http-backend'], {
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: process.env.HOME ?? '/tmp',
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_PROJECT_ROOT: opts.root,
      GIT_HTTP_EXPORT_ALL: '1',
      // enable pushes (and partial clone) without a per-repository config (git >= 2.31 reads config from the environment)
      GIT_CONFIG_COUNT: '4',
      GIT_CONFIG_KEY_0: 'http.receivepack',
      GIT_CONFIG_VALUE_0: 'true',
      GIT_CONFIG_KEY_1: 'uploadpack.allowFilter',
      GIT_CONFIG_VALUE_1: opts.allowFilter === false ? 'false' : 'true',
      GIT_CONFIG_KEY_2: 'uploadpack.allowReachableSHA1InWant',
      GIT_CONFIG_VALUE_2: opts.allowReachableSHA1InWant ? 'true' : 'false',
      // no `git gc --auto` after each push: a hosting server collects garbage on its own schedule
      GIT_CONFIG_KEY_3: 'receive.autogc',
      GIT_CONFIG_VALUE_3: 'false',
      REMOTE_USER: 'lastgood-test',
      REMOTE_ADDR: '127.0.0.1',
      GATEWAY_INTERFACE: 'CGI/1.1',
      SERVER_PROTOCOL: 'HTTP/1.1',
      REQUEST_METHOD: req.method ?? 'GET',
      PATH_INFO: decodeURIComponent(url.pathname),
      QUERY_STRING: url.search.replace(/^\?/, ''),
      CONTENT_TYPE: req.headers['content-type'] ?? '',
      CONTENT_LENGTH: String(body.length),
      ...(req.headers['git-protocol'] && opts.protocol !== 0 ? { GIT_PROTOCOL: String(req.headers['git-protocol']) } : {}),
    },
  });
  let head = Buffer.alloc(0);
  let headerDone = false;
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const held: Buffer[] = [];
  child.stdout.on('data', (chunk: Buffer) => {
    if (dropAfter) return; // the answer is never sent: the connection closes when git is done
    record.bytesOut += chunk.length;
    if (headerDone) {
      if (corrupt || gzip) held.push(chunk);
      else res.write(chunk);
      return;
    }
    head = Buffer.concat([head, chunk]);
    const crlf = head.indexOf('\r\n\r\n');
    const lf = head.indexOf('\n\n');
    const end = crlf >= 0 && (lf < 0 || crlf < lf) ? { at: crlf, len: 4 } : lf >= 0 ? { at: lf, len: 2 } : undefined;
    if (!end) return;
    headerDone = true;
    const { status, headers } = parseCgiHeaders(head.subarray(0, end.at).toString('latin1'));
    if (gzip) {
      for (const name of Object.keys(headers)) if (name.toLowerCase() === 'content-length') delete headers[name];
      headers['Content-Encoding'] = 'gzip';
    }
    res.writeHead(status.code, status.text, headers);
    if (corrupt || gzip) held.push(head.subarray(end.at + end.len));
    else res.write(head.subarray(end.at + end.len));
  });
  child.on('close', (code) => {
    if (dropAfter) {
      req.socket.destroy();
      return;
    }
    if (!headerDone) {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(`git http-backend failed (${code}): ${stderr}`);
      return;
    }
    if (corrupt) {
      const answer = Buffer.concat(held);
      const pack = answer.indexOf('PACK');
      // a byte of the first object, well inside the first side-band packet: the pack's checksum no longer matches
      if (pack >= 0 && pack + 20 < answer.length) answer[pack + 20] = answer[pack + 20]! ^ 0xff;
      res.end(answer);
      return;
    }
    if (gzip) {
      res.end(gzipSync(Buffer.concat(held)));
      return;
    }
    res.end();
  });
  child.stdin.on('error', () => {}); // the backend may exit before reading a body it rejects
  child.stdin.end(body);
}

/** CGI response headers (RFC 3875 §6.3): `Status: 404 Not Found` sets the status, the rest pass through. */
function parseCgiHeaders(text: string): { status: { code: number; text: string }; headers: Record<string, string | string[]> } {
  let status = { code: 200, text: 'OK' };
  const headers: Record<string, string | string[]> = {};
  for (const line of text.split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim();
    const value = line.slice(colon + 1).trim();
    if (name.toLowerCase() === 'status') {
      const m = /^(\d{3})\s*(.*)$/.exec(value);
      if (m) status = { code: Number(m[1]), text: m[2] || http.STATUS_CODES[Number(m[1])] || '' };
      continue;
    }
    const existing = headers[name];
    headers[name] = existing === undefined ? value : ([] as string[]).concat(existing, value);
  }
  return { status, headers };
}
