import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { InputError, RemoteError } from '../../errors.ts';
import { gitLockfileDelay } from '../../retry.ts';

/**
 * Git's own discipline for writing a repository on disk, for the local backend and the notes
 * store: lock files, refs read strictly, refs updated under their lock, and files replaced whole.
 *
 * Sources (git/git at 1a3e64c, read for this module; nothing copied):
 * - lockfile.c `lock_file_timeout`: a lock is `<file>.lock` created with O_CREAT|O_EXCL; an
 *   existing one means another writer. Retries back off quadratically (1, 4, 9, … ms, up to
 *   1 s) with ±25% jitter until a timeout.
 * - refs/files-backend.c `write_ref_to_lockfile` + `commit_ref`: the new value `<hex>\n` goes into
 *   `refs/…/<name>.lock`, is fsynced, and the lock is renamed over the ref. The old value is
 *   verified while the lock is held (`lock_raw_ref`, `check_old_oid`).
 * - refs/files-backend.c `read_ref_internal` + `parse_loose_ref_contents`: a loose ref file is
 *   read whole and right-trimmed; anything but a SHA (or `ref: …`) is REF_ISBROKEN. Only a
 *   *missing* loose file (or a directory in its place) falls through to packed-refs: a broken one
 *   never does.
 * - Packed refs: a ref that only lives in `packed-refs` is updated by writing the loose ref under
 *   its own lock (a loose ref overrides the packed one). `git pack-refs` (`files_optimize`) takes
 *   `packed-refs.lock`, copies the loose values, and then prunes each loose ref in a transaction
 *   that takes *that ref's* lock and verifies it still has the packed value (`prune_ref`,
 *   REF_IS_PRUNING with REF_HAVE_OLD): a ref updated in between keeps its loose file, which wins.
 *   Ordinary updates never lock packed-refs (`files_transaction_prepare` only adds a packed
 *   transaction for deletions). So honouring the loose ref's lock is enough.
 *
 * isomorphic-git is not used for refs: its `resolveRef` reads a loose ref as
 * `(await fs.read(file)) || packedMap.get(ref)` (GitRefManager.resolve), so an empty loose file
 * silently resolves to the stale packed value, and its `writeRef` rewrites the ref file in place
 * (`fs.write`, no lock file, no rename), which a kill can leave empty.
 */

const SHA = /^[0-9a-f]{40}$/i;

/** Where a write can be paused or killed by a test (LASTGOOD_TEST_PAUSE), in the order they happen. */
export type WritePoint =
  | 'before-ref-write'
  | 'index-busy'
  | 'index-locked'
  | 'ref-busy'
  | 'ref-locked'
  | 'ref-written'
  | 'ref-renamed'
  | 'worktree-write'
  | 'worktree-temp'
  | 'index-written'
  | 'index-renamed'
  | 'notes-busy'
  | 'notes-locked'
  | 'notes-written'
  | 'notes-renamed';

/** An in-process observer of the write points (a deterministic scheduler in tests). */
export type StepHook = (point: WritePoint) => Promise<void> | void;

/**
 * Test hook, inert unless set: `LASTGOOD_TEST_PAUSE=<point>:<file>[,<point>:<file>…]` makes the
 * process, on reaching `<point>`, create `<file>.reached` and wait until `<file>` exists. Tests
 * use it to interleave another writer exactly there, or to `kill -9` the process there.
 */
export async function pauseForTest(point: WritePoint): Promise<void> {
  const spec = process.env.LASTGOOD_TEST_PAUSE;
  if (!spec) return;
  for (const item of spec.split(',')) {
    const at = item.indexOf(':');
    if (at < 0 || item.slice(0, at) !== point) continue;
    const release = item.slice(at + 1);
    fs.writeFileSync(`${release}.reached`, `${process.pid}\n`);
    while (!fs.existsSync(release)) await sleep(5);
  }
}

