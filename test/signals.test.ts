import test from 'ava';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { BIN, ROOT } from './support/cli.ts';
import { commit, git, makeRepo, tempDir, writeFile } from './support/git.ts';
import { kustomization, yamlDocs } from './support/objects.ts';

/**
 * Issue 15 class 8: signals. A signal to `lastgood` while a hook runs ends the hook's process
 * group, and nothing is written afterwards; the exit is 128 + the signal (or death by it). Run
 * with the lowest Node package.json "engines" admits (test/node-lowest/, installed by npm ci: the
 * package's oldest supported Node runs bin/lastgood.js and the bundle itself, with no launcher in
 * between), else with this Node.
 */

function launcherNode(): string {
  const lowest = path.join(ROOT, 'test', 'node-lowest', 'node_modules', 'node', 'bin', 'node');
  return existsSync(lowest) ? lowest : process.execPath;
}

const NODE = launcherNode();

/** Running, not a zombie (in a container nothing may reap the orphans a kill leaves). */
function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** Whether any process of process group `pgid` is still running (the hook runs in a group of its own). */
function groupAlive(pgid: number): boolean {
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const fields = readFileSync(`/proc/${name}/stat`, 'utf8').replace(/^.*\) /s, '').split(' ');
      if (fields[0] !== 'Z' && Number(fields[2]) === pgid) return true;
    } catch {
      // gone meanwhile
    }
  }
  return false;
}

function childrenOf(pid: number): number[] {
  try {
    return execFileSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' }).split('\n').map((l) => Number(l.trim())).filter(Boolean);
  } catch {
    return [];
  }
}

async function waitFor(check: () => boolean, ms: number): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end; await sleep(50)) if (check()) return true;
  return check();
}

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  test.serial(`${signal} to lastgood while a hook runs ends the child and the hook: no revert is written afterwards`, async (t) => {
    const repo = makeRepo();
    const P = 'apps/podinfo/prod/';
    const good = commit(repo, { [`${P}kustomization.yaml`]: 'images: [{ name: podinfo, newTag: 6.0.0 }]\n' }, 'podinfo 6.0.0');
    const bad = commit(repo, { [`${P}kustomization.yaml`]: 'images: [{ name: podinfo, newTag: 6.1.0 }]\n' }, 'podinfo 6.1.0');
    const dir = tempDir('lastgood-signal-');
    const hookPid = path.join(dir, 'hook.pid');
    const hookDone = path.join(dir, 'hook.done');
    // the hook runs right before delivery; left alone it would finish after 3s and the revert be written
    const config = writeFile(dir, 'lastgood.yaml', `repo:\n  url: ${repo}\ndefaults: { mode: commit, strategy: restore, confirmations: 1 }\ntargets:\n  - name: podinfo-prod\n    paths: [${P}]\n    resources:\n      - { apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: apps }\n    onFailure:\n      analysis: { hook: { command: [sh, -c, "echo $$ > '${hookPid}'; sleep 3; touch '${hookDone}'"], timeout: 30s }, then: revert }\n`);
    const snap = writeFile(dir, 'cluster.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${bad}`, applied: `main@sha1:${good}`, ready: 'False' })));

    const launcher = spawn(NODE, [BIN, 'run', '--now', '2026-11-01T12:05:00Z', '--config', config, '--snapshot', snap], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    launcher.stderr.on('data', (d) => (stderr += d));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => launcher.on('exit', (code, sig) => resolve({ code, signal: sig })));
    t.true(await waitFor(() => existsSync(hookPid) && readFileSync(hookPid, 'utf8').trim() !== '', 20_000), `the hook started: ${stderr}`);
    t.deepEqual(childrenOf(launcher.pid!).filter((pid) => pid !== Number(readFileSync(hookPid, 'utf8'))), [], 'lastgood runs in one process (no launcher re-executing Node)');
    const cli = [launcher.pid!];
    const group = Number(readFileSync(hookPid, 'utf8'));
    t.true(groupAlive(group), 'the hook leads a process group of its own');

    launcher.kill(signal);
    const { code, signal: by } = await exited;
    const number = os.constants.signals[signal];
    t.true(by === signal || code === 128 + number, `${code} ${by}`);
    t.true(await waitFor(() => !alive(cli[0]!), 30_000), 'the child that would write the revert is gone');
    t.true(await waitFor(() => !alive(group), 30_000), 'the hook is gone');
    // nothing is left that could still write: no process of the hook's group (its `sleep`, a
    // `touch` to come), and lastgood's own process is gone (above); no sleep needed to see it
    t.true(await waitFor(() => !groupAlive(group), 30_000), 'no process of the hook\'s group is left');
    t.false(existsSync(hookDone), 'the hook did not run to its end');
    t.is(git(repo, 'rev-parse', 'main'), bad, 'no revert was written');
    t.is(git(repo, 'status', '--porcelain'), '');
  });
}

test('bin/lastgood.js exits with the CLI\'s code on the oldest Node it supports', async (t) => {
  const dir = tempDir('lastgood-signal-');
  const run = (args: string[]) =>
    new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(NODE, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (d) => (stderr += d));
      child.on('exit', (code) => resolve({ code, stderr }));
    });
  const missing = await run(['validate', '--config', path.join(dir, 'missing.yaml')]);
  t.is(missing.code, 2, missing.stderr);
  t.regex(missing.stderr, /missing\.yaml: cannot read the config: ENOENT/);
  const ok = await run(['schema']);
  t.is(ok.code, 0, ok.stderr);
});
