import fs from 'node:fs';
import path from 'node:path';
import git from 'isomorphic-git';
import { InputError, RemoteError, StaleHeadError } from '../errors.ts';
import { reviewBranch } from './branch.ts';
import { openLocalNotes, type NotesStore } from '../history/notes.ts';
import { entryAt, filesUnder } from './tree-walk.ts';
import type { Change, CommitInfo, DeliveryMode, DeliveryResult, FileChange, FileEntry, RepoBackend, TreeItem } from '../repo/types.ts';

interface Layout {
  /** working tree, undefined for a bare repository */
  dir: string | undefined;
  gitdir: string;
}

/** A working copy (".git" folder or file) or a bare repository at `repoPath`. */
export function findLayout(repoPath: string): Layout {
  const dotGit = path.join(repoPath, '.git');
  let st: fs.Stats | undefined;
  try {
    st = fs.statSync(dotGit);
  } catch {
    st = undefined;
  }
  if (st?.isDirectory()) return { dir: repoPath, gitdir: dotGit };
  if (st?.isFile()) {
    const m = /^gitdir:\s*(.+)$/m.exec(fs.readFileSync(dotGit, 'utf8'));
    if (m) return { dir: repoPath, gitdir: path.resolve(repoPath, m[1]!.trim()) };
  }
  if (fs.existsSync(path.join(repoPath, 'HEAD')) && fs.existsSync(path.join(repoPath, 'objects'))) return { dir: undefined, gitdir: repoPath };
  throw new InputError('not a git repository (no .git folder, and not a bare repository)', { file: repoPath });
}

const SYMLINK = '120000';
const TREE = '040000';

/**
 * Local repository backend on isomorphic-git: reads and writes the object database directly,
 * so a bare repository works as well as a working copy. One shared cache per repository
 * (isomorphic-git docs/cache.md: without it, every call re-parses the packfiles).
 */
export class LocalRepo implements RepoBackend {
  readonly kind = 'local';
  readonly description: string;
  readonly layout: Layout;
  readonly cache: object = {};
  private readonly trees = new Map<string, TreeItem[]>();
  /** commits and trees are immutable: parsed once per backend */
  private readonly commits = new Map<string, CommitInfo>();

  constructor(repoPath: string) {
    this.layout = findLayout(repoPath);
    this.description = repoPath;
  }

  private get base() {
    return { fs, gitdir: this.layout.gitdir, cache: this.cache };
  }

  async head(branch: string): Promise<string> {
    try {
      return await git.resolveRef({ fs, gitdir: this.layout.gitdir, ref: `refs/heads/${branch}` });
    } catch (error) {
      throw new InputError(`branch "${branch}" does not exist in the repository`, { file: this.description, cause: error });
    }
  }

  async resolveCommit(shaOrPrefix: string): Promise<string | undefined> {
    const sha = shaOrPrefix.toLowerCase();
    if (!/^[0-9a-f]{4,40}$/.test(sha)) return undefined;
    try {
      const oid = sha.length === 40 ? sha : await git.expandOid({ ...this.base, oid: sha });
      await git.readCommit({ ...this.base, oid });
      return oid;
    } catch {
      return undefined;
    }
  }

  async readCommit(oid: string): Promise<CommitInfo> {
    const known = this.commits.get(oid);
    if (known) return known;
    const { commit } = await git.readCommit({ ...this.base, oid });
    const info: CommitInfo = {
      oid,
      parents: commit.parent,
      message: commit.message,
      tree: commit.tree,
      author: { ...commit.author },
      committer: { ...commit.committer },
    };
    this.commits.set(oid, info);
    return info;
  }

  async listFiles(commit: string, paths: string[]): Promise<Map<string, FileEntry>> {
    return filesUnder(this.readTreeBound, (await this.readCommit(commit)).tree, paths);
  }

  async pathOid(commit: string, p: string): Promise<string | undefined> {
    const { tree } = await this.readCommit(commit);
    return this.oidInTree(tree, p);
  }

