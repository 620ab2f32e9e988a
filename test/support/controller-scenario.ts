import { rmSync } from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';
import { parseConfig } from '../../src/config/load.ts';
import type { Config } from '../../src/config/schema.ts';
import { createController, type Controller, type ControllerOptions } from '../../src/controller/controller.ts';
import { createGitHubBackend } from '../../src/deliver/github/index.ts';
import { openRepo } from '../../src/deliver/registry.ts';
import { LocalRepo } from '../../src/deliver/local/index.ts';
import type { TargetOutcome } from '../../src/engine/index.ts';
import type { RepoBackend } from '../../src/repo/types.ts';
import { commit, fromTemplate, git, makeRepo, tempDir } from './git.ts';
import { startGitHubEmulator, type Emulator } from './github-emulator.ts';
import { startGitHttpServer } from './git-http-server.ts';
import { startKubeEmulator, type KubeEmulator } from './kube-emulator.ts';
import { canary, deployment, kustomization } from './objects.ts';
import type { Clock } from '../../src/clock.ts';
import type { Evaluation } from '../../src/decide/tracker.ts';
import { RENDER } from './render-off.ts';
import { testClock } from './clock.ts';

/**
 * Controller scenarios for tests and the benchmark: a GitOps repository (c1 initial, c2 good
 * change, c3 the bad release 6.1.0, c4 an unrelated change), a Kubernetes API emulator holding the
 * target's objects (Flux Kustomization, Flagger Canary, the Deployment), and a controller started
 * in this process over them, with a repository backend of choice.
 */

export const TARGET_PATH = 'apps/podinfo/overlays/prod/';
export const TOKEN = 'ghs_controllerTestToken0123456789abcdef';

export function overlay(tag: string): string {
  return `apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../../base\nimages:\n  - name: ghcr.io/stefanprodan/podinfo\n    newTag: ${tag}\n`;
}

export interface GitopsRepo {
  /** a bare repository (what a remote holds) */
  bare: string;
  c1: string; c2: string; c3: string; c4: string;
}

export function gitopsRepo(): GitopsRepo {
  // built once per worker, copied for each test (support/git.ts fromTemplate)
  const fixture = fromTemplate('controller gitops', (root) => {
    const work = makeRepo({ dir: path.join(root, 'work') });
    const c1 = commit(work, { 'apps/podinfo/base/deployment.yaml': 'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: podinfo\n', [`${TARGET_PATH}kustomization.yaml`]: overlay('6.0.0'), 'apps/redis/values.yaml': 'replicas: 1\n' }, 'initial platform');
    const c2 = commit(work, { [`${TARGET_PATH}replicas.yaml`]: 'replicas: 2\n' }, 'podinfo: two replicas in prod');
    const c3 = commit(work, { [`${TARGET_PATH}kustomization.yaml`]: overlay('6.1.0') }, 'podinfo: release 6.1.0');
    const c4 = commit(work, { 'apps/redis/values.yaml': 'replicas: 3\n' }, 'redis: three replicas');
    git(root, 'clone', '-q', '--bare', work, path.join(root, 'gitops.git'));
    rmSync(work, { recursive: true });
    return { c1, c2, c3, c4 };
  });
  return { bare: path.join(fixture.root, 'gitops.git'), ...fixture.value };
}

export const RESOURCES = `
      - { apiVersion: flagger.app/v1beta1, kind: Canary, namespace: prod, name: podinfo }
      - { apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: apps }
      - { apiVersion: apps/v1, kind: Deployment, namespace: prod, name: podinfo }`;

export function configText(opts: { url: string; apiUrl?: string; repoSettings?: string; mode?: 'commit' | 'pull-request'; defaults?: string; target?: string; controller?: string; resources?: string; interval?: string; render?: boolean }): string {
  return `repo:
  url: ${opts.url}
${opts.apiUrl ? `  apiUrl: ${opts.apiUrl}\n` : ''}${opts.repoSettings ?? ''}  branch: main
${RENDER(opts.render)}defaults:
  mode: ${opts.mode ?? 'commit'}
  strategy: revert
  confirmations: 2
${opts.defaults ?? ''}
controller:
  listen: 127.0.0.1:0
  namespace: lastgood
  interval: ${opts.interval ?? '200ms'}
${opts.controller ?? ''}
targets:
  - name: podinfo-prod
    paths: [${TARGET_PATH}]
    resources:${opts.resources ?? RESOURCES}
${opts.target ?? ''}`;
}

