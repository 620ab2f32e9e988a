/**
 * model/engines: locate over what the engine builds for a target, per engine, against locate over
 * the target's paths alone (what lastgood judged before it modelled engines), in the same run on
 * the same generated repository (bench/generate-repo.ts): the target is app-00000's prod overlay,
 * the failing sync spans the last `SPAN` commits (an Argo CD Application's deployment history, a
 * Flux Kustomization's applied..attempted), so locate models the target at every commit of the
 * range. Each measurement starts with empty caches; ms = median of the repetitions, in process.
 * LASTGOOD_BENCH_SIZES=small,medium limits the sizes (default: small, medium).
 */
import { execFileSync } from 'node:child_process';
import { evidenceFor } from '../src/decide/verdict.ts';
import { LocalRepo } from '../src/deliver/local/index.ts';
import { locate } from '../src/history/locate.ts';
import { modelTarget } from '../src/model/index.ts';
import type { KubeObject } from '../src/observe/types.ts';
import { benchRepo, SIZES, type SizeName } from './generate-repo.ts';

export const prefix = 'model/engines';

const SPAN = 50;
const REPS: Record<SizeName, number> = { small: 7, medium: 5, large: 3 };

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}
const round = (x: number) => Math.round(x * 10) / 10;

const APP = { apiVersion: 'argoproj.io/v1alpha1', kind: 'Application', namespace: 'argocd', name: 'app-00000-prod' };
const FLUX = { apiVersion: 'kustomize.toolkit.fluxcd.io/v1', kind: 'Kustomization', namespace: 'flux-system', name: 'app-00000-prod' };

function application(path: string, applied: string, attempted: string): KubeObject {
  return {
    apiVersion: APP.apiVersion, kind: APP.kind, metadata: { name: APP.name, namespace: APP.namespace },
    spec: { project: 'default', source: { repoURL: 'https://git.example.com/gitops.git', path, targetRevision: 'main' }, destination: { server: 'https://kubernetes.default.svc', namespace: 'prod' } },
    status: {
      health: { status: 'Degraded', message: 'Deployment "app-00000" exceeded its progress deadline', lastTransitionTime: '2026-11-01T11:04:00Z' },
      sync: { status: 'Synced', revision: attempted },
      operationState: { phase: 'Succeeded', startedAt: '2026-11-01T10:59:58Z', finishedAt: '2026-11-01T11:00:00Z', syncResult: { revision: attempted } },
      reconciledAt: '2026-11-01T11:10:00Z',
      history: [
        { id: 1, revision: applied, deployStartedAt: '2026-11-01T09:59:58Z', deployedAt: '2026-11-01T10:00:00Z' },
        { id: 2, revision: attempted, deployStartedAt: '2026-11-01T10:59:58Z', deployedAt: '2026-11-01T11:00:00Z' },
      ],
    },
  };
}

function kustomization(path: string, applied: string, attempted: string): KubeObject {
  return {
    apiVersion: FLUX.apiVersion, kind: FLUX.kind, metadata: { name: FLUX.name, namespace: FLUX.namespace, generation: 1 },
    spec: { interval: '10m', path, prune: true, sourceRef: { kind: 'GitRepository', name: 'flux-system' } },
    status: {
      observedGeneration: 1, lastAttemptedRevision: `main@sha1:${attempted}`, lastAppliedRevision: `main@sha1:${applied}`,
      conditions: [{ type: 'Ready', status: 'False', reason: 'HealthCheckFailed', message: 'health check failed', lastTransitionTime: '2026-11-01T11:04:00Z' }],
    },
  };
}

export default async function* () {
  const wanted = (process.env.LASTGOOD_BENCH_SIZES ?? 'small,medium').split(',').map((s) => s.trim()) as SizeName[];
  for (const size of wanted) {
    if (!(size in SIZES)) continue;
    const repo = await benchRepo(size);
    const applied = execFileSync('git', ['rev-parse', `main~${SPAN}`], { cwd: repo.gitdir, encoding: 'utf8' }).trim();
    const paths = repo.paths;
    const path = paths[0]!.replace(/\/$/, '');
    const engines: Array<{ engine: string; resource: typeof APP; object: KubeObject }> = [
      { engine: 'argocd', resource: APP, object: application(path, applied, repo.bad) },
      { engine: 'flux', resource: FLUX, object: kustomization(`./${path}`, applied, repo.bad) },
    ];
    const run = async (resource: typeof APP, object: KubeObject, withModel: boolean): Promise<{ ms: number; bad: string[] }> => {
      const reader = new LocalRepo(repo.gitdir);
      const observed = [{ object, source: 'bench' }];
      const evidence = evidenceFor({ resources: [resource] }, observed, new Date('2026-11-01T12:00:00Z'));
      const started = performance.now();
      const model = withModel ? modelTarget({ reader, target: { name: 'bench', paths, resources: [resource] }, observed }) : undefined;
      const located = await locate({ reader, branch: 'main', head: repo.bad, paths, evidence, ...(model ? { model } : {}) });
      return { ms: performance.now() - started, bad: located.bad.map((c) => c.oid) };
    };
    for (const { engine, resource, object } of engines) {
      const base: number[] = [];
      const ours: number[] = [];
      let bad: string[] = [];
      for (let i = 0; i < REPS[size]; i++) {
        base.push((await run(resource, object, false)).ms);
        const r = await run(resource, object, true);
        ours.push(r.ms);
        bad = r.bad;
      }
      const [ms, baseMs] = [median(ours), median(base)];
      yield { bench: `model/engines/${engine}`, size, commits: SPAN, bad: bad.length, lastgood: { ms: round(ms) }, baseline: { name: 'locate over the target paths', ms: round(baseMs) }, ratio: Math.round((ms / baseMs) * 100) / 100 };
    }
  }
}
