/** A revert: locate the bad commits (or take a person's), plan, verify against what the engine builds, deliver. */
import type { ResolvedTarget } from '../config/schema.ts';
import { evidenceFor, verdictFor } from '../decide/verdict.ts';
import { InputError, RevertImpossible, StaleHeadError } from '../errors.ts';
import { changedFiles, firstParentLog } from '../history/graph.ts';
import { blastRadius } from '../revert/blast-radius.ts';
import { locate, type Located } from '../history/locate.ts';
import { lastgoodTarget, revertedBy } from '../history/trailers.ts';
import type { Change, DeliveryMode, DeliveryResult, RepoBackend } from '../repo/types.ts';
import { diffChange, diffStat, unifiedDiff } from '../revert/diff.ts';
import { lkgPhrase } from '../revert/message.ts';
import { modelTarget, type TargetModeler } from '../model/index.ts';
import { describeVerification, verifyPlan } from '../verify/model-check.ts';
import { renderAhead, renderCheck, rendererFor } from '../verify/render-check.ts';
import type { TargetOutcome, Report, RevertOptions, PersonRevertOptions } from './types.ts';
import { baseOutcome } from './outcome.ts';
import { afterBranchMoved, planReads, type PlanReads } from './branch-moved.ts';
import { selectTargets } from './check.ts';
import { hookBefore, notifyOutcomes } from './effects.ts';
import { plan, withTexts } from './plan.ts';

/** `lastgood revert`: a person decided; locate (or take --bad/--to), plan and deliver. */
export async function revertTarget(opts: RevertOptions): Promise<Report> {
  const outcome = baseOutcome(opts.verdict, { action: 'revert', reason: opts.reason ? `requested: ${opts.reason}` : 'requested by a person' });
  if (opts.byPerson) outcome.byPerson = opts.byPerson;
  await revertInto(outcome, opts);
  await notifyOutcomes({ targets: [outcome] }, opts);
  return { targets: [outcome] };
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
  const byPerson = { ...(opts.reason ? { reason: opts.reason } : {}), clusterRead: opts.observed.length > 0 };
  return revertTarget({ ...opts, target: target!, verdict, byPerson });
}

/** Full re-plans after the branch moved under a plan whose reads it changed: each costs as much as the first. */
const MAX_REPLANS = 3;
/**
 * Deliveries of the same plan on a newer head whose new commits touch nothing the plan read: each
 * costs a ref read, the new commits' messages, a tree diff of what they changed and one
 * compare-and-swap, so a run outpaces a bot that pushes every few hundred ms. The bound only stops
 * a branch that never holds still for one write (then exit 3, as before).
 */
const MAX_REDELIVERIES = 50;

