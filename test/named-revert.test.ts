import test from 'ava';
import path from 'node:path';
import { runAction } from './support/action.ts';
import { startGitHubEmulator } from './support/github-emulator.ts';
import { lastgood } from './support/cli.ts';
import { commit, fingerprint, git, makeRepo, tempDir, writeFile } from './support/git.ts';

/**
 * A person's revert (`revert --bad X [--to Y]`, the Action's `bad`/`to` inputs) goes back only to
 * what the configured branch itself held (issue 35): `--to` must be an earlier commit of the
 * branch's first-parent line below the bad commit. A commit of another branch, or of a side branch
 * merged into main, would ship content nobody reviewed on main — with `strategy: restore` as the
 * content itself, with `strategy: revert` as a false `Lastgood-Restores` trailer. And a `--bad` that
 * changed nothing under the target's paths is refused (issue 36): the person pasted the wrong SHA.
 */

const NOW = ['--now', '2026-11-01T12:05:00Z'];
const P = 'apps/podinfo/';
const TOKEN = 'ghs_lastgoodTestToken0123456789abcdefABCDEF';

/**
 * main: c0 README, c1 podinfo 6.0.0, c2 replicas, M merges side branch S (a docs change made on a
 * branch off c2), c3 the bad release 6.1.0, c4 redis (outside the target).
 * Elsewhere: F on branch `unreviewed` off c1, setting podinfo to an image nobody reviewed.
 */
function scenario() {
  const work = makeRepo();
  const c0 = commit(work, { 'README.md': 'platform\n' }, 'initial');
  const c1 = commit(work, { [`${P}kustomization.yaml`]: 'images:\n  - name: podinfo\n    newTag: 6.0.0\n', 'apps/redis/values.yaml': 'replicas: 1\n' }, 'podinfo 6.0.0');
  const c2 = commit(work, { [`${P}replicas.yaml`]: 'replicas: 2\n' }, 'podinfo: two replicas');
  git(work, 'checkout', '-q', '-b', 'side');
  const s = commit(work, { [`${P}notes.md`]: 'side\n' }, 'podinfo notes (side branch)');
  git(work, 'checkout', '-q', 'main');
  git(work, 'merge', '-q', '--no-ff', '-m', 'Merge branch side', 'side');
  const m = git(work, 'rev-parse', 'HEAD');
  const c3 = commit(work, { [`${P}kustomization.yaml`]: 'images:\n  - name: podinfo\n    newTag: 6.1.0\n' }, 'podinfo: release 6.1.0');
  const c4 = commit(work, { 'apps/redis/values.yaml': 'replicas: 3\n' }, 'redis: three replicas');
  git(work, 'checkout', '-q', '-b', 'unreviewed', c1);
  const f = commit(work, { [`${P}kustomization.yaml`]: 'images:\n  - name: evil.example.com/podinfo\n    newTag: latest\n' }, 'podinfo from somewhere else');
  git(work, 'checkout', '-q', 'main');
  const workspace = tempDir('lastgood-named-');
  const repo = path.join(workspace, 'gitops.git');
  git(workspace, 'clone', '-q', '--bare', '--no-single-branch', work, repo);
  git(repo, 'fetch', '-q', work, 'unreviewed:unreviewed');
  return { workspace, repo, c0, c1, c2, s, m, c3, c4, f };
}

const config = (workspace: string, strategy: 'revert' | 'restore') =>
  writeFile(workspace, 'lastgood.yaml', `repo:\n  url: ./gitops.git\ndefaults:\n  mode: commit\n  strategy: ${strategy}\ntargets:\n  - name: podinfo-prod\n    paths: [${P}]\n    resources:\n      - { apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: apps }\n`);

const revert = (workspace: string, strategy: 'revert' | 'restore', args: string[]) =>
  lastgood(['revert', '--config', config(workspace, strategy), '--target', 'podinfo-prod', ...args, ...NOW], { cwd: workspace });