async function step(point: WritePoint, hook: StepHook | undefined): Promise<void> {
  await hook?.(point);
  await pauseForTest(point);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const code = (error: unknown) => (error as NodeJS.ErrnoException | undefined)?.code;

/**
 * The default wait for another writer's lock: a running git finishes well within it; a crashed one
 * never does. The wait starts again whenever the lock file changes (writers taking turns, or a
 * lastgood holder touching its lock while it works on a loaded machine), up to a minute in all
 * (LockFile.acquire); a lock file that stays as it is for this long is reported.
 */
export const DEFAULT_LOCK_TIMEOUT_MS = 5000;
/** how often a held lock file is touched (LockFile): well inside DEFAULT_LOCK_TIMEOUT_MS, even on a loaded machine */
const HEARTBEAT_MS = 1000;

/** Another process holds a lock file past the wait: exit 3, with the way out. */
export class LockHeldError extends RemoteError {
  readonly lockFile: string;
  constructor(lockFile: string, cause?: unknown) {
    super('git', `another git process holds ${lockFile}; if none is running (a git or lastgood process was killed), remove that file and run again. No ref and no working-copy file was changed`, { cause });
    this.lockFile = lockFile;
  }
}

/** A loose ref that git itself calls broken (empty, or not a SHA): never read around. Exit 2. */
export class BrokenRefError extends InputError {
  readonly ref: string;
  constructor(ref: string, file: string, content: string) {
    const what = content.trim() === '' ? 'is empty' : `does not hold a SHA (${JSON.stringify(content.trim().slice(0, 60))})`;
    super(`the ref ${ref} ${what}: git calls this a broken ref. lastgood does not read around it (the older value in packed-refs may be stale). Restore it, e.g. from "git reflog ${ref}", or remove the file if the branch lives in packed-refs, then run again`, { file });
    this.ref = ref;
  }
}

export interface LockOptions {
  /** how long to wait for another writer's lock (default DEFAULT_LOCK_TIMEOUT_MS) */
  timeoutMs?: number;
  /** names the write points: `<label>-busy`, `-locked`, `-written`, `-renamed` */
  label?: 'ref' | 'index' | 'notes';
  step?: StepHook;
}

/**
 * A lock file as git makes one (lockfile.c): `<target>.lock`, created exclusively; the new
 * content is written into it, fsynced, and renamed over the target. Until `commit`, the target
 * is untouched; `rollback` removes the lock. A killed process leaves the lock behind, as git
 * does, and every git command then refuses to write the target until a person removes it.
 */
export class LockFile {
  readonly target: string;
  readonly path: string;
  private handle: fs.promises.FileHandle | undefined;
  private readonly createdDirs: string[];
  private readonly opts: LockOptions;
  private done = false;

  /** touches the lock file while it is held: a live holder, however slow, is told from one that died */
  private heartbeat: NodeJS.Timeout | undefined;

  private constructor(target: string, handle: fs.promises.FileHandle, createdDirs: string[], opts: LockOptions) {
    this.target = target;
    this.path = `${target}.lock`;
    this.handle = handle;
    this.createdDirs = createdDirs;
    this.opts = opts;
    // git ignores a lock file's times; another lastgood waiting for it sees them change (acquire) and keeps waiting
    this.heartbeat = setInterval(() => {
      const now = new Date();
      void this.handle?.utimes(now, now).catch(() => undefined);
    }, HEARTBEAT_MS);
    this.heartbeat.unref();
  }

  static async acquire(target: string, opts: LockOptions = {}): Promise<LockFile> {
    const lockPath = `${target}.lock`;
    const wait = opts.timeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS;
    let deadline = Date.now() + wait;
    // writers taking turns (each lock a new file, or one being written) are progress, waited for up
    // to this long in all; one lock file that stays as it is for `wait` is a holder that is stuck or gone
    const cap = Date.now() + Math.max(12 * wait, 60_000);
    let seen: string | undefined;
    const createdDirs: string[] = [];
    const label = opts.label ?? 'ref';
    // lockfile.c: the n-th wait is about n² ms (±25%), at most 1 s (retry.ts gitLockfileDelay)
    let n = 1;
    for (let folderTries = 0; ; ) {
      let handle: fs.promises.FileHandle;
      try {
        handle = await fs.promises.open(lockPath, 'wx', 0o666);
      } catch (error) {
        // the ref's folder may be missing (a new branch lastgood/<target>/…), or just pruned by git pack-refs
        if (code(error) === 'ENOENT' && folderTries++ < 3) {
          createdDirs.push(...(await makeDirs(path.dirname(lockPath))));
          continue;
        }
        if (code(error) === 'ENOTDIR') {
          await removeEmptyDirs(createdDirs);
          throw new InputError(`cannot create ${lockPath}: a file is in the way of its folder (another ref's name is a prefix of this one)`, { cause: error });
        }
        if (code(error) !== 'EEXIST') {
          await removeEmptyDirs(createdDirs);
          throw new RemoteError('git', `cannot create ${lockPath}: ${(error as Error).message}`, { cause: error });
        }
        // a test's pause here is not the other writer's time
        const pausedAt = Date.now();
        await step(`${label}-busy` as WritePoint, opts.step);
        deadline += Date.now() - pausedAt;
        const now = await fs.promises.stat(lockPath).then((st) => `${st.ino}:${st.mtimeMs}:${st.size}`, () => 'gone');
        if (seen !== undefined && now !== seen) deadline = Math.max(deadline, Math.min(cap, Date.now() + wait));
        seen = now;
        if (Date.now() >= deadline) {
          await removeEmptyDirs(createdDirs);
          throw new LockHeldError(lockPath, error);
        }
        await sleep(Math.min(gitLockfileDelay(n++), Math.max(1, deadline - Date.now())));
        continue;
      }
      const lock = new LockFile(target, handle, createdDirs, opts);
      try {
        await step(`${label}-locked` as WritePoint, opts.step);
      } catch (error) {
        await lock.rollback();
        throw error;
      }
      return lock;
    }
  }

  /** Replaces the lock file's content (not yet the target's). */
  async write(data: Uint8Array | string): Promise<void> {
    const handle = this.open();
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    await handle.truncate(0);
    let offset = 0;
    while (offset < bytes.length) offset += (await handle.write(bytes, offset, bytes.length - offset, offset)).bytesWritten;
  }

  /** fsync the lock, rename it over the target, fsync the folder: the target is the old content or the new, never torn. */
  async commit(): Promise<void> {
    const handle = this.open();
    clearInterval(this.heartbeat);
    await handle.sync();
    await handle.close();
    this.handle = undefined;
    const label = this.opts.label ?? 'ref';
    await step(`${label}-written` as WritePoint, this.opts.step);
    await fs.promises.rename(this.path, this.target);
    this.done = true;
    await fsyncDir(path.dirname(this.target));
    await step(`${label}-renamed` as WritePoint, this.opts.step);
  }

  /** Gives the lock up without touching the target (a no-op after commit). */
  async rollback(): Promise<void> {
    clearInterval(this.heartbeat);
    if (this.done) return;
    this.done = true;
    await this.handle?.close().catch(() => undefined);
    this.handle = undefined;
    await fs.promises.rm(this.path, { force: true });
    await removeEmptyDirs(this.createdDirs);
  }

  private open(): fs.promises.FileHandle {
    if (!this.handle || this.done) throw new Error(`lock ${this.path} is no longer held`);
    return this.handle;
  }
}

/** mkdir -p that returns the folders it created, deepest last. */
async function makeDirs(dir: string): Promise<string[]> {
  const missing: string[] = [];
  for (let d = dir; !fs.existsSync(d); d = path.dirname(d)) missing.unshift(d);
  for (const d of missing) await fs.promises.mkdir(d).catch((error) => (code(error) === 'EEXIST' ? undefined : Promise.reject(error)));
  return missing;
}

async function removeEmptyDirs(dirs: string[]): Promise<void> {
  for (const d of [...dirs].reverse()) await fs.promises.rmdir(d).catch(() => undefined);
}

/** Makes a rename in `dir` durable; some file systems cannot fsync a folder, which is then left to them. */
export async function fsyncDir(dir: string): Promise<void> {
  let handle: fs.promises.FileHandle | undefined;
  try {
    handle = await fs.promises.open(dir, 'r');
    await handle.sync();
  } catch {
    // best effort, as git's fsync of a folder
  } finally {
    await handle?.close().catch(() => undefined);
  }
}

/**
 * git's refname rules (refs.c `check_refname_format`) that matter for a path on disk: no empty,
 * "." -led or ".lock"-ended component, no "..", no control characters or ` ~^:?*[\`, no "@{".
 */
export function checkRefName(ref: string): void {
  const bad =
    !ref.startsWith('refs/') ||
    ref.endsWith('/') ||
    ref.endsWith('.') ||
    ref.includes('..') ||
    ref.includes('@{') ||
    /[\x00-\x20\x7f~^:?*[\\]/.test(ref) ||
    ref.split('/').some((part) => part === '' || part.startsWith('.') || part.endsWith('.lock'));
  if (bad) throw new InputError(`"${ref}" is not a valid git ref name`);
}

export function refFile(gitdir: string, ref: string): string {
  checkRefName(ref);
  return path.join(gitdir, ...ref.split('/'));
}

/**
 * `packed-refs` as a map of ref → SHA. A line git would not accept ("unexpected line in
 * packed-refs", packed-backend.c) is bad repository input: exit 2 with the file and line.
 */
export async function readPackedRefs(gitdir: string): Promise<Map<string, string>> {
  const file = path.join(gitdir, 'packed-refs');
  let text: string;
  try {
    text = await fs.promises.readFile(file, 'utf8');
  } catch (error) {
    if (code(error) === 'ENOENT') return new Map();
    throw new RemoteError('git', `cannot read ${file}: ${(error as Error).message}`, { cause: error });
  }
  const refs = new Map<string, string>();
  const lines = text.split('\n');
  for (const [i, line] of lines.entries()) {
    if (line === '' && i === lines.length - 1) continue;
    if (i === 0 && line.startsWith('# pack-refs with:')) continue;
    if (/^\^[0-9a-f]{40}$/i.test(line) && i > 0) continue; // the peeled value of the tag above
    const m = /^([0-9a-f]{40}) (refs\/\S+)$/i.exec(line);
    if (!m) throw new InputError(`unexpected line in packed-refs: ${JSON.stringify(line.slice(0, 80))}`, { file, line: i + 1 });
    refs.set(m[2]!, m[1]!.toLowerCase());
  }
  return refs;
}

/**
 * A ref's value as git reads it: the loose file if there is one, else packed-refs; undefined
 * when neither has it. A loose file that is empty or not a SHA is a BrokenRefError (exit 2),
 * never a reason to fall back to packed-refs; a symbolic ref is refused (name its target).
 */
export async function readRef(gitdir: string, ref: string): Promise<string | undefined> {
  const file = refFile(gitdir, ref);
  // read_ref_internal retries when the file changes type between lstat and read (a concurrent pack-refs)
  for (let attempt = 0; attempt < 3; attempt++) {
    let st: fs.Stats;
    try {
      st = await fs.promises.lstat(file);
    } catch (error) {
      if (code(error) === 'ENOENT' || code(error) === 'ENOTDIR') return (await readPackedRefs(gitdir)).get(ref);
      throw new RemoteError('git', `cannot read ${file}: ${(error as Error).message}`, { cause: error });
    }
    // a folder where the ref would be (refs/heads/a when refs/heads/a/b exists): only packed-refs can hold it
    if (st.isDirectory()) return (await readPackedRefs(gitdir)).get(ref);
    if (st.isSymbolicLink()) throw new InputError(`the ref ${ref} is a symbolic link: configure the branch it points to`, { file });
    let text: string;
    try {
      text = await fs.promises.readFile(file, 'utf8');
    } catch (error) {
      if (code(error) === 'ENOENT') continue;
      throw new RemoteError('git', `cannot read ${file}: ${(error as Error).message}`, { cause: error });
    }
    const value = text.trimEnd();
    if (value.startsWith('ref:')) throw new InputError(`the ref ${ref} is a symbolic ref (${value}): configure the branch it points to`, { file });
    if (!SHA.test(value)) throw new BrokenRefError(ref, file, text);
    return value.toLowerCase();
  }
  throw new RemoteError('git', `the ref ${ref} kept changing while it was read (${file})`);
}

/** The branch HEAD names (`ref: refs/heads/<branch>`), undefined when HEAD is detached. */
export async function readHeadBranch(gitdir: string): Promise<string | undefined> {
  const file = path.join(gitdir, 'HEAD');
  let text: string;
  try {
    text = await fs.promises.readFile(file, 'utf8');
  } catch (error) {
    throw new InputError(`cannot read HEAD: ${(error as Error).message}`, { file, cause: error });
  }
  const value = text.trim();
  const m = /^ref:\s*refs\/heads\/(.+)$/.exec(value);
  if (m) return m[1];
  if (SHA.test(value) || value.startsWith('ref:')) return undefined;
  throw new InputError(`HEAD is broken (${JSON.stringify(value.slice(0, 60))})`, { file });
}

/** A reflog line, written where git keeps one for the ref (logs/<ref> exists) and for HEAD when it names the branch. */
export interface ReflogEntry {
  name: string;
  email: string;
  message: string;
}

const ZERO = '0'.repeat(40);

/** A ref's lock: read the ref while no lock-honouring writer can move it, then write it, or give up. */
export class RefLock {
  readonly gitdir: string;
  readonly ref: string;
  private readonly lock: LockFile;

  private constructor(gitdir: string, ref: string, lock: LockFile) {
    this.gitdir = gitdir;
    this.ref = ref;
    this.lock = lock;
  }

  static async acquire(gitdir: string, ref: string, opts: LockOptions = {}): Promise<RefLock> {
    return new RefLock(gitdir, ref, await LockFile.acquire(refFile(gitdir, ref), { label: 'ref', ...opts }));
  }

  get lockFile(): string {
    return this.lock.path;
  }

  /** The ref's value now (strict, as readRef); stable until commit or release. */
  current(): Promise<string | undefined> {
    return readRef(this.gitdir, this.ref);
  }

  /** Writes `<sha>\n`, appends the reflog where git keeps one, fsyncs and renames. */
  async commit(oid: string, old: string | undefined, reflog?: ReflogEntry): Promise<void> {
    if (!SHA.test(oid)) throw new TypeError(`not a full SHA: ${oid}`);
    await this.lock.write(`${oid.toLowerCase()}\n`);
    if (reflog) await appendReflogs(this.gitdir, this.ref, old ?? ZERO, oid, reflog);
    await this.lock.commit();
  }

  release(): Promise<void> {
    return this.lock.rollback();
  }
}

async function appendReflogs(gitdir: string, ref: string, old: string, now: string, entry: ReflogEntry): Promise<void> {
  const line = `${old} ${now} ${entry.name.replace(/[<>\n]/g, '')} <${entry.email.replace(/[<>\n]/g, '')}> ${Math.floor(Date.now() / 1000)} +0000\t${entry.message.split('\n')[0]!.trim()}\n`;
  const logs = [path.join(gitdir, 'logs', ...ref.split('/'))];
  if (ref.startsWith('refs/heads/') && (await readHeadBranch(gitdir).catch(() => undefined)) === ref.slice('refs/heads/'.length)) logs.push(path.join(gitdir, 'logs', 'HEAD'));
  for (const log of logs) {
    // git appends only to reflogs that exist (or that core.logAllRefUpdates creates); a missing one stays missing
    if (fs.existsSync(log)) await fs.promises.appendFile(log, line);
  }
}

export interface CompareAndSwap {
  ref: string;
  to: string;
  /** the value the plan was made against; null: the ref must not exist yet */
  from: string | null;
  reflog?: ReflogEntry;
}

export type SwapOutcome = { written: true } | { written: false; current: string | undefined };

/**
 * Moves `ref` from `from` to `to` under the ref's lock, or reports the value it has instead.
 * Another writer's lock is waited for (backoff with jitter, bounded: then LockHeldError).
 */
export async function compareAndSwapRef(gitdir: string, cas: CompareAndSwap, opts: LockOptions = {}): Promise<SwapOutcome> {
  const lock = await RefLock.acquire(gitdir, cas.ref, opts);
  try {
    const current = await lock.current();
    if ((current ?? null) !== cas.from) return { written: false, current };
    await lock.commit(cas.to, current, cas.reflog);
    return { written: true };
  } finally {
    await lock.release();
  }
}

/**
 * Writes a file so that a reader (or a crash) sees the old content or the new, never a part:
 * a temporary file in the same folder, fsynced, renamed over the target. `tmp_obj_` is git's own
 * prefix for object temporaries, which git fsck and git gc know to be leftovers.
 */
export async function replaceFile(file: string, data: Uint8Array | string, opts: { mode?: number; prefix?: string; durable?: boolean } = {}): Promise<void> {
  const dir = path.dirname(file);
  const tmp = path.join(dir, `${opts.prefix ?? `.${path.basename(file)}.lastgood-`}${randomBytes(6).toString('hex')}`);
  const handle = await fs.promises.open(tmp, 'wx', opts.mode ?? 0o666);
  try {
    await handle.writeFile(data);
    if (opts.durable !== false) await handle.sync();
  } catch (error) {
    await handle.close().catch(() => undefined);
    await fs.promises.rm(tmp, { force: true });
    throw error;
  }
  await handle.close();
  try {
    await fs.promises.rename(tmp, file);
  } catch (error) {
    await fs.promises.rm(tmp, { force: true });
    throw error;
  }
  if (opts.durable !== false) await fsyncDir(dir);
}

/**
 * An `fs` for isomorphic-git's object writers (writeBlob, writeTree, writeCommit): a loose object
 * is written whole or not at all. isomorphic-git writes objects in place and skips any object
 * file that exists (storage/writeObjectLoose.js), so a kill mid-write would leave a truncated
 * object that every later write trusts. Other files are written as usual.
 */
export function objectWritingFs(gitdir: string): typeof fs {
  const objects = path.join(path.resolve(gitdir), 'objects') + path.sep;
  const writeFile: typeof fs.promises.writeFile = async (file, data, options) => {
    if (typeof file === 'string' && path.resolve(file).startsWith(objects)) {
      await fs.promises.mkdir(path.dirname(file), { recursive: true });
      return replaceFile(file, data as Uint8Array, { mode: 0o444, prefix: 'tmp_obj_' });
    }
    return fs.promises.writeFile(file, data, options);
  };
  return { ...fs, promises: { ...fs.promises, writeFile } } as typeof fs;
}
