/**
 * controller/throughput: the controller's hot path under load. 10,000 watched objects in 1,000
 * targets (a Flagger Canary and nine Deployments each, over ten namespaces) in the Kubernetes API
 * emulator (test/support/kube-emulator.ts), then a stream of status changes, round-robin over the
 * targets, offered at a steady 6,000 a second. Three processes: the emulator, the controller (real
 * @kubernetes/client-node informers over HTTP, the verdicts, the tracker, decide; run with the
 * Node flags the Deployment sets), and this one, which only orchestrates.
 *
 * - changesPerSec: changes sent / (the last change decided − the first change sent); it cannot
 *   exceed sentPerSec, how fast the emulator wrote them;
 * - capacityPerSec: changes per second of the controller's own CPU time through the stream (what
 *   one core of it would process if the API server were not the limit);
 * - p50Ms, p99Ms: decision latency, from the moment the controller's watch received a change to the
 *   decision made on it (changes to one target within one turn of the event loop are one decision);
 *   e2eP50Ms, e2eP99Ms: from the moment the emulator wrote the change (a time the change carries in
 *   the Canary's condition; one machine, one clock) to the decision, the emulator's own queueing included;
 * - rssMb: the controller process's peak resident memory (the kernel's maxrss), through start,
 *   sync and stream; syncMs: from start to every watch listed.
 * No target fails: decisions only, no repository work (that is measured by the revert benches).
 * Environment: LASTGOOD_BENCH_CONTROLLER_CHANGES (default 20,000), LASTGOOD_BENCH_CONTROLLER_RATE
 * (changes offered a second, default 6,000), LASTGOOD_BENCH_CONTROLLER_FLAGS (more Node flags for
 * the controller process, e.g. --cpu-prof). Latencies are only meaningful on an otherwise idle
 * machine: on 2 shared cores, another process's work shows up as queueing here.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { CONTROLLER_NODE_OPTIONS } from '../src/controller/install.ts';
import { commit, makeRepo } from '../test/support/git.ts';

export const prefix = 'controller';

const TARGETS = 1000;
const PER_TARGET = 10;
const NAMESPACES = 10;
const CHANGES = Number(process.env.LASTGOOD_BENCH_CONTROLLER_CHANGES ?? 20_000);
/** the offered rate: above the goal (keep up with over 5,000 changes a second), below the emulator's own limit (~6,500/s here) */
const RATE = Number(process.env.LASTGOOD_BENCH_CONTROLLER_RATE ?? 6000);

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const file = (p: string) => JSON.stringify(fileURLToPath(new URL(`../${p}`, import.meta.url)));

/** The emulator process: seeds the objects, then writes status changes on request (one JSON command per stdin line). */
const EMULATOR_SCRIPT = `
import readline from 'node:readline';
import { startKubeEmulator } from ${file('test/support/kube-emulator.ts')};
import { canary, deployment } from ${file('test/support/objects.ts')};
const [targets, perTarget, namespaces] = JSON.parse(process.argv[1]);
const kube = await startKubeEmulator({ crds: [${file('fixtures/crds/flagger-crds.yaml')}], namespaces: ['default', ...Array.from({ length: namespaces }, (_, i) => 'ns-' + i)] });
const ns = (t) => 'ns-' + (t % namespaces);
const canaryStatus = (stamp, weight) => ({ ...canary({ phase: 'Progressing', weight, since: new Date(stamp).toISOString() }).status });
for (let t = 0; t < targets; t++) {
  const c = canary({ phase: 'Progressing', name: 't' + t, namespace: ns(t) });
  kube.apply({ ...c, spec: { ...c.spec, analysis: { interval: '1m', threshold: 5, maxWeight: 50, stepWeight: 10 } }, status: canaryStatus(Date.now(), 0) });
  for (let j = 1; j < perTarget; j++) kube.apply(deployment({ name: 't' + t + '-d' + j, namespace: ns(t), image: 'ghcr.io/acme/app:' + j, state: 'available' }));
}
process.stdout.write(JSON.stringify({ kubeconfig: kube.kubeconfigPath }) + '\\n');
for await (const line of readline.createInterface({ input: process.stdin })) {
  const cmd = JSON.parse(line);
  if (cmd.stream) {
    // paced: every 5 ms, the changes due by then (at cmd.rate per second); none left behind
    const last = new Array(targets).fill(0);
    const first = Date.now();
    let i = 0;
    while (i < cmd.stream) {
      const due = Math.min(cmd.stream, Math.floor(((Date.now() - first) / 1000) * cmd.rate) + 1);
      for (; i < due; i++) {
        const t = i % targets;
        const stamp = Date.now();
        kube.setStatus({ apiVersion: 'flagger.app/v1beta1', kind: 'Canary', namespace: ns(t), name: 't' + t }, canaryStatus(stamp, 10 + (i % 40)));
        last[t] = stamp;
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    process.stdout.write(JSON.stringify({ first, end: Date.now(), last }) + '\\n');
  }
  if (cmd.close) {
    await kube.close();
    process.exit(0);
  }
}
`;

