import test from 'ava';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { BIN, lastgood } from './support/cli.ts';
import { commit, fingerprint, git, makeRepo, tempDir, writeFile } from './support/git.ts';
import { startGitHttpServer } from './support/git-http-server.ts';
import { kustomization, yamlDocs } from './support/objects.ts';

/**
 * Issue 19 class 4: no "internal error" for the world's faults. Each is a typed error with a clear
 * message and DESIGN.md's exit code, and leaves nothing behind: a pack damaged on the wire (retried
 * once), a full disk under repo.cacheDir, the controller's port taken, a port out of range, a
 * certificate that cannot be verified (not retried), a redirect to a host that asks for
 * credentials, a redirect from https to http, a server hook that declines a push (its own words
 * shown), no kubeconfig at all. Real servers: git's own http-backend, Node's https, a real tmpfs.
 */

const P = 'apps/podinfo/overlays/prod/';
const NOW = ['--now', '2026-11-01T12:05:00Z'];
const RESOURCE = '      - { apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: apps }';

function noInternalError(t: { false(v: boolean, m?: string): void }, r: { stderr: string; stdout: string }): void {
  t.false(/internal error|\n\s+at /.test(r.stderr + r.stdout), r.stderr);
}

/** A GitOps repository behind `git http-backend`: good, bad (a large incompressible file too), later. */
function gitops(opts: { big?: boolean } = {}) {
  const work = makeRepo();
  const good = commit(work, { [`${P}values.yaml`]: 'image:\n  tag: 1.0.0\n', 'apps/other/x.yaml': 'a: 1\n' }, 'podinfo 1.0.0');
  const files: Record<string, string> = { [`${P}values.yaml`]: 'image:\n  tag: 1.1.0\n' };
  if (opts.big) files[`${P}blob.txt`] = execFileSync('head', ['-c', '300000', '/dev/urandom']).toString('base64');
  const bad = commit(work, files, 'podinfo 1.1.0');
  const later = commit(work, { 'apps/other/x.yaml': 'a: 2\n' }, 'other: a=2');
  const root = tempDir('lastgood-world-');
  const bare = path.join(root, 'gitops.git');
  git(root, 'clone', '-q', '--bare', work, bare);
  return { root, bare, good, bad, later };
}

function configFor(url: string, extra = ''): { dir: string; config: string; snapshot: string } {
  const dir = tempDir('lastgood-world-cfg-');
  return {
    dir,
    config: writeFile(dir, 'lastgood.yaml', `repo:\n  url: ${url}\n${extra}defaults: { mode: commit, confirmations: 1 }\ntargets:\n  - name: podinfo-prod\n    paths: [${P}]\n    resources:\n${RESOURCE}\n`),
    snapshot: '',
  };
}

function failedSnapshot(dir: string, bad: string, good: string): string {
  return writeFile(dir, 'cluster.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${bad}`, applied: `main@sha1:${good}`, ready: 'False' })));
}

test('a pack damaged on the wire is fetched again once, and the run goes on; damaged twice, it is a clear exit 3 and nothing is written', async (t) => {
  const repo = gitops();
  const server = await startGitHttpServer({ root: repo.root });
  t.teardown(() => server.close());
  const c = configFor(`${server.url}/gitops.git`, '  insecure: true\n');
  const snap = failedSnapshot(c.dir, repo.bad, repo.good);
  server.inject({ service: 'git-upload-pack', method: 'POST', command: 'fetch', corrupt: true });
  const once = await lastgood(['run', ...NOW, '--config', c.config, '--snapshot', snap, '--json']);
  t.is(once.code, 0, once.stderr + once.stdout);
  t.true(JSON.parse(once.stdout).targets[0].created);
  t.true(server.log.some((r) => r.fault?.includes('corrupt')), 'the damaged answer was served');

  const again = gitops();
  const server2 = await startGitHttpServer({ root: again.root });
  t.teardown(() => server2.close());
  const c2 = configFor(`${server2.url}/gitops.git`, '  insecure: true\n');
  server2.inject({ service: 'git-upload-pack', method: 'POST', command: 'fetch', corrupt: true, times: 2 });
  const before = fingerprint(again.bare);
  const twice = await lastgood(['run', ...NOW, '--config', c2.config, '--snapshot', failedSnapshot(c2.dir, again.bad, again.good)]);
  t.is(twice.code, 3, twice.stderr + twice.stdout);
  t.regex(twice.stderr, /the pack .*gitops\.git sent was damaged twice \(pack checksum mismatch/);
  t.is(fingerprint(again.bare), before, 'nothing written');
  noInternalError(t, twice);
});

const canUnshare = spawnSync('unshare', ['--user', '--map-root-user', '--mount', 'true']).status === 0;

/**
 * `lastgood ARGS` in a mount namespace of its own, with a private tmpfs of `size` over `folder`
 * (a full disk for this run only): `before` runs first inside it (to fill it). Its exit code, its
 * stderr, and the leftovers lastgood's writers would leave (`*.tmp-*`, `tmp_obj_*`) under `folder`.
 */
async function onFullDisk(folder: string, size: string, before: string, args: string[], dir: string, after = ''): Promise<{ exit: string; stderr: string; leftovers: string[]; after: string }> {
  const script = `mount -t tmpfs -o size=${size} tmpfs "$FOLDER" || exit 99
${before}
"$NODE" "$BIN" "$@" 1>"$OUT" 2>"$ERR"
echo "exit=$?"
find "$FOLDER" -name '*.tmp-*' -o -name 'tmp_obj_*'
${after ? `${after} > "$AFTER" 2>&1` : ''}`;
  const r = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
    const child = spawn('unshare', ['--user', '--map-root-user', '--mount', 'sh', '-c', script, 'sh', ...args], {
      env: { ...process.env, FOLDER: folder, NODE: process.execPath, BIN, OUT: path.join(dir, 'out'), ERR: path.join(dir, 'err'), AFTER: path.join(dir, 'after') },
    });
    let stdout = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.on('close', (code) => resolve({ code, stdout }));
  });
  if (r.code !== 0) throw new Error(`the namespace's script failed (${r.code}): ${r.stdout}`);
  const [exit = '', ...leftovers] = r.stdout.trim().split('\n');
  return { exit, stderr: readFileSync(path.join(dir, 'err'), 'utf8'), leftovers, after: after ? readFileSync(path.join(dir, 'after'), 'utf8') : '' };
}

