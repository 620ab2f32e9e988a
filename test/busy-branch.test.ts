import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import test, { type ExecutionContext } from 'ava';
import { git, isAncestor, tempDir, writeFile } from './support/git.ts';
import { firstRead, planReads } from '../src/engine/branch-moved.ts';
import type { TargetModel } from '../src/model/types.ts';
import { startGitHttpServer } from './support/git-http-server.ts';
import { KUSTOMIZATION, revertsOf, run, runPaused, scenario, TARGET_PATH, type RunOutcome, type Scenario } from './support/revert-scenario.ts';
import { runRelayed, spawnRelayed } from './support/spawner.ts';

/**
 * Issue 33: a busy branch. Another writer pushes to main every few hundred milliseconds while
 * lastgood runs; a run whose write finds the branch moved delivers the same revert on the new head
 * when the new commits touch nothing its plan read, instead of planning again from the start
 * (which a busy bot always outran: exit 3). Real git, real lastgood processes, a real smart-HTTP
 * server; waits are on conditions, never on time.
 */

// the re-delivery and re-plan lines are logged at info
process.env.LASTGOOD_LOG_LEVEL = 'info';

/** Concurrent runs against the busy branch (`LASTGOOD_RACE_RUNS` raises it, as in local-races). */
const BUSY_RUNS = Number(process.env.LASTGOOD_RACE_RUNS ?? 20);
/** The same over git's smart HTTP, fewer: each run fetches its own mirror. */
const BUSY_HTTP_RUNS = Math.max(2, Math.ceil(BUSY_RUNS / 4));

/**
 * Many processes on a loaded machine take longer than ava's 120 s without a result (ava.config.js);
 * this only stops a run that hangs, it asserts no speed.
 */
const HANG_GUARD_MS = 10 * 60_000;

/** A folder outside the Flux Kustomization's spec.path (./apps): nothing the engine builds reads it. */
const UNREAD = 'infra/redis/values.yaml';
const REDELIVERED = /branch moved; delivering the same revert on the new head/;
const REPLANNED = /branch moved while planning; planning again/;

/**
 * The scenario's files, made buildable so that the render check runs for real (kubectl kustomize):
 * a kustomization for ./apps that builds the prod overlay (Flux's generated one would take
 * apps/redis/values.yaml, no Kubernetes object, and the base twice), one for the base, and a
 * Deployment whose image the release sets.
 */
const RENDERABLE = {
  'apps/podinfo/base/kustomization.yaml': 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - deployment.yaml\n',
  'apps/podinfo/base/deployment.yaml': 'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: podinfo\n  namespace: prod\nspec:\n  template:\n    spec:\n      containers:\n        - name: app\n          image: ghcr.io/stefanprodan/podinfo:6.0.0\n',
  'apps/kustomization.yaml': 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - podinfo/overlays/prod\n',
};

const PERSON = { GIT_AUTHOR_NAME: 'Bot', GIT_AUTHOR_EMAIL: 'bot@example.com', GIT_COMMITTER_NAME: 'Bot', GIT_COMMITTER_EMAIL: 'bot@example.com' };

/**
 * One commit setting `file` to `content` on top of main, landed with git's own compare-and-swap
 * (`git update-ref refs/heads/main NEW OLD`): its SHA, or undefined when main moved (or its lock
 * was held) and the swap lost. One shell through the relay, never blocking this process (a
 * smart-HTTP server may run in it).
 */
async function casCommit(repo: string, file: string, content: string, message: string): Promise<string | undefined> {
  const script = `set -e
old=$(git rev-parse --verify -q refs/heads/main)
blob=$(printf '%s' "$2" | git hash-object -w --stdin)
GIT_INDEX_FILE=$(mktemp -u "\${TMPDIR:-/tmp}/lastgood-busy-index.XXXXXX"); export GIT_INDEX_FILE
trap 'rm -f "$GIT_INDEX_FILE"' EXIT
git read-tree "$old"
git update-index --add --cacheinfo "100644,$blob,$1"
tree=$(git write-tree)
sha=$(printf '%s' "$3" | git commit-tree "$tree" -p "$old")
git update-ref refs/heads/main "$sha" "$old"
echo "$sha"`;
  try {
    const { stdout } = await runRelayed('/bin/sh', ['-c', script, 'sh', file, content, message], { cwd: repo, env: { ...process.env, ...PERSON } });
    return stdout.trim();
  } catch {
    return undefined;
  }
}

