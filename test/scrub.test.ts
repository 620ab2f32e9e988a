import test from 'ava';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { bound, redact, registerSecret, scrubDeep, scrubText } from '../src/scrub.ts';
import { DIST, runAction } from './support/action.ts';
import { lastgood, ROOT } from './support/cli.ts';
import { commit, git, makeRepo, tempDir, writeFile } from './support/git.ts';
import { kustomization, yamlDocs } from './support/objects.ts';

/**
 * Issue 15 class 4: secrets never reach an output. Evidence text carrying every credential shape
 * goes through every output lastgood writes (stdout, --json, commit message, notifications, logs
 * at debug level, the Action's outputs and job summary); none of the secrets comes out, and a
 * 10 MB message comes out bounded.
 */

/** The credential shapes, and the part of each that must never be seen. */
const SHAPES: Array<{ name: string; text: string; secret: string }> = [
  { name: 'GitHub classic token', text: 'ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789', secret: 'AbCdEfGhIjKlMnOpQrStUvWxYz0123456789' },
  { name: 'GitHub OAuth token', text: 'gho_16C7e42F292c6912E7710c838347Ae178B4a', secret: '16C7e42F292c6912E7710c838347Ae178B4a' },
  { name: 'GitHub user-to-server token', text: 'ghu_9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f', secret: '9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f' },
  { name: 'GitHub server-to-server token', text: 'ghs_Zyxwvutsrqponmlkjihgfedcba9876543210', secret: 'Zyxwvutsrqponmlkjihgfedcba9876543210' },
  { name: 'GitHub refresh token', text: 'ghr_1B4a2e77838347a7E420ce178F2E7c6912E1', secret: '1B4a2e77838347a7E420ce178F2E7c6912E1' },
  { name: 'GitHub fine-grained PAT', text: 'github_pat_11ABCDEFG0_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789', secret: '11ABCDEFG0_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789' },
  { name: 'GitLab PAT', text: 'glpat-xYzAbC123dEfGhI456jKlM', secret: 'xYzAbC123dEfGhI456jKlM' },
  { name: 'Slack bot token', text: 'xoxb-2460831245-2436750892531-QwErTyUiOpAsDfGhJkLz', secret: '2436750892531-QwErTyUiOpAsDfGhJkLz' },
  { name: 'Slack user token', text: 'xoxp-1111111111-2222222222-3333333333-abcdefabcdef', secret: '3333333333-abcdefabcdef' },
  { name: 'AWS access key id', text: 'AKIAIOSFODNN7EXAMPLQ', secret: 'IOSFODNN7EXAMPLQ' },
  { name: 'AWS secret key', text: 'aws_secret_access_key=wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY', secret: 'wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY' },
  { name: 'JWT', text: 'eyJhbGciOiJSUzI1NiIsImtpZCI6IjEifQ.eyJzdWIiOiJzeXN0ZW06c2EifQ.c2lnbmF0dXJlLXBhcnQtb2YtdGhlLWp3dA', secret: 'c2lnbmF0dXJlLXBhcnQtb2YtdGhlLWp3dA' },
  { name: 'credentials in a URL', text: 'fetch https://x-access-token:urlPassw0rdSecret@github.com/acme/gitops.git failed', secret: 'urlPassw0rdSecret' },
  { name: 'token user in a URL', text: 'clone https://tokenOnlyUser0Secret@gitlab.example.com/x.git', secret: 'tokenOnlyUser0Secret' },
  { name: 'Authorization Bearer', text: 'request failed: Authorization: Bearer bearerTok3nSecretValue', secret: 'bearerTok3nSecretValue' },
  { name: 'Authorization Basic', text: 'webhook said {"headers":{"Authorization":"Basic dXNlcjpiYXNpY1NlY3JldA=="}}', secret: 'dXNlcjpiYXNpY1NlY3JldA' },
  { name: 'Cookie header', text: 'Cookie: session=cookieSecretValue42; theme=dark', secret: 'cookieSecretValue42' },
  { name: 'password query parameter', text: 'GET https://registry.example.com/v2/?user=bob&password=queryPassw0rdSecret&x=1', secret: 'queryPassw0rdSecret' },
  { name: 'token query parameter', text: 'GET https://hooks.example.com/notify?token=queryTok3nSecret', secret: 'queryTok3nSecret' },
  { name: 'private key block', text: '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAprivateKeyBodySecret\nabc=\n-----END RSA PRIVATE KEY-----', secret: 'MIIEowIBAAKCAQEAprivateKeyBodySecret' },
];

/** Tokens lastgood is given: registered, whatever their shape. */
const GIVEN_TOKEN = 'plain-given-token-4711-not-a-known-shape';

const MARK = 'EVIDENCE-BEGIN';
const evidence = [MARK, ...SHAPES.map((s) => s.text), `echoed the token we were given: ${GIVEN_TOKEN}`].join('\n');

