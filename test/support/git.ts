import { cpSync, existsSync, mkdtempSync, mkdirSync, rmSync, writeFileSync, readdirSync, readFileSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createHash } from 'node:crypto';
import type { FileChange } from '../../src/repo/types.ts';
import { runSync, runSyncBuffer } from './spawner.ts';

/** Real git repositories for tests, made with the real `git` in temp dirs. */

const ENV = {
  ...process.env,
  GIT_AUTHOR_NAME: 'Dev', GIT_AUTHOR_EMAIL: 'dev@example.com',
  GIT_COMMITTER_NAME: 'Dev', GIT_COMMITTER_EMAIL: 'dev@example.com',
  GIT_CONFIG_NOSYSTEM: '1', HOME: os.tmpdir(),
};

export function git(cwd: string, ...args: string[]): string {
  return runSync('git', args, { cwd, env: ENV }).trim();
}

export function tempDir(prefix = 'lastgood-test-'): string {
  return mkdtempSync(path.join(os.tmpdir(), prefix));
}

export function makeRepo(opts: { branch?: string; dir?: string } = {}): string {
  const dir = opts.dir ?? tempDir('lastgood-repo-');
  if (opts.dir) mkdirSync(dir, { recursive: true });
  git(dir, 'init', '-q', '-b', opts.branch ?? 'main');
  return dir;
}

const templates = new Map<string, { root: string; value: unknown }>();

/**
 * A fixture's folder, built once per test worker and copied for each use (issue 38: many tests
 * start from the same few commits, and a commit made with native git costs three processes, ~58 ms
 * of CPU). `build` writes everything below the folder it is given and returns what the tests need
 * to know of it (SHAs, paths relative to that folder). Each use gets its own copy, with the files'
 * times kept (git's index still matches its work tree). Anything that names the folder itself (a
 * remote's URL) is set on the copy, not in `build`. The key names everything `build` depends on.
 */
export function fromTemplate<T>(key: string, build: (root: string) => T): { root: string; value: T } {
  let template = templates.get(key);
  if (!template) {
    const root = tempDir('lastgood-template-');
    template = { root, value: build(root) };
    templates.set(key, template);
  }
  const root = tempDir('lastgood-fixture-');
  cpSync(template.root, root, { recursive: true, preserveTimestamps: true });
  return { root, value: template.value as T };
}

let clock = Date.parse('2026-11-01T10:00:00Z') / 1000;

/** Writes (string) or deletes (null) files, commits them, returns the full SHA. */
export function commit(repo: string, files: Record<string, string | null>, message: string): string {
  for (const [file, content] of Object.entries(files)) {
    const full = path.join(repo, file);
    if (content === null) rmSync(full, { force: true });
    else {
      mkdirSync(path.dirname(full), { recursive: true });
      writeFileSync(full, content);
    }
  }
  clock += 60;
  const date = `${clock} +0000`;
  return addAndCommit(repo, ['-q', '--allow-empty', '-m', message], { ...ENV, GIT_AUTHOR_DATE: date, GIT_COMMITTER_DATE: date });
}

/**
 * Commits on the checked-out branch, one after another, as `commit` makes them (the same clock,
 * author and message form), written by one `git fast-import` instead of three processes a commit;
 * then one `git reset --hard` brings the index and work tree to the last (the repository must
 * have nothing uncommitted). Returns their SHAs, in order. Issue 38: fixture histories of more
 * than a few commits.
 */