/** casCommit retried until it lands, as a person would. */
async function landCommit(repo: string, file: string, content: string, message: string): Promise<string> {
  for (;;) {
    const sha = await casCommit(repo, file, content, message);
    if (sha) return sha;
    await sleep(5 + Math.random() * 20);
  }
}

/**
 * A bot that commits to `file` every `pauseMs` (a range) with git's own compare-and-swap
 * (`git update-ref refs/heads/main NEW OLD`), retrying at once when it loses, until stopped. One
 * bash loop (a fork per git command, no round trip through this process per commit): the cadence
 * holds when the machine is loaded. `landed` fills as commits land; `stop()` ends the loop and
 * gives them all.
 */
function busyWriter(repo: string, file: string, pauseMs: [number, number]): { landed: string[]; started(): Promise<void>; stop(): Promise<string[]> } {
  const dir = tempDir('lastgood-busy-writer-');
  const stopFile = path.join(dir, 'stop');
  const script = `n=0
export GIT_INDEX_FILE="$DIR/index"
while [ ! -e "$DIR/stop" ]; do
  n=$((n + 1))
  old=$(git rev-parse --verify -q refs/heads/main) || continue
  blob=$(printf 'replicas: %s\\n' "$n" | git hash-object -w --stdin)
  git read-tree "$old"
  git update-index --add --cacheinfo "100644,$blob,$FILE"
  tree=$(git write-tree)
  sha=$(git commit-tree "$tree" -p "$old" -m "redis: $n replicas")
  # a lost swap (main moved, or its lock held) is tried again at once; the pause is load, not an assertion
  if git update-ref refs/heads/main "$sha" "$old" 2>/dev/null; then
    echo "$sha"
    ms=$((PAUSE_MIN + RANDOM % (PAUSE_MAX - PAUSE_MIN + 1)))
    sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
  fi
done`;
  const child = spawnRelayed('/bin/bash', ['-c', script], { cwd: repo, env: { ...process.env, ...PERSON, DIR: dir, FILE: file, PAUSE_MIN: String(pauseMs[0]), PAUSE_MAX: String(pauseMs[1]) } });
  const landed: string[] = [];
  let pending = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    const lines = (pending + d).split('\n');
    pending = lines.pop() ?? '';
    landed.push(...lines.filter(Boolean));
  });
  child.stderr.resume();
  let ended = false;
  const closed = new Promise<void>((resolve) => child.on('close', () => resolve()));
  void closed.then(() => (ended = true));
  child.stdin.end();
  return {
    landed,
    /** resolves once its first commit landed: the runs start against a branch already being written */
    started: async () => {
      while (landed.length === 0) {
        if (ended) throw new Error('the bot ended before its first commit');
        await sleep(10);
      }
    },
    stop: async () => {
      writeFileSync(stopFile, '');
      await closed;
      return landed;
    },
  };
}


/** The tree `git revert` of `bad` makes on `parent`, in a clone of `repo`. */
function gitRevertTree(repo: string, parent: string, bad: string): string {
  const clone = path.join(tempDir('lastgood-busy-revert-'), 'clone');
  git(path.dirname(clone), 'clone', '-q', '--no-checkout', repo, clone);
  git(clone, 'checkout', '-q', '--detach', parent);
  git(clone, 'revert', '--no-edit', bad);
  return git(clone, 'rev-parse', 'HEAD^{tree}');
}

