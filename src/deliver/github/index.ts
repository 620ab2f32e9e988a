import { randomBytes } from 'node:crypto';
import { Octokit } from '@octokit/rest';
import { parseGitHubUrl } from './url.ts';
import { retry } from '@octokit/plugin-retry';
import { throttling } from '@octokit/plugin-throttling';
import { InputError, RemoteError, redact, registerSecret, StaleHeadError } from '../../errors.ts';
import type { NotesStore } from '../../history/notes.ts';
import type { Change, CommitInfo, DeliveryMode, DeliveryResult, FileEntry, Person, PullRequestSpec, RepoBackend, ReviewRequest, ReviewRequestQuery } from '../../repo/types.ts';
import { reviewBranch, reviewBranchPrefix } from '../branch.ts';
import { markedAsOurs, requestMarker, withoutMarkers } from '../marker.ts';
import { codeSpan, GITHUB_FLAVORED, type MarkdownDialect } from '../../revert/markup.ts';
import { checkEntryName, symlinkFolderRefusal, type TreeItem } from '../../repo/tree-walk.ts';
import { GitHubGraphQL, isLostAnswer, protectionMessage, protectionRule, SEND_ONCE, type GraphQLErrorItem, type Permission } from './graphql.ts';
import { lastgoodTarget, revertedBy } from '../../history/trailers.ts';
import { gitBlobOid as gitBlobOidOf, GitHubReads, symlinkRefusal } from './reads.ts';
import { planCommit, restWarning, splitMessage, type CommitPlan } from './commit.ts';
import { openDeploymentRecords } from './deployments.ts';
import { claimOnGitHub } from './receipts.ts';
import { backoffDelay, retry as retrying, sleep } from '../../retry.ts';
import { whyUnreachable } from '../../network.ts';

/**
 * GitHub backend: reads and writes a repository through GitHub's API, without a clone, in as few
 * requests as the work allows (every request counts against the installation's rate limit, and
 * during an incident a fleet of targets may fail together).
 *
 * - Reads (reads.ts): GraphQL documents that answer many RepoReader primitives at once: the
 *   branch head with 2,000 commits of history, a path's state along that history, a folder's
 *   versions with their files' texts. The number of requests depends on the target paths, never on
 *   the size of the repository.
 * - Commits (commit.ts): GraphQL `createCommitOnBranch`: GitHub creates and signs the commit
 *   (Verified: branches that "Require signed commits" take it), and `expectedHeadOid` is a
 *   compare-and-swap on the branch (a moved head re-plans, never a lost update, never a force). A
 *   change the mutation cannot express (file modes, symlinks, submodules) goes through the REST git
 *   data API (research/engineering.md §2.1), and the delivery says so.
 * - Pull requests: the branch, its commit and the pull request in one mutation document; labels,
 *   reviewers and assignees in a second.
 * - Verified last-known-good records (deployments.ts): Deployments per target environment.
 *
 * Rate limits: @octokit/plugin-throttling paces writes and GraphQL documents (GitHub asks for one
 * per second) and retries primary and secondary rate limits `maxRetries` times; @octokit/plugin-retry
 * retries 5xx.
 */

export interface GitHubBackendOptions {
  owner: string;
  repo: string;
  token: string;
  /** the REST API root: https://api.github.com, or GHES `https://HOST/api/v3` (repo.apiUrl or GITHUB_API_URL) */
  baseUrl?: string;
  userAgent?: string;
  /** retries on rate limits and server errors (default 3) */
  maxRetries?: number;
  /** commit mode: attempts when the branch moves under us (default 3) */
  concurrentPushAttempts?: number;
  /** commit mode: a new plan on the branch's new head; undefined when nothing is left to do */
  replan?: (head: string) => Promise<Change | undefined>;
  /** spacing of write requests; default: the throttling plugin's 1000 ms (GitHub's guidance). Tests use 0. */
  writeIntervalMs?: number;
  /** the unit of retry waits (Retry-After seconds and backoff steps); default 1000. Tests use a few ms. */
  retryUnitMs?: number;
  /** warnings (redacted) that do not fail the delivery: reviewers that cannot be requested, auto-merge refusals */
  onWarning?: (message: string) => void;
  /**
   * how long a branch head read stays fresh (default 30 s: the engine reads it for the guards and
   * again to plan); a write that finds the branch moved, and a revision this backend has not seen,
   * make it read again. A stale head only costs a re-plan: writes are compare-and-swaps.
   */
  headTtlMs?: number;
  /** the deployment environment of a target, "{target}" replaced (repo.github.environment; default "{target}") */
  environment?: string;
  /** the repository's web page (https://github.com/owner/repo, or the GHES one); default: github.com */
  webUrl?: string;
}

export type GitHubBackend = RepoBackend & {
  readonly kind: 'github';
  readonly owner: string;
  readonly repo: string;
  /** the Octokit instance, for callers that need one more endpoint (e.g. the Action's job summary links) */
  readonly octokit: Octokit;
  /** GitHub Flavored Markdown: what pull request descriptions are written in (revert/markup.ts) */
  readonly markdown: MarkdownDialect;
};

const ThrottledOctokit = Octokit.plugin(throttling, retry);
type ThrottleOptions = NonNullable<NonNullable<ConstructorParameters<typeof ThrottledOctokit>[0]>['throttle']>;

interface OctokitFailure {
  status: number;
  message: string;
  response?: { data?: { message?: string; errors?: Array<{ message?: string; code?: string }> } };
}

const isOctokitFailure = (e: unknown): e is OctokitFailure => typeof e === 'object' && e !== null && typeof (e as { status?: unknown }).status === 'number';

/** The details GitHub puts in a 422: "Validation Failed" alone says nothing. */
function failureText(e: OctokitFailure): string {
  const data = e.response?.data;
  const details = (data?.errors ?? []).map((x) => x.message ?? x.code).filter(Boolean);
  return [data?.message ?? e.message, ...details].join(': ');
}

/** `<!-- lastgood:target=<t> bad=<sha> -->`: finds the PR again whatever its branch (PullRequestSpec), only on lastgood's own branches (marker.ts). */
export function pullRequestMarker(change: Pick<Change, 'target' | 'bad'>): string {
  return requestMarker(change);
}

/** The REST API gives dates in UTC: the author's timezone offset is not recoverable (reported as 0). */
function personFrom(user: { name?: string; email?: string; date?: string } | null | undefined): Person {
  const ms = user?.date ? Date.parse(user.date) : NaN;
  return { name: user?.name ?? '', email: user?.email ?? '', timestamp: Number.isNaN(ms) ? 0 : Math.floor(ms / 1000), timezoneOffset: 0 };
}

/** An open pull request lastgood made, as the find query reads it. */
interface FoundPull {
  id: string;
  number: number;
  url: string;
  headRef: string;
  headSha: string;
  title: string;
  body: string;
  labels: string[];
  /** users whose review is requested, or who reviewed it */
  reviewers: string[];
  assignees: string[];
}

/** What opening or updating a revert pull request needs to know, read in one query. */
interface PullRequestContext {
  repositoryId: string;
  pull: FoundPull | undefined;
  /** the PR branch, when it exists (left by a closed PR) */
  branch: { id: string; oid: string } | undefined;
  labelIds: Map<string, string>;
  userIds: Map<string, string>;
  /** the other open pull requests into the base from this repository (their branch names): where superseded reverts are found */
  open: Array<{ number: number; headRef: string }>;
}

interface GqlPull {
  id: string;
  number: number;
  url: string;
  title: string;
  body: string;
  headRefName: string;
  headRefOid: string;
  headRepositoryOwner: { login: string } | null;
  labels: { nodes: Array<{ name: string }> } | null;
  reviewRequests: { nodes: Array<{ requestedReviewer: { login?: string } | null }> } | null;
  latestReviews: { nodes: Array<{ author: { login: string } | null }> } | null;
  assignees: { nodes: Array<{ login: string }> } | null;
}

