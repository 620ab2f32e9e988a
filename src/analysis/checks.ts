/**
 * A target's checks for one rollout, in one shape (CheckSpec) whatever they were written in:
 * lastgood.yaml's own, Argo Rollouts AnalysisTemplates / ClusterAnalysisTemplates, a Flagger
 * Canary's analysis with its MetricTemplates. Templates and Canaries are read once per rollout
 * (as Argo Rollouts copies templates into the AnalysisRun it starts), from what the door observed
 * or, where it can, from the cluster.
 *
 * What cannot be evaluated is a problem of the target, said with where it comes from: a template
 * that does not exist, a provider other than Prometheus (named), an argument without a value, a
 * range query. A problem is exit 2 (bad input) or 3 (the cluster could not be read).
 */
import { LastgoodError, RemoteError } from '../errors.ts';
import type { KubeObject } from '../observe/types.ts';
import { argoJudge, argoScheduleAndLimits, describeConditions, intValue, resolveMetricArgs, type ArgoArgument, type ArgoMetric } from './argo.ts';
import { renderFacts, type ResolvedAnalysis } from './config.ts';
import { describeThreshold, FLAGGER_METRIC_INTERVAL, flaggerJudge, flaggerScheduleAndLimits, renderFlaggerQuery, type FlaggerAnalysis, type FlaggerMetric, type FlaggerModel } from './flagger.ts';
import { isSupportedProvider, unsupportedProvider } from './providers/registry.ts';
import type { Lookup } from './rollout.ts';
import type { CheckSpec, RolloutFacts } from './types.ts';

export interface CheckProblem {
  /** the evidence name */
  name: string;
  source: string;
  message: string;
  /** DESIGN.md exit code: 2 bad input (a template, an argument, a provider), 3 an outside system failed */
  code: 2 | 3;
}

export interface ResolvedChecks {
  specs: CheckSpec[];
  problems: CheckProblem[];
}

const FLAGGER_BUILTIN = new Set(['request-success-rate', 'request-duration']);

function rec(v: unknown): Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

function problemOf(name: string, source: string, error: unknown): CheckProblem {
  const message = error instanceof Error ? error.message : String(error);
  return { name, source, message, code: error instanceof RemoteError ? 3 : 2 };
}

export async function resolveChecks(analysis: ResolvedAnalysis, facts: RolloutFacts, lookup: Lookup): Promise<ResolvedChecks> {
  const out: ResolvedChecks = { specs: [], problems: [] };
  for (const check of analysis.checks ?? []) {
    try {
      out.specs.push({
        name: check.name,
        source: 'lastgood.yaml',
        semantics: 'argo',
        provider: { name: check.provider },
        queries: [{ name: check.name, query: renderFacts(check.query, facts), judge: argoJudge(check), condition: describeConditions(check) }],
        ...argoScheduleAndLimits(check),
      });
    } catch (error) {
      out.problems.push(problemOf(check.name, 'lastgood.yaml', error));
    }
  }
  if (analysis.argo) await argoChecks(analysis, facts, lookup, out);
  if (analysis.flagger) flaggerChecks(analysis.flagger as FlaggerAnalysis, 'flagger', 'lastgood.yaml (flagger)', modelOfWorkload(facts), facts, await templatesOf(analysis.flagger as FlaggerAnalysis, facts.namespace, lookup, 'flagger', out), out);
  if (analysis.canary) {
    const ns = analysis.canary.namespace ?? facts.namespace;
    const where = `Canary ${ns}/${analysis.canary.name}`;
    try {
      const canary = await lookup({ apiVersion: 'flagger.app/v1beta1', kind: 'Canary', namespace: ns, name: analysis.canary.name });
      if (!canary) throw new Error(`${where} not found`);
      const spec = rec(canary.spec);
      const flagger = rec(spec.analysis ?? spec.canaryAnalysis) as FlaggerAnalysis;
      if (!Array.isArray(flagger.metrics) || flagger.metrics.length === 0) throw new Error(`${where} has no spec.analysis.metrics`);
      flaggerChecks(flagger, analysis.canary.name, where, modelOfCanary(canary), facts, await templatesOf(flagger, ns, lookup, analysis.canary.name, out), out);
    } catch (error) {
      out.problems.push(problemOf(analysis.canary.name, where, error));
    }
  }
  // evidence names are unique within the target
  const seen = new Map<string, number>();
  for (const s of [...out.specs, ...out.problems]) {
    const n = (seen.get(s.name) ?? 0) + 1;
    seen.set(s.name, n);
    if (n > 1) s.name = `${s.name}-${n}`;
  }
  return out;
}

