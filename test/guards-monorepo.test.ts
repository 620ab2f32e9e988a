import test from 'ava';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { pino } from 'pino';
import { ConfigSchema } from '../src/config/schema.ts';
import { run } from '../src/engine/index.ts';
import { createGitHubBackend } from '../src/deliver/github/index.ts';
import { RemoteRepo } from '../src/deliver/git-remote/remote-repo.ts';
import { LocalRepo } from '../src/deliver/local/index.ts';
import type { RepoBackend } from '../src/repo/types.ts';
import { tempDir } from './support/git.ts';
import { startGitHttpServer } from './support/git-http-server.ts';
import { startGitHubEmulator } from './support/github-emulator.ts';
import { appendCommits, botBump, generateMonorepo, overlayKustomization, monorepoScenario, type Monorepo } from './support/monorepo.ts';

/**
 * Issue 22: the guards (revert-of-revert, cooldown) read only the window they need on the
 * monorepo shape (2,000 commits about 7 minutes apart, the target touched once), never the whole
 * history, and still find a lastgood revert inside that window, on every backend. The window is
 * the cooldown (30 minutes) plus a day of clock skew (src/history/guards.ts): about 210 of these
 * commits, however long the history.
 */

const TOKEN = 'ghs_guardsTokenNotARealOne0000000000000';
const HISTORY = 2_000;
/** commits a guard may read: the window (30 min + 1 day at 7 min a commit ≈ 210), what is appended, slop; far below the history */
const BOUND = 400;
/** commits a shallow mirror may hold: deepening doubles its step, so at most about twice what the walk read (a quarter of the history) */
const MIRROR_BOUND = 500;
/** requests to the server for the whole dry run (guards, locate, models, plan): batched, never one a commit or a file */
const REQUEST_BOUND = 40;

let base: Promise<Monorepo> | undefined;
/** One generated monorepo for the file (fast-import, a few seconds); each test works on a copy. */
const monorepo = () => (base ??= generateMonorepo(path.join(tempDir('lastgood-guards-mono-'), 'base.git'), { apps: 120, files: 1_200, commits: HISTORY, touches: 'once' }));

const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8', env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1' } }).trim();

/** A copy of the monorepo with, on top: a lastgood revert of the target at `revertAt` (unless null), `bots` bot commits, then `bad`. */
async function scenario(opts: { revertAt: number | null; bots: number; failingIsRevert?: boolean }) {
  const repo = await monorepo();
  const root = tempDir('lastgood-guards-');
  const gitdir = path.join(root, 'gitops.git');
  git(root, 'clone', '-q', '--bare', repo.gitdir, gitdir);
  const now = Date.parse(repo.now) / 1000 + 3_600;
  const target = `${repo.app}-prod`;
  const file = `${repo.paths[0]}kustomization.yaml`;
  let at = now - 25 * 60;
  let revert: string | undefined;
  if (opts.revertAt !== null) {
    [revert] = appendCommits(gitdir, [{ files: { [file]: overlayKustomization(repo.app, 'prod', '1.0.0') }, message: `Revert ${repo.app} to 1.0.0\n\nLastgood-Target: ${target}\n`, at: opts.revertAt }]);
    at = opts.revertAt;
  }
  const step = Math.max(1, Math.floor((now - 120 - at) / (opts.bots + 2)));
  appendCommits(gitdir, Array.from({ length: opts.bots }, (_, i) => botBump(`app-0000${i % 7}`, 'dev', `7.${i}.0`, (at += step))));
  const [bad] = opts.failingIsRevert
    ? appendCommits(gitdir, [{ files: { [file]: overlayKustomization(repo.app, 'prod', '1.0.0') }, message: `Revert ${repo.app} to 1.0.0\n\nLastgood-Target: ${target}\n`, at: now - 60 }])
    : appendCommits(gitdir, [{ files: { [file]: overlayKustomization(repo.app, 'prod', '4.0.0') }, message: `${repo.app}: release 4.0.0\n`, at: now - 60 }]);
  const applied = git(gitdir, 'rev-parse', `${bad}^`);
  return { repo, root, gitdir, bad: bad!, revert, applied, now: new Date(now * 1000).toISOString() };
}

type Scenario = Awaited<ReturnType<typeof scenario>>;

/** The three histories, each built once and shared by the backends (every run is a dry run: nothing is written). */
const once = <T>(fn: () => Promise<T>) => {
  let p: Promise<T> | undefined;
  return () => (p ??= fn());
};
const SCENARIOS = {
  cooldown: once(async () => scenario({ revertAt: Date.parse((await monorepo()).now) / 1000 + 3_600 - 20 * 60, bots: 100 })),
  revertOfRevert: once(() => scenario({ revertAt: null, bots: 3, failingIsRevert: true })),
  none: once(() => scenario({ revertAt: null, bots: 20 })),
};

/** Counts what the engine reads through the backend's port (the backend itself is real). */
function counting(backend: RepoBackend): { repo: RepoBackend; commits: Set<string> } {
  const commits = new Set<string>();
  const repo = new Proxy(backend, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver) as unknown;
      if (prop === 'readCommit') return (oid: string) => (commits.add(oid), backend.readCommit(oid));
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return { repo, commits };
}