for (const strategy of ['restore', 'revert'] as const) {
  test(`strategy ${strategy}: --to a commit of another branch is refused, exit 2, nothing written`, async (t) => {
    const s = scenario();
    const before = fingerprint(s.repo);
    const r = await revert(s.workspace, strategy, ['--bad', s.c3, '--to', s.f]);
    t.is(r.code, 2, r.stdout + r.stderr);
    t.regex(r.stderr + r.stdout, new RegExp(`--to ${s.f}: not an earlier commit of main below the bad commit ${s.c3.slice(0, 12)} \\(its first-parent line\\)`));
    t.regex(r.stderr + r.stdout, /would ship changes nobody reviewed there/);
    t.is(fingerprint(s.repo), before, 'nothing written');
    t.is(git(s.repo, 'rev-parse', 'main'), s.c4);
  });
}

test('--to a commit of a side branch merged into main (an ancestor, not on the first-parent line) is refused', async (t) => {
  const s = scenario();
  t.is(git(s.repo, 'merge-base', '--is-ancestor', s.s, s.c3), '', 'S is an ancestor of the bad commit');
  const before = fingerprint(s.repo);
  const r = await revert(s.workspace, 'restore', ['--bad', s.c3, '--to', s.s]);
  t.is(r.code, 2, r.stdout + r.stderr);
  t.regex(r.stderr + r.stdout, new RegExp(`--to ${s.s}: not an earlier commit of main`));
  t.is(fingerprint(s.repo), before);
});

test('--to the bad commit itself, or a later commit, is refused', async (t) => {
  const s = scenario();
  const before = fingerprint(s.repo);
  const itself = await revert(s.workspace, 'restore', ['--bad', s.c3, '--to', s.c3]);
  t.is(itself.code, 2, itself.stdout + itself.stderr);
  t.regex(itself.stderr + itself.stdout, /it is the bad commit itself; --to names the last good commit, an earlier one/);
  const later = await revert(s.workspace, 'restore', ['--bad', s.c3, '--to', s.c4]);
  t.is(later.code, 2, later.stdout + later.stderr);
  t.regex(later.stderr + later.stdout, new RegExp(`--to ${s.c4}: not an earlier commit of main`));
  t.is(fingerprint(s.repo), before);
});

test('--to an earlier commit of the first-parent line is accepted: the content and the trailer name it (git revert as the oracle for the revert strategy)', async (t) => {
  const s = scenario();
  const restored = await revert(s.workspace, 'restore', ['--bad', s.c3, '--to', s.c1]);
  t.is(restored.code, 0, restored.stdout + restored.stderr);
  const head = git(s.repo, 'rev-parse', 'main');
  t.is(git(s.repo, 'rev-parse', `${head}^`), s.c4, 'one commit on top of the head');
  // restore: the target's folder is c1's, byte for byte; nothing outside it changed
  t.is(git(s.repo, 'rev-parse', `${head}:${P}`), git(s.repo, 'rev-parse', `${s.c1}:${P}`));
  t.is(git(s.repo, 'rev-parse', `${head}:apps/redis`), git(s.repo, 'rev-parse', `${s.c4}:apps/redis`));
  const message = git(s.repo, 'log', '-1', '--format=%B', head);
  t.regex(message, new RegExp(`Lastgood-Restores: ${s.c1}`));
  t.regex(message, new RegExp(`Lastgood-Reverts: ${s.c3}`));

  // revert: the tree is what `git revert` of the bad commit gives
  const t2 = scenario();
  const reverted = await revert(t2.workspace, 'revert', ['--bad', t2.c3, '--to', t2.c2]);
  t.is(reverted.code, 0, reverted.stdout + reverted.stderr);
  const oracle = tempDir('lastgood-oracle-');
  git(oracle, 'clone', '-q', t2.repo, 'w');
  const w = path.join(oracle, 'w');
  git(w, 'checkout', '-q', '-B', 'oracle', t2.c4);
  git(w, '-c', 'user.name=o', '-c', 'user.email=o@example.com', 'revert', '--no-edit', t2.c3);
  t.is(git(t2.repo, 'rev-parse', 'main^{tree}'), git(w, 'rev-parse', 'HEAD^{tree}'));
  t.regex(git(t2.repo, 'log', '-1', '--format=%B', 'main'), new RegExp(`Lastgood-Restores: ${t2.c2}`));
});