const quoted = (s: string) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

test('a full disk under repo.cacheDir: exit 3 naming the folder, and no partial pack file left', async (t) => {
  if (!canUnshare) {
    t.log('unshare --user --mount is not allowed here: no private tmpfs to fill');
    t.pass();
    return;
  }
  const repo = gitops({ big: true });
  const server = await startGitHttpServer({ root: repo.root });
  t.teardown(() => server.close());
  const cache = tempDir('lastgood-full-');
  const c = configFor(`${server.url}/gitops.git`, `  insecure: true\n  cacheDir: ${cache}\n`);
  const snap = failedSnapshot(c.dir, repo.bad, repo.good);
  // 64 KiB: the 300 KB file does not fit
  const r = await onFullDisk(cache, '64k', '', ['run', ...NOW, '--config', c.config, '--snapshot', snap], c.dir);
  t.is(r.exit, 'exit=3', r.stderr);
  t.regex(r.stderr, new RegExp(`cannot write under ${quoted(cache)} \\(repo\\.cacheDir .*\\): no space is left on the device \\(ENOSPC\\)`));
  t.deepEqual(r.leftovers, [], 'no partial pack or object file left behind');
  t.false(/internal error|\n\s+at /.test(r.stderr), r.stderr);
});

test('a full disk under a local repository: the revert and check --record exit 3 naming the folder, no object file left, the branch and notes unmoved', async (t) => {
  if (!canUnshare) {
    t.log('unshare --user --mount is not allowed here: no private tmpfs to fill');
    t.pass();
    return;
  }
  const repo = gitops();
  const disk = tempDir('lastgood-full-local-');
  const work = path.join(disk, 'gitops');
  const c = configFor(work);
  const snap = failedSnapshot(c.dir, repo.later, repo.good);
  // the repository copied onto a small tmpfs, which is then filled to the last block
  const fill = `cp -a "${repo.root}/gitops.git" "${work}" && dd if=/dev/zero of="$FOLDER/fill" bs=1k 2>/dev/null; true`;
  const refs = `git -C "${work}" for-each-ref --format='%(refname) %(objectname)'`;
  const r = await onFullDisk(disk, '2m', fill, ['run', ...NOW, '--config', c.config, '--snapshot', snap], c.dir, refs);
  t.is(r.exit, 'exit=3', r.stderr);
  t.is(r.after, `refs/heads/main ${repo.later}\n`, 'the branch did not move');
  t.regex(r.stderr, new RegExp(`^lastgood: podinfo-prod: cannot write under ${quoted(work)} \\(the repository ${quoted(work)}\\): no space is left on the device \\(ENOSPC\\); free some space there, or point it at another volume\\. What was half-written was removed; nothing was written to the repository\\n$`));
  t.deepEqual(r.leftovers, [], 'no half-written object left behind');
  const healthy = writeFile(c.dir, 'healthy.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${repo.later}`, applied: `main@sha1:${repo.later}`, ready: 'True', since: '2026-11-01T11:00:00Z' })));
  const rec = await onFullDisk(disk, '2m', fill, ['check', ...NOW, '--config', c.config, '--snapshot', healthy, '--record'], c.dir, refs);
  t.is(rec.exit, 'exit=3', rec.stderr);
  t.is(rec.after, `refs/heads/main ${repo.later}\n`, 'no notes ref');
  t.regex(rec.stderr, /cannot write under .* \(the notes refs\/notes\/lastgood\): no space is left on the device \(ENOSPC\)/);
  t.deepEqual(rec.leftovers, []);
  t.false(/internal error|\n\s+at /.test(r.stderr + rec.stderr), r.stderr + rec.stderr);
});

test('the controller\'s listen port is taken: exit 3 naming the address and why', async (t) => {
  const taken = http.createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => taken.close(() => resolve())));
  const port = (taken.address() as AddressInfo).port;
  const repo = makeRepo();
  commit(repo, { 'a.yaml': 'a: 1\n' }, 'c1');
  const dir = tempDir('lastgood-listen-');
  const kubeconfig = writeFile(dir, 'kubeconfig', `apiVersion: v1\nkind: Config\nclusters: [{ name: c, cluster: { server: 'https://127.0.0.1:1' } }]\nusers: [{ name: u, user: { token: x } }]\ncontexts: [{ name: c, context: { cluster: c, user: u } }]\ncurrent-context: c\n`);
  const config = writeFile(dir, 'lastgood.yaml', `repo:\n  url: ${repo}\ncontroller:\n  listen: 127.0.0.1:${port}\n  leaderElection: false\ntargets:\n  - name: podinfo-prod\n    paths: [${P}]\n    resources:\n${RESOURCE}\n`);
  const r = await lastgood(['controller', '--config', config], { env: { KUBECONFIG: kubeconfig } });
  t.is(r.code, 3, r.stderr);
  t.regex(r.stderr, new RegExp(`controller\\.listen "127\\.0\\.0\\.1:${port}": cannot serve /healthz, /readyz and /metrics there: another process listens on it \\(EADDRINUSE\\)`));
  noInternalError(t, r);
});