  private async oidInTree(tree: string, p: string): Promise<string | undefined> {
    return (await entryAt(this.readTreeBound, tree, p.replace(/\/+$/, '')))?.oid;
  }

  private readonly readTreeBound = (oid: string) => this.readTreeEntries(oid);

  readTree(oid: string): Promise<TreeItem[]> {
    return this.readTreeEntries(oid);
  }

  private async readTreeEntries(oid: string): Promise<TreeItem[]> {
    let entries = this.trees.get(oid);
    if (!entries) {
      const { tree } = await git.readTree({ ...this.base, oid });
      entries = tree.map((e) => ({ path: e.path, oid: e.oid, mode: e.mode, type: e.type }));
      this.trees.set(oid, entries);
    }
    return entries;
  }

  notes(): NotesStore {
    return openLocalNotes({ fs, dir: this.layout.dir, gitdir: this.layout.gitdir });
  }

  async readBlob(oid: string): Promise<Uint8Array> {
    return (await git.readBlob({ ...this.base, oid })).blob;
  }

  async isAncestor(ancestor: string, descendant: string): Promise<boolean> {
    if (ancestor === descendant) return true;
    return git.isDescendent({ ...this.base, oid: descendant, ancestor, depth: -1 });
  }

  /** Writes the change's tree and commit objects; returns the new commit oid. Refs untouched. */
  async writeChangeCommit(change: Change): Promise<string> {
    const parentTree = (await this.readCommit(change.parent)).tree;
    const tree = (await this.editTree(parentTree, change.files.map((f) => ({ parts: f.path.split('/'), change: f })))) ?? (await git.writeTree({ fs, gitdir: this.layout.gitdir, tree: [] }));
    return git.writeCommit({
      fs,
      gitdir: this.layout.gitdir,
      commit: { tree, parent: [change.parent], author: change.author, committer: change.author, message: change.message },
    });
  }

  /** Applies file changes to a tree, bottom-up; returns undefined when the tree ends up empty. */
  private async editTree(treeOid: string | undefined, edits: Array<{ parts: string[]; change: FileChange }>): Promise<string | undefined> {
    const entries = new Map((treeOid ? await this.readTreeEntries(treeOid) : []).map((e) => [e.path, { ...e }]));
    const deeper = new Map<string, Array<{ parts: string[]; change: FileChange }>>();
    for (const edit of edits) {
      const [name, ...rest] = edit.parts;
      if (!name) continue;
      if (rest.length > 0) {
        deeper.set(name, [...(deeper.get(name) ?? []), { parts: rest, change: edit.change }]);
      } else if ('delete' in edit.change) {
        entries.delete(name);
      } else {
        const oid = 'oid' in edit.change ? edit.change.oid : await git.writeBlob({ fs, gitdir: this.layout.gitdir, blob: edit.change.content });
        entries.set(name, { path: name, oid, mode: edit.change.mode, type: 'blob' });
      }
    }
    for (const [name, sub] of deeper) {
      const existing = entries.get(name);
      const oid = await this.editTree(existing?.type === 'tree' ? existing.oid : undefined, sub);
      if (oid) entries.set(name, { path: name, oid, mode: TREE, type: 'tree' });
      else entries.delete(name);
    }
    if (entries.size === 0) return undefined;
    return git.writeTree({ fs, gitdir: this.layout.gitdir, tree: [...entries.values()].map((e) => ({ path: e.path, oid: e.oid, mode: e.mode, type: e.type as 'blob' | 'tree' })) });
  }

  /** Files in the target paths that differ from HEAD in the working tree or the index. */
  async uncommittedChanges(paths: string[]): Promise<string[]> {
    if (!this.layout.dir) return [];
    const rows = await git.statusMatrix({ fs, dir: this.layout.dir, gitdir: this.layout.gitdir, cache: this.cache, refresh: false, filepaths: paths.map((p) => p.replace(/\/+$/, '')) });
    return rows.filter(([, h, w, s]) => !(h === 1 && w === 1 && s === 1)).map(([f]) => f);
  }

