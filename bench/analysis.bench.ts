/**
 * analysis/checks: metric checks at scale, against a real Prometheus (Debian's package, a TSDB
 * backfilled by promtool). 1,000 targets with one check each (a Deployment, its new ReplicaSet,
 * docs/metrics.md's error-ratio check, one measurement a tick); each tick, every target's due
 * measurement is taken as the controller takes it (an analysis session per target, 16 updates at
 * once: src/controller/controller.ts), and the target's evidence built.
 *
 * - checksPerSec: checks measured and judged per second (median over the ticks);
 * - baseline: the same 1,000 PromQL queries sent with plain fetch, 16 at once, uncompressed as
 *   lastgood asks for them (what Prometheus and HTTP cost); ratio: lastgood's time over the
 *   baseline's, both in the same run;
 * - rssMb: the peak resident memory of the process doing it (a child run with the controller
 *   Deployment's Node flags, install.ts CONTROLLER_NODE_OPTIONS): it must stay inside the
 *   controller's 256 MB.
 * Without Prometheus installed the bench prints one row saying so. Environment:
 * LASTGOOD_BENCH_ANALYSIS_TARGETS (default 1,000), LASTGOOD_BENCH_ANALYSIS_FLAGS (more Node flags
 * for the measuring process, e.g. --cpu-prof).
 */
import { spawn } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { CONTROLLER_NODE_OPTIONS } from '../src/controller/install.ts';

export const prefix = 'analysis';

const TARGETS = Number(process.env.LASTGOOD_BENCH_ANALYSIS_TARGETS ?? 1000);
const TICKS = 5;
const CONCURRENCY = 16;
const T0 = Date.parse('2026-11-20T10:00:00Z');
const INTERVAL_MS = 10_000;
const QUERY = 'sum(rate(http_requests_total{namespace="{{namespace}}",pod=~"{{workload}}-{{podTemplateHash}}-.*",code=~"5.."}[1m])) / sum(rate(http_requests_total{namespace="{{namespace}}",pod=~"{{workload}}-{{podTemplateHash}}-.*"}[1m]))';

