import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { diskError, RemoteError } from '../../errors.ts';
import { indexPack, type ExternalBase, type IndexedPack } from './pack-index.ts';
import { backoffDelay, sleep } from '../../retry.ts';

/**
 * The bare mirror of a remote repository on disk: what lastgood fetched, in git's own layout
 * (objects/pack/pack-<sha>.{pack,idx}, loose refs, the `shallow` file), so that LocalRepo reads it
 * through isomorphic-git and native git can inspect it. Refs are the remote's own names
 * (refs/heads/main, refs/notes/lastgood) as last seen.
 *
 * Several processes may share one mirror (repo.cacheDir): packs are content-addressed and appear
 * by rename (the .idx last, since readers look for .idx files), refs and the shallow file change
 * under the mirror's lock file, so a reader never sees half a file.
 */
export class Mirror {
  readonly gitdir: string;
  /** what the mirror's folder is, for messages: "repo.cacheDir /var/cache/lastgood", "a temporary folder" */
  readonly where: string;
  /** the .idx files of the mirror's packs (sorted object ids: a binary search answers `has`), loaded once */
  private indexes: Map<string, Buffer> | undefined;

  private constructor(gitdir: string, where: string) {
    this.gitdir = gitdir;
    this.where = where;
  }

  /** A write under the mirror: a full disk or a folder it cannot write is the machine's fault, said with the folder (LocalError). */
  private guard<T>(write: () => T): T {
    try {
      return write();
    } catch (error) {
      throw diskError(error, path.dirname(this.gitdir), this.where) ?? error;
    }
  }

  /**
   * Opens (creating when absent) a bare mirror of `url` at `gitdir`. Its config names the remote
   * as a promisor (git's partial clone: extensions.partialClone), so that native git run on the
   * mirror (`git fsck`, `git log`) knows the blobs it lacks are the remote's, not lost.
   */
  static open(gitdir: string, url: string, where = 'repo.cacheDir'): Mirror {
    try {
      fs.mkdirSync(path.join(gitdir, 'objects', 'pack'), { recursive: true });
      fs.mkdirSync(path.join(gitdir, 'refs', 'heads'), { recursive: true });
      fs.mkdirSync(path.join(gitdir, 'refs', 'tags'), { recursive: true });
      if (!fs.existsSync(path.join(gitdir, 'HEAD'))) writeAtomic(path.join(gitdir, 'HEAD'), 'ref: refs/heads/main\n');
      if (!fs.existsSync(path.join(gitdir, 'config'))) {
        const config = [
          '[core]', '\trepositoryformatversion = 1', '\tbare = true',
          '[extensions]', '\tpartialClone = origin',
          '[remote "origin"]', `\turl = ${url}`, '\tpromisor = true', '\tpartialclonefilter = blob:none', '',
        ];
        writeAtomic(path.join(gitdir, 'config'), config.join('\n'));
      }
    } catch (error) {
      throw diskError(error, path.dirname(gitdir), where) ?? new RemoteError('git', `cannot create the mirror at ${gitdir} (${where}): ${(error as Error).message}`, { cause: error });
    }
    return new Mirror(gitdir, where);
  }

  /**
   * Indexes a fetched pack and adds it (nothing for an empty pack). Packs fetched from the remote
   * are marked promisor packs (a `.promisor` file, as git's partial clone does).
   */
  async storePack(pack: Buffer, external?: ExternalBase): Promise<IndexedPack | undefined> {
    if (pack.length === 0) return undefined;
    const indexed = await indexPack(pack, external);
    const base = path.join(this.gitdir, 'objects', 'pack', `pack-${indexed.checksum}`);
    if (!fs.existsSync(`${base}.idx`)) {
      this.guard(() => {
        try {
          writeAtomic(`${base}.promisor`, '');
          writeAtomic(`${base}.pack`, pack);
          writeAtomic(`${base}.idx`, indexed.idx);
        } catch (error) {
          // an .idx is what makes a pack visible: without it, the rest is removed too
          if (!fs.existsSync(`${base}.idx`)) for (const ext of ['pack', 'promisor']) fs.rmSync(`${base}.${ext}`, { force: true });
          throw error;
        }
      });
    }
    this.packIndexes().set(`pack-${indexed.checksum}.idx`, indexed.idx);
    return indexed;
  }

  /** Whether the object is in the mirror (packed, or loose: written here before a push). */
  has(oid: string): boolean {
    if (this.hasPacked(oid)) return true;
    if (fs.existsSync(path.join(this.gitdir, 'objects', oid.slice(0, 2), oid.slice(2)))) return true;
    // another process may have added a pack since: only the new indexes are read
    return this.loadNewPacks() && this.hasPacked(oid);
  }

  /** Those of `oids` the mirror lacks (the pack folder listed once for all of them). */
  missing(oids: string[]): string[] {
    const lacking = (list: string[]) => list.filter((o) => !this.hasPacked(o) && !fs.existsSync(path.join(this.gitdir, 'objects', o.slice(0, 2), o.slice(2))));
    const first = lacking(oids);
    return first.length > 0 && this.loadNewPacks() ? lacking(first) : first;
  }

