import test from 'ava';
import { argoResult, argoScheduleAndLimits, assessMetric, evaluateResult, resolveMetricArgs } from '../src/analysis/argo.ts';
import { flaggerJudge, flaggerScheduleAndLimits, renderFlaggerQuery } from '../src/analysis/flagger.ts';
import type { Value } from '../src/analysis/expr.ts';
import type { CheckPhase, Measurement, MeasurementPhase, MetricValue } from '../src/analysis/types.ts';

/**
 * lastgood judges metrics with the rules of the format they are written in. Each row below is a
 * condition and a value, what the upstream decides (its test or documentation cited: file and
 * line at argoproj/argo-rollouts 9f8d111d8f8e and fluxcd/flagger 15bd6ad555e6), and what lastgood
 * decides. Where lastgood decides differently, the row says so and why.
 *
 * lastgood's decisions: a Failed check is a failed verdict (revert, class analysis); Successful is
 * healthy; Inconclusive is held (a person decides); Error / unreachable is unknown (never a revert).
 */

const LASTGOOD: Record<CheckPhase, string> = {
  Successful: 'healthy', Failed: 'revert', Inconclusive: 'held', Error: 'unknown', Running: 'wait', Pending: 'wait',
};

// ---- one measurement: Argo Rollouts' EvaluateResult (utils/evaluate/evaluate.go:18)

const measurementRows: Array<{ source: string; success?: string; failure?: string; result: Value; argo: MeasurementPhase; message?: RegExp }> = [
  { source: 'evaluate_test.go:18 TestEvaluateResultWithSuccess', success: 'true', failure: 'false', result: true, argo: 'Successful' },
  { source: 'evaluate_test.go:29 TestEvaluateResultWithFailure', success: 'true', failure: 'true', result: true, argo: 'Failed' },
  { source: 'evaluate_test.go:41 TestEvaluateResultInconclusive', success: 'false', failure: 'false', result: true, argo: 'Inconclusive' },
  { source: 'evaluate_test.go:52 …NoSuccessConditionAndNotFailing', failure: 'false', result: true, argo: 'Successful' },
  { source: 'evaluate_test.go:63 …NoFailureConditionAndNotSuccessful', success: 'false', result: true, argo: 'Failed' },
  { source: 'evaluate_test.go:74 …NoFailureConditionAndNoSuccessCondition', result: true, argo: 'Successful' },
  { source: 'evaluate_test.go:85 …WithErrorOnSuccessCondition', success: 'a == true', failure: 'true', result: true, argo: 'Error', message: /could not evaluate successCondition "a == true": unknown name a/ },
  { source: 'evaluate_test.go:96 …WithErrorOnFailureCondition', success: 'true', failure: 'a == true', result: true, argo: 'Error', message: /failureCondition/ },
  { source: 'evaluate_test.go:365 …ErrorMessageWithEmptySlice', success: 'result[0] >= 0.95', result: [], argo: 'Error', message: /metric result is nil or empty/ },
  { source: 'evaluate_test.go:354 …ErrorMessageWithNilResult', success: 'result[0] >= 0.95', result: null, argo: 'Error', message: /nil or empty/ },
  { source: 'evaluate_test.go:119 TestErrorWithNonBoolReturn', success: '1', result: true, argo: 'Error', message: /expected bool, but got int/ },
  { source: 'evaluate_test.go:125 TestErrorWithInvalidReference', success: 'invalidVariable', result: true, argo: 'Error', message: /unknown name invalidVariable/ },
  { source: 'evaluate_test.go:131 TestEvaluateArray', success: 'all(result.service_apdex.values.values, {# > 1})', result: { service_apdex: { label: null, values: { values: [2, 2] } } }, argo: 'Successful' },
  { source: 'evaluate_test.go:148 TestEvaluateInOperator', success: '2 in result', result: [2, 2], argo: 'Successful' },
  { source: 'evaluate_test.go:155 TestEvaluateFloat64', success: 'result > 1', result: 5, argo: 'Successful' },
  { source: 'evaluate_test.go:173 TestEvaluateAsInt ("1")', success: 'asInt(result) == 1', result: '1', argo: 'Successful' },
  { source: 'evaluate_test.go:173 TestEvaluateAsInt (1.123)', success: 'asInt(result) == 1', result: 1.123, argo: 'Successful' },
  { source: 'evaluate_test.go:167 TestEvaluateAsIntPanic', success: 'asInt(result) == 1.1', result: '1.1', argo: 'Error' },
  { source: 'evaluate_test.go:190 TestEvaluateAsFloatError (NotANum)', success: 'asFloat(result) == 1.1', result: 'NotANum', argo: 'Error', message: /invalid syntax/ },
  { source: 'evaluate_test.go:190 TestEvaluateAsFloatError (string)', success: 'asFloat(result) == "1.1"', result: '1.1', argo: 'Error', message: /mismatched types float64 and string/ },
  { source: 'evaluate_test.go:207 TestEvaluateAsFloat', success: 'asFloat(result) >= 1.1', result: '1.1', argo: 'Successful' },
  { source: 'docs/features/analysis.md:1274 NaN successful', success: 'isNaN(result) || result >= 0.95', result: NaN, argo: 'Successful' },
  { source: 'docs/features/analysis.md:1294 NaN inconclusive', success: 'result >= 0.95', failure: 'result < 0.95', result: NaN, argo: 'Inconclusive' },
  { source: 'docs/features/analysis.md:1315 NaN failed', success: 'result >= 0.95', result: NaN, argo: 'Failed' },
  { source: 'docs/features/analysis.md:1337 +Inf successful', success: 'result >= 0.95', result: Infinity, argo: 'Successful' },
  { source: 'docs/features/analysis.md:1357 +Inf failed', failure: 'isInf(result)', result: Infinity, argo: 'Failed' },
  { source: 'docs/features/analysis.md:1385 empty successful', success: 'len(result) == 0 || result[0] >= 0.95', result: [], argo: 'Successful' },
  { source: 'docs/features/analysis.md:1405 empty failed', success: 'len(result) > 0 && result[0] >= 0.95', result: [], argo: 'Failed' },
  { source: 'docs/features/analysis.md:1432 Datadog nil with default()', success: 'default(result, 0) < 0.05', result: null, argo: 'Successful' },
  { source: 'docs/features/analysis.md:85 success-rate 0.97', success: 'result[0] >= 0.95', result: [0.97], argo: 'Successful' },
  { source: 'docs/features/analysis.md:85 success-rate 0.92', success: 'result[0] >= 0.95', result: [0.92], argo: 'Failed' },
  { source: 'docs/features/analysis.md:1180 inconclusive band', success: 'result[0] >= 0.90', failure: 'result[0] < 0.50', result: [0.7], argo: 'Inconclusive' },
  { source: 'docs/features/analysis.md:789 failureCondition', failure: 'result[0] >= 10', result: [12], argo: 'Failed' },
  { source: 'docs/features/analysis.md:789 failureCondition', failure: 'result[0] >= 10', result: [3], argo: 'Successful' },
];

