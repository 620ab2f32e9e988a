/**
 * lastgood.yaml's part for metric analysis (src/config/schema.ts composes it):
 *
 * - `analysis.<provider>` at the top: where a provider is and how to reach it (`prometheus`);
 * - `targets[].analysis`: the target's checks, in any of three formats: checks written here
 *   (Argo Rollouts' metric fields, a PromQL query with lastgood's `{{facts}}`), Argo Rollouts
 *   AnalysisTemplates / ClusterAnalysisTemplates named as a Rollout or a Kargo Stage names them,
 *   and a Flagger Canary's `spec.analysis` (written here, or read from the Canary) with its
 *   MetricTemplates.
 */
import { z } from 'zod';
import { parseDuration } from '../config/duration.ts';
import { argoScheduleAndLimits, parseGoDuration } from './argo.ts';
import { compile } from './expr.ts';
import { isSupportedProvider, OTHER_PROVIDERS, supportedProviders } from './providers/registry.ts';
import { FACT_NAMES, type RolloutFacts } from './types.ts';

const LastgoodDuration = z
  .string()
  .refine((s) => parseDuration(s) !== undefined, { message: 'expected a duration like 30s, 15m, 1h30m' });

/** A duration as Argo Rollouts reads a metric's (Go's time.ParseDuration: "30s", "1m", "1.5h"). */
const GoDuration = z
  .string()
  .refine((s) => (parseGoDuration(s) ?? -1) >= 0, { message: 'expected a duration like 30s, 1m, 1h30m (Go\'s time.ParseDuration)' });

const EnvName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name');

export const PrometheusSettings = z
  .object({
    address: z.string().url().refine((u) => /^https?:\/\//.test(u) && !/^https?:\/\/[^/]*@/.test(u), { message: 'an http(s) URL without credentials (put them in auth)' }).optional()
      .describe('the Prometheus API base URL, e.g. http://prometheus.monitoring:9090; replaces the address the templates name (lastgood may reach Prometheus another way than the cluster does)'),
    timeout: LastgoodDuration.optional().describe('per query (default: the template\'s, else 30s)'),
    headers: z.record(z.string().regex(/^[A-Za-z0-9-]+$/, 'a header name'), z.string())
      .refine((h) => !Object.keys(h).some((k) => k.toLowerCase() === 'authorization'), { message: 'put credentials in auth, not in headers' })
      .optional().describe('extra request headers, e.g. X-Scope-OrgID for a multi-tenant Prometheus (Mimir, Cortex, Thanos)'),
    auth: z
      .object({
        tokenEnv: EnvName.optional().describe('a Bearer token from this environment variable'),
        tokenFile: z.string().min(1).optional().describe('a Bearer token from this file (a mounted Secret)'),
        username: z.string().min(1).optional(),
        usernameEnv: EnvName.optional(),
        passwordEnv: EnvName.optional().describe('Basic auth: the password from this environment variable'),
        passwordFile: z.string().min(1).optional().describe('Basic auth: the password from this file'),
      })
      .strict()
      .refine((a) => [a.tokenEnv, a.tokenFile, a.passwordEnv, a.passwordFile].filter(Boolean).length === 1, { message: 'name exactly one secret: tokenEnv, tokenFile, passwordEnv or passwordFile' })
      .optional(),
  })
  .strict();

export const AnalysisProviders = z
  .object({ prometheus: PrometheusSettings.optional().describe('the Prometheus server checks query') })
  .strict()
  .describe('metric providers for targets[].analysis');

/** `{{ name }}` placeholders of lastgood's facts in a text. */
export function placeholders(text: string): string[] {
  return [...text.matchAll(/\{\{\s*([^}]*?)\s*\}\}/g)].map((m) => m[1]!);
}

/** Replaces `{{fact}}` by the rollout's facts; an unknown name is an error naming it. */
export function renderFacts(text: string, facts: RolloutFacts): string {
  return text.replace(/\{\{\s*([^}]*?)\s*\}\}/g, (_, name: string) => {
    if (!(FACT_NAMES as readonly string[]).includes(name)) throw new Error(`unknown variable {{${name}}} (lastgood knows ${FACT_NAMES.map((f) => `{{${f}}}`).join(', ')})`);
    return facts[name as keyof RolloutFacts];
  });
}