/** The controller process: only the controller, and what the bench asks of it. */
const CONTROLLER_SCRIPT = `
import readline from 'node:readline';
import { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { ConfigSchema } from ${file('src/config/schema.ts')};
import { createController } from ${file('src/controller/controller.ts')};
import { LocalRepo } from ${file('src/deliver/local/index.ts')};
const [kubeconfig, repoDir, targets, perTarget, namespaces] = JSON.parse(process.argv[1]);
const kc = new KubeConfig();
kc.loadFromFile(kubeconfig);
const ns = (t) => 'ns-' + (t % namespaces);
const config = ConfigSchema.parse({
  repo: { url: repoDir, branch: 'main' },
  defaults: { stuckAfter: '1h', maxAge: 'off' },
  controller: { leaderElection: false, listen: '127.0.0.1:0', events: false, record: false },
  targets: Array.from({ length: targets }, (_, t) => ({
    name: 't' + t,
    paths: ['apps/t' + t + '/'],
    resources: [
      { apiVersion: 'flagger.app/v1beta1', kind: 'Canary', namespace: ns(t), name: 't' + t },
      ...Array.from({ length: perTarget - 1 }, (_, j) => ({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: ns(t), name: 't' + t + '-d' + (j + 1) })),
    ],
  })),
});
let streamStart = Infinity;
const latestSince = new Float64Array(targets);
const decision = [];
const e2e = [];
let lastDecided = 0;
let waitingFor;
let caughtUp;
const done = () => waitingFor !== undefined && waitingFor.every((stamp, t) => latestSince[t] >= stamp);
const controller = createController({
  config, kc, repo: new LocalRepo(repoDir), log: pino({ level: 'warn' }, pino.destination(2)), processMetrics: false,
  onEvaluated(target, evaluation, at, changedAt) {
    const canary = evaluation.verdict.evidence[0];
    const since = canary?.since ? Date.parse(canary.since) : NaN;
    if (!(since >= streamStart)) return;
    const t = Number(target.slice(1));
    if (since > latestSince[t]) {
      latestSince[t] = since;
      e2e.push(at - since);
      if (changedAt !== undefined) decision.push(at - changedAt);
      lastDecided = at;
    }
    if (caughtUp && done()) caughtUp();
  },
});
const started = performance.now();
await controller.start();
while (!controller.ready) await new Promise((r) => setTimeout(r, 5));
process.stdout.write(JSON.stringify({ syncMs: performance.now() - started }) + '\\n');
let cpu;
for await (const line of readline.createInterface({ input: process.stdin })) {
  const cmd = JSON.parse(line);
  if (cmd.start) {
    streamStart = cmd.start;
    cpu = process.cpuUsage();
  }
  if (cmd.expect) {
    waitingFor = Float64Array.from(cmd.expect);
    if (!done()) await Promise.race([new Promise((r) => (caughtUp = r)), new Promise((_, reject) => setTimeout(() => reject(new Error('the controller did not catch up within 60 s')), 60_000))]);
    const used = process.cpuUsage(cpu);
    const pick = (xs, p) => xs[Math.min(xs.length - 1, Math.floor(p / 100 * xs.length))];
    decision.sort((a, b) => a - b);
    e2e.sort((a, b) => a - b);
    process.stdout.write(JSON.stringify({
      lastDecided, decisions: e2e.length, cpuMs: (used.user + used.system) / 1000,
      p50Ms: pick(decision, 50), p99Ms: pick(decision, 99), e2eP50Ms: pick(e2e, 50), e2eP99Ms: pick(e2e, 99),
      maxRssMb: process.resourceUsage().maxRSS / 1024,
    }) + '\\n');
  }
  if (cmd.stop) {
    await controller.stop();
    process.exit(0);
  }
}
`;

