import { formatDuration, parseDuration } from '../config/duration.ts';
import type { PolicyConfig, ResolvedTarget } from '../config/schema.ts';
import type { Decision, Verdict } from './types.ts';

export interface DecideInput {
  verdict: Verdict;
  target: Pick<ResolvedTarget, 'onFailure' | 'confirmations'>;
  now: Date;
  /** consecutive failed assessments seen by this process (a one-shot run sees 1) */
  observations: number;
}

/**
 * What to do about one target's verdict. Pure. Confirmations count consecutive failed
 * assessments; a one-shot run sees one, so there a failure counts as confirmed when the engine
 * itself gave its final verdict (a terminal failure) or the failure is older than `wait`.
 */
export function decide({ verdict, target, now, observations }: DecideInput): Decision {
  if (verdict.verdict === 'healthy') return { action: 'none', reason: 'healthy' };
  if (verdict.verdict === 'progressing') return { action: 'none', reason: verdict.summary };
  const cls = verdict.class ?? (verdict.verdict === 'stuck' ? 'stuck' : 'analysis');
  const policy: PolicyConfig = target.onFailure[cls];
  if (policy === 'none') return { action: 'none', reason: `${verdict.summary}; policy for ${cls} failures is none` };
  if (verdict.verdict === 'failed') {
    const terminal = verdict.evidence.some((e) => e.state === 'failed' && e.terminal);
    if (observations < target.confirmations && !terminal) {
      return { action: 'wait', reason: `${verdict.summary}; ${observations}/${target.confirmations} confirmations` };
    }
  }
  if (typeof policy === 'object') {
    const waitMs = parseDuration(policy.wait)!;
    const age = verdict.since ? now.getTime() - Date.parse(verdict.since) : 0;
    if (age < waitMs) {
      return { action: 'wait', reason: `${verdict.summary}; waiting ${formatDuration(waitMs - age)} more for it to heal, then ${policy.then}` };
    }
    return { action: policy.then, reason: `${verdict.summary}; not healed within ${policy.wait}, ${policy.then}` };
  }
  return { action: policy, reason: `${verdict.summary}; ${policy}` };
}
