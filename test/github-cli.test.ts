import test from 'ava';
import path from 'node:path';
import { lastgood } from './support/cli.ts';
import { lastgoodEngine } from './support/engine-run.ts';
import { commit, git, makeRepo, tempDir, writeFile } from './support/git.ts';
import { startGitHubEmulator } from './support/github-emulator.ts';
import { kustomization, yamlDocs } from './support/objects.ts';

/**
 * The whole pipeline through the CLI against the GitHub API emulator (real @octokit/rest, a real
 * bare repository behind it, every request and response checked against GitHub's OpenAPI
 * description): a failed target becomes exactly one pull request, found again by later runs and
 * closed when a newer healthy revision lands (that case in-process, as the CLI calls the engine:
 * support/engine-run.ts; issue 38).
 */

const TOKEN = 'ghs_cliEmulatorToken0123456789abcdef';
const P = 'apps/podinfo/overlays/prod/';
const NOW = ['--now', '2026-11-01T12:05:00Z'];

async function setup(t: { teardown(fn: () => unknown): void }) {
  const work = makeRepo();
  const good = commit(work, { [`${P}values.yaml`]: 'image:\n  tag: 1.0.0\nreplicas: 2\n', 'apps/other/x.yaml': 'a: 1\n' }, 'podinfo 1.0.0');
  const bad = commit(work, { [`${P}values.yaml`]: 'image:\n  tag: 1.1.0\nreplicas: 2\n' }, 'podinfo 1.1.0');
  const later = commit(work, { 'apps/other/x.yaml': 'a: 2\n' }, 'other: a=2');
  const bare = path.join(tempDir('lastgood-ghcli-'), 'gitops.git');
  git(work, 'clone', '-q', '--bare', work, bare);
  const emulator = await startGitHubEmulator({ bareRepo: bare, owner: 'acme', repo: 'gitops', token: TOKEN });
  t.teardown(() => emulator.close());
  const dir = tempDir();
  const config = writeFile(dir, 'lastgood.yaml', `repo:
  url: https://github.com/acme/gitops
  apiUrl: ${emulator.url}
defaults: { mode: pull-request, confirmations: 1 }
pullRequest: { labels: [lastgood, rollback], reviewers: [alice] }
targets:
  - name: podinfo-prod
    paths: [${P}]
    resources:
      - { apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: apps }
`);
  const snapshot = (attempted: string, applied: string, ready: 'True' | 'False') =>
    writeFile(dir, `cluster-${ready}.yaml`, yamlDocs(kustomization({ attempted: `main@sha1:${attempted}`, applied: `main@sha1:${applied}`, ready })));
  return { bare, good, bad, later, emulator, config, snapshot };
}

const env = { GITHUB_TOKEN: TOKEN };

test('failed target → one pull request with the right tree, trailers, labels and body; a second run finds it', async (t) => {
  const s = await setup(t);
  const snap = s.snapshot(s.bad, s.good, 'False');
  const r = await lastgood(['run', ...NOW, '--config', s.config, '--snapshot', snap, '--json'], { env });
  t.is(r.code, 0, r.stderr + r.stdout);
  const out = JSON.parse(r.stdout).targets[0];
  t.is(out.action, 'revert');
  t.is(s.emulator.pulls.length, 1);
  const pull = s.emulator.pulls[0]!;
  t.is(pull.head, `lastgood/podinfo-prod/${s.bad.slice(0, 12)}`);
  t.regex(out.pullRequest, new RegExp(`/acme/gitops/pull/${pull.number}$`), 'the html_url GitHub returns');
  t.deepEqual(pull.labels, ['lastgood', 'rollback']);
  t.deepEqual(pull.reviewers, ['alice']);
  // names and reasons from the cluster are quoted as code (revert/markup.ts)
  t.regex(pull.body ?? '', /`kustomize\.toolkit\.fluxcd\.io\/Kustomization flux-system\/apps` \| failed \| `HealthCheckFailed`/);
  t.regex(pull.body ?? '', new RegExp(`\\[\`${s.bad.slice(0, 12)}\`\\]\\(https://github\\.com/acme/gitops/commit/${s.bad}\\)`));
  // the tree, read with git on the backing repository
  const branchHead = git(s.bare, 'rev-parse', pull.head);
  t.is(git(s.bare, 'rev-parse', `${branchHead}^`), s.later);
  t.is(git(s.bare, 'show', `${branchHead}:${P}values.yaml`), 'image:\n  tag: 1.0.0\nreplicas: 2');
  t.is(git(s.bare, 'diff', '--name-only', s.later, branchHead), `${P}values.yaml`);
  t.regex(git(s.bare, 'log', '-1', '--format=%(trailers)', branchHead), new RegExp(`Lastgood-Target: podinfo-prod\\nLastgood-Reverts: ${s.bad}\\nLastgood-Restores: ${s.good}`));
  t.is(git(s.bare, 'rev-parse', 'main'), s.later, 'main is untouched: the PR is the rollback');
  t.deepEqual(s.emulator.violations, []);

  const again = await lastgood(['run', ...NOW, '--config', s.config, '--snapshot', snap, '--json'], { env });
  t.is(again.code, 0, again.stderr);
  t.is(s.emulator.pulls.length, 1, 'the same PR, not a second one');
  t.is(JSON.parse(again.stdout).targets[0].pullRequest, out.pullRequest);

  for (const text of [r.stdout, r.stderr, again.stdout, again.stderr, pull.body ?? '', ...s.emulator.bodies]) t.false(text.includes(TOKEN));
  t.deepEqual(s.emulator.violations, []);
});

