/**
 * Flux's post-build variable substitution language: `${var}` with bash parameter-expansion
 * functions, `$$` escaping, and nothing for a bare `$var`.
 *
 * Our own TypeScript port of the semantics of fluxcd/pkg `envsubst/` at e2cfd1a (= tag
 * kustomize/v1.39.0, itself a fork of drone/envsubst): the scanner `envsubst/parse/scan.go`
 * (L136-232), the parser `envsubst/parse/parse.go` (L70-411), the evaluator `envsubst/template.go`
 * (L113-202) and the functions `envsubst/funcs.go`, whose glob is Go's `path.Match`
 * (`envsubst/path/match.go`). Differences, on purpose: the substring and trim functions count
 * UTF-16 code units where Go counts bytes (identical for ASCII), and a NUL character is text here
 * where Go's scanner takes it for the end of input.
 */

const EOF = -1;

const Token = { Illegal: 0, EOF: 1, Ident: 2, Lbrack: 3, Rbrack: 4 } as const;
type Token = (typeof Token)[keyof typeof Token];

// mode bits (scan.go L50-55)
const SCAN_IDENT = 1;
const SCAN_LBRACK = 2;
const SCAN_RBRACK = 4;
const SCAN_ESCAPE = 8;
// escape bits (scan.go L58-62)
const DOLLAR = 1;
const BACKSLASH = 2;
const ESCAPE_ALL = DOLLAR | BACKSLASH;

type Accept = (r: number, i: number) => boolean;

const cp = (c: string) => c.codePointAt(0)!;
const C = { dollar: cp('$'), lbrace: cp('{'), rbrace: cp('}'), backslash: cp('\\'), slash: cp('/'), colon: cp(':'), hash: cp('#'), percent: cp('%'), equal: cp('='), minus: cp('-'), question: cp('?'), plus: cp('+'), comma: cp(','), caret: cp('^'), underscore: cp('_') };

// accept functions (scan.go L238-314)
const acceptRune: Accept = () => true;
const acceptIdent: Accept = (r) => r === C.underscore || /[\p{L}\p{Nd}]/u.test(String.fromCodePoint(r));
const acceptColon: Accept = (r) => r === C.colon;
const acceptOneHash: Accept = (r, i) => r === C.hash && i === 1;
const acceptNotClosing: Accept = (r) => r !== C.rbrace;
const acceptHashFunc: Accept = (r, i) => r === C.hash && i < 3;
const acceptPercentFunc: Accept = (r, i) => r === C.percent && i < 3;
const acceptDefaultFunc: Accept = (r, i) => (i === 1 && r === C.colon) || (i === 2 && (r === C.equal || r === C.minus || r === C.question || r === C.plus));
const acceptReplaceFunc: Accept = (r, i) => (i === 1 && r === C.slash) || (i === 2 && (r === C.slash || r === C.hash || r === C.percent));
const acceptOneEqual: Accept = (r, i) => i === 1 && r === C.equal;
const acceptOneColon: Accept = (r, i) => i === 1 && r === C.colon;
const rejectColonClose: Accept = (r) => r !== C.colon && r !== C.rbrace;
const acceptSlash: Accept = (r) => r === C.slash;
const acceptNotSlash: Accept = (r) => r !== C.slash;
const acceptCasingFunc: Accept = (r, i) => (r === C.comma || r === C.caret) && i < 3;

/** scan.go L69-232, position by position (skip() edits the buffer as Go's does). */
class Scanner {
  buf = '';
  pos = 0;
  start = 0;
  width = 0;
  mode = 0;
  escapeChars = 0;
  accept: Accept = acceptRune;

