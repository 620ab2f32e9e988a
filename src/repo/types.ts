import type { NotesStore } from '../history/notes.ts';
import type { MarkdownDialect } from '../revert/markup.ts';

/**
 * The port between the pipeline and a config repository. history/ and revert/ only read through
 * RepoReader; deliver/ backends (local isomorphic-git, GitHub REST) implement RepoBackend.
 * The port gives primitive reads only (commits, trees, blobs): what a history *means* (ranges,
 * first-parent logs, which commits touched which paths) is decided once, in src/history/graph.ts,
 * so every backend answers the same.
 * All SHAs are full 40-hex lower case; all paths are repo-relative with "/" separators, no leading "/".
 */

export interface Person {
  name: string;
  email: string;
  /** seconds since the epoch */
  timestamp: number;
  /** minutes, as git stores it (UTC = 0) */
  timezoneOffset: number;
}

export interface CommitInfo {
  oid: string;
  parents: string[];
  message: string;
  tree: string;
  author: Person;
  committer: Person;
}

/** One entry of a git tree: type "blob", "tree" or "commit" (a submodule). */
export interface TreeItem {
  path: string;
  oid: string;
  mode: string;
  type: string;
}

/** A blob in a tree: mode is git's octal string ("100644", "100755", "120000"). */
export interface FileEntry {
  oid: string;
  mode: string;
}

export interface RepoReader {
  /** Full SHA of the branch head. Throws InputError when the branch does not exist. */
  head(branch: string): Promise<string>;
  /** Expands an abbreviated SHA to a full one; undefined when unknown or ambiguous. */
  resolveCommit(shaOrPrefix: string): Promise<string | undefined>;
  readCommit(oid: string): Promise<CommitInfo>;
  /** Every blob under `paths` (a path ending in "/" or naming a tree is a folder) at `commit`. */
  listFiles(commit: string, paths: string[]): Promise<Map<string, FileEntry>>;
  /** The oid of the tree or blob at `path` in `commit`, undefined when absent. */
  pathOid(commit: string, path: string): Promise<string | undefined>;
  readBlob(oid: string): Promise<Uint8Array>;
  /** The entries of one tree (not recursive). */
  readTree(oid: string): Promise<TreeItem[]>;
  /** True when `ancestor` is reachable from `descendant` (or equal to it). */
  isAncestor(ancestor: string, descendant: string): Promise<boolean>;
  /**
   * A hint: these blobs will be read soon. A backend that fetches objects on demand (git over
   * HTTPS, blob-less) asks for the missing ones in one request instead of one each; others need
   * not implement it.
   */
  prefetch?(oids: string[]): Promise<void>;
  /** A hint: these trees will be walked whole soon (a backend that lists a tree recursively in one request may do so). */
  prefetchTrees?(oids: string[]): Promise<void>;
  /**
   * A hint: these folders (or files) of these commits will be read soon: those `whole` with every
   * file below them, the others only as listings (the folders on the way). A backend that reads
   * trees on demand by path (GitHub's GraphQL) asks for them together instead of one folder a request.
   */
  prefetchPaths?(wanted: Array<{ commit: string; path: string; whole: boolean }>): Promise<void>;
}

/** One file operation of a Change: write a blob (by existing oid, or by content) or delete. */
export type FileChange =
  | { path: string; mode: string; oid: string }
  | { path: string; mode: string; content: Uint8Array }
  | { path: string; delete: true };

/** What a plan asks deliver to write: one commit on top of `parent`. */
export interface Change {
  target: string;
  branch: string;
  /** the target's configured paths (a working copy refuses uncommitted changes there) */
  paths?: string[];
  /** the branch head the plan was made against; delivery refuses to write over anything else */
  parent: string;
  files: FileChange[];
  message: string;
  author: Person;
  /** the bad commits, newest first; the first one names the PR branch (lastgood/<target>/<bad12>) */
  bad: string[];
  lastKnownGood: string;
  /** how to present the change as a pull request (pull-request mode) */
  pullRequest?: PullRequestSpec;
}

