import { createBitbucketCloudClient } from '@coderabbitai/bitbucket/cloud';
import { ConfigError, RemoteError, registerSecret } from '../../errors.ts';
import { createHostFetch } from '../host-http.ts';
import { bitbucketAnswer, type ClientAnswer } from './answer.ts';
import type { ReviewRequest } from '../../repo/types.ts';
import { PYTHON_MARKDOWN } from '../../revert/markup.ts';
import { inLogWindow, newestUpdateFirst, type HostOpenOptions, type HostRequest, type ReviewHost } from '../review-request.ts';

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
 *
 * `lastgood log` lists the open pull requests, then the merged, declined and superseded ones most
 * recently updated first (`sort=-updated_on`, Bitbucket's "filtering and sorting" that every
 * collection takes, though the description names it only on some) until a page ends before the
 * window. Two things Bitbucket Cloud does not tell in a pull request: full commit hashes (its
 * `commit.hash` and `merge_commit.hash` are abbreviated to 12 digits), looked up once each
 * (GET …/commit/{hash}), and when it was merged or declined (no `closed_on`; `updated_on` moves
 * with every comment), left out.
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
  /** OPEN | MERGED | DECLINED | SUPERSEDED */
  state?: string;
  created_on?: string;
  updated_on?: string;
  source?: { branch?: { name?: string }; commit?: { hash?: string } | null; repository?: { full_name?: string } | null };
  destination?: { branch?: { name?: string } };
  merge_commit?: { hash?: string } | null;
  reviewers?: Account[];
}
type PullPage = { values?: BitbucketPull[]; next?: string };

const ids = (a: Account) => [a.account_id, a.uuid, a.nickname].filter((x): x is string => Boolean(x));