const median = (v: number[]) => {
  const s = [...v].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** One pod per workload, 200s and 500s, every 15 s from five minutes before T0 to ten after. */
function series(targets: number): string {
  const lines = ['# TYPE http_requests_total unknown'];
  for (let i = 0; i < targets; i++) {
    for (const [code, perStep] of [['200', 149.4], ['500', 0.6]] as const) {
      let v = 0;
      for (let t = T0 - 300_000; t <= T0 + 600_000; t += 15_000) {
        lines.push(`http_requests_total{namespace="prod",pod="shop-${i}-5d8f7c9b6a-abcde",code="${code}"} ${v.toFixed(1)} ${(t / 1000).toFixed(3)}`);
        v += perStep;
      }
    }
  }
  lines.push('# EOF');
  return lines.join('\n') + '\n';
}

async function worker(url: string, targets: number): Promise<void> {
  const { ConfigSchema, resolveTarget } = await import('../src/config/schema.ts');
  const { analysisSessions } = await import('../src/engine/index.ts');
  const iso = (t: number) => new Date(t).toISOString();
  const config = ConfigSchema.parse({
    repo: { url: '/nonexistent' },
    analysis: { prometheus: { address: url } },
    targets: Array.from({ length: targets }, (_, i) => ({
      name: `shop-${i}`, paths: [`apps/shop-${i}/`],
      resources: [{ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'prod', name: `shop-${i}` }],
      analysis: { checks: [{ name: 'error-ratio', query: QUERY, failureCondition: 'result[0] > 0.05', interval: `${INTERVAL_MS / 1000}s`, count: 100, failureLimit: 1 }] },
    })),
  });
  const observed = config.targets.flatMap((_, i) => {
    const rs = `shop-${i}-5d8f7c9b6a`;
    const template = { spec: { containers: [{ name: 'shop', image: 'ghcr.io/acme/shop:1.5.0' }] } };
    return [
      { source: 'bench', object: { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: `shop-${i}`, namespace: 'prod', generation: 2 }, spec: { template }, status: { observedGeneration: 2, replicas: 1, updatedReplicas: 1, readyReplicas: 1, availableReplicas: 1, conditions: [{ type: 'Progressing', status: 'True', reason: 'NewReplicaSetAvailable', message: `ReplicaSet "${rs}" has successfully progressed.`, lastUpdateTime: iso(T0 + 20_000) }] } } },
      { source: 'bench', object: { apiVersion: 'apps/v1', kind: 'ReplicaSet', metadata: { name: rs, namespace: 'prod', creationTimestamp: iso(T0), labels: { 'pod-template-hash': '5d8f7c9b6a' } }, spec: { template } } },
    ];
  });
  const targetsResolved = config.targets.map((t) => resolveTarget(config, t));
  const sessionOf = analysisSessions(config, { provider: { relativeTo: process.cwd(), env: {} } });
  const tick = async (now: number) => {
    let next = 0;
    let measured = 0;
    const run = async () => {
      while (next < targetsResolved.length) {
        const result = await sessionOf(targetsResolved[next++]!)!.update(observed, now);
        measured += result.queries;
      }
    };
    const started = performance.now();
    await Promise.all(Array.from({ length: CONCURRENCY }, run));
    return { ms: performance.now() - started, measured };
  };
  // the first tick reads nothing new but sets every session up (checks compiled, providers made)
  await tick(T0);
  const lastgoodMs: number[] = [];
  let measured = 0;
  for (let k = 1; k <= TICKS; k++) {
    const r = await tick(T0 + k * INTERVAL_MS);
    lastgoodMs.push(r.ms);
    measured += r.measured;
  }
  // the baseline: the same queries, rendered, sent by fetch
  const queries = Array.from({ length: targets }, (_, i) => QUERY.replaceAll('{{namespace}}', 'prod').replaceAll('{{workload}}', `shop-${i}`).replaceAll('{{podTemplateHash}}', '5d8f7c9b6a'));
  const baselineMs: number[] = [];
  for (let k = 1; k <= TICKS; k++) {
    let next = 0;
    const run = async () => {
      while (next < queries.length) {
        const q = queries[next++]!;
        const res = await fetch(`${url}/api/v1/query`, { method: 'POST', headers: { 'accept-encoding': 'identity' }, body: new URLSearchParams({ query: q, time: ((T0 + k * INTERVAL_MS) / 1000).toFixed(3) }) });
        await res.json();
      }
    };
    const started = performance.now();
    await Promise.all(Array.from({ length: CONCURRENCY }, run));
    baselineMs.push(performance.now() - started);
  }
  const rssMb = Math.round(process.resourceUsage().maxRSS / 1024);
  process.stdout.write(JSON.stringify({ lastgoodMs: median(lastgoodMs), baselineMs: median(baselineMs), measured, expected: targets * TICKS, rssMb }) + '\n');
}

export default async function* bench(): AsyncGenerator<Record<string, unknown> & { bench: string }> {
  const { PROMETHEUS_MISSING, startPrometheus } = await import('../test/support/prometheus.ts');
  if (PROMETHEUS_MISSING) {
    yield { bench: 'analysis/checks', targets: TARGETS, skipped: PROMETHEUS_MISSING };
    return;
  }
  process.stderr.write(`analysis: backfilling ${TARGETS * 2} series\n`);
  const prom = await startPrometheus(series(TARGETS));
  try {
    const flags = [...CONTROLLER_NODE_OPTIONS.split(' '), ...(process.env.LASTGOOD_BENCH_ANALYSIS_FLAGS ?? '').split(' ').filter(Boolean)];
    const child = spawn(process.execPath, [...flags, fileURLToPath(import.meta.url), '--worker', prom.url, String(TARGETS)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    if (code !== 0) throw new Error(`analysis bench worker exited ${code}`);
    const r = JSON.parse(out.trim().split('\n').pop()!) as { lastgoodMs: number; baselineMs: number; measured: number; expected: number; rssMb: number };
    yield {
      bench: 'analysis/checks', targets: TARGETS, checksPerTarget: 1,
      lastgood: { ms: Math.round(r.lastgoodMs), checksPerSec: Math.round((TARGETS / r.lastgoodMs) * 1000), rssMb: r.rssMb, measured: r.measured, expected: r.expected },
      baseline: { name: 'the same PromQL queries with fetch', ms: Math.round(r.baselineMs), queriesPerSec: Math.round((TARGETS / r.baselineMs) * 1000) },
      ratio: Math.round((r.lastgoodMs / r.baselineMs) * 100) / 100,
    };
  } finally {
    await prom.stop();
  }
}

if (process.argv[2] === '--worker' && import.meta.url === pathToFileURL(process.argv[1]!).href) {
  await worker(process.argv[3]!, Number(process.argv[4]));
}
