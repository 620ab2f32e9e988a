import { RemoteError, redact } from '../errors.ts';
import { backoffDelay, sleep } from '../retry.ts';
import { whyUnreachable } from '../network.ts';

/**
 * The `fetch` every host API client (gitbeaker, gitea-js, openapi-fetch, the Azure DevOps calls)
 * is given, so that all of them follow the same rules whatever their own transport does:
 *
 * - credentials go only to the configured API origin: a redirect to another origin is followed
 *   without the credential headers (and said once), never with them;
 * - 429 (and 503 with Retry-After) wait what the host says, `Retry-After` seconds (or an HTTP
 *   date), in units of `retryUnitMs` (tests use a few ms), at most `maxRetries` times;
 * - 5xx and dropped connections are retried with backoff for every method but POST: a POST that
 *   failed may have been applied (a merge request opened, a comment posted), and the review flow
 *   settles that itself by reading the host again (review-request.ts);
 * - every request is counted (the benches report requests per revert merge request).
 */

export interface HostFetchOptions {
  /** the API base URL; its origin is the only one credentials are sent to */
  apiBase: string;
  /** which host, for errors */
  system: RemoteError['system'];
  /** headers that carry credentials (lower case): stripped on a redirect to another origin */
  credentialHeaders?: string[];
  /** retries on 429/5xx/connection errors (default 3) */
  maxRetries?: number;
  /** the unit of waits: Retry-After seconds and backoff steps are multiplied by it (default 1000) */
  retryUnitMs?: number;
  /** the longest single wait, in units (default 60: a host asking for longer is an outage) */
  maxWaitUnits?: number;
  /** one request's time limit, ms (default 30 s) */
  timeoutMs?: number;
  onWarning?: (message: string) => void;
}

export interface HostFetch {
  fetch: typeof fetch;
  /** requests sent (each attempt and redirect counts) */
  readonly requests: number;
}

const DEFAULT_CREDENTIAL_HEADERS = ['authorization', 'private-token', 'job-token', 'cookie'];
const MAX_REDIRECTS = 5;

/** Seconds to wait from a Retry-After header (delta-seconds or an HTTP date); undefined when absent or unreadable. */
export function retryAfterSeconds(value: string | null, now = Date.now()): number | undefined {
  if (!value) return undefined;
  if (/^\s*\d+(\.\d+)?\s*$/.test(value)) return Number(value);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, (at - now) / 1000);
}


export function createHostFetch(opts: HostFetchOptions): HostFetch {
  const origin = new URL(opts.apiBase).origin;
  const credentialHeaders = new Set((opts.credentialHeaders ?? DEFAULT_CREDENTIAL_HEADERS).map((h) => h.toLowerCase()));
  const maxRetries = opts.maxRetries ?? 3;
  const unit = opts.retryUnitMs ?? 1000;
  const maxWait = (opts.maxWaitUnits ?? 60) * unit;
  const timeoutMs = opts.timeoutMs ?? 30_000;
  let requests = 0;
  let warnedRedirect = false;

  /** One request, redirects followed by hand: same origin with the credentials, another without. */
  async function once(url: URL, init: RequestInit, headers: Headers): Promise<Response> {
    let target = url;
    let sendHeaders = headers;
    for (let hop = 0; ; hop++) {
      requests++;
      const response = await fetch(target, { ...init, headers: sendHeaders, redirect: 'manual', signal: init.signal ?? AbortSignal.timeout(timeoutMs) });
      const location = response.headers.get('location');
      if (response.status < 300 || response.status >= 400 || !location || hop >= MAX_REDIRECTS) return response;
      await response.body?.cancel();
      const next = new URL(location, target);
      if (next.origin !== origin) {
        if (!warnedRedirect) opts.onWarning?.(`the API at ${origin} redirected to ${next.origin}: followed without credentials`);
        warnedRedirect = true;
        sendHeaders = new Headers(sendHeaders);
        for (const h of credentialHeaders) sendHeaders.delete(h);
      }
      target = next;
    }
  }

  const wrapped = async (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    // clients hand over a Request (gitbeaker, openapi-fetch) or a URL and init (gitea-js)
    const request = input instanceof Request ? input : undefined;
    const url = new URL(request ? request.url : String(input));
    const method = (init.method ?? request?.method ?? 'GET').toUpperCase();
    const headers = new Headers(init.headers ?? request?.headers);
    let body: RequestInit["body"] = init.body;
    if (body === undefined && request && method !== 'GET' && method !== 'HEAD') body = await request.arrayBuffer();
    if (url.origin !== origin) {
      // a client building a URL off the configured origin (an absolute link in a response): no credentials
      for (const h of credentialHeaders) headers.delete(h);
    }
    const reqInit: RequestInit = { method, body: body ?? null, ...(init.signal ? { signal: init.signal } : {}) };
    for (let attempt = 0; ; attempt++) {
      let response: Response;
      try {
        response = await once(url, reqInit, headers);
      } catch (error) {
        // a dropped connection or a timeout: a POST may have been applied, so only the others are sent again
        if (method === 'POST' || attempt >= maxRetries) {
          const timedOut = (error as Error)?.name === 'TimeoutError';
          const why = timedOut ? `no answer within ${Math.round(timeoutMs / 1000)} s` : whyUnreachable(error) ?? (error as Error).message;
          throw new RemoteError(opts.system, `cannot reach ${origin}: ${why} (${method} ${redact(url.pathname)}${attempt > 0 ? `, ${attempt + 1} attempts` : ''})`, { cause: error });
        }
        await sleep(backoffDelay(attempt, { baseMs: unit / 4 }));
        continue;
      }
      const wait = retryAfterSeconds(response.headers.get('retry-after'));
      const limited = response.status === 429 || (response.status === 503 && wait !== undefined) || (response.status === 403 && wait !== undefined);
      const retriable = limited || (response.status >= 500 && method !== 'POST');
      if (!retriable || attempt >= maxRetries) return response;
      await response.body?.cancel();
      await sleep(Math.min(maxWait, wait !== undefined ? wait * unit : backoffDelay(attempt, { baseMs: unit / 4 })));
    }
  };
  return {
    fetch: wrapped as typeof fetch,
    get requests() {
      return requests;
    },
  };
}
