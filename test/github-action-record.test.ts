import test from 'ava';
import path from 'node:path';
import { runAction } from './support/action.ts';
import { commit, git, makeRepo, tempDir, writeFile } from './support/git.ts';
import { startGitHubEmulator } from './support/github-emulator.ts';
import { kustomization, yamlDocs } from './support/objects.ts';

/**
 * The Action with `record: true`, as the runner runs it (node dist/action.js, INPUT_* variables):
 * after a healthy run it records each target's revision as a GitHub deployment (status success);
 * the same revision twice is one deployment.
 */

const TOKEN = 'ghs_actionRecordToken0123456789abcdef';
const P = 'apps/podinfo/overlays/prod/';

test('record: true — a healthy run records one deployment per revision and target, and says so', async (t) => {
  const work = makeRepo();
  const v1 = commit(work, { [`${P}values.yaml`]: 'image:\n  tag: 1.0.0\n' }, 'podinfo 1.0.0');
  const bare = path.join(tempDir('lastgood-action-record-'), 'gitops.git');
  git(work, 'clone', '-q', '--bare', work, bare);
  const emulator = await startGitHubEmulator({ bareRepo: bare, owner: 'acme', repo: 'gitops', token: TOKEN });
  t.teardown(() => emulator.close());
  const workspace = tempDir('lastgood-ws-');
  writeFile(workspace, 'lastgood.yaml', `repo:
  url: https://github.com/acme/gitops
  apiUrl: ${emulator.url}
defaults: { mode: pull-request, confirmations: 1 }
targets:
  - name: podinfo-prod
    paths: [${P}]
    resources:
      - { apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: apps }
`);
  writeFile(workspace, 'cluster.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${v1}`, applied: `main@sha1:${v1}`, ready: 'True' })));
  for (let i = 0; i < 2; i++) {
    const r = await runAction({ workspace, token: TOKEN, eventName: 'push', with: { snapshot: 'cluster.yaml', record: 'true' } });
    t.is(r.code, 0, r.stdout + r.stderr);
    t.is(r.outputs.verdict, 'healthy');
    t.regex(r.stdout, new RegExp(`podinfo-prod: recorded ${v1.slice(0, 12)} as verified last-known-good \\(GitHub deployments\\)`));
  }
  t.is(emulator.deployments.length, 1);
  t.is(emulator.deployments[0]!.sha, v1);
  t.is(emulator.deployments[0]!.environment, 'podinfo-prod');
  t.deepEqual(emulator.deployments[0]!.statuses.map((s) => s.state), ['success']);

  const bad = await runAction({ workspace, token: TOKEN, eventName: 'push', with: { snapshot: 'cluster.yaml', record: 'maybe' } });
  t.is(bad.code, 2);
  t.regex(bad.stdout + bad.stderr, /input record: "maybe" is not true or false/);
  t.deepEqual(emulator.violations, []);
});
