import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';
import { spawnRelayed } from './spawner.ts';

/**
 * The git plumbing behind the GitHub emulator: every object the emulator serves or creates is a
 * real object in a real bare repository, read and written by git itself (cat-file, ls-tree,
 * hash-object, mktree, update-ref), so `git log` / `git cat-file` see exactly what the API made.
 * Everything is asynchronous: the emulator runs in the test's own process next to the client.
 */

export class GitFailure extends Error {
  readonly code: number | null;
  readonly stderr: string;
  constructor(args: string[], code: number | null, stderr: string) {
    super(`git ${args.join(' ')} failed (${code}): ${stderr.trim()}`);
    this.code = code;
    this.stderr = stderr;
  }
}

export interface Signature {
  name: string;
  email: string;
  /** seconds since the epoch */
  time: number;
  /** git's form, "+0000" */
  tz: string;
}

export interface RawCommit {
  sha: string;
  tree: string;
  parents: string[];
  author: Signature;
  committer: Signature;
  message: string;
}

export interface TreeEntry {
  mode: string;
  type: 'blob' | 'tree' | 'commit';
  sha: string;
  /** blob size, undefined for trees and submodules */
  size?: number;
  path: string;
}

const SHA = /^[0-9a-f]{40}$/;

/**
 * Reads go through one long-lived `git cat-file --batch` (spawning git costs tens of ms, and the
 * emulator answers hundreds of requests); objects are written as loose objects directly (zlib of
 * "<type> <size>\0<content>", named by its SHA-1: git's own format); refs are read from the files
 * git keeps them in; ref updates and history walks (rev-list, merge-base) run git itself.
 */
export class BareRepo {
  readonly gitdir: string;
  /** git processes started (history walks and ref updates; reads share one) */
  spawned = 0;
  private batch: ReturnType<typeof spawn> | undefined;
  private pending: Array<(r: { sha: string; type: string; content: Buffer } | undefined) => void> = [];
  private buffered = Buffer.alloc(0);

  constructor(gitdir: string) {
    this.gitdir = gitdir;
  }

