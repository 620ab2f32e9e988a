import { formatDuration } from '../config/duration.ts';
import type { ResolvedHook, ResolvedPolicy, ResolvedTarget } from '../config/schema.ts';
import { ageMs } from '../observe/times.ts';
import { holdsOf, inFlightOf, REVERT_ITSELF_FAILED } from './guards.ts';
import type { ActionKind, Decision, GuardName, HookPlan, RepoGuards, Verdict } from './types.ts';

/** The target settings decide reads. Guard settings left out are off (tests pass plain data). */
export type DecideTarget = Pick<ResolvedTarget, 'onFailure' | 'confirmations'> &
  Partial<Pick<ResolvedTarget, 'stuckAfterMs' | 'settle' | 'maxAgeMs' | 'cooldownMs' | 'freezeUntil' | 'allowRevertDuring'>>;

export interface DecideInput {
  verdict: Verdict;
  target: DecideTarget;
  now: Date;
  /** consecutive failed assessments seen by this process (a one-shot run sees 1) */
  observations: number;
  /** what the repository says about past reverts of the target (the engine gathers it; absent in `check`) */
  guards?: RepoGuards;
}

/**
 * What to do about one target's verdict. Pure: verdict, settings, clock and plain repo facts in,
 * a Decision out.
 *
 * 0. An observation whose time lies ahead of the clock beyond the skew tolerance: nothing is
 *    judged (held by `clock`, the reason says which object, field and time).
 * 1. Healthy or progressing: nothing (a failure that healed within a wait window ends here).
 * 2. The class's policy `none`: ignored.
 * 3. Confirmations: consecutive failed assessments. A one-shot run sees one, so there a failure
 *    counts as confirmed when the engine itself gave its final verdict (a terminal failure).
 * 4. `wait`: until the failure is older than the wait, give it a chance to heal.
 * 5. Only when lastgood is about to intervene (revert, or run a hook), the guards, in order:
 *    no revert of a revert (→ alert), maxAge (→ ignored), freezeUntil and the hold annotation,
 *    settle (another promotion in flight), cooldown (→ wait). Alerts are never held: they write nothing.
 * Every guard that holds a revert back says so in the reason.
 */
