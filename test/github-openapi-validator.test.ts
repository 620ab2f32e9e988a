import test from 'ava';
import path from 'node:path';
import { OpenApiValidator, validateSchema } from './support/openapi-validator.ts';
import { startGitHubEmulator } from './support/github-emulator.ts';
import { commit, git, makeRepo, tempDir } from './support/git.ts';

const validator = new OpenApiValidator();
const SHA = 'a'.repeat(40);

test('the operation is found by method and path template, percent-encoded refs included', (t) => {
  const byEncoded = validator.findOperation('GET', '/repos/acme/gitops/git/ref/heads%2Flastgood%2Fpodinfo%2Fabc');
  t.is(byEncoded?.operation.operationId, 'git/get-ref');
  t.deepEqual(byEncoded?.params, { owner: 'acme', repo: 'gitops', ref: 'heads/lastgood/podinfo/abc' });
  t.is(validator.findOperation('PATCH', '/repos/acme/gitops/git/refs/heads/main')?.operation.operationId, 'git/update-ref');
  t.is(validator.findOperation('POST', '/repos/acme/gitops/pulls/3/requested_reviewers')?.operation.operationId, 'pulls/request-reviewers');
  t.is(validator.findOperation('GET', '/repos/acme/gitops/pulls/3')?.operation.operationId, 'pulls/get');
  t.is(validator.findOperation('PATCH', '/repos/acme/gitops')?.operation.operationId, 'repos/update');
  t.is(validator.findOperation('GET', '/nope/at/all'), undefined);
});

test('a good git-ref response passes; hand-made bad ones fail with the field named', (t) => {
  const match = validator.findOperation('GET', '/repos/acme/gitops/git/ref/heads%2Fmain')!;
  const good = { ref: 'refs/heads/main', node_id: 'x', url: 'http://h/x', object: { type: 'commit', sha: SHA, url: 'http://h/y' } };
  t.deepEqual(validator.validateResponse(match, 200, good), []);

  const missing = { ...good, object: { type: 'commit', sha: SHA } };
  t.deepEqual(validator.validateResponse(match, 200, missing), ['GET /repos/{owner}/{repo}/git/ref/{ref} → 200 body.object: required property "url" is missing']);
  const wrongType = { ...good, node_id: 7 };
  t.regex(validator.validateResponse(match, 200, wrongType).join('\n'), /body\.node_id: expected string, got integer/);
  t.regex(validator.validateResponse(match, 201, good).join('\n'), /status 201 is not described/);
});

test('a bad pull request (nested $refs, nullable, enum) fails; the request body is checked too', (t) => {
  const list = validator.findOperation('GET', '/repos/acme/gitops/pulls')!;
  t.regex(validator.validateResponse(list, 200, [{ number: 1 }]).join('\n'), /body\[0\]: required property "head" is missing/);
  t.deepEqual(validator.validateRequest(list, new URLSearchParams({ state: 'open', head: 'acme:x', per_page: '10' }), undefined), []);
  t.regex(validator.validateRequest(list, new URLSearchParams({ state: 'opened' }), undefined).join('\n'), /query\.state: "opened" is not one of/);
  t.regex(validator.validateRequest(list, new URLSearchParams({ colour: 'red' }), undefined).join('\n'), /unknown query parameter "colour"/);

  const createTree = validator.findOperation('POST', '/repos/acme/gitops/git/trees')!;
  t.deepEqual(validator.validateRequest(createTree, new URLSearchParams(), { base_tree: SHA, tree: [{ path: 'a', mode: '100644', type: 'blob', sha: null }] }), []);
  t.regex(validator.validateRequest(createTree, new URLSearchParams(), { tree: [{ path: 'a', mode: '644', type: 'blob', sha: SHA }] }).join('\n'), /body\.tree\[0\]\.mode: "644" is not one of/);
  t.regex(validator.validateRequest(createTree, new URLSearchParams(), { base_tree: SHA }).join('\n'), /required property "tree" is missing/);
});

test('schema keywords: oneOf needs exactly one match, allOf all, additionalProperties false', (t) => {
  const doc = validator.doc;
  const oneOf = { oneOf: [{ type: 'string' }, { type: 'string', minLength: 1 }] };
  t.deepEqual(validateSchema(doc, oneOf, ''), []);
  t.regex(validateSchema(doc, oneOf, 'x').join(), /matches 2 schemas of oneOf/);
  t.regex(validateSchema(doc, { allOf: [{ type: 'object', required: ['a'] }, { type: 'object', required: ['b'] }] }, { a: 1 }).join(), /"b" is missing/);
  t.regex(validateSchema(doc, { type: 'object', properties: { a: {} }, additionalProperties: false }, { a: 1, b: 2 }).join(), /unexpected property "b"/);
  t.deepEqual(validateSchema(doc, { type: 'string', nullable: true }, null), []);
  t.regex(validateSchema(doc, { type: 'string', format: 'date-time' }, 'yesterday').join(), /not an ISO 8601 date-time/);
});

test('the emulator refuses and records a request that breaks the description', async (t) => {
  const work = makeRepo();
  commit(work, { 'a.yaml': 'a: 1\n' }, 'one');
  const bare = path.join(tempDir('lastgood-gh-'), 'r.git');
  git(work, 'clone', '-q', '--bare', work, bare);
  const emulator = await startGitHubEmulator({ bareRepo: bare, owner: 'acme', repo: 'gitops', token: 'secret-token-123' });
  t.teardown(() => emulator.close());
  const headers = { authorization: 'token secret-token-123', 'content-type': 'application/json' };

  const bad = await fetch(`${emulator.url}/repos/acme/gitops/git/refs/heads/main`, { method: 'PATCH', headers, body: JSON.stringify({ sha: 42 }) });
  t.is(bad.status, 422);
  t.regex(emulator.violations.join('\n'), /body\.sha: expected string, got integer/);

  const unknown = await fetch(`${emulator.url}/repos/acme/gitops/no-such-thing`, { headers });
  t.is(unknown.status, 404);
  t.regex(emulator.violations.join('\n'), /no operation of GitHub's REST API/);

  const noAuth = await fetch(`${emulator.url}/repos/acme/gitops`);
  t.is(noAuth.status, 401);
  t.is(((await noAuth.json()) as { message: string }).message, 'Bad credentials');
});