interface BenchProcess {
  proc: ChildProcess;
  send(msg: object): void;
  next<T>(): Promise<T>;
}

function child(script: string, args: unknown[], nodeOptions: string[] = []): BenchProcess {
  const proc = spawn(process.execPath, [...nodeOptions, '--input-type=module', '-e', script, JSON.stringify(args)], { cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'] });
  const replies = readline.createInterface({ input: proc.stdout! })[Symbol.asyncIterator]();
  return {
    proc,
    send: (msg) => void proc.stdin!.write(JSON.stringify(msg) + '\n'),
    async next<T>() {
      for (;;) {
        const line = (await replies.next()).value as string | undefined;
        if (line === undefined) throw new Error('a bench process ended early');
        // what Node itself prints on stdout (--trace-gc) goes to stderr, with the progress
        if (line.startsWith('{')) return JSON.parse(line) as T;
        process.stderr.write(`${line}\n`);
      }
    },
  };
}

async function end(c: BenchProcess, msg: object): Promise<void> {
  if (c.proc.exitCode !== null) return;
  c.send(msg);
  await Promise.race([once(c.proc, 'exit'), new Promise((r) => setTimeout(r, 3000))]);
  c.proc.kill();
}

interface ControllerResult {
  lastDecided: number;
  decisions: number;
  cpuMs: number;
  p50Ms: number;
  p99Ms: number;
  e2eP50Ms: number;
  e2eP99Ms: number;
  maxRssMb: number;
}

export default async function* controllerBench(): AsyncGenerator<Record<string, unknown> & { bench: string }> {
  const emulator = child(EMULATOR_SCRIPT, [TARGETS, PER_TARGET, NAMESPACES]);
  let controller: BenchProcess | undefined;
  try {
    const { kubeconfig } = await emulator.next<{ kubeconfig: string }>();
    const repoDir = makeRepo();
    commit(repoDir, { 'README.md': 'bench\n' }, 'initial');
    controller = child(CONTROLLER_SCRIPT, [kubeconfig, repoDir, TARGETS, PER_TARGET, NAMESPACES], [...CONTROLLER_NODE_OPTIONS.split(' '), ...(process.env.LASTGOOD_BENCH_CONTROLLER_FLAGS?.split(' ').filter(Boolean) ?? [])]);
    const { syncMs } = await controller.next<{ syncMs: number }>();
    // the decisions of the initial sync are not part of the stream
    await new Promise((r) => setTimeout(r, 300));
    controller.send({ start: Date.now() });
    emulator.send({ stream: CHANGES, rate: RATE });
    const sent = await emulator.next<{ first: number; end: number; last: number[] }>();
    controller.send({ expect: sent.last });
    const r = await controller.next<ControllerResult>();
    yield {
      bench: 'controller/throughput',
      objects: TARGETS * PER_TARGET,
      targets: TARGETS,
      changes: CHANGES,
      offeredPerSec: RATE,
      changesPerSec: Math.round(CHANGES / ((r.lastDecided - sent.first) / 1000)),
      p50Ms: r.p50Ms,
      p99Ms: r.p99Ms,
      rssMb: Math.round(r.maxRssMb),
      capacityPerSec: Math.round(CHANGES / (r.cpuMs / 1000)),
      e2eP50Ms: r.e2eP50Ms,
      e2eP99Ms: r.e2eP99Ms,
      decisions: r.decisions,
      syncMs: Math.round(syncMs),
      sentPerSec: Math.round(CHANGES / ((sent.end - sent.first) / 1000)),
      nodeOptions: CONTROLLER_NODE_OPTIONS,
    };
  } finally {
    if (controller) await end(controller, { stop: true });
    await end(emulator, { close: true });
  }
}
