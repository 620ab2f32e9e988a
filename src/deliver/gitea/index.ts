import { giteaApi } from 'gitea-js';
import { ConfigError, RemoteError, registerSecret } from '../../errors.ts';
import { createHostFetch } from '../host-http.ts';
import { hostFailure, type HostOpenOptions, type HostRequest, type ReviewHost } from '../review-request.ts';

/**
 * Gitea and Forgejo (API v1; Forgejo keeps Gitea's API) through gitea-js, the client generated from
 * Gitea's own swagger (templates/swagger/v1_json.tmpl), typed, fetch-based: it is given the shared
 * host fetch (host-http.ts) for Retry-After and credentials that stay on the configured host.
 *
 * A pull request takes its assignees in the create call; labels (by name: IssueLabelsOption takes
 * names) and review requests are added after, only those the request lacks.
 */

interface GiteaUser {
  login?: string;
}
interface GiteaPull {
  number?: number;
  html_url?: string;
  title?: string;
  body?: string;
  head?: { ref?: string };
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

  return {
    system: 'gitea',
    name: 'Gitea',
    noun: 'pull request',
    coordinates: at,
    get requests() {
      return http.requests;
    },
    checkCanOpen() {
      if (!credentials) throw new ConfigError('pull-request mode on Gitea/Forgejo needs an access token: set repo.auth (e.g. auth: { tokenEnv: LASTGOOD_GITEA_TOKEN }) to a token with the write:repository and write:issue scopes', opts.configFile ? { file: opts.configFile } : {});
    },
    async listOpen(target, prefix) {
      const out: HostRequest[] = [];
      for (let page = 1; ; page++) {
        const pulls = (await call('listing open pull requests', () => api.repos.repoListPullRequests(at.owner, at.repo, { state: 'open', limit: 50, page }))) as GiteaPull[];
        out.push(...pulls.map(toRequest).filter((p) => p.target === target && p.source.startsWith(prefix)));
        if (pulls.length < 50) return out;
      }
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
