import type http from 'node:http';
import { hostApiValidator } from './api-description.ts';
import { closeModelRequest, ForgeHttpError, openModelRequest, startForgeEmulator, type ForgeEmulator, type ForgeModel, type ModelRequest } from './forge-emulator.ts';
import type { GitHttpServer } from './git-http-server.ts';

/**
 * Gitea/Forgejo API v1: the pull-request endpoints lastgood uses, validated against Gitea 1.22's
 * swagger (fixtures/host-api/gitea-1.22.json). Clone URLs are `/OWNER/REPO.git`, passed on to the
 * git server. Tokens: `Authorization: token|Bearer <t>`, or Basic with the token as password.
 */

export interface HostEmulatorOptions {
  git: GitHttpServer;
  bareRepo: string;
  owner: string;
  repo: string;
  token: string;
  /** users that exist (reviewers, assignees); the token's own user is "lastgood-bot" */
  users?: string[];
  /** labels that exist in the repository */
  labels?: string[];
  /** opening a request is refused with this status and message (a rule of the host) */
  refuseCreate?: { status: number; message: string };
}

export function tokenOf(headers: http.IncomingHttpHeaders): string | undefined {
  const h = headers.authorization;
  if (!h) return undefined;
  const [scheme = '', value = ''] = h.split(/\s+/, 2);
  if (/^(bearer|token)$/i.test(scheme)) return value;
  if (/^basic$/i.test(scheme)) {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    return decoded.slice(decoded.indexOf(':') + 1);
  }
  return undefined;
}

