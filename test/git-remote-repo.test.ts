import test from 'ava';
import { execFileSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { RemoteRepo } from '../src/deliver/git-remote/remote-repo.ts';
import { openGitRemote } from '../src/deliver/git-remote/index.ts';
import { loadSigner } from '../src/deliver/git-remote/signing.ts';
import { commitRange, firstParentLog } from '../src/history/graph.ts';
import type { Change } from '../src/repo/types.ts';
import { commit, commitMany, git, makeRepo, tempDir } from './support/git.ts';
import { startGitHttpServer, type GitHttpServer } from './support/git-http-server.ts';

/** RemoteRepo against git http-backend: what it fetches when, and what it sends where. */

async function served(t: { teardown(fn: () => unknown): void }, commits: number, opts: { token?: string; protocol?: 0 | 2; allowReachableSHA1InWant?: boolean } = {}) {
  const work = makeRepo();
  const shas = commitMany(work, Array.from({ length: commits }, (_, i) => ({ files: { 'apps/a/values.yaml': `v: ${i}\n`, [`docs/${i % 3}.md`]: `${i}\n` }, message: `c${i}` })));
  const root = tempDir('lastgood-rr-');
  const bare = path.join(root, 'r.git');
  git(root, 'clone', '-q', '--bare', work, bare);
  const server = await startGitHttpServer({ root, ...(opts.token ? { token: opts.token } : {}), ...(opts.protocol !== undefined ? { protocol: opts.protocol } : {}), ...(opts.allowReachableSHA1InWant ? { allowReachableSHA1InWant: true } : {}) });
  t.teardown(() => server.close());
  return { work, bare, shas, server, url: `${server.url}/r.git` };
}

/** Every object in a repository's database. */
const allObjects = (bare: string) => git(bare, 'cat-file', '--batch-all-objects', '--batch-check=%(objectname)').split('\n');

const fetchCount = (s: GitHttpServer) => s.log.filter((r) => r.command === 'fetch').length;

function change(parent: string, files: Change['files'], message = 'revert\n'): Change {
  return { target: 't', branch: 'main', parent, files, message, author: { name: 'lastgood', email: 'lastgood@example.com', timestamp: 1_800_000_000, timezoneOffset: 0 }, bad: [parent], lastKnownGood: parent };
}

test('a walk past the shallow boundary deepens by doubling steps: a few fetches for a long history', async (t) => {
  const s = await served(t, 100);
  const repo = new RemoteRepo({ url: s.url, depth: 4, backoffMs: 1 });
  t.teardown(() => repo.close());
  const head = await repo.head('main');
  t.is(head, s.shas[99]!);
  t.is(fetchCount(s.server), 1);
  const range = await commitRange(repo, head, [s.shas[0]!]);
  t.true(range.bounded);
  t.is(range.bounded ? range.commits.length : 0, 99);
  // depth 4, then steps of 4, 8, 16, 32, 64: six fetches, not ninety-six
  t.true(fetchCount(s.server) <= 7, `${fetchCount(s.server)} fetches`);
  const log = await firstParentLog(repo, head, { limit: 1000, maxScan: 1000 });
  t.is(log.length, 100);
  git(repo.mirror.gitdir, 'fsck', '--connectivity-only');
});

test('blobs arrive when a read needs them; a commit the server does not have is an error that says so', async (t) => {
  const s = await served(t, 5);
  const repo = new RemoteRepo({ url: s.url, depth: 2, backoffMs: 1 });
  t.teardown(() => repo.close());
  const head = await repo.head('main');
  // a blob found by walking trees is fetched when it is read
  const apps = (await repo.readTree((await repo.readCommit(head)).tree)).find((e) => e.path === 'apps')!;
  const a = (await repo.readTree(apps.oid)).find((e) => e.path === 'a')!;
  const blob = (await repo.readTree(a.oid)).find((e) => e.path === 'values.yaml')!.oid;
  let before = fetchCount(s.server);
  t.is(Buffer.from(await repo.readBlob(blob)).toString(), 'v: 4\n');
  t.is(fetchCount(s.server), before + 1, 'one fetch for the blob');
  t.is(Buffer.from(await repo.readBlob(blob)).toString(), 'v: 4\n');
  t.is(fetchCount(s.server), before + 1, 'then it is in the mirror');
  // the files a listing names come in one fetch, at the first read of one of them
  before = fetchCount(s.server);
  const docs = await repo.listFiles(head, ['docs/']);
  t.is(docs.size, 3);
  t.is(fetchCount(s.server), before, 'a listing fetches nothing');
  for (const f of docs.values()) await repo.readBlob(f.oid);
  t.is(fetchCount(s.server), before + 1, 'one fetch for the three files, not one each');
  t.is(await repo.resolveCommit('0123456789abcdef0123456789abcdef01234567'), undefined);
  await t.throwsAsync(repo.readCommit('0123456789abcdef0123456789abcdef01234567'), { message: /not in .*r\.git|not our ref/ });
  t.is(await repo.resolveCommit(s.shas[1]!.slice(0, 10)), undefined, 'an abbreviated SHA beyond the mirror is unknown');
  t.is(await repo.resolveCommit(s.shas[1]!), s.shas[1]);
});

test('isAncestor: true across the boundary, false for a commit on another branch without reading the whole history', async (t) => {
  const s = await served(t, 30);
  execFileSync('git', ['checkout', '-q', '-b', 'side', s.shas[25]!], { cwd: s.work });
  const side = commit(s.work, { 'side.txt': 'x\n' }, 'side');
  git(s.bare, 'fetch', '-q', s.work, 'side:side');
  const repo = new RemoteRepo({ url: s.url, depth: 2, backoffMs: 1 });
  t.teardown(() => repo.close());
  const head = await repo.head('main');
  t.true(await repo.isAncestor(s.shas[10]!, head));
  t.false(await repo.isAncestor(side, head));
  t.false(await repo.isAncestor(head, s.shas[10]!));
});

test('a push carries only the new objects and moves the ref only from the value it read', async (t) => {
  const s = await served(t, 3);
  const repo = new RemoteRepo({ url: s.url, backoffMs: 1 });
  t.teardown(() => repo.close());
  const head = await repo.head('main');
  const lkg = await repo.listFiles(s.shas[0]!, ['apps/']);
  const before = allObjects(s.bare);
  const result = await repo.deliver(change(head, [{ path: 'apps/a/values.yaml', mode: '100644', oid: lkg.get('apps/a/values.yaml')!.oid }]), 'commit');
  t.true(result.created);
  t.is(git(s.bare, 'rev-parse', 'main'), result.commit);
  t.is(git(s.bare, 'show', 'main:apps/a/values.yaml'), 'v: 0');
  const push = s.server.log.find((r) => r.service === 'git-receive-pack' && r.method === 'POST')!;
  // apps/ and apps/a/ as restored are trees of the first commit, and the blob is its blob: the server has them
  t.is(push.pushedObjects, 2, 'the commit and the root tree');
  t.is(allObjects(s.bare).filter((o) => !before.includes(o)).length, 2, 'what the server has now and had not before');
  // planned on an old head: refused before anything is sent
  await t.throwsAsync(repo.deliver(change(head, [{ path: 'x', mode: '100644', content: Buffer.from('x') }]), 'commit'), { name: 'StaleHeadError' });
});

test('a redirect to another host is followed without the credentials', async (t) => {
  const token = 'glpat-RedirectTestToken12345678';
  const s = await served(t, 2, { token });
  // a second server with the same repository and no auth: a credential sent there would be a leak
  const other = await startGitHttpServer({ root: path.dirname(s.bare) });
  t.teardown(() => other.close());
  s.server.inject({ method: 'GET', redirect: other.url.replace('127.0.0.1', 'localhost') });
  const warnings: string[] = [];
  const repo = await openGitRemote(s.url, { relativeTo: '.', repo: { insecure: true, auth: { tokenEnv: 'T' } }, env: { T: token }, onWarning: (m) => warnings.push(m) });
  t.teardown(() => repo.close());
  t.is(await repo.head('main'), git(s.bare, 'rev-parse', 'main'));
  t.true(other.log.length >= 2);
  t.true(other.log.every((r) => !r.authorization), 'no Authorization header reached the other host');
  t.regex(warnings.join('\n'), /redirects to another host \(localhost:\d+\): following it without credentials/);
});

test('a server that compresses its answers (Content-Encoding: gzip, as a web server in front of git may): read as sent', async (t) => {
  const s = await served(t, 3);
  // every answer of the first reads compressed: the refs, ls-refs, the shallow fetch, a blob
  s.server.inject({ service: 'git-upload-pack', gzip: true, times: 6 });
  const repo = new RemoteRepo({ url: s.url, backoffMs: 1 });
  t.teardown(() => repo.close());
  const head = await repo.head('main');
  t.is(head, git(s.bare, 'rev-parse', 'main'));
  const files = await repo.listFiles(head, ['apps/']);
  t.is(Buffer.from(await repo.readBlob(files.get('apps/a/values.yaml')!.oid)).toString(), 'v: 2\n');
  const compressed = s.server.log.filter((r) => r.fault?.includes('gzip'));
  t.true(compressed.some((r) => r.command === 'fetch') && compressed.some((r) => r.path === 'info/refs'), JSON.stringify(compressed.map((r) => r.command ?? r.path)));
  t.true(s.server.log.every((r) => r.status === 200), 'no answer was refused or asked again');
});

test('a slow server: the request times out and is tried again', async (t) => {
  const s = await served(t, 2);
  // the first answer never comes in time; the timeout is far above what a loaded machine needs for the second
  s.server.inject({ command: 'ls-refs', delayMs: 60_000 });
  const repo = new RemoteRepo({ url: s.url, timeoutMs: 10_000, backoffMs: 1 });
  t.teardown(() => repo.close());
  t.is(await repo.head('main'), git(s.bare, 'rev-parse', 'main'));
  const asked = s.server.log.filter((r) => r.command === 'ls-refs');
  t.true(asked.length >= 2, `ls-refs asked ${asked.length} times`);
  t.truthy(asked[0]!.fault, 'the first ls-refs was the held one');
});

test('plain http with credentials to another machine is said loudly; a missing branch is an input error', async (t) => {
  const warnings: string[] = [];
  // no request is made: the warning comes when the backend opens
  const repo = await openGitRemote('http://gitea.gitops.svc.cluster.local:3000/acme/gitops.git', { relativeTo: '.', repo: { insecure: true }, env: { LASTGOOD_GIT_TOKEN: 'a-token-for-this-test-1234' }, onWarning: (m) => warnings.push(m) });
  repo.close();
  t.regex(warnings.join('\n'), /credentials \(environment variable LASTGOOD_GIT_TOKEN\) are sent in clear text over plain http to gitea\.gitops\.svc\.cluster\.local:3000/);
  await t.throwsAsync(openGitRemote('http://gitea.gitops.svc.cluster.local:3000/acme/gitops.git', { relativeTo: '.', env: {} }), { message: /is plain http.*repo\.insecure: true/ });

  const s = await served(t, 1);
  const local = new RemoteRepo({ url: s.url });
  t.teardown(() => local.close());
  await t.throwsAsync(local.head('release'), { name: 'InputError', message: /branch "release" does not exist in http:\/\/127\.0\.0\.1:\d+\/r\.git/ });
});

test('commits are signed with an SSH key (OpenSSH ed25519 or PKCS#8 RSA) that git verify-commit accepts', async (t) => {
  const dir = tempDir('lastgood-sign-');
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'lastgood', '-f', path.join(dir, 'id_ed25519')]);
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
  writeFileSync(path.join(dir, 'rsa.pem'), rsa.privateKey.export({ type: 'pkcs8', format: 'pem' }));
  writeFileSync(path.join(dir, 'rsa.spki.pem'), rsa.publicKey.export({ type: 'spki', format: 'pem' }));
  writeFileSync(path.join(dir, 'rsa.pub'), execFileSync('ssh-keygen', ['-i', '-m', 'PKCS8', '-f', path.join(dir, 'rsa.spki.pem')]));
  for (const [keyFile, pub] of [['id_ed25519', 'id_ed25519.pub'], ['rsa.pem', 'rsa.pub']] as const) {
    const s = await served(t, 2);
    const repo = new RemoteRepo({ url: s.url, signer: loadSigner({ format: 'ssh', keyFile }, { relativeTo: dir }), backoffMs: 1 });
    t.teardown(() => repo.close());
    const head = await repo.head('main');
    const result = await repo.deliver(change(head, [{ path: 'apps/a/values.yaml', mode: '100644', content: Buffer.from('v: signed\n') }]), 'commit');
    const allowed = path.join(dir, `allowed-${keyFile}`);
    writeFileSync(allowed, `lastgood@example.com ${execFileSync('cat', [path.join(dir, pub)]).toString().trim()}\n`);
    const out = execFileSync('git', ['-c', 'gpg.format=ssh', '-c', `gpg.ssh.allowedSignersFile=${allowed}`, 'verify-commit', '-v', result.commit], { cwd: s.bare, stdio: ['ignore', 'pipe', 'pipe'] });
    t.truthy(out, keyFile);
    t.regex(git(s.bare, '-c', 'gpg.format=ssh', '-c', `gpg.ssh.allowedSignersFile=${allowed}`, 'log', '-1', '--format=%G?', 'main'), /^G$/, `${keyFile}: a good signature`);
  }
});