test('controller.listen with a port above 65535 is refused by validate, naming the file and line', async (t) => {
  const dir = tempDir('lastgood-listen-');
  const config = writeFile(dir, 'lastgood.yaml', `repo:\n  url: ./repo\ncontroller:\n  listen: "127.0.0.1:99999"\ntargets:\n  - name: podinfo-prod\n    paths: [${P}]\n    resources:\n${RESOURCE}\n`);
  const r = await lastgood(['validate', '--config', config]);
  t.is(r.code, 2, r.stderr);
  t.regex(r.stderr, /lastgood\.yaml:4: controller\.listen: the port must be at most 65535/);
});

/** A self-signed certificate for 127.0.0.1 (openssl), for Node's https server. */
function certificate(): { key: string; cert: string; certFile: string } {
  const dir = tempDir('lastgood-tls-');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-days', '2', '-keyout', path.join(dir, 'key.pem'), '-out', path.join(dir, 'cert.pem')], { stdio: 'ignore' });
  return { key: readFileSync(path.join(dir, 'key.pem'), 'utf8'), cert: readFileSync(path.join(dir, 'cert.pem'), 'utf8'), certFile: path.join(dir, 'cert.pem') };
}

async function httpsServer(t: { teardown(fn: () => unknown): void }, handler: http.RequestListener): Promise<{ url: string; connections: () => number; certFile: string }> {
  const tls = certificate();
  const server = https.createServer({ key: tls.key, cert: tls.cert }, handler);
  let connections = 0;
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }));
  return { url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`, connections: () => connections, certFile: tls.certFile };
}

test('a certificate that cannot be verified is said as such and not retried (one attempt per request, no "reading fetching")', async (t) => {
  const server = await httpsServer(t, (_req, res) => res.end('never reached'));
  const repo = gitops();
  const c = configFor(`${server.url}/gitops.git`);
  const r = await lastgood(['run', ...NOW, '--config', c.config, '--snapshot', failedSnapshot(c.dir, repo.bad, repo.good)]);
  t.is(r.code, 3, r.stderr);
  t.regex(r.stderr, /the TLS certificate of 127\.0\.0\.1:\d+ could not be verified \(DEPTH_ZERO_SELF_SIGNED_CERT: self.signed certificate[^)]*\): .*NODE_EXTRA_CA_CERTS/);
  t.notRegex(r.stderr, /reading fetching|after \d attempts/);
  t.true(server.connections() <= 2, `${server.connections()} connections: not retried`);
  noInternalError(t, r);
});

test('a redirect from https to http is refused in words (not "http:: refused")', async (t) => {
  const plain = http.createServer((_req, res) => res.end('plain'));
  await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => plain.close(() => resolve())));
  const target = `http://127.0.0.1:${(plain.address() as AddressInfo).port}`;
  const server = await httpsServer(t, (req, res) => {
    res.writeHead(302, { location: `${target}${req.url}` });
    res.end();
  });
  const repo = gitops();
  const c = configFor(`${server.url}/gitops.git`);
  const r = await lastgood(['run', ...NOW, '--config', c.config, '--snapshot', failedSnapshot(c.dir, repo.bad, repo.good)], { env: { NODE_EXTRA_CA_CERTS: server.certFile } });
  t.is(r.code, 3, r.stderr);
  t.regex(r.stderr, new RegExp(`redirects from https to http \\(${target.replace(/[.:/]/g, '\\$&')}\\): refused, the repository and its credentials would travel unencrypted`));
  t.notRegex(r.stderr, /http::/);
  noInternalError(t, r);
});

