import { createBitbucketCloudClient } from '@coderabbitai/bitbucket/cloud';
import { ConfigError, RemoteError, registerSecret } from '../../errors.ts';
import { createHostFetch } from '../host-http.ts';
import { hostFailure, type HostOpenOptions, type HostRequest, type ReviewHost } from '../review-request.ts';

/**
 * Bitbucket Cloud (API 2.0) through @coderabbitai/bitbucket: openapi-fetch over types generated from
 * Atlassian's own description (swagger.v3.json), given the shared host fetch (host-http.ts).
 *
 * Bitbucket pull requests have reviewers but no labels and no assignees: those are said once, as a
 * warning, when the request is opened. Reviewers are named by Atlassian account id or `{uuid}`
 * (user names are not accepted by the API since 2019).
 *
 * Credentials: a repository/project/workspace access token goes as Bearer (the git user
 * `x-token-auth`); an app password or an API token with its user name (`repo.auth.username`) as
 * Basic auth, for git and the API alike.
 */

interface Account {
  uuid?: string;
  account_id?: string;
  nickname?: string;
}
interface BitbucketPull {
  id?: number;
  title?: string;
  description?: string;
  summary?: { raw?: string };
  links?: { html?: { href?: string } };
  source?: { branch?: { name?: string } };
  destination?: { branch?: { name?: string } };
  reviewers?: Account[];
}

const ids = (a: Account) => [a.account_id, a.uuid, a.nickname].filter((x): x is string => Boolean(x));

