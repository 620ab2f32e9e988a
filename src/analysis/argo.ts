/**
 * Argo Rollouts' analysis semantics, for the checks of lastgood.yaml and for AnalysisTemplates /
 * ClusterAnalysisTemplates (the format Kargo also uses for verification). Each rule cites the
 * upstream file it follows (github.com/argoproj/argo-rollouts at 9f8d111d8f8e):
 *
 * - a measurement's phase from its value: utils/evaluate/evaluate.go:18 EvaluateResult;
 * - a Prometheus answer as `result`: metricproviders/prometheus/prometheus.go:156 processResponse
 *   (a scalar is a number, a vector or matrix a list of numbers);
 * - a metric's phase from its measurements: analysis/analysis.go:579 assessMetricStatus and :658
 *   assessMetricFailureInconclusiveOrError (failureLimit, inconclusiveLimit, consecutiveErrorLimit
 *   with its default 4 from utils/defaults/defaults.go:37, consecutiveSuccessLimit, count);
 * - when measurements are taken: analysis/analysis.go:176 generateMetricTasks (initialDelay, then
 *   `interval` after the last one, 10 s after one in Error: DefaultErrorRetryInterval, :30);
 *   pkg/apis/rollouts/v1alpha1/analysis_types.go:159 EffectiveCount (no count and no interval: one
 *   measurement; an interval and no count: until the run ends, which for lastgood is the window);
 * - arguments: utils/template/template.go:52,70 ResolveArgs/ResolveQuotedArgs through
 *   utils/analysis/factory.go:112 ResolveMetricArgs; validity: factory.go:149 ValidateMetric.
 */
import { compile, evalCondition, ExprError, type Condition, type Value } from './expr.ts';
import type { CheckPhase, CheckSpec, Judge, Measurement, MeasurementPhase, MetricValue } from './types.ts';

/** analysis.go:30 */
export const DEFAULT_ERROR_RETRY_MS = 10_000;
/** utils/defaults/defaults.go:37 */
export const DEFAULT_CONSECUTIVE_ERROR_LIMIT = 4;

/** processResponse: what a condition sees as `result`, and the value as Argo prints it. */
export function argoResult(value: MetricValue): { result: Value; text: string } {
  switch (value.type) {
    case 'scalar':
      return { result: value.value, text: goFloat(value.value) };
    case 'vector':
    case 'matrix':
      return { result: value.values, text: `[${value.values.map(goFloat).join(',')}]` };
    case 'string':
      throw new ExprError('Prometheus metric type not supported');
  }
}

/** Go's strconv.FormatFloat(f, 'f', -1, 64) as Prometheus' SampleValue.String() prints it. */
export function goFloat(f: number): string {
  if (Number.isNaN(f)) return 'NaN';
  if (f === Infinity) return '+Inf';
  if (f === -Infinity) return '-Inf';
  if (Object.is(f, -0)) return '-0';
  const s = String(f);
  if (!/e/.test(s)) return s;
  // exponent notation: Go's 'f' format writes the digits out
  return f.toLocaleString('en-US', { useGrouping: false, maximumFractionDigits: 20 });
}

export interface Conditions {
  successCondition?: string;
  failureCondition?: string;
}

/**
 * evaluate.go:18 EvaluateResult: without conditions, Successful; with only a success condition,
 * a measurement that does not meet it Failed; with only a failure condition, one that does not
 * meet it Successful; with both, one that meets neither Inconclusive. An error in either
 * condition is an Error measurement, and says whether the result was empty.
 */
