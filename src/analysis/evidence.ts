/**
 * A check's state as evidence of the target's verdict (decide/verdict.ts verdictFor), one per
 * check, as `lastgood.dev/Analysis <namespace>/<check>`:
 *
 * | check                        | evidence                                                          |
 * |------------------------------|-------------------------------------------------------------------|
 * | Failed                       | failed, class analysis, the engine's final verdict (terminal)     |
 * | Successful                   | healthy                                                           |
 * | Pending, Running             | progressing, since the last measurement (each one is progress)    |
 * | Inconclusive                 | suspended: held; a person decides (lastgood reverts only a failure) |
 * | Error, provider unreachable, | unknown: lastgood never reverts on what it could not measure       |
 * | not evaluable                |                                                                   |
 *
 * A failed check carries the images of the revision the window started for: locate finds the
 * commit that introduced them, as for any failing workload.
 */
import type { AnalysisDetail, Evidence } from '../decide/types.ts';
import { formatDuration } from '../config/duration.ts';
import { tally } from './argo.ts';
import type { CheckProblem } from './checks.ts';
import type { CheckProgress } from './measure.ts';
import type { Rollout } from './rollout.ts';
import type { CheckSpec } from './types.ts';

export const ANALYSIS_API_VERSION = 'lastgood.dev/v1alpha1';
export const ANALYSIS_KIND = 'Analysis';

const iso = (ms: number) => new Date(ms).toISOString();

function base(namespace: string | undefined, name: string, source: string): Pick<Evidence, 'apiVersion' | 'kind' | 'groupKind' | 'namespace' | 'name' | 'source'> {
  return { apiVersion: ANALYSIS_API_VERSION, kind: ANALYSIS_KIND, groupKind: `lastgood.dev/${ANALYSIS_KIND}`, ...(namespace ? { namespace } : {}), name, source };
}

function rolloutDetail(r: Rollout): NonNullable<AnalysisDetail['rollout']> {
  return { workload: `${r.workload.kind} ${r.workload.namespace ? `${r.workload.namespace}/` : ''}${r.workload.name}`, revision: r.facts.revision, start: iso(r.start), startedBy: r.startedBy };
}

