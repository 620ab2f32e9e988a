/**
 * The branch moved between a plan and its delivery (StaleHeadError, commit mode): does the plan
 * still hold on the new head? Re-planning costs as much as the first plan (locate, plan, verify,
 * render), so against a bot that pushes every few hundred ms a run that always re-plans never
 * wins (issue 33). This reads only what the new commits change: their messages (first parent) and
 * a tree diff that enters changed folders only, and compares it with what the plan read.
 */
import type { ResolvedTarget } from '../config/schema.ts';
import { changedPaths, firstParentLog } from '../history/graph.ts';
import { lastgoodTarget, revertedBy } from '../history/trailers.ts';
import type { TargetModel } from '../model/types.ts';
import { detectImageBot } from '../revert/freeze.ts';
import { isYamlPath } from '../revert/yaml-merge.ts';
import type { CommitInfo, FileChange, RepoReader } from '../repo/types.ts';

/**
 * What a verified plan read, as repository paths. A path stands for its git entry: a folder for
 * everything below it (a model's regions are folders whose entries decide it, src/model/types.ts),
 * '' for the whole repository.
 */
export interface PlanReads {
  entries: Set<string>;
  /** the freeze edits searched every YAML file of the repository for image automation (revert/freeze.ts) */
  anyYaml: boolean;
}

/**
 * The paths a plan depends on: the files it writes, the target's paths, and what the verified
 * models (head and after the change) read for the target: their inputs and regions, and where a
 * render ran, every file of the build it rendered. The last-known-good's model is of a fixed commit.
 */
export function planReads(input: { target: Pick<ResolvedTarget, 'paths' | 'freeze'>; files: FileChange[]; models: TargetModel[]; rendered: 'no' | 'cut' | 'whole'; bad: CommitInfo[] }): PlanReads {
  const entries = new Set<string>();
  const add = (p: string) => entries.add(p.replace(/\/+$/, ''));
  for (const f of input.files) add(f.path);
  for (const p of input.target.paths) add(p);
  for (const m of input.models) {
    // "dir/(generated kustomization)": Flux generates it from the folder's files, below too — all
    // of them where the model read the whole build; only those on the way to the target where it
    // read the part that reaches it (its regions say which)
    for (const p of m.inputs.keys()) if (!p.includes('(generated') || !m.render?.cut) add(p.includes('(generated') ? p.slice(0, Math.max(0, p.lastIndexOf('/'))) : p);
    for (const r of m.regions) add(r);
    if (input.rendered !== 'no' && m.render) {
      for (const p of m.render.files.keys()) add(p);
      // the whole build was rendered: everything under the engine's path was read
      if (input.rendered === 'whole') add(m.render.root);
    }
  }
  const anyYaml = input.target.freeze === 'auto' && input.bad.some((c) => detectImageBot(c) !== undefined);
  return { entries, anyYaml };
}

/** The first path of `changed` that the plan read (itself or a folder above it), or undefined. */
export function firstRead(reads: PlanReads, changed: string[]): string | undefined {
  if (reads.entries.has('')) return changed[0];
  for (const path of changed) {
    if (reads.anyYaml && isYamlPath(path)) return path;
    for (let p = path; p; p = p.slice(0, Math.max(0, p.lastIndexOf('/')))) if (reads.entries.has(p)) return path;
  }
  return undefined;
}

/** At most this many new commits are read for their trailers; more than that, and the plan is made again. */
export const MAX_NEW_COMMITS = 1000;
/** At most this many changed files are compared; more than that, and the plan is made again. */
export const MAX_CHANGED_FILES = 500;

export type AfterMove =
  /** a commit of the new ones already reverts the newest bad commit for this target */
  | { kind: 'already-reverted'; commit: string }
  /** nothing the plan read changed: the same change holds on the new head */
  | { kind: 'redeliver' }
  | { kind: 'replan'; why: string };

export async function afterBranchMoved(input: { reader: RepoReader; target: string; bad: string | undefined; planned: string; moved: string; reads: PlanReads }): Promise<AfterMove> {
  const { reader, planned, moved } = input;
  if (!/^[0-9a-f]{40}([0-9a-f]{24})?$/.test(moved)) return { kind: 'replan', why: `the branch is now ${moved}` };
  // the same test as findExistingRevert (revert.ts), on the new commits only
  const since = await firstParentLog(reader, moved, { exclude: planned, limit: MAX_NEW_COMMITS });
  if (since.length >= MAX_NEW_COMMITS) return { kind: 'replan', why: `${MAX_NEW_COMMITS} commits or more landed` };
  if (input.bad) {
    const existing = since.find((c) => lastgoodTarget(c.message) === input.target && revertedBy(c.message).includes(input.bad!));
    if (existing) return { kind: 'already-reverted', commit: existing.oid };
  }
  // a branch rewritten past the plan's head may no longer hold the bad commit: only a plan made anew says.
  // The usual case is read off the walk (the oldest new commit's first parent is the plan's head): a
  // backend's isAncestor may prune by commit time, and a commit dated in the past would hide it
  const onLine = since.length > 0 && since[since.length - 1]!.parents[0] === planned;
  if (!onLine && !(await reader.isAncestor(planned, moved))) return { kind: 'replan', why: `the branch was rewritten: ${planned.slice(0, 12)} is no longer on it` };
  // another revert of this target (another failure): the guards and the plan must see it
  const other = since.find((c) => lastgoodTarget(c.message) === input.target);
  if (other) return { kind: 'replan', why: `${other.oid.slice(0, 12)} is another lastgood commit for this target` };
  const changed = await changedPaths(reader, planned, moved, MAX_CHANGED_FILES);
  if (changed.length >= MAX_CHANGED_FILES) return { kind: 'replan', why: `${MAX_CHANGED_FILES} files or more changed` };
  const read = firstRead(input.reads, changed);
  return read ? { kind: 'replan', why: `the new commits change ${read}, which the plan read` } : { kind: 'redeliver' };
}
