import test from 'ava';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHostFetch, retryAfterSeconds } from '../src/deliver/host-http.ts';
import { hostCoordinates, providerOf } from '../src/deliver/providers.ts';
import { openRepo } from '../src/deliver/registry.ts';
import { tempDir } from './support/git.ts';

/**
 * The rules every host API client runs under (src/deliver/host-http.ts), and which host and API a
 * repository URL means (src/deliver/providers.ts, the registry).
 */

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
}

async function server(t: { teardown(fn: () => unknown): void }, answer: (req: http.IncomingMessage, n: number) => { status: number; headers?: Record<string, string>; body?: string }): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const s = http.createServer((req, res) => {
    seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    req.resume();
    req.on('end', () => {
      const a = answer(req, seen.length);
      res.writeHead(a.status, a.headers ?? {}).end(a.body ?? '');
    });
  });
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => s.close(() => resolve())));
  return { url: `http://127.0.0.1:${(s.address() as AddressInfo).port}`, seen };
}

test('Retry-After is read as seconds or as an HTTP date; anything else is no answer', (t) => {
  t.is(retryAfterSeconds('7'), 7);
  t.is(retryAfterSeconds(' 1.5 '), 1.5);
  t.is(retryAfterSeconds('Wed, 25 Nov 2026 10:00:30 GMT', Date.parse('2026-11-25T10:00:00Z')), 30);
  t.is(retryAfterSeconds('Wed, 25 Nov 2026 09:00:00 GMT', Date.parse('2026-11-25T10:00:00Z')), 0, 'a date passed means now');
  t.is(retryAfterSeconds('soon'), undefined);
  t.is(retryAfterSeconds(null), undefined);
});

test('a rate limit is waited out as the host asks, then the request goes again', async (t) => {
  const api = await server(t, (_req, n) => (n <= 2 ? { status: 429, headers: { 'retry-after': '2' } } : { status: 200, body: 'ok' }));
  const f = createHostFetch({ apiBase: api.url, system: 'gitlab', retryUnitMs: 1 });
  const res = await f.fetch(`${api.url}/api/v4/x`);
  t.is(res.status, 200);
  t.is(await res.text(), 'ok');
  t.is(api.seen.length, 3);
  t.is(f.requests, 3);
});

test('a POST that failed with 5xx is not sent again (it may have been applied); a GET is', async (t) => {
  const api = await server(t, (req, n) => (req.method === 'POST' ? { status: 502 } : n <= 3 ? { status: 503 } : { status: 200 }));
  const f = createHostFetch({ apiBase: api.url, system: 'gitea', retryUnitMs: 1 });
  t.is((await f.fetch(`${api.url}/pulls`, { method: 'POST', body: '{}' })).status, 502);
  t.is(api.seen.length, 1);
  t.is((await f.fetch(`${api.url}/pulls`)).status, 200);
  t.is(api.seen.length, 4);
});

test('retries are bounded: the last answer is returned', async (t) => {
  const api = await server(t, () => ({ status: 429, headers: { 'retry-after': '1' } }));
  const f = createHostFetch({ apiBase: api.url, system: 'bitbucket', retryUnitMs: 1, maxRetries: 2 });
  t.is((await f.fetch(`${api.url}/x`)).status, 429);
  t.is(api.seen.length, 3);
});

test('credentials stay on the configured host: a redirect elsewhere is followed without them, one on the same host with them', async (t) => {
  const elsewhere = await server(t, () => ({ status: 200, body: 'there' }));
  const warnings: string[] = [];
  const api = await server(t, (req) => (req.url === '/same' ? { status: 200 } : req.url === '/hop' ? { status: 302, headers: { location: '/same' } } : { status: 307, headers: { location: `${elsewhere.url}/landing` } }));
  const f = createHostFetch({ apiBase: `${api.url}/api/v4`, system: 'gitlab', onWarning: (m) => warnings.push(m) });
  const headers = { 'private-token': 'glpat-secret', authorization: 'Bearer secret', 'x-other': 'kept' };
  t.is(await (await f.fetch(`${api.url}/away`, { headers })).text(), 'there');
  t.is(elsewhere.seen[0]!.headers['private-token'], undefined);
  t.is(elsewhere.seen[0]!.headers.authorization, undefined);
  t.is(elsewhere.seen[0]!.headers['x-other'], 'kept');
  t.regex(warnings.join(), /followed without credentials/);
  await f.fetch(`${api.url}/hop`, { headers });
  t.is(api.seen.at(-1)!.headers['private-token'], 'glpat-secret', 'same host: credentials kept');
});