test('a newer healthy revision closes the open revert pull request with a comment', async (t) => {
  const s = await setup(t);
  const failed = await lastgoodEngine(['run', ...NOW, '--config', s.config, '--snapshot', s.snapshot(s.bad, s.good, 'False'), '--json'], { env });
  t.is(failed.code, 0, failed.stderr);
  const healthy = await lastgoodEngine(['run', ...NOW, '--config', s.config, '--snapshot', s.snapshot(s.later, s.later, 'True'), '--json'], { env });
  t.is(healthy.code, 0, healthy.stderr);
  const pull = s.emulator.pulls[0]!;
  t.is(pull.state, 'closed');
  t.regex(pull.comments.at(-1)?.body ?? '', /newer healthy revision .* no longer needed/);
  t.regex(JSON.parse(healthy.stdout).targets[0].reason, new RegExp(`closed superseded revert pull request #${pull.number}`));
  t.deepEqual(s.emulator.violations, []);
});

test('a missing token is a clear error (exit 2) that names what is needed', async (t) => {
  const s = await setup(t);
  const r = await lastgood(['run', ...NOW, '--config', s.config, '--snapshot', s.snapshot(s.bad, s.good, 'False')], { env: { GITHUB_TOKEN: '', LASTGOOD_GITHUB_TOKEN: '' } });
  t.is(r.code, 2, r.stderr);
  t.regex(r.stderr, /needs a token \(GITHUB_TOKEN/);
  t.is(s.emulator.pulls.length, 0);
});

test('a token without write permission: exit 3, names the missing permission, never the token', async (t) => {
  const s = await setup(t);
  const ro = await startGitHubEmulator({ bareRepo: s.bare, owner: 'acme', repo: 'gitops', token: TOKEN, permissions: { contents: 'read', pullRequests: 'read' } });
  t.teardown(() => ro.close());
  const config = writeFile(path.dirname(s.config), 'ro.yaml', (await import('node:fs')).readFileSync(s.config, 'utf8').replace(s.emulator.url, ro.url));
  const r = await lastgood(['run', ...NOW, '--config', config, '--snapshot', s.snapshot(s.bad, s.good, 'False')], { env });
  t.is(r.code, 3, r.stderr + r.stdout);
  t.regex(r.stderr, /contents: write/);
  t.false((r.stdout + r.stderr).includes(TOKEN));
});

test('many clusters, one failure (a fleet): one pull request, written once; the others find it and neither rewrite it nor comment', async (t) => {
  const s = await setup(t);
  // five clusters see the same failure, each in its own words and times
  const clusters = Array.from({ length: 5 }, (_, i) => writeFile(tempDir(), `cluster-${i}.yaml`, yamlDocs(kustomization({
    attempted: `main@sha1:${s.bad}`, applied: `main@sha1:${s.good}`, ready: 'False',
    message: `health check failed after 5m0s in cluster-${i}: timeout waiting for: [Deployment/prod/podinfo status: 'InProgress']`, since: `2026-11-01T12:0${i}:00Z`,
  }))));
  const first = await lastgood(['run', ...NOW, '--config', s.config, '--snapshot', clusters[0]!, '--json'], { env });
  t.is(first.code, 0, first.stderr + first.stdout);
  const writesAfterFirst = s.emulator.log.filter((r) => r.write).length;
  const others = await Promise.all(clusters.slice(1).map((c) => lastgood(['run', ...NOW, '--config', s.config, '--snapshot', c, '--json'], { env })));
  for (const r of others) {
    t.is(r.code, 0, r.stderr + r.stdout);
    t.is(JSON.parse(r.stdout).targets[0].created, false);
  }
  t.is(s.emulator.pulls.length, 1, 'one request');
  t.is(s.emulator.pulls[0]!.comments.length, 0, 'no comment for a failure seen from another cluster');
  t.deepEqual(s.emulator.log.slice(0).filter((r) => r.write).length, writesAfterFirst, 'the other clusters wrote nothing: no description rewritten, no comment');
  t.regex(s.emulator.pulls[0]!.body ?? '', /cluster-0/, 'the description is the first cluster\'s, as written');
  t.deepEqual(s.emulator.violations, []);
});