export function commitMany(repo: string, commits: ReadonlyArray<{ files: Record<string, string | null>; message: string }>): string[] {
  if (commits.length === 0) return [];
  const branch = readFileSync(path.join(repo, '.git', 'HEAD'), 'utf8').match(/^ref: (refs\/heads\/[^\n]+)\n$/)?.[1];
  if (!branch) throw new Error(`commitMany: ${repo} has no branch checked out`);
  const born = existsSync(path.join(repo, '.git', branch)) || runSync('git', ['for-each-ref', '--format=%(refname)', branch], { cwd: repo, env: ENV }).trim() !== '';
  const data = (text: string) => `data ${Buffer.byteLength(text)}\n${text}\n`;
  const stream = commits.map((c, i) => {
    clock += 60;
    const sign = `Dev <dev@example.com> ${clock} +0000`;
    const changes = Object.entries(c.files).map(([file, content]) => (content === null ? `D ${file}\n` : `M 100644 inline ${file}\n${data(content)}`));
    // `git commit -m` ends the message with a newline
    return `commit ${branch}\nmark :${i + 1}\nauthor ${sign}\ncommitter ${sign}\n${data(`${c.message.replace(/\n*$/, '')}\n`)}${i === 0 && born ? `from ${branch}^0\n` : ''}${changes.join('')}\n`;
  }).join('');
  const marks = path.join(repo, '.git', 'lastgood-test-marks');
  runSync('git', ['fast-import', '--quiet', '--done', `--export-marks=${marks}`], { cwd: repo, env: ENV, input: `${stream}done\n` });
  const byMark = new Map(readFileSync(marks, 'utf8').trim().split('\n').map((line) => line.split(' ') as [string, string]));
  rmSync(marks);
  git(repo, 'reset', '-q', '--hard');
  return commits.map((_, i) => byMark.get(`:${i + 1}`)!);
}

/**
 * `git add -A` then `git commit ARGS` in one shell, and the new HEAD: one request to the spawner
 * (support/spawner.ts) instead of two, and the tests make thousands of commits.
 */
export function addAndCommit(repo: string, commitArgs: string[], env: NodeJS.ProcessEnv): string {
  runSync('/bin/sh', ['-c', 'git add -A && exec git commit "$@"', 'sh', ...commitArgs], { cwd: repo, env });
  return headOf(repo);
}

/**
 * HEAD's commit, read from the loose ref git just wrote (a process less per commit: the tests make
 * thousands); anything else (a detached HEAD, packed refs, a linked worktree) asks git.
 */
/** True when `a` is an ancestor of `b` (or is `b`) in `repo`. */
export function isAncestor(repo: string, a: string, b: string): boolean {
  try {
    git(repo, 'merge-base', '--is-ancestor', a, b);
    return true;
  } catch {
    return false;
  }
}

export function headOf(repo: string): string {
  try {
    const head = readFileSync(path.join(repo, '.git', 'HEAD'), 'utf8');
    const ref = /^ref: (refs\/heads\/[^\n]+)\n$/.exec(head)?.[1];
    const sha = ref ? readFileSync(path.join(repo, '.git', ref), 'utf8') : '';
    if (/^[0-9a-f]{40}\n$/.test(sha)) return sha.trim();
  } catch {
    // not a plain repository with a loose branch ref
  }
  return git(repo, 'rev-parse', 'HEAD');
}

/** A fingerprint of everything in a repository folder (work tree and .git), to prove nothing was written. */
export function fingerprint(dir: string): string {
  const hash = createHash('sha256');
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const full = path.join(d, name);
      const st = statSync(full);
      hash.update(path.relative(dir, full));
      if (st.isDirectory()) walk(full);
      else hash.update(readFileSync(full));
    }
  };
  walk(dir);
  return hash.digest('hex');
}

export function writeFile(dir: string, file: string, content: string): string {
  const full = path.join(dir, file);
  mkdirSync(path.dirname(full), { recursive: true });
  writeFileSync(full, content);
  return full;
}

/**
 * `fn` run on a throwaway worktree of `rev` in `dir`, with planned file changes written on it (a
 * revert's plan, as it would land), removed afterwards: the property tests' independent oracle.
 */
export function withCheckout<T>(dir: string, rev: string, change: readonly FileChange[] | undefined, fn: (worktree: string) => T): T {
  const wt = path.join(tempDir('lastgood-checkout-'), 'wt');
  git(dir, 'worktree', 'add', '-q', '--detach', wt, rev);
  try {
    for (const f of change ?? []) {
      const full = path.join(wt, f.path);
      if ('delete' in f) rmSync(full, { force: true });
      else {
        mkdirSync(path.dirname(full), { recursive: true });
        writeFileSync(full, 'content' in f ? f.content : runSyncBuffer('git', ['cat-file', 'blob', f.oid], { cwd: dir }));
      }
    }
    return fn(wt);
  } finally {
    rmSync(wt, { recursive: true, force: true });
    git(dir, 'worktree', 'prune');
  }
}
