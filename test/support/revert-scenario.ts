import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { BIN, lastgood, type CliResult } from './cli.ts';
import { commit, fromTemplate, git, makeRepo, tempDir, writeFile } from './git.ts';
import { runSync } from './spawner.ts';
import { kustomization, yamlDocs } from './objects.ts';
import { RENDER } from './render-off.ts';

/**
 * A GitOps repository with one failed promotion, for the write-safety tests (issue 15, classes
 * 1–3): c1 initial, c2 good podinfo change (applied), c3 bad podinfo release (+ a new file), c4
 * an unrelated redis change. The Flux Kustomization attempted c4 and failed; `lastgood run`
 * restores the target paths to c2 in one new commit on main.
 */

export const NOW = ['--now', '2026-11-01T12:05:00Z'];
export const TARGET_PATH = 'apps/podinfo/overlays/prod/';
export const KUSTOMIZATION = `${TARGET_PATH}kustomization.yaml`;

export function kustomizationFile(tag: string): string {
  return `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - ../../base
images:
  - name: ghcr.io/stefanprodan/podinfo
    newTag: ${tag}
`;
}

export interface Scenario {
  /** the repository lastgood writes: a working copy with main checked out, or a bare repository */
  repo: string;
  bare: boolean;
  dir: string;
  config: string;
  good: string;
  bad: string;
  /** the Kustomization snapshot that says the newest release failed */
  snapshot: string;
}

/** `render` as forge-scenario.ts's RENDER: off unless asked for, these scenarios test the write path */
export function scenario(opts: { bare?: boolean; mode?: 'commit' | 'pull-request'; extraConfig?: string; files?: Record<string, string>; render?: boolean } = {}): Scenario {
  // the history, built once per worker for each set of extra files (support/git.ts fromTemplate)
  const fixture = fromTemplate(`revert-scenario ${JSON.stringify(opts.files ?? {})}`, (root) => {
    const work = makeRepo({ dir: path.join(root, 'work') });
    commit(work, {
      'apps/podinfo/base/deployment.yaml': 'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: podinfo\n',
      [KUSTOMIZATION]: kustomizationFile('6.0.0'),
      'apps/redis/values.yaml': 'replicas: 1\n',
      ...opts.files,
    }, 'initial platform');
    const good = commit(work, { [`${TARGET_PATH}replicas.yaml`]: 'replicas: 2\n' }, 'podinfo: two replicas in prod');
    const bad = commit(work, { [KUSTOMIZATION]: kustomizationFile('6.1.0'), [`${TARGET_PATH}hpa.yaml`]: 'kind: HorizontalPodAutoscaler\n' }, 'podinfo: release 6.1.0');
    const attempted = commit(work, { 'apps/redis/values.yaml': 'replicas: 3\n' }, 'redis: three replicas');
    git(root, 'clone', '-q', '--bare', work, path.join(root, 'bare.git'));
    return { good, bad, attempted };
  });
  const { good, bad, attempted } = fixture.value;
  const work = path.join(fixture.root, 'work');
  const dir = tempDir('lastgood-cfg-');
  let repo = work;
  if (opts.bare) {
    repo = path.join(dir, 'bare.git');
    renameSync(path.join(fixture.root, 'bare.git'), repo);
  }
  const config = writeFile(dir, 'lastgood.yaml', `repo:
  url: ${repo}
  branch: main
defaults:
  mode: ${opts.mode ?? 'commit'}
  strategy: restore
  confirmations: 1
  stuckAfter: 15m
  cooldown: "off"
${RENDER(opts.render)}targets:
  - name: podinfo-prod
    paths: [${TARGET_PATH}]
    resources:
      - { apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: apps }
${opts.extraConfig ?? ''}`);
  const snapshot = failedSnapshot(dir, 'cluster.yaml', attempted, good);
  return { repo, bare: Boolean(opts.bare), dir, config, good, bad, snapshot };
}

export function failedSnapshot(dir: string, name: string, attempted: string, applied: string): string {
  return writeFile(dir, name, yamlDocs(kustomization({ attempted: `main@sha1:${attempted}`, applied: `main@sha1:${applied}`, ready: 'False' })));
}

export interface RunOutcome {
  code: number;
  stderr: string;
  commit?: string;
  created?: boolean;
  reason?: string;
}

