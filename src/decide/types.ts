import type { FailureClass, HealthState, Revision } from '../health/types.ts';

export type VerdictState = 'healthy' | 'progressing' | 'failed' | 'stuck';

/** One object's part in a target's verdict (DESIGN.md Lastgood-Evidence). */
export interface Evidence {
  apiVersion: string;
  kind: string;
  /** "group/Kind" (core kinds: "Kind") */
  groupKind: string;
  namespace?: string;
  name: string;
  state: HealthState;
  reason: string;
  message: string;
  since?: string;
  failureClass?: 'analysis' | 'promotion';
  terminal?: boolean;
  attempted?: Revision;
  lastSucceeded?: Revision;
  /** where the object was read from (file, "kube", "event"); absent when the object was not found */
  source?: string;
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
}
