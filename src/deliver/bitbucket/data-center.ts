import { createBitbucketServerClient } from '@coderabbitai/bitbucket/server';
import { ConfigError, RemoteError, registerSecret } from '../../errors.ts';
import { createHostFetch } from '../host-http.ts';
import { bitbucketAnswer, type ClientAnswer } from './answer.ts';
import type { ReviewRequest } from '../../repo/types.ts';
import { COMMONMARK_WITHOUT_HTML } from '../../revert/markup.ts';
import { inLogWindow, newestUpdateFirst, type HostOpenOptions, type HostRequest, type ReviewHost } from '../review-request.ts';

/**
 * Bitbucket Data Center (REST 1.0, "latest") through @coderabbitai/bitbucket's server client
 * (openapi-fetch over types generated from Atlassian's 9.2 description).
 *
 * A pull request is changed only at the version read (Data Center's optimistic lock): every PUT
 * and the decline send the version the request was listed with. Reviewers are user slugs; Data
 * Center has no labels or assignees on pull requests. An HTTP access token goes as Bearer (git
 * over HTTPS takes it too, with `repo.auth.scheme: bearer`); a user name and password as Basic.
 *
 * `lastgood log` lists every state (`state=ALL`) into the branch, narrowed to lastgood's own
 * requests by `filterText` (a title or description that contains it: every description lastgood
 * writes carries its `<!-- lastgood:… -->` marker). The pages are not cut at the window: `NEWEST`
 * is "newer pull requests first" (PullRequestOrder's javadoc), not said to be by update, so a
 * request opened long ago and merged yesterday may come late. The merge commit is in the pull
 * request's `properties.mergeCommit` (what Bitbucket sends, and its pr:merged webhook documents;
 * the 9.2 description does not name `properties`); one merged by a push of its commits has none,
 * and its head stands for it (on the branch, as a fast-forward's).
 */

interface ServerPull {
  id?: number;
  version?: number;
  title?: string;
  description?: string;
  /** OPEN | MERGED | DECLINED */
  state?: string;
  /** epoch milliseconds */
  createdDate?: number;
  updatedDate?: number;
  closedDate?: number;
  fromRef?: { id?: string; displayId?: string; latestCommit?: string; repository?: { slug?: string; project?: { key?: string } } };
  toRef?: { id?: string; displayId?: string };
  properties?: { mergeCommit?: { id?: string } };
  reviewers?: ReadonlyArray<{ user?: { name?: string; slug?: string } }>;
  links?: { self?: ReadonlyArray<{ href?: string }> };
}