  constructor(buf: string) {
    this.buf = buf;
  }
  read(): number {
    if (this.pos >= this.buf.length) {
      this.width = 0;
      return EOF;
    }
    const r = this.buf.codePointAt(this.pos)!;
    this.width = r > 0xffff ? 2 : 1;
    this.pos += this.width;
    return r;
  }
  unread(): void {
    this.pos -= this.width;
  }
  /** drops the character before pos from the buffer (an escaping `$` or `\`) */
  skip(): void {
    this.buf = this.buf.slice(0, this.pos - 1) + this.buf.slice(this.pos);
  }
  peek(): number {
    const r = this.read();
    this.unread();
    return r;
  }
  string(): string {
    return this.buf.slice(this.start, this.pos);
  }
  scan(): Token {
    this.start = this.pos;
    const r = this.read();
    if (r === EOF) return Token.EOF;
    if (this.scanLbrack(r)) return Token.Lbrack;
    if (this.scanRbrack(r)) return Token.Rbrack;
    if (this.scanIdent(r)) return Token.Ident;
    return Token.Illegal;
  }
  scanIdent(r: number): boolean {
    if ((this.mode & SCAN_IDENT) === 0) return false;
    if (this.scanEscaped(r)) this.skip();
    else if (!this.accept(r, this.pos - this.start)) return false;
    for (;;) {
      const c = this.read();
      if (c === EOF) {
        this.unread();
        break;
      }
      if (this.scanLbrack(c)) {
        this.unread();
        this.unread();
        break;
      }
      if (this.scanEscaped(c)) {
        this.skip();
        continue;
      }
      if (!this.accept(c, this.pos - this.start)) {
        this.unread();
        break;
      }
    }
    return true;
  }
  scanLbrack(r: number): boolean {
    if ((this.mode & SCAN_LBRACK) === 0) return false;
    if (r === C.dollar) {
      if (this.read() === C.lbrace) return true;
      this.unread();
    }
    return false;
  }
  scanRbrack(r: number): boolean {
    if ((this.mode & SCAN_RBRACK) === 0) return false;
    return r === C.rbrace;
  }
  scanEscaped(r: number): boolean {
    if ((this.mode & SCAN_ESCAPE) === 0) return false;
    if (r === C.dollar && (this.escapeChars & DOLLAR) !== 0 && this.peek() === C.dollar) return true;
    if (r === C.backslash && (this.escapeChars & BACKSLASH) !== 0) {
      const n = this.peek();
      return n === C.slash || n === C.backslash;
    }
    return false;
  }
}

type Node = { text: string } | { param: string; name: string; args: Node[] } | { list: Node[] };

export class EnvsubstError extends Error {}
const badSubstitution = () => new EnvsubstError('bad substitution');

/** parse.go: the tree of one document. parseAny's right recursion is a loop here (same tree, flattened). */
class Parser {
  private readonly s: Scanner;
  constructor(buf: string) {
    this.s = new Scanner(buf);
  }

  parseAny(): Node {
    const nodes: Node[] = [];
    for (;;) {
      const s = this.s;
      s.accept = acceptRune;
      s.mode = SCAN_IDENT | SCAN_LBRACK | SCAN_ESCAPE;
      s.escapeChars = DOLLAR;
      const tok = s.scan();
      if (tok === Token.Ident) nodes.push({ text: s.string() });
      else if (tok === Token.EOF) break;
      else if (tok === Token.Lbrack) nodes.push(this.parseFunc());
      else throw badSubstitution();
    }
    return { list: nodes };
  }

  private parseFunc(): Node {
    const s = this.s;
    s.escapeChars = ESCAPE_ALL;
    if (s.peek() === C.hash) return this.parseLenFunc();
    s.accept = acceptIdent;
    s.mode = SCAN_IDENT;
    if (s.scan() !== Token.Ident) throw new EnvsubstError('unable to parse variable name');
    const name = s.string();
    switch (s.peek()) {
      case C.colon: return this.parseDefaultOrSubstr(name);
      case C.equal: return this.parseDefaultFunc(name);
      case C.comma:
      case C.caret: return this.parseCasingFunc(name);
      case C.slash: return this.parseReplaceFunc(name);
      case C.hash: return this.parseRemoveFunc(name, acceptHashFunc);
      case C.percent: return this.parseRemoveFunc(name, acceptPercentFunc);
    }
    s.accept = acceptIdent;
    s.mode = SCAN_RBRACK;
    if (s.scan() !== Token.Rbrack) throw new EnvsubstError('missing closing brace');
    return { param: name, name: '', args: [] };
  }

  private parseParam(accept: Accept, mode: number): Node {
    const s = this.s;
    s.accept = accept;
    s.mode = mode | SCAN_LBRACK;
    switch (s.scan()) {
      case Token.Lbrack: return this.parseFunc();
      case Token.Ident:
      case Token.Rbrack: return { text: s.string() };
      default: throw new EnvsubstError('unable to parse substitution within function');
    }
  }

