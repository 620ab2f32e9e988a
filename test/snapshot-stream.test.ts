/**
 * The streamed snapshot reader (observe/snapshot.ts, observe/snapshot-split.ts) against the whole
 * parse it stands in for: for every stream, the same objects in the same order, or the same error.
 */
import test from 'ava';
import fc from 'fast-check';
import jsYaml from 'js-yaml';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { InputError } from '../src/errors.ts';
import { parseSnapshot, readSnapshotBytes, readSnapshotFile, readSnapshots } from '../src/observe/snapshot.ts';
import type { Observed } from '../src/observe/types.ts';
import { tempDir } from './support/git.ts';

type Outcome = { objects: Array<{ object: unknown; source: string }> } | { error: string };

function outcome(read: () => Observed[]): Outcome {
  try {
    return { objects: read().map((o) => ({ object: o.object, source: o.source })) };
  } catch (error) {
    return { error: (error as Error).message };
  }
}

async function outcomeAsync(read: () => Promise<Observed[]>): Promise<Outcome> {
  try {
    return { objects: (await read()).map((o) => ({ object: o.object, source: o.source })) };
  } catch (error) {
    return { error: (error as Error).message };
  }
}

// ---- generated snapshots ------------------------------------------------------------------------

/** Strings that stress line-based splitting: document markers, entries, comments, quotes, colons. */
const tricky = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.constantFrom('---', '- apiVersion: v1', 'items:', '# not a comment', 'a: b', '"quoted"', "it's", '...', '{{ .ns }}', 'x\n---\ny', 'line\n- entry\n', '  indented\n---\n', 'tab\there', 'ünïcødé ✓', '2026-11-21T08:00:00Z', ''),
);
const key = fc.oneof(fc.constantFrom('name', 'image', 'note', 'items', 'kind', 'a b', 'x:y', '#k', '- k', '"q"'), fc.string({ minLength: 1, maxLength: 6 }));
const value: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  v: fc.oneof({ depthSize: 'small', withCrossShrink: true }, tricky, fc.integer(), fc.boolean(), fc.constant(null), fc.array(tie('v'), { maxLength: 3 }), fc.dictionary(key, tie('v'), { maxKeys: 3 })),
})).v;

const k8sObject = fc.record({
  apiVersion: fc.constantFrom('v1', 'apps/v1', 'flagger.app/v1beta1', 'kustomize.toolkit.fluxcd.io/v1'),
  kind: fc.constantFrom('Pod', 'Deployment', 'Canary', 'Kustomization', 'ConfigMap'),
  metadata: fc.record({ name: fc.stringMatching(/^[a-z][a-z0-9-]{0,20}$/), namespace: fc.option(fc.constantFrom('prod', 'team-1', 'flux-system'), { nil: undefined }), labels: fc.option(fc.dictionary(fc.stringMatching(/^[a-z]{1,5}$/), tricky, { maxKeys: 2 }), { nil: undefined }) }, { requiredKeys: ['name'] }),
  spec: fc.option(fc.dictionary(key, value, { maxKeys: 4 }), { nil: undefined }),
  status: fc.option(fc.record({ conditions: fc.array(fc.record({ type: fc.constantFrom('Ready', 'Available'), status: fc.constantFrom('True', 'False'), lastTransitionTime: fc.constantFrom('2026-11-21T08:00:00Z', '2026-11-21T09:40:30+02:00') }), { maxLength: 2 }) }), { nil: undefined }),
}, { requiredKeys: ['apiVersion', 'kind', 'metadata'] });

interface Style {
  flowLevel: number;
  quoting: "'" | '"';
  forceQuotes: boolean;
  indent: 0 | 2 | 4;
  comments: boolean;
  crlf: boolean;
  duplicateKey: boolean;
}

const style: fc.Arbitrary<Style> = fc.record({
  flowLevel: fc.constantFrom(-1, -1, 1, 2),
  quoting: fc.constantFrom("'" as const, '"' as const),
  forceQuotes: fc.boolean(),
  indent: fc.constantFrom(0 as const, 2 as const, 4 as const),
  comments: fc.boolean(),
  crlf: fc.boolean(),
  duplicateKey: fc.boolean(),
});

function dump(o: unknown, s: Style): string {
  return jsYaml.dump(o, { flowLevel: s.flowLevel, quotingType: s.quoting, forceQuotes: s.forceQuotes, lineWidth: -1, noRefs: true });
}

/** One List item as kubectl prints it (`- ` at `indent`), with comments and a repeated key where the style says. */
function item(o: unknown, s: Style): string {
  const body = dump(o, { ...s, flowLevel: s.flowLevel === 1 ? 2 : s.flowLevel });
  const pad = ' '.repeat(s.indent);
  const lines = body.replace(/\n$/, '').split('\n');
  let out = lines.map((l, i) => (i === 0 ? `${pad}- ${l}` : `${pad}  ${l}`)).join('\n') + '\n';
  if (s.duplicateKey) out += `${pad}  kind: Duplicate\n`;
  if (s.comments) out += `# between items\n${pad}    # indented comment\n\n`;
  return out;
}

