import { diffArrays } from 'diff';

/**
 * diff3 line merge (Khanna, Kunal & Pierce, "A Formal Investigation of Diff3", the algorithm of
 * GNU diff3 and of the `diff3` package isomorphic-git uses), on top of jsdiff's Myers diff.
 * Changes from base to ours and from base to theirs are merged; two changes that overlap or
 * touch the same base lines conflict unless they are identical (git does the same: edits to
 * adjacent lines conflict).
 *
 * A rollback must never be cleaner than git. Where lines repeat (blank lines, `- name:`, `---`),
 * one edit has several equally short diffs, and git's xdiff may place a hunk next to the other
 * side's change where jsdiff placed it a line away: git conflicts, a plain diff3 on jsdiff would
 * merge "cleanly" into a file nobody wrote. So the conflict check does not trust one alignment:
 * each side's change occupies its footprint, every base position where some equally good diff
 * (jsdiff forwards, jsdiff on the reversed lines, and every hunk slid along repeated lines, as
 * xdiff's compaction slides them) puts it, and changes whose footprints overlap or touch are one
 * region, merged only when one side left it as in base, or both sides made it identical where no
 * hunk could slide; and every pairing of the two readings of each side must merge to the same
 * text. Checked against `git merge-file` in test/revert-yaml.test.ts: it conflicts wherever git
 * does, and where both merge, the text is git's.
 */

