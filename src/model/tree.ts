import path from 'node:path/posix';
import type { FileChange, RepoReader, TreeItem } from '../repo/types.ts';
import { blobOid } from '../revert/threeway.ts';
import { ABSENT, AS_FOLDER, Reads } from './reads.ts';
import { checkEntryName } from '../repo/tree-walk.ts';
import { Lru } from '../repo/lru.ts';
import { InputError } from '../errors.ts';

/**
 * One revision's tree as an engine reads it, over the RepoReader port (trees and blobs by oid,
 * cached per reader), optionally with a planned change laid over it (verify models the tree a
 * revert would make before anything is written). Paths are repo-relative, "/"-separated.
 *
 * A view records what it was asked (reads.ts): the entries it looked up, the folders it listed,
 * the names it searched for. A model built through it is the same at any revision where none of
 * that differs, which a tree diff tells without building it again (index.ts).
 */

export interface TreeEntry {
  type: 'blob' | 'tree' | 'commit';
  mode: string;
  oid: string;
}

export const SYMLINK = '120000';

/** Where a path leads once symlinks are handled as an engine handles them. */
export type Resolved =
  /** `via`: the symlinks followed on the way, each with its own blob (a retargeted link changes what is read) */
  | { kind: 'file'; path: string; oid: string; mode: string; via?: Link[] }
  | { kind: 'dir'; path: string; via?: Link[] }
  | { kind: 'absent' }
  /** a symlink the engine drops (Flux: symlinks are not in the source artifact) */
  | { kind: 'dropped'; link: string }
  /** a symlink pointing outside the repository (Argo CD refuses the repository; kustomize refuses the file) */
  | { kind: 'escapes'; link: string; target: string };

/** A symlink followed on the way to a file or folder: where it is and its own blob (the link's text). */
export interface Link {
  path: string;
  oid: string;
}

/** A tree read once: its entries in git's order and, once asked, by name. */
interface ReadTree {
  items: TreeItem[];
  /** built at the first lookup by name: a walk that only lists the tree (the `.sourceignore` search) never needs it */
  byName?: Map<string, TreeEntry>;
  /** the first name git refuses (`..`, `.git`): refused whenever the tree is used, naming the folder it was reached as */
  refused?: string;
}

/**
 * What one reader keeps, by weight (issue 22: every cache bounded, a long-running process
 * included). Trees by their entries, not their number: a monorepo's `apps/` of 2,200 folders is
 * read again at every revision that changed one of them, and a count let those pile up (a
 * history walk of 100 revisions held ~1 MB a revision). An entry held costs ~150 bytes (its name,
 * its oid, the item and its place in the index): 160,000 of them ~24 MB, three revisions of a
 * 50,000-file repository.
 */
const TREE_ENTRIES_KEPT = 160_000;
const BLOB_BYTES_KEPT = 24 * 1024 * 1024;
/** parsed forms by the size of the blob they came from (a parsed YAML document holds ~5 to 10 times its text) */
const PARSED_BYTES_KEPT = 4 * 1024 * 1024;
const PREFETCHED_KEPT = 200_000;
/** memoised parts by count, a list by its length (a folder's remembered walk lists what it found) */
const MEMO_KEPT = 60_000;

/**
 * Shared caches of one reader: trees and blobs are immutable, so every revision may share them.
 * Bounded (least recently used first out): a model walk over thousands of revisions of a large
 * repository holds what it uses now, not everything it ever read.
 */
export class ObjectCache {
  readonly reader: RepoReader;
  private readonly trees = new Lru<string, Promise<ReadTree> | ReadTree>(TREE_ENTRIES_KEPT, (t) => (t instanceof Promise ? 1 : t.items.length + 1));
  private readonly blobs = new Lru<string, { bytes: Promise<Uint8Array>; size: number }>(BLOB_BYTES_KEPT, (b) => b.size + 64);
  private readonly roots = new Lru<string, Promise<string>>(20_000);
  /** parsed forms of blobs, by a key the parser chooses (e.g. "k:<oid>"), weighed by the blob's size */
  private readonly parsed = new Lru<string, { value: unknown; size: number }>(PARSED_BYTES_KEPT, (p) => p.size + 64);
  /** blobs the reader was told it would read and fetched (a hint needs saying once) */
  readonly prefetched = new Lru<string, true>(PREFETCHED_KEPT);
  /** what model builds remember across revisions (memoised parts, keyed by the tree oids they depend on) */
  readonly memo = new Lru<string, unknown>(MEMO_KEPT, (v) => (Array.isArray(v) ? v.length : 0) + 1);

