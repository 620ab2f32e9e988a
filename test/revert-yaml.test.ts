import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import fc from 'fast-check';
import { parseAllDocuments } from 'yaml';
import { mergeText } from '../src/revert/merge-lines.ts';
import { mergeYaml } from '../src/revert/yaml-merge.ts';

/** The structural YAML merge and the diff3 line merge on their own (pure functions). */

const svc = (port: number) => `---
apiVersion: v1
kind: Service
metadata:
  name: podinfo
  namespace: prod
spec:
  ports:
    - port: ${port}
`;
const deploy = (o: { image: string; replicas: number; env?: string; comment?: string }) => `---
# the deployment
apiVersion: apps/v1
kind: Deployment
metadata:
  name: podinfo
  namespace: prod
spec:
  replicas: ${o.replicas}${o.comment ? `  # ${o.comment}` : ''}
  template:
    spec:
      containers:
      - name: sidecar
        image: envoy:1.30
      - name: podinfo
        image: ${o.image}
        env:
        - {name: LOG, value: ${o.env ?? 'info'}}
`;

test('documents are matched by identity, not position: a later reorder and an edit in another document survive', (t) => {
  const base = deploy({ image: 'podinfo:2', replicas: 2 }) + svc(80);
  const theirs = deploy({ image: 'podinfo:1', replicas: 2 }) + svc(80);
  // ours moved the Service first and changed its port and the replicas, with a comment
  const ours = svc(8080) + deploy({ image: 'podinfo:2', replicas: 3, comment: 'black friday' });
  const result = mergeYaml(base, ours, theirs);
  t.true(result.clean);
  if (!result.clean) return;
  t.is(result.text, svc(8080) + deploy({ image: 'podinfo:1', replicas: 3, comment: 'black friday' }));
});

test('list items keyed by name merge item by item; flow maps and flat lists keep their layout', (t) => {
  const base = deploy({ image: 'podinfo:2', replicas: 2 });
  const theirs = deploy({ image: 'podinfo:1', replicas: 2 });
  const ours = deploy({ image: 'podinfo:2', replicas: 2, env: 'debug' }).replace('      - name: sidecar\n        image: envoy:1.30\n', '');
  const result = mergeYaml(base, ours, theirs);
  t.true(result.clean);
  if (result.clean) t.is(result.text, deploy({ image: 'podinfo:1', replicas: 2, env: 'debug' }).replace('      - name: sidecar\n        image: envoy:1.30\n', ''));
});

test('the same key changed differently on both sides conflicts, and the conflict names the document and key', (t) => {
  const base = deploy({ image: 'podinfo:2', replicas: 2 });
  const theirs = deploy({ image: 'podinfo:1', replicas: 2 });
  const ours = deploy({ image: 'podinfo:3', replicas: 2 });
  t.deepEqual(mergeYaml(base, ours, theirs), { clean: false, conflicts: ['Deployment prod/podinfo: spec.template.spec.containers.podinfo.image'] });
});

test('the same change on both sides is not a conflict', (t) => {
  const base = 'a: 1\nb: 2\n';
  t.deepEqual(mergeYaml(base, 'a: 3\nb: 2\n', 'a: 3\nb: 2\n'), { clean: true, text: 'a: 3\nb: 2\n' });
});

test('documents added and removed by theirs are added and removed; a removed document changed by ours conflicts', (t) => {
  const base = deploy({ image: 'podinfo:2', replicas: 2 });
  const theirs = deploy({ image: 'podinfo:2', replicas: 2 }) + svc(80);
  const ours = deploy({ image: 'podinfo:2', replicas: 5 });
  const added = mergeYaml(base, ours, theirs);
  t.true(added.clean);
  if (added.clean) t.deepEqual(parseAllDocuments(added.text).map((d) => (d as { toJS(): { kind: string } }).toJS().kind), ['Deployment', 'Service']);

  const removed = mergeYaml(base + svc(80), ours + svc(80), base);
  t.deepEqual(removed, { clean: true, text: ours });
  t.false(mergeYaml(base + svc(80), ours + svc(81), base).clean);
});

test('keys added and removed by theirs; removing a key ours changed conflicts', (t) => {
  const r = mergeYaml('a: 1\nb: 2\nc: 3\n', 'a: 1 # one\nb: 2\nc: 4\n', 'a: 1\nnew: x\nc: 3\n');
  t.deepEqual(r, { clean: true, text: 'a: 1 # one\nnew: x\nc: 4\n' });
  t.false(mergeYaml('a: 1\nb: 2\n', 'a: 1\nb: 3\n', 'a: 1\n').clean);
});

test('invalid YAML is a conflict, not a crash', (t) => {
  t.deepEqual(mergeYaml('a: 1\n', 'a: [\n', 'a: 2\n'), { clean: false, conflicts: ['not valid YAML (ours): cannot merge structurally'] });
});

test('diff3: separate changes merge, overlapping or adjacent ones conflict, identical ones do not', (t) => {
  t.deepEqual(mergeText('a\nb\nc\nd\ne\n', 'A\nb\nc\nd\ne\n', 'a\nb\nc\nd\nE\n'), { clean: true, text: 'A\nb\nc\nd\nE\n' });
  t.false(mergeText('a\nb\nc\n', 'A\nb\nc\n', 'a\nB\nc\n').clean);
  t.deepEqual(mergeText('a\nb\n', 'a\nX\n', 'a\nX\n'), { clean: true, text: 'a\nX\n' });
  t.deepEqual(mergeText('a\nb', 'a\nb\nc', 'z\na\nb'), { clean: true, text: 'z\na\nb\nc' });
  const c = mergeText('a\nb\nc\n', 'a\nB1\nc\n', 'a\nB2\nc\n');
  t.deepEqual(c, { clean: false, conflicts: [{ baseStart: 1, baseEnd: 2, base: ['b\n'], ours: ['B1\n'], theirs: ['B2\n'] }] });
});

test('YAML comments merge too: theirs\' comment change lands next to ours\' later value; a comment both changed keeps ours\'', (t) => {
  const file = (value: string, comment: string, above = '') => `# generated\nkind: Config\n${above}k0: ${value} # ${comment}\nk1: init1 # note 1\n`;
  // the bad commit changed only the comment, a later commit the value on the same line: git conflicts
  t.deepEqual(mergeYaml(file('v1', 'c2'), file('v4', 'c2'), file('v1', 'note 0')), { clean: true, text: file('v4', 'note 0') });
  t.deepEqual(mergeYaml(file('v1', 'c2'), file('v1', 'c5'), file('v1', 'note 0')), { clean: true, text: file('v1', 'c5') });
  // ours only added a comment above the key theirs changes: the comment stays (the map is merged key by key, not replaced)
  t.deepEqual(mergeYaml(file('v1', 'c2'), file('v1', 'c2', '# why\n'), file('v2', 'note 0')), { clean: true, text: file('v2', 'note 0', '# why\n') });
});

