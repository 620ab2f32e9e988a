import test from 'ava';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { createGitHubBackend } from '../src/deliver/github/index.ts';
import { createHostFetch } from '../src/deliver/host-http.ts';
import { RemoteError } from '../src/errors.ts';
import { lastgood } from './support/cli.ts';
import { tempDir, writeFile } from './support/git.ts';

/**
 * Errors a person can act on, on the git host's side (issue 36): a git server or host API nothing
 * answers at is named, with the cause in words ("connection refused (ECONNREFUSED)", "no such
 * host"), never a bare "fetch failed" or octokit's "500" for a request that reached no server.
 * The git provider through the CLI, as a user runs it (the demo's snapshot, so no cluster); the
 * GitHub backend and the merge-request hosts' shared fetch in-process, with short retry waits.
 */

/** A port nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** The demo's folder with its config's repo replaced by `repo` (YAML lines). */
async function demoWith(repo: string): Promise<{ config: string; snapshot: string }> {
  const dir = tempDir('lastgood-host-unreachable-');
  const made = await lastgood(['demo', path.join(dir, 'demo')]);
  if (made.code !== 0) throw new Error(made.stderr);
  const text = readFileSync(path.join(dir, 'demo', 'lastgood.yaml'), 'utf8').replace(/^repo:\n(?: {2}.*\n)+/m, `repo:\n${repo}`);
  return { config: writeFile(path.join(dir, 'demo'), 'unreachable.yaml', text), snapshot: path.join(dir, 'demo', 'cluster.yaml') };
}

const RUN = ['--now', '2026-11-21T09:52:00Z'];

test('git over HTTPS to a port nothing answers at: exit 3, naming the server and "connection refused"', async (t) => {
  const port = await closedPort();
  const { config, snapshot } = await demoWith(`  url: https://127.0.0.1:${port}/acme/gitops.git\n  provider: git\n  branch: main\n`);
  const r = await lastgood(['run', '--config', config, '--snapshot', snapshot, ...RUN], { env: { LASTGOOD_GIT_TOKEN: 'glpat-notARealToken0123456789' } });
  t.is(r.code, 3, r.stderr);
  t.regex(r.stderr, new RegExp(`^lastgood: podinfo-prod: git: reading the refs of https://127\\.0\\.0\\.1:${port}/acme/gitops\\.git \\(to fetch\\) failed after \\d attempts: cannot reach 127\\.0\\.0\\.1:${port}: connection refused \\(ECONNREFUSED\\)$`, 'm'));
  t.notRegex(r.stderr + r.stdout, /fetch failed|notARealToken/);
});

test('the GitHub API at a port nothing answers at, or at a host name that does not resolve: named, with the cause, not "500"', async (t) => {
  const port = await closedPort();
  for (const [api, why] of [[`https://127.0.0.1:${port}/api/v3`, /: connection refused \(ECONNREFUSED\)$/], ['https://lastgood-test.invalid/api/v3', /: (no such host \(ENOTFOUND\)|the host name could not be resolved \(DNS did not answer\) \(EAI_AGAIN\))$/]] as const) {
    const backend = createGitHubBackend({ owner: 'acme', repo: 'gitops', token: 'ghs_notARealToken0123456789abcdef0123', baseUrl: api, writeIntervalMs: 0, retryUnitMs: 2, maxRetries: 1 });
    const error = await t.throwsAsync(backend.head('main'));
    t.true(error instanceof RemoteError, String(error));
    t.true(error!.message.startsWith(`github: reading branch main failed: cannot reach the GitHub API at ${api}: `), error!.message);
    t.regex(error!.message, why);
    t.notRegex(error!.message, /\(500 |fetch failed|notARealToken/);
  }
});

test("the merge-request hosts' fetch: a server nothing answers at is named with the cause and the request, after its retries", async (t) => {
  const port = await closedPort();
  const host = createHostFetch({ apiBase: `http://127.0.0.1:${port}/api/v4`, system: 'gitlab', retryUnitMs: 4, maxRetries: 2 });
  const error = await t.throwsAsync(host.fetch(`http://127.0.0.1:${port}/api/v4/projects/acme%2Fgitops?private_token=x`, { headers: { 'private-token': 'glpat-notARealToken0123456789' } }));
  t.true(error instanceof RemoteError);
  t.is(error!.message, `gitlab: cannot reach http://127.0.0.1:${port}: connection refused (ECONNREFUSED) (GET /api/v4/projects/acme%2Fgitops, 3 attempts)`);
  t.is(host.requests, 3, 'a GET is sent again: nothing was applied');
  // a POST may have been applied where the answer was lost: sent once, and said so the same way
  const post = await t.throwsAsync(host.fetch(`http://127.0.0.1:${port}/api/v4/projects/1/merge_requests`, { method: 'POST', body: '{}' }));
  t.is(post!.message, `gitlab: cannot reach http://127.0.0.1:${port}: connection refused (ECONNREFUSED) (POST /api/v4/projects/1/merge_requests)`);
  t.is(host.requests, 4);
});
