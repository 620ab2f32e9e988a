/**
 * The analysis stage's vocabulary: a check (one metric, from lastgood.yaml, an Argo Rollouts
 * AnalysisTemplate or a Flagger Canary's analysis), its measurements, and what a metric provider
 * answers. Argo Rollouts' words are kept (pkg/apis/rollouts/v1alpha1/analysis_types.go): a
 * measurement is Successful, Failed, Inconclusive or Error; a check is Pending, Running, or
 * ends Successful, Failed, Inconclusive or Error.
 */

export type MeasurementPhase = 'Successful' | 'Failed' | 'Inconclusive' | 'Error';
export type CheckPhase = 'Pending' | 'Running' | MeasurementPhase;

export function completed(phase: CheckPhase): boolean {
  return phase !== 'Pending' && phase !== 'Running';
}

/** One measurement: the query evaluated at one instant. */
export interface Measurement {
  /** the instant the query was evaluated at (ms since the epoch) */
  at: number;
  phase: MeasurementPhase;
  /** the value as the provider gave it, for people: "[0.082]", "0.5", "[]" */
  value: string;
  /** why this phase: the condition that held, the error */
  message: string;
}

/** What a provider answers for a query (Prometheus' result types, as Argo Rollouts reads them). */
export type MetricValue =
  | { type: 'scalar'; value: number }
  | { type: 'vector'; values: number[] }
  | { type: 'matrix'; values: number[] }
  | { type: 'string'; value: string };

/** How one query's value is judged into a measurement phase (Argo's conditions, Flagger's thresholdRange). */
export type Judge = (value: MetricValue) => { phase: MeasurementPhase; message: string };

/** Where a check's queries go: a provider of the registry (src/analysis/providers/registry.ts) and its address. */
export interface ProviderRef {
  /** registry key: "prometheus" */
  name: string;
  /** the address the template or the check names; lastgood.yaml's analysis.<provider>.address replaces it */
  address?: string;
  /** per-query timeout the template asks for (Argo: provider.prometheus.timeout, seconds) */
  timeoutMs?: number;
}

/** One check of a target, in one shape whatever format it was written in. */
export interface CheckSpec {
  /** unique within the target: the evidence name */
  name: string;
  /** where the check comes from, for people: "lastgood.yaml", "AnalysisTemplate prod/success-rate", "Canary test/podinfo" */
  source: string;
  /** whose rules judge the measurements: Argo Rollouts' (lastgood.yaml checks and AnalysisTemplates) or Flagger's */
  semantics: 'argo' | 'flagger';
  provider: ProviderRef;
  /** the queries of one measurement, rendered: one for Argo; one per metric of a Flagger analysis (all run at each tick) */
  queries: Array<{ name: string; query: string; judge: Judge; condition: string }>;
  /** when measurements are taken, relative to the rollout's start */
  schedule: {
    initialDelayMs: number;
    /** between measurements; undefined: one measurement */
    intervalMs?: number;
    /** after a measurement in Error (Argo: DefaultErrorRetryInterval 10 s) */
    errorRetryMs: number;
    /** how many measurements count (Argo's effective count); undefined: until the window ends */
    count?: number;
    /** only successful measurements count towards `count` (Flagger: a halted tick does not advance the analysis) */
    countSuccessfulOnly?: boolean;
  };
  limits: {
    /** more Failed measurements than this fail the check; -1: not applicable (Argo) */
    failureLimit: number;
    inconclusiveLimit: number;
    consecutiveErrorLimit: number;
    /** this many Successful in a row make the check Successful; 0: off (Argo) */
    consecutiveSuccessLimit: number;
  };
  /** Argo's spec.dryRun: measured and reported, never fails or holds the target */
  dryRun?: boolean;
  /** what a person should read about how this check was set up (a builtin metric skipped, an address replaced) */
  notes?: string[];
}

/** The facts of a rollout that queries may use, named as lastgood.yaml writes them: `{{namespace}}`, `{{podTemplateHash}}`. */
export interface RolloutFacts {
  /** lastgood's target name */
  target: string;
  namespace: string;
  /** "Deployment" or "StatefulSet" */
  kind: string;
  /** the workload's name */
  workload: string;
  /** the new ReplicaSet's name (Deployment) or the StatefulSet's updateRevision */
  revision: string;
  /** the `pod-template-hash` label of the new pods (Deployment), the `controller-revision-hash` label's value (StatefulSet) */
  podTemplateHash: string;
  /** the first container's image of the new revision, and its tag (or digest) */
  image: string;
  imageTag: string;
}

export const FACT_NAMES: ReadonlyArray<keyof RolloutFacts> = ['target', 'namespace', 'kind', 'workload', 'revision', 'podTemplateHash', 'image', 'imageTag'];
