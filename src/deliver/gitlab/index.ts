import { Commits, MergeRequestNotes, MergeRequests, Users } from '@gitbeaker/rest';
import { createRequesterFn } from '@gitbeaker/requester-utils';
import { ConfigError, RemoteError, registerSecret } from '../../errors.ts';
import { createHostFetch, type HostFetch } from '../host-http.ts';
import { hostFailure, inLogWindow, newestUpdateFirst, type HostOpenOptions, type Decoration, type HostRequest, type OpenRequest, type ReviewHost } from '../review-request.ts';
import type { ReviewRequest } from '../../repo/types.ts';
import { GITHUB_FLAVORED } from '../../revert/markup.ts';

/**
 * GitLab (gitlab.com and self-managed, API v4) through @gitbeaker/rest: merge requests, their
 * notes, and the user look-ups reviewers and assignees need (GitLab takes user ids).
 *
 * gitbeaker's own request handler retries only 429 and 502 and ignores Retry-After; it is replaced
 * (its documented `requesterFn` option) by one over the shared host fetch (host-http.ts), which waits
 * what GitLab's rate limiter says and sends the token only to the configured host.
 *
 * Tokens: a personal, project or group access token (scope `api`) goes in PRIVATE-TOKEN; with
 * `repo.auth.scheme: bearer` an OAuth token goes as Bearer. GitLab's CI job token (CI_JOB_TOKEN)
 * reaches only a few API endpoints, merge requests not among them
 * (doc/ci/jobs/ci_job_token.md): pull-request mode refuses it before anything is written.
 */

interface GitLabUser {
  id: number;
  username: string;
}

interface GitLabMergeRequest {
  iid: number;
  web_url: string;
  source_branch: string;
  target_branch: string;
  /** a merge request from a fork has another source project (doc/api/merge_requests.md) */
  source_project_id?: number;
  target_project_id?: number;
  title: string;
  description: string | null;
  labels: string[];
  reviewers?: GitLabUser[];
  assignees?: GitLabUser[];
  /** opened | closed | locked | merged (doc/api/merge_requests.md) */
  state?: string;
  sha?: string | null;
  created_at?: string;
  updated_at?: string;
  merged_at?: string | null;
  closed_at?: string | null;
  merge_commit_sha?: string | null;
  squash_commit_sha?: string | null;
}

/** A GitLab answer that was not 2xx: its status and GitLab's own message. */
export class GitLabFailure extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

/** GitLab's error bodies: `{"message": "…" | ["…"] | {field: ["…"]}}` or `{"error": "…"}`. */
function gitLabWords(text: string): string {
  try {
    const body = JSON.parse(text) as { message?: unknown; error?: unknown; error_description?: unknown };
    const m = body.message ?? body.error_description ?? body.error;
    if (typeof m === 'string') return m;
    if (Array.isArray(m)) return m.join('; ');
    if (m && typeof m === 'object') return Object.entries(m).map(([k, v]) => `${k} ${Array.isArray(v) ? v.join(', ') : String(v)}`).join('; ');
  } catch {
    // not JSON
  }
  return text.slice(0, 500);
}

/** gitbeaker's request handler over the shared host fetch (see @gitbeaker/rest src/Requester.ts for the one it replaces). */
function requesterOver(http: HostFetch) {
  return createRequesterFn(
    (_service, options) => Promise.resolve(options),
    async (endpoint, options) => {
      const { prefixUrl, searchParams, method, headers, body, signal } = (options ?? {}) as { prefixUrl?: string; searchParams?: string; method?: string; headers?: Record<string, string>; body?: string; signal?: AbortSignal };
      const url = new URL(endpoint, prefixUrl?.endsWith('/') ? prefixUrl : `${prefixUrl}/`);
      url.search = searchParams ?? '';
      const response = await http.fetch(url, { method: method ?? 'GET', ...(headers ? { headers } : {}), ...(body !== undefined ? { body } : {}), ...(signal ? { signal } : {}) });
      const text = await response.text();
      if (!response.ok) throw new GitLabFailure(response.status, gitLabWords(text));
      const type = (response.headers.get('content-type') ?? '').split(';')[0]!.trim();
      const parsed = response.status === 204 ? null : type === 'application/json' ? (text ? JSON.parse(text) : {}) : text;
      return { body: parsed, headers: Object.fromEntries(response.headers.entries()), status: response.status };
    },
  );
}