test('--bad a commit that changed nothing under the target is refused with that sentence, exit 2, nothing written', async (t) => {
  const s = scenario();
  const before = fingerprint(s.repo);
  const r = await revert(s.workspace, 'revert', ['--bad', s.c4]);
  t.is(r.code, 2, r.stdout + r.stderr);
  t.regex(r.stderr + r.stdout, new RegExp(`--bad ${s.c4}: ${s.c4.slice(0, 12)} changed nothing under the target's paths \\(apps/podinfo/\\), so there is nothing of it to revert: check that it is the commit you meant`));
  t.notRegex(r.stdout, /already undone/);
  t.is(fingerprint(s.repo), before);
});

test('the Action: `to` on another branch and a `bad` that changed nothing under the target are refused; nothing written', async (t) => {
  const s = scenario();
  config(s.workspace, 'restore');
  const before = fingerprint(s.repo);
  const off = await runAction({ workspace: s.workspace, token: TOKEN, with: { target: 'podinfo-prod', bad: s.c3, to: s.f, reason: 'INC-9' }, eventName: 'workflow_dispatch' });
  t.is(off.code, 2, off.stdout + off.stderr);
  t.regex(off.stdout + off.stderr, new RegExp(`--to ${s.f}: not an earlier commit of main`));
  const wrong = await runAction({ workspace: s.workspace, token: TOKEN, with: { target: 'podinfo-prod', bad: s.c4, reason: 'INC-9' }, eventName: 'workflow_dispatch' });
  t.is(wrong.code, 2, wrong.stdout + wrong.stderr);
  t.regex(wrong.stdout + wrong.stderr, /changed nothing under the target's paths/);
  t.is(fingerprint(s.repo), before);
});

test('the Action on GitHub, a revert by hand: the pull request says it is a person\'s, carries the reason, and claims no cluster state nobody read', async (t) => {
  const work = makeRepo();
  commit(work, { [`${P}kustomization.yaml`]: 'images:\n  - name: podinfo\n    newTag: 6.0.0\n' }, 'podinfo 6.0.0');
  const bad = commit(work, { [`${P}kustomization.yaml`]: 'images:\n  - name: podinfo\n    newTag: 6.1.0\n' }, 'podinfo: release 6.1.0');
  const bare = path.join(tempDir('lastgood-action-person-'), 'gitops.git');
  git(tempDir('lastgood-clone-'), 'clone', '-q', '--bare', work, bare);
  const emulator = await startGitHubEmulator({ bareRepo: bare, owner: 'acme', repo: 'gitops', token: TOKEN, labels: ['lastgood', 'rollback'] });
  t.teardown(() => emulator.close());
  const workspace = tempDir('lastgood-ws-');
  writeFile(workspace, 'lastgood.yaml', `repo:\n  url: https://github.com/acme/gitops\n  apiUrl: ${emulator.url}\ndefaults: { mode: pull-request }\ntargets:\n  - name: podinfo-prod\n    paths: [${P}]\n    resources:\n      - { apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: apps }\n`);
  const r = await runAction({ workspace, token: TOKEN, with: { target: 'podinfo-prod', bad, reason: 'INC-1234 podinfo 6.1.0 leaks memory' }, eventName: 'workflow_dispatch' });
  t.is(r.code, 0, r.stdout + r.stderr);
  t.is(emulator.pulls.length, 1);
  const pull = emulator.pulls[0]!;
  t.is(pull.title, `lastgood: revert podinfo-prod to ${git(bare, 'rev-parse', `${bad}^`).slice(0, 12)} (by hand: INC-1234 podinfo 6.1.0 leaks memory)`);
  t.regex(pull.body ?? '', /\*\*Reverted by hand: `INC-1234 podinfo 6\.1\.0 leaks memory`\*\*/);
  t.regex(pull.body ?? '', /A person asked for this revert, saying `INC-1234 podinfo 6\.1\.0 leaks memory`; lastgood did not read the cluster for it, and claims nothing about it\./);
  t.regex(pull.body ?? '', /_Not read: a revert by hand names its commits; lastgood read no cluster state for it\._/);
  t.notRegex(pull.body ?? '', /progressing|NotFound|The cluster reports/, 'no cluster state nobody read');
  // the job summary and the log say the same
  t.regex(r.summary, /revert by hand/);
  t.regex(r.summary, /\*\*Reason:\*\* `INC-1234 podinfo 6\.1\.0 leaks memory`/);
  t.notRegex(r.summary, /progressing|NotFound/);
  t.regex(r.stdout, /podinfo-prod revert by hand: revert pull request/);
  t.deepEqual(emulator.violations, []);
});
