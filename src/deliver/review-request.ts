import { LastgoodError, RemoteError, redact } from '../errors.ts';
import type { NotesStore } from '../history/notes.ts';
import type { Change, CommitInfo, DeliveryMode, DeliveryResult, FileEntry, Person, PullRequestSpec, RepoBackend, ReviewRequest, ReviewRequestQuery, TreeItem } from '../repo/types.ts';
import { codeSpan, type MarkdownDialect } from '../revert/markup.ts';
import { reviewBranch, reviewBranchPrefix } from './branch.ts';
import { markedAsOurs, requestMarker, withoutMarkers } from './marker.ts';
import type { GitCredentials } from './git-remote/auth.ts';
import type { RemoteRepo } from './git-remote/remote-repo.ts';
import type { HostCoordinates } from './providers.ts';

/**
 * Pull-request mode on the hosts whose API opens the request (GitLab, Gitea/Forgejo, Bitbucket
 * Cloud and Data Center, Azure DevOps): what they share, beside the registry, as renovate keeps
 * what its platforms share beside `lib/modules/platform/api.ts`. Each host folder
 * (src/deliver/<host>/) gives a `ReviewHost`: the few API calls, in its own words.
 *
 * Reads and commits go through the git backend (src/deliver/git-remote/): a shallow blob-less
 * mirror and one compare-and-swap push. The flow, the same on every host (the GitHub backend is the
 * reference; DESIGN.md "Commits and pull requests"):
 *
 * 1. [FIND] the open requests into the base branch whose source branch is `lastgood/<target>/…`
 *    in the repository itself (a fork's are never lastgood's): ours is the one on
 *    `lastgood/<target>/<bad12>`, or the one whose description carries the hidden marker on a line
 *    of its own (marker.ts). One listing serves finding ours and, later, the superseded ones.
 * 2. [UPDATE] ours exists: its branch moves only when the planned tree differs (and only from the
 *    value read), title and description follow the plan, a comment says when the evidence changed.
 * 3. [CREATE] otherwise: push the branch, open the request with labels, reviewers and assignees in
 *    the same call where the host takes them. "Already exists" (another run got there first), or a
 *    create whose answer was lost, is settled by finding it again.
 * 4. [DECORATE] labels, reviewers and assignees the request still lacks are added, computed from
 *    the request as the host shows it: so they are applied exactly once whether or not this process
 *    saw the create's answer (the rule issue 19 asks of the GitHub backend). A decoration whose own
 *    answer was lost is settled the same way: the request is read again, and only what it still
 *    lacks is sent.
 * 5. [SUPERSEDE] the target's requests for older failures (their bad commit an ancestor of this
 *    one's) are closed, with a comment linking
 *    this one: when it is opened, and on every later run that still finds one open (a run that
 *    lost the create's answer, or stopped, leaves the system converging).
 *
 * A request that cannot be opened (a refusal, a permission) leaves nothing half-made: the branch
 * this run pushed for it is deleted again (compare-and-swap: only if it still holds our commit).
 */

/** An open review request as a host shows it. */
export interface HostRequest {
  /** GitLab iid, Gitea index, Bitbucket id, Azure DevOps pullRequestId */
  number: number;
  url: string;
  source: string;
  target: string;
  title: string;
  body: string;
  labels: string[];
  /** user names (GitLab/Gitea usernames, Bitbucket nicknames or account ids, Azure DevOps unique names) */
  reviewers: string[];
  assignees: string[];
  /** what else the host needs to change it (GitLab replaces reviewer lists by user id) */
  extra?: Record<string, unknown>;
}

export interface OpenRequest {
  source: string;
  target: string;
  title: string;
  body: string;
  draft: boolean;
  labels: string[];
  reviewers: string[];
  assignees: string[];
}

export interface Decoration {
  labels: string[];
  reviewers: string[];
  assignees: string[];
}

/**
 * A commit the host makes itself (GitLab's Commits API with `actions`): branch `branch` (re)made at
 * `startSha` plus the actions, atomically, without a clone or a push.
 */
export interface ApiCommit {
  branch: string;
  startSha: string;
  message: string;
  author: Pick<Person, 'name' | 'email'>;
  actions: Array<{ action: 'create' | 'update' | 'delete'; path: string; content?: string; executable?: boolean }>;
}

