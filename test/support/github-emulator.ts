import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { BareRepo, GitFailure, isoDate, loadTreeNode, parseIsoDate, writeTreeNode, type RawCommit, type TreeEntry, type TreeNode } from './github-git.ts';
import { OpenApiValidator, type OperationMatch } from './openapi-validator.ts';
import { describeDocument, executeGraphQL } from './github-graphql.ts';
import { EMULATOR_SIGNATURE, graphqlRoot, type EmulatedDeployment, type EmulatedDeploymentStatus, type EmulatorCore } from './github-graphql-repo.ts';
import { keepAliveAsHosts } from './http-keepalive.ts';

/**
 * An emulator of the GitHub REST endpoints a revert pull request needs, backed by a real bare git
 * repository (see github-git.ts). Every request and every response is checked against GitHub's
 * published OpenAPI description (@octokit/openapi): a mismatch is recorded in `violations` (tests
 * assert it stays empty) and a bad request is refused with 422, so a client bug fails loudly.
 *
 * Emulated: repos.get, git refs (get, list matching, create, update with fast-forward check, delete),
 * git commits/trees/blobs (get, create), repos.listCommits (sha, path, per_page, page, Link),
 * repos.getCommit, repos.compareCommits, pulls (list, create, get, update, requestReviewers, merge),
 * issues (addLabels, addAssignees, createComment, listComments), deployments and their statuses
 * (list, create; `auto_inactive` as GitHub applies it), and POST /graphql: what lastgood sends,
 * validated against GitHub's published GraphQL schema (github-graphql.ts, github-graphql-repo.ts).
 *
 * Signatures and branch protection: commits GitHub makes itself (createCommitOnBranch, merges, and
 * REST commits of an installation token) are signed and reported Verified; a REST commit of a
 * user token is not. `protect(branch, { requiredSignatures, requirePullRequest })` makes ref
 * updates refuse unsigned commits or direct writes, with GitHub's rule texts (GH013).
 *
 * Not emulated: the "mergeable" computation (always true), webhooks, checks, teams.
 * Auth errors, injected faults and permission refusals are not always described per operation in
 * the description, so those bodies are checked against `basic-error` instead.
 */

export interface Fault {
  status: 403 | 422 | 500 | 502 | 503;
  /** how many matching requests fail (default 1) */
  times?: number;
  match?: (method: string, path: string) => boolean;
  /** a 403 GitHub sends for the secondary rate limit, with `retry-after` (seconds, default 1) */
  secondaryRateLimit?: true;
  retryAfter?: number;
  message?: string;
  /**
   * the request is carried out first and only its answer is the fault: the write was applied, and
   * the client never learns it (a 502 from a proxy after the backend answered, a secondary rate
   * limit reported after the mutation ran). GraphQL faults match on the document's fields too.
   */
  afterApply?: true;
  /** GraphQL: fail only documents whose operation names this field (e.g. "createCommitOnBranch") */
  field?: string;
}

export interface RequestRecord {
  method: string;
  /** path and query, as received */
  path: string;
  /** the REST operation; for GraphQL `graphql:query(repository)` / `graphql:mutation(createRef,createCommitOnBranch)` */
  operationId: string | undefined;
  status: number;
  /** a REST write or a GraphQL mutation */
  write: boolean;
  /** the response body's size, bytes */
  bytesOut?: number;
  /** from the request's end to the response's end, ms (the emulator's own work: the bench reads it) */
  ms?: number;
}

/** Rules of a protected branch (classic protection or a ruleset: the emulator answers alike). */
export interface BranchProtection {
  /** "Require signed commits": every new commit must be Verified */
  requiredSignatures?: boolean;
  /** "Require a pull request before merging": no direct writes */
  requirePullRequest?: boolean;
}

export type { EmulatedDeployment, EmulatedDeploymentStatus };

export interface EmulatedPull {
  number: number;
  title: string;
  body: string | null;
  head: string;
  base: string;
  state: 'open' | 'closed';
  draft: boolean;
  merged: boolean;
  mergeCommit: string | null;
  maintainerCanModify: boolean;
  labels: string[];
  assignees: string[];
  reviewers: string[];
  comments: Array<{ id: number; body: string; user: string; created: string }>;
  created: string;
  updated: string;
  closed: string | null;
}

export interface EmulatorOptions {
  bareRepo: string;
  owner: string;
  repo: string;
  token: string;
  /** the login the token belongs to (default "lastgood-bot") */
  user?: string;
  /** the token's fine-grained permissions (default: write to all) */
  permissions?: { contents?: 'read' | 'write'; pullRequests?: 'read' | 'write'; deployments?: 'none' | 'read' | 'write' };
  /**
   * whose token it is: GitHub signs the REST git-data commits of an installation token (a GitHub
   * App, GITHUB_TOKEN), not those of a user token (default "user")
   */
  tokenKind?: 'installation' | 'user';
  /** labels that exist in the repository (REST addLabels creates the others, GraphQL needs them to exist) */
  labels?: string[];
  /** protected branches and their rules */
  protection?: Record<string, BranchProtection>;
  /** getTree with recursive: entries beyond this are cut and `truncated: true` (GitHub: 100,000) */
  treeEntryLimit?: number;
  /**
   * write a commit-graph with changed-path Bloom filters before serving (`git commit-graph write
   * --reachable --changed-paths`), as a hosted repository has one: a path's history (`history(path:)`)
   * is then answered from the filters, not by opening every commit's trees. The benches set it: on
   * a repository of thousands of commits, without it the emulator's own `git rev-list -- path` is most
   * of a run's time, which GitHub does not spend
   */
  commitGraph?: boolean;
}

export interface Emulator {
  /** the API base URL (Octokit `baseUrl`) */
  url: string;
  readonly git: BareRepo;
  /** OpenAPI mismatches and unemulated calls; tests assert it is empty */
  readonly violations: string[];
  readonly requests: number;
  readonly log: RequestRecord[];
  /** raw request bodies received, to prove no secret was sent */
  readonly bodies: string[];
  readonly pulls: EmulatedPull[];
  readonly deployments: EmulatedDeployment[];
  /** commits GitHub signed (reported Verified) */
  readonly signed: ReadonlySet<string>;
  /** protects a branch (or changes its rules) */
  protect(branch: string, rules: BranchProtection): void;
  inject(fault: Fault): void;
  /** runs before every ref update (create/update/merge), e.g. to simulate a concurrent push */
  onBeforeRefUpdate(hook: (ref: string, sha: string) => void | Promise<void>): void;
  resetLog(): void;
  close(): Promise<void>;
}

const DOCS = 'https://docs.github.com/rest';

class HttpFailure extends Error {
  readonly status: number;
  readonly body: Record<string, unknown>;
  constructor(status: number, message: string, extra: Record<string, unknown> = {}) {
    super(message);
    this.status = status;
    this.body = { message, documentation_url: DOCS, ...extra };
  }
}

const notFound = () => new HttpFailure(404, 'Not Found', { status: '404' });
const unprocessable = (message: string, errors?: unknown[]) => new HttpFailure(422, message, { status: '422', ...(errors ? { errors } : {}) });