const PULL_FIELDS = 'id number url title body headRefName headRefOid headRepositoryOwner { login } labels(first: 100) { nodes { name } } '
  + 'reviewRequests(first: 100) { nodes { requestedReviewer { ... on User { login } } } } latestReviews(first: 100) { nodes { author { login } } } assignees(first: 100) { nodes { login } }';

/** A pull request as the find query reads it. */
function foundPull(pr: GqlPull): FoundPull {
  const requested = (pr.reviewRequests?.nodes ?? []).map((n) => n.requestedReviewer?.login).filter((l): l is string => Boolean(l));
  const reviewed = (pr.latestReviews?.nodes ?? []).map((n) => n.author?.login).filter((l): l is string => Boolean(l));
  return {
    id: pr.id, number: pr.number, url: pr.url, headRef: pr.headRefName, headSha: pr.headRefOid, title: pr.title, body: pr.body,
    labels: (pr.labels?.nodes ?? []).map((l) => l.name), reviewers: [...new Set([...requested, ...reviewed])], assignees: (pr.assignees?.nodes ?? []).map((a) => a.login),
  };
}

const STALE = /expected branch to point to|STALE_DATA|is not a fast forward|reference already exists|already exists/i;

const TREE_CHUNK = 100; // entries per createTree call, as create-pull-request and release-please do

class GitHubRepo implements GitHubBackend {
  readonly kind = 'github' as const;
  readonly description: string;
  /** the REST API root requests go to (named when it cannot be reached) */
  private readonly apiBase: string;
  readonly markdown = GITHUB_FLAVORED;

  commitUrl(sha: string): string {
    return `${this.opts.webUrl ?? `https://github.com/${this.owner}/${this.repo}`}/commit/${sha}`;
  }
  readonly owner: string;
  readonly repo: string;
  readonly octokit: Octokit;
  private readonly opts: GitHubBackendOptions;
  private readonly gql: GitHubGraphQL;
  private readonly reads: GitHubReads;
  private records: NotesStore | undefined;

  constructor(opts: GitHubBackendOptions) {
    registerSecret(opts.token);
    this.opts = opts;
    this.owner = opts.owner;
    this.repo = opts.repo;
    const baseUrl = (opts.baseUrl ?? 'https://api.github.com').replace(/\/+$/, '');
    this.apiBase = baseUrl;
    this.description = `${baseUrl === 'https://api.github.com' ? 'https://github.com' : baseUrl}/${opts.owner}/${opts.repo}`;
    const maxRetries = opts.maxRetries ?? 3;
    const unit = opts.retryUnitMs ?? 1000;
    // a write sent once (SEND_ONCE) is never retried here: its answer may be lost after GitHub applied it (settle)
    const retryOnLimit = (_after: number, options: { request?: { lastgoodOnce?: boolean } }, _octokit: unknown, retryCount: number) => !options.request?.lastgoodOnce && retryCount < maxRetries;
    const paced = opts.writeIntervalMs === undefined ? {} : { write: pacedGroup(opts.writeIntervalMs), notifications: pacedGroup(opts.writeIntervalMs) };
    this.octokit = new ThrottledOctokit({
      auth: opts.token,
      baseUrl,
      userAgent: opts.userAgent ?? 'lastgood',
      // the paced groups are structural stand-ins for Bottleneck groups (see pacedGroup)
      throttle: { onRateLimit: retryOnLimit, onSecondaryRateLimit: retryOnLimit, retryAfterBaseValue: unit, ...paced } as unknown as ThrottleOptions,
      retry: { retries: maxRetries, retryAfterBaseValue: unit },
      log: {
        debug: () => {},
        info: () => {},
        warn: (m: string) => opts.onWarning?.(redact(String(m))),
        // @octokit/plugin-request-log logs every failed request at error: a 404 lastgood asks for on
        // purpose, the 422 of a claim another replica made first. What fails lastgood says in its own
        // errors; these are not warnings (issue 35: a raw line per lost claim in the controller's log)
        error: () => {},
      },
    });
    this.gql = new GitHubGraphQL(this.octokit, `${opts.owner}/${opts.repo}`, (what, permission, error) => this.wrap(what, permission, error));
    this.reads = new GitHubReads({
      owner: opts.owner, repo: opts.repo, octokit: this.octokit, gql: this.gql, headTtlMs: opts.headTtlMs ?? 30_000,
      call: (what, fn) => this.call(what, undefined, fn),
    });
  }

  /** Runs one API call; any failure becomes a RemoteError that says what to fix, never with the token. */
  private async call<T>(what: string, permission: Permission | undefined, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (error) {
      throw this.wrap(what, permission, error);
    }
  }

  private wrap(what: string, permission: Permission | undefined, error: unknown, branch?: string): Error {
    if (error instanceof RemoteError || error instanceof InputError) return error;
    if (!isOctokitFailure(error)) return new RemoteError('github', `${what} failed: ${(error as Error)?.message ?? String(error)}`, { cause: error });
    const where = `${this.owner}/${this.repo}`;
    const text = failureText(error);
    const status = error.status;
    // octokit reports a request that reached no server as a 500: say which server and why instead
    const down = whyUnreachable(error);
    if (down) return new RemoteError('github', `${what} failed: cannot reach the GitHub API at ${this.apiBase}: ${down}`, { cause: error });
    const rule = status === 422 || status === 403 ? protectionRule(text) : undefined;
    let message: string;
    if (status === 401) message = `${what}: GitHub rejected the token (401 ${text}): it is invalid, expired or revoked; give lastgood a valid token`;
    else if ((status === 403 || status === 429) && /rate limit/i.test(text)) message = `${what}: still rate limited by GitHub after ${this.opts.maxRetries ?? 3} retries (${status} ${text})`;
    else if (rule && branch) message = protectionMessage(what, branch, text, rule);
    else if ((status === 403 || status === 404) && permission) message = `${what} was refused (${status} ${text}): the token needs "${permission}: write" permission on ${where}`;
    else if (status === 404) message = `${what}: not found (404) in ${where}: the repository or object does not exist, or the token cannot read it (needs "contents: read")`;
    else message = `${what} failed (${status} ${text})`;
    return new RemoteError('github', message, { status, cause: error });
  }

  private get repoArgs() {
    return { owner: this.owner, repo: this.repo };
  }

  /**
   * A write GitHub may apply without its answer reaching us (isLostAnswer: a 5xx from a proxy, a
   * secondary rate limit reported after the mutation ran, a dropped connection). It is sent with
   * SEND_ONCE, never again blindly: after a lost answer `landed` looks for what the write makes,
   * by what it is (a commit by its parent and trailers, a pull request by its branch and marker, a
   * deployment by its commit and target), and only when nothing is there is it sent again, after a
   * backoff. `uncertain`: an answer was lost, so what `landed` found may be this run's own write.
   */
  private async settle<T>(send: () => Promise<T>, landed: () => Promise<T | undefined>): Promise<{ value: T; uncertain: boolean }> {
    let uncertain = false;
    const value = await retrying(send, {
      attempts: (this.opts.maxRetries ?? 3) + 1,
      backoff: { baseMs: this.opts.retryUnitMs ?? 1000 },
      onFailure: async (error, _attempt, last) => {
        if (!isLostAnswer(error) || last) throw error;
        uncertain = true;
        const found = await landed();
        return found !== undefined ? { value: found } : undefined;
      },
    });
    return { value, uncertain };
  }

  /** The branch's head, read now (not from the cache), if it is this change's commit: on change.parent, with its trailers. */
  private async headIsThisRevert(change: Change): Promise<string | undefined> {
    this.reads.forgetHead(change.branch);
    const head = await this.head(change.branch);
    return (await this.isRevertOf(head, change)) ? head : undefined;
  }

  /** `sha` is the revert this change plans: its only parent is change.parent and its trailers name the same target and bad commits. */
  private async isRevertOf(sha: string, change: Change): Promise<boolean> {
    if (sha === change.parent) return false;
    const c = await this.readCommit(sha);
    return c.parents.length === 1 && c.parents[0] === change.parent && lastgoodTarget(c.message) === change.target && revertedBy(c.message).join(',') === change.bad.join(',');
  }

