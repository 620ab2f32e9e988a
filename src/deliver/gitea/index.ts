import { giteaApi } from 'gitea-js';
import { ConfigError, RemoteError, registerSecret } from '../../errors.ts';
import { createHostFetch } from '../host-http.ts';
import type { ReviewRequest } from '../../repo/types.ts';
import { GITHUB_FLAVORED } from '../../revert/markup.ts';
import { hostFailure, inLogWindow, newestUpdateFirst, type HostOpenOptions, type HostRequest, type ReviewHost } from '../review-request.ts';

/**
 * Gitea and Forgejo (API v1; Forgejo keeps Gitea's API) through gitea-js, the client generated from
 * Gitea's own swagger (templates/swagger/v1_json.tmpl), typed, fetch-based: it is given the shared
 * host fetch (host-http.ts) for Retry-After and credentials that stay on the configured host.
 *
 * A pull request takes its assignees in the create call; labels (by name: IssueLabelsOption takes
 * names) and review requests are added after, only those the request lacks.
 *
 * `lastgood log` lists the open pull requests, then the closed and merged ones most recently
 * updated first (`sort=recentupdate`: `issue.updated_unix DESC`, Gitea's models/issues/pull_list.go)
 * until a page ends before the window. Gitea 1.22 filters the list by no base branch: that is
 * done here, as for the open ones.
 */

interface GiteaUser {
  login?: string;
}
interface GiteaPull {
  number?: number;
  html_url?: string;
  title?: string;
  body?: string;
  /** open | closed (a merged pull request is closed, with `merged`) */
  state?: string;
  merged?: boolean;
  merged_at?: string | null;
  /** the commit the merge made on the base branch (a fast-forward: the head) */
  merge_commit_sha?: string | null;
  created_at?: string;
  updated_at?: string;
  closed_at?: string | null;
  head?: { ref?: string; sha?: string; repo?: { full_name?: string } | null };
  base?: { ref?: string };
  labels?: Array<{ name?: string }>;
  assignees?: GiteaUser[] | null;
  requested_reviewers?: GiteaUser[] | null;
}

/** What gitea-js throws for an answer that is not 2xx: the Response with `error` = Gitea's body. */
interface GiteaFailure {
  status: number;
  error?: { message?: string; errors?: string[] } | null;
}
const isFailure = (e: unknown): e is GiteaFailure => typeof e === 'object' && e !== null && typeof (e as { status?: unknown }).status === 'number';

