import test from 'ava';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { lastgood } from './support/cli.ts';
import { lastgoodEngine } from './support/engine-run.ts';
import { commit, fingerprint, git, makeRepo, tempDir, writeFile } from './support/git.ts';
import { deployment, kustomization, yamlDocs } from './support/objects.ts';

/** the failures in these snapshots begin at 12:00; five minutes later they are fresh (maxAge) */
const NOW = ['--now', '2026-11-01T12:05:00Z'];

/**
 * End-to-end through the spawned CLI with real git repositories: the foundation loop (issue 2).
 * What the door does (exit codes, the text, the dry run's diff, bad input) is asked of the spawned
 * CLI; the engine cases (locating by image, Flux's older revision format, stuck by the clock, a
 * bare repository, a rerun finding its own revert) run in-process as the CLI calls the engine
 * (support/engine-run.ts; issue 38).
 */

const TARGET_PATH = 'apps/podinfo/overlays/prod/';

function kustomizationFile(tag: string) {
  return `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
# prod overlay of podinfo
resources:
  - ../../base
images:
  - name: ghcr.io/stefanprodan/podinfo
    newTag: ${tag}
`;
}

interface Scenario {
  repo: string;
  c1: string; c2: string; c3: string; c4: string;
  config: string;
  dir: string;
}

/** c1 initial, c2 good podinfo change (applied), c3 bad podinfo release (+ new file), c4 unrelated redis change. */
function scenario(opts: { strategy?: string; mode?: string; extraConfig?: string; bare?: boolean } = {}): Scenario {
  const repo = makeRepo();
  const c1 = commit(repo, {
    'apps/podinfo/base/deployment.yaml': 'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: podinfo\n',
    [`${TARGET_PATH}kustomization.yaml`]: kustomizationFile('6.0.0'),
    'apps/redis/values.yaml': 'replicas: 1\n',
  }, 'initial platform');
  const c2 = commit(repo, { [`${TARGET_PATH}replicas.yaml`]: 'replicas: 2\n' }, 'podinfo: two replicas in prod');
  const c3 = commit(repo, { [`${TARGET_PATH}kustomization.yaml`]: kustomizationFile('6.1.0'), [`${TARGET_PATH}hpa.yaml`]: 'kind: HorizontalPodAutoscaler\n' }, 'podinfo: release 6.1.0');
  const c4 = commit(repo, { 'apps/redis/values.yaml': 'replicas: 3\n' }, 'redis: three replicas');
  const dir = tempDir('lastgood-cfg-');
  let repoPath = repo;
  if (opts.bare) {
    repoPath = path.join(dir, 'bare.git');
    git(dir, 'clone', '-q', '--bare', repo, repoPath);
  }
  const config = writeFile(dir, 'lastgood.yaml', `repo:
  url: ${repoPath}
  branch: main
defaults:
  mode: ${opts.mode ?? 'commit'}
  strategy: ${opts.strategy ?? 'restore'}
  confirmations: 1
  stuckAfter: 15m
targets:
  - name: podinfo-prod
    paths: [${TARGET_PATH}]
    resources:
      - { apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: apps }
${opts.extraConfig ?? ''}`);
  return { repo: repoPath, c1, c2, c3, c4, config, dir };
}

