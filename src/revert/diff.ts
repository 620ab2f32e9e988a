import { formatPatch, structuredPatch } from 'diff';
import type { FileChange, FileEntry, RepoReader } from '../repo/types.ts';

/** Per-file before/after text of a change, for dry-run diffs and diff stats. */
export interface FileDiff {
  path: string;
  status: 'added' | 'modified' | 'deleted';
  added: number;
  removed: number;
  patch: string;
}

export async function diffChange(reader: RepoReader, parent: string, files: FileChange[]): Promise<FileDiff[]> {
  const before = await reader.listFiles(parent, files.map((f) => f.path));
  const out: FileDiff[] = [];
  for (const f of [...files].sort((a, b) => a.path.localeCompare(b.path))) {
    const old: FileEntry | undefined = before.get(f.path);
    const oldText = old ? await text(reader, old.oid) : '';
    const newText = 'delete' in f ? '' : 'content' in f ? Buffer.from(f.content).toString('utf8') : await text(reader, f.oid);
    const structured = structuredPatch(old ? `a/${f.path}` : '/dev/null', 'delete' in f ? '/dev/null' : `b/${f.path}`, oldText, newText, undefined, undefined, { context: 3 });
    let added = 0;
    let removed = 0;
    for (const line of structured.hunks.flatMap((h) => h.lines)) {
      if (line.startsWith('+')) added++;
      else if (line.startsWith('-')) removed++;
    }
    const newMode = 'delete' in f ? undefined : f.mode;
    // as git prints it: the `diff --git` line, the mode lines, names C-quoted where they hold a line
    // break, a control character, a quote or a backslash (a file name cannot forge a line of the diff)
    const patch = formatPatch({
      ...structured,
      isGit: true,
      ...(!old ? { isCreate: true, newMode } : newMode === undefined ? { isDelete: true, oldMode: old.mode } : old.mode !== newMode ? { oldMode: old.mode, newMode } : {}),
    });
    out.push({ path: f.path, status: 'delete' in f ? 'deleted' : old ? 'modified' : 'added', added, removed, patch });
  }
  return out;
}

async function text(reader: RepoReader, oid: string): Promise<string> {
  return Buffer.from(await reader.readBlob(oid)).toString('utf8');
}

export function diffStat(diffs: FileDiff[]): string {
  if (diffs.length === 0) return '(no changes)';
  const width = Math.max(...diffs.map((d) => d.path.length));
  const lines = diffs.map((d) => ` ${d.path.padEnd(width)} | ${String(d.added + d.removed).padStart(4)} ${'+'.repeat(Math.min(d.added, 30))}${'-'.repeat(Math.min(d.removed, 30))}${d.status !== 'modified' ? ` (${d.status})` : ''}`);
  const adds = diffs.reduce((n, d) => n + d.added, 0);
  const dels = diffs.reduce((n, d) => n + d.removed, 0);
  lines.push(` ${diffs.length} file${diffs.length === 1 ? '' : 's'} changed, ${adds} insertion${adds === 1 ? '' : 's'}(+), ${dels} deletion${dels === 1 ? '' : 's'}(-)`);
  return lines.join('\n');
}

export function unifiedDiff(diffs: FileDiff[]): string {
  return diffs.map((d) => (d.patch.endsWith('\n') ? d.patch : `${d.patch}\n`)).join('');
}