/** A value as Go prints it in a title (JSON has no NaN or Infinity). */
const shown = (v: Value): string => (typeof v === 'number' ? (Number.isNaN(v) ? 'NaN' : v === Infinity ? '+Inf' : String(v)) : Array.isArray(v) ? `[${v.map(shown).join(',')}]` : JSON.stringify(v));

for (const row of measurementRows) {
  test(`Argo Rollouts measurement: ${row.source}: ${row.success ?? '-'} / ${row.failure ?? '-'} on ${shown(row.result)} → ${row.argo}`, (t) => {
    const got = evaluateResult(row.result, { ...(row.success ? { successCondition: row.success } : {}), ...(row.failure ? { failureCondition: row.failure } : {}) });
    t.is(got.phase, row.argo, got.message);
    if (row.message) t.regex(got.message, row.message);
  });
}

test('a Prometheus answer is `result` as Argo Rollouts makes it (prometheus.go:156 processResponse): a scalar is a number, a vector or a matrix a list', (t) => {
  t.deepEqual(argoResult({ type: 'scalar', value: 0.5 }), { result: 0.5, text: '0.5' });
  t.deepEqual(argoResult({ type: 'vector', values: [0.08, 0.01] }), { result: [0.08, 0.01], text: '[0.08,0.01]' });
  t.deepEqual(argoResult({ type: 'matrix', values: [1, 2, 3] }), { result: [1, 2, 3], text: '[1,2,3]' });
  t.deepEqual(argoResult({ type: 'vector', values: [NaN, Infinity] }).text, '[NaN,+Inf]');
  t.throws(() => argoResult({ type: 'string', value: 'x' }), { message: /not supported/ });
});