function leaks(text: string, extra: string[] = []): string[] {
  return [...SHAPES.map((s) => s.secret), GIVEN_TOKEN, ...extra].filter((secret) => text.includes(secret));
}

// ---- the scrubber itself ---------------------------------------------------------------------

for (const shape of SHAPES) {
  test(`redact: ${shape.name}`, (t) => {
    const out = redact(`before ${shape.text} after`);
    t.false(out.includes(shape.secret), out);
    t.true(out.startsWith('before ') && out.endsWith(' after') || shape.name === 'private key block' || shape.name === 'Cookie header', out);
  });
}

test('redact keeps ordinary text: names, reasons, revisions, images, prose', (t) => {
  for (const text of [
    'main@sha1:5b8a2d2a0d8d6c5e0ad2c2e8e2f9e4b1c3d7a6f0',
    'ghcr.io/stefanprodan/podinfo:6.1.0@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef',
    'docker-pullable://alpine@sha256:621c2f39f8133acb8e64023a94dbdf0d5ca81896102b9e57c0dc184cadaf5528',
    'ssh://git@github.com/example/repo',
    'oci://ghcr.io/stefanprodan/charts/podinfo',
    'health check failed after 5m0s: timeout waiting for: [Deployment/prod/podinfo status: \'InProgress\']',
    'Basic authentication is required for this token endpoint',
    'ReplicaSet "podinfo-7d9c" has timed out progressing.',
  ]) t.is(redact(text), text);
});

test('redact on serialised JSON leaves valid JSON with the same shape', (t) => {
  registerSecret(GIVEN_TOKEN);
  const doc = { message: evidence, nested: [{ auth: 'Authorization: Bearer abcdefgh12345678"quoted\\"' }], cookie: 'Cookie: a=b\\c"d' };
  const text = redact(JSON.stringify(doc, null, 2));
  const parsed = JSON.parse(text);
  t.deepEqual(Object.keys(parsed), ['message', 'nested', 'cookie']);
  t.deepEqual(leaks(text), []);
});

test('registered secrets go in every spelling (plain, URL-encoded, JSON-escaped)', (t) => {
  const secret = 'reg/ist"ered+secret=9';
  registerSecret(secret);
  t.is(redact(`a ${secret} b`), 'a *** b');
  t.is(redact(`a ${encodeURIComponent(secret)} b`), 'a *** b');
  t.is(redact(JSON.stringify({ v: secret })), '{"v":"***"}');
});

test('bound: at most maxBytes bytes, with a visible marker; multi-byte characters are not split', (t) => {
  t.is(bound('short'), 'short');
  const long = 'é'.repeat(5000);
  const out = bound(long, 4096);
  t.regex(out, /…\[truncated \d+ bytes\]$/);
  const kept = out.replace(/…\[truncated \d+ bytes\]$/, '');
  t.true(Buffer.byteLength(kept) <= 4096);
  t.false(kept.includes('\uFFFD'));
  t.is(Buffer.byteLength(kept) + Number(/(\d+) bytes/.exec(out)![1]), Buffer.byteLength(long));
});

// a pattern that backtracks on 10 MB would not end before ava's timeout: how fast it is, is npm run bench's business
test('scrubText on 10 MB: bounded, secrets before the cut gone, the count of cut bytes right', (t) => {
  const big = `${SHAPES[0]!.text} ${'x'.repeat(10 * 1024 * 1024)}`;
  const out = scrubText(big);
  t.true(Buffer.byteLength(out) < 4200);
  t.false(out.includes(SHAPES[0]!.secret));
  const kept = out.replace(/…\[truncated \d+ bytes\]$/, '');
  t.is(Buffer.byteLength(kept) + Number(/(\d+) bytes\]$/.exec(out)![1]) + (SHAPES[0]!.text.length - 3), Buffer.byteLength(big));
});

test('scrubDeep: every string of a tree, in place; shared subtrees (YAML anchors) once', (t) => {
  const shared = { m: SHAPES[0]!.text };
  const layer1 = Array.from({ length: 30 }, () => shared);
  const tree: any = { a: layer1, b: Array.from({ length: 30 }, () => layer1), d: new Date(0), n: 3 };
  // 30 × 30 references to one subtree: visited once (a tree walk would still end; the count says it)
  t.is(scrubDeep(tree), tree);
  t.is(tree.a[0].m, '***');
  t.true(tree.d instanceof Date);
  t.is(tree.n, 3);
});

// ---- through the CLI -------------------------------------------------------------------------

