import { Octokit } from '@octokit/rest';
import { parseGitHubUrl } from './github-url.ts';
import { retry } from '@octokit/plugin-retry';
import { throttling } from '@octokit/plugin-throttling';
import { InputError, RemoteError, redact, registerSecret, StaleHeadError } from '../errors.ts';
import type { Change, CommitInfo, DeliveryMode, DeliveryResult, FileEntry, Person, PullRequestSpec, RepoBackend } from '../repo/types.ts';
import { reviewBranch } from './branch.ts';
import { collectByWalking, entryAt, filesUnder, joinPath, type TreeItem } from './tree-walk.ts';

/**
 * GitHub backend: reads and writes a repository through the REST API, without a clone.
 *
 * Writes use the Git Data API (research/engineering.md §2.9): one tree made with `base_tree` = the
 * parent's tree and entries that reuse existing blob SHAs (only new content is uploaded), one commit,
 * then a ref. Reads walk only the trees on the way to the target paths, so the number of requests
 * depends on the depth and number of target paths, never on the size of the repository.
 *
 * Rate limits: @octokit/plugin-throttling paces writes (GitHub asks for one write per second) and
 * retries primary and secondary rate limits `maxRetries` times; @octokit/plugin-retry retries 5xx.
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
}

export type GitHubBackend = RepoBackend & {
  readonly kind: 'github';
  readonly owner: string;
  readonly repo: string;
  /** the Octokit instance, for callers that need one more endpoint (e.g. the Action's job summary links) */
  readonly octokit: Octokit;
};

const ThrottledOctokit = Octokit.plugin(throttling, retry);
type ThrottleOptions = NonNullable<NonNullable<ConstructorParameters<typeof ThrottledOctokit>[0]>['throttle']>;

type Permission = 'contents' | 'pull-requests' | 'issues';

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

/** `<!-- lastgood:target=<t> bad=<sha> -->`: finds the PR again whatever its branch (PullRequestSpec). */
export function pullRequestMarker(change: Pick<Change, 'target' | 'bad'>): string {
  return `<!-- lastgood:target=${change.target} bad=${change.bad[0] ?? 'unknown'} -->`;
}

