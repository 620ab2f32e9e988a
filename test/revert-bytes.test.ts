import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import type { ExecutionContext } from 'ava';
import fc from 'fast-check';
import { parseAllDocuments } from 'yaml';
import { mergeFile } from '../src/revert/merge-file.ts';
import type { FileMerge } from '../src/revert/merge-file.ts';

/**
 * mergeFile on bytes, with native `git merge-file -p ours base theirs` as the oracle: line ends,
 * final newlines and byte-order marks come out as git makes them; the structural YAML merge keeps
 * every line of ours it does not change byte for byte; nothing makes it throw.
 */

const dir = mkdtempSync(path.join(os.tmpdir(), 'lastgood-bytes-'));
test.after.always(() => rmSync(dir, { recursive: true, force: true }));
const ENV = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', HOME: dir };

const bytes = (s: string | Uint8Array) => (typeof s === 'string' ? Buffer.from(s, 'utf8') : Buffer.from(s));

function gitMerge(base: Uint8Array, ours: Uint8Array, theirs: Uint8Array): { clean: true; bytes: Buffer } | { clean: false } {
  for (const [name, content] of [['base', base], ['ours', ours], ['theirs', theirs]] as const) writeFileSync(path.join(dir, name), content);
  try {
    return { clean: true, bytes: execFileSync('git', ['merge-file', '-p', 'ours', 'base', 'theirs'], { cwd: dir, env: ENV, stdio: ['ignore', 'pipe', 'ignore'] }) };
  } catch (error) {
    const e = error as { status?: number };
    if (typeof e.status === 'number' && e.status > 0 && e.status < 127) return { clean: false };
    throw error;
  }
}

function merge(file: string, base: string | Uint8Array, ours: string | Uint8Array, theirs: string | Uint8Array): FileMerge {
  return mergeFile(file, bytes(base), bytes(ours), bytes(theirs));
}

/** mergeFile agrees with git: the same bytes where git merges, a conflict where git conflicts. */
function agreesWithGit(t: ExecutionContext, file: string, base: string, ours: string, theirs: string, expectClean: boolean): void {
  const native = gitMerge(bytes(base), bytes(ours), bytes(theirs));
  t.is(native.clean, expectClean, 'the case is what it says: git merges it cleanly or conflicts');
  const result = merge(file, base, ours, theirs);
  if (native.clean) {
    t.true(result.clean, JSON.stringify(result));
    if (result.clean) {
      t.deepEqual(bytes(result.content), native.bytes);
      t.is(result.how, 'line');
    }
  } else {
    t.false(result.clean, 'git conflicts, so the line merge must too');
  }
}

test('CRLF files merge like git merge-file, CRLF kept on every line, and conflict where git does', (t) => {
  const crlf = (...lines: string[]) => lines.map((l) => `${l}\r\n`).join('');
  agreesWithGit(t, 'a.txt', crlf('a', 'b', 'c', 'd', 'e'), crlf('A', 'b', 'c', 'd', 'e'), crlf('a', 'b', 'c', 'd', 'E'), true);
  const r = merge('a.txt', crlf('a', 'b', 'c', 'd', 'e'), crlf('A', 'b', 'c', 'd', 'e'), crlf('a', 'b', 'c', 'd', 'E'));
  t.deepEqual(r.clean && bytes(r.content), bytes(crlf('A', 'b', 'c', 'd', 'E')));
  agreesWithGit(t, 'a.txt', crlf('a', 'b', 'c'), crlf('a', 'B1', 'c'), crlf('a', 'B2', 'c'), false);
  // a line whose only change is its line end is a changed line, for git as for us
  agreesWithGit(t, 'a.txt', crlf('a', 'b', 'c', 'd'), 'a\nb\r\nc\r\nd\r\n', crlf('a', 'b', 'c', 'D'), true);
  agreesWithGit(t, 'a.txt', crlf('a', 'b', 'c'), 'a\r\nb\nc\r\n', crlf('a', 'B', 'c'), false);
});