  constructor(reader: RepoReader) {
    this.reader = reader;
  }
  /** A tree, read once; a name git itself refuses (`..`, `.git`) is bad repository input naming the folder `under`, as the tree walk says it. */
  private read(oid: string, under = ''): Promise<ReadTree> | ReadTree {
    let p = this.trees.get(oid);
    if (!p) {
      const reading = readCheckedTree(this.reader, oid, under).then((items): ReadTree => {
        const refused = refusedName(items);
        const t: ReadTree = refused === undefined ? { items } : { items, refused };
        // once read, kept as the value: a lookup in a tree already read needs no await (nowIndex)
        if (this.trees.get(oid) === reading) this.trees.set(oid, t);
        return t;
      });
      this.trees.set(oid, reading);
      reading.catch(() => this.trees.delete(oid));
      p = reading;
    }
    return p;
  }
  /** A tree's entries; a name git itself refuses (`..`, `.git`) is bad repository input naming `under`, its folder, as the tree walk says it. */
  async tree(oid: string, under = ''): Promise<TreeItem[]> {
    return (await this.checked(oid, under)).items;
  }
  /** A tree's entries by name (shared: never change the map); refused names as `tree` says. */
  async index(oid: string, under = ''): Promise<Map<string, TreeEntry>> {
    return byNameOf(await this.checked(oid, under));
  }
  /**
   * A tree's entries by name when the tree was read already, else undefined: a path walk over
   * trees it has read costs no await per folder (a large graph resolves 100,000 paths).
   */
  nowIndex(oid: string, under = ''): Map<string, TreeEntry> | undefined {
    const t = this.trees.get(oid);
    if (t === undefined || t instanceof Promise) return undefined;
    if (t.refused !== undefined) checkEntryName(t.refused, under);
    return byNameOf(t);
  }
  private async checked(oid: string, under: string): Promise<ReadTree> {
    const t = await this.read(oid, under);
    if (t.refused !== undefined) checkEntryName(t.refused, under);
    return t;
  }
  blob(oid: string): Promise<Uint8Array> {
    const known = this.blobs.get(oid);
    if (known) return known.bytes;
    const bytes = this.reader.readBlob(oid);
    this.blobs.set(oid, { bytes, size: 0 });
    // weighed once read; a failed read is not kept
    bytes.then((b) => this.blobs.get(oid)?.bytes === bytes && this.blobs.set(oid, { bytes, size: b.byteLength }), () => this.blobs.delete(oid));
    return bytes;
  }
  rootTree(commit: string): Promise<string> {
    let p = this.roots.get(commit);
    if (!p) this.roots.set(commit, (p = this.reader.readCommit(commit).then((c) => c.tree)));
    return p;
  }
  /** Parses a blob once per key (while it is kept); `size`: the blob's bytes. */
  async parse<T>(key: string, oid: string, parse: (bytes: Uint8Array) => T): Promise<{ value: T; size: number }> {
    const known = this.parsed.get(key);
    if (known !== undefined) return known as { value: T; size: number };
    const bytes = await this.blob(oid);
    const value = parse(bytes);
    this.parsed.set(key, { value, size: bytes.byteLength });
    return { value, size: bytes.byteLength };
  }
}

async function readCheckedTree(reader: RepoReader, oid: string, under: string): Promise<TreeItem[]> {
  let entries: TreeItem[];
  try {
    entries = await reader.readTree(oid);
  } catch (error) {
    const e = error as { code?: string; data?: { filepath?: string } };
    if (e?.code === 'UnsafeFilepathError') checkEntryName(e.data?.filepath ?? '..', under);
    throw error;
  }
  return entries;
}

/** A tree's entries by name, indexed at the first lookup. */
function byNameOf(t: ReadTree): Map<string, TreeEntry> {
  if (t.byName) return t.byName;
  // a tree item is an entry (type, mode, oid) with its name: indexed as it is, not copied
  const byName = new Map<string, TreeEntry>();
  for (const e of t.items) byName.set(e.path, e as TreeItem & TreeEntry);
  t.byName = byName;
  return byName;
}

const PLAIN_NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/;

/** The first entry name git refuses (checkEntryName), if any. */
function refusedName(items: TreeItem[]): string | undefined {
  for (const e of items) {
    // most names are plain (not starting with a dot, no "/" or NUL): none of those is refused
    if (PLAIN_NAME.test(e.path)) continue;
    try {
      checkEntryName(e.path, '');
    } catch {
      return e.path;
    }
  }
  return undefined;
}

interface OverlayFile {
  oid: string;
  mode: string;
  content?: Uint8Array;
}

/** The way from the root to a folder: its tree, or where it stops being a folder (that entry as read). */
type Way = { oid: string } | { oid: undefined; failed: string; value: string };
/** what a lookup without an await answers when a tree on the way is not read yet */
const NOT_READ = Symbol('not read');

/** True when `a` comes strictly before `b` in git's tree order (by UTF-16 units here: a name beyond ASCII may say false, never wrongly true). */
function gitOrdered(a: TreeItem, b: TreeItem): boolean {
  const x = a.path;
  const y = b.path;
  const n = Math.min(x.length, y.length);
  for (let i = 0; i < n; i++) {
    const cx = x.charCodeAt(i);
    const cy = y.charCodeAt(i);
    if (cx !== cy) return cx < cy;
  }
  // one name starts the other: a folder's name goes on with "/"
  const nx = x.length > n ? x.charCodeAt(n) : a.type === 'tree' ? 47 : -1;
  const ny = y.length > n ? y.charCodeAt(n) : b.type === 'tree' ? 47 : -1;
  return nx < ny;
}