/** A git author as GitHub's API takes it: ISO 8601 with the author's own offset. */
function isoWithOffset(p: Person): string {
  const offsetMinutes = -p.timezoneOffset; // isomorphic-git's convention: +0200 is stored as -120
  const local = new Date((p.timestamp + offsetMinutes * 60) * 1000).toISOString().slice(0, 19);
  const sign = offsetMinutes < 0 ? '-' : '+';
  const abs = Math.abs(offsetMinutes);
  return `${local}${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
}

/** The API gives dates in UTC: the author's timezone offset is not recoverable (reported as 0). */
function personFrom(user: { name?: string; email?: string; date?: string } | null | undefined): Person {
  const ms = user?.date ? Date.parse(user.date) : NaN;
  return { name: user?.name ?? '', email: user?.email ?? '', timestamp: Number.isNaN(ms) ? 0 : Math.floor(ms / 1000), timezoneOffset: 0 };
}

const TREE_CHUNK = 100; // entries per createTree call, as create-pull-request and release-please do

class GitHubRepo implements GitHubBackend {
  readonly kind = 'github' as const;
  readonly description: string;
  readonly owner: string;
  readonly repo: string;
  readonly octokit: Octokit;
  private readonly opts: GitHubBackendOptions;
  private readonly commits = new Map<string, CommitInfo>();
  private readonly trees = new Map<string, TreeItem[]>();

  constructor(opts: GitHubBackendOptions) {
    registerSecret(opts.token);
    this.opts = opts;
    this.owner = opts.owner;
    this.repo = opts.repo;
    const baseUrl = (opts.baseUrl ?? 'https://api.github.com').replace(/\/+$/, '');
    this.description = `${baseUrl === 'https://api.github.com' ? 'https://github.com' : baseUrl}/${opts.owner}/${opts.repo}`;
    const maxRetries = opts.maxRetries ?? 3;
    const unit = opts.retryUnitMs ?? 1000;
    const retryOnLimit = (_after: number, _options: unknown, _octokit: unknown, retryCount: number) => retryCount < maxRetries;
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
        error: (m: string) => opts.onWarning?.(redact(String(m))),
      },
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

  private wrap(what: string, permission: Permission | undefined, error: unknown): Error {
    if (error instanceof RemoteError || error instanceof InputError) return error;
    if (!isOctokitFailure(error)) return new RemoteError('github', `${what} failed: ${(error as Error)?.message ?? String(error)}`, { cause: error });
    const where = `${this.owner}/${this.repo}`;
    const text = failureText(error);
    const status = error.status;
    let message: string;
    if (status === 401) message = `${what}: GitHub rejected the token (401 ${text}): it is invalid, expired or revoked; give lastgood a valid token`;
    else if ((status === 403 || status === 429) && /rate limit/i.test(text)) message = `${what}: still rate limited by GitHub after ${this.opts.maxRetries ?? 3} retries (${status} ${text})`;
    else if ((status === 403 || status === 404) && permission) message = `${what} was refused (${status} ${text}): the token needs "${permission}: write" permission on ${where}`;
    else if (status === 404) message = `${what}: not found (404) in ${where}: the repository or object does not exist, or the token cannot read it (needs "contents: read")`;
    else message = `${what} failed (${status} ${text})`;
    return new RemoteError('github', message, { status, cause: error });
  }

  private get repoArgs() {
    return { owner: this.owner, repo: this.repo };
  }

  // ---- RepoReader ------------------------------------------------------------------------------

  async head(branch: string): Promise<string> {
    try {
      const { data } = await this.octokit.rest.git.getRef({ ...this.repoArgs, ref: `heads/${branch}` });
      return data.object.sha;
    } catch (error) {
      if (isOctokitFailure(error) && error.status === 404) {
        // GitHub answers 404 alike for a missing branch and a repository the token cannot see: ask which
        if (!(await this.repositoryVisible())) {
          throw new InputError(`repository ${this.owner}/${this.repo} not found or not visible to the token (needs "contents: read" on it): ${this.description}`, { cause: error });
        }
        throw new InputError(`branch "${branch}" does not exist in ${this.description}`, { cause: error });
      }
      throw this.wrap(`reading branch ${branch}`, undefined, error);
    }
  }

  /** `GET /repos/{owner}/{repo}`: false on 404 (missing, or hidden from the token); other failures are RemoteErrors. */
  private async repositoryVisible(): Promise<boolean> {
    try {
      await this.octokit.rest.repos.get(this.repoArgs);
      return true;
    } catch (error) {
      if (isOctokitFailure(error) && error.status === 404) return false;
      throw this.wrap(`reading repository ${this.owner}/${this.repo}`, undefined, error);
    }
  }

  async resolveCommit(shaOrPrefix: string): Promise<string | undefined> {
    const sha = shaOrPrefix.toLowerCase();
    if (!/^[0-9a-f]{4,40}$/.test(sha)) return undefined;
    if (sha.length === 40 && this.commits.has(sha)) return sha;
    try {
      const { data } = await this.octokit.rest.repos.getCommit({ ...this.repoArgs, ref: sha, per_page: 1 });
      return data.sha.startsWith(sha) ? data.sha : undefined;
    } catch (error) {
      // unknown or ambiguous: GitHub answers 404 or 422
      if (isOctokitFailure(error) && (error.status === 404 || error.status === 422)) return undefined;
      throw this.wrap(`resolving commit ${sha}`, undefined, error);
    }
  }

  async readCommit(oid: string): Promise<CommitInfo> {
    let cached = this.commits.get(oid);
    if (cached) return cached;
    await this.prefetch(oid).catch(() => undefined); // an unknown commit is reported by getCommit below
    cached = this.commits.get(oid);
    if (cached) return cached;
    const { data } = await this.call(`reading commit ${oid}`, undefined, () => this.octokit.rest.git.getCommit({ ...this.repoArgs, commit_sha: oid }));
    const info: CommitInfo = {
      oid: data.sha,
      parents: data.parents.map((p) => p.sha),
      message: data.message,
      tree: data.tree.sha,
      author: personFrom(data.author),
      committer: personFrom(data.committer),
    };
    this.commits.set(oid, info);
    return info;
  }

  /**
   * A commit listing from `from` (GitHub orders it newest first over the whole graph), cached: one
   * request brings the commit and the hundred around it, so a walk down the history costs one
   * request per hundred commits instead of one per commit.
   */
  private async prefetch(from: string): Promise<void> {
    const { data } = await this.call(`listing commits from ${from.slice(0, 12)}`, undefined, () =>
      this.octokit.rest.repos.listCommits({ ...this.repoArgs, sha: from, per_page: 100 }),
    );
    for (const item of data) {
      if (this.commits.has(item.sha)) continue;
      this.commits.set(item.sha, {
        oid: item.sha,
        parents: item.parents.map((p) => p.sha),
        message: item.commit.message,
        tree: item.commit.tree.sha,
        author: personFrom(item.commit.author),
        committer: personFrom(item.commit.committer),
      });
    }
  }

  async listFiles(commit: string, paths: string[]): Promise<Map<string, FileEntry>> {
    return filesUnder(this.readTreeItems, (await this.readCommit(commit)).tree, paths, (oid, prefix, out) => this.collect(oid, prefix, out));
  }

  /** A folder in one recursive request; when GitHub truncates it, tree by tree. */
  private async collect(treeSha: string, prefix: string, out: Map<string, FileEntry>): Promise<void> {
    const { data } = await this.call(`listing tree ${prefix}`, undefined, () => this.octokit.rest.git.getTree({ ...this.repoArgs, tree_sha: treeSha, recursive: '1' }));
    if (!data.truncated) {
      for (const e of data.tree) if (e.type === 'blob' && e.path && e.sha && e.mode) out.set(joinPath(prefix, e.path), { oid: e.sha, mode: e.mode });
      return;
    }
    await collectByWalking(this.readTreeItems, treeSha, prefix, out);
  }

  async pathOid(commit: string, path: string): Promise<string | undefined> {
    const { tree } = await this.readCommit(commit);
    return (await entryAt(this.readTreeItems, tree, path.replace(/\/+$/, '')))?.oid;
  }

  private readonly readTreeItems = (sha: string) => this.readTree(sha);

  async readTree(sha: string): Promise<TreeItem[]> {
    let entries = this.trees.get(sha);
    if (!entries) {
      const { data } = await this.call(`reading tree ${sha}`, undefined, () => this.octokit.rest.git.getTree({ ...this.repoArgs, tree_sha: sha }));
      entries = data.tree.map((e) => ({ path: e.path ?? '', mode: e.mode ?? '', type: e.type ?? '', oid: e.sha ?? '' }));
      this.trees.set(sha, entries);
    }
    return entries;
  }

  async readBlob(oid: string): Promise<Uint8Array> {
    const { data } = await this.call(`reading blob ${oid}`, undefined, () => this.octokit.rest.git.getBlob({ ...this.repoArgs, file_sha: oid }));
    return new Uint8Array(Buffer.from(data.content, data.encoding === 'base64' ? 'base64' : 'utf8'));
  }

  async isAncestor(ancestor: string, descendant: string): Promise<boolean> {
    if (ancestor === descendant) return true;
    try {
      const { data } = await this.octokit.rest.repos.compareCommits({ ...this.repoArgs, base: ancestor, head: descendant, per_page: 1 });
      return data.status === 'ahead' || data.status === 'identical';
    } catch (error) {
      if (isOctokitFailure(error) && error.status === 404) return false; // no common ancestor
      throw this.wrap(`comparing ${ancestor.slice(0, 12)}...${descendant.slice(0, 12)}`, undefined, error);
    }
  }

  // ---- writing -----------------------------------------------------------------------------------

  /** The change's tree on top of change.parent's: blobs reused by SHA, only new content uploaded. */
  private async writeTree(change: Change): Promise<{ tree: string; parentTree: string }> {
    const parent = await this.readCommit(change.parent);
    const items: Array<{ path: string; mode: '100644' | '100755' | '040000' | '160000' | '120000'; type: 'blob'; sha: string | null }> = [];
    for (const f of change.files) {
      if ('delete' in f) {
        items.push({ path: f.path, mode: '100644', type: 'blob', sha: null });
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

  private async createCommit(change: Change, tree: string): Promise<string> {
    const author = { name: change.author.name, email: change.author.email, date: isoWithOffset(change.author) };
    const { data } = await this.call('creating the commit', 'contents', () =>
      this.octokit.rest.git.createCommit({ ...this.repoArgs, message: redact(change.message), tree, parents: [change.parent], author }),
    );
    this.commits.set(data.sha, { oid: data.sha, parents: [change.parent], message: data.message, tree, author: change.author, committer: personFrom(data.committer) });
    return data.sha;
  }

  async deliver(change: Change, mode: DeliveryMode): Promise<DeliveryResult> {
    return mode === 'pull-request' ? this.deliverPullRequest(change) : this.deliverCommit(change);
  }

  /**
   * [COMMIT] a non-forced ref update: a concurrent push makes it fail (422, not a fast-forward), and
   * then the change is re-planned on the new head, `concurrentPushAttempts` times at most.
   */
  private async deliverCommit(first: Change): Promise<DeliveryResult> {
    const attempts = this.opts.concurrentPushAttempts ?? 3;
    let change = first;
    for (let attempt = 1; ; attempt++) {
      const current = await this.head(change.branch);
      let moved = current !== change.parent ? current : undefined;
      if (!moved) {
        const { tree, parentTree } = await this.writeTree(change);
        if (tree === parentTree) return { commit: change.parent, branch: change.branch, created: false };
        const commit = await this.createCommit(change, tree);
        try {
          await this.octokit.rest.git.updateRef({ ...this.repoArgs, ref: `heads/${change.branch}`, sha: commit, force: false });
          return { commit, branch: change.branch, created: true };
        } catch (error) {
          if (!(isOctokitFailure(error) && error.status === 422)) throw this.wrap(`updating branch ${change.branch}`, 'contents', error);
          moved = await this.head(change.branch);
        }
      }
      if (!this.opts.replan) throw new StaleHeadError(change.branch, moved);
      if (attempt >= attempts) {
        throw new RemoteError('github', `branch ${change.branch} kept moving while the revert was written: gave up after ${attempts} attempts`, { status: 422 });
      }
      const next = await this.opts.replan(moved);
      if (!next) return { commit: moved, branch: change.branch, created: false };
      change = next;
    }
  }

  /**
   * [PULL REQUEST] one open PR per target and bad revision (branch `lastgood/<target>/<bad12>` and the
   * body marker). [UPDATE] when it exists: its branch moves only when the tree differs, title and body
   * follow the new plan, and a comment says when the evidence changed. [CREATE] otherwise.
   */
  private async deliverPullRequest(change: Change): Promise<DeliveryResult> {
    const spec: PullRequestSpec = change.pullRequest ?? { title: change.message.split('\n')[0] ?? 'lastgood revert', body: change.message, labels: [], reviewers: [], assignees: [], draft: false, autoMerge: false };
    const branch = reviewBranch(change);
    const marker = pullRequestMarker(change);
    // a token must never reach a PR, even if some evidence text carried one
    const title = redact(spec.title);
    const body = `${redact(spec.body).trimEnd()}\n\n${marker}\n`;
    const warnings: string[] = [];
    const warn = (m: string) => {
      warnings.push(redact(m));
      this.opts.onWarning?.(redact(m));
    };

    const existing = await this.findPullRequest(change.branch, branch, marker);
    const { tree, parentTree } = await this.writeTree(change);
    if (tree === parentTree && !existing) return { commit: change.parent, branch, created: false, warnings: ['the change leaves the tree as it is: no pull request opened'] };

    if (existing) {
      // [UPDATE] the branch moves only when the planned tree differs from what the PR shows
      let head = existing.headSha;
      if ((await this.readCommit(existing.headSha)).tree !== tree && tree !== parentTree) {
        const commit = await this.createCommit(change, tree);
        await this.call(`updating branch ${existing.headRef}`, 'contents', () =>
          this.octokit.rest.git.updateRef({ ...this.repoArgs, ref: `heads/${existing.headRef}`, sha: commit, force: true }),
        );
        head = commit;
      }
      const evidenceChanged = stripMarker(existing.body) !== stripMarker(body);
      if (existing.title !== title || evidenceChanged) {
        await this.call(`updating pull request #${existing.number}`, 'pull-requests', () =>
          this.octokit.rest.pulls.update({ ...this.repoArgs, pull_number: existing.number, title, body }),
        );
      }
      if (evidenceChanged) {
        await this.call(`commenting on pull request #${existing.number}`, 'pull-requests', () =>
          this.octokit.rest.issues.createComment({ ...this.repoArgs, issue_number: existing.number, body: `lastgood saw new evidence for this revert and updated the description.${head !== existing.headSha ? ` The branch now points at ${head}.` : ''}` }),
        );
      }
      const missing = spec.labels.filter((l) => !existing.labels.includes(l));
      if (missing.length > 0) {
        await this.call(`labelling pull request #${existing.number}`, 'pull-requests', () => this.octokit.rest.issues.addLabels({ ...this.repoArgs, issue_number: existing.number, labels: missing }));
      }
      return { commit: head, branch: existing.headRef, pullRequest: { url: existing.url, number: existing.number }, created: false, ...(warnings.length ? { warnings } : {}) };
    }

    // [CREATE]
    const commit = await this.createCommit(change, tree);
    await this.pointBranch(branch, commit, tree);
    let created: { number: number; html_url: string };
    try {
      ({ data: created } = await this.octokit.rest.pulls.create({ ...this.repoArgs, title, head: branch, base: change.branch, body, draft: spec.draft, maintainer_can_modify: true }));
    } catch (error) {
      // another run opened it between our lookup and now: use that one
      if (isOctokitFailure(error) && error.status === 422 && /already exists/i.test(failureText(error))) {
        const raced = await this.findPullRequest(change.branch, branch, marker);
        if (raced) return { commit: raced.headSha, branch: raced.headRef, pullRequest: { url: raced.url, number: raced.number }, created: false };
      }
      throw this.wrap(`opening the pull request from ${branch}`, 'pull-requests', error);
    }
    const number = created.number;
    if (spec.labels.length > 0) {
      await this.call(`labelling pull request #${number}`, 'pull-requests', () => this.octokit.rest.issues.addLabels({ ...this.repoArgs, issue_number: number, labels: spec.labels }));
    }
    if (spec.reviewers.length > 0) {
      // a reviewer who cannot review (the token's own user, no access) must not lose the revert
      await this.octokit.rest.pulls.requestReviewers({ ...this.repoArgs, pull_number: number, reviewers: spec.reviewers }).catch((error: unknown) => {
        warn(`could not request reviewers ${spec.reviewers.join(', ')} on #${number}: ${isOctokitFailure(error) ? failureText(error) : String(error)}`);
      });
    }
    if (spec.assignees.length > 0) {
      await this.octokit.rest.issues.addAssignees({ ...this.repoArgs, issue_number: number, assignees: spec.assignees }).catch((error: unknown) => {
        warn(`could not assign ${spec.assignees.join(', ')} to #${number}: ${isOctokitFailure(error) ? failureText(error) : String(error)}`);
      });
    }
    if (spec.autoMerge) await this.tryMerge(number, commit, warn);
    return { commit, branch, pullRequest: { url: created.html_url, number }, created: true, ...(warnings.length ? { warnings } : {}) };
  }

  /** The open PR for this target and bad revision: by head branch first, then by the body marker. */
  private async findPullRequest(base: string, branch: string, marker: string) {
    const byHead = await this.call('listing pull requests', undefined, () =>
      this.octokit.rest.pulls.list({ ...this.repoArgs, state: 'open', head: `${this.owner}:${branch}`, per_page: 10 }),
    );
    let pull = byHead.data[0];
    if (!pull) {
      const open = await this.call('listing pull requests', undefined, () => this.octokit.rest.pulls.list({ ...this.repoArgs, state: 'open', base, per_page: 100 }));
      pull = open.data.find((p) => p.body?.includes(marker));
    }
    if (!pull) return undefined;
    return { number: pull.number, url: pull.html_url, headRef: pull.head.ref, headSha: pull.head.sha, title: pull.title, body: pull.body ?? '', labels: pull.labels.map((l) => l.name ?? '') };
  }

  /** Creates the PR branch, or moves a stale one (left by a closed PR) to the new commit. */
  private async pointBranch(branch: string, commit: string, tree: string): Promise<void> {
    try {
      await this.octokit.rest.git.createRef({ ...this.repoArgs, ref: `refs/heads/${branch}`, sha: commit });
      return;
    } catch (error) {
      if (!(isOctokitFailure(error) && error.status === 422 && /already exists/i.test(failureText(error)))) throw this.wrap(`creating branch ${branch}`, 'contents', error);
    }
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
      await new Promise((r) => setTimeout(r, unit * (attempt + 1))); // GitHub computes mergeability in the background
    }
    warn(`auto-merge of #${number} skipped: GitHub does not report it mergeable`);
  }

  /** Closes the open lastgood PRs of a target (branch prefix `lastgood/<target>/`), except `keepBad`'s. */
  /** RepoBackend: close open revert PRs of `target` whose bad commit the healthy revision contains. */
  async closeSupersededReverts(target: string, healthyRevision: string): Promise<number[]> {
    const comment = `A newer healthy revision (${healthyRevision}) of \`${target}\` landed, so this revert is no longer needed: closing it. (lastgood)`;
    return this.closeSuperseded(target, undefined, comment, async (bad12) => {
      const bad = await this.resolveCommit(bad12);
      return bad !== undefined && bad !== healthyRevision && (await this.isAncestor(bad, healthyRevision));
    });
  }

  async closeSuperseded(target: string, keepBad: string | undefined, comment: string, shouldClose?: (bad12: string) => Promise<boolean>): Promise<number[]> {
    const prefix = `lastgood/${target}/`;
    const keep = keepBad ? `${prefix}${keepBad.slice(0, 12)}` : undefined;
    const open = await this.call('listing pull requests', undefined, () =>
      this.octokit.paginate(this.octokit.rest.pulls.list, { ...this.repoArgs, state: 'open', per_page: 100 }),
    );
    const closed: number[] = [];
    for (const pull of open) {
      if (!pull.head.ref.startsWith(prefix) || pull.head.ref === keep) continue;
      if (shouldClose && !(await shouldClose(pull.head.ref.slice(prefix.length)))) continue;
      await this.call(`commenting on pull request #${pull.number}`, 'pull-requests', () => this.octokit.rest.issues.createComment({ ...this.repoArgs, issue_number: pull.number, body: comment }));
      await this.call(`closing pull request #${pull.number}`, 'pull-requests', () => this.octokit.rest.pulls.update({ ...this.repoArgs, pull_number: pull.number, state: 'closed' }));
      closed.push(pull.number);
    }
    return closed;
  }
}

