/**
 * Flagger's analysis semantics, for a Canary's `spec.analysis` (read from a Canary, or written in
 * lastgood.yaml) with its MetricTemplates. Each rule cites the upstream file it follows
 * (github.com/fluxcd/flagger at 15bd6ad555e6):
 *
 * - a metric's value: pkg/metrics/providers/prometheus.go:106 RunQuery: the last sample of the
 *   vector; no sample or NaN is ErrNoValuesFound (:170); a range (matrix) ErrMultipleValuesReturned (:158);
 * - its judgement: pkg/controller/scheduler_metrics.go:329-345 (runMetricChecks): below
 *   `thresholdRange.min` or above `thresholdRange.max` halts; without a range, above the deprecated
 *   `threshold` halts; the first metric that halts ends the tick (:271-350);
 * - the analysis: each tick (`analysis.interval`, default 60 s, at least 10 s:
 *   pkg/apis/flagger/v1beta1/canary.go:637 GetAnalysisInterval) runs every metric; a halted tick is
 *   one failed check; `analysis.threshold` failed checks (default 1, canary.go:655) roll back
 *   (pkg/controller/scheduler.go:430);
 * - the query: pkg/metrics/observers/render.go:28 RenderQuery, Go's text/template with
 *   missingkey=error over pkg/apis/flagger/v1beta1/metric.go:101 TemplateFunctions (name,
 *   namespace, target, service, ingress, route, interval, variables).
 *
 * Where lastgood decides differently, on purpose (the table in test/analysis-semantics.test.ts):
 * a query that cannot reach the provider counts as a failed check in Flagger (scheduler_metrics.go:322)
 * but is `unknown` for lastgood, which never reverts on a measurement it could not take; and "no
 * values found" (Flagger: "probably not receiving traffic", a failed check, :318) is inconclusive
 * for lastgood: the target is held and said so, not reverted.
 */
import { goDuration, goFloat } from './argo.ts';
import type { CheckSpec, Judge, MetricValue } from './types.ts';

/** canary.go:33 AnalysisInterval, :37 MetricInterval */
export const FLAGGER_ANALYSIS_INTERVAL_MS = 60_000;
export const FLAGGER_MIN_ANALYSIS_INTERVAL_MS = 10_000;
export const FLAGGER_METRIC_INTERVAL = '1m';

export interface FlaggerMetric {
  name: string;
  interval?: string;
  threshold?: number;
  thresholdRange?: { min?: number; max?: number };
  query?: string;
  templateRef?: { name: string; namespace?: string };
  templateVariables?: Record<string, string>;
}

/** A Canary's spec.analysis, the fields lastgood reads. */
export interface FlaggerAnalysis {
  interval?: string;
  threshold?: number;
  iterations?: number;
  maxWeight?: number;
  stepWeight?: number;
  stepWeights?: number[];
  metrics?: FlaggerMetric[];
}

/** metric.go:89 MetricTemplateModel */
export interface FlaggerModel {
  name: string;
  namespace: string;
  target: string;
  service: string;
  ingress: string;
  route: string;
  interval: string;
  variables: Record<string, string>;
}

/** The value RunQuery gives, or why it gives none. */
export function flaggerValue(value: MetricValue): { value: number } | { none: string } | { error: string } {
  if (value.type === 'matrix') return { error: 'multiple values returned (a range vector): Flagger reads one instant value' };
  if (value.type !== 'vector') return { error: `a ${value.type} result: Flagger reads an instant vector` };
  // the loop keeps the last sample (prometheus.go:155-168)
  const last = value.values.length ? value.values[value.values.length - 1]! : undefined;
  if (last === undefined || Number.isNaN(last)) return { none: last === undefined ? 'no values found' : 'no values found (NaN)' };
  return { value: last };
}

/** scheduler_metrics.go:329-345 for one metric. */
export function flaggerJudge(metric: Pick<FlaggerMetric, 'name' | 'threshold' | 'thresholdRange'>): Judge {
  return (answer) => {
    const v = flaggerValue(answer);
    if ('error' in v) return { phase: 'Error', message: `${metric.name}: ${v.error}` };
    if ('none' in v) return { phase: 'Inconclusive', message: `${metric.name}: ${v.none} (Flagger halts here, "probably not receiving traffic", and counts a failed check; lastgood holds instead)` };
    const val = v.value;
    const range = metric.thresholdRange;
    const shown = goFloat(val);
    if (range) {
      if (range.min !== undefined && val < range.min) return { phase: 'Failed', message: `${metric.name} ${shown} < ${range.min} (thresholdRange.min)` };
      if (range.max !== undefined && val > range.max) return { phase: 'Failed', message: `${metric.name} ${shown} > ${range.max} (thresholdRange.max)` };
      return { phase: 'Successful', message: `${metric.name} ${shown} within thresholdRange${range.min !== undefined ? ` min ${range.min}` : ''}${range.max !== undefined ? ` max ${range.max}` : ''}` };
    }
    const threshold = metric.threshold ?? 0;
    if (val > threshold) return { phase: 'Failed', message: `${metric.name} ${shown} > ${threshold} (threshold)` };
    return { phase: 'Successful', message: `${metric.name} ${shown} <= ${threshold} (threshold)` };
  };
}