test('a file without a final newline: a change elsewhere keeps it without one, a change at the end follows git', (t) => {
  // change elsewhere: no newline gained
  agreesWithGit(t, 'a.txt', 'a\nb\nc\nd', 'A\nb\nc\nd', 'a\nb\nc\nD', true);
  const r = merge('a.txt', 'a\nb\nc\nd\ne', 'A\nb\nc\nd\ne', 'a\nb\nC\nd\ne');
  t.deepEqual(r.clean && bytes(r.content), bytes('A\nb\nC\nd\ne'));
  // theirs adds the final newline, ours changed the top: git takes theirs' end
  agreesWithGit(t, 'a.txt', 'a\nb\nc\nd', 'A\nb\nc\nd', 'a\nb\nc\nd\n', true);
  // ours appends lines after the unterminated last line, theirs edits the top
  agreesWithGit(t, 'a.txt', 'a\nb\nc', 'a\nb\nc\nd\ne', 'z\na\nb\nc', true);
  // ours drops the final newline, theirs changes the last line: both changed it
  agreesWithGit(t, 'a.txt', 'a\nb\nc\n', 'a\nb\nc', 'a\nb\nC\n', false);
  // CRLF, the unterminated last line: theirs terminates it and appends, ours edits far away
  agreesWithGit(t, 'a.txt', 'a\r\nb\r\nc', 'A\r\nb\r\nc', 'a\r\nb\r\nc\r\nd', true);
  agreesWithGit(t, 'a.txt', 'a\r\nb\r\nc', 'a\r\nB\r\nc', 'a\r\nb\r\nc\r\nd', false);
});

test('a UTF-8 byte-order mark stays where git keeps it (it is part of the first line)', (t) => {
  const bom = '\uFEFF';
  agreesWithGit(t, 'a.txt', `${bom}a\nb\nc\nd\n`, `${bom}a\nB\nc\nd\n`, `${bom}a\nb\nc\nD\n`, true);
  const r = merge('a.txt', `${bom}a\nb\nc\nd\n`, `${bom}a\nB\nc\nd\n`, `${bom}a\nb\nc\nD\n`);
  t.deepEqual(r.clean && bytes(r.content).subarray(0, 3), Buffer.from([0xef, 0xbb, 0xbf]));
  // the bad commit added the BOM: reverting takes it away, ours' later edit stays
  agreesWithGit(t, 'a.txt', `${bom}a\nb\nc\n`, `${bom}a\nb\nC\n`, 'a\nb\nc\n', true);
  // a BOM change on the first line that ours also changed conflicts
  agreesWithGit(t, 'a.txt', `${bom}a\nb\n`, `${bom}A\nb\n`, 'a\nb\n', false);
});

test('mixed line ends and a YAML path: the line merge is byte for byte git\'s', (t) => {
  agreesWithGit(t, 'm.yaml', 'a: 1\r\nb: 2\nc: 3\r\nd: 4\ne: 5', 'a: 9\r\nb: 2\nc: 3\r\nd: 4\ne: 5', 'a: 1\r\nb: 2\nc: 3\r\nd: 4\ne: 6', true);
  agreesWithGit(t, 'm.yaml', 'a: 1\r\nb: 2\nc: 3\r\n', 'a: 1\r\nb: 2\nc: 3\r\nd: 4\r\n', 'a: 1\r\nb: 2\r\nc: 3\r\n', true);
  // only a line end changed on the line next to ours' addition: git conflicts, so does the line merge
  agreesWithGit(t, 'm.txt', 'a: 1\r\nb: 2\nc: 3\r\n', 'a: 1\r\nb: 2\nc: 3\r\nd: 4\r\n', 'a: 1\r\nb: 2\nc: 3\n', false);
});

