/**
 * Where a snapshot's objects are, found by looking at its lines as they stream in, not by parsing
 * it: the documents of a YAML stream (split at `---` lines) and, in a document shaped as kubectl
 * prints a `List` (`items:` at the left margin, then one `- ` entry per object at one
 * indentation), each item. observe/snapshot.ts parses each piece on its own as soon as it is
 * complete, so that neither a 100,000-object List's text nor its parsed tree is ever held whole.
 * It checks each piece's parse and falls back to parsing the whole file wherever a piece does not
 * parse alone, which is where this split and the YAML grammar could disagree (a `---` or `- `
 * line inside a quoted or flow scalar leaves that piece unterminated).
 *
 * Why a `---` line at the left margin always ends a document in js-yaml (lib/loader.js,
 * `testDocumentSeparator`): a plain or quoted scalar stops there (a quoted one with an error), and
 * a block scalar's content is indented (it ends at a line at column 0, `readBlockScalar`).
 *
 * A UTF-8 byte order mark stays in the first piece, whose parse drops it as the whole parse does.
 *
 * Pure: bytes in, ranges and their bytes out. `NotSplit` is thrown for a stream this split does
 * not read (YAML directives, `...` document ends, lone CR line breaks, an entry line out of
 * kubectl's shape after items were given out): the whole parse reads it. (Go template
 * placeholders need no rule here: the whole parse refuses them only where they break the YAML,
 * and there the piece holding them fails too, which sends the file to the whole parse; a List's
 * head and tail are parsed together for this, snapshot.ts envelopeOf: a `{{ .ns }}` line after
 * the entries parses alone, as a flow mapping.)
 */

/** A byte range [start, end) of the snapshot. */
export interface Range {
  start: number;
  end: number;
}

/**
 * What the splitter finds, in stream order. `bytes` is valid only during the call. A List's
 * head (the lines before `items:`) comes when its first item starts, its tail (the lines after
 * the items: `kind: List`, `metadata:`) when the document ends; head and tail together are the
 * List without its items.
 */
export interface SplitEvents {
  /** a document read whole (not a List in kubectl's shape) */
  document(range: Range, bytes: Buffer): void;
  listHead(range: Range, bytes: Buffer): void;
  /** one `- ` entry of the List, with the lines up to the next one */
  item(range: Range, bytes: Buffer): void;
  listTail(range: Range, bytes: Buffer): void;
}

/** The stream has a shape this split does not read: parse it whole. */
export class NotSplit extends Error {}

const LF = 0x0a;
const CR = 0x0d;
const SPACE = 0x20;
const TAB = 0x09;
const DASH = 0x2d;
const DOT = 0x2e;
const HASH = 0x23;
const PERCENT = 0x25;

/** Pieces larger than this are not gathered: the whole parse reads the file, as it did before streaming (and without copying a growing window). */
const MAX_PIECE_BYTES = 16 << 20;

type State = 'head' | 'first' | 'items' | 'tail' | 'whole';

/** Splits the bytes pushed into it; `end()` after the last chunk. */
export class StreamSplitter {
  readonly #events: SplitEvents;
  /** the bytes not yet given out, from absolute offset #base */
  #window: Buffer = Buffer.alloc(0);
  #base = 0;
  /** absolute offset of the next line to read */
  #next = 0;
  // the current document
  #docStart = 0;
  #state: State = 'head';
  #itemsLine = -1;
  #indent = -1;
  #itemStart = -1;
  #itemsEnd = -1;

  readonly #maxPieceBytes: number;