/** A List (or, with another `kind`, an object that has items but is no List), its kind before or after the items. */
function list(objects: unknown[], s: Style, kind: string, tailFirst: boolean): string {
  const head = tailFirst ? `kind: ${kind}\napiVersion: v1\n` : 'apiVersion: v1\n';
  const items = objects.length ? `items:${s.comments ? ' # the objects' : ''}\n${objects.map((o) => item(o, s)).join('')}` : 'items: []\n';
  const tail = tailFirst ? '' : `kind: ${kind}\nmetadata:\n  resourceVersion: ""\n`;
  return head + items + tail;
}

const stream = fc.record({
  docs: fc.array(fc.oneof(
    fc.record({ list: fc.array(k8sObject, { maxLength: 5 }), kind: fc.constantFrom('List', 'List', 'List', 'PodList', 'NotAList', 'Lists'), tailFirst: fc.boolean() }),
    fc.record({ single: k8sObject }),
    fc.constant({ empty: true }),
  ), { minLength: 1, maxLength: 4 }),
  style,
  leadingMarker: fc.boolean(),
}).map(({ docs, style: s, leadingMarker }) => {
  const texts = docs.map((d) => ('list' in d ? list(d.list, s, d.kind, d.tailFirst) : 'single' in d ? dump(d.single, s) : '# nothing here\n'));
  let text = (leadingMarker ? '---\n' : '') + texts.join(s.comments ? '--- # next\n' : '---\n');
  if (s.crlf) text = text.replace(/\n/g, '\r\n');
  return text;
});

/** A line that can break the split's assumptions, inserted anywhere. */
const hazard = fc.constantFrom('---', '...', '%YAML 1.2', '- apiVersion: v1', '  - apiVersion: v1', 'items:', 'kind: NotAList', '"', "'", '{', '[', ' - x', '# c', '~', '*a', '&a x', 'a: "open', '  b: |', '   ---', '\r', '{{ .ns }}', '\t- tab', 'items: # again', 'x: >-');

const withHazard = fc.tuple(stream, fc.array(fc.tuple(fc.nat(), hazard), { minLength: 1, maxLength: 3 })).map(([text, hazards]) => {
  const lines = text.split('\n');
  for (const [at, line] of hazards) lines.splice(at % (lines.length + 1), 0, line);
  return lines.join('\n');
});

const whole = (text: string) => outcome(() => parseSnapshot(text, 'f.yaml'));
const streamed = (text: string) => outcome(() => readSnapshotBytes(Buffer.from(text), 'f.yaml'));

test('the streamed reader yields exactly what the whole parse yields, for generated Lists and multi-document streams', (t) => {
  let split = 0;
  fc.assert(fc.property(stream, (text) => {
    const expected = whole(text);
    const got = streamed(text);
    t.deepEqual(got, expected, text);
    if ('objects' in got && got.objects.length && readSnapshotBytes(Buffer.from(text), 'f.yaml').every((o) => o.id)) split++;
  }), { numRuns: 300 });
  // most generated streams are read piece by piece, not by the whole parse
  t.true(split > 100, `${split} of 300 streams were split`);
});

test('the streamed reader yields what the whole parse yields, or its error, where lines break the split\'s assumptions', (t) => {
  fc.assert(fc.property(withHazard, (text) => {
    t.deepEqual(streamed(text), whole(text), text);
  }), { numRuns: 400 });
});

// Found by the property above (2026-11-26): the lines after a List's entries were parsed apart from
// those before, so a line that is no key of the List (`{{ .ns }}`) read as a flow mapping of its
// own there, and the file was judged while the whole parse refuses it.
test('the lines before and after a List\'s items are read together, as in the whole document', (t) => {
  const entry = '- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a, namespace: prod}\n';
  for (const tail of ['{{ .ns }}\n', 'kind: List\n{{ .ns }}\n', 'kind: List\nkind: ConfigMapList\n', 'kind: List\nitems: []\n', 'kind: List\n[a]\n', 'metadata: {}\n']) {
    const text = `apiVersion: v1\nkind: List\nitems:\n${entry}${entry.replace('name: a', 'name: b')}${tail}`;
    t.deepEqual(streamed(text), whole(text), text);
  }
  t.regex((streamed(`apiVersion: v1\nkind: List\nitems:\n${entry}{{ .ns }}\n`) as { error: string }).error, /^f\.yaml:\d+: cannot parse as YAML or JSON/);
});

