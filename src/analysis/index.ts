/**
 * The analysis stage: metric checks as evidence of a target's verdict, the same for every door.
 *
 *   observed objects ─► rollout (rollout.ts) ─► checks (checks.ts) ─► measurements (measure.ts)
 *   ─► evidence (evidence.ts) ─► verdict (decide/verdict.ts) ─► decide ─► locate ─► plan ─► deliver
 *
 * A session keeps one target's measurements between observations, so that a door observing over
 * time (the controller, the Action's `wait`) takes each measurement once, when it is due; a
 * one-shot run (`check`, `run`) uses a fresh session and takes every measurement due by `now`.
 * Read-only: nothing here pauses, scales or writes to a workload.
 */
import { RemoteError } from '../errors.ts';
import { groupKind, keyOf as observedKey, type KubeObject, type Observed } from '../observe/types.ts';
import type { Config, ResolvedTarget } from '../config/schema.ts';
import type { Evidence } from '../decide/types.ts';
import { parseDuration } from '../config/duration.ts';
import { resolveChecks, type ResolvedChecks } from './checks.ts';
import { checkEvidence, problemEvidence, rolloutEvidence } from './evidence.ts';
import { advance } from './measure.ts';
import { Providers } from './providers/registry.ts';
import type { ProviderContext } from './providers/types.ts';
import { rolloutOf, type Lookup, type ObjectRefLike, type Rollout } from './rollout.ts';
import type { Measurement } from './types.ts';

export { ANALYSIS_API_VERSION, ANALYSIS_KIND } from './evidence.ts';
export type { Lookup, ObjectRefLike } from './rollout.ts';

export interface AnalysisResult {
  /** one per check (or one for the rollout when no check can run yet) */
  evidence: Evidence[];
  /** ms: the earliest next measurement of a check that has not concluded */
  nextAt?: number;
  /** the rollout the checks measure */
  rollout?: string;
  /** queries sent by this update */
  queries: number;
}

/** A target's analysis before its first update: its checks have not been measured yet (progressing, never healthy). */
export function notYetAnalysed(target: ResolvedTarget): AnalysisResult {
  const w = target.analysis!.workload;
  return { evidence: [rolloutEvidence(w, 'waiting', `metric checks of ${w.kind} ${w.namespace ? `${w.namespace}/` : ''}${w.name} not measured yet`)], queries: 0 };
}

export interface AnalysisContext {
  config: Pick<Config, 'analysis'>;
  /** reads what the door did not observe: the cluster (undefined: a snapshot, nothing more to read) */
  read?: Lookup;
  provider: ProviderContext;
}

export interface AnalysisSession {
  /** takes the measurements due at `now` and returns the target's analysis evidence */
  update(observed: Observed[], now: number): Promise<AnalysisResult>;
  /** the result of the last update */
  readonly last: AnalysisResult | undefined;
}

function keyOf(ref: ObjectRefLike): string {
  return `${groupKind(ref.apiVersion, ref.kind)}|${ref.namespace ?? ''}|${ref.name}`;
}

/**
 * The observed objects by key, built once per observation (many targets' sessions share one list);
 * by identity: a snapshot's objects are parsed only when found (observe/snapshot.ts).
 */
const indexes = new WeakMap<Observed[], Map<string, Observed>>();
function indexOf(observed: Observed[]): Map<string, Observed> {
  let index = indexes.get(observed);
  if (!index) {
    index = new Map(observed.map((o) => [observedKey(o), o]));
    indexes.set(observed, index);
  }
  return index;
}

/** Providers for a context: one instance per provider and address, shared by its sessions. */
export function providersFor(ctx: AnalysisContext): Providers {
  const p = ctx.config.analysis?.prometheus;
  return new Providers({
    prometheus: p ? { ...(p.address ? { address: p.address } : {}), ...(p.timeout ? { timeoutMs: parseDuration(p.timeout)! } : {}), ...(p.headers ? { headers: p.headers } : {}), ...(p.auth ? { auth: p.auth } : {}) } : undefined,
  }, ctx.provider);
}

