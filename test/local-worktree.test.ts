import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import test from 'ava';
import { commit, fingerprint, git, makeRepo, tempDir, writeFile } from './support/git.ts';
import { failedSnapshot, KUSTOMIZATION, revertsOf, run, runPaused, scenario, TARGET_PATH } from './support/revert-scenario.ts';

/**
 * Issue 15, class 3: working copies keep people's edits. Every file a revert writes (freeze edits
 * outside the target paths included) is checked for uncommitted changes under the index lock,
 * the lock git itself takes; an edit saved while the work tree is being updated is kept.
 */

const HPA = `${TARGET_PATH}hpa.yaml`;

test('git holds .git/index.lock (a commit waiting in its editor): lastgood waits, then plans again on the person\'s commit', async (t) => {
  const s = scenario();
  writeFile(s.repo, 'apps/redis/values.yaml', 'replicas: 4\n');
  // `git commit -e` holds index.lock while the editor runs; this editor waits for a file
  const gate = path.join(tempDir('lastgood-editor-'), 'go');
  const editor = writeFile(path.dirname(gate), 'editor.sh', `#!/bin/sh\nwhile [ ! -f ${gate} ]; do sleep 0.01; done\n`);
  const person = spawn('git', ['commit', '-q', '-a', '-e', '-m', 'redis: four replicas'], { cwd: s.repo, env: { ...process.env, GIT_EDITOR: `sh ${editor}`, GIT_AUTHOR_NAME: 'P', GIT_AUTHOR_EMAIL: 'p@x', GIT_COMMITTER_NAME: 'P', GIT_COMMITTER_EMAIL: 'p@x' }, stdio: 'ignore' });
  const committed = new Promise((resolve) => person.on('close', resolve));
  while (!existsSync(path.join(s.repo, '.git/index.lock'))) await sleep(5);
  const paused = runPaused(s, 'index-busy');
  await paused.reached;
  writeFileSync(gate, '');
  t.is(await committed, 0);
  const personal = git(s.repo, 'rev-parse', 'HEAD');
  paused.release();
  const r = await paused.done;
  t.is(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout).targets[0];
  t.true(out.created);
  t.is(git(s.repo, 'rev-parse', 'main^'), personal, 'the person\'s commit is kept under the revert');
  t.is(git(s.repo, 'status', '--porcelain'), '');
});

test('an index.lock nobody releases: exit 3 naming it and how to recover; nothing written', async (t) => {
  const s = scenario();
  const lock = path.join(s.repo, '.git', 'index.lock');
  writeFileSync(lock, '');
  const before = fingerprint(s.repo);
  const r = await run(s);
  t.is(r.code, 3, r.stdout + r.stderr);
  t.true(r.stderr.includes(`another git process holds ${lock}; if none is running`), r.stderr);
  t.regex(r.stderr, /remove that file and run again/);
  t.is(fingerprint(s.repo), before, 'nothing written, the lock left in place');
  rmSync(lock);
  const again = await run(s);
  t.is(again.code, 0, again.stderr);
  t.true(again.created);
});

for (const [what, file, content] of [
  ['a file the revert rewrites', KUSTOMIZATION, 'edited by a person\n'],
  ['a file the revert deletes', HPA, 'kind: HorizontalPodAutoscaler\n# tuned by a person\n'],
] as const) {
  test(`an edit to ${what}, made between plan and write, is found under the lock: exit 2, the edit kept, nothing written`, async (t) => {
    const s = scenario();
    const head = git(s.repo, 'rev-parse', 'main');
    const paused = runPaused(s, 'before-ref-write');
    await paused.reached;
    writeFile(s.repo, file, content);
    const before = fingerprint(s.repo);
    paused.release();
    const r = await paused.done;
    t.is(r.code, 2, r.stdout + r.stderr);
    t.regex(r.stderr, new RegExp(`uncommitted changes in the target paths or in files the revert writes \\(${file.replace(/[./]/g, '\\$&')}\\)`));
    t.is(readFileSync(path.join(s.repo, file), 'utf8'), content);
    t.is(git(s.repo, 'rev-parse', 'main'), head);
    t.false(existsSync(path.join(s.repo, '.git/index.lock')));
    t.is(fingerprint(s.repo), before);
  });
}

test('an edit saved while lastgood updates the work tree is kept: the index follows the revert, git shows the edit as a change', async (t) => {
  const s = scenario();
  const paused = runPaused(s, 'worktree-write');
  await paused.reached;
  // the branch has moved; the work tree is about to follow
  writeFile(s.repo, KUSTOMIZATION, 'saved by a person just now\n');
  paused.release();
  const r = await paused.done;
  t.is(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout).targets[0];
  t.true(out.created);
  t.is(git(s.repo, 'rev-parse', 'main'), out.commit);
  t.is(readFileSync(path.join(s.repo, KUSTOMIZATION), 'utf8'), 'saved by a person just now\n', 'the person\'s version is kept');
  t.false(existsSync(path.join(s.repo, HPA)), 'the other files follow the revert');
  t.is(git(s.repo, 'diff', '--cached', '--name-only'), '', 'the index is the revert');
  t.is(git(s.repo, 'diff', '--name-only'), KUSTOMIZATION, 'git shows the edit as the person\'s change, unstaged');
  t.is(git(s.repo, 'status', '--porcelain', '--untracked-files=all'), `M ${KUSTOMIZATION}`, 'and nothing else');
  // the next run sees a consistent working copy and the revert already made
  const again = await run(s);
  t.is(again.code, 0, again.stderr);
  t.is(again.created, false);
  t.is(again.commit, out.commit);
});