export function evaluateResult(result: Value, conditions: Conditions, compiled: { success?: Condition; failure?: Condition } = {}): { phase: MeasurementPhase; message: string } {
  let success = false;
  let failure = false;
  const evalOne = (which: 'successCondition' | 'failureCondition', source: string, c?: Condition): boolean => {
    try {
      return evalCondition(result, c ?? source);
    } catch (error) {
      const empty = result === null || (Array.isArray(result) && result.length === 0);
      throw new ExprError(empty
        ? `could not evaluate ${which} "${source}": metric result is nil or empty: no data returned from the metric provider`
        : `could not evaluate ${which} "${source}": ${(error as Error).message}`);
    }
  };
  try {
    if (conditions.successCondition) success = evalOne('successCondition', conditions.successCondition, compiled.success);
    if (conditions.failureCondition) failure = evalOne('failureCondition', conditions.failureCondition, compiled.failure);
  } catch (error) {
    return { phase: 'Error', message: (error as Error).message };
  }
  const s = conditions.successCondition;
  const f = conditions.failureCondition;
  if (!s && !f) return { phase: 'Successful', message: 'no condition: every measurement is successful' };
  const failureHeld = Boolean(f) && failure;
  if (s && !f) failure = !success;
  if (!s && f) success = !failure;
  if (failure) return { phase: 'Failed', message: failureHeld ? `failureCondition "${f}" is true` : `successCondition "${s}" is false` };
  if (!success) return { phase: 'Inconclusive', message: `neither successCondition "${s}" nor failureCondition "${f}" is true` };
  return { phase: 'Successful', message: s ? `successCondition "${s}" is true` : `failureCondition "${f}" is false` };
}

/** A judge for Prometheus answers with Argo's conditions (compiled once: a bad condition is refused when the check is set up). */
export function argoJudge(conditions: Conditions): Judge {
  const compiled = {
    ...(conditions.successCondition ? { success: compile(conditions.successCondition) } : {}),
    ...(conditions.failureCondition ? { failure: compile(conditions.failureCondition) } : {}),
  };
  return (value) => {
    let result: Value;
    try {
      result = argoResult(value).result;
    } catch (error) {
      return { phase: 'Error', message: (error as Error).message };
    }
    return evaluateResult(result, conditions, compiled);
  };
}

/** The counters Argo keeps per metric (MetricResult), from the measurements in order (analysis.go:384-405). */
export function tally(measurements: readonly Measurement[]) {
  const t = { count: 0, successful: 0, failed: 0, inconclusive: 0, error: 0, consecutiveError: 0, consecutiveSuccess: 0 };
  for (const m of measurements) {
    if (m.phase === 'Error') {
      t.error++;
      t.consecutiveError++;
      t.consecutiveSuccess = 0;
      continue;
    }
    t.count++;
    t.consecutiveError = 0;
    if (m.phase === 'Successful') {
      t.successful++;
      t.consecutiveSuccess++;
    } else {
      t.consecutiveSuccess = 0;
      if (m.phase === 'Failed') t.failed++;
      else t.inconclusive++;
    }
  }
  return t;
}

/**
 * analysis.go:579 assessMetricStatus (with :658): the phase of a metric from its measurements.
 * `terminating`: the run is ending (for lastgood: the window of a check without a count is over),
 * which makes a metric that has not failed Successful.
 */