  run(args: string[], input?: Buffer | string, env: Record<string, string> = {}): Promise<Buffer> {
    this.spawned++;
    return new Promise((resolve, reject) => {
      // started by the worker's small relay process: a fork of the worker costs in proportion to its memory (support/spawner.ts)
      const child = spawnRelayed('git', ['--git-dir', this.gitdir, ...args], {
        env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_TERMINAL_PROMPT: '0', ...env },
      });
      const out: Buffer[] = [];
      let err = '';
      child.stdout.on('data', (c: Buffer) => out.push(c));
      child.stderr.on('data', (c: Buffer) => (err += c.toString()));
      child.on('error', reject);
      child.on('close', (code) => (code === 0 ? resolve(Buffer.concat(out)) : reject(new GitFailure(args, code, err))));
      child.stdin.on('error', () => {});
      child.stdin.end(input ?? '');
    });
  }

  async text(args: string[], input?: Buffer | string): Promise<string> {
    return (await this.run(args, input)).toString('utf8').replace(/\n$/, '');
  }

  /** One object by name (SHA, SHA prefix, `X^{tree}`), through the shared cat-file process. */
  object(name: string): Promise<{ sha: string; type: string; content: Buffer } | undefined> {
    if (/[\n\r]/.test(name) || name === '') return Promise.resolve(undefined);
    if (!this.batch) {
      this.spawned++;
      const child = spawn('git', ['--git-dir', this.gitdir, 'cat-file', '--batch'], { stdio: ['pipe', 'pipe', 'ignore'], env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1' } });
      child.stdout!.on('data', (chunk: Buffer) => {
        this.buffered = Buffer.concat([this.buffered, chunk]);
        this.drain();
      });
      child.unref();
      (child.stdout as unknown as { unref?: () => void }).unref?.();
      this.batch = child;
    }
    return new Promise((resolve) => {
      this.pending.push(resolve);
      this.batch!.stdin!.write(`${name}\n`);
    });
  }

  private drain(): void {
    for (;;) {
      const eol = this.buffered.indexOf(10);
      if (eol < 0) return;
      const header = this.buffered.subarray(0, eol).toString('utf8').split(' ');
      // "<sha> <type> <size>" then the content and a newline; "<name> missing" / "<name> ambiguous"
      if (header.length !== 3 || !/^\d+$/.test(header[2]!)) {
        this.buffered = this.buffered.subarray(eol + 1);
        this.pending.shift()?.(undefined);
        continue;
      }
      const size = Number(header[2]);
      if (this.buffered.length < eol + 1 + size + 1) return;
      const content = Buffer.from(this.buffered.subarray(eol + 1, eol + 1 + size));
      this.buffered = this.buffered.subarray(eol + 1 + size + 1);
      this.pending.shift()?.({ sha: header[0]!, type: header[1]!, content });
    }
  }

  close(): void {
    this.batch?.stdin?.end();
    this.batch?.kill();
    this.batch = undefined;
  }

  /** The object's type, or undefined when the repository does not have it. */
  async typeOf(sha: string): Promise<string | undefined> {
    if (!SHA.test(sha)) return undefined;
    return (await this.object(sha))?.type;
  }

  /** The value of a full ref name (loose file, else packed-refs), undefined when absent. */
  readRef(ref: string): string | undefined {
    try {
      const value = readFileSync(join(this.gitdir, ref), 'utf8').trim();
      if (value.startsWith('ref: ')) return this.readRef(value.slice(5));
      if (SHA.test(value)) return value;
    } catch {
      // not a loose ref
    }
    return this.packedRefs().get(ref);
  }

  private packedRefs(): Map<string, string> {
    const map = new Map<string, string>();
    let text = '';
    try {
      text = readFileSync(join(this.gitdir, 'packed-refs'), 'utf8');
    } catch {
      return map;
    }
    for (const line of text.split('\n')) {
      const m = /^([0-9a-f]{40}) (refs\/\S+)$/.exec(line);
      if (m) map.set(m[2]!, m[1]!);
    }
    return map;
  }

  /** A full ref, a branch name, a SHA or SHA prefix (with an optional `^{tree}` peel) → a full SHA. */
  async resolve(spec: string, peel = ''): Promise<string | undefined> {
    const viaRef = spec.startsWith('refs/') ? this.readRef(spec) : (this.readRef(`refs/heads/${spec}`) ?? this.readRef(`refs/tags/${spec}`));
    const name = viaRef ?? (/^[0-9a-f]{4,40}$/.test(spec) ? spec : undefined);
    if (!name) return undefined;
    return (await this.object(`${name}${peel}`))?.sha;
  }

  async refs(): Promise<Array<{ ref: string; sha: string; type: string }>> {
    const found = new Map(this.packedRefs());
    const walk = (dir: string, prefix: string) => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const full = join(dir, entry.name);
        if (entry.isDirectory()) walk(full, `${prefix}${entry.name}/`);
        else if (!entry.name.endsWith('.lock')) {
          const value = readFileSync(full, 'utf8').trim();
          if (SHA.test(value)) found.set(`${prefix}${entry.name}`, value);
        }
      }
    };
    walk(join(this.gitdir, 'refs'), 'refs/');
    const out: Array<{ ref: string; sha: string; type: string }> = [];
    for (const [ref, sha] of [...found].sort(([a], [b]) => (a < b ? -1 : 1))) out.push({ ref, sha, type: (await this.typeOf(sha)) ?? 'commit' });
    return out;
  }

  /** Compare-and-swap on a ref: `expected` undefined means "must not exist yet". Throws GitFailure when it moved. */
  async updateRef(ref: string, sha: string, expected: string | undefined): Promise<void> {
    await this.run(['update-ref', ref, sha, expected ?? '']);
  }

  async deleteRef(ref: string): Promise<void> {
    await this.run(['update-ref', '-d', ref]);
  }

  async isAncestor(ancestor: string, descendant: string): Promise<boolean> {
    try {
      await this.run(['merge-base', '--is-ancestor', ancestor, descendant]);
      return true;
    } catch (error) {
      if (error instanceof GitFailure && error.code === 1) return false;
      throw error;
    }
  }

  async readBlob(sha: string): Promise<Buffer> {
    const found = await this.object(sha);
    if (found?.type !== 'blob') throw new GitFailure(['cat-file', 'blob', sha], 128, 'not a blob');
    return found.content;
  }

  /** Writes a loose object exactly as git does; returns its SHA-1. */
  writeObject(type: 'blob' | 'tree' | 'commit', content: Buffer): string {
    const raw = Buffer.concat([Buffer.from(`${type} ${content.length}\0`), content]);
    const sha = createHash('sha1').update(raw).digest('hex');
    const dir = join(this.gitdir, 'objects', sha.slice(0, 2));
    const file = join(dir, sha.slice(2));
    if (!existsSync(file)) {
      mkdirSync(dir, { recursive: true });
      const tmp = `${file}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
      writeFileSync(tmp, deflateSync(raw), { mode: 0o444 });
      renameSync(tmp, file);
    }
    return sha;
  }

  async writeBlob(content: Buffer): Promise<string> {
    return this.writeObject('blob', content);
  }

  async readTree(sha: string, recursive = false): Promise<TreeEntry[]> {
    if (!recursive) {
      const found = await this.object(sha);
      if (found?.type !== 'tree') throw new GitFailure(['ls-tree', sha], 128, 'not a tree');
      return parseTree(found.content);
    }
    const out = await this.text(['ls-tree', '-z', '-l', '-r', '-t', sha]);
    return out
      .split('\0')
      .filter(Boolean)
      .map((record) => {
        const tab = record.indexOf('\t');
        const [mode = '', type = '', objectSha = '', size = '-'] = record.slice(0, tab).trim().split(/\s+/);
        return { mode, type: type as TreeEntry['type'], sha: objectSha, ...(size === '-' ? {} : { size: Number(size) }), path: record.slice(tab + 1) };
      });
  }

  /** Writes a tree from its direct entries (names without "/"), sorted as git sorts them; returns its SHA. */
  async writeTree(entries: Array<{ mode: string; type: string; sha: string; name: string }>): Promise<string> {
    const key = (e: { type: string; name: string }) => (e.type === 'tree' ? `${e.name}/` : e.name);
    const sorted = [...entries].sort((a, b) => Buffer.compare(Buffer.from(key(a)), Buffer.from(key(b))));
    const parts = sorted.map((e) => Buffer.concat([Buffer.from(`${e.mode.replace(/^0+/, '')} ${e.name}\0`), Buffer.from(e.sha, 'hex')]));
    return this.writeObject('tree', Buffer.concat(parts));
  }

  async readCommit(sha: string): Promise<RawCommit> {
    const found = await this.object(sha);
    if (found?.type !== 'commit') throw new GitFailure(['cat-file', 'commit', sha], 128, 'not a commit');
    return parseCommit(sha, found.content.toString('utf8'));
  }

  /** Many commits, in the order given. */
  async readCommits(shas: string[]): Promise<RawCommit[]> {
    return Promise.all(shas.map((sha) => this.readCommit(sha)));
  }

  /** `gpgsig`: an armored signature, written as git writes one (a header whose continuation lines start with a space). */
  async writeCommit(c: Omit<RawCommit, 'sha'> & { gpgsig?: string }): Promise<string> {
    const lines = [`tree ${c.tree}`, ...c.parents.map((p) => `parent ${p}`), `author ${formatSignature(c.author)}`, `committer ${formatSignature(c.committer)}`];
    if (c.gpgsig) lines.push(`gpgsig ${c.gpgsig.split('\n').join('\n ')}`);
    return this.writeObject('commit', Buffer.from(`${lines.join('\n')}\n\n${c.message}`));
  }

  /** SHAs from `from` following git log's rules (history simplification when `path` is given). */
  async log(from: string, path?: string): Promise<string[]> {
    const out = await this.text(['rev-list', from, '--', ...(path ? [path] : [])]);
    return out.split('\n').filter(Boolean);
  }

  async count(range: string): Promise<number> {
    return Number(await this.text(['rev-list', '--count', range]));
  }

  async mergeBase(a: string, b: string): Promise<string | undefined> {
    try {
      return await this.text(['merge-base', a, b]);
    } catch {
      return undefined;
    }
  }

  /** A 3-way merge without a work tree (git >= 2.38); undefined on conflicts. */
  async mergeTrees(ours: string, theirs: string): Promise<string | undefined> {
    try {
      return (await this.text(['merge-tree', '--write-tree', ours, theirs])).split('\n')[0];
    } catch (error) {
      if (error instanceof GitFailure && error.code === 1) return undefined;
      throw error;
    }
  }
}

/** git's tree format: "<mode> <name>\0<20-byte sha>" per entry; modes without leading zero. */
function parseTree(content: Buffer): TreeEntry[] {
  const entries: TreeEntry[] = [];
  let at = 0;
  while (at < content.length) {
    const space = content.indexOf(32, at);
    const nul = content.indexOf(0, space);
    const mode = content.subarray(at, space).toString('utf8').padStart(6, '0');
    const path = content.subarray(space + 1, nul).toString('utf8');
    const sha = content.subarray(nul + 1, nul + 21).toString('hex');
    const type = mode === '040000' ? 'tree' : mode === '160000' ? 'commit' : 'blob';
    entries.push({ mode, type, sha, path });
    at = nul + 21;
  }
  return entries;
}

function parseCommit(sha: string, raw: string): RawCommit {
  const split = raw.indexOf('\n\n');
  const header = split < 0 ? raw : raw.slice(0, split);
  const message = split < 0 ? '' : raw.slice(split + 2);
  let tree = '';
  const parents: string[] = [];
  let author: Signature | undefined;
  let committer: Signature | undefined;
  for (const line of header.split('\n')) {
    if (line.startsWith('tree ')) tree = line.slice(5);
    else if (line.startsWith('parent ')) parents.push(line.slice(7));
    else if (line.startsWith('author ')) author = parseSignature(line.slice(7));
    else if (line.startsWith('committer ')) committer = parseSignature(line.slice(10));
  }
  if (!author || !committer) throw new Error(`commit ${sha} has no author or committer`);
  return { sha, tree, parents, author, committer, message };
}

function parseSignature(text: string): Signature {
  const m = /^(.*) <([^>]*)> (\d+) ([+-]\d{4})$/.exec(text);
  if (!m) throw new Error(`bad signature: ${text}`);
  return { name: m[1]!, email: m[2]!, time: Number(m[3]), tz: m[4]! };
}

function formatSignature(s: Signature): string {
  return `${s.name} <${s.email}> ${s.time} ${s.tz}`;
}

/** "2026-11-01T10:00:00Z" / "…+02:00" → seconds and git's "+0200"; GitHub accepts ISO 8601. */
export function parseIsoDate(date: string): { time: number; tz: string } | undefined {
  const ms = Date.parse(date);
  if (Number.isNaN(ms)) return undefined;
  const m = /([+-])(\d{2}):?(\d{2})$/.exec(date);
  return { time: Math.floor(ms / 1000), tz: m ? `${m[1]}${m[2]}${m[3]}` : '+0000' };
}

/** GitHub's own form: UTC, no fraction ("2026-11-01T10:00:00Z"). */
export function isoDate(seconds: number): string {
  return new Date(seconds * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** A tree being edited: its entries as read, and the subtrees opened for edits (written back bottom-up). */
export interface TreeNode {
  entries: Map<string, { mode: string; type: string; sha: string }>;
  children: Map<string, TreeNode>;
}

/** Opens a tree for editing (undefined: an empty tree). */
export async function loadTreeNode(git: BareRepo, sha: string | undefined): Promise<TreeNode> {
  return { entries: new Map(sha ? (await git.readTree(sha)).map((e) => [e.path, { mode: e.mode, type: e.type, sha: e.sha }]) : []), children: new Map() };
}

/** Writes an edited tree bottom-up; an emptied subtree disappears, an emptied root is the empty tree. */
export async function writeTreeNode(git: BareRepo, root: TreeNode): Promise<string> {
  const write = async (node: TreeNode): Promise<string | undefined> => {
    for (const [name, child] of node.children) {
      const sha = await write(child);
      if (sha) node.entries.set(name, { mode: '040000', type: 'tree', sha });
      else node.entries.delete(name);
    }
    if (node.entries.size === 0) return undefined;
    return git.writeTree([...node.entries].map(([name, e]) => ({ ...e, name })));
  };
  return (await write(root)) ?? (await git.writeTree([]));
}
