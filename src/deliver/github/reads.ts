import { createHash } from 'node:crypto';
import type { Octokit } from '@octokit/rest';
import { InputError, RemoteError } from '../../errors.ts';
import type { CommitInfo, FileEntry, TreeItem } from '../../repo/types.ts';
import { collectByWalking } from '../../repo/tree-walk.ts';
import { Lru } from '../../repo/lru.ts';
import { fromGitTimestamp, octalMode, SYMLINK_MODE, type GitHubGraphQL } from './graphql.ts';

/**
 * The GitHub backend's reads: the RepoReader primitives (commits, path oids, trees, blobs),
 * answered exactly as the local backend answers them, from a cache that GraphQL fills many
 * answers at a time. The history semantics stay in src/history/graph.ts: this file only decides
 * what to fetch together.
 *
 * - **Commits**: the first read of a branch brings its recent first-parent history, 100 commits
 *   per `history` connection, `CHAIN_SEGMENTS` of them in one query (aliases on `<ref>~100`…):
 *   200 commits with parents, tree, message, author and committer, where an incident's range lies.
 *   A walk below them reads `DEEP_SEGMENTS` connections at once (2,000 commits: graph.ts's longest
 *   scan) in one more request.
 * - **Path oids**: `pathOid(c, p)` on a miss fills `p` (and every path asked before) for the whole
 *   first-parent line below `c`. The line is cut into runs that are linear (every commit but the
 *   last has one parent, known from the cached commits). On a linear run, `git log <top> -- p`
 *   (GraphQL `history(path:)`) lists exactly the commits whose entry at `p` differs from their
 *   parent's, in order, so every commit of the run gets the state of the nearest listed commit
 *   below it, or the run's bottom (read directly). Merge commits are read directly. One query
 *   covers ~2,000 commits for each path. The state of `p` in a commit is read as the local tree
 *   walk reads it: each prefix's entry (`Commit.file`), so a symlink on the way is refused alike.
 *   One difference remains: a run where `p` is absent throughout and a prefix of it turns into a
 *   symlink and back is not seen (git's path history does not list it).
 * - **Trees and blobs**: a folder is read with its subfolders (three levels) and the texts of its
 *   files in one query, together with the other versions of the same folder the cache knows of
 *   (a revert reads the last-known-good's, the bad commit's and the head's). A text is kept only
 *   when its git blob id is the oid asked for (byte-exact); otherwise the blob is read through REST.
 */

/**
 * 100-commit `history` pages in the first query of a branch. The first read used to bring 2,100
 * (every scan of graph.ts in one request), but that is most of a run's time on a long history (an
 * 850 KB answer) to find a range a few commits deep: the cost now follows how deep the run reads.
 */
export const CHAIN_SEGMENTS = 2;
/** 100-commit pages read at once below what is known: graph.ts's first-parent scans read at most 2,000 commits (maxScan). */
const DEEP_SEGMENTS = 20;
/** How many commits one path fill covers (as many), and how many aliases one query may carry. */
const FILL_COMMITS = 2100;
const MAX_ALIASES = 120;
/** Other versions of a folder read together with the one asked for. */
const SIBLING_FOLDERS = 6;
/** The newest versions of a path whose contents a fill reads along (the head's, the last-known-good's…). */
const VERSIONS = 4;
const BLOB_BATCH = 30;
/** Blobs read in one query when a reader announces them (RepoReader.prefetch): a graph's kustomizations, a few hundred bytes each. */
const PREFETCH_BATCH = 400;
/**
 * A tree walked whole comes in one recursive REST listing when the cache lacks this many of its
 * folders (a cold start); else folder by folder. The count sees only the first missing level (what
 * lies below a missing folder is unknown until it is read), so 22 missing application folders of
 * four sub-folders each count 22: the bar is low — one listing is one request, and a warm run
 * misses only the few folders on the paths that changed.
 */
const LIST_WHOLE_WHEN_MISSING = 8;

/**
 * What the read caches hold at most (issue 22): commits by count, trees by their entries, blobs
 * by bytes, path states by count (a fill sets up to FILL_COMMITS of them a path: a generation
 * holds several fills). What falls out is read again when asked.
 */
const COMMITS_KEPT = 50_000;
/** the recursive listing of a large spec.path is one answer (the monorepo's: 33,000 entries): a generation holds several */
const TREE_ENTRIES_KEPT = 300_000;
const BLOB_BYTES_KEPT = 24 * 1024 * 1024;
const STATES_KEPT = 200_000;
const PENDING_BLOBS_KEPT = 20_000;
const COMMIT_FIELDS = 'oid message tree { oid } parents(first: 10) { totalCount nodes { oid } } author { name email date } committer { name email date }';
const BLOB_FIELDS = 'oid byteSize isBinary isTruncated text';
const ENTRY = 'name mode oid type';
const TREE_FIELDS = `oid entries { ${ENTRY} object { ... on Blob { ${BLOB_FIELDS} } ... on Tree { oid entries { ${ENTRY} object { ... on Blob { ${BLOB_FIELDS} } ... on Tree { oid entries { ${ENTRY} object { ... on Blob { ${BLOB_FIELDS} } } } } } } } } }`;
/** A tree entry's object: a folder (three levels, with texts) or a file's text. */
const CONTENTS = `oid object { ... on Tree { ${TREE_FIELDS} } ... on Blob { ${BLOB_FIELDS} } }`;
/** A tree and its sub-folders' entries, without file contents (the model reads folders; it asks for the files it reads). */
const LEAN_TREE = `oid entries { ${ENTRY} object { ... on Tree { oid entries { ${ENTRY} } } } }`;
/** A folder's own entries: a folder on the way to what is read (its siblings' contents are not). */
const LISTING = `oid entries { ${ENTRY} }`;

