import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import git from 'isomorphic-git';
import { GitIndexManager } from 'isomorphic-git/managers';
import { FileSystem } from 'isomorphic-git/models';
import { diskError, InputError, RemoteError, StaleHeadError } from '../../errors.ts';
import { reviewBranch } from '../branch.ts';
import type { NotesStore } from '../../history/notes.ts';
import { openLocalNotes } from './notes.ts';
import { lastgoodTarget } from '../../history/trailers.ts';
import { compareAndSwapRef, LockFile, pauseForTest, readHeadBranch, readRef, replaceFile, type ReflogEntry } from './refs.ts';
import { checkEntryName, entryAt, filesUnder, joinPath } from '../../repo/tree-walk.ts';
import { Lru } from '../../repo/lru.ts';
import type { Change, CommitInfo, DeliveryMode, DeliveryResult, FileChange, FileEntry, RepoBackend, TreeItem } from '../../repo/types.ts';
import { MissingObjectError, ObjectStore, parseCommit, parseTree, serializeCommit, serializeTree, writeLooseObject } from './object-store.ts';

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
    if (m) {
      const gitdir = path.resolve(repoPath, m[1]!.trim());
      // a linked worktree (git worktree add): its branches, objects and notes are in the main
      // repository's folder (gitdir/commondir), which isomorphic-git does not follow; read alone,
      // every branch would be "missing"
      if (fs.existsSync(path.join(gitdir, 'commondir'))) {
        const common = path.resolve(gitdir, fs.readFileSync(path.join(gitdir, 'commondir'), 'utf8').trim());
        throw new InputError(`a linked worktree (git worktree add), whose branches live in ${common}: lastgood does not write through a linked worktree; give the main working copy (or ${common} itself, or the repository's URL) as the repository`, { file: repoPath });
      }
      return { dir: repoPath, gitdir };
    }
  }
  if (fs.existsSync(path.join(repoPath, 'HEAD')) && fs.existsSync(path.join(repoPath, 'objects'))) return { dir: undefined, gitdir: repoPath };
  throw new InputError('not a git repository (no .git folder, and not a bare repository)', { file: repoPath });
}

const SYMLINK = '120000';
const TREE = '040000';
/**
 * Parsed trees and commits kept per repository: enough for a revert's walks, bounded by what they
 * hold (a tree by its entries: a monorepo's 2,200-folder `apps/` read at every revision of a walk
 * is ~0.3 MB each; issue 22).
 */
const TREE_ENTRIES_KEPT = 100_000;
const COMMITS_KEPT = 50_000;

function notA(want: string, oid: string, is: string): never {
  throw new InputError(`${oid} is a ${is}, not a ${want}`);
}
/** where work-tree files are written before they are renamed into place (inside the git folder: never in the work tree) */
const TEMP_DIR = 'lastgood-tmp';
/** the temporary files lastgood wrote beside their destination (an older lastgood; a work tree on another file system) */
const LEFTOVER = /^\..+\.lastgood-([0-9a-f]{12}|link)$/;

/**
 * Local repository backend: reads the object database directly (object-store.ts: packs through
 * their index, native zlib, bounded memory) and writes it with isomorphic-git, so a bare
 * repository works as well as a working copy. isomorphic-git keeps one shared cache per
 * repository for what it still reads (docs/cache.md: without it, every call re-parses the packfiles).
 */
export class LocalRepo implements RepoBackend {
  readonly kind = 'local';
  readonly description: string;
  readonly layout: Layout;
  readonly cache: object = {};
  /** the object database, read directly */
  readonly objects: ObjectStore;
  /** commits and trees are immutable: the recently parsed ones are kept (a bounded number) */
  private readonly trees = new Lru<string, TreeItem[]>(TREE_ENTRIES_KEPT, (t) => t.length + 1);
  private readonly commits = new Lru<string, CommitInfo>(COMMITS_KEPT);
  /** branch heads whose working copy was found consistent (see refuseHalfUpdatedWorkingCopy) */
  private readonly consistentHeads = new Set<string>();

  /**
   * `explainMissing`: an object the repository lacks is bad input that says what the repository is
   * (a person's clone: shallow, partial, damaged); without it, the MissingObjectError a mirror that
   * fetches what it lacks (git-remote/remote-repo.ts) catches.
   */
  constructor(repoPath: string, opts: { explainMissing?: boolean } = {}) {
    this.layout = findLayout(repoPath);
    // a person's repository is checked; the git backend's mirror is lastgood's own (SHA-1, fetched)
    if (opts.explainMissing) refuseSha256(this.layout.gitdir, repoPath);
    this.description = repoPath;
    this.objects = new ObjectStore(this.layout.gitdir, opts.explainMissing ? (oid) => missingObject(this.layout.gitdir, repoPath, oid) : undefined);
  }

