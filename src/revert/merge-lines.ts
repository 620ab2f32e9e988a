import { diffArrays } from 'diff';

/**
 * diff3 line merge (Khanna, Kunal & Pierce, "A Formal Investigation of Diff3", the algorithm of
 * GNU diff3 and of the `diff3` package isomorphic-git uses), on top of jsdiff's Myers diff.
 * Changes from base to ours and from base to theirs are merged; two changes that overlap or
 * touch the same base lines conflict unless they are identical (git does the same: edits to
 * adjacent lines conflict).
 */

/** One side's change: base lines [baseStart, baseEnd) became side lines [sideStart, sideEnd). */
interface Hunk {
  side: 'ours' | 'theirs';
  baseStart: number;
  baseEnd: number;
  sideStart: number;
  sideEnd: number;
}

export interface LineConflict {
  /** base line range, 0-based, end exclusive */
  baseStart: number;
  baseEnd: number;
  ours: string[];
  base: string[];
  theirs: string[];
}

export type LineMergeResult = { clean: true; lines: string[] } | { clean: false; conflicts: LineConflict[] };

/** Splits text into lines that keep their line ending, so that joining gives the text back exactly. */
export function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split(/(?<=\n)/);
  return lines;
}

function hunks(base: string[], side: string[], name: Hunk['side']): Hunk[] {
  const out: Hunk[] = [];
  let b = 0;
  let s = 0;
  let open: Hunk | undefined;
  for (const part of diffArrays(base, side)) {
    const n = part.count ?? part.value.length;
    if (!part.added && !part.removed) {
      if (open) out.push(open);
      open = undefined;
      b += n;
      s += n;
      continue;
    }
    open ??= { side: name, baseStart: b, baseEnd: b, sideStart: s, sideEnd: s };
    if (part.removed) {
      b += n;
      open.baseEnd = b;
    } else {
      s += n;
      open.sideEnd = s;
    }
  }
  if (open) out.push(open);
  return out;
}

function sameLines(a: string[], b: string[]): boolean {
  return a.length === b.length && a.every((line, i) => line === b[i]);
}

/** Merges ours and theirs, both derived from base. Lines as given by splitLines(). */
export function mergeLines(base: string[], ours: string[], theirs: string[]): LineMergeResult {
  const sides = { ours, theirs };
  const all = [...hunks(base, ours, 'ours'), ...hunks(base, theirs, 'theirs')].sort(
    (x, y) => x.baseStart - y.baseStart || x.baseEnd - y.baseEnd,
  );
  const out: string[] = [];
  const conflicts: LineConflict[] = [];
  let copied = 0; // base lines before this index are already handled
  for (let i = 0; i < all.length; ) {
    const first = all[i]!;
    let regionStart = first.baseStart;
    let regionEnd = first.baseEnd;
    let j = i + 1;
    // group every hunk that overlaps or touches the region
    while (j < all.length && all[j]!.baseStart <= regionEnd) {
      regionEnd = Math.max(regionEnd, all[j]!.baseEnd);
      j++;
    }
    const group = all.slice(i, j);
    i = j;
    out.push(...base.slice(copied, regionStart));
    copied = regionEnd;
    const bySide = new Set(group.map((h) => h.side));
    if (bySide.size === 1) {
      // one side only: hunks of one diff never overlap, apply them all
      let at = regionStart;
      for (const h of group) {
        out.push(...base.slice(at, h.baseStart), ...sides[h.side].slice(h.sideStart, h.sideEnd));
        at = h.baseEnd;
      }
      out.push(...base.slice(at, regionEnd));
      continue;
    }
    // both sides changed this region: map the base region onto each side
    const range = (side: Hunk['side']): [number, number] => {
      const hs = group.filter((h) => h.side === side);
      const lo = Math.min(...hs.map((h) => h.sideStart)) + (regionStart - Math.min(...hs.map((h) => h.baseStart)));
      const hi = Math.max(...hs.map((h) => h.sideEnd)) + (regionEnd - Math.max(...hs.map((h) => h.baseEnd)));
      return [lo, hi];
    };
    const [oLo, oHi] = range('ours');
    const [tLo, tHi] = range('theirs');
    const oursPart = ours.slice(oLo, oHi);
    const theirsPart = theirs.slice(tLo, tHi);
    if (sameLines(oursPart, theirsPart)) {
      out.push(...oursPart);
    } else {
      conflicts.push({ baseStart: regionStart, baseEnd: regionEnd, ours: oursPart, base: base.slice(regionStart, regionEnd), theirs: theirsPart });
    }
  }
  out.push(...base.slice(copied));
  return conflicts.length > 0 ? { clean: false, conflicts } : { clean: true, lines: out };
}

/** Text form of mergeLines. */
export function mergeText(base: string, ours: string, theirs: string): { clean: true; text: string } | { clean: false; conflicts: LineConflict[] } {
  const result = mergeLines(splitLines(base), splitLines(ours), splitLines(theirs));
  return result.clean ? { clean: true, text: result.lines.join('') } : result;
}