export function describeThreshold(metric: Pick<FlaggerMetric, 'threshold' | 'thresholdRange'>): string {
  const r = metric.thresholdRange;
  if (r) return `thresholdRange {${[r.min !== undefined ? `min: ${r.min}` : '', r.max !== undefined ? `max: ${r.max}` : ''].filter(Boolean).join(', ')}}`;
  return `threshold ${metric.threshold ?? 0} (deprecated: a value above it halts)`;
}

/**
 * render.go:28 RenderQuery for the actions Flagger's templates use: `{{ name }}`, `{{ namespace }}`,
 * `{{ target }}`, `{{ service }}`, `{{ ingress }}`, `{{ route }}`, `{{ interval }}`,
 * `{{ variables.KEY }}` (with `{{-` / `-}}` trimming). A missing variable fails
 * (missingkey=error); any other template action is refused by name.
 */
export function renderFlaggerQuery(template: string, model: FlaggerModel): string {
  const fns: Record<string, string> = { name: model.name, namespace: model.namespace, target: model.target, service: model.service, ingress: model.ingress, route: model.route, interval: model.interval };
  let out = '';
  let i = 0;
  while (i < template.length) {
    const open = template.indexOf('{{', i);
    if (open < 0) {
      out += template.slice(i);
      break;
    }
    let text = template.slice(i, open);
    const close = template.indexOf('}}', open + 2);
    if (close < 0) throw new Error('template parsing failed: unclosed action');
    let action = template.slice(open + 2, close);
    if (action.startsWith('-') && /^-\s/.test(action)) {
      text = text.replace(/\s+$/, '');
      action = action.slice(1);
    }
    let trimRight = false;
    if (/\s-$/.test(action)) {
      trimRight = true;
      action = action.slice(0, -1);
    }
    out += text;
    const name = action.trim();
    const variable = /^variables\.([A-Za-z_][A-Za-z0-9_]*)$/.exec(name) ?? /^\(variables\)\.([A-Za-z_][A-Za-z0-9_]*)$/.exec(name);
    if (variable) {
      const value = model.variables[variable[1]!];
      if (value === undefined) throw new Error(`template excution failed: map has no entry for key "${variable[1]}"`);
      out += value;
    } else if (Object.hasOwn(fns, name)) {
      out += fns[name];
    } else {
      throw new Error(`template action {{${action}}} is not one Flagger's metric templates offer (name, namespace, target, service, ingress, route, interval, variables.KEY)`);
    }
    i = close + 2;
    if (trimRight) while (i < template.length && /\s/.test(template[i]!)) i++;
  }
  return out;
}

/** The number of ticks before Flagger would promote: iterations (blue/green, A/B), else the canary's weight steps. */
export function flaggerTicks(analysis: FlaggerAnalysis): number | undefined {
  if ((analysis.iterations ?? 0) > 0) return analysis.iterations;
  if (analysis.stepWeights?.length) return analysis.stepWeights.length;
  if ((analysis.stepWeight ?? 0) > 0) return Math.ceil((analysis.maxWeight && analysis.maxWeight > 0 ? analysis.maxWeight : 100) / analysis.stepWeight!);
  return undefined;
}

/** Schedule and limits of a Flagger analysis: a tick every interval (the first one interval after the start), threshold failed checks. */
export function flaggerScheduleAndLimits(analysis: FlaggerAnalysis): Pick<CheckSpec, 'schedule' | 'limits'> {
  let intervalMs = goDuration(analysis.interval, 'analysis.interval') ?? FLAGGER_ANALYSIS_INTERVAL_MS;
  if (intervalMs < FLAGGER_MIN_ANALYSIS_INTERVAL_MS) intervalMs = FLAGGER_MIN_ANALYSIS_INTERVAL_MS;
  const threshold = (analysis.threshold ?? 0) > 0 ? analysis.threshold! : 1;
  const count = flaggerTicks(analysis);
  return {
    // a halted tick does not advance the weight or the iterations (scheduler.go:455-466): only passing ticks count
    schedule: { initialDelayMs: intervalMs, intervalMs, errorRetryMs: intervalMs, ...(count !== undefined ? { count, countSuccessfulOnly: true } : {}) },
    // `threshold` failed checks roll back: more than threshold-1; an error or no values ends the check (see the header)
    limits: { failureLimit: threshold - 1, inconclusiveLimit: 0, consecutiveErrorLimit: 0, consecutiveSuccessLimit: 0 },
  };
}