export function config(text: string): Config {
  return parseConfig(text, 'lastgood.yaml');
}

/** A Canary the CRD schema accepts (the support builder leaves out spec.analysis). */
export function canaryObject(o: { phase: string; since?: string; weight?: number }): object {
  const c = canary({ phase: o.phase, ...(o.since ? { since: o.since } : {}), ...(o.weight !== undefined ? { weight: o.weight } : {}) });
  return { ...c, spec: { ...c.spec, analysis: { interval: '1m', threshold: 5, maxWeight: 50, stepWeight: 10 } } };
}

export const now = (clock?: Clock) => new Date(clock ? clock.now() : Date.now()).toISOString();
export const iso = (ms: number) => new Date(ms).toISOString();

/** A cluster where podinfo 6.1.0 (c3) was applied by Flux and Flagger is analysing it (times from `clock`, when the test drives one). */
export async function cluster(repo: GitopsRepo, opts: { canaryPhase?: string; clock?: Clock; healthyFor?: number } = {}): Promise<KubeEmulator> {
  const kube = await startKubeEmulator({ namespaces: ['default', 'prod', 'flux-system', 'lastgood'] });
  const t = opts.clock?.now() ?? Date.now();
  const earlier = iso(t - (opts.healthyFor ?? 120_000));
  kube.apply(kustomization({ attempted: `main@sha1:${repo.c3}`, applied: `main@sha1:${repo.c3}`, ready: 'True', since: earlier }));
  kube.apply(deployment({ image: 'ghcr.io/stefanprodan/podinfo:6.1.0', state: 'available', since: earlier }));
  kube.apply(canaryObject({ phase: opts.canaryPhase ?? 'Progressing', since: opts.canaryPhase === 'Succeeded' ? earlier : iso(t) }));
  return kube;
}

export function failCanary(kube: KubeEmulator, phase = 'Failed', clock?: Clock): void {
  const c = canaryObject({ phase, since: now(clock) }) as { status: unknown };
  kube.setStatus({ apiVersion: 'flagger.app/v1beta1', kind: 'Canary', namespace: 'prod', name: 'podinfo' }, c.status);
}

/** JSON log lines, kept for assertions. */
export function memoryLogger(level = 'info'): { log: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString('utf8').split('\n')) if (l.trim()) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  return { log: pino({ level, base: undefined }, stream), lines };
}

export interface Running {
  controller: Controller;
  acted: TargetOutcome[];
  lines: Array<Record<string, unknown>>;
}

/**
 * Leader election in controller tests runs on the real clock with client-go's own timings (15 s
 * lease, 10 s renew deadline, 2 s retry): the first attempt leads at once, and a loaded machine
 * has a whole retry period for each lease request and 10 s to renew. (test/controller-leader.test.ts
 * drives the elector's own clock.) Decisions and their deadlines run on the test's clock.
 */
export const TEST_LEASE = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2000 };

export async function startController(kube: KubeEmulator, cfg: Config, backendOrPromise: RepoBackend | Promise<RepoBackend>, extra: Partial<ControllerOptions> = {}): Promise<Running> {
  const repo = await backendOrPromise;
  const acted: TargetOutcome[] = [];
  const { log, lines } = memoryLogger();
  const controller = createController({
    config: cfg, kc: kube.kubeConfig(), repo, log, lease: TEST_LEASE, watch: { backoffMs: 50, maxBackoffMs: 400 }, processMetrics: false,
    onActed: (_t, o) => acted.push(o),
    ...extra,
  });
  await controller.start();
  return { controller, acted, lines };
}

/**
 * Waits for a condition (never for a time): `timeoutMs` only ends a test that would otherwise hang,
 * so it is far above anything a loaded machine needs.
 */
