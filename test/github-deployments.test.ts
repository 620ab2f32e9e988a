import test from 'ava';
import path from 'node:path';
import { lastgood } from './support/cli.ts';
import { lastgoodEngine } from './support/engine-run.ts';
import { commit, git, makeRepo, tempDir, writeFile } from './support/git.ts';
import { startGitHubEmulator, type EmulatorOptions } from './support/github-emulator.ts';
import { kustomization, yamlDocs } from './support/objects.ts';

/**
 * Issue 14: on GitHub the verified last-known-good record is a Deployment (environment named after
 * the target) with status success; one per revision and environment however many runs; `lkg`
 * lists them; a later failure reverts to the newest one and says "verified". Runs and checks go
 * through the engine as the CLI calls it (support/engine-run.ts); `lkg`, `validate` and a run whose
 * warning is the door's through the CLI, as a user runs them; against the GitHub emulator (real
 * @octokit/rest and @octokit/graphql).
 */

const TOKEN = 'ghs_deploymentsTestToken0123456789ab';
const P = 'apps/podinfo/overlays/prod/';
const NOW = ['--now', '2026-11-01T12:05:00Z'];
const env = { GITHUB_TOKEN: TOKEN };

async function setup(t: { teardown(fn: () => unknown): void }, extra: Partial<EmulatorOptions> = {}, environment?: string) {
  const work = makeRepo();
  const v1 = commit(work, { [`${P}values.yaml`]: 'image:\n  tag: 1.0.0\n' }, 'podinfo 1.0.0');
  const v2 = commit(work, { [`${P}values.yaml`]: 'image:\n  tag: 1.1.0\n' }, 'podinfo 1.1.0');
  const docs = commit(work, { 'README.md': 'docs\n' }, 'docs');
  const bad = commit(work, { [`${P}values.yaml`]: 'image:\n  tag: 1.2.0\n' }, 'podinfo 1.2.0');
  const bare = path.join(tempDir('lastgood-deploy-'), 'gitops.git');
  git(work, 'clone', '-q', '--bare', work, bare);
  const emulator = await startGitHubEmulator({ bareRepo: bare, owner: 'acme', repo: 'gitops', token: TOKEN, ...extra });
  t.teardown(() => emulator.close());
  const dir = tempDir();
  const config = writeFile(dir, 'lastgood.yaml', `repo:
  url: https://github.com/acme/gitops
  apiUrl: ${emulator.url}
${environment ? `  github: { environment: "${environment}" }\n` : ''}defaults: { mode: pull-request, confirmations: 1 }
pullRequest: { labels: [] }
targets:
  - name: podinfo-prod
    paths: [${P}]
    resources:
      - { apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: apps }
`);
  let n = 0;
  const snapshot = (attempted: string, ready: 'True' | 'False', applied?: string) =>
    writeFile(dir, `cluster-${++n}.yaml`, yamlDocs(kustomization({ attempted: `main@sha1:${attempted}`, ...(applied ? { applied: `main@sha1:${applied}` } : {}), ready })));
  return { bare, v1, v2, docs, bad, emulator, config, snapshot };
}

test('healthy runs record one deployment per revision and target; a newer one supersedes it; lkg lists them', async (t) => {
  const s = await setup(t);
  for (let i = 0; i < 3; i++) {
    const r = await lastgoodEngine(['check', ...NOW, '--config', s.config, '--snapshot', s.snapshot(s.v1, 'True'), '--record', '--json'], { env });
    t.is(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout).targets[0];
    t.true(out.verified);
    t.is(out.lastKnownGood, s.v1);
    t.regex(out.reason, new RegExp(`recorded ${s.v1.slice(0, 12)} as verified last-known-good \\(GitHub deployments\\)`));
  }
  t.is(s.emulator.deployments.length, 1, 'one deployment however many runs');
  const first = s.emulator.deployments[0]!;
  t.is(first.sha, s.v1);
  t.is(first.environment, 'podinfo-prod');
  t.is(first.task, 'lastgood');
  t.deepEqual(first.statuses.map((st) => st.state), ['success'], 'one status: the same observation twice is recorded once');

  const newer = await lastgoodEngine(['check', ...NOW, '--config', s.config, '--snapshot', s.snapshot(s.v2, 'True'), '--record'], { env });
  t.is(newer.code, 0, newer.stderr);
  t.is(s.emulator.deployments.length, 2);
  t.deepEqual(first.statuses.map((st) => st.state), ['success', 'inactive'], 'superseded');
  t.deepEqual(s.emulator.deployments[1]!.statuses.map((st) => st.state), ['success']);

  const lkg = await lastgood(['lkg', '--config', s.config, '--json'], { env });
  t.is(lkg.code, 0, lkg.stderr);
  const records = JSON.parse(lkg.stdout).targets[0].records as Array<{ commit: string; target: string }>;
  t.deepEqual(records.map((r) => r.commit), [s.v2, s.v1], 'newest first; a superseded one was still seen healthy');
  t.deepEqual(s.emulator.violations, []);
});

