/**
 * startup: how long a cold `lastgood run` spends before its first request — Node's start and
 * module loading, which a one-shot CLI or Action pays on every run.
 *
 * - `startup/first-request`: from spawning `lastgood run --config … --snapshot …` to its first
 *   HTTP request (the git remote's `info/refs`) arriving at a server on 127.0.0.1, in this process.
 *   The server answers 503, so the run ends there; what it would have fetched plays no part.
 *   Baseline: bare `node -e 0`, spawn to exit, measured in the same run. Issue 21's goal:
 *   `overBaselineMs` ≤ 100.
 * - variants: the bundle users run (`bin/lastgood.js` → dist/cli/), with Node's compile cache warm
 *   (every run after the first) and cold (a new, empty cache each run), and the TypeScript sources
 *   run by Node's type stripping (how lastgood ran before issue 21), warm and cold.
 *
 * Medians of RUNS spawns each, interleaved so that other load on the machine falls on every variant.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureCli } from '../scripts/build-cli.ts';

export const prefix = 'startup';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const RUNS = 7;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

const round = (ms: number) => Math.round(ms * 10) / 10;

interface Variant {
  name: string;
  entry: string;
  /** a new empty compile cache for every run (cold), or one kept across runs (warm) */
  cache: 'warm' | 'cold';
}

export default async function* startup(): AsyncIterable<Record<string, unknown> & { bench: string }> {
  await ensureCli();
  let firstRequest: (() => void) | undefined;
  const server = http.createServer((req, res) => {
    firstRequest?.();
    firstRequest = undefined;
    res.writeHead(503).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/gitops.git`;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'lastgood-bench-startup-'));
  const config = path.join(dir, 'lastgood.yaml');
  writeFileSync(config, `repo:\n  url: ${url}\n  insecure: true\ntargets:\n  - name: podinfo-prod\n    paths: [apps/podinfo/overlays/prod/]\n    resources:\n      - { apiVersion: flagger.app/v1beta1, kind: Canary, namespace: prod, name: podinfo }\n      - { apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: apps }\n`);
  const args = ['run', '--config', config, '--snapshot', path.join(ROOT, 'templates/demo/cluster.yaml'), '--now', '2026-11-21T09:52:00Z'];

  const variants: Variant[] = [
    { name: 'bundle', entry: path.join(ROOT, 'bin/lastgood.js'), cache: 'warm' },
    { name: 'bundle', entry: path.join(ROOT, 'bin/lastgood.js'), cache: 'cold' },
    { name: 'typescript sources (type stripping)', entry: path.join(ROOT, 'src/cli.ts'), cache: 'warm' },
    { name: 'typescript sources (type stripping)', entry: path.join(ROOT, 'src/cli.ts'), cache: 'cold' },
  ];
  const warmCache = variants.map(() => mkdtempSync(path.join(dir, 'cc-')));
  const cacheFor = (i: number, v: Variant) => (v.cache === 'warm' ? warmCache[i]! : mkdtempSync(path.join(dir, 'cc-')));

  /** spawn → the first request at the server (or exit, for the baseline) */
  const time = (argv: string[], env: NodeJS.ProcessEnv, until: 'request' | 'exit') =>
    new Promise<number>((resolve, reject) => {
      const start = process.hrtime.bigint();
      const elapsed = () => Number(process.hrtime.bigint() - start) / 1e6;
      let ms: number | undefined;
      if (until === 'request') firstRequest = () => (ms = elapsed());
      const child = spawn(process.execPath, argv, { env, stdio: 'ignore' });
      child.on('error', reject);
      child.on('exit', () => {
        if (until === 'exit') ms = elapsed();
        if (ms === undefined) reject(new Error(`${argv.join(' ')}: exited without a request`));
        else resolve(ms);
      });
    });

  const env = (cache: string): NodeJS.ProcessEnv => ({ PATH: process.env.PATH, HOME: dir, NODE_COMPILE_CACHE: cache, LASTGOOD_GIT_TOKEN: '' });
  // one unmeasured run each: the warm caches fill, the files are in the page cache
  for (const [i, v] of variants.entries()) await time([v.entry, ...args], env(cacheFor(i, v)), 'request');
  const baseline: number[] = [];
  const samples = variants.map(() => [] as number[]);
  for (let r = 0; r < RUNS; r++) {
    baseline.push(await time(['-e', '0'], env(warmCache[0]!), 'exit'));
    for (const [i, v] of variants.entries()) samples[i]!.push(await time([v.entry, ...args], env(cacheFor(i, v)), 'request'));
  }
  server.close();
  const base = median(baseline);
  for (const [i, v] of variants.entries()) {
    const ms = median(samples[i]!);
    yield {
      bench: 'startup/first-request',
      variant: `${v.name}, compile cache ${v.cache}`,
      lastgood: { ms: round(ms) },
      baseline: { name: 'node -e 0', ms: round(base) },
      ratio: round(ms / base),
      overBaselineMs: round(ms - base),
      node: process.version,
    };
  }
}