/** The revert commit holds exactly what `git revert` of the bad commit gives on its parent: the same tree, so the same bytes. */
function assertGitRevertContent(t: ExecutionContext, s: Scenario, revert: string): void {
  const expected = gitRevertTree(s.repo, `${revert}^`, s.bad);
  t.is(git(s.repo, 'rev-parse', `${revert}^{tree}`), expected, 'the whole tree is git revert\'s');
  for (const file of git(s.repo, 'ls-tree', '-r', '--name-only', revert, '--', TARGET_PATH).split('\n')) {
    t.is(git(s.repo, 'rev-parse', `${revert}:${file}`), git(s.repo, 'rev-parse', `${expected}:${file}`), file);
  }
  t.is(git(s.repo, 'show', `${revert}:${KUSTOMIZATION}`), git(s.repo, 'show', `${s.good}:${KUSTOMIZATION}`));
}

/** Every run exits 0; exactly one created the revert, every other names it as already reverted. */
function assertExactlyOnce(t: ExecutionContext, s: Scenario, results: Array<RunOutcome & { stdout: string }>, opts: { reasons: boolean }): string {
  for (const r of results) t.is(r.code, 0, `${r.stdout}${r.stderr}`);
  const created = results.filter((r) => r.created === true);
  t.is(created.length, 1, 'exactly one run says created');
  const revert = created[0]?.commit ?? '';
  t.deepEqual(revertsOf(s.repo, s.bad), [revert], 'one commit on main reverts the bad release');
  for (const r of results.filter((x) => x !== created[0])) {
    t.is(r.created, false, r.stderr);
    t.is(r.commit, revert, 'names the one revert');
    if (opts.reasons) t.regex(r.reason ?? '', new RegExp(`already reverted by ${revert.slice(0, 12)}`));
  }
  return revert;
}

const countOf = (results: Array<{ stderr: string }>, re: RegExp) => results.reduce((n, r) => n + r.stderr.split('\n').filter((l) => re.test(l)).length, 0);

test.serial(`a busy branch: ${BUSY_RUNS} concurrent runs while a bot commits every few hundred ms; exactly one revert lands, every bot commit survives`, async (t) => {
  const s = scenario({ bare: true, render: true, files: RENDERABLE, extraConfig: '    strategy: revert\n' });
  t.timeout(HANG_GUARD_MS);
  // the bot writes another application under the Flux Kustomization's own path (an image bot's bumps)
  const writer = busyWriter(s.repo, 'apps/redis/values.yaml', [200, 400]);
  await writer.started();
  const results = await Promise.all(Array.from({ length: BUSY_RUNS }, () => run(s)));
  const landed = await writer.stop();
  const revert = assertExactlyOnce(t, s, results, { reasons: true });
  t.truthy(JSON.parse(results.find((r) => r.created)!.stdout).targets[0].checked?.rendered, 'the render check ran');
  for (const sha of landed) t.true(isAncestor(s.repo, sha, 'main'), `the bot's commit ${sha} is on main`);
  assertGitRevertContent(t, s, revert);
  t.is(git(s.repo, 'fsck', '--no-progress', '--no-dangling'), '');
  t.log(`${BUSY_RUNS} runs, ${landed.length} bot commits (none lost); ${countOf(results, REDELIVERED)} re-deliveries of an unchanged plan, ${countOf(results, REPLANNED)} full re-plans`);
});

