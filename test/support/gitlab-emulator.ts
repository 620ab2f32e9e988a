import { hostApiDescription } from './api-description.ts';
import { OpenApiValidator, type OpenApiDocument } from './openapi-validator.ts';
import { closeModelRequest, ForgeHttpError, openModelRequest, startForgeEmulator, type ForgeEmulator, type ForgeModel, type ModelRequest } from './forge-emulator.ts';
import { tokenOf, type HostEmulatorOptions } from './gitea-emulator.ts';

/**
 * GitLab API v4: the merge-request endpoints lastgood uses, over the model of forge-emulator.ts,
 * with GitLab's JSON shapes (doc/api/merge_requests.md, doc/api/notes.md, doc/api/users.md) and
 * its answers: 409 with "Another open merge request already exists for this source branch", user
 * ids for reviewers and assignees, `labels`/`add_labels` as comma-separated names.
 *
 * Listing, opening, reading and updating merge requests are checked against GitLab's published
 * description, as far as the excerpt of it in fixtures/host-api/gitlab-openapi-v2-merge-requests.yaml
 * goes (paths, query parameters, statuses; its bodies' definitions could not be copied). The notes,
 * users, merge and commits (with `actions`) endpoints are declared below with their query parameters: a request outside
 * them, or with a parameter they do not name, is a violation.
 * Clone URLs are `/GROUP/PROJECT.git`; tokens come as PRIVATE-TOKEN, JOB-TOKEN or Bearer.
 */

const DECLARED_ROUTES: Record<string, Record<string, string[]>> = {
  '/api/v4/projects/{id}/merge_requests/{merge_request_iid}/notes': { post: [] },
  '/api/v4/projects/{id}/merge_requests/{merge_request_iid}/merge': { put: [] },
  '/api/v4/users': { get: ['username', 'per_page', 'page'] },
  '/api/v4/projects/{id}/repository/commits': { post: [] },
};

/** GitLab's description (the excerpt) and the declared routes, as one document for the validator. */
function gitLabDocument(): OpenApiDocument {
  const excerpt = hostApiDescription('gitlab-openapi-v2-merge-requests.yaml');
  const paths: OpenApiDocument['paths'] = { ...excerpt.paths };
  for (const [template, methods] of Object.entries(DECLARED_ROUTES)) {
    paths[template] = {};
    for (const [method, query] of Object.entries(methods)) {
      const pathParams = [...template.matchAll(/\{([^}]+)\}/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }));
      paths[template]![method] = {
        operationId: `${method} ${template}`,
        parameters: [...pathParams, ...query.map((name) => ({ name, in: 'query', schema: {} }))],
        ...(method === 'get' ? {} : { requestBody: { content: { 'application/json': { schema: { type: 'object' } } } } }),
        responses: { default: { description: 'any' } },
      };
    }
  }
  return { ...excerpt, paths };
}

export interface GitLabEmulatorOptions extends HostEmulatorOptions {
  /** the CI job token of a pipeline (JOB-TOKEN): GitLab answers 403 on merge-request endpoints */
  jobToken?: string;
}