async function receiver() {
  const bodies: string[] = [];
  const server = createServer((req, res) => {
    let data = '';
    req.on('data', (d) => (data += d));
    req.on('end', () => {
      bodies.push(data);
      res.end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { bodies, url: (p: string) => `${base}${p}`, close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }) };
}

const P = 'apps/podinfo/prod/';

function cliScenario() {
  const repo = makeRepo();
  commit(repo, { [`${P}kustomization.yaml`]: 'images: [{ name: podinfo, newTag: 6.0.0 }]\n' }, 'initial');
  const good = commit(repo, { [`${P}replicas.yaml`]: 'replicas: 2\n' }, 'two replicas');
  const bad = commit(repo, { [`${P}kustomization.yaml`]: 'images: [{ name: podinfo, newTag: 6.1.0 }]\n' }, 'release 6.1.0');
  const dir = tempDir('lastgood-scrub-');
  const config = writeFile(dir, 'lastgood.yaml', `repo:\n  url: ${repo}\ndefaults: { mode: commit, strategy: restore, confirmations: 1 }\ntargets:\n  - name: podinfo-prod\n    paths: [${P}]\n    resources:\n      - { apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: apps }\n`);
  // the failing object carries every shape, and a second condition a 10 MB message
  const k = kustomization({ attempted: `main@sha1:${bad}`, applied: `main@sha1:${good}`, ready: 'False', message: evidence });
  (k.status.conditions as any[]).push({ type: 'Healthy', status: 'False', reason: 'HealthCheckFailed', message: `${SHAPES[1]!.text} ${'y'.repeat(10 * 1024 * 1024)} ${SHAPES[2]!.text}`, lastTransitionTime: '2026-11-01T12:00:00Z' });
  const snapshot = writeFile(dir, 'cluster.yaml', yamlDocs(k));
  return { repo, config, snapshot, good, bad };
}

test('CLI: every output of check and run (text, --json, commit message, notifications, debug logs) is free of secrets and bounded', async (t) => {
  const s = cliScenario();
  const hooks = await receiver();
  t.teardown(() => hooks.close());
  const webhookUrl = hooks.url('/webhook/s3cretPathPart0');
  const env = { GITHUB_TOKEN: GIVEN_TOKEN, LASTGOOD_LOG_LEVEL: 'debug', LASTGOOD_WEBHOOK_URL: webhookUrl, LASTGOOD_SLACK_WEBHOOK_URL: hooks.url('/slack/s3cretSlackPart1') };
  const extra = ['s3cretPathPart0', 's3cretSlackPart1'];
  const now = ['--now', '2026-11-01T12:05:00Z'];

  const checked = await lastgood(['check', ...now, '--config', s.config, '--snapshot', s.snapshot], { env });
  t.is(checked.code, 0, checked.stderr);
  t.true(checked.stdout.includes('kustomize.toolkit.fluxcd.io/Kustomization flux-system/apps failed'), checked.stdout);
  t.deepEqual(leaks(checked.stdout + checked.stderr, extra), []);

  const ran = await lastgood(['run', ...now, '--config', s.config, '--snapshot', s.snapshot, '--json'], { env });
  t.is(ran.code, 0, ran.stderr);
  const out = JSON.parse(ran.stdout);
  t.is(out.targets[0].action, 'revert');
  const messages: string[] = out.targets[0].evidence.map((e: any) => e.message);
  t.true(messages.some((m) => m.includes(MARK)), 'the evidence is still there, scrubbed');
  t.true(ran.stdout.length < 64 * 1024, `stdout is ${ran.stdout.length} bytes`);
  t.deepEqual(leaks(ran.stdout, extra), [], 'stdout --json');
  t.deepEqual(leaks(ran.stderr, extra), [], 'debug logs');
  t.regex(ran.stderr, /"level":(20|30)/, 'log lines were written');

  const message = git(s.repo, 'log', '-1', '--format=%B', 'main');
  t.regex(message, /Lastgood-Target: podinfo-prod/);
  t.deepEqual(leaks(message, extra), [], 'commit message');
  t.true(message.length < 64 * 1024, `the commit message is ${message.length} bytes`);
  t.deepEqual(leaks(git(s.repo, 'log', '--all', '--format=%B%n%N'), extra), [], 'git history');

  t.true(hooks.bodies.length >= 2, `${hooks.bodies.length} notifications`);
  t.deepEqual(leaks(hooks.bodies.join('\n'), extra), [], 'notification bodies');
  t.true(hooks.bodies.every((b) => b.length < 64 * 1024));
});

test('CLI: a secret in an error message is not printed', async (t) => {
  const dir = tempDir('lastgood-scrub-err-');
  const config = writeFile(dir, 'lastgood.yaml', `repo:\n  url: https://x-access-token:${SHAPES[0]!.text}@git.example.com/acme/gitops\ntargets:\n  - name: a\n    paths: [a/]\n    resources: [{ apiVersion: v1, kind: ConfigMap, name: a }]\n`);
  const snapshot = writeFile(dir, 's.yaml', 'apiVersion: v1\nkind: ConfigMap\nmetadata: { name: a }\n');
  const r = await lastgood(['run', '--config', config, '--snapshot', snapshot], { env: { LASTGOOD_LOG_LEVEL: 'debug' } });
  t.is(r.code, 2, r.stderr);
  t.regex(r.stderr, /lastgood\.yaml:2: repo\.url "https:\/\/git\.example\.com\/acme\/gitops" is not supported/);
  t.deepEqual(leaks(r.stdout + r.stderr), []);
});

// ---- through the Action ----------------------------------------------------------------------

const ACTION_TOKEN = 'ghs_ActionOwnTokenForScrubTest0123456789ab';

test('Action: event text with every shape and the Action\'s own token: outputs, summary, annotations, logs and commit are clean', async (t) => {
  t.true(existsSync(DIST), 'dist/action.js is built');
  // the repository and event of test/action.test.ts's Flux scenario, the event's message carrying the secrets
  const overlay = (tag: string) => `apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../../base\nimages:\n  - name: ghcr.io/stefanprodan/podinfo\n    newTag: ${tag}\n`;
  const O = 'apps/podinfo/overlays/prod/';
  const work = makeRepo();
  commit(work, { 'apps/podinfo/base/deployment.yaml': 'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: podinfo\n', [`${O}kustomization.yaml`]: overlay('6.0.0'), 'apps/redis/values.yaml': 'replicas: 1\n' }, 'initial platform');
  const good = commit(work, { [`${O}replicas.yaml`]: 'replicas: 2\n' }, 'podinfo: two replicas in prod');
  const bad = commit(work, { [`${O}kustomization.yaml`]: overlay('6.1.0') }, 'podinfo: release 6.1.0');
  commit(work, { 'apps/redis/values.yaml': 'replicas: 3\n' }, 'redis: three replicas');
  const workspace = tempDir('lastgood-scrub-ws-');
  const bare = path.join(workspace, 'gitops.git');
  git(workspace, 'clone', '-q', '--bare', work, bare);
  writeFile(workspace, 'lastgood.yaml', `repo:\n  url: ./gitops.git\ndefaults: { mode: commit, strategy: restore, confirmations: 1 }\ntargets:\n  - name: podinfo-prod\n    paths: [${O}]\n    resources:\n      - { apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: apps }\n`);
  const fixture = JSON.parse(readFileSync(path.join(ROOT, 'fixtures/events/flux-kustomization-health-check-failed.json'), 'utf8'));
  Object.assign(fixture.client_payload, {
    timestamp: new Date(Date.now() - 60_000).toISOString(),
    message: `${fixture.client_payload.message}\n${evidence}\nand the Action's own: ${ACTION_TOKEN}\n${'z'.repeat(10 * 1024 * 1024)}`,
    metadata: { revision: `main@sha1:${bad}` },
  });
  const event = writeFile(workspace, '.runner/event.json', JSON.stringify(fixture));
  // the cluster's copy (a snapshot standing in for it) names the last applied revision, and carries the secrets too
  const recent = new Date(Date.now() - 60_000).toISOString();
  const snapshot = writeFile(workspace, 'cluster.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${bad}`, applied: `main@sha1:${good}`, ready: 'False', since: recent, message: `${evidence}\n${ACTION_TOKEN}` })));
  const r = await runAction({
    workspace, token: ACTION_TOKEN, eventPath: event, with: { snapshot },
    env: { LASTGOOD_LOG_LEVEL: 'debug', GITHUB_TOKEN: GIVEN_TOKEN }, // a workflow's env: a token lastgood was given
  });
  t.is(r.code, 0, r.stdout + r.stderr);
  const { outputs, summary } = r;
  t.is(outputs.action, 'revert');
  t.true(outputs.report!.includes(MARK), 'the evidence is in the report output, scrubbed');
  t.true(summary.includes(MARK.slice(0, 8)) || summary.includes('HealthCheckFailed'));
  const stdout = r.stdout.replace(`::add-mask::${ACTION_TOKEN}`, '');
  t.deepEqual(leaks(JSON.stringify(outputs), [ACTION_TOKEN]), [], 'outputs');
  t.deepEqual(leaks(summary, [ACTION_TOKEN]), [], 'job summary');
  t.deepEqual(leaks(stdout, [ACTION_TOKEN]), [], 'annotations and info lines');
  t.deepEqual(leaks(r.stderr, [ACTION_TOKEN]), [], 'debug logs');
  t.true(outputs.report!.length < 64 * 1024 && summary.length < 64 * 1024, 'bounded');
  const message = git(bare, 'log', '-1', '--format=%B', 'main');
  t.regex(message, /Lastgood-Target: podinfo-prod/);
  t.deepEqual(leaks(message, [ACTION_TOKEN]), [], 'commit message');
});