test.serial(`git over smart HTTP, a busy branch: ${BUSY_HTTP_RUNS} concurrent runs while a bot commits; exactly one revert lands, every bot commit survives`, async (t) => {
  const s = scenario({ bare: true, extraConfig: '    strategy: revert\n' });
  t.timeout(HANG_GUARD_MS);
  const server = await startGitHttpServer({ root: path.dirname(s.repo) });
  t.teardown(() => server.close());
  const url = `${server.url}/${path.basename(s.repo)}`;
  const https = { config: httpsConfig(s, url), snapshot: s.snapshot };
  // over HTTP each attempt of a run is three requests (the new commits fetched, the ref
  // advertisement, the push), each a git process of the server: a bot pushing every second or so
  const writer = busyWriter(s.repo, UNREAD, [500, 1000]);
  await writer.started();
  const results = await Promise.all(Array.from({ length: BUSY_HTTP_RUNS }, () => run(https)));
  const landed = await writer.stop();
  // a run that pushes the very commit another pushed (same plan, parent and time) is told so by git, not by a trailer
  const revert = assertExactlyOnce(t, s, results, { reasons: false });
  for (const sha of landed) t.true(isAncestor(s.repo, sha, 'main'), `the bot's commit ${sha} is on main`);
  assertGitRevertContent(t, s, revert);
  t.is(git(s.repo, 'fsck', '--no-progress', '--no-dangling'), '');
  t.log(`${BUSY_HTTP_RUNS} runs over smart HTTP, ${landed.length} bot commits (none lost); ${countOf(results, REDELIVERED)} re-deliveries, ${countOf(results, REPLANNED)} full re-plans`);
});

/** The scenario's config with the repository served over smart HTTP. */
function httpsConfig(s: Scenario, url: string): string {
  const text = readFileSync(s.config, 'utf8');
  return writeFile(s.dir, 'lastgood-https.yaml', text.replace(`url: ${s.repo}\n`, `url: ${url}\n  insecure: true\n`));
}

/** The structured log lines a run wrote on stderr. */
function logLines(stderr: string): Array<Record<string, unknown>> {
  return stderr.split('\n').flatMap((line) => {
    try {
      const v = JSON.parse(line) as unknown;
      return v && typeof v === 'object' ? [v as Record<string, unknown>] : [];
    } catch {
      return [];
    }
  });
}

/**
 * A run paused right before its ref write (the plan made on main as it was), one commit landed on
 * main meanwhile, then the run let go: its outcome, its log lines, and the commit that landed.
 */
async function movedUnderPlan(s: Scenario, file: string, content: string, message: string) {
  const planned = git(s.repo, 'rev-parse', 'main');
  const paused = runPaused(s, 'before-ref-write');
  await paused.reached;
  const foreign = await landCommit(s.repo, file, content, message);
  paused.release();
  const r = await paused.done;
  const outcome = JSON.parse(r.stdout || '{"targets":[{}]}').targets[0] as { commit?: string; created?: boolean; reason?: string; checked?: { rendered?: unknown } };
  return { r, outcome, logs: logLines(r.stderr), planned, foreign };
}

test('the new commits touch nothing the plan read: the same revert is delivered on the new head, nothing located, planned or rendered again', async (t) => {
  const s = scenario({ bare: true, render: true, files: RENDERABLE, extraConfig: '    strategy: revert\n' });
  const { r, outcome, logs, foreign } = await movedUnderPlan(s, UNREAD, 'replicas: 7\n', 'redis: 7 replicas');
  t.is(r.code, 0, r.stderr);
  t.true(outcome.created);
  t.is(git(s.repo, 'rev-parse', 'main'), outcome.commit ?? '');
  t.is(git(s.repo, 'rev-parse', 'main^'), foreign, 'on top of the foreign commit, which is kept');
  const moved = logs.filter((l) => REDELIVERED.test(String(l.msg)));
  t.is(moved.length, 1, r.stderr);
  t.is(moved[0]!.head, foreign, 'the log names the new head');
  t.false(REPLANNED.test(r.stderr), 'no full re-plan');
  t.is(logs.filter((l) => l.msg === 'located bad revision').length, 1, 'located once');
  t.truthy(outcome.checked?.rendered, `the render check ran, once: ${r.stdout}`);
  assertGitRevertContent(t, s, outcome.commit!);
  t.deepEqual(revertsOf(s.repo, s.bad), [outcome.commit]);
});

