import { InputError } from '../errors.ts';
import type { FileEntry, TreeItem } from './types.ts';

/**
 * Walking git trees to the target paths, shared by the backends: they differ only in how a tree
 * is read (isomorphic-git from the object database, or one REST request) and how a whole folder
 * is listed (GitHub can do it in one recursive request).
 */
export type { TreeItem };

export type ReadTree = (oid: string) => Promise<TreeItem[]>;
/** Adds every blob under the tree `oid` to `out`, keyed by its path below `prefix`. */
export type CollectFolder = (oid: string, prefix: string, out: Map<string, FileEntry>) => Promise<void>;

const SYMLINK = '120000';

/**
 * A tree entry name that git itself refuses (`.`, `..`, `.git`, with "/" or NUL) comes only from a
 * crafted object: lastgood would write through it. Bad repository input, with the path: exit 2.
 */
export function checkEntryName(name: string, under: string): void {
  if (name === '' || name === '.' || name === '..' || name.toLowerCase() === '.git' || name.includes('/') || name.includes('\0')) {
    throw new InputError(`the repository has a tree entry named ${JSON.stringify(name)} in "${under || '/'}", which git refuses (a crafted tree object): nothing is read or written through it`);
  }
}

/** Reads a tree; a reader's own refusal of such a name (isomorphic-git's UnsafeFilepathError) says the same, with the path. */
async function readChecked(readTree: ReadTree, oid: string, under: string): Promise<TreeItem[]> {
  let entries: TreeItem[];
  try {
    entries = await readTree(oid);
  } catch (error) {
    const e = error as { code?: string; data?: { filepath?: string } };
    if (e?.code === 'UnsafeFilepathError') checkEntryName(e.data?.filepath ?? '..', under);
    throw error;
  }
  for (const e of entries) checkEntryName(e.path, under);
  return entries;
}

/** A path under a folder; the repository root is the empty prefix. */
export const joinPath = (prefix: string, name: string): string => (prefix ? `${prefix}/${name}` : name);

/**
 * Walks `path` one tree at a time from `root`; a path through a symlink is refused (DESIGN.md
 * Config). A symlink at the end of the path is an entry like a file (its blob is the link's text):
 * a revert may restore it, and nothing is read or written through it.
 */
export async function entryAt(readTree: ReadTree, root: string, path: string): Promise<TreeItem | undefined> {
  const parts = path.split('/').filter(Boolean);
  let current: TreeItem = { path: '', oid: root, mode: '040000', type: 'tree' };
  for (const [i, part] of parts.entries()) {
    if (current.type !== 'tree') return undefined;
    const entry = (await readChecked(readTree, current.oid, parts.slice(0, i).join('/'))).find((e) => e.path === part);
    if (!entry) return undefined;
    if (entry.mode === SYMLINK && i < parts.length - 1) {
      throw new InputError(`the target path "${path}" goes through a symlink at "${parts.slice(0, i + 1).join('/')}": refused`);
    }
    current = entry;
  }
  return current;
}

/** Every blob under `paths` (a trailing "/" or a tree is a folder) in the tree `root`. */
export async function filesUnder(readTree: ReadTree, root: string, paths: string[], collect: CollectFolder = (oid, prefix, out) => collectByWalking(readTree, oid, prefix, out)): Promise<Map<string, FileEntry>> {
  const out = new Map<string, FileEntry>();
  for (const p of paths) {
    const clean = p.replace(/\/+$/, '');
    const entry = await entryAt(readTree, root, clean);
    if (!entry) continue;
    if (entry.mode === SYMLINK) {
      // a folder path that is itself a symlink: listing it would read through the link
      if (p.endsWith('/')) throw symlinkFolderRefusal(clean);
      out.set(clean, { oid: entry.oid, mode: entry.mode });
      continue;
    }
    if (entry.type === 'tree') await collect(entry.oid, clean, out);
    else if (entry.type === 'blob' && !p.endsWith('/')) out.set(clean, { oid: entry.oid, mode: entry.mode });
  }
  // a backend's own folder listing (GitHub's recursive tree) is checked here too
  for (const file of out.keys()) {
    const parts = file.split('/');
    parts.forEach((name, i) => checkEntryName(name, parts.slice(0, i).join('/')));
  }
  return out;
}

/** A target folder that is a symlink, refused as a path through a symlink is. */
export function symlinkFolderRefusal(path: string): InputError {
  return new InputError(`the target path "${path}/" goes through a symlink at "${path}": refused`);
}

export async function collectByWalking(readTree: ReadTree, oid: string, prefix: string, out: Map<string, FileEntry>): Promise<void> {
  for (const e of await readChecked(readTree, oid, prefix)) {
    if (e.type === 'tree') await collectByWalking(readTree, e.oid, joinPath(prefix, e.path), out);
    else if (e.type === 'blob') out.set(joinPath(prefix, e.path), { oid: e.oid, mode: e.mode });
  }
}
