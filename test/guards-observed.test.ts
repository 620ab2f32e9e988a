import test from 'ava';
import { lastgoodEngine } from './support/engine-run.ts';
import { commit, fingerprint, makeRepo, tempDir, writeFile } from './support/git.ts';
import { deployment, kustomization, yamlDocs } from './support/objects.ts';

/**
 * Evidence counts for a revision only when it was observed at that revision (issue 35): a
 * controller judged a Deployment's ProgressDeadlineExceeded, left over from the bad release and
 * 24 seconds older than the sync of lastgood's revert, as the revert's own failure ("the revert
 * itself failed"). Through the engine as the CLI calls it (support/engine-run.ts) on a real repository: the leftover failure holds the target
 * (waiting for an observation at the revert); a failure that began after the revert was applied is
 * the revert's, and alerts as before.
 */

const NOW = ['--now', '2026-11-01T12:10:00Z'];
const K = '{ apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: apps }';
const D = '{ apiVersion: apps/v1, kind: Deployment, namespace: prod, name: podinfo }';

function scenario() {
  const repo = makeRepo();
  commit(repo, { 'apps/podinfo/deploy.yaml': 'kind: Deployment\nimage: podinfo:1.0\n' }, 'podinfo 1.0');
  const bad = commit(repo, { 'apps/podinfo/deploy.yaml': 'kind: Deployment\nimage: podinfo:1.1\n' }, 'podinfo 1.1');
  const revert = commit(repo, { 'apps/podinfo/deploy.yaml': 'kind: Deployment\nimage: podinfo:1.0\n' }, `lastgood: revert podinfo to 1.0\n\nLastgood-Target: podinfo\nLastgood-Reverts: ${bad}\n`);
  const dir = tempDir('lastgood-observed-');
  const config = writeFile(dir, 'lastgood.yaml', `repo: { url: ${repo}, branch: main }\ndefaults: { mode: commit, strategy: revert, confirmations: 1, cooldown: "off" }\ntargets:\n  - name: podinfo\n    paths: [apps/podinfo/]\n    resources: [${K}, ${D}]\n`);
  return { repo, dir, config, bad, revert };
}

test('a Deployment failure older than the sync of lastgood\'s revert is left over from the bad release: held, not "the revert itself failed"', async (t) => {
  const s = scenario();
  // Flux applied the revert at 12:05:24 and is Ready there; the Deployment's deadline ran out at 12:05:00, on the bad image
  const snap = writeFile(s.dir, 'cluster.yaml', yamlDocs(
    kustomization({ attempted: `main@sha1:${s.revert}`, applied: `main@sha1:${s.revert}`, ready: 'True', reason: 'ReconciliationSucceeded', since: '2026-11-01T12:05:24Z' }),
    deployment({ image: 'podinfo:1.1', state: 'deadline', since: '2026-11-01T12:05:00Z' }),
  ));
  const before = fingerprint(s.repo);
  const r = await lastgoodEngine(['run', ...NOW, '--config', s.config, '--snapshot', snap, '--json']);
  t.is(r.code, 0, r.stdout + r.stderr);
  const [target] = JSON.parse(r.stdout).targets;
  t.is(target.action, 'wait', target.reason);
  t.regex(target.reason, new RegExp(`held: Deployment prod/podinfo failed since 2026-11-01T12:05:00(\\.000)?Z, before lastgood's revert ${s.revert.slice(0, 12)} was applied \\(2026-11-01T12:05:24(\\.000)?Z\\): a failure left over from the revision before it, not the revert's`));
  t.notRegex(r.stdout, /the revert itself failed/);
  t.is(fingerprint(s.repo), before, 'nothing written');
});

test('a Deployment failure that began after lastgood\'s revert was applied is the revert\'s: alert, never a revert of the revert', async (t) => {
  const s = scenario();
  const snap = writeFile(s.dir, 'cluster.yaml', yamlDocs(
    kustomization({ attempted: `main@sha1:${s.revert}`, applied: `main@sha1:${s.revert}`, ready: 'True', reason: 'ReconciliationSucceeded', since: '2026-11-01T12:05:24Z' }),
    deployment({ image: 'podinfo:1.0', state: 'deadline', since: '2026-11-01T12:08:00Z' }),
  ));
  const before = fingerprint(s.repo);
  const r = await lastgoodEngine(['run', ...NOW, '--config', s.config, '--snapshot', snap, '--json']);
  t.is(r.code, 1, r.stdout + r.stderr);
  const [target] = JSON.parse(r.stdout).targets;
  t.is(target.action, 'alert');
  t.regex(target.reason, new RegExp(`the revert itself failed: the failing revision ${s.revert.slice(0, 12)} is lastgood's own revert for podinfo`));
  t.is(fingerprint(s.repo), before);
});