  // ---- RepoReader ------------------------------------------------------------------------------

  head(branch: string): Promise<string> {
    return this.reads.head(branch);
  }

  async resolveCommit(shaOrPrefix: string): Promise<string | undefined> {
    const sha = shaOrPrefix.toLowerCase();
    if (!/^[0-9a-f]{4,40}$/.test(sha)) return undefined;
    if (sha.length === 40 && this.reads.commits.has(sha)) return sha;
    // a revision this backend has not seen (a push after the head was read): read the heads again
    this.reads.forgetHeads();
    try {
      const { data } = await this.octokit.rest.repos.getCommit({ ...this.repoArgs, ref: sha, per_page: 1 });
      return data.sha.startsWith(sha) ? data.sha : undefined;
    } catch (error) {
      // unknown or ambiguous: GitHub answers 404 or 422
      if (isOctokitFailure(error) && (error.status === 404 || error.status === 422)) return undefined;
      throw this.wrap(`resolving commit ${sha}`, undefined, error);
    }
  }

  readCommit(oid: string): Promise<CommitInfo> {
    return this.reads.readCommit(oid);
  }

  /** As tree-walk.ts filesUnder: the path's state (symlinks refused), a folder's blobs, names checked. */
  async listFiles(commit: string, paths: string[]): Promise<Map<string, FileEntry>> {
    const out = new Map<string, FileEntry>();
    for (const p of paths) {
      const clean = p.replace(/\/+$/, '');
      const state = await this.reads.pathState(commit, clean);
      if (state.kind === 'symlink') throw symlinkRefusal(clean, state.at);
      if (state.kind === 'absent') continue;
      if (state.mode === '120000') {
        if (p.endsWith('/')) throw symlinkFolderRefusal(clean);
        out.set(clean, { oid: state.oid, mode: state.mode });
        continue;
      }
      if (state.type === 'tree') await this.reads.collectFolder(state.oid, clean, out);
      else if (state.type === 'blob' && !p.endsWith('/')) out.set(clean, { oid: state.oid, mode: state.mode });
    }
    for (const file of out.keys()) {
      const parts = file.split('/');
      parts.forEach((name, i) => checkEntryName(name, parts.slice(0, i).join('/')));
    }
    return out;
  }

  async pathOid(commit: string, path: string): Promise<string | undefined> {
    const clean = path.replace(/\/+$/, '');
    const state = await this.reads.pathState(commit, clean);
    if (state.kind === 'symlink') throw symlinkRefusal(clean, state.at);
    return state.kind === 'entry' ? state.oid : undefined;
  }

  readTree(sha: string): Promise<TreeItem[]> {
    return this.reads.readTree(sha);
  }

  /** RepoReader.prefetch: the blobs a model reads next, many to a query. */
  prefetch(oids: string[]): Promise<void> {
    return this.reads.prefetch(oids);
  }

  /** RepoReader.prefetchPaths: the folders a model walks next, by their paths, in one query. */
  prefetchPaths(wanted: Array<{ commit: string; path: string; whole: boolean }>): Promise<void> {
    return this.reads.prefetchPaths(wanted);
  }

  /** RepoReader.prefetchTrees: a tree walked whole, in one listing on a cold start. */
  prefetchTrees(oids: string[]): Promise<void> {
    return this.reads.prefetchTrees(oids);
  }

  readBlob(oid: string): Promise<Uint8Array> {
    return this.reads.readBlob(oid);
  }

  async isAncestor(ancestor: string, descendant: string): Promise<boolean> {
    if (ancestor === descendant) return true;
    const known = this.reads.ancestryFromCache(ancestor, descendant);
    if (known !== undefined) return known;
    try {
      const { data } = await this.octokit.rest.repos.compareCommits({ ...this.repoArgs, base: ancestor, head: descendant, per_page: 1 });
      return data.status === 'ahead' || data.status === 'identical';
    } catch (error) {
      if (isOctokitFailure(error) && error.status === 404) return false; // no common ancestor
      throw this.wrap(`comparing ${ancestor.slice(0, 12)}...${descendant.slice(0, 12)}`, undefined, error);
    }
  }

  /** Verified last-known-good records: Deployments, one environment per target (deployments.ts). */
  notes(): NotesStore {
    this.records ??= {
      ...openDeploymentRecords({ owner: this.owner, repo: this.repo, octokit: this.octokit, gql: this.gql, retryUnitMs: this.opts.retryUnitMs ?? 1000, ...(this.opts.environment ? { environment: this.opts.environment } : {}), ...(this.opts.onWarning ? { onWarning: this.opts.onWarning } : {}) }),
      // a revert's side effects done once: claimed by creating a ref (receipts.ts)
      claim: (bad, receipt) => claimOnGitHub(this.octokit, this.repoArgs, bad, receipt, { attempts: (this.opts.maxRetries ?? 3) + 1, retryUnitMs: this.opts.retryUnitMs ?? 1000 }),
    };
    return this.records;
  }

  // ---- writing: REST git data (what createCommitOnBranch cannot express) ---------------------------

  /** The change's tree on top of change.parent's: blobs reused by SHA, only new content uploaded. */
  private async writeTree(change: Change): Promise<{ tree: string; parentTree: string }> {
    const parent = await this.readCommit(change.parent);
    const items: Array<{ path: string; mode: '100644' | '100755' | '040000' | '160000' | '120000'; type: 'blob'; sha: string | null }> = [];
    for (const f of change.files) {
      if ('delete' in f) {
        // only a path the parent has: GitHub refuses a deletion of what is not there
        const here = this.reads.cachedEntry(change.parent, f.path) ?? (await this.reads.pathState(change.parent, f.path));
        if (here.kind === 'entry') items.push({ path: f.path, mode: '100644', type: 'blob', sha: null });
        continue;
      }
      let sha: string;
      if ('oid' in f) sha = f.oid;
      else {
        const { data } = await this.call(`uploading ${f.path}`, 'contents', () =>
          this.octokit.rest.git.createBlob({ ...this.repoArgs, content: Buffer.from(f.content).toString('base64'), encoding: 'base64' }),
        );
        sha = data.sha;
      }
      items.push({ path: f.path, mode: f.mode as (typeof items)[number]['mode'], type: 'blob', sha });
    }
    let tree = parent.tree;
    for (let i = 0; i < items.length; i += TREE_CHUNK) {
      const chunk = items.slice(i, i + TREE_CHUNK);
      const { data } = await this.call('creating the tree', 'contents', () => this.octokit.rest.git.createTree({ ...this.repoArgs, base_tree: tree, tree: chunk }));
      tree = data.sha;
    }
    return { tree, parentTree: parent.tree };
  }

  /**
   * A commit through REST git data, with no custom author or committer: GitHub then signs it when
   * the token is a GitHub App's (an installation token, GITHUB_TOKEN), and only then (restWarning).
   * Its author is the token's identity, as with createCommitOnBranch. `signed`: GitHub's own answer.
   */
  private async createCommit(change: Change, tree: string): Promise<{ sha: string; signed: boolean }> {
    const { data } = await this.call('creating the commit', 'contents', () =>
      this.octokit.rest.git.createCommit({ ...this.repoArgs, message: redact(change.message), tree, parents: [change.parent] }),
    );
    this.reads.cacheCommit({ oid: data.sha, parents: [change.parent], message: data.message, tree, author: personFrom(data.author), committer: personFrom(data.committer) });
    return { sha: data.sha, signed: data.verification?.verified === true };
  }

  // ---- writing: createCommitOnBranch --------------------------------------------------------------

  private commitInput(change: Change, branch: string, plan: CommitPlan, expected = change.parent) {
    const message = splitMessage(redact(change.message));
    return {
      branch: { repositoryNameWithOwner: `${this.owner}/${this.repo}`, branchName: branch },
      expectedHeadOid: expected,
      message: message.body ? message : { headline: message.headline },
      fileChanges: { additions: plan.additions, deletions: plan.deletions },
    };
  }

