import test from 'ava';
import { lastgood } from './support/cli.ts';
import { lastgoodEngine } from './support/engine-run.ts';
import { commit, fingerprint, git, makeRepo, tempDir, writeFile } from './support/git.ts';
import { canary, kustomization, yamlDocs } from './support/objects.ts';
import { blastRadius } from '../src/revert/blast-radius.ts';

/**
 * Issue 11, classes 2, 5 and 7 on real repositories: `lastgood revert` through the spawned CLI,
 * the runs' engine cases in-process as the CLI calls the engine (support/engine-run.ts; issue 38).
 */

const NOW = ['--now', '2026-11-01T12:05:00Z'];
const K = '{ apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: apps }';

function configFile(dir: string, repo: string, targets: string, defaults = 'mode: commit, strategy: revert, confirmations: 1') {
  return writeFile(dir, 'lastgood.yaml', `repo: { url: ${repo}, branch: main }\ndefaults: { ${defaults} }\ntargets:\n${targets}`);
}

// ---- class 5: a shared parent's failure is not every child's -------------------------------------

test('two targets share one Kustomization; it fails because of one target\'s Canary: only that target is failed and reverted', async (t) => {
  const repo = makeRepo();
  commit(repo, { 'apps/podinfo/values.yaml': 'tag: 1.0\n', 'apps/frontend/values.yaml': 'tag: 3.0\n' }, 'initial');
  const applied = commit(repo, { 'README.md': 'x\n' }, 'docs');
  const podinfoBad = commit(repo, { 'apps/podinfo/values.yaml': 'tag: 1.1\n' }, 'podinfo 1.1');
  const frontendChange = commit(repo, { 'apps/frontend/values.yaml': 'tag: 3.1\n' }, 'frontend 3.1');
  const dir = tempDir();
  const config = configFile(dir, repo, `  - name: podinfo
    paths: [apps/podinfo/]
    resources: [${K}, { apiVersion: flagger.app/v1beta1, kind: Canary, namespace: prod, name: podinfo }]
  - name: frontend
    paths: [apps/frontend/]
    resources: [${K}, { apiVersion: flagger.app/v1beta1, kind: Canary, namespace: prod, name: frontend }]
`);
  const snap = writeFile(dir, 'cluster.yaml', yamlDocs(
    kustomization({ attempted: `main@sha1:${frontendChange}`, applied: `main@sha1:${applied}`, ready: 'False', message: "health check failed after 5m0s: timeout waiting for: [Canary/prod/podinfo status: 'Failed']" }),
    canary({ name: 'podinfo', phase: 'Failed' }),
    canary({ name: 'frontend', phase: 'Succeeded' }),
  ));
  const r = await lastgoodEngine(['run', ...NOW, '--config', config, '--snapshot', snap, '--json']);
  t.is(r.code, 0, r.stderr + r.stdout);
  const [podinfo, frontend] = JSON.parse(r.stdout).targets;
  t.is(podinfo.verdict, 'failed');
  t.deepEqual(podinfo.bad, [podinfoBad]);
  t.is(frontend.verdict, 'healthy', frontend.reason);
  t.is(frontend.action, 'none');
  t.regex(frontend.summary, /Kustomization flux-system\/apps fails because of Canary\/prod\/podinfo \(Failed\), which belongs to another target/);
  t.is(git(repo, 'show', 'main:apps/frontend/values.yaml'), 'tag: 3.1', 'the other target is untouched');
  t.is(git(repo, 'show', 'main:apps/podinfo/values.yaml'), 'tag: 1.0');
});

// ---- class 2: the blast-radius guard ---------------------------------------------------------------

test('a revert that would delete every manifest of the target is refused: exit 1, nothing written, the plan printed', async (t) => {
  const repo = makeRepo();
  commit(repo, { 'README.md': 'platform\n' }, 'initial');
  const created = commit(repo, { 'apps/podinfo/deploy.yaml': 'kind: Deployment\n', 'apps/podinfo/svc.yaml': 'kind: Service\n' }, 'create podinfo');
  commit(repo, { 'apps/redis/values.yaml': 'replicas: 2\n' }, 'redis');
  const dir = tempDir();
  const targets = (extra: string) => `  - name: podinfo\n    paths: [apps/podinfo/]\n    resources: [${K}]\n${extra}`;
  const before = fingerprint(repo);
  const refused = await lastgood(['revert', '--config', configFile(dir, repo, targets('')), '--target', 'podinfo', '--bad', created, ...NOW], {});
  t.is(refused.code, 1, refused.stderr + refused.stdout);
  t.regex(refused.stdout, /refused by the blast-radius guard: it deletes every manifest of the target \(2 files under apps\/podinfo\/\)/);
  t.regex(refused.stdout, /-kind: Service/, 'the planned change is shown');
  t.is(fingerprint(repo), before, 'nothing written');
  // the target may allow it, knowingly
  const allowed = await lastgood(['revert', '--config', configFile(dir, repo, targets('    blastRadius: { allowEmpty: true }\n    strategy: restore\n')), '--target', 'podinfo', '--bad', created, ...NOW]);
  t.is(allowed.code, 0, allowed.stderr + allowed.stdout);
  t.is(git(repo, 'ls-tree', '-r', '--name-only', 'main', '--', 'apps/podinfo'), '');
});