interface Opened {
  backend: RepoBackend;
  url: string;
  apiUrl?: string;
  /** requests the server answered, and for git over HTTPS the commits the mirror holds */
  traffic(): { requests: number; mirrorCommits?: number };
  close(): Promise<void>;
}

const BACKENDS: Record<string, (s: Scenario) => Promise<Opened>> = {
  local: async (s) => ({ backend: new LocalRepo(s.gitdir), url: s.gitdir, traffic: () => ({ requests: 0 }), close: async () => undefined }),
  'git-remote': async (s) => {
    const server = await startGitHttpServer({ root: s.root });
    const backend = new RemoteRepo({ url: `${server.url}/gitops.git`, backoffMs: 1 });
    return {
      backend, url: `${server.url}/gitops.git`,
      traffic: () => ({ requests: server.log.length, mirrorCommits: Number(git(backend.mirror.gitdir, 'rev-list', '--all', '--count')) }),
      close: async () => { await backend.close(); await server.close(); },
    };
  },
  github: async (s) => {
    const emulator = await startGitHubEmulator({ bareRepo: s.gitdir, owner: 'acme', repo: 'gitops', token: TOKEN });
    return {
      backend: createGitHubBackend({ owner: 'acme', repo: 'gitops', token: TOKEN, baseUrl: emulator.url, writeIntervalMs: 0 }),
      url: 'https://github.com/acme/gitops', apiUrl: emulator.url,
      traffic: () => ({ requests: emulator.requests }),
      close: () => emulator.close(),
    };
  },
};

async function guarded(s: Scenario, open: (s: Scenario) => Promise<Opened>, attempted: string, log: (m: string) => void) {
  const o = await open(s);
  try {
    const { repo, commits } = counting(o.backend);
    const sc = monorepoScenario({ ...s.repo, bad: s.bad, applied: s.applied, now: s.now }, { url: o.url, cooldown: '30m', attempted });
    const config = ConfigSchema.parse({ ...sc.config, repo: { ...sc.config.repo, ...(o.apiUrl ? { apiUrl: o.apiUrl } : {}) } });
    const head = git(s.gitdir, 'rev-parse', 'main');
    const report = await run({ config, observed: sc.objects.map((object) => ({ object: object as never, source: 'test' })), now: new Date(s.now), repo, dryRun: true, log: pino({ level: 'silent' }) });
    // nothing was written
    if (git(s.gitdir, 'rev-parse', 'main') !== head) throw new Error('the branch moved');
    const counts = { commits: commits.size, ...o.traffic() };
    log(JSON.stringify(counts));
    return { outcome: report.targets[0]!, ...counts };
  } finally {
    await o.close();
  }
}

for (const [name, open] of Object.entries(BACKENDS)) {
  test(`${name}: a lastgood revert 100 commits down, inside the cooldown, holds the next revert; only the window is read`, async (t) => {
    const s = await SCENARIOS.cooldown();
    const r = await guarded(s, open, s.bad, (m) => t.log(m));
    t.is(r.outcome.action, 'wait', r.outcome.reason);
    t.regex(r.outcome.reason, new RegExp(`cooldown: lastgood reverted this target .* \\(${s.revert!.slice(0, 12)}\\)`));
    t.true(r.commits >= 100 && r.commits < BOUND, `${r.commits} commits read`);
    t.true(r.requests < REQUEST_BOUND, `${r.requests} requests`);
    if (r.mirrorCommits !== undefined) t.true(r.mirrorCommits < MIRROR_BOUND, `the mirror holds ${r.mirrorCommits} commits`);
  });

  test(`${name}: the failing revision is lastgood's own revert: revert-of-revert, without walking the history`, async (t) => {
    const s = await SCENARIOS.revertOfRevert();
    const r = await guarded(s, open, s.bad, (m) => t.log(m));
    t.is(r.outcome.action, 'alert', r.outcome.reason);
    t.regex(r.outcome.reason, new RegExp(`the failing revision ${s.bad.slice(0, 12)} is lastgood's own revert`));
    t.true(r.commits < BOUND, `${r.commits} commits read`);
    t.true(r.requests < REQUEST_BOUND, `${r.requests} requests`);
    if (r.mirrorCommits !== undefined) t.true(r.mirrorCommits < MIRROR_BOUND, `the mirror holds ${r.mirrorCommits} commits`);
  });

  test(`${name}: no revert in the window: the walk stops past the window (cooldown + a day), not at the history's end`, async (t) => {
    const s = await SCENARIOS.none();
    const r = await guarded(s, open, s.bad, (m) => t.log(m));
    // the run goes on to revert (dry run): the guards held nothing, and read a bounded prefix of the 2,000 commits
    t.is(r.outcome.action, 'revert', r.outcome.reason);
    t.true(r.commits < BOUND, `${r.commits} commits read of ${HISTORY}`);
    t.true(r.requests < REQUEST_BOUND, `${r.requests} requests`);
    if (r.mirrorCommits !== undefined) t.true(r.mirrorCommits < MIRROR_BOUND, `the mirror holds ${r.mirrorCommits} commits`);
  });
}
