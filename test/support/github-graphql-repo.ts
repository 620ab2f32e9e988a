import { loadTreeNode, writeTreeNode, type BareRepo, type RawCommit, type TreeEntry, type TreeNode } from './github-git.ts';
import { connection, GitHubGraphQLError } from './github-graphql.ts';

/**
 * The GraphQL objects of the GitHub emulator: a Repository over the real bare repository (refs,
 * commits with their history and files, trees, blobs), its pull requests, labels and deployments,
 * and the mutations lastgood sends (createRef, updateRef, deleteRef, createCommitOnBranch,
 * createPullRequest, addLabelsToLabelable, requestReviews, addAssigneesToAssignable).
 *
 * Objects are plain objects whose properties are values or functions of the field's arguments
 * (github-graphql.ts executes them with graphql-js). Only what lastgood asks for is here: any other
 * field of GitHub's schema is reported as not emulated.
 *
 * GitHub's behaviour that matters and is emulated:
 * - `createCommitOnBranch` checks `expectedHeadOid` against the branch (compare-and-swap), writes
 *   additions as regular files (mode 100644: the input has no mode), signs the commit (the commit
 *   carries a `gpgsig` header and is reported Verified), authors it as the token's user with
 *   GitHub as committer, and is subject to branch protection (a pull-request rule refuses it);
 * - `Commit.history(path:)` is `git log <commit> -- <path>` (git rev-list with history
 *   simplification), newest first, as GitHub serves it;
 * - errors have GitHub's `type` (NOT_FOUND, FORBIDDEN, UNPROCESSABLE, STALE_DATA).
 */

export interface EmulatedDeploymentStatus {
  id: number;
  state: 'error' | 'failure' | 'inactive' | 'in_progress' | 'queued' | 'pending' | 'success';
  description: string;
  environment: string;
  created: string;
  creator: string;
}

export interface EmulatedDeployment {
  id: number;
  sha: string;
  ref: string;
  task: string;
  environment: string;
  payload: Record<string, unknown> | string;
  description: string | null;
  transient: boolean;
  production: boolean;
  created: string;
  updated: string;
  creator: string;
  statuses: EmulatedDeploymentStatus[];
}

export interface GraphQLPull {
  number: number;
  title: string;
  body: string | null;
  head: string;
  base: string;
  state: 'open' | 'closed';
  draft: boolean;
  merged: boolean;
  labels: string[];
  assignees: string[];
  reviewers: string[];
}

/** What the emulator shares with its GraphQL objects. */
export interface EmulatorCore {
  owner: string;
  repo: string;
  /** the token's user */
  login: string;
  git: BareRepo;
  webUrl(): string;
  nodeId(kind: string, key: string | number): string;
  now(): string;
  pulls: GraphQLPull[];
  repoLabels: Set<string>;
  deployments: EmulatedDeployment[];
  /** commits the emulator signed (createCommitOnBranch, merges, REST commits of an installation token) */
  signed: Set<string>;
  /** the token's permissions: read-only ones refuse writes */
  canWrite(what: 'contents' | 'pullRequests' | 'issues' | 'deployments'): boolean;
  canRead(what: 'deployments'): boolean;
  /** a ref update as the emulator does them all: hooks, branch protection, compare-and-swap */
  updateRef(ref: string, sha: string, expected: string | undefined, how: { force?: boolean; viaPullRequest?: boolean }): Promise<void>;
  createPull(input: { title: string; body: string | null; head: string; base: string; draft: boolean; maintainerCanModify: boolean }): Promise<GraphQLPull>;
  /** refusals are thrown as { status, message } for REST; GraphQL maps them */
}

const MODE: Record<string, number> = { '100644': 0o100644, '100755': 0o100755, '120000': 0o120000, '040000': 0o040000, '160000': 0o160000 };