const stripMarker = (body: string) => body.replace(/<!-- lastgood:[^>]*-->/g, '').trim();

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
  const comment = `A newer healthy revision${opts.healthyRevision ? ` (${opts.healthyRevision})` : ''} of \`${target}\` landed, so this revert is no longer needed: closing it. (lastgood)`;
  return repo.closeSuperseded(target, keepBad, comment);
}

/**
 * For src/deliver/registry.ts (`registerBackend(gitHubBackendFactory)`): github.com URLs, and any
 * https URL when an API URL is configured (GHES). The token comes from the options, never the URL.
 */
export const gitHubBackendFactory = {
  kind: 'github',
  matches: (location: string, opts: { apiUrl?: string }) => parseGitHubUrl(location, opts.apiUrl) !== undefined,
  open: async (location: string, opts: { apiUrl?: string; token?: string }): Promise<GitHubBackend> => {
    const parsed = parseGitHubUrl(location, opts.apiUrl);
    if (!parsed) throw new InputError(`"${redact(location)}" is not a GitHub repository URL`);
    if (!opts.token) throw new InputError(`${parsed.owner}/${parsed.repo}: a GitHub repository needs a token (GITHUB_TOKEN or the action's token input) with contents: write and pull-requests: write`);
    // github.com asks for writes one second apart (secondary rate limits); GHES has no such limit by default
    const writeIntervalMs = parsed.baseUrl === 'https://api.github.com' ? undefined : 0;
    return createGitHubBackend({ owner: parsed.owner, repo: parsed.repo, token: opts.token, baseUrl: parsed.baseUrl, writeIntervalMs });
  },
};

export { parseGitHubUrl };
