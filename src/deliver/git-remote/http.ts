import type * as Http from 'node:http';
import { createRequire } from 'node:module';
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';
import { RemoteError, redact } from '../../errors.ts';
import type { GitCredentials } from './auth.ts';

/**
 * The HTTP side of git's smart protocol (gitprotocol-http(5)): `GET info/refs?service=…` and
 * `POST git-upload-pack` / `git-receive-pack`, over Node's http and https modules (their global
 * agents keep connections alive, as git's curl does).
 *
 * - Credentials go to the configured origin only: a redirect to another host is followed without
 *   them (git's http.followRedirects=initial keeps the redirected base for later requests, so do we).
 * - Reads (discovery, fetch) are retried on 5xx, 429, timeouts and dropped connections, with
 *   exponential backoff and jitter. A push is never retried here: whether it landed is decided by
 *   reading the ref again (see RemoteRepo).
 * - 401 and 403 become a RemoteError that says which permission is missing; no header, token or
 *   URL credential ever reaches a message.
 */

import type { TransferEvent } from '../../repo/types.ts';
import { retry } from '../../retry.ts';
import { whyUnreachable } from '../../network.ts';

/**
 * node:http and node:https by require, not fetch() and not `import`: both load undici, Node's
 * fetch, which a process compiles on first use (~50 ms of CPU, with its WebAssembly HTTP parser:
 * a third of a small cold revert's own work; bench/git-remote.bench.ts). fetch() is undici; an
 * ESM `import` of node:http builds the module's ESM facade, which reads every export, and
 * node:http's WebSocket, CloseEvent and MessageEvent exports are getters that load undici (Node's
 * lib/http.js, lazyUndici). require() hands over the module without a facade.
 */
const nodeRequire = createRequire(import.meta.url);
const http = nodeRequire('node:http') as typeof import('node:http');
const https = nodeRequire('node:https') as typeof import('node:https');

export type Service = 'git-upload-pack' | 'git-receive-pack';

export interface TransportOptions {
  /** the repository URL, credentials removed (https://host/group/project.git) */
  url: string;
  credentials?: GitCredentials;
  /** attempts for reads on retryable failures (default 4) */
  attempts?: number;
  /** base of the backoff, ms (default 250) */
  backoffMs?: number;
  /** one request's time limit, ms (default 120 s) */
  timeoutMs?: number;
  userAgent?: string;
  /** told once when a redirect leads to another host (credentials are dropped there) */
  onWarning?: (message: string) => void;
  /** told of the bytes of each answer as they arrive (progress of a long fetch) */
  onProgress?: (event: TransferEvent) => void;
}

/** A failure worth another try: the server or the network, not the request. */
export class TransientHttpError extends Error {
  readonly status: number | undefined;
  constructor(message: string, status?: number, cause?: unknown) {
    super(message, { cause });
    this.name = 'TransientHttpError';
    this.status = status;
  }
}

const MAX_REDIRECTS = 5;

/** Node's (OpenSSL's) codes for a server certificate that cannot be verified. */
const TLS_CERTIFICATE = /^(DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT(_LOCALLY)?|CERT_HAS_EXPIRED|CERT_NOT_YET_VALID|CERT_REVOKED|CERT_UNTRUSTED|CERT_REJECTED|CERT_SIGNATURE_FAILURE|ERR_TLS_CERT_ALTNAME_INVALID|HOSTNAME_MISMATCH|INVALID_CA)$/;

export class SmartHttp {
  /** the base every request goes to: the configured URL, or where the first request was redirected */
  private base: URL;
  private readonly origin: string;
  private readonly opts: TransportOptions;
  private warnedRedirect = false;
  /** requests sent (each attempt and redirect counts), for the benches */
  requests = 0;

  constructor(opts: TransportOptions) {
    this.opts = opts;
    this.base = new URL(opts.url.replace(/\/+$/, ''));
    this.origin = this.base.origin;
  }

  get description(): string {
    return this.opts.url;
  }

  /** `GET info/refs?service=…`: the advertisement's body. */
  async discover(service: Service, extraHeaders: Record<string, string> = {}): Promise<Buffer> {
    const res = await this.withRetries(`reading the refs of ${this.opts.url} (${service === 'git-receive-pack' ? 'to push' : 'to fetch'})`, service, () =>
      this.request('GET', `info/refs?service=${service}`, undefined, { ...extraHeaders, accept: `application/x-${service}-advertisement, */*` }, true),
    );
    const type = res.contentType;
    if (!type.startsWith(`application/x-${service}-advertisement`)) {
      throw new RemoteError('git', `${this.opts.url} is not a smart-HTTP git repository (the server answered ${type || 'without a content type'} to info/refs): check repo.url`, { status: res.status });
    }
    return res.body;
  }

