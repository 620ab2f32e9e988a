/**
 * Where a snapshot's objects are, found by looking at its lines, not by parsing it: the documents
 * of a YAML stream (split at `---` lines) and, in a document shaped as kubectl prints a `List`
 * (`items:` at the left margin, then one `- ` entry per object at one indentation), each item's
 * byte range. observe/snapshot.ts parses each piece on its own, so that a 100,000-object List is
 * never one parsed tree; it checks each piece's parse and falls back to parsing the whole file
 * wherever a piece does not parse alone, which is where this split and the YAML grammar could
 * disagree (a `---` or `- ` line inside a quoted or flow scalar leaves that piece unterminated).
 *
 * Why a `---` line at the left margin always ends a document in js-yaml (lib/loader.js,
 * `testDocumentSeparator`): a plain or quoted scalar stops there (a quoted one with an error), and
 * a block scalar's content is indented (it ends at a line at column 0, `readBlockScalar`).
 *
 * Pure: bytes in, ranges out. `undefined`: a stream this split does not read (YAML directives,
 * `...` document ends, lone CR line breaks, Go template placeholders): the whole parse reads it.
 */

/** A byte range [start, end) of the snapshot. */
export interface Range {
  start: number;
  end: number;
}

/** One document of the stream; `list` where it has kubectl's List shape. */
export interface DocumentSpan extends Range {
  list?: ListSpan;
}

/**
 * A List document as kubectl prints it: the lines before `items:` (head), each item's lines, and
 * the lines after the items (tail: `kind: List`, `metadata:`). Head and tail together are the
 * List without its items.
 */
export interface ListSpan {
  head: Range;
  /** where each item starts (its `- ` line); an item ends where the next starts, the last at `itemsEnd` */
  itemStarts: number[];
  itemsEnd: number;
  tail: Range;
}

const LF = 0x0a;
const CR = 0x0d;
const SPACE = 0x20;
const TAB = 0x09;
const DASH = 0x2d;
const DOT = 0x2e;
const HASH = 0x23;
const PERCENT = 0x25;
const BOM = [0xef, 0xbb, 0xbf];

const isBlankOrEnd = (c: number | undefined) => c === undefined || c === SPACE || c === TAB || c === CR || c === LF;

/** The byte offset of the stream's first character (after a UTF-8 byte order mark, which js-yaml drops). */
export function streamStart(buf: Uint8Array): number {
  return buf[0] === BOM[0] && buf[1] === BOM[1] && buf[2] === BOM[2] ? 3 : 0;
}

export function splitStream(buf: Uint8Array): DocumentSpan[] | undefined {
  if (hasGoPlaceholder(buf) || hasLoneCr(buf)) return undefined;
  const docs: DocumentSpan[] = [];
  let doc = new DocumentScanner(streamStart(buf));
  let pos = streamStart(buf);
  while (pos < buf.length) {
    let end = buf.indexOf(LF, pos);
    const next = end < 0 ? buf.length : end + 1;
    if (end < 0) end = buf.length;
    const content = end > pos && buf[end - 1] === CR ? end - 1 : end;
    const c0 = buf[pos];
    if (c0 === PERCENT) return undefined;
    if ((c0 === DASH || c0 === DOT) && buf[pos + 1] === c0 && buf[pos + 2] === c0 && isBlankOrEnd(pos + 3 < content ? buf[pos + 3] : undefined)) {
      if (c0 === DOT) return undefined;
      docs.push(doc.finish(pos));
      doc = new DocumentScanner(pos);
    } else {
      doc.line(buf, pos, content);
    }
    pos = next;
  }
  docs.push(doc.finish(buf.length));
  return docs;
}

/** `{{ .x }}` (Go templates in upstream test data): the whole parse reads placeholders as words. */
function hasGoPlaceholder(buf: Uint8Array): boolean {
  return Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength).indexOf('{{') >= 0;
}

/** A CR not followed by LF is a line break to js-yaml (`readLineBreak`), not to this scan. */
function hasLoneCr(buf: Uint8Array): boolean {
  for (let i = buf.indexOf(CR); i >= 0; i = buf.indexOf(CR, i + 1)) if (buf[i + 1] !== LF) return true;
  return false;
}

/** The lines of one document, looking for `items:` and its entries. */
class DocumentScanner {
  private state: 'head' | 'first' | 'items' | 'tail' | 'other' = 'head';
  private itemsLine = -1;
  private indent = -1;
  private readonly itemStarts: number[] = [];
  private itemsEnd = -1;
  private readonly start: number;

  constructor(start: number) {
    this.start = start;
  }

  line(buf: Uint8Array, pos: number, end: number): void {
    switch (this.state) {
      case 'head':
        if (isItemsKey(buf, pos, end)) {
          this.itemsLine = pos;
          this.state = 'first';
        }
        return;
      case 'first': {
        if (isBlankOrComment(buf, pos, end)) return;
        const indent = indentOf(buf, pos, end);
        if (isEntry(buf, pos + indent, end)) {
          this.indent = indent;
          this.itemStarts.push(pos);
          this.state = 'items';
        } else {
          this.state = 'other';
        }
        return;
      }
      case 'items': {
        if (isBlankOrComment(buf, pos, end)) return;
        const indent = indentOf(buf, pos, end);
        if (indent > this.indent) return;
        if (indent === this.indent && isEntry(buf, pos + indent, end)) {
          this.itemStarts.push(pos);
          return;
        }
        if (indent === 0) {
          this.itemsEnd = pos;
          this.state = 'tail';
          return;
        }
        // an entry's line less indented than the entries, not at the margin: not kubectl's shape
        this.state = 'other';
        return;
      }
      default:
    }
  }

  finish(end: number): DocumentSpan {
    if (this.state !== 'items' && this.state !== 'tail') return { start: this.start, end };
    const itemsEnd = this.state === 'tail' ? this.itemsEnd : end;
    return {
      start: this.start,
      end,
      list: { head: { start: this.start, end: this.itemsLine }, itemStarts: this.itemStarts, itemsEnd, tail: { start: itemsEnd, end } },
    };
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