/** One host's API, as the flow needs it. Errors are RemoteErrors in the host's own words. */
export interface ReviewHost {
  readonly system: RemoteError['system'];
  /** "GitLab", "Gitea", … for messages */
  readonly name: string;
  /** what the host calls it: "merge request" (GitLab), "pull request" */
  readonly noun: string;
  readonly coordinates: HostCoordinates;
  /** API requests sent so far (the benches report them per revert) */
  readonly requests: number;
  /** the host's Markdown, where it differs in what quoting outside text needs (revert/markup.ts) */
  readonly markdown: MarkdownDialect;
  /** open requests into `target` whose source branch starts with `prefix`, from the repository itself (never a fork's) */
  listOpen(target: string, prefix: string): Promise<HostRequest[]>;
  /**
   * `lastgood log` (reads only): requests into `query.base` whose source branch starts with
   * `query.branchPrefix`, in any state, newest update first, paged only as far back as
   * `query.since` (open ones always; inLogWindow says which belong). SHAs are full ones (a host
   * that abbreviates them looks them up); a time the host does not tell is left out.
   */
  listRequests(query: ReviewRequestQuery): Promise<ReviewRequest[]>;
  /** opens a request; what the host's create call takes of `labels`, `reviewers`, `assignees` goes with it */
  create(req: OpenRequest, warn: (m: string) => void): Promise<HostRequest>;
  /** the create failed because the request exists already (another run), or its answer may have been lost */
  settledByFinding(error: unknown): boolean;
  update(pr: HostRequest, change: { title: string; body: string }): Promise<void>;
  /** a comment on the request (by its number alone: lastgood comments on requests it did not just list) */
  comment(pr: Pick<HostRequest, 'number'>, body: string): Promise<void>;
  close(pr: HostRequest): Promise<void>;
  /** adds to `pr` what it lacks of `want` (never what it has); warnings for names the host does not know */
  decorate(pr: HostRequest, want: Decoration, warn: (m: string) => void): Promise<void>;
  /** asks the host to merge once its rules allow (auto-merge); a warning when it refuses */
  autoMerge?(pr: HostRequest, warn: (m: string) => void): Promise<void>;
  commitUrl(sha: string): string;
  /** refuses, before anything is written, credentials that cannot open requests (GitLab's CI job token) */
  checkCanOpen?(): void;
  /** a host that can write the review branch's commit through its API: the new commit's id */
  commitBranch?(commit: ApiCommit): Promise<string>;
}

/** What a host folder's `open…(opts)` is given (src/deliver/open-review.ts). */
export interface HostOpenOptions {
  coordinates: HostCoordinates;
  credentials: GitCredentials | undefined;
  /** the config file, for errors that point at repo.auth */
  configFile?: string;
  maxRetries?: number;
  retryUnitMs?: number;
  onWarning?: (message: string) => void;
}

/** `<!-- lastgood:target=<t> bad=<sha> -->`, as the GitHub backend writes it: finds the request again whatever its branch, only where lastgood wrote it (marker.ts). */
export { requestMarker };

const without = (have: string[], want: string[]) => {
  const present = new Set(have.map((x) => x.toLowerCase()));
  return [...new Set(want)].filter((x) => !present.has(x.toLowerCase()));
};

/** What `pr` still lacks of `want` (case-insensitive names): the only thing a decorate call may add. */
export function missingDecoration(pr: Pick<HostRequest, 'labels' | 'reviewers' | 'assignees'>, want: Decoration): Decoration {
  return { labels: without(pr.labels, want.labels), reviewers: without(pr.reviewers, want.reviewers), assignees: without(pr.assignees, want.assignees) };
}

export interface ReviewRequestRepoOptions {
  git: RemoteRepo;
  host: ReviewHost;
  /** the branch reverts go to (repo.branch): where superseded requests are looked for */
  baseBranch: string;
  /**
   * how a new review branch's commit is written: `git` (default, a push: a compare-and-swap on the
   * branch, commits signed with repo.signing) or `api` (the host's commit API where it has one,
   * GitLab's). Measured in bench/review-hosts.bench.ts: the API saves two git requests for one API
   * request, in the same time, but cannot say which head it expects on an existing branch (GitLab's
   * `force` overwrites), so the push stays the default.
   */
  commits?: 'git' | 'api';
  onWarning?: (message: string) => void;
}