test('binary and non-UTF-8 content is a conflict that says why, not a guess', (t) => {
  t.deepEqual(merge('a.bin', new Uint8Array([1, 0, 2]), new Uint8Array([1, 0, 3]), new Uint8Array([1, 0, 4])), { clean: false, conflict: 'binary file changed on both sides' });
  const invalid = new Uint8Array([0x61, 0x3a, 0x20, 0xff, 0x0a]);
  const r = merge('a.yaml', 'a: 1\n', invalid, 'a: 2\n');
  t.false(r.clean);
  if (!r.clean) t.is(r.conflict, 'not valid UTF-8 (ours), changed on both sides: cannot merge it as text');
});

test('a text file changed on the same line conflicts naming the line; a YAML file names the key', (t) => {
  t.deepEqual(merge('v.txt', 'a\nb\nc\n', 'a\nB1\nc\n', 'a\nB2\nc\n'), { clean: false, conflict: 'both sides changed line 2' });
  t.deepEqual(merge('v.yaml', 'a: 1\nb: 2\n', 'a: 1\nb: 3\n', 'a: 1\nb: 4\n'), { clean: false, conflict: 'both sides changed document 1: b' });
});

// ---- properties ----

const yamlish = fc
  .array(
    fc.tuple(
      fc.constantFrom('a: 1', 'b: &x 0750', 'c: *x', '<<: *x', '- 1', '- &y {k: v}', '  - *y', '\t', '  ', '# c', '---', '...', 'k: |', '  text', '"q', "'", '{a: [b', ']}', 'y: yes', '? k', ': v', '%YAML 1.1', '!!binary aGk=', '*zz', 'e: !!int "12"', '\uFEFF', 'n: ~', 'o: 0o17'),
      fc.constantFrom('\n', '\r\n', '', ' ', '\r'),
    ),
    { maxLength: 10 },
  )
  .map((parts) => parts.map(([p, e]) => p + e).join(''));

test('mergeFile never throws: random bytes, and YAML-ish text with anchors, aliases, tabs, CRLF and BOMs', (t) => {
  const anyBytes = fc.oneof(fc.uint8Array({ maxLength: 40 }), yamlish.map((s) => bytes(s)));
  const results = { clean: 0, conflict: 0 };
  fc.assert(
    fc.property(fc.constantFrom('f.yaml', 'f.yml', 'f.txt'), anyBytes, anyBytes, anyBytes, (file, b, o, th) => {
      const r = mergeFile(file, b, o, th);
      if (r.clean) {
        results.clean++;
        return r.content instanceof Uint8Array && (r.how === 'line' || r.how === 'yaml');
      }
      results.conflict++;
      return typeof r.conflict === 'string' && r.conflict.length > 0;
    }),
    { numRuns: 400 },
  );
  // lines of one base, edited on both sides: reaches the structural merge far more often
  fc.assert(
    fc.property(yamlish, fc.nat(), fc.nat(), yamlish, yamlish, (b, i, j, x, y) => {
      const lines = b.split(/(?<=\n)/);
      const edit = (at: number, with_: string) => lines.map((l, k) => (k === at % Math.max(1, lines.length) ? with_ : l)).join('');
      const r = mergeFile('f.yaml', bytes(b), bytes(edit(i, x)), bytes(edit(j, y)));
      return r.clean ? r.content instanceof Uint8Array : typeof r.conflict === 'string';
    }),
    { numRuns: 400 },
  );
  t.log(results);
  t.true(results.clean > 0 && results.conflict > 0);
});

/** Small manifests: a header, keys with YAML 1.1 scalars and comments, an anchor and its alias. */
const VALUES = ['0750', '0o750', 'yes', 'no', '~', '1e3', '"quoted"', "'single'", '0x1F', '.5', '2001-12-14', 'plain', '12', 'on'];
const COMMENTS = ['', ' # c', '  #  spaced', ' # other'];

interface Entry {
  key: string;
  value: string;
  comment: string;
}

