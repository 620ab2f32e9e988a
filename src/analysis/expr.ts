/**
 * The condition language of Argo Rollouts' `successCondition` / `failureCondition`: the subset of
 * expr-lang/expr (github.com/expr-lang/expr) that analysis templates use, evaluated in the
 * environment Argo Rollouts gives it (utils/evaluate/evaluate.go, EvalCondition): `result` and
 * the functions asInt, asFloat, isNaN, isInf, isNil, default.
 *
 * Followed from expr-lang/expr: operator precedence and associativity (parser/operator/operator.go),
 * the parse of unary operators, chained comparisons (`1 < x < 3` is `1 < x && x < 3`), `not in`,
 * the ternary and `??` (parser/parser.go: parseExpression, parsePrimary, parseComparison,
 * parseConditional), negative indices, `/` always dividing as floats, predicates with `#` and
 * `.field` (docs/language-definition.md). Not supported (refused with a clear error): `let`,
 * `if {} else {}`, the pipe `|`, bytes literals and the string/date/map functions no analysis
 * template needs.
 *
 * Errors are ExprError: Argo Rollouts makes any compile or run error of a condition a measurement
 * in phase Error (evaluate.go, EvaluateResult), and so does lastgood.
 */

export class ExprError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ExprError';
  }
}

export type Value = number | string | boolean | null | Value[] | { [key: string]: Value };

// ---- lexer

type TokenKind = 'number' | 'string' | 'ident' | 'op' | 'eof';
interface Token {
  kind: TokenKind;
  value: string;
  num?: number;
  pos: number;
}

const KEYWORD_OPERATORS = new Set(['and', 'or', 'not', 'in', 'matches', 'contains', 'startsWith', 'endsWith', 'let', 'if', 'else']);
const OPERATORS = ['**', '??', '?.', '..', '==', '!=', '<=', '>=', '&&', '||', '::', '+', '-', '*', '/', '%', '^', '<', '>', '!', '?', ':', '.', ',', '(', ')', '[', ']', '{', '}', '#', '|', ';', '='];

function lex(source: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  const at = (k: number) => source[k] ?? '';
  while (i < source.length) {
    const c = at(i);
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    if (c === '/' && at(i + 1) === '/') {
      while (i < source.length && at(i) !== '\n') i++;
      continue;
    }
    if (c === '/' && at(i + 1) === '*') {
      const end = source.indexOf('*/', i + 2);
      if (end < 0) throw new ExprError(`unclosed comment at ${i}`);
      i = end + 2;
      continue;
    }
    const start = i;
    if (/[0-9]/.test(c) || (c === '.' && /[0-9]/.test(at(i + 1)))) {
      const m = /^(0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|(?:[0-9][0-9_]*)?(?:\.[0-9][0-9_]*)?(?:[eE][+-]?[0-9]+)?)/.exec(source.slice(i))!;
      let text = m[0];
      // "1..3" is a range of integers, not the float "1." followed by ".3"
      if (text.endsWith('.') ) text = text.slice(0, -1);
      const clean = text.replace(/_/g, '');
      const num = /^0[xX]/.test(clean) ? parseInt(clean.slice(2), 16) : /^0[oO]/.test(clean) ? parseInt(clean.slice(2), 8) : /^0[bB]/.test(clean) ? parseInt(clean.slice(2), 2) : Number(clean);
      if (text === '' || Number.isNaN(num)) throw new ExprError(`invalid number at ${i}`);
      tokens.push({ kind: 'number', value: text, num, pos: start });
      i += text.length;
      continue;
    }
    if (c === '"' || c === "'") {
      let out = '';
      i++;
      for (;;) {
        if (i >= source.length) throw new ExprError(`literal not terminated at ${start}`);
        const ch = at(i);
        if (ch === c) {
          i++;
          break;
        }
        if (ch === '\\') {
          const e = at(i + 1);
          const simple: Record<string, string> = { n: '\n', t: '\t', r: '\r', '\\': '\\', "'": "'", '"': '"', '0': '\0', a: '\x07', b: '\b', f: '\f', v: '\v' };
          if (e in simple) {
            out += simple[e];
            i += 2;
          } else if (e === 'u' && /^[0-9a-fA-F]{4}$/.test(source.slice(i + 2, i + 6))) {
            out += String.fromCharCode(parseInt(source.slice(i + 2, i + 6), 16));
            i += 6;
          } else if (e === 'x' && /^[0-9a-fA-F]{2}$/.test(source.slice(i + 2, i + 4))) {
            out += String.fromCharCode(parseInt(source.slice(i + 2, i + 4), 16));
            i += 4;
          } else throw new ExprError(`invalid escape sequence \\${e} at ${i}`);
          continue;
        }
        out += ch;
        i++;
      }
      tokens.push({ kind: 'string', value: out, pos: start });
      continue;
    }
    if (c === '`') {
      const end = source.indexOf('`', i + 1);
      if (end < 0) throw new ExprError(`literal not terminated at ${start}`);
      tokens.push({ kind: 'string', value: source.slice(i + 1, end), pos: start });
      i = end + 1;
      continue;
    }
    if (/[A-Za-z_$]/.test(c)) {
      const m = /^[A-Za-z_$][A-Za-z0-9_$]*/.exec(source.slice(i))!;
      tokens.push({ kind: KEYWORD_OPERATORS.has(m[0]) ? 'op' : 'ident', value: m[0], pos: start });
      i += m[0].length;
      continue;
    }
    const op = OPERATORS.find((o) => source.startsWith(o, i));
    if (!op) throw new ExprError(`unexpected token ${JSON.stringify(c)} at ${i}`);
    tokens.push({ kind: 'op', value: op, pos: start });
    i += op.length;
  }
  tokens.push({ kind: 'eof', value: '', pos: source.length });
  return tokens;
}

