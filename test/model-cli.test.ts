import test from 'ava';
import { rmSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { lastgood } from './support/cli.ts';
import { commit, fingerprint, git, makeRepo, tempDir, writeFile } from './support/git.ts';
import { deployment, kustomization, yamlDocs } from './support/objects.ts';

/**
 * Issue 18 through the CLI, as a user runs it: what Flux builds decides, and a refusal writes
 * nothing and says why (exit 1); a symlink is not bad input (exit 2).
 */

const NOW = ['--now', '2026-11-01T12:05:00Z'];
const deploy = (tag: string) => `apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: podinfo\n  namespace: prod\nspec:\n  template:\n    spec:\n      containers:\n        - name: app\n          image: ghcr.io/stefanprodan/podinfo:${tag}\n`;
const kz = (resources: string[]) => `apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n${resources.map((r) => `  - ${r}`).join('\n')}\n`;

function config(dir: string, repo: string, paths: string): string {
  return writeFile(dir, 'lastgood.yaml', `repo:\n  url: ${repo}\ndefaults:\n  mode: commit\n  confirmations: 1\ntargets:\n  - name: podinfo-prod\n    paths: [${paths}]\n    resources:\n      - { apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: apps }\n      - { apiVersion: apps/v1, kind: Deployment, namespace: prod, name: podinfo }\n`);
}

function snapshot(dir: string, o: { path: string; attempted: string; applied: string; image: string }): string {
  const k = kustomization({ attempted: `main@sha1:${o.attempted}`, applied: `main@sha1:${o.applied}`, ready: 'False' });
  k.spec = { ...k.spec, path: o.path };
  return writeFile(dir, 'cluster.yaml', yamlDocs(k, deployment({ image: o.image, state: 'deadline' })));
}

test('a moved folder: exit 1, nothing written, and the reason names the move, the files and the commit', async (t) => {
  const repo = makeRepo();
  commit(repo, { 'clusters/prod/kustomization.yaml': kz(['../../apps/podinfo/prod']), 'apps/podinfo/prod/kustomization.yaml': kz(['deploy.yaml']), 'apps/podinfo/prod/deploy.yaml': deploy('6.9.3') }, 'initial');
  const applied = commit(repo, { 'README.md': 'x\n' }, 'docs');
  const bad = commit(repo, {
    'apps/podinfo/prod/kustomization.yaml': null, 'apps/podinfo/prod/deploy.yaml': null,
    'apps/shop/prod/kustomization.yaml': kz(['deploy.yaml']), 'apps/shop/prod/deploy.yaml': deploy('7.0.0'),
    'clusters/prod/kustomization.yaml': kz(['../../apps/shop/prod']),
  }, 'move to apps/shop and release 7.0.0');
  const dir = tempDir('lastgood-model-cli-');
  const before = fingerprint(repo);
  const r = await lastgood(['run', ...NOW, '--config', config(dir, repo, 'apps/podinfo/prod/'), '--snapshot', snapshot(dir, { path: './clusters/prod', attempted: bad, applied, image: 'ghcr.io/stefanprodan/podinfo:7.0.0' }), '--json']);
  t.is(r.code, 1, r.stderr);
  const out = JSON.parse(r.stdout).targets[0];
  t.is(out.action, 'alert');
  t.regex(out.reason, /what it builds for the target moved to apps\/shop\/prod\//);
  t.regex(out.reason, new RegExp(bad.slice(0, 12)));
  t.is(fingerprint(repo), before, 'nothing written');
});

test('a symlink changed in the target\'s folder under Flux is not bad input: the release is reverted and the link restored', async (t) => {
  const repo = makeRepo();
  commit(repo, { 'apps/podinfo/prod/deploy.yaml': deploy('6.9.3'), 'shared/a.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n', 'shared/b.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n' }, 'initial');
  symlinkSync('../../../shared/a.yaml', path.join(repo, 'apps/podinfo/prod/config.yaml'));
  const applied = commit(repo, {}, 'link the config');
  rmSync(path.join(repo, 'apps/podinfo/prod/config.yaml'));
  symlinkSync('../../../shared/b.yaml', path.join(repo, 'apps/podinfo/prod/config.yaml'));
  const bad = commit(repo, { 'apps/podinfo/prod/deploy.yaml': deploy('7.0.0') }, 'podinfo 7.0.0 with config b');
  const dir = tempDir('lastgood-model-cli-');
  const r = await lastgood(['run', ...NOW, '--config', config(dir, repo, 'apps/podinfo/prod/'), '--snapshot', snapshot(dir, { path: './apps/podinfo/prod', attempted: bad, applied, image: 'ghcr.io/stefanprodan/podinfo:7.0.0' }), '--json']);
  t.is(r.code, 0, r.stdout + r.stderr);
  const out = JSON.parse(r.stdout).targets[0];
  t.deepEqual(out.bad, [bad]);
  t.is(git(repo, 'show', 'main:apps/podinfo/prod/deploy.yaml') + '\n', deploy('6.9.3'));
  t.is(git(repo, 'ls-tree', 'main', 'apps/podinfo/prod/config.yaml').split(/\s+/)[0], '120000', 'still a symlink');
  t.is(git(repo, 'cat-file', '-p', `main:apps/podinfo/prod/config.yaml`), '../../../shared/a.yaml');
});