export interface PullRequestSpec {
  title: string;
  /** markdown body; the backend appends a hidden marker `<!-- lastgood:target=<t> bad=<sha> -->` to find it again */
  body: string;
  labels: string[];
  reviewers: string[];
  assignees: string[];
  draft: boolean;
  autoMerge: boolean;
}

export type DeliveryMode = 'commit' | 'pull-request';

export interface DeliveryResult {
  commit: string;
  branch: string;
  pullRequest?: { url: string; number: number };
  /** false when an equivalent commit or PR already existed and nothing new was written */
  created: boolean;  /** problems that did not stop the delivery (a reviewer that cannot be requested, auto-merge refused) */
  warnings?: string[];
}

/** What became of a review request: still open, merged into the base branch, or closed without merging. */
export type ReviewState = 'open' | 'merged' | 'closed';

/**
 * A pull request (GitHub, Gitea/Forgejo, Bitbucket, Azure DevOps) or merge request (GitLab) that
 * lastgood opened, as the host tells it: for `lastgood log`, which reads it and writes nothing.
 */
export interface ReviewRequest {
  /** what the host calls it: "pull request", "merge request" */
  noun: string;
  /** the host's number for it (GitHub/Gitea number, GitLab iid, Bitbucket id, Azure DevOps pullRequestId) */
  number: number;
  /** its web page */
  url: string;
  /** the source branch: `lastgood/<target>/<bad12>` */
  branch: string;
  /** the source branch's head commit as the host last saw it, where it tells it */
  head?: string;
  title: string;
  state: ReviewState;
  /** ISO 8601 times */
  createdAt: string;
  updatedAt?: string;
  mergedAt?: string;
  closedAt?: string;
  /** the commit the merge made on the base branch (a merge, squash or rebase commit), where the host tells it */
  mergeCommit?: string;
}

export interface ReviewRequestQuery {
  /** the base branch (repo.branch) */
  base: string;
  /** requests whose source branch starts with this ("lastgood/", or "lastgood/<target>/") */
  branchPrefix: string;
  /** only requests created, updated, merged or closed at or after this time; open ones always */
  since?: Date;
}

export interface RepoBackend extends RepoReader {
  readonly kind: string;
  /** the Markdown of the host's request descriptions and comments (revert/markup.ts); absent: the rules that render alike on every host */
  readonly markdown?: MarkdownDialect;
  /** verified last-known-good records (git notes under refs/notes/lastgood), where the backend keeps them */
  notes?(): NotesStore;
  /** the web page of a commit on the repository's host (GitHub, GitLab, Gitea, Bitbucket), for links in PRs and summaries */
  commitUrl?(sha: string): string | undefined;
  /**
   * A comment on one of lastgood's pull requests (by the host's number), at most once: after a lost
   * answer, or from a rerun, the same text is looked for among its comments before it is posted again.
   */
  commentOnRequest?(number: number, body: string): Promise<void>;
  /** close open revert pull requests of a target whose bad commit `healthyRevision` contains; their numbers */
  closeSupersededReverts?(target: string, healthyRevision: string): Promise<number[]>;
  /**
   * Reads only (`lastgood log`): the review requests lastgood opened on the host, any state, newest
   * update first. A backend whose host has a request API implements it (GitHub; the merge-request
   * hosts); read-only credentials must be enough.
   */
  reviewRequests?(query: ReviewRequestQuery): Promise<ReviewRequest[]>;
  /**
   * Reads only: the branches whose name starts with `prefix` and their tips (name without
   * refs/heads/). A backend without a request API (a local repository, any git host over HTTPS)
   * shows lastgood's review branches this way.
   */
  branches?(prefix: string): Promise<Map<string, string>>;
  /** A human description without credentials (path or URL). */
  readonly description: string;
  /** repo.cacheDir, resolved: where the engine keeps what it computed (renders) for the next run */
  readonly cacheDir?: string;
  deliver(change: Change, mode: DeliveryMode): Promise<DeliveryResult>;
}

/** A backend's transfer under way (a fetch's bytes so far), for report/progress.ts to show. */
export interface TransferEvent {
  /** the host the bytes come from */
  host: string;
  /** bytes received so far in this answer */
  bytes: number;
  /** the answer is complete */
  done?: boolean;
}