interface Manifest {
  entries: Entry[];
  eol: '\n' | '\r\n';
  final: boolean;
  bom: boolean;
}

function render(m: Manifest): string {
  const lines = ['# managed by hand', 'kind: Config', 'shared: &s 0750', ...m.entries.map((e) => `${e.key}: ${e.value}${e.comment}`), 'alias: *s'];
  const text = lines.join(m.eol) + (m.final ? m.eol : '');
  return (m.bom ? '\uFEFF' : '') + text;
}

type Edit = { op: 'set' | 'comment' | 'remove' | 'add'; at: number; value: number; comment: number };
const editArb: fc.Arbitrary<Edit> = fc.record({
  op: fc.constantFrom('set', 'set', 'comment', 'remove', 'add'),
  at: fc.nat({ max: 8 }),
  value: fc.nat({ max: VALUES.length - 1 }),
  comment: fc.nat({ max: COMMENTS.length - 1 }),
});

function applyEdits(entries: Entry[], edits: Edit[], side: string): Entry[] {
  const out = entries.map((e) => ({ ...e }));
  edits.forEach((e, n) => {
    const at = out.length === 0 ? 0 : e.at % out.length;
    const target = out[at];
    if (e.op === 'add' || !target) out.splice(at + 1, 0, { key: `${side}${n}`, value: VALUES[e.value]!, comment: COMMENTS[e.comment]! });
    else if (e.op === 'set') target.value = VALUES[e.value]!;
    else if (e.op === 'comment') target.comment = COMMENTS[e.comment]!;
    else out.splice(at, 1);
  });
  return out;
}

const scenario = fc
  .record({
    keys: fc.array(fc.record({ value: fc.nat({ max: VALUES.length - 1 }), comment: fc.nat({ max: COMMENTS.length - 1 }) }), { minLength: 2, maxLength: 8 }),
    eol: fc.constantFrom('\n' as const, '\r\n' as const),
    finals: fc.tuple(fc.boolean(), fc.boolean(), fc.boolean()),
    bom: fc.boolean(),
    ours: fc.array(editArb, { minLength: 1, maxLength: 2 }),
    theirs: fc.array(editArb, { minLength: 1, maxLength: 2 }),
  })
  .map(({ keys, eol, finals, bom, ours, theirs }) => {
    const entries = keys.map((k, i) => ({ key: `k${i}`, value: VALUES[k.value]!, comment: COMMENTS[k.comment]! }));
    const make = (es: Entry[], final: boolean): Manifest => ({ entries: es, eol, final, bom });
    return { base: make(entries, finals[0]), ours: make(applyEdits(entries, ours, 'o'), finals[1]), theirs: make(applyEdits(entries, theirs, 't'), finals[2]) };
  });

test('random YAML manifests edited on both sides: where git merge-file is clean, mergeFile gives the same bytes', (t) => {
  const seen = { gitClean: 0, gitConflict: 0 };
  fc.assert(
    fc.property(scenario, ({ base, ours, theirs }) => {
      const [b, o, th] = [base, ours, theirs].map((m) => bytes(render(m)));
      const native = gitMerge(b!, o!, th!);
      const r = mergeFile('m.yaml', b!, o!, th!);
      if (!native.clean) {
        seen.gitConflict++;
        return !r.clean || r.how === 'yaml';
      }
      seen.gitClean++;
      return r.clean && r.how === 'line' && Buffer.compare(bytes(r.content), native.bytes) === 0;
    }),
    { numRuns: 40 },
  );
  t.log(seen);
  t.true(seen.gitClean > 0);
});