/** git's "is this binary" heuristic (a NUL in the first 8000 bytes), as GitHub's isBinary mostly agrees. */
const isBinary = (bytes: Buffer) => bytes.subarray(0, 8000).includes(0);

/** GitTimestamp keeps the author's own offset ("2026-11-01T12:00:00+02:00"). */
function gitTimestamp(seconds: number, tz: string): string {
  const sign = tz.startsWith('-') ? -1 : 1;
  const minutes = sign * (Number(tz.slice(1, 3)) * 60 + Number(tz.slice(3, 5)));
  const local = new Date((seconds + minutes * 60) * 1000).toISOString().slice(0, 19);
  return `${local}${tz.slice(0, 3)}:${tz.slice(3, 5)}`;
}

export function graphqlRoot(core: EmulatorCore): Record<string, unknown> {
  const { git } = core;
  const repositoryId = core.nodeId('Repository', 4242);
  const forbidden = () => new GitHubGraphQLError('FORBIDDEN', 'Resource not accessible by integration');
  const need = (what: 'contents' | 'pullRequests' | 'issues') => {
    if (!core.canWrite(what)) throw forbidden();
  };

  const actor = (s: RawCommit['author']) => ({ name: s.name, email: s.email, date: gitTimestamp(s.time, s.tz), user: null });
  const user = (login: string) => ({ __typename: login.endsWith('[bot]') ? 'Bot' : 'User', id: core.nodeId('User', login), login });

  const blobNode = async (sha: string) => {
    const bytes = await git.readBlob(sha);
    const binary = isBinary(bytes);
    return { __typename: 'Blob', id: core.nodeId('Blob', sha), oid: sha, byteSize: bytes.length, isBinary: binary, isTruncated: false, text: binary ? null : bytes.toString('utf8') };
  };
  const entryNode = (e: TreeEntry, dir: string) => ({
    name: e.path, nameRaw: Buffer.from(e.path).toString('base64'), mode: MODE[e.mode] ?? parseInt(e.mode, 8), oid: e.sha, type: e.type,
    path: dir ? `${dir}/${e.path}` : e.path,
    object: () => (e.type === 'commit' ? null : objectNode(e.sha)),
  });
  const treeNode = (sha: string, dir = '') => ({
    __typename: 'Tree', id: core.nodeId('Tree', sha), oid: sha,
    entries: async () => (await git.readTree(sha)).map((e) => entryNode(e, dir)),
  });
  /** The tree entry at `path` in a commit's tree (its mode is in the parent tree), or null. */
  const fileAt = async (raw: RawCommit, path: string) => {
    const parts = path.split('/').filter(Boolean);
    if (parts.length === 0) return null;
    let tree = raw.tree;
    for (const [i, name] of parts.entries()) {
      const entries = await git.readTree(tree).catch(() => undefined);
      const e = entries?.find((x) => x.path === name);
      if (!e) return null;
      if (i === parts.length - 1) return entryNode(e, parts.slice(0, -1).join('/'));
      if (e.type !== 'tree') return null; // git does not go through a file or a symlink
      tree = e.sha;
    }
    return null;
  };

  const commitNode = (raw: RawCommit): Record<string, unknown> => ({
    __typename: 'Commit', id: core.nodeId('Commit', raw.sha), oid: raw.sha, abbreviatedOid: raw.sha.slice(0, 7),
    url: `${core.webUrl()}/commit/${raw.sha}`,
    message: raw.message.replace(/\n$/, ''),
    messageHeadline: raw.message.split('\n')[0] ?? '',
    tree: () => treeNode(raw.tree),
    parents: (args: { first?: number; last?: number }) => connection(raw.parents.map(lazyCommitNode), args),
    author: actor(raw.author),
    committer: actor(raw.committer),
    authoredDate: new Date(raw.author.time * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z'),
    committedDate: new Date(raw.committer.time * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z'),
    file: ({ path }: { path: string }) => fileAt(raw, path),
    signature: () => (core.signed.has(raw.sha)
      ? { __typename: 'GpgSignature', isValid: true, state: 'VALID', wasSignedByGitHub: true, email: 'noreply@github.com', signer: null, payload: '', signature: '', verifiedAt: new Date().toISOString() }
      : null),
    history: async (args: { first?: number; last?: number; path?: string }) => {
      if (args.first === undefined) throw new GitHubGraphQLError('UNPROCESSABLE', 'history needs first (emulated)');
      // one more than asked tells whether there is a next page; totalCount is counted only when asked
      const out = await git.text(['rev-list', `--max-count=${args.first + 1}`, raw.sha, '--', ...(args.path ? [args.path] : [])]);
      const shas = out.split('\n').filter(Boolean);
      const page = await git.readCommits(shas.slice(0, args.first));
      return {
        nodes: page.map(commitNode),
        edges: page.map((c, i) => ({ node: commitNode(c), cursor: Buffer.from(`${raw.sha} ${i}`).toString('base64') })),
        totalCount: async () => Number(await git.text(['rev-list', '--count', raw.sha, '--', ...(args.path ? [args.path] : [])])),
        pageInfo: { hasNextPage: shas.length > args.first, hasPreviousPage: false, startCursor: null, endCursor: null },
      };
    },
    deployments: (args: { environments?: string[]; first?: number; last?: number }) =>
      connection(core.deployments.filter((d) => d.sha === raw.sha && (!args.environments || args.environments.includes(d.environment))).map(deploymentNode), args),
  });
  /**
   * A commit known by its oid, read only when a field other than the oid is asked: a history page
   * asks every commit's parents, mostly for their oids (reading each would be the emulator's own
   * cost, not GitHub's).
   */
  const lazyCommitNode = (sha: string): Record<string, unknown> => {
    let full: Promise<Record<string, unknown>> | undefined;
    const node: Record<string, unknown> = { __typename: 'Commit', id: core.nodeId('Commit', sha), oid: sha, abbreviatedOid: sha.slice(0, 7) };
    for (const field of ['url', 'message', 'messageHeadline', 'tree', 'parents', 'author', 'committer', 'authoredDate', 'committedDate', 'file', 'signature', 'history', 'deployments']) {
      node[field] = async (args: unknown) => {
        const value = (await (full ??= git.readCommit(sha).then(commitNode)))[field];
        return typeof value === 'function' ? (value as (a: unknown) => unknown)(args) : value;
      };
    }
    return node;
  };
  const objectNode = async (sha: string) => {
    const type = await git.typeOf(sha);
    if (type === 'commit') return commitNode(await git.readCommit(sha));
    if (type === 'tree') return treeNode(sha);
    if (type === 'blob') return blobNode(sha);
    return null;
  };

  const refNode = (name: string) => {
    const sha = git.readRef(name);
    if (!sha) return null;
    return {
      id: core.nodeId('Ref', name), name: name.replace(/^refs\/(heads|tags)\//, ''), prefix: name.startsWith('refs/tags/') ? 'refs/tags/' : 'refs/heads/',
      target: () => objectNode(sha),
    };
  };
  const refFromId = (id: string) => {
    const decoded = Buffer.from(id, 'base64').toString('utf8');
    if (!decoded.startsWith('Ref:')) throw new GitHubGraphQLError('NOT_FOUND', `Could not resolve to a node with the global id of '${id}'`);
    return decoded.slice(4);
  };

  const pullNode = (p: GraphQLPull): Record<string, unknown> => ({
    __typename: 'PullRequest', id: core.nodeId('PullRequest', p.number), number: p.number, url: `${core.webUrl()}/pull/${p.number}`,
    title: p.title, body: p.body ?? '', headRefName: p.head, baseRefName: p.base, isDraft: p.draft,
    headRepositoryOwner: { __typename: 'Organization', login: core.owner },
    state: p.merged ? 'MERGED' : p.state === 'open' ? 'OPEN' : 'CLOSED',
    headRefOid: async () => (await git.resolve(`refs/heads/${p.head}`)) ?? '0'.repeat(40),
    labels: (args: { first?: number; last?: number }) => connection(p.labels.map(labelNode), args),
    reviewRequests: (args: { first?: number; last?: number }) =>
      connection(p.reviewers.map((login) => ({ id: core.nodeId('ReviewRequest', `${p.number}/${login}`), requestedReviewer: user(login) })), args),
    // reviews are not emulated: nobody reviews in these tests
    latestReviews: (args: { first?: number; last?: number }) => connection([], args),
    assignees: (args: { first?: number; last?: number }) => connection(p.assignees.map(user), args),
  });
  const pullFromId = (id: string) => {
    const decoded = Buffer.from(id, 'base64').toString('utf8');
    const p = decoded.startsWith('PullRequest:') ? core.pulls.find((x) => x.number === Number(decoded.slice('PullRequest:'.length))) : undefined;
    if (!p) throw new GitHubGraphQLError('NOT_FOUND', `Could not resolve to a node with the global id of '${id}'`);
    return p;
  };
  const labelNode = (name: string) => ({ __typename: 'Label', id: core.nodeId('Label', name), name });
  const idName = (id: string, kind: string) => {
    const decoded = Buffer.from(id, 'base64').toString('utf8');
    if (!decoded.startsWith(`${kind}:`)) throw new GitHubGraphQLError('NOT_FOUND', `Could not resolve to a node with the global id of '${id}'`);
    return decoded.slice(kind.length + 1);
  };

  const DEPLOYMENT_STATE: Record<EmulatedDeploymentStatus['state'], string> = {
    success: 'ACTIVE', inactive: 'INACTIVE', failure: 'FAILURE', error: 'ERROR', pending: 'PENDING', in_progress: 'IN_PROGRESS', queued: 'QUEUED',
  };
  const statusNode = (d: EmulatedDeployment, s: EmulatedDeploymentStatus) => ({
    id: core.nodeId('DeploymentStatus', s.id), state: s.state.toUpperCase(), description: s.description, environment: s.environment, createdAt: s.created, updatedAt: s.created,
    creator: user(s.creator), deployment: () => deploymentNode(d),
  });
  const deploymentNode = (d: EmulatedDeployment): Record<string, unknown> => {
    const newestFirst = [...d.statuses].reverse();
    const latest = newestFirst[0];
    return {
      id: core.nodeId('Deployment', d.id), databaseId: d.id, commitOid: d.sha, createdAt: d.created, updatedAt: d.updated, environment: d.environment,
      originalEnvironment: d.environment, latestEnvironment: latest?.environment ?? d.environment, task: d.task, description: d.description,
      payload: typeof d.payload === 'string' ? d.payload : JSON.stringify(d.payload),
      state: latest ? DEPLOYMENT_STATE[latest.state] : 'PENDING',
      latestStatus: latest ? statusNode(d, latest) : null,
      statuses: (args: { first?: number; last?: number }) => connection(newestFirst.map((s) => statusNode(d, s)), args),
      commit: async () => commitNode(await git.readCommit(d.sha)),
      creator: user(d.creator),
    };
  };

  const repository = {
    __typename: 'Repository', id: repositoryId, name: core.repo, nameWithOwner: `${core.owner}/${core.repo}`,
    ref: ({ qualifiedName }: { qualifiedName: string }) => refNode(qualifiedName.startsWith('refs/') ? qualifiedName : `refs/heads/${qualifiedName}`),
    object: async ({ expression, oid }: { expression?: string; oid?: string }) => {
      const name = oid ?? expression;
      if (!name) return null;
      const found = await git.object(name);
      return found ? objectNode(found.sha) : null;
    },
    pullRequests: (args: { first?: number; last?: number; headRefName?: string; baseRefName?: string; states?: string[]; orderBy?: { field: string; direction: string } }) => {
      const state = (p: GraphQLPull) => (p.merged ? 'MERGED' : p.state === 'open' ? 'OPEN' : 'CLOSED');
      let list = core.pulls.filter((p) => (!args.headRefName || p.head === args.headRefName) && (!args.baseRefName || p.base === args.baseRefName) && (!args.states || args.states.includes(state(p))));
      list = [...list].sort((a, b) => a.number - b.number);
      if (args.orderBy?.direction === 'DESC') list.reverse();
      return connection(list.map(pullNode), args);
    },
    label: ({ name }: { name: string }) => (core.repoLabels.has(name) ? labelNode(name) : null),
    deployments: (args: { environments?: string[]; first?: number; last?: number; orderBy?: { field: string; direction: string } }) => {
      if (!core.canRead('deployments')) throw forbidden();
      let list = core.deployments.filter((d) => !args.environments || args.environments.includes(d.environment));
      if (args.orderBy?.direction === 'DESC') list = [...list].reverse();
      return connection(list.map(deploymentNode), args);
    },
  };
  const checkRepo = (id: string | undefined, nameWithOwner?: string) => {
    if (id !== undefined && id !== repositoryId) throw new GitHubGraphQLError('NOT_FOUND', `Could not resolve to a node with the global id of '${id}'`);
    if (nameWithOwner !== undefined && nameWithOwner !== `${core.owner}/${core.repo}`) throw new GitHubGraphQLError('NOT_FOUND', `Could not resolve to a Repository with the name '${nameWithOwner}'.`);
  };
  /** A REST-style refusal from core.updateRef ({ status, body.message }) as GitHub's GraphQL error. */
  const asGraphQLError = (error: unknown): Error => {
    const e = error as { status?: number; body?: { message?: string }; message?: string };
    if (typeof e?.status === 'number') return new GitHubGraphQLError(e.status === 403 ? 'FORBIDDEN' : 'UNPROCESSABLE', e.body?.message ?? e.message ?? 'refused');
    return error as Error;
  };

  return {
    repository: ({ owner, name }: { owner: string; name: string }) => {
      if (owner !== core.owner || name !== core.repo) throw new GitHubGraphQLError('NOT_FOUND', `Could not resolve to a Repository with the name '${owner}/${name}'.`);
      return repository;
    },
    user: ({ login }: { login: string }) => user(login),

    createRef: async ({ input }: { input: { repositoryId: string; name: string; oid: string; clientMutationId?: string } }) => {
      checkRepo(input.repositoryId);
      need('contents');
      if (!/^refs\/[^/]+\/.+/.test(input.name)) throw new GitHubGraphQLError('UNPROCESSABLE', `Reference name must start with 'refs/' and have at least two slashes.`);
      if (!(await git.typeOf(input.oid))) throw new GitHubGraphQLError('UNPROCESSABLE', `Object ${input.oid} does not exist`);
      if (git.readRef(input.name)) throw new GitHubGraphQLError('UNPROCESSABLE', `A ref named "${input.name}" already exists in the repository.`);
      await core.updateRef(input.name, input.oid, undefined, {}).catch((e) => { throw asGraphQLError(e); });
      return { clientMutationId: input.clientMutationId ?? null, ref: refNode(input.name) };
    },
    updateRef: async ({ input }: { input: { refId: string; oid: string; force?: boolean; clientMutationId?: string } }) => {
      need('contents');
      const name = refFromId(input.refId);
      const current = git.readRef(name);
      if (!current) throw new GitHubGraphQLError('NOT_FOUND', `Could not resolve to a node with the global id of '${input.refId}'`);
      if (!input.force && !(await git.isAncestor(current, input.oid))) throw new GitHubGraphQLError('UNPROCESSABLE', 'Update is not a fast forward');
      await core.updateRef(name, input.oid, current, { force: input.force === true }).catch((e) => { throw asGraphQLError(e); });
      return { clientMutationId: input.clientMutationId ?? null, ref: refNode(name) };
    },
    deleteRef: async ({ input }: { input: { refId: string; clientMutationId?: string } }) => {
      need('contents');
      const name = refFromId(input.refId);
      if (!git.readRef(name)) throw new GitHubGraphQLError('NOT_FOUND', `Could not resolve to a node with the global id of '${input.refId}'`);
      await git.deleteRef(name);
      return { clientMutationId: input.clientMutationId ?? null };
    },
    createCommitOnBranch: async ({ input }: { input: { branch: { repositoryNameWithOwner?: string; branchName?: string; id?: string }; expectedHeadOid: string; message: { headline: string; body?: string }; fileChanges?: { additions?: Array<{ path: string; contents: string }>; deletions?: Array<{ path: string }> }; clientMutationId?: string } }) => {
      const branchName = input.branch.id ? refFromId(input.branch.id).replace(/^refs\/heads\//, '') : input.branch.branchName;
      checkRepo(undefined, input.branch.id ? undefined : input.branch.repositoryNameWithOwner);
      if (!branchName) throw new GitHubGraphQLError('UNPROCESSABLE', 'A branch name or id is required');
      need('contents');
      const ref = `refs/heads/${branchName}`;
      const head = git.readRef(ref);
      if (!head) throw new GitHubGraphQLError('NOT_FOUND', `Could not resolve to a Ref with the name '${branchName}'.`);
      if (head !== input.expectedHeadOid) {
        throw new GitHubGraphQLError('STALE_DATA', `Expected branch to point to "${input.expectedHeadOid}" but it did not. Pull and try again.`);
      }
      const parent = await git.readCommit(head);
      const tree = await editTree(git, parent.tree, input.fileChanges ?? {}, head);
      const stamp = Math.floor(Date.now() / 1000);
      const author = { name: core.login, email: `${core.login}@users.noreply.github.com`, time: stamp, tz: '+0000' };
      const committer = { name: 'GitHub', email: 'noreply@github.com', time: stamp, tz: '+0000' };
      const message = input.message.body ? `${input.message.headline}\n\n${input.message.body}` : input.message.headline;
      const sha = await git.writeCommit({ tree, parents: [head], author, committer, message: message.endsWith('\n') ? message : `${message}\n`, gpgsig: EMULATOR_SIGNATURE });
      core.signed.add(sha);
      await core.updateRef(ref, sha, head, {}).catch((e) => {
        // the branch moved between the check and the write: the same compare-and-swap failure
        const moved = /not a fast forward|already exists/i.test((e as { body?: { message?: string } })?.body?.message ?? '');
        throw moved ? new GitHubGraphQLError('STALE_DATA', `Expected branch to point to "${input.expectedHeadOid}" but it did not. Pull and try again.`) : asGraphQLError(e);
      });
      return { clientMutationId: input.clientMutationId ?? null, commit: commitNode(await git.readCommit(sha)), ref: refNode(ref) };
    },
    createPullRequest: async ({ input }: { input: { repositoryId: string; baseRefName: string; headRefName: string; title: string; body?: string; draft?: boolean; maintainerCanModify?: boolean; clientMutationId?: string } }) => {
      checkRepo(input.repositoryId);
      need('pullRequests');
      const p = await core.createPull({ title: input.title, body: input.body ?? null, head: input.headRefName, base: input.baseRefName, draft: input.draft === true, maintainerCanModify: input.maintainerCanModify !== false })
        .catch((e) => { throw asGraphQLError(e); });
      return { clientMutationId: input.clientMutationId ?? null, pullRequest: pullNode(p) };
    },
    addLabelsToLabelable: ({ input }: { input: { labelableId: string; labelIds: string[]; clientMutationId?: string } }) => {
      need('issues');
      const p = pullFromId(input.labelableId);
      for (const id of input.labelIds) {
        const name = idName(id, 'Label');
        if (!core.repoLabels.has(name)) throw new GitHubGraphQLError('NOT_FOUND', `Could not resolve to a node with the global id of '${id}'`);
        if (!p.labels.includes(name)) p.labels.push(name);
      }
      return { clientMutationId: input.clientMutationId ?? null, labelable: pullNode(p) };
    },
    requestReviews: ({ input }: { input: { pullRequestId: string; userIds?: string[]; union?: boolean; clientMutationId?: string } }) => {
      need('pullRequests');
      const p = pullFromId(input.pullRequestId);
      const logins = (input.userIds ?? []).map((id) => idName(id, 'User'));
      if (logins.includes(core.login)) throw new GitHubGraphQLError('UNPROCESSABLE', 'Review cannot be requested from pull request author.');
      if (!input.union) p.reviewers.length = 0;
      for (const l of logins) if (!p.reviewers.includes(l)) p.reviewers.push(l);
      return { clientMutationId: input.clientMutationId ?? null, pullRequest: pullNode(p) };
    },
    addAssigneesToAssignable: ({ input }: { input: { assignableId: string; assigneeIds: string[]; clientMutationId?: string } }) => {
      need('issues');
      const p = pullFromId(input.assignableId);
      for (const id of input.assigneeIds) {
        const login = idName(id, 'User');
        if (!p.assignees.includes(login)) p.assignees.push(login);
      }
      return { clientMutationId: input.clientMutationId ?? null, assignable: pullNode(p) };
    },
  };
}

/** The shape of a GitHub-made signature: the emulator's commits carry one so `git cat-file` shows it, and it is recorded as Verified. */
export const EMULATOR_SIGNATURE = '-----BEGIN PGP SIGNATURE-----\n\nwsBcBAABCAAQBQJlemulated-by-lastgood-tests\n=EMUL\n-----END PGP SIGNATURE-----';

/** createCommitOnBranch's file changes on a tree: additions are regular files (100644), deletions must exist. */
async function editTree(git: BareRepo, baseTree: string, changes: { additions?: Array<{ path: string; contents: string }>; deletions?: Array<{ path: string }> }, head: string): Promise<string> {
  const load = (sha: string | undefined) => loadTreeNode(git, sha);
  const root = await load(baseTree);
  const walk = async (path: string, create: boolean): Promise<{ node: TreeNode; name: string } | undefined> => {
    const parts = path.split('/');
    if (parts.some((p) => p === '' || p === '.' || p === '..' || p === '.git')) throw new GitHubGraphQLError('UNPROCESSABLE', `Invalid path: ${path}`);
    let node = root;
    for (const dir of parts.slice(0, -1)) {
      let child = node.children.get(dir);
      if (!child) {
        const existing = node.entries.get(dir);
        if (!existing && !create) return undefined;
        if (existing && existing.type !== 'tree') throw new GitHubGraphQLError('UNPROCESSABLE', `A file exists where a folder is needed: ${path}`);
        child = await load(existing?.sha);
        node.children.set(dir, child);
      }
      node = child;
    }
    return { node, name: parts[parts.length - 1]! };
  };
  for (const d of changes.deletions ?? []) {
    const at = await walk(d.path, false);
    if (!at || (!at.node.entries.has(at.name) && !at.node.children.has(at.name))) {
      throw new GitHubGraphQLError('UNPROCESSABLE', `A path was requested for deletion which does not exist as of commit oid \`${head}\``);
    }
    at.node.entries.delete(at.name);
    at.node.children.delete(at.name);
  }
  for (const a of changes.additions ?? []) {
    const at = (await walk(a.path, true))!;
    const sha = await git.writeBlob(Buffer.from(a.contents, 'base64'));
    at.node.children.delete(at.name);
    at.node.entries.set(at.name, { mode: '100644', type: 'blob', sha });
  }
  return writeTreeNode(git, root);
}
