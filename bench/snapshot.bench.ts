/**
 * snapshot/dry-run: `lastgood run --snapshot <file> --dry-run` on a snapshot of 100,000 objects
 * (~64 MB of YAML, one `kind: List` as `kubectl get -A -o yaml` prints a large cluster), the
 * issue-22 row: the demo's failing Flux Kustomization and Flagger Canary among 99,997 Deployments,
 * ReplicaSets and Pods of other applications, against the demo repository (demo/build-repo.ts).
 *
 * ms: wall time of the whole process (bin/lastgood.js, what users run), median of REPS runs;
 * rssMb: its peak resident memory (GNU time's %M), the largest of the runs. The goal is ≤ 256 MB
 * (issue 22); there is no native baseline (nothing else reads a snapshot).
 * LASTGOOD_BENCH_SNAPSHOT_OBJECTS changes the count.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildDemoRepo } from '../demo/build-repo.ts';
import { ensureCli } from '../scripts/build-cli.ts';

export const prefix = 'snapshot';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const TIME = '/usr/bin/time';
const REPS = 3;
const OBJECTS = Number(process.env.LASTGOOD_BENCH_SNAPSHOT_OBJECTS ?? 100_000);

/** One filler object of the kind `i` picks, indented as an item of the List (~640 bytes, as kubectl prints them). */
function filler(i: number): string {
  const app = `app-${String(Math.floor(i / 3)).padStart(6, '0')}`;
  const ns = `team-${i % 97}`;
  const time = '2026-11-21T08:00:00Z';
  switch (i % 3) {
    case 0:
      return `  - apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: ${app}
      namespace: ${ns}
      labels: { app: ${app} }
    spec:
      replicas: 2
      selector: { matchLabels: { app: ${app} } }
      template:
        metadata: { labels: { app: ${app} } }
        spec: { containers: [{ name: ${app}, image: "registry.example.com/${app}:1.${i % 50}.0" }] }
    status:
      observedGeneration: 4
      replicas: 2
      updatedReplicas: 2
      readyReplicas: 2
      availableReplicas: 2
      conditions:
        - { type: Available, status: "True", reason: MinimumReplicasAvailable, lastTransitionTime: "${time}" }
        - { type: Progressing, status: "True", reason: NewReplicaSetAvailable, lastTransitionTime: "${time}" }
`;
    case 1:
      return `  - apiVersion: apps/v1
    kind: ReplicaSet
    metadata:
      name: ${app}-7d9c5b${i % 10}
      namespace: ${ns}
      labels: { app: ${app}, pod-template-hash: 7d9c5b${i % 10} }
      ownerReferences: [{ apiVersion: apps/v1, kind: Deployment, name: ${app}, controller: true }]
    spec:
      replicas: 2
      selector: { matchLabels: { app: ${app}, pod-template-hash: 7d9c5b${i % 10} } }
    status:
      observedGeneration: 1
      replicas: 2
      fullyLabeledReplicas: 2
      readyReplicas: 2
      availableReplicas: 2
`;
    default:
      return `  - apiVersion: v1
    kind: Pod
    metadata:
      name: ${app}-7d9c5b${i % 10}-x${String(i).padStart(5, '0')}
      namespace: ${ns}
      labels: { app: ${app}, pod-template-hash: 7d9c5b${i % 10} }
      ownerReferences: [{ apiVersion: apps/v1, kind: ReplicaSet, name: ${app}-7d9c5b${i % 10}, controller: true }]
    spec:
      nodeName: node-${i % 40}
      containers: [{ name: ${app}, image: "registry.example.com/${app}:1.${i % 50}.0" }]
    status:
      phase: Running
      podIP: 10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}
      startTime: "${time}"
      conditions:
        - { type: Ready, status: "True", lastTransitionTime: "${time}" }
      containerStatuses: [{ name: ${app}, ready: true, restartCount: 0, image: "registry.example.com/${app}:1.${i % 50}.0", started: true }]
`;
  }
}

/** The demo cluster's objects and `objects - 3` fillers, in one List. */
export function writeSnapshot(file: string, objects: number): void {
  const demo = readFileSync(path.join(ROOT, 'templates/demo/cluster.yaml'), 'utf8');
  const items = demo.slice(demo.indexOf('items:\n') + 'items:\n'.length);
  const parts = ['apiVersion: v1\nkind: List\nitems:\n', items.endsWith('\n') ? items : `${items}\n`];
  const demoObjects = (items.match(/^ {2}- apiVersion:/gm) ?? []).length;
  for (let i = 0; i < objects - demoObjects; i++) parts.push(filler(i));
  writeFileSync(file, parts.join(''));
}

/** `argv` under GNU time: wall ms and peak RSS (MB). */
function timed(argv: string[], env: NodeJS.ProcessEnv): Promise<{ ms: number; rssMb: number; code: number | null; stderr: string }> {
  const out = path.join(mkdtempSync(path.join(os.tmpdir(), 'lastgood-bench-time-')), 'rss');
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(TIME, ['-o', out, '-f', '%M', ...argv], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => {
      const ms = performance.now() - started;
      const rssMb = Number(readFileSync(out, 'utf8').trim().split('\n').pop()) / 1024;
      rmSync(path.dirname(out), { recursive: true, force: true });
      resolve({ ms, rssMb, code, stderr });
    });
  });
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const round = (x: number, digits = 0) => Math.round(x * 10 ** digits) / 10 ** digits;

export default async function* () {
  if (!existsSync(TIME)) {
    process.stderr.write(`snapshot: ${TIME} (GNU time) is needed to measure peak RSS: apt-get install time\n`);
    return;
  }
  await ensureCli();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'lastgood-bench-snapshot-'));
  try {
    const repo = path.join(dir, 'gitops');
    await buildDemoRepo(repo);
    const config = path.join(dir, 'lastgood.yaml');
    writeFileSync(config, readFileSync(path.join(ROOT, 'templates/demo/lastgood.yaml'), 'utf8').replace(/url: \S+/, `url: ${repo}`));
    const snapshot = path.join(dir, 'cluster.yaml');
    writeSnapshot(snapshot, OBJECTS);
    const bytes = statSync(snapshot).size;
    process.stderr.write(`snapshot: ${OBJECTS} objects, ${round(bytes / 1024 / 1024, 1)} MB\n`);
    const argv = [process.execPath, path.join(ROOT, 'bin/lastgood.js'), 'run', '--config', config, '--snapshot', snapshot, '--dry-run', '--now', '2026-11-21T09:52:00Z'];
    const env = { PATH: process.env.PATH, HOME: dir, LASTGOOD_GIT_TOKEN: '' };
    const runs = [];
    for (let rep = 0; rep < REPS; rep++) {
      const r = await timed(argv, env);
      // the demo's verdict: the revert is planned (dry run: exit 0 with a plan, nothing written)
      if (r.code !== 0) throw new Error(`lastgood run --snapshot exited ${r.code}: ${r.stderr.slice(-500)}`);
      runs.push(r);
      process.stderr.write(`snapshot/dry-run #${rep + 1}: ${round(r.ms)} ms, ${round(r.rssMb)} MB\n`);
    }
    yield {
      bench: 'snapshot/dry-run',
      objects: OBJECTS,
      bytes,
      lastgood: { ms: round(median(runs.map((r) => r.ms))), rssMb: round(Math.max(...runs.map((r) => r.rssMb)), 1) },
      goalRssMb: 256,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