export async function revertInto(outcome: TargetOutcome, opts: RevertOptions): Promise<void> {
  const { target, log } = opts;
  // what the engine reads for the target (src/model): locate names the commits that changed it, verify checks the plan against it
  const model: TargetModeler = modelTarget({ reader: opts.repo, target, observed: opts.observed });
  const redeliveries = { count: 0 };
  for (let attempt = 0; ; attempt++) {
    try {
      const ready = await prepareRevert(outcome, opts, model);
      if (ready) await deliverRevert(outcome, opts, ready, redeliveries);
      return;
    } catch (error) {
      if (error instanceof StaleHeadError && attempt < MAX_REPLANS && redeliveries.count < MAX_REDELIVERIES) {
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

/** A plan that passed every check, ready to be written. */
interface ReadyRevert {
  change: Change;
  mode: DeliveryMode;
  located: Located;
  /** what the plan read: a branch that moved elsewhere keeps it valid (branch-moved.ts) */
  reads: PlanReads;
}

/**
 * Locate, plan, verify and render on the branch's head. Undefined when there is nothing to write
 * (already reverted, nothing to undo, refused, a dry run, a hook that said no): `outcome` says why.
 */
async function prepareRevert(outcome: TargetOutcome, opts: RevertOptions, model: TargetModeler): Promise<ReadyRevert | undefined> {
  const { repo, target, log } = opts;
  const branch = opts.config.repo.branch;
  // found while the history is read (it spawns the binary to ask its version); awaited where the renders start
  const rendering = rendererFor(opts.config.render?.kustomize);
  const head = await repo.head(branch);
  const located = opts.bad ? await namedCommits(repo, { head, branch, paths: target.paths }, opts.bad, opts.to) : await locate({ reader: repo, branch, head, paths: target.paths, evidence: opts.verdict.evidence, model, verified: await verifiedCommits(repo, target.name), target: target.name });
  if (!opts.bad) await preferVerified(repo, located, target);
  outcome.bad = located.bad.map((c) => c.oid);
  outcome.lastKnownGood = located.lastKnownGood;
  outcome.verified = located.verified;
  outcome.lkg = lkgPhrase(located);
  outcome.explanation = located.explanation;
  log.info({ target: target.name, revision: located.bad[0]?.oid, lastKnownGood: located.lastKnownGood }, 'located bad revision');

  const existing = located.alreadyRevertedBy ?? (await findExistingRevert(repo, head, target, located));
  if (existing) {
    alreadyReverted(outcome, existing);
    return undefined;
  }
  // the head's and the last-known-good's builds are rendered while the plan is made and checked (the render check finds them by their inputs)
  const [renderer, atHead, atLkg] = await Promise.all([rendering, model.at(head), model.at(located.lastKnownGood)]);
  renderAhead({ reader: repo, renderer, specs: [atHead.render, atLkg.render], ...(repo.cacheDir ? { cacheDir: repo.cacheDir } : {}) });
  const { draft, planned } = await plan(opts, head, located);
  const mode = opts.mode ?? target.mode;
  // the texts, made once from what the plan became at whichever end it reaches (refused, or to be written)
  const texts = (checked: TargetOutcome['checked'], pullRequest = false): Change => {
    const change = withTexts(draft, opts, located, planned, checked, { pullRequest, ...(outcome.diffStat !== undefined ? { diffStat: outcome.diffStat } : {}) });
    outcome.message = change.message;
    return change;
  };
  if (planned.notes.length) outcome.reason = `${outcome.reason}; ${planned.notes.join('; ')}`;
  if (draft.files.length === 0) {
    outcome.created = false;
    outcome.reason = planned.strategy === 'restore'
      ? `${outcome.reason}; the target paths already equal the last-known-good ${located.lastKnownGood.slice(0, 12)}: nothing to write`
      : `${outcome.reason}; the bad commits' changes are already undone on ${branch}: nothing to write`;
    return undefined;
  }
  const diffs = await diffChange(repo, head, draft.files);
  outcome.diffStat = diffStat(diffs);
  const refused = blastRadius({
    files: draft.files,
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
    texts(undefined);
    return undefined;
  }
  // the plan against what the engine builds: it must change it, and restore the last-known-good's values of what failed
  const verification = await verifyPlan({ modeler: model, head, lastKnownGood: located.lastKnownGood, files: draft.files, paths: target.paths, evidence: opts.verdict.evidence, how: located.how, bad: located.bad, allowEmpty: target.blastRadius.allowEmpty });
  if (verification.notes.length) outcome.notes = [...new Set([...(outcome.notes ?? []), ...verification.notes])];
  if (verification.refused) {
    outcome.action = 'alert';
    outcome.reason = `refused: ${verification.refused}; nothing written (the planned change is shown)`;
    outcome.diff = unifiedDiff(diffs);
    texts(undefined);
    return undefined;
  }
  // the commit says what it was checked against
  outcome.checked = { summary: describeVerification(verification) };
  // where a kustomize exists: render head, after and last-known-good as the engine builds them
  const rendered = await renderCheck({
    reader: repo, renderer, models: verification.models, files: draft.files,
    lastKnownGood: located.lastKnownGood, ...(model.object ? { engineObject: model.object } : {}), ...(repo.cacheDir ? { cacheDir: repo.cacheDir } : {}),
  });
  if ('refused' in rendered) {
    outcome.action = 'alert';
    outcome.reason = `refused: ${rendered.refused} (bad: ${located.bad.map((c) => c.oid.slice(0, 12)).join(', ')}); nothing written (the planned change is shown)`;
    outcome.diff = unifiedDiff(diffs);
    texts(outcome.checked);
    if (rendered.diff) outcome.checked = { summary: outcome.checked.summary, rendered: rendered.diff };
    return undefined;
  }
  if ('skipped' in rendered) {
    outcome.notes = [...new Set([...(outcome.notes ?? []), rendered.skipped])];
    // the request says why there is no rendered diff: a kustomize may well exist and the build fail
    outcome.checked = { summary: outcome.checked.summary, notRendered: rendered.skipped.replace(/^the render check was not possible: /, '') };
  }
  else {
    outcome.checked = { summary: outcome.checked.summary, rendered: rendered.diff };
    if (rendered.notes.length) outcome.notes = [...new Set([...(outcome.notes ?? []), ...rendered.notes])];
  }
  const change = texts(outcome.checked, mode === 'pull-request');
  if (opts.dryRun) {
    outcome.diff = unifiedDiff(diffs);
    outcome.reason = `${outcome.reason}; dry run: ${opts.hook ? 'hook not run, ' : ''}nothing written`;
    return undefined;
  }
  if (opts.hook && !(await hookBefore(outcome, opts.hook, opts))) return undefined;
  const { head: headModel, after } = verification.models;
  const reads = planReads({ target, files: change.files, models: [headModel, after], rendered: 'accepted' in rendered ? (rendered.whole ? 'whole' : 'cut') : 'no', bad: located.bad });
  return { change, mode, located, reads };
}

/**
 * Writes the plan. In commit mode, a branch that moved since the plan's head gets the same change
 * on its new head when the new commits touch nothing the plan read (branch-moved.ts), without
 * locating, planning, verifying or rendering again; one that now holds a revert of the newest bad
 * commit is reported as already reverted. Otherwise the StaleHeadError goes up: a full re-plan.
 * Pull-request mode re-plans as before (its review branch is rebuilt from the plan).
 */
async function deliverRevert(outcome: TargetOutcome, opts: RevertOptions, ready: ReadyRevert, redeliveries: { count: number }): Promise<void> {
  const { repo, target, log } = opts;
  const { mode, located } = ready;
  let change = ready.change;
  for (;;) {
    let result: DeliveryResult;
    try {
      result = await repo.deliver(change, mode);
    } catch (error) {
      if (!(error instanceof StaleHeadError) || mode !== 'commit' || redeliveries.count >= MAX_REDELIVERIES) throw error;
      const next = await afterBranchMoved({ reader: repo, target: target.name, bad: located.bad[0]?.oid, planned: change.parent, moved: error.head, reads: ready.reads });
      if (next.kind === 'already-reverted') {
        log.info({ target: target.name, head: error.head, commit: next.commit }, 'branch moved: the bad revision is already reverted on it');
        alreadyReverted(outcome, next.commit);
        return;
      }
      if (next.kind === 'replan') {
        log.info({ target: target.name, head: error.head, why: next.why }, 'branch moved: the new commits change what the plan read');
        throw error;
      }
      redeliveries.count++;
      log.info({ target: target.name, head: error.head, redelivery: redeliveries.count }, 'branch moved; delivering the same revert on the new head');
      change = { ...change, parent: error.head };
      continue;
    }
    outcome.commit = result.commit;
    outcome.branch = result.branch;
    outcome.created = result.created;
    if (result.pullRequest) outcome.pullRequest = result.pullRequest.url;
    // what did not stop the delivery but a person should know (an edit kept in the work tree, a
    // reviewer not requested, an unsigned REST fallback, where to open the merge request)
    if (result.warnings?.length) outcome.notes = [...(outcome.notes ?? []), ...result.warnings];
    log.info({ target: target.name, revision: located.bad[0]?.oid, commit: result.commit, created: result.created }, 'delivered revert');
    return;
  }
}

function alreadyReverted(outcome: TargetOutcome, commit: string): void {
  outcome.commit = commit;
  outcome.created = false;
  outcome.reason = `${outcome.reason}; already reverted by ${commit.slice(0, 12)}`;
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
  const verified = await newestRecorded(repo, located.lastKnownGood, new Set(records.filter((r) => r.target === target.name).map((r) => r.commit)));
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

/** The newest first-parent commit from `from` (the last-known-good, inclusive) that has a record: the walk stops there (at most 1,000 commits). */
async function newestRecorded(repo: RepoBackend, from: string, recorded: Set<string>): Promise<string | undefined> {
  let oid: string | undefined = from;
  for (let n = 0; oid && n < 1000 && recorded.size > 0; n++) {
    if (recorded.has(oid)) return oid;
    oid = (await repo.readCommit(oid)).parents[0];
  }
  return undefined;
}

/** Idempotency: a lastgood commit for this target that already reverts the newest bad commit. */
async function findExistingRevert(repo: RepoBackend, head: string, target: ResolvedTarget, located: Located): Promise<string | undefined> {
  const newestBad = located.bad[0];
  if (!newestBad) return undefined;
  // the branch's commits since the bad one, read for their trailers only (no tree is read)
  const since = await firstParentLog(repo, head, { exclude: newestBad.oid, limit: 1000 });
  return since.find((c) => lastgoodTarget(c.message) === target.name && revertedBy(c.message).includes(newestBad.oid))?.oid;
}

/** How far below the bad commit `--to` is looked for on the branch's first-parent line. */
const MAX_TO_DEPTH = 10_000;

/**
 * `--bad SHA [--to SHA]`: the person names the bad commit and, optionally, what to go back to.
 * Both must be the configured branch's history: `--bad` reachable from its head, `--to` an earlier
 * commit of its first-parent line below `--bad` (issue 35). A commit of another branch, or one of a
 * side branch merged into it, would put content on the branch that nobody reviewed there.
 */
async function namedCommits(repo: RepoBackend, on: { head: string; branch: string; paths: string[] }, badSha: string, toSha?: string): Promise<Located> {
  const { head, branch, paths } = on;
  const bad = await repo.resolveCommit(badSha);
  if (!bad) throw new InputError(`--bad ${badSha}: no such commit in the repository`);
  if (!(await repo.isAncestor(bad, head))) throw new InputError(`--bad ${badSha}: not on the configured branch`);
  const commit = await repo.readCommit(bad);
  if (lastgoodTarget(commit.message)) throw new RevertImpossible(`${bad} is a lastgood revert: lastgood never reverts a revert`);
  const to = toSha ? await repo.resolveCommit(toSha) : commit.parents[0];
  if (!to) throw new InputError(toSha ? `--to ${toSha}: no such commit in the repository` : `${bad} is the first commit: there is nothing to go back to`);
  if (toSha) await mustBeEarlierOnBranch(repo, { bad, to, toSha, branch });
  const touched = (await changedFiles(repo, commit.parents[0], commit.oid, paths)).map((d) => d.path);
  if (touched.length === 0) {
    throw new InputError(`--bad ${badSha}: ${bad.slice(0, 12)} changed nothing under the target's paths (${paths.join(', ')}), so there is nothing of it to revert: check that it is the commit you meant`);
  }
  return {
    bad: [commit], later: [], lastKnownGood: to, verified: false, how: 'named',
    explanation: `named by a person (--bad ${bad.slice(0, 12)}${toSha ? ` --to ${to.slice(0, 12)}` : ''})`,
    revert: { kind: 'commits', steps: [{ base: commit.oid, theirs: commit.parents[0] }] },
    touched,
  };
}

/** `--to` is below `--bad` on the branch's first-parent line, or the named revert is refused. */
async function mustBeEarlierOnBranch(repo: RepoBackend, c: { bad: string; to: string; toSha: string; branch: string }): Promise<void> {
  if (c.to === c.bad) throw new InputError(`--to ${c.toSha}: it is the bad commit itself; --to names the last good commit, an earlier one`);
  let oid = (await repo.readCommit(c.bad)).parents[0];
  for (let depth = 0; oid; depth++) {
    if (oid === c.to) return;
    if (depth >= MAX_TO_DEPTH) {
      throw new InputError(`--to ${c.toSha}: not found within ${MAX_TO_DEPTH.toLocaleString('en-US')} commits below the bad commit ${c.bad.slice(0, 12)} on ${c.branch}'s first-parent line`);
    }
    oid = (await repo.readCommit(oid)).parents[0];
  }
  throw new InputError(
    `--to ${c.toSha}: not an earlier commit of ${c.branch} below the bad commit ${c.bad.slice(0, 12)} (its first-parent line): ` +
      `lastgood goes back only to what ${c.branch} itself held; a commit of another branch, or of a side branch merged into ${c.branch}, would ship changes nobody reviewed there`,
  );
}
