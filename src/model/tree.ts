import path from 'node:path/posix';
import type { FileChange, RepoReader, TreeItem } from '../repo/types.ts';
import { blobOid } from '../revert/threeway.ts';
import { checkEntryName } from '../deliver/tree-walk.ts';

/**
 * One revision's tree as an engine reads it, over the RepoReader port (trees and blobs by oid,
 * cached per reader), optionally with a planned change laid over it (verify models the tree a
 * revert would make before anything is written). Paths are repo-relative, "/"-separated.
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

/** Shared caches of one reader: trees and blobs are immutable, so every revision may share them. */
export class ObjectCache {
  readonly reader: RepoReader;
  private readonly trees = new Map<string, Promise<TreeItem[]>>();
  private readonly blobs = new Map<string, Promise<Uint8Array>>();
  private readonly roots = new Map<string, Promise<string>>();
  /** parsed forms of blobs, by a key the parser chooses (e.g. "k:<oid>") */
  readonly parsed = new Map<string, unknown>();

  constructor(reader: RepoReader) {
    this.reader = reader;
  }
  /** A tree's entries; a name git itself refuses (`..`, `.git`) is bad repository input, as the tree walk says it. */
  tree(oid: string, under = ''): Promise<TreeItem[]> {
    let p = this.trees.get(oid);
    if (!p) this.trees.set(oid, (p = readCheckedTree(this.reader, oid, under)));
    return p;
  }
  blob(oid: string): Promise<Uint8Array> {
    let p = this.blobs.get(oid);
    if (!p) this.blobs.set(oid, (p = this.reader.readBlob(oid)));
    return p;
  }
  rootTree(commit: string): Promise<string> {
    let p = this.roots.get(commit);
    if (!p) this.roots.set(commit, (p = this.reader.readCommit(commit).then((c) => c.tree)));
    return p;
  }
  /** Parses a blob once per key. */
  async parse<T>(key: string, oid: string, parse: (bytes: Uint8Array) => T): Promise<T> {
    if (this.parsed.has(key)) return this.parsed.get(key) as T;
    const value = parse(await this.blob(oid));
    this.parsed.set(key, value);
    return value;
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
  for (const e of entries) checkEntryName(e.path, under);
  return entries;
}

interface OverlayFile {
  oid: string;
  mode: string;
  content?: Uint8Array;
}

export class TreeView {
  private readonly cache: ObjectCache;
  private readonly root: string;
  private readonly written = new Map<string, OverlayFile>();
  private readonly deleted = new Set<string>();
  private readonly listings = new Map<string, Promise<Map<string, TreeEntry>>>();

  private constructor(cache: ObjectCache, root: string) {
    this.cache = cache;
    this.root = root;
  }

  static async at(cache: ObjectCache, commit: string): Promise<TreeView> {
    return new TreeView(cache, await cache.rootTree(commit));
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

  /** The entries of a folder by name (empty when it is not a folder). */
  async list(dir: string): Promise<Map<string, TreeEntry>> {
    const key = clean(dir);
    let p = this.listings.get(key);
    if (!p) this.listings.set(key, (p = this.listUncached(key)));
    return p;
  }

  private async listUncached(dir: string): Promise<Map<string, TreeEntry>> {
    const out = new Map<string, TreeEntry>();
    const base = await this.baseTreeOid(dir);
    if (base) for (const e of await this.cache.tree(base, dir)) out.set(e.path, { type: e.type as TreeEntry['type'], mode: e.mode, oid: e.oid });
    if (this.written.size === 0 && this.deleted.size === 0) return out;
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

  /** The oid of the base tree at `dir` (walking real trees only), undefined when absent or not a tree. */
  private async baseTreeOid(dir: string): Promise<string | undefined> {
    let oid = this.root;
    let at = '';
    for (const part of dir ? dir.split('/') : []) {
      const e = (await this.cache.tree(oid, at)).find((x) => x.path === part);
      at = at ? `${at}/${part}` : part;
      if (!e || e.type !== 'tree') return undefined;
      oid = e.oid;
    }
    return oid;
  }

  /** The raw entry at a path (no symlink followed on the way: a path through one is absent). */
  async entry(p: string): Promise<TreeEntry | undefined> {
    const c = clean(p);
    if (c === '') return { type: 'tree', mode: '040000', oid: this.root };
    const dir = path.dirname(c) === '.' ? '' : path.dirname(c);
    // the parent must be a real folder all the way up (a symlinked folder on the way is not one)
    if (dir !== '') {
      const parent = await this.entry(dir);
      if (!parent || parent.type !== 'tree') return undefined;
    }
    return (await this.list(dir)).get(path.basename(c));
  }

  async read(oid: string): Promise<Uint8Array> {
    for (const f of this.written.values()) if (f.oid === oid && f.content) return f.content;
    return this.cache.blob(oid);
  }

  /** Parses a blob once (per reader): `kind` separates readings of the same bytes. */
  parse<T>(kind: string, oid: string, parse: (bytes: Uint8Array) => T): Promise<T> {
    for (const f of this.written.values()) if (f.oid === oid && f.content) return Promise.resolve(parse(f.content));
    return this.cache.parse(`${kind}:${oid}`, oid, parse);
  }

  /**
   * Where `p` leads. `symlinks: 'drop'` is Flux's source artifact (symlinks are left out of the
   * archive: fluxcd/pkg artifact/storage/archive.go "Ignore anything that is not a file or
   * directories e.g. symlinks"); `'follow'` is Argo CD's repo-server and kustomize on a checkout,
   * which follow a link that stays inside the repository (argo-cd reposerver/repository/repository.go
   * getPotentiallyValidManifestFile) and refuse one that leaves it.
   */
  async resolve(p: string, symlinks: 'drop' | 'follow', depth = 0, via: Link[] = []): Promise<Resolved> {
    const parts = clean(p).split('/').filter(Boolean);
    let current = '';
    for (let i = 0; i < parts.length; i++) {
      const next = current ? `${current}/${parts[i]}` : parts[i]!;
      const e = (await this.list(current)).get(parts[i]!);
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
  const n = path.normalize(p || '.').replace(/\/+$/, '');
  return n === '.' ? '' : n.replace(/^\.\//, '');
}

/** `rel` joined to `dir`, normalised; undefined when it leaves the repository. */
export function joinInside(dir: string, rel: string): string | undefined {
  if (rel.startsWith('/')) return undefined;
  const n = path.normalize(path.join(dir || '.', rel));
  if (n === '..' || n.startsWith('../')) return undefined;
  return n === '.' ? '' : n.replace(/\/+$/, '');
}

/** True when `file` is `dir` or lies below it ("" is the root). */
export function within(file: string, dir: string): boolean {
  return dir === '' || file === dir || file.startsWith(`${dir}/`);
}