  /** Reads the indexes of packs added since they were listed; true when there were any. */
  private loadNewPacks(): boolean {
    const known = this.packIndexes();
    const dir = path.join(this.gitdir, 'objects', 'pack');
    let added = false;
    for (const n of fs.readdirSync(dir)) {
      if (!n.endsWith('.idx') || known.has(n)) continue;
      known.set(n, fs.readFileSync(path.join(dir, n)));
      added = true;
    }
    return added;
  }

  /** Whether the object is in a pack: it came from the remote, so the remote has it (and all it names). */
  isPacked(oid: string): boolean {
    return this.hasPacked(oid);
  }

  private hasPacked(oid: string): boolean {
    const key = Buffer.from(oid, 'hex');
    for (const idx of this.packIndexes().values()) if (idxContains(idx, key)) return true;
    return false;
  }

  private packIndexes(): Map<string, Buffer> {
    if (this.indexes) return this.indexes;
    const dir = path.join(this.gitdir, 'objects', 'pack');
    this.indexes = new Map(fs.readdirSync(dir).filter((n) => n.endsWith('.idx')).map((n) => [n, fs.readFileSync(path.join(dir, n))]));
    return this.indexes;
  }

  /** The number of packs (the compaction trigger). */
  packCount(): number {
    return fs.readdirSync(path.join(this.gitdir, 'objects', 'pack')).filter((n) => n.endsWith('.idx')).length;
  }

  readRef(ref: string): string | undefined {
    try {
      const text = fs.readFileSync(path.join(this.gitdir, ...ref.split('/')), 'utf8').trim();
      return /^[0-9a-f]{40}$/.test(text) ? text : undefined;
    } catch {
      return undefined;
    }
  }

  /** Sets (or deletes, with undefined) a ref; callers hold the lock. */
  writeRef(ref: string, oid: string | undefined): void {
    const file = path.join(this.gitdir, ...ref.split('/'));
    if (oid === undefined) {
      fs.rmSync(file, { force: true });
      return;
    }
    this.guard(() => {
      fs.mkdirSync(path.dirname(file), { recursive: true });
      writeAtomic(file, `${oid}\n`);
    });
  }

  readShallow(): Set<string> {
    try {
      return new Set(fs.readFileSync(path.join(this.gitdir, 'shallow'), 'utf8').split('\n').filter((l) => /^[0-9a-f]{40}$/.test(l)));
    } catch {
      return new Set();
    }
  }

  /** Replaces the shallow boundary; callers hold the lock. */
  writeShallow(oids: Set<string>): void {
    const file = path.join(this.gitdir, 'shallow');
    if (oids.size === 0) fs.rmSync(file, { force: true });
    else this.guard(() => writeAtomic(file, [...oids].sort().join('\n') + '\n'));
  }

  /**
   * Runs `fn` holding the mirror's lock file (O_EXCL, as git locks a ref). A lock older than
   * `staleMs` is taken to belong to a process that died, and is broken.
   */
  async locked<T>(fn: () => Promise<T> | T, opts: { timeoutMs?: number; staleMs?: number } = {}): Promise<T> {
    const lock = path.join(this.gitdir, 'lastgood-mirror.lock');
    const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
    for (let attempt = 0; ; attempt++) {
      try {
        fs.writeFileSync(lock, `${process.pid}\n`, { flag: 'wx' });
        break;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw new RemoteError('git', `cannot lock the mirror ${this.gitdir}: ${(error as Error).message}`, { cause: error });
        try {
          if (Date.now() - fs.statSync(lock).mtimeMs > (opts.staleMs ?? 30_000)) fs.rmSync(lock, { force: true });
        } catch {
          // gone meanwhile
        }
        if (Date.now() > deadline) throw new RemoteError('git', `the mirror ${this.gitdir} stayed locked (${lock}); if no lastgood process uses it, remove the file`);
        await sleep(backoffDelay(attempt, { baseMs: 2, maxMs: 100, spreadMs: 10 }));
      }
    }
    try {
      return await fn();
    } finally {
      fs.rmSync(lock, { force: true });
    }
  }
}

/** Binary search of a version 2 .idx for an object id (the fan-out table narrows it to one first byte). */
export function idxContains(idx: Buffer, oid: Buffer): boolean {
  const first = oid[0]!;
  let lo = first === 0 ? 0 : idx.readUInt32BE(8 + (first - 1) * 4);
  let hi = idx.readUInt32BE(8 + first * 4);
  const base = 8 + 256 * 4;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const cmp = idx.compare(oid, 0, 20, base + mid * 20, base + mid * 20 + 20);
    if (cmp === 0) return true;
    if (cmp < 0) lo = mid + 1;
    else hi = mid;
  }
  return false;
}

/** Writes a file whole or not at all: a temporary file renamed over the target; a failed write leaves no temporary file. */
export function writeAtomic(file: string, data: string | Uint8Array): void {
  const tmp = `${file}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    fs.writeFileSync(tmp, data);
    fs.renameSync(tmp, file);
  } catch (error) {
    fs.rmSync(tmp, { force: true });
    throw error;
  }
}