const branch = (ref: { id?: string; displayId?: string } | undefined) => (ref?.id ?? '').replace(/^refs\/heads\//, '') || ref?.displayId || '';

export function openBitbucketDataCenter(opts: HostOpenOptions): ReviewHost {
  const { coordinates: at, credentials } = opts;
  const where = `${at.owner}/${at.repo}`;
  const http = createHostFetch({ apiBase: at.api, system: 'bitbucket', ...(opts.maxRetries !== undefined ? { maxRetries: opts.maxRetries } : {}), ...(opts.retryUnitMs !== undefined ? { retryUnitMs: opts.retryUnitMs } : {}), ...(opts.onWarning ? { onWarning: opts.onWarning } : {}) });
  if (credentials) registerSecret(credentials.secret);
  const bearer = credentials && (credentials.header.startsWith('Bearer ') || (credentials.kind === 'token' && credentials.username === 'lastgood'));
  const authorization = !credentials ? undefined : bearer ? `Bearer ${credentials.secret}` : credentials.header;
  const client = createBitbucketServerClient({ baseUrl: at.api, fetch: http.fetch, headers: { accept: 'application/json', ...(authorization ? { authorization } : {}) } });
  const path = { projectKey: at.owner, repositorySlug: at.repo };

  const check = <T>(what: string, answer: ClientAnswer): Promise<T> => bitbucketAnswer<T>(what, where, answer, (error) => ((error as { errors?: Array<{ message?: string }> } | undefined)?.errors ?? []).map((e) => e.message).filter(Boolean).join('; '), (status) => (status === 401 || status === 403 ? `the token needs the "Repository write" permission on ${where}` : undefined));


  const toRequest = (p: ServerPull): HostRequest => ({
    number: p.id ?? 0,
    url: p.links?.self?.[0]?.href ?? `${at.web}/pull-requests/${p.id}`,
    source: branch(p.fromRef),
    target: branch(p.toRef),
    title: p.title ?? '',
    body: p.description ?? '',
    labels: [],
    reviewers: (p.reviewers ?? []).map((r) => r.user?.slug ?? r.user?.name ?? ''),
    assignees: [],
    extra: { version: p.version ?? 0 },
  });
  const ref = (name: string) => ({ id: `refs/heads/${name}`, repository: { slug: at.repo, project: { key: at.owner } } });
  const reviewers = (names: string[]) => names.map((name) => ({ user: { name } }));
  const version = (pr: HostRequest) => (pr.extra?.version as number | undefined) ?? 0;

  /** One listing, page by page, until the last. */
  const listPulls = async (what: string, query: Record<string, string | number>): Promise<ServerPull[]> => {
    const out: ServerPull[] = [];
    for (let start = 0; ;) {
      const page = await check<{ values?: ServerPull[]; isLastPage?: boolean; nextPageStart?: number }>(what, client.GET('/api/latest/projects/{projectKey}/repos/{repositorySlug}/pull-requests', { params: { path, query: { ...query, start, limit: 100 } } }));
      out.push(...(page.values ?? []));
      if (page.isLastPage !== false || page.nextPageStart === undefined) return out;
      start = page.nextPageStart;
    }
  };
  const isoOf = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());
  const toReviewRequest = (p: ServerPull): ReviewRequest => {
    const state = p.state === 'MERGED' ? 'merged' : p.state === 'OPEN' ? 'open' : 'closed';
    const [updatedAt, closedAt] = [isoOf(p.updatedDate), state === 'open' ? undefined : isoOf(p.closedDate)];
    // merged by a push of its commits (Bitbucket marks the request merged): its head is on the branch
    const mergeCommit = state === 'merged' ? (p.properties?.mergeCommit?.id ?? p.fromRef?.latestCommit) : undefined;
    return {
      noun: 'pull request', number: p.id ?? 0, url: p.links?.self?.[0]?.href ?? `${at.web}/pull-requests/${p.id}`, branch: branch(p.fromRef), title: p.title ?? '', state,
      createdAt: isoOf(p.createdDate) ?? '', ...(p.fromRef?.latestCommit ? { head: p.fromRef.latestCommit } : {}), ...(updatedAt ? { updatedAt } : {}),
      ...(state === 'merged' && closedAt ? { mergedAt: closedAt } : {}), ...(closedAt ? { closedAt } : {}), ...(mergeCommit ? { mergeCommit } : {}),
    };
  };
  // lastgood's branches are in the repository itself: a fork's branch of the same name is not one
  const fromFork = (p: ServerPull) => {
    const repo = p.fromRef?.repository;
    return Boolean(repo?.slug) && (repo!.slug!.toLowerCase() !== at.repo.toLowerCase() || (repo!.project?.key ?? at.owner).toLowerCase() !== at.owner.toLowerCase());
  };

  return {
    system: 'bitbucket',
    name: 'Bitbucket Data Center',
    noun: 'pull request',
    coordinates: at,
    get requests() {
      return http.requests;
    },
    // CommonMark with GFM tables, every HTML tag escaped (revert/markup.ts COMMONMARK_WITHOUT_HTML)
    markdown: COMMONMARK_WITHOUT_HTML,
    checkCanOpen() {
      if (!credentials) throw new ConfigError('pull-request mode on Bitbucket Data Center needs credentials: set repo.auth to an HTTP access token (tokenEnv, with scheme: bearer)', opts.configFile ? { file: opts.configFile } : {});
    },
    async listOpen(target, prefix) {
      const pulls = await listPulls('listing open pull requests', { state: 'OPEN', at: `refs/heads/${target}`, direction: 'INCOMING' });
      return pulls.filter((p) => !fromFork(p)).map(toRequest).filter((p) => p.target === target && p.source.startsWith(prefix));
    },
    async listRequests(query) {
      const pulls = await listPulls('listing pull requests', { state: 'ALL', at: `refs/heads/${query.base}`, direction: 'INCOMING', filterText: 'lastgood', order: 'NEWEST' });
      const ours = pulls.filter((p) => branch(p.toRef) === query.base && branch(p.fromRef).startsWith(query.branchPrefix) && !fromFork(p));
      return newestUpdateFirst(ours.map(toReviewRequest).filter((r) => inLogWindow(r, query.since)));
    },
    async create(req, warn) {
      if (req.labels.length) warn(`Bitbucket pull requests have no labels: ${req.labels.join(', ')} not applied`);
      if (req.assignees.length) warn(`Bitbucket pull requests have no assignees: ${req.assignees.join(', ')} not assigned (add them as reviewers)`);
      const pull = await check<ServerPull>(`opening the pull request from ${req.source}`, client.POST('/api/latest/projects/{projectKey}/repos/{repositorySlug}/pull-requests', {
        params: { path },
        body: { title: req.title, description: req.body, fromRef: ref(req.source), toRef: ref(req.target), draft: req.draft, reviewers: reviewers(req.reviewers) } as never,
      }));
      return toRequest(pull);
    },
    // DuplicatePullRequestException
    settledByFinding: (error) => error instanceof RemoteError && error.status === 409,
    async update(pr, change) {
      const updated = await check<ServerPull>(`updating pull request #${pr.number}`, client.PUT('/api/latest/projects/{projectKey}/repos/{repositorySlug}/pull-requests/{pullRequestId}', {
        params: { path: { ...path, pullRequestId: String(pr.number) } },
        body: { version: version(pr), title: change.title, description: change.body, reviewers: reviewers(pr.reviewers) } as never,
      }));
      pr.extra = { ...pr.extra, version: updated.version };
    },
    async comment(pr, body) {
      await check(`commenting on pull request #${pr.number}`, client.POST('/api/latest/projects/{projectKey}/repos/{repositorySlug}/pull-requests/{pullRequestId}/comments', { params: { path: { ...path, pullRequestId: String(pr.number) } }, body: { text: body } as never }));
    },
    async close(pr) {
      await check(`declining pull request #${pr.number}`, client.POST('/api/latest/projects/{projectKey}/repos/{repositorySlug}/pull-requests/{pullRequestId}/decline', { params: { path: { ...path, pullRequestId: String(pr.number) }, query: { version: String(version(pr)) } } as never }));
    },
    async decorate(pr, missing) {
      if (!missing.reviewers.length) return;
      const updated = await check<ServerPull>(`requesting reviews on pull request #${pr.number}`, client.PUT('/api/latest/projects/{projectKey}/repos/{repositorySlug}/pull-requests/{pullRequestId}', {
        params: { path: { ...path, pullRequestId: String(pr.number) } },
        body: { version: version(pr), title: pr.title, description: pr.body, reviewers: reviewers([...pr.reviewers, ...missing.reviewers]) } as never,
      }));
      pr.extra = { ...pr.extra, version: updated.version };
    },
    commitUrl: (sha) => `${at.web}/commits/${sha}`,
  };
}
