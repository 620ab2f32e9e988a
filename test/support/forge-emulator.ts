import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { GitHttpServer } from './git-http-server.ts';
import { resolveRef, type OpenApiValidator, type OperationMatch } from './openapi-validator.ts';
import { runRelayed } from './spawner.ts';
import { keepAliveAsHosts } from './http-keepalive.ts';

/**
 * What the emulators of GitLab, Gitea, Bitbucket and Azure DevOps share (each host's file gives only
 * its routes, in its own JSON): one HTTP server per host that
 *
 * - serves the host's REST API over an in-memory model of pull/merge requests, with the branches
 *   read from a real bare repository;
 * - passes git's smart-HTTP requests (the host's clone URL shape) on to the real `git http-backend`
 *   server (test/support/git-http-server.ts), so that repo.url and the API share one origin as on
 *   the real host;
 * - checks every request and every answer against the host's published description
 *   (api-description.ts): a mismatch is recorded in `violations` (tests assert it stays empty), a
 *   request the description does not have is refused;
 * - injects faults: a status (429 with Retry-After, 5xx, 409) before the request is applied, or
 *   after it was applied (the client never learns it landed).
 */

export interface ForgeFault {
  method?: string;
  /** matches the request's path (without the query) */
  path?: RegExp;
  /** how many matching requests (default 1) */
  times?: number;
  status: number;
  /** seconds, sent as Retry-After */
  retryAfter?: number;
  /** apply the request, then answer `status` instead of its answer */
  afterApply?: boolean;
  /** reset the connection instead of answering `status` (a host's front dropping it) */
  reset?: boolean;
  /** the answer's body (default: the host's usual error shape with "injected") */
  body?: unknown;
}

export interface ForgeRecord {
  method: string;
  path: string;
  /** "METHOD template" from the description; undefined for git traffic and undescribed requests */
  route: string | undefined;
  status: number;
  write: boolean;
  git: boolean;
  fault?: string;
  /** the Authorization scheme (Basic, Bearer) or the GitLab token header that came, never its value */
  auth?: string;
}

export interface ModelComment {
  id: number;
  body: string;
  author: string;
}

/** A pull/merge request as the emulators keep it; each host renders it its own way. */
export interface ModelRequest {
  number: number;
  id: number;
  source: string;
  target: string;
  title: string;
  body: string;
  state: 'open' | 'closed' | 'merged';
  draft: boolean;
  labels: string[];
  reviewers: string[];
  assignees: string[];
  comments: ModelComment[];
  author: string;
  created: string;
  updated: string;
  autoMerge: boolean;
  /** the source branch's head when it was opened */
  sha: string;
  /** a merged request: when, and the commit the merge made on the target branch (a test merges with git and says so here) */
  mergedAt?: string;
  mergeCommit?: string;
  /** when it was merged or closed unmerged */
  closedAt?: string;
}

export interface ForgeRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: http.IncomingHttpHeaders;
  body: unknown;
  match: OperationMatch;
  route: string;
  params: Record<string, string>;
}

export interface ForgeAnswer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export class ForgeHttpError extends Error {
  readonly status: number;
  readonly body: unknown;
  constructor(status: number, body: unknown) {
    super(typeof body === 'string' ? body : JSON.stringify(body));
    this.status = status;
    this.body = body;
  }
}

export interface ForgeOptions {
  name: string;
  validator: OpenApiValidator;
  git: GitHttpServer;
  /** the bare repository the API's branches are read from */
  bareRepo: string;
  /** the git server's path for a request on this host's clone URL shape, or undefined for an API request */
  gitPath: (path: string) => string | undefined;
  /** who the request's credentials are; undefined: 401 */
  authenticate: (headers: http.IncomingHttpHeaders) => string | undefined;
  /** the host's error body for a status and message */
  errorBody: (status: number, message: string) => unknown;
  handle: (req: ForgeRequest, model: ForgeModel) => Promise<ForgeAnswer>;
  /** the part of an answer the description describes, where the host wraps it (Azure DevOps's `{count, value}`) */
  described?: (body: unknown, schemaIsArray: boolean) => unknown;
}