// ---- parser (expr-lang/expr parser/parser.go, parser/operator/operator.go)

type Node =
  | { type: 'literal'; value: Value }
  | { type: 'name'; name: string }
  | { type: 'pointer'; field?: string }
  | { type: 'unary'; op: string; node: Node }
  | { type: 'binary'; op: string; left: Node; right: Node }
  | { type: 'member'; node: Node; property: Node; optional: boolean }
  | { type: 'slice'; node: Node; from?: Node; to?: Node }
  | { type: 'call'; name: string; args: Node[] }
  | { type: 'closure'; body: Node }
  | { type: 'array'; items: Node[] }
  | { type: 'map'; entries: Array<[Node, Node]> }
  | { type: 'conditional'; cond: Node; then: Node; else: Node };

const UNARY: Record<string, number> = { not: 50, '!': 50, '-': 90, '+': 90 };
const BINARY: Record<string, { precedence: number; right?: boolean }> = {
  or: { precedence: 10 }, '||': { precedence: 10 },
  and: { precedence: 15 }, '&&': { precedence: 15 },
  '==': { precedence: 20 }, '!=': { precedence: 20 }, '<': { precedence: 20 }, '>': { precedence: 20 }, '>=': { precedence: 20 }, '<=': { precedence: 20 },
  in: { precedence: 20 }, matches: { precedence: 20 }, contains: { precedence: 20 }, startsWith: { precedence: 20 }, endsWith: { precedence: 20 },
  '..': { precedence: 25 },
  '+': { precedence: 30 }, '-': { precedence: 30 },
  '*': { precedence: 60 }, '/': { precedence: 60 }, '%': { precedence: 60 },
  '**': { precedence: 100, right: true }, '^': { precedence: 100, right: true },
  '??': { precedence: 500 },
};
const COMPARISONS = new Set(['<', '>', '<=', '>=']);
const NEGATABLE = new Set(['contains', 'matches', 'startsWith', 'endsWith', 'in']);
/** builtins that take a predicate as their second argument (expr-lang/expr builtin/builtin.go) */
const PREDICATE_BUILTINS = new Set(['all', 'none', 'any', 'one', 'filter', 'map', 'count', 'sum', 'find', 'findIndex', 'findLast', 'findLastIndex']);

class Parser {
  private readonly tokens: Token[];
  private readonly names: ReadonlySet<string>;
  private i = 0;
  private depth = 0;
  constructor(source: string, names: ReadonlySet<string>) {
    this.tokens = lex(source);
    this.names = names;
  }

