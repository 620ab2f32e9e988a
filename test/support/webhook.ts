import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tempDir, writeFile } from './git.ts';
import { keepAliveAsHosts } from './http-keepalive.ts';

/** What lastgood posts to a webhook (report/notify.ts webhookPayload), the fields tests read, and the method it came with. */
export interface Received {
  method?: string;
  event: string;
  target?: string;
  commit: string | null;
  pullRequest: string | null;
  [field: string]: unknown;
}

export interface WebhookReceiver {
  /** the URL to give lastgood (LASTGOOD_WEBHOOK_URL, or `urlFile` for notify.webhook.urlFrom.file) */
  url: string;
  /** a file holding `url`, for config `notify: { webhook: { urlFrom: { file } } }` */
  urlFile: string;
  /** every POST's JSON body, in order (a body that is not JSON: `{ raw }`) */
  received: Received[];
  /** requests answered (whatever their body) */
  requests(): number;
}

/** A webhook notifications go to, on 127.0.0.1: every request is kept; closed at the test's end. */
export async function webhookReceiver(t: { teardown(fn: () => unknown): void }): Promise<WebhookReceiver> {
  const received: Received[] = [];
  let requests = 0;
  const server = createServer((req, res) => {
    requests++;
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString('utf8')));
    req.on('end', () => {
      try {
        received.push({ method: req.method, ...(JSON.parse(body) as Received) });
      } catch {
        received.push({ method: req.method, event: '', commit: null, pullRequest: null, raw: body });
      }
      res.end('ok');
    });
  });
  keepAliveAsHosts(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return { url, urlFile: writeFile(tempDir('lastgood-hook-url-'), 'url', `${url}\n`), received, requests: () => requests };
}