  private parseDefaultOrSubstr(name: string): Node {
    const s = this.s;
    s.read();
    const r = s.peek();
    s.unread();
    return r === C.equal || r === C.minus || r === C.question || r === C.plus ? this.parseDefaultFunc(name) : this.parseSubstrFunc(name);
  }

  private parseSubstrFunc(param: string): Node {
    const s = this.s;
    s.accept = acceptOneColon;
    s.mode = SCAN_IDENT;
    if (s.scan() !== Token.Ident) throw badSubstitution();
    const node = { param, name: s.string(), args: [] as Node[] };
    node.args.push(this.parseParam(rejectColonClose, SCAN_IDENT));
    s.accept = acceptColon;
    s.mode = SCAN_IDENT | SCAN_RBRACK;
    const tok = s.scan();
    if (tok === Token.Rbrack) return node;
    if (tok !== Token.Ident) throw badSubstitution();
    node.args.push(this.parseParam(acceptNotClosing, SCAN_IDENT));
    this.consumeRbrack();
    return node;
  }

  private parseRemoveFunc(param: string, accept: Accept): Node {
    const s = this.s;
    s.accept = accept;
    s.mode = SCAN_IDENT;
    if (s.scan() !== Token.Ident) throw badSubstitution();
    const node = { param, name: s.string(), args: [this.parseParam(acceptNotClosing, SCAN_IDENT)] };
    this.consumeRbrack();
    return node;
  }

  private parseReplaceFunc(param: string): Node {
    const s = this.s;
    s.accept = acceptReplaceFunc;
    s.mode = SCAN_IDENT;
    if (s.scan() !== Token.Ident) throw badSubstitution();
    const node = { param, name: s.string(), args: [this.parseParam(acceptNotSlash, SCAN_IDENT | SCAN_ESCAPE)] };
    s.accept = acceptSlash;
    s.mode = SCAN_IDENT;
    if (s.scan() !== Token.Ident) throw badSubstitution();
    if (s.peek() === C.rbrace) {
      this.consumeRbrack();
      return node;
    }
    node.args.push(this.parseParam(acceptNotClosing, SCAN_IDENT | SCAN_ESCAPE));
    this.consumeRbrack();
    return node;
  }

  private parseDefaultFunc(param: string): Node {
    const s = this.s;
    s.accept = s.peek() === C.equal ? acceptOneEqual : acceptDefaultFunc;
    s.mode = SCAN_IDENT;
    if (s.scan() !== Token.Ident) throw new EnvsubstError('unable to parse default function');
    const node = { param, name: s.string(), args: [] as Node[] };
    for (;;) {
      if (s.peek() === C.rbrace) {
        this.consumeRbrack();
        return node;
      }
      node.args.push(this.parseParam(acceptNotClosing, SCAN_IDENT));
    }
  }

  private parseCasingFunc(param: string): Node {
    const s = this.s;
    s.accept = acceptCasingFunc;
    s.mode = SCAN_IDENT;
    if (s.scan() !== Token.Ident) throw badSubstitution();
    const node = { param, name: s.string(), args: [] };
    this.consumeRbrack();
    return node;
  }

  private parseLenFunc(): Node {
    const s = this.s;
    s.accept = acceptOneHash;
    s.mode = SCAN_IDENT;
    if (s.scan() !== Token.Ident) throw badSubstitution();
    const name = s.string();
    s.accept = acceptIdent;
    s.mode = SCAN_IDENT;
    if (s.scan() !== Token.Ident) throw badSubstitution();
    const node = { param: s.string(), name, args: [] };
    this.consumeRbrack();
    return node;
  }

  private consumeRbrack(): void {
    this.s.mode = SCAN_RBRACK;
    if (this.s.scan() !== Token.Rbrack) throw badSubstitution();
  }
}

