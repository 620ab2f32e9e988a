import { createHash } from 'node:crypto';
import { RevertImpossible } from '../errors.ts';
import { lastgoodTarget } from '../history/trailers.ts';
import type { FileChange, FileEntry, RepoReader } from '../repo/types.ts';
import { mergeFile } from './merge-file.ts';

/**
 * The `revert` strategy: `git revert` of each bad commit, newest first, restricted to the target
 * paths, computed on the object database alone (RepoReader), so that it runs the same on a local
 * repository and on GitHub's API. Several bad commits of one range are undone as their net change
 * (one step from the attempted revision back to the applied one), so that a person's revert inside
 * the range cancels out instead of conflicting.
 *
 * For a bad commit B with first parent P, each file under the paths that B changed is merged
 * 3-way with base = B's version, ours = the current version (head, then what the previous
 * reverts made of it), theirs = P's version: exactly git's revert merge. A merge commit is
 * reverted against its first parent (`git revert -m 1`). Files: line merge (diff3) first; a YAML
 * file whose line merge conflicts is merged structurally (yaml-merge.ts). Anything else that
 * both sides changed is a conflict: RevertImpossible naming the files and the commits.
 */

export type MergeHow = 'clean' | 'line' | 'yaml';

export interface RevertPlan {
  /** the changes to write on top of head, sorted by path; only inside the target paths */
  files: FileChange[];
  /** how each changed file was obtained: 'clean' = one side unchanged, 'line' = diff3, 'yaml' = structural */
  merged: Array<{ path: string; how: MergeHow }>;
}

/** One version of a file: always its blob oid; `content` when this plan made it (not in the repository yet). */
interface Version {
  oid: string;
  mode: string;
  content?: Uint8Array;
}

type Outcome = { result: Version | undefined; how: MergeHow } | { conflict: string };

const SYMLINK = '120000';
const GITLINK = '160000';

/** git's blob id: sha1 (or sha256 for a sha256 repository) of "blob <size>\0<content>". */
export function blobOid(content: Uint8Array, algorithm: 'sha1' | 'sha256' = 'sha1'): string {
  return createHash(algorithm).update(`blob ${content.byteLength}\0`).update(content).digest('hex');
}

function mergeModes(base: string, ours: string, theirs: string): string | undefined {
  if (ours === base) return theirs;
  if (theirs === base || theirs === ours) return ours;
  return undefined;
}

const RANK: Record<MergeHow, number> = { clean: 0, line: 1, yaml: 2 };

/** One undo step: the change from `theirs` to `base` is taken back (a commit and its first parent, or a whole range's ends). */
export interface RevertStep {
  base: string;
  /** undefined: the empty tree (the bad commit is a root commit) */
  theirs: string | undefined;
}

export interface RevertInput {
  head: string;
  paths: string[];
  /** bad commits, newest first: each undone against its first parent */
  bad?: string[];
  /** or explicit steps (a range's net change: base = attempted, theirs = applied) */
  steps?: RevertStep[];
}

