import { hostApiValidator } from './api-description.ts';
import { ForgeHttpError, openModelRequest, startForgeEmulator, type ForgeEmulator, type ForgeModel, type ModelRequest } from './forge-emulator.ts';
import { tokenOf, type HostEmulatorOptions } from './gitea-emulator.ts';

/**
 * Bitbucket Cloud API 2.0 (served under /2.0, as api.bitbucket.org/2.0) and Bitbucket Data Center
 * REST 1.0 (under /rest, "latest"), the pull-request endpoints lastgood uses, validated against
 * Atlassian's descriptions (fixtures/host-api/bitbucket-cloud-2.0.json, bitbucket-datacenter-9.2.json).
 *
 * Data Center refuses a second open pull request for the same branches with 409
 * DuplicatePullRequestException (its description lists the 409). Bitbucket Cloud's answer to it is
 * not in its description: it is modelled as a 400 error, the flow's worst case (an error settled
 * by finding the request). Neither has labels or assignees on pull requests.
 */

const cloudError = (message: string) => ({ type: 'error', error: { message } });

export async function startBitbucketCloudEmulator(opts: HostEmulatorOptions): Promise<ForgeEmulator> {
  const users = ['lastgood-bot', ...(opts.users ?? [])];
  const account = (id: string) => ({ type: 'user', uuid: `{${id.replace(/[^a-z0-9]/gi, '')}-0000}`, account_id: id, nickname: id.split(':').at(-1), display_name: id, links: { avatar: { href: `https://avatar.example/${encodeURIComponent(id)}` } } });
  const repository = (model: ForgeModel) => ({ type: 'repository', full_name: `${opts.owner}/${opts.repo}`, name: opts.repo, uuid: '{repo-0000}', links: { html: { href: `${model.base}/${opts.owner}/${opts.repo}` } } });
  const endpoint = (model: ForgeModel, branch: string, sha: string) => ({ branch: { name: branch }, commit: { hash: sha }, repository: repository(model) });
  const pullJson = (model: ForgeModel, p: ModelRequest) => ({
    type: 'pullrequest', id: p.number, title: p.title, description: p.body, summary: { raw: p.body, markup: 'markdown', html: '' },
    state: p.state === 'open' ? 'OPEN' : p.state === 'merged' ? 'MERGED' : 'DECLINED', author: account(p.author),
    source: endpoint(model, p.source, p.sha), destination: endpoint(model, p.target, p.sha), reviewers: p.reviewers.map(account), participants: [],
    close_source_branch: true, comment_count: p.comments.length, task_count: 0, draft: p.draft, created_on: p.created, updated_on: p.updated,
    links: { self: { href: `${model.base}/2.0/repositories/${opts.owner}/${opts.repo}/pullrequests/${p.number}` }, html: { href: `${model.base}/${opts.owner}/${opts.repo}/pull-requests/${p.number}` } },
  });
  const find = (model: ForgeModel, id: string) => {
    const p = model.requests.find((r) => r.number === Number(id));
    if (!p) throw new ForgeHttpError(404, cloudError('Pull request not found'));
    return p;
  };
  const reviewerIds = (list: unknown): string[] => ((list as Array<{ uuid?: string; account_id?: string }> | undefined) ?? []).map((r) => {
    const id = r.account_id ?? users.find((u) => account(u).uuid === r.uuid);
    if (!id || !users.includes(id)) throw new ForgeHttpError(400, { type: 'error', error: { message: 'Bad request', fields: { reviewers: [`Malformed reviewers list: ${JSON.stringify(r)}`] } } });
    return id;
  });
  const base = '/2.0/repositories/{workspace}/{repo_slug}/pullrequests';

  return startForgeEmulator({
    name: 'Bitbucket Cloud',
    validator: hostApiValidator('bitbucket-cloud-2.0.json', { serverPath: '/2.0' }),
    git: opts.git,
    bareRepo: opts.bareRepo,
    gitPath: (p) => (/\.git\/(info\/refs|git-upload-pack|git-receive-pack)$/.test(p) ? p : undefined),
    authenticate: (headers) => (tokenOf(headers) === opts.token ? 'lastgood-bot' : undefined),
    errorBody: (_status, message) => cloudError(message),
    async handle(req, model) {
      const body = (req.body ?? {}) as Record<string, unknown>;
      switch (req.route) {
        case `GET ${base}`: {
          const state = req.query.get('state') ?? 'OPEN';
          const values = model.requests.filter((p) => (state === 'OPEN' ? p.state === 'open' : p.state !== 'open')).reverse();
          return { status: 200, body: { size: values.length, page: 1, pagelen: 50, values: values.map((p) => pullJson(model, p)) } };
        }
        case `POST ${base}`: {
          if (opts.refuseCreate) throw new ForgeHttpError(opts.refuseCreate.status, cloudError(opts.refuseCreate.message));
          const source = (body.source as { branch?: { name?: string } } | undefined)?.branch?.name ?? '';
          const target = (body.destination as { branch?: { name?: string } } | undefined)?.branch?.name ?? 'main';
          const sha = await model.branchHead(source);
          if (!sha) throw new ForgeHttpError(400, { type: 'error', error: { message: 'Bad request', fields: { source: [`branch not found: ${source}`] } } });
          if (model.requests.some((p) => p.state === 'open' && p.source === source && p.target === target)) throw new ForgeHttpError(400, cloudError(`There is already an open pull request from ${source} to ${target}`));
          const p = openModelRequest(model, { source, target, title: String(body.title), body: String(body.description ?? ''), author: 'lastgood-bot', sha, draft: body.draft === true, reviewers: reviewerIds(body.reviewers) });
          return { status: 201, body: pullJson(model, p) };
        }
        case `PUT ${base}/{pull_request_id}`: {
          const p = find(model, req.params.pull_request_id!);
          if (typeof body.title === 'string') p.title = body.title;
          if (typeof body.description === 'string') p.body = body.description;
          if (body.reviewers !== undefined) p.reviewers = reviewerIds(body.reviewers);
          p.updated = model.now();
          return { status: 200, body: pullJson(model, p) };
        }
        case `POST ${base}/{pull_request_id}/comments`: {
          const p = find(model, req.params.pull_request_id!);
          const c = { id: model.nextId(), body: String((body.content as { raw?: string } | undefined)?.raw ?? ''), author: 'lastgood-bot' };
          p.comments.push(c);
          return { status: 201, body: { type: 'pullrequest_comment', id: c.id, content: { raw: c.body, markup: 'markdown', html: '' }, user: account(c.author), created_on: model.now(), updated_on: model.now(), deleted: false } };
        }
        case `POST ${base}/{pull_request_id}/decline`: {
          const p = find(model, req.params.pull_request_id!);
          p.state = 'closed';
          return { status: 200, body: pullJson(model, p) };
        }
        default:
          throw new ForgeHttpError(404, cloudError(`not emulated: ${req.route}`));
      }
    },
  });
}