test('a later failure reverts to the newest deployment\'s commit, and the pull request says "verified"', async (t) => {
  const s = await setup(t);
  const healthy = await lastgoodEngine(['check', ...NOW, '--config', s.config, '--snapshot', s.snapshot(s.v2, 'True'), '--record'], { env });
  t.is(healthy.code, 0, healthy.stderr);
  // the engine reports no applied revision: the verified deployment bounds the bad range
  const r = await lastgoodEngine(['run', ...NOW, '--config', s.config, '--snapshot', s.snapshot(s.bad, 'False'), '--json'], { env });
  t.is(r.code, 0, r.stderr + r.stdout);
  const out = JSON.parse(r.stdout).targets[0];
  t.is(out.action, 'revert', out.reason);
  t.deepEqual(out.bad, [s.bad]);
  t.is(out.lastKnownGood, s.v2);
  t.true(out.verified);
  const pull = s.emulator.pulls[0]!;
  t.regex(pull.body ?? '', /\*\*verified\*\*: observed healthy by lastgood/);
  t.is(git(s.bare, 'show', `${pull.head}:${P}values.yaml`), 'image:\n  tag: 1.1.0');
  t.deepEqual(s.emulator.violations, []);
});

test('the environment name follows repo.github.environment', async (t) => {
  const s = await setup(t, {}, 'prod/{target}');
  const r = await lastgoodEngine(['check', ...NOW, '--config', s.config, '--snapshot', s.snapshot(s.v1, 'True'), '--record'], { env });
  t.is(r.code, 0, r.stderr);
  t.deepEqual(s.emulator.deployments.map((d) => d.environment), ['prod/podinfo-prod']);
  const bad = writeFile(path.dirname(s.config), 'bad.yaml', (await import('node:fs')).readFileSync(s.config, 'utf8').replace('prod/{target}', 'production'));
  const invalid = await lastgood(['validate', '--config', bad]);
  t.is(invalid.code, 2);
  t.regex(invalid.stderr, /must contain \{target\}/);
});

test('without deployments: write, lastgood says so once and goes on unverified', async (t) => {
  const s = await setup(t, { permissions: { deployments: 'read' } });
  const r = await lastgoodEngine(['check', ...NOW, '--config', s.config, '--snapshot', s.snapshot(s.v2, 'True'), '--record', '--json'], { env });
  t.is(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout).targets[0];
  t.falsy(out.verified);
  t.regex(out.reason, /not recorded: the token cannot write deployments on acme\/gitops \(it needs "deployments: write"\)/);
  t.is(s.emulator.deployments.length, 0);

  const none = await setup(t, { permissions: { deployments: 'none' } });
  const run = await lastgood(['run', ...NOW, '--config', none.config, '--snapshot', none.snapshot(none.bad, 'False', none.docs), '--json'], { env: { ...env, LASTGOOD_LOG_LEVEL: 'warn' } });
  t.is(run.code, 0, run.stderr + run.stdout);
  const reverted = JSON.parse(run.stdout).targets[0];
  t.is(reverted.action, 'revert');
  t.false(reverted.verified);
  t.is(none.emulator.pulls.length, 1);
  t.regex(none.emulator.pulls[0]!.body ?? '', /\*\*unverified\*\*/);
  t.deepEqual(none.emulator.violations, []);
});
