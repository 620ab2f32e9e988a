/**
 * The controller's HTTP endpoints for the kubelet and Prometheus:
 *   /healthz  200 while the process serves (liveness)
 *   /readyz   200 once every watch has listed and leader election runs (leader or standby); 503 before, and while shutting down
 *   /metrics  Prometheus text (prom-client)
 *   /targets  each target's verdict, decision, what it waits for, last-known-good and last action (JSON; status.ts)
 *   /         the same for people, with the last 30 days' timeline (HTML, no script: page.ts); also /index.html
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { InputError, LocalError } from '../errors.ts';
import { PAGE_CSP } from '../audit/html.ts';

export interface Readiness {
  ready: boolean;
  /** what readyz shows: synced, leader, holder, ... */
  detail: Record<string, unknown>;
}

/** ":8080" → every interface; "127.0.0.1:0", "[::1]:9090". */
export function parseListen(listen: string): { host: string | undefined; port: number } {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([A-Za-z0-9.-]*)):(\d{1,5})$/.exec(listen);
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) throw new InputError(`controller.listen "${listen}": expected [host]:port, like :8080 or 127.0.0.1:8080`);
  return { host: m[1] ?? (m[2] || undefined), port };
}

/**
 * The page's headers: nothing but its own inline style and data: images may load (no script, no
 * font, no frame, no form), it is never framed, and nothing is sniffed.
 */
export const PAGE_HEADERS = {
  'content-security-policy': PAGE_CSP,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
} as const;

export async function serveEndpoints(listen: string, opts: { readiness(): Readiness; registry: Registry; targets?: () => Promise<unknown>; page?: () => Promise<string> }): Promise<http.Server & { address(): AddressInfo }> {
  const { host, port } = parseListen(listen);
  const server = http.createServer((req, res) => {
    const url = (req.url ?? '/').split('?')[0];
    const send = (status: number, type: string, body: string, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store', ...headers });
      res.end(req.method === 'HEAD' ? undefined : body);
    };
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(405, 'text/plain', 'method not allowed\n');
    if (url === '/healthz') return send(200, 'text/plain', 'ok\n');
    if (url === '/readyz') {
      const r = opts.readiness();
      return send(r.ready ? 200 : 503, 'application/json', JSON.stringify({ ready: r.ready, ...r.detail }) + '\n');
    }
    if (url === '/metrics') {
      opts.registry.metrics().then(
        (text) => send(200, opts.registry.contentType, text),
        (error: unknown) => send(500, 'text/plain', `cannot collect metrics: ${(error as Error).message}\n`),
      );
      return;
    }
    if (url === '/targets' && opts.targets) {
      opts.targets().then(
        (doc) => send(200, 'application/json', JSON.stringify(doc, null, 2) + '\n'),
        (error: unknown) => send(500, 'text/plain', `cannot tell the targets: ${(error as Error).message}\n`),
      );
      return;
    }
    if ((url === '/' || url === '/index.html') && opts.page) {
      opts.page().then(
        (html) => send(200, 'text/html; charset=utf-8', html, PAGE_HEADERS),
        (error: unknown) => send(500, 'text/plain', `cannot render the page: ${(error as Error).message}\n`),
      );
      return;
    }
    send(404, 'text/plain', `not found: /healthz, /readyz, /metrics${opts.targets ? ', /targets' : ''}${opts.page ? ', /' : ''}\n`);
  });
  // the kubelet's probes and Prometheus open short connections: none may hold shutdown
  server.keepAliveTimeout = 5000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => {
      // the world's fault (another process has the port, a privileged port, no such address): said so, exit 3
      const why: Record<string, string> = {
        EADDRINUSE: 'another process listens on it',
        EACCES: 'this process may not listen on it (a port below 1024 needs privileges)',
        EADDRNOTAVAIL: 'this machine has no such address',
      };
      reject(new LocalError(`controller.listen "${listen}": cannot serve /healthz, /readyz and /metrics there: ${why[error.code ?? ''] ?? error.message} (${error.code ?? 'error'}); choose another controller.listen`, { path: listen, code: error.code, cause: error }));
    });
    server.listen(port, host, () => resolve());
  });
  return server as http.Server & { address(): AddressInfo };
}
