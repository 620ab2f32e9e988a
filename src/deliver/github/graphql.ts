import type { Octokit } from '@octokit/rest';
import { InputError, RemoteError, redact } from '../../errors.ts';

/**
 * GitHub's GraphQL API as the GitHub backend uses it: one request per document (aliases make one
 * document ask many things), errors turned into lastgood's typed errors with the fix in words.
 *
 * A GraphQL answer is HTTP 200 with `data` (what succeeded) and `errors` (what did not, each with
 * GitHub's `type`: NOT_FOUND, FORBIDDEN, UNPROCESSABLE, STALE_DATA…). Mutations in one document run
 * one after another and each succeeds or fails on its own, so `run` hands both back and the caller
 * decides; `query` throws on any error. Transport failures (401, 5xx after the retry plugin's
 * retries) arrive as Octokit RequestErrors and are wrapped by the backend's `wrap`.
 */

export type Permission = 'contents' | 'pull-requests' | 'issues' | 'deployments';

/**
 * Request options of a write that must not be sent twice blindly: no retry by @octokit/plugin-retry
 * (`retries: 0`) nor by the throttling plugin's secondary-rate-limit handler (`lastgoodOnce`).
 */
export const SEND_ONCE = { retries: 0, lastgoodOnce: true } as const;

/**
 * An error after which GitHub may have applied the write although we never saw the answer: a 5xx
 * (a proxy timing out while the backend finished), a rate limit reported after the mutation ran,
 * a dropped connection (Octokit reports it as a 500). Refusals (4xx with a reason) are answers.
 */
export function isLostAnswer(error: unknown): boolean {
  const seen = new Set<unknown>();
  for (let e = error as { status?: unknown; message?: unknown; cause?: unknown } | undefined; e && !seen.has(e); e = e.cause as typeof e) {
    seen.add(e);
    const status = typeof e.status === 'number' ? e.status : undefined;
    if (status === undefined) continue;
    if (status >= 500) return true;
    if ((status === 403 || status === 429) && /rate limit/i.test(String(e.message ?? ''))) return true;
    return false;
  }
  // Octokit reports a failed connection as status 500 itself: no status at all is no answer of GitHub's
  return false;
}

export interface GraphQLErrorItem {
  type?: string;
  message: string;
  path?: Array<string | number>;
}

export interface GraphQLResult<T> {
  data: T | null;
  errors: GraphQLErrorItem[];
}

interface GraphqlResponseErrorLike {
  name: string;
  errors?: GraphQLErrorItem[];
  data?: unknown;
}

const isResponseError = (e: unknown): e is GraphqlResponseErrorLike => typeof e === 'object' && e !== null && (e as { name?: unknown }).name === 'GraphqlResponseError';

/** Branch protection and rulesets refuse with GitHub's rule texts; the rule by its settings name. */
export function protectionRule(text: string): string | undefined {
  if (/verified signature|signed commit/i.test(text)) return 'Require signed commits';
  if (/through a pull request|pull request before merging/i.test(text)) return 'Require a pull request before merging';
  if (/status check/i.test(text)) return 'Require status checks to pass';
  if (/linear history|merge commits/i.test(text)) return 'Require linear history';
  if (/protected branch|rule violation|GH006|GH013/i.test(text)) return 'a branch protection rule or ruleset';
  return undefined;
}

/** What a refused write to a protected branch says: the rule, GitHub's words, what to do. */
export function protectionMessage(what: string, branch: string, text: string, rule: string): string {
  const fix =
    rule === 'Require signed commits'
      ? 'lastgood writes signed commits through createCommitOnBranch; this change needed the REST path (file modes, symlinks, submodules), whose commits GitHub signs only for a GitHub App or GITHUB_TOKEN: use such a token, or pull-request mode'
      : rule === 'Require a pull request before merging'
        ? 'use mode: pull-request for this target, or allow the token to bypass the rule'
        : 'allow the token to bypass the rule, or use mode: pull-request';
  return `${what} was refused by branch protection on ${branch} ("${rule}"): ${text.replace(/\s+/g, ' ').trim()}; ${fix}`;
}