/** What a key-by-key revert makes of the entries: per key and per comment, ours where ours changed it, else theirs. */
function keywise(base: Entry[], ours: Entry[], theirs: Entry[]): Entry[] | undefined {
  const byKey = (es: Entry[]) => new Map(es.map((e) => [e.key, e]));
  const [b, o, th] = [byKey(base), byKey(ours), byKey(theirs)];
  const out: Entry[] = [];
  for (const e of ours) {
    const be = b.get(e.key);
    const te = th.get(e.key);
    if (!be) out.push(e);
    else if (!te) {
      if (e.value !== be.value) return undefined; // changed by ours, removed by theirs
    } else {
      if (e.value !== be.value && te.value !== be.value && e.value !== te.value) return undefined;
      out.push({ key: e.key, value: e.value !== be.value ? e.value : te.value, comment: e.comment !== be.comment ? e.comment : te.comment });
    }
  }
  for (const te of theirs) {
    if (b.has(te.key) || o.has(te.key)) continue;
    out.push(te);
  }
  // a key one side removed and the other changed
  for (const be of base) {
    const [oe, te] = [o.get(be.key), th.get(be.key)];
    if ((!te && oe && oe.value !== be.value) || (!oe && te && te.value !== be.value)) return undefined;
  }
  return out;
}

const read = (text: string, version: '1.1' | '1.2') => parseAllDocuments(text.replace(/^\uFEFF/, ''), { version, logLevel: 'error' }) as unknown as Array<{ toJS(): unknown }>;
const splitKeep = (s: string) => s.split(/(?<=\n)/).filter((l) => l !== '');

test('a structural YAML merge keeps every line of ours outside the changed keys byte for byte, and reads as the key-by-key revert', (t) => {
  const seen = { yaml: 0, line: 0, conflict: 0 };
  fc.assert(
    fc.property(scenario, ({ base, ours, theirs }) => {
      const [b, o, th] = [base, ours, theirs].map(render) as [string, string, string];
      const r = mergeFile('m.yaml', bytes(b), bytes(o), bytes(th));
      if (!r.clean) {
        seen.conflict++;
        return true;
      }
      if (r.how === 'line') {
        seen.line++;
        return true;
      }
      seen.yaml++;
      const text = bytes(r.content).toString('utf8');
      // the keys theirs changed relative to base (value or comment), or added, or removed
      const baseLines = new Map(base.entries.map((e) => [e.key, `${e.key}: ${e.value}${e.comment}`]));
      const theirsLines = new Map(theirs.entries.map((e) => [e.key, `${e.key}: ${e.value}${e.comment}`]));
      // the last line may gain or lose its line end, as in git: compared without it
      const bare = (lines: string[]) => lines.map((l, i) => (i === lines.length - 1 ? l.replace(/\r?\n$/, '') : l));
      const untouched = bare(splitKeep(o.replace(/^\uFEFF/, ''))).filter((line) => {
        const key = /^(\w+):/.exec(line)?.[1];
        return !key || !baseLines.has(key) || baseLines.get(key) === theirsLines.get(key);
      });
      const lines = splitKeep(text.replace(/^\uFEFF/, ''));
      let j = 0;
      for (const [n, line] of untouched.entries()) {
        const last = n === untouched.length - 1;
        while (j < lines.length && lines[j] !== line && !(last && lines[j]!.replace(/\r?\n$/, '') === line)) j++;
        if (j === lines.length) return t.fail(`ours' line ${JSON.stringify(line)} changed:\n${JSON.stringify({ b, o, th, text })}`);
        j++;
      }
      t.is(text.startsWith('\uFEFF'), o.startsWith('\uFEFF'));
      // the data, in both YAML versions, is what the key-by-key revert reads as
      const expected = keywise(base.entries, ours.entries, theirs.entries);
      if (!expected) return t.fail(`the merge is clean where keys conflict: ${JSON.stringify({ b, o, th, text })}`);
      const want = render({ ...ours, entries: expected });
      for (const version of ['1.1', '1.2'] as const) t.deepEqual(read(text, version).map((d) => d.toJS()), read(want, version).map((d) => d.toJS()), version);
      return true;
    }),
    { numRuns: 250 },
  );
  t.log(seen);
  t.true(seen.yaml > 0);
});