export async function run(s: Pick<Scenario, 'config' | 'snapshot'>, env: Record<string, string> = {}, extra: string[] = []): Promise<RunOutcome & CliResult> {
  const r = await lastgood(['run', ...NOW, '--config', s.config, '--snapshot', s.snapshot, '--json', ...extra], { env });
  let target: { commit?: string; created?: boolean; reason?: string } = {};
  try {
    target = JSON.parse(r.stdout).targets[0] ?? {};
  } catch {
    // no JSON: the error is on stderr
  }
  return { ...r, commit: target.commit, created: target.created, reason: target.reason };
}

/**
 * A lastgood process that pauses at a write point (LASTGOOD_TEST_PAUSE): `reached` resolves when
 * it is there, `release` lets it go on, `kill` ends it with SIGKILL, `done` is its outcome.
 */
export interface Paused {
  child: ChildProcess;
  reached: Promise<void>;
  release(): void;
  kill(): Promise<void>;
  done: Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>;
}

export function runPaused(s: Pick<Scenario, 'config' | 'snapshot'>, point: string, extra: string[] = []): Paused {
  const gate = path.join(tempDir('lastgood-gate-'), 'go');
  const child = spawn(process.execPath, [BIN, 'run', ...NOW, '--config', s.config, '--snapshot', s.snapshot, '--json', ...extra], {
    env: { ...process.env, LASTGOOD_TEST_PAUSE: `${point}:${gate}` },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
  let exited = false;
  void done.then(() => (exited = true));
  const reached = (async () => {
    while (!existsSync(`${gate}.reached`)) {
      if (exited) throw new Error(`lastgood ended before reaching ${point}: ${stdout}${stderr}`);
      await sleep(5);
    }
  })();
  return {
    child,
    reached,
    release: () => writeFileSync(gate, ''),
    kill: async () => {
      child.kill('SIGKILL');
      await done;
    },
    done,
  };
}

/** Commits a change to a file outside the target paths on top of `main` with a compare-and-swap, retrying until it lands; the new SHA. */
export async function foreignCommit(repo: string, bare: boolean, n: number): Promise<string> {
  for (;;) {
    try {
      if (!bare) {
        writeFile(repo, 'apps/redis/values.yaml', `replicas: ${n}\n`);
        git(repo, 'commit', '-q', '-m', `redis: ${n} replicas`, '--', 'apps/redis/values.yaml');
        return git(repo, 'rev-parse', 'HEAD');
      }
      const old = git(repo, 'rev-parse', 'main');
      const blob = gitInput(repo, `replicas: ${n}\n`, 'hash-object', '-w', '--stdin');
      const tree = treeWith(repo, old, 'apps/redis/values.yaml', blob);
      const sha = git(repo, 'commit-tree', tree, '-p', old, '-m', `redis: ${n} replicas`);
      git(repo, 'update-ref', 'refs/heads/main', sha, old);
      return sha;
    } catch {
      // a lock held, or main moved: as a person would, try again
      await sleep(5 + Math.random() * 20);
    }
  }
}

function gitInput(cwd: string, input: string, ...args: string[]): string {
  return execGit(cwd, args, input);
}

/** The tree of `commit` with `file` set to `blob`, made with a temporary index. */
function treeWith(repo: string, commitSha: string, file: string, blob: string): string {
  const index = path.join(tempDir('lastgood-index-'), 'index');
  const env = { GIT_INDEX_FILE: index };
  execGit(repo, ['read-tree', commitSha], undefined, env);
  execGit(repo, ['update-index', '--add', '--cacheinfo', `100644,${blob},${file}`], undefined, env);
  return execGit(repo, ['write-tree'], undefined, env);
}

function execGit(cwd: string, args: string[], input?: string, env: Record<string, string> = {}): string {
  return runSync('git', args, { cwd, ...(input === undefined ? {} : { input }), env: { ...process.env, GIT_AUTHOR_NAME: 'Person', GIT_AUTHOR_EMAIL: 'person@example.com', GIT_COMMITTER_NAME: 'Person', GIT_COMMITTER_EMAIL: 'person@example.com', ...env } }).trim();
}

/** The lastgood commits on main's first-parent line that revert `bad`. */
export function revertsOf(repo: string, bad: string): string[] {
  const out = git(repo, 'log', '--first-parent', '--format=%H', `--grep=^Lastgood-Reverts: .*${bad}`, 'main');
  return out ? out.split('\n') : [];
}