export class GitHubGraphQL {
  private readonly octokit: Octokit;
  private readonly where: string;
  private readonly wrap: (what: string, permission: Permission | undefined, error: unknown) => Error;

  constructor(octokit: Octokit, where: string, wrap: (what: string, permission: Permission | undefined, error: unknown) => Error) {
    this.octokit = octokit;
    this.where = where;
    this.wrap = wrap;
  }

  /**
   * One document; `data` and `errors` both come back (partial success of mutations). `once`: a
   * mutation whose answer may be lost after GitHub applied it is not retried by the plugins (the
   * caller looks for what it made first: see the backend's `settle`).
   */
  async run<T>(what: string, permission: Permission | undefined, document: string, variables: Record<string, unknown>, opts: { once?: boolean } = {}): Promise<GraphQLResult<T>> {
    try {
      const data = await this.octokit.graphql<T>(document, opts.once ? { ...variables, request: SEND_ONCE } : variables);
      return { data, errors: [] };
    } catch (error) {
      if (isResponseError(error)) return { data: (error.data ?? null) as T | null, errors: error.errors ?? [] };
      throw this.wrap(what, permission, error);
    }
  }

  /** One query that must fully succeed. */
  async query<T>(what: string, permission: Permission | undefined, document: string, variables: Record<string, unknown>): Promise<T> {
    const { data, errors } = await this.run<T>(what, permission, document, variables);
    if (errors.length > 0 || data === null) throw this.failure(what, permission, errors);
    return data;
  }

  /** GitHub's GraphQL errors as one typed error that says what to fix. */
  failure(what: string, permission: Permission | undefined, errors: GraphQLErrorItem[], branch?: string): Error {
    const text = redact(errors.map((e) => e.message).join('; ') || 'no data in the answer');
    const types = new Set(errors.map((e) => e.type));
    if (types.has('NOT_FOUND') && errors.some((e) => e.path?.length === 1 && e.path[0] === 'repository')) {
      return new InputError(`repository ${this.where} not found or not visible to the token (needs "contents: read" on it)`);
    }
    if (types.has('FORBIDDEN') || /not accessible by integration/i.test(text)) {
      return new RemoteError('github', `${what} was refused (${text}): the token needs "${permission ?? 'contents'}: ${permission === undefined ? 'read' : 'write'}" permission on ${this.where}`, { status: 403 });
    }
    const rule = protectionRule(text);
    if (rule && branch) return new RemoteError('github', protectionMessage(what, branch, text, rule), { status: 422 });
    if (types.has('RATE_LIMITED')) return new RemoteError('github', `${what}: still rate limited by GitHub (${text})`, { status: 403 });
    return new RemoteError('github', `${what} failed (GraphQL: ${text})`, { status: types.has('NOT_FOUND') ? 404 : 422 });
  }
}

/** A mode as git writes it ("100644", "040000") from the integer GitHub's GraphQL gives (33188, 16384). */
export const octalMode = (mode: number): string => mode.toString(8).padStart(6, '0');

export const SYMLINK_MODE = 0o120000;

/** GitHub's GitTimestamp keeps the author's offset ("2026-11-01T12:00:00+02:00"): seconds and isomorphic-git's offset (-120 for +02:00). */
export function fromGitTimestamp(date: string | null | undefined): { timestamp: number; timezoneOffset: number } {
  const ms = date ? Date.parse(date) : NaN;
  if (Number.isNaN(ms)) return { timestamp: 0, timezoneOffset: 0 };
  const m = /([+-])(\d{2}):?(\d{2})$/.exec(date ?? '');
  const minutes = m ? (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3])) : 0;
  return { timestamp: Math.floor(ms / 1000), timezoneOffset: minutes === 0 ? 0 : -minutes };
}
