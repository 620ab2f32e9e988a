/**
 * review-pr/<host>: one revert merge/pull request on GitLab, Gitea, Bitbucket Cloud, Bitbucket Data
 * Center and Azure DevOps — the engine's `run()` for one failing target (guards → locate → plan →
 * blast-radius guard → deliver), through the host's backend as `lastgood run` opens it (git over
 * smart HTTP for reads and the push, the host's client for the request), against the host's
 * emulator (test/support/*-emulator.ts) over the real `git http-backend`, on the generated
 * repositories (bench/generate-repo.ts: 200 / 5,000 / 50,000 files).
 *
 * - `apiRequests`: requests to the host's API (what counts against its rate limit; the goal is
 *   ≤ 10 and constant in the repository's size); `gitRequests`: smart-HTTP requests (discovery,
 *   ls-refs, fetches, the push), which no API rate limit counts on these hosts.
 * - baseline: the GitHub backend opening the same revert pull request on the same repository,
 *   against the GitHub emulator, in the same process; `ratio` = the host's ms over GitHub's.
 * - Each repetition starts from a fresh `git clone --bare --shared` and a cold mirror (no
 *   repo.cacheDir): the whole run, as a CI job or the first revert of a controller does it.
 *   ms = median of the repetitions; emulators and client share this process.
 * - review-pr/gitlab+commits-api: the same on GitLab with the review branch's commit written by
 *   GitLab's Commits API (`actions`, at `start_sha`) instead of pushed: the two ways measured.
 * - LASTGOOD_BENCH_SIZES=small,medium limits the sizes (default: all three);
 *   LASTGOOD_BENCH_HOSTS=gitlab,gitea the hosts (default: all).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { ConfigSchema } from '../src/config/schema.ts';
import { createGitHubBackend } from '../src/deliver/github/index.ts';
import { openRepo } from '../src/deliver/registry.ts';
import { run } from '../src/engine/index.ts';
import type { Observed } from '../src/observe/types.ts';
import { startGitHttpServer } from '../test/support/git-http-server.ts';
import { startGitHubEmulator } from '../test/support/github-emulator.ts';
import { HOSTS } from '../test/support/hosts-under-test.ts';
import type { HostUnderTest } from '../test/support/forge-scenario.ts';
import { kustomization } from '../test/support/objects.ts';
import { benchRepo, SIZES, type SizeName } from './generate-repo.ts';

export const prefix = 'review-pr';

const REPS = 3;
const TOKEN = 'bench-host-token-0123456789abcdef';
const NOW = new Date('2026-11-01T12:05:00Z');
const TARGET = 'app-00000-prod';

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

const resources = [{ apiVersion: 'kustomize.toolkit.fluxcd.io/v1', kind: 'Kustomization', namespace: 'flux-system', name: 'apps' }];

function observed(bare: string, bad: string): Observed[] {
  const lkg = execFileSync('git', ['rev-parse', `${bad}^`], { cwd: bare, encoding: 'utf8' }).trim();
  return [{ object: kustomization({ attempted: `main@sha1:${bad}`, applied: `main@sha1:${lkg}`, ready: 'False' }) as Observed['object'], source: 'bench' }];
}

interface Measured {
  ms: number;
  apiRequests: number;
  gitRequests: number;
}

async function hostRun(host: HostUnderTest, cached: string, paths: string[], bad: string, commits: 'git' | 'api' = 'git'): Promise<Measured> {
  const root = mkdtempSync(path.join(os.tmpdir(), 'lastgood-bench-host-'));
  const bare = path.join(root, host.repoPath);
  mkdirSync(path.dirname(bare), { recursive: true });
  execFileSync('git', ['clone', '-q', '--bare', '--shared', cached, bare]);
  const server = await startGitHttpServer({ root, token: TOKEN });
  const emulator = await host.start({ git: server, bareRepo: bare, owner: 'acme', repo: 'gitops', token: TOKEN, users: [host.reviewer], labels: ['lastgood'] });
  try {
    const config = ConfigSchema.parse({
      repo: { url: host.cloneUrl(emulator.url), provider: host.provider, insecure: true, ...(host.apiUrl ? { apiUrl: host.apiUrl(emulator.url) } : {}), auth: { tokenEnv: 'LASTGOOD_GIT_TOKEN' } },
      defaults: { mode: 'pull-request', confirmations: 1 },
      pullRequest: { labels: host.labels ? ['lastgood'] : [], reviewers: [host.reviewer] },
      targets: [{ name: TARGET, paths, resources }],
    });
    const seen = observed(bare, bad);
    const started = performance.now();
    const backend = await openRepo({ location: config.repo.url, relativeTo: root, repo: config.repo, env: { LASTGOOD_GIT_TOKEN: TOKEN }, hostApi: { commits }, onWarning: () => {} });
    const report = await run({ config, observed: seen, now: NOW, repo: backend, dryRun: false, log: pino({ level: 'silent' }), env: {} });
    const ms = performance.now() - started;
    const outcome = report.targets[0]!;
    if (outcome.error || !outcome.created || emulator.model.requests.length !== 1) throw new Error(`${host.provider}: the bench run opened no request: ${outcome.error?.message ?? outcome.reason}`);
    if (emulator.violations.length > 0) throw new Error(`${host.provider} emulator violations: ${emulator.violations.join('; ')}`);
    (backend as { close?: () => void }).close?.();
    return { ms, apiRequests: emulator.apiRequests, gitRequests: emulator.log.filter((r) => r.git).length };
  } finally {
    await emulator.close();
    await server.close();
    rmSync(root, { recursive: true, force: true });
  }
}

async function gitHubRun(cached: string, paths: string[], bad: string): Promise<Measured> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'lastgood-bench-gh-'));
  const bare = path.join(dir, 'repo.git');
  execFileSync('git', ['clone', '-q', '--bare', '--shared', cached, bare]);
  const emulator = await startGitHubEmulator({ bareRepo: bare, owner: 'acme', repo: 'gitops', token: TOKEN, labels: ['lastgood'], commitGraph: true });
  try {
    const config = ConfigSchema.parse({
      repo: { url: 'https://github.com/acme/gitops', apiUrl: emulator.url },
      defaults: { mode: 'pull-request', confirmations: 1 },
      pullRequest: { labels: ['lastgood'], reviewers: ['alice'] },
      targets: [{ name: TARGET, paths, resources }],
    });
    const seen = observed(bare, bad);
    const started = performance.now();
    const backend = createGitHubBackend({ owner: 'acme', repo: 'gitops', token: TOKEN, baseUrl: emulator.url, writeIntervalMs: 0 });
    const report = await run({ config, observed: seen, now: NOW, repo: backend, dryRun: false, log: pino({ level: 'silent' }), env: {} });
    const ms = performance.now() - started;
    if (report.targets[0]!.error || emulator.pulls.length !== 1) throw new Error(`GitHub: the bench run opened no pull request: ${report.targets[0]!.error?.message ?? report.targets[0]!.reason}`);
    return { ms, apiRequests: emulator.requests, gitRequests: 0 };
  } finally {
    await emulator.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export default async function* () {
  const sizes = (process.env.LASTGOOD_BENCH_SIZES?.split(',') ?? Object.keys(SIZES)) as SizeName[];
  const only = process.env.LASTGOOD_BENCH_HOSTS?.split(',');
  for (const size of sizes) {
    const repo = await benchRepo(size);
    const paths = [...repo.paths, repo.paths[0]!.replace(/overlays\/prod\/$/, 'base/deployment.yaml')];
    const github: Measured[] = [];
    for (let i = 0; i < REPS; i++) github.push(await gitHubRun(repo.gitdir, paths, repo.bad));
    const baselineMs = median(github.map((r) => r.ms));
    // GitLab twice: the review branch pushed (git) and written by its Commits API (api)
    const variants = HOSTS.flatMap((host) => (host.provider === 'gitlab' ? [{ host, commits: 'git' as const }, { host, commits: 'api' as const }] : [{ host, commits: 'git' as const }]))
      .filter((v) => !only || only.includes(v.host.provider));
    for (const { host, commits } of variants) {
      const name = `review-pr/${host.provider}${commits === 'api' ? '+commits-api' : ''}`;
      const runs: Measured[] = [];
      for (let i = 0; i < REPS; i++) runs.push(await hostRun(host, repo.gitdir, paths, repo.bad, commits));
      const ms = median(runs.map((r) => r.ms));
      const api = [...new Set(runs.map((r) => r.apiRequests))];
      process.stderr.write(`${name} ${size}: ${runs.map((r) => Math.round(r.ms)).join(', ')} ms (GitHub ${github.map((r) => Math.round(r.ms)).join(', ')}), API requests ${api.join('/')}, git requests ${runs.map((r) => r.gitRequests).join('/')}\n`);
      yield {
        bench: name,
        size,
        files: repo.files,
        commits: repo.commits,
        lastgood: { ms: Math.round(ms * 10) / 10, apiRequests: runs[0]!.apiRequests, gitRequests: runs[0]!.gitRequests, requests: runs[0]!.apiRequests + runs[0]!.gitRequests },
        baseline: { name: 'GitHub backend, same repository', ms: Math.round(baselineMs * 10) / 10, requests: github[0]!.apiRequests },
        ratio: Math.round((ms / baselineMs) * 100) / 100,
      };
    }
  }
}
