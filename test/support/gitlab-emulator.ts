import { hostApiDescription } from './api-description.ts';
import { OpenApiValidator, type OpenApiDocument } from './openapi-validator.ts';
import { ForgeHttpError, openModelRequest, startForgeEmulator, type ForgeEmulator, type ForgeModel, type ModelRequest } from './forge-emulator.ts';
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
 * users and merge endpoints are declared below with their query parameters: a request outside
 * them, or with a parameter they do not name, is a violation.
 * Clone URLs are `/GROUP/PROJECT.git`; tokens come as PRIVATE-TOKEN, JOB-TOKEN or Bearer.
 */

const DECLARED_ROUTES: Record<string, Record<string, string[]>> = {
  '/api/v4/projects/{id}/merge_requests/{merge_request_iid}/notes': { post: [] },
  '/api/v4/projects/{id}/merge_requests/{merge_request_iid}/merge': { put: [] },
  '/api/v4/users': { get: ['username', 'per_page', 'page'] },
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
    created_at: p.created, updated_at: p.updated, merged_by: null, merge_user: null, merged_at: null, closed_by: null, closed_at: p.state === 'closed' ? p.updated : null,
    target_branch: p.target, source_branch: p.source, user_notes_count: p.comments.length, upvotes: 0, downvotes: 0,
    author: userJson(model, p.author), assignees: p.assignees.map((u) => userJson(model, u)), assignee: p.assignees[0] ? userJson(model, p.assignees[0]) : null,
    reviewers: p.reviewers.map((u) => userJson(model, u)), source_project_id: 42, target_project_id: 42, labels: p.labels, draft: p.draft, work_in_progress: p.draft,
    milestone: null, merge_when_pipeline_succeeds: p.autoMerge, merge_status: 'can_be_merged', detailed_merge_status: 'mergeable', sha: p.sha, merge_commit_sha: null, squash_commit_sha: null,
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
          const all = model.requests.filter((p) => (state === 'all' || (state === 'opened' ? p.state === 'open' : p.state === state))
            && (!req.query.get('target_branch') || p.target === req.query.get('target_branch'))
            && (!req.query.get('source_branch') || p.source === req.query.get('source_branch'))).reverse();
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
          if (body.state_event === 'close') p.state = 'closed';
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