  private get base() {
    return { fs, gitdir: this.layout.gitdir, cache: this.cache };
  }

  /**
   * The branch's SHA, read as git reads it (refs.ts): a broken ref is refused (exit 2), never read
   * around. In a working copy with the branch checked out, a half-finished update of the working
   * copy by an interrupted run is refused too, with the way to finish it.
   */
  async head(branch: string): Promise<string> {
    const oid = await readRef(this.layout.gitdir, `refs/heads/${branch}`);
    if (oid === undefined) throw new InputError(`branch "${branch}" does not exist in the repository`, { file: this.description });
    if (this.layout.dir && !this.consistentHeads.has(oid) && (await this.refuseHalfUpdatedWorkingCopy(branch, oid))) this.consistentHeads.add(oid);
    if (this.layout.dir && fs.existsSync(path.join(this.layout.gitdir, TEMP_DIR))) await this.removeTempDir();
    return oid;
  }

  /** <gitdir>/lastgood-tmp left by a run killed mid-update, removed under the index lock (a running update holds it). */
  private async removeTempDir(): Promise<void> {
    let lock: LockFile;
    try {
      lock = await LockFile.acquire(path.join(this.layout.gitdir, 'index'), { label: 'index', timeoutMs: 200 });
    } catch {
      return; // another process holds the index: it is either that run, or the lock is reported when a write needs it
    }
    try {
      await fs.promises.rm(path.join(this.layout.gitdir, TEMP_DIR), { recursive: true, force: true });
    } finally {
      await lock.rollback();
    }
  }

  async resolveCommit(shaOrPrefix: string): Promise<string | undefined> {
    const sha = shaOrPrefix.toLowerCase();
    if (!/^[0-9a-f]{4,40}$/.test(sha)) return undefined;
    const oid = this.objects.expand(sha);
    if (!oid) return undefined;
    return this.objects.tryRead(oid)?.type === 'commit' ? oid : undefined;
  }

  async readCommit(oid: string): Promise<CommitInfo> {
    const known = this.commits.get(oid);
    if (known) return known;
    const o = this.objects.read(oid);
    if (o.type !== 'commit') throw new InputError(`${oid} is a ${o.type}, not a commit`);
    const c = parseCommit(o.content, oid);
    const info: CommitInfo = { oid, parents: c.parents, message: c.message, tree: c.tree, author: c.author, committer: c.committer };
    this.commits.set(oid, info);
    return info;
  }

