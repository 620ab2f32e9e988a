import test from 'ava';
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { BIN } from './support/cli.ts';
import { git, tempDir, writeFile } from './support/git.ts';
import type { KubeEmulator } from './support/kube-emulator.ts';
import { cluster, commitsSince, configText, failCanary, gitopsRepo, until } from './support/controller-scenario.ts';

/**
 * `lastgood controller` as it runs in a pod: a spawned process, the cluster through KUBECONFIG
 * (the Kubernetes API emulator), JSON logs on stderr. Killed right after it pushed, stopped by
 * SIGTERM with a revert in flight.
 */

interface Proc {
  child: ChildProcess;
  lines: Array<Record<string, unknown>>;
  raw: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function controller(configFile: string, kube: KubeEmulator, env: Record<string, string> = {}): Proc {
  const child = spawn(process.execPath, [BIN, 'controller', '--config', configFile], {
    env: { ...process.env, KUBECONFIG: kube.kubeconfigPath, LASTGOOD_LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: Array<Record<string, unknown>> = [];
  let text = '';
  let partial = '';
  child.stderr!.on('data', (d: Buffer) => {
    text += d.toString('utf8');
    partial += d.toString('utf8');
    const parts = partial.split('\n');
    partial = parts.pop()!;
    for (const l of parts) {
      try {
        lines.push(JSON.parse(l) as Record<string, unknown>);
      } catch {
        lines.push({ text: l });
      }
    }
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  return { child, lines, raw: () => text, exited };
}

async function readyz(p: Proc): Promise<{ status: number; body: Record<string, unknown> }> {
  const serving = await until('the endpoints', () => p.lines.find((l) => l.msg === 'serving /healthz, /readyz, /metrics'));
  const port = (serving.address as { port: number }).port;
  const res = await fetch(`http://127.0.0.1:${port}/readyz`);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

test('killed right after pushing, then restarted: no second revert (the repository says it is done); the next one writes the missing Event, once, and does not notify again', async (t) => {
  const repo = gitopsRepo();
  const kube = await cluster(repo);
  t.teardown(() => kube.close());
  const configFile = writeFile(tempDir('lastgood-proc-'), 'lastgood.yaml', configText({ url: repo.bare, controller: '  leaderElection: false\n' }));
  const received: string[] = [];
  const hook = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      received.push((JSON.parse(body) as { event: string }).event);
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => { hook.closeAllConnections(); hook.close(() => resolve()); }));
  const notify = { LASTGOOD_WEBHOOK_URL: `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook` };

  const first = controller(configFile, kube, { LASTGOOD_TEST_HANG_AFTER_DELIVER: '1', ...notify });
  t.teardown(() => void first.child.kill('SIGKILL'));
  await until('ready', async () => (await readyz(first)).status === 200);
  failCanary(kube);
  await until('the push', () => /test hook: hanging after delivery/.test(first.raw()));
  first.child.kill('SIGKILL');
  t.is((await first.exited).signal, 'SIGKILL');
  const pushed = commitsSince(repo.bare, repo.c4);
  t.is(pushed.length, 1, 'the revert was pushed before the kill');
  t.false(first.lines.some((l) => l.msg === 'revert done'), 'killed before the controller recorded anything of it');
  t.deepEqual(kube.events(), [], 'no Event yet');
  // the engine announced the revert as it delivered it; the Event was to come after
  await until('the notification', () => received.length > 0);

  const second = controller(configFile, kube, notify);
  t.teardown(() => void second.child.kill('SIGKILL'));
  const done = await until('the restarted controller acts', () => second.lines.find((l) => l.msg === 'revert done'));
  t.like(done, { target: 'podinfo-prod', revision: repo.c3, action: 'revert', created: false, commit: pushed[0]!.sha });
  t.regex(String(done.reason), /already reverted by/);
  t.is(commitsSince(repo.bare, repo.c4).length, 1, 'still one revert');
  // what the killed one never did, the next one does, once; what it did is not done again
  await until('the Event', () => kube.events().length > 0);
  t.like(kube.events()[0], { reason: 'RevertCommitted', type: 'Normal' });
  t.regex(git(repo.bare, 'notes', '--ref=lastgood', 'show', repo.c3), /^lastgood done target=podinfo-prod effect=notified revert=/);
  second.child.kill('SIGTERM');
  t.is((await second.exited).code, 0);
  t.is(kube.events().length, 1, 'one Event');
  t.deepEqual(received, ['reverted'], 'one notification');
});

test('SIGTERM with a revert in flight: it finishes, the lease is released, exit 0', async (t) => {
  const repo = gitopsRepo();
  const kube = await cluster(repo);
  t.teardown(() => kube.close());
  // a recovery hook that takes a second before the revert: the revert is in flight when SIGTERM comes
  const hook = `{ hook: { command: ['${process.execPath}', '-e', 'setTimeout(() => {}, 1200)'], timeout: 10s }, then: revert }`;
  const configFile = writeFile(tempDir('lastgood-proc-'), 'lastgood.yaml', configText({ url: repo.bare, target: `    onFailure: { analysis: ${hook} }\n` }));
  const p = controller(configFile, kube);
  t.teardown(() => void p.child.kill('SIGKILL'));
  await until('ready', async () => (await readyz(p)).status === 200);
  const ready = await readyz(p);
  t.like(ready.body, { ready: true, synced: true, leader: true });
  failCanary(kube);
  await until('the decision to revert', () => p.lines.some((l) => l.msg === 'decided' && l.action === 'revert'));
  p.child.kill('SIGTERM');
  const { code } = await p.exited;
  t.is(code, 0, p.raw());
  const order = p.lines.map((l) => String(l.msg ?? l.text)).filter((m) => /ran recovery hook|revert done|released the lease|stopped|stop signal/.test(m));
  t.deepEqual(order, ['stop signal received', 'ran recovery hook', 'revert done', 'released the lease', 'stopped']);
  t.is(commitsSince(repo.bare, repo.c4).length, 1, 'the revert in flight was written, whole');
  const lease = kube.get({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', namespace: 'lastgood', name: 'lastgood-controller' }) as unknown as { spec: { holderIdentity?: string; leaseDurationSeconds: number } };
  t.is(lease.spec.holderIdentity ?? '', '', 'released for a standby to take at once');
  for (const l of p.lines.filter((x) => x.msg === 'decided' || x.msg === 'revert done')) t.is(l.target, 'podinfo-prod');
});

test('a config the controller cannot use stops it at start with exit 2, naming the file and line', async (t) => {
  const repo = gitopsRepo();
  const kube = await cluster(repo);
  t.teardown(() => kube.close());
  const configFile = writeFile(tempDir('lastgood-proc-'), 'lastgood.yaml', configText({ url: repo.bare }).replace('listen: 127.0.0.1:0', 'listen: everywhere'));
  const p = controller(configFile, kube);
  const { code } = await p.exited;
  t.is(code, 2);
  t.regex(p.raw(), new RegExp(`${path.basename(configFile)}:\\d+: controller.listen: expected \\[host\\]:port`));
});
