import test from 'ava';
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseConfig } from '../src/config/load.ts';
import { KILL_GRACE_MS, runHook } from '../src/decide/hook.ts';
import { ConfigError } from '../src/errors.ts';
import { registerSecret } from '../src/scrub.ts';
import { lastgood } from './support/cli.ts';
import { commit, git, makeRepo, tempDir, writeFile } from './support/git.ts';
import { kustomization, yamlDocs } from './support/objects.ts';

/**
 * Issue 15 class 7: hooks keep their timeout. A command hook runs in its own process group, killed
 * whole at the timeout (SIGTERM, then SIGKILL after a grace); a background child it leaves does not
 * hang the run; a URL hook is cut at the timeout; the range is validated (a 25d timer would
 * overflow and fire at once). What is asserted is behaviour, never speed: the hook was killed (it
 * ended long before it would have on its own, its children are gone), not how soon, so the tests
 * hold on a loaded machine.
 */

const payload = { kind: 'lastgood.hook/v1', target: 'podinfo-prod' };

/** Running, not a zombie (in a container nothing may reap the orphans the kill left behind). */
function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** Waits for the process to be gone (a condition; the bound only ends a test that would hang). */
async function gone(pid: number, withinMs = 30_000): Promise<boolean> {
  for (const end = Date.now() + withinMs; Date.now() < end; await sleep(50)) if (!alive(pid)) return true;
  return !alive(pid);
}

test('sh -c "sleep 20" with a 2s timeout is killed at the timeout (not before), long before it would end, and its child is gone', async (t) => {
  const dir = tempDir('lastgood-hook-');
  const pidFile = path.join(dir, 'sleep.pid');
  const r = await runHook({ spec: { command: ['sh', '-c', `sleep 20 & echo $! > '${pidFile}'; wait`] }, timeoutMs: 2000 }, payload);
  t.false(r.ok);
  t.is(r.detail, 'sh did not finish within 2s (killed)');
  t.true(r.ms >= 2000 && r.ms < 20_000, `${r.ms}ms: not before the timeout, and not the 20s it would take`);
  t.true(await gone(Number(readFileSync(pidFile, 'utf8'))), 'the grandchild was killed with the group');
});

test('a hook that ignores SIGTERM is killed (SIGKILL) after the grace', async (t) => {
  const dir = tempDir('lastgood-hook-');
  const pidFile = path.join(dir, 'sleep.pid');
  // an ignored signal stays ignored across fork and exec: the sleep ignores SIGTERM too
  const r = await runHook({ spec: { command: ['sh', '-c', `trap "" TERM; sleep 20 & echo $! > '${pidFile}'; wait; sleep 20`] }, timeoutMs: 1000 }, payload);
  t.false(r.ok);
  t.regex(r.detail, /did not finish within 1s \(killed\)/);
  t.true(r.ms >= 1000 + KILL_GRACE_MS - 100 && r.ms < 20_000, `${r.ms}ms: after the grace, and not the 20s it would take`);
  t.true(await gone(Number(readFileSync(pidFile, 'utf8'))), 'the grandchild got SIGKILL too');
});

test('a hook that exits and leaves a background child holding its output does not hang the run', async (t) => {
  const dir = tempDir('lastgood-hook-');
  const pidFile = path.join(dir, 'bg.pid');
  const r = await runHook({ spec: { command: ['sh', '-c', `sleep 30 & echo $! > '${pidFile}'; echo scaled up`] }, timeoutMs: 20_000 }, payload);
  t.true(r.ok, r.detail);
  t.is(r.detail, 'sh exited 0: scaled up');
  t.true(r.ms < 30_000, `${r.ms}ms: the run did not wait the 30s of the background child`);
  t.true(await gone(Number(readFileSync(pidFile, 'utf8'))), 'what the hook left behind was ended');
});