export function openBitbucketCloud(opts: HostOpenOptions): ReviewHost {
  const { coordinates: at, credentials } = opts;
  const where = `${at.owner}/${at.repo}`;
  const http = createHostFetch({ apiBase: at.api, system: 'bitbucket', ...(opts.maxRetries !== undefined ? { maxRetries: opts.maxRetries } : {}), ...(opts.retryUnitMs !== undefined ? { retryUnitMs: opts.retryUnitMs } : {}), ...(opts.onWarning ? { onWarning: opts.onWarning } : {}) });
  if (credentials) registerSecret(credentials.secret);
  const authorization = !credentials ? undefined : credentials.username === 'x-token-auth' || credentials.header.startsWith('Bearer ') ? `Bearer ${credentials.secret}` : credentials.header;
  const client = createBitbucketCloudClient({ baseUrl: at.api, fetch: http.fetch, headers: { accept: 'application/json', ...(authorization ? { authorization } : {}) } });
  const path = { workspace: at.owner, repo_slug: at.repo };

  const check = <T>(what: string, answer: ClientAnswer): Promise<T> => bitbucketAnswer<T>(what, where, answer, (error) => {
    const body = error as { error?: { message?: string; detail?: string; fields?: Record<string, string[]> } } | undefined;
    return [body?.error?.message, body?.error?.detail, ...Object.entries(body?.error?.fields ?? {}).map(([k, v]) => `${k}: ${v.join(', ')}`)].filter(Boolean).join(': ');
  }, (status) => (status === 403 || status === 404 ? `the credentials need the "pullrequest:write" and "repository:write" permissions on ${where}` : undefined));


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

  /** One listing, following the `next` links Bitbucket gives, until the last page or `enough` says so. */
  const listPulls = async (what: string, query: { state: string | string[]; sort?: string; pagelen?: number }, enough: (page: BitbucketPull[]) => boolean = () => false): Promise<BitbucketPull[]> => {
    const out: BitbucketPull[] = [];
    // `state` repeats (state=MERGED&state=DECLINED…); the description types it as one value, and names no `sort` or `pagelen` here
    let page = await check<PullPage>(what, client.GET('/repositories/{workspace}/{repo_slug}/pullrequests', { params: { path, query: query as { state?: 'OPEN' } } }));
    for (;;) {
      out.push(...(page.values ?? []));
      if (!page.next || enough(page.values ?? [])) return out;
      // the next page is a link Bitbucket gives; it stays on the API's origin (the host fetch sends credentials nowhere else)
      const response = await http.fetch(page.next, { headers: { accept: 'application/json', ...(authorization ? { authorization } : {}) } });
      page = await check<PullPage>(what, Promise.resolve({ data: response.ok ? await response.json() : undefined, error: response.ok ? undefined : await response.json().catch(() => undefined), response }));
    }
  };

  /** The full hash of an abbreviated one (GET …/commit/{hash}); undefined when Bitbucket no longer has the commit. */
  const fullHashes = new Map<string, Promise<string | undefined>>();
  const fullHash = (hash: string | undefined): Promise<string | undefined> => {
    if (!hash || /^[0-9a-f]{40}$/.test(hash)) return Promise.resolve(hash || undefined);
    let found = fullHashes.get(hash);
    if (!found) {
      found = check<{ hash?: string }>(`looking up commit ${hash}`, client.GET('/repositories/{workspace}/{repo_slug}/commit/{commit}', { params: { path: { ...path, commit: hash } } })).then(
        (c) => c.hash,
        (error: unknown) => {
          if (error instanceof RemoteError && error.status === 404) return undefined;
          fullHashes.delete(hash); // a failure is not remembered: the next log asks again
          throw error;
        },
      );
      fullHashes.set(hash, found);
    }
    return found;
  };

  /** a pull request from another repository than this one: never lastgood's */
  const fromFork = (p: BitbucketPull) => Boolean(p.source?.repository?.full_name) && p.source!.repository!.full_name!.toLowerCase() !== where.toLowerCase();

  /** The request without its commits (Bitbucket's hashes are abbreviated: `withCommits` looks them up). */
  const toReviewRequest = (p: BitbucketPull): ReviewRequest => ({
    noun: 'pull request', number: p.id ?? 0, url: p.links?.html?.href ?? `${at.web}/pull-requests/${p.id}`, branch: p.source?.branch?.name ?? '', title: p.title ?? '',
    state: p.state === 'MERGED' ? 'merged' : p.state === 'OPEN' ? 'open' : 'closed', createdAt: p.created_on ?? '', ...(p.updated_on ? { updatedAt: p.updated_on } : {}),
  });
  const withCommits = async (request: ReviewRequest, p: BitbucketPull): Promise<ReviewRequest> => {
    const head = await fullHash(p.source?.commit?.hash);
    const mergeCommit = request.state === 'merged' ? await fullHash(p.merge_commit?.hash) : undefined;
    return { ...request, ...(head ? { head } : {}), ...(mergeCommit ? { mergeCommit } : {}) };
  };

  return {
    system: 'bitbucket',
    name: 'Bitbucket Cloud',
    noun: 'pull request',
    coordinates: at,
    get requests() {
      return http.requests;
    },
    // Python-Markdown in safe mode: HTML shown as text (bitbucket.org/tutorials/markdowndemo; revert/markup.ts)
    markdown: PYTHON_MARKDOWN,
    checkCanOpen() {
      if (!credentials) throw new ConfigError('pull-request mode on Bitbucket Cloud needs credentials: set repo.auth to an access token (tokenEnv), or an app password or API token with its user name (username + passwordEnv)', opts.configFile ? { file: opts.configFile } : {});
    },
    async listOpen(target, prefix) {
      const pulls = await listPulls('listing open pull requests', { state: 'OPEN' });
      return pulls.filter((p) => !fromFork(p)).map(toRequest).filter((p) => p.target === target && p.source.startsWith(prefix));
    },
    async listRequests(query) {
      const since = query.since?.getTime();
      const open = await listPulls('listing open pull requests', { state: 'OPEN', pagelen: 50 });
      // most recently updated first: a page that ends before the window ends the listing
      const closed = await listPulls('listing pull requests', { state: ['MERGED', 'DECLINED', 'SUPERSEDED'], sort: '-updated_on', pagelen: 50 }, (page) => since !== undefined && Date.parse(page.at(-1)?.updated_on ?? '') < since);
      const seen = new Set<number>();
      const ours: BitbucketPull[] = [];
      // lastgood's branches are in the repository itself: a fork's branch of the same name is not one
      for (const p of [...open, ...closed]) {
        if (p.id === undefined || seen.has(p.id) || p.destination?.branch?.name !== query.base || !p.source?.branch?.name?.startsWith(query.branchPrefix) || fromFork(p)) continue;
        seen.add(p.id);
        ours.push(p);
      }
      const out: ReviewRequest[] = [];
      for (const p of ours) {
        const request = toReviewRequest(p);
        // the window first: a request outside it costs no commit look-up
        if (inLogWindow(request, query.since)) out.push(await withCommits(request, p));
      }
      return newestUpdateFirst(out);
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