  /**
   * One signed commit on the branch (which must be at `change.parent`): `commit` when it landed
   * (`uncertain`: found after a lost answer), `moved` when the branch had moved.
   */
  private async commitOnBranch(change: Change, plan: CommitPlan): Promise<{ commit: string; uncertain: boolean } | { moved: true }> {
    const branch = change.branch;
    const doc = 'mutation($input: CreateCommitOnBranchInput!) { createCommitOnBranch(input: $input) { commit { oid } } }';
    const { value, uncertain } = await this.settle<string | null>(async () => {
      const { data, errors } = await this.gql.run<{ createCommitOnBranch: { commit: { oid: string } | null } | null }>(
        `writing the revert commit to ${branch}`, 'contents', doc, { input: this.commitInput(change, branch, plan) }, { once: true },
      );
      const oid = data?.createCommitOnBranch?.commit?.oid;
      if (oid && errors.length === 0) return oid;
      if (errors.some((e) => e.type === 'STALE_DATA' || /expected branch to point to/i.test(e.message))) return null;
      throw this.gql.failure(`writing the revert commit to ${branch}`, 'contents', errors, branch);
    }, () => this.headIsThisRevert(change));
    // the branch moved: after a lost answer, possibly by this very write (its compare-and-swap then fails on a retry)
    const commit = value ?? (uncertain ? await this.headIsThisRevert(change) : undefined);
    if (!commit) return { moved: true };
    this.rememberCommit(change, commit);
    return { commit, uncertain };
  }

  private rememberCommit(change: Change, oid: string): void {
    // the commit's tree is GitHub's to compute: only its parents and message are known here
    for (const f of change.files) if ('content' in f) this.reads.cacheBlob(gitBlobOidOf(f.content), f.content);
    void oid;
  }

  async deliver(change: Change, mode: DeliveryMode): Promise<DeliveryResult> {
    return mode === 'pull-request' ? this.deliverPullRequest(change) : this.deliverCommit(change);
  }

  /**
   * [COMMIT] a compare-and-swap on the branch: createCommitOnBranch with `expectedHeadOid` (or, on
   * the REST path, a non-forced ref update). When the branch moved, the change is re-planned on the
   * new head, `concurrentPushAttempts` times at most; without `replan` the engine re-plans
   * (StaleHeadError).
   */
  private async deliverCommit(first: Change): Promise<DeliveryResult> {
    const attempts = this.opts.concurrentPushAttempts ?? 3;
    let change = first;
    for (let attempt = 1; ; attempt++) {
      const current = await this.head(change.branch);
      let moved = current !== change.parent ? current : undefined;
      if (!moved) {
        const plan = await planCommit(change, this.reads);
        if (plan.noop) return { commit: change.parent, branch: change.branch, created: false };
        const made = plan.restBecause ? await this.commitThroughRest(change) : await this.commitOnBranch(change, plan);
        if ('commit' in made) {
          this.reads.setHead(change.branch, made.commit);
          const warnings = plan.restBecause ? [this.warn(restWarning(plan.restBecause, 'signed' in made ? (made.signed as boolean) : true))] : [];
          // a lost answer: the revert found on the branch is this run's own write (its parent and trailers are this change's)
          if (made.uncertain) warnings.push(this.warn(`GitHub applied the revert commit ${made.commit.slice(0, 12)} but its answer was lost: found on ${change.branch} and taken as this run's`));
          return { commit: made.commit, branch: change.branch, created: true, ...(warnings.length ? { warnings } : {}) };
        }
        this.reads.forgetHead(change.branch);
        moved = await this.head(change.branch);
      }
      this.reads.forgetHead(change.branch);
      if (!this.opts.replan) throw new StaleHeadError(change.branch, moved);
      if (attempt >= attempts) {
        throw new RemoteError('github', `branch ${change.branch} kept moving while the revert was written: gave up after ${attempts} attempts`, { status: 422 });
      }
      const next = await this.opts.replan(moved);
      if (!next) return { commit: moved, branch: change.branch, created: false };
      change = next;
    }
  }

  /** The REST path of commit mode: tree, commit, non-forced ref update; `moved` when the branch moved. */
  private async commitThroughRest(change: Change): Promise<{ commit: string; uncertain: boolean; signed: boolean } | { moved: true }> {
    const { tree } = await this.writeTree(change);
    const { sha: commit, signed } = await this.createCommit(change, tree);
    const { value, uncertain } = await this.settle<boolean>(async () => {
      try {
        await this.octokit.rest.git.updateRef({ ...this.repoArgs, ref: `heads/${change.branch}`, sha: commit, force: false, request: SEND_ONCE });
        return true;
      } catch (error) {
        if (isOctokitFailure(error) && error.status === 422 && !protectionRule(failureText(error))) return false;
        throw this.wrap(`updating branch ${change.branch}`, 'contents', error, change.branch);
      }
    }, async () => ((await this.headIsThisRevert(change)) === commit ? true : undefined));
    if (value || (uncertain && (await this.headIsThisRevert(change)) === commit)) return { commit, uncertain, signed };
    return { moved: true };
  }

  private warn(message: string): string {
    const clean = redact(message);
    this.opts.onWarning?.(clean);
    return clean;
  }