  /** RepoBackend.branches: the branches under `prefix` (loose and packed refs) and their tips, read only. */
  async branches(prefix: string): Promise<Map<string, string>> {
    const folder = prefix.includes('/') ? prefix.slice(0, prefix.lastIndexOf('/')) : '';
    const names = await git.listRefs({ fs, gitdir: this.layout.gitdir, filepath: `refs/heads${folder ? `/${folder}` : ''}` });
    const out = new Map<string, string>();
    for (const name of names.map((n) => (folder ? `${folder}/${n}` : n)).filter((n) => n.startsWith(prefix)).sort()) {
      const oid = await readRef(this.layout.gitdir, `refs/heads/${name}`);
      if (oid) out.set(name, oid);
    }
    return out;
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
      const o = this.objects.read(oid);
      // a commit names its tree: isomorphic-git's readTree peels it, and so does this
      entries = parseTree(o.type === 'commit' ? this.objects.read(parseCommit(o.content, oid).tree).content : o.type === 'tree' ? o.content : notA('tree', oid, o.type), oid);
      this.trees.set(oid, entries);
    }
    return entries;
  }

  notes(): NotesStore {
    return openLocalNotes({ fs, dir: this.layout.dir, gitdir: this.layout.gitdir });
  }

  async readBlob(oid: string): Promise<Uint8Array> {
    const o = this.objects.read(oid);
    return o.type === 'blob' ? o.content : notA('blob', oid, o.type);
  }

  /** Whether `ancestor` is reachable from `descendant`: a walk of the whole graph below it (exact, as isomorphic-git's isDescendent). */
  async isAncestor(ancestor: string, descendant: string): Promise<boolean> {
    if (ancestor === descendant) return true;
    const seen = new Set<string>([descendant]);
    const stack = [descendant];
    while (stack.length) {
      const oid = stack.pop()!;
      let c: CommitInfo;
      try {
        c = await this.readCommit(oid);
      } catch (error) {
        // a shallow repository's boundary: the commits below it are not there
        if (error instanceof MissingObjectError && oid !== descendant) continue;
        throw error;
      }
      for (const p of c.parents) {
        if (p === ancestor) return true;
        if (!seen.has(p)) {
          seen.add(p);
          stack.push(p);
        }
      }
    }
    return false;
  }

  /** Writes the change's tree and commit objects (each whole or not at all); returns the new commit oid. Refs untouched. */
  async writeChangeCommit(change: Change): Promise<string> {
    const parentTree = (await this.readCommit(change.parent)).tree;
    const tree = (await this.editTree(parentTree, change.files.map((f) => ({ parts: f.path.split('/'), change: f })))) ?? this.write('tree', serializeTree([]));
    return this.write('commit', serializeCommit({ tree, parents: [change.parent], author: change.author, committer: change.author, message: change.message }));
  }

  /** Writes one object (loose, whole or not at all) unless the repository has it. */
  private write(type: 'blob' | 'tree' | 'commit', content: Uint8Array): string {
    return writeLooseObject(this.objects, this.layout.gitdir, type, content);
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
        const oid = 'oid' in edit.change ? edit.change.oid : this.write('blob', edit.change.content);
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
    return this.write('tree', serializeTree([...entries.values()]));
  }

  /**
   * What a person has not committed, among the files a change would write: every difference git
   * shows under the target `paths` (work tree or index against `head`, untracked files included),
   * and, for each of the `written` files, the index entry and the work-tree file compared with
   * `head`'s blob by content, not by timestamps. Sorted paths; empty for a bare repository.
   */
  async uncommittedChanges(head: string, paths: string[], written: string[] = []): Promise<string[]> {
    const dir = this.layout.dir;
    if (!dir) return [];
    const out = new Set<string>();
    const filepaths = [...new Set([...paths.map((p) => p.replace(/\/+$/, '')), ...written])];
    // refresh: false — isomorphic-git would otherwise rewrite the index in place, without its lock
    const rows = await git.statusMatrix({ fs, dir, gitdir: this.layout.gitdir, ref: head, cache: this.cache, refresh: false, filepaths });
    for (const [file, h, w, s] of rows) if (!(h === 1 && w === 1 && s === 1)) out.add(file);
    const index = await this.readIndex();
    const headTree = (await this.readCommit(head)).tree;
    const filemode = await this.trustsFileMode();
    for (const file of written) {
      const before = await this.fileIn(headTree, file);
      const staged = index.get(file);
      if (staged?.conflicted || !sameFile(before, staged, filemode) || !sameFile(before, await this.workTreeFile(file), filemode)) out.add(file);
    }
    return [...out].sort();
  }

  /** The branch HEAD names in a working copy (undefined in a bare repository or with HEAD detached). */
  async currentBranch(): Promise<string | undefined> {
    if (!this.layout.dir) return undefined;
    return readHeadBranch(this.layout.gitdir);
  }

  async deliver(change: Change, mode: DeliveryMode): Promise<DeliveryResult> {
    try {
      return await this.deliverOnDisk(change, mode);
    } catch (error) {
      // the machine's disk (full, read-only): said as such, with the folder; what was half-written was removed
      throw diskError(error, this.layout.gitdir, `the repository ${this.description}`) ?? error;
    }
  }

  private async deliverOnDisk(change: Change, mode: DeliveryMode): Promise<DeliveryResult> {
    // the gap between plan and write: another writer may move the branch here, and is then detected below
    await pauseForTest('before-ref-write');
    if (mode === 'pull-request') return this.deliverReviewBranch(change);
    if ((await this.currentBranch()) === change.branch) return this.deliverCheckedOut(change);
    await this.expectHead(change);
    const commit = await this.writeChangeCommit(change);
    await this.writeRefChecked(change.branch, commit, change.parent, this.reflog(change));
    return { commit, branch: change.branch, created: await this.landed(change.branch, commit) };
  }

  /**
   * Commit mode with the branch checked out: like `git commit`, the index lock is held around the
   * ref write and the index + work-tree update, so no git process interleaves; under it, every
   * file the change writes is checked for a person's uncommitted change first.
   */
  private async deliverCheckedOut(change: Change): Promise<DeliveryResult> {
    const indexLock = await this.lockIndex();
    try {
      await this.expectHead(change);
      const written = change.files.map((f) => f.path);
      // an earlier run killed while it updated the working copy: its temporary files are not a person's change
      const leftovers = await this.removeLeftovers([...(change.paths ?? []), ...written]);
      const dirty = await this.uncommittedChanges(change.parent, change.paths ?? written, written);
      if (dirty.length > 0) {
        throw new InputError(`uncommitted changes in the target paths or in files the revert writes (${dirty.slice(0, 5).join(', ')}${dirty.length > 5 ? ', …' : ''}): commit or discard them first; nothing was written`, { file: this.description });
      }
      const commit = await this.writeChangeCommit(change);
      await this.writeRefChecked(change.branch, commit, change.parent, this.reflog(change));
      let warnings: string[];
      try {
        warnings = await this.syncWorkingCopy(change, commit, indexLock);
      } catch (error) {
        throw new RemoteError('git', `the commit ${commit} is on ${change.branch}, but the working copy could not be updated to it (${(error as Error).message}): run "git restore --source=HEAD --staged --worktree -- ${written.join(' ')}" to finish`, { cause: error });
      }
      if (leftovers.length) warnings.unshift(`removed ${leftovers.join(', ')}: temporary file${leftovers.length === 1 ? '' : 's'} of an interrupted lastgood run`);
      return { commit, branch: change.branch, created: await this.landed(change.branch, commit), ...(warnings.length ? { warnings } : {}) };
    } finally {
      await indexLock.rollback();
    }
  }

  /** Pull-request mode: the review branch is created only where absent, or moved only from the value read. */
  private async deliverReviewBranch(change: Change): Promise<DeliveryResult> {
    await this.expectHead(change);
    const branch = reviewBranch(change);
    const ref = `refs/heads/${branch}`;
    if ((await this.currentBranch()) === branch) {
      throw new InputError(`the review branch ${branch} is checked out in this working copy: moving it would leave the working copy behind; check out another branch first. Nothing was written`, { file: this.description });
    }
    const existing = await readRef(this.layout.gitdir, ref);
    const commit = await this.writeChangeCommit(change);
    if (existing && (await this.sameTree(existing, commit))) return { commit: existing, branch, created: false };
    await this.writeRefChecked(branch, commit, existing ?? null, this.reflog(change));
    const now = await readRef(this.layout.gitdir, ref);
    if (now === commit) return { commit, branch, created: true };
    // another run moved it right after our write, to the same revert: that one is reported
    if (now && (await this.sameTree(now, commit))) return { commit: now, branch, created: false };
    throw new StaleHeadError(branch, now ?? '(deleted)');
  }

  /** The plan was made against `change.parent`: anything else is a stale plan (the engine re-plans). */
  private async expectHead(change: Change): Promise<void> {
    const current = await readRef(this.layout.gitdir, `refs/heads/${change.branch}`);
    if (current !== change.parent) throw new StaleHeadError(change.branch, current ?? '(deleted)');
  }

  /**
   * Reported as created only when the commit is on the branch after the write: the ref is it, or a
   * writer that honours the lock has already built on it. A branch rewritten without our commit is stale.
   */
  private async landed(branch: string, commit: string): Promise<boolean> {
    const now = await readRef(this.layout.gitdir, `refs/heads/${branch}`);
    if (now === commit || (now !== undefined && (await this.isAncestor(commit, now)))) return true;
    throw new StaleHeadError(branch, now ?? '(deleted)');
  }

  private async sameTree(a: string, b: string): Promise<boolean> {
    return (await this.readCommit(a)).tree === (await this.readCommit(b)).tree;
  }

  private reflog(change: Change): ReflogEntry {
    return { name: change.author.name, email: change.author.email, message: `commit (lastgood): ${change.message.split('\n', 1)[0]}` };
  }

  /** Compare-and-swap on a branch under git's ref lock: StaleHeadError when it moved since `expected` (null: must not exist). */
  private async writeRefChecked(branch: string, value: string, expected: string | null, reflog?: ReflogEntry): Promise<void> {
    const outcome = await compareAndSwapRef(this.layout.gitdir, { ref: `refs/heads/${branch}`, to: value, from: expected, reflog });
    if (!outcome.written) throw new StaleHeadError(branch, outcome.current ?? '(deleted)');
  }

  private lockIndex(): Promise<LockFile> {
    return LockFile.acquire(path.join(this.layout.gitdir, 'index'), { label: 'index' });
  }

  /**
   * The branch is checked out and has moved to `commit`: the work tree and the index follow it for
   * the changed files, while `indexLock` is held. Each file is checked once more right before it is
   * replaced; one a person saved in the meantime is kept (the index still moves, with its stat data
   * cleared so git re-reads the file and shows it modified), and said in the returned warnings.
   * The new index is written into index.lock and renamed over the index: a kill before that
   * leaves the old index and the lock, as a killed git does.
   */
  private async syncWorkingCopy(change: Change, commit: string, indexLock: LockFile): Promise<string[]> {
    const dir = this.layout.dir!;
    const { tree } = await this.readCommit(commit);
    const parentTree = (await this.readCommit(change.parent)).tree;
    const filemode = await this.trustsFileMode();
    const kept: string[] = [];
    const updates: Array<{ path: string; oid?: string; stats?: fs.Stats }> = [];
    // deletions first: a file may give way to a folder of the same name
    const ordered = [...change.files].sort((a, b) => Number('delete' in b) - Number('delete' in a));
    await pauseForTest('worktree-write');
    for (const f of ordered) {
      const file = path.join(dir, f.path);
      const after = await this.fileIn(tree, f.path);
      if (!sameFile(await this.fileIn(parentTree, f.path), await this.workTreeFile(f.path), filemode)) {
        kept.push(f.path);
        updates.push({ path: f.path, ...(after ? { oid: after.oid } : {}) });
        continue;
      }
      if (!after) {
        await fs.promises.rm(file, { force: true });
        pruneEmptyDirs(dir, path.dirname(file));
        updates.push({ path: f.path });
        continue;
      }
      await fs.promises.mkdir(path.dirname(file), { recursive: true });
      await this.placeFile(file, await this.readBlob(after.oid), after.mode);
      updates.push({ path: f.path, oid: after.oid, stats: await fs.promises.lstat(file) });
    }
    // every file is in place: the folder of their temporary copies goes
    await fs.promises.rm(path.join(this.layout.gitdir, TEMP_DIR), { recursive: true, force: true });
    await this.writeIndex(indexLock, updates);
    return kept.length === 0 ? [] : [`${kept.join(', ')} changed in the working copy while lastgood was updating it: your version is kept (git status shows it modified against the revert)`];
  }

  /**
   * Puts a file of the work tree in place whole or not at all, as a checkout does: written (or the
   * symlink made) beside the repository's own files, in <gitdir>/lastgood-tmp, then renamed over
   * the file. A kill between the two leaves nothing in the work tree (`git status` stays clean, and
   * no untracked file in a target folder can be committed by `git add -A` or refused as a person's
   * change); the next run removes what is left there (removeLeftovers). Where the work tree is on
   * another file system than the git folder, the file is written beside its destination, and that
   * is recognised and removed the same way.
   */
  private async placeFile(file: string, content: Uint8Array, mode: string): Promise<void> {
    const tmpDir = path.join(this.layout.gitdir, TEMP_DIR);
    await fs.promises.mkdir(tmpDir, { recursive: true });
    const tmp = path.join(tmpDir, `${randomBytes(6).toString('hex')}${mode === SYMLINK ? '.link' : ''}`);
    if (mode === SYMLINK) await fs.promises.symlink(Buffer.from(content).toString('utf8'), tmp);
    else {
      // git's modes for a checkout (0666 / 0777 less the umask)
      const handle = await fs.promises.open(tmp, 'wx', mode === '100755' ? 0o777 : 0o666);
      try {
        await handle.writeFile(content);
      } finally {
        await handle.close();
      }
    }
    await pauseForTest('worktree-temp');
    try {
      await fs.promises.rename(tmp, file);
    } catch (error) {
      await fs.promises.rm(tmp, { force: true });
      if ((error as NodeJS.ErrnoException).code !== 'EXDEV') throw error;
      if (mode === SYMLINK) {
        const near = path.join(path.dirname(file), `.${path.basename(file)}.lastgood-link`);
        await fs.promises.rm(near, { force: true });
        await fs.promises.symlink(Buffer.from(content).toString('utf8'), near);
        await fs.promises.rename(near, file);
      } else await replaceFile(file, content, { mode: mode === '100755' ? 0o777 : 0o666, durable: false });
    }
  }

  /**
   * What a run killed while updating the working copy left behind, removed under the index lock:
   * <gitdir>/lastgood-tmp, and in the folders of the target paths, files named as lastgood names its
   * temporary files there (`.<name>.lastgood-<12 hex>`, `.<name>.lastgood-link`: an older lastgood,
   * or a work tree on another file system). Returns what was removed from the work tree, to be said.
   */
  private async removeLeftovers(paths: string[]): Promise<string[]> {
    await fs.promises.rm(path.join(this.layout.gitdir, TEMP_DIR), { recursive: true, force: true });
    const dir = this.layout.dir;
    if (!dir) return [];
    const removed: string[] = [];
    const visit = async (folder: string, depth: number): Promise<void> => {
      const entries = await fs.promises.readdir(path.join(dir, folder), { withFileTypes: true }).catch(() => []);
      for (const e of entries) {
        const rel = folder ? `${folder}/${e.name}` : e.name;
        if (e.isDirectory() && e.name !== '.git' && depth < 32) await visit(rel, depth + 1);
        else if (!e.isDirectory() && LEFTOVER.test(e.name)) {
          await fs.promises.rm(path.join(dir, rel), { force: true });
          removed.push(rel);
        }
      }
    };
    for (const p of new Set(paths.map((x) => (x.endsWith('/') ? x.replace(/\/+$/, '') : path.posix.dirname(x))).map((x) => (x === '.' ? '' : x)))) await visit(p, 0);
    return removed.sort();
  }

  /**
   * Writes the index with `updates` applied (an oid: that blob, with the file's stat data; none:
   * removed) into the held index.lock, then renames it over the index. isomorphic-git's
   * GitIndexManager (managers/GitIndexManager.js) reads, edits and serializes the index, and
   * writes it with `fs.write(<gitdir>/index)` under an in-process lock only; its write is sent to
   * the lock file instead.
   */
  private async writeIndex(indexLock: LockFile, updates: Array<{ path: string; oid?: string; stats?: fs.Stats }>): Promise<void> {
    const indexFile = `${this.layout.gitdir}/index`;
    const indexFs = new FileSystem(fs);
    const write = indexFs.write.bind(indexFs);
    let wrote = false;
    indexFs.write = async (file: string, contents: Buffer | Uint8Array | string, options?: unknown) => {
      if (file !== indexFile) return write(file, contents, options);
      await indexLock.write(contents);
      wrote = true;
    };
    await this.withIndex(indexFs, (index) => {
      for (const u of updates) {
        if (u.oid === undefined) index.delete({ filepath: u.path });
        else index.insert({ filepath: u.path, oid: u.oid, stats: u.stats });
      }
    });
    if (wrote) await indexLock.commit();
  }

  /** The index's stage entries: path → blob, mode, and whether it is in conflict. */
  private async readIndex(): Promise<Map<string, IndexedFile>> {
    const out = new Map<string, IndexedFile>();
    await this.withIndex(new FileSystem(fs), (index) => {
      for (const e of index.entriesFlat as Array<{ path: string; oid: string; mode: number; flags: { stage: number } }>) {
        const known = out.get(e.path);
        if (e.flags.stage === 0 && !known) out.set(e.path, { oid: e.oid, mode: e.mode.toString(8), conflicted: false });
        else out.set(e.path, { oid: known?.oid ?? e.oid, mode: known?.mode ?? e.mode.toString(8), conflicted: true });
      }
    });
    return out;
  }

  private async withIndex(indexFs: FileSystem, edit: (index: IndexEditor) => void): Promise<void> {
    try {
      await GitIndexManager.acquire({ fs: indexFs as unknown as Parameters<typeof GitIndexManager.acquire>[0]['fs'], gitdir: this.layout.gitdir, cache: {} }, async (index) => edit(index as unknown as IndexEditor));
    } catch (error) {
      // isomorphic-git reads index version 2 only (models/GitIndex.js); git writes v3/v4 for some features
      throw new InputError(`cannot read the git index: ${(error as Error).message}; nothing was written`, { file: path.join(this.layout.gitdir, 'index'), cause: error });
    }
  }

  /** The blob at `file` in a tree, undefined when there is none (a folder there is not a file). */
  private async fileIn(tree: string, file: string): Promise<FileEntry | undefined> {
    const entry = await entryAt(this.readTreeBound, tree, file);
    return entry?.type === 'blob' ? { oid: entry.oid, mode: entry.mode } : undefined;
  }

  /**
   * The work-tree file at `file` as git would stage it (blob oid of its content, or of a symlink's
   * target), undefined when absent. Something that is not a plain file, or a folder on the way that
   * is a symlink or a file, comes back as BLOCKED: it differs from any blob.
   */
  private async workTreeFile(file: string): Promise<FileEntry | undefined> {
    const dir = this.layout.dir!;
    const parts = file.split('/');
    for (let i = 1; i < parts.length; i++) {
      const st = await fs.promises.lstat(path.join(dir, ...parts.slice(0, i))).catch(() => undefined);
      if (!st) return undefined;
      if (!st.isDirectory()) return BLOCKED;
    }
    const full = path.join(dir, ...parts);
    const st = await fs.promises.lstat(full).catch(() => undefined);
    if (!st) return undefined;
    if (st.isSymbolicLink()) return { oid: (await git.hashBlob({ object: Buffer.from(await fs.promises.readlink(full), 'utf8') })).oid, mode: SYMLINK };
    if (!st.isFile()) return BLOCKED;
    return { oid: (await git.hashBlob({ object: await fs.promises.readFile(full) })).oid, mode: st.mode & 0o111 ? '100755' : '100644' };
  }

  /** core.filemode (default true): false means the exec bit of work-tree files says nothing. */
  private async trustsFileMode(): Promise<boolean> {
    const value = await git.getConfig({ fs, gitdir: this.layout.gitdir, path: 'core.filemode' }).catch(() => undefined);
    return value !== false && value !== 'false';
  }

  /**
   * A working copy whose checked-out branch is a lastgood commit while the index still has the
   * files that commit changed as they were before it: an interrupted run (killed between the ref
   * and the index), or a branch moved under the working copy. Reported, never repaired silently
   * and never taken for a person's change; the message says how to finish. A run updating the
   * working copy right now looks the same from outside: what looks half-updated is looked at
   * again under the index lock, which that run holds until it is done. True when consistent.
   */
  private async refuseHalfUpdatedWorkingCopy(branch: string, head: string): Promise<boolean> {
    if (!this.layout.dir || (await this.currentBranch()) !== branch) return true;
    const commit = await this.readCommit(head);
    if (commit.parents.length !== 1 || !lastgoodTarget(commit.message)) return true;
    const changed = await this.changedBetween((await this.readCommit(commit.parents[0]!)).tree, commit.tree, '');
    if ((await this.filesBehind(changed)).behind.length === 0) return true;
    const indexLock = await this.lockIndex();
    try {
      if ((await readRef(this.layout.gitdir, `refs/heads/${branch}`)) !== head) return false;
      const { behind, edited } = await this.filesBehind(changed);
      if (behind.length === 0) return true;
      const list = behind.join(' ');
      throw new InputError(
        `the working copy is half-updated: ${branch} is at lastgood's commit ${head.slice(0, 12)}, but the index still has ${behind.join(', ')} as they were before it ` +
          `(a lastgood run was interrupted while updating the working copy, the branch was moved under it, or this older content was staged on purpose: then commit or unstage it). ` +
          (edited.length
            ? `${edited.join(', ')} also ha${edited.length === 1 ? 's' : 've'} changes in the work tree that are neither version: save them, then run "git restore --source=HEAD --staged --worktree -- ${list}"`
            : `Finish the update with "git restore --source=HEAD --staged --worktree -- ${list}" (it sets exactly these files, in the index and the work tree, to ${branch}'s content)`) +
          `; nothing was written`,
        { file: this.description },
      );
    } finally {
      await indexLock.rollback();
    }
  }

  /** Of the files a commit changed, those whose index entry is still the version before it, and which of them the work tree has as neither version. */
  private async filesBehind(changed: Array<{ path: string; before?: FileEntry; after?: FileEntry }>): Promise<{ behind: string[]; edited: string[] }> {
    const index = await this.readIndex();
    const filemode = await this.trustsFileMode();
    const behind: string[] = [];
    const edited: string[] = [];
    for (const d of changed) {
      const staged = index.get(d.path);
      if (sameFile(d.after, staged, filemode) || !sameFile(d.before, staged, filemode)) continue;
      behind.push(d.path);
      const work = await this.workTreeFile(d.path);
      if (!sameFile(d.before, work, filemode) && !sameFile(d.after, work, filemode)) edited.push(d.path);
    }
    return { behind, edited };
  }

  /** The blobs that differ between two trees (subtrees with equal oids are skipped, so a small commit costs a few reads). */
  private async changedBetween(a: string | undefined, b: string | undefined, prefix: string): Promise<Array<{ path: string; before?: FileEntry; after?: FileEntry }>> {
    if (a === b) return [];
    const left = new Map((a ? await this.readTreeEntries(a) : []).map((e) => [e.path, e]));
    const right = new Map((b ? await this.readTreeEntries(b) : []).map((e) => [e.path, e]));
    const out: Array<{ path: string; before?: FileEntry; after?: FileEntry }> = [];
    for (const name of [...new Set([...left.keys(), ...right.keys()])].sort()) {
      checkEntryName(name, prefix);
      const x = left.get(name);
      const y = right.get(name);
      if (x && y && x.oid === y.oid && x.mode === y.mode) continue;
      const p = joinPath(prefix, name);
      if (x?.type === 'tree' || y?.type === 'tree') out.push(...(await this.changedBetween(x?.type === 'tree' ? x.oid : undefined, y?.type === 'tree' ? y.oid : undefined, p)));
      const before = x?.type === 'blob' ? { oid: x.oid, mode: x.mode } : undefined;
      const after = y?.type === 'blob' ? { oid: y.oid, mode: y.mode } : undefined;
      if (before || after) out.push({ path: p, ...(before ? { before } : {}), ...(after ? { after } : {}) });
    }
    return out;
  }
}

