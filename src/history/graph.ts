import type { CommitInfo, FileEntry, RepoReader, TreeItem } from '../repo/types.ts';

/**
 * What a history means, decided once for every backend (the RepoReader port only reads commits,
 * trees and blobs). Two views of the commit graph:
 *
 * - a **range** `exclude..include` is every commit reachable from `include` and from none of
 *   `exclude`, over the whole graph (both parents of every merge): git's `rev-list A..B`. It is
 *   computed the way git's `limit_list` does it, newest committer time first, painting what
 *   `exclude` reaches as uninteresting, and stopping once only uninteresting commits are left in
 *   the queue (plus a little slop for clock skew). A walk never goes past `exclude`.
 * - the **mainline** of a range is its first-parent chain from `include`; each mainline commit
 *   stands for a **unit**: itself and the commits of the range that its other parents bring in
 *   (a merged pull request's inner commits belong to its merge commit). A `git pull` merge whose
 *   other parent lies outside the range (already applied) brings nothing of the range.
 */

/** How many commits a range walk may read before it is called unbounded. */
export const MAX_RANGE_COMMITS = 5000;
/** Commits read past the point where only uninteresting ones are queued (git's SLOP). */
const SLOP = 5;

export type RangeResult =
  | { bounded: true; commits: CommitInfo[] }
  | { bounded: false; reason: string };

/** The commits of `exclude..include` (reachable from include, not from any exclude), newest first. */
export async function commitRange(reader: RepoReader, include: string, exclude: string[], opts: { max?: number } = {}): Promise<RangeResult> {
  const max = opts.max ?? MAX_RANGE_COMMITS;
  const uninteresting = new Set<string>();
  const seen = new Map<string, CommitInfo>();
  const queue: CommitInfo[] = []; // sorted oldest first: pop() takes the newest
  const push = (c: CommitInfo) => {
    let lo = 0;
    let hi = queue.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (queue[mid]!.committer.timestamp <= c.committer.timestamp) lo = mid + 1;
      else hi = mid;
    }
    queue.splice(lo, 0, c);
  };
  /** Paints a commit and everything below it that was already read as uninteresting. */
  const paint = (oid: string) => {
    const stack = [oid];
    while (stack.length) {
      const o = stack.pop()!;
      if (uninteresting.has(o)) continue;
      uninteresting.add(o);
      const c = seen.get(o);
      if (c) stack.push(...c.parents);
    }
  };
  const visit = async (oid: string): Promise<CommitInfo | undefined> => {
    if (seen.has(oid)) return undefined;
    const c = await reader.readCommit(oid);
    seen.set(oid, c);
    push(c);
    return c;
  };

  for (const e of exclude) {
    paint(e);
    await visit(e).catch(() => undefined); // an excluded commit we cannot read excludes nothing more
  }
  await visit(include);
  const out: CommitInfo[] = [];
  let slop = SLOP;
  while (queue.length > 0) {
    if (queue.every((c) => uninteresting.has(c.oid))) {
      if (slop-- <= 0) break;
    } else slop = SLOP;
    if (seen.size > max) {
      return { bounded: false, reason: `more than ${max} commits lie between the two revisions (or one is not an ancestor of the other)` };
    }
    const c = queue.pop()!;
    if (uninteresting.has(c.oid)) {
      for (const p of c.parents) {
        paint(p);
        await visit(p).catch(() => undefined);
      }
      continue;
    }
    out.push(c);
    for (const p of c.parents) {
      try {
        await visit(p);
      } catch (error) {
        return { bounded: false, reason: `the history ends at ${c.oid.slice(0, 12)}: its parent ${p.slice(0, 12)} cannot be read (${(error as Error).message})` };
      }
    }
  }
  return { bounded: true, commits: out.filter((c) => !uninteresting.has(c.oid)) };
}

/** The first-parent chain of a range from `include`, newest first. */
export function mainline(range: CommitInfo[], include: string): CommitInfo[] {
  const byOid = new Map(range.map((c) => [c.oid, c]));
  const out: CommitInfo[] = [];
  for (let c = byOid.get(include); c; c = c.parents[0] ? byOid.get(c.parents[0]) : undefined) out.push(c);
  return out;
}

/**
 * Each mainline commit's unit: itself, then the range commits that its non-first parents bring in
 * and that no older mainline commit brought in already. Keyed by the mainline commit's oid.
 */
export function units(range: CommitInfo[], line: CommitInfo[]): Map<string, CommitInfo[]> {
  const byOid = new Map(range.map((c) => [c.oid, c]));
  const taken = new Set(line.map((c) => c.oid));
  const out = new Map<string, CommitInfo[]>();
  // oldest first: a commit belongs to the first merge that brought it to the mainline
  for (const head of [...line].reverse()) {
    const members = [head];
    const stack = head.parents.slice(1);
    while (stack.length) {
      const oid = stack.pop()!;
      const c = byOid.get(oid);
      if (!c || taken.has(oid)) continue;
      taken.add(oid);
      members.push(c);
      stack.push(...c.parents);
    }
    out.set(head.oid, members);
  }
  return out;
}