function failedSnapshot(s: Scenario): string {
  return writeFile(s.dir, 'cluster.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${s.c4}`, applied: `main@sha1:${s.c2}`, ready: 'False' })));
}

test('healthy target: exit 0, no commit', async (t) => {
  const s = scenario();
  const snap = writeFile(s.dir, 'cluster.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${s.c4}`, applied: `main@sha1:${s.c4}`, ready: 'True' })));
  const before = fingerprint(s.repo);
  const r = await lastgood(['run', ...NOW, '--config', s.config, '--snapshot', snap, '--json']);
  t.is(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  t.is(out.targets[0].verdict, 'healthy');
  t.is(out.targets[0].action, 'none');
  t.is(git(s.repo, 'rev-parse', 'main'), s.c4);
  t.is(fingerprint(s.repo), before);
});

test('failed target: one restore commit with the right content and trailers, nothing else touched', async (t) => {
  const s = scenario();
  const jsonFile = path.join(s.dir, 'report.json');
  const r = await lastgood(['run', ...NOW, '--config', s.config, '--snapshot', failedSnapshot(s), '--json', '--json-file', jsonFile]);
  t.is(r.code, 0, r.stderr + r.stdout);
  t.is(readFileSync(jsonFile, 'utf8'), r.stdout, '--json-file: the same JSON document');
  const out = JSON.parse(r.stdout).targets[0];
  t.is(out.verdict, 'failed');
  t.is(out.action, 'revert');
  t.deepEqual(out.bad, [s.c3], 'the bad commit is the one that touched the target paths, not the unrelated attempted one');
  t.is(out.lastKnownGood, s.c2);
  const head = git(s.repo, 'rev-parse', 'main');
  t.is(out.commit, head);
  t.is(git(s.repo, 'rev-parse', 'main^'), s.c4, 'one new commit on top of the branch');
  // the target paths are exactly their tree at the last-known-good; hpa.yaml (added since) is gone
  t.is(git(s.repo, 'rev-parse', `main:${TARGET_PATH}`), git(s.repo, 'rev-parse', `${s.c2}:${TARGET_PATH}`));
  // nothing outside the target paths changed
  t.is(git(s.repo, 'diff', '--name-only', s.c4, 'main'), `${TARGET_PATH}hpa.yaml\n${TARGET_PATH}kustomization.yaml`.trim());
  t.is(git(s.repo, 'show', 'main:apps/redis/values.yaml'), 'replicas: 3');
  const trailers = git(s.repo, 'log', '-1', '--format=%(trailers)', 'main');
  t.regex(trailers, /^Lastgood-Target: podinfo-prod$/m);
  t.regex(trailers, new RegExp(`^Lastgood-Reverts: ${s.c3}$`, 'm'));
  t.regex(trailers, new RegExp(`^Lastgood-Restores: ${s.c2}$`, 'm'));
  t.regex(trailers, /^Lastgood-Evidence: kustomize\.toolkit\.fluxcd\.io\/Kustomization flux-system\/apps state=failed reason=\S+$/m);
  // the working copy has main checked out: index and work tree follow the new commit
  t.is(git(s.repo, 'status', '--porcelain'), '');
  t.false(existsSync(path.join(s.repo, TARGET_PATH, 'hpa.yaml')));
  t.regex(readFileSync(path.join(s.repo, TARGET_PATH, 'kustomization.yaml'), 'utf8'), /newTag: 6\.0\.0/);
});

test('--json-file that cannot be written (no such folder, a folder) is bad usage before anything runs: nothing written', async (t) => {
  const s = scenario();
  const snap = failedSnapshot(s);
  const before = fingerprint(s.repo);
  const missing = path.join(s.dir, 'no-such-folder', 'report.json');
  const r = await lastgood(['run', ...NOW, '--config', s.config, '--snapshot', snap, '--json-file', missing]);
  t.is(r.code, 2, r.stderr);
  t.is(r.stderr, `lastgood: --json-file ${missing}: the folder ${path.dirname(missing)} does not exist; nothing was run\n`);
  const folder = await lastgood(['run', ...NOW, '--config', s.config, '--snapshot', snap, '--json-file', s.dir]);
  t.is(folder.code, 2, folder.stderr);
  t.is(folder.stderr, `lastgood: --json-file ${s.dir}: is a folder; name a file to write the JSON report to\n`);
  t.is(fingerprint(s.repo), before, 'no revert was made');
  t.is(git(s.repo, 'rev-parse', 'main'), s.c4);
  // a disk that fills after the check (/dev/full: every write is ENOSPC): the report is printed, the error says the revert stands
  if (!existsSync('/dev/full')) return;
  const full = await lastgood(['run', ...NOW, '--config', s.config, '--snapshot', snap, '--json-file', '/dev/full']);
  t.is(full.code, 3, full.stderr);
  const revert = git(s.repo, 'rev-parse', 'main');
  t.not(revert, s.c4, 'the revert was made before the report was written');
  t.regex(full.stdout, new RegExp(`reverted by ${revert.slice(0, 12)}|${revert}`), full.stdout);
  t.regex(full.stderr, /^lastgood: --json-file \/dev\/full: cannot write the JSON report: no space left on device \(ENOSPC\); the report above is the run's, and what it wrote stands\n$/);
});

test('failed again: no second commit', async (t) => {
  const s = scenario();
  const snap = failedSnapshot(s);
  const first = await lastgoodEngine(['run', ...NOW, '--config', s.config, '--snapshot', snap, '--json']);
  t.is(first.code, 0, first.stderr);
  const head = git(s.repo, 'rev-parse', 'main');
  const second = await lastgoodEngine(['run', ...NOW, '--config', s.config, '--snapshot', snap, '--json']);
  t.is(second.code, 0, second.stderr);
  const out = JSON.parse(second.stdout).targets[0];
  t.is(out.action, 'revert');
  t.is(out.created, false);
  t.is(out.commit, head);
  t.is(git(s.repo, 'rev-parse', 'main'), head, 'no second commit');
});

test('dry run: prints the plan and a diff, writes nothing', async (t) => {
  const s = scenario();
  const snap = failedSnapshot(s);
  const before = fingerprint(s.repo);
  const r = await lastgood(['run', ...NOW, '--config', s.config, '--snapshot', snap, '--dry-run']);
  t.is(r.code, 0, r.stderr);
  t.regex(r.stdout, /FAILED/);
  t.regex(r.stdout, /-\s+newTag: 6\.1\.0\n\+\s+newTag: 6\.0\.0/);
  t.regex(r.stdout, /hpa\.yaml/);
  t.is(fingerprint(s.repo), before);
});

test('dry run: the diff is a patch git applies, to the revert\'s tree, also where a file name holds a line break and an escape', async (t) => {
  const s = scenario();
  // the bad release also added a file whose name would forge a line of the diff if printed raw
  const evil = `${TARGET_PATH}evil\x1b[31m\nline2.yaml`;
  const c5 = commit(s.repo, { [evil]: 'kind: ConfigMap\n', [`${TARGET_PATH}replicas.yaml`]: 'replicas: 5\n' }, 'podinfo: five replicas');
  const snap = writeFile(s.dir, 'evil.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${c5}`, applied: `main@sha1:${s.c2}`, ready: 'False' })));
  const r = await lastgoodEngine(['run', ...NOW, '--config', s.config, '--snapshot', snap, '--json', '--dry-run']);
  t.is(r.code, 0, r.stderr);
  const diff = (JSON.parse(r.stdout) as { targets: Array<{ diff: string }> }).targets[0]!.diff;
  // git's C quoting, as git prints the name (and as the ---/+++ lines had it already)
  t.true(diff.includes('diff --git "a/apps/podinfo/overlays/prod/evil\\033[31m\\nline2.yaml" "b/apps/podinfo/overlays/prod/evil\\033[31m\\nline2.yaml"\ndeleted file mode 100644\n'), diff);
  t.false(diff.split('\n').some((l) => l.startsWith('line2.yaml')), 'no line of the diff starts inside the name');
  // the oracle: git applies the dry run's diff to the head, and the target's files are then the last-known-good's
  const patch = writeFile(s.dir, 'dry-run.patch', diff);
  git(s.repo, 'apply', '--check', patch);
  git(s.repo, 'apply', '--index', patch);
  t.is(git(s.repo, 'write-tree', `--prefix=${TARGET_PATH}`), git(s.repo, 'rev-parse', `${s.c2}:${TARGET_PATH}`));
});

test('a shallow clone (actions/checkout\'s default) or a partial clone lacking the history: bad input that says so, nothing written', async (t) => {
  const s = scenario();
  const snap = failedSnapshot(s);
  const cloned = (name: string, ...args: string[]) => {
    const at = path.join(s.dir, name);
    git(s.dir, 'clone', '-q', ...args, `file://${s.repo}`, at);
    return { at, config: writeFile(s.dir, `${name}.yaml`, readFileSync(s.config, 'utf8').replace(`url: ${s.repo}`, `url: ${at}`)) };
  };
  const shallow = cloned('shallow', '--depth', '1');
  const before = fingerprint(shallow.at);
  const r = await lastgoodEngine(['run', ...NOW, '--config', shallow.config, '--snapshot', snap, '--json']);
  t.is(r.code, 2, r.stderr);
  const error = (JSON.parse(r.stdout) as { targets: Array<{ error: { code: number; message: string } }> }).targets[0]!.error;
  t.is(error.code, 2);
  t.regex(error.message, new RegExp(`^${shallow.at}: the repository is a shallow clone \\(git clone --depth; actions/checkout's default, fetch-depth: 1\\): commit [0-9a-f]{40} and the history below it are not in it\\. Clone it whole \\(fetch-depth: 0\\), or give repo\\.url the repository's URL`));
  t.is(fingerprint(shallow.at), before);

  git(s.repo, 'config', 'uploadpack.allowFilter', 'true');
  const partial = cloned('partial', '--filter=blob:none');
  const p = await lastgoodEngine(['run', ...NOW, '--config', partial.config, '--snapshot', snap, '--json']);
  t.is(p.code, 2, p.stderr);
  t.regex((JSON.parse(p.stdout) as { targets: Array<{ error: { message: string } }> }).targets[0]!.error.message, /: the repository is a partial clone \(git clone --filter\): object [0-9a-f]{40} was left out of it/);
});

test('stderr: a target\'s error is one line, a file name\'s line break and escape written out (no forged line)', async (t) => {
  const s = scenario();
  // an untracked file in the target's paths: the run refuses to write over it and names it
  writeFileSync(path.join(s.repo, TARGET_PATH, 'a\x1b[2J\npodinfo-prod: reverted, all good'), 'x\n');
  const r = await lastgood(['run', ...NOW, '--config', s.config, '--snapshot', failedSnapshot(s)]);
  t.is(r.code, 2, r.stderr);
  const lines = r.stderr.trimEnd().split('\n');
  t.is(lines.length, 1, r.stderr);
  t.true(lines[0]!.startsWith('lastgood: podinfo-prod: '), r.stderr);
  t.true(lines[0]!.includes('a\\x1b[2J\\npodinfo-prod: reverted, all good'), r.stderr);
});

test('a linked worktree (git worktree add) as the repository: bad input naming the main repository, nothing written', async (t) => {
  const s = scenario();
  const wt = path.join(s.dir, 'wt');
  git(s.repo, 'worktree', 'add', '-q', '-b', 'elsewhere', wt);
  const config = writeFile(s.dir, 'wt.yaml', readFileSync(s.config, 'utf8').replace(`url: ${s.repo}`, `url: ${wt}`));
  const before = fingerprint(s.repo);
  const r = await lastgoodEngine(['run', ...NOW, '--config', config, '--snapshot', failedSnapshot(s)]);
  t.is(r.code, 2, r.stdout);
  t.is(r.stderr, `lastgood: ${wt}: a linked worktree (git worktree add), whose branches live in ${path.join(s.repo, '.git')}: lastgood does not write through a linked worktree; give the main working copy (or ${path.join(s.repo, '.git')} itself, or the repository's URL) as the repository\n`);
  t.is(fingerprint(s.repo), before);
});

test('a SHA-256 repository: bad input that says so, not "a broken ref"', async (t) => {
  const s = scenario();
  const repo = path.join(s.dir, 'sha256');
  git(s.dir, 'init', '-q', '--object-format=sha256', '-b', 'main', repo);
  const config = writeFile(s.dir, 'sha256.yaml', readFileSync(s.config, 'utf8').replace(`url: ${s.repo}`, `url: ${repo}`));
  const r = await lastgoodEngine(['run', ...NOW, '--config', config, '--snapshot', failedSnapshot(s)]);
  t.is(r.code, 2, r.stdout);
  t.is(r.stderr, `lastgood: ${repo}: a SHA-256 repository (extensions.objectFormat = sha256): lastgood reads repositories of SHA-1 object names only, as most git hosts serve them; nothing was written\n`);
});

test('bare repository: the branch moves, nothing else', async (t) => {
  const s = scenario({ bare: true });
  const r = await lastgoodEngine(['run', ...NOW, '--config', s.config, '--snapshot', failedSnapshot(s), '--json']);
  t.is(r.code, 0, r.stderr);
  t.is(git(s.repo, 'rev-parse', `main:${TARGET_PATH}`), git(s.repo, 'rev-parse', `${s.c2}:${TARGET_PATH}`));
  t.is(git(s.repo, 'rev-parse', 'main^'), s.c4);
  t.is(git(s.repo, 'fsck', '--strict'), '');
});

test('locate by image: the commit that introduced the failing image', async (t) => {
  const s = scenario({
    extraConfig: `  - name: podinfo-image
    paths: [${TARGET_PATH}]
    resources:
      - { apiVersion: apps/v1, kind: Deployment, namespace: prod, name: podinfo }
`,
  });
  const snap = writeFile(s.dir, 'cluster.yaml', yamlDocs(deployment({ image: 'ghcr.io/stefanprodan/podinfo:6.1.0', state: 'deadline' })));
  const r = await lastgoodEngine(['run', ...NOW, '--config', s.config, '--snapshot', snap, '--target', 'podinfo-image', '--json']);
  t.is(r.code, 0, r.stderr + r.stdout);
  const out = JSON.parse(r.stdout).targets[0];
  t.is(out.verdict, 'failed');
  t.deepEqual(out.bad, [s.c3]);
  t.is(out.lastKnownGood, s.c2);
  t.regex(git(s.repo, 'show', `main:${TARGET_PATH}kustomization.yaml`), /newTag: 6\.0\.0/);
  // and again: the image is gone from the branch, the run recognises its own revert
  const again = await lastgoodEngine(['run', ...NOW, '--config', s.config, '--snapshot', snap, '--target', 'podinfo-image', '--json']);
  t.is(again.code, 0, again.stderr + again.stdout);
  t.is(JSON.parse(again.stdout).targets[0].created, false);
});

test('stuck by --now: progressing past stuckAfter is stuck, and stuck alerts (exit 1) by default', async (t) => {
  const s = scenario();
  const snap = writeFile(s.dir, 'cluster.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${s.c4}`, applied: `main@sha1:${s.c2}`, ready: 'Unknown', since: '2026-11-01T12:00:00Z' })));
  const early = await lastgoodEngine(['check', '--config', s.config, '--snapshot', snap, '--now', '2026-11-01T12:10:00Z', '--json']);
  t.is(early.code, 0, early.stderr);
  t.is(JSON.parse(early.stdout).targets[0].verdict, 'progressing');
  const late = await lastgoodEngine(['check', '--config', s.config, '--snapshot', snap, '--now', '2026-11-01T12:16:00Z', '--json']);
  t.is(late.code, 1, late.stderr);
  const out = JSON.parse(late.stdout).targets[0];
  t.is(out.verdict, 'stuck');
  t.is(out.action, 'alert');
});

test('a revert that cannot be located exits 1, says why, writes nothing', async (t) => {
  const s = scenario();
  // attempted = c4 after applied c3: only the unrelated redis commit in between
  const snap = writeFile(s.dir, 'cluster.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${s.c4}`, applied: `main@sha1:${s.c3}`, ready: 'False' })));
  const before = fingerprint(s.repo);
  const r = await lastgood(['run', ...NOW, '--config', s.config, '--snapshot', snap]);
  t.is(r.code, 1);
  // the true reason: nothing Flux reads for the target changed; what did change is named, with how to include it
  t.regex(r.stdout, /between them nothing that Flux Kustomization flux-system\/apps \(spec\.path \.\/apps\) reads for this target changed; the change touched apps\/redis\/values\.yaml by [0-9a-f]{12} \(redis: three replicas\), which the engine does not read for it/);
  t.regex(r.stdout, /add their folder to the target's paths/);
  t.is(fingerprint(s.repo), before);
});

test('older Flux revision format main/<sha> is understood', async (t) => {
  const s = scenario();
  const snap = writeFile(s.dir, 'cluster.yaml', yamlDocs(kustomization({ attempted: `main/${s.c4}`, applied: `main/${s.c2}`, ready: 'False' })));
  const r = await lastgoodEngine(['run', ...NOW, '--config', s.config, '--snapshot', snap, '--json', '--dry-run']);
  t.is(r.code, 0, r.stderr);
  t.deepEqual(JSON.parse(r.stdout).targets[0].bad, [s.c3]);
});

test('uncommitted changes in the target paths: exit 2, nothing written', async (t) => {
  const s = scenario();
  writeFile(s.repo, `${TARGET_PATH}replicas.yaml`, 'replicas: 5\n');
  const snap = failedSnapshot(s);
  const before = fingerprint(s.repo);
  const r = await lastgood(['run', ...NOW, '--config', s.config, '--snapshot', snap]);
  t.is(r.code, 2, r.stdout + r.stderr);
  t.regex(r.stderr, /uncommitted changes in the target paths/);
  t.is(fingerprint(s.repo), before);
});

const badInputs: Array<[string, (s: Scenario) => { args: string[] }, RegExp]> = [
  ['broken YAML snapshot', (s) => ({ args: ['--snapshot', writeFile(s.dir, 'broken.yaml', 'kind: Kustomization\nmetadata: [name: x\n')] }), /broken\.yaml(:\d+)?: cannot parse/],
  ['bad config', (s) => ({ args: ['--snapshot', failedSnapshot(s), '--config', writeFile(s.dir, 'bad.yaml', 'repo:\n  url: .\ntargets:\n  - name: x\n    paths: [a/]\n    resources: []\n    frobnicate: 1\n')] }), /bad\.yaml:\d+: targets\[0\]/],
  ['path traversal', (s) => ({ args: ['--snapshot', failedSnapshot(s), '--config', writeFile(s.dir, 'trav.yaml', `repo:\n  url: ${s.repo}\ntargets:\n  - name: x\n    paths: [apps/../../etc/]\n    resources:\n      - { apiVersion: v1, kind: Service, name: x }\n`)] }), /trav\.yaml:5: targets\[0\]\.paths\[0\]: a path must not contain "\.\."/],
  ['unknown target', (s) => ({ args: ['--snapshot', failedSnapshot(s), '--target', 'nope'] }), /unknown target "nope"/],
  ['repo without the branch', (s) => ({ args: ['--snapshot', failedSnapshot(s), '--config', writeFile(s.dir, 'nobranch.yaml', readFileSync(s.config, 'utf8').replace('branch: main', 'branch: release'))] }), /branch "release" does not exist/],
];

for (const [name, make, message] of badInputs) {
  test(`bad input: ${name} exits 2 naming the cause, repository unchanged`, async (t) => {
    const s = scenario();
    const { args } = make(s);
    const before = fingerprint(s.repo);
    const full = args.includes('--config') ? ['run', ...NOW, ...args] : ['run', ...NOW, '--config', s.config, ...args];
    const r = await lastgood(full);
    t.is(r.code, 2, r.stdout + r.stderr);
    t.regex(r.stderr, message);
    t.is(fingerprint(s.repo), before);
  });
}

test('a target path through a symlink is refused: exit 2, nothing written', async (t) => {
  const s = scenario();
  git(s.repo, 'checkout', '-q', 'main');
  const { symlinkSync } = await import('node:fs');
  symlinkSync('podinfo', path.join(s.repo, 'apps/link'));
  git(s.repo, 'add', 'apps/link');
  git(s.repo, 'commit', '-q', '-m', 'a link');
  const config = writeFile(s.dir, 'link.yaml', readFileSync(s.config, 'utf8').replace(`paths: [${TARGET_PATH}]`, 'paths: [apps/link/overlays/prod/]'));
  const before = fingerprint(s.repo);
  const r = await lastgood(['run', ...NOW, '--config', config, '--snapshot', failedSnapshot(s)]);
  t.is(r.code, 2, r.stdout + r.stderr);
  t.regex(r.stderr, /goes through a symlink at "apps\/link": refused/);
  t.is(fingerprint(s.repo), before);
});