  /** `POST <service>` with a pkt-line body. Reads are retried; a push (`retry: false`) is sent once. */
  async post(service: Service, body: Buffer, opts: { retry: boolean; headers?: Record<string, string> }): Promise<Buffer> {
    const send = () =>
      this.request('POST', service, body, {
        ...opts.headers,
        'content-type': `application/x-${service}-request`,
        accept: `application/x-${service}-result`,
      }, false);
    const res = opts.retry ? await this.withRetries(this.describe(service), service, send) : await this.once(this.describe(service), service, send);
    if (!res.contentType.startsWith(`application/x-${service}-result`)) {
      throw new RemoteError('git', `unexpected answer to ${service} (${res.contentType || 'no content type'}): is ${this.opts.url} a git repository?`, { status: res.status });
    }
    return res.body;
  }

  private describe(service: Service): string {
    return service === 'git-receive-pack' ? `pushing to ${this.opts.url}` : `fetching from ${this.opts.url}`;
  }

  private async once<T>(what: string, service: Service, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (error) {
      throw this.wrap(what, service, error);
    }
  }

  private withRetries<T>(what: string, service: Service, fn: () => Promise<T>): Promise<T> {
    return retry(fn, {
      attempts: this.opts.attempts ?? 4,
      backoff: { baseMs: this.opts.backoffMs ?? 250, spread: 0.5 },
      onFailure: (error, attempt, last) => {
        if (!(error instanceof TransientHttpError) || last) throw this.wrap(what, service, error, attempt);
      },
    });
  }

  private wrap(what: string, service: Service, error: unknown, attempts = 1): Error {
    if (error instanceof RemoteError) return error;
    const status = error instanceof TransientHttpError ? error.status : undefined;
    const tries = attempts > 1 ? ` after ${attempts} attempts` : '';
    return new RemoteError('git', `${what} failed${tries}: ${redact((error as Error).message)}`, { ...(status ? { status } : {}), cause: error });
  }

  /** Credentials only for the configured origin (never after a redirect to another host). */
  private headersFor(url: URL): Record<string, string> {
    const headers: Record<string, string> = { 'user-agent': this.opts.userAgent ?? 'git/lastgood-0.1' };
    if (url.origin === this.origin && this.opts.credentials) headers.authorization = this.opts.credentials.header;
    return headers;
  }

  private async request(method: 'GET' | 'POST', rel: string, body: Buffer | undefined, headers: Record<string, string>, initial: boolean): Promise<{ status: number; contentType: string; body: Buffer }> {
    let url = new URL(`${this.base.href}/${rel}`);
    for (let hop = 0; ; hop++) {
      this.requests++;
      const timeoutMs = this.opts.timeoutMs ?? 120_000;
      // the whole exchange, answer's body included, within timeoutMs
      const signal = AbortSignal.timeout(timeoutMs);
      const noAnswer = `no answer within ${Math.round(timeoutMs / 1000)} s`;
      let res: Http.IncomingMessage;
      try {
        res = await send(method, url, { ...headers, 'accept-encoding': 'gzip, deflate, br', ...this.headersFor(url) }, body, signal);
      } catch (error) {
        const e = error as { code?: string; message?: string };
        // a certificate that cannot be verified is the same on every attempt: not retried
        if (e.code && TLS_CERTIFICATE.test(e.code)) {
          throw new RemoteError('git', `the TLS certificate of ${url.host} could not be verified (${e.code}: ${e.message ?? 'no detail'}): if the server uses a private certificate authority, give its certificate to Node in NODE_EXTRA_CA_CERTS; nothing was sent`, { cause: error });
        }
        const why = signal.aborted ? noAnswer : whyUnreachable(error) ?? (e.code && !e.message?.includes(e.code) ? `${e.code} ${e.message ?? ''}`.trim() : e.message ?? String(error));
        throw new TransientHttpError(`cannot reach ${url.host}: ${why}`, undefined, error);
      }
      const status = res.statusCode ?? 0;
      const location = res.headers.location;
      if (status >= 300 && status < 400 && location) {
        res.resume();
        if (hop >= MAX_REDIRECTS) throw new RemoteError('git', `too many redirects from ${this.opts.url}`, { status });
        const next = new URL(location, url);
        if (next.protocol !== 'https:' && url.protocol === 'https:') {
          throw new RemoteError('git', `${this.opts.url} redirects from https to ${next.protocol.replace(/:$/, '')} (${next.origin}): refused, the repository and its credentials would travel unencrypted; set repo.url to an https address`, { status });
        }
        if (next.origin !== this.origin && !this.warnedRedirect) {
          this.warnedRedirect = true;
          this.opts.onWarning?.(`${this.opts.url} redirects to another host (${next.host}): following it without credentials`);
        }
        // the first request's redirect moves the base for every later request (git: http.followRedirects=initial)
        if (initial && next.pathname.endsWith(`/info/refs`)) {
          const nextBase = new URL(next.href);
          nextBase.pathname = next.pathname.replace(/\/info\/refs$/, '');
          nextBase.search = '';
          this.base = nextBase;
        }
        url = next;
        if (method === 'POST' && status !== 307 && status !== 308) throw new RemoteError('git', `${this.opts.url} redirected a ${rel} request (${status}): set repo.url to the final address`, { status });
        continue;
      }
      const buf = decode(await this.readBody(res, url).catch((error: unknown) => {
        const why = signal.aborted ? `: ${noAnswer}` : '';
        throw new TransientHttpError(`the connection to ${url.host} dropped while reading the answer${why}`, status, error);
      }), res.headers['content-encoding'], url);
      if (status >= 200 && status < 300) return { status, contentType: res.headers['content-type'] ?? '', body: buf };
      const service: Service = rel.includes('receive-pack') ? 'git-receive-pack' : 'git-upload-pack';
      if (status === 401 || status === 403) throw this.authError(status, service, url);
      if (status === 404) throw new RemoteError('git', `${this.opts.url} was not found (404): check repo.url${this.opts.credentials ? '' : ', and give credentials (repo.auth) if the repository is private'}`, { status: 404 });
      const text = buf.toString('utf8', 0, Math.min(buf.length, 300)).replace(/\s+/g, ' ').trim();
      if (status >= 500 || status === 429 || status === 408) throw new TransientHttpError(`the server answered ${status}${text ? `: ${text}` : ''}`, status);
      throw new RemoteError('git', `${url.host} answered ${status}${text ? `: ${redact(text)}` : ''}`, { status });
    }
  }