// ---- Argo Rollouts

async function argoChecks(analysis: ResolvedAnalysis, facts: RolloutFacts, lookup: Lookup, out: ResolvedChecks): Promise<void> {
  const argo = analysis.argo!;
  const namespace = argo.namespace ?? facts.namespace;
  const refs = [
    ...(argo.templates ?? []).map((t) => ({ name: t.templateName, cluster: Boolean(t.clusterScope) })),
    ...(argo.analysisTemplates ?? []).map((t) => ({ name: t.name, cluster: t.kind === 'ClusterAnalysisTemplate' })),
  ];
  const given = new Map<string, string>();
  for (const a of argo.args ?? []) {
    try {
      given.set(a.name, renderFacts(a.value, facts));
    } catch (error) {
      out.problems.push(problemOf(a.name, 'lastgood.yaml (argo.args)', error));
      return;
    }
  }
  for (const ref of refs) {
    const kind = ref.cluster ? 'ClusterAnalysisTemplate' : 'AnalysisTemplate';
    const where = ref.cluster ? `${kind} ${ref.name}` : `${kind} ${namespace}/${ref.name}`;
    let template: KubeObject | undefined;
    try {
      template = await lookup({ apiVersion: 'argoproj.io/v1alpha1', kind, ...(ref.cluster ? {} : { namespace }), name: ref.name });
      if (!template) throw new Error(`${where} not found${await namespaceLess(lookup, 'argoproj.io/v1alpha1', kind, ref.cluster ? undefined : namespace, ref.name)}`);
    } catch (error) {
      out.problems.push(problemOf(ref.name, where, error));
      continue;
    }
    const spec = rec(template.spec);
    if (Array.isArray(spec.templates) && spec.templates.length) {
      out.problems.push({ name: ref.name, source: where, message: `${where} combines other templates (spec.templates): name them in lastgood.yaml instead`, code: 2 });
      continue;
    }
    // the template's args with their defaults, then lastgood.yaml's values (as a Rollout's args override them)
    const args: ArgoArgument[] = (Array.isArray(spec.args) ? spec.args : []).map((a) => {
      const r = rec(a);
      const name = String(r.name);
      const value = given.get(name) ?? (typeof r.value === 'string' ? r.value : r.value !== undefined && r.value !== null ? String(r.value) : undefined);
      return { name, ...(value !== undefined ? { value } : {}), ...(r.valueFrom !== undefined && !given.has(name) ? { valueFrom: r.valueFrom } : {}) };
    });
    for (const [name, value] of given) if (!args.some((a) => a.name === name)) args.push({ name, value });
    const dryRun = new Set((Array.isArray(spec.dryRun) ? spec.dryRun : []).map((d) => String(rec(d).metricName)));
    const metrics = Array.isArray(spec.metrics) ? spec.metrics.map((m) => rec(m) as unknown as ArgoMetric) : [];
    if (metrics.length === 0) out.problems.push({ name: ref.name, source: where, message: `${where}: no metrics specified`, code: 2 });
    for (const raw of metrics) {
      const name = String(raw.name ?? ref.name);
      try {
        const fromSecret = args.find((a) => a.valueFrom !== undefined && a.value === undefined);
        if (fromSecret) throw new Error(`argument "${fromSecret.name}" takes its value from ${JSON.stringify(fromSecret.valueFrom)}: give its value in lastgood.yaml (analysis.argo.args)`);
        const metric = resolveMetricArgs(raw, args);
        const providers = Object.keys(rec(metric.provider));
        if (providers.length !== 1) throw new Error(providers.length ? `more than one provider (${providers.join(', ')})` : 'no provider specified');
        const providerName = providers[0]!;
        if (!isSupportedProvider(providerName)) throw unsupportedProvider(providerName, `${where} metric ${name}`);
        const prom = rec(rec(metric.provider)[providerName]);
        if (prom.rangeQuery) throw new Error('a range query (provider.prometheus.rangeQuery) is not evaluated by lastgood: use an instant query');
        if (typeof prom.query !== 'string' || !prom.query.trim()) throw new Error('provider.prometheus.query is empty');
        const timeout = intValue(prom.timeout as number | string | undefined);
        const notes: string[] = [];
        if (rec(prom.authentication) && Object.keys(rec(prom.authentication)).length) notes.push('the template\'s provider.prometheus.authentication is not used: lastgood authenticates with analysis.prometheus.auth');
        out.specs.push({
          name,
          source: where,
          semantics: 'argo',
          provider: { name: providerName, ...(typeof prom.address === 'string' && prom.address ? { address: prom.address } : {}), ...(timeout ? { timeoutMs: timeout * 1000 } : {}) },
          queries: [{ name, query: prom.query, judge: argoJudge(metric), condition: describeConditions(metric) }],
          ...argoScheduleAndLimits(metric),
          ...(dryRun.has(name) || dryRun.has('*') ? { dryRun: true } : {}),
          ...(notes.length ? { notes } : {}),
        });
      } catch (error) {
        out.problems.push(problemOf(name, where, error instanceof LastgoodError ? error : new Error(`${where} metric ${name}: ${(error as Error).message}`)));
      }
    }
  }
}

