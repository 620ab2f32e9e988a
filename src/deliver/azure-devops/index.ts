import { z } from 'zod';
import { ConfigError, RemoteError, registerSecret } from '../../errors.ts';
import { createHostFetch } from '../host-http.ts';
import type { ReviewRequest } from '../../repo/types.ts';
import { GITHUB_FLAVORED } from '../../revert/markup.ts';
import { hostFailure, inLogWindow, newestUpdateFirst, type HostOpenOptions, type HostRequest, type ReviewHost } from '../review-request.ts';

/**
 * Azure DevOps Repos (Git pull requests API, api-version 7.1), with `fetch` (the shared host fetch)
 * and zod schemas for the answers lastgood relies on.
 *
 * Why not azure-devops-node-api, Microsoft's client: its transport (typed-rest-client) follows
 * redirects with the same credentials to any host, retries only reads on 502–504 and never a 429
 * (Azure DevOps's throttling answer, with Retry-After), and spends an OPTIONS round trip per API
 * area on resource-location discovery before the first call. The five calls lastgood makes are
 * plain JSON with `api-version`; the shapes below follow the published description
 * (MicrosoftDocs/vsts-rest-api-specs specification/git/7.1/git.json).
 *
 * A personal access token goes as Basic auth with any user name (as git takes it). Reviewers are
 * identity ids (GUIDs): Azure DevOps takes no user names there. Pull requests have labels (tags)
 * and reviewers, no assignees.
 *
 * `lastgood log` lists the active pull requests into the branch, then the others closed since the
 * window (`searchCriteria.queryTimeRangeType=closed` with `minTime`: the host filters, so no page
 * before the window is read). A pull request has no update time: its creation stands in for it.
 * `completed` is merged: its `lastMergeCommit` is the commit the merge made on the branch, and its
 * `closedDate` when; `abandoned` is closed unmerged.
 */

const Identity = z.object({ id: z.string().optional(), uniqueName: z.string().optional(), displayName: z.string().optional() }).loose();
const PullRequest = z
  .object({
    pullRequestId: z.number(),
    title: z.string().optional(),
    description: z.string().optional(),
    sourceRefName: z.string(),
    targetRefName: z.string(),
    status: z.string().optional(),
    creationDate: z.string().optional(),
    closedDate: z.string().nullish(),
    lastMergeSourceCommit: z.object({ commitId: z.string() }).loose().nullish(),
    lastMergeCommit: z.object({ commitId: z.string() }).loose().nullish(),
    forkSource: z.object({}).loose().nullish(),
    reviewers: z.array(Identity).optional(),
    labels: z.array(z.object({ name: z.string().optional() }).loose()).optional(),
    repository: z.object({ webUrl: z.string().optional() }).loose().optional(),
  })
  .loose();
type PullRequest = z.output<typeof PullRequest>;
const PullRequestList = z.object({ value: z.array(PullRequest) }).loose();