// ---- a metric over its measurements: analysis.go:579 assessMetricStatus, :658 assessMetricFailureInconclusiveOrError

const m = (phases: string, step = 60_000): Measurement[] =>
  [...phases].map((p, i) => ({ at: i * step, phase: ({ S: 'Successful', F: 'Failed', I: 'Inconclusive', E: 'Error' } as const)[p as 'S']!, value: '', message: '' }));

const metricRows: Array<{ source: string; metric: Parameters<typeof argoScheduleAndLimits>[0]; phases: string; terminating?: boolean; argo: CheckPhase; message?: RegExp; lastgood?: string }> = [
  { source: 'analysis.go:664 failed > failureLimit', metric: { interval: '1m', count: 5, failureLimit: 1 }, phases: 'FF', argo: 'Failed', message: /failed \(2\) > failureLimit \(1\)/ },
  { source: 'analysis.go:664 failureLimit 1 allows one', metric: { interval: '1m', count: 5, failureLimit: 1 }, phases: 'FS', argo: 'Running' },
  { source: 'analysis.go:615 count reached, failures within the limit', metric: { interval: '1m', count: 5, failureLimit: 1 }, phases: 'FSSSS', argo: 'Successful', message: /count \(5\) reached/ },
  { source: 'analysis.go:664 default failureLimit 0', metric: { interval: '5m', count: 3 }, phases: 'SF', argo: 'Failed' },
  { source: 'analysis_types.go:159 no count, no interval: one measurement', metric: {}, phases: 'S', argo: 'Successful' },
  { source: 'analysis.go:673 inconclusive > inconclusiveLimit (default 0)', metric: { interval: '1m', count: 3 }, phases: 'I', argo: 'Inconclusive', message: /inconclusive \(1\) > inconclusiveLimit \(0\)/ },
  { source: 'analysis.go:673 inconclusiveLimit 1', metric: { interval: '1m', count: 3, inconclusiveLimit: 1 }, phases: 'IS', argo: 'Running' },
  { source: 'defaults.go:37 consecutiveErrorLimit 4: four errors in a row continue', metric: { interval: '1m', count: 3 }, phases: 'EEEE', argo: 'Running' },
  { source: 'analysis.go:681 five errors in a row: Error', metric: { interval: '1m', count: 3 }, phases: 'EEEEE', argo: 'Error', message: /consecutiveErrors \(5\) > consecutiveErrorLimit \(4\)/, lastgood: 'unknown: lastgood never reverts on what it could not measure (Argo Rollouts aborts the rollout on Error)' },
  { source: 'analysis.go:390 a measurement resets consecutive errors', metric: { interval: '1m', count: 3, consecutiveErrorLimit: 1 }, phases: 'ESE', argo: 'Running' },
  { source: 'analysis.go:681 consecutiveErrorLimit 0', metric: { interval: '1m', count: 3, consecutiveErrorLimit: 0 }, phases: 'E', argo: 'Error' },
  { source: 'analysis.go:599 consecutiveSuccessLimit reached', metric: { interval: '1m', count: 5, failureLimit: -1, consecutiveSuccessLimit: 3 }, phases: 'FSSS', argo: 'Successful' },
  { source: 'analysis.go:634 count reached, consecutiveSuccessLimit not reached, failureLimit off', metric: { interval: '1m', count: 5, failureLimit: -1, consecutiveSuccessLimit: 3 }, phases: 'SFSSF', argo: 'Failed' },
  { source: 'analysis.go:622 count reached, neither limit decided', metric: { interval: '1m', count: 4, failureLimit: 2, consecutiveSuccessLimit: 2 }, phases: 'SFSF', argo: 'Inconclusive' },
  { source: 'analysis.go:651 no count: runs until terminated (lastgood: the window ends)', metric: { interval: '1m' }, phases: 'SS', argo: 'Running' },
  { source: 'analysis.go:651 terminated without a failure: Successful', metric: { interval: '1m' }, phases: 'SS', terminating: true, argo: 'Successful' },
  { source: 'analysis.go:590 terminated before any measurement: Successful', metric: { interval: '1m' }, phases: '', terminating: true, argo: 'Successful' },
  { source: 'analysis.go:664 a failure ends the run even when terminating', metric: { interval: '1m' }, phases: 'SF', terminating: true, argo: 'Failed' },
];