  private get current(): Token {
    return this.tokens[this.i]!;
  }
  private next(): void {
    this.i++;
  }
  private atEnd(): boolean {
    return this.current.kind === 'eof';
  }
  private is(value: string, kind: TokenKind = 'op'): boolean {
    return this.current.kind === kind && this.current.value === value;
  }
  private expect(value: string): void {
    if (!this.is(value)) throw new ExprError(`unexpected token ${describeToken(this.current)}, expected "${value}"`);
    this.next();
  }

  parse(): Node {
    if (this.atEnd()) throw new ExprError('empty expression');
    const node = this.parseExpression(0);
    if (!this.atEnd()) throw new ExprError(`unexpected token ${describeToken(this.current)}`);
    return node;
  }

  private parseExpression(precedence: number): Node {
    if (precedence === 0 && (this.is('let') || this.is('if'))) throw new ExprError(`"${this.current.value}" is not supported in analysis conditions by lastgood`);
    let left = this.parsePrimary();
    let previous = '';
    for (;;) {
      let token = this.current;
      if (token.kind !== 'op') break;
      let negate = false;
      if (token.value === 'not') {
        const after = this.tokens[this.i + 1]!;
        if (after.kind === 'op' && NEGATABLE.has(after.value) && BINARY[after.value]!.precedence >= precedence) {
          negate = true;
          this.next();
          token = this.current;
        } else break;
      }
      const op = BINARY[token.value];
      if (!op || op.precedence < precedence) break;
      this.next();
      if (previous === '??' && token.value !== '??') throw new ExprError(`Operator (${token.value}) and coalesce expressions (??) cannot be mixed. Wrap either by parentheses.`);
      if (COMPARISONS.has(token.value)) {
        left = this.parseComparison(left, token.value, op.precedence);
      } else {
        const right = this.parseExpression(op.right ? op.precedence : op.precedence + 1);
        left = { type: 'binary', op: token.value, left, right };
        if (negate) left = { type: 'unary', op: 'not', node: left };
      }
      previous = token.value;
    }
    if (this.is('|')) throw new ExprError('the pipe operator "|" is not supported in analysis conditions by lastgood');
    if (precedence === 0) left = this.parseConditional(left);
    return left;
  }

  /** `a < b < c` is `a < b && b < c` (parser.go parseComparison). */
  private parseComparison(left: Node, op: string, precedence: number): Node {
    let root: Node | undefined;
    for (;;) {
      const right = this.parseExpression(precedence + 1);
      const cmp: Node = { type: 'binary', op, left, right };
      root = root ? { type: 'binary', op: '&&', left: root, right: cmp } : cmp;
      left = right;
      if (!(this.current.kind === 'op' && COMPARISONS.has(this.current.value))) break;
      op = this.current.value;
      this.next();
    }
    return root;
  }

  private parseConditional(node: Node): Node {
    while (this.is('?')) {
      this.next();
      let then: Node;
      let otherwise: Node;
      if (!this.is(':')) {
        then = this.parseExpression(0);
        this.expect(':');
        otherwise = this.parseExpression(0);
      } else {
        this.next();
        then = node;
        otherwise = this.parseExpression(0);
      }
      node = { type: 'conditional', cond: node, then, else: otherwise };
    }
    return node;
  }

  private parsePrimary(): Node {
    const token = this.current;
    if (token.kind === 'op' && UNARY[token.value] !== undefined) {
      this.next();
      const node = this.parseExpression(UNARY[token.value]!);
      return this.parsePostfix({ type: 'unary', op: token.value, node });
    }
    if (this.is('(')) {
      this.next();
      const node = this.parseExpression(0);
      this.expect(')');
      return this.parsePostfix(node);
    }
    if (this.depth > 0 && (this.is('#') || this.is('.'))) {
      if (this.is('#')) {
        this.next();
        if (this.current.kind === 'ident') throw new ExprError(`#${this.current.value} is not supported in analysis conditions by lastgood`);
      }
      return this.parsePostfix({ type: 'pointer' });
    }
    return this.parseSecondary();
  }