test('diff3 is never cleaner than git where lines repeat: every equally short diff is considered', (t) => {
  const lines = (...xs: string[]) => xs.map((x) => `${x}\n`).join('');
  // ours replaces the first of two equal lines, theirs deletes one of them: jsdiff reads ours as
  // "insert a, delete the second b", the same deletion as theirs; git reads a replacement next to it
  t.false(mergeText(lines('- name: p', '', 'b', 'b', 'x'), lines('- name: p', '', 'a', 'b', 'x'), lines('- name: p', '', 'b', 'x')).clean);
  // ours rewrites the head of the file, theirs deletes it: one alignment of ours deletes the same lines
  t.false(mergeText(lines('c', 'c', '', 'a'), lines('', 'z', 'a', '', 'a'), lines('', 'a')).clean);
  // both delete "a blank line" among several: one change or two? git applies two; not ours to guess
  t.false(mergeText(lines('a', '', '', '', ''), lines('', 'a', '', '', ''), lines('a', '', '', '')).clean);
  // unambiguous identical changes still merge
  t.deepEqual(mergeText(lines('a', 'b', 'c'), lines('a', 'B', 'c'), lines('a', 'B', 'c')), { clean: true, text: lines('a', 'B', 'c') });
});

test('diff3 against git merge-file on files with repeated lines: it conflicts wherever git does, and where both merge, the text is git\'s', (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'lastgood-diff3-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const gitMerge = (base: string, ours: string, theirs: string): { clean: boolean; text: string } => {
    for (const [name, text] of [['base', base], ['ours', ours], ['theirs', theirs]] as const) writeFileSync(path.join(dir, name), text);
    try {
      return { clean: true, text: execFileSync('git', ['merge-file', '-p', 'ours', 'base', 'theirs'], { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }) };
    } catch (error) {
      const e = error as { status?: number; stdout?: string };
      if (typeof e.status === 'number' && e.status > 0 && e.status < 127) return { clean: false, text: e.stdout ?? '' };
      throw error;
    }
  };
  const line = fc.constantFrom('a\n', 'b\n', 'c\n', 'x\n', '\n', '- name: p\n', '---\n');
  const edited = (base: string[]) =>
    fc
      .array(fc.record({ at: fc.nat(), remove: fc.nat({ max: 2 }), insert: fc.array(fc.constantFrom('a\n', 'y\n', 'x\n', '\n'), { maxLength: 2 }) }), { maxLength: 3 })
      .map((edits) => {
        const out = [...base];
        for (const e of edits) out.splice(e.at % (out.length + 1), e.remove, ...e.insert);
        return out.join('');
      });
  const triple = fc.array(line, { maxLength: 12 }).chain((base) => fc.tuple(fc.constant(base.join('')), edited(base), edited(base)));
  const seen = { bothClean: 0, bothConflict: 0, onlyOursConflicts: 0 };
  fc.assert(
    fc.property(triple, ([base, ours, theirs]) => {
      const native = gitMerge(base, ours, theirs);
      const merged = mergeText(base, ours, theirs);
      if (!native.clean) {
        seen.bothConflict++;
        return !merged.clean;
      }
      if (!merged.clean) {
        seen.onlyOursConflicts++;
        return true;
      }
      seen.bothClean++;
      return merged.text === native.text;
    }),
    { numRuns: 400 },
  );
  t.log(seen);
  t.true(seen.bothConflict > 0 && seen.bothClean > 0);
});
