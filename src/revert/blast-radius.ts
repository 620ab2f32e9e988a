import { underPaths } from '../history/graph.ts';
import type { FileChange, FileEntry } from '../repo/types.ts';

/**
 * The blast-radius guard: a check of the planned change itself, independent of how the plan was
 * made, against the worst outcomes of a revert in production:
 *
 * - it deletes every manifest of the target, or empties a folder the target lists (with Flux
 *   `prune: true` the application disappears) — unless the target allows it (`blastRadius.allowEmpty`);
 * - with strategy `revert`, it changes a file that no bad commit changed (a revert undoes the bad
 *   commits and nothing else) — unless the target allows it (`blastRadius.allowUntouchedFiles`);
 * - it changes a file outside the target's paths that is not a listed freeze edit (never allowed).
 *
 * A `restore` may undo later commits in the target's paths: the plan lists each one instead.
 */
export interface BlastRadiusInput {
  files: FileChange[];
  /** the files under the target paths at the head the change applies to */
  before: Map<string, FileEntry>;
  paths: string[];
  strategy: 'revert' | 'restore';
  /** files the bad commits changed */
  touched: string[];
  /** freeze edits (image automation), listed in the change on their own */
  freezeFiles: string[];
  allowEmpty: boolean;
  allowUntouchedFiles: boolean;
}

/** The rules the change breaks, one sentence each; empty when it may be written. */
export function blastRadius(input: BlastRadiusInput): string[] {
  const out: string[] = [];
  const freeze = new Set(input.freezeFiles);
  const after = new Map(input.before);
  for (const f of input.files) {
    if (!underPaths(f.path, input.paths)) {
      if (!freeze.has(f.path)) out.push(`it changes ${f.path}, outside the target's paths (${input.paths.join(', ')})`);
      continue;
    }
    if ('delete' in f) after.delete(f.path);
    else after.set(f.path, { oid: 'oid' in f ? f.oid : '(new)', mode: f.mode });
  }
  if (!input.allowEmpty) {
    if (input.before.size > 0 && after.size === 0) {
      out.push(`it deletes every manifest of the target (${input.before.size} file${input.before.size === 1 ? '' : 's'} under ${input.paths.join(', ')})`);
    } else {
      for (const p of input.paths) {
        const inside = (m: Map<string, FileEntry>) => [...m.keys()].filter((f) => underPaths(f, [p])).length;
        if (inside(input.before) > 0 && inside(after) === 0) out.push(`it empties ${p}, which the target lists`);
      }
    }
  }
  if (input.strategy === 'revert' && !input.allowUntouchedFiles) {
    const touched = new Set(input.touched);
    const untouched = input.files.filter((f) => underPaths(f.path, input.paths) && !freeze.has(f.path) && !touched.has(f.path)).map((f) => f.path);
    if (untouched.length > 0) out.push(`it changes ${untouched.join(', ')}, which no bad commit changed`);
  }
  return out;
}