  private parseSecondary(): Node {
    const token = this.current;
    let node: Node;
    if (token.kind === 'number') {
      this.next();
      node = { type: 'literal', value: token.num! };
    } else if (token.kind === 'string') {
      this.next();
      node = { type: 'literal', value: token.value };
    } else if (token.kind === 'ident') {
      this.next();
      if (token.value === 'true' || token.value === 'false') node = { type: 'literal', value: token.value === 'true' };
      else if (token.value === 'nil') node = { type: 'literal', value: null };
      else if (this.is('(')) node = this.parseCall(token.value);
      else {
        if (!this.names.has(token.value) || FUNCTIONS.has(token.value)) throw new ExprError(`unknown name ${token.value}`);
        node = { type: 'name', name: token.value };
      }
    } else if (this.is('[')) {
      this.next();
      const items: Node[] = [];
      while (!this.is(']')) {
        items.push(this.parseExpression(0));
        if (!this.is(',')) break;
        this.next();
      }
      this.expect(']');
      node = { type: 'array', items };
    } else if (this.is('{')) {
      this.next();
      const entries: Array<[Node, Node]> = [];
      while (!this.is('}')) {
        const k = this.current;
        let key: Node;
        if (k.kind === 'ident' || k.kind === 'string' || k.kind === 'number') {
          this.next();
          key = { type: 'literal', value: k.kind === 'number' ? k.num! : k.value };
        } else if (this.is('(')) {
          this.next();
          key = this.parseExpression(0);
          this.expect(')');
        } else throw new ExprError(`a map key must be a quoted string, a number or an identifier, not ${describeToken(k)}`);
        this.expect(':');
        entries.push([key, this.parseExpression(0)]);
        if (!this.is(',')) break;
        this.next();
      }
      this.expect('}');
      node = { type: 'map', entries };
    } else {
      throw new ExprError(`unexpected token ${describeToken(token)}`);
    }
    return this.parsePostfix(node);
  }

  private parseCall(name: string): Node {
    if (!FUNCTIONS.has(name)) {
      if (this.names.has(name)) throw new ExprError(`${name} is not callable`);
      throw new ExprError(`unknown func ${name}`);
    }
    this.expect('(');
    const args: Node[] = [];
    while (!this.is(')')) {
      if (PREDICATE_BUILTINS.has(name) && args.length === 1) args.push(this.parsePredicate());
      else args.push(this.parseExpression(0));
      if (!this.is(',')) break;
      this.next();
    }
    this.expect(')');
    return { type: 'call', name, args };
  }

  /** A predicate: `{ # > 1 }` or the expression itself (braces may be omitted). */
  private parsePredicate(): Node {
    this.depth++;
    let body: Node;
    if (this.is('{')) {
      this.next();
      body = this.parseExpression(0);
      this.expect('}');
    } else body = this.parseExpression(0);
    this.depth--;
    return { type: 'closure', body };
  }

  private parsePostfix(node: Node): Node {
    for (;;) {
      if (this.is('.') || this.is('?.')) {
        const optional = this.is('?.');
        this.next();
        const t = this.current;
        if (t.kind !== 'ident' && !(t.kind === 'op' && KEYWORD_OPERATORS.has(t.value))) {
          if (optional && this.is('[')) continue;
          throw new ExprError(`expected name after "." but got ${describeToken(t)}`);
        }
        this.next();
        if (this.is('(')) throw new ExprError(`method calls (${t.value}()) are not supported`);
        node = { type: 'member', node, property: { type: 'literal', value: t.value }, optional };
      } else if (this.is('[')) {
        this.next();
        if (this.is(':')) {
          this.next();
          const to = this.is(']') ? undefined : this.parseExpression(0);
          this.expect(']');
          node = { type: 'slice', node, ...(to ? { to } : {}) };
          continue;
        }
        const index = this.parseExpression(0);
        if (this.is(':')) {
          this.next();
          const to = this.is(']') ? undefined : this.parseExpression(0);
          this.expect(']');
          node = { type: 'slice', node, from: index, ...(to ? { to } : {}) };
          continue;
        }
        this.expect(']');
        node = { type: 'member', node, property: index, optional: false };
      } else return node;
    }
  }
}

function describeToken(t: Token): string {
  if (t.kind === 'eof') return 'end of the expression';
  return `"${t.kind === 'string' ? JSON.stringify(t.value) : t.value}"`;
}