// ---- Flagger

/** pkg/controller/scheduler_metrics.go:355 toMetricModel, for a Canary. */
function modelOfCanary(canary: KubeObject): Omit<FlaggerModel, 'interval' | 'variables'> {
  const spec = rec(canary.spec);
  const target = String(rec(spec.targetRef).name ?? canary.metadata.name);
  const name = (v: unknown) => (typeof rec(v).name === 'string' && rec(v).name ? String(rec(v).name) : undefined);
  return {
    name: canary.metadata.name,
    namespace: canary.metadata.namespace ?? '',
    target,
    service: name(spec.service) ?? target,
    ingress: name(spec.ingressRef) ?? target,
    route: name(spec.routeRef) ?? target,
  };
}

/** The same model for a plain workload: its name stands for the canary, target, service, ingress and route. */
function modelOfWorkload(facts: RolloutFacts): Omit<FlaggerModel, 'interval' | 'variables'> {
  return { name: facts.workload, namespace: facts.namespace, target: facts.workload, service: facts.workload, ingress: facts.workload, route: facts.workload };
}

/**
 * A hint where a snapshot holds the template without `metadata.namespace` (as the upstream docs
 * print them, and as `kubectl apply` takes them into the current namespace): the namespace it is
 * looked for in is not written on it.
 */
async function namespaceLess(lookup: Lookup, apiVersion: string, kind: string, namespace: string | undefined, name: string): Promise<string> {
  if (!namespace) return '';
  const bare = await lookup({ apiVersion, kind, name }, { observedOnly: true });
  return bare ? `; what was observed holds the ${kind} ${name} without metadata.namespace (as the upstream docs print them): add \`namespace: ${namespace}\` to it, or take it from the cluster (\`kubectl get ${kind.toLowerCase()}s -n ${namespace} -o yaml\`)` : '';
}

