import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { ExecutionContext } from 'ava';
import { evidenceFor } from '../../src/decide/verdict.ts';
import type { Evidence } from '../../src/decide/types.ts';
import { LocalRepo } from '../../src/deliver/local/index.ts';
import { createGitHubBackend } from '../../src/deliver/github/index.ts';
import { locate, revertInput, type Located } from '../../src/history/locate.ts';
import { planRevert } from '../../src/revert/threeway.ts';
import type { RepoBackend } from '../../src/repo/types.ts';
import type { KubeObject } from '../../src/observe/types.ts';
import { addAndCommit, git, makeRepo, tempDir } from './git.ts';
import { runSync } from './spawner.ts';
import { startGitHubEmulator } from './github-emulator.ts';
import { startGitHttpServer } from './git-http-server.ts';
import { RemoteRepo } from '../../src/deliver/git-remote/remote-repo.ts';
import { modelTarget } from '../../src/model/index.ts';
import { verifyPlan, type Verification } from '../../src/verify/model-check.ts';

/**
 * Histories as teams really have them, built with native git, and the same locate/plan run
 * through every backend (a local repository and the GitHub API emulator over a bare clone), with
 * `git revert` as the oracle for the bytes a revert writes.
 */

export class History {
  readonly dir: string;
  constructor(branch = 'main') {
    this.dir = makeRepo({ branch });
  }
  /** Writes (string) or deletes (null) files and commits them; one clock for every commit of every History. */
  commit(files: Record<string, string | null>, message: string): string {
    for (const [file, content] of Object.entries(files)) {
      const full = path.join(this.dir, file);
      if (content === null) rmSync(full, { force: true });
      else {
        mkdirSync(path.dirname(full), { recursive: true });
        writeFileSync(full, content);
      }
    }
    return addAndCommit(this.dir, ['-q', '--allow-empty', '-m', message], gitEnv());
  }
  git(...args: string[]): string {
    return git(this.dir, ...args);
  }
  /** checkout (creating the branch at `from` when given) */
  branch(name: string, from?: string): void {
    if (from) this.git('checkout', '-q', '-B', name, from);
    else this.git('checkout', '-q', name);
  }
  /** merges `other` into the current branch with a merge commit; returns it */
  merge(other: string, message = `Merge ${other}`): string {
    runSync('git', ['merge', '-q', '--no-ff', '--no-edit', '-m', message, other], { cwd: this.dir, env: gitEnv() });
    return this.git('rev-parse', 'HEAD');
  }
  /** merges `other`; where git conflicts, the files are resolved as given (a person's conflict resolution) */
  mergeResolving(other: string, resolved: Record<string, string>, message = `Merge ${other}`): string {
    try {
      runSync('git', ['merge', '-q', '--no-ff', '--no-edit', '-m', message, other], { cwd: this.dir, env: gitEnv() });
    } catch {
      for (const [file, content] of Object.entries(resolved)) writeFileSync(path.join(this.dir, file), content);
      addAndCommit(this.dir, ['-q', '--no-edit'], gitEnv());
    }
    return this.rev('HEAD');
  }
  /** `git revert --no-edit` of a commit: a person's revert */
  revert(sha: string): string {
    runSync('git', ['revert', '--no-edit', sha], { cwd: this.dir, env: gitEnv() });
    return this.git('rev-parse', 'HEAD');
  }
  rev(ref: string): string {
    return this.git('rev-parse', ref);
  }
}

let clock = Date.parse('2026-11-02T10:00:00Z') / 1000;
function gitEnv(): NodeJS.ProcessEnv {
  clock += 60;
  const date = `${clock} +0000`;
  return { ...process.env, GIT_AUTHOR_NAME: 'Dev', GIT_AUTHOR_EMAIL: 'dev@example.com', GIT_COMMITTER_NAME: 'Dev', GIT_COMMITTER_EMAIL: 'dev@example.com', GIT_AUTHOR_DATE: date, GIT_COMMITTER_DATE: date, GIT_CONFIG_NOSYSTEM: '1' };
}

export interface Backend {
  name: string;
  reader: RepoBackend;
  close(): Promise<void>;
}

/**
 * The repository through every backend: local (the working copy), GitHub (an emulator over a bare
 * clone) and git over smart HTTP (git http-backend over the same bare clone; fetched 2 commits deep
 * without blobs, so that every walk crosses the shallow boundary and deepens on the way).
 */