export function checkEvidence(spec: CheckSpec, progress: CheckProgress, rollout: Rollout, now: number): Evidence {
  const t = tally(progress.measurements);
  const last = progress.measurements[progress.measurements.length - 1];
  const phase = progress.unreachable ? 'Unreachable' : progress.phase;
  const detail: AnalysisDetail = {
    check: spec.name,
    source: spec.source,
    semantics: spec.semantics,
    phase,
    provider: spec.provider.name,
    queries: spec.queries.map((q) => ({ name: q.name, query: q.query, condition: q.condition })),
    rollout: rolloutDetail(rollout),
    measurements: progress.measurements.slice(-10).map((m) => ({ at: iso(m.at), phase: m.phase, value: m.value, message: m.message })),
    taken: t.count + t.error,
    failed: t.failed,
    inconclusive: t.inconclusive,
    errors: t.error,
    ...(spec.schedule.count !== undefined ? { count: spec.schedule.count } : {}),
    ...(progress.nextAt !== undefined ? { nextAt: iso(progress.nextAt) } : {}),
  };
  const e = { ...base(rollout.workload.namespace, spec.name, spec.source), analysis: detail };
  const what = `${spec.name} (${spec.source}) for ${rollout.facts.revision}`;
  const lastText = last ? `; last measurement at ${iso(last.at)}: ${last.value || 'no value'} (${last.message})` : '';
  const query = spec.queries.length === 1 ? `; query: ${oneLine(spec.queries[0]!.query)}; ${spec.queries[0]!.condition}` : `; ${spec.queries.map((q) => `${q.name}: ${q.condition}`).join('; ')}`;
  const notes = spec.notes?.length ? { notes: spec.notes } : {};
  const approx = rollout.exact ? '' : ` (window start approximate: ${rollout.startedBy})`;
  const since = last ? iso(last.at) : iso(rollout.start);

  if (progress.unreachable) {
    return {
      ...e, ...notes, state: 'unknown', reason: `${capitalise(spec.provider.name)}Unreachable`,
      message: `${what}: ${progress.unreachable}: the check could not be evaluated (unknown, never failed; tried again ${progress.nextAt ? `at ${iso(progress.nextAt)}` : 'on the next run'})`,
      problem: { code: 3, message: progress.unreachable },
    };
  }
  if (spec.dryRun && (progress.phase === 'Failed' || progress.phase === 'Inconclusive' || progress.phase === 'Error')) {
    return { ...e, ...notes, state: 'healthy', reason: 'AnalysisDryRun', message: `${what}: dry run (spec.dryRun): would be ${progress.phase}: ${progress.message}${lastText}`, since };
  }
  switch (progress.phase) {
    case 'Failed': {
      const failedAt = [...progress.measurements].reverse().find((m) => m.phase === 'Failed')?.at ?? last?.at ?? now;
      return {
        ...e, ...notes, state: 'failed', reason: 'AnalysisFailed', failureClass: 'analysis', terminal: true, since: iso(failedAt),
        message: `${what} failed: ${progress.message}${lastText}${query}${approx}`,
        ...(rollout.images.length ? { attempted: { images: rollout.images } } : {}),
      };
    }
    case 'Successful':
      return { ...e, ...notes, state: 'healthy', reason: 'AnalysisSuccessful', message: `${what} passed: ${progress.message}${lastText}`, since };
    case 'Inconclusive':
      return {
        ...e, ...notes, state: 'suspended', reason: 'AnalysisInconclusive', since,
        message: `held: ${what} is inconclusive, a person decides (lastgood reverts only a failed check): ${progress.message}${lastText}${query}`,
      };
    case 'Error': {
      // Argo Rollouts ends the run in Error (analysis.go assessMetricFailureInconclusiveOrError): the
      // check can never conclude as it is (a query the provider refuses, bad_data). Not progressing, not
      // failed: its own exit code, so a CI job does not stay green on a check that cannot run.
      const said = `${what} ended in error: ${progress.message}${lastText}${query}`;
      return {
        ...e, ...notes, state: 'unknown', reason: 'AnalysisError',
        message: `${said}${spec.semantics === 'argo' ? ' (Argo Rollouts ends the analysis in Error here; lastgood never reverts on measurements it could not take)' : ''}`,
        problem: { code: 4, message: `${spec.name} (${spec.source}) ended in error: ${progress.message}${last?.message ? `; last: ${last.message}` : ''}` },
      };
    }
    default: {
      const count = spec.schedule.count !== undefined ? ` of ${spec.schedule.count}` : '';
      const next = progress.nextAt !== undefined ? `; next measurement ${progress.nextAt <= now ? 'due now' : `at ${iso(progress.nextAt)} (in ${formatDuration(progress.nextAt - now)})`}` : '';
      return {
        ...e, ...notes, state: 'progressing', reason: progress.phase === 'Pending' ? 'AnalysisPending' : 'AnalysisRunning', since,
        message: `${what}: not concluded yet: ${t.count}${count} measurement${t.count === 1 && !count ? '' : 's'} taken, ${t.failed} failed, ${t.inconclusive} inconclusive${t.error ? `, ${t.error} in error (last: ${[...progress.measurements].reverse().find((m) => m.phase === 'Error')?.message ?? '?'}; ${spec.limits.consecutiveErrorLimit} in a row allowed)` : ''}${next}${approx}`,
      };
    }
  }
}

export function problemEvidence(p: CheckProblem, namespace: string | undefined): Evidence {
  return { ...base(namespace, p.name, p.source), state: 'unknown', reason: 'AnalysisNotEvaluated', message: `${p.name} (${p.source}) cannot be evaluated: ${p.message}`, problem: { code: p.code, message: p.message } };
}

/** The target's analysis before any check can run: the workload is missing, or its rollout is not known yet. */
export function rolloutEvidence(workload: { kind: string; namespace?: string; name: string }, state: 'missing' | 'waiting' | 'unknown', message: string): Evidence {
  const e = base(workload.namespace, workload.name, 'analysis');
  if (state === 'waiting') return { ...e, state: 'progressing', reason: 'RolloutPending', message };
  return { ...e, state: 'unknown', reason: state === 'missing' ? 'NotFound' : 'RolloutUnknown', message };
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

function capitalise(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
