/** check: config + observed objects → each target's verdict and decision. Pure, no repository. */
import { resolveTarget, type Config, type ResolvedTarget } from '../config/schema.ts';
import { decide } from '../decide/decide.ts';
import type { Decision, Evidence, RepoGuards, Verdict } from '../decide/types.ts';
import { evidenceFor, verdictFor } from '../decide/verdict.ts';
import { InputError } from '../errors.ts';
import type { Observed } from '../observe/types.ts';
import { analyseTargets, createAnalysisSession, providersFor, type AnalysisContext, type AnalysisResult, type AnalysisSession } from '../analysis/index.ts';
import type { Report, CheckOptions } from './types.ts';
import { baseOutcome } from './outcome.ts';

export function selectTargets(config: Config, name?: string): ResolvedTarget[] {
  const targets = config.targets.map((t) => resolveTarget(config, t));
  if (name === undefined) return targets;
  const found = targets.filter((t) => t.name === name);
  if (found.length === 0) throw new InputError(`unknown target "${name}" (configured: ${targets.map((t) => t.name).join(', ')})`);
  return found;
}

/** config + observed objects → each selected target's verdict. Pure. */
export function verdicts(opts: CheckOptions): Array<{ target: ResolvedTarget; verdict: Verdict }> {
  const all = opts.config.targets.map((t) => ({ name: t.name, resources: t.resources }));
  return selectTargets(opts.config, opts.target).map((target) => {
    const others = all.filter((t) => t.name !== target.name).map((t) => t.resources);
    return { target, verdict: assessTarget(target, opts.observed, opts.now, others, opts.analysis?.get(target.name)?.evidence) };
  });
}

/**
 * One target's verdict from its observed objects. Pure. `others` are the resources of the other
 * targets (a shared parent failing only because of them is not this target's failure); passing
 * every target's, this one's included, gives the same verdict (the controller keeps one list).
 */
export function assessTarget(target: ResolvedTarget, observed: Observed[], now: Date, others: ResolvedTarget['resources'][] = [], analysis: Evidence[] = []): Verdict {
  return verdictFor(target, [...evidenceFor(target, observed, now, others), ...analysis], now);
}

/**
 * Metric analysis, one shot (`check`, `run`, the Action): every measurement of the selected
 * targets' checks due by `now`, as evidence for `check`/`run` (`opts.analysis`). Doors that
 * observe over time keep sessions instead (`analysisSessions`).
 */
export async function analyse(opts: Pick<CheckOptions, 'config' | 'observed' | 'now' | 'target'> & Omit<AnalysisContext, 'config'>): Promise<Map<string, AnalysisResult>> {
  const targets = selectTargets(opts.config, opts.target);
  if (!targets.some((t) => t.analysis)) return new Map();
  return analyseTargets({ ...opts, targets });
}

/** Metric analysis over time, for the controller and the Action's `wait`: one session per target with checks, each measurement taken once. */
export function analysisSessions(config: Config, ctx: Omit<AnalysisContext, 'config'>): (target: ResolvedTarget) => AnalysisSession | undefined {
  const full: AnalysisContext = { ...ctx, config };
  const providers = providersFor(full);
  const sessions = new Map<string, AnalysisSession>();
  return (target) => {
    if (!target.analysis) return undefined;
    let s = sessions.get(target.name);
    if (!s) sessions.set(target.name, (s = createAnalysisSession(target, full, providers)));
    return s;
  };
}

export function decisionFor(target: ResolvedTarget, verdict: Verdict, opts: CheckOptions, guards: RepoGuards | undefined): Decision {
  return decide({ verdict, target, now: opts.now, observations: opts.observations?.get(target.name) ?? 1, guards });
}

/** config + observed objects → verdict and decision per target. Pure. */
export function check(opts: CheckOptions): Array<{ target: ResolvedTarget; verdict: Verdict; decision: Decision }> {
  return verdicts(opts).map(({ target, verdict }) => ({ target, verdict, decision: decisionFor(target, verdict, opts, opts.guards?.get(target.name)) }));
}

/** `check` as the report shows it: each target's verdict and decision as an outcome (nothing located, nothing written). */
export function checkReport(opts: CheckOptions): Report {
  return { targets: check(opts).map(({ verdict, decision }) => baseOutcome(verdict, decision)) };
}