interface IndexedFile extends FileEntry {
  conflicted: boolean;
}

/** The part of isomorphic-git's GitIndex (models/GitIndex.js) used here. */
interface IndexEditor {
  entriesFlat: unknown;
  insert(entry: { filepath: string; oid: string; stats?: fs.Stats }): void;
  delete(entry: { filepath: string }): void;
}

/** A work-tree path that no blob can equal (a folder, a device, a path through a symlink). */
const BLOCKED: FileEntry = { oid: 'blocked', mode: 'blocked' };

/** Same blob and mode (the exec bit only where core.filemode holds); both absent is the same. */
function sameFile(a: FileEntry | undefined, b: FileEntry | undefined, filemode: boolean): boolean {
  if (!a || !b) return a === b;
  if (a.oid !== b.oid) return false;
  if (a.mode === b.mode) return true;
  const regular = (mode: string) => mode === '100644' || mode === '100755';
  return !filemode && regular(a.mode) && regular(b.mode);
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
  return new LocalRepo(repoPath, { explainMissing: true });
}

/** The repository's config file as text; empty where it has none (git's defaults). */
function configText(gitdir: string): string {
  try {
    return fs.readFileSync(path.join(gitdir, 'config'), 'utf8');
  } catch {
    return '';
  }
}

/**
 * A repository of SHA-256 object names (`git init --object-format=sha256`, extensions.objectFormat):
 * isomorphic-git and lastgood's object reader know SHA-1 names only, and without this its 64-hex
 * refs read as "broken refs".
 */
