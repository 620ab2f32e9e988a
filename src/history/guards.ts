/**
 * The engine's guard-gathering step: what the config repository says about the target's past
 * reverts, as plain data for decide (RepoGuards). Reads the repository, writes nothing.
 */
import type { ResolvedTarget } from '../config/schema.ts';
import { lastgoodTarget } from './trailers.ts';
import { firstParentLog } from './graph.ts';
import type { RepoReader } from '../repo/types.ts';
import { failingRevision } from '../decide/guards.ts';
import type { Evidence, RepoGuards } from '../decide/types.ts';

/** How many commits touching the target paths to look through for its last revert. */
export const LAST_REVERT_SEARCH = 20;

export interface GatherInput {
  reader: RepoReader;
  head: string;
  target: Pick<ResolvedTarget, 'name' | 'paths'>;
  evidence: Evidence[];
}

/**
 * - lastRevert: the newest lastgood commit for this target (trailer `Lastgood-Target`) among the
 *   newest commits touching its paths (a revert always touches them), with its commit time and
 *   whether the failing revision already contains it;
 * - revertOfRevert: the failing revision is itself a lastgood commit (for this target, or one that
 *   touched its paths).
 */
export async function repoGuards({ reader, head, target, evidence }: GatherInput): Promise<RepoGuards> {
  const out: RepoGuards = {};
  const recent = await firstParentLog(reader, head, { paths: target.paths, limit: LAST_REVERT_SEARCH });
  const last = recent.find((c) => lastgoodTarget(c.message) === target.name);

  const revision = failingRevision(evidence);
  const failing = revision ? await reader.resolveCommit(revision) : undefined;
  if (failing) {
    const commit = await reader.readCommit(failing);
    const by = lastgoodTarget(commit.message);
    // only a revert that touched this target's files makes this target's failure a failure of a revert
    if (by && (by === target.name || recent.some((c) => c.oid === failing))) out.revertOfRevert = { commit: failing, target: by };
  }
  if (last) {
    out.lastRevert = { commit: last.oid, at: new Date(last.committer.timestamp * 1000).toISOString() };
    if (failing) out.lastRevert.deployed = await reader.isAncestor(last.oid, failing);
  }
  return out;
}