export function openGitea(opts: HostOpenOptions): ReviewHost {
  const { coordinates: at, credentials } = opts;
  const where = `${at.owner}/${at.repo}`;
  const http = createHostFetch({ apiBase: at.api, system: 'gitea', ...(opts.maxRetries !== undefined ? { maxRetries: opts.maxRetries } : {}), ...(opts.retryUnitMs !== undefined ? { retryUnitMs: opts.retryUnitMs } : {}), ...(opts.onWarning ? { onWarning: opts.onWarning } : {}) });
  if (credentials) registerSecret(credentials.secret);
  // a token goes as Bearer (gitea-js's securityWorker); a user name and password as Basic auth
  const api = giteaApi(at.api.replace(/\/api\/v1$/, ''), {
    customFetch: http.fetch,
    ...(credentials?.kind === 'token' ? { token: credentials.secret } : {}),
    ...(credentials?.kind === 'password' ? { baseApiParams: { headers: { authorization: credentials.header } } } : {}),
  });

  const call = async <T>(what: string, fn: () => Promise<{ data: T }>): Promise<T> => {
    try {
      return (await fn()).data;
    } catch (error) {
      if (error instanceof RemoteError) throw error;
      if (isFailure(error)) {
        const words = [error.error?.message, ...(error.error?.errors ?? [])].filter(Boolean).join(': ');
        const hint = error.status === 403 || error.status === 404 ? `the token needs the "write:repository" and "write:issue" scopes on ${where}` : undefined;
        throw hostFailure('gitea', `${what} on ${where}`, error.status, words, hint);
      }
      throw new RemoteError('gitea', `${what} on ${where}: ${(error as Error)?.message ?? String(error)}`, { cause: error });
    }
  };

  const toRequest = (p: GiteaPull): HostRequest => ({
    number: p.number ?? 0,
    url: p.html_url ?? `${at.web}/pulls/${p.number}`,
    source: p.head?.ref ?? '',
    target: p.base?.ref ?? '',
    title: p.title ?? '',
    body: p.body ?? '',
    labels: (p.labels ?? []).map((l) => l.name ?? ''),
    reviewers: (p.requested_reviewers ?? []).map((u) => u.login ?? ''),
    assignees: (p.assignees ?? []).map((u) => u.login ?? ''),
  });

  /** One listing, page by page (Gitea's page size is capped at 50, its MAX_RESPONSE_ITEMS default), until a short page or `enough` says so. */
  const listPulls = async (what: string, query: { state: 'open' | 'closed'; sort?: 'recentupdate' }, enough: (page: GiteaPull[]) => boolean = () => false): Promise<GiteaPull[]> => {
    const out: GiteaPull[] = [];
    for (let page = 1; ; page++) {
      const pulls = (await call(what, () => api.repos.repoListPullRequests(at.owner, at.repo, { ...query, limit: 50, page }))) as GiteaPull[];
      out.push(...pulls);
      if (pulls.length < 50 || enough(pulls)) return out;
    }
  };

  /** a pull request from another repository than this one: never lastgood's */
  const fromFork = (p: GiteaPull) => Boolean(p.head?.repo?.full_name) && p.head!.repo!.full_name!.toLowerCase() !== where.toLowerCase();

  const toReviewRequest = (p: GiteaPull): ReviewRequest => {
    const state = p.merged ? 'merged' : p.state === 'open' ? 'open' : 'closed';
    return {
      noun: 'pull request', number: p.number ?? 0, url: p.html_url ?? `${at.web}/pulls/${p.number}`, branch: p.head?.ref ?? '', title: p.title ?? '', state, createdAt: p.created_at ?? '',
      ...(p.head?.sha ? { head: p.head.sha } : {}), ...(p.updated_at ? { updatedAt: p.updated_at } : {}),
      ...(state === 'merged' && p.merged_at ? { mergedAt: p.merged_at } : {}), ...(state !== 'open' && p.closed_at ? { closedAt: p.closed_at } : {}),
      ...(state === 'merged' && p.merge_commit_sha ? { mergeCommit: p.merge_commit_sha } : {}),
    };
  };

  return {
    system: 'gitea',
    name: 'Gitea',
    noun: 'pull request',
    coordinates: at,
    get requests() {
      return http.requests;
    },
    // goldmark with GFM tables and sanitised HTML (docs.gitea.com/usage/markdown)
    markdown: GITHUB_FLAVORED,
    checkCanOpen() {
      if (!credentials) throw new ConfigError('pull-request mode on Gitea/Forgejo needs an access token: set repo.auth (e.g. auth: { tokenEnv: LASTGOOD_GITEA_TOKEN }) to a token with the write:repository and write:issue scopes', opts.configFile ? { file: opts.configFile } : {});
    },
    async listOpen(target, prefix) {
      const pulls = await listPulls('listing open pull requests', { state: 'open' });
      return pulls.filter((p) => !fromFork(p)).map(toRequest).filter((p) => p.target === target && p.source.startsWith(prefix));
    },
    async listRequests(query) {
      const since = query.since?.getTime();
      const open = await listPulls('listing open pull requests', { state: 'open' });
      // most recently updated first: a page that ends before the window ends the listing
      const closed = await listPulls('listing closed pull requests', { state: 'closed', sort: 'recentupdate' }, (page) => since !== undefined && Date.parse(page.at(-1)?.updated_at ?? '') < since);
      const seen = new Set<number>();
      const out: ReviewRequest[] = [];
      // lastgood's branches are in the repository itself: a fork's branch of the same name is not one
      for (const p of [...open, ...closed]) {
        if (p.number === undefined || seen.has(p.number) || p.base?.ref !== query.base || !p.head?.ref?.startsWith(query.branchPrefix) || fromFork(p)) continue;
        seen.add(p.number);
        out.push(toReviewRequest(p));
      }
      return newestUpdateFirst(out.filter((r) => inLogWindow(r, query.since)));
    },
    async create(req) {
      const pull = (await call(`opening the pull request from ${req.source}`, () =>
        api.repos.repoCreatePullRequest(at.owner, at.repo, { head: req.source, base: req.target, title: req.draft ? `WIP: ${req.title}` : req.title, body: req.body, ...(req.assignees.length ? { assignees: req.assignees } : {}) }),
      )) as GiteaPull;
      return toRequest(pull);
    },
    // Gitea answers 409 when an open pull request has the same head and base
    settledByFinding: (error) => error instanceof RemoteError && error.status === 409,
    async update(pr, change) {
      await call(`updating pull request #${pr.number}`, () => api.repos.repoEditPullRequest(at.owner, at.repo, pr.number, { title: change.title, body: change.body }));
    },
    async comment(pr, body) {
      await call(`commenting on pull request #${pr.number}`, () => api.repos.issueCreateComment(at.owner, at.repo, pr.number, { body }));
    },
    async close(pr) {
      await call(`closing pull request #${pr.number}`, () => api.repos.repoEditPullRequest(at.owner, at.repo, pr.number, { state: 'closed' }));
    },
    async decorate(pr, missing, warn) {
      if (missing.labels.length) {
        const labels = (await call(`labelling pull request #${pr.number}`, () => api.repos.issueAddLabel(at.owner, at.repo, pr.number, { labels: missing.labels }))) as Array<{ name?: string }>;
        const absent = missing.labels.filter((l) => !labels.some((x) => x.name === l));
        if (absent.length) warn(`could not label #${pr.number} with ${absent.join(', ')}: no such label in ${where} (create it once in the repository's labels)`);
      }
      if (missing.assignees.length) {
        await call(`assigning pull request #${pr.number}`, () => api.repos.repoEditPullRequest(at.owner, at.repo, pr.number, { assignees: [...pr.assignees, ...missing.assignees] }));
      }
      if (missing.reviewers.length) {
        try {
          await call(`requesting reviews on pull request #${pr.number}`, () => api.repos.repoCreatePullReviewRequests(at.owner, at.repo, pr.number, { reviewers: missing.reviewers }));
        } catch (error) {
          // a reviewer who cannot review (no access, the token's own user) must not lose the revert
          if (!(error instanceof RemoteError) || error.status !== 422) throw error;
          warn(`could not request reviews from ${missing.reviewers.join(', ')} on #${pr.number}: ${error.message}`);
        }
      }
    },
    async autoMerge(pr, warn) {
      try {
        await call(`merging pull request #${pr.number}`, () => api.repos.repoMergePullRequest(at.owner, at.repo, pr.number, { Do: 'squash', merge_when_checks_succeed: true, delete_branch_after_merge: true }));
      } catch (error) {
        warn(`auto-merge of #${pr.number} refused: ${(error as Error).message}`);
      }
    },
    commitUrl: (sha) => `${at.web}/commit/${sha}`,
  };
}