const API_VERSION = '7.1';
const branch = (ref: string) => ref.replace(/^refs\/heads\//, '');

export function openAzureDevOps(opts: HostOpenOptions): ReviewHost {
  const { coordinates: at, credentials } = opts;
  const where = `${at.owner}/${at.repo}`;
  const http = createHostFetch({ apiBase: at.api, system: 'azure-devops', ...(opts.maxRetries !== undefined ? { maxRetries: opts.maxRetries } : {}), ...(opts.retryUnitMs !== undefined ? { retryUnitMs: opts.retryUnitMs } : {}), ...(opts.onWarning ? { onWarning: opts.onWarning } : {}) });
  if (credentials) registerSecret(credentials.secret);
  const repoApi = `${at.api}/${encodeURIComponent(at.owner)}/_apis/git/repositories/${encodeURIComponent(at.repo)}`;

  async function call<T>(what: string, method: string, path: string, schema: z.ZodType<T> | undefined, body?: unknown, query: Record<string, string> = {}): Promise<T> {
    const url = new URL(`${repoApi}${path}`);
    for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
    url.searchParams.set('api-version', API_VERSION);
    const response = await http.fetch(url, {
      method,
      headers: { accept: 'application/json', ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...(credentials ? { authorization: credentials.header } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await response.text();
    if (!response.ok) {
      let words = text.slice(0, 500);
      try {
        words = (JSON.parse(text) as { message?: string }).message ?? words;
      } catch {
        // not JSON (a sign-in page for a bad token)
      }
      throw hostFailure('azure-devops', `${what} on ${where}`, response.status, words, response.status === 401 || response.status === 403 ? `the token needs the "Code (Read & write)" scope on ${where}` : undefined);
    }
    if (!schema) return undefined as T;
    const parsed = schema.safeParse(text ? JSON.parse(text) : undefined);
    if (!parsed.success) throw new RemoteError('azure-devops', `${what} on ${where}: an answer lastgood cannot read (${parsed.error.issues[0]?.message ?? 'invalid'})`);
    return parsed.data;
  }

  const web = (p: PullRequest) => `${p.repository?.webUrl ?? at.web}/pullrequest/${p.pullRequestId}`;
  const toRequest = (p: PullRequest): HostRequest => ({
    number: p.pullRequestId,
    url: web(p),
    source: branch(p.sourceRefName),
    target: branch(p.targetRefName),
    title: p.title ?? '',
    body: p.description ?? '',
    labels: (p.labels ?? []).map((l) => l.name ?? ''),
    reviewers: (p.reviewers ?? []).flatMap((r) => [r.id, r.uniqueName].filter((x): x is string => Boolean(x))),
    assignees: [],
  });
  const byId = (n: number) => `/pullrequests/${n}`;

  /** One listing into `target`, $top at a time, until a short page. */
  const listPulls = async (what: string, target: string, criteria: Record<string, string>): Promise<PullRequest[]> => {
    const out: PullRequest[] = [];
    for (let skip = 0; ; skip += 100) {
      const page = await call(what, 'GET', '/pullrequests', PullRequestList, undefined, { ...criteria, 'searchCriteria.targetRefName': `refs/heads/${target}`, $top: '100', $skip: String(skip) });
      out.push(...page.value);
      if (page.value.length < 100) return out;
    }
  };
  const toReviewRequest = (p: PullRequest): ReviewRequest => {
    const state = p.status === 'completed' ? 'merged' : p.status === 'active' ? 'open' : 'closed';
    const closedAt = state === 'open' ? undefined : (p.closedDate ?? undefined);
    // an active pull request's lastMergeCommit is the trial merge Azure DevOps keeps, not on the branch
    const mergeCommit = state === 'merged' ? p.lastMergeCommit?.commitId : undefined;
    return {
      noun: 'pull request', number: p.pullRequestId, url: web(p), branch: branch(p.sourceRefName), title: p.title ?? '', state, createdAt: p.creationDate ?? '',
      ...(p.lastMergeSourceCommit?.commitId ? { head: p.lastMergeSourceCommit.commitId } : {}),
      ...(state === 'merged' && closedAt ? { mergedAt: closedAt } : {}), ...(closedAt ? { closedAt } : {}), ...(mergeCommit ? { mergeCommit } : {}),
    };
  };

  return {
    system: 'azure-devops',
    name: 'Azure DevOps',
    noun: 'pull request',
    coordinates: at,
    get requests() {
      return http.requests;
    },
    // "common Markdown conventions and GitHub-flavored extensions" (learn.microsoft.com/azure/devops/project/wiki/markdown-guidance)
    markdown: GITHUB_FLAVORED,
    checkCanOpen() {
      if (!credentials) throw new ConfigError('pull-request mode on Azure DevOps needs a personal access token with the "Code (Read & write)" scope: set repo.auth (e.g. auth: { tokenEnv: LASTGOOD_AZURE_DEVOPS_TOKEN })', opts.configFile ? { file: opts.configFile } : {});
    },
    async listOpen(target, prefix) {
      const out: HostRequest[] = [];
      for (let skip = 0; ; skip += 100) {
        const page = await call('listing open pull requests', 'GET', '/pullrequests', PullRequestList, undefined, { 'searchCriteria.status': 'active', 'searchCriteria.targetRefName': `refs/heads/${target}`, $top: '100', $skip: String(skip) });
        out.push(...page.value.filter((p) => !p.forkSource).map(toRequest).filter((p) => p.target === target && p.source.startsWith(prefix)));
        if (page.value.length < 100) return out;
      }
    },
    async listRequests(query) {
      const open = await listPulls('listing active pull requests', query.base, { 'searchCriteria.status': 'active' });
      const closed = await listPulls('listing pull requests', query.base, {
        'searchCriteria.status': 'all',
        ...(query.since ? { 'searchCriteria.queryTimeRangeType': 'closed', 'searchCriteria.minTime': query.since.toISOString() } : {}),
      });
      const seen = new Set<number>();
      const out: ReviewRequest[] = [];
      for (const p of [...open, ...closed]) {
        // lastgood's branches are in the repository itself: a fork's branch of the same name is not one
        if (seen.has(p.pullRequestId) || branch(p.targetRefName) !== query.base || !branch(p.sourceRefName).startsWith(query.branchPrefix) || p.forkSource) continue;
        seen.add(p.pullRequestId);
        out.push(toReviewRequest(p));
      }
      return newestUpdateFirst(out.filter((r) => inLogWindow(r, query.since)));
    },
    async create(req, warn) {
      if (req.assignees.length) warn(`Azure DevOps pull requests have no assignees: ${req.assignees.join(', ')} not assigned (add them as reviewers)`);
      const pull = await call(`opening the pull request from ${req.source}`, 'POST', '/pullrequests', PullRequest, {
        sourceRefName: `refs/heads/${req.source}`, targetRefName: `refs/heads/${req.target}`, title: req.title, description: req.body, isDraft: req.draft,
        ...(req.labels.length ? { labels: req.labels.map((name) => ({ name })) } : {}),
        ...(req.reviewers.length ? { reviewers: req.reviewers.map((id) => ({ id })) } : {}),
      });
      return toRequest(pull);
    },
    // TF401179: an active pull request for the source and target branch already exists
    settledByFinding: (error) => error instanceof RemoteError && error.status === 409,
    async update(pr, change) {
      await call(`updating pull request !${pr.number}`, 'PATCH', byId(pr.number), PullRequest, { title: change.title, description: change.body });
    },
    async comment(pr, body) {
      await call(`commenting on pull request !${pr.number}`, 'POST', `/pullRequests/${pr.number}/threads`, undefined, { comments: [{ parentCommentId: 0, content: body, commentType: 'text' }], status: 'closed' });
    },
    async close(pr) {
      await call(`abandoning pull request !${pr.number}`, 'PATCH', byId(pr.number), PullRequest, { status: 'abandoned' });
    },
    async decorate(pr, missing) {
      for (const name of missing.labels) await call(`labelling pull request !${pr.number}`, 'POST', `/pullRequests/${pr.number}/labels`, undefined, { name });
      for (const id of missing.reviewers) await call(`requesting a review on pull request !${pr.number}`, 'PUT', `/pullRequests/${pr.number}/reviewers/${encodeURIComponent(id)}`, undefined, { vote: 0 });
    },
    commitUrl: (sha) => `${at.web}/commit/${sha}`,
  };
}