export function decide({ verdict, target, now, observations, guards }: DecideInput): Decision {
  // a time beyond the clock's skew tolerance: nothing about the target can be judged by time (maxAge, wait, stuckAfter)
  const refused = verdict.evidence.flatMap((e) => (e.clockRefused ? [e.clockRefused] : []));
  if (refused.length > 0) return held('none', 'clock', `not judged: ${refused.join('; ')}`);
  if (verdict.verdict === 'healthy') return { action: 'none', reason: 'healthy' };
  if (verdict.verdict === 'progressing') return { action: 'none', reason: verdict.summary };
  const cls = verdict.class ?? (verdict.verdict === 'stuck' ? 'stuck' : 'analysis');
  const policy: ResolvedPolicy = target.onFailure[cls];
  if (policy === 'none') return { action: 'none', reason: `${verdict.summary}, ignored: the policy for ${cls} failures is none` };

  const failedAt = failureTime(verdict, target);
  const age = failedAt === undefined ? undefined : ageMs(failedAt, now.getTime());

  const parts = [verdict.summary];
  if (verdict.verdict === 'failed') {
    const terminal = verdict.evidence.some((e) => e.state === 'failed' && e.terminal);
    const needed = target.confirmations;
    if (observations < needed && !terminal) {
      return held('wait', 'confirmations', `${verdict.summary}, ${observations}/${needed} confirmations`);
    }
    // a one-shot run sees one assessment: there the engine's own final verdict stands for the confirmations
    parts.push(observations >= needed ? `${needed}/${needed} confirmations` : `the engine's verdict is final (no further assessment can change it)`);
  }

  let action: Exclude<ActionKind, 'wait'>;
  let hook: HookPlan | undefined;
  if (typeof policy === 'string') {
    action = policy;
  } else {
    action = policy.then;
    if ('hook' in policy) hook = hookPlan(policy.hook, policy.then, policy.onHookFailure);
    const { waitMs } = policy;
    if (waitMs !== undefined) {
      const then = hook ? `${describeHook(hook)}, then ${action}` : action;
      if (age === undefined || age < waitMs) {
        const left = age === undefined ? `${formatDuration(waitMs)} (no failure time is known)` : `${formatDuration(waitMs - age)} more`;
        return held('wait', 'wait', `${parts.join(', ')}, waiting ${left} for it to heal, then ${then}`);
      }
      parts.push(`not healed within ${formatDuration(waitMs)}`);
    }
  }
  if (hook) parts.push(describeHook(hook));
  const base = parts.join(', ');
  const decided = (a: Exclude<ActionKind, 'wait'>): Decision => ({ action: a, reason: `${base}, ${hook ? `then ${a}` : a}`, ...(hook ? { hook } : {}) });

  // Alerts and ignores write nothing: no guard applies.
  if (action !== 'revert' && !hook) return decided(action);

  if (action === 'revert') {
    const hazard = verdict.evidence.find((e) => e.state === 'failed' && e.revertHazard && !(target.allowRevertDuring ?? []).includes(e.revertHazard.kind as never))?.revertHazard;
    if (hazard?.kind === 'engine-rollback') {
      return held('alert', 'hazard', `${verdict.summary}; ${hazard.message}: lastgood never reverts the engine's own rollback; alert`);
    }
    if (hazard) {
      return held('alert', 'hazard', `${verdict.summary}; not reverted: ${hazard.message} (to revert anyway, list "${hazard.kind}" in the target's allowRevertDuring); alert`);
    }
  }
  if (action === 'revert' && guards?.observedBefore) {
    const o = guards.observedBefore;
    return held('wait', 'observed-before', `held: ${o.object} failed since ${o.failedSince}, before lastgood's revert ${o.commit.slice(0, 12)} was applied (${o.appliedSince}): a failure left over from the revision before it, not the revert's; waiting for an observation at the revert; ${verdict.summary}`);
  }
  if (action === 'revert' && guards?.revertOfRevert) {
    const r = guards.revertOfRevert;
    return held('alert', 'revert-of-revert', `${verdict.summary}; ${REVERT_ITSELF_FAILED}: the failing revision ${r.commit.slice(0, 12)} is lastgood's own revert for ${r.target}: lastgood never reverts a revert, a person must look; alert`);
  }
  if (target.maxAgeMs !== undefined && age !== undefined && age > target.maxAgeMs) {
    return held('none', 'maxAge', `ignored: failure is ${formatDuration(age)} old, older than maxAge ${formatDuration(target.maxAgeMs)}; ${verdict.summary}`);
  }
  if (target.freezeUntil !== undefined && now.getTime() < Date.parse(target.freezeUntil)) {
    return held('wait', 'freeze', `held: frozen until ${target.freezeUntil} (freezeUntil); ${base}`);
  }
  const holds = holdsOf(verdict.evidence);
  if (holds.length > 0) return held('wait', 'hold', `held: ${holds.join('; ')} (annotation lastgood.dev/hold); ${base}`);
  if (target.settle !== false) {
    const flying = inFlightOf(verdict.evidence, { isTheFailure: (e) => verdict.verdict === 'stuck' && isStuckObject(e, target, now) });
    if (flying.length > 0) return held('wait', 'settle', `held: another promotion is running (${flying.map((f) => f.description).join(', ')}); ${base}`);
  }
  const last = guards?.lastRevert;
  if (action === 'revert' && last && (target.cooldownMs ?? 0) > 0) {
    // the host's clock (a commit date): within the skew tolerance it may lie a little ahead of ours
    const lastAt = Date.parse(last.at);
    const sinceLast = ageMs(lastAt, now.getTime());
    // a second revert only when this failure comes after the last one (the cluster runs it, or the failure began after it)
    const second = last.deployed ?? (failedAt === undefined || failedAt >= lastAt);
    if (second && sinceLast < target.cooldownMs!) {
      return held('wait', 'cooldown', `held: cooldown: lastgood reverted this target ${formatDuration(sinceLast)} ago (${last.commit.slice(0, 12)}), cooldown ${formatDuration(target.cooldownMs!)}; ${base}`);
    }
  }
  return decided(action);
}

/** A stuck target's own failure: an object progressing for longer than stuckAfter (it is not "another promotion"). */
function isStuckObject(e: { state: string; since?: string }, target: DecideTarget, now: Date): boolean {
  if (e.state !== 'progressing' || !e.since) return false;
  return now.getTime() - Date.parse(e.since) > (target.stuckAfterMs ?? 0);
}

function held(action: ActionKind, by: GuardName, reason: string): Decision {
  return { action, reason, heldBy: by };
}

/** When the failure began: the verdict's time; for stuck, the moment it passed stuckAfter. */
function failureTime(verdict: Verdict, target: DecideTarget): number | undefined {
  if (!verdict.since) return undefined;
  const since = Date.parse(verdict.since);
  if (Number.isNaN(since)) return undefined;
  return verdict.verdict === 'stuck' ? since + (target.stuckAfterMs ?? 0) : since;
}

function hookPlan(hook: ResolvedHook, then: Exclude<ActionKind, 'wait'>, onFailure: Exclude<ActionKind, 'wait'>): HookPlan {
  return { spec: 'url' in hook ? { url: hook.url } : { command: hook.command, ...(hook.env ? { env: hook.env } : {}) }, timeoutMs: hook.timeoutMs, then, onFailure };
}

/** Names a hook without its URL (a URL may carry a token). */
export function describeHook(hook: Pick<HookPlan, 'spec'>): string {
  return 'url' in hook.spec ? 'hook (POST to its URL)' : `hook (${hook.spec.command[0]})`;
}