export function openBitbucketCloud(opts: HostOpenOptions): ReviewHost {
  const { coordinates: at, credentials } = opts;
  const where = `${at.owner}/${at.repo}`;
  const http = createHostFetch({ apiBase: at.api, system: 'bitbucket', ...(opts.maxRetries !== undefined ? { maxRetries: opts.maxRetries } : {}), ...(opts.retryUnitMs !== undefined ? { retryUnitMs: opts.retryUnitMs } : {}), ...(opts.onWarning ? { onWarning: opts.onWarning } : {}) });
  if (credentials) registerSecret(credentials.secret);
  const authorization = !credentials ? undefined : credentials.username === 'x-token-auth' || credentials.header.startsWith('Bearer ') ? `Bearer ${credentials.secret}` : credentials.header;
  const client = createBitbucketCloudClient({ baseUrl: at.api, fetch: http.fetch, headers: { accept: 'application/json', ...(authorization ? { authorization } : {}) } });
  const path = { workspace: at.owner, repo_slug: at.repo };

  const check = async <T>(what: string, answer: Promise<{ data?: unknown; error?: unknown; response: Response }>): Promise<T> => {
    let result;
    try {
      result = await answer;
    } catch (error) {
      if (error instanceof RemoteError) throw error;
      throw new RemoteError('bitbucket', `${what} on ${where}: ${(error as Error)?.message ?? String(error)}`, { cause: error });
    }
    if (result.response.ok) return result.data as T;
    const body = result.error as { error?: { message?: string; detail?: string; fields?: Record<string, string[]> } } | undefined;
    const words = [body?.error?.message, body?.error?.detail, ...Object.entries(body?.error?.fields ?? {}).map(([k, v]) => `${k}: ${v.join(', ')}`)].filter(Boolean).join(': ');
    const status = result.response.status;
    throw hostFailure('bitbucket', `${what} on ${where}`, status, words, status === 403 || status === 404 ? `the credentials need the "pullrequest:write" and "repository:write" permissions on ${where}` : undefined);
  };

  const toRequest = (p: BitbucketPull): HostRequest => ({
    number: p.id ?? 0,
    url: p.links?.html?.href ?? `${at.web}/pull-requests/${p.id}`,
    source: p.source?.branch?.name ?? '',
    target: p.destination?.branch?.name ?? '',
    title: p.title ?? '',
    body: p.description ?? p.summary?.raw ?? '',
    labels: [],
    reviewers: (p.reviewers ?? []).flatMap(ids),
    assignees: [],
    extra: { reviewers: p.reviewers ?? [] },
  });
  const account = (name: string) => (/^\{.*\}$/.test(name) ? { type: 'user', uuid: name } : { type: 'user', account_id: name });
  const unsupported = (req: { labels: string[]; assignees: string[] }, warn: (m: string) => void) => {
    if (req.labels.length) warn(`Bitbucket pull requests have no labels: ${req.labels.join(', ')} not applied`);
    if (req.assignees.length) warn(`Bitbucket pull requests have no assignees: ${req.assignees.join(', ')} not assigned (add them as reviewers)`);
  };

  return {
    system: 'bitbucket',
    name: 'Bitbucket Cloud',
    noun: 'pull request',
    coordinates: at,
    get requests() {
      return http.requests;
    },
    checkCanOpen() {
      if (!credentials) throw new ConfigError('pull-request mode on Bitbucket Cloud needs credentials: set repo.auth to an access token (tokenEnv), or an app password or API token with its user name (username + passwordEnv)', opts.configFile ? { file: opts.configFile } : {});
    },
    async listOpen(target, prefix) {
      const out: HostRequest[] = [];
      let page = await check<{ values?: BitbucketPull[]; next?: string }>('listing open pull requests', client.GET('/repositories/{workspace}/{repo_slug}/pullrequests', { params: { path, query: { state: 'OPEN' } } }));
      for (;;) {
        out.push(...(page.values ?? []).map(toRequest).filter((p) => p.target === target && p.source.startsWith(prefix)));
        if (!page.next) return out;
        // the next page is a link Bitbucket gives; it stays on the API's origin (the host fetch sends credentials nowhere else)
        const response = await http.fetch(page.next, { headers: { accept: 'application/json', ...(authorization ? { authorization } : {}) } });
        page = await check<{ values?: BitbucketPull[]; next?: string }>('listing open pull requests', Promise.resolve({ data: response.ok ? await response.json() : undefined, error: response.ok ? undefined : await response.json().catch(() => undefined), response }));
      }
    },
    async create(req, warn) {
      unsupported(req, warn);
      const pull = await check<BitbucketPull>(`opening the pull request from ${req.source}`, client.POST('/repositories/{workspace}/{repo_slug}/pullrequests', {
        params: { path },
        body: { type: 'pullrequest', title: req.title, description: req.body, source: { branch: { name: req.source } }, destination: { branch: { name: req.target } }, close_source_branch: true, draft: req.draft, reviewers: req.reviewers.map(account) } as never,
      }));
      return toRequest(pull);
    },
    settledByFinding: (error) => error instanceof RemoteError && (error.status === 400 || error.status === 409),
    async update(pr, change) {
      await check(`updating pull request #${pr.number}`, client.PUT('/repositories/{workspace}/{repo_slug}/pullrequests/{pull_request_id}', { params: { path: { ...path, pull_request_id: pr.number } }, body: { type: 'pullrequest', title: change.title, description: change.body } as never }));
    },
    async comment(pr, body) {
      await check(`commenting on pull request #${pr.number}`, client.POST('/repositories/{workspace}/{repo_slug}/pullrequests/{pull_request_id}/comments', { params: { path: { ...path, pull_request_id: pr.number } }, body: { type: 'pullrequest_comment', content: { raw: body } } as never }));
    },
    async close(pr) {
      await check(`declining pull request #${pr.number}`, client.POST('/repositories/{workspace}/{repo_slug}/pullrequests/{pull_request_id}/decline', { params: { path: { ...path, pull_request_id: pr.number } } }));
    },
    async decorate(pr, missing) {
      if (!missing.reviewers.length) return;
      // the reviewer list is replaced by a PUT: the ones the request has go with the new ones
      const has = ((pr.extra?.reviewers as Account[] | undefined) ?? []).map((a) => (a.uuid ? { type: 'user', uuid: a.uuid } : { type: 'user', account_id: a.account_id }));
      await check(`requesting reviews on pull request #${pr.number}`, client.PUT('/repositories/{workspace}/{repo_slug}/pullrequests/{pull_request_id}', {
        params: { path: { ...path, pull_request_id: pr.number } },
        body: { type: 'pullrequest', title: pr.title, reviewers: [...has, ...missing.reviewers.map(account)] } as never,
      }));
    },
    commitUrl: (sha) => `${at.web}/commits/${sha}`,
  };
}