  /** `maxPieceBytes`: a larger piece (a big document that is no kubectl List, a JSON List) is left to the whole parse, not gathered here */
  constructor(events: SplitEvents, opts: { maxPieceBytes?: number } = {}) {
    this.#events = events;
    this.#maxPieceBytes = opts.maxPieceBytes ?? MAX_PIECE_BYTES;
  }

  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    const keep = this.#keepFrom();
    const kept = this.#window.subarray(keep - this.#base);
    const scanFrom = Math.max(0, kept.length - 1);
    this.#window = kept.length ? Buffer.concat([kept, chunk]) : chunk;
    this.#base = keep;
    this.#refuseUnread(scanFrom);
    this.#lines(false);
  }

  end(): void {
    const w = this.#window;
    if (w.length > 0 && w[w.length - 1] === CR) throw new NotSplit('a lone CR line break');
    this.#lines(true);
    this.#finishDocument(this.#base + w.length);
  }

  /** Lone CRs, in bytes not checked before (`from`, window-relative). */
  #refuseUnread(from: number): void {
    const w = this.#window;
    // a CR not before an LF is a line break to js-yaml (`readLineBreak`), not to this scan; a CR ending the window is checked with the next chunk
    for (let i = w.indexOf(CR, from); i >= 0 && i < w.length - 1; i = w.indexOf(CR, i + 1)) if (w[i + 1] !== LF) throw new NotSplit('a lone CR line break');
  }

  /** Reads every complete line (and the last one at the end). */
  #lines(atEnd: boolean): void {
    const w = this.#window;
    while (this.#next < this.#base + w.length) {
      const pos = this.#next - this.#base;
      let lf = w.indexOf(LF, pos);
      if (lf < 0) {
        if (!atEnd) return;
        lf = w.length;
      }
      const end = lf > pos && w[lf - 1] === CR ? lf - 1 : lf;
      this.#line(w, pos, end);
      this.#next = this.#base + Math.min(lf + 1, w.length);
    }
  }

  /** Where the open piece starts: the item, the List's tail, or the document. */
  #openFrom(): number {
    return this.#state === 'items' ? this.#itemStart : this.#state === 'tail' ? this.#itemsEnd : this.#docStart;
  }

  /** Where the bytes still needed start: the open piece, or the line not read yet. */
  #keepFrom(): number {
    return Math.min(this.#openFrom(), this.#next);
  }

  #slice(start: number, end: number): Buffer {
    return this.#window.subarray(start - this.#base, end - this.#base);
  }

  /** One line, [pos, end) in the window, without its line break. */
  #line(w: Buffer, pos: number, end: number): void {
    const at = this.#base + pos;
    if (at - this.#openFrom() > this.#maxPieceBytes) throw new NotSplit('a piece too large to gather');
    const c0 = w[pos];
    if (c0 === PERCENT) throw new NotSplit('YAML directives');
    if ((c0 === DASH || c0 === DOT) && w[pos + 1] === c0 && w[pos + 2] === c0 && (pos + 3 === end || w[pos + 3] === SPACE || w[pos + 3] === TAB)) {
      if (c0 === DOT) throw new NotSplit('a document end marker');
      this.#finishDocument(at);
      this.#docStart = at;
      this.#state = 'head';
      return;
    }
    switch (this.#state) {
      case 'head':
        if (isItemsKey(w, pos, end)) {
          this.#itemsLine = at;
          this.#state = 'first';
        }
        return;
      case 'first': {
        if (isBlankOrComment(w, pos, end)) return;
        const indent = indentOf(w, pos, end);
        if (!isEntry(w, pos + indent, end)) {
          this.#state = 'whole';
          return;
        }
        this.#events.listHead({ start: this.#docStart, end: this.#itemsLine }, this.#slice(this.#docStart, this.#itemsLine));
        this.#indent = indent;
        this.#itemStart = at;
        this.#state = 'items';
        return;
      }
      case 'items': {
        if (isBlankOrComment(w, pos, end)) return;
        const indent = indentOf(w, pos, end);
        if (indent > this.#indent) return;
        if (indent === this.#indent && isEntry(w, pos + indent, end)) {
          this.#events.item({ start: this.#itemStart, end: at }, this.#slice(this.#itemStart, at));
          this.#itemStart = at;
          return;
        }
        // a line less indented than the entries and not at the margin: not kubectl's shape
        if (indent !== 0) throw new NotSplit('a List entry out of shape');
        this.#events.item({ start: this.#itemStart, end: at }, this.#slice(this.#itemStart, at));
        this.#itemsEnd = at;
        this.#state = 'tail';
        return;
      }
      default:
    }
  }

  #finishDocument(end: number): void {
    switch (this.#state) {
      case 'items':
        this.#events.item({ start: this.#itemStart, end }, this.#slice(this.#itemStart, end));
        this.#events.listTail({ start: end, end }, this.#slice(end, end));
        return;
      case 'tail':
        this.#events.listTail({ start: this.#itemsEnd, end }, this.#slice(this.#itemsEnd, end));
        return;
      default:
        this.#events.document({ start: this.#docStart, end }, this.#slice(this.#docStart, end));
    }
  }
}

function indentOf(buf: Uint8Array, pos: number, end: number): number {
  let i = pos;
  while (i < end && buf[i] === SPACE) i++;
  return i - pos;
}

/** Only spaces and tabs, or a comment after them. */
function isBlankOrComment(buf: Uint8Array, pos: number, end: number): boolean {
  let i = pos;
  while (i < end && (buf[i] === SPACE || buf[i] === TAB)) i++;
  return i === end || buf[i] === HASH;
}

/** `-` followed by a blank or the line's end: a block sequence entry. */
function isEntry(buf: Uint8Array, at: number, end: number): boolean {
  return buf[at] === DASH && (at + 1 === end || buf[at + 1] === SPACE || buf[at + 1] === TAB);
}

const ITEMS = [0x69, 0x74, 0x65, 0x6d, 0x73, 0x3a]; // "items:"

/** `items:` at the margin with nothing after it but blanks or a comment: the key of a block sequence on the next lines. */
function isItemsKey(buf: Uint8Array, pos: number, end: number): boolean {
  if (end - pos < ITEMS.length) return false;
  for (let i = 0; i < ITEMS.length; i++) if (buf[pos + i] !== ITEMS[i]) return false;
  let i = pos + ITEMS.length;
  if (i === end) return true;
  if (buf[i] !== SPACE && buf[i] !== TAB) return false;
  while (i < end && (buf[i] === SPACE || buf[i] === TAB)) i++;
  return i === end || buf[i] === HASH;
}
