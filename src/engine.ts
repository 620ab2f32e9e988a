import type { Logger } from 'pino';
import { resolveTarget, type Config, type ResolvedTarget } from './config/schema.ts';
import { decide } from './decide/decide.ts';
import type { Decision, Evidence, HookPlan, RepoGuards, Verdict } from './decide/types.ts';
import { repoGuards } from './history/guards.ts';
import { hookPayload, runHook } from './decide/hook.ts';
import { notify } from './report/notify.ts';
import { claimEffect } from './report/once.ts';
import { evidenceFor, verdictFor } from './decide/verdict.ts';
import { soaked, type HealthyRun } from './decide/soak.ts';
import { InputError, LastgoodError, RevertImpossible, StaleHeadError, redact, type ExitCode } from './errors.ts';
import { changedFiles, firstParentLog } from './history/graph.ts';
import { blastRadius } from './revert/blast-radius.ts';
import { locate, revertInput, type Located } from './history/locate.ts';
import { lastgoodTarget, revertedBy } from './history/trailers.ts';
import type { Observed } from './observe/types.ts';
import type { Change, DeliveryMode, FileChange, Person, RepoBackend } from './repo/types.ts';
import { diffChange, diffStat, unifiedDiff } from './revert/diff.ts';
import { commitMessage, evidenceLine, lkgPhrase, pullRequestText } from './revert/message.ts';
import { newestVerified } from './history/notes.ts';
import type { Evaluation } from './decide/tracker.ts';
import { planRestore } from './revert/restore.ts';
import { planRevert } from './revert/threeway.ts';
import { planFreeze } from './revert/freeze.ts';
import { modelTarget, type TargetModeler } from './model/index.ts';
import { describeVerification, verifyPlan } from './verify/model-check.ts';
import { renderCheck, rendererFor } from './verify/render-check.ts';
import { analyseTargets, createAnalysisSession, providersFor, type AnalysisContext, type AnalysisResult, type AnalysisSession } from './analysis/index.ts';

/** What happened to one target: the DESIGN.md --json shape plus what a person needs to read. */
export interface TargetOutcome {
  name: string;
  verdict: Verdict['verdict'];
  class?: Verdict['class'];
  summary: string;
  evidence: Evidence[];
  action: Decision['action'];
  reason: string;
  bad: string[];
  lastKnownGood?: string;
  verified?: boolean;
  /** what the last-known-good is, in words (verified, the applied revision, the commit before the first bad one) */
  lkg?: string;
  /** how the bad commits were found: the signals and what they said */
  explanation?: string;
  commit?: string;
  branch?: string;
  pullRequest?: string;
  /** false when an earlier run already made this revert */
  created?: boolean;
  /** what the objects say a person should know (Argo CD will sync a revert only after its retries end) */
  notes?: string[];
  /** this target's run ended in an error (the others went on): its exit code and message */
  error?: { code: ExitCode; message: string };
  /** dry run, or a plan the blast-radius guard refused: the change that would be written */
  diff?: string;
  /** how the plan was checked against what the engine builds (src/verify): one line, and the rendered diff where a renderer ran */
  checked?: { summary: string; rendered?: { summary: string; text: string; markdown: string } };
  diffStat?: string;
  message?: string;
}

export interface Report {
  targets: TargetOutcome[];
}

export interface CheckOptions {
  config: Config;
  observed: Observed[];
  now: Date;
  target?: string;
  /** consecutive failed assessments per target (controller, --wait); one-shot runs see 1 */
  observations?: Map<string, number>;
  /** per target: what the repository says about its past reverts (run gathers it; check has no repository) */
  guards?: Map<string, RepoGuards>;
  /** per target: its metric checks' evidence (`analyse`, or a door's analysis sessions) */
  analysis?: Map<string, Pick<AnalysisResult, 'evidence'>>;
}

