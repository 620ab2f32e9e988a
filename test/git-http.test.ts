import test from 'ava';
import fs from 'node:fs';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import git from 'isomorphic-git';
import http from 'isomorphic-git/http/node';
import { startGitHttpServer } from './support/git-http-server.ts';
import { commit, git as runGit, makeRepo, tempDir } from './support/git.ts';

const TOKEN = 'test-token-5e1f0a9c';

/** Native git against the in-process server must not block the event loop (the server runs here). */
const execFileAsync = promisify(execFile);
async function nativeGit(args: string[], env: Record<string, string> = {}) {
  return execFileAsync('git', args, { env: { ...process.env, GIT_TERMINAL_PROMPT: '0', GIT_CONFIG_NOSYSTEM: '1', ...env }, encoding: 'utf8' });
}

/** A bare repository `root/config.git` with two commits; returns root, the bare path and the head. */
function bareFixture() {
  const work = makeRepo();
  commit(work, { 'apps/podinfo/deployment.yaml': 'image: podinfo:1\n' }, 'first');
  const head = commit(work, { 'apps/podinfo/deployment.yaml': 'image: podinfo:2\n' }, 'second');
  const root = tempDir('lastgood-githttp-');
  const bare = path.join(root, 'config.git');
  runGit(root, 'clone', '-q', '--bare', work, bare);
  return { root, bare, head };
}

const auth = { headers: { authorization: `Bearer ${TOKEN}` } };

test('isomorphic-git clones, fetches and pushes through git http-backend', async (t) => {
  const { root, bare, head } = bareFixture();
  const server = await startGitHttpServer({ root, token: TOKEN });
  t.teardown(() => server.close());
  const dir = tempDir('lastgood-iso-');
  const url = `${server.url}/config.git`;

  await git.clone({ fs, http, dir, url, ref: 'main', singleBranch: true, ...auth });
  t.is(await git.resolveRef({ fs, dir, ref: 'HEAD' }), head);
  t.is(fs.readFileSync(path.join(dir, 'apps/podinfo/deployment.yaml'), 'utf8'), 'image: podinfo:2\n');

  // someone else pushes natively; isomorphic-git fetches it
  const other = tempDir('lastgood-other-');
  runGit(other, 'clone', '-q', bare, '.');
  const third = commit(other, { 'apps/other/a.yaml': 'a: 1\n' }, 'third');
  runGit(other, 'push', '-q', 'origin', 'main');
  const fetched = await git.fetch({ fs, http, dir, url, ref: 'main', singleBranch: true, ...auth });
  t.is(fetched.fetchHead, third);

  // isomorphic-git pushes a new commit on top; the bare repository has it
  await git.checkout({ fs, dir, ref: 'main' });
  await git.merge({ fs, dir, ours: 'main', theirs: 'origin/main', fastForwardOnly: true, author: { name: 'x', email: 'x@example.com' } });
  await git.checkout({ fs, dir, ref: 'main' });
  fs.writeFileSync(path.join(dir, 'apps/podinfo/deployment.yaml'), 'image: podinfo:1\n');
  await git.add({ fs, dir, filepath: 'apps/podinfo/deployment.yaml' });
  const mine = await git.commit({ fs, dir, message: 'revert', author: { name: 'lastgood', email: 'bot@example.com', timestamp: 1_790_000_000 } });
  const pushed = await git.push({ fs, http, dir, url, ref: 'main', ...auth });
  t.true(pushed.ok);
  t.is(runGit(bare, 'rev-parse', 'main'), mine);
  t.is(runGit(bare, 'rev-parse', 'main^'), third);
  t.is(runGit(bare, 'show', 'main:apps/podinfo/deployment.yaml'), 'image: podinfo:1');
  t.true(server.requests >= 6);
});

test('native git clones with the token and is refused without it', async (t) => {
  const { root, head } = bareFixture();
  const server = await startGitHttpServer({ root, token: TOKEN });
  t.teardown(() => server.close());
  const url = `${server.url}/config.git`;

  const dest = path.join(tempDir('lastgood-native-'), 'clone');
  await nativeGit(['-c', `http.extraHeader=Authorization: Bearer ${TOKEN}`, 'clone', '-q', url, dest]);
  t.is(runGit(dest, 'rev-parse', 'HEAD'), head);

  // Basic auth with the token as the user name (GitHub's convention) works too
  const basic = path.join(tempDir('lastgood-native-'), 'clone');
  await nativeGit(['clone', '-q', url.replace('http://', `http://${TOKEN}@`), basic]);
  t.is(runGit(basic, 'rev-parse', 'HEAD'), head);

  const before = server.unauthorized;
  const error = await t.throwsAsync(nativeGit(['clone', '-q', url, path.join(tempDir(), 'nope')], { GIT_ASKPASS: '/bin/false' }));
  t.regex(String((error as { stderr?: string }).stderr), /Authentication failed|could not read Username|401/);
  t.true(server.unauthorized > before);
});

test('isomorphic-git gets 401 without credentials', async (t) => {
  const { root } = bareFixture();
  const server = await startGitHttpServer({ root, token: TOKEN });
  t.teardown(() => server.close());
  const error = await t.throwsAsync(git.getRemoteInfo({ http, url: `${server.url}/config.git` }));
  t.regex(String(error?.message), /401/);
});

test('a gzip-encoded upload-pack request is inflated before the backend sees it', async (t) => {
  const { root, head } = bareFixture();
  const server = await startGitHttpServer({ root });
  t.teardown(() => server.close());
  const body = gzipSync(Buffer.from(`0032want ${head}\n00000009done\n`));
  const response = await fetch(`${server.url}/config.git/git-upload-pack`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-git-upload-pack-request', 'content-encoding': 'gzip' },
    body,
  });
  t.is(response.status, 200);
  t.is(response.headers.get('content-type'), 'application/x-git-upload-pack-result');
  const bytes = Buffer.from(await response.arrayBuffer());
  t.true(bytes.includes(Buffer.from('PACK')));
});

test('an unknown repository is a 404 from the backend, Status header honoured', async (t) => {
  const { root } = bareFixture();
  const server = await startGitHttpServer({ root });
  t.teardown(() => server.close());
  const response = await fetch(`${server.url}/missing.git/info/refs?service=git-upload-pack`);
  t.is(response.status, 404);
});