for (const row of metricRows) {
  test(`Argo Rollouts metric: ${row.source}: ${JSON.stringify(row.metric)} after ${row.phases || 'nothing'}${row.terminating ? ' (terminating)' : ''} → ${row.argo}; lastgood ${row.lastgood ?? LASTGOOD[row.argo]}`, (t) => {
    const spec = argoScheduleAndLimits(row.metric);
    const got = assessMetric(spec, m(row.phases), Boolean(row.terminating));
    t.is(got.phase, row.argo, got.message);
    if (row.message) t.regex(got.message, row.message);
  });
}

test('Argo Rollouts metric validation refuses what ValidateMetric refuses (factory.go:149), with its messages', (t) => {
  t.throws(() => argoScheduleAndLimits({ count: 1, failureLimit: 2 }), { message: 'count (1) must be >= failureLimit + consecutiveSuccessLimit (2 + 0) if both >= 0' });
  t.throws(() => argoScheduleAndLimits({ count: 3 }), { message: 'interval must be specified when count > 1' });
  t.throws(() => argoScheduleAndLimits({ failureLimit: -1 }), { message: 'failureLimit and consecutiveSuccessLimit cannot both be disabled' });
  t.throws(() => argoScheduleAndLimits({ inconclusiveLimit: -1 }), { message: 'inconclusiveLimit must be >= 0' });
  t.throws(() => argoScheduleAndLimits({ interval: '5 minutes' }), { message: /invalid interval string/ });
  // IntOrString: a count given through an argument ("{{args.count}}" → "5") counts as 5
  t.is(argoScheduleAndLimits({ interval: '1m', count: '5' }).schedule.count, 5);
  // analysis.go:30 DefaultErrorRetryInterval, defaults.go:37 DefaultConsecutiveErrorLimit
  t.like(argoScheduleAndLimits({ interval: '1m', count: 3 }), { schedule: { intervalMs: 60_000, errorRetryMs: 10_000, initialDelayMs: 0, count: 3 }, limits: { consecutiveErrorLimit: 4, failureLimit: 0, inconclusiveLimit: 0 } });
});

test('Argo Rollouts arguments (template.go:70 ResolveQuotedArgs via factory.go:112): substituted JSON-escaped; a missing value or an unknown tag fails', (t) => {
  const metric = { name: 'x', provider: { prometheus: { query: 'up{service="{{args.service-name}}",x="{{ args.quote }}"}' } } };
  t.deepEqual(resolveMetricArgs(metric, [{ name: 'service-name', value: 'shop' }, { name: 'quote', value: 'a"b' }]).provider.prometheus.query, 'up{service="shop",x="a"b"}');
  t.throws(() => resolveMetricArgs(metric, [{ name: 'service-name' }]), { message: 'argument "service-name" was not supplied' });
  t.throws(() => resolveMetricArgs(metric, [{ name: 'service-name', value: 'shop' }]), { message: 'failed to resolve {{ args.quote }}' });
});

// ---- Flagger: pkg/controller/scheduler_metrics.go runMetricChecks, pkg/metrics/providers/prometheus.go RunQuery

const vector = (...values: number[]): MetricValue => ({ type: 'vector', values });