/** A RepoBackend for a host with a review-request API: git for reads and commits, the host for requests. */
export class ReviewRequestRepo implements RepoBackend {
  readonly kind: string;
  readonly description: string;
  readonly git: RemoteRepo;
  readonly host: ReviewHost;
  /** the host's Markdown (ReviewHost.markdown): what a request's description is written in */
  readonly markdown: MarkdownDialect;
  private readonly baseBranch: string;
  private readonly commits: 'git' | 'api';
  private readonly onWarning: ((message: string) => void) | undefined;

  constructor(opts: ReviewRequestRepoOptions) {
    this.git = opts.git;
    this.host = opts.host;
    this.markdown = opts.host.markdown;
    this.baseBranch = opts.baseBranch;
    this.commits = opts.commits ?? 'git';
    this.kind = opts.host.coordinates.provider;
    this.description = opts.git.description;
    this.onWarning = opts.onWarning;
  }

  // ---- RepoReader: the git mirror -------------------------------------------------------------

  head(branch: string): Promise<string> {
    return this.git.head(branch);
  }
  resolveCommit(shaOrPrefix: string): Promise<string | undefined> {
    return this.git.resolveCommit(shaOrPrefix);
  }
  readCommit(oid: string): Promise<CommitInfo> {
    return this.git.readCommit(oid);
  }
  listFiles(commit: string, paths: string[]): Promise<Map<string, FileEntry>> {
    return this.git.listFiles(commit, paths);
  }
  pathOid(commit: string, path: string): Promise<string | undefined> {
    return this.git.pathOid(commit, path);
  }
  readBlob(oid: string): Promise<Uint8Array> {
    return this.git.readBlob(oid);
  }
  readTree(oid: string): Promise<TreeItem[]> {
    return this.git.readTree(oid);
  }
  isAncestor(ancestor: string, descendant: string): Promise<boolean> {
    return this.git.isAncestor(ancestor, descendant);
  }
  notes(): NotesStore {
    return this.git.notes();
  }
  /** RepoBackend.branches: the host's branches, through git */
  branches(prefix: string): Promise<Map<string, string>> {
    return this.git.branches(prefix);
  }
  /** RepoBackend.reviewRequests (`lastgood log`): the host's requests, any state (ReviewHost.listRequests) */
  reviewRequests(query: ReviewRequestQuery): Promise<ReviewRequest[]> {
    return this.host.listRequests(query);
  }
  commitUrl(sha: string): string {
    return this.host.commitUrl(sha);
  }
  close(): void {
    this.git.close();
  }

  // ---- delivery --------------------------------------------------------------------------------

  async deliver(change: Change, mode: DeliveryMode): Promise<DeliveryResult> {
    if (mode === 'commit') return this.git.deliver(change, 'commit');
    return this.deliverRequest(change);
  }