// ---- evaluation

/** The type name expr-lang/expr (Go) would print for a value. */
export function typeName(v: Value | undefined): string {
  if (v === null || v === undefined) return '<nil>';
  if (typeof v === 'number') return Number.isInteger(v) ? 'int' : 'float64';
  if (typeof v === 'string') return 'string';
  if (typeof v === 'boolean') return 'bool';
  if (Array.isArray(v)) return '[]interface {}';
  return 'map[string]interface {}';
}

function mismatch(op: string, a: Value, b: Value): ExprError {
  return new ExprError(`invalid operation: ${op} (mismatched types ${typeName(a)} and ${typeName(b)})`);
}

function bool(v: Value, op: string, other: Value = null): boolean {
  if (typeof v !== 'boolean') throw mismatch(op, v, other);
  return v;
}

function num(v: Value, what: string): number {
  if (typeof v !== 'number') throw new ExprError(`${what}: expected a number, got ${typeName(v)}`);
  return v;
}

function arr(v: Value, what: string): Value[] {
  if (!Array.isArray(v)) throw new ExprError(`${what}: expected an array, got ${typeName(v)}`);
  return v;
}

/** expr-lang/expr vm/runtime Equal: numbers by value whatever their Go type, the rest deeply; mismatched kinds are an error. */
function equal(a: Value, b: Value): boolean {
  if (a === null || b === null) return a === b;
  if (typeof a !== typeof b || Array.isArray(a) !== Array.isArray(b)) throw mismatch('==', a, b);
  if (typeof a !== 'object') return a === b;
  return deepEqual(a, b);
}

function deepEqual(a: Value, b: Value): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((x, i) => deepEqual(x, b[i]!));
  }
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => k in b && deepEqual(a[k]!, b[k]!));
}

function less(op: string, a: Value, b: Value): boolean {
  if (typeof a === 'number' && typeof b === 'number') {
    if (op === '<') return a < b;
    if (op === '>') return a > b;
    if (op === '<=') return a <= b;
    return a >= b;
  }
  if (typeof a === 'string' && typeof b === 'string') {
    if (op === '<') return a < b;
    if (op === '>') return a > b;
    if (op === '<=') return a <= b;
    return a >= b;
  }
  throw mismatch(op, a, b);
}

interface Scope {
  env: Readonly<Record<string, Value>>;
  functions: Readonly<Record<string, (args: Value[]) => Value>>;
  /** the current element of a predicate (`#`) */
  pointers: Value[];
}

function evaluate(node: Node, scope: Scope): Value {
  switch (node.type) {
    case 'literal':
      return node.value;
    case 'name':
      return scope.env[node.name] ?? null;
    case 'pointer':
      if (scope.pointers.length === 0) throw new ExprError('# outside of a predicate');
      return scope.pointers[scope.pointers.length - 1]!;
    case 'array':
      return node.items.map((n) => evaluate(n, scope));
    case 'map': {
      const out: Record<string, Value> = {};
      for (const [k, v] of node.entries) out[String(evaluate(k, scope))] = evaluate(v, scope);
      return out;
    }
    case 'conditional': {
      const c = evaluate(node.cond, scope);
      if (typeof c !== 'boolean') throw new ExprError(`non-bool expression (type ${typeName(c)}) used as condition`);
      return c ? evaluate(node.then, scope) : evaluate(node.else, scope);
    }
    case 'unary': {
      const v = evaluate(node.node, scope);
      if (node.op === 'not' || node.op === '!') return !bool(v, node.op);
      if (typeof v !== 'number') throw new ExprError(`invalid operation: ${node.op} (mismatched type ${typeName(v)})`);
      return node.op === '-' ? -v : v;
    }
    case 'binary':
      return binary(node.op, node.left, node.right, scope);
    case 'member': {
      const target = evaluate(node.node, scope);
      if (target === null) {
        if (node.optional) return null;
        throw new ExprError(`cannot fetch ${JSON.stringify(evaluate(node.property, scope))} from <nil>`);
      }
      const key = evaluate(node.property, scope);
      if (Array.isArray(target) || typeof target === 'string') {
        if (typeof key !== 'number' || !Number.isInteger(key)) throw new ExprError(`cannot use ${typeName(key)} as index to ${typeName(target)}`);
        const index = key < 0 ? target.length + key : key;
        if (index < 0 || index >= target.length) throw new ExprError(`index out of range: ${key} (array length is ${target.length})`);
        return target[index]!;
      }
      if (typeof target === 'object') return (target as Record<string, Value>)[String(key)] ?? null;
      throw new ExprError(`cannot fetch ${JSON.stringify(key)} from ${typeName(target)}`);
    }
    case 'slice': {
      const target = evaluate(node.node, scope);
      if (!Array.isArray(target) && typeof target !== 'string') throw new ExprError(`cannot slice ${typeName(target)}`);
      const bound = (n: Node | undefined, d: number) => {
        if (!n) return d;
        const v = num(evaluate(n, scope), 'slice index');
        const i = v < 0 ? target.length + v : v;
        return Math.min(Math.max(i, 0), target.length);
      };
      return target.slice(bound(node.from, 0), bound(node.to, target.length)) as Value;
    }
    case 'call':
      return call(node, scope);
    case 'closure':
      throw new ExprError('a predicate outside of a builtin');
  }
}