test('public hosts are known from their URL; a self-hosted one only by repo.provider', (t) => {
  t.is(providerOf(new URL('https://gitlab.com/acme/gitops.git')), 'gitlab');
  t.is(providerOf(new URL('https://codeberg.org/acme/gitops.git')), 'gitea');
  t.is(providerOf(new URL('https://bitbucket.org/acme/gitops.git')), 'bitbucket');
  t.is(providerOf(new URL('https://dev.azure.com/acme/platform/_git/gitops')), 'azure-devops');
  t.is(providerOf(new URL('https://acme.visualstudio.com/platform/_git/gitops')), 'azure-devops');
  t.is(providerOf(new URL('https://gitlab.example.com/acme/gitops.git')), undefined, 'a name in a host name is no reason to call an API');
  t.is(providerOf(new URL('https://git.example.com/acme/gitops.git'), 'forgejo'), 'gitea');
  t.is(providerOf(new URL('https://gitlab.com/acme/gitops.git'), 'git'), 'git');
});

test('each host\'s API base, web page and names, from its clone URL', (t) => {
  t.like(hostCoordinates(new URL('https://gitlab.com/acme/platform/gitops.git'), 'gitlab'), { api: 'https://gitlab.com/api/v4', web: 'https://gitlab.com/acme/platform/gitops', owner: 'acme/platform', repo: 'gitops' });
  t.like(hostCoordinates(new URL('https://git.example.com/gitlab/acme/gitops.git'), 'gitlab', 'https://git.example.com/gitlab/api/v4'), { api: 'https://git.example.com/gitlab/api/v4', web: 'https://git.example.com/gitlab/acme/gitops', owner: 'acme', repo: 'gitops' });
  t.like(hostCoordinates(new URL('https://forge.example.com/sub/acme/gitops.git'), 'gitea'), { api: 'https://forge.example.com/sub/api/v1', web: 'https://forge.example.com/sub/acme/gitops', owner: 'acme', repo: 'gitops' });
  t.like(hostCoordinates(new URL('https://bitbucket.org/acme/gitops.git'), 'bitbucket'), { api: 'https://api.bitbucket.org/2.0', web: 'https://bitbucket.org/acme/gitops' });
  t.like(hostCoordinates(new URL('https://bb.example.com/bitbucket/scm/ops/gitops.git'), 'bitbucket-server'), { api: 'https://bb.example.com/bitbucket/rest', web: 'https://bb.example.com/bitbucket/projects/ops/repos/gitops', owner: 'ops', repo: 'gitops' });
  t.like(hostCoordinates(new URL('https://dev.azure.com/acme/platform/_git/gitops'), 'azure-devops'), { api: 'https://dev.azure.com/acme', web: 'https://dev.azure.com/acme/platform/_git/gitops', owner: 'platform', repo: 'gitops' });
  t.like(hostCoordinates(new URL('https://tfs.example.com/tfs/Main/platform/_git/gitops'), 'azure-devops'), { api: 'https://tfs.example.com/tfs/Main', owner: 'platform' });
  t.regex(hostCoordinates(new URL('https://bitbucket.org/acme'), 'bitbucket') as string, /WORKSPACE\/REPO/);
  t.regex(hostCoordinates(new URL('https://bb.example.com/ops/gitops.git'), 'bitbucket-server') as string, /\/scm\/PROJECT\/REPO\.git/);
});

test('the registry opens the host\'s API backend for a public host or repo.provider, the git backend otherwise', async (t) => {
  const relativeTo = tempDir('lastgood-registry-');
  const open = (location: string, repo: Record<string, unknown> = {}) => openRepo({ location, relativeTo, repo: repo as never, env: {}, onWarning: () => {} });
  t.is((await open('https://gitlab.com/acme/gitops.git')).kind, 'gitlab');
  t.is((await open('https://codeberg.org/acme/gitops.git')).kind, 'gitea');
  t.is((await open('https://acme@dev.azure.com/acme/platform/_git/gitops')).kind, 'azure-devops', 'the organization as a user name is no credential');
  t.is((await open('https://gitlab.example.com/acme/gitops.git')).kind, 'git');
  t.is((await open('https://gitlab.example.com/acme/gitops.git', { provider: 'gitlab' })).kind, 'gitlab');
  t.is((await open('https://bb.example.com/scm/ops/gitops.git', { provider: 'bitbucket-server' })).kind, 'bitbucket-server');
  t.is((await open('https://gitlab.com/acme/gitops.git', { transport: 'git' })).kind, 'git');
  await t.throwsAsync(open('https://bb.example.com/ops/gitops.git', { provider: 'bitbucket-server' }), { message: /not a repository URL of bitbucket-server/ });
});