export async function startBitbucketDataCenterEmulator(opts: HostEmulatorOptions): Promise<ForgeEmulator> {
  const users = ['lastgood-bot', ...(opts.users ?? [])];
  const errors = (message: string, extra: Record<string, unknown> = {}) => ({ errors: [{ message, exceptionName: 'com.atlassian.bitbucket.ServiceException', ...extra }] });
  const user = (name: string) => ({ name, emailAddress: `${name}@example.com`, id: users.indexOf(name) + 1, displayName: name, active: true, slug: name, type: 'NORMAL' });
  const repository = (model: ForgeModel) => ({ slug: opts.repo, id: 1, name: opts.repo, scmId: 'git', state: 'AVAILABLE', statusMessage: 'Available', forkable: true, project: { key: opts.owner, id: 1, name: opts.owner, public: false, type: 'NORMAL' }, public: false, archived: false, links: { self: [{ href: `${model.base}/projects/${opts.owner}/repos/${opts.repo}/browse` }] } });
  const ref = (model: ForgeModel, branch: string, sha: string) => ({ id: `refs/heads/${branch}`, displayId: branch, latestCommit: sha, type: 'BRANCH', repository: repository(model) });
  const pullJson = (model: ForgeModel, p: ModelRequest & { version?: number }) => ({
    id: p.number, version: p.version ?? 0, title: p.title, description: p.body, state: p.state === 'open' ? 'OPEN' : p.state === 'merged' ? 'MERGED' : 'DECLINED', open: p.state === 'open', closed: p.state !== 'open',
    draft: p.draft, createdDate: Date.parse(p.created), updatedDate: Date.parse(p.updated), fromRef: ref(model, p.source, p.sha), toRef: ref(model, p.target, p.sha), locked: false,
    author: { user: user(p.author), role: 'AUTHOR', approved: false, status: 'UNAPPROVED' }, reviewers: p.reviewers.map((r) => ({ user: user(r), role: 'REVIEWER', approved: false, status: 'UNAPPROVED' })), participants: [],
    links: { self: [{ href: `${model.base}/projects/${opts.owner}/repos/${opts.repo}/pull-requests/${p.number}` }] },
  });
  const find = (model: ForgeModel, id: string) => {
    const p = model.requests.find((r) => r.number === Number(id)) as (ModelRequest & { version?: number }) | undefined;
    if (!p) throw new ForgeHttpError(404, errors(`Pull request ${id} does not exist in ${opts.owner}/${opts.repo}.`));
    return p;
  };
  const reviewerNames = (list: unknown): string[] => ((list as Array<{ user?: { name?: string } }> | undefined) ?? []).map((r) => {
    const name = r.user?.name ?? '';
    if (!users.includes(name)) throw new ForgeHttpError(400, errors(`Errors encountered while adding some reviewers to this pull request. User "${name}" does not exist.`, { exceptionName: 'com.atlassian.bitbucket.pull.InvalidPullRequestReviewersException' }));
    return name;
  });
  const base = '/rest/api/latest/projects/{projectKey}/repos/{repositorySlug}/pull-requests';
  const branchOf = (r: unknown) => String((r as { id?: string } | undefined)?.id ?? '').replace(/^refs\/heads\//, '');

  return startForgeEmulator({
    name: 'Bitbucket Data Center',
    validator: hostApiValidator('bitbucket-datacenter-9.2.json', { serverPath: '/rest' }),
    git: opts.git,
    bareRepo: opts.bareRepo,
    // clone URLs are /scm/PROJECT/REPO.git; the git server keeps the repository at PROJECT/REPO.git
    gitPath: (p) => (/^\/scm\/.*\.git\/(info\/refs|git-upload-pack|git-receive-pack)$/.test(p) ? p.replace(/^\/scm/, '') : undefined),
    authenticate: (headers) => (tokenOf(headers) === opts.token ? 'lastgood-bot' : undefined),
    errorBody: (_status, message) => errors(message),
    async handle(req, model) {
      const body = (req.body ?? {}) as Record<string, unknown>;
      switch (req.route) {
        case `GET ${base}`: {
          const state = req.query.get('state') ?? 'OPEN';
          const at = req.query.get('at');
          const values = model.requests.filter((p) => (state === 'OPEN' ? p.state === 'open' : state === 'ALL' || p.state !== 'open') && (!at || `refs/heads/${p.target}` === at)).reverse();
          const start = Number(req.query.get('start') ?? 0);
          const limit = Number(req.query.get('limit') ?? 25);
          const page = values.slice(start, start + limit);
          const last = start + limit >= values.length;
          return { status: 200, body: { size: page.length, limit, start, isLastPage: last, ...(last ? {} : { nextPageStart: start + limit }), values: page.map((p) => pullJson(model, p)) } };
        }
        case `POST ${base}`: {
          if (opts.refuseCreate) throw new ForgeHttpError(opts.refuseCreate.status, errors(opts.refuseCreate.message));
          const source = branchOf(body.fromRef);
          const target = branchOf(body.toRef);
          const sha = await model.branchHead(source);
          if (!sha) throw new ForgeHttpError(404, errors(`Repository ${opts.owner}/${opts.repo} does not contain the ref refs/heads/${source}.`));
          const open = model.requests.find((p) => p.state === 'open' && p.source === source && p.target === target);
          if (open) throw new ForgeHttpError(409, errors('Only one pull request may be open for a given source and target branch', { exceptionName: 'com.atlassian.bitbucket.pull.DuplicatePullRequestException', existingPullRequest: pullJson(model, open) }));
          const p = openModelRequest(model, { source, target, title: String(body.title), body: String(body.description ?? ''), author: 'lastgood-bot', sha, draft: body.draft === true, reviewers: reviewerNames(body.reviewers) });
          return { status: 201, body: pullJson(model, p) };
        }
        case `PUT ${base}/{pullRequestId}`: {
          const p = find(model, req.params.pullRequestId!);
          if (body.version !== (p.version ?? 0)) throw new ForgeHttpError(409, errors(`You are attempting to modify a pull request based on out-of-date information.`, { exceptionName: 'com.atlassian.bitbucket.pull.PullRequestOutOfDateException', currentVersion: p.version ?? 0 }));
          if (typeof body.title === 'string') p.title = body.title;
          if (typeof body.description === 'string') p.body = body.description;
          if (body.reviewers !== undefined) p.reviewers = reviewerNames(body.reviewers);
          p.version = (p.version ?? 0) + 1;
          p.updated = model.now();
          return { status: 200, body: pullJson(model, p) };
        }
        case `POST ${base}/{pullRequestId}/comments`: {
          const p = find(model, req.params.pullRequestId!);
          const c = { id: model.nextId(), body: String(body.text ?? ''), author: 'lastgood-bot' };
          p.comments.push(c);
          return { status: 201, body: { id: c.id, version: 0, text: c.body, author: user(c.author), createdDate: Date.now(), updatedDate: Date.now(), severity: 'NORMAL', state: 'OPEN' } };
        }
        case `POST ${base}/{pullRequestId}/decline`: {
          const p = find(model, req.params.pullRequestId!);
          if (Number(req.query.get('version') ?? -1) !== (p.version ?? 0)) throw new ForgeHttpError(409, errors('You are attempting to modify a pull request based on out-of-date information.', { exceptionName: 'com.atlassian.bitbucket.pull.PullRequestOutOfDateException' }));
          p.state = 'closed';
          p.version = (p.version ?? 0) + 1;
          return { status: 200, body: pullJson(model, p) };
        }
        default:
          throw new ForgeHttpError(404, errors(`not emulated: ${req.route}`));
      }
    },
  });
}
