import { hostApiValidator } from './api-description.ts';
import { closeModelRequest, ForgeHttpError, openModelRequest, startForgeEmulator, type ForgeEmulator, type ForgeModel, type ModelRequest } from './forge-emulator.ts';
import { tokenOf, type HostEmulatorOptions } from './gitea-emulator.ts';

/**
 * Azure DevOps Repos, the Git pull-request endpoints lastgood uses (api-version 7.1), validated
 * against the published description (fixtures/host-api/azure-devops-git-7.1.json, from
 * MicrosoftDocs/vsts-rest-api-specs). `opts.owner` is the organization, the project is "platform".
 * Clone URLs are `/ORG/PROJECT/_git/REPO`, kept by the git server at `ORG/PROJECT/_git/REPO.git`.
 * A second active pull request for the same branches is refused with 409 TF401179, as Azure
 * DevOps does. Reviewers are identity ids; `opts.users` are given ids `<name>-id`.
 */

export const AZURE_PROJECT = 'platform';

export async function startAzureDevOpsEmulator(opts: HostEmulatorOptions): Promise<ForgeEmulator> {
  const users = ['lastgood-bot', ...(opts.users ?? [])];
  const identity = (model: ForgeModel, id: string) => ({ id, displayName: id, uniqueName: `${id}@example.com`, url: `${model.base}/_apis/Identities/${id}`, imageUrl: `${model.base}/_api/_common/identityImage?id=${id}`, descriptor: `aad.${id}` });
  const repository = (model: ForgeModel) => ({ id: '00000000-0000-0000-0000-000000000042', name: opts.repo, url: `${model.base}/${opts.owner}/${AZURE_PROJECT}/_apis/git/repositories/${opts.repo}`, webUrl: `${model.base}/${opts.owner}/${AZURE_PROJECT}/_git/${opts.repo}`, project: { id: '00000000-0000-0000-0000-000000000001', name: AZURE_PROJECT, state: 'wellFormed', visibility: 'private' } });
  const pullJson = (model: ForgeModel, p: ModelRequest) => ({
    pullRequestId: p.number, codeReviewId: p.number, title: p.title, description: p.body, status: p.state === 'open' ? 'active' : p.state === 'merged' ? 'completed' : 'abandoned',
    createdBy: identity(model, p.author), creationDate: p.created, sourceRefName: `refs/heads/${p.source}`, targetRefName: `refs/heads/${p.target}`, mergeStatus: 'succeeded', isDraft: p.draft,
    ...(p.closedAt ? { closedDate: p.closedAt } : {}), ...(p.mergeCommit ? { lastMergeCommit: { commitId: p.mergeCommit, url: `${repository(model).url}/commits/${p.mergeCommit}` } } : {}),
    mergeId: '00000000-0000-0000-0000-0000000000aa', lastMergeSourceCommit: { commitId: p.sha, url: `${repository(model).url}/commits/${p.sha}` }, reviewers: p.reviewers.map((r) => ({ ...identity(model, r), vote: 0, isRequired: false, hasDeclined: false, isFlagged: false })),
    labels: p.labels.map((name) => ({ id: `00000000-0000-0000-0000-${String(name.length).padStart(12, '0')}`, name, active: true })),
    url: `${model.base}/${opts.owner}/${AZURE_PROJECT}/_apis/git/repositories/${opts.repo}/pullRequests/${p.number}`, repository: repository(model), supportsIterations: true,
  });
  const problem = (status: number, message: string, typeKey = 'InvalidArgumentValueException') => new ForgeHttpError(status, { $id: '1', innerException: null, message, typeName: `Microsoft.TeamFoundation.Git.Server.${typeKey}, Microsoft.TeamFoundation.Git.Server`, typeKey, errorCode: 0, eventId: 3000 });
  const find = (model: ForgeModel, id: string) => {
    const p = model.requests.find((r) => r.number === Number(id));
    if (!p) throw problem(404, `TF401180: The requested pull request was not found.`, 'GitPullRequestNotFoundException');
    return p;
  };
  const knownId = (id: string) => {
    if (!users.includes(id)) throw problem(400, `The identity ${id} is not a valid reviewer.`);
    return id;
  };
  const base = '/{organization}/{project}/_apis/git/repositories/{repositoryId}';

  return startForgeEmulator({
    name: 'Azure DevOps',
    validator: hostApiValidator('azure-devops-git-7.1.json'),
    git: opts.git,
    bareRepo: opts.bareRepo,
    gitPath: (p) => {
      const m = /^(\/[^/]+\/[^/]+\/_git\/[^/]+)\/(info\/refs|git-upload-pack|git-receive-pack)$/.exec(p);
      return m ? `${m[1]}.git/${m[2]}` : undefined;
    },
    authenticate: (headers) => (tokenOf(headers) === opts.token ? 'lastgood-bot' : undefined),
    // the description gives a list answer as its array; on the wire Azure DevOps wraps it in
    // {count, value}, as the specs' own httpExamples show (azure-devops-git-7.1-example-list-pullrequests.json)
    described: (body, isArray) => (isArray && body && typeof body === 'object' && Array.isArray((body as { value?: unknown }).value) ? (body as { value: unknown }).value : body),
    errorBody: (status, message) => ({ $id: '1', innerException: null, message, typeName: 'Microsoft.VisualStudio.Services.WebApi.VssServiceException', typeKey: 'VssServiceException', errorCode: 0, eventId: 3000, ...(status ? {} : {}) }),
    async handle(req, model) {
      if (req.params.organization !== opts.owner || req.params.project !== AZURE_PROJECT || req.params.repositoryId !== opts.repo) throw problem(404, `TF401019: The Git repository with name or identifier ${req.params.repositoryId} does not exist or you do not have permissions for the operation you are attempting.`, 'GitRepositoryNotFoundException');
      const body = (req.body ?? {}) as Record<string, unknown>;
      switch (req.route) {
        case `GET ${base}/pullrequests`: {
          const status = req.query.get('searchCriteria.status') ?? 'active';
          const target = req.query.get('searchCriteria.targetRefName');
          // minTime/maxTime: created (the default) or closed after/before; an active pull request has no closed time
          const closedRange = req.query.get('searchCriteria.queryTimeRangeType') === 'closed';
          const [min, max] = ['searchCriteria.minTime', 'searchCriteria.maxTime'].map((k) => (req.query.get(k) ? Date.parse(req.query.get(k)!) : undefined));
          const inRange = (p: ModelRequest) => {
            const time = closedRange ? (p.closedAt ? Date.parse(p.closedAt) : undefined) : Date.parse(p.created);
            if (min === undefined && max === undefined) return true;
            return time !== undefined && (min === undefined || time >= min) && (max === undefined || time <= max);
          };
          const statusOf = { open: 'active', merged: 'completed', closed: 'abandoned' } as const;
          // newest first
          const all = model.requests.filter((p) => (status === 'all' || statusOf[p.state] === status) && (!target || `refs/heads/${p.target}` === target) && inRange(p)).reverse();
          const skip = Number(req.query.get('$skip') ?? 0);
          const top = Number(req.query.get('$top') ?? 101);
          return { status: 200, body: { value: all.slice(skip, skip + top).map((p) => pullJson(model, p)), count: Math.min(top, all.length - skip) } };
        }
        case `POST ${base}/pullrequests`: {
          if (opts.refuseCreate) throw problem(opts.refuseCreate.status, opts.refuseCreate.message, 'GitPullRequestPolicyException');
          const source = String(body.sourceRefName ?? '').replace(/^refs\/heads\//, '');
          const target = String(body.targetRefName ?? '').replace(/^refs\/heads\//, '');
          const sha = await model.branchHead(source);
          if (!sha) throw problem(400, `TF401398: The pull request cannot be activated because the source and/or the target branch no longer exists, or the requested refs are not branches`);
          if (model.requests.some((p) => p.state === 'open' && p.source === source && p.target === target)) throw problem(409, 'TF401179: An active pull request for the source and target branch already exists.', 'GitPullRequestExistsException');
          const p = openModelRequest(model, {
            source, target, title: String(body.title), body: String(body.description ?? ''), author: 'lastgood-bot', sha, draft: body.isDraft === true,
            labels: ((body.labels as Array<{ name: string }> | undefined) ?? []).map((l) => l.name), reviewers: ((body.reviewers as Array<{ id: string }> | undefined) ?? []).map((r) => knownId(r.id)),
          });
          return { status: 200, body: pullJson(model, p) };
        }
        case `PATCH ${base}/pullrequests/{pullRequestId}`: {
          const p = find(model, req.params.pullRequestId!);
          if (typeof body.title === 'string') p.title = body.title;
          if (typeof body.description === 'string') p.body = body.description;
          p.updated = model.now();
          if (body.status === 'abandoned' && p.state === 'open') closeModelRequest(model, p);
          return { status: 200, body: pullJson(model, p) };
        }
        case `POST ${base}/pullRequests/{pullRequestId}/threads`: {
          const p = find(model, req.params.pullRequestId!);
          const comments = (body.comments as Array<{ content?: string }> | undefined) ?? [];
          const c = { id: model.nextId(), body: String(comments[0]?.content ?? ''), author: 'lastgood-bot' };
          p.comments.push(c);
          return { status: 200, body: { id: c.id, status: body.status, publishedDate: model.now(), lastUpdatedDate: model.now(), comments: [{ id: 1, parentCommentId: 0, content: c.body, commentType: 'text', author: identity(model, c.author), publishedDate: model.now() }], isDeleted: false } };
        }
        case `POST ${base}/pullRequests/{pullRequestId}/labels`: {
          const p = find(model, req.params.pullRequestId!);
          const name = String(body.name);
          if (!p.labels.includes(name)) p.labels.push(name);
          return { status: 200, body: { id: '00000000-0000-0000-0000-000000000007', name, active: true } };
        }
        case `PUT ${base}/pullRequests/{pullRequestId}/reviewers/{reviewerId}`: {
          const p = find(model, req.params.pullRequestId!);
          const id = knownId(req.params.reviewerId!);
          if (!p.reviewers.includes(id)) p.reviewers.push(id);
          return { status: 200, body: { ...identity(model, id), vote: 0, isRequired: false, hasDeclined: false, isFlagged: false } };
        }
        default:
          throw problem(404, `not emulated: ${req.route}`);
      }
    },
  });
}