test('the new commits change a sibling application inside the Flux Kustomization\'s path, off the target\'s way: the same revert is delivered on the new head', async (t) => {
  // the model reads only the part of the build that reaches the target (issue 33): apps/redis is listed by the
  // kustomization Flux generates for ./apps, but builds nothing of podinfo
  const s = scenario({ bare: true, extraConfig: '    strategy: revert\n' });
  const { r, outcome, foreign } = await movedUnderPlan(s, 'apps/redis/values.yaml', 'replicas: 7\n', 'redis: 7 replicas');
  t.is(r.code, 0, r.stderr);
  t.true(outcome.created);
  t.is(git(s.repo, 'rev-parse', 'main^'), foreign, 'on top of the foreign commit, which is kept');
  t.regex(r.stderr, REDELIVERED);
  t.false(REPLANNED.test(r.stderr), 'no full re-plan');
  t.is(git(s.repo, 'show', 'main:apps/redis/values.yaml'), 'replicas: 7', 'the foreign change survives the revert');
  assertGitRevertContent(t, s, outcome.commit!);
});

for (const [what, file, content] of [
  ['the base the target builds from', 'apps/podinfo/base/deployment.yaml', 'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: podinfo\n  labels: { team: web }\n'],
  ['a file in the target\'s own paths', `${TARGET_PATH}replicas.yaml`, 'replicas: 4\n'],
] as const) {
  test(`the new commits change what the plan read (${what}): the revert is planned again on the new head`, async (t) => {
    // the base is read through the target's overlay (RENDERABLE gives it a kustomization)
    const s = scenario({ bare: true, files: RENDERABLE, extraConfig: '    strategy: revert\n' });
    const { r, outcome, logs, foreign } = await movedUnderPlan(s, file, content, `a person's change to ${file}`);
    t.is(r.code, 0, r.stderr);
    t.true(outcome.created);
    t.is(git(s.repo, 'rev-parse', 'main^'), foreign, 'on top of the foreign commit, which is kept');
    t.regex(r.stderr, REPLANNED);
    t.false(REDELIVERED.test(r.stderr), 'the plan is not reused');
    const why = logs.find((l) => l.msg === 'branch moved: the new commits change what the plan read');
    t.is(why?.why, `the new commits change ${file}, which the plan read`, r.stderr);
    t.is(logs.filter((l) => l.msg === 'located bad revision').length, 2, 'located again');
    t.is(git(s.repo, 'show', `main:${file}`), content.trimEnd(), 'the foreign change survives the revert');
    assertGitRevertContent(t, s, outcome.commit!);
  });
}

test('a commit in the gap already reverts the bad one for this target: reported as already reverted, nothing written', async (t) => {
  const s = scenario({ bare: true });
  const message = `podinfo: back to 6.0.0 by another run\n\nLastgood-Target: podinfo-prod\nLastgood-Reverts: ${s.bad}\nLastgood-Restores: ${s.good}\n`;
  const { r, outcome, foreign } = await movedUnderPlan(s, UNREAD, 'replicas: 7\n', message);
  t.is(r.code, 0, r.stderr);
  t.false(outcome.created);
  t.is(outcome.commit, foreign);
  t.regex(outcome.reason ?? '', new RegExp(`already reverted by ${foreign.slice(0, 12)}`));
  t.is(git(s.repo, 'rev-parse', 'main'), foreign, 'nothing written');
  t.false(REPLANNED.test(r.stderr));
});

test('a lastgood commit for this target that reverts another failure: planned again, so the guards and the plan see it', async (t) => {
  const s = scenario({ bare: true });
  const message = `podinfo: an earlier failure\n\nLastgood-Target: podinfo-prod\nLastgood-Reverts: ${s.good}\n`;
  const { r, outcome, logs, foreign } = await movedUnderPlan(s, UNREAD, 'replicas: 7\n', message);
  t.is(r.code, 0, r.stderr);
  t.regex(String(logs.find((l) => l.msg === 'branch moved: the new commits change what the plan read')?.why), new RegExp(`${foreign.slice(0, 12)} is another lastgood commit for this target`));
  t.regex(r.stderr, REPLANNED);
  t.true(outcome.created);
  t.is(git(s.repo, 'rev-parse', 'main^'), foreign);
});

