/** run: check, gather the repository's guards, decide, and revert what the policy says; one target's error never stops the others. */
import type { Config, ResolvedTarget } from '../config/schema.ts';
import type { RepoGuards, Verdict } from '../decide/types.ts';
import { repoGuards } from '../history/guards.ts';
import type { RepoBackend } from '../repo/types.ts';
import type { TargetOutcome, Report, RunOptions, TrackedRunOptions } from './types.ts';
import { baseOutcome, recordError } from './outcome.ts';
import { verdicts, decisionFor } from './check.ts';
import { hookAlone, notifyOutcomes, closeSuperseded } from './effects.ts';
import { revertInto } from './revert.ts';

/** The whole pipeline: check, then for each target whose decision is revert, locate, plan and deliver. */
export async function run(opts: RunOptions): Promise<Report> {
  const targets: TargetOutcome[] = [];
  let head: string | undefined;
  for (const { target, verdict } of verdicts(opts)) {
    let outcome: TargetOutcome | undefined;
    try {
      // guards that need the repository (last revert, revert of a revert), only for targets that are failed or stuck
      let guards = opts.guards?.get(target.name);
      if (!guards && (verdict.verdict === 'failed' || verdict.verdict === 'stuck')) {
        head ??= await opts.repo.head(opts.config.repo.branch);
        guards = await gatherGuards({ repo: opts.repo, config: opts.config, target, verdict, head, now: opts.now });
      }
      const decision = decisionFor(target, verdict, opts, guards);
      outcome = baseOutcome(verdict, decision);
      targets.push(outcome);
      // a hook whose policy does not revert (then: none | alert) runs here; one before a revert runs right before delivery
      const revert = decision.action === 'revert' || (decision.hook !== undefined && (await hookAlone(outcome, decision.hook, { ...opts, verdict })));
      if (revert) await revertInto(outcome, { ...opts, target, verdict, hook: decision.action === 'revert' ? decision.hook : undefined });
      else if (verdict.verdict === 'healthy' && !opts.dryRun) await closeSuperseded(outcome, opts);
    } catch (error) {
      // one target's error never stops the others: it is reported, and the exit code is the worst
      if (!outcome) targets.push((outcome = baseOutcome(verdict, { action: 'alert', reason: '' })));
      recordError(outcome, error, opts.log);
    }
  }
  await notifyOutcomes({ targets }, opts);
  return { targets };
}

/** What the repository says about a target's past reverts, for decide's guards (reads only). */
export async function gatherGuards(opts: { repo: RepoBackend; config: Config; target: ResolvedTarget; verdict: Verdict; head?: string; now: Date }): Promise<RepoGuards> {
  const head = opts.head ?? (await opts.repo.head(opts.config.repo.branch));
  return repoGuards({ reader: opts.repo, head, target: opts.target, evidence: opts.verdict.evidence, now: opts.now });
}

/**
 * The act step of a door that tracks a target over time (the controller, the Action's `wait`):
 * the pipeline for one target with the tracker's confirmations. A verdict the tracker made (stuck
 * by watching: the engine's own verdict is still progressing) is acted on as the tracker decided.
 * Errors end in the outcome, as in `run`.
 */
export async function runTracked(opts: TrackedRunOptions): Promise<TargetOutcome> {
  const { target, evaluation, guards, ...rest } = opts;
  if (!evaluation.byTracker) {
    const report = await run({
      ...rest, target: target.name, observations: new Map([[target.name, opts.observations]]),
      ...(guards ? { guards: new Map([[target.name, guards]]) } : {}),
    });
    return report.targets[0]!;
  }
  const { verdict, decision } = evaluation;
  const outcome = baseOutcome(verdict, decision);
  try {
    const revert = decision.action === 'revert' || (decision.hook !== undefined && (await hookAlone(outcome, decision.hook, { ...rest, verdict })));
    if (revert) await revertInto(outcome, { ...rest, target, verdict, hook: decision.action === 'revert' ? decision.hook : undefined });
  } catch (error) {
    recordError(outcome, error, opts.log);
  }
  await notifyOutcomes({ targets: [outcome] }, opts);
  return outcome;
}