export function selectTargets(config: Config, name?: string): ResolvedTarget[] {
  const targets = config.targets.map((t) => resolveTarget(config, t));
  if (name === undefined) return targets;
  const found = targets.filter((t) => t.name === name);
  if (found.length === 0) throw new InputError(`unknown target "${name}" (configured: ${targets.map((t) => t.name).join(', ')})`);
  return found;
}

/** config + observed objects → each selected target's verdict. Pure. */
function verdicts(opts: CheckOptions): Array<{ target: ResolvedTarget; verdict: Verdict }> {
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

function decisionFor(target: ResolvedTarget, verdict: Verdict, opts: CheckOptions, guards: RepoGuards | undefined): Decision {
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

export interface RunOptions extends CheckOptions {
  repo: RepoBackend;
  mode?: DeliveryMode;
  dryRun: boolean;
  log: Logger;
  /** host links for PR bodies (default: the backend's, see commitLinks) */
  commitUrl?: (sha: string) => string;
  /** environment for notification URLs (default: process.env) */
  env?: Record<string, string | undefined>;
}

/** Links to commits for PR bodies and summaries: the door's, else the backend's host (none for a local repository or an unknown host). */
export function commitLinks(opts: Pick<RunOptions, 'repo' | 'commitUrl'>): ((sha: string) => string) | undefined {
  if (opts.commitUrl) return opts.commitUrl;
  const { repo } = opts;
  if (!repo.commitUrl?.('0'.repeat(40))) return undefined;
  return (sha) => repo.commitUrl!(sha)!;
}

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
        guards = await gatherGuards({ repo: opts.repo, config: opts.config, target, verdict, head });
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
export async function gatherGuards(opts: { repo: RepoBackend; config: Config; target: ResolvedTarget; verdict: Verdict; head?: string }): Promise<RepoGuards> {
  const head = opts.head ?? (await opts.repo.head(opts.config.repo.branch));
  return repoGuards({ reader: opts.repo, head, target: opts.target, evidence: opts.verdict.evidence });
}

export interface TrackedRunOptions extends Omit<RunOptions, 'target' | 'observations' | 'guards'> {
  target: ResolvedTarget;
  /** the tracker's evaluation of this observation (src/decide/tracker.ts) */
  evaluation: Pick<Evaluation, 'verdict' | 'byTracker' | 'decision'>;
  /** consecutive failed observations the tracker counted */
  observations: number;
  guards?: RepoGuards;
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

function recordError(outcome: TargetOutcome, error: unknown, log: Logger): void {
  const code: ExitCode = error instanceof LastgoodError ? error.exitCode : 3;
  const message = error instanceof Error ? error.message : String(error);
  if (!(error instanceof LastgoodError)) log.error({ target: outcome.name, err: error }, 'internal error');
  outcome.action = 'alert';
  outcome.error = { code, message: redact(error instanceof LastgoodError ? message : `internal error: ${message}`) };
  outcome.reason = `revert failed: ${outcome.error.message}`;
}

/**
 * A healthy target makes its open revert pull requests moot when the healthy revision contains
 * their bad commit (a fix landed on top, or the bad commit turned out fine): close them, saying why.
 */
async function closeSuperseded(outcome: TargetOutcome, opts: RunOptions): Promise<void> {
  if (!opts.repo.closeSupersededReverts) return;
  const sha = outcome.evidence.map((e) => e.attempted?.sha).find(Boolean);
  const healthy = sha ? await opts.repo.resolveCommit(sha) : undefined;
  if (!healthy) return;
  const closed = await opts.repo.closeSupersededReverts(outcome.name, healthy);
  if (closed.length) outcome.reason = `${outcome.reason}; closed superseded revert pull request${closed.length > 1 ? 's' : ''} ${closed.map((n) => `#${n}`).join(', ')}`;
}

/**
 * Runs a recovery hook before lastgood acts (never with --dry-run), and records what it said.
 * Returns true when the revert goes ahead: the hook succeeded, or failed with onHookFailure: revert.
 */
async function hookBefore(outcome: TargetOutcome, hook: HookPlan, opts: Pick<RunOptions, 'dryRun' | 'now' | 'log'> & { verdict: Verdict }): Promise<boolean> {
  if (opts.dryRun) {
    outcome.reason = `${outcome.reason}; dry run: hook not run`;
    return hook.then === 'revert';
  }
  const result = await runHook(hook, hookPayload(opts.verdict, outcome, opts.now));
  opts.log.info({ target: outcome.name, ok: result.ok, ms: result.ms }, 'ran recovery hook');
  if (result.ok) {
    outcome.reason = `${outcome.reason}; hook succeeded (${result.detail})`;
    return hook.then === 'revert';
  }
  outcome.action = hook.onFailure;
  outcome.reason = `hook failed (${result.detail}), onHookFailure: ${hook.onFailure}; ${outcome.reason}`;
  return hook.onFailure === 'revert';
}

/** A hook of a policy whose action is not revert; true when it asks for a revert after all (a failure with onHookFailure: revert). */
async function hookAlone(outcome: TargetOutcome, hook: HookPlan, opts: Pick<RunOptions, 'dryRun' | 'now' | 'log'> & { verdict: Verdict }): Promise<boolean> {
  const revert = await hookBefore(outcome, hook, opts);
  if (revert) outcome.action = 'revert';
  return revert;
}

/**
 * Notifications at the end of a run (never with --dry-run); failures are logged and change nothing.
 * A revert is announced once, whichever run finds it made (report/once.ts).
 */
async function notifyOutcomes(report: Report, opts: Pick<RunOptions, 'config' | 'env' | 'log' | 'now' | 'dryRun' | 'repo' | 'commitUrl'>): Promise<void> {
  if (opts.dryRun) return;
  const commitUrl = commitLinks(opts);
  await notify(report, {
    config: opts.config.notify, env: opts.env, log: opts.log, now: opts.now, ...(commitUrl ? { commitUrl } : {}),
    claim: (t) => claimEffect(opts.repo, t, 'notified', opts.now, opts.log),
  });
}

export interface RevertOptions extends Omit<RunOptions, 'observations' | 'target'> {
  target: ResolvedTarget;
  verdict: Verdict;
  /** a recovery hook to run right before delivery (policy `{ hook, then: revert }`) */
  hook?: HookPlan;
  /** lastgood revert --bad/--to: a person names the commits */
  bad?: string;
  to?: string;
  reason?: string;
}

export interface PersonRevertOptions extends Omit<RevertOptions, 'target' | 'verdict' | 'hook'> {
  /** the target's name */
  target: string;
}

/**
 * A person's explicit revert, whichever door it comes through (`lastgood revert`, the Action's
 * `bad` input on a workflow_dispatch). A person decided, so the automatic guards — confirmations,
 * policy waits, maxAge, cooldown, settle, freeze and hold — do not hold it back: decide is not
 * asked. The blast-radius guard still does (revertInto), and so does "no revert of a revert".
 * The bad commit is named (`bad`), or located from the observed objects as `run` would.
 */
export async function personRevert(opts: PersonRevertOptions): Promise<Report> {
  const [target] = selectTargets(opts.config, opts.target);
  if (!opts.bad && opts.observed.length === 0) throw new InputError('a revert by hand needs the bad commit, or the cluster state to locate it from');
  const verdict = verdictFor(target!, evidenceFor(target!, opts.observed, opts.now), opts.now);
  return revertTarget({ ...opts, target: target!, verdict });
}

/**
 * The exit code of a revert a person asked for: 1 when it was not made (the blast-radius guard
 * refused it, it was impossible), else the worst target error, else 0.
 */
export function personRevertExitCode(report: Report): ExitCode {
  let code: ExitCode = 0;
  for (const t of report.targets) {
    const mine: ExitCode = t.error ? t.error.code : t.action === 'alert' ? 1 : 0;
    if (mine > code) code = mine;
  }
  return code;
}

/** `lastgood revert`: a person decided; locate (or take --bad/--to), plan and deliver. */
export async function revertTarget(opts: RevertOptions): Promise<Report> {
  const outcome = baseOutcome(opts.verdict, { action: 'revert', reason: opts.reason ? `requested: ${opts.reason}` : 'requested by a person' });
  await revertInto(outcome, opts);
  await notifyOutcomes({ targets: [outcome] }, opts);
  return { targets: [outcome] };
}

function baseOutcome(verdict: Verdict, decision: Decision): TargetOutcome {
  const o: TargetOutcome = { name: verdict.target, verdict: verdict.verdict, summary: verdict.summary, evidence: verdict.evidence, action: decision.action, reason: decision.reason, bad: [] };
  if (verdict.class) o.class = verdict.class;
  const notes = [...new Set(verdict.evidence.flatMap((e) => e.notes ?? []))];
  if (notes.length) o.notes = notes;
  // a time ahead of the clock is bad input for a door that reads it once (exit 2); the controller only holds the target
  if (decision.heldBy === 'clock') o.error = { code: 2, message: decision.reason };
  // evidence that could not be evaluated (a metric provider unreachable, a template that cannot be read): said, with its exit code, unless the target failed anyway
  const problems = verdict.verdict === 'failed' ? [] : verdict.evidence.filter((e) => e.problem);
  if (problems.length) {
    const code = problems.some((e) => e.problem!.code === 3) ? 3 : 2;
    o.error = { code, message: redact(problems.map((e) => `${e.kind} ${e.namespace ? `${e.namespace}/` : ''}${e.name}: ${e.problem!.message}`).join('; ')) };
  }
  return o;
}

const MAX_REPLANS = 3;

async function revertInto(outcome: TargetOutcome, opts: RevertOptions): Promise<void> {
  const { repo, target, log } = opts;
  const branch = opts.config.repo.branch;
  // what the engine reads for the target (src/model): locate names the commits that changed it, verify checks the plan against it
  const model: TargetModeler = modelTarget({ reader: repo, target, observed: opts.observed });
  for (let attempt = 0; ; attempt++) {
    try {
      const head = await repo.head(branch);
      const located = opts.bad ? await namedCommits(repo, head, target.paths, opts.bad, opts.to) : await locate({ reader: repo, branch, head, paths: target.paths, evidence: opts.verdict.evidence, model, verified: await verifiedCommits(repo, target.name) });
      if (!opts.bad) await preferVerified(repo, located, target);
      outcome.bad = located.bad.map((c) => c.oid);
      outcome.lastKnownGood = located.lastKnownGood;
      outcome.verified = located.verified;
      outcome.lkg = lkgPhrase(located);
      outcome.explanation = located.explanation;
      log.info({ target: target.name, revision: located.bad[0]?.oid, lastKnownGood: located.lastKnownGood }, 'located bad revision');

      const existing = located.alreadyRevertedBy ?? (await findExistingRevert(repo, head, target, located));
      if (existing) {
        outcome.commit = existing;
        outcome.created = false;
        outcome.reason = `${outcome.reason}; already reverted by ${existing.slice(0, 12)}`;
        return;
      }
      const { change, planned } = await plan(opts, head, located);
      if (planned.notes.length) outcome.reason = `${outcome.reason}; ${planned.notes.join('; ')}`;
      if (change.files.length === 0) {
        outcome.created = false;
        outcome.reason = planned.strategy === 'restore'
          ? `${outcome.reason}; the target paths already equal the last-known-good ${located.lastKnownGood.slice(0, 12)}: nothing to write`
          : `${outcome.reason}; the bad commits' changes are already undone on ${branch}: nothing to write`;
        return;
      }
      const diffs = await diffChange(repo, head, change.files);
      outcome.diffStat = diffStat(diffs);
      outcome.message = change.message;
      const refused = blastRadius({
        files: change.files,
        before: await repo.listFiles(head, target.paths),
        paths: target.paths,
        strategy: planned.strategy,
        touched: located.touched,
        freezeFiles: planned.freezeFiles,
        ...target.blastRadius,
      });
      if (refused.length > 0) {
        // refused whatever the plan's reasons: the plan is shown, nothing is written
        outcome.action = 'alert';
        outcome.reason = `refused by the blast-radius guard: ${refused.join('; ')}; nothing written (the planned change is shown)`;
        outcome.diff = unifiedDiff(diffs);
        return;
      }
      // the plan against what the engine builds: it must change it, and restore the last-known-good's values of what failed
      const verification = await verifyPlan({ modeler: model, head, lastKnownGood: located.lastKnownGood, files: change.files, paths: target.paths, evidence: opts.verdict.evidence, how: located.how, bad: located.bad, allowEmpty: target.blastRadius.allowEmpty });
      if (verification.notes.length) outcome.notes = [...new Set([...(outcome.notes ?? []), ...verification.notes])];
      if (!verification.refused) {
        outcome.checked = { summary: describeVerification(verification) };
        // the commit says what it was checked against
        change.message = commitMessage(messageInput(opts, located, planned, outcome.checked));
        outcome.message = change.message;
      }
      if (verification.refused) {
        outcome.action = 'alert';
        outcome.reason = `refused: ${verification.refused}; nothing written (the planned change is shown)`;
        outcome.diff = unifiedDiff(diffs);
        return;
      }
      // where a kustomize exists: render head, after and last-known-good as the engine builds them
      const rendered = await renderCheck({
        reader: repo, renderer: await rendererFor(opts.config.render?.kustomize), models: verification.models, files: change.files,
        lastKnownGood: located.lastKnownGood, ...(model.object ? { engineObject: model.object } : {}),
      });
      if ('refused' in rendered) {
        outcome.action = 'alert';
        outcome.reason = `refused: ${rendered.refused} (bad: ${located.bad.map((c) => c.oid.slice(0, 12)).join(', ')}); nothing written (the planned change is shown)`;
        outcome.diff = unifiedDiff(diffs);
        if (rendered.diff) outcome.checked = { summary: outcome.checked?.summary ?? '', rendered: rendered.diff };
        return;
      }
      if ('skipped' in rendered) outcome.notes = [...new Set([...(outcome.notes ?? []), rendered.skipped])];
      else {
        outcome.checked = { summary: outcome.checked!.summary, rendered: rendered.diff };
        if (rendered.notes.length) outcome.notes = [...new Set([...(outcome.notes ?? []), ...rendered.notes])];
        change.message = commitMessage(messageInput(opts, located, planned, outcome.checked));
        outcome.message = change.message;
      }
      const mode = opts.mode ?? target.mode;
      if (mode === 'pull-request') {
        const pr = pullRequestText({ ...messageInput(opts, located, planned, outcome.checked), diffStat: outcome.diffStat, commitUrl: commitLinks(opts) });
        change.pullRequest = { ...pr, ...opts.config.pullRequest };
      }
      if (opts.dryRun) {
        outcome.diff = unifiedDiff(diffs);
        outcome.reason = `${outcome.reason}; dry run: ${opts.hook ? 'hook not run, ' : ''}nothing written`;
        return;
      }
      if (opts.hook && !(await hookBefore(outcome, opts.hook, opts))) return;
      const result = await repo.deliver(change, mode);
      outcome.commit = result.commit;
      outcome.branch = result.branch;
      outcome.created = result.created;
      if (result.pullRequest) outcome.pullRequest = result.pullRequest.url;
      // what did not stop the delivery but a person should know (an edit kept in the work tree, a
      // reviewer not requested, an unsigned REST fallback, where to open the merge request)
      if (result.warnings?.length) outcome.notes = [...(outcome.notes ?? []), ...result.warnings];
      log.info({ target: target.name, revision: located.bad[0]?.oid, commit: result.commit, created: result.created }, 'delivered revert');
      return;
    } catch (error) {
      if (error instanceof StaleHeadError && attempt < MAX_REPLANS) {
        log.warn({ target: target.name, head: error.head }, 'branch moved while planning; planning again');
        continue;
      }
      if (error instanceof RevertImpossible) {
        outcome.action = 'alert';
        outcome.reason = `revert impossible: ${error.message}${error.details.length ? ` (${error.details.join('; ')})` : ''}`;
        return;
      }
      throw error;
    }
  }
}

function messageInput(opts: RevertOptions, located: Located, planned?: Planned, checked?: TargetOutcome['checked']) {
  return {
    target: opts.target.name,
    paths: opts.target.paths,
    strategy: planned?.strategy ?? (opts.target.strategy === 'restore' ? ('restore' as const) : ('revert' as const)),
    verdict: opts.verdict,
    located,
    notes: [...(planned?.notes ?? []), ...new Set(opts.verdict.evidence.flatMap((e) => e.notes ?? []))],
    frozen: planned?.frozen ?? [],
    rejected: planned?.rejected ?? [],
    reason: opts.reason,
    now: opts.now,
    ...(checked ? { checked } : {}),
  };
}

interface Planned {
  files: FileChange[];
  strategy: 'revert' | 'restore';
  /** the freeze edits' files */
  freezeFiles: string[];
  frozen: string[];
  rejected: string[];
  /** what a person should know about how the plan was made (a fallback, a skipped freeze edit) */
  notes: string[];
}

/**
 * The files of the change: `revert` undoes exactly the bad commits (3-way); `restore` sets the
 * target paths to their tree at the last-known-good; `revert-or-restore` restores only when the
 * revert conflicts. Then the freeze edits, which may lie outside the target paths.
 */
async function planFiles(opts: RevertOptions, head: string, located: Located): Promise<Planned> {
  const { repo, target } = opts;
  const restore = () => planRestore(repo, { head, lastKnownGood: located.lastKnownGood, paths: target.paths });
  const planned: Planned = { files: [], strategy: 'revert', freezeFiles: [], frozen: [], rejected: [], notes: [] };
  if (target.strategy === 'restore' || located.bad.length === 0) {
    planned.files = await restore();
    planned.strategy = 'restore';
  } else {
    try {
      planned.files = (await planRevert(repo, { head, ...revertInput(located, target.paths) })).files;
    } catch (error) {
      if (!(error instanceof RevertImpossible) || target.strategy !== 'revert-or-restore') throw error;
      planned.files = await restore();
      planned.strategy = 'restore';
      planned.notes.push(`the revert conflicted (${error.message}); restored the last-known-good instead (strategy revert-or-restore)`);
    }
  }
  if (target.freeze === 'auto' && planned.files.length > 0) {
    const badImages = [...new Set(opts.verdict.evidence.filter((e) => e.state === 'failed').flatMap((e) => e.attempted?.images ?? []))];
    const freeze = await planFreeze(repo, { head, paths: target.paths, badImages, badCommits: located.bad, mode: 'auto' });
    const taken = new Set(planned.files.map((f) => f.path));
    for (const f of freeze.files) {
      // the revert's own content wins inside the target paths; the freeze edit of that file is left out and said
      if (taken.has(f.path)) planned.notes.push(`freeze edit of ${f.path} left out: the revert changes that file`);
      else {
        planned.files.push(f);
        planned.freezeFiles.push(f.path);
      }
    }
    planned.frozen.push(...freeze.frozen, ...freeze.warnings.map((w) => `not frozen: ${w}`));
    planned.rejected.push(...freeze.rejected);
  }
  return planned;
}

async function plan(opts: RevertOptions, head: string, located: Located): Promise<{ change: Change; planned: Planned }> {
  const planned = await planFiles(opts, head, located);
  const author: Person = { ...opts.config.repo.author, timestamp: Math.floor(opts.now.getTime() / 1000), timezoneOffset: 0 };
  const change: Change = {
    target: opts.target.name,
    branch: opts.config.repo.branch,
    paths: opts.target.paths,
    parent: head,
    files: planned.files,
    message: commitMessage(messageInput(opts, located, planned)),
    author,
    bad: located.bad.map((c) => c.oid),
    lastKnownGood: located.lastKnownGood,
  };
  return { change, planned };
}

/** The commits lastgood recorded healthy for a target (where the backend keeps records). */
async function verifiedCommits(repo: RepoBackend, target: string): Promise<string[]> {
  const store = repo.notes?.();
  return store ? (await store.list(target)).map((r) => r.commit) : [];
}

/**
 * Verified last-known-good (git notes): the newest commit before the first bad one that lastgood
 * observed healthy for this target. Where its target paths equal those before the first bad
 * commit, the LKG is simply verified; where unverified commits lie in between, `restore` goes back
 * to the verified one, and `revert` (which undoes only the bad commits) says so.
 */
async function preferVerified(repo: RepoBackend, located: Located, target: ResolvedTarget): Promise<void> {
  const store = repo.notes?.();
  if (!store || located.alreadyRevertedBy) return;
  const records = await store.list(target.name);
  if (records.length === 0) return;
  const candidates = await firstParentLog(repo, located.lastKnownGood, { limit: 1000 });
  const verified = newestVerified(records, target.name, candidates.map((c) => c.oid));
  if (!verified) return;
  const between = await firstParentLog(repo, located.lastKnownGood, { paths: target.paths, exclude: verified });
  if (between.length === 0) {
    // the target paths are the same at the verified commit and before the first bad one
    located.verified = true;
    located.explanation += `; last-known-good verified by the record on ${verified.slice(0, 12)}`;
  } else if (target.strategy === 'restore') {
    located.lastKnownGood = verified;
    located.verified = true;
    located.explanation += `; restoring the newest verified revision ${verified.slice(0, 12)} (${between.length} unverified commit${between.length === 1 ? '' : 's'} to these paths after it are undone too)`;
  } else {
    located.explanation += `; the newest verified revision is ${verified.slice(0, 12)}, ${between.length} unverified commit${between.length === 1 ? '' : 's'} to these paths after it are kept`;
  }
}

export interface RecordOutcome {
  target: string;
  commit?: string;
  recorded: boolean;
  reason: string;
  /** what was recorded: the target seen healthy (a verified last-known-good) or seen failed there */
  state?: 'healthy' | 'failed';
  /** healthy at a revision, but not for the whole soak yet: it may be recorded later */
  soaking?: boolean;
}

/**
 * `check --record`, the Action's `record` and the controller: what each target was observed as, at
 * the revision it runs, recorded where the backend keeps verified records (NotesStore: git notes,
 * GitHub deployments). A target healthy at its revision for the whole soak (decide/soak.ts: its
 * objects' times, and what a watching door saw in `watched`) is a verified last-known-good record; with `failures`, a
 * failed target's failing revision is recorded as failed where the store keeps failures (GitHub: a
 * deployment status "failure"). A store that cannot record says why, and the run goes on unverified.
 */
export async function recordHealthy(opts: CheckOptions & { repo: RepoBackend; failures?: boolean; watched?: Map<string, HealthyRun> }): Promise<RecordOutcome[]> {
  const store = opts.repo.notes?.();
  const out: RecordOutcome[] = [];
  for (const { target, verdict } of check(opts)) {
    const state = verdict.verdict === 'healthy' ? 'healthy' : verdict.verdict === 'failed' && opts.failures ? 'failed' : undefined;
    if (!state) continue;
    if (state === 'failed' && !store?.recordFailure) continue; // a store of verified records only
    if (!store) {
      out.push({ target: target.name, recorded: false, reason: `the ${opts.repo.kind} backend keeps no notes`, state });
      continue;
    }
    if (state === 'healthy') {
      // verified means stable: healthy at that revision for the whole soak, as far as anyone can tell (decide/soak.ts)
      const watched = opts.watched?.get(target.name);
      const soak = soaked({ verdict, soakMs: target.soakMs, now: opts.now.getTime(), ...(watched ? { watched } : {}) });
      if (!soak.ok) {
        out.push({ target: target.name, recorded: false, reason: `not recorded: ${soak.reason}`, state, ...(soak.revision ? { soaking: true } : {}) });
        continue;
      }
    }
    const sha = state === 'healthy'
      ? verdict.evidence.map((e) => e.attempted?.sha ?? e.lastSucceeded?.sha).find(Boolean)
      : verdict.evidence.filter((e) => e.state === 'failed').map((e) => e.attempted?.sha).find(Boolean);
    const commit = sha ? await opts.repo.resolveCommit(sha) : undefined;
    if (!commit) {
      out.push({ target: target.name, recorded: false, reason: sha ? `revision ${sha} is not in the repository` : 'no object of the target reports a git revision', state });
      continue;
    }
    const observation = { target: target.name, at: opts.now.toISOString(), evidence: verdict.evidence.map((e) => evidenceLine(e)).join('; ') };
    const result = state === 'healthy' ? await store.record(commit, observation) : await store.recordFailure!(commit, observation);
    const recorded = result ? result.recorded : true;
    const what = state === 'healthy' ? 'verified last-known-good' : 'failed';
    const reason = recorded ? `recorded ${commit.slice(0, 12)} as ${what}${store.where ? ` (${store.where})` : ''}` : `not recorded: ${result?.reason ?? 'the store refused it'}`;
    out.push({ target: target.name, commit, recorded, reason, state });
  }
  return out;
}

/** Idempotency: a lastgood commit for this target that already reverts the newest bad commit. */
async function findExistingRevert(repo: RepoBackend, head: string, target: ResolvedTarget, located: Located): Promise<string | undefined> {
  const newestBad = located.bad[0];
  if (!newestBad) return undefined;
  // a revert always changes the target's paths: only those commits need reading (one listing on GitHub)
  const since = await firstParentLog(repo, head, { paths: target.paths, exclude: newestBad.oid, limit: 1000 });
  return since.find((c) => lastgoodTarget(c.message) === target.name && revertedBy(c.message).includes(newestBad.oid))?.oid;
}

/** `--bad SHA [--to SHA]`: the person names the bad commit and, optionally, what to go back to. */
async function namedCommits(repo: RepoBackend, head: string, paths: string[], badSha: string, toSha?: string): Promise<Located> {
  const bad = await repo.resolveCommit(badSha);
  if (!bad) throw new InputError(`--bad ${badSha}: no such commit in the repository`);
  if (!(await repo.isAncestor(bad, head))) throw new InputError(`--bad ${badSha}: not on the configured branch`);
  const commit = await repo.readCommit(bad);
  if (lastgoodTarget(commit.message)) throw new RevertImpossible(`${bad} is a lastgood revert: lastgood never reverts a revert`);
  const to = toSha ? await repo.resolveCommit(toSha) : commit.parents[0];
  if (!to) throw new InputError(toSha ? `--to ${toSha}: no such commit in the repository` : `${bad} is the first commit: there is nothing to go back to`);
  const touched = (await changedFiles(repo, commit.parents[0], commit.oid, paths)).map((d) => d.path);
  return {
    bad: [commit], later: [], lastKnownGood: to, verified: false, how: 'named',
    explanation: `named by a person (--bad ${bad.slice(0, 12)}${toSha ? ` --to ${to.slice(0, 12)}` : ''})`,
    revert: { kind: 'commits', steps: [{ base: commit.oid, theirs: commit.parents[0] }] },
    touched,
  };
}

/**
 * DESIGN.md exit codes for a finished run, the worst over its targets: 3 an outside system failed,
 * 2 bad input, 1 a target is failed or stuck and was not reverted, 0 otherwise.
 */
export function exitCodeFor(report: Report): ExitCode {
  let code: ExitCode = 0;
  for (const t of report.targets) {
    const mine: ExitCode = t.error ? t.error.code : (t.verdict === 'failed' || t.verdict === 'stuck') && t.action === 'alert' ? 1 : 0;
    if (mine > code) code = mine;
  }
  return code;
}