  /**
   * [PULL REQUEST] one open PR per target and bad revision (branch `lastgood/<target>/<bad12>` and the
   * body marker). [UPDATE] when it exists: its branch moves only when the planned change differs
   * from what the PR shows, title and body follow the new plan, and a comment says when the evidence
   * changed. [CREATE] otherwise: branch, signed commit and pull request in one mutation document.
   */
  private async deliverPullRequest(change: Change): Promise<DeliveryResult> {
    const spec: PullRequestSpec = change.pullRequest ?? { title: change.message.split('\n')[0] ?? 'lastgood revert', body: change.message, labels: [], reviewers: [], assignees: [], draft: false, autoMerge: false };
    const branch = reviewBranch(change);
    const marker = pullRequestMarker(change);
    // a token must never reach a PR, even if some evidence text carried one
    const title = redact(spec.title);
    const plan = await planCommit(change, this.reads);
    // the note names files of the repository: quoted as code (revert/markup.ts)
    const fallbackNote = plan.restBecause ? `\n\n> lastgood: this revert's commit was ${codeSpan(restWarning(plan.restBecause))}.` : '';
    const body = `${redact(spec.body).trimEnd()}${fallbackNote}\n\n${marker}\n`;
    const warnings: string[] = [];
    const warn = (m: string) => {
      warnings.push(this.warn(m));
    };

    const ctx = await this.pullRequestContext(change.branch, branch, change, spec);
    const existing = ctx.pull;
    if (plan.noop && !existing) return { commit: change.parent, branch, created: false, warnings: ['the change leaves the tree as it is: no pull request opened'] };

    if (existing) {
      // [UPDATE] the branch moves only when the plan differs from what the PR shows
      let head = existing.headSha;
      if (!plan.noop && (await this.differsFrom(existing.headSha, change, plan))) {
        if (plan.restBecause) {
          const moved = await this.moveThroughRest(existing.headRef, change);
          head = moved.commit;
          warn(restWarning(plan.restBecause, moved.signed));
        } else head = await this.moveSigned(existing.headRef, change, plan);
      }
      // the description follows the revert, not each cluster's view of the same failure: many
      // controllers (a fleet) or runs find this request with their own evidence text, and rewrote it
      // and commented each time (issue 35). It is rewritten, once, where the revert itself changed.
      if (head !== existing.headSha) {
        if (existing.title !== title || withoutMarkers(existing.body) !== withoutMarkers(body)) {
          await this.call(`updating pull request #${existing.number}`, 'pull-requests', () =>
            this.octokit.rest.pulls.update({ ...this.repoArgs, pull_number: existing.number, title, body }),
          );
        }
        await this.commentOnce(existing.number, `lastgood planned this revert again (the branch it reverts on moved) and updated the description. The branch now points at ${head}.`);
      }
      // what an earlier run did not finish (its answer lost, or killed before it): labels, reviewers, assignees
      await this.decorate(existing, spec, ctx, warn);
      await this.supersedeOlder(change, existing.url, ctx, warn);
      return { commit: head, branch: existing.headRef, pullRequest: { url: existing.url, number: existing.number }, created: false, ...(warnings.length ? { warnings } : {}) };
    }

    // [CREATE]
    let commit: string;
    let pull: { id?: string; number: number; url: string };
    // a lost answer: the pull request found by its branch and marker is taken as this run's own (and finished)
    const lost = (found: FoundPull) => warn(`GitHub opened pull request #${found.number} but its answer was lost: found by its branch and taken as this run's`);
    if (plan.restBecause) {
      const { tree } = await this.writeTree(change);
      const made = await this.createCommit(change, tree);
      commit = made.sha;
      warn(restWarning(plan.restBecause, made.signed));
      await this.pointBranch(branch, commit, tree);
      const opened = await this.settle<{ found: FoundPull; raced: boolean } | { number: number; url: string; id: string }>(async () => {
        try {
          const { data } = await this.octokit.rest.pulls.create({ ...this.repoArgs, title, head: branch, base: change.branch, body, draft: spec.draft, maintainer_can_modify: true, request: SEND_ONCE });
          return { number: data.number, url: data.html_url, id: data.node_id };
        } catch (error) {
          // another run opened it between our lookup and now: use that one
          if (isOctokitFailure(error) && error.status === 422 && /already exists/i.test(failureText(error))) {
            const raced = (await this.pullRequestContext(change.branch, branch, change, spec)).pull;
            if (raced) return { found: raced, raced: true };
          }
          throw this.wrap(`opening the pull request from ${branch}`, 'pull-requests', error);
        }
      }, async () => {
        const found = (await this.pullRequestContext(change.branch, branch, change, spec)).pull;
        return found && { found, raced: false };
      });
      if ('found' in opened.value) {
        const { found, raced } = opened.value;
        if (raced && !opened.uncertain) return { commit: found.headSha, branch: found.headRef, pullRequest: { url: found.url, number: found.number }, created: false };
        lost(found);
        commit = found.headSha;
        pull = found;
      } else pull = opened.value;
    } else {
      const made = await this.openSigned(change, branch, plan, ctx, { title, body, draft: spec.draft });
      if ('raced' in made) {
        if (!made.uncertain) return { commit: made.raced.headSha, branch: made.raced.headRef, pullRequest: { url: made.raced.url, number: made.raced.number }, created: false };
        lost(made.raced);
        await this.decorate(made.raced, spec, await this.pullRequestContext(change.branch, branch, change, spec), warn);
        if (spec.autoMerge) await this.tryMerge(made.raced.number, made.raced.headSha, warn);
        await this.supersedeOlder(change, made.raced.url, ctx, warn);
        return { commit: made.raced.headSha, branch: made.raced.headRef, pullRequest: { url: made.raced.url, number: made.raced.number }, created: true, ...(warnings.length ? { warnings } : {}) };
      }
      ({ commit, pull } = made);
    }
    await this.decorate(pull, spec, ctx, warn);
    if (spec.autoMerge) await this.tryMerge(pull.number, commit, warn);
    await this.supersedeOlder(change, pull.url, ctx, warn);
    return { commit, branch, pullRequest: { url: pull.url, number: pull.number }, created: true, ...(warnings.length ? { warnings } : {}) };
  }

  /**
   * Everything opening or updating the revert PR needs, in one query: the open PR (by head branch,
   * else by the body marker among the open PRs on the base), the PR branch if it exists, and the
   * node ids of the labels, reviewers and assignees.
   */
  private async pullRequestContext(base: string, branch: string, change: Pick<Change, 'target' | 'bad'>, spec: Pick<PullRequestSpec, 'labels' | 'reviewers' | 'assignees'>): Promise<PullRequestContext> {
    const labels = [...new Set(spec.labels)];
    const users = [...new Set([...spec.reviewers, ...spec.assignees])];
    const vars: Record<string, unknown> = { owner: this.owner, name: this.repo, head: branch, base, ref: `refs/heads/${branch}` };
    labels.forEach((l, i) => (vars[`l${i}`] = l));
    users.forEach((u, i) => (vars[`u${i}`] = u));
    const decl = [...labels.map((_, i) => `, $l${i}: String!`), ...users.map((_, i) => `, $u${i}: String!`)].join('');
    const doc = `query($owner: String!, $name: String!, $head: String!, $base: String!, $ref: String!${decl}) {
  repository(owner: $owner, name: $name) {
    id
    byHead: pullRequests(headRefName: $head, states: [OPEN], first: 10) { nodes { ${PULL_FIELDS} } }
    byBase: pullRequests(baseRefName: $base, states: [OPEN], first: 100, orderBy: { field: CREATED_AT, direction: DESC }) { nodes { ${PULL_FIELDS} } }
    branch: ref(qualifiedName: $ref) { id target { oid } }
    ${labels.map((_, i) => `l${i}: label(name: $l${i}) { id }`).join(' ')}
  }
  ${users.map((_, i) => `u${i}: user(login: $u${i}) { id }`).join(' ')}
}`;
    type Answer = { repository: { id: string; byHead: { nodes: GqlPull[] }; byBase: { nodes: GqlPull[] }; branch: { id: string; target: { oid: string } } | null } & Record<string, unknown> } & Record<string, { id: string } | null>;
    const { data, errors } = await this.gql.run<Answer>('looking for the revert pull request', undefined, doc, vars);
    // a login that is no user is a warning later, not a failure now
    const fatal = errors.filter((e) => !(e.type === 'NOT_FOUND' && typeof e.path?.[0] === 'string' && /^u\d+$/.test(e.path[0])));
    if (fatal.length > 0 || !data) throw this.gql.failure('looking for the revert pull request', undefined, fatal);
    const repo = data.repository;
    const ours = (p: GqlPull) => !p.headRepositoryOwner || p.headRepositoryOwner.login.toLowerCase() === this.owner.toLowerCase();
    // by its branch, else by the marker: only on one of lastgood's branches of the target, never a fork's (marker.ts)
    const marked = (p: GqlPull) => markedAsOurs({ branch: p.headRefName, fromFork: !ours(p), body: p.body }, change);
    const pr = repo.byHead.nodes.find(ours) ?? repo.byBase.nodes.find(marked);
    const labelIds = new Map<string, string>();
    labels.forEach((l, i) => {
      const id = (repo[`l${i}`] as { id: string } | null)?.id;
      if (id) labelIds.set(l, id);
    });
    const userIds = new Map<string, string>();
    users.forEach((u, i) => {
      const id = data[`u${i}`]?.id;
      if (id) userIds.set(u, id);
    });
    return {
      repositoryId: repo.id,
      pull: pr && foundPull(pr),
      branch: repo.branch ? { id: repo.branch.id, oid: repo.branch.target.oid } : undefined,
      labelIds,
      userIds,
      open: repo.byBase.nodes.filter((p) => ours(p) && p.number !== pr?.number).map((p) => ({ number: p.number, headRef: p.headRefName })),
    };
  }

  /**
   * [CREATE] the PR branch at the parent (or a stale one moved back to it), the signed commit on it
   * and the pull request, in one mutation document: mutations run in order, and the pull request
   * cannot open without the commit ("No commits between"). Another run that got there first is
   * found again and used.
   */
  private async openSigned(change: Change, branch: string, plan: CommitPlan, first: PullRequestContext, pr: { title: string; body: string; draft: boolean }): Promise<{ commit: string; pull: { id: string; number: number; url: string } } | { raced: FoundPull; uncertain: boolean }> {
    // sent once (its answer may be lost after GitHub applied it): what it made is looked for before it is sent again
    const attempts = (this.opts.maxRetries ?? 3) + 1;
    let ctx = first;
    let uncertain = false;
    for (let attempt = 1; ; attempt++) {
      try {
        const made = await this.openSignedOnce(change, branch, plan, ctx, pr);
        return 'raced' in made ? { ...made, uncertain } : made;
      } catch (error) {
        if (!isLostAnswer(error) || attempt >= attempts) throw error;
        uncertain = true;
        // the same document again needs the branch as it is now (it may exist after a partial write)
        ctx = await this.pullRequestContext(change.branch, branch, change, { labels: [], reviewers: [], assignees: [] });
        if (ctx.pull) return { raced: ctx.pull, uncertain };
        await sleep(backoffDelay(attempt - 1, { baseMs: this.opts.retryUnitMs ?? 1000 }));
      }
    }
  }