/** What a search below a folder without the name finds (shared: most folders have none). */
const NOTHING_FOUND: Array<{ path: string; oid: string }> = [];

const entryText = (e: TreeEntry | undefined) => (e ? `${e.mode} ${e.oid}` : ABSENT);

/**
 * The bounds of what the builds of one tree read (a target's manifests at one revision), stated in
 * docs/security.md: the files a model reads and their bytes, each file counted once. A commit that
 * puts hundreds of large files where a target's build reads them would otherwise hold them all in
 * a controller with 512 MiB. For scale: Argo CD's repo-server refuses a directory app whose
 * manifests total more than 10M (reposerver.max.combined.directory.manifests.size, its default).
 */
export const BUILD_BOUNDS = {
  maxBytes: 64 << 20,
  maxFiles: 20_000,
} as const;

/** A build beyond BUILD_BOUNDS: refused naming the file that crossed it (exit 2). */
export class BuildBoundError extends InputError {}

class BuildBudget {
  private bytes = 0;
  private readonly seen = new Set<string>();
  count(oid: string, size: number, where: string | undefined): void {
    if (this.seen.has(oid)) return;
    this.seen.add(oid);
    this.bytes += size;
    const over = this.bytes > BUILD_BOUNDS.maxBytes ? `more than ${BUILD_BOUNDS.maxBytes >> 20} MiB of files` : this.seen.size > BUILD_BOUNDS.maxFiles ? `more than ${BUILD_BOUNDS.maxFiles.toLocaleString('en-US')} files` : undefined;
    if (over) throw new BuildBoundError(`reading it, the target's build at this revision reads ${over}: refused as beyond lastgood's bounds (docs/security.md)`, { file: where ?? `blob ${oid}` });
  }
}

/** Files below the folders a walk reads whole that are fetched ahead (beyond: when read). */
const PREFETCH_WHOLE = 2000;

export class TreeView {
  private readonly cache: ObjectCache;
  /** the revision's root tree */
  readonly root: string;
  private readonly written = new Map<string, OverlayFile>();
  private readonly deleted = new Set<string>();
  private readonly listings = new Map<string, Promise<Map<string, TreeEntry>>>();
  private readonly ways = new Map<string, Promise<Way>>();
  /** the ways known without an await (every tree on them read already) */
  private readonly waysNow = new Map<string, Way>();
  /** what this view was asked, in the order of the builds nested in it (the innermost records) */
  private readonly sinks: Reads[] = [new Reads()];
  /** what the builds over this tree read, against BUILD_BOUNDS (shared with its forks: one tree, one budget) */
  private budget = new BuildBudget();

  /** the commit whose tree this is (a backend that reads by path asks for it) */
  readonly commit: string | undefined;

  private constructor(cache: ObjectCache, root: string, commit?: string) {
    this.cache = cache;
    this.root = root;
    this.commit = commit;
  }

  static async at(cache: ObjectCache, commit: string): Promise<TreeView> {
    return new TreeView(cache, await cache.rootTree(commit), commit);
  }

  /** The tree of `commit` with `files` written over it (deletions remove the file). */
  static async withChange(cache: ObjectCache, commit: string, files: FileChange[]): Promise<TreeView> {
    const view = new TreeView(cache, await cache.rootTree(commit));
    const algorithm = commit.length === 64 ? 'sha256' : 'sha1';
    for (const f of files) {
      if ('delete' in f) view.deleted.add(f.path);
      else if ('content' in f) view.written.set(f.path, { oid: blobOid(f.content, algorithm), mode: f.mode, content: f.content });
      else view.written.set(f.path, { oid: f.oid, mode: f.mode });
    }
    return view;
  }

  /** The same tree (and planned change) with nothing read yet: a build whose reads are not this one's. */
  fork(): TreeView {
    const view = new TreeView(this.cache, this.root, this.commit);
    view.budget = this.budget;
    for (const [p, f] of this.written) view.written.set(p, f);
    for (const p of this.deleted) view.deleted.add(p);
    return view;
  }

  /** Everything read through this view so far (reads.ts: tells another revision that reads the same). */
  get reads(): Reads {
    return this.sinks[0]!;
  }

  /** True when a planned change lies over the revision's tree (nothing read here is remembered across revisions). */
  get changed(): boolean {
    return this.written.size > 0 || this.deleted.size > 0;
  }

  /** Memoised parts of model builds, shared by every revision of the reader. */
  get memo(): Lru<string, unknown> {
    return this.cache.memo;
  }

  private record(): Reads {
    return this.sinks[this.sinks.length - 1]!;
  }