/** True when the tree of `commit` differs from its first parent's at any of `paths` (a root commit: when it has any of them). */
export async function touches(reader: RepoReader, commit: CommitInfo, paths: string[], parent: string | undefined = commit.parents[0]): Promise<boolean> {
  if (paths.length === 0) return true;
  if (!parent) return (await Promise.all(paths.map((p) => reader.pathOid(commit.oid, p)))).some(Boolean);
  const before = await reader.readCommit(parent);
  if (before.tree === commit.tree) return false;
  for (const p of paths) {
    if ((await reader.pathOid(commit.oid, p)) !== (await reader.pathOid(parent, p))) return true;
  }
  return false;
}

export interface LogOptions {
  /** keep only the commits that changed one of these paths against their first parent */
  paths?: string[];
  /** stop at what this commit reaches (git's `exclude..from`) */
  exclude?: string;
  /** at most this many commits in the answer */
  limit?: number;
  /** without `exclude`: read at most this many commits (default 2000) */
  maxScan?: number;
}

/**
 * `git rev-list --first-parent [^exclude] from [-- paths]`, newest first. With `exclude`, the
 * walk stays inside the range (it never passes `exclude`, whichever parent leads there); an
 * unbounded range yields what was found before the bound.
 */
export async function firstParentLog(reader: RepoReader, from: string, opts: LogOptions = {}): Promise<CommitInfo[]> {
  const limit = opts.limit ?? Infinity;
  const paths = opts.paths ?? [];
  const out: CommitInfo[] = [];
  if (limit <= 0) return out;
  let inRange: ((oid: string) => boolean) | undefined;
  if (opts.exclude) {
    if (opts.exclude === from) return out;
    const range = await commitRange(reader, from, [opts.exclude]);
    const members = new Set(range.bounded ? range.commits.map((c) => c.oid) : []);
    inRange = (oid) => members.has(oid);
    if (!range.bounded) return out;
  }
  let scanned = 0;
  const maxScan = opts.maxScan ?? 2000;
  for (let oid: string | undefined = from; oid && out.length < limit; ) {
    if (inRange ? !inRange(oid) : scanned++ >= maxScan) break;
    const c = await reader.readCommit(oid);
    if (paths.length === 0 || (await touches(reader, c, paths))) out.push(c);
    oid = c.parents[0];
  }
  return out;
}

export interface FileDelta {
  path: string;
  before?: FileEntry;
  after?: FileEntry;
}

/** The files under `paths` that differ between two commits (`from` undefined: the empty tree). */
export async function changedFiles(reader: RepoReader, from: string | undefined, to: string, paths: string[]): Promise<FileDelta[]> {
  const [a, b] = await Promise.all([from ? reader.listFiles(from, paths) : new Map<string, FileEntry>(), reader.listFiles(to, paths)]);
  const out: FileDelta[] = [];
  for (const path of [...new Set([...a.keys(), ...b.keys()])].sort()) {
    const before = a.get(path);
    const after = b.get(path);
    if (before && after && before.oid === after.oid && before.mode === after.mode) continue;
    out.push({ path, ...(before ? { before } : {}), ...(after ? { after } : {}) });
  }
  return out;
}

/** True when `file` lies in one of the target paths (a folder path ends with "/", or names a tree). */
export function underPaths(file: string, paths: string[]): boolean {
  return paths.some((p) => {
    const clean = p.replace(/\/+$/, '');
    return file === clean || file.startsWith(`${clean}/`);
  });
}

/** Files that differ between two commits anywhere in the repository, at most `cap` of them: a tree diff that reads only subtrees whose oids differ. */
export function changedPaths(reader: RepoReader, from: string, to: string, cap: number): Promise<string[]> {
  return changedOutside(reader, from, to, [], cap);
}

/**
 * Files that differ between two commits anywhere in the repository, except under `paths`, at most
 * `cap` of them: only subtrees whose oids differ are read.
 */
export async function changedOutside(reader: RepoReader, from: string, to: string, paths: string[], cap = 20): Promise<string[]> {
  const [a, b] = await Promise.all([reader.readCommit(from), reader.readCommit(to)]);
  const out: string[] = [];
  const walk = async (x: string | undefined, y: string | undefined, prefix: string): Promise<void> => {
    if (x === y || out.length >= cap) return;
    const [xs, ys] = await Promise.all([x ? reader.readTree(x) : ([] as TreeItem[]), y ? reader.readTree(y) : ([] as TreeItem[])]);
    const xm = new Map(xs.map((e) => [e.path, e]));
    const ym = new Map(ys.map((e) => [e.path, e]));
    for (const name of [...new Set([...xm.keys(), ...ym.keys()])].sort()) {
      if (out.length >= cap) return;
      const [ex, ey] = [xm.get(name), ym.get(name)];
      if (ex && ey && ex.oid === ey.oid && ex.mode === ey.mode) continue;
      const full = prefix ? `${prefix}/${name}` : name;
      if (underPaths(full, paths)) continue;
      const tx = ex?.type === 'tree' ? ex.oid : undefined;
      const ty = ey?.type === 'tree' ? ey.oid : undefined;
      if (tx || ty) await walk(tx, ty, full);
      if ((ex && ex.type !== 'tree') || (ey && ey.type !== 'tree')) out.push(full);
    }
  };
  await walk(a.tree, b.tree, '');
  return out;
}