export async function startGitLabEmulator(opts: GitLabEmulatorOptions): Promise<ForgeEmulator> {
  const users = ['lastgood-bot', ...(opts.users ?? [])];
  const project = `${opts.owner}/${opts.repo}`;
  const userJson = (model: ForgeModel, username: string) => ({ id: users.indexOf(username) + 1, username, name: username, state: 'active', locked: false, avatar_url: `${model.base}/uploads/-/system/user/avatar/${username}.png`, web_url: `${model.base}/${username}` });
  const web = (model: ForgeModel) => `${model.base}/${project}`;
  const mrJson = (model: ForgeModel, p: ModelRequest) => ({
    id: p.id, iid: p.number, project_id: 42, title: p.title, description: p.body, state: p.state === 'open' ? 'opened' : p.state,
    created_at: p.created, updated_at: p.updated, merged_by: null, merge_user: null, merged_at: p.mergedAt ?? null, closed_by: null, closed_at: p.state === 'closed' ? (p.closedAt ?? p.updated) : null,
    target_branch: p.target, source_branch: p.source, user_notes_count: p.comments.length, upvotes: 0, downvotes: 0,
    author: userJson(model, p.author), assignees: p.assignees.map((u) => userJson(model, u)), assignee: p.assignees[0] ? userJson(model, p.assignees[0]) : null,
    reviewers: p.reviewers.map((u) => userJson(model, u)), source_project_id: 42, target_project_id: 42, labels: p.labels, draft: p.draft, work_in_progress: p.draft,
    milestone: null, merge_when_pipeline_succeeds: p.autoMerge, merge_status: 'can_be_merged', detailed_merge_status: 'mergeable', sha: p.sha, merge_commit_sha: p.mergeCommit ?? null, squash_commit_sha: null,
    discussion_locked: null, should_remove_source_branch: null, force_remove_source_branch: true, prepared_at: p.created, reference: `!${p.number}`,
    references: { short: `!${p.number}`, relative: `!${p.number}`, full: `${project}!${p.number}` }, web_url: `${web(model)}/-/merge_requests/${p.number}`,
    time_stats: { time_estimate: 0, total_time_spent: 0, human_time_estimate: null, human_total_time_spent: null }, squash: false, squash_on_merge: false,
    task_completion_status: { count: 0, completed_count: 0 }, has_conflicts: false, blocking_discussions_resolved: true,
  });
  const find = (model: ForgeModel, iid: string) => {
    const p = model.requests.find((r) => r.number === Number(iid));
    if (!p) throw new ForgeHttpError(404, { message: '404 Not found' });
    return p;
  };
  const names = (model: ForgeModel, ids: unknown): string[] => ((ids as number[] | undefined) ?? []).map((id) => {
    const name = users[id - 1];
    if (!name) throw new ForgeHttpError(400, { message: { reviewers: [`user ${id} does not exist`] } });
    return name;
  });
  const csv = (value: unknown) => String(value ?? '').split(',').map((s) => s.trim()).filter(Boolean);

  return startForgeEmulator({
    name: 'GitLab',
    validator: new OpenApiValidator(gitLabDocument()),
    git: opts.git,
    bareRepo: opts.bareRepo,
    gitPath: (p) => (/\.git\/(info\/refs|git-upload-pack|git-receive-pack)$/.test(p) ? p : undefined),
    authenticate: (headers) => {
      if (headers['private-token'] === opts.token || tokenOf(headers) === opts.token) return 'lastgood-bot';
      if (opts.jobToken && headers['job-token'] === opts.jobToken) return 'job';
      return undefined;
    },
    errorBody: (_status, message) => ({ message }),
    async handle(req, model) {
      if (req.params.id !== undefined && req.params.id !== project) throw new ForgeHttpError(404, { message: '404 Project Not Found' });
      if (opts.jobToken && req.headers['job-token'] === opts.jobToken) throw new ForgeHttpError(403, { message: '403 Forbidden' });
      const body = (req.body ?? {}) as Record<string, unknown>;
      switch (req.route) {
        case 'GET /api/v4/projects/{id}/merge_requests': {
          const state = req.query.get('state') ?? 'all';
          const after = req.query.get('updated_after');
          const all = model.requests.filter((p) => (state === 'all' || (state === 'opened' ? p.state === 'open' : p.state === state))
            && (!req.query.get('target_branch') || p.target === req.query.get('target_branch'))
            && (!req.query.get('source_branch') || p.source === req.query.get('source_branch'))
            && (!after || Date.parse(p.updated) >= Date.parse(after))).reverse();
          // order_by created_at (default) or updated_at, sort desc (default) or asc
          if (req.query.get('order_by') === 'updated_at') all.sort((a, b) => Date.parse(b.updated) - Date.parse(a.updated) || b.number - a.number);
          if (req.query.get('sort') === 'asc') all.reverse();
          const perPage = Number(req.query.get('per_page') ?? 20);
          const page = Number(req.query.get('page') ?? 1);
          const slice = all.slice((page - 1) * perPage, page * perPage);
          const next = page * perPage < all.length ? String(page + 1) : '';
          return { status: 200, body: slice.map((p) => mrJson(model, p)), headers: { 'x-page': String(page), 'x-per-page': String(perPage), 'x-next-page': next, 'x-total': String(all.length), 'x-total-pages': String(Math.max(1, Math.ceil(all.length / perPage))) } };
        }
        case 'POST /api/v4/projects/{id}/merge_requests': {
          if (opts.refuseCreate) throw new ForgeHttpError(opts.refuseCreate.status, { message: opts.refuseCreate.message });
          const source = String(body.source_branch);
          const target = String(body.target_branch);
          const sha = await model.branchHead(source);
          if (!sha) throw new ForgeHttpError(400, { message: { source_branch: ['is invalid'] } });
          const open = model.requests.find((p) => p.state === 'open' && p.source === source && p.target === target);
          if (open) throw new ForgeHttpError(409, { message: [`Another open merge request already exists for this source branch: !${open.number}`] });
          const title = String(body.title);
          const p = openModelRequest(model, {
            source, target, title, body: String(body.description ?? ''), author: 'lastgood-bot', sha, draft: /^(draft:|\[draft\])/i.test(title),
            labels: csv(body.labels), reviewers: names(model, body.reviewer_ids), assignees: names(model, body.assignee_ids),
          });
          return { status: 201, body: mrJson(model, p) };
        }
        case 'PUT /api/v4/projects/{id}/merge_requests/{merge_request_iid}': {
          const p = find(model, req.params.merge_request_iid!);
          if (typeof body.title === 'string') p.title = body.title;
          if (typeof body.description === 'string') p.body = body.description;
          if (body.state_event === 'close' && p.state === 'open') closeModelRequest(model, p);
          for (const l of csv(body.add_labels)) if (!p.labels.includes(l)) p.labels.push(l);
          if (body.reviewer_ids !== undefined) p.reviewers = names(model, body.reviewer_ids);
          if (body.assignee_ids !== undefined) p.assignees = names(model, body.assignee_ids);
          p.updated = model.now();
          return { status: 200, body: mrJson(model, p) };
        }
        case 'POST /api/v4/projects/{id}/merge_requests/{merge_request_iid}/notes': {
          const p = find(model, req.params.merge_request_iid!);
          const c = { id: model.nextId(), body: String(body.body), author: 'lastgood-bot' };
          p.comments.push(c);
          return { status: 201, body: { id: c.id, type: null, body: c.body, author: userJson(model, c.author), created_at: model.now(), updated_at: model.now(), system: false, noteable_id: p.id, noteable_type: 'MergeRequest', noteable_iid: p.number, resolvable: false, confidential: false, internal: false } };
        }
        case 'PUT /api/v4/projects/{id}/merge_requests/{merge_request_iid}/merge': {
          const p = find(model, req.params.merge_request_iid!);
          p.autoMerge = true;
          return { status: 200, body: mrJson(model, p) };
        }
        case 'POST /api/v4/projects/{id}/repository/commits': {
          // the Commits API: `branch` made at start_sha (or moved, with force) plus the actions, atomically
          const branch = String(body.branch);
          const start = String(body.start_sha ?? (await model.branchHead(String(body.start_branch ?? branch))) ?? '');
          if (!start) throw new ForgeHttpError(400, { message: 'You can only create or edit files when you are on a branch' });
          const existing = await model.branchHead(branch);
          if (existing && body.start_sha !== undefined && body.force !== true) throw new ForgeHttpError(400, { message: `A branch called '${branch}' already exists. Switch to that branch in order to make changes` });
          const sha = await applyActions(model, start, body);
          await model.git(['update-ref', `refs/heads/${branch}`, sha, ...(existing ? [existing] : [])]);
          const now = model.now();
          const message = String(body.commit_message);
          return { status: 201, body: { id: sha, short_id: sha.slice(0, 8), title: message.split('\n')[0], message, author_name: String(body.author_name ?? 'lastgood-bot'), author_email: String(body.author_email ?? 'bot@example.com'), authored_date: now, committer_name: 'GitLab', committer_email: 'noreply@gitlab.com', committed_date: now, created_at: now, parent_ids: [start], web_url: `${web(model)}/-/commit/${sha}` } };
        }
        case 'GET /api/v4/users': {
          const username = req.query.get('username');
          const found = users.filter((u) => u === username);
          return { status: 200, body: found.map((u) => userJson(model, u)) };
        }
        default:
          throw new ForgeHttpError(404, { message: `404 not emulated: ${req.route}` });
      }
    },
  });
}

