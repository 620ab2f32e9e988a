import { mkdirSync, renameSync } from 'node:fs';
import path from 'node:path';
import { pino } from 'pino';
import { loadConfig } from '../../src/config/load.ts';
import { openRepo } from '../../src/deliver/registry.ts';
import { run, type Report } from '../../src/engine/index.ts';
import type { Observed } from '../../src/observe/types.ts';
import type { RepoBackend } from '../../src/repo/types.ts';
import type { ForgeEmulator } from './forge-emulator.ts';
import { commit, fromTemplate, git, makeRepo, tempDir, writeFile } from './git.ts';
import { startGitHttpServer, type GitHttpServer } from './git-http-server.ts';
import type { HostEmulatorOptions } from './gitea-emulator.ts';
import { kustomization } from './objects.ts';
import { RENDER } from './render-off.ts';

/**
 * One failed promotion in a config repository on an emulated git host (GitLab, Gitea, Bitbucket,
 * Azure DevOps): the bare repository behind the real `git http-backend` server, the host's API
 * emulator in front of it on one origin (as on the real host), and lastgood.yaml pointing at it.
 * `runOnce` runs the engine in this process exactly as `lastgood run` does (config file, registry,
 * run()), with the host API's retry unit shortened so that a Retry-After of seconds takes ms.
 */

export const NOW = new Date('2026-11-01T12:05:00Z');
export const TARGET = 'podinfo';
export const P = 'apps/podinfo/overlays/prod/';
export const values = (tag: string) => `# prod values\nimage:\n  tag: ${tag}\nreplicas: 2\n`;

export interface HostUnderTest {
  provider: 'gitlab' | 'gitea' | 'bitbucket' | 'bitbucket-server' | 'azure-devops';
  /** the bare repository's path below the git server's root */
  repoPath: string;
  /** repo.url on the emulator's origin */
  cloneUrl: (base: string) => string;
  /** repo.apiUrl, where the host's API is elsewhere than the default (Bitbucket Cloud) */
  apiUrl?: (base: string) => string;
  start: (opts: HostEmulatorOptions) => Promise<ForgeEmulator>;
  /** does the host have labels / assignees on pull requests */
  labels: boolean;
  assignees: boolean;
  /** user names as the host's configuration takes them */
  reviewer: string;
  assignee: string;
  /** the path of the create call, for fault injection */
  createPath: RegExp;
  /** the POSTs that decorate a request just opened (labels, reviewers not taken by the create), for fault injection */
  decoratePosts: RegExp[];
  /** what a server hook of this host says when it refuses a push */
  refusal: string;
  /** the web pages of a request and a commit, below the host's origin */
  requestPage: (n: number) => string;
  commitPage: (sha: string) => string;
}

export const TOKEN = 'host-token-for-tests-0123456789abcdef';

export interface ForgeScenario {
  emulator: ForgeEmulator;
  server: GitHttpServer;
  bare: string;
  work: string;
  good: string;
  bad: string;
  dir: string;
  config: string;
  env: Record<string, string>;
  /** a failed Kustomization that attempted `bad` after applying `applied` */
  failed(bad?: string, applied?: string): Observed[];
  healthy(revision: string): Observed[];
  /** a new commit on main, as someone else pushes it */
  push(files: Record<string, string>, message: string): string;
  backend(hostApi?: { commits?: 'git' | 'api' }): Promise<RepoBackend>;
  runOnce(observed?: Observed[], backend?: RepoBackend, env?: Record<string, string>): Promise<Report>;
}