function binary(op: string, leftNode: Node, rightNode: Node, scope: Scope): Value {
  if (op === '&&' || op === 'and') {
    const a = evaluate(leftNode, scope);
    if (!bool(a, op)) return false;
    return bool(evaluate(rightNode, scope), op, a);
  }
  if (op === '||' || op === 'or') {
    const a = evaluate(leftNode, scope);
    if (bool(a, op)) return true;
    return bool(evaluate(rightNode, scope), op, a);
  }
  if (op === '??') {
    const a = evaluate(leftNode, scope);
    return a === null ? evaluate(rightNode, scope) : a;
  }
  const a = evaluate(leftNode, scope);
  const b = evaluate(rightNode, scope);
  switch (op) {
    case '==':
      return equal(a, b);
    case '!=':
      return !equal(a, b);
    case '<': case '>': case '<=': case '>=':
      return less(op, a, b);
    case '+':
      if (typeof a === 'number' && typeof b === 'number') return a + b;
      if (typeof a === 'string' && typeof b === 'string') return a + b;
      throw mismatch(op, a, b);
    case '-': case '*': case '/':
      if (typeof a !== 'number' || typeof b !== 'number') throw mismatch(op, a, b);
      // Go: dividing integers by zero panics in expr's Divide only for `%`; `/` converts to float64 first
      return op === '-' ? a - b : op === '*' ? a * b : a / b;
    case '%':
      if (typeof a !== 'number' || typeof b !== 'number' || !Number.isInteger(a) || !Number.isInteger(b)) throw mismatch(op, a, b);
      if (b === 0) throw new ExprError('integer divide by zero');
      return a % b;
    case '**': case '^':
      if (typeof a !== 'number' || typeof b !== 'number') throw mismatch(op, a, b);
      return Math.pow(a, b);
    case '..': {
      if (typeof a !== 'number' || typeof b !== 'number' || !Number.isInteger(a) || !Number.isInteger(b)) throw mismatch(op, a, b);
      const out: number[] = [];
      for (let i = a; i <= b && out.length <= 100_000; i++) out.push(i);
      return out;
    }
    case 'in':
      if (Array.isArray(b)) return b.some((x) => x !== null && a !== null && typeof x === typeof a ? deepEqual(x, a) : x === a);
      if (b !== null && typeof b === 'object') return String(a) in b;
      throw mismatch(op, a, b);
    case 'contains': case 'startsWith': case 'endsWith': case 'matches': {
      if (typeof a !== 'string' || typeof b !== 'string') throw mismatch(op, a, b);
      if (op === 'contains') return a.includes(b);
      if (op === 'startsWith') return a.startsWith(b);
      if (op === 'endsWith') return a.endsWith(b);
      try {
        return new RegExp(b).test(a);
      } catch (error) {
        throw new ExprError(`invalid regular expression ${JSON.stringify(b)}: ${(error as Error).message}`);
      }
    }
  }
  throw new ExprError(`unknown operator ${op}`);
}