  /** Runs `fn` recording its reads apart (and in the whole): what a memoised part of a build depends on. */
  async collect<T>(fn: () => Promise<T>): Promise<{ value: T; reads: Reads }> {
    const reads = new Reads();
    this.sinks.push(reads);
    try {
      const value = await fn();
      return { value, reads };
    } finally {
      this.sinks.splice(this.sinks.lastIndexOf(reads), 1);
      this.record().add(reads);
    }
  }

  /** Adds the reads of a memoised part that this build reuses. */
  replay(reads: Reads): void {
    this.record().add(reads);
  }

  /**
   * The entry at `p` (as `entry` reads it: no symlink followed on the way), recorded as a guard
   * (reads.ts): a rule of the build that lives above the part being read.
   */
  async guardEntry(p: string): Promise<TreeEntry | undefined> {
    const c = clean(p);
    const e = await this.peek(c);
    this.record().guard(c, entryText(e));
    return e;
  }

  /** Records a guard already read (a rule asked again by another part of the build). */
  guard(p: string, value: string): void {
    this.record().guard(p, value);
  }

  /** True when every guard of `reads` (and of the parts it holds) reads the same in this view. */
  async guardsHold(reads: Reads): Promise<boolean> {
    for (const [p, value] of reads.allGuards()) {
      if (entryText(await this.peek(p)) !== value) return false;
      this.record().guard(p, value);
    }
    return true;
  }

  /** The entry at a clean path, recording nothing. */
  private async peek(c: string): Promise<TreeEntry | undefined> {
    const slash = c.lastIndexOf('/');
    const dir = slash < 0 ? '' : c.slice(0, slash);
    const name = slash < 0 ? c : c.slice(slash + 1);
    if (this.changed) return (await this.listUncachedShared(dir)).get(name);
    const w = this.wayNow(dir) ?? (await this.walkWayShared(dir));
    return w.oid === undefined ? undefined : (await this.cache.index(w.oid, dir)).get(name);
  }

  private walkWayShared(dir: string): Promise<Way> {
    let way = this.ways.get(dir);
    if (!way) this.ways.set(dir, (way = this.walkWay(dir)));
    return way;
  }

  /** Records that every file named `name` below `dir` was looked for (the caller walks to find them). */
  searched(dir: string, name: string): void {
    this.record().search(clean(dir), name);
  }

  /**
   * The oid of the real tree at `dir` (no symlink followed), recording nothing: what a memoised
   * part keys on. Undefined when absent, not a folder, or when the planned change lies under it.
   */
  async treeOidAt(dir: string): Promise<string | undefined> {
    const d = clean(dir);
    if (this.changed) {
      const prefix = d ? `${d}/` : '';
      for (const p of [...this.written.keys(), ...this.deleted]) if (p === d || p.startsWith(prefix)) return undefined;
    }
    const known = this.wayNow(d);
    if (known) return known.oid;
    let oid = this.root;
    let at = '';
    for (const part of d ? d.split('/') : []) {
      const e = (await this.cache.index(oid, at)).get(part);
      at = at ? `${at}/${part}` : part;
      if (!e || e.type !== 'tree') return undefined;
      oid = e.oid;
    }
    return oid;
  }

  /**
   * Records that the build depends on everything below `dir` (its tree oid, returned): what a part
   * that reads a whole folder (Flux's generated kustomization) depends on, in one record.
   */
  async dependOnTree(dir: string): Promise<string | undefined> {
    const d = clean(dir);
    const e = d === '' ? { type: 'tree' as const, mode: '040000', oid: this.root } : await this.entry(d);
    return e?.type === 'tree' ? e.oid : undefined;
  }

  /** The entries of a tree by oid, recording nothing: for a walk memoised by that oid (its caller recorded the oid). */
  entriesOf(treeOid: string, dir = ''): Promise<Map<string, TreeEntry>> {
    return this.cache.index(treeOid, dir);
  }

  /**
   * Tells a reader that fetches on demand (git over HTTPS) which files below `dir` a build is
   * about to read (those whose name `wanted` accepts, `kind` naming the rule), so it asks for them
   * in one request. Records nothing: it reads only trees. Nothing is done for a reader that reads
   * locally.
   */
  /** True when the reader fetches on demand and takes hints of what is read next (RepoReader.prefetch). */
  get prefetches(): boolean {
    return Boolean(this.cache.reader.prefetch) && !this.changed;
  }

  /** Tells the reader the folder at `dir` is about to be walked whole (a backend may list it in one request). */
  async prefetchTree(dir: string): Promise<void> {
    const reader = this.cache.reader;
    if (!reader.prefetchTrees || this.changed) return;
    const oid = await this.treeOidAt(dir);
    if (oid !== undefined) await reader.prefetchTrees([oid]);
  }

