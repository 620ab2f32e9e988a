/**
 * The engine's guard-gathering step: what the config repository says about the target's past
 * reverts, as plain data for decide (RepoGuards). Reads the repository, writes nothing.
 *
 * Bounded by the window the guards need, never by the history's length (issue 22): the cooldown
 * asks only whether lastgood reverted the target within the cooldown, and a revert of a revert is
 * a fact about the failing revision itself. A monorepo whose target folder was last touched
 * thousands of commits ago costs the commits of the cooldown window, not the whole history (on a
 * shallow mirror, no deepening past the window).
 */
import type { ResolvedTarget } from '../config/schema.ts';
import { lastgoodTarget } from './trailers.ts';
import { touches } from './graph.ts';
import type { CommitInfo, RepoReader } from '../repo/types.ts';
import { failingRevision } from '../decide/guards.ts';
import type { Evidence, RepoGuards } from '../decide/types.ts';

/**
 * How far commit times may lag behind the real order of commits: a commit made on top of
 * lastgood's revert by a machine whose clock is behind carries an older time. The walk goes on
 * this far past the cooldown window (a day, as git allows for skew: name-rev's CUTOFF_DATE_SLOP).
 */
export const CLOCK_SKEW_SECONDS = 86_400;
/** Commits read past the point where every one is older than the window (git's SLOP in revision.c). */
const SLOP = 5;

export interface GatherInput {
  reader: RepoReader;
  head: string;
  target: Pick<ResolvedTarget, 'name' | 'paths'> & { cooldownMs?: number };
  evidence: Evidence[];
  /** the run's clock: the cooldown window ends here */
  now: Date;
}

/**
 * - lastRevert: the newest lastgood commit for this target (trailer `Lastgood-Target`) on the
 *   branch's first-parent line within the cooldown window (its commit time, and whether the
 *   failing revision already contains it). A revert older than the window holds nothing back, so
 *   the walk stops once SLOP commits in a row are older than the window plus CLOCK_SKEW_SECONDS;
 *   with the cooldown off, nothing is read.
 * - revertOfRevert: the failing revision is itself a lastgood commit (for this target, or one that
 *   touched its paths): read from that commit alone.
 */
export async function repoGuards({ reader, head, target, evidence, now }: GatherInput): Promise<RepoGuards> {
  const out: RepoGuards = {};
  // a target path through a symlink is refused (DESIGN.md Config) before anything is read through it
  // together: a backend that reads paths along the history (GitHub) asks for them in one request
  await Promise.all(target.paths.map((p) => reader.pathOid(head, p)));
  const revision = failingRevision(evidence);
  const failing = revision ? await reader.resolveCommit(revision) : undefined;
  if (failing) {
    const commit = await reader.readCommit(failing);
    const by = lastgoodTarget(commit.message);
    // only a revert that touched this target's files makes this target's failure a failure of a revert,
    // and only a failure observed at it (not one left over from the bad revision before its sync)
    if (by && (by === target.name || (await touches(reader, commit, target.paths)))) {
      const before = observedBefore(evidence, failing);
      if (before) out.observedBefore = before;
      else out.revertOfRevert = { commit: failing, target: by };
    }
  }
  const last = await lastRevertWithin(reader, head, target.name, now.getTime() / 1000 - (target.cooldownMs ?? 0) / 1000, target.cooldownMs ?? 0);
  if (last) {
    out.lastRevert = { commit: last.oid, at: new Date(last.committer.timestamp * 1000).toISOString() };
    if (failing) out.lastRevert.deployed = await reader.isAncestor(last.oid, failing);
  }
  return out;
}

/** The newest first-parent commit of `target` from `head` whose window may still matter (see repoGuards). */
async function lastRevertWithin(reader: RepoReader, head: string, target: string, since: number, cooldownMs: number): Promise<CommitInfo | undefined> {
  if (cooldownMs <= 0) return undefined;
  const cutoff = since - CLOCK_SKEW_SECONDS;
  let old = 0;
  for (let oid: string | undefined = head; oid; ) {
    const c: CommitInfo = await reader.readCommit(oid);
    if (lastgoodTarget(c.message) === target) return c;
    old = c.committer.timestamp < cutoff ? old + 1 : 0;
    if (old >= SLOP) return undefined;
    oid = c.parents[0];
  }
  return undefined;
}

/**
 * Evidence counts for a revision only when it was observed at that revision: a failed object that
 * reports the revision itself was; one that reports none (a Deployment) was only if its failure began
 * after the object that reports the revision began to (the engine object's state since the sync).
 * When every failure began before, the failure is left over from the revision before: said, with
 * the times (undefined when some failure belongs to the revision, or the times cannot tell).
 */
function observedBefore(evidence: Evidence[], revision: string): RepoGuards['observedBefore'] {
  const at = (e: Evidence) => e.attempted?.sha !== undefined && (revision.startsWith(e.attempted.sha) || e.attempted.sha.startsWith(revision));
  const reporter = evidence.find(at);
  const failed = evidence.filter((e) => e.state === 'failed');
  if (!reporter?.since || failed.length === 0 || failed.some(at)) return undefined;
  const applied = Date.parse(reporter.since);
  if (Number.isNaN(applied)) return undefined;
  const older = failed.map((e) => ({ e, since: e.since ? Date.parse(e.since) : Number.NaN }));
  if (older.some(({ since }) => Number.isNaN(since) || since >= applied)) return undefined;
  const first = older[0]!.e;
  return {
    commit: revision,
    object: `${first.kind} ${first.namespace ? `${first.namespace}/` : ''}${first.name}`,
    failedSince: first.since!,
    appliedSince: reporter.since,
  };
}