test('a server speaking only protocol version 0 (a web server that drops Git-Protocol): the same walk, push and notes', async (t) => {
  for (const allowReachableSHA1InWant of [false, true]) {
    const s = await served(t, 40, { protocol: 0, allowReachableSHA1InWant });
    const repo = new RemoteRepo({ url: s.url, depth: 3, backoffMs: 1 });
    t.teardown(() => repo.close());
    const head = await repo.head('main');
    t.is(head, s.shas[39]!);
    // the first ls-refs goes out with the discovery, before the server is known to answer version 0; none after
    t.true(s.server.log.filter((r) => r.command !== undefined).length <= 1);
    const range = await commitRange(repo, head, [s.shas[2]!]);
    t.is(range.bounded ? range.commits.length : 0, 37, `allowReachableSHA1InWant ${allowReachableSHA1InWant}`);
    const old = await repo.listFiles(s.shas[2]!, ['apps/']);
    t.is(Buffer.from(await repo.readBlob(old.get('apps/a/values.yaml')!.oid)).toString(), 'v: 2\n');
    const result = await repo.deliver(change(head, [{ path: 'apps/a/values.yaml', mode: '100644', oid: old.get('apps/a/values.yaml')!.oid }]), 'commit');
    t.is(git(s.bare, 'rev-parse', 'main'), result.commit);
    await repo.notes().record(s.shas[2]!, { target: 't', at: '2026-11-01T12:00:00Z', evidence: 'x' });
    t.regex(git(s.bare, 'notes', '--ref=lastgood', 'show', s.shas[2]!), /target=t/);
    git(repo.mirror.gitdir, 'fsck', '--connectivity-only');
  }
});