interface GqlActor {
  name: string | null;
  email: string | null;
  date: string | null;
}
interface GqlCommit {
  oid: string;
  message: string;
  tree: { oid: string };
  parents: { totalCount: number; nodes: Array<{ oid: string }> };
  author: GqlActor | null;
  committer: GqlActor | null;
}
interface GqlHistory {
  history?: { nodes: GqlCommit[] };
}
interface GqlEntry {
  oid: string;
  mode: number;
  type: string;
}
interface GqlBlob {
  oid: string;
  byteSize: number;
  isBinary: boolean | null;
  isTruncated: boolean;
  text: string | null;
}
interface GqlTreeEntry extends GqlEntry {
  name: string;
  object?: (Partial<GqlBlob> & { entries?: GqlTreeEntry[] }) | null;
}
interface GqlTree {
  oid: string;
  entries?: GqlTreeEntry[];
}
/** A tree entry with its object: a folder with its files' texts, or a file's text. */
interface GqlContents {
  oid: string;
  object?: (Partial<GqlBlob> & { oid: string; entries?: GqlTreeEntry[] }) | null;
}

/** The state of a path in a commit, as the tree walk sees it (tree-walk.ts entryAt: a symlink on the way is `symlink`, one at the end an entry). */
export type PathState = { kind: 'entry'; oid: string; mode: string; type: string } | { kind: 'absent' } | { kind: 'symlink'; at: string };

export interface ReadsOptions {
  owner: string;
  repo: string;
  octokit: Octokit;
  gql: GitHubGraphQL;
  /** runs one REST call, turning a failure into a RemoteError */
  call<T>(what: string, fn: () => Promise<T>): Promise<T>;
  /** how long a branch head read stays fresh (ms); the writer invalidates it */
  headTtlMs: number;
}

const person = (a: GqlActor | null) => ({ name: a?.name ?? '', email: a?.email ?? '', ...fromGitTimestamp(a?.date) });

/** git's blob id of some bytes: proves a GraphQL text is the blob byte for byte. */
export function gitBlobOid(bytes: Uint8Array): string {
  return createHash('sha1').update(`blob ${bytes.length}\0`).update(bytes).digest('hex');
}

/** A path's prefixes: "a/b/c" → ["a", "a/b", "a/b/c"]. */
const prefixesOf = (path: string) => path.split('/').map((_, i, parts) => parts.slice(0, i + 1).join('/'));

export class GitHubReads {
  private readonly opts: ReadsOptions;
  // bounded by what they hold (issue 22): a controller reads the same repository for weeks;
  // what falls out is read again when asked
  readonly commits = new Lru<string, CommitInfo>(COMMITS_KEPT);
  readonly trees = new Lru<string, TreeItem[]>(TREE_ENTRIES_KEPT, (t) => t.length + 1);
  private readonly blobs = new Lru<string, Uint8Array>(BLOB_BYTES_KEPT, (b) => b.byteLength + 64);
  /** `${commit}\0${path}` → the path's state there */
  private readonly states = new Lru<string, PathState>(STATES_KEPT);
  /** paths asked so far: a fill reads them all */
  private readonly asked = new Set<string>();
  /** blob oids seen in folder listings, not read yet */
  private readonly pendingBlobs = new Set<string>();
  private readonly heads = new Map<string, { oid: string; at: number }>();
  /** one fetch at a time: a miss waits for the fetch under way, which often answers it too */
  private lane: Promise<unknown> = Promise.resolve();
  repositoryId: string | undefined;

  constructor(opts: ReadsOptions) {
    this.opts = opts;
  }

