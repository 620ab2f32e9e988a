import type { Logger } from 'pino';
import { resolveTarget, type Config, type ResolvedTarget } from './config/schema.ts';
import { decide } from './decide/decide.ts';
import type { Decision, Evidence, Verdict } from './decide/types.ts';
import { evidenceFor, verdictFor } from './decide/verdict.ts';
import { InputError, RevertImpossible, type ExitCode } from './errors.ts';
import { locate, type Located } from './history/locate.ts';
import { lastgoodTarget, revertedBy } from './history/trailers.ts';
import type { Observed } from './observe/types.ts';
import type { Change, DeliveryMode, Person, RepoBackend } from './repo/types.ts';
import { diffChange, diffStat, unifiedDiff } from './revert/diff.ts';
import { commitMessage, pullRequestText } from './revert/message.ts';
import { planRestore } from './revert/restore.ts';
import { StaleHeadError } from './deliver/local.ts';

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
  commit?: string;
  branch?: string;
  pullRequest?: string;
  /** false when an earlier run already made this revert */
  created?: boolean;
  /** dry run: the change that would be written */
  diff?: string;
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
}

export function selectTargets(config: Config, name?: string): ResolvedTarget[] {
  const targets = config.targets.map((t) => resolveTarget(config, t));
  if (name === undefined) return targets;
  const found = targets.filter((t) => t.name === name);
  if (found.length === 0) throw new InputError(`unknown target "${name}" (configured: ${targets.map((t) => t.name).join(', ')})`);
  return found;
}

/** config + observed objects → verdict and decision per target. Pure. */
export function check(opts: CheckOptions): Array<{ target: ResolvedTarget; verdict: Verdict; decision: Decision }> {
  return selectTargets(opts.config, opts.target).map((target) => {
    const verdict = verdictFor(target, evidenceFor(target, opts.observed, opts.now), opts.now);
    const decision = decide({ verdict, target, now: opts.now, observations: opts.observations?.get(target.name) ?? 1 });
    return { target, verdict, decision };
  });
}

export interface RunOptions extends CheckOptions {
  repo: RepoBackend;
  mode?: DeliveryMode;
  dryRun: boolean;
  log: Logger;
  /** host links for PR bodies */
  commitUrl?: (sha: string) => string;
}

/** The whole pipeline: check, then for each target whose decision is revert, locate, plan and deliver. */
export async function run(opts: RunOptions): Promise<Report> {
  const targets: TargetOutcome[] = [];
  for (const { target, verdict, decision } of check(opts)) {
    const outcome = baseOutcome(verdict, decision);
    if (decision.action === 'revert') await revertInto(outcome, { ...opts, target, verdict });
    targets.push(outcome);
  }
  return { targets };
}

export interface RevertOptions extends Omit<RunOptions, 'observations' | 'target'> {
  target: ResolvedTarget;
  verdict: Verdict;
  /** lastgood revert --bad/--to: a person names the commits */
  bad?: string;
  to?: string;
  reason?: string;
}

/** `lastgood revert`: a person decided; locate (or take --bad/--to), plan and deliver. */
export async function revertTarget(opts: RevertOptions): Promise<Report> {
  const outcome = baseOutcome(opts.verdict, { action: 'revert', reason: opts.reason ? `requested: ${opts.reason}` : 'requested by a person' });
  await revertInto(outcome, opts);
  return { targets: [outcome] };
}

function baseOutcome(verdict: Verdict, decision: Decision): TargetOutcome {
  const o: TargetOutcome = { name: verdict.target, verdict: verdict.verdict, summary: verdict.summary, evidence: verdict.evidence, action: decision.action, reason: decision.reason, bad: [] };
  if (verdict.class) o.class = verdict.class;
  return o;
}

const MAX_REPLANS = 3;

