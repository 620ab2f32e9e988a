import test from 'ava';
import { lastgood } from './support/cli.ts';
import { lastgoodEngine } from './support/engine-run.ts';
import { commit, fingerprint, git, makeRepo, tempDir, writeFile } from './support/git.ts';
import { kustomization, yamlDocs } from './support/objects.ts';

/** the failures in these snapshots begin at 12:00; five minutes later they are fresh (maxAge) */
const NOW = ['--now', '2026-11-01T12:05:00Z'];

/**
 * The revert engine on real repositories (issue 4 scenarios): runs in-process as the CLI calls the
 * engine (support/engine-run.ts; issue 38); `lkg` through the spawned CLI.
 */

const P = 'apps/podinfo/overlays/prod/';
const values = (tag: string, replicas: number, comment = '# prod values') => `${comment}
image:
  tag: ${tag} # set by the release pipeline
replicas: ${replicas}
`;

function setup(strategy: string) {
  const repo = makeRepo();
  const good = commit(repo, { [`${P}values.yaml`]: values('1.0.0', 2), 'apps/other/x.yaml': 'a: 1\n' }, 'podinfo 1.0.0');
  const bad = commit(repo, { [`${P}values.yaml`]: values('1.1.0', 2) }, 'podinfo 1.1.0');
  const dir = tempDir();
  const config = writeFile(dir, 'lastgood.yaml', `repo: { url: ${repo}, branch: main }
defaults: { mode: commit, strategy: ${strategy}, confirmations: 1 }
targets:
  - name: podinfo
    paths: [${P}]
    resources:
      - { apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: apps }
`);
  return { repo, good, bad, dir, config };
}

const failedAt = (dir: string, attempted: string, applied: string) =>
  writeFile(dir, 'cluster.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${attempted}`, applied: `main@sha1:${applied}`, ready: 'False' })));

test('revert keeps an unrelated later edit (another key, with its comment) that restore would lose', async (t) => {
  for (const strategy of ['revert', 'restore'] as const) {
    const s = setup(strategy);
    // after the bad release, someone scales up (not yet deployed when the failure is seen)
    commit(s.repo, { [`${P}values.yaml`]: values('1.1.0', 5, '# prod values\n# scaled for the sale') }, 'podinfo: scale to 5');
    const r = await lastgoodEngine(['run', ...NOW, '--config', s.config, '--snapshot', failedAt(s.dir, s.bad, s.good), '--json']);
    t.is(r.code, 0, r.stderr + r.stdout);
    const after = git(s.repo, 'show', `main:${P}values.yaml`);
    t.regex(after, /tag: 1\.0\.0 # set by the release pipeline/);
    if (strategy === 'revert') {
      t.regex(after, /replicas: 5/, 'revert keeps the later scale-up');
      t.regex(after, /# scaled for the sale/, 'and its comment');
    } else {
      t.regex(after, /replicas: 2/, 'restore throws the later scale-up away');
    }
  }
});

test('a conflicting revert exits 1, names the files and the commits, and writes nothing', async (t) => {
  const s = setup('revert');
  commit(s.repo, { [`${P}values.yaml`]: values('1.2.0', 2) }, 'podinfo 1.2.0 (a fix on top of the bad one)');
  const before = fingerprint(s.repo);
  const r = await lastgoodEngine(['run', ...NOW, '--config', s.config, '--snapshot', failedAt(s.dir, s.bad, s.good)]);
  t.is(r.code, 1, r.stderr + r.stdout);
  t.regex(r.stdout, /revert impossible: revert conflicts/);
  t.regex(r.stdout, new RegExp(`${P}values\\.yaml`));
  t.regex(r.stdout, new RegExp(s.bad.slice(0, 12)));
  t.is(fingerprint(s.repo), before);
});

test('revert-or-restore falls back to restore on a conflict and says so', async (t) => {
  const s = setup('revert-or-restore');
  commit(s.repo, { [`${P}values.yaml`]: values('1.2.0', 2) }, 'podinfo 1.2.0');
  const r = await lastgoodEngine(['run', ...NOW, '--config', s.config, '--snapshot', failedAt(s.dir, s.bad, s.good), '--json']);
  t.is(r.code, 0, r.stderr + r.stdout);
  t.regex(git(s.repo, 'show', `main:${P}values.yaml`), /tag: 1\.0\.0/);
  t.regex(git(s.repo, 'log', '-1', '--format=%B', 'main'), /the revert conflicted .* restored the last-known-good instead/s);
});

test('check --record writes a verified note, lkg lists it, and the revert says the LKG was verified', async (t) => {
  const s = setup('revert');
  const healthy = writeFile(s.dir, 'healthy.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${s.good}`, applied: `main@sha1:${s.good}`, ready: 'True', since: '2026-11-01T11:50:00Z' })));
  const rec = await lastgoodEngine(['check', '--config', s.config, '--snapshot', healthy, '--record', '--now', '2026-11-01T12:00:00Z', '--json']);
  t.is(rec.code, 0, rec.stderr);
  t.is(JSON.parse(rec.stdout).targets[0].lastKnownGood, s.good);
  t.regex(git(s.repo, 'notes', '--ref=lastgood', 'show', s.good), /^lastgood verified target=podinfo at=2026-11-01T12:00:00.000Z evidence=kustomize/);
  const lkg = await lastgood(['lkg', '--config', s.config, '--json']);
  t.is(lkg.code, 0, lkg.stderr);
  t.deepEqual(JSON.parse(lkg.stdout).targets[0].records.map((r: { commit: string }) => r.commit), [s.good]);
  const r = await lastgoodEngine(['run', ...NOW, '--config', s.config, '--snapshot', failedAt(s.dir, s.bad, s.good), '--json']);
  t.is(r.code, 0, r.stderr);
  t.true(JSON.parse(r.stdout).targets[0].verified);
  t.regex(git(s.repo, 'log', '-1', '--format=%B', 'main'), /verified: observed healthy/);
});

test('the revert itself failed: exit 1, said plainly, not reverted', async (t) => {
  const s = setup('revert');
  const first = await lastgoodEngine(['run', ...NOW, '--config', s.config, '--snapshot', failedAt(s.dir, s.bad, s.good), '--json']);
  t.is(first.code, 0, first.stderr);
  const revert = JSON.parse(first.stdout).targets[0].commit as string;
  const before = fingerprint(s.repo);
  const r = await lastgoodEngine(['run', ...NOW, '--config', s.config, '--snapshot', failedAt(s.dir, revert, s.bad)]);
  t.is(r.code, 1, r.stdout + r.stderr);
  t.regex(r.stdout, /the revert itself failed/);
  t.is(fingerprint(s.repo), before);
});