const knownFacts = (text: string) => placeholders(text).every((p) => (FACT_NAMES as readonly string[]).includes(p));
const FACTS_MESSAGE = `unknown variable: the variables are ${FACT_NAMES.map((f) => `{{${f}}}`).join(', ')}`;
const WithFacts = z.string().refine(knownFacts, { message: FACTS_MESSAGE });

const ProviderName = z.string().superRefine((name, ctx) => {
  if (isSupportedProvider(name)) return;
  ctx.addIssue({
    code: 'custom',
    message: `provider "${name}" is not supported: lastgood evaluates ${supportedProviders().join(', ')} metrics${OTHER_PROVIDERS.includes(name) ? ` (${name} is on the provider seam, not yet built)` : ''}`,
  });
});

/** A check written in lastgood.yaml: an Argo Rollouts metric with a PromQL query. */
export const NativeCheck = z
  .object({
    name: z.string().regex(/^[a-z0-9]([a-z0-9._-]{0,61}[a-z0-9])?$/, 'a check name is lower-case letters, digits, ".", "_" and "-"'),
    query: WithFacts.pipe(z.string().min(1)).describe('PromQL; {{namespace}}, {{workload}}, {{podTemplateHash}}, {{revision}}, {{image}}, {{imageTag}}, {{kind}}, {{target}} are the rollout\'s facts'),
    successCondition: z.string().optional().describe('Argo Rollouts\' expression over `result` (a list for a vector: result[0]); a measurement that does not meet it fails'),
    failureCondition: z.string().optional().describe('a measurement that meets it fails; with both, one that meets neither is inconclusive'),
    interval: GoDuration.optional().describe('between measurements'),
    initialDelay: GoDuration.optional().describe('after the rollout began, before the first measurement'),
    count: z.number().int().min(0).max(1000).optional().describe('measurements to take (default: 1 without an interval, else until the window ends)'),
    failureLimit: z.number().int().min(-1).optional().describe('failed measurements allowed (default 0; -1 off)'),
    inconclusiveLimit: z.number().int().min(0).optional().describe('inconclusive measurements allowed before the check is held as inconclusive (default 0)'),
    consecutiveErrorLimit: z.number().int().min(0).optional().describe('measurements in error allowed in a row (default 4); beyond, the check is unknown'),
    consecutiveSuccessLimit: z.number().int().min(0).optional().describe('successes in a row that end the check early (default 0: off)'),
    provider: ProviderName.default('prometheus'),
  })
  .strict()
  .superRefine((check, ctx) => {
    try {
      argoScheduleAndLimits(check);
    } catch (error) {
      ctx.addIssue({ code: 'custom', message: (error as Error).message });
    }
    for (const field of ['successCondition', 'failureCondition'] as const) {
      const source = check[field];
      if (!source) continue;
      try {
        compile(source);
      } catch (error) {
        ctx.addIssue({ code: 'custom', path: [field], message: `not an expression Argo Rollouts evaluates: ${(error as Error).message}` });
      }
    }
  });

const ArgoArg = z.object({ name: z.string().min(1), value: WithFacts.describe('may use the rollout\'s facts, e.g. "{{workload}}.{{namespace}}.svc"') }).strict();

/** Argo Rollouts' RolloutAnalysis (`templates` + `args`, as in a Rollout) or Kargo's Stage verification (`analysisTemplates` + `args`). */
export const ArgoAnalysis = z
  .object({
    templates: z.array(z.object({ templateName: z.string().min(1), clusterScope: z.boolean().optional() }).strict()).optional()
      .describe('as in a Rollout: an AnalysisTemplate by name, or a ClusterAnalysisTemplate with clusterScope: true'),
    analysisTemplates: z.array(z.object({ name: z.string().min(1), kind: z.enum(['AnalysisTemplate', 'ClusterAnalysisTemplate']).optional() }).strict()).optional()
      .describe('as in a Kargo Stage\'s verification'),
    args: z.array(ArgoArg).optional().describe('values for the templates\' args (given here, they replace a template\'s defaults)'),
    namespace: z.string().min(1).optional().describe('where the AnalysisTemplates are (default: the workload\'s namespace)'),
  })
  .strict()
  .refine((a) => (a.templates?.length ?? 0) + (a.analysisTemplates?.length ?? 0) > 0, { message: 'name at least one template (templates or analysisTemplates)' });

const Threshold = z.object({ min: z.number().optional(), max: z.number().optional() }).strict();