  private async openSignedOnce(change: Change, branch: string, plan: CommitPlan, ctx: PullRequestContext, pr: { title: string; body: string; draft: boolean }): Promise<{ commit: string; pull: { id: string; number: number; url: string } } | { raced: FoundPull }> {
    // the branch already holds this revert (another replica's document half done, or a run killed
    // before its pull request): the pull request is opened from it; it is never rewritten
    if (ctx.branch && !(await this.differsFrom(ctx.branch.oid, change, plan))) {
      const only = `mutation($pr: CreatePullRequestInput!) { pull: createPullRequest(input: $pr) { pullRequest { id number url } } }`;
      const { data: d2, errors: e2 } = await this.gql.run<{ pull: { pullRequest: { id: string; number: number; url: string } | null } | null }>(`opening the pull request from ${branch}`, 'pull-requests', only, {
        pr: { repositoryId: ctx.repositoryId, baseRefName: change.branch, headRefName: branch, title: pr.title, body: pr.body, draft: pr.draft, maintainerCanModify: true },
      }, { once: true });
      const p2 = d2?.pull?.pullRequest;
      if (p2) return { commit: ctx.branch.oid, pull: p2 };
      const raced = (await this.pullRequestContext(change.branch, branch, change, { labels: [], reviewers: [], assignees: [] })).pull;
      if (raced) return { raced };
      throw this.gql.failure(`opening the pull request from ${branch}`, 'pull-requests', e2, branch);
    }
    // a branch at the parent already (another replica's createRef, its commit not made yet): committed
    // on as it is (createCommitOnBranch expects the parent: of two, one commit lands), not forced back
    const atParent = ctx.branch?.oid === change.parent;
    const doc = atParent ? `mutation($commit: CreateCommitOnBranchInput!, $pr: CreatePullRequestInput!) {
  commit: createCommitOnBranch(input: $commit) { commit { oid } }
  pull: createPullRequest(input: $pr) { pullRequest { id number url } }
}` : `mutation($ref: ${ctx.branch ? 'UpdateRefInput!' : 'CreateRefInput!'}, $commit: CreateCommitOnBranchInput!, $pr: CreatePullRequestInput!) {
  branch: ${ctx.branch ? 'updateRef' : 'createRef'}(input: $ref) { ref { id } }
  commit: createCommitOnBranch(input: $commit) { commit { oid } }
  pull: createPullRequest(input: $pr) { pullRequest { id number url } }
}`;
    const ref = ctx.branch ? { refId: ctx.branch.id, oid: change.parent, force: true } : { repositoryId: ctx.repositoryId, name: `refs/heads/${branch}`, oid: change.parent };
    const vars = {
      ...(atParent ? {} : { ref }),
      commit: this.commitInput(change, branch, plan),
      pr: { repositoryId: ctx.repositoryId, baseRefName: change.branch, headRefName: branch, title: pr.title, body: pr.body, draft: pr.draft, maintainerCanModify: true },
    };
    type Answer = { commit: { commit: { oid: string } | null } | null; pull: { pullRequest: { id: string; number: number; url: string } | null } | null };
    const { data, errors } = await this.gql.run<Answer>(`opening the pull request from ${branch}`, 'contents', doc, vars, { once: true });
    const commit = data?.commit?.commit?.oid;
    const pull = data?.pull?.pullRequest;
    if (commit) this.rememberCommit(change, commit);
    if (commit && pull) return { commit, pull };
    // this document opened the pull request, on another replica's commit (its own commit lost the
    // race): the pull request is this run's, at the branch's head
    if (pull) {
      const found = (await this.pullRequestContext(change.branch, branch, change, { labels: [], reviewers: [], assignees: [] })).pull;
      if (found) return { commit: found.headSha, pull };
    }
    const at = (name: string) => errors.filter((e) => e.path?.[0] === name);
    if (errors.some((e) => STALE.test(e.message) || e.type === 'STALE_DATA')) {
      const raced = (await this.pullRequestContext(change.branch, branch, change, { labels: [], reviewers: [], assignees: [] })).pull;
      if (raced) return { raced };
    }
    // the first failure is the cause: a refused commit makes the pull request fail too
    const [cause, permission]: [GraphQLErrorItem[], Permission] = at('branch').length ? [at('branch'), 'contents'] : at('commit').length ? [at('commit'), 'contents'] : [at('pull'), 'pull-requests'];
    throw this.gql.failure(`opening the pull request from ${branch}`, permission, cause.length ? cause : errors, branch);
  }

  /**
   * Labels, reviewers and assignees in one mutation; labels that do not exist yet through REST (it
   * creates them). Only what the pull request lacks is asked for: a rerun after a lost answer (or a
   * run killed before this step) finishes what was left, once, and never requests a review again
   * from someone whose review is requested or who reviewed it already.
   */
  private async decorate(pull: { id?: string; number: number; labels?: string[]; reviewers?: string[]; assignees?: string[] }, spec: PullRequestSpec, ctx: PullRequestContext, warn: (m: string) => void): Promise<void> {
    const has = (list: string[] | undefined, x: string) => (list ?? []).some((y) => y.toLowerCase() === x.toLowerCase());
    const wantedLabels = spec.labels.filter((l) => !has(pull.labels, l));
    const labelIds = wantedLabels.map((l) => ctx.labelIds.get(l));
    const restLabels = wantedLabels.length > 0 && (labelIds.some((id) => !id) || !pull.id);
    if (restLabels) {
      await this.call(`labelling pull request #${pull.number}`, 'pull-requests', () => this.octokit.rest.issues.addLabels({ ...this.repoArgs, issue_number: pull.number, labels: wantedLabels }));
    }
    const known = (logins: string[], what: string) => {
      const missing = logins.filter((l) => !ctx.userIds.has(l));
      if (missing.length) warn(`could not ${what} ${missing.join(', ')} on #${pull.number}: no such GitHub user`);
      return logins.flatMap((l) => (ctx.userIds.has(l) ? [ctx.userIds.get(l)!] : []));
    };
    const reviewers = known(spec.reviewers.filter((r) => !has(pull.reviewers, r)), 'request reviews from');
    const assignees = known(spec.assignees.filter((a) => !has(pull.assignees, a)), 'assign');
    const parts: string[] = [];
    const vars: Record<string, unknown> = {};
    if (!restLabels && wantedLabels.length > 0) {
      parts.push('labels: addLabelsToLabelable(input: $labels) { clientMutationId }');
      vars.labels = { labelableId: pull.id, labelIds };
    }
    if (reviewers.length) {
      parts.push('reviewers: requestReviews(input: $reviewers) { clientMutationId }');
      vars.reviewers = { pullRequestId: pull.id, userIds: reviewers, union: true };
    }
    if (assignees.length) {
      parts.push('assignees: addAssigneesToAssignable(input: $assignees) { clientMutationId }');
      vars.assignees = { assignableId: pull.id, assigneeIds: assignees };
    }
    if (parts.length === 0 || !pull.id) return;
    const types: Record<string, string> = { labels: 'AddLabelsToLabelableInput!', reviewers: 'RequestReviewsInput!', assignees: 'AddAssigneesToAssignableInput!' };
    const doc = `mutation(${Object.keys(vars).map((k) => `$${k}: ${types[k]}`).join(', ')}) { ${parts.join(' ')} }`;
    const { errors } = await this.gql.run(`labelling pull request #${pull.number}`, 'pull-requests', doc, vars);
    const labelErrors = errors.filter((e) => e.path?.[0] === 'labels');
    if (labelErrors.length) throw this.gql.failure(`labelling pull request #${pull.number}`, 'pull-requests', labelErrors);
    // a reviewer who cannot review (the token's own user, no access) must not lose the revert
    const reviewErrors = errors.filter((e) => e.path?.[0] === 'reviewers');
    if (reviewErrors.length) warn(`could not request reviewers ${spec.reviewers.join(', ')} on #${pull.number}: ${reviewErrors.map((e) => e.message).join('; ')}`);
    const assignErrors = errors.filter((e) => e.path?.[0] === 'assignees');
    if (assignErrors.length) warn(`could not assign ${spec.assignees.join(', ')} to #${pull.number}: ${assignErrors.map((e) => e.message).join('; ')}`);
  }

