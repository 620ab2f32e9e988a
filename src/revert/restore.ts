import type { FileChange, RepoReader } from '../repo/types.ts';

/**
 * The `restore` strategy: the target paths become exactly their tree at the last-known-good
 * (files added since are removed). Blobs are reused by oid: nothing new is written but trees.
 */
export async function planRestore(reader: RepoReader, opts: { head: string; lastKnownGood: string; paths: string[] }): Promise<FileChange[]> {
  const [now, good] = await Promise.all([reader.listFiles(opts.head, opts.paths), reader.listFiles(opts.lastKnownGood, opts.paths)]);
  const files: FileChange[] = [];
  for (const [path, entry] of good) {
    const current = now.get(path);
    if (!current || current.oid !== entry.oid || current.mode !== entry.mode) files.push({ path, mode: entry.mode, oid: entry.oid });
  }
  for (const path of now.keys()) if (!good.has(path)) files.push({ path, delete: true });
  return files.sort((a, b) => a.path.localeCompare(b.path));
}