test('blast radius (pure): untouched files, files outside the paths, emptied folders', (t) => {
  const before = new Map([['apps/a/x.yaml', { oid: '1', mode: '100644' }], ['apps/a/y.yaml', { oid: '2', mode: '100644' }], ['apps/b/z.yaml', { oid: '3', mode: '100644' }]]);
  const base = { before, paths: ['apps/a/', 'apps/b/'], strategy: 'revert' as const, touched: ['apps/a/x.yaml'], freezeFiles: [], allowEmpty: false, allowUntouchedFiles: false };
  t.deepEqual(blastRadius({ ...base, files: [{ path: 'apps/a/x.yaml', mode: '100644', oid: '9' }] }), []);
  t.deepEqual(blastRadius({ ...base, files: [{ path: 'apps/a/y.yaml', mode: '100644', oid: '9' }] }), ['it changes apps/a/y.yaml, which no bad commit changed']);
  t.deepEqual(blastRadius({ ...base, allowUntouchedFiles: true, files: [{ path: 'apps/a/y.yaml', mode: '100644', oid: '9' }] }), []);
  t.deepEqual(blastRadius({ ...base, strategy: 'restore', files: [{ path: 'apps/a/y.yaml', mode: '100644', oid: '9' }] }), [], 'a restore may undo later commits in the paths');
  t.deepEqual(blastRadius({ ...base, files: [{ path: 'apps/c/w.yaml', mode: '100644', oid: '9' }] }), ['it changes apps/c/w.yaml, outside the target\'s paths (apps/a/, apps/b/)']);
  t.deepEqual(blastRadius({ ...base, freezeFiles: ['clusters/prod/automation.yaml'], files: [{ path: 'clusters/prod/automation.yaml', mode: '100644', oid: '9' }] }), [], 'freeze edits are listed on their own');
  t.deepEqual(blastRadius({ ...base, touched: ['apps/b/z.yaml'], files: [{ path: 'apps/b/z.yaml', delete: true }] }), ['it empties apps/b/, which the target lists']);
  t.deepEqual(
    blastRadius({ ...base, touched: [...before.keys()], files: [...before.keys()].map((path) => ({ path, delete: true as const })) }),
    ['it deletes every manifest of the target (3 files under apps/a/, apps/b/)'],
  );
});

// ---- class 7: reasons say the truth ---------------------------------------------------------------

test('revert-or-restore that falls back: the note is under "Notes:", not "Frozen:", and the JSON reason says it restored', async (t) => {
  const repo = makeRepo();
  const P = 'apps/podinfo/';
  commit(repo, { [`${P}values.yaml`]: 'tag: 1.0\nreplicas: 2\n' }, 'initial');
  const applied = commit(repo, { 'README.md': 'x\n' }, 'docs');
  const bad = commit(repo, { [`${P}values.yaml`]: 'tag: 1.1\nreplicas: 2\n' }, 'podinfo 1.1');
  commit(repo, { [`${P}values.yaml`]: 'tag: 1.2\nreplicas: 2\n' }, 'podinfo 1.2 on top');
  const dir = tempDir();
  const config = configFile(dir, repo, `  - name: podinfo\n    paths: [${P}]\n    resources: [${K}]\n`, 'mode: commit, strategy: revert-or-restore, confirmations: 2');
  const snap = writeFile(dir, 'c.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${bad}`, applied: `main@sha1:${applied}`, ready: 'False' })));
  const r = await lastgoodEngine(['run', ...NOW, '--config', config, '--snapshot', snap, '--json']);
  t.is(r.code, 0, r.stderr + r.stdout);
  const out = JSON.parse(r.stdout).targets[0];
  t.regex(out.reason, /the revert conflicted .*; restored the last-known-good instead/);
  t.regex(out.reason, /the engine's verdict is final/, 'a one-shot run says why one assessment was enough');
  const message = git(repo, 'log', '-1', '--format=%B', 'main');
  t.regex(message, /\nNotes:\n- the revert conflicted/);
  t.notRegex(message, /Frozen:\n- the revert conflicted/);
  t.regex(message, /^lastgood: restore podinfo/m);
});
