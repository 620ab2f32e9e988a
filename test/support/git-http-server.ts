import { spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

/**
 * A git smart-HTTP server for tests: every request runs git's own `git http-backend` as a CGI
 * program over the bare repositories under `root` (GIT_PROJECT_ROOT), so clients talk to the real
 * protocol implementation, pushes included (http.receivepack=true).
 *
 * With `token`, every request must carry it: `Authorization: Bearer <token>` / `token <token>`, or
 * Basic auth where the user or the password is the token (GitHub's convention); otherwise 401
 * with a Basic challenge, so clients' onAuth/credential paths run.
 *
 * The server runs in the test's own process: drive native git against it with an asynchronous
 * child process (execFile/spawn), never execFileSync, or the server cannot answer.
 */
export interface GitHttpServer {
  /** base URL, e.g. http://127.0.0.1:PORT; a repository `root/x.git` is at `${url}/x.git` */
  url: string;
  /** requests served so far (all of them, 401s included) */
  readonly requests: number;
  /** requests refused for missing or wrong credentials */
  readonly unauthorized: number;
  close(): Promise<void>;
}

export async function startGitHttpServer(opts: { root: string; token?: string }): Promise<GitHttpServer> {
  let requests = 0;
  let unauthorized = 0;
  const server = http.createServer((req, res) => {
    requests++;
    if (opts.token !== undefined && !authorized(req.headers.authorization, opts.token)) {
      unauthorized++;
      res.writeHead(401, { 'www-authenticate': 'Basic realm="lastgood-test"', 'content-type': 'text/plain' });
      res.end('authentication required\n');
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let body = Buffer.concat(chunks);
      try {
        const encoding = req.headers['content-encoding'];
        if (encoding === 'gzip' || encoding === 'x-gzip') body = gunzipSync(body);
      } catch {
        res.writeHead(400, { 'content-type': 'text/plain' }).end('bad gzip body\n');
        return;
      }
      runBackend(opts.root, req, body, res);
    });
  });
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
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((e) => (e ? reject(e) : resolve()));
      }),
  };
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

function runBackend(root: string, req: http.IncomingMessage, body: Buffer, res: http.ServerResponse): void {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const child = spawn('git', ['http-backend'], {
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: process.env.HOME ?? '/tmp',
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_PROJECT_ROOT: root,
      GIT_HTTP_EXPORT_ALL: '1',
      // enable pushes without a per-repository config (git >= 2.31 reads config from the environment)
      GIT_CONFIG_COUNT: '1',
      GIT_CONFIG_KEY_0: 'http.receivepack',
      GIT_CONFIG_VALUE_0: 'true',
      REMOTE_USER: 'lastgood-test',
      REMOTE_ADDR: '127.0.0.1',
      GATEWAY_INTERFACE: 'CGI/1.1',
      SERVER_PROTOCOL: 'HTTP/1.1',
      REQUEST_METHOD: req.method ?? 'GET',
      PATH_INFO: decodeURIComponent(url.pathname),
      QUERY_STRING: url.search.replace(/^\?/, ''),
      CONTENT_TYPE: req.headers['content-type'] ?? '',
      CONTENT_LENGTH: String(body.length),
      ...(req.headers['git-protocol'] ? { GIT_PROTOCOL: String(req.headers['git-protocol']) } : {}),
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let head = Buffer.alloc(0);
  let headerDone = false;
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  child.stdout.on('data', (chunk: Buffer) => {
    if (headerDone) {
      res.write(chunk);
      return;
    }
    head = Buffer.concat([head, chunk]);
    const crlf = head.indexOf('\r\n\r\n');
    const lf = head.indexOf('\n\n');
    const end = crlf >= 0 && (lf < 0 || crlf < lf) ? { at: crlf, len: 4 } : lf >= 0 ? { at: lf, len: 2 } : undefined;
    if (!end) return;
    headerDone = true;
    const { status, headers } = parseCgiHeaders(head.subarray(0, end.at).toString('latin1'));
    res.writeHead(status.code, status.text, headers);
    res.write(head.subarray(end.at + end.len));
  });
  child.on('close', (code) => {
    if (!headerDone) {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(`git http-backend failed (${code}): ${stderr}`);
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
