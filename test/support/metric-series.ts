/**
 * OpenMetrics text for the Prometheus tests (backfilled by promtool): request counters and a
 * latency histogram of a workload's pods, before and after a rollout, with the labels the
 * upstream templates in fixtures/analysis/ select on:
 *
 * - `http_requests_total{namespace, pod, code}`: lastgood.yaml's own checks (docs/metrics.md example);
 * - `istio_requests_total{reporter, destination_service, response_code}`: Argo Rollouts'
 *   `success-rate` AnalysisTemplate (docs/features/analysis.md);
 * - `http_request_duration_seconds_{bucket,count}{kubernetes_namespace, kubernetes_pod_name, path, status, le}`:
 *   Flagger's `latency` and `not-found-percentage` MetricTemplates.
 *
 * Values are deterministic: a counter grows by `rate * step` each step, errors by a fixed share.
 */

export interface PodSet {
  namespace: string;
  /** pod name prefix: "<deployment>-<pod-template-hash>" */
  prefix: string;
  /** e.g. "shop.prod.svc.cluster.local", for istio_requests_total */
  service: string;
  /** ms since the epoch: serving from, until */
  from: number;
  to: number;
  /** requests per second, per pod */
  rate: number;
  /** share of 5xx responses */
  errorRatio: number;
  /** share of 404 responses */
  notFoundRatio?: number;
  /** every request's latency, seconds (one histogram bucket gets them all) */
  latency: number;
  /** how many pods */
  pods?: number;
}

export const STEP_MS = 15_000;
const BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5];

interface Series {
  family: string;
  labels: Record<string, string>;
  points: Array<[number, number]>;
}

function labelText(labels: Record<string, string>): string {
  return Object.entries(labels).map(([k, v]) => `${k}="${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`).join(',');
}

function counterSeries(set: PodSet): Series[] {
  const out: Series[] = [];
  const pods = set.pods ?? 2;
  for (let p = 0; p < pods; p++) {
    const pod = `${set.prefix}-${String.fromCharCode(97 + p)}${'bcdef'.slice(p % 5, p % 5 + 4)}`;
    const add = (family: string, labels: Record<string, string>, perStep: number) => {
      const points: Array<[number, number]> = [];
      let value = 0;
      for (let t = set.from; t <= set.to; t += STEP_MS) {
        points.push([t, Math.round(value * 1000) / 1000]);
        value += perStep;
      }
      out.push({ family, labels, points });
    };
    const total = (set.rate * STEP_MS) / 1000;
    const errors = total * set.errorRatio;
    const notFound = total * (set.notFoundRatio ?? 0);
    const ok = total - errors - notFound;
    add('http_requests', { namespace: set.namespace, pod, code: '200' }, ok + notFound);
    add('http_requests', { namespace: set.namespace, pod, code: '500' }, errors);
    add('istio_requests', { reporter: 'source', destination_service: set.service, response_code: '200', pod }, ok + notFound);
    add('istio_requests', { reporter: 'source', destination_service: set.service, response_code: '503', pod }, errors);
    for (const [status, share] of [['200', ok], ['404', notFound], ['500', errors]] as const) {
      add('http_request_duration_seconds_count', { kubernetes_namespace: set.namespace, kubernetes_pod_name: pod, path: 'root', status }, share);
    }
    for (const le of [...BUCKETS.map(String), '+Inf']) {
      add('http_request_duration_seconds_bucket', { kubernetes_namespace: set.namespace, kubernetes_pod_name: pod, path: 'root', le }, le === '+Inf' || set.latency <= Number(le) ? total : 0);
    }
  }
  return out;
}

/** The OpenMetrics document for these pod sets (one family per metric name, typed unknown: PromQL reads them alike; each series in time order). */
export function openMetrics(sets: PodSet[]): string {
  const series = sets.flatMap(counterSeries);
  const names: Record<string, string> = { http_requests: 'http_requests_total', istio_requests: 'istio_requests_total' };
  const byName = new Map<string, Series[]>();
  for (const s of series) {
    const name = names[s.family] ?? s.family;
    byName.set(name, [...(byName.get(name) ?? []), s]);
  }
  const lines: string[] = [];
  for (const [name, list] of byName) {
    lines.push(`# TYPE ${name} unknown`);
    for (const s of list) for (const [t, v] of s.points) lines.push(`${name}{${labelText(s.labels)}} ${v} ${(t / 1000).toFixed(3)}`);
  }
  lines.push('# EOF');
  return lines.join('\n') + '\n';
}