async function revertInto(outcome: TargetOutcome, opts: RevertOptions): Promise<void> {
  const { repo, target, log } = opts;
  const branch = opts.config.repo.branch;
  for (let attempt = 0; ; attempt++) {
    try {
      const head = await repo.head(branch);
      const located = opts.bad ? await namedCommits(repo, head, opts.bad, opts.to) : await locate({ reader: repo, branch, head, paths: target.paths, evidence: opts.verdict.evidence });
      outcome.bad = located.bad.map((c) => c.oid);
      outcome.lastKnownGood = located.lastKnownGood;
      outcome.verified = located.verified;
      log.info({ target: target.name, revision: located.bad[0]?.oid, lastKnownGood: located.lastKnownGood }, 'located bad revision');

      const existing = located.alreadyRevertedBy ?? (await findExistingRevert(repo, head, target.name, located));
      if (existing) {
        outcome.commit = existing;
        outcome.created = false;
        outcome.reason = `${outcome.reason}; already reverted by ${existing.slice(0, 12)}`;
        return;
      }
      const change = await plan(opts, head, located);
      if (change.files.length === 0) {
        outcome.created = false;
        outcome.reason = `${outcome.reason}; the target paths already equal the last-known-good ${located.lastKnownGood.slice(0, 12)}: nothing to write`;
        return;
      }
      const diffs = await diffChange(repo, head, change.files);
      outcome.diffStat = diffStat(diffs);
      outcome.message = change.message;
      const mode = opts.mode ?? target.mode;
      if (mode === 'pull-request') {
        const pr = pullRequestText({ ...messageInput(opts, located), diffStat: outcome.diffStat, commitUrl: opts.commitUrl });
        change.pullRequest = { ...pr, ...opts.config.pullRequest };
      }
      if (opts.dryRun) {
        outcome.diff = unifiedDiff(diffs);
        outcome.reason = `${outcome.reason}; dry run: nothing written`;
        return;
      }
      const result = await repo.deliver(change, mode);
      outcome.commit = result.commit;
      outcome.branch = result.branch;
      outcome.created = result.created;
      if (result.pullRequest) outcome.pullRequest = result.pullRequest.url;
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

function messageInput(opts: RevertOptions, located: Located) {
  return {
    target: opts.target.name,
    paths: opts.target.paths,
    strategy: 'restore' as const,
    verdict: opts.verdict,
    located,
    reason: opts.reason,
    now: opts.now,
  };
}

async function plan(opts: RevertOptions, head: string, located: Located): Promise<Change> {
  const files = await planRestore(opts.repo, { head, lastKnownGood: located.lastKnownGood, paths: opts.target.paths });
  const author: Person = { ...opts.config.repo.author, timestamp: Math.floor(opts.now.getTime() / 1000), timezoneOffset: 0 };
  return {
    target: opts.target.name,
    branch: opts.config.repo.branch,
    paths: opts.target.paths,
    parent: head,
    files,
    message: commitMessage(messageInput(opts, located)),
    author,
    bad: located.bad.map((c) => c.oid),
    lastKnownGood: located.lastKnownGood,
  };
}

/** Idempotency: a lastgood commit for this target that already reverts the newest bad commit. */
async function findExistingRevert(repo: RepoBackend, head: string, target: string, located: Located): Promise<string | undefined> {
  const newestBad = located.bad[0];
  if (!newestBad) return undefined;
  const since = await repo.commitsTouching(head, [], { stop: newestBad.oid, limit: 1000 });
  return since.find((c) => lastgoodTarget(c.message) === target && revertedBy(c.message).includes(newestBad.oid))?.oid;
}

/** `--bad SHA [--to SHA]`: the person names the bad commit and, optionally, what to go back to. */
async function namedCommits(repo: RepoBackend, head: string, badSha: string, toSha?: string): Promise<Located> {
  const bad = await repo.resolveCommit(badSha);
  if (!bad) throw new InputError(`--bad ${badSha}: no such commit in the repository`);
  if (!(await repo.isAncestor(bad, head))) throw new InputError(`--bad ${badSha}: not on the configured branch`);
  const commit = await repo.readCommit(bad);
  if (lastgoodTarget(commit.message)) throw new RevertImpossible(`${bad} is a lastgood revert: lastgood never reverts a revert`);
  const to = toSha ? await repo.resolveCommit(toSha) : commit.parents[0];
  if (!to) throw new InputError(toSha ? `--to ${toSha}: no such commit in the repository` : `${bad} is the first commit: there is nothing to go back to`);
  return { bad: [commit], later: [], lastKnownGood: to, verified: false, how: 'revision', explanation: `named by a person (--bad ${bad.slice(0, 12)}${toSha ? ` --to ${to.slice(0, 12)}` : ''})` };
}

/** DESIGN.md exit codes for a finished run: 1 when a target is failed or stuck and was not reverted. */
export function exitCodeFor(report: Report): ExitCode {
  const unhandled = report.targets.some((t) => (t.verdict === 'failed' || t.verdict === 'stuck') && t.action === 'alert');
  return unhandled ? 1 : 0;
}