/** The Commits API's actions on a temporary index: blobs written, the tree and the commit made with git's plumbing. */
async function applyActions(model: ForgeModel, start: string, body: Record<string, unknown>): Promise<string> {
  const { execFile } = await import('node:child_process');
  const { mkdtempSync, rmSync } = await import('node:fs');
  const os = await import('node:os');
  const path = await import('node:path');
  const cwd = (await model.git(['rev-parse', '--absolute-git-dir'])).trim();
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'gitlab-emulator-index-'));
  const env = { ...process.env, GIT_INDEX_FILE: path.join(tmp, 'index'), GIT_AUTHOR_NAME: String(body.author_name ?? 'lastgood-bot'), GIT_AUTHOR_EMAIL: String(body.author_email ?? 'bot@example.com'), GIT_COMMITTER_NAME: 'GitLab', GIT_COMMITTER_EMAIL: 'noreply@gitlab.com' };
  const git = (args: string[], input?: Buffer) => new Promise<string>((resolve, reject) => {
    const child = execFile('git', args, { cwd, env, encoding: 'utf8' }, (error, stdout, stderr) => (error ? reject(new ForgeHttpError(400, { message: stderr.trim() || error.message })) : resolve(stdout.trim())));
    child.stdin?.on('error', () => {}); // a command that reads no input may be gone already
    child.stdin?.end(input ?? '');
  });
  try {
    await git(['read-tree', start]);
    for (const a of (body.actions as Array<Record<string, unknown>> | undefined) ?? []) {
      const file = String(a.file_path);
      const there = await git(['ls-files', '--', file]);
      if (a.action === 'delete') {
        if (!there) throw new ForgeHttpError(400, { message: `A file with this name doesn't exist` });
        await git(['update-index', '--force-remove', '--', file]);
        continue;
      }
      if (a.action === 'create' && there) throw new ForgeHttpError(400, { message: 'A file with this name already exists' });
      if (a.action === 'update' && !there) throw new ForgeHttpError(400, { message: `A file with this name doesn't exist` });
      const content = a.encoding === 'base64' ? Buffer.from(String(a.content ?? ''), 'base64') : Buffer.from(String(a.content ?? ''));
      const blob = await git(['hash-object', '-w', '--stdin'], content);
      await git(['update-index', '--add', '--cacheinfo', `${a.execute_filemode ? '100755' : '100644'},${blob},${file}`]);
    }
    const tree = await git(['write-tree']);
    return await git(['commit-tree', tree, '-p', start, '-m', String(body.commit_message)]);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