test('while lastgood moves the branch and updates the working copy, git commit cannot interleave (the index lock is held)', async (t) => {
  const s = scenario();
  const paused = runPaused(s, 'ref-renamed');
  await paused.reached;
  t.throws(() => git(s.repo, 'commit', '-q', '--allow-empty', '-m', 'a person\'s commit'), { message: /index\.lock/ });
  paused.release();
  const r = await paused.done;
  t.is(r.code, 0, r.stderr);
  t.is(git(s.repo, 'status', '--porcelain'), '');
  git(s.repo, 'commit', '-q', '--allow-empty', '-m', 'a person\'s commit');
  t.is(git(s.repo, 'rev-parse', 'main^'), JSON.parse(r.stdout).targets[0].commit);
});

// ---------------------------------------------------------------- freeze edits outside the target paths

const AUTOMATION = 'clusters/prod/image-automation.yaml';
const IUA = `apiVersion: image.toolkit.fluxcd.io/v1beta2
kind: ImageUpdateAutomation
metadata:
  name: prod-apps
  namespace: flux-system
spec:
  interval: 30m
  sourceRef: {kind: GitRepository, name: flux-system}
  update:
    path: ./apps/podinfo/overlays/prod
    strategy: Setters
`;
const deployment = (tag: string) => `apiVersion: apps/v1
kind: Deployment
metadata: {name: podinfo, namespace: prod}
spec:
  template:
    spec:
      containers:
        - name: podinfo
          image: ghcr.io/stefanprodan/podinfo:${tag} # {"$imagepolicy": "flux-system:podinfo"}
`;

/** A release made by Flux's image automation (its identity and message), whose revert also suspends the automation in clusters/. */
function botRelease() {
  const repo = makeRepo();
  commit(repo, { [AUTOMATION]: IUA, [`${TARGET_PATH}deployment.yaml`]: deployment('6.5.0') }, 'base');
  const good = commit(repo, { 'apps/redis/values.yaml': 'replicas: 1\n' }, 'redis');
  commit(repo, { [`${TARGET_PATH}deployment.yaml`]: deployment('6.6.0') }, 'placeholder');
  git(repo, '-c', 'user.name=fluxcdbot', '-c', 'user.email=fluxcdbot@users.noreply.github.com', 'commit', '-q', '--amend', '--reset-author', '-m', 'Update from image update automation');
  const bad = git(repo, 'rev-parse', 'HEAD');
  const dir = tempDir('lastgood-cfg-');
  const config = writeFile(dir, 'lastgood.yaml', `repo: { url: ${repo}, branch: main }
defaults: { mode: commit, strategy: revert, confirmations: 1, cooldown: "off", freeze: auto }
targets:
  - name: podinfo-prod
    paths: [${TARGET_PATH}]
    resources:
      - { apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: apps }
`);
  return { repo, bad, config, snapshot: failedSnapshot(dir, 'cluster.yaml', bad, good) };
}

test('a freeze edit outside the target paths is held to the same rule: an uncommitted change there stops the run (exit 2), and is kept', async (t) => {
  const s = botRelease();
  const edited = IUA.replace('interval: 30m', 'interval: 5m # a person is tuning this');
  writeFile(s.repo, AUTOMATION, edited);
  const before = fingerprint(s.repo);
  const r = await run(s);
  t.is(r.code, 2, r.stdout + r.stderr);
  t.true(r.stderr.includes(AUTOMATION), r.stderr);
  t.is(readFileSync(path.join(s.repo, AUTOMATION), 'utf8'), edited);
  t.is(fingerprint(s.repo), before, 'nothing written');
  // committed, the person's change is kept and the freeze edit is made on top of it
  git(s.repo, 'commit', '-q', '-am', 'flux: scan more often');
  const again = await run(s);
  t.is(again.code, 0, again.stderr);
  t.true(again.created);
  const frozen = git(s.repo, 'show', `main:${AUTOMATION}`);
  t.regex(frozen, /interval: 5m # a person is tuning this/);
  t.regex(frozen, /suspend: true/);
  t.is(readFileSync(path.join(s.repo, AUTOMATION), 'utf8'), `${frozen}\n`);
  t.is(git(s.repo, 'status', '--porcelain'), '');
  t.deepEqual(revertsOf(s.repo, s.bad), [again.commit]);
});