test('a redirect to another host that asks for credentials is not "credentials are wrong": none were sent there', async (t) => {
  const repo = gitops();
  const guarded = await startGitHttpServer({ root: repo.root, token: 'elsewhere-token-0123456789' });
  t.teardown(() => guarded.close());
  const front = await startGitHttpServer({ root: repo.root });
  t.teardown(() => front.close());
  front.inject({ redirect: guarded.url, times: 10 });
  const c = configFor(`${front.url}/gitops.git`, '  insecure: true\n  auth: { tokenEnv: MY_TOKEN }\n');
  const r = await lastgood(['run', ...NOW, '--config', c.config, '--snapshot', failedSnapshot(c.dir, repo.bad, repo.good)], { env: { MY_TOKEN: 'front-token-0123456789abcdef' } });
  t.is(r.code, 3, r.stderr);
  t.regex(r.stderr, /redirected to http:\/\/127\.0\.0\.1:\d+, which requires authentication \(401\) .*lastgood sends credentials only to the host of repo\.url, never to one it is redirected to/);
  t.notRegex(r.stderr, /wrong or expired/);
  t.false(guarded.log.some((x) => x.authorization), 'no credentials went to the other host');
  t.false(r.stderr.includes('front-token-0123456789abcdef'));
});

test('a server hook that declines the push is shown in its own words, as git shows them ("remote: …"), scrubbed', async (t) => {
  const repo = gitops();
  const hook = path.join(repo.bare, 'hooks', 'pre-receive');
  mkdirSync(path.dirname(hook), { recursive: true });
  writeFileSync(hook, '#!/bin/sh\necho "DCO check failed: commit has no Signed-off-by line" >&2\necho "see https://example.test/dco?token=ghp_abcdefghijklmnopqrstuvwxyz0123456789" >&2\nexit 1\n');
  chmodSync(hook, 0o755);
  const server = await startGitHttpServer({ root: repo.root });
  t.teardown(() => server.close());
  const c = configFor(`${server.url}/gitops.git`, '  insecure: true\n');
  const before = git(repo.bare, 'rev-parse', 'main');
  const r = await lastgood(['run', ...NOW, '--config', c.config, '--snapshot', failedSnapshot(c.dir, repo.bad, repo.good)]);
  t.is(r.code, 3, r.stderr + r.stdout);
  t.regex(r.stderr, /refused the update of refs\/heads\/main: pre-receive hook declined\nremote: DCO check failed: commit has no Signed-off-by line/);
  t.false(r.stderr.includes('ghp_abcdefghijklmnopqrstuvwxyz0123456789'), 'a token in the hook\'s words is scrubbed');
  t.is(git(repo.bare, 'rev-parse', 'main'), before, 'nothing written');
  noInternalError(t, r);
});

test('no kubeconfig at all: check says so (exit 2), and the controller stops at start instead of retrying forever', async (t) => {
  const repo = makeRepo();
  commit(repo, { 'a.yaml': 'a: 1\n' }, 'c1');
  const dir = tempDir('lastgood-nokube-');
  const config = writeFile(dir, 'lastgood.yaml', `repo:\n  url: ${repo}\ncontroller:\n  listen: 127.0.0.1:0\ntargets:\n  - name: podinfo-prod\n    paths: [${P}]\n    resources:\n${RESOURCE}\n`);
  const env = { KUBECONFIG: '', HOME: tempDir('lastgood-home-'), KUBERNETES_SERVICE_HOST: '' };
  const check = await lastgood(['check', '--config', config], { env });
  t.is(check.code, 2, check.stderr);
  t.regex(check.stderr, /no Kubernetes cluster to read: KUBECONFIG is not set, there is no ~\/\.kube\/config, and this is not a pod/);
  t.notRegex(check.stderr, /skipTLSVerify/);
  const controller = await lastgood(['controller', '--config', config], { env });
  t.is(controller.code, 2, controller.stderr);
  t.regex(controller.stderr, /no Kubernetes cluster to read/);
  noInternalError(t, controller);
});