/** One side's change: base lines [baseStart, baseEnd) became side lines [sideStart, sideEnd). */
interface Hunk {
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

function hunks(base: string[], side: string[]): Hunk[] {
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
    open ??= { baseStart: b, baseEnd: b, sideStart: s, sideEnd: s };
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

/** The hunks of the diff of the reversed lines, in forward coordinates: the other tie-breaking. */
function reversedHunks(base: string[], side: string[]): Hunk[] {
  const nb = base.length;
  const ns = side.length;
  return hunks([...base].reverse(), [...side].reverse())
    .map((h) => ({ baseStart: nb - h.baseEnd, baseEnd: nb - h.baseStart, sideStart: ns - h.sideEnd, sideEnd: ns - h.sideStart }))
    .reverse();
}

/** Base interval [start, end) a hunk may occupy when slid along repeated lines (pure inserts and deletes slide). */
function slid(base: string[], side: string[], h: Hunk): [number, number] {
  let lo = h.baseStart;
  let hi = h.baseEnd;
  if (h.sideStart === h.sideEnd && h.baseStart < h.baseEnd) {
    // deletion of base[bs, be): moves up while the line above equals its last line, down likewise
    for (let bs = h.baseStart, be = h.baseEnd; bs > 0 && base[bs - 1] === base[be - 1]; bs--, be--) lo = bs - 1;
    for (let bs = h.baseStart, be = h.baseEnd; be < base.length && base[bs] === base[be]; bs++, be++) hi = be + 1;
  } else if (h.baseStart === h.baseEnd && h.sideStart < h.sideEnd) {
    // insertion of side[ss, se) at base position bs
    for (let ss = h.sideStart, se = h.sideEnd, bs = h.baseStart; ss > 0 && bs > 0 && side[ss - 1] === side[se - 1]; ss--, se--, bs--) lo = bs - 1;
    for (let ss = h.sideStart, se = h.sideEnd, bs = h.baseStart; se < side.length && bs < base.length && side[ss] === side[se]; ss++, se++, bs++) hi = bs + 1;
  }
  return [lo, hi];
}

/** Lines of `side` that stand for base lines [start, end), given that no hunk crosses either end. */
function sideRange(side: Hunk[], start: number, end: number): [number, number] {
  let lo = start;
  let hi = end;
  for (const h of side) {
    const delta = h.sideEnd - h.sideStart - (h.baseEnd - h.baseStart);
    // wholly before the region (an insertion at its start is in it)
    if (h.baseEnd < start) lo += delta;
    // before the end, or ending at it (an insertion at the end touches the region, so it is in it)
    if (h.baseEnd <= end) hi += delta;
  }
  return [lo, hi];
}

function sameLines(a: string[], b: string[]): boolean {
  return a.length === b.length && a.every((line, i) => line === b[i]);
}

/** Merges ours and theirs, both derived from base. Lines as given by splitLines(). */
export function mergeLines(base: string[], ours: string[], theirs: string[]): LineMergeResult {
  // two alignments of each side: jsdiff's, and jsdiff's on the reversed lines (the other tie-break)
  const oursAlignments = [hunks(base, ours), reversedHunks(base, ours)] as const;
  const theirsAlignments = [hunks(base, theirs), reversedHunks(base, theirs)] as const;
  // a footprint is ambiguous where sliding moves it: there, "both sides made the same change" may
  // as well be two changes (git may apply both), so only a one-sided change merges there
  const footprint = (side: string[], alignments: readonly Hunk[][]): Array<[number, number, boolean]> =>
    alignments.flat().flatMap((h) => {
      const [lo, hi] = slid(base, side, h);
      return [[h.baseStart, h.baseEnd, false] as [number, number, boolean], [lo, hi, lo !== h.baseStart || hi !== h.baseEnd]];
    });
  const intervals = [...footprint(ours, oursAlignments), ...footprint(theirs, theirsAlignments)].sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  // regions: footprints that overlap or touch (touching is a conflict in git too); no hunk of
  // either alignment crosses a region's ends
  const regions: Array<[number, number, boolean]> = [];
  for (const [start, end, ambiguous] of intervals) {
    const last = regions[regions.length - 1];
    if (last && start <= last[1]) {
      last[1] = Math.max(last[1], end);
      last[2] ||= ambiguous;
    } else regions.push([start, end, ambiguous]);
  }

  // the merge must come out the same, and clean, whichever alignment each side is read with
  let first: { lines: string[]; parts: LineConflict[] } | undefined;
  for (const oursHunks of oursAlignments) {
    for (const theirsHunks of theirsAlignments) {
      const out: string[] = [];
      const parts: LineConflict[] = []; // each region as this alignment reads it
      const conflicts: LineConflict[] = [];
      let copied = 0; // base lines before this index are already handled
      for (const [regionStart, regionEnd, ambiguous] of regions) {
        out.push(...base.slice(copied, regionStart));
        copied = regionEnd;
        const [oLo, oHi] = sideRange(oursHunks, regionStart, regionEnd);
        const [tLo, tHi] = sideRange(theirsHunks, regionStart, regionEnd);
        const part = { baseStart: regionStart, baseEnd: regionEnd, ours: ours.slice(oLo, oHi), base: base.slice(regionStart, regionEnd), theirs: theirs.slice(tLo, tHi) };
        parts.push(part);
        if (sameLines(part.ours, part.base)) out.push(...part.theirs);
        else if (sameLines(part.theirs, part.base) || (!ambiguous && sameLines(part.ours, part.theirs))) out.push(...part.ours);
        else conflicts.push(part);
      }
      out.push(...base.slice(copied));
      if (conflicts.length > 0) return { clean: false, conflicts };
      if (first && !sameLines(first.lines, out)) {
        // two readings merge differently: the regions they read differently conflict
        const differ = first.parts.filter((p, i) => !sameLines(p.ours, parts[i]!.ours) || !sameLines(p.theirs, parts[i]!.theirs));
        return { clean: false, conflicts: differ.length > 0 ? differ : [{ baseStart: 0, baseEnd: base.length, ours, base, theirs }] };
      }
      first ??= { lines: out, parts };
    }
  }
  return { clean: true, lines: first?.lines ?? [...base] };
}

/** Text form of mergeLines. */
export function mergeText(base: string, ours: string, theirs: string): { clean: true; text: string } | { clean: false; conflicts: LineConflict[] } {
  const result = mergeLines(splitLines(base), splitLines(ours), splitLines(theirs));
  return result.clean ? { clean: true, text: result.lines.join('') } : result;
}

/**
 * A looser diff3, only for laying out a result that is checked afterwards (yaml-merge.ts verifies
 * every text it takes from here): never use it to decide whether a merge is clean. Changes on
 * adjacent lines merge; only overlapping changes, or two different insertions at one place,
 * conflict; a hunk that replaces n lines by n lines counts as n one-line changes; and a
 * conflicting region is merged again token by token (words, runs of spaces, single punctuation
 * characters, line ends). Every byte of the result comes from one of the inputs. Where it still
 * conflicts: undefined, or with `prefer: 'theirs'` theirs' side of that region (for putting
 * formatting back, where theirs is the content that must win).
 */
export function mergeLoose(base: string, ours: string, theirs: string, options: { prefer?: 'theirs' } = {}): string | undefined {
  const fallback: Refine = (_base, _ours, theirs) => (options.prefer === 'theirs' ? theirs : undefined);
  const byTokens: Refine = (b, o, t) => loose(tokens(b.join('')), tokens(o.join('')), tokens(t.join('')), fallback);
  return loose(splitLines(base), splitLines(ours), splitLines(theirs), byTokens)?.join('');
}

function tokens(text: string): string[] {
  return text.match(/\r?\n|[^\S\r\n]+|[\p{L}\p{N}_]+|[^]/gu) ?? [];
}

type Refine = (base: string[], ours: string[], theirs: string[]) => string[] | undefined;

/** n lines replaced by n lines: n one-line hunks, so that a change next to them stays apart. */
function oneToOne(h: Hunk): Hunk[] {
  const n = h.baseEnd - h.baseStart;
  if (n <= 1 || h.sideEnd - h.sideStart !== n) return [h];
  return Array.from({ length: n }, (_, i) => ({ baseStart: h.baseStart + i, baseEnd: h.baseStart + i + 1, sideStart: h.sideStart + i, sideEnd: h.sideStart + i + 1 }));
}

function loose(base: string[], ours: string[], theirs: string[], refine: Refine): string[] | undefined {
  const sides = [ours, theirs] as const;
  // insertions sort before changes at the same place: an insertion there touches the change, it is not in it
  const all = sides
    .flatMap((side, s) => hunks(base, side).flatMap(oneToOne).map((h) => ({ ...h, side: s })))
    .sort((x, y) => x.baseStart - y.baseStart || Number(x.baseEnd > x.baseStart) - Number(y.baseEnd > y.baseStart));
  const regions: Array<{ start: number; end: number; sides: Set<number>; delta: [number, number] }> = [];
  for (const h of all) {
    const last = regions[regions.length - 1];
    const empty = h.baseStart === h.baseEnd;
    const overlaps = last !== undefined && (last.start === last.end ? empty && h.baseStart === last.start : h.baseStart < last.end);
    const region = overlaps ? last : { start: h.baseStart, end: h.baseEnd, sides: new Set<number>(), delta: [0, 0] as [number, number] };
    if (!overlaps) regions.push(region);
    region.end = Math.max(region.end, h.baseEnd);
    region.sides.add(h.side);
    region.delta[h.side as 0 | 1] += h.sideEnd - h.sideStart - (h.baseEnd - h.baseStart);
  }
  const out: string[] = [];
  const offset: [number, number] = [0, 0]; // side index minus base index, before the current region
  let copied = 0;
  for (const r of regions) {
    out.push(...base.slice(copied, r.start));
    copied = r.end;
    const [o, t] = sides.map((side, s) => side.slice(r.start + offset[s as 0 | 1], r.end + offset[s as 0 | 1] + r.delta[s as 0 | 1])) as [string[], string[]];
    offset[0] += r.delta[0];
    offset[1] += r.delta[1];
    if (!r.sides.has(0)) out.push(...t);
    else if (!r.sides.has(1) || sameLines(o, t)) out.push(...o);
    else {
      const refined = refine(base.slice(r.start, r.end), o, t);
      if (refined === undefined) return undefined;
      out.push(...refined);
    }
  }
  out.push(...base.slice(copied));
  return out;
}
