import type { FailureClass, Health } from '../health/types.ts';

export type VerdictState = 'healthy' | 'progressing' | 'failed' | 'stuck';

/** One object's part in a target's verdict (DESIGN.md Lastgood-Evidence): the object, named, and its Health. */
export interface Evidence extends Health {
  apiVersion: string;
  kind: string;
  /** "group/Kind" (core kinds: "Kind") */
  groupKind: string;
  namespace?: string;
  name: string;
  /** where the object was read from (file, "kube", "event"); absent when the object was not found */
  source?: string;
  /** the object's `lastgood.dev/hold` annotation: while present, lastgood writes nothing for the target */
  hold?: string;
  /** a shared parent failing because of other targets' objects (says which): not this target's failure */
  foreign?: string;
  /** the object's time lies ahead of the clock beyond the skew tolerance: refused as evidence, and why (observe/times.ts) */
  clockRefused?: string;
  /** a metric check (src/analysis/): its query, values, condition and times */
  analysis?: AnalysisDetail;
  /** why this evidence could not be evaluated, with the run's exit code for it (2 bad input, 3 an outside system, 4 a metric check in error) */
  problem?: { code: 2 | 3 | 4; message: string };
}

/** What a metric check's evidence shows: the query, the values, the condition and the times. */
export interface AnalysisDetail {
  check: string;
  /** where the check comes from: lastgood.yaml, AnalysisTemplate prod/x, Canary test/podinfo */
  source: string;
  /** Argo Rollouts' or Flagger's rules */
  semantics: 'argo' | 'flagger';
  /** Pending, Running, Successful, Failed, Inconclusive, Error; Unreachable when the provider could not be asked */
  phase: string;
  provider?: string;
  queries: Array<{ name: string; query: string; condition: string }>;
  /** the rollout the window started for */
  rollout?: { workload: string; revision: string; start: string; startedBy: string };
  /** the latest measurements, oldest first (at most 10) */
  measurements: Array<{ at: string; phase: string; value: string; message: string }>;
  /** measurements taken, and of them failed / inconclusive / in error */
  taken: number;
  failed: number;
  inconclusive: number;
  errors: number;
  count?: number;
  /** the next measurement is due then (the check has not concluded) */
  nextAt?: string;
}

export interface Verdict {
  target: string;
  verdict: VerdictState;
  class?: FailureClass;
  /** when the verdict's state began (earliest failure, or the progressing object that has waited longest) */
  since?: string;
  /** one line saying why, for people */
  summary: string;
  evidence: Evidence[];
}

export type ActionKind = 'none' | 'wait' | 'revert' | 'alert';

export interface Decision {
  action: ActionKind;
  /** one line saying why this action, for people */
  reason: string;
  /** the guard that held a revert back (action `wait` or `none`), when one did */
  heldBy?: GuardName;
  /** a recovery hook to run before acting; the engine runs it only in `run` (never in `check`, never with --dry-run) */
  hook?: HookPlan;
}

export type GuardName = 'clock' | 'confirmations' | 'wait' | 'maxAge' | 'freeze' | 'hold' | 'settle' | 'cooldown' | 'revert-of-revert' | 'observed-before' | 'hazard';

/** `env.inherit`: secret-looking variables the command may inherit (decide/hook.ts withholds them otherwise). */
export type HookTarget = { url: string } | { command: string[]; env?: { inherit: string[] } };

export interface HookPlan {
  spec: HookTarget;
  timeoutMs: number;
  /** the action once the hook succeeded (the decision's own action) */
  then: Exclude<ActionKind, 'wait'>;
  /** the action when the hook failed */
  onFailure: Exclude<ActionKind, 'wait'>;
}

/**
 * What the config repository says about the target's past reverts, gathered by the engine
 * (decide itself reads nothing). Plain data so that decide stays pure.
 */
export interface RepoGuards {
  /** the newest lastgood commit for this target on the branch */
  lastRevert?: {
    commit: string;
    /** its commit time, ISO */
    at: string;
    /**
     * true: the failing revision contains this revert (the cluster runs it, so a new revert would be a second one);
     * false: the failing revision predates it (the sync has not caught up: the same failure, already handled);
     * undefined: unknown (no failing object reports a git revision): decided by comparing times
     */
    deployed?: boolean;
  };
  /** the failing revision is itself a lastgood commit: lastgood never reverts a revert */
  revertOfRevert?: { commit: string; target: string };
  /**
   * The revision the engine runs is lastgood's revert, but every failure was observed before it was
   * applied (a Deployment's ProgressDeadlineExceeded from the bad revision, seconds before the sync):
   * not the revert's failure, and not yet an observation at it (issue 35).
   */
  observedBefore?: { commit: string; object: string; failedSince: string; appliedSince: string };
}