test('a timeout beyond the timer range (25 days) does not fire at once', async (t) => {
  const r = await runHook({ spec: { command: ['sh', '-c', 'sleep 1; echo done'] }, timeoutMs: 25 * 24 * 3_600_000 }, payload);
  t.true(r.ok, r.detail);
  t.true(r.ms >= 1000);
});

test('the config validates the hook timeout: 1s to 1h', (t) => {
  const config = (timeout: string, kind = 'command: [sh, -c, "true"]') => `repo: { url: ./r }
targets:
  - name: a
    paths: [a/]
    resources: [{ apiVersion: v1, kind: ConfigMap, name: a }]
    onFailure:
      analysis:
        hook: { ${kind}, timeout: ${timeout} }
`;
  for (const bad of ['25d', '2h', '500ms', '0s']) {
    const e = t.throws(() => parseConfig(config(bad), 'cfg.yaml'), { instanceOf: ConfigError }, bad);
    t.regex(e!.message, /^cfg\.yaml:8: /, bad);
  }
  t.throws(() => parseConfig(config('25d', 'url: "https://hooks.example.com/x"'), 'cfg.yaml'), { instanceOf: ConfigError, message: /between 1s and 1h/ });
  for (const ok of ['1s', '2s', '59m', '1h']) t.notThrows(() => parseConfig(config(ok), 'cfg.yaml'), ok);
});