/** A commit-graph in the repository or in an object store it borrows from (a `--shared` clone's alternates: git reads theirs). */
function hasCommitGraph(gitdir: string): boolean {
  const objects = path.join(gitdir, 'objects');
  const alternates = path.join(objects, 'info', 'alternates');
  const stores = [objects, ...(existsSync(alternates) ? readFileSync(alternates, 'utf8').split('\n').filter(Boolean).map((a) => path.resolve(objects, a)) : [])];
  return stores.some((store) => existsSync(path.join(store, 'info', 'commit-graph')) || existsSync(path.join(store, 'info', 'commit-graphs')));
}

export async function startGitHubEmulator(opts: EmulatorOptions): Promise<Emulator> {
  const validator = new OpenApiValidator();
  const git = new BareRepo(opts.bareRepo);
  if (opts.commitGraph && !hasCommitGraph(opts.bareRepo)) await git.text(['commit-graph', 'write', '--reachable', '--changed-paths']);
  const login = opts.user ?? 'lastgood-bot';
  const violations: string[] = [];
  const log: RequestRecord[] = [];
  const bodies: string[] = [];
  const pulls: EmulatedPull[] = [];
  const faults: Array<Fault & { left: number }> = [];
  const refHooks: Array<(ref: string, sha: string) => void | Promise<void>> = [];
  const deployments: EmulatedDeployment[] = [];
  const signed = new Set<string>();
  const repoLabels = new Set(opts.labels ?? []);
  const protection = new Map(Object.entries(opts.protection ?? {}));
  let nextId = 1000;
  let base = '';
  const now = () => isoDate(Math.floor(Date.now() / 1000));
  const started = now();
  const defaultBranch = (await git.text(['symbolic-ref', '--short', 'HEAD']).catch(() => 'main')) || 'main';

  // ---- object builders (every field the description requires) -------------------------------
  const api = () => `${base}/repos/${opts.owner}/${opts.repo}`;
  const web = () => `${base}/${opts.owner}/${opts.repo}`;
  const nodeId = (kind: string, key: string | number) => Buffer.from(`${kind}:${key}`).toString('base64');
  const userIds = new Map<string, number>();
  const user = (name: string) => {
    if (!userIds.has(name)) userIds.set(name, 100 + userIds.size);
    const u = `${base}/users/${name}`;
    return {
      login: name, id: userIds.get(name)!, node_id: nodeId('User', name), avatar_url: `${base}/avatars/${name}`, gravatar_id: '',
      url: u, html_url: `${base}/${name}`, followers_url: `${u}/followers`, following_url: `${u}/following{/other_user}`,
      gists_url: `${u}/gists{/gist_id}`, starred_url: `${u}/starred{/owner}{/repo}`, subscriptions_url: `${u}/subscriptions`,
      organizations_url: `${u}/orgs`, repos_url: `${u}/repos`, events_url: `${u}/events{/privacy}`, received_events_url: `${u}/received_events`,
      type: name.endsWith('[bot]') ? 'Bot' : 'User', site_admin: false,
    };
  };
  const repository = () => {
    const u = api();
    return {
      id: 4242, node_id: nodeId('Repository', 4242), name: opts.repo, full_name: `${opts.owner}/${opts.repo}`, owner: user(opts.owner), private: true,
      html_url: web(), description: 'GitOps config (emulated)', fork: false, url: u,
      archive_url: `${u}/{archive_format}{/ref}`, assignees_url: `${u}/assignees{/user}`, blobs_url: `${u}/git/blobs{/sha}`, branches_url: `${u}/branches{/branch}`,
      collaborators_url: `${u}/collaborators{/collaborator}`, comments_url: `${u}/comments{/number}`, commits_url: `${u}/commits{/sha}`,
      compare_url: `${u}/compare/{base}...{head}`, contents_url: `${u}/contents/{+path}`, contributors_url: `${u}/contributors`,
      deployments_url: `${u}/deployments`, downloads_url: `${u}/downloads`, events_url: `${u}/events`, forks_url: `${u}/forks`,
      git_commits_url: `${u}/git/commits{/sha}`, git_refs_url: `${u}/git/refs{/sha}`, git_tags_url: `${u}/git/tags{/sha}`,
      git_url: `git://emulated/${opts.owner}/${opts.repo}.git`, issue_comment_url: `${u}/issues/comments{/number}`, issue_events_url: `${u}/issues/events{/number}`,
      issues_url: `${u}/issues{/number}`, keys_url: `${u}/keys{/key_id}`, labels_url: `${u}/labels{/name}`, languages_url: `${u}/languages`,
      merges_url: `${u}/merges`, milestones_url: `${u}/milestones{/number}`, notifications_url: `${u}/notifications{?since,all,participating}`,
      pulls_url: `${u}/pulls{/number}`, releases_url: `${u}/releases{/id}`, ssh_url: `git@emulated:${opts.owner}/${opts.repo}.git`,
      stargazers_url: `${u}/stargazers`, statuses_url: `${u}/statuses/{sha}`, subscribers_url: `${u}/subscribers`, subscription_url: `${u}/subscription`,
      tags_url: `${u}/tags`, teams_url: `${u}/teams`, trees_url: `${u}/git/trees{/sha}`, clone_url: `${web()}.git`, mirror_url: null, hooks_url: `${u}/hooks`,
      svn_url: web(), homepage: null, language: null, forks_count: 0, forks: 0, stargazers_count: 0, watchers_count: 0, watchers: 0, size: 1,
      default_branch: defaultBranch, open_issues_count: pulls.filter((p) => p.state === 'open').length, open_issues: pulls.filter((p) => p.state === 'open').length,
      is_template: false, topics: [], has_issues: true, has_projects: false, has_wiki: false, has_pages: false, has_downloads: true, has_discussions: false,
      archived: false, disabled: false, visibility: 'private', pushed_at: started, created_at: started, updated_at: started,
      permissions: { admin: false, maintain: false, push: opts.permissions?.contents !== 'read', triage: true, pull: true },
      allow_rebase_merge: true, allow_squash_merge: true, allow_merge_commit: true, allow_auto_merge: false, delete_branch_on_merge: false,
      allow_forking: false, web_commit_signoff_required: false, license: null, network_count: 0, subscribers_count: 0,
    };
  };
  const gitUser = (s: RawCommit['author']) => ({ name: s.name, email: s.email, date: isoDate(s.time) });
  const verificationOf = (sha: string) =>
    signed.has(sha)
      ? { verified: true, reason: 'valid', signature: EMULATOR_SIGNATURE, payload: null, verified_at: started }
      : { verified: false, reason: 'unsigned', signature: null, payload: null, verified_at: null };
  const gitCommit = (c: RawCommit) => ({
    sha: c.sha, node_id: nodeId('Commit', c.sha), url: `${api()}/git/commits/${c.sha}`, html_url: `${web()}/commit/${c.sha}`,
    author: gitUser(c.author), committer: gitUser(c.committer), tree: { sha: c.tree, url: `${api()}/git/trees/${c.tree}` },
    message: c.message, parents: c.parents.map((p) => ({ sha: p, url: `${api()}/git/commits/${p}`, html_url: `${web()}/commit/${p}` })),
    verification: verificationOf(c.sha),
  });
  const restCommit = (c: RawCommit) => ({
    url: `${api()}/commits/${c.sha}`, sha: c.sha, node_id: nodeId('Commit', c.sha), html_url: `${web()}/commit/${c.sha}`,
    comments_url: `${api()}/commits/${c.sha}/comments`,
    commit: {
      url: `${api()}/git/commits/${c.sha}`, author: gitUser(c.author), committer: gitUser(c.committer), message: c.message.replace(/\n$/, ''),
      comment_count: 0, tree: { sha: c.tree, url: `${api()}/git/trees/${c.tree}` }, verification: verificationOf(c.sha),
    },
    // commits by e-mail addresses without an account: GitHub sends null
    author: null, committer: null,
    parents: c.parents.map((p) => ({ sha: p, url: `${api()}/commits/${p}`, html_url: `${web()}/commit/${p}` })),
  });
  const gitRef = (ref: string, sha: string, type = 'commit') => ({
    ref, node_id: nodeId('Ref', ref), url: `${api()}/git/${ref}`, object: { type, sha, url: `${api()}/git/${type}s/${sha}` },
  });
  const treeEntry = (e: TreeEntry) => ({
    path: e.path, mode: e.mode, type: e.type, sha: e.sha, ...(e.size !== undefined ? { size: e.size } : {}),
    ...(e.type === 'commit' ? {} : { url: `${api()}/git/${e.type}s/${e.sha}` }),
  });
  const label = (name: string) => ({ id: 7000 + [...name].reduce((a, ch) => a + ch.charCodeAt(0), 0), node_id: nodeId('Label', name), url: `${api()}/labels/${encodeURIComponent(name)}`, name, description: '', color: 'ededed', default: false });
  const link = (href: string) => ({ href });
  const headSha = async (p: EmulatedPull) => (await git.resolve(`refs/heads/${p.head}`)) ?? (p.mergeCommit ?? '0'.repeat(40));
  const pullSimple = async (p: EmulatedPull) => {
    const u = `${api()}/pulls/${p.number}`;
    const issue = `${api()}/issues/${p.number}`;
    const sha = await headSha(p);
    const baseSha = (await git.resolve(`refs/heads/${p.base}`)) ?? '0'.repeat(40);
    return {
      url: u, id: 90000 + p.number, node_id: nodeId('PullRequest', p.number), html_url: `${web()}/pull/${p.number}`, diff_url: `${web()}/pull/${p.number}.diff`,
      patch_url: `${web()}/pull/${p.number}.patch`, issue_url: issue, commits_url: `${u}/commits`, review_comments_url: `${u}/comments`,
      review_comment_url: `${api()}/pulls/comments{/number}`, comments_url: `${issue}/comments`, statuses_url: `${api()}/statuses/${sha}`,
      number: p.number, state: p.state, locked: false, title: p.title, user: user(login), body: p.body,
      labels: p.labels.map(label), milestone: null, active_lock_reason: null, created_at: p.created, updated_at: p.updated, closed_at: p.closed,
      merged_at: p.merged ? p.closed : null, merge_commit_sha: p.mergeCommit, assignee: p.assignees[0] ? user(p.assignees[0]) : null,
      assignees: p.assignees.map(user), requested_reviewers: p.reviewers.map(user), requested_teams: [],
      head: { label: `${opts.owner}:${p.head}`, ref: p.head, sha, user: user(opts.owner), repo: repository() },
      base: { label: `${opts.owner}:${p.base}`, ref: p.base, sha: baseSha, user: user(opts.owner), repo: repository() },
      _links: {
        self: link(u), html: link(`${web()}/pull/${p.number}`), issue: link(issue), comments: link(`${issue}/comments`),
        review_comments: link(`${u}/comments`), review_comment: link(`${api()}/pulls/comments{/number}`), commits: link(`${u}/commits`),
        statuses: link(`${api()}/statuses/${sha}`),
      },
      author_association: 'CONTRIBUTOR', auto_merge: null, draft: p.draft,
    };
  };
  const pullFull = async (p: EmulatedPull) => ({
    ...(await pullSimple(p)),
    merged: p.merged, mergeable: p.state === 'open' ? true : null, rebaseable: p.state === 'open' ? true : null,
    mergeable_state: p.state === 'open' ? 'clean' : 'unknown', merged_by: p.merged ? user(login) : null, comments: p.comments.length,
    review_comments: 0, maintainer_can_modify: p.maintainerCanModify, commits: 1, additions: 0, deletions: 0, changed_files: 0,
  });
  const issueOf = (p: EmulatedPull) => {
    const issue = `${api()}/issues/${p.number}`;
    return {
      id: 80000 + p.number, node_id: nodeId('Issue', p.number), url: issue, repository_url: api(), labels_url: `${issue}/labels{/name}`,
      comments_url: `${issue}/comments`, events_url: `${issue}/events`, html_url: `${web()}/pull/${p.number}`, number: p.number, state: p.state,
      title: p.title, body: p.body, user: user(login), labels: p.labels.map(label), assignee: p.assignees[0] ? user(p.assignees[0]) : null,
      assignees: p.assignees.map(user), milestone: null, locked: false, active_lock_reason: null, comments: p.comments.length,
      pull_request: { url: `${api()}/pulls/${p.number}`, html_url: `${web()}/pull/${p.number}`, diff_url: `${web()}/pull/${p.number}.diff`, patch_url: `${web()}/pull/${p.number}.patch`, merged_at: p.merged ? p.closed : null },
      closed_at: p.closed, created_at: p.created, updated_at: p.updated, draft: p.draft, author_association: 'CONTRIBUTOR',
    };
  };
  const comment = (p: EmulatedPull, c: EmulatedPull['comments'][number]) => ({
    id: c.id, node_id: nodeId('IssueComment', c.id), url: `${api()}/issues/comments/${c.id}`, html_url: `${web()}/pull/${p.number}#issuecomment-${c.id}`,
    body: c.body, user: user(c.user), created_at: c.created, updated_at: c.created, issue_url: `${api()}/issues/${p.number}`, author_association: 'CONTRIBUTOR',
  });

  // ---- helpers ---------------------------------------------------------------------------------
  const requirePull = (n: string | undefined) => {
    const p = pulls.find((x) => x.number === Number(n));
    if (!p) throw notFound();
    return p;
  };
  const requireCommit = async (sha: string) => {
    if ((await git.typeOf(sha)) !== 'commit') throw notFound();
    return git.readCommit(sha);
  };
  /** GitHub's rule texts (GH013 "Repository rule violations found"), for the branch's rules the update breaks. */
  const ruleViolations = async (ref: string, sha: string, expected: string | undefined, how: { viaPullRequest?: boolean }): Promise<string[]> => {
    const rules = ref.startsWith('refs/heads/') ? protection.get(ref.slice('refs/heads/'.length)) : undefined;
    if (!rules) return [];
    const out: string[] = [];
    if (rules.requirePullRequest && !how.viaPullRequest) out.push('Changes must be made through a pull request.');
    if (rules.requiredSignatures) {
      const added = (await git.text(['rev-list', sha, ...(expected ? [`^${expected}`] : [])])).split('\n').filter(Boolean);
      if (added.some((c) => !signed.has(c))) out.push('Commits must have verified signatures.');
    }
    return out;
  };
  const updateRef = async (ref: string, sha: string, expected: string | undefined, how: { force?: boolean; viaPullRequest?: boolean } = {}) => {
    for (const hook of refHooks) await hook(ref, sha);
    const violated = await ruleViolations(ref, sha, expected, how);
    if (violated.length > 0) throw unprocessable(`Repository rule violations found\n\n${violated.join('\n\n')}\n\n`);
    const current = await git.resolve(ref);
    if (current !== expected) {
      // the ref moved between our read and our write: GitHub reports the same as a non-fast-forward
      throw unprocessable(expected === undefined ? 'Reference already exists' : 'Update is not a fast forward');
    }
    try {
      await git.updateRef(ref, sha, expected);
    } catch (error) {
      if (error instanceof GitFailure) throw unprocessable('Update is not a fast forward');
      throw error;
    }
  };
  const page = (query: URLSearchParams, defaultSize: number) => {
    const perPage = Math.min(Number(query.get('per_page') ?? defaultSize) || defaultSize, 100);
    const pageNo = Math.max(Number(query.get('page') ?? 1) || 1, 1);
    return { perPage, pageNo, from: (pageNo - 1) * perPage };
  };
  const linkHeader = (rawPath: string, query: URLSearchParams, pageNo: number, perPage: number, total: number): Record<string, string> => {
    const last = Math.max(1, Math.ceil(total / perPage));
    const at = (n: number) => {
      const q = new URLSearchParams(query);
      q.set('page', String(n));
      q.set('per_page', String(perPage));
      return `<${base}${rawPath}?${q}>`;
    };
    const parts: string[] = [];
    if (pageNo > 1) parts.push(`${at(pageNo - 1)}; rel="prev"`, `${at(1)}; rel="first"`);
    if (pageNo < last) parts.push(`${at(pageNo + 1)}; rel="next"`, `${at(last)}; rel="last"`);
    return parts.length ? { link: parts.join(', ') } : {};
  };
  const isWrite = (method: string) => method !== 'GET' && method !== 'HEAD';
  const permissionFor = (operationId: string) =>
    operationId.startsWith('git/') || operationId === 'repos/merge' ? 'contents' : operationId.startsWith('pulls/') ? 'pullRequests' : /deployment/.test(operationId) ? 'deployments' : 'issues';
  const granted = (what: 'contents' | 'pullRequests' | 'issues' | 'deployments') =>
    what === 'contents' ? (opts.permissions?.contents ?? 'write') : what === 'deployments' ? (opts.permissions?.deployments ?? 'write') : (opts.permissions?.pullRequests ?? 'write');

  /** pulls.create and GraphQL createPullRequest: GitHub's checks, then a new open pull request. */
  const createPull = async (input: { title: string; body: string | null; head: string; base: string; draft: boolean; maintainerCanModify: boolean }): Promise<EmulatedPull> => {
    const headSha = await git.resolve(`refs/heads/${input.head}`);
    const baseSha = await git.resolve(`refs/heads/${input.base}`);
    if (!headSha) throw unprocessable('Validation Failed', [{ resource: 'PullRequest', field: 'head', code: 'invalid' }]);
    if (!baseSha) throw unprocessable('Validation Failed', [{ resource: 'PullRequest', field: 'base', code: 'invalid' }]);
    if (pulls.some((p) => p.state === 'open' && p.head === input.head && p.base === input.base)) {
      throw unprocessable('Validation Failed', [{ resource: 'PullRequest', code: 'custom', message: `A pull request already exists for ${opts.owner}:${input.head}.` }]);
    }
    if ((await git.count(`${baseSha}..${headSha}`)) === 0) {
      throw unprocessable('Validation Failed', [{ resource: 'PullRequest', code: 'custom', message: `No commits between ${input.base} and ${input.head}` }]);
    }
    // checked again with no await before the insert: GitHub refuses a second open pull request for a head atomically
    if (pulls.some((p) => p.state === 'open' && p.head === input.head && p.base === input.base)) {
      throw unprocessable('Validation Failed', [{ resource: 'PullRequest', code: 'custom', message: `A pull request already exists for ${opts.owner}:${input.head}.` }]);
    }
    const stamp = now();
    const p: EmulatedPull = {
      number: pulls.length + 1, title: input.title, body: input.body, head: input.head, base: input.base, state: 'open', draft: input.draft,
      merged: false, mergeCommit: null, maintainerCanModify: input.maintainerCanModify, labels: [], assignees: [], reviewers: [],
      comments: [], created: stamp, updated: stamp, closed: null,
    };
    pulls.push(p);
    return p;
  };

  // ---- deployments ---------------------------------------------------------------------------------
  const deploymentBody = (d: EmulatedDeployment) => ({
    url: `${api()}/deployments/${d.id}`, id: d.id, node_id: nodeId('Deployment', d.id), sha: d.sha, ref: d.ref, task: d.task, payload: d.payload,
    original_environment: d.environment, environment: d.environment, description: d.description, creator: user(login), created_at: d.created, updated_at: d.updated,
    statuses_url: `${api()}/deployments/${d.id}/statuses`, repository_url: api(), transient_environment: d.transient, production_environment: d.production,
  });
  const deploymentStatusBody = (d: EmulatedDeployment, st: EmulatedDeploymentStatus) => ({
    url: `${api()}/deployments/${d.id}/statuses/${st.id}`, id: st.id, node_id: nodeId('DeploymentStatus', st.id), state: st.state, creator: user(st.creator),
    description: st.description, environment: st.environment, target_url: `${web()}/deployments/${encodeURIComponent(st.environment)}`, created_at: st.created, updated_at: st.created,
    deployment_url: `${api()}/deployments/${d.id}`, repository_url: api(), environment_url: `${web()}/deployments/${encodeURIComponent(st.environment)}`, log_url: `${web()}/deployments/${encodeURIComponent(st.environment)}`,
  });
  const requireDeployment = (id: string | undefined) => {
    const d = deployments.find((x) => x.id === Number(id));
    if (!d) throw notFound();
    return d;
  };

  interface Reply {
    status: number;
    body?: unknown;
    headers?: Record<string, string>;
  }

  // ---- operations ------------------------------------------------------------------------------
  const operations: Record<string, (m: OperationMatch, q: URLSearchParams, body: any, rawPath: string) => Promise<Reply>> = {
    'repos/get': async () => ({ status: 200, body: repository() }),

    'git/get-ref': async (m) => {
      const ref = `refs/${m.params.ref}`;
      const sha = git.readRef(ref);
      if (!sha) throw notFound();
      return { status: 200, body: gitRef(ref, sha, (await git.typeOf(sha)) ?? 'commit') };
    },
    'git/list-matching-refs': async (m) => {
      const prefix = `refs/${m.params.ref}`;
      return { status: 200, body: (await git.refs()).filter((r) => r.ref.startsWith(prefix)).map((r) => gitRef(r.ref, r.sha, r.type)) };
    },
    'git/create-ref': async (_m, _q, body) => {
      const ref = String(body.ref);
      if (!/^refs\/[^/]+\/.+/.test(ref)) throw unprocessable('Reference name must start with \'refs/\' and have at least two slashes.');
      if (!(await git.typeOf(body.sha))) throw unprocessable('Object does not exist');
      if (await git.resolve(ref)) throw unprocessable('Reference already exists');
      await updateRef(ref, body.sha, undefined);
      return { status: 201, body: gitRef(ref, body.sha), headers: { location: `${api()}/git/${ref}` } };
    },
    'git/update-ref': async (m, _q, body) => {
      const ref = `refs/${m.params.ref}`;
      const current = await git.resolve(ref);
      if (!current) throw unprocessable('Reference does not exist');
      if (!(await git.typeOf(body.sha))) throw unprocessable('Object does not exist');
      if (!body.force && !(await git.isAncestor(current, body.sha))) throw unprocessable('Update is not a fast forward');
      await updateRef(ref, body.sha, current, { force: body.force === true });
      return { status: 200, body: gitRef(ref, body.sha) };
    },
    'git/delete-ref': async (m) => {
      const ref = `refs/${m.params.ref}`;
      if (!(await git.resolve(ref))) throw unprocessable('Reference does not exist');
      await git.deleteRef(ref);
      return { status: 204 };
    },

    'git/get-commit': async (m) => ({ status: 200, body: gitCommit(await requireCommit(m.params.commit_sha ?? '')) }),
    'git/create-commit': async (_m, _q, body) => {
      if ((await git.typeOf(body.tree)) !== 'tree') throw unprocessable('Tree SHA does not exist');
      for (const p of body.parents ?? []) if ((await git.typeOf(p)) !== 'commit') throw unprocessable('Parent SHA does not exist or is not a commit object');
      const nowSeconds = Math.floor(Date.now() / 1000);
      const sig = (s: { name?: string; email?: string; date?: string } | undefined, fallback?: RawCommit['author']): RawCommit['author'] => {
        if (!s) return fallback ?? { name: login, email: `${login}@users.noreply.github.com`, time: nowSeconds, tz: '+0000' };
        const date = s.date ? parseIsoDate(s.date) : undefined;
        if (s.date && !date) throw unprocessable(`Invalid date: ${s.date}`);
        return { name: s.name ?? login, email: s.email ?? '', time: date?.time ?? nowSeconds, tz: date?.tz ?? '+0000' };
      };
      const author = sig(body.author);
      const committer = sig(body.committer, body.author ? author : undefined);
      // GitHub signs the git-data commits of a GitHub App's installation token, not a user's, and only
      // "if the request ... contains no custom author information, custom committer information, and no
      // custom signature information" (docs.github.com/en/authentication/managing-commit-signature-verification/
      // about-commit-signature-verification#signature-verification-for-bots)
      const signs = opts.tokenKind === 'installation' && !body.author && !body.committer && !body.signature;
      const sha = await git.writeCommit({ tree: body.tree, parents: body.parents ?? [], author, committer, message: body.message, ...(signs ? { gpgsig: EMULATOR_SIGNATURE } : {}) });
      if (signs) signed.add(sha);
      return { status: 201, body: gitCommit(await git.readCommit(sha)), headers: { location: `${api()}/git/commits/${sha}` } };
    },

    'git/get-tree': async (m, q) => {
      const tree = await git.resolve(m.params.tree_sha ?? '', '^{tree}');
      if (!tree) throw notFound();
      let entries = await git.readTree(tree, q.has('recursive'));
      const limit = opts.treeEntryLimit ?? 100_000;
      const truncated = entries.length > limit;
      if (truncated) entries = entries.slice(0, limit);
      return { status: 200, body: { sha: tree, url: `${api()}/git/trees/${tree}`, tree: entries.map(treeEntry), truncated } };
    },
    'git/create-tree': async (_m, _q, body) => {
      if (body.base_tree && (await git.typeOf(body.base_tree)) !== 'tree') throw unprocessable('base_tree is not a valid tree oid');
      const sha = await createTree(body.base_tree, body.tree);
      return { status: 201, body: { sha, url: `${api()}/git/trees/${sha}`, tree: (await git.readTree(sha)).map(treeEntry), truncated: false }, headers: { location: `${api()}/git/trees/${sha}` } };
    },

    'git/get-blob': async (m) => {
      const sha = m.params.file_sha ?? '';
      if ((await git.typeOf(sha)) !== 'blob') throw notFound();
      const content = await git.readBlob(sha);
      return {
        status: 200,
        body: { sha, node_id: nodeId('Blob', sha), url: `${api()}/git/blobs/${sha}`, size: content.length, encoding: 'base64', content: (content.toString('base64').match(/.{1,60}/g) ?? []).join('\n') + '\n' },
      };
    },
    'git/create-blob': async (_m, _q, body) => {
      const encoding = body.encoding ?? 'utf-8';
      if (encoding !== 'utf-8' && encoding !== 'base64') throw unprocessable(`encoding must be "utf-8" or "base64"`);
      const sha = await git.writeBlob(Buffer.from(body.content, encoding === 'base64' ? 'base64' : 'utf8'));
      return { status: 201, body: { sha, url: `${api()}/git/blobs/${sha}` }, headers: { location: `${api()}/git/blobs/${sha}` } };
    },

    'repos/list-commits': async (_m, q, _b, rawPath) => {
      const from = await git.resolve(q.get('sha') ?? defaultBranch, '^{commit}');
      if (!from) throw notFound();
      const all = await git.log(from, q.get('path') ?? undefined);
      const { perPage, pageNo, from: start } = page(q, 30);
      const commits = await git.readCommits(all.slice(start, start + perPage));
      return { status: 200, body: commits.map(restCommit), headers: linkHeader(rawPath, q, pageNo, perPage, all.length) };
    },
    'repos/get-commit': async (m) => {
      const sha = await git.resolve(m.params.ref ?? '', '^{commit}');
      if (!sha) throw unprocessable(`No commit found for SHA: ${m.params.ref}`);
      const c = await git.readCommit(sha);
      // the files the commit changes against its first parent (no rename detection: added + removed)
      const raw = (await git.text(['diff-tree', '-r', '-z', '--no-commit-id', ...(c.parents[0] ? [c.parents[0], sha] : ['--root', sha])])).split('\0').filter(Boolean);
      const files: unknown[] = [];
      for (let i = 0; i + 1 < raw.length; i += 2) {
        const [, , , after = '', status = ''] = raw[i]!.replace(/^:/, '').split(' ');
        const filename = raw[i + 1]!;
        const blob = after === '0'.repeat(40) ? '0'.repeat(40) : after;
        files.push({
          sha: blob, filename, status: status === 'A' ? 'added' : status === 'D' ? 'removed' : 'modified', additions: 0, deletions: 0, changes: 0,
          blob_url: `${web()}/blob/${sha}/${filename}`, raw_url: `${web()}/raw/${sha}/${filename}`, contents_url: `${api()}/contents/${filename}?ref=${sha}`,
        });
      }
      return { status: 200, body: { ...restCommit(c), files, stats: { additions: 0, deletions: 0, total: 0 } } };
    },
    'repos/compare-commits': async (m, q) => {
      const baseSha = await git.resolve(m.params.base ?? '', '^{commit}');
      const headShaValue = await git.resolve(m.params.head ?? '', '^{commit}');
      if (!baseSha || !headShaValue) throw notFound();
      const mergeBase = await git.mergeBase(baseSha, headShaValue);
      if (!mergeBase) throw notFound(); // GitHub: 404 "No common ancestor"
      const ahead = await git.count(`${baseSha}..${headShaValue}`);
      const behind = await git.count(`${headShaValue}..${baseSha}`);
      const status = ahead === 0 && behind === 0 ? 'identical' : behind === 0 ? 'ahead' : ahead === 0 ? 'behind' : 'diverged';
      const { perPage, from } = page(q, 250);
      const range = ahead === 0 ? [] : (await git.text(['rev-list', '--reverse', `${baseSha}..${headShaValue}`])).split('\n').filter(Boolean);
      const [baseCommit, mergeBaseCommit] = await git.readCommits([baseSha, mergeBase]);
      const comparison = `${api()}/compare/${m.params.base}...${m.params.head}`;
      return {
        status: 200,
        body: {
          url: comparison, html_url: `${web()}/compare/${m.params.base}...${m.params.head}`, permalink_url: `${web()}/compare/${baseSha}...${headShaValue}`,
          diff_url: `${web()}/compare/${m.params.base}...${m.params.head}.diff`, patch_url: `${web()}/compare/${m.params.base}...${m.params.head}.patch`,
          base_commit: restCommit(baseCommit!), merge_base_commit: restCommit(mergeBaseCommit!), status, ahead_by: ahead, behind_by: behind,
          total_commits: ahead, commits: (await git.readCommits(range.slice(from, from + perPage))).map(restCommit),
        },
      };
    },

    'pulls/list': async (_m, q, _b, rawPath) => {
      const state = q.get('state') ?? 'open';
      const head = q.get('head');
      const baseBranch = q.get('base');
      const matching = pulls
        .filter((p) => state === 'all' || p.state === state)
        .filter((p) => !head || `${opts.owner}:${p.head}` === head || (!head.includes(':') && p.head === head))
        .filter((p) => !baseBranch || p.base === baseBranch)
        // GitHub: sort created (default) or updated; direction desc by default for created, asc otherwise
        .sort((a, b) => {
          const by = q.get('sort') === 'updated' ? (x: EmulatedPull) => x.updated : (x: EmulatedPull) => x.created;
          const desc = (q.get('direction') ?? (q.get('sort') === 'updated' ? 'asc' : 'desc')) === 'desc';
          const order = by(a) === by(b) ? a.number - b.number : by(a) < by(b) ? -1 : 1;
          return desc ? -order : order;
        });
      const { perPage, pageNo, from } = page(q, 30);
      return { status: 200, body: await Promise.all(matching.slice(from, from + perPage).map(pullSimple)), headers: linkHeader(rawPath, q, pageNo, perPage, matching.length) };
    },
    'pulls/create': async (_m, _q, body) => {
      const head = String(body.head).replace(new RegExp(`^${opts.owner}:`), '');
      const p = await createPull({ title: body.title, body: body.body ?? null, head, base: body.base, draft: body.draft === true, maintainerCanModify: body.maintainer_can_modify !== false });
      return { status: 201, body: await pullFull(p), headers: { location: `${api()}/pulls/${p.number}` } };
    },
    'pulls/get': async (m) => ({ status: 200, body: await pullFull(requirePull(m.params.pull_number)) }),
    'pulls/update': async (m, _q, body) => {
      const p = requirePull(m.params.pull_number);
      if (body.title !== undefined) p.title = body.title;
      if (body.body !== undefined) p.body = body.body;
      if (body.base !== undefined) p.base = body.base;
      if (body.maintainer_can_modify !== undefined) p.maintainerCanModify = body.maintainer_can_modify;
      if (body.state === 'closed' && p.state === 'open') {
        p.state = 'closed';
        p.closed = now();
      } else if (body.state === 'open' && p.state === 'closed' && !p.merged) {
        p.state = 'open';
        p.closed = null;
      }
      p.updated = now();
      return { status: 200, body: await pullFull(p) };
    },
    'pulls/request-reviewers': async (m, _q, body) => {
      const p = requirePull(m.params.pull_number);
      const reviewers: string[] = body.reviewers ?? [];
      if (reviewers.includes(login)) throw unprocessable('Review cannot be requested from pull request author.');
      for (const r of reviewers) if (!p.reviewers.includes(r)) p.reviewers.push(r);
      p.updated = now();
      return { status: 201, body: await pullSimple(p) };
    },
    'pulls/merge': async (m, _q, body) => {
      const p = requirePull(m.params.pull_number);
      if (p.state !== 'open') throw new HttpFailure(405, 'Pull Request is not mergeable');
      const head = await headSha(p);
      if (body?.sha && body.sha !== head) throw new HttpFailure(409, 'Head branch was modified. Review and try the merge again.');
      const baseRef = `refs/heads/${p.base}`;
      const baseSha = (await git.resolve(baseRef))!;
      const tree = await git.mergeTrees(baseSha, head);
      if (!tree) throw new HttpFailure(405, 'Pull Request is not mergeable');
      const method = body?.merge_method ?? 'merge';
      const sig = { name: login, email: `${login}@users.noreply.github.com`, time: Math.floor(Date.now() / 1000), tz: '+0000' };
      const title = body?.commit_title ?? (method === 'merge' ? `Merge pull request #${p.number} from ${opts.owner}/${p.head}` : `${p.title} (#${p.number})`);
      const sha = await git.writeCommit({
        tree, parents: method === 'merge' ? [baseSha, head] : [baseSha], author: sig, committer: sig,
        message: `${title}\n\n${body?.commit_message ?? ''}`.trimEnd() + '\n', gpgsig: EMULATOR_SIGNATURE,
      });
      signed.add(sha); // GitHub signs the merges it makes
      await updateRef(baseRef, sha, baseSha, { viaPullRequest: true });
      Object.assign(p, { state: 'closed', merged: true, mergeCommit: sha, closed: now(), updated: now() });
      return { status: 200, body: { sha, merged: true, message: 'Pull Request successfully merged' } };
    },

    'repos/list-deployments': async (_m, q, _b, rawPath) => {
      const matching = deployments
        .filter((d) => (!q.get('sha') || d.sha === q.get('sha')) && (!q.get('ref') || d.ref === q.get('ref')) && (!q.get('task') || d.task === q.get('task')) && (!q.get('environment') || d.environment === q.get('environment')))
        .reverse();
      const { perPage, pageNo, from } = page(q, 30);
      return { status: 200, body: matching.slice(from, from + perPage).map(deploymentBody), headers: linkHeader(rawPath, q, pageNo, perPage, matching.length) };
    },
    'repos/create-deployment': async (_m, _q, body) => {
      const sha = (await git.resolve(String(body.ref), '^{commit}'));
      if (!sha) throw unprocessable(`No ref found for: ${body.ref}`);
      if (body.auto_merge !== false) violations.push('create-deployment without auto_merge: false: GitHub would try to merge the default branch into the ref');
      if (!Array.isArray(body.required_contexts)) violations.push('create-deployment without required_contexts: GitHub would require every commit status to pass');
      const environment = body.environment ?? 'production';
      const stamp = now();
      const d: EmulatedDeployment = {
        id: nextId++, sha, ref: String(body.ref), task: body.task ?? 'deploy', environment, payload: body.payload ?? {}, description: body.description ?? null,
        transient: body.transient_environment === true, production: body.production_environment ?? environment === 'production', created: stamp, updated: stamp, creator: login, statuses: [],
      };
      deployments.push(d);
      return { status: 201, body: deploymentBody(d), headers: { location: `${api()}/deployments/${d.id}` } };
    },
    'repos/get-deployment': async (m) => ({ status: 200, body: deploymentBody(requireDeployment(m.params.deployment_id)) }),
    'repos/list-deployment-statuses': async (m, q, _b, rawPath) => {
      const d = requireDeployment(m.params.deployment_id);
      const newest = [...d.statuses].reverse();
      const { perPage, pageNo, from } = page(q, 30);
      return { status: 200, body: newest.slice(from, from + perPage).map((st) => deploymentStatusBody(d, st)), headers: linkHeader(rawPath, q, pageNo, perPage, newest.length) };
    },
    'repos/create-deployment-status': async (m, _q, body) => {
      const d = requireDeployment(m.params.deployment_id);
      const st: EmulatedDeploymentStatus = { id: nextId++, state: body.state, description: body.description ?? '', environment: body.environment ?? d.environment, created: now(), creator: login };
      d.statuses.push(st);
      d.updated = st.created;
      // auto_inactive (default true): prior successful deployments of the environment become inactive,
      // for non-transient, non-production environments (GitHub's REST documentation)
      if (st.state === 'success' && body.auto_inactive !== false && !d.transient && !d.production) {
        for (const other of deployments) {
          if (other === d || other.environment !== st.environment || other.statuses.at(-1)?.state !== 'success') continue;
          other.statuses.push({ id: nextId++, state: 'inactive', description: '', environment: other.environment, created: st.created, creator: login });
        }
      }
      return { status: 201, body: deploymentStatusBody(d, st), headers: { location: `${api()}/deployments/${d.id}/statuses/${st.id}` } };
    },

    'issues/add-labels': async (m, _q, body) => {
      const p = requirePull(m.params.issue_number);
      const names = (Array.isArray(body) ? body : (body?.labels ?? [])).map((l: string | { name: string }) => (typeof l === 'string' ? l : l.name));
      for (const n of names) {
        repoLabels.add(n); // GitHub creates a label that does not exist yet
        if (!p.labels.includes(n)) p.labels.push(n);
      }
      return { status: 200, body: p.labels.map(label) };
    },
    'issues/add-assignees': async (m, _q, body) => {
      const p = requirePull(m.params.issue_number);
      for (const a of body?.assignees ?? []) if (!p.assignees.includes(a)) p.assignees.push(a);
      return { status: 201, body: issueOf(p) };
    },
    'issues/create-comment': async (m, _q, body) => {
      const p = requirePull(m.params.issue_number);
      const c = { id: nextId++, body: body.body, user: login, created: now() };
      p.comments.push(c);
      return { status: 201, body: comment(p, c), headers: { location: `${api()}/issues/comments/${c.id}` } };
    },
    'issues/list-comments': async (m, q, _b, rawPath) => {
      const p = requirePull(m.params.issue_number);
      const { perPage, pageNo, from } = page(q, 30);
      return { status: 200, body: p.comments.slice(from, from + perPage).map((c) => comment(p, c)), headers: linkHeader(rawPath, q, pageNo, perPage, p.comments.length) };
    },
  };

  /** create-tree: nested edits on top of base_tree, written bottom-up with `git mktree`. */
  async function createTree(baseTree: string | undefined, items: Array<{ path: string; mode: string; type: string; sha?: string | null; content?: string }>): Promise<string> {
    const load = (sha: string | undefined) => loadTreeNode(git, sha);
    const root = await load(baseTree);
    const descend = async (node: TreeNode, name: string): Promise<TreeNode> => {
      let child = node.children.get(name);
      if (!child) {
        const existing = node.entries.get(name);
        child = await load(existing?.type === 'tree' ? existing.sha : undefined);
        node.children.set(name, child);
      }
      return child;
    };
    for (const item of items) {
      const parts = item.path.split('/');
      if (parts.some((p) => p === '' || p === '.' || p === '..' || p === '.git')) throw unprocessable(`tree.path contains a malformed path component: ${item.path}`);
      if (item.sha != null && item.content != null) throw unprocessable('Only one of sha or content may be given for a tree entry');
      let node = root;
      for (const dir of parts.slice(0, -1)) node = await descend(node, dir);
      const name = parts[parts.length - 1]!;
      if (item.sha === null) {
        // GitHub: deleting a path that is not there is an error
        if (!node.entries.has(name) && !node.children.has(name)) throw unprocessable(`GitRPC::BadObjectState: cannot delete ${item.path}: no such path`);
        node.entries.delete(name);
        node.children.delete(name);
        continue;
      }
      const sha = item.content != null ? await git.writeBlob(Buffer.from(item.content, 'utf8')) : item.sha;
      if (!sha) throw unprocessable(`tree entry ${item.path} needs a sha or content`);
      const type = await git.typeOf(sha);
      if (item.type !== 'commit' && type !== item.type) throw unprocessable(`GitRPC::BadObjectState: ${item.type} ${sha} does not exist`);
      node.children.delete(name);
      node.entries.set(name, { mode: item.mode, type: item.type, sha });
    }
    return writeTreeNode(git, root);
  }

  // ---- the server ------------------------------------------------------------------------------
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void handle(req, Buffer.concat(chunks).toString('utf8'), res).catch((error: unknown) => {
        violations.push(`emulator crashed on ${req.method} ${req.url}: ${(error as Error).stack ?? String(error)}`);
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ message: 'emulator error' }));
      });
    });
  });
  keepAliveAsHosts(server);

  async function handle(req: http.IncomingMessage, rawBody: string, res: http.ServerResponse): Promise<void> {
    const method = req.method ?? 'GET';
    const url = new URL(req.url ?? '/', 'http://emulator');
    const record: RequestRecord = { method, path: `${url.pathname}${url.search}`, operationId: undefined, status: 0, write: isWrite(method) };
    const started = performance.now();
    res.once('finish', () => { record.ms = performance.now() - started; });
    log.push(record);
    if (rawBody) bodies.push(rawBody);
    if (url.pathname === '/graphql') {
      await handleGraphQL(req, rawBody, res, record);
      return;
    }
    const match = validator.findOperation(method, url.pathname);

    const send = (reply: Reply, as: 'operation' | 'basic-error') => {
      record.status = reply.status;
      if (match && as === 'operation') {
        for (const v of validator.validateResponse(match, reply.status, reply.body)) violations.push(`response: ${v}`);
      } else if (reply.body !== undefined) {
        for (const v of validateBasicError(reply.body)) violations.push(`response ${method} ${url.pathname} → ${reply.status}: ${v}`);
      }
      const headers: Record<string, string> = {
        'x-github-request-id': `EMU:${log.length}`, 'x-ratelimit-limit': '5000', 'x-ratelimit-remaining': '4999', 'x-ratelimit-used': '1',
        'x-ratelimit-reset': String(Math.floor(Date.now() / 1000) + 3600), 'x-ratelimit-resource': 'core', 'x-github-api-version-selected': '2022-11-28',
        ...(reply.body !== undefined ? { 'content-type': 'application/json; charset=utf-8' } : {}),
        ...reply.headers,
      };
      res.writeHead(reply.status, headers);
      const text = reply.body === undefined ? undefined : JSON.stringify(reply.body);
      record.bytesOut = text === undefined ? 0 : Buffer.byteLength(text);
      res.end(text);
    };
    const validateBasicError = (body: unknown) => validator.validateResponseSchema('basic-error', body);

    const auth = req.headers.authorization ?? '';
    const m = /^(token|bearer)\s+(.+)$/i.exec(auth);
    if (!m || m[2] !== opts.token) {
      send({ status: 401, body: { message: 'Bad credentials', documentation_url: DOCS, status: '401' } }, 'basic-error');
      return;
    }
    if (!match) {
      violations.push(`request: ${method} ${url.pathname} is no operation of GitHub's REST API`);
      send({ status: 404, body: { message: 'Not Found', documentation_url: DOCS, status: '404' } }, 'basic-error');
      return;
    }
    record.operationId = match.operation.operationId;
    if (match.params.owner !== opts.owner || match.params.repo !== opts.repo) {
      send({ status: 404, body: { message: 'Not Found', documentation_url: DOCS, status: '404' } }, 'basic-error');
      return;
    }

    let body: unknown;
    try {
      body = rawBody ? JSON.parse(rawBody) : undefined;
    } catch {
      violations.push(`request: ${method} ${url.pathname}: body is not JSON`);
      send({ status: 400, body: { message: 'Problems parsing JSON', documentation_url: DOCS, status: '400' } }, 'basic-error');
      return;
    }
    const requestErrors = validator.validateRequest(match, url.searchParams, body);
    if (requestErrors.length > 0) {
      violations.push(...requestErrors.map((e) => `request: ${e}`));
      send({ status: 422, body: { message: `Invalid request (emulator): ${requestErrors.join('; ')}`, documentation_url: DOCS, status: '422' } }, 'basic-error');
      return;
    }

    const fault = faults.find((f) => f.left > 0 && !f.field && (!f.match || f.match(method, url.pathname)));
    const sendFault = (f: Fault) => {
      if (f.secondaryRateLimit) {
        send({
          status: 403,
          headers: { 'retry-after': String(f.retryAfter ?? 1) },
          body: { message: 'You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID EMU.', documentation_url: 'https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits', status: '403' },
        }, 'basic-error');
      } else {
        send({ status: f.status, body: { message: f.message ?? (f.status >= 500 ? 'Server Error' : f.status === 403 ? 'Forbidden' : 'Validation Failed'), documentation_url: DOCS, status: String(f.status) } }, 'basic-error');
      }
    };
    if (fault) {
      fault.left--;
      if (!fault.afterApply) {
        sendFault(fault);
        return;
      }
    }

    const operationId = match.operation.operationId;
    if (isWrite(method) || (permissionFor(operationId) === 'deployments' && granted('deployments') === 'none')) {
      if (granted(permissionFor(operationId)) !== 'write') {
        send({ status: 403, body: { message: 'Resource not accessible by integration', documentation_url: DOCS, status: '403' } }, 'basic-error');
        return;
      }
    }
    const implementation = operations[operationId];
    if (!implementation) {
      violations.push(`request: ${operationId} (${method} ${match.template}) is not emulated`);
      send({ status: 404, body: { message: 'Not Found', documentation_url: DOCS, status: '404' } }, 'basic-error');
      return;
    }
    let reply: Reply;
    try {
      reply = await implementation(match, url.searchParams, body, url.pathname);
    } catch (error) {
      if (!(error instanceof HttpFailure)) throw error;
      reply = { status: error.status, body: error.body };
    }
    // applied; the answer is lost
    if (fault?.afterApply) return sendFault(fault);
    send(reply, 'operation');
  }

  // ---- GraphQL ---------------------------------------------------------------------------------
  const core: EmulatorCore = {
    owner: opts.owner, repo: opts.repo, login, git, webUrl: web, nodeId, now, pulls, repoLabels, deployments, signed,
    canWrite: (what) => granted(what) === 'write',
    canRead: (what) => granted(what) !== 'none',
    updateRef: (ref, sha, expected, how) => updateRef(ref, sha, expected, how).catch((error: unknown) => {
      throw error instanceof HttpFailure ? { status: error.status, body: error.body } : error;
    }),
    createPull: (input) => createPull(input).catch((error: unknown) => {
      if (!(error instanceof HttpFailure)) throw error;
      const details = ((error.body.errors ?? []) as Array<{ message?: string; field?: string }>).map((e) => e.message ?? `${e.field} is invalid`);
      throw { status: error.status, body: { message: details.join('; ') || error.message } };
    }),
  };
  const root = graphqlRoot(core);

  async function handleGraphQL(req: http.IncomingMessage, rawBody: string, res: http.ServerResponse, record: RequestRecord): Promise<void> {
    const reply = (status: number, body: unknown) => {
      record.status = status;
      res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'x-github-request-id': `EMU:${log.length}`, 'x-ratelimit-limit': '5000', 'x-ratelimit-remaining': '4999', 'x-ratelimit-resource': 'graphql' });
      const text = JSON.stringify(body);
      record.bytesOut = Buffer.byteLength(text);
      res.end(text);
    };
    const auth = /^(token|bearer)\s+(.+)$/i.exec(req.headers.authorization ?? '');
    if (!auth || auth[2] !== opts.token) {
      reply(401, { message: 'Bad credentials', documentation_url: 'https://docs.github.com/graphql' });
      return;
    }
    if (req.method !== 'POST') {
      violations.push(`graphql: ${req.method} instead of POST`);
      reply(404, { message: 'Not Found' });
      return;
    }
    const query = (() => {
      try {
        return String((JSON.parse(rawBody) as { query?: unknown }).query ?? '');
      } catch {
        return '';
      }
    })();
    const described = describeDocument(query);
    record.operationId = `graphql:${described.kind}(${described.fields.join(',')})`;
    record.write = described.kind === 'mutation';
    const fault = faults.find((f) => f.left > 0 && (!f.match || f.match('POST', '/graphql')) && (!f.field || described.fields.includes(f.field)));
    const sendFault = (f: Fault) => {
      if (f.secondaryRateLimit) {
        res.setHeader('retry-after', String(f.retryAfter ?? 1));
        reply(403, { message: 'You have exceeded a secondary rate limit. Please wait a few minutes before you try again.', documentation_url: 'https://docs.github.com/graphql/overview/rate-limits-and-query-limits-for-the-graphql-api#secondary-rate-limits' });
      } else reply(f.status, { message: f.message ?? (f.status >= 500 ? 'Server Error' : 'Forbidden'), documentation_url: DOCS });
    };
    if (fault) {
      fault.left--;
      if (!fault.afterApply) return sendFault(fault);
    }
    const result = await executeGraphQL(rawBody, root, violations);
    // applied; the answer is lost
    if (fault?.afterApply) return sendFault(fault);
    reply(result.status, result.body);
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url: base,
    git,
    violations,
    log,
    bodies,
    pulls,
    deployments,
    signed,
    protect(branch, rules) {
      protection.set(branch, rules);
    },
    get requests() {
      return log.length;
    },
    inject(fault) {
      faults.push({ ...fault, left: fault.times ?? 1 });
    },
    onBeforeRefUpdate(hook) {
      refHooks.push(hook);
    },
    resetLog() {
      log.length = 0;
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        git.close();
        server.closeAllConnections();
        server.close((e) => (e ? reject(e) : resolve()));
      }),
  };
}