  private async deliverRequest(change: Change): Promise<DeliveryResult> {
    this.host.checkCanOpen?.();
    const spec: PullRequestSpec = change.pullRequest ?? { title: change.message.split('\n')[0] ?? 'lastgood revert', body: change.message, labels: [], reviewers: [], assignees: [], draft: false, autoMerge: false };
    const branch = reviewBranch(change);
    // a token must never reach a request, even if some evidence text carried one
    const title = redact(spec.title);
    const body = `${redact(spec.body).trimEnd()}\n\n${requestMarker(change)}\n`;
    const want: Decoration = { labels: spec.labels, reviewers: spec.reviewers, assignees: spec.assignees };
    const warnings: string[] = [];
    const warn = (m: string) => {
      const clean = redact(m);
      warnings.push(clean);
      this.onWarning?.(clean);
    };
    const prefix = reviewBranchPrefix(change.target);
    // listOpen gives the repository's own requests from lastgood's branches of the target: the marker counts only there (marker.ts)
    const mine = (open: HostRequest[]) => open.find((p) => p.source === branch) ?? open.find((p) => markedAsOurs({ branch: p.source, fromFork: false, body: p.body }, change));
    const findAgain = async () => mine(await this.host.listOpen(change.branch, prefix));

    // [FIND]
    const open = await this.host.listOpen(change.branch, prefix);
    const existing = mine(open);
    if (existing) {
      // [UPDATE]
      const pushed = await this.git.pushReviewBranch(change, existing.source);
      // rewritten only where the revert itself changed, not for each cluster's view of the same failure (issue 35: a fleet rewrote and commented N−1 times)
      if (pushed.created) {
        if (existing.title !== title || withoutMarkers(existing.body) !== withoutMarkers(body)) await this.host.update(existing, { title, body });
        await this.host.comment(existing, `lastgood planned this revert again (the branch it reverts on moved) and updated the description. The branch now points at ${pushed.commit}.`);
      }
      await this.decorate(existing, want, findAgain, warn);
      await this.supersede(open, existing, change);
      return this.result(pushed.commit, existing, false, warnings);
    }

    // [CREATE]
    const pushed = await this.writeReviewBranch(change, branch);
    let request: HostRequest | undefined;
    let created = true;
    for (let attempt = 0; !request; attempt++) {
      try {
        request = await this.host.create({ source: branch, target: change.branch, title, body, draft: spec.draft, ...want }, warn);
      } catch (error) {
        const unanswered = isUnanswered(error);
        // another run opened it, or ours landed and its answer was lost: the request as the host shows it decides what is left to add
        const found = unanswered || this.host.settledByFinding(error) ? await findAgain() : undefined;
        if (found) {
          request = found;
          created = false;
        } else if (!(unanswered && attempt === 0)) {
          // nothing half-made: the branch pushed for a request that could not be opened goes again
          if (pushed.created) await this.git.deleteBranch(branch, pushed.commit).catch(() => false);
          throw error instanceof LastgoodError ? error : new RemoteError(this.host.system, `opening the ${this.host.noun} from ${branch}: ${(error as Error)?.message ?? String(error)}`, { cause: error });
        }
        // not there: the create failed before it was applied, once more
      }
    }
    // [DECORATE] only what the request lacks, as the host shows it
    await this.decorate(request, want, findAgain, warn);
    // [SUPERSEDE] also when this run found the request after losing the create's answer: a rerun converges
    await this.supersede(open, request, change);
    if (created && spec.autoMerge) {
      if (this.host.autoMerge) await this.host.autoMerge(request, warn);
      else warn(`pullRequest.autoMerge: lastgood does not set auto-merge on ${this.host.name}; merge ${request.url} when its checks pass`);
    }
    return this.result(pushed.commit, request, created, warnings);
  }

  /**
   * [DECORATE] adds to `request` what it lacks of `want`. Labels, reviewers and assignees only add
   * to a set, so a call whose answer did not come (a dropped connection, a 5xx: host-http.ts sends
   * no POST twice) is settled as the create is: the request as the host now shows it says what is
   * still missing, and only that is sent again. Without this, a reset connection on Gitea's
   * `POST …/requested_reviewers` reported a revert that was open as failed.
   */
  private async decorate(request: HostRequest, want: Decoration, findAgain: () => Promise<HostRequest | undefined>, warn: (m: string) => void): Promise<void> {
    let current = request;
    for (let attempt = 1; ; attempt++) {
      try {
        await this.host.decorate(current, missingDecoration(current, want), warn);
        return;
      } catch (error) {
        if (!isUnanswered(error) || attempt >= DECORATE_ATTEMPTS) throw error;
        const again = await findAgain();
        if (!again) throw error;
        current = again;
      }
    }
  }

  /**
   * Closes the target's other open requests for older failures (their bad commit is an ancestor of
   * this one's), each with a comment linking `current`. A request for a newer failure is left alone:
   * a run on stale evidence must not close it.
   */
  private async supersede(open: HostRequest[], current: HostRequest, change: Change): Promise<void> {
    const prefix = reviewBranchPrefix(change.target);
    const bad = change.bad[0];
    for (const older of open) {
      if (older.number === current.number || older.source === current.source || !bad) continue;
      const olderBad = older.source.startsWith(prefix) ? await this.resolveCommit(older.source.slice(prefix.length)) : undefined;
      if (!olderBad || olderBad === bad || !(await this.isAncestor(olderBad, bad))) continue;
      await this.host.comment(older, `Superseded by ${current.url}: a newer failure of ${codeSpan(change.target)} (${change.bad[0]?.slice(0, 12) ?? 'unknown'}) needs its own revert. Closing this one. (lastgood)`);
      await this.host.close(older);
    }
  }