  /** Tells the reader these blobs are read next (nothing for a reader that reads locally, nor for blobs it was told of before). */
  async prefetchBlobs(oids: string[]): Promise<void> {
    if (!this.prefetches || oids.length === 0) return;
    // the reader has what it fetched (objects never change): each build of a walk names the same few thousand kustomizations again
    const told = this.cache.prefetched;
    const fresh = oids.filter((o) => !told.has(o));
    if (fresh.length === 0) return;
    await this.cache.reader.prefetch!(fresh);
    for (const o of fresh) told.set(o, true);
  }

  /**
   * Tells a reader that fetches on demand which folders are read next: `ways` as listings (the
   * folders on the way), `wholes` with every file below them. A reader that reads by path
   * (RepoReader.prefetchPaths) gets them in one request; one that has the trees and fetches blobs
   * (a blob-less mirror) gets the blobs those folders hold (the kustomizations of the ways, every
   * file of the wholes, at most PREFETCH_WHOLE of them). Records nothing.
   */
  async prefetchFolders(ways: string[], wholes: string[]): Promise<void> {
    await TreeView.prefetchFolders([{ view: this, ways, wholes }]);
  }

  /** `prefetchFolders` of several views (revisions of one repository) together: one request for all. */
  static async prefetchFolders(asked: Array<{ view: TreeView; ways: string[]; wholes: string[] }>): Promise<void> {
    const live = asked.filter((a) => !a.view.changed);
    const reader = live[0]?.view.cache.reader;
    if (!reader) return;
    if (reader.prefetchPaths) {
      const wanted = live.filter((a) => a.view.commit).flatMap(({ view, ways, wholes }) => [
        ...ways.filter((w) => !wholes.includes(w)).map((path) => ({ commit: view.commit!, path, whole: false })),
        ...wholes.map((path) => ({ commit: view.commit!, path, whole: true })),
      ]);
      if (wanted.length) await reader.prefetchPaths(wanted);
      return;
    }
    if (!reader.prefetch) return;
    const oids: string[] = [];
    for (const { view, ways, wholes } of live) {
      for (const w of ways) {
        const oid = await view.treeOidAt(w);
        if (oid === undefined) continue;
        for (const [name, e] of await view.cache.index(oid, w)) if (e.type === 'blob' && e.mode !== SYMLINK && /^(kustomization\.ya?ml|Kustomization)$/.test(name)) oids.push(e.oid);
      }
      const below = async (oid: string, at: string): Promise<void> => {
        for (const [name, e] of await view.cache.index(oid, at)) {
          if (oids.length >= PREFETCH_WHOLE) return;
          if (e.type === 'tree') await below(e.oid, at ? `${at}/${name}` : name);
          else if (e.type === 'blob' && e.mode !== SYMLINK) oids.push(e.oid);
        }
      };
      for (const w of wholes) {
        const e = await view.peek(clean(w));
        if (e?.type === 'tree') await below(e.oid, clean(w));
        else if (e?.type === 'blob' && e.mode !== SYMLINK) oids.push(e.oid);
      }
    }
    await live[0]!.view.prefetchBlobs(oids);
  }

  async prefetch(dir: string, kind: string, wanted: (name: string) => boolean): Promise<void> {
    const reader = this.cache.reader;
    if (!reader.prefetch || this.changed) return;
    const walk = async (oid: string, at: string): Promise<string[]> => {
      const key = `prefetch|${kind}|${oid}`;
      const known = this.cache.memo.get(key) as string[] | undefined;
      if (known) return known;
      const out: string[] = [];
      for (const [name, e] of await this.cache.index(oid, at)) {
        if (e.type === 'tree') out.push(...(await walk(e.oid, at ? `${at}/${name}` : name)));
        else if (e.type === 'blob' && e.mode !== SYMLINK && wanted(name)) out.push(e.oid);
      }
      this.cache.memo.set(key, out);
      return out;
    };
    const oid = await this.treeOidAt(dir);
    if (oid !== undefined) await reader.prefetch(await walk(oid, clean(dir)));
  }

  /** The entries of a folder by name (empty when it is not a folder). Shared: never change the map. */
  async list(dir: string): Promise<Map<string, TreeEntry>> {
    const key = clean(dir);
    this.record().listing(key);
    let p = this.listings.get(key);
    if (!p) this.listings.set(key, (p = this.listUncached(key)));
    return p;
  }