/** Go's path.Match as forked in envsubst/path/match.go (a trailing `*` matches the rest, `/` included). */
export function globMatch(pattern: string, name: string): boolean {
  const scanChunk = (p: string): [boolean, string, string] => {
    let star = false;
    while (p.length > 0 && p[0] === '*') {
      p = p.slice(1);
      star = true;
    }
    let inrange = false;
    let i = 0;
    scan: for (; i < p.length; i++) {
      switch (p[i]) {
        case '\\':
          if (i + 1 < p.length) i++;
          break;
        case '[':
          inrange = true;
          break;
        case ']':
          inrange = false;
          break;
        case '*':
          if (!inrange) break scan;
      }
    }
    return [star, p.slice(0, i), p.slice(i)];
  };
  const getEsc = (chunk: string): [string, string] => {
    if (chunk.length === 0 || chunk[0] === '-' || chunk[0] === ']') throw new EnvsubstError('syntax error in pattern');
    if (chunk[0] === '\\') {
      chunk = chunk.slice(1);
      if (chunk.length === 0) throw new EnvsubstError('syntax error in pattern');
    }
    const r = String.fromCodePoint(chunk.codePointAt(0)!);
    const rest = chunk.slice(r.length);
    if (rest.length === 0) throw new EnvsubstError('syntax error in pattern');
    return [r, rest];
  };
  /** the rest of s after chunk matched its start, or undefined */
  const matchChunk = (chunk: string, s: string): string | undefined => {
    while (chunk.length > 0) {
      if (s.length === 0) return undefined;
      if (chunk[0] === '[') {
        const r = String.fromCodePoint(s.codePointAt(0)!);
        s = s.slice(r.length);
        chunk = chunk.slice(1);
        let negated = false;
        if (chunk[0] === '^') {
          negated = true;
          chunk = chunk.slice(1);
        }
        let match = false;
        let nrange = 0;
        for (;;) {
          if (chunk.length > 0 && chunk[0] === ']' && nrange > 0) {
            chunk = chunk.slice(1);
            break;
          }
          let lo: string;
          let hi: string;
          [lo, chunk] = getEsc(chunk);
          hi = lo;
          if (chunk[0] === '-') [hi, chunk] = getEsc(chunk.slice(1));
          if (lo.codePointAt(0)! <= r.codePointAt(0)! && r.codePointAt(0)! <= hi.codePointAt(0)!) match = true;
          nrange++;
        }
        if (match === negated) return undefined;
      } else if (chunk[0] === '?') {
        s = s.slice(String.fromCodePoint(s.codePointAt(0)!).length);
        chunk = chunk.slice(1);
      } else {
        if (chunk[0] === '\\') {
          chunk = chunk.slice(1);
          if (chunk.length === 0) throw new EnvsubstError('syntax error in pattern');
        }
        if (chunk[0] !== s[0]) return undefined;
        s = s.slice(1);
        chunk = chunk.slice(1);
      }
    }
    return s;
  };
  outer: while (pattern.length > 0) {
    const [star, chunk, rest] = scanChunk(pattern);
    pattern = rest;
    if (star && chunk === '') return true;
    const t = matchChunk(chunk, name);
    if (t !== undefined && (t.length === 0 || pattern.length > 0)) {
      name = t;
      continue;
    }
    if (star) {
      for (let i = 0; i < name.length; i++) {
        const t2 = matchChunk(chunk, name.slice(i + 1));
        if (t2 !== undefined) {
          if (pattern.length === 0 && t2.length > 0) continue;
          name = t2;
          continue outer;
        }
      }
    }
    return false;
  }
  return name.length === 0;
}