export async function until<T>(what: string, probe: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** One evaluation of a target as the controller made it: when (its clock), what, and when it wants to look again. */
export interface Seen {
  target: string;
  at: number;
  verdict: string;
  action: string;
  heldBy: string | undefined;
  act: boolean;
  nextAt: number | undefined;
  changedAt: number | undefined;
}

/** Records every evaluation (pass `onEvaluated` to the controller). */
export function evaluations(): { seen: Seen[]; onEvaluated: NonNullable<ControllerOptions['onEvaluated']> } {
  const seen: Seen[] = [];
  return {
    seen,
    onEvaluated: (target: string, e: Evaluation, at: number, changedAt: number | undefined) =>
      seen.push({ target, at, verdict: e.verdict.verdict, action: e.decision.action, heldBy: e.decision.heldBy, act: e.act, nextAt: e.nextAt, changedAt }),
  };
}

export type BackendKind = 'local' | 'http' | 'github';

export interface Backend {
  kind: BackendKind;
  /** repo.url (and apiUrl, and the other repo settings) for the config */
  url: string;
  apiUrl?: string;
  repoSettings?: string;
  /** a new backend instance (each controller has its own, as each cluster does) */
  open(): Promise<RepoBackend>;
  github?: Emulator;
  close(): Promise<void>;
}

export async function backend(kind: BackendKind, repo: GitopsRepo): Promise<Backend> {
  if (kind === 'local') return { kind, url: repo.bare, open: async () => new LocalRepo(repo.bare), close: async () => {} };
  if (kind === 'http') {
    // git's own http-backend over the bare repository; the git backend keeps a mirror per instance
    const server = await startGitHttpServer({ root: path.dirname(repo.bare) });
    const url = `${server.url}/${path.basename(repo.bare)}`;
    return {
      kind, url, repoSettings: '  insecure: true\n',
      open: () => openRepo({ location: url, relativeTo: tempDir(), repo: { insecure: true } }),
      close: () => server.close(),
    };
  }
  const github = await startGitHubEmulator({ bareRepo: repo.bare, owner: 'acme', repo: 'gitops', token: TOKEN });
  return {
    kind, url: 'https://github.com/acme/gitops', apiUrl: github.url, github,
    open: async () => createGitHubBackend({ owner: 'acme', repo: 'gitops', token: TOKEN, baseUrl: github.url, writeIntervalMs: 0, retryUnitMs: 1 }),
    close: async () => {
      if (github.violations.length) throw new Error(`GitHub emulator: ${github.violations.join('; ')}`);
      await github.close();
    },
  };
}

/** Commits on main after `since`, newest first, with their trailers. */
export function commitsSince(bare: string, since: string): Array<{ sha: string; message: string }> {
  const out = git(bare, 'log', '--format=%H%x00%B%x01', `${since}..main`);
  return out.split('\x01').map((s) => s.trim()).filter(Boolean).map((s) => {
    const [sha, message] = s.split('\x00');
    return { sha: sha!.trim(), message: message ?? '' };
  });
}

/**
 * The scenario on a driven clock for one test: the repository, the cluster and the backend (closed
 * at the test's end), and `start` for each controller the test runs over them (stopped at its end),
 * resolved once it is ready, leading and has observed the target.
 */
export async function drivenScenario(t: { teardown(fn: () => unknown): void }, kind: BackendKind, opts: { start?: number } = {}) {
  const repo = gitopsRepo();
  const clock = testClock(opts.start);
  const kube = await cluster(repo, { clock });
  t.teardown(() => kube.close());
  const be = await backend(kind, repo);
  t.teardown(() => be.close());
  return {
    repo, clock, kube, be,
    async start(text: string, extra: Partial<ControllerOptions> = {}): Promise<Running & { seen: Seen[] }> {
      const { seen, onEvaluated } = evaluations();
      const running = await startController(kube, config(text), be.open(), { clock, onEvaluated, ...extra });
      t.teardown(() => running.controller.stop());
      await until('ready, leading and observed', () => running.controller.ready && running.controller.isLeader && seen.length > 0);
      return { ...running, seen };
    },
  };
}