export function assessMetric(spec: Pick<CheckSpec, 'schedule' | 'limits'>, measurements: readonly Measurement[], terminating: boolean): { phase: CheckPhase; message: string } {
  if (measurements.length === 0) {
    return terminating ? { phase: 'Successful', message: 'no measurement was due before the window ended' } : { phase: 'Pending', message: 'no measurement yet' };
  }
  const t = tally(measurements);
  const { failureLimit, inconclusiveLimit, consecutiveErrorLimit, consecutiveSuccessLimit } = spec.limits;
  // :658 — later checks override earlier ones, as upstream assigns them in this order
  let phase: CheckPhase | undefined;
  let message = '';
  if (failureLimit >= 0 && t.failed > failureLimit) {
    phase = 'Failed';
    message = `failed (${t.failed}) > failureLimit (${failureLimit})`;
  }
  if (t.inconclusive > inconclusiveLimit) {
    phase = 'Inconclusive';
    message = `inconclusive (${t.inconclusive}) > inconclusiveLimit (${inconclusiveLimit})`;
  }
  if (t.consecutiveError > consecutiveErrorLimit) {
    phase = 'Error';
    message = `consecutiveErrors (${t.consecutiveError}) > consecutiveErrorLimit (${consecutiveErrorLimit})`;
  }
  if (phase) return { phase, message };
  if (consecutiveSuccessLimit > 0 && t.consecutiveSuccess >= consecutiveSuccessLimit) {
    return { phase: 'Successful', message: `consecutiveSuccessLimit (${consecutiveSuccessLimit}) reached` };
  }
  const count = spec.schedule.count;
  if (count !== undefined && (spec.schedule.countSuccessfulOnly ? t.successful : t.count) >= count) {
    const failureApplicable = failureLimit >= 0;
    const successApplicable = consecutiveSuccessLimit > 0;
    if (failureApplicable && successApplicable) return { phase: 'Inconclusive', message: `count (${count}) reached: consecutiveSuccessLimit (${consecutiveSuccessLimit}) not reached and failureLimit (${failureLimit}) not violated` };
    if (successApplicable) return { phase: 'Failed', message: `count (${count}) reached: consecutiveSuccessLimit (${consecutiveSuccessLimit}) not reached` };
    return { phase: 'Successful', message: `count (${count}) reached: ${t.failed} failed, failureLimit (${failureLimit}) not exceeded` };
  }
  if (terminating) return { phase: 'Successful', message: `the window ended: ${t.count} measurement${t.count === 1 ? '' : 's'}, ${t.failed} failed, failureLimit (${failureLimit}) not exceeded` };
  return { phase: 'Running', message: `${t.count} measurement${t.count === 1 ? '' : 's'}${count !== undefined ? ` of ${count}` : ''}, ${t.failed} failed` };
}

/** An AnalysisTemplate metric as lastgood reads it (the fields of analysis_types.go Metric it supports). */
export interface ArgoMetric {
  name: string;
  interval?: string;
  initialDelay?: string;
  count?: number | string;
  successCondition?: string;
  failureCondition?: string;
  failureLimit?: number | string;
  inconclusiveLimit?: number | string;
  consecutiveErrorLimit?: number | string;
  consecutiveSuccessLimit?: number | string;
  provider?: Record<string, unknown>;
}

/** intstr.IntOrString.IntValue(): a number, or a string read with strconv.Atoi (0 when it does not parse). */
export function intValue(v: number | string | undefined): number | undefined {
  if (v === undefined) return undefined;
  if (typeof v === 'number') return Math.trunc(v);
  return /^[+-]?\d+$/.test(v.trim()) ? parseInt(v, 10) : 0;
}

