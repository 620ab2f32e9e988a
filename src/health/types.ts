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
  /** Helm chart version */
  chart?: string;
  /** container images, "repo:tag" or "repo@sha256:…" */
  images?: string[];
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
}

/** One assessor per kind family. Pure: same object and clock, same Health. Must not throw (the registry guards anyway). */
export type Assessor = (object: KubeObject, now: Date) => Health;