export interface ForgeModel {
  requests: ModelRequest[];
  /** known users: name → numeric id */
  users: Map<string, number>;
  base: string;
  nextId(): number;
  now(): string;
  /** the head of a branch in the bare repository, undefined when absent */
  branchHead(branch: string): Promise<string | undefined>;
  git(args: string[]): Promise<string>;
}

export interface ForgeEmulator {
  url: string;
  readonly model: ForgeModel;
  readonly violations: string[];
  readonly log: ForgeRecord[];
  /** API requests (git traffic excluded) */
  readonly apiRequests: number;
  inject(fault: ForgeFault): void;
  resetLog(): void;
  close(): Promise<void>;
}

export async function startForgeEmulator(opts: ForgeOptions): Promise<ForgeEmulator> {
  const violations: string[] = [];
  const log: ForgeRecord[] = [];
  const faults: Array<ForgeFault & { left: number }> = [];
  let id = 1;
  const model: ForgeModel = {
    requests: [],
    users: new Map(),
    base: '',
    nextId: () => id++,
    now: () => new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    // git started by the worker's small relay process (support/spawner.ts)
    git: async (args) => (await runRelayed('git', args, { cwd: opts.bareRepo })).stdout.trim(),
    branchHead: async (branch) => {
      try {
        return (await runRelayed('git', ['rev-parse', '--verify', '-q', `refs/heads/${branch}^{commit}`], { cwd: opts.bareRepo })).stdout.trim() || undefined;
      } catch {
        return undefined;
      }
    },
  };
  const gitUrl = new URL(opts.git.url);

  const proxy = (req: http.IncomingMessage, res: http.ServerResponse, target: string, record: ForgeRecord) => {
    const upstream = http.request({ host: gitUrl.hostname, port: gitUrl.port, method: req.method, path: target, headers: { ...req.headers, host: gitUrl.host } }, (answer) => {
      record.status = answer.statusCode ?? 502;
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => req.socket.destroy());
    req.pipe(upstream);
  };

  const take = (method: string, path: string): ForgeFault | undefined => {
    const i = faults.findIndex((f) => f.left > 0 && (!f.method || f.method === method) && (!f.path || f.path.test(path)));
    if (i < 0) return undefined;
    const f = faults[i]!;
    if (--f.left <= 0) faults.splice(i, 1);
    return f;
  };

  const send = (res: http.ServerResponse, answer: ForgeAnswer, record: ForgeRecord) => {
    record.status = answer.status;
    const headers: Record<string, string> = { ...(answer.headers ?? {}) };
    if (answer.body === undefined) {
      res.writeHead(answer.status, headers).end();
      return;
    }
    const text = typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body);
    res.writeHead(answer.status, { 'content-type': typeof answer.body === 'string' ? 'text/plain' : 'application/json', ...headers }).end(text);
  };

  const faultAnswer = (fault: ForgeFault): ForgeAnswer => ({
    status: fault.status,
    body: fault.body ?? opts.errorBody(fault.status, `injected ${fault.status}`),
    ...(fault.retryAfter !== undefined ? { headers: { 'retry-after': String(fault.retryAfter) } } : {}),
  });

  const sendFault = (req: http.IncomingMessage, res: http.ServerResponse, fault: ForgeFault, record: ForgeRecord, when: string) => {
    if (fault.reset) {
      record.fault = `reset${when}`;
      req.socket.destroy();
      return;
    }
    record.fault = `${fault.status}${fault.retryAfter !== undefined ? ` retry-after ${fault.retryAfter}` : ''}${when}`;
    send(res, faultAnswer(fault), record);
  };

  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', model.base || 'http://localhost');
    const method = (req.method ?? 'GET').toUpperCase();
    const scheme = req.headers.authorization?.split(/\s+/)[0] ?? (req.headers['private-token'] ? 'PRIVATE-TOKEN' : req.headers['job-token'] ? 'JOB-TOKEN' : undefined);
    const record: ForgeRecord = { method, path: url.pathname + url.search, route: undefined, status: 0, write: method !== 'GET' && method !== 'HEAD', git: false, ...(scheme ? { auth: scheme } : {}) };
    log.push(record);
    const gitTarget = opts.gitPath(url.pathname);
    if (gitTarget !== undefined) {
      record.git = true;
      record.write = url.pathname.endsWith('git-receive-pack');
      proxy(req, res, `${gitTarget}${url.search}`, record);
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        let body: unknown;
        if (raw) {
          try {
            body = JSON.parse(raw);
          } catch {
            violations.push(`${method} ${url.pathname}: the body is not JSON`);
            send(res, { status: 400, body: opts.errorBody(400, 'body is not JSON') }, record);
            return;
          }
        }
        const match = opts.validator.findOperation(method, url.pathname);
        if (!match) {
          violations.push(`${method} ${url.pathname}: not in ${opts.name}'s API description`);
          send(res, { status: 404, body: opts.errorBody(404, '404 Not Found') }, record);
          return;
        }
        const route = `${method} ${match.template}`;
        record.route = route;
        if (!opts.authenticate(req.headers)) {
          send(res, { status: 401, body: opts.errorBody(401, '401 Unauthorized') }, record);
          return;
        }
        const problems = opts.validator.validateRequest(match, url.searchParams, body);
        if (problems.length) {
          violations.push(...problems);
          send(res, { status: 400, body: opts.errorBody(400, problems.join('; ')) }, record);
          return;
        }
        const fault = take(method, url.pathname);
        if (fault && !fault.afterApply) {
          sendFault(req, res, fault, record, '');
          return;
        }
        let answer: ForgeAnswer;
        try {
          answer = await opts.handle({ method, path: url.pathname, query: url.searchParams, headers: req.headers, body, match, route, params: match.params }, model);
        } catch (error) {
          if (!(error instanceof ForgeHttpError)) throw error;
          answer = { status: error.status, body: error.body };
        }
        // an error status the description gives without a body schema (Gitea's `responses/error`) has nothing to check
        const response = match.operation.responses[String(answer.status)] ?? match.operation.responses.default;
        const hasSchema = response !== undefined && JSON.stringify(resolveRef(opts.validator.doc, response)).includes('"schema"');
        if (answer.status < 300 && response === undefined) violations.push(`${route} → ${answer.status}: status not described`);
        else if (hasSchema) {
          const isArray = /"type":"array"/.test(JSON.stringify(resolveRef(opts.validator.doc, response)).slice(0, 400));
          const wrong = opts.validator.validateResponse(match, answer.status, opts.described ? opts.described(answer.body, isArray) : answer.body);
          if (wrong.length) violations.push(...wrong);
        }
        if (fault?.afterApply) {
          sendFault(req, res, fault, record, ' after applying');
          return;
        }
        send(res, answer, record);
      })().catch((error: unknown) => {
        violations.push(`${method} ${url.pathname}: emulator error ${(error as Error).stack}`);
        if (!res.headersSent) send(res, { status: 500, body: opts.errorBody(500, (error as Error).message) }, record);
      });
    });
  });
  keepAliveAsHosts(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  model.base = `http://127.0.0.1:${port}`;
  return {
    url: model.base,
    model,
    violations,
    log,
    get apiRequests() {
      return log.filter((r) => !r.git).length;
    },
    inject: (fault) => faults.push({ ...fault, left: fault.times ?? 1 }),
    resetLog: () => {
      log.length = 0;
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((e) => (e ? reject(e) : resolve()));
      }),
  };
}

/** A new request in the model (the host renders it). */
export function openModelRequest(model: ForgeModel, fields: Pick<ModelRequest, 'source' | 'target' | 'title' | 'body' | 'author' | 'sha'> & Partial<ModelRequest>): ModelRequest {
  const now = model.now();
  const number = model.requests.length + 1;
  const request: ModelRequest = { number, id: 9000 + number, state: 'open', draft: false, labels: [], reviewers: [], assignees: [], comments: [], created: now, updated: now, autoMerge: false, ...fields };
  model.requests.push(request);
  return request;
}

/** A person merged `request` on the host (the test made `mergeCommit` on the target branch with git): the host records it now. */
export function mergeModelRequest(model: ForgeModel, request: ModelRequest, mergeCommit: string): void {
  const now = model.now();
  Object.assign(request, { state: 'merged', mergeCommit, mergedAt: now, closedAt: now, updated: now });
}

/** A request closed without merging (a person on the host, or the host's close call), now. */
export function closeModelRequest(model: ForgeModel, request: ModelRequest): void {
  const now = model.now();
  Object.assign(request, { state: 'closed', closedAt: now, updated: now });
}
