import test from 'ava';
import { hostApiValidator } from './support/api-description.ts';

/**
 * The hosts' published descriptions the emulators are checked against (fixtures/host-api/) do
 * check: each has the operations lastgood uses, and a request that breaks them is reported.
 */

const q = (s: string) => new URLSearchParams(s);

test('GitLab (the excerpt): a merge-request listing with a state GitLab does not know is reported', (t) => {
  const v = hostApiValidator('gitlab-openapi-v2-merge-requests.yaml');
  const list = v.findOperation('GET', '/api/v4/projects/acme%2Fgitops/merge_requests')!;
  t.is(list.operation.operationId, 'getApiV4ProjectsIdMergeRequests');
  t.is(list.params.id, 'acme/gitops');
  t.deepEqual(v.validateRequest(list, q('state=opened&target_branch=main&per_page=100'), undefined), []);
  t.regex(v.validateRequest(list, q('state=open'), undefined).join(), /"open" is not one of/);
  t.regex(v.validateRequest(list, q('per_page=many'), undefined).join(), /expected integer/);
  t.regex(v.validateRequest(list, q('source_branch_prefix=x'), undefined).join(), /unknown query parameter/);
  t.is(v.findOperation('PUT', '/api/v4/projects/acme%2Fgitops/merge_requests/3')!.operation.operationId, 'putApiV4ProjectsIdMergeRequestsMergeRequestIid');
});

test('Gitea: creating a pull request with a malformed body is reported', (t) => {
  const v = hostApiValidator('gitea-1.22.json');
  const create = v.findOperation('POST', '/api/v1/repos/acme/gitops/pulls')!;
  t.is(create.operation.operationId, 'repoCreatePullRequest');
  t.deepEqual(v.validateRequest(create, q(''), { head: 'x', base: 'main', title: 't', assignees: ['bob'] }), []);
  t.regex(v.validateRequest(create, q(''), { head: 'x', base: 'main', labels: ['lastgood'] }).join(), /expected integer/, 'labels are ids on create');
});

test('Bitbucket Cloud: a pull request without its type is reported', (t) => {
  const v = hostApiValidator('bitbucket-cloud-2.0.json', { serverPath: '/2.0' });
  const create = v.findOperation('POST', '/2.0/repositories/acme/gitops/pullrequests')!;
  t.deepEqual(v.validateRequest(create, q(''), { type: 'pullrequest', title: 't', source: { branch: { name: 'x' } } }), []);
  t.regex(v.validateRequest(create, q(''), { title: 't' }).join(), /required property "type"/);
});

test('Bitbucket Data Center: the declining of a pull request takes its version', (t) => {
  const v = hostApiValidator('bitbucket-datacenter-9.2.json', { serverPath: '/rest' });
  const decline = v.findOperation('POST', '/rest/api/latest/projects/OPS/repos/gitops/pull-requests/3/decline')!;
  t.truthy(decline);
  t.regex(v.validateRequest(decline, q('versions=1'), undefined).join(), /unknown query parameter "versions"/);
});

test('Azure DevOps: every call names its api-version', (t) => {
  const v = hostApiValidator('azure-devops-git-7.1.json');
  const list = v.findOperation('GET', '/acme/platform/_apis/git/repositories/gitops/pullrequests')!;
  t.deepEqual(v.validateRequest(list, q('api-version=7.1&searchCriteria.status=active'), undefined), []);
  t.regex(v.validateRequest(list, q('searchCriteria.status=active'), undefined).join(), /required query parameter "api-version"/);
});
