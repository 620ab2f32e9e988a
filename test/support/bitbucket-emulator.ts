import { hostApiDescription, hostApiValidator } from './api-description.ts';
import { OpenApiValidator, type OpenApiDocument } from './openapi-validator.ts';
import { closeModelRequest, ForgeHttpError, openModelRequest, startForgeEmulator, type ForgeEmulator, type ForgeModel, type ModelRequest } from './forge-emulator.ts';
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
 *
 * Listing: Bitbucket Cloud takes `state` repeated, `sort` and `pagelen` on every collection (its
 * "Filter and sort API objects" and "Pagination" guides), pages with a `next` link, and abbreviates
 * the commit hashes in a pull request to 12 digits (GET …/commit/{commit} gives the full one). Data
 * Center takes `state=ALL`, `filterText` (title or description), `order` and `at`/`direction`, and
 * tells a merged pull request's commit in `properties.mergeCommit`.
 */

const cloudError = (message: string) => ({ type: 'error', error: { message } });

/**
 * Bitbucket Cloud's description with the collection parameters its guides give every list (`sort`,
 * `pagelen`, `page`: developer.atlassian.com/cloud/bitbucket/rest/intro/#filtering and #pagination)
 * declared on the pull-request list, which names only `state`. Anything else is still a violation.
 */
function cloudDocument(): OpenApiDocument {
  const doc = hostApiDescription('bitbucket-cloud-2.0.json', { serverPath: '/2.0' });
  const template = '/2.0/repositories/{workspace}/{repo_slug}/pullrequests';
  const item = doc.paths[template]!;
  const get = item.get!;
  const declared = [
    { name: 'sort', in: 'query', schema: { type: 'string', enum: ['id', '-id', 'created_on', '-created_on', 'updated_on', '-updated_on'] } },
    { name: 'pagelen', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 50 } },
    { name: 'page', in: 'query', schema: { type: 'integer', minimum: 1 } },
  ];
  return { ...doc, paths: { ...doc.paths, [template]: { ...item, get: { ...get, parameters: [...(get.parameters ?? []), ...declared] } } } };
}

const CLOUD_STATE = { open: 'OPEN', merged: 'MERGED', closed: 'DECLINED' } as const;

