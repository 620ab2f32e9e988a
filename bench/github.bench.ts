/**
 * github-pr: a revert pull request of one target (3 files) through the GitHub backend, against the
 * GitHub emulator (test/support/github-emulator.ts) backed by the generated repositories
 * (bench/generate-repo.ts: 200 / 5,000 / 50,000 files). Counts the API requests: they must not
 * grow with the repository's size (only trees on the way to the target paths are read).
 *
 * The flow is what the engine does for one target: the branch head, the commits touching the
 * target (locate the bad one; its first parent is the last-known-good), the files of the target at
 * the last-known-good and at head (plan), then deliver in pull-request mode.
 *
 * - Each repetition runs on a fresh `git clone --bare --shared` of the cached repository, so the
 *   cache is never written and every run opens a new PR.
 * - Write pacing is off (`writeIntervalMs: 0`): on github.com the throttling plugin spaces writes
 *   1 s apart, which would add about `writes` seconds; `writes` is reported so that can be added.
 * - ms = median of the repetitions, in this process (emulator and client share it: the emulator's
 *   own work, including `git rev-list -- <path>` over the whole history, is inside the figure).
 * - LASTGOOD_BENCH_SIZES=small,medium limits the sizes (default: all three).
 */
import { firstParentLog } from '../src/history/graph.ts';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import { createGitHubBackend } from '../src/deliver/github.ts';
import type { Change, FileChange } from '../src/repo/types.ts';
import { startGitHubEmulator } from '../test/support/github-emulator.ts';
import os from 'node:os';
import { benchRepo, SIZES, type SizeName } from './generate-repo.ts';

export const prefix = 'github-pr';

const REPS = 3;
const TOKEN = 'ghs_benchTokenNotARealOne000000000000';

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

async function oneRun(cached: string, target: string[]): Promise<{ ms: number; requests: number; writes: number; files: number }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'lastgood-bench-gh-'));
  const bare = path.join(dir, 'repo.git');
  execFileSync('git', ['clone', '-q', '--bare', '--shared', cached, bare]);
  const emulator = await startGitHubEmulator({ bareRepo: bare, owner: 'acme', repo: 'gitops', token: TOKEN });
  try {
    const backend = createGitHubBackend({ owner: 'acme', repo: 'gitops', token: TOKEN, baseUrl: emulator.url, writeIntervalMs: 0 });
    const started = performance.now();
    const head = await backend.head('main');
    const [bad] = await firstParentLog(backend, head, { paths: target, limit: 1 });
    if (!bad) throw new Error('no commit touches the target');
    const lkg = bad.parents[0]!;
    const good = await backend.listFiles(lkg, target);
    const now = await backend.listFiles(head, target);
    const files: FileChange[] = [...good].map(([p, e]) => ({ path: p, mode: e.mode, oid: e.oid }));
    for (const p of now.keys()) if (!good.has(p)) files.push({ path: p, delete: true });
    const change: Change = {
      target: 'app-00000-prod',
      branch: 'main',
      paths: target,
      parent: head,
      files,
      message: `Revert app-00000-prod to ${lkg.slice(0, 12)}\n\nLastgood-Target: app-00000-prod\nLastgood-Reverts: ${bad.oid}\nLastgood-Restores: ${lkg}\n`,
      author: { name: 'lastgood', email: 'lastgood@example.com', timestamp: 1_793_000_000, timezoneOffset: 0 },
      bad: [bad.oid],
      lastKnownGood: lkg,
      pullRequest: { title: 'Revert app-00000-prod', body: 'bench', labels: ['lastgood'], reviewers: ['alice'], assignees: [], draft: false, autoMerge: false },
    };
    const result = await backend.deliver(change, 'pull-request');
    const ms = performance.now() - started;
    if (!result.created || emulator.pulls.length !== 1) throw new Error('the bench run did not open a pull request');
    if (emulator.violations.length > 0) throw new Error(`OpenAPI violations: ${emulator.violations.join('; ')}`);
    return { ms, requests: emulator.requests, writes: emulator.log.filter((r) => r.method !== 'GET').length, files: files.length };
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
    const target = [...repo.paths, repo.paths[0]!.replace(/overlays\/prod\/$/, 'base/deployment.yaml')];
    const runs = [];
    for (let i = 0; i < REPS; i++) runs.push(await oneRun(repo.gitdir, target));
    const requests = [...new Set(runs.map((r) => r.requests))];
    process.stderr.write(`github-pr ${size}: ${runs.map((r) => Math.round(r.ms)).join(', ')} ms, requests ${requests.join('/')}\n`);
    yield {
      bench: 'github-pr',
      size,
      files: repo.files,
      commits: repo.commits,
      targetFiles: runs[0]!.files,
      lastgood: { ms: Math.round(median(runs.map((r) => r.ms)) * 10) / 10, requests: runs[0]!.requests, writes: runs[0]!.writes },
    };
  }
}
