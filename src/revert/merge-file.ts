import { mergeText } from './merge-lines.ts';
import type { LineConflict } from './merge-lines.ts';
import { isYamlPath, mergeYaml } from './yaml-merge.ts';

/**
 * The 3-way merge of one file that both sides changed (base = the bad commit's version, ours =
 * the head's, theirs = the version before the bad commit), on its bytes: the line merge runs on
 * the text exactly as stored, so line ends (CRLF stays CRLF), a missing final newline and a UTF-8
 * byte-order mark come out as `git merge-file` makes them; where the line merge conflicts on a
 * YAML file, the structural merge (yaml-merge.ts) tries, and keeps ours' bytes wherever it does
 * not change them. Binary or non-UTF-8 content, and anything the structural merge cannot do
 * safely, is a conflict with its reason. It never throws.
 */

export type FileMerge = { clean: true; content: Uint8Array; how: 'line' | 'yaml' } | { clean: false; conflict: string };

// ignoreBOM: the byte-order mark stays in the text (part of the first line, as git sees it)
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const encoder = new TextEncoder();

function decode(bytes: Uint8Array): string | undefined {
  try {
    return utf8.decode(bytes);
  } catch {
    return undefined;
  }
}

function reason(error: unknown): string {
  return error instanceof Error ? (error.message.split('\n')[0] ?? error.name) : String(error);
}

/** "both sides changed line 3" / "lines 3-5 and 2 more place(s)", in base's line numbers. */
function describe(conflicts: LineConflict[]): string {
  const first = conflicts[0];
  if (!first) return 'both sides changed it';
  const many = first.baseEnd - first.baseStart > 1;
  const where = `${first.baseStart + 1}${many ? `-${first.baseEnd}` : ''}`;
  return `both sides changed line${many ? 's' : ''} ${where}${conflicts.length > 1 ? ` and ${conflicts.length - 1} more place(s)` : ''}`;
}

export function mergeFile(path: string, base: Uint8Array, ours: Uint8Array, theirs: Uint8Array): FileMerge {
  const sides = [
    ['base', base],
    ['ours', ours],
    ['theirs', theirs],
  ] as const;
  if (sides.some(([, bytes]) => bytes.subarray(0, 8000).includes(0))) return { clean: false, conflict: 'binary file changed on both sides' };
  const texts = sides.map(([, bytes]) => decode(bytes));
  const [b, o, t] = texts;
  if (b === undefined || o === undefined || t === undefined) {
    const which = sides.filter((_, i) => texts[i] === undefined).map(([name]) => name);
    return { clean: false, conflict: `not valid UTF-8 (${which.join(', ')}), changed on both sides: cannot merge it as text` };
  }
  let lineConflict: string;
  try {
    const lines = mergeText(b, o, t);
    if (lines.clean) return { clean: true, content: encoder.encode(lines.text), how: 'line' };
    lineConflict = describe(lines.conflicts);
  } catch (error) {
    return { clean: false, conflict: `cannot merge the lines: ${reason(error)}` };
  }
  if (!isYamlPath(path)) return { clean: false, conflict: lineConflict };
  try {
    const structural = mergeYaml(b, o, t);
    if (structural.clean) return { clean: true, content: encoder.encode(structural.text), how: 'yaml' };
    // a reason the structural merge cannot go on says so; the rest are keys both sides changed
    const reasons = structural.conflicts.filter((c) => c.includes('cannot merge structurally'));
    if (reasons.length > 0) return { clean: false, conflict: `${lineConflict}; ${reasons.join('; ')}` };
    return { clean: false, conflict: `both sides changed ${structural.conflicts.join('; ')}` };
  } catch (error) {
    return { clean: false, conflict: `${lineConflict}; cannot merge structurally: ${reason(error)}` };
  }
}