test('URL hook: a server that never answers, or trickles its answer, is cut at the timeout', async (t) => {
  const server = createServer((req, res) => {
    if (req.url === '/trickle') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      const timer = setInterval(() => res.write('.'), 200);
      res.on('close', () => clearInterval(timer));
    }
    // otherwise: never answer
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  for (const p of ['/silent', '/trickle']) {
    const r = await runHook({ spec: { url: `${base}${p}` }, timeoutMs: 1000 }, payload);
    t.false(r.ok, p);
    t.is(r.detail, 'no answer within 1s', p);
    t.true(r.ms >= 1000, `${p}: ${r.ms}ms: not before the timeout (the server would never have ended it)`);
  }
});

test('a command hook does not inherit lastgood\'s tokens or secret-looking variables unless the config names them', async (t) => {
  const dir = tempDir('lastgood-hook-');
  const out = path.join(dir, 'env.txt');
  registerSecret('registered-secret-value-0815');
  const env = {
    PATH: process.env.PATH, HOME: '/tmp', OUT: out, PLAIN: 'ok',
    GITHUB_TOKEN: 'ghs_notForHooks0123456789abcdef', LASTGOOD_GITHUB_TOKEN: 'x-lastgood-token', LASTGOOD_WEBHOOK_URL: 'https://hooks.example.com/s3cret',
    MY_API_KEY: 'k', DB_PASSWORD: 'p', CLIENT_SECRET: 's', AWS_SESSION_TOKEN: 't', INNOCENT_LOOKING: 'registered-secret-value-0815',
    ALLOWED_TOKEN: 'passed-through',
  };
  const r = await runHook({ spec: { command: ['sh', '-c', 'env > "$OUT"'], env: { inherit: ['ALLOWED_TOKEN'] } }, timeoutMs: 5000 }, payload, { env });
  t.true(r.ok, r.detail);
  const names = readFileSync(out, 'utf8').split('\n').map((l) => l.split('=')[0]);
  for (const hidden of ['GITHUB_TOKEN', 'LASTGOOD_GITHUB_TOKEN', 'LASTGOOD_WEBHOOK_URL', 'MY_API_KEY', 'DB_PASSWORD', 'CLIENT_SECRET', 'AWS_SESSION_TOKEN', 'INNOCENT_LOOKING']) t.false(names.includes(hidden), hidden);
  for (const kept of ['PLAIN', 'OUT', 'ALLOWED_TOKEN']) t.true(names.includes(kept), kept);
});

test('git configuration from the environment reaches a command hook whole, or not at all when it carries a secret', async (t) => {
  const dir = tempDir('lastgood-hook-gitcfg-');
  const out = path.join(dir, 'out.txt');
  const group = (key: string, value: string) => ({
    GIT_CONFIG_COUNT: '2', GIT_CONFIG_KEY_0: 'user.name', GIT_CONFIG_VALUE_0: 'Hook Person', GIT_CONFIG_KEY_1: key, GIT_CONFIG_VALUE_1: value,
  });
  const hook = { spec: { command: ['sh', '-c', 'git config --get user.name > "$OUT" 2>&1; echo "exit $?" >> "$OUT"'] }, timeoutMs: 5000 };
  const base = { PATH: process.env.PATH, HOME: dir, OUT: out, GIT_CONFIG_NOSYSTEM: '1' };
  // KEY_<n> looked like a secret's name: git then refused every command ("unable to parse command-line config")
  t.true((await runHook(hook, payload, { env: { ...base, ...group('core.abbrev', '12') } })).ok);
  t.is(readFileSync(out, 'utf8'), 'Hook Person\nexit 0\n');
  // an extraHeader is a credential's place: the group is left out whole, and git still runs
  t.true((await runHook(hook, payload, { env: { ...base, ...group('http.extraHeader', 'Authorization: Bearer ghp_notForHooks0123456789abcdefABCDEF01') } })).ok);
  t.is(readFileSync(out, 'utf8'), 'exit 1\n');
});

test('through the CLI: a hook that sleeps 20s with timeout 2s is killed and ends the run as a failed hook', async (t) => {
  const repo = makeRepo();
  const P = 'apps/podinfo/prod/';
  const good = commit(repo, { [`${P}kustomization.yaml`]: 'images: [{ name: podinfo, newTag: 6.0.0 }]\n' }, 'podinfo 6.0.0');
  const bad = commit(repo, { [`${P}kustomization.yaml`]: 'images: [{ name: podinfo, newTag: 6.1.0 }]\n' }, 'podinfo 6.1.0');
  const dir = tempDir('lastgood-hook-cli-');
  const marker = path.join(dir, 'hook-finished');
  const pidFile = path.join(dir, 'hook.pid');
  const config = writeFile(dir, 'lastgood.yaml', `repo:\n  url: ${repo}\ndefaults: { mode: commit, strategy: restore, confirmations: 1 }\ntargets:\n  - name: podinfo-prod\n    paths: [${P}]\n    resources:\n      - { apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: apps }\n    onFailure:\n      analysis: { hook: { command: [sh, -c, "echo $$ > '${pidFile}'; sleep 20; touch '${marker}'"], timeout: 2s }, then: revert, onHookFailure: alert }\n`);
  const snap = writeFile(dir, 'cluster.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${bad}`, applied: `main@sha1:${good}`, ready: 'False' })));
  const started = Date.now();
  const r = await lastgood(['run', '--now', '2026-11-01T12:05:00Z', '--config', config, '--snapshot', snap, '--json']);
  const ms = Date.now() - started;
  t.is(r.code, 1, r.stderr);
  t.regex(JSON.parse(r.stdout).targets[0].reason, /hook failed \(sh did not finish within 2s \(killed\)\)/);
  // killed: the run ended before the 20s the hook would have taken, and the hook with it
  t.true(ms < 20_000, `${ms}ms`);
  t.is(git(repo, 'rev-parse', 'main'), bad, 'onHookFailure: alert — nothing written');
  t.true(await gone(Number(readFileSync(pidFile, 'utf8'))), 'the hook is gone');
  t.false(existsSync(marker), 'it never ran to its end');

  const tooLong = writeFile(dir, 'long.yaml', readFileSync(config, 'utf8').replace('timeout: 2s', 'timeout: 25d'));
  const v = await lastgood(['validate', '--config', tooLong]);
  t.is(v.code, 2, v.stderr);
  t.regex(v.stderr, /long\.yaml:\d+: targets\[0\]\.onFailure\.analysis.*between 1s and 1h/);
});