  /** Runs `fn` after the fetch under way (the engine reads in bursts: Promise.all over paths and commits). */
  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.lane.then(fn, fn);
    this.lane = run.catch(() => undefined);
    return run;
  }

  private get names() {
    return { owner: this.opts.owner, name: this.opts.repo };
  }

  // ---- heads and commits ---------------------------------------------------------------------------

  /** The branch head; the first read also brings the branch's recent first-parent history. */
  async head(branch: string): Promise<string> {
    const fresh = this.heads.get(branch);
    if (fresh && Date.now() - fresh.at < this.opts.headTtlMs) return fresh.oid;
    return this.serial(() => this.readHead(branch));
  }

  private async readHead(branch: string): Promise<string> {
    const ref = `refs/heads/${branch}`;
    const segments = this.commits.size === 0 ? CHAIN_SEGMENTS : 1;
    const vars: Record<string, unknown> = { ...this.names, ref };
    const parts: string[] = [];
    for (let i = 1; i < segments; i++) {
      vars[`e${i}`] = `${ref}~${i * 100}`;
      parts.push(`s${i}: object(expression: $e${i}) { ... on Commit { history(first: 100) { nodes { ...C } } } }`);
    }
    const decl = Array.from({ length: segments - 1 }, (_, i) => `, $e${i + 1}: String!`).join('');
    const doc = `query($owner: String!, $name: String!, $ref: String!${decl}) { repository(owner: $owner, name: $name) { id ref(qualifiedName: $ref) { target { oid ... on Commit { history(first: 100) { nodes { ...C } } } } } ${parts.join(' ')} } }
fragment C on Commit { ${COMMIT_FIELDS} }`;
    type Answer = { repository: ({ id: string; ref: { target: { oid: string } & GqlHistory } | null } & Record<string, GqlHistory | null>) | null };
    const data = await this.opts.gql.query<Answer>(`reading branch ${branch}`, undefined, doc, vars);
    const repo = data.repository;
    if (!repo) throw new InputError(`repository ${this.opts.owner}/${this.opts.repo} not found or not visible to the token (needs "contents: read" on it)`);
    this.repositoryId = repo.id;
    if (!repo.ref) throw new InputError(`branch "${branch}" does not exist in ${this.opts.owner}/${this.opts.repo}`);
    this.remember(repo.ref.target.history?.nodes ?? []);
    for (let i = 1; i < segments; i++) this.remember((repo[`s${i}`] as GqlHistory | null)?.history?.nodes ?? []);
    this.heads.set(branch, { oid: repo.ref.target.oid, at: Date.now() });
    return repo.ref.target.oid;
  }

  /** Forget a branch's head: it moved (a write found it so, or we wrote it). */
  forgetHead(branch: string): void {
    this.heads.delete(branch);
  }

  /** A revision the cache has never seen: the branches may have moved since they were read. */
  forgetHeads(): void {
    this.heads.clear();
  }

  /** What a write learned: the branch is at `oid` now. */
  setHead(branch: string, oid: string): void {
    this.heads.set(branch, { oid, at: Date.now() });
  }

  private remember(nodes: GqlCommit[]): void {
    for (const c of nodes) {
      if (this.commits.has(c.oid) || c.parents.totalCount > c.parents.nodes.length) continue; // an octopus merge is read whole through REST
      this.commits.set(c.oid, { oid: c.oid, parents: c.parents.nodes.map((p) => p.oid), message: c.message, tree: c.tree.oid, author: person(c.author), committer: person(c.committer) });
    }
  }

  cacheCommit(info: CommitInfo): void {
    this.commits.set(info.oid, info);
  }

  async readCommit(oid: string): Promise<CommitInfo> {
    return this.commits.get(oid) ?? this.serial(() => this.readCommitNow(oid));
  }

  private async readCommitNow(oid: string): Promise<CommitInfo> {
    const cached = this.commits.get(oid);
    if (cached) return cached;
    if (/^[0-9a-f]{40}$/.test(oid)) await this.fetchChain(oid);
    const fetched = this.commits.get(oid);
    if (fetched) return fetched;
    // unknown, or an octopus merge: REST says which (and reads every parent)
    const { data } = await this.opts.call(`reading commit ${oid}`, () => this.opts.octokit.rest.git.getCommit({ owner: this.opts.owner, repo: this.opts.repo, commit_sha: oid }));
    const info: CommitInfo = {
      oid: data.sha, parents: data.parents.map((p) => p.sha), message: data.message, tree: data.tree.sha,
      author: { name: data.author.name, email: data.author.email, ...fromGitTimestamp(data.author.date) },
      committer: { name: data.committer.name, email: data.committer.email, ...fromGitTimestamp(data.committer.date) },
    };
    this.commits.set(oid, info);
    return info;
  }

  /** `from`'s first-parent history, 2,000 commits in one query. */
  private async fetchChain(from: string): Promise<void> {
    const segments = DEEP_SEGMENTS;
    const vars: Record<string, unknown> = { ...this.names, s0: from };
    const parts = [`s0: object(oid: $s0) { ... on Commit { history(first: 100) { nodes { ...C } } } }`];
    for (let i = 1; i < segments; i++) {
      vars[`e${i}`] = `${from}~${i * 100}`;
      parts.push(`s${i}: object(expression: $e${i}) { ... on Commit { history(first: 100) { nodes { ...C } } } }`);
    }
    const decl = Array.from({ length: segments - 1 }, (_, i) => `, $e${i + 1}: String!`).join('');
    const doc = `query($owner: String!, $name: String!, $s0: GitObjectID!${decl}) { repository(owner: $owner, name: $name) { ${parts.join(' ')} } }
fragment C on Commit { ${COMMIT_FIELDS} }`;
    const data = await this.opts.gql.query<{ repository: Record<string, GqlHistory | null> }>(`reading the history of ${from.slice(0, 12)}`, undefined, doc, vars);
    for (let i = 0; i < segments; i++) this.remember(data.repository[`s${i}`]?.history?.nodes ?? []);
  }

  /** True when the cached commits show `ancestor` below `descendant`; undefined when they cannot tell. */
  ancestryFromCache(ancestor: string, descendant: string): boolean | undefined {
    const seen = new Set<string>();
    const stack = [descendant];
    let complete = true;
    while (stack.length) {
      const oid = stack.pop()!;
      if (oid === ancestor) return true;
      if (seen.has(oid)) continue;
      seen.add(oid);
      const c = this.commits.get(oid);
      if (!c) {
        complete = false;
        continue;
      }
      stack.push(...c.parents);
    }
    return complete ? false : undefined;
  }

  // ---- path states -----------------------------------------------------------------------------------

  /** The state of `path` (clean: no trailing "/") in `commit`. */
  async pathState(commit: string, path: string): Promise<PathState> {
    if (path === '') return { kind: 'entry', oid: (await this.readCommit(commit)).tree, mode: '040000', type: 'tree' };
    const key = `${commit}\0${path}`;
    const known = () => {
      const st = this.states.get(key) ?? this.cachedEntry(commit, path);
      if (st) this.states.set(key, st);
      return st;
    };
    let state = known();
    if (state) return state;
    // asked before the queue: paths asked together (the target's paths) are filled by one request
    this.asked.add(path);
    await this.serial(async () => {
      if (known()) return;
      // the first fill of a path starts at the top of the line (the commits above are asked next);
      // a fill whose page of 100 changes ended before `commit` is continued from `commit`
      const top = this.lineTop(commit);
      await this.fill(this.states.has(`${top}\0${path}`) ? commit : top);
      if (!known()) await this.fill(commit);
    });
    state = this.states.get(key);
    if (!state) throw new RemoteError('github', `reading ${path} at ${commit.slice(0, 12)}: GitHub's answer did not include it`);
    return state;
  }

  /** The entry at `path` when the cache can tell it without a request (a folder above it was listed). */
  cachedEntry(commit: string, path: string): PathState | undefined {
    const direct = this.states.get(`${commit}\0${path}`);
    if (direct) return direct;
    for (const folder of [...this.asked].sort((a, b) => b.length - a.length)) {
      if (!path.startsWith(`${folder}/`)) continue;
      const st = this.states.get(`${commit}\0${folder}`);
      if (!st) continue;
      if (st.kind !== 'entry' || st.type !== 'tree') return st.kind === 'symlink' ? st : { kind: 'absent' };
      let tree = st.oid;
      const rest = path.slice(folder.length + 1).split('/');
      for (const [i, name] of rest.entries()) {
        const entries = this.trees.get(tree);
        if (!entries) return undefined;
        const e = entries.find((x) => x.path === name);
        if (!e) return { kind: 'absent' };
        if (e.mode === '120000' && i < rest.length - 1) return { kind: 'symlink', at: [folder, ...rest.slice(0, i + 1)].join('/') };
        if (i === rest.length - 1) return { kind: 'entry', oid: e.oid, mode: e.mode, type: e.type };
        if (e.type !== 'tree') return { kind: 'absent' };
        tree = e.oid;
      }
    }
    return undefined;
  }

  /**
   * The newest commit known above `commit` on a branch's first-parent line (a branch head read
   * earlier): filling from there also covers the commits between, which the engine asks next.
   */
  private lineTop(commit: string): string {
    for (const { oid: head } of this.heads.values()) {
      let cur: string | undefined = head;
      for (let steps = 0; cur && steps < FILL_COMMITS - 1; steps++) {
        if (cur === commit) return head;
        cur = this.commits.get(cur)?.parents[0];
      }
    }
    return commit;
  }

  /** Fills every asked path along the first-parent line from `start` (see the file comment). */
  private async fill(start: string): Promise<void> {
    await this.readCommitNow(start);
    // the line from `start`, cut into linear runs: all but the last commit of a run have one parent
    const runs: string[][] = [];
    let total = 0;
    for (let cur: string | undefined = start; cur && total < FILL_COMMITS; ) {
      const run: string[] = [cur];
      let c: CommitInfo = this.commits.get(cur)!;
      while (c.parents.length === 1 && total + run.length < FILL_COMMITS) {
        const parent = this.commits.get(c.parents[0]!);
        if (!parent) break;
        run.push(parent.oid);
        c = parent;
      }
      runs.push(run);
      total += run.length;
      const next: string | undefined = c.parents[0];
      cur = next && this.commits.has(next) && !run.includes(next) ? next : undefined;
    }

    const paths = [...this.asked];
    const q = new QueryVariables(this.names);
    const fields = (path: string) => prefixesOf(path).map((p, k) => `f${k}: file(path: ${q.add(p, 'String!')}) { oid mode type }`).join(' ');
    const parts: string[] = [];
    const plan: Array<{ run: string[]; path: string; alias: string; listed: boolean }> = [];
    for (const [i, run] of runs.entries()) {
      for (const [j, path] of paths.entries()) {
        if (run.every((c) => this.states.has(`${c}\0${path}`))) continue;
        if (parts.length >= MAX_ALIASES && plan.length > 0) break;
        const alias = `r${i}_${j}`;
        const listed = run.length > 1;
        if (listed) parts.push(`h${alias}: object(oid: ${q.add(run[0]!, 'GitObjectID!')}) { ... on Commit { history(path: ${q.add(path, 'String!')}, first: 100) { nodes { oid ${fields(path)} } } } }`);
        parts.push(`b${alias}: object(oid: ${q.add(run[run.length - 1]!, 'GitObjectID!')}) { ... on Commit { oid ${fields(path)} } }`);
        plan.push({ run, path, alias, listed });
        // the path's newest versions with their contents: what a revert reads next (the head's, the
        // last-known-good's), in the same request
        if (i === 0) {
          parts.push(`c${alias}: object(oid: ${q.add(run[0]!, 'GitObjectID!')}) { ... on Commit { file(path: ${q.add(path, 'String!')}) { ${CONTENTS} } history(path: ${q.add(path, 'String!')}, first: ${VERSIONS}) { nodes { file(path: ${q.add(path, 'String!')}) { ${CONTENTS} } } } } }`);
        }
      }
    }
    if (plan.length === 0) return;
    const doc = `query(${q.declarations()}) { repository(owner: $owner, name: $name) { ${parts.join(' ')} } }`;
    const vars = q.values();
    type Files = Record<string, GqlEntry | null>;
    const data = await this.opts.gql.query<{ repository: Record<string, ({ oid: string } & Files & { history?: { nodes: Array<{ oid: string } & Files> } }) | null> }>(
      `reading the history of ${paths.join(', ')}`, undefined, doc, vars,
    );
    for (const { alias } of plan) {
      const versions = data.repository[`c${alias}`] as unknown as { file?: GqlContents | null; history?: { nodes: Array<{ file?: GqlContents | null }> } } | null;
      for (const f of [versions?.file, ...(versions?.history?.nodes ?? []).map((n) => n.file)]) this.rememberContents(f);
    }
    for (const { run, path, alias, listed } of plan) {
      const prefixes = prefixesOf(path);
      const bottom = data.repository[`b${alias}`];
      if (!bottom) continue;
      const bottomState = stateOf(bottom, prefixes);
      const last = run.length - 1;
      if (!listed) {
        this.states.set(`${run[last]}\0${path}`, bottomState);
        continue;
      }
      const nodes = data.repository[`h${alias}`]?.history?.nodes ?? [];
      const at = new Map(run.map((c, k) => [c, k]));
      const listedStates = new Map<number, PathState>();
      for (const n of nodes) {
        const k = at.get(n.oid);
        if (k !== undefined) listedStates.set(k, stateOf(n, prefixes));
      }
      // a full page may stop inside the run: below its last listed commit nothing is known
      const lastNode = nodes[nodes.length - 1];
      const coveredTo = nodes.length >= 100 && lastNode && at.has(lastNode.oid) ? at.get(lastNode.oid)! : last;
      const known: PathState[] = [];
      let state = coveredTo === last ? bottomState : listedStates.get(coveredTo)!;
      if (coveredTo === last) known[last] = bottomState;
      for (let k = coveredTo === last ? last - 1 : coveredTo; k >= 0; k--) {
        state = listedStates.get(k) ?? state;
        known[k] = state;
      }
      // newest first, so that the cache lists the newest versions of a folder first
      known.forEach((st, k) => this.states.set(`${run[k]}\0${path}`, st));
    }
  }

  // ---- trees and blobs --------------------------------------------------------------------------------

  /** Every blob under the folder `tree` (its path `prefix`), as collectByWalking finds them. */
  async collectFolder(tree: string, prefix: string, out: Map<string, FileEntry>): Promise<void> {
    if (!this.trees.has(tree)) {
      await this.serial(async () => {
        if (!this.trees.has(tree)) await this.fetchTrees([tree, ...this.siblingFolders(prefix, tree)]);
      });
    }
    await collectByWalking((oid) => this.readTree(oid), tree, prefix, out);
  }

  /** Other versions of the folder at `path` in cached commits, newest first. */
  private siblingFolders(path: string, except: string): string[] {
    const out: string[] = [];
    for (const [key, st] of this.states.entries()) {
      if (out.length >= SIBLING_FOLDERS) break;
      if (!key.endsWith(`\0${path}`) || st.kind !== 'entry' || st.type !== 'tree' || st.oid === except || this.trees.has(st.oid) || out.includes(st.oid)) continue;
      out.push(st.oid);
    }
    return out;
  }

  async readTree(oid: string): Promise<TreeItem[]> {
    return this.trees.get(oid) ?? this.serial(() => this.readTreeNow(oid));
  }

  private async readTreeNow(oid: string): Promise<TreeItem[]> {
    let entries = this.trees.get(oid);
    if (!entries) {
      await this.fetchTrees([oid], LEAN_TREE);
      entries = this.trees.get(oid);
    }
    if (!entries) {
      // not a tree GraphQL knows: REST says why (404 for an unknown object)
      const { data } = await this.opts.call(`reading tree ${oid}`, () => this.opts.octokit.rest.git.getTree({ owner: this.opts.owner, repo: this.opts.repo, tree_sha: oid }));
      entries = data.tree.map((e) => ({ path: e.path ?? '', mode: e.mode ?? '', type: e.type ?? '', oid: e.sha ?? '' }));
      this.trees.set(oid, entries);
    }
    return entries;
  }

  /** Trees (three levels deep) with the texts of their files, in one query (`fields`: what of them). */
  private async fetchTrees(oids: string[], fields = TREE_FIELDS): Promise<void> {
    const vars: Record<string, unknown> = { ...this.names };
    const parts = oids.map((oid, i) => {
      vars[`t${i}`] = oid;
      return `t${i}: object(oid: $t${i}) { ... on Tree { ${fields} } }`;
    });
    const doc = `query($owner: String!, $name: String!, ${oids.map((_, i) => `$t${i}: GitObjectID!`).join(', ')}) { repository(owner: $owner, name: $name) { ${parts.join(' ')} } }`;
    const data = await this.opts.gql.query<{ repository: Record<string, GqlTree | null> }>(`reading ${oids.length === 1 ? `tree ${oids[0]}` : `${oids.length} trees`}`, undefined, doc, vars);
    for (const [i] of oids.entries()) {
      const t = data.repository[`t${i}`];
      // a lean listing (no texts) names files the reader may never read: they do not wait to be fetched together
      if (t?.entries) this.rememberTree(t.oid, t.entries, fields === TREE_FIELDS);
    }
  }

  private rememberContents(entry: GqlContents | null | undefined): void {
    const o = entry?.object;
    if (!o) return;
    if (o.entries) this.rememberTree(o.oid, o.entries);
    else if ('byteSize' in o) this.rememberBlob(o as GqlBlob);
  }

  private rememberTree(oid: string, entries: GqlTreeEntry[], pending = true): void {
    this.trees.set(oid, entries.map((e) => ({ path: e.name, oid: e.oid, mode: octalMode(e.mode), type: e.type })));
    for (const e of entries) {
      if (e.type === 'tree' && e.object?.entries) this.rememberTree(e.oid, e.object.entries, pending);
      else if (e.type === 'blob' && e.object && 'byteSize' in e.object) this.rememberBlob(e.object as GqlBlob);
      else if (pending && e.type === 'blob' && !this.blobs.has(e.oid)) this.pendingBlobs.add(e.oid);
    }
  }

  /**
   * A tree about to be walked whole (the model's graph, the .sourceignore search): when the cache
   * lacks many of its folders (a cold start), the whole of it in one recursive REST listing
   * (git/trees?recursive=1, up to 100,000 entries) instead of one query per folder; when it lacks
   * only a few (a warm run: the folders that changed), they are read one by one as walked.
   */
  async prefetchTrees(oids: string[]): Promise<void> {
    for (const oid of oids) {
      if (this.missingTrees(oid, LIST_WHOLE_WHEN_MISSING) < LIST_WHOLE_WHEN_MISSING) continue;
      await this.serial(async () => {
        if (this.missingTrees(oid, LIST_WHOLE_WHEN_MISSING) < LIST_WHOLE_WHEN_MISSING) return;
        const { data } = await this.opts.call(`reading tree ${oid}`, () => this.opts.octokit.rest.git.getTree({ owner: this.opts.owner, repo: this.opts.repo, tree_sha: oid, recursive: '1' }));
        if (data.truncated) return; // too large for one listing: folder by folder
        const byFolder = new Map<string, TreeItem[]>([['', []]]);
        const oidOf = new Map<string, string>([['', oid]]);
        for (const e of data.tree) {
          const p = e.path ?? '';
          const slash = p.lastIndexOf('/');
          const folder = slash < 0 ? '' : p.slice(0, slash);
          const item: TreeItem = { path: p.slice(slash + 1), oid: e.sha ?? '', mode: octalMode(parseInt(e.mode ?? '0', 8)), type: e.type ?? '' };
          let items = byFolder.get(folder);
          if (!items) byFolder.set(folder, (items = []));
          items.push(item);
          if (item.type === 'tree') {
            oidOf.set(p, item.oid);
            if (!byFolder.has(p)) byFolder.set(p, []);
          }
        }
        for (const [folder, items] of byFolder) {
          const treeOid = oidOf.get(folder);
          if (treeOid && !this.trees.has(treeOid)) this.trees.set(treeOid, items);
        }
      });
    }
  }

  /** How many folders below the tree `oid` the cache lacks (counted up to `limit`). */
  private missingTrees(oid: string, limit: number): number {
    let missing = 0;
    const stack = [oid];
    const seen = new Set<string>();
    while (stack.length > 0 && missing < limit) {
      const t = stack.pop()!;
      if (seen.has(t)) continue;
      seen.add(t);
      const entries = this.trees.get(t);
      if (!entries) {
        missing++;
        continue;
      }
      for (const e of entries) if (e.type === 'tree') stack.push(e.oid);
    }
    return missing;
  }

  /**
   * Folders of commits about to be read (RepoReader.prefetchPaths), in one query by their paths:
   * each folder on the way as its listing, each folder read whole with its files' texts (three
   * levels; deeper ones are read when walked), a file with its text. What the cache holds already
   * is not asked again.
   */
  async prefetchPaths(asked: Array<{ commit: string; path: string; whole: boolean }>): Promise<void> {
    const roots = new Map<string, string>();
    for (const c of new Set(asked.map((a) => a.commit))) roots.set(c, (await this.readCommit(c)).tree);
    const seen = new Set<string>();
    const wanted = asked.filter((f) => {
      const root = roots.get(f.commit)!;
      const st = f.path === '' ? { oid: root, type: 'tree' } : this.cachedEntry(f.commit, f.path) ?? this.entryThroughTrees(root, f.path);
      // the same folder of two revisions that share it (a tree oid both name) is asked once
      const key = st && 'oid' in st ? `${st.oid}|${f.whole}` : `${f.commit}:${f.path}|${f.whole}`;
      if (seen.has(key)) return false;
      seen.add(key);
      if (!st || !('oid' in st)) return true;
      return !(st.type === 'tree' ? this.trees.has(st.oid) && (!f.whole || !this.pendingUnder(st.oid)) : this.blobs.has(st.oid));
    });
    if (wanted.length === 0) return;
    await this.serial(async () => {
      const vars: Record<string, unknown> = { ...this.names };
      const declared: string[] = [];
      const parts = wanted.map((f, i) => {
        const object = `... on Tree { ${f.whole ? TREE_FIELDS : LISTING} } ... on Blob { ${BLOB_FIELDS} }`;
        if (f.path === '') {
          vars[`p${i}`] = roots.get(f.commit)!;
          declared.push(`$p${i}: GitObjectID!`);
          return `p${i}: object(oid: $p${i}) { ${object} }`;
        }
        vars[`p${i}`] = `${f.commit}:${f.path}`;
        declared.push(`$p${i}: String!`);
        return `p${i}: object(expression: $p${i}) { ${object} }`;
      });
      const doc = `query($owner: String!, $name: String!, ${declared.join(', ')}) { repository(owner: $owner, name: $name) { ${parts.join(' ')} } }`;
      const commits = new Set(wanted.map((f) => f.commit)).size;
      const data = await this.opts.gql.query<{ repository: Record<string, (GqlTree & Partial<GqlBlob>) | null> }>(`reading ${wanted.length} folder${wanted.length === 1 ? '' : 's'} of ${commits === 1 ? wanted[0]!.commit.slice(0, 12) : `${commits} revisions`}`, undefined, doc, vars);
      wanted.forEach((f, i) => {
        const o = data.repository[`p${i}`];
        if (!o) return;
        if (o.entries) this.rememberTree(o.oid, o.entries, f.whole);
        else if ('byteSize' in o) this.rememberBlob(o as GqlBlob);
      });
    });
  }

  /** The entry at `path` below the tree `root`, where every tree on the way is cached (another revision read the same folders). */
  private entryThroughTrees(root: string, path: string): { oid: string; type: string } | undefined {
    let tree = root;
    const parts = path.split('/');
    for (let i = 0; i < parts.length; i++) {
      const e = this.trees.get(tree)?.find((x) => x.path === parts[i]);
      if (!e) return undefined;
      if (i === parts.length - 1) return { oid: e.oid, type: e.type };
      if (e.type !== 'tree') return undefined;
      tree = e.oid;
    }
    return undefined;
  }

  /** True when a file below the tree `oid` (as far as it is cached) was named but not read. */
  private pendingUnder(oid: string): boolean {
    const stack = [oid];
    const seen = new Set<string>();
    while (stack.length > 0) {
      const t = stack.pop()!;
      if (seen.has(t)) continue;
      seen.add(t);
      for (const e of this.trees.get(t) ?? []) {
        if (e.type === 'tree') stack.push(e.oid);
        else if (e.type === 'blob' && !this.blobs.has(e.oid)) return true;
      }
    }
    return false;
  }

  /** Blobs about to be read: the missing ones in queries of PREFETCH_BATCH. */
  async prefetch(oids: string[]): Promise<void> {
    const missing = [...new Set(oids)].filter((o) => !this.blobs.has(o) && /^[0-9a-f]{40}$/.test(o));
    for (let i = 0; i < missing.length; i += PREFETCH_BATCH) {
      const batch = missing.slice(i, i + PREFETCH_BATCH);
      await this.serial(async () => {
        const still = batch.filter((o) => !this.blobs.has(o));
        if (still.length === 0) return;
        const vars: Record<string, unknown> = { ...this.names };
        const doc = `query($owner: String!, $name: String!, ${still.map((_, j) => `$b${j}: GitObjectID!`).join(', ')}) { repository(owner: $owner, name: $name) { ${still.map((o, j) => {
          vars[`b${j}`] = o;
          return `b${j}: object(oid: $b${j}) { ... on Blob { ${BLOB_FIELDS} } }`;
        }).join(' ')} } }`;
        const data = await this.opts.gql.query<{ repository: Record<string, GqlBlob | null> }>(`reading ${still.length} blobs`, undefined, doc, vars);
        for (const [j] of still.entries()) {
          const b = data.repository[`b${j}`];
          if (b && 'byteSize' in b) this.rememberBlob(b);
        }
      });
    }
  }

  private rememberBlob(b: GqlBlob): void {
    if (this.blobs.has(b.oid)) return;
    if (b.text !== null && !b.isTruncated) {
      const bytes = new Uint8Array(Buffer.from(b.text, 'utf8'));
      // the text is the blob only if git would name it so (not a decoded approximation)
      if (bytes.length === b.byteSize && gitBlobOid(bytes) === b.oid) {
        this.blobs.set(b.oid, bytes);
        this.pendingBlobs.delete(b.oid);
        return;
      }
    }
    this.pendingBlobs.add(b.oid);
    // a hint of what to read next, not a record: the oldest hints go first
    if (this.pendingBlobs.size > PENDING_BLOBS_KEPT) this.pendingBlobs.delete(this.pendingBlobs.values().next().value!);
  }

  /** The bytes of a blob that is already read (no request). */
  cachedBlob(oid: string): Uint8Array | undefined {
    return this.blobs.get(oid);
  }

  async readBlob(oid: string): Promise<Uint8Array> {
    return this.blobs.get(oid) ?? this.serial(() => this.readBlobNow(oid));
  }

  private async readBlobNow(oid: string): Promise<Uint8Array> {
    let bytes = this.blobs.get(oid);
    if (bytes) return bytes;
    const others = [...this.pendingBlobs].filter((o) => o !== oid).slice(0, BLOB_BATCH - 1);
    if (/^[0-9a-f]{40}$/.test(oid)) {
      const oids = [oid, ...others];
      const vars: Record<string, unknown> = { ...this.names };
      const doc = `query($owner: String!, $name: String!, ${oids.map((_, i) => `$b${i}: GitObjectID!`).join(', ')}) { repository(owner: $owner, name: $name) { ${oids.map((o, i) => {
        vars[`b${i}`] = o;
        return `b${i}: object(oid: $b${i}) { ... on Blob { ${BLOB_FIELDS} } }`;
      }).join(' ')} } }`;
      const data = await this.opts.gql.query<{ repository: Record<string, GqlBlob | null> }>(`reading blob ${oid}`, undefined, doc, vars);
      for (const [i] of oids.entries()) {
        const b = data.repository[`b${i}`];
        if (b && 'byteSize' in b) this.rememberBlob(b);
      }
      bytes = this.blobs.get(oid);
      if (bytes) return bytes;
    }
    // binary, truncated or not valid UTF-8: the bytes through REST
    const { data } = await this.opts.call(`reading blob ${oid}`, () => this.opts.octokit.rest.git.getBlob({ owner: this.opts.owner, repo: this.opts.repo, file_sha: oid }));
    bytes = new Uint8Array(Buffer.from(data.content, data.encoding === 'base64' ? 'base64' : 'utf8'));
    this.blobs.set(oid, bytes);
    this.pendingBlobs.delete(oid);
    return bytes;
  }

  /** A blob lastgood wrote itself: its bytes are known. */
  cacheBlob(oid: string, bytes: Uint8Array): void {
    this.blobs.set(oid, bytes);
  }
}