function call(node: Extract<Node, { type: 'call' }>, scope: Scope): Value {
  const { name, args } = node;
  const predicate = PREDICATE_BUILTINS.has(name) && args[1]?.type === 'closure' ? (args[1] as { body: Node }).body : undefined;
  if (predicate) {
    const items = arr(evaluate(args[0]!, scope), name);
    const test = (item: Value): Value => {
      scope.pointers.push(item);
      try {
        return evaluate(predicate, scope);
      } finally {
        scope.pointers.pop();
      }
    };
    const truth = (item: Value) => {
      const v = test(item);
      if (typeof v !== 'boolean') throw new ExprError(`predicate should return boolean (got ${typeName(v)})`);
      return v;
    };
    switch (name) {
      case 'all': return items.every(truth);
      case 'any': return items.some(truth);
      case 'none': return !items.some(truth);
      case 'one': return items.filter(truth).length === 1;
      case 'filter': return items.filter(truth);
      case 'map': return items.map(test);
      case 'count': return items.filter(truth).length;
      case 'sum': return items.reduce<number>((s, x) => s + num(test(x), 'sum'), 0);
      case 'find': return items.find(truth) ?? null;
      case 'findIndex': return items.findIndex(truth);
      case 'findLast': return [...items].reverse().find(truth) ?? null;
      case 'findLastIndex': {
        for (let i = items.length - 1; i >= 0; i--) if (truth(items[i]!)) return i;
        return -1;
      }
    }
  }
  const values = args.map((a) => evaluate(a, scope));
  const fn = scope.functions[name] ?? BUILTINS[name];
  if (!fn) throw new ExprError(`unknown func ${name}`);
  return fn(values);
}

function arity(name: string, values: Value[], min: number, max = min): void {
  if (values.length < min) throw new ExprError(`not enough arguments to call ${name}`);
  if (values.length > max) throw new ExprError(`too many arguments to call ${name}`);
}

function numbers(name: string, values: Value[]): number[] {
  const list = values.length === 1 && Array.isArray(values[0]) ? values[0] : values;
  return list.map((v) => num(v, name));
}

/** expr-lang/expr's builtins an analysis condition may call (builtin/builtin.go); predicates are above. */
const BUILTINS: Record<string, (values: Value[]) => Value> = {
  len(values) {
    arity('len', values, 1);
    const v = values[0]!;
    if (Array.isArray(v) || typeof v === 'string') return v.length;
    if (v !== null && typeof v === 'object') return Object.keys(v).length;
    throw new ExprError(`invalid argument for len (type ${typeName(v)})`);
  },
  abs: (v) => (arity('abs', v, 1), Math.abs(num(v[0]!, 'abs'))),
  ceil: (v) => (arity('ceil', v, 1), Math.ceil(num(v[0]!, 'ceil'))),
  floor: (v) => (arity('floor', v, 1), Math.floor(num(v[0]!, 'floor'))),
  round: (v) => (arity('round', v, 1), goRound(num(v[0]!, 'round'))),
  int(v) {
    arity('int', v, 1);
    const x = v[0]!;
    if (typeof x === 'number') return Math.trunc(x);
    if (typeof x === 'string' && /^[+-]?\d+$/.test(x)) return parseInt(x, 10);
    throw new ExprError(`invalid operation: int(${typeName(x)})`);
  },
  float(v) {
    arity('float', v, 1);
    const x = v[0]!;
    if (typeof x === 'number') return x;
    if (typeof x === 'string') return parseGoFloat(x);
    throw new ExprError(`invalid operation: float(${typeName(x)})`);
  },
  max(v) {
    const list = numbers('max', v);
    if (list.length === 0) throw new ExprError('not enough arguments to call max');
    return list.reduce((a, b) => (b > a || Number.isNaN(b) ? b : a));
  },
  min(v) {
    const list = numbers('min', v);
    if (list.length === 0) throw new ExprError('not enough arguments to call min');
    return list.reduce((a, b) => (b < a || Number.isNaN(b) ? b : a));
  },
  sum: (v) => (arity('sum', v, 1), numbers('sum', v).reduce((a, b) => a + b, 0)),
  mean(v) {
    arity('mean', v, 1);
    const list = numbers('mean', v);
    return list.length === 0 ? 0 : list.reduce((a, b) => a + b, 0) / list.length;
  },
  median(v) {
    arity('median', v, 1);
    const list = numbers('median', v).sort((a, b) => a - b);
    if (list.length === 0) return 0;
    const mid = Math.floor(list.length / 2);
    return list.length % 2 ? list[mid]! : (list[mid - 1]! + list[mid]!) / 2;
  },
};