test('a file read in chunks of any size, with pieces too large to gather left to the whole parse, yields what the whole parse yields', async (t) => {
  const dir = tempDir();
  let n = 0;
  await fc.assert(fc.asyncProperty(fc.oneof(stream, withHazard), fc.integer({ min: 1, max: 64 }), fc.option(fc.integer({ min: 1, max: 400 }), { nil: undefined }), async (text, chunkBytes, maxPieceBytes) => {
    const file = path.join(dir, `s${n++}.yaml`);
    writeFileSync(file, text);
    t.deepEqual(await outcomeAsync(() => readSnapshotFile(file, { chunkBytes, ...(maxPieceBytes ? { maxPieceBytes } : {}) })), outcome(() => parseSnapshot(text, file)), text);
  }), { numRuns: 150 });
});

// ---- a large file ------------------------------------------------------------------------------

function pod(i: number): string {
  return `- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: pod-${i}\n    namespace: team-${i % 7}\n  status:\n    phase: Running\n    conditions:\n    - {type: Ready, status: "True", lastTransitionTime: "2026-11-21T08:00:00Z"}\n`;
}

test('an error in a large List names the line in the whole file', async (t) => {
  const dir = tempDir();
  const items = Array.from({ length: 20_000 }, (_, i) => pod(i));
  const bad = 15_000;
  items[bad] = items[bad]!.replace('phase: Running', 'phase: [Running');
  const text = `apiVersion: v1\nitems:\n${items.join('')}kind: List\n`;
  const file = path.join(dir, 'cluster.yaml');
  writeFileSync(file, text);
  // the line of `phase: [Running` in the whole file, 1-based; js-yaml names where it stopped: the next line
  const lines = text.split('\n');
  const phase = lines.findIndex((l) => l.includes('phase: [Running')) + 1;
  const e = await t.throwsAsync(readSnapshots([file]), { instanceOf: InputError });
  const line = Number(new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:(\\d+): cannot parse as YAML or JSON`).exec(e!.message)?.[1]);
  t.true(line >= phase && line <= phase + 2, `${e!.message} (the bad line is ${phase})`);
  t.is(e!.message, (outcome(() => parseSnapshot(text, file)) as { error: string }).error);
});

test('a status time that does not parse, deep in a large List, is refused as the whole parse refuses it', async (t) => {
  const dir = tempDir();
  const items = Array.from({ length: 5_000 }, (_, i) => pod(i));
  items[4_321] = items[4_321]!.replace('"2026-11-21T08:00:00Z"', '"yesterday"');
  const text = `apiVersion: v1\nitems:\n${items.join('')}kind: List\n`;
  const file = path.join(dir, 'cluster.yaml');
  writeFileSync(file, text);
  const e = await t.throwsAsync(readSnapshots([file]), { instanceOf: InputError });
  t.regex(e!.message, /pod-4321.*lastTransitionTime "yesterday" is not a valid time/);
});

test('a large List is kept as identities: objects are parsed when read, and equal the whole parse\'s', async (t) => {
  const dir = tempDir();
  const text = `apiVersion: v1\nitems:\n${Array.from({ length: 3_000 }, (_, i) => pod(i)).join('')}kind: List\nmetadata:\n  resourceVersion: ""\n`;
  const file = path.join(dir, 'cluster.yaml');
  writeFileSync(file, text);
  const objects = await readSnapshots([file]);
  t.is(objects.length, 3_000);
  t.deepEqual(objects[1_234]!.id, { apiVersion: 'v1', kind: 'Pod', namespace: 'team-2', name: 'pod-1234' });
  t.deepEqual(objects[1_234]!.object, parseSnapshot(text, file)[1_234]!.object);
  t.is(objects[1_234]!.object, objects[1_234]!.object, 'parsed once');
});

test('a snapshot file changed after it was read is refused when an object is read, not judged under another name', async (t) => {
  const dir = tempDir();
  const file = path.join(dir, 'cluster.yaml');
  writeFileSync(file, `apiVersion: v1\nitems:\n${pod(1)}${pod(2)}kind: List\n`);
  const objects = await readSnapshots([file]);
  writeFileSync(file, `apiVersion: v1\nitems:\n${pod(3)}${pod(4)}kind: List\n`);
  t.throws(() => objects[1]!.object, { instanceOf: InputError, message: /Pod team-2\/pod-2 is no longer there: the file changed while lastgood read it/ });
});

test('stdin is streamed too: objects read when asked, from the bytes read once', async (t) => {
  const { Readable } = await import('node:stream');
  const text = `apiVersion: v1\nitems:\n${pod(1)}${pod(2)}kind: List\n`;
  const objects = await readSnapshots(['-'], { stdin: Readable.from([text.slice(0, 50), text.slice(50)]) });
  t.deepEqual(objects.map((o) => o.id?.name), ['pod-1', 'pod-2']);
  t.deepEqual(objects.map((o) => o.object), parseSnapshot(text, '-').map((o) => o.object));
});