async function templatesOf(analysis: FlaggerAnalysis, namespace: string, lookup: Lookup, name: string, out: ResolvedChecks): Promise<Map<string, KubeObject | Error>> {
  const found = new Map<string, KubeObject | Error>();
  for (const m of analysis.metrics ?? []) {
    if (!m.templateRef) continue;
    // scheduler_metrics.go:273: the template's namespace, else the canary's
    const ns = m.templateRef.namespace || namespace;
    const key = `${ns}/${m.templateRef.name}`;
    if (found.has(key)) continue;
    try {
      const t = await lookup({ apiVersion: 'flagger.app/v1beta1', kind: 'MetricTemplate', namespace: ns, name: m.templateRef.name });
      found.set(key, t ?? new Error(`MetricTemplate ${key} not found${await namespaceLess(lookup, 'flagger.app/v1beta1', 'MetricTemplate', ns, m.templateRef.name)}`));
    } catch (error) {
      if (error instanceof RemoteError) {
        out.problems.push(problemOf(name, `MetricTemplate ${key}`, error));
        found.set(key, error);
      } else found.set(key, error as Error);
    }
  }
  return found;
}

function flaggerChecks(analysis: FlaggerAnalysis, name: string, where: string, model: Omit<FlaggerModel, 'interval' | 'variables'>, facts: RolloutFacts, templates: Map<string, KubeObject | Error>, out: ResolvedChecks): void {
  try {
    const queries: CheckSpec['queries'] = [];
    const notes: string[] = [];
    let provider: CheckSpec['provider'] | undefined;
    for (const metric of analysis.metrics ?? []) {
      const m = metric as FlaggerMetric;
      const variables = Object.fromEntries(Object.entries(m.templateVariables ?? {}).map(([k, v]) => [k, renderFacts(v, facts)]));
      const full: FlaggerModel = { ...model, interval: m.interval || FLAGGER_METRIC_INTERVAL, variables };
      let query: string;
      let metricProvider: CheckSpec['provider'];
      if (m.templateRef) {
        const key = `${m.templateRef.namespace || model.namespace}/${m.templateRef.name}`;
        const template = templates.get(key);
        if (!template || template instanceof Error) throw template ?? new Error(`MetricTemplate ${key} not found`);
        const spec = rec(template.spec);
        const type = String(rec(spec.provider).type ?? '');
        if (!isSupportedProvider(type)) throw unsupportedProvider(type || '(none)', `MetricTemplate ${key}`);
        if (rec(spec.provider).secretRef) notes.push(`MetricTemplate ${key}: its provider.secretRef is not read: lastgood authenticates with analysis.prometheus.auth`);
        const address = rec(spec.provider).address;
        metricProvider = { name: type, ...(typeof address === 'string' && address ? { address } : {}) };
        query = renderFlaggerQuery(String(spec.query ?? ''), full);
      } else if (m.query) {
        // in-line PromQL (scheduler_metrics.go:220): Flagger's own metrics server
        metricProvider = { name: 'prometheus' };
        query = renderFlaggerQuery(m.query, full);
      } else if (FLAGGER_BUILTIN.has(m.name)) {
        notes.push(`metric ${m.name} is one of Flagger's builtin checks (its query depends on the mesh provider): not evaluated by lastgood; use a MetricTemplate`);
        continue;
      } else {
        // scheduler_metrics.go:346
        throw new Error(`metric ${m.name}: no usable metrics template and query were configured`);
      }
      if (provider && (provider.name !== metricProvider.name || provider.address !== metricProvider.address)) {
        throw new Error('metrics on different providers or addresses: lastgood evaluates one analysis against one provider');
      }
      provider = metricProvider;
      queries.push({ name: m.name, query, judge: flaggerJudge(m), condition: describeThreshold(m) });
    }
    if (!provider || queries.length === 0) {
      out.problems.push({ name, source: where, message: `${where}: no metric lastgood can evaluate${notes.length ? ` (${notes.join('; ')})` : ''}`, code: 2 });
      return;
    }
    out.specs.push({ name, source: where, semantics: 'flagger', provider, queries, ...flaggerScheduleAndLimits(analysis), ...(notes.length ? { notes } : {}) });
  } catch (error) {
    out.problems.push(problemOf(name, where, error instanceof LastgoodError ? error : new Error(`${where}: ${(error as Error).message}`)));
  }
}