export async function planRevert(reader: RepoReader, opts: RevertInput): Promise<RevertPlan> {
  const blobs = new Map<string, Promise<Uint8Array>>();
  const read = (v: Version): Promise<Uint8Array> => {
    if (v.content) return Promise.resolve(v.content);
    let p = blobs.get(v.oid);
    if (!p) blobs.set(v.oid, (p = reader.readBlob(v.oid)));
    return p;
  };

  const start: Map<string, FileEntry> = await reader.listFiles(opts.head, opts.paths);
  const view = new Map<string, Version>(start);
  const how = new Map<string, MergeHow>();
  const conflicts: string[] = [];
  const conflictingCommits = new Set<string>();
  const algorithm = opts.head.length === 64 ? 'sha256' : 'sha1';

  async function merge3(path: string, base: Version | undefined, ours: Version | undefined, theirs: Version | undefined): Promise<Outcome> {
    if (!ours) {
      if (!base) return { result: theirs, how: 'clean' }; // the commit deleted it, still absent: restore it
      if (!theirs) return { result: undefined, how: 'clean' };
      return { conflict: 'deleted since the bad commit, which the revert would change' };
    }
    if (base && ours.oid === base.oid && ours.mode === base.mode) return { result: theirs, how: 'clean' };
    if (!theirs) return { conflict: 'the revert deletes it (the bad commit added it), but it changed since' };
    if (!base) {
      if (ours.oid === theirs.oid) return { result: { ...ours, mode: ours.mode }, how: 'clean' };
      return { conflict: 'the revert re-creates it (the bad commit deleted it), but a different file exists there now' };
    }
    const mode = mergeModes(base.mode, ours.mode, theirs.mode);
    if (mode === undefined) return { conflict: `file mode changed on both sides (${ours.mode} vs ${theirs.mode})` };
    if (ours.oid === theirs.oid || base.oid === theirs.oid) return { result: { ...ours, mode }, how: 'clean' };
    if (ours.oid === base.oid) return { result: { ...theirs, mode }, how: 'clean' };
    if ([base.mode, ours.mode, theirs.mode].some((m) => m === SYMLINK || m === GITLINK)) {
      return { conflict: 'symlink or submodule changed on both sides' };
    }
    // line merge as git does it, byte for byte; a YAML file whose lines conflict is merged structurally
    const m = mergeFile(path, ...(await Promise.all([read(base), read(ours), read(theirs)])));
    if (!m.clean) return { conflict: m.conflict };
    const merged: MergeHow = m.how;
    const content = m.content;
    const oid = blobOid(content, algorithm);
    // the result may be an existing blob: reuse it by oid
    for (const v of [ours, theirs, base]) if (v.oid === oid) return { result: { oid, mode }, how: merged };
    return { result: { oid, mode, content }, how: merged };
  }

  const steps: RevertStep[] = [...(opts.steps ?? [])];
  for (const bad of opts.bad ?? []) {
    const commit = await reader.readCommit(bad);
    const target = lastgoodTarget(commit.message);
    if (target !== undefined) {
      throw new RevertImpossible(`commit ${bad.slice(0, 12)} is a lastgood revert (Lastgood-Target: ${target}): lastgood never reverts its own reverts`, [bad]);
    }
    steps.push({ base: bad, theirs: commit.parents[0] });
  }

  for (const { base: bad, theirs: parent } of steps) {
    const [baseFiles, theirsFiles] = await Promise.all([
      reader.listFiles(bad, opts.paths),
      parent ? reader.listFiles(parent, opts.paths) : Promise.resolve(new Map<string, FileEntry>()),
    ]);
    const changed = [...new Set([...baseFiles.keys(), ...theirsFiles.keys()])].sort();
    for (const path of changed) {
      const base = baseFiles.get(path);
      const theirs = theirsFiles.get(path);
      if (base && theirs && base.oid === theirs.oid && base.mode === theirs.mode) continue;
      const outcome = await merge3(path, base, view.get(path), theirs);
      if ('conflict' in outcome) {
        conflicts.push(`${path}: ${outcome.conflict} (reverting ${bad.slice(0, 12)})`);
        conflictingCommits.add(bad);
        continue;
      }
      if (outcome.result) view.set(path, outcome.result);
      else view.delete(path);
      const before = how.get(path);
      if (!before || RANK[outcome.how] > RANK[before]) how.set(path, outcome.how);
    }
  }

  if (conflicts.length > 0) {
    const files = [...new Set(conflicts.map((c) => c.slice(0, c.indexOf(': '))))];
    throw new RevertImpossible(
      `revert conflicts in ${files.join(', ')} (reverting ${[...conflictingCommits].map((c) => c.slice(0, 12)).join(', ')}): a later commit changed the same lines or keys`,
      conflicts,
    );
  }

  // a file and a folder of the same name cannot both exist
  for (const path of view.keys()) {
    const parts = path.split('/');
    for (let i = 1; i < parts.length; i++) {
      const prefix = parts.slice(0, i).join('/');
      if (view.has(prefix)) throw new RevertImpossible(`revert conflicts in ${prefix}: it would be both a file and a folder`, [`${prefix}: file/folder conflict`]);
    }
  }

  // a file the revert creates where the head holds something the plan did not list (a range's plan
  // lists only the files the bad commits changed): a blob at the head where it needs a folder, or a
  // folder where it writes a file. Writing it would replace what a later commit made.
  for (const path of view.keys()) {
    if (start.has(path)) continue;
    if ((await reader.pathOid(opts.head, path)) !== undefined) throw new RevertImpossible(`revert conflicts in ${path}: it would be both a file and a folder (a folder at the head)`, [`${path}: file/folder conflict`]);
    const parts = path.split('/');
    for (let i = 1; i < parts.length; i++) {
      const prefix = parts.slice(0, i).join('/');
      if ((await reader.pathOid(opts.head, prefix)) === undefined) break;
      if ((await reader.listFiles(opts.head, [prefix])).has(prefix)) throw new RevertImpossible(`revert conflicts in ${prefix}: it would be both a file and a folder (a file at the head)`, [`${prefix}: file/folder conflict`]);
    }
  }

  const files: FileChange[] = [];
  for (const path of [...new Set([...start.keys(), ...view.keys()])].sort()) {
    const before = start.get(path);
    const after = view.get(path);
    if (!after) {
      if (before) files.push({ path, delete: true });
    } else if (!before || before.oid !== after.oid || before.mode !== after.mode) {
      files.push(after.content ? { path, mode: after.mode, content: after.content } : { path, mode: after.mode, oid: after.oid });
    }
  }
  return { files, merged: files.map((f) => ({ path: f.path, how: how.get(f.path) ?? 'clean' })) };
}