  private async listUncached(dir: string): Promise<Map<string, TreeEntry>> {
    const base = await this.baseTreeOid(dir);
    if (!this.changed) return base ? this.cache.index(base, dir) : new Map();
    const out = new Map<string, TreeEntry>(base ? await this.cache.index(base, dir) : []);
    const prefix = dir ? `${dir}/` : '';
    for (const p of this.deleted) if (p.startsWith(prefix) && !p.slice(prefix.length).includes('/')) out.delete(p.slice(prefix.length));
    for (const [p, f] of this.written) {
      if (!p.startsWith(prefix)) continue;
      const rest = p.slice(prefix.length);
      const slash = rest.indexOf('/');
      if (slash < 0) out.set(rest, { type: 'blob', mode: f.mode, oid: f.oid });
      else if (!out.has(rest.slice(0, slash)) || out.get(rest.slice(0, slash))!.type !== 'tree') out.set(rest.slice(0, slash), { type: 'tree', mode: '040000', oid: `overlay:${prefix}${rest.slice(0, slash)}` });
    }
    // a folder whose every file was deleted is gone, as git would have it
    for (const [name, e] of [...out]) {
      const sub = `${prefix}${name}/`;
      if (e.type === 'tree' && [...this.deleted].some((d) => d.startsWith(sub)) && (await this.isEmptyDir(`${prefix}${name}`))) out.delete(name);
    }
    return out;
  }

  private async isEmptyDir(dir: string): Promise<boolean> {
    const entries = await this.list(dir);
    return entries.size === 0;
  }

  /**
   * The oid of the base tree at `dir` (walking real trees only), undefined when absent or not a
   * tree. A way that fails records where it failed (a path found below it reads the rest).
   */
  private async baseTreeOid(dir: string): Promise<string | undefined> {
    const w = this.wayNow(dir) ?? (await this.walkWayShared(dir));
    if ('failed' in w) this.record().entry(w.failed, w.value);
    return w.oid;
  }

  /**
   * The way to the base tree at `dir` when every tree on it was read already, else undefined:
   * the same answer as walkWay without an await per folder (a large graph resolves 100,000 paths
   * through the same few thousand folders).
   */
  private wayNow(dir: string): Way | undefined {
    const known = this.waysNow.get(dir);
    if (known) return known;
    let w: Way;
    if (dir === '') w = { oid: this.root };
    else {
      const slash = dir.lastIndexOf('/');
      const parent = slash < 0 ? '' : dir.slice(0, slash);
      const up = this.wayNow(parent);
      if (!up) return undefined;
      if (up.oid === undefined) w = up;
      else {
        const entries = this.cache.nowIndex(up.oid, parent);
        if (!entries) return undefined;
        const e = entries.get(dir.slice(slash + 1));
        w = !e || e.type !== 'tree' ? { oid: undefined, failed: dir, value: entryText(e) } : { oid: e.oid };
      }
    }
    this.waysNow.set(dir, w);
    return w;
  }

  private async walkWay(dir: string): Promise<Way> {
    let oid = this.root;
    let at = '';
    for (const part of dir ? dir.split('/') : []) {
      const e = (await this.cache.index(oid, at)).get(part);
      at = at ? `${at}/${part}` : part;
      if (!e || e.type !== 'tree') return { oid: undefined, failed: at, value: entryText(e) };
      oid = e.oid;
    }
    return { oid };
  }

  /**
   * One entry of a folder, as the view has it (recording the entry only, not the folder's
   * listing). A folder on the way to a deeper path is not recorded: what is read below it is.
   */
  private async child(dir: string, name: string, onTheWay = false, asFolder = false): Promise<TreeEntry | undefined> {
    const now = this.childNow(dir, name, onTheWay, asFolder);
    if (now !== NOT_READ) return now;
    let e: TreeEntry | undefined;
    if (this.changed) e = (await this.listUncachedShared(dir)).get(name);
    else {
      const base = await this.baseTreeOid(dir);
      e = base ? (await this.cache.index(base, dir)).get(name) : undefined;
    }
    if (!(onTheWay && e?.type === 'tree')) this.record().entry(dir ? `${dir}/${name}` : name, asFolder && e?.type === 'tree' ? AS_FOLDER : entryText(e));
    return e;
  }

  /** `child` without an await where the trees on the way were read already (recording the same), else NOT_READ (nothing recorded). */
  private childNow(dir: string, name: string, onTheWay: boolean, asFolder: boolean): TreeEntry | undefined | typeof NOT_READ {
    if (this.changed) return NOT_READ;
    const w = this.wayNow(dir);
    if (!w) return NOT_READ;
    let e: TreeEntry | undefined;
    if (w.oid === undefined) this.record().entry(w.failed, w.value);
    else {
      const entries = this.cache.nowIndex(w.oid, dir);
      if (!entries) return NOT_READ;
      e = entries.get(name);
    }
    if (!(onTheWay && e?.type === 'tree')) this.record().entry(dir ? `${dir}/${name}` : name, asFolder && e?.type === 'tree' ? AS_FOLDER : entryText(e));
    return e;
  }

  private listUncachedShared(dir: string): Promise<Map<string, TreeEntry>> {
    let p = this.listings.get(dir);
    if (!p) this.listings.set(dir, (p = this.listUncached(dir)));
    return p;
  }