  /** The new review branch: pushed, or (commits: api, and the host can) made by the host's commit API. */
  private async writeReviewBranch(change: Change, branch: string): Promise<{ commit: string; branch: string; created: boolean }> {
    if (this.commits !== 'api' || !this.host.commitBranch) return this.git.pushReviewBranch(change, branch);
    const actions: ApiCommit['actions'] = [];
    for (const f of change.files) {
      if ('delete' in f) {
        actions.push({ action: 'delete', path: f.path });
        continue;
      }
      // a symlink or a submodule is no file content: git writes those
      if (f.mode !== '100644' && f.mode !== '100755') return this.git.pushReviewBranch(change, branch);
      const content = 'content' in f ? f.content : await this.git.readBlob(f.oid);
      const exists = (await this.git.pathOid(change.parent, f.path)) !== undefined;
      actions.push({ action: exists ? 'update' : 'create', path: f.path, content: Buffer.from(content).toString('base64'), executable: f.mode === '100755' });
    }
    const commit = await this.host.commitBranch({ branch, startSha: change.parent, message: redact(change.message), author: change.author, actions });
    return { commit, branch, created: true };
  }

  private result(commit: string, request: HostRequest, created: boolean, warnings: string[]): DeliveryResult {
    return { commit, branch: request.source, pullRequest: { url: request.url, number: request.number }, created, ...(warnings.length ? { warnings } : {}) };
  }

  /**
   * RepoBackend: a comment on one of lastgood's requests. These hosts' comments are not read back
   * (their list calls differ per host, and the one caller claims the comment in the repository
   * first, engine/recovery.ts): posted once per call, and a lost answer is not sent again (at most
   * one comment, never two).
   */
  async commentOnRequest(number: number, body: string): Promise<void> {
    await this.host.comment({ number }, body);
  }

  /** RepoBackend: closes the target's open revert requests whose bad commit the healthy revision contains. */
  async closeSupersededReverts(target: string, healthyRevision: string): Promise<number[]> {
    const prefix = reviewBranchPrefix(target);
    const base = this.baseBranch;
    const closed: number[] = [];
    for (const pr of await this.host.listOpen(base, prefix)) {
      const bad = await this.resolveCommit(pr.source.slice(prefix.length));
      if (!bad || bad === healthyRevision || !(await this.isAncestor(bad, healthyRevision))) continue;
      await this.host.comment(pr, `A newer healthy revision (${healthyRevision}) of ${codeSpan(target)} landed, so this revert is no longer needed: closing it. (lastgood)`);
      await this.host.close(pr);
      closed.push(pr.number);
    }
    return closed;
  }

}

/**
 * `lastgood log` (ReviewHost.listRequests): whether a request belongs in the window: an open one
 * always, another when it was created, updated, merged or closed at or after `since`
 * (ReviewRequestQuery.since). Hosts give times with offsets (Gitea: `+08:00`): compared as instants.
 */
export function inLogWindow(request: ReviewRequest, since: Date | undefined): boolean {
  if (since === undefined || request.state === 'open') return true;
  return [request.createdAt, request.updatedAt, request.mergedAt, request.closedAt].some((t) => t !== undefined && Date.parse(t) >= since.getTime());
}

/** Newest update first (a host that tells no update time: its creation), as ReviewHost.listRequests returns them. */
export function newestUpdateFirst(requests: ReviewRequest[]): ReviewRequest[] {
  const time = (r: ReviewRequest) => Date.parse(r.updatedAt ?? r.createdAt) || 0;
  return requests.sort((a, b) => time(b) - time(a) || b.number - a.number);
}

/** Decorating tries, the first included: each after a lost answer reads the request again first. */
const DECORATE_ATTEMPTS = 3;

/** A create whose answer did not come (5xx, a dropped connection): it may or may not have been applied. */
function isUnanswered(error: unknown): boolean {
  if (!(error instanceof RemoteError)) return false;
  return error.status === undefined || error.status >= 500;
}

/** A host answer's status and words, for RemoteErrors that say what to fix. */
export function hostFailure(system: RemoteError['system'], what: string, status: number | undefined, words: string, hint?: string): RemoteError {
  const text = words.trim() || 'no message';
  if (status === 401) return new RemoteError(system, `${what}: the host rejected the credentials (401 ${text}): they are invalid, expired or revoked${hint ? `; ${hint}` : ''}`, { status });
  return new RemoteError(system, `${what} failed (${status ?? 'no answer'} ${text})${hint ? `: ${hint}` : ''}`, { status });
}