// funcs.go
type Fn = (s: string, args: string[]) => string;
const utf8 = (s: string) => Buffer.from(s, 'utf8');
const toLen: Fn = (s) => String(utf8(s).length);
const firstRune = (s: string) => String.fromCodePoint(s.codePointAt(0)!);
const toLowerFirst: Fn = (s) => (s === '' ? s : firstRune(s).toLowerCase() + s.slice(firstRune(s).length));
const toUpperFirst: Fn = (s) => (s === '' ? s : firstRune(s).toUpperCase() + s.slice(firstRune(s).length));
const toDefault: Fn = (s, args) => (s.length === 0 && args.length > 0 ? args.join('') : s);
/** Go's strconv.Atoi: an optional sign and decimal digits, nothing else */
const atoi = (s: string | undefined): number | undefined => (s !== undefined && /^[+-]?\d+$/.test(s) ? Number(s) : undefined);
const toSubstr: Fn = (s, args) => {
  if (args.length === 0) return s;
  let pos = atoi(args[0]);
  if (pos === undefined) return s;
  const b = utf8(s);
  if (pos < 0) pos = Math.max(0, b.length + pos);
  if (args.length === 1) return pos < b.length ? b.subarray(pos).toString('utf8') : '';
  const length = atoi(args[1]);
  if (length === undefined) return s;
  if (pos + length >= b.length) return pos < b.length ? b.subarray(pos).toString('utf8') : '';
  return b.subarray(pos, pos + length).toString('utf8');
};
const replaceAll: Fn = (s, a) => (a.length === 0 ? s : s.split(a[0]!).join(a[1] ?? ''));
const replaceFirst: Fn = (s, a) => (a.length === 0 ? s : s.replace(a[0]!, () => a[1] ?? ''));
const replacePrefix: Fn = (s, a) => (a.length === 2 && s.startsWith(a[0]!) ? a[1]! + s.slice(a[0]!.length) : s);
const replaceSuffix: Fn = (s, a) => (a.length === 2 && s.endsWith(a[0]!) ? s.slice(0, s.length - a[0]!.length) + a[1]! : s);
const reverse = (s: string) => [...s].reverse().join('');
function trimShortest(s: string, arg: string): string {
  let shortest = '';
  for (let i = 0; i < s.length; i++) {
    let m: boolean;
    try {
      m = globMatch(arg, s.slice(0, s.length - i));
    } catch {
      return s;
    }
    if (m) shortest = s.slice(0, s.length - i);
  }
  return shortest !== '' && s.startsWith(shortest) ? s.slice(shortest.length) : s;
}
function trimLongest(s: string, arg: string): string {
  for (let i = 0; i < s.length; i++) {
    let m: boolean;
    try {
      m = globMatch(arg, s.slice(0, s.length - i));
    } catch {
      return s;
    }
    if (m) return s.slice(s.length - i);
  }
  return s;
}
const trimShortestPrefix: Fn = (s, a) => (a.length ? trimShortest(s, a[0]!) : s);
const trimShortestSuffix: Fn = (s, a) => (a.length ? reverse(trimShortest(reverse(s), reverse(a[0]!))) : s);
const trimLongestPrefix: Fn = (s, a) => (a.length ? trimLongest(s, a[0]!) : s);
const trimLongestSuffix: Fn = (s, a) => (a.length ? reverse(trimLongest(reverse(s), reverse(a[0]!))) : s);

/** template.go L164-202 */
function lookupFunc(name: string, nargs: number): Fn {
  switch (name) {
    case ',': return toLowerFirst;
    case ',,': return (s) => s.toLowerCase();
    case '^': return toUpperFirst;
    case '^^': return (s) => s.toUpperCase();
    case '#': return nargs === 0 ? toLen : trimShortestPrefix;
    case '##': return trimLongestPrefix;
    case '%': return trimShortestSuffix;
    case '%%': return trimLongestSuffix;
    case ':': return toSubstr;
    case '/#': return replacePrefix;
    case '/%': return replaceSuffix;
    case '/': return replaceFirst;
    case '//': return replaceAll;
    default: return toDefault;
  }
}

/** template.go L153-160: operators that supply their own value for an unset variable */
const DEFAULT_OPS = new Set(['-', '+', '=', '?', ':-', ':+', ':=', ':?']);

/** A variable's value, and whether it exists (false only matters in strict mode). */
export type Mapping = (name: string) => [string, boolean];

/**
 * Expand `${…}` in `text` as fluxcd/pkg envsubst.Eval does. Throws EnvsubstError on a syntax error,
 * or for a variable the mapping says does not exist (strict mode), naming it.
 */
export function envsubst(text: string, mapping: Mapping): string {
  const root = new Parser(text).parseAny();
  const evalNode = (node: Node): string => {
    if ('text' in node) return node.text;
    if ('list' in node) return node.list.map(evalNode).join('');
    const args = node.args.map(evalNode);
    const [v, exists] = mapping(node.param);
    if (!exists && !DEFAULT_OPS.has(node.name)) throw new EnvsubstError(`variable not set (strict mode): "${node.param}"`);
    return lookupFunc(node.name, args.length)(v, args);
  };
  return evalNode(root);
}