/** Go's math.Round: half away from zero. */
function goRound(x: number): number {
  return x < 0 ? -Math.round(-x) : Math.round(x);
}

/** Go's strconv.ParseFloat(s, 64), for the forms it accepts (no surrounding spaces). */
export function parseGoFloat(s: string): number {
  if (/^[+-]?(inf|infinity)$/i.test(s)) return s.startsWith('-') ? -Infinity : Infinity;
  if (/^nan$/i.test(s)) return NaN;
  if (/^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/.test(s)) return Number(s);
  if (/^[+-]?0[xX]/.test(s)) {
    const n = Number(s.replace(/^([+-]?)0[xX]/, '$10x'));
    if (!Number.isNaN(n)) return n;
  }
  throw new ExprError(`strconv.ParseFloat: parsing ${JSON.stringify(s)}: invalid syntax`);
}

const FUNCTIONS = new Set([...Object.keys(BUILTINS), ...PREDICATE_BUILTINS, 'asInt', 'asFloat', 'isNaN', 'isInf', 'isNil', 'default']);

/** A compiled condition: parse once, evaluate per measurement. */
export interface Condition {
  source: string;
  evaluate(env: Record<string, Value>, functions?: Record<string, (args: Value[]) => Value>): Value;
}

export function compile(source: string, names: Iterable<string> = ['result']): Condition {
  const ast = new Parser(source, new Set(names)).parse();
  return {
    source,
    evaluate: (env, functions = {}) => evaluate(ast, { env, functions, pointers: [] }),
  };
}

/**
 * Argo Rollouts' EvalCondition (utils/evaluate/evaluate.go): `condition` over `result`, with
 * asInt, asFloat, isNaN, isInf, and isNil/default, which look at the whole result whatever their
 * first argument (defaultFunc, isNilFunc). A condition that does not give a bool is an error.
 */
export function evalCondition(result: Value, condition: string | Condition): boolean {
  const compiled = typeof condition === 'string' ? compile(condition) : condition;
  const output = compiled.evaluate({ result }, {
    asInt: (v) => (arity('asInt', v, 1), asInt(v[0]!)),
    asFloat: (v) => (arity('asFloat', v, 1), asFloat(v[0]!)),
    isNaN: (v) => (arity('isNaN', v, 1), Number.isNaN(floatArg('isNaN', v[0]!))),
    isInf: (v) => (arity('isInf', v, 1), Math.abs(floatArg('isInf', v[0]!)) === Infinity),
    isNil: (v) => (arity('isNil', v, 1), result === null),
    default: (v) => (arity('default', v, 2), result === null ? v[1]! : result),
  });
  if (typeof output !== 'boolean') throw new ExprError(`expected bool, but got ${typeName(output)}`);
  return output;
}

/** isNaN and isInf are Go's math.IsNaN(float64): another type does not compile. */
function floatArg(name: string, v: Value): number {
  if (typeof v !== 'number') throw new ExprError(`cannot use ${typeName(v)} as argument (type float64) to call ${name}`);
  return v;
}

/** evaluate.go asInt: numbers truncate, strings must be decimal integers (strconv.ParseInt), anything else panics. */
function asInt(v: Value): number {
  if (typeof v === 'number') return Math.trunc(v);
  if (typeof v === 'string') {
    if (/^[+-]?\d+$/.test(v)) return parseInt(v, 10);
    throw new ExprError(`strconv.ParseInt: parsing ${JSON.stringify(v)}: invalid syntax`);
  }
  throw new ExprError(`asInt() not supported on ${typeName(v)} ${JSON.stringify(v)}`);
}

/** evaluate.go asFloat: numbers as they are, strings through strconv.ParseFloat, anything else panics. */
function asFloat(v: Value): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'string') return parseGoFloat(v);
  throw new ExprError(`asFloat() not supported on ${typeName(v)} ${JSON.stringify(v)}`);
}