export async function startBitbucketCloudEmulator(opts: HostEmulatorOptions): Promise<ForgeEmulator> {
  const users = ['lastgood-bot', ...(opts.users ?? [])];
  const account = (id: string) => ({ type: 'user', uuid: `{${id.replace(/[^a-z0-9]/gi, '')}-0000}`, account_id: id, nickname: id.split(':').at(-1), display_name: id, links: { avatar: { href: `https://avatar.example/${encodeURIComponent(id)}` } } });
  const repository = (model: ForgeModel) => ({ type: 'repository', full_name: `${opts.owner}/${opts.repo}`, name: opts.repo, uuid: '{repo-0000}', links: { html: { href: `${model.base}/${opts.owner}/${opts.repo}` } } });
  // Bitbucket Cloud gives a pull request's commits abbreviated
  const endpoint = (model: ForgeModel, branch: string, sha: string) => ({ branch: { name: branch }, commit: { hash: sha.slice(0, 12) }, repository: repository(model) });
  const pullJson = (model: ForgeModel, p: ModelRequest) => ({
    type: 'pullrequest', id: p.number, title: p.title, description: p.body, summary: { raw: p.body, markup: 'markdown', html: '' },
    state: CLOUD_STATE[p.state], author: account(p.author), ...(p.mergeCommit ? { merge_commit: { hash: p.mergeCommit.slice(0, 12) } } : {}),
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
    validator: new OpenApiValidator(cloudDocument()),
    git: opts.git,
    bareRepo: opts.bareRepo,
    gitPath: (p) => (/\.git\/(info\/refs|git-upload-pack|git-receive-pack)$/.test(p) ? p : undefined),
    authenticate: (headers) => (tokenOf(headers) === opts.token ? 'lastgood-bot' : undefined),
    errorBody: (_status, message) => cloudError(message),
    async handle(req, model) {
      const body = (req.body ?? {}) as Record<string, unknown>;
      switch (req.route) {
        case `GET ${base}`: {
          const states = req.query.getAll('state');
          const wanted = new Set(states.length ? states : ['OPEN']);
          const values = model.requests.filter((p) => wanted.has(CLOUD_STATE[p.state])).reverse();
          const sort = req.query.get('sort');
          if (sort) {
            const field = sort.replace(/^-/, '');
            const key = (p: ModelRequest) => (field === 'id' ? p.number : Date.parse(field === 'created_on' ? p.created : p.updated));
            values.sort((a, b) => (key(a) - key(b) || a.number - b.number) * (sort.startsWith('-') ? -1 : 1));
          }
          const pagelen = Number(req.query.get('pagelen') ?? 10);
          const page = Number(req.query.get('page') ?? 1);
          const next = new URL(`${model.base}${req.path}`);
          for (const [k, v] of req.query) if (k !== 'page') next.searchParams.append(k, v);
          next.searchParams.set('page', String(page + 1));
          return { status: 200, body: { size: values.length, page, pagelen, values: values.slice((page - 1) * pagelen, page * pagelen).map((p) => pullJson(model, p)), ...(page * pagelen < values.length ? { next: next.href } : {}) } };
        }
        case 'GET /2.0/repositories/{workspace}/{repo_slug}/commit/{commit}': {
          const hash = req.params.commit!;
          const sha = /^[0-9a-f]{4,40}$/.test(hash) ? await model.git(['rev-parse', '--verify', '-q', `${hash}^{commit}`]).catch(() => '') : '';
          if (!sha) throw new ForgeHttpError(404, cloudError(`Commit not found`));
          const [date = '', message = '', author = '', parents = ''] = (await model.git(['show', '-s', '--format=%cI%x00%B%x00%an <%ae>%x00%P', sha])).split('\0');
          const link = (href: string) => ({ href });
          return {
            status: 200,
            body: {
              type: 'commit', hash: sha, date, message: message.trim(), author: { type: 'author', raw: author }, summary: { raw: message.trim(), markup: 'markdown', html: '' }, participants: [], repository: repository(model),
              parents: parents.split(' ').filter(Boolean).map((h) => ({ type: 'commit', hash: h, links: { self: link(`${model.base}/2.0/repositories/${opts.owner}/${opts.repo}/commit/${h}`) } })),
              links: { self: link(`${model.base}/2.0/repositories/${opts.owner}/${opts.repo}/commit/${sha}`), html: link(`${model.base}/${opts.owner}/${opts.repo}/commits/${sha}`) },
            },
          };
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
          closeModelRequest(model, p);
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
    draft: p.draft, createdDate: Date.parse(p.created), updatedDate: Date.parse(p.updated), ...(p.closedAt ? { closedDate: Date.parse(p.closedAt) } : {}),
    fromRef: ref(model, p.source, p.sha), toRef: ref(model, p.target, p.sha), locked: false,
    // what Bitbucket Data Center adds to a pull request (withProperties, the default); the merge commit once merged
    properties: { commentCount: p.comments.length, openTaskCount: 0, resolvedTaskCount: 0, ...(p.mergeCommit ? { mergeCommit: { displayId: p.mergeCommit.slice(0, 11), id: p.mergeCommit } } : {}) },
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
          const outgoing = req.query.get('direction') === 'OUTGOING';
          const text = req.query.get('filterText')?.toLowerCase();
          const values = model.requests.filter((p) => (state === 'ALL' || ({ open: 'OPEN', merged: 'MERGED', closed: 'DECLINED' } as const)[p.state] === state)
            && (!at || `refs/heads/${outgoing ? p.source : p.target}` === at)
            && (!text || p.title.toLowerCase().includes(text) || p.body.toLowerCase().includes(text))).reverse();
          // NEWEST (the default): newer pull requests first; OLDEST: the other way
          if (req.query.get('order') === 'OLDEST') values.reverse();
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
          closeModelRequest(model, p);
          p.version = (p.version ?? 0) + 1;
          return { status: 200, body: pullJson(model, p) };
        }
        default:
          throw new ForgeHttpError(404, errors(`not emulated: ${req.route}`));
      }
    },
  });
}