export async function backends(dir: string): Promise<Backend[]> {
  const bare = path.join(tempDir('lastgood-bare-'), 'repo.git');
  git(path.dirname(bare), 'clone', '-q', '--bare', dir, bare);
  const token = 'ghs_historytesttoken000000000000000000';
  const emulator = await startGitHubEmulator({ bareRepo: bare, owner: 'acme', repo: 'gitops', token });
  const server = await startGitHttpServer({ root: path.dirname(bare) });
  const remote = new RemoteRepo({ url: `${server.url}/repo.git`, depth: 2, backoffMs: 1 });
  return [
    { name: 'local', reader: new LocalRepo(dir), close: async () => {} },
    {
      name: 'github',
      reader: createGitHubBackend({ owner: 'acme', repo: 'gitops', token, baseUrl: emulator.url, writeIntervalMs: 0, retryUnitMs: 1 }),
      close: async () => {
        if (emulator.violations.length) throw new Error(`GitHub emulator: ${emulator.violations.join('; ')}`);
        await emulator.close();
      },
    },
    {
      name: 'git-remote',
      reader: remote,
      close: async () => {
        remote.close();
        await server.close();
      },
    },
  ];
}

/** Evidence for a target from cluster objects, through the real assessors. */
export function evidenceOf(objects: object[], resources?: Array<{ apiVersion: string; kind: string; namespace?: string; name: string }>, now = new Date('2026-11-01T12:05:00Z')): Evidence[] {
  const observed = objects.map((o) => ({ object: o as KubeObject, source: 'test' }));
  const refs = resources ?? observed.map(({ object: o }) => ({ apiVersion: o.apiVersion, kind: o.kind, ...(o.metadata.namespace ? { namespace: o.metadata.namespace } : {}), name: o.metadata.name }));
  return evidenceFor({ resources: refs }, observed, now);
}

/** The engine side of a target: the resources it lists and every object observed (engine objects with their spec). */
export interface EngineSetup {
  resources: Array<{ apiVersion: string; kind: string; namespace?: string; name: string }>;
  objects: object[];
}

export interface Outcome {
  located?: Located;
  refused?: string;
  /** the plan checked against the model of what the engine reads (only with an EngineSetup) */
  verification?: Verification;
  /** the target's files after the planned revert (path → bytes), when a revert was planned */
  after?: Map<string, Buffer>;
  planConflict?: string;
}

/** locate + plan on one backend; the refusal's text when locate refuses. */
export async function locateAndPlan(reader: RepoBackend, paths: string[], evidence: Evidence[], branch = 'main', engine?: EngineSetup): Promise<Outcome> {
  const head = await reader.head(branch);
  const model = engine ? modelTarget({ reader, target: { name: 'target', paths, resources: engine.resources }, observed: engine.objects.map((o) => ({ object: o as KubeObject, source: 'test' })) }) : undefined;
  let located: Located;
  try {
    located = await locate({ reader, branch, head, paths, evidence, target: 'target', ...(model ? { model } : {}) });
  } catch (error) {
    if ((error as Error).name === 'RevertImpossible') return { refused: `${(error as Error).message} ${((error as { details?: string[] }).details ?? []).join('; ')}` };
    throw error;
  }
  try {
    const plan = await planRevert(reader, { head, ...revertInput(located, paths) });
    const files = await reader.listFiles(head, paths);
    const after = new Map<string, Buffer>();
    for (const [p, e] of files) after.set(p, Buffer.from(await reader.readBlob(e.oid)));
    for (const f of plan.files) {
      if ('delete' in f) after.delete(f.path);
      else after.set(f.path, Buffer.from('content' in f ? f.content : await reader.readBlob(f.oid)));
    }
    if (!model) return { located, after };
    const verification = await verifyPlan({ modeler: model, head, lastKnownGood: located.lastKnownGood, files: plan.files, paths, evidence, how: located.how, bad: located.bad });
    return { located, after, verification, ...(verification.refused ? { refused: `verify: ${verification.refused}` } : {}) };
  } catch (error) {
    return { located, planConflict: (error as Error).message };
  }
}

/**
 * The oracle: native `git revert` of what locate asked for, in a throwaway worktree at the head
 * (a range's net change is reverted as one synthetic commit from the applied tree to the attempted
 * tree). Returns the target's files after it, or the conflict.
 */