  /** True unless the PR head is exactly the planned change on `change.parent` (the files its commit changes, and their content). */
  private async differsFrom(prHead: string, change: Change, plan: CommitPlan): Promise<boolean> {
    const head = await this.readCommit(prHead);
    if (head.parents.length !== 1 || head.parents[0] !== change.parent) return true;
    const { data } = await this.call(`reading commit ${prHead}`, undefined, () => this.octokit.rest.repos.getCommit({ ...this.repoArgs, ref: prHead, per_page: 300 }));
    const touched = new Set((data.files ?? []).flatMap((f) => [f.filename, ...(f.previous_filename ? [f.previous_filename] : [])]));
    if (touched.size !== plan.changed.length || plan.changed.some((p) => !touched.has(p))) return true;
    for (const f of change.files) {
      const there = this.reads.cachedEntry(prHead, f.path) ?? (await this.reads.pathState(prHead, f.path));
      if ('delete' in f) {
        if (there.kind === 'entry') return true;
        continue;
      }
      const oid = 'oid' in f ? f.oid : gitBlobOidOf(f.content);
      if (there.kind !== 'entry' || there.oid !== oid || there.mode !== f.mode) return true;
    }
    return false;
  }

  /**
   * Moves an open PR's branch to a new signed commit on `change.parent`. Resetting the PR branch to
   * the parent first would close the PR ("no changes"), so the commit is made on a short-lived
   * branch and the PR branch is then moved to it (as @changesets/ghcommit does, core.ts).
   */
  private async moveSigned(prBranch: string, change: Change, plan: CommitPlan): Promise<string> {
    const ctx = await this.pullRequestContext(change.branch, prBranch, change, { labels: [], reviewers: [], assignees: [] });
    const temp = `lastgood-tmp/${change.target}/${randomBytes(4).toString('hex')}`;
    const doc = `mutation($ref: CreateRefInput!, $commit: CreateCommitOnBranchInput!) { branch: createRef(input: $ref) { ref { id } } commit: createCommitOnBranch(input: $commit) { commit { oid } } }`;
    try {
      // sent once: a lost answer leaves only the short-lived branch, removed below; the next run moves the PR branch
      const { data, errors } = await this.gql.run<{ branch: { ref: { id: string } | null } | null; commit: { commit: { oid: string } | null } | null }>(
        `updating pull request branch ${prBranch}`, 'contents', doc,
        { ref: { repositoryId: ctx.repositoryId, name: `refs/heads/${temp}`, oid: change.parent }, commit: this.commitInput(change, temp, plan) }, { once: true },
      );
      const commit = data?.commit?.commit?.oid;
      if (!commit || errors.length) throw this.gql.failure(`updating pull request branch ${prBranch}`, 'contents', errors, prBranch);
      await this.call(`updating branch ${prBranch}`, 'contents', () => this.octokit.rest.git.updateRef({ ...this.repoArgs, ref: `heads/${prBranch}`, sha: commit, force: true }));
      this.rememberCommit(change, commit);
      return commit;
    } finally {
      // by name: after a lost answer its id is unknown, and it may exist all the same
      await this.octokit.rest.git.deleteRef({ ...this.repoArgs, ref: `heads/${temp}` }).catch(() => undefined);
    }
  }

  private async moveThroughRest(prBranch: string, change: Change): Promise<{ commit: string; signed: boolean }> {
    const { tree } = await this.writeTree(change);
    const { sha: commit, signed } = await this.createCommit(change, tree);
    await this.call(`updating branch ${prBranch}`, 'contents', () => this.octokit.rest.git.updateRef({ ...this.repoArgs, ref: `heads/${prBranch}`, sha: commit, force: true }));
    return { commit, signed };
  }

  /**
   * A comment on a pull request, at most once: sent once, and after a lost answer (or by a rerun) it
   * is looked for among the pull request's comments before it is posted again.
   */
  commentOnRequest(number: number, body: string): Promise<void> {
    return this.commentOnce(number, body);
  }

  private async commentOnce(number: number, body: string): Promise<void> {
    const there = async () => {
      const comments = await this.call(`reading the comments of pull request #${number}`, undefined, () =>
        this.octokit.paginate(this.octokit.rest.issues.listComments, { ...this.repoArgs, issue_number: number, per_page: 100 }),
      );
      return comments.some((c) => c.body === body) ? true : undefined;
    };
    await this.settle(async () => {
      await this.call(`commenting on pull request #${number}`, 'pull-requests', () =>
        this.octokit.rest.issues.createComment({ ...this.repoArgs, issue_number: number, body, request: SEND_ONCE }),
      );
      return true;
    }, there);
  }

  /** Creates the PR branch, or moves a stale one (left by a closed PR) to the new commit. */
  private async pointBranch(branch: string, commit: string, tree: string): Promise<void> {
    try {
      await this.octokit.rest.git.createRef({ ...this.repoArgs, ref: `refs/heads/${branch}`, sha: commit });
      return;
    } catch (error) {
      if (!(isOctokitFailure(error) && error.status === 422 && /already exists/i.test(failureText(error)))) throw this.wrap(`creating branch ${branch}`, 'contents', error, branch);
    }
    this.reads.forgetHead(branch);
    const current = await this.head(branch);
    if ((await this.readCommit(current)).tree === tree) return;
    await this.call(`updating branch ${branch}`, 'contents', () => this.octokit.rest.git.updateRef({ ...this.repoArgs, ref: `heads/${branch}`, sha: commit, force: true }));
  }

  /** Auto-merge through REST once GitHub says the PR is mergeable (GraphQL auto-merge needs repo settings). */
  private async tryMerge(number: number, sha: string, warn: (m: string) => void): Promise<void> {
    const unit = this.opts.retryUnitMs ?? 1000;
    for (let attempt = 0; attempt < 3; attempt++) {
      const { data } = await this.call(`reading pull request #${number}`, undefined, () => this.octokit.rest.pulls.get({ ...this.repoArgs, pull_number: number }));
      if (data.mergeable === true) {
        try {
          await this.octokit.rest.pulls.merge({ ...this.repoArgs, pull_number: number, sha, merge_method: 'squash' });
        } catch (error) {
          warn(`auto-merge of #${number} refused: ${isOctokitFailure(error) ? failureText(error) : String(error)}`);
        }
        return;
      }
      if (data.mergeable === false) break;
      await sleep(backoffDelay(attempt, { baseMs: unit })); // GitHub computes mergeability in the background
    }
    warn(`auto-merge of #${number} skipped: GitHub does not report it mergeable`);
  }