test('what a plan read, as paths: a folder stands for everything below it, a generated kustomization for its folder, the root for all', (t) => {
  const model = (inputs: string[], regions: string[], render?: string[]): TargetModel => ({
    engine: 'flux', describe: 'Flux Kustomization flux-system/apps', setters: [], opaque: [], missing: [], builds: true,
    inputs: new Map(inputs.map((p) => [p, { path: p, digest: 'd', role: 'kustomization' as const }])), regions,
    ...(render ? { render: { engine: 'flux' as const, root: 'apps', files: new Map(render.map((p) => [p, 'oid'])) } } : {}),
  });
  const bad = [{ oid: 'b'.repeat(40), message: 'podinfo 6.1.0', parents: [], tree: '', author: { name: 'Dev', email: 'dev@example.com', timestamp: 0, timezoneOffset: 0 }, committer: { name: 'Dev', email: 'dev@example.com', timestamp: 0, timezoneOffset: 0 } }];
  const reads = planReads({
    target: { paths: ['apps/podinfo/prod/'], freeze: 'auto' },
    files: [{ path: 'clusters/freeze.yaml', delete: true }],
    models: [model(['apps/podinfo/base/deploy.yaml', 'shared/(generated kustomization)'], ['apps/podinfo/base'], ['lib/render-only.yaml'])],
    rendered: 'cut',
    bad,
  });
  t.is(firstRead(reads, ['infra/redis/values.yaml', 'README.md']), undefined);
  t.is(firstRead(reads, ['README.md', 'apps/podinfo/prod/kustomization.yaml']), 'apps/podinfo/prod/kustomization.yaml', 'the target paths');
  t.is(firstRead(reads, ['apps/podinfo/base/new/patch.yaml']), 'apps/podinfo/base/new/patch.yaml', 'below a region');
  t.is(firstRead(reads, ['shared/sub/extra.yaml']), 'shared/sub/extra.yaml', 'a file Flux\'s generated kustomization may take');
  t.is(firstRead(reads, ['clusters/freeze.yaml']), 'clusters/freeze.yaml', 'a file the change writes');
  t.is(firstRead(reads, ['lib/render-only.yaml']), 'lib/render-only.yaml', 'a file the render read');
  t.is(firstRead(reads, ['apps/podinfo/prodx/a.yaml', 'apps/podinfo']), undefined, 'a sibling with the same prefix, a folder above');
  // the render fell back to the whole build: everything under the engine's path was read
  const whole = planReads({ target: { paths: ['apps/podinfo/prod/'], freeze: 'off' }, files: [], models: [model([], [], ['apps/podinfo/prod/kustomization.yaml'])], rendered: 'whole', bad });
  t.is(firstRead(whole, ['apps/redis/values.yaml']), 'apps/redis/values.yaml', 'a whole render reads the whole engine path');
  t.is(firstRead(whole, ['infra/redis/values.yaml']), undefined);
  t.is(firstRead(planReads({ target: { paths: ['apps/podinfo/prod/'], freeze: 'auto' }, files: [], models: [model([], [''])], rendered: 'no', bad }), ['anything/at/all']), 'anything/at/all', 'the root region: everything');
  // a bot's bad commit: the freeze edits searched every YAML file of the repository
  const botBad = [{ ...bad[0]!, message: 'Update from image update automation' }];
  const freezeReads = planReads({ target: { paths: ['apps/podinfo/prod/'], freeze: 'auto' }, files: [], models: [], rendered: 'no', bad: botBad });
  t.is(firstRead(freezeReads, ['infra/automation.yaml']), 'infra/automation.yaml');
  t.is(firstRead(freezeReads, ['infra/notes.txt']), undefined);
  t.is(firstRead(planReads({ target: { paths: ['apps/podinfo/prod/'], freeze: 'off' }, files: [], models: [], rendered: 'no', bad: botBad }), ['infra/automation.yaml']), undefined, 'no freeze, no search');
});