/** Variables of a generated document: each distinct value once, declared with its type. */
export class QueryVariables {
  private readonly byValue = new Map<string, string>();
  private readonly vars: Record<string, unknown>;
  private readonly decls: string[] = ['$owner: String!', '$name: String!'];
  constructor(names: { owner: string; name: string }) {
    this.vars = { ...names };
  }
  /** `$vN` for the value (the same value, the same variable). */
  add(value: string, type: string): string {
    const key = `${type}\0${value}`;
    let name = this.byValue.get(key);
    if (!name) {
      name = `v${this.byValue.size}`;
      this.byValue.set(key, name);
      this.vars[name] = value;
      this.decls.push(`$${name}: ${type}`);
    }
    return `$${name}`;
  }
  declarations(): string {
    return this.decls.join(', ');
  }
  values(): Record<string, unknown> {
    return this.vars;
  }
}

/** A path's state from the `file` of each of its prefixes (f0…fn), as entryAt walks it. */
function stateOf(files: Record<string, unknown>, prefixes: string[]): PathState {
  for (const [k, prefix] of prefixes.entries()) {
    const e = files[`f${k}`] as GqlEntry | null | undefined;
    if (!e) return { kind: 'absent' };
    if (e.mode === SYMLINK_MODE && k < prefixes.length - 1) return { kind: 'symlink', at: prefix };
    if (k < prefixes.length - 1) {
      if (e.type !== 'tree') return { kind: 'absent' };
      continue;
    }
    return { kind: 'entry', oid: e.oid, mode: octalMode(e.mode), type: e.type };
  }
  return { kind: 'absent' };
}

/** entryAt's refusal, word for word. */
export function symlinkRefusal(path: string, at: string): InputError {
  return new InputError(`the target path "${path}" goes through a symlink at "${at}": refused`);
}