  /** The answer's body as sent, telling onProgress as it arrives. */
  private async readBody(res: Http.IncomingMessage, url: URL): Promise<Buffer> {
    const onProgress = this.opts.onProgress;
    const chunks: Buffer[] = [];
    let bytes = 0;
    for await (const chunk of res as AsyncIterable<Buffer>) {
      chunks.push(chunk);
      bytes += chunk.length;
      onProgress?.({ host: url.host, bytes });
    }
    onProgress?.({ host: url.host, bytes, done: true });
    return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
  }

  private authError(status: number, service: Service, url: URL): RemoteError {
    const access = service === 'git-receive-pack' ? 'write access to the repository (push)' : 'read access to the repository';
    const scopes = 'GitLab: a token with write_repository (push) or read_repository; Gitea/Forgejo: write:repository; Bitbucket: repository:write; Azure DevOps: Code (Read & write)';
    if (url.origin !== this.origin) {
      // redirected to another host, which asks for credentials: none were sent there, so none were refused
      return new RemoteError('git', `${this.origin} redirected to ${url.origin}, which requires authentication (${status}) for ${access}: lastgood sends credentials only to the host of repo.url, never to one it is redirected to; if ${url.host} is where the repository lives, set repo.url to it`, { status });
    }
    if (status === 401) {
      const why = this.opts.credentials
        ? `the credentials from ${this.opts.credentials.source} were refused: they are wrong or expired`
        : 'no credentials were given: set repo.auth (e.g. { tokenEnv: LASTGOOD_GIT_TOKEN })';
      return new RemoteError('git', `${url.host} requires authentication (401) for ${access}: ${why}`, { status });
    }
    return new RemoteError('git', `${url.host} denied ${access} (403): the credentials from ${this.opts.credentials?.source ?? '(none)'} lack that permission (${scopes})`, { status });
  }
}

/** One HTTP exchange up to the answer's headers: its body is the caller's to read. */
function send(method: 'GET' | 'POST', url: URL, headers: Record<string, string>, body: Buffer | undefined, signal: AbortSignal): Promise<Http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = (url.protocol === 'https:' ? https : http).request(url, { method, headers: body ? { ...headers, 'content-length': String(body.length) } : headers, signal }, resolve);
    req.on('error', reject);
    req.end(body);
  });
}

/** A body in the content coding the server chose among those asked for (Accept-Encoding: gzip, deflate, br, as curl asks for git). */
function decode(body: Buffer, encoding: string | undefined, url: URL): Buffer {
  const coding = encoding?.trim().toLowerCase() ?? '';
  try {
    if (coding === '' || coding === 'identity') return body;
    if (coding === 'gzip' || coding === 'x-gzip') return gunzipSync(body);
    if (coding === 'deflate') return inflateSync(body);
    if (coding === 'br') return brotliDecompressSync(body);
  } catch (error) {
    throw new TransientHttpError(`the answer of ${url.host} could not be decoded (${coding}: ${(error as Error).message})`, undefined, error);
  }
  throw new RemoteError('git', `${url.host} answered in a content coding lastgood did not ask for (${coding}): a proxy in between changes the answers`);
}