/** A Flagger Canary's `spec.analysis`: the fields lastgood reads; the others (webhooks, match, …) are accepted and ignored. */
export const FlaggerAnalysisConfig = z.looseObject({
  interval: GoDuration.optional(),
  threshold: z.number().int().min(0).optional(),
  iterations: z.number().int().min(0).optional(),
  maxWeight: z.number().int().min(0).optional(),
  stepWeight: z.number().int().min(0).optional(),
  stepWeights: z.array(z.number().int()).optional(),
  metrics: z.array(z.looseObject({
    name: z.string().min(1),
    interval: GoDuration.optional(),
    threshold: z.number().optional(),
    thresholdRange: Threshold.optional(),
    query: z.string().optional(),
    templateRef: z.object({ name: z.string().min(1), namespace: z.string().optional() }).strict().optional(),
    templateVariables: z.record(z.string(), WithFacts).optional(),
  })).min(1, 'a Flagger analysis needs metrics'),
});

export const TargetAnalysis = z
  .object({
    workload: z
      .object({ kind: z.enum(['Deployment', 'StatefulSet']), namespace: z.string().min(1).optional(), name: z.string().min(1) })
      .strict()
      .optional()
      .describe('the workload whose rollouts are analysed (default: the target\'s one Deployment or StatefulSet resource)'),
    window: LastgoodDuration.default('10m').describe('how long after the rollout began a check without a count keeps measuring; it passes when the window ends without a failure'),
    checks: z.array(NativeCheck).optional().describe('checks written here: Argo Rollouts\' metric fields with a PromQL query'),
    argo: ArgoAnalysis.optional().describe('Argo Rollouts AnalysisTemplates / ClusterAnalysisTemplates, read from the cluster or the snapshot'),
    flagger: FlaggerAnalysisConfig.optional().describe('a Flagger Canary\'s spec.analysis, copied here; its MetricTemplates are read from the cluster or the snapshot'),
    canary: z.object({ name: z.string().min(1), namespace: z.string().min(1).optional() }).strict().optional()
      .describe('read spec.analysis from this Flagger Canary (default namespace: the workload\'s)'),
  })
  .strict()
  .superRefine((a, ctx) => {
    if (!a.checks?.length && !a.argo && !a.flagger && !a.canary) ctx.addIssue({ code: 'custom', message: 'name at least one check: checks, argo, flagger or canary' });
    const names = new Set<string>();
    a.checks?.forEach((c, i) => {
      if (names.has(c.name)) ctx.addIssue({ code: 'custom', path: ['checks', i, 'name'], message: `duplicate check name "${c.name}"` });
      names.add(c.name);
    });
  });

export type TargetAnalysisConfig = z.output<typeof TargetAnalysis>;
export type NativeCheckConfig = z.output<typeof NativeCheck>;
export type FlaggerAnalysisSettings = z.output<typeof FlaggerAnalysisConfig>;
export type AnalysisProvidersConfig = z.output<typeof AnalysisProviders>;

/** A target's analysis with its workload resolved (src/config/schema.ts resolveTarget). */
export interface ResolvedAnalysis extends Omit<TargetAnalysisConfig, 'workload' | 'window'> {
  workload: { apiVersion: string; kind: string; namespace?: string; name: string };
  windowMs: number;
}

/**
 * The workload of a target's analysis: the one named, else the target's only Deployment or
 * StatefulSet resource. Returns an error message when there is none or more than one.
 */
export function analysisWorkload(analysis: TargetAnalysisConfig, resources: Array<{ apiVersion: string; kind: string; namespace?: string; name: string }>): ResolvedAnalysis['workload'] | string {
  const workloads = resources.filter((r) => /^apps\//.test(r.apiVersion) && (r.kind === 'Deployment' || r.kind === 'StatefulSet'));
  if (analysis.workload) {
    const { kind, name, namespace } = analysis.workload;
    const found = workloads.find((w) => w.kind === kind && w.name === name && (namespace === undefined || w.namespace === namespace));
    // the workload is one of the target's resources: observed (and watched) with them, its health part of the verdict
    return found ?? `analysis.workload ${kind} ${namespace ? `${namespace}/` : ''}${name} is not one of the target's resources: list it there too`;
  }
  if (workloads.length === 1) return workloads[0]!;
  return workloads.length === 0
    ? 'the target lists no Deployment or StatefulSet: name the workload in analysis.workload'
    : `the target lists ${workloads.length} workloads (${workloads.map((w) => `${w.kind} ${w.name}`).join(', ')}): name one in analysis.workload`;
}