  /** The raw entry at a path (no symlink followed on the way: a path through one is absent). */
  async entry(p: string): Promise<TreeEntry | undefined> {
    const c = clean(p);
    if (c === '') return { type: 'tree', mode: '040000', oid: this.root };
    const parts = c.split('/');
    // the parent must be a real folder all the way up (a symlinked folder on the way is not one)
    let dir = '';
    for (let i = 0; i < parts.length - 1; i++) {
      const now = this.childNow(dir, parts[i]!, true, false);
      const e = now === NOT_READ ? await this.child(dir, parts[i]!, true) : now;
      if (!e || e.type !== 'tree') return undefined;
      dir = dir ? `${dir}/${parts[i]}` : parts[i]!;
    }
    const now = this.childNow(dir, parts[parts.length - 1]!, false, false);
    return now === NOT_READ ? this.child(dir, parts[parts.length - 1]!) : now;
  }

  /**
   * Every file named `name` below `dir` (symlinks left out), folders before their sub-folders and
   * in name order, as a walk would find them; recorded as one search, not as the folders listed.
   * Memoised by the folder's tree oid, so a revision costs only its changed folders.
   */
  async findNamed(dir: string, name: string): Promise<Array<{ path: string; oid: string }>> {
    const d = clean(dir);
    this.searched(d, name);
    /** the files below the tree `oid` (the folder `at`), relative to it */
    const below = async (oid: string, at: string): Promise<Array<{ path: string; oid: string }>> => {
      const key = `named|${name}|${oid}`;
      const known = this.cache.memo.get(key) as Array<{ path: string; oid: string }> | undefined;
      if (known) return known;
      // the tree's items in git's order, not its index by name: most folders of a large spec.path
      // are listed only here, and a Map per folder was most of this walk's memory
      const items = await this.cache.tree(oid, at);
      let own: TreeItem | undefined;
      let folders: Array<{ name: string; found: Array<{ path: string; oid: string }> }> | undefined;
      // in git's order (a folder sorted as if its name ended with "/"), a name appears at most as
      // a file and then a folder, and by name the last counts (the folder), as in the tree's
      // index; anything else (a crafted tree) is read through the index, one entry a name
      let ordered = true;
      for (let i = 0; i < items.length; i++) {
        if (i > 0 && !gitOrdered(items[i - 1]!, items[i]!)) ordered = false;
        if (items[i]!.path === name) own = items[i];
      }
      const entries = ordered ? items : [...(await this.cache.index(oid, at))].map(([n, e]): TreeItem => ({ ...e, path: n }));
      if (!ordered) own = entries.find((e) => e.path === name);
      for (const e of entries) {
        if (e.type !== 'tree' || e.path === '.git') continue;
        const found = await below(e.oid, at ? `${at}/${e.path}` : e.path);
        if (found.length > 0) (folders ??= []).push({ name: e.path, found });
      }
      const hasOwn = own !== undefined && own.type === 'blob' && own.mode !== SYMLINK;
      let out = NOTHING_FOUND;
      if (hasOwn || folders) {
        out = hasOwn ? [{ path: name, oid: own!.oid }] : [];
        // folders in name order (git orders a folder as if its name ended with "/")
        for (const { name: n, found } of (folders ?? []).sort((a, b) => (a.name < b.name ? -1 : 1))) for (const f of found) out.push({ path: `${n}/${f.path}`, oid: f.oid });
      }
      this.cache.memo.set(key, out);
      return out;
    };
    const walk = async (sub: string, oid: string | undefined): Promise<Array<{ path: string; oid: string }>> => {
      if (oid === undefined) return [];
      const prefix = sub ? `${sub}/` : '';
      return (await below(oid, sub)).map((f) => ({ path: `${prefix}${f.path}`, oid: f.oid }));
    };
    if (!this.changed) return walk(d, await this.treeOidAt(d));
    // a planned change over the tree: what the view shows where it lies, the remembered walk elsewhere
    const out: Array<{ path: string; oid: string }> = [];
    const walkView = async (sub: string): Promise<void> => {
      const base = await this.treeOidAt(sub);
      if (base !== undefined) {
        out.push(...(await walk(sub, base)));
        return;
      }
      const entries = [...(await this.listUncachedShared(sub))].sort(([a], [b]) => (a < b ? -1 : 1));
      const own = entries.find(([n, e]) => n === name && e.type === 'blob' && e.mode !== SYMLINK);
      if (own) out.push({ path: sub ? `${sub}/${name}` : name, oid: own[1].oid });
      for (const [n, e] of entries) if (e.type === 'tree' && n !== '.git') await walkView(sub ? `${sub}/${n}` : n);
    };
    if (d === '' || (await this.listUncachedShared(path.dirname(d) === '.' ? '' : path.dirname(d))).get(path.basename(d))?.type === 'tree') await walkView(d);
    return out;
  }

  /** A file's bytes; `where`, its path, names it where the build's bounds refuse it. */
  async read(oid: string, where?: string): Promise<Uint8Array> {
    const bytes = this.plannedContent(oid) ?? (await this.cache.blob(oid));
    this.budget.count(oid, bytes.byteLength, where);
    return bytes;
  }

