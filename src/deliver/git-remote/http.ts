import { randomInt } from 'node:crypto';
import { RemoteError, redact } from '../../errors.ts';
import type { GitCredentials } from './auth.ts';

/**
 * The HTTP side of git's smart protocol (gitprotocol-http(5)): `GET info/refs?service=…` and
 * `POST git-upload-pack` / `git-receive-pack`, over Node's fetch (undici).
 *
 * - Credentials go to the configured origin only: a redirect to another host is followed without
 *   them (git's http.followRedirects=initial keeps the redirected base for later requests, so do we).
 * - Reads (discovery, fetch) are retried on 5xx, 429, timeouts and dropped connections, with
 *   exponential backoff and jitter. A push is never retried here: whether it landed is decided by
 *   reading the ref again (see RemoteRepo).
 * - 401 and 403 become a RemoteError that says which permission is missing; no header, token or
 *   URL credential ever reaches a message.
 */

import type { TransferEvent } from '../../report/progress.ts';

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

  private async withRetries<T>(what: string, service: Service, fn: () => Promise<T>): Promise<T> {
    const attempts = this.opts.attempts ?? 4;
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn();
      } catch (error) {
        if (!(error instanceof TransientHttpError) || attempt >= attempts) throw this.wrap(what, service, error, attempt);
        const base = (this.opts.backoffMs ?? 250) * 2 ** (attempt - 1);
        await new Promise((resolve) => setTimeout(resolve, base + randomInt(Math.max(1, Math.floor(base / 2)))));
      }
    }
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
      let res: Response;
      try {
        res = await fetch(url, {
          method,
          headers: { ...headers, ...this.headersFor(url) },
          ...(body ? { body } : {}),
          redirect: 'manual',
          signal: AbortSignal.timeout(this.opts.timeoutMs ?? 120_000),
        });
      } catch (error) {
        const cause = (error as { cause?: { code?: string; message?: string } }).cause;
        // a certificate that cannot be verified is the same on every attempt: not retried
        if (cause?.code && TLS_CERTIFICATE.test(cause.code)) {
          throw new RemoteError('git', `the TLS certificate of ${url.host} could not be verified (${cause.code}: ${cause.message ?? 'no detail'}): if the server uses a private certificate authority, give its certificate to Node in NODE_EXTRA_CA_CERTS; nothing was sent`, { cause: error });
        }
        const why = (error as Error).name === 'TimeoutError' ? `no answer within ${Math.round((this.opts.timeoutMs ?? 120_000) / 1000)} s` : `${cause?.code ?? ''} ${cause?.message ?? (error as Error).message}`.trim();
        throw new TransientHttpError(`the connection to ${url.host} failed (${why})`, undefined, error);
      }
      if (res.status >= 300 && res.status < 400 && res.headers.get('location')) {
        await res.body?.cancel();
        if (hop >= MAX_REDIRECTS) throw new RemoteError('git', `too many redirects from ${this.opts.url}`, { status: res.status });
        const next = new URL(res.headers.get('location')!, url);
        if (next.protocol !== 'https:' && url.protocol === 'https:') {
          throw new RemoteError('git', `${this.opts.url} redirects from https to ${next.protocol.replace(/:$/, '')} (${next.origin}): refused, the repository and its credentials would travel unencrypted; set repo.url to an https address`, { status: res.status });
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
        if (method === 'POST' && res.status !== 307 && res.status !== 308) throw new RemoteError('git', `${this.opts.url} redirected a ${rel} request (${res.status}): set repo.url to the final address`, { status: res.status });
        continue;
      }
      const buf = await this.readBody(res, url).catch((error: unknown) => {
        throw new TransientHttpError(`the connection to ${url.host} dropped while reading the answer`, res.status, error);
      });
      if (res.ok) return { status: res.status, contentType: res.headers.get('content-type') ?? '', body: buf };
      const service: Service = rel.includes('receive-pack') ? 'git-receive-pack' : 'git-upload-pack';
      if (res.status === 401 || res.status === 403) throw this.authError(res.status, service, url);
      if (res.status === 404) throw new RemoteError('git', `${this.opts.url} was not found (404): check repo.url${this.opts.credentials ? '' : ', and give credentials (repo.auth) if the repository is private'}`, { status: 404 });
      const text = buf.toString('utf8', 0, Math.min(buf.length, 300)).replace(/\s+/g, ' ').trim();
      if (res.status >= 500 || res.status === 429 || res.status === 408) throw new TransientHttpError(`the server answered ${res.status}${text ? `: ${text}` : ''}`, res.status);
      throw new RemoteError('git', `${url.host} answered ${res.status}${text ? `: ${redact(text)}` : ''}`, { status: res.status });
    }
  }

  /** The answer's body, telling onProgress as it arrives. */
  private async readBody(res: Response, url: URL): Promise<Buffer> {
    const onProgress = this.opts.onProgress;
    if (!onProgress || !res.body) return Buffer.from(await res.arrayBuffer());
    const chunks: Buffer[] = [];
    let bytes = 0;
    for await (const chunk of res.body) {
      chunks.push(Buffer.from(chunk));
      bytes += chunk.byteLength;
      onProgress({ host: url.host, bytes });
    }
    onProgress({ host: url.host, bytes, done: true });
    return Buffer.concat(chunks);
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