export function createAnalysisSession(target: ResolvedTarget, ctx: AnalysisContext, providers: Providers = providersFor(ctx)): AnalysisSession {
  const analysis = target.analysis;
  if (!analysis) throw new Error(`target ${target.name} has no analysis`);
  // objects read beyond what was observed (the new ReplicaSet, templates): once per rollout, kept
  const read = new Map<string, Promise<KubeObject | undefined>>();
  let current: { rollout: Rollout; checks: ResolvedChecks; measurements: Map<string, Measurement[]> } | undefined;
  let last: AnalysisResult | undefined;

  return {
    get last() {
      return last;
    },
    async update(observed, now) {
      const index = indexOf(observed);
      const lookup: Lookup = async (ref, opts) => {
        const seen = index.get(keyOf(ref))?.object;
        if (seen) return seen;
        if (!ctx.read || opts?.observedOnly) return undefined;
        const key = keyOf(ref);
        let p = read.get(key);
        if (!p) {
          p = ctx.read(ref);
          read.set(key, p);
          // a failed read is tried again next time
          p.catch(() => read.delete(key));
        }
        return p;
      };
      const workload = analysis.workload;
      const object = index.get(keyOf(workload))?.object;
      if (!object) {
        last = { evidence: [rolloutEvidence(workload, 'missing', `${workload.kind} ${workload.namespace ? `${workload.namespace}/` : ''}${workload.name} was not observed: no rollout to analyse`)], queries: 0 };
        return last;
      }
      let state;
      try {
        state = await rolloutOf(object, target.name, lookup);
      } catch (error) {
        if (!(error instanceof RemoteError)) throw error;
        last = { evidence: [{ ...rolloutEvidence(workload, 'unknown', `the rollout of ${workload.kind} ${workload.name} cannot be read: ${error.message}`), problem: { code: 3, message: error.message } }], queries: 0 };
        return last;
      }
      if ('waiting' in state) {
        last = { evidence: [rolloutEvidence(workload, 'waiting', state.waiting)], queries: 0 };
        return last;
      }
      if ('unknown' in state) {
        last = { evidence: [rolloutEvidence(workload, 'unknown', state.unknown)], queries: 0 };
        return last;
      }
      const rollout = state.rollout;
      if (current?.rollout.key !== rollout.key) {
        // a new rollout: a new analysis (templates read again, measurements from scratch); keep only this rollout's reads
        for (const k of [...read.keys()]) if (!k.startsWith('apps/ReplicaSet|') && !k.startsWith('apps/ControllerRevision|')) read.delete(k);
        current = { rollout, checks: await resolveChecks(analysis, rollout.facts, lookup), measurements: new Map() };
        // a template the cluster could not give is read again on the next update
        if (current.checks.problems.some((p) => p.code === 3)) {
          const checks = current.checks;
          current = undefined;
          last = { evidence: checks.problems.map((p) => problemEvidence(p, workload.namespace)), rollout: rollout.key, queries: 0 };
          return last;
        }
      }
      const evidence: Evidence[] = current.checks.problems.map((p) => problemEvidence(p, workload.namespace));
      let nextAt: number | undefined;
      let queries = 0;
      const windowEnd = rollout.start + analysis.windowMs;
      for (const spec of current.checks.specs) {
        let provider;
        try {
          provider = providers.get(spec.provider, `${spec.source} ${spec.name}`);
        } catch (error) {
          evidence.push(problemEvidence({ name: spec.name, source: spec.source, message: (error as Error).message, code: 2 }, workload.namespace));
          continue;
        }
        const before = current.measurements.get(spec.name) ?? [];
        const progress = await advance({ spec, provider, start: rollout.start, now, windowEnd, measurements: before });
        queries += (progress.measurements.length - before.length) * spec.queries.length + (progress.unreachable ? 1 : 0);
        current.measurements.set(spec.name, progress.measurements);
        if (progress.nextAt !== undefined && (nextAt === undefined || progress.nextAt < nextAt)) nextAt = progress.nextAt;
        evidence.push(checkEvidence(spec, progress, rollout, now));
      }
      last = { evidence, ...(nextAt !== undefined ? { nextAt } : {}), rollout: rollout.key, queries };
      return last;
    },
  };
}