function refuseSha256(gitdir: string, repoPath: string): void {
  if (/^\s*objectformat\s*=\s*sha256\s*$/im.test(configText(gitdir))) {
    throw new InputError('a SHA-256 repository (extensions.objectFormat = sha256): lastgood reads repositories of SHA-1 object names only, as most git hosts serve them; nothing was written', { file: repoPath });
  }
}

/**
 * An object a person's repository lacks, said as what the repository is: a shallow clone (what
 * actions/checkout makes by default, fetch-depth: 1), a partial clone (--filter), or one damaged.
 * Read without the object, the run would end in "internal error".
 */
function missingObject(gitdir: string, repoPath: string, oid: string): InputError {
  const fix = 'or give repo.url the repository\'s URL (lastgood then fetches what it needs)';
  if (fs.existsSync(path.join(gitdir, 'shallow'))) {
    return new InputError(`the repository is a shallow clone (git clone --depth; actions/checkout's default, fetch-depth: 1): commit ${oid} and the history below it are not in it. Clone it whole (fetch-depth: 0), ${fix}`, { file: repoPath });
  }
  // git's partial clone marks its remote (remote.<name>.promisor) or the repository (extensions.partialclone)
  if (/^\s*(promisor\s*=\s*true|partialclone\s*=)/im.test(configText(gitdir))) {
    return new InputError(`the repository is a partial clone (git clone --filter): object ${oid} was left out of it, and lastgood reads objects from the disk only. Clone it without --filter, ${fix}`, { file: repoPath });
  }
  return new InputError(`object ${oid} is missing from the repository (damaged, or removed by hand); \`git fsck\` says what else is`, { file: repoPath });
}