export function gitRevertOracle(dir: string, located: Located, paths: string[], branch = 'main'): { after?: Map<string, Buffer>; conflict?: true } {
  const work = path.join(tempDir('lastgood-oracle-'), 'wt');
  git(dir, 'worktree', 'add', '-q', '--detach', work, branch);
  try {
    const steps = located.revert.kind === 'range' ? [{ base: synthetic(dir, located.revert.base, located.revert.theirs), theirs: located.revert.theirs, merge: false }] : located.revert.steps.map((s) => ({ ...s, merge: git(dir, 'rev-list', '--parents', '-n', '1', s.base).split(' ').length > 2 }));
    for (const s of steps) {
      try {
        runSync('git', ['revert', '--no-commit', ...(s.merge ? ['-m', '1'] : []), s.base], { cwd: work, env: gitEnv() });
      } catch {
        return { conflict: true };
      }
    }
    // a range is reverted on the files the bad commits changed only: the others stay as at the head
    if (located.revert.kind === 'range') {
      const files = new Set(located.revert.files);
      const changed = runSync('git', ['diff', '--name-only', 'HEAD'], { cwd: work }).split('\n').filter(Boolean);
      const added = runSync('git', ['diff', '--name-only', '--cached', '--diff-filter=A', 'HEAD'], { cwd: work }).split('\n').filter(Boolean);
      for (const f of changed.filter((c) => !files.has(c))) {
        if (added.includes(f)) runSync('git', ['rm', '-q', '-f', '--', f], { cwd: work });
        else runSync('git', ['checkout', '-q', 'HEAD', '--', f], { cwd: work });
      }
    }
    const after = new Map<string, Buffer>();
    for (const p of paths) collect(work, p.replace(/\/+$/, ''), after);
    return { after };
  } finally {
    rmSync(work, { recursive: true, force: true });
    git(dir, 'worktree', 'prune');
  }
}

/** A commit whose tree is `tree`'s and whose parent is `parent`: a range squashed into one commit. */
function synthetic(dir: string, tree: string, parent: string): string {
  return runSync('git', ['commit-tree', `${tree}^{tree}`, '-p', parent, '-m', 'range'], { cwd: dir, env: gitEnv() }).trim();
}

function collect(root: string, rel: string, out: Map<string, Buffer>): void {
  const full = path.join(root, rel);
  if (!existsSync(full) && !isLink(full)) return;
  // a symlink is its target's text, as git stores it
  if (isLink(full)) out.set(rel, Buffer.from(readlinkSync(full)));
  else if (statSync(full).isDirectory()) {
    for (const name of readdirSync(full)) collect(root, rel ? `${rel}/${name}` : name, out);
  } else out.set(rel, readFileSync(full));
}

function isLink(p: string): boolean {
  try {
    return lstatSync(p).isSymbolicLink();
  } catch {
    return false;
  }
}

/** Bytes as text for readable assertion failures. */
export function asText(files: Map<string, Buffer> | undefined): Record<string, string> {
  return Object.fromEntries([...(files ?? new Map<string, Buffer>())].map(([k, v]) => [k, v.toString('utf8')]).sort(([a], [b]) => (a! < b! ? -1 : 1)));
}

/**
 * locate + plan on every backend: they must agree (bad commits, last-known-good, refusal, bytes),
 * and where a revert was planned, native `git revert` of the same commits must write the same bytes.
 */
export async function everyBackend(t: ExecutionContext, h: History, paths: string[], evidence: Evidence[], engine?: EngineSetup): Promise<Outcome> {
  const all = await backends(h.dir);
  const outcomes: Outcome[] = [];
  try {
    for (const b of all) outcomes.push(await locateAndPlan(b.reader, paths, evidence, 'main', engine));
  } finally {
    for (const b of all) await b.close();
  }
  const [local, ...others] = outcomes;
  for (const [i, o] of others.entries()) {
    const name = all[i + 1]!.name;
    t.deepEqual(o.located?.bad.map((c) => c.oid), local!.located?.bad.map((c) => c.oid), `${name}: same bad commits as local`);
    t.is(o.located?.lastKnownGood, local!.located?.lastKnownGood, `${name}: same last-known-good`);
    t.is(o.refused, local!.refused, `${name}: refuses alike, with the same reason`);
    t.deepEqual(asText(o.after), asText(local!.after), `${name}: same bytes planned`);
  }
  if (local!.located && local!.after && !local!.refused) {
    const oracle = gitRevertOracle(h.dir, local!.located, paths);
    t.falsy(oracle.conflict, 'git revert of the same commits is clean');
    t.deepEqual(asText(local!.after), asText(oracle.after), 'the bytes git revert writes');
  }
  return local!;
}