  async currentBranch(): Promise<string | undefined> {
    if (!this.layout.dir) return undefined;
    return (await git.currentBranch({ fs, dir: this.layout.dir, gitdir: this.layout.gitdir })) ?? undefined;
  }

  async deliver(change: Change, mode: DeliveryMode): Promise<DeliveryResult> {
    const checkedOut = (await this.currentBranch()) === change.branch;
    if (mode === 'commit' && checkedOut) {
      const dirty = await this.uncommittedChanges(change.paths ?? change.files.map((f) => f.path));
      if (dirty.length > 0) {
        throw new InputError(`uncommitted changes in the target paths (${dirty.slice(0, 5).join(', ')}${dirty.length > 5 ? ', …' : ''}): commit or discard them first; nothing was written`, { file: this.description });
      }
    }
    const current = await this.head(change.branch);
    if (current !== change.parent) throw new StaleHeadError(change.branch, current);
    const commit = await this.writeChangeCommit(change);
    if (mode === 'pull-request') {
      const branch = reviewBranch(change);
      const existing = await git.resolveRef({ fs, gitdir: this.layout.gitdir, ref: `refs/heads/${branch}` }).catch(() => undefined);
      if (existing && (await this.readCommit(existing)).tree === (await this.readCommit(commit)).tree) {
        return { commit: existing, branch, created: false };
      }
      await this.writeRefChecked(branch, commit, existing);
      return { commit, branch, created: true };
    }
    await this.writeRefChecked(change.branch, commit, change.parent);
    if (checkedOut) await this.syncWorkingCopy(change);
    return { commit, branch: change.branch, created: true };
  }

  /** Compare-and-swap on a branch: fails (StaleHeadError) when it moved since `expected`. */
  private async writeRefChecked(branch: string, value: string, expected: string | undefined): Promise<void> {
    const ref = `refs/heads/${branch}`;
    const now = await git.resolveRef({ fs, gitdir: this.layout.gitdir, ref }).catch(() => undefined);
    if (now !== expected) throw new StaleHeadError(branch, now ?? '(deleted)');
    try {
      await git.writeRef({ fs, gitdir: this.layout.gitdir, ref, value, force: true });
    } catch (error) {
      throw new RemoteError('git', `cannot update ${ref}: ${(error as Error).message}`, { cause: error });
    }
  }

  /** The branch is checked out: make the index and working tree follow the new commit for the changed files. */
  private async syncWorkingCopy(change: Change): Promise<void> {
    const dir = this.layout.dir!;
    for (const f of change.files) {
      const file = path.join(dir, f.path);
      if ('delete' in f) {
        fs.rmSync(file, { force: true });
        await git.remove({ fs, dir, gitdir: this.layout.gitdir, filepath: f.path, cache: this.cache });
        pruneEmptyDirs(dir, path.dirname(file));
        continue;
      }
      const content = 'content' in f ? f.content : await this.readBlob(f.oid);
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.rmSync(file, { force: true });
      if (f.mode === SYMLINK) fs.symlinkSync(Buffer.from(content).toString('utf8'), file);
      else fs.writeFileSync(file, content, { mode: f.mode === '100755' ? 0o755 : 0o644 });
      await git.add({ fs, dir, gitdir: this.layout.gitdir, filepath: f.path, cache: this.cache });
    }
  }
}

function pruneEmptyDirs(root: string, dir: string): void {
  while (dir.startsWith(root) && dir !== root) {
    try {
      if (fs.readdirSync(dir).length > 0) return;
      fs.rmdirSync(dir);
    } catch {
      return;
    }
    dir = path.dirname(dir);
  }
}

export async function openLocalRepo(repoPath: string): Promise<LocalRepo> {
  return new LocalRepo(repoPath);
}