const GO_UNIT_MS: Record<string, number> = { ns: 1e-6, us: 1e-3, 'µs': 1e-3, 'μs': 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Go's time.ParseDuration ("30s", "1.5m", "1h30m", "500ms"; no days), in ms. */
export function parseGoDuration(text: string): number | undefined {
  if (text === '0') return 0;
  const m = /^([+-]?)((?:(?:\d+\.?\d*|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+)$/.exec(text);
  if (!m) return undefined;
  let ms = 0;
  for (const part of m[2]!.matchAll(/(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)/g)) ms += Number(part[1]) * GO_UNIT_MS[part[2]!]!;
  return m[1] === '-' ? -ms : ms;
}

/** A metric's duration field (Argo's DurationString: time.ParseDuration). */
export function goDuration(text: string | undefined, field: string): number | undefined {
  if (text === undefined || text === '') return undefined;
  const ms = parseGoDuration(text);
  if (ms === undefined) throw new Error(`invalid ${field} string: time: invalid duration "${text}"`);
  return ms;
}

/**
 * A metric's schedule and limits, validated as factory.go:149 ValidateMetric does (its messages).
 * Throws Error with the upstream's message when the metric is invalid.
 */
export function argoScheduleAndLimits(metric: Omit<ArgoMetric, 'name' | 'provider'>): Pick<CheckSpec, 'schedule' | 'limits'> {
  const count = intValue(metric.count) ?? 0;
  const failureLimit = intValue(metric.failureLimit) ?? 0;
  const consecutiveSuccessLimit = intValue(metric.consecutiveSuccessLimit) ?? 0;
  const inconclusiveLimit = intValue(metric.inconclusiveLimit) ?? 0;
  const consecutiveErrorLimit = intValue(metric.consecutiveErrorLimit) ?? DEFAULT_CONSECUTIVE_ERROR_LIMIT;
  if (consecutiveSuccessLimit < 0) throw new Error('consecutiveSuccessLimit must be >= 0');
  if (failureLimit < -1) throw new Error('failureLimit must be >= 0, or -1 to be disabled');
  if (consecutiveSuccessLimit === 0 && failureLimit === -1) throw new Error('failureLimit and consecutiveSuccessLimit cannot both be disabled');
  if (inconclusiveLimit < 0) throw new Error('inconclusiveLimit must be >= 0');
  if (consecutiveErrorLimit < 0) throw new Error('consecutiveErrorLimit must be >= 0');
  if (count > 0) {
    if (failureLimit >= 0 && count < failureLimit + consecutiveSuccessLimit) throw new Error(`count (${count}) must be >= failureLimit + consecutiveSuccessLimit (${failureLimit} + ${consecutiveSuccessLimit}) if both >= 0`);
    if (failureLimit < 0 && count < consecutiveSuccessLimit) throw new Error('count must be >= consecutiveSuccessLimit');
    if (count < inconclusiveLimit) throw new Error('count must be >= inconclusiveLimit');
  }
  if (count > 1 && !metric.interval) throw new Error('interval must be specified when count > 1');
  const intervalMs = goDuration(metric.interval, 'interval');
  const initialDelayMs = goDuration(metric.initialDelay, 'initialDelay') ?? 0;
  if (intervalMs !== undefined && intervalMs <= 0) throw new Error('interval must be positive');
  // analysis_types.go:159 EffectiveCount
  const effective = count === 0 ? (metric.interval ? undefined : 1) : count;
  return {
    schedule: { initialDelayMs, ...(intervalMs !== undefined ? { intervalMs } : {}), errorRetryMs: DEFAULT_ERROR_RETRY_MS, ...(effective !== undefined ? { count: effective } : {}) },
    limits: { failureLimit, inconclusiveLimit, consecutiveErrorLimit, consecutiveSuccessLimit },
  };
}

/** A text for people: the conditions of a metric. */
export function describeConditions(c: Conditions): string {
  const parts = [c.successCondition ? `successCondition: ${c.successCondition}` : '', c.failureCondition ? `failureCondition: ${c.failureCondition}` : ''].filter(Boolean);
  return parts.length ? parts.join(', ') : 'no condition (every measurement is successful)';
}

export interface ArgoArgument {
  name: string;
  value?: string;
  valueFrom?: unknown;
}

/**
 * template.go:70 ResolveQuotedArgs over the metric's JSON (factory.go:112 ResolveMetricArgs):
 * every `{{args.NAME}}` (spaces allowed inside the braces) is replaced by the argument's value,
 * escaped as a JSON string's content; an argument without a value, or a tag that names none, fails.
 */
export function resolveMetricArgs<T>(metric: T, args: readonly ArgoArgument[]): T {
  const values = new Map<string, string>();
  for (const a of args) {
    if (a.value === undefined) throw new Error(`argument "${a.name}" was not supplied`);
    values.set(`args.${a.name}`, JSON.stringify(a.value).slice(1, -1));
  }
  let unresolved: string | undefined;
  const text = JSON.stringify(metric).replace(/\{\{(.*?)\}\}/g, (_, tag: string) => {
    const value = values.get(tag.trim());
    if (value === undefined) {
      unresolved ??= `failed to resolve {{${tag}}}`;
      return '';
    }
    return value;
  });
  if (unresolved) throw new Error(unresolved);
  return JSON.parse(text) as T;
}