export async function forgeScenario(
  t: { teardown(fn: () => unknown): void },
  host: HostUnderTest,
  opts: { users?: string[]; labels?: string[]; refuseCreate?: { status: number; message: string }; pullRequest?: string; mode?: 'commit' | 'pull-request'; auth?: string; env?: Record<string, string>; render?: boolean } = {},
): Promise<ForgeScenario> {
  // the history, built once per worker (support/git.ts fromTemplate): work/ and the bare clone beside it
  const fixture = fromTemplate('forge-scenario', (dir) => {
    const work = makeRepo({ dir: path.join(dir, 'work') });
    commit(work, { 'apps/other/x.yaml': 'x: 0\n', 'README.md': 'gitops\n' }, 'bootstrap');
    const good = commit(work, { [`${P}values.yaml`]: values('1.0.0'), [`${P}kustomization.yaml`]: 'resources: [values.yaml]\n' }, 'podinfo 1.0.0');
    commit(work, { 'apps/other/x.yaml': 'x: later\n' }, 'other app');
    const bad = commit(work, { [`${P}values.yaml`]: values('1.1.0') }, 'podinfo 1.1.0');
    git(dir, 'clone', '-q', '--bare', work, path.join(dir, 'bare.git'));
    return { good, bad };
  });
  const { good, bad } = fixture.value;
  const work = path.join(fixture.root, 'work');
  // the git server's root holds the bare repository alone, at the host's path
  const root = path.join(fixture.root, 'served');
  const bare = path.join(root, host.repoPath);
  mkdirSync(path.dirname(bare), { recursive: true });
  renameSync(path.join(fixture.root, 'bare.git'), bare);
  git(work, 'remote', 'add', 'origin', bare);
  const server = await startGitHttpServer({ root, token: TOKEN });
  t.teardown(() => server.close());
  const emulator = await host.start({
    git: server, bareRepo: bare, owner: 'acme', repo: 'gitops', token: TOKEN,
    users: opts.users ?? [host.reviewer, host.assignee], labels: opts.labels ?? ['lastgood'],
    ...(opts.refuseCreate ? { refuseCreate: opts.refuseCreate } : {}),
  });
  t.teardown(() => emulator.close());
  const dir = tempDir('lastgood-forge-cfg-');
  const config = writeFile(dir, 'lastgood.yaml', `repo:
  url: ${host.cloneUrl(emulator.url)}
  branch: main
  provider: ${host.provider}
  insecure: true
${host.apiUrl ? `  apiUrl: ${host.apiUrl(emulator.url)}\n` : ''}  auth: ${opts.auth ?? '{ tokenEnv: LASTGOOD_GIT_TOKEN }'}
defaults: { mode: ${opts.mode ?? 'pull-request'}, confirmations: 1 }
${RENDER(opts.render)}pullRequest: ${opts.pullRequest ?? `{ labels: [${host.labels ? 'lastgood' : ''}], reviewers: [${host.reviewer}], assignees: [${host.assignees ? host.assignee : ''}] }`}
targets:
  - name: ${TARGET}
    paths: [${P}]
    resources:
      - { apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: apps }
`);
  const env = { LASTGOOD_GIT_TOKEN: TOKEN, ...opts.env };
  const scenario: ForgeScenario = {
    emulator, server, bare, work, good, bad, dir, config, env,
    failed: (b = bad, applied = good) => [{ object: kustomization({ attempted: `main@sha1:${b}`, applied: `main@sha1:${applied}`, ready: 'False' }) as Observed['object'], source: 'test' }],
    healthy: (revision) => [{ object: kustomization({ attempted: `main@sha1:${revision}`, applied: `main@sha1:${revision}`, ready: 'True' }) as Observed['object'], source: 'test' }],
    push: (files, message) => {
      const sha = commit(work, files, message);
      git(work, 'push', '-q', 'origin', 'HEAD:main');
      return sha;
    },
    backend: async (hostApi = {}) => {
      const cfg = await loadConfig(config);
      return openRepo({ location: cfg.repo.url, relativeTo: dir, repo: cfg.repo, configFile: config, env, hostApi: { retryUnitMs: 2, ...hostApi }, onWarning: () => {} });
    },
    runOnce: async (observed = scenario.failed(), backend, notifyEnv = {}) => {
      const cfg = await loadConfig(config);
      const repo = backend ?? (await scenario.backend());
      return run({ config: cfg, observed, now: NOW, repo, dryRun: false, log: pino({ level: 'silent' }), env: notifyEnv });
    },
  };
  return scenario;
}