  /**
   * RepoBackend.reviewRequests (`lastgood log`, reads only: `pull-requests: read`): the pull
   * requests into `base` from this repository's `branchPrefix…` branches, newest update first,
   * listed 100 a page (REST `pulls.list`, sort=updated) until the pages reach `since`.
   */
  async reviewRequests(query: ReviewRequestQuery): Promise<ReviewRequest[]> {
    const since = query.since?.getTime();
    const own = `${this.owner}/${this.repo}`.toLowerCase();
    const pulls = await this.call('listing pull requests', undefined, () =>
      this.octokit.paginate(this.octokit.rest.pulls.list, { ...this.repoArgs, state: 'all', base: query.base, sort: 'updated', direction: 'desc', per_page: 100 }, (response, done) => {
        const page = response.data;
        // sorted by update: once a page ends before `since`, the later pages are older still
        if (since !== undefined && page.length > 0 && Date.parse(page[page.length - 1]!.updated_at) < since) done();
        return page;
      }),
    );
    const out: ReviewRequest[] = [];
    for (const p of pulls) {
      if (!p.head.ref.startsWith(query.branchPrefix) || p.head.repo?.full_name.toLowerCase() !== own) continue;
      const state = p.merged_at ? 'merged' : p.state === 'open' ? 'open' : 'closed';
      const times = [p.created_at, p.updated_at, p.merged_at, p.closed_at].filter((x): x is string => Boolean(x)).map(Date.parse);
      if (since !== undefined && state !== 'open' && !times.some((t) => t >= since)) continue;
      out.push({
        noun: 'pull request', number: p.number, url: p.html_url, branch: p.head.ref, head: p.head.sha, title: p.title, state,
        createdAt: p.created_at, updatedAt: p.updated_at,
        ...(p.merged_at ? { mergedAt: p.merged_at } : {}), ...(p.closed_at ? { closedAt: p.closed_at } : {}),
        ...(p.merged_at && p.merge_commit_sha ? { mergeCommit: p.merge_commit_sha } : {}),
      });
    }
    return out;
  }

  /**
   * A newer failure's revert supersedes the target's open reverts of older failures — those whose
   * bad commit is an ancestor of this one's — as on the merge-request hosts (review-request.ts
   * `supersede`): each gets a comment linking the new pull request, once, and is closed. A revert for
   * a newer failure is left alone (a run on stale evidence must not close it). The revert is made
   * either way: a failure here is a warning.
   */
  private async supersedeOlder(change: Change, url: string, ctx: PullRequestContext, warn: (m: string) => void): Promise<void> {
    const bad = change.bad[0];
    const prefix = reviewBranchPrefix(change.target);
    // the open pull requests were read with the context: no request at all when there is no other revert of the target
    const candidates = ctx.open.filter((p) => p.headRef.startsWith(prefix) && p.headRef !== reviewBranch(change));
    if (!bad || candidates.length === 0) return;
    const comment = `Superseded by ${url}: a newer failure of ${codeSpan(change.target)} (${bad.slice(0, 12)}) needs its own revert. Closing this one. (lastgood)`;
    try {
      for (const pull of candidates) {
        const older = await this.resolveCommit(pull.headRef.slice(prefix.length));
        if (!older || older === bad || !(await this.isAncestor(older, bad))) continue;
        await this.commentOnce(pull.number, comment);
        await this.call(`closing pull request #${pull.number}`, 'pull-requests', () => this.octokit.rest.pulls.update({ ...this.repoArgs, pull_number: pull.number, state: 'closed' }));
      }
    } catch (error) {
      warn(`the target's older revert pull requests were not closed: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  /** RepoBackend: close open revert PRs of `target` whose bad commit the healthy revision contains. */
  async closeSupersededReverts(target: string, healthyRevision: string): Promise<number[]> {
    const comment = `A newer healthy revision (${healthyRevision}) of ${codeSpan(target)} landed, so this revert is no longer needed: closing it. (lastgood)`;
    return this.closeSuperseded(target, undefined, comment, async (bad12) => {
      const bad = await this.resolveCommit(bad12);
      return bad !== undefined && bad !== healthyRevision && (await this.isAncestor(bad, healthyRevision));
    });
  }

  async closeSuperseded(target: string, keepBad: string | undefined, comment: string, shouldClose?: (bad12: string) => Promise<boolean>): Promise<number[]> {
    const prefix = reviewBranchPrefix(target);
    const keep = keepBad ? `${prefix}${keepBad.slice(0, 12)}` : undefined;
    const own = `${this.owner}/${this.repo}`.toLowerCase();
    const open = await this.call('listing pull requests', undefined, () =>
      this.octokit.paginate(this.octokit.rest.pulls.list, { ...this.repoArgs, state: 'open', per_page: 100 }),
    );
    const closed: number[] = [];
    for (const pull of open) {
      // lastgood's branches in this repository only: a fork's pull request on a branch of the same name is someone else's
      if (!pull.head.ref.startsWith(prefix) || pull.head.ref === keep || (pull.head.repo && pull.head.repo.full_name.toLowerCase() !== own)) continue;
      if (shouldClose && !(await shouldClose(pull.head.ref.slice(prefix.length)))) continue;
      // the comment first, once (a rerun after a lost answer finds it), then the close, which is idempotent
      await this.commentOnce(pull.number, comment);
      await this.call(`closing pull request #${pull.number}`, 'pull-requests', () => this.octokit.rest.pulls.update({ ...this.repoArgs, pull_number: pull.number, state: 'closed' }));
      closed.push(pull.number);
    }
    return closed;
  }
}

/**
 * A stand-in for plugin-throttling's Bottleneck group for writes: one write at a time, `ms` apart.
 * Only `key(id).schedule(options, fn, ...args)` is used by the plugin (dist-src/wrap-request.js).
 */
function pacedGroup(ms: number) {
  let chain: Promise<unknown> = Promise.resolve();
  let last = 0;
  const limiter = {
    schedule<A extends unknown[], R>(_options: unknown, fn: (...args: A) => Promise<R>, ...args: A): Promise<R> {
      const run = chain.then(async () => {
        const wait = last + ms - Date.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        last = Date.now();
        return fn(...args);
      });
      chain = run.catch(() => undefined);
      return run;
    },
  };
  return { key: () => limiter };
}

export function createGitHubBackend(opts: GitHubBackendOptions): GitHubBackend {
  return new GitHubRepo(opts);
}

/**
 * Closes the open lastgood pull requests of `target` (found by their `lastgood/<target>/` branch),
 * except the one for `keepBad`, with a comment saying a newer healthy revision landed.
 * Returns the numbers of the closed pull requests.
 */
export async function closeSupersededPullRequests(
  backend: GitHubBackend | GitHubBackendOptions,
  target: string,
  keepBad?: string,
  opts: { healthyRevision?: string } = {},
): Promise<number[]> {
  const repo = backend instanceof GitHubRepo ? backend : new GitHubRepo(backend as GitHubBackendOptions);
  const comment = `A newer healthy revision${opts.healthyRevision ? ` (${opts.healthyRevision})` : ''} of ${codeSpan(target)} landed, so this revert is no longer needed: closing it. (lastgood)`;
  return repo.closeSuperseded(target, keepBad, comment);
}

/**
 * For src/deliver/registry.ts (`registerBackend(gitHubBackendFactory)`): github.com URLs, and any
 * https URL when an API URL is configured (GHES). The token comes from the options, never the URL.
 */
export const gitHubBackendFactory = {
  kind: 'github',
  matches: (location: string, opts: { apiUrl?: string }) => parseGitHubUrl(location, opts.apiUrl) !== undefined,
  /** `opts.repo` is the config's `repo` section (its `github` settings are read here); `onWarning` is the door's */
  open: async (location: string, opts: { apiUrl?: string; token?: string; repo?: { github?: { environment?: string } }; onWarning?: (message: string) => void }): Promise<GitHubBackend> => {
    const parsed = parseGitHubUrl(location, opts.apiUrl);
    if (!parsed) throw new InputError(`"${redact(location)}" is not a GitHub repository URL`);
    if (!opts.token) throw new InputError(`${parsed.owner}/${parsed.repo}: a GitHub repository needs a token (GITHUB_TOKEN or the action's token input) with contents: write and pull-requests: write`);
    // github.com asks for writes one second apart (secondary rate limits); GHES has no such limit by default
    const writeIntervalMs = parsed.baseUrl === 'https://api.github.com' ? undefined : 0;
    const environment = opts.repo?.github?.environment;
    const web = new URL(location);
    return createGitHubBackend({
      owner: parsed.owner, repo: parsed.repo, token: opts.token, baseUrl: parsed.baseUrl, writeIntervalMs,
      webUrl: `${web.protocol}//${web.host}/${parsed.owner}/${parsed.repo}`,
      ...(environment ? { environment } : {}), ...(opts.onWarning ? { onWarning: opts.onWarning } : {}),
    });
  },
};

export { parseGitHubUrl };
