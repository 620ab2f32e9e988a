/**
 * Taking a check's measurements: at the instants its schedule gives, relative to the rollout's
 * start, each one a query evaluated by the provider *at that instant*. A measurement is the same
 * whoever takes it and whenever: the controller takes each as its time comes; a one-shot `check`
 * or `run --now T` takes, at once, every one due by T (Prometheus answers for past instants from
 * its history). So a one-shot run concludes what the controller would have concluded by T, and
 * says what it could not conclude yet.
 *
 * The instants follow Argo Rollouts (analysis/analysis.go:176 generateMetricTasks): the first at
 * start + initialDelay, each next one `interval` after the last, or 10 s after one in Error; none
 * after the check completed (assessMetric). A check without a count ends with its window.
 */
import { RemoteError } from '../errors.ts';
import { assessMetric, goFloat } from './argo.ts';
import type { MetricProvider } from './providers/types.ts';
import { QueryRejected } from './providers/types.ts';
import { completed, type CheckPhase, type CheckSpec, type Measurement } from './types.ts';

/** At most this many measurements per check (a one-shot run long after a fast check's start, or a template's huge count). */
export const MAX_MEASUREMENTS = 1000;

export interface CheckProgress {
  measurements: Measurement[];
  phase: CheckPhase;
  /** why this phase (Argo's words: "failed (2) > failureLimit (1)") */
  message: string;
  /** ms: the next measurement is due then (the check is not complete) */
  nextAt?: number;
  /** the provider could not be reached: the check is unknown until it can (retried at nextAt) */
  unreachable?: string;
}

/** When the next measurement is due, after these (analysis.go:229-244). */
export function nextMeasurementAt(spec: Pick<CheckSpec, 'schedule'>, start: number, measurements: readonly Measurement[]): number {
  const last = measurements[measurements.length - 1];
  if (!last) return start + spec.schedule.initialDelayMs;
  return last.at + (last.phase === 'Error' ? spec.schedule.errorRetryMs : (spec.schedule.intervalMs ?? spec.schedule.errorRetryMs));
}

/** One measurement at `at`: every query of the check in order; the first that is not Successful decides (Flagger's tick; Argo has one query). */
export async function measureOnce(spec: CheckSpec, provider: MetricProvider, at: number): Promise<Measurement> {
  const values: string[] = [];
  let last: Measurement | undefined;
  for (const q of spec.queries) {
    let judged: { phase: Measurement['phase']; message: string };
    let shown: string;
    try {
      const value = await provider.query(q.query, at);
      shown = value.type === 'scalar' ? goFloat(value.value) : value.type === 'string' ? JSON.stringify(value.value) : `[${value.values.map(goFloat).join(',')}]`;
      judged = q.judge(value);
    } catch (error) {
      if (error instanceof QueryRejected) {
        shown = '';
        judged = { phase: 'Error', message: error.message };
      } else throw error;
    }
    values.push(spec.queries.length > 1 ? `${q.name}=${shown}` : shown);
    last = { at, phase: judged.phase, value: values.join(' '), message: judged.message };
    if (judged.phase !== 'Successful') return last;
  }
  return last ?? { at, phase: 'Error', value: '', message: 'no query' };
}

/**
 * Takes the measurements due by `now` (after those already taken), stopping at the first that
 * completes the check, and says where the check stands. `windowEnd` ends a check without a count.
 */
export async function advance(opts: {
  spec: CheckSpec;
  provider: MetricProvider;
  start: number;
  now: number;
  windowEnd: number;
  measurements: readonly Measurement[];
}): Promise<CheckProgress> {
  const { spec, provider, start, now } = opts;
  const measurements = [...opts.measurements];
  const windowEnd = spec.schedule.count === undefined ? opts.windowEnd : Infinity;
  for (;;) {
    let assessed = assessMetric(spec, measurements, false);
    if (completed(assessed.phase)) return { measurements, ...assessed };
    const next = nextMeasurementAt(spec, start, measurements);
    if (next > windowEnd) {
      assessed = assessMetric(spec, measurements, true);
      return { measurements, ...assessed };
    }
    if (next > now) return { measurements, ...assessed, nextAt: next };
    if (measurements.length >= MAX_MEASUREMENTS) {
      return { measurements, phase: 'Error', message: `more than ${MAX_MEASUREMENTS} measurements would be due: lastgood stops here (a shorter window or a larger interval)` };
    }
    try {
      measurements.push(await measureOnce(spec, provider, next));
    } catch (error) {
      if (!(error instanceof RemoteError)) throw error;
      return { measurements, ...assessed, nextAt: Math.max(now, next) + spec.schedule.errorRetryMs, unreachable: error.message };
    }
  }
}