export interface AnalyseOptions extends AnalysisContext {
  targets: ResolvedTarget[];
  observed: Observed[];
  now: Date;
  /** targets analysed at once (their queries run in parallel) */
  concurrency?: number;
}

/** A one-shot analysis of the targets that have checks: every measurement due by `now`. */
export async function analyseTargets(opts: AnalyseOptions): Promise<Map<string, AnalysisResult>> {
  const out = new Map<string, AnalysisResult>();
  const providers = providersFor(opts);
  const todo = opts.targets.filter((t) => t.analysis);
  let next = 0;
  const worker = async () => {
    while (next < todo.length) {
      const target = todo[next++]!;
      out.set(target.name, await createAnalysisSession(target, opts, providers).update(opts.observed, opts.now.getTime()));
    }
  };
  await Promise.all(Array.from({ length: Math.min(opts.concurrency ?? 8, todo.length) }, worker));
  return out;
}

/** The objects a target's analysis reads besides its resources (for RBAC and list-once readers): templates and the Canary it names. */
export function analysisObjects(target: ResolvedTarget): ObjectRefLike[] {
  const a = target.analysis;
  if (!a) return [];
  const ns = a.workload.namespace;
  const refs: ObjectRefLike[] = [a.workload];
  const argoNs = a.argo?.namespace ?? ns;
  for (const t of a.argo?.templates ?? []) refs.push(t.clusterScope ? { apiVersion: 'argoproj.io/v1alpha1', kind: 'ClusterAnalysisTemplate', name: t.templateName } : { apiVersion: 'argoproj.io/v1alpha1', kind: 'AnalysisTemplate', ...(argoNs ? { namespace: argoNs } : {}), name: t.templateName });
  for (const t of a.argo?.analysisTemplates ?? []) refs.push(t.kind === 'ClusterAnalysisTemplate' ? { apiVersion: 'argoproj.io/v1alpha1', kind: 'ClusterAnalysisTemplate', name: t.name } : { apiVersion: 'argoproj.io/v1alpha1', kind: 'AnalysisTemplate', ...(argoNs ? { namespace: argoNs } : {}), name: t.name });
  for (const m of a.flagger?.metrics ?? []) if (m.templateRef) refs.push({ apiVersion: 'flagger.app/v1beta1', kind: 'MetricTemplate', ...(m.templateRef.namespace || ns ? { namespace: m.templateRef.namespace || ns } : {}), name: m.templateRef.name });
  if (a.canary) {
    const canaryNs = a.canary.namespace ?? ns;
    refs.push({ apiVersion: 'flagger.app/v1beta1', kind: 'Canary', ...(canaryNs ? { namespace: canaryNs } : {}), name: a.canary.name });
    // the Canary names its MetricTemplates: those in its own namespace are known to be read (others: docs/metrics.md)
    refs.push({ apiVersion: 'flagger.app/v1beta1', kind: 'MetricTemplate', ...(canaryNs ? { namespace: canaryNs } : {}), name: '*' });
  }
  return refs;
}

/** The kinds a target's analysis may read by name at run time (for RBAC): the rollout's ReplicaSet or ControllerRevision. */
export function rolloutKinds(target: ResolvedTarget): ObjectRefLike[] {
  const a = target.analysis;
  if (!a) return [];
  const kind = a.workload.kind === 'StatefulSet' ? 'ControllerRevision' : 'ReplicaSet';
  return [{ apiVersion: 'apps/v1', kind, ...(a.workload.namespace ? { namespace: a.workload.namespace } : {}), name: '*' }];
}
