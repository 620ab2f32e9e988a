import type { KubeObject } from '../observe/types.ts';

export const HEALTH_STATES = ['healthy', 'progressing', 'suspended', 'failed', 'unknown'] as const;
export type HealthState = (typeof HEALTH_STATES)[number];

/**
 * Why a target failed (DESIGN.md "Verdict"): the new revision was judged bad (`analysis`),
 * analysis passed but rolling it out failed (`promotion`), or no progress past a deadline (`stuck`,
 * set by decide, never by an assessor).
 */
export type FailureClass = 'analysis' | 'promotion' | 'stuck';

/** A revision as an object reports it. Any field may be missing; `raw` keeps the original text. */
export interface Revision {
  /** the original string, e.g. "main@sha1:3f2a…" or "main/3f2a…" or "6.0.1" */
  raw?: string;
  /** git commit SHA (full, or as long as the object tells it), lower case */
  sha?: string;
  /** branch or tag the revision came from, e.g. "main" */
  ref?: string;
  /** Helm chart version (without a `+<sha>` build suffix; the suffix, when it is a git commit, is in `sha`) */
  chart?: string;
  /** Helm chart name, where the object tells it (HelmRelease `spec.chart.spec.chart`, history `chartName`) */
  chartName?: string;
  /** container images, "repo:tag" or "repo@sha256:…" */
  images?: string[];
  /** ISO time at which the engine last applied this revision, where the object tells it (a HelmRelease history snapshot's lastDeployed) */
  at?: string;
  /**
   * Multi-source Argo CD Applications: one revision per source, index-aligned with
   * `spec.sources` (a git SHA, or a chart version in `raw`/`chart`). `sha` above is the first git SHA among them.
   */
  sources?: Revision[];
}

/** The health of one Kubernetes object at one moment. */
export interface Health {
  state: HealthState;
  /** a short CamelCase reason, e.g. "ProgressDeadlineExceeded", "Failed", "HealthCheckFailed" */
  reason: string;
  /** a human message from the object's own status where there is one */
  message: string;
  /** ISO time at which this state began, from the object's own condition times */
  since?: string;
  /** for state `failed` only: which kind of failure the object says this is (default analysis) */
  failureClass?: 'analysis' | 'promotion';
  /** true when the engine itself gave its final verdict (no more retries will change it) */
  terminal?: boolean;
  /** the revision the object is trying to reach */
  attempted?: Revision;
  /** the revision it last reached successfully */
  lastSucceeded?: Revision;
  /**
   * Optional (decide's `settle` guard): true while the object is applying a promotion or sync right
   * now (Kargo Promotion Pending/Running, Argo CD operationState.phase Running, a Flux object
   * reconciling a new revision). Decide also derives this from state/reason when it is absent.
   */
  inFlight?: boolean;
  /**
   * Where the object names them: the objects whose state makes this one fail (a Flux Kustomization's
   * `timeout waiting for: [Canary/prod/podinfo status: 'Failed']`, an Argo CD Application's degraded
   * resources). A parent shared by several targets fails only the targets that own one of them.
   */
  failingObjects?: ObjectRef[];
  /**
   * The exact images of the containers that fail, where the object tells which (a Pod's container
   * statuses). `attempted.images` lists every image of the pod template; this is the narrower set.
   */
  failingImages?: string[];
  /**
   * Why an automatic revert of this failure would do harm or duel with the engine (decide alerts
   * instead, unless the target opts in): Flagger ≥ 1.44 keeps the canary serving after a failed
   * promotion, and a new revision then routes all traffic to the broken primary; a Kargo rollback
   * Promotion is the engine's own rollback.
   */
  revertHazard?: { kind: 'flagger-promotion-failure' | 'engine-rollback'; message: string };
  /** Facts a person should read in the report that change nothing in the decision (Argo CD will sync a revert only after its retries end). */
  notes?: string[];
}

/** A Kubernetes object named in another object's status. */
export interface ObjectRef {
  /** "group/Kind" as groupKind() writes it when the group is known, else the bare Kind */
  kind: string;
  namespace?: string;
  name: string;
  /** the status the naming object reports for it ("Failed", "InProgress", "Degraded") */
  status?: string;
}

/** One assessor per kind family. Pure: same object and clock, same Health. Must not throw (the registry guards anyway). */
export type Assessor = (object: KubeObject, now: Date) => Health;