export function openGitLab(opts: HostOpenOptions): ReviewHost {
  const { coordinates: at, credentials } = opts;
  const project = `${at.owner}/${at.repo}`;
  const http = createHostFetch({ apiBase: at.api, system: 'gitlab', ...(opts.maxRetries !== undefined ? { maxRetries: opts.maxRetries } : {}), ...(opts.retryUnitMs !== undefined ? { retryUnitMs: opts.retryUnitMs } : {}), ...(opts.onWarning ? { onWarning: opts.onWarning } : {}) });
  const jobToken = credentials?.env === 'CI_JOB_TOKEN';
  if (credentials) registerSecret(credentials.secret);
  const auth = !credentials || credentials.kind !== 'token' ? {} : jobToken ? { jobToken: credentials.secret } : credentials.header.startsWith('Bearer ') ? { oauthToken: credentials.secret } : { token: credentials.secret };
  // gitbeaker appends /api/v4 to `host`
  const config = { host: at.api.replace(/\/api\/v4$/, ''), requesterFn: requesterOver(http), rateLimits: {}, ...auth } as ConstructorParameters<typeof MergeRequests>[0];
  const mergeRequests = new MergeRequests(config);
  const notes = new MergeRequestNotes(config);
  const users = new Users(config);
  const commits = new Commits(config);

  const call = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (error) {
      if (error instanceof RemoteError) throw error;
      if (error instanceof GitLabFailure) {
        const hint = error.status === 403 || error.status === 404 ? `the token needs the "api" scope and the Developer role (or higher) on ${project}` : undefined;
        throw hostFailure('gitlab', `${what} on ${project}`, error.status, error.message, hint);
      }
      throw new RemoteError('gitlab', `${what} on ${project}: ${(error as Error)?.message ?? String(error)}`, { cause: error });
    }
  };

  const toRequest = (mr: GitLabMergeRequest): HostRequest => ({
    number: mr.iid,
    url: mr.web_url,
    source: mr.source_branch,
    target: mr.target_branch,
    title: mr.title,
    body: mr.description ?? '',
    labels: mr.labels ?? [],
    reviewers: (mr.reviewers ?? []).map((u) => u.username),
    assignees: (mr.assignees ?? []).map((u) => u.username),
    extra: { reviewerIds: (mr.reviewers ?? []).map((u) => u.id), assigneeIds: (mr.assignees ?? []).map((u) => u.id) },
  });

  /** GitLab takes user ids: one look-up per name (GET /users?username=); unknown names are warned about and left out. */
  const userIds = async (names: string[], what: string, warn: (m: string) => void): Promise<number[]> => {
    const ids: number[] = [];
    for (const name of [...new Set(names)]) {
      const found = (await call(`looking up user ${name}`, () => users.all({ username: name }))) as unknown as GitLabUser[];
      const user = found.find((u) => u.username.toLowerCase() === name.toLowerCase());
      if (user) ids.push(user.id);
      else warn(`could not ${what} ${name}: no such GitLab user`);
    }
    return ids;
  };

  return {
    system: 'gitlab',
    name: 'GitLab',
    noun: 'merge request',
    coordinates: at,
    get requests() {
      return http.requests;
    },
    // GLFM: CommonMark with GFM tables and sanitised HTML (docs.gitlab.com/user/markdown)
    markdown: GITHUB_FLAVORED,
    checkCanOpen() {
      const where = opts.configFile ? { file: opts.configFile } : {};
      if (!credentials) throw new ConfigError(`pull-request mode on GitLab needs an access token: set repo.auth (e.g. auth: { tokenEnv: LASTGOOD_GITLAB_TOKEN }) to a project access token with the "api" scope and the Developer role`, where);
      if (jobToken) {
        throw new ConfigError(
          'repo.auth: the GitLab CI job token (CI_JOB_TOKEN) cannot open merge requests: GitLab lets a job token reach only a few API endpoints, and merge requests are not among them. Give lastgood a project access token (role Developer, scope "api") in a masked CI/CD variable and name it: auth: { tokenEnv: LASTGOOD_GITLAB_TOKEN } (commit mode can push with the job token where the project allows it)',
          where,
        );
      }
      if (credentials.kind !== 'token') throw new ConfigError('repo.auth: GitLab\'s API takes access tokens, not passwords: name a token (tokenEnv or tokenFile)', where);
    },
    /**
     * `lastgood log`: the open merge requests, and those updated since the window's start (merged,
     * closed or still open), newest update first. GitLab's `state` default is every state;
     * `updated_after` bounds the pages (doc/api/merge_requests.md "List project merge requests").
     */
    async listRequests(query) {
      const base = { projectId: project, targetBranch: query.base, orderBy: 'updated_at' as const, sort: 'desc' as const, perPage: 100 };
      const open = (await call('listing open merge requests', () => mergeRequests.all({ ...base, state: 'opened' }))) as unknown as GitLabMergeRequest[];
      const recent = (await call('listing merge requests', () => mergeRequests.all({ ...base, ...(query.since ? { updatedAfter: query.since.toISOString() } : {}) }))) as unknown as GitLabMergeRequest[];
      const seen = new Set<number>();
      const out: ReviewRequest[] = [];
      for (const mr of [...open, ...recent]) {
        if (seen.has(mr.iid) || !mr.source_branch.startsWith(query.branchPrefix)) continue;
        seen.add(mr.iid);
        const state = mr.state === 'merged' ? 'merged' : mr.state === 'opened' ? 'open' : 'closed';
        // a fast-forward merge makes no commit of its own: the request's head is on the branch
        const mergeCommit = mr.merge_commit_sha ?? mr.squash_commit_sha ?? (state === 'merged' ? mr.sha : undefined);
        out.push({
          noun: 'merge request', number: mr.iid, url: mr.web_url, branch: mr.source_branch, title: mr.title, state, createdAt: mr.created_at ?? '',
          ...(mr.sha ? { head: mr.sha } : {}), ...(mr.updated_at ? { updatedAt: mr.updated_at } : {}),
          ...(mr.merged_at ? { mergedAt: mr.merged_at } : {}), ...(mr.closed_at ? { closedAt: mr.closed_at } : {}), ...(mergeCommit ? { mergeCommit } : {}),
        });
      }
      return newestUpdateFirst(out.filter((r) => inLogWindow(r, query.since)));
    },
    async listOpen(target, prefix) {
      const all = (await call('listing open merge requests', () => mergeRequests.all({ projectId: project, state: 'opened', targetBranch: target, perPage: 100 }))) as unknown as GitLabMergeRequest[];
      const fromFork = (mr: GitLabMergeRequest) => mr.source_project_id !== undefined && mr.source_project_id !== mr.target_project_id;
      return all.filter((mr) => mr.source_branch.startsWith(prefix) && !fromFork(mr)).map(toRequest);
    },
    async create(req: OpenRequest, warn) {
      const reviewerIds = await userIds(req.reviewers, 'request a review from', warn);
      const assigneeIds = await userIds(req.assignees, 'assign', warn);
      const mr = (await call(`opening the merge request from ${req.source}`, () =>
        mergeRequests.create(project, req.source, req.target, req.draft ? `Draft: ${req.title}` : req.title, {
          description: req.body,
          ...(req.labels.length ? { labels: req.labels.join(',') } : {}),
          ...(reviewerIds.length ? { reviewerIds } : {}),
          ...(assigneeIds.length ? { assigneeIds } : {}),
          removeSourceBranch: true,
        }),
      )) as unknown as GitLabMergeRequest;
      return toRequest(mr);
    },
    settledByFinding: (error) => error instanceof RemoteError && error.status === 409,
    async update(pr, change) {
      await call(`updating merge request !${pr.number}`, () => mergeRequests.edit(project, pr.number, { title: change.title, description: change.body }));
    },
    async comment(pr, body) {
      await call(`commenting on merge request !${pr.number}`, () => notes.create(project, pr.number, body));
    },
    async close(pr) {
      await call(`closing merge request !${pr.number}`, () => mergeRequests.edit(project, pr.number, { stateEvent: 'close' }));
    },
    async decorate(pr, missing: Decoration, warn) {
      if (!missing.labels.length && !missing.reviewers.length && !missing.assignees.length) return;
      const has = (pr.extra ?? {}) as { reviewerIds?: number[]; assigneeIds?: number[] };
      // reviewer_ids and assignee_ids replace the lists: the ones the request has go with the new ones
      const newReviewers = await userIds(missing.reviewers, 'request a review from', warn);
      const newAssignees = await userIds(missing.assignees, 'assign', warn);
      const options = {
        ...(missing.labels.length ? { addLabels: missing.labels.join(',') } : {}),
        ...(newReviewers.length ? { reviewerIds: [...(has.reviewerIds ?? []), ...newReviewers] } : {}),
        ...(newAssignees.length ? { assigneeIds: [...(has.assigneeIds ?? []), ...newAssignees] } : {}),
      };
      if (Object.keys(options).length === 0) return;
      await call(`labelling merge request !${pr.number}`, () => mergeRequests.edit(project, pr.number, options));
    },
    async autoMerge(pr, warn) {
      try {
        await mergeRequests.accept(project, pr.number, { mergeWhenPipelineSucceeds: true, shouldRemoveSourceBranch: true });
      } catch (error) {
        warn(`auto-merge of !${pr.number} refused: ${error instanceof GitLabFailure ? `${error.status} ${error.message}` : String(error)}`);
      }
    },
    // the Commits API with actions: the branch made at start_sha plus the changes, atomically (doc/api/commits.md)
    async commitBranch(commit) {
      const made = (await call(`writing the commit of ${commit.branch}`, () =>
        commits.create(project, commit.branch, commit.message, commit.actions.map((a) => ({
          action: a.action, filePath: a.path, ...(a.content !== undefined ? { content: a.content, encoding: 'base64' } : {}), ...(a.executable ? { executeFilemode: true } : {}),
        })), { startSha: commit.startSha, force: true, authorName: commit.author.name, authorEmail: commit.author.email }),
      )) as unknown as { id: string };
      return made.id;
    },
    commitUrl: (sha) => `${at.web}/-/commit/${sha}`,
  };
}