const flaggerRows: Array<{ source: string; metric: Parameters<typeof flaggerJudge>[0]; value: MetricValue; flagger: string; lastgood: MeasurementPhase; why?: string }> = [
  { source: 'scheduler_metrics.go:331 below thresholdRange.min', metric: { name: 'request-success-rate', thresholdRange: { min: 99 } }, value: vector(98.5), flagger: 'halt: a failed check', lastgood: 'Failed' },
  { source: 'scheduler_metrics.go:336 above thresholdRange.max', metric: { name: 'latency', thresholdRange: { max: 0.5 } }, value: vector(0.99), flagger: 'halt: a failed check', lastgood: 'Failed' },
  { source: 'scheduler_metrics.go:329 within the range', metric: { name: 'my metric', thresholdRange: { min: 10, max: 1000 } }, value: vector(500), flagger: 'pass', lastgood: 'Successful' },
  { source: 'scheduler_metrics.go:331 the bound itself passes', metric: { name: 'm', thresholdRange: { min: 10, max: 1000 } }, value: vector(10), flagger: 'pass', lastgood: 'Successful' },
  { source: 'scheduler_metrics.go:341 no range: above the deprecated threshold (default 0)', metric: { name: 'm' }, value: vector(0.5), flagger: 'halt: a failed check', lastgood: 'Failed' },
  { source: 'scheduler_metrics.go:341 no range: at or below threshold', metric: { name: 'm', threshold: 1 }, value: vector(0.5), flagger: 'pass', lastgood: 'Successful' },
  { source: 'prometheus.go:156-168 the last sample of the vector counts', metric: { name: '404s percentage', thresholdRange: { max: 5 } }, value: vector(1, 7), flagger: 'halt: a failed check', lastgood: 'Failed' },
  { source: 'prometheus.go:170 no sample: ErrNoValuesFound', metric: { name: 'm', thresholdRange: { max: 5 } }, value: vector(), flagger: 'halt ("probably not receiving traffic"): a failed check', lastgood: 'Inconclusive', why: 'lastgood holds: no traffic says nothing about the new revision, and a git revert is not undone by the next tick' },
  { source: 'prometheus.go:170 NaN: ErrNoValuesFound', metric: { name: 'm', thresholdRange: { max: 5 } }, value: vector(NaN), flagger: 'halt: a failed check', lastgood: 'Inconclusive', why: 'as above' },
  { source: 'prometheus.go:158 a range vector: ErrMultipleValuesReturned', metric: { name: 'm', thresholdRange: { max: 5 } }, value: { type: 'matrix', values: [1, 2] }, flagger: 'halt (query failed): a failed check', lastgood: 'Error', why: 'unknown: the query cannot be read as Flagger reads it; lastgood does not revert on it' },
];

for (const row of flaggerRows) {
  test(`Flagger metric: ${row.source}: ${JSON.stringify(row.metric.thresholdRange ?? { threshold: row.metric.threshold ?? 0 })} on ${row.value.type} ${shown('values' in row.value ? row.value.values : [])} → Flagger ${row.flagger}; lastgood ${row.lastgood}${row.why ? ` (${row.why})` : ''}`, (t) => {
    t.is(flaggerJudge(row.metric)(row.value).phase, row.lastgood);
  });
}

test('Flagger analysis: a tick every analysis.interval (default 60s, at least 10s: canary.go:637), `threshold` failed checks roll back (scheduler.go:430, default 1: canary.go:655)', (t) => {
  const spec = flaggerScheduleAndLimits({ interval: '15s', threshold: 5, maxWeight: 40, stepWeight: 20 });
  t.like(spec, { schedule: { intervalMs: 15_000, initialDelayMs: 15_000, count: 2 }, limits: { failureLimit: 4 } });
  t.is(flaggerScheduleAndLimits({ interval: '5s' }).schedule.intervalMs, 10_000);
  t.is(flaggerScheduleAndLimits({}).schedule.intervalMs, 60_000);
  t.is(flaggerScheduleAndLimits({}).limits.failureLimit, 0);
  t.is(flaggerScheduleAndLimits({ iterations: 10 }).schedule.count, 10);
  // threshold 2: the second failed check rolls back, one failed check among passing ones does not
  const two = flaggerScheduleAndLimits({ interval: '1m', threshold: 2, iterations: 4 });
  t.is(assessMetric(two, m('FS'), false).phase, 'Running');
  t.is(assessMetric(two, m('FSF'), false).phase, 'Failed');
  t.is(assessMetric(two, m('FSSS'), false).phase, 'Running', 'a failed check does not advance the analysis: three passing ticks of four');
  t.is(assessMetric(two, m('FSSSS'), false).phase, 'Successful');
  t.is(assessMetric(two, m('I'), false).phase, 'Inconclusive');
});

test('Flagger query templates render as RenderQuery (render.go:28) does, and refuse what it would not render', (t) => {
  const model = { name: 'podinfo', namespace: 'test', target: 'podinfo', service: 'podinfo', ingress: 'podinfo', route: 'podinfo', interval: '30s', variables: { path: 'root' } };
  t.is(renderFlaggerQuery('x{ns="{{ namespace }}",pod=~"{{ target }}-.*",path="{{ variables.path }}"}[{{ interval }}]', model), 'x{ns="test",pod=~"podinfo-.*",path="root"}[30s]');
  t.is(renderFlaggerQuery('a {{- namespace -}} b', model), 'atestb');
  t.throws(() => renderFlaggerQuery('{{ variables.missing }}', model), { message: /map has no entry for key "missing"/ });
  t.throws(() => renderFlaggerQuery('{{ if true }}x{{ end }}', model), { message: /not one Flagger's metric templates offer/ });
});