export async function startGiteaEmulator(opts: HostEmulatorOptions): Promise<ForgeEmulator> {
  const users = new Set(['lastgood-bot', ...(opts.users ?? [])]);
  const labels = new Map((opts.labels ?? []).map((name, i) => [name, i + 1]));
  const userJson = (login: string) => ({ id: [...users].indexOf(login) + 1, login, login_name: login, full_name: login, email: `${login}@example.com`, avatar_url: `https://gitea.example/avatars/${login}`, html_url: `https://gitea.example/${login}`, language: 'en', is_admin: false, restricted: false, active: true, prohibit_login: false, location: '', website: '', description: '', visibility: 'public', followers_count: 0, following_count: 0, starred_repos_count: 0, username: login, created: '2026-01-01T00:00:00Z', last_login: '2026-01-01T00:00:00Z' });
  const labelJson = (name: string) => ({ id: labels.get(name)!, name, color: '00aabb', description: '', exclusive: false, is_archived: false, url: `https://gitea.example/api/v1/repos/${opts.owner}/${opts.repo}/labels/${labels.get(name)}` });
  const branchJson = (model: ForgeModel, ref: string, sha: string) => ({ label: ref, ref, sha, repo_id: 1, repo: { id: 1, name: opts.repo, full_name: `${opts.owner}/${opts.repo}`, owner: userJson('lastgood-bot'), html_url: `${model.base}/${opts.owner}/${opts.repo}` } });
  const pullJson = (model: ForgeModel, p: ModelRequest) => ({
    id: p.id, number: p.number, url: `${model.base}/api/v1/repos/${opts.owner}/${opts.repo}/pulls/${p.number}`, html_url: `${model.base}/${opts.owner}/${opts.repo}/pulls/${p.number}`,
    diff_url: `${model.base}/${opts.owner}/${opts.repo}/pulls/${p.number}.diff`, patch_url: `${model.base}/${opts.owner}/${opts.repo}/pulls/${p.number}.patch`,
    user: userJson(p.author), title: p.title, body: p.body, labels: p.labels.map(labelJson), milestone: null,
    assignee: p.assignees[0] ? userJson(p.assignees[0]) : null, assignees: p.assignees.map(userJson), requested_reviewers: p.reviewers.map(userJson),
    state: p.state === 'open' ? 'open' : 'closed', draft: p.draft, is_locked: false, comments: p.comments.length, review_comments: 0, additions: 1, deletions: 1, changed_files: 1,
    head: branchJson(model, p.source, p.sha), base: branchJson(model, p.target, p.sha), merge_base: p.sha, mergeable: true, merged: p.state === 'merged', merged_at: p.mergedAt ?? null, merge_commit_sha: p.mergeCommit ?? null, merged_by: p.state === 'merged' ? userJson('lastgood-bot') : null,
    allow_maintainer_edit: true, due_date: null, created_at: p.created, updated_at: p.updated, closed_at: p.closedAt ?? null, pin_order: 0,
  });
  const find = (model: ForgeModel, index: string) => {
    const p = model.requests.find((r) => r.number === Number(index));
    if (!p) throw new ForgeHttpError(404, { message: 'pull request does not exist', url: 'https://gitea.example/api/swagger' });
    return p;
  };
  const unknownUsers = (names: string[]) => names.filter((n) => !users.has(n));

  return startForgeEmulator({
    name: 'Gitea',
    validator: hostApiValidator('gitea-1.22.json'),
    git: opts.git,
    bareRepo: opts.bareRepo,
    gitPath: (p) => (/\.git\/(info\/refs|git-upload-pack|git-receive-pack)$/.test(p) ? p : undefined),
    authenticate: (headers) => (tokenOf(headers) === opts.token ? 'lastgood-bot' : undefined),
    errorBody: (_status, message) => ({ message, url: 'https://gitea.example/api/swagger' }),
    async handle(req, model) {
      const body = (req.body ?? {}) as Record<string, unknown>;
      switch (req.route) {
        case 'GET /api/v1/repos/{owner}/{repo}/pulls': {
          const state = req.query.get('state') ?? 'open';
          const limit = Number(req.query.get('limit') ?? 30);
          const page = Number(req.query.get('page') ?? 1);
          // a merged pull request is closed; newest first, or most recently updated (`issue.updated_unix DESC`, models/issues/pull_list.go)
          const all = model.requests.filter((p) => state === 'all' || (state === 'open' ? p.state === 'open' : p.state !== 'open')).reverse();
          if (req.query.get('sort') === 'recentupdate') all.sort((a, b) => Date.parse(b.updated) - Date.parse(a.updated) || b.number - a.number);
          return { status: 200, body: all.slice((page - 1) * limit, page * limit).map((p) => pullJson(model, p)) };
        }
        case 'POST /api/v1/repos/{owner}/{repo}/pulls': {
          if (opts.refuseCreate) throw new ForgeHttpError(opts.refuseCreate.status, { message: opts.refuseCreate.message, url: 'https://gitea.example/api/swagger' });
          const head = String(body.head);
          const base = String(body.base);
          const sha = await model.branchHead(head);
          if (!sha || !(await model.branchHead(base))) throw new ForgeHttpError(404, { message: `head or base branch does not exist`, url: 'https://gitea.example/api/swagger' });
          const open = model.requests.find((p) => p.state === 'open' && p.source === head && p.target === base);
          if (open) throw new ForgeHttpError(409, { message: `pull request already exists for these targets [id: ${open.id}, issue_id: ${open.id}, head_repo_id: 1, base_repo_id: 1, head_branch: ${head}, base_branch: ${base}]`, url: 'https://gitea.example/api/swagger' });
          const assignees = (body.assignees as string[] | undefined) ?? [];
          if (unknownUsers(assignees).length) throw new ForgeHttpError(422, { message: `user does not exist [uid: 0, name: ${unknownUsers(assignees)[0]}]`, url: 'https://gitea.example/api/swagger' });
          const p = openModelRequest(model, { source: head, target: base, title: String(body.title), body: String(body.body ?? ''), author: 'lastgood-bot', sha, assignees, draft: /^(WIP|\[WIP\]):/i.test(String(body.title)) });
          return { status: 201, body: pullJson(model, p) };
        }
        case 'PATCH /api/v1/repos/{owner}/{repo}/pulls/{index}': {
          const p = find(model, req.params.index!);
          if (typeof body.title === 'string') p.title = body.title;
          if (typeof body.body === 'string') p.body = body.body;
          if (Array.isArray(body.assignees)) p.assignees = body.assignees as string[];
          p.updated = model.now();
          if (body.state === 'closed' && p.state === 'open') closeModelRequest(model, p);
          return { status: 201, body: pullJson(model, p) };
        }
        case 'POST /api/v1/repos/{owner}/{repo}/issues/{index}/comments': {
          const p = find(model, req.params.index!);
          const c = { id: model.nextId(), body: String(body.body), author: 'lastgood-bot' };
          p.comments.push(c);
          return { status: 201, body: { id: c.id, body: c.body, user: userJson(c.author), html_url: `${model.base}/${opts.owner}/${opts.repo}/pulls/${p.number}#issuecomment-${c.id}`, issue_url: `${model.base}/${opts.owner}/${opts.repo}/issues/${p.number}`, pull_request_url: `${model.base}/${opts.owner}/${opts.repo}/pulls/${p.number}`, original_author: '', original_author_id: 0, assets: [], created_at: model.now(), updated_at: model.now() } };
        }
        case 'POST /api/v1/repos/{owner}/{repo}/issues/{index}/labels': {
          const p = find(model, req.params.index!);
          // names that are no label of the repository are left out, as Gitea does
          for (const l of (body.labels as unknown[]) ?? []) if (typeof l === 'string' && labels.has(l) && !p.labels.includes(l)) p.labels.push(l);
          return { status: 200, body: p.labels.map(labelJson) };
        }
        case 'POST /api/v1/repos/{owner}/{repo}/pulls/{index}/requested_reviewers': {
          const p = find(model, req.params.index!);
          const names = (body.reviewers as string[] | undefined) ?? [];
          const unknown = unknownUsers(names);
          if (unknown.length) throw new ForgeHttpError(422, { message: `user does not exist [uid: 0, name: ${unknown[0]}]`, url: 'https://gitea.example/api/swagger' });
          for (const n of names) if (!p.reviewers.includes(n)) p.reviewers.push(n);
          return { status: 201, body: names.map((n) => ({ id: model.nextId(), user: userJson(n), state: 'REQUEST_REVIEW', body: '', commit_id: p.sha, stale: false, official: false, dismissed: false, comments_count: 0, submitted_at: model.now(), updated_at: model.now(), html_url: `${model.base}/${opts.owner}/${opts.repo}/pulls/${p.number}`, pull_request_url: `${model.base}/${opts.owner}/${opts.repo}/pulls/${p.number}` })) };
        }
        case 'POST /api/v1/repos/{owner}/{repo}/pulls/{index}/merge': {
          const p = find(model, req.params.index!);
          p.autoMerge = true;
          return { status: 200 };
        }
        default:
          throw new ForgeHttpError(404, { message: `not emulated: ${req.route}`, url: '' });
      }
    },
  });
}
