/**
 * github-pr / github-commit: what lastgood really does for one failing target on GitHub — the
 * engine's `run()` (guards → locate → plan → blast-radius guard → deliver) with a failing Flux
 * Kustomization snapshot, through the GitHub backend, against the GitHub emulator
 * (test/support/github-emulator.ts) backed by the generated repositories (bench/generate-repo.ts:
 * 200 / 5,000 / 50,000 files). Counts the API requests (REST and GraphQL alike: each counts against
 * the installation's rate limit): they must not grow with the repository's size.
 *
 * The target is the bad commit's overlay (2 files) and the app's base deployment: 3 files. The
 * Kustomization attempts the bad commit (the head) after applying its parent.
 *
 * - Each repetition runs on a fresh `git clone --bare --shared` of the cached repository, so the
 *   cache is never written and every run writes anew.
 * - The PR's label exists in the repository (the steady state: the first revert PR creates it,
 *   through REST, which costs one request more).
 * - Write pacing is off (`writeIntervalMs: 0`): on github.com the throttling plugin spaces writes
 *   1 s apart, which would add about `writes` seconds; `writes` is reported so that can be added.
 * - ms = median of the repetitions, in this process (emulator and client share it: the emulator's
 *   own work is inside the figure). `byOperation` names what the requests were.
 * - LASTGOOD_BENCH_SIZES=small,medium limits the sizes (default: all three).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { ConfigSchema } from '../src/config/schema.ts';
import { createGitHubBackend } from '../src/deliver/github/index.ts';
import { run } from '../src/engine/index.ts';
import type { Observed } from '../src/observe/types.ts';
import type { DeliveryMode } from '../src/repo/types.ts';
import { startGitHubEmulator } from '../test/support/github-emulator.ts';
import { kustomization } from '../test/support/objects.ts';
import { benchRepo, SIZES, type SizeName } from './generate-repo.ts';

export const prefix = 'github-';

const REPS = 3;
const TOKEN = 'ghs_benchTokenNotARealOne000000000000';
const NOW = new Date('2026-11-01T12:05:00Z');

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

interface RunResult {
  ms: number;
  requests: number;
  writes: number;
  byOperation: Record<string, number>;
}

async function oneRun(cached: string, paths: string[], bad: string, mode: DeliveryMode): Promise<RunResult> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'lastgood-bench-gh-'));
  const bare = path.join(dir, 'repo.git');
  execFileSync('git', ['clone', '-q', '--bare', '--shared', cached, bare]);
  const emulator = await startGitHubEmulator({ bareRepo: bare, owner: 'acme', repo: 'gitops', token: TOKEN, labels: ['lastgood'], commitGraph: true });
  try {
    const lkg = execFileSync('git', ['rev-parse', `${bad}^`], { cwd: bare, encoding: 'utf8' }).trim();
    const config = ConfigSchema.parse({
      repo: { url: 'https://github.com/acme/gitops', apiUrl: emulator.url },
      defaults: { mode, confirmations: 1 },
      pullRequest: { labels: ['lastgood'], reviewers: ['alice'] },
      targets: [{ name: 'app-00000-prod', paths, resources: [{ apiVersion: 'kustomize.toolkit.fluxcd.io/v1', kind: 'Kustomization', namespace: 'flux-system', name: 'apps' }] }],
    });
    const observed: Observed[] = [{ object: kustomization({ attempted: `main@sha1:${bad}`, applied: `main@sha1:${lkg}`, ready: 'False' }) as Observed['object'], source: 'bench' }];
    const backend = createGitHubBackend({ owner: 'acme', repo: 'gitops', token: TOKEN, baseUrl: emulator.url, writeIntervalMs: 0 });
    const started = performance.now();
    const report = await run({ config, observed, now: NOW, repo: backend, dryRun: false, log: pino({ level: 'silent' }) });
    const ms = performance.now() - started;
    const outcome = report.targets[0]!;
    if (outcome.error || !outcome.created) throw new Error(`the bench run wrote no revert: ${outcome.error?.message ?? outcome.reason}`);
    if (mode === 'pull-request' && emulator.pulls.length !== 1) throw new Error('the bench run did not open a pull request');
    if (emulator.violations.length > 0) throw new Error(`emulator violations: ${emulator.violations.join('; ')}`);
    const byOperation: Record<string, number> = {};
    for (const r of emulator.log) byOperation[r.operationId ?? r.path] = (byOperation[r.operationId ?? r.path] ?? 0) + 1;
    return { ms, requests: emulator.requests, writes: emulator.log.filter((r) => r.write).length, byOperation };
  } finally {
    await emulator.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export default async function* () {
  const sizes = (process.env.LASTGOOD_BENCH_SIZES?.split(',') ?? Object.keys(SIZES)) as SizeName[];
  for (const size of sizes) {
    const repo = await benchRepo(size);
    // the bad commit's overlay (2 files) and the app's base deployment: one target's 3 files
    const paths = [...repo.paths, repo.paths[0]!.replace(/overlays\/prod\/$/, 'base/deployment.yaml')];
    for (const mode of ['pull-request', 'commit'] as const) {
      const runs: RunResult[] = [];
      for (let i = 0; i < REPS; i++) runs.push(await oneRun(repo.gitdir, paths, repo.bad, mode));
      const bench = mode === 'pull-request' ? 'github-pr' : 'github-commit';
      const requests = [...new Set(runs.map((r) => r.requests))];
      process.stderr.write(`${bench} ${size}: ${runs.map((r) => Math.round(r.ms)).join(', ')} ms, requests ${requests.join('/')} ${JSON.stringify(runs[0]!.byOperation)}\n`);
      yield {
        bench,
        size,
        files: repo.files,
        commits: repo.commits,
        targetFiles: 3,
        lastgood: { ms: Math.round(median(runs.map((r) => r.ms)) * 10) / 10, requests: runs[0]!.requests, writes: runs[0]!.writes },
        byOperation: runs[0]!.byOperation,
      };
    }
  }
}