  /** The content of a file the planned change writes, by its oid (it is in no repository yet). */
  private plannedContent(oid: string): Uint8Array | undefined {
    for (const f of this.written.values()) if (f.oid === oid && f.content) return f.content;
    return undefined;
  }

  /** Parses a blob once (per reader): `kind` separates readings of the same bytes; `where` as for `read`. */
  async parse<T>(kind: string, oid: string, parse: (bytes: Uint8Array) => T, where?: string): Promise<T> {
    const planned = this.plannedContent(oid);
    if (planned) {
      this.budget.count(oid, planned.byteLength, where);
      return parse(planned);
    }
    const { value, size } = await this.cache.parse(`${kind}:${oid}`, oid, parse);
    this.budget.count(oid, size, where);
    return value;
  }

  /**
   * Where `p` leads. `symlinks: 'drop'` is Flux's source artifact (symlinks are left out of the
   * archive: fluxcd/pkg artifact/storage/archive.go "Ignore anything that is not a file or
   * directories e.g. symlinks"); `'follow'` is Argo CD's repo-server and kustomize on a checkout,
   * which follow a link that stays inside the repository (argo-cd reposerver/repository/repository.go
   * getPotentiallyValidManifestFile) and refuse one that leaves it.
   */
  async resolve(p: string, symlinks: 'drop' | 'follow', depth = 0, via: Link[] = []): Promise<Resolved> {
    const c = clean(p);
    const parts = c === '' ? [] : c.split('/');
    let current = '';
    for (let i = 0; i < parts.length; i++) {
      const next = current ? `${current}/${parts[i]}` : parts[i]!;
      // a folder is told as a folder (its oid is not shown): only that it is one is read
      const now = this.childNow(current, parts[i]!, i < parts.length - 1, true);
      const e = now === NOT_READ ? await this.child(current, parts[i]!, i < parts.length - 1, true) : now;
      if (!e) return { kind: 'absent' };
      if (e.mode === SYMLINK) {
        if (symlinks === 'drop') return { kind: 'dropped', link: next };
        if (depth > 16) return { kind: 'escapes', link: next, target: '(a loop of symlinks)' };
        const target = Buffer.from(await this.read(e.oid)).toString('utf8');
        const joined = target.startsWith('/') ? target : path.join(current || '.', target);
        const normal = path.normalize(joined);
        if (target.startsWith('/') || normal === '..' || normal.startsWith('../')) return { kind: 'escapes', link: next, target };
        const rest = parts.slice(i + 1).join('/');
        return this.resolve(rest ? `${normal}/${rest}` : normal, symlinks, depth + 1, [...via, { path: next, oid: e.oid }]);
      }
      if (i === parts.length - 1) {
        const links = via.length ? { via } : {};
        if (e.type === 'tree') return { kind: 'dir', path: next, ...links };
        if (e.type === 'blob') return { kind: 'file', path: next, oid: e.oid, mode: e.mode, ...links };
        return { kind: 'absent' };
      }
      if (e.type !== 'tree') return { kind: 'absent' };
      current = next;
    }
    return { kind: 'dir', path: '', ...(via.length ? { via } : {}) };
  }
}

/** "./a//b/" → "a/b"; the root is "". */
export function clean(p: string): string {
  if (isClean(p)) return p;
  const n = path.normalize(p || '.').replace(/\/+$/, '');
  return n === '.' ? '' : n.replace(/^\.\//, '');
}

/** `rel` joined to `dir`, normalised; undefined when it leaves the repository. */
export function joinInside(dir: string, rel: string): string | undefined {
  if (rel.startsWith('/')) return undefined;
  if ((dir === '' || isClean(dir)) && isClean(rel)) return dir ? `${dir}/${rel}` : rel;
  const n = path.normalize(path.join(dir || '.', rel));
  if (n === '..' || n.startsWith('../')) return undefined;
  return n === '.' ? '' : n.replace(/\/+$/, '');
}

/**
 * True when `p` is already as `clean` makes it (most paths a graph names: `deployment.yaml`,
 * `apps/x/base`): relative, no empty, `.` or `..` segment, no "/" at either end. Such a path
 * normalises to itself, which a walk of 100,000 paths need not compute.
 */
function isClean(p: string): boolean {
  const n = p.length;
  if (n === 0 || p.charCodeAt(0) === 47 || p.charCodeAt(n - 1) === 47) return false;
  for (let start = 0, i = 0; i <= n; i++) {
    if (i < n && p.charCodeAt(i) !== 47) continue;
    const len = i - start;
    if (len === 0) return false;
    if (p.charCodeAt(start) === 46 && (len === 1 || (len === 2 && p.charCodeAt(start + 1) === 46))) return false;
    start = i + 1;
  }
  return true;
}

/** True when `file` is `dir` or lies below it ("" is the root). */
export function within(file: string, dir: string): boolean {
  return dir === '' || file === dir || file.startsWith(`${dir}/`);
}
