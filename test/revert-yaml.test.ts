import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import fc from 'fast-check';
import { parseAllDocuments } from 'yaml';
import { mergeFile } from '../src/revert/merge-file.ts';
import { mergeText } from '../src/revert/merge-lines.ts';
import { mergeYaml } from '../src/revert/yaml-merge.ts';
import { runSync } from './support/spawner.ts';

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
      return { clean: true, text: runSync('git', ['merge-file', '-p', 'ours', 'base', 'theirs'], { cwd: dir }) };
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

// ---- the structural merge on bytes (mergeFile), where the line merge conflicts ----

type Outcome = { how: string; bytes: Buffer } | { conflict: string };
const yamlMerge = (base: string, ours: string, theirs: string, file = 'm.yaml'): Outcome => {
  const r = mergeFile(file, Buffer.from(base), Buffer.from(ours), Buffer.from(theirs));
  return r.clean ? { how: r.how, bytes: Buffer.from(r.content) } : { conflict: r.conflict };
};
const merged = (text: string): Outcome => ({ how: 'yaml', bytes: Buffer.from(text) });
const conflictOf = (r: Outcome): string => ('conflict' in r ? r.conflict : '');

test('anchors, aliases and merge keys: a change next to them merges and leaves them as written', (t) => {
  const file = (image: string, replicas: number) =>
    `shared: &shared\n  timeout: 30\nweb:\n  <<: *shared\n  image: ${image}\n  replicas: ${replicas}\nworker: *shared\n`;
  // the bad commit bumped the image, a later commit scaled on the next line: git conflicts
  t.deepEqual(yamlMerge(file('web:2', 2), file('web:2', 4), file('web:1', 2)), merged(file('web:1', 4)));
});

test('anchors, aliases and merge keys: a change that reaches one is a conflict that names it, never a crash', (t) => {
  const file = (timeout: number, retries: number, worker = '*shared', merge = '*shared') =>
    `shared: &shared\n  timeout: ${timeout}\n  retries: ${retries}\nweb:\n  <<: ${merge}\n  image: web:1\nworker: ${worker}\n`;
  // inside the anchored map: every alias would change with it
  t.is(
    conflictOf(yamlMerge(file(30, 1), file(30, 2), file(10, 1))),
    'both sides changed lines 2-3; cannot merge structurally: document 1: shared.timeout changes an anchored or aliased node (&shared)',
  );
  // an alias replaced by a value, next to a later edit
  t.is(
    conflictOf(yamlMerge(file(30, 1) + 'x: 1\n', file(30, 1) + 'x: 2\n', file(30, 1, '{timeout: 5}') + 'x: 1\n')),
    'both sides changed lines 7-8; cannot merge structurally: document 1: worker changes an anchored or aliased node (*shared)',
  );
  // a merge key changed next to a later edit
  t.regex(conflictOf(yamlMerge(file(30, 1), file(30, 1).replace('image: web:1', 'image: web:2'), file(30, 1, '*shared', '{timeout: 1}'))), /cannot merge structurally: document 1: web\.<< changes an anchored or aliased node \(\*shared\)/);
  // an alias to no anchor, an alias before its anchor
  for (const [broken, name] of [['a: *nope\nb: 1\n', 'nope'], ['a: *late\nb: &late 1\n', 'late']] as const) {
    const r = yamlMerge(broken, broken.replace('b:', 'c:'), broken.replace('a:', 'z:'));
    t.is(conflictOf(r), `both sides changed lines 1-2; cannot merge structurally: Unresolved alias (the anchor must be set before the alias): ${name}`);
  }
});

test('YAML 1.1 scalars stay exactly as written: untouched ones, and the ones the revert brings back', (t) => {
  const file = (image: string, pullPolicy: string) =>
    `mode: 0750\nold: 0o750\nenabled: yes\nlimit: 1e3\nname: "quoted"\nother: 'single'\nnothing: ~\nhex: 0x1F\nhalf: .5\nwhen: 2001-12-14t21:59:43.10-05:00\nraw: !!str 1e3\nimage: ${image}\npullPolicy: ${pullPolicy}\n`;
  t.deepEqual(yamlMerge(file('app:2', 'IfNotPresent'), file('app:2', 'Always'), file('app:1', 'IfNotPresent')), merged(file('app:1', 'Always')));
  // the revert brings back theirs' octal as written, not as the yaml library would print it
  const modes = (mode: string, uid: number) => `kind: Config\nmode: ${mode}\nuid: ${uid}\n`;
  t.deepEqual(yamlMerge(modes('0644', 1), modes('0644', 2), modes('0750', 1)), merged(modes('0750', 2)));
  // the printed path (both sides changed one line's comment, theirs its value too) keeps them as well
  const printed = (value: string, comment: string) => `kind: Config\nmode: 0750\nk0: ${value} # ${comment}\nflag: yes\nraw: !!str 1e3\n`;
  t.deepEqual(yamlMerge(printed('v1', 'c2'), printed('v1', 'c5'), printed('0o640', 'note')), merged(printed('0o640', 'c5')));
});

test('CRLF YAML stays CRLF on every line, byte for byte, whichever way it is merged', (t) => {
  const crlf = (s: string) => s.replace(/\n/g, '\r\n');
  const file = (a: number, b: number) => crlf(`# config\nkind: Config\na: ${a}  # spaced\nb: ${b}\nmode: 0750\n`);
  t.deepEqual(yamlMerge(file(1, 1), file(2, 1), file(1, 3)), merged(file(2, 3)));
  // the printed path: a key theirs brings back lands in CRLF too
  const printed = (value: string, comment: string, extra = '') => crlf(`kind: Config\nk0: ${value}  # ${comment}\n${extra}mode: 0750\n`);
  t.deepEqual(yamlMerge(printed('v1', 'c2'), printed('v1', 'c5'), printed('v9', 'note', 'added: yes\n')), merged(printed('v9', 'c5', 'added: yes\n')));
});

test('a YAML file without a final newline stays without one; a BOM stays; comments and spacing stay', (t) => {
  const file = (a: number, b: number) => `# top\n\nkind: Config   # aligned\na: ${a}\nb: ${b}\n#   end`;
  t.deepEqual(yamlMerge(file(1, 1), file(2, 1), file(1, 3)), merged(file(2, 3)));
  const printed = (value: string, comment: string) => `kind: Config\nk0: ${value}    #   ${comment}\nk1: 0750`;
  t.deepEqual(yamlMerge(printed('v1', 'c2'), printed('v1', 'c5'), printed('v9', 'note')), merged(printed('v9', 'c5')));
  // the change is at the end: as in git, the final line end is theirs' where ours kept base's
  t.deepEqual(yamlMerge('k0: 1\nk1: 0750', 'k0: 2\nk1: 0750', 'k0: 1\nk1: 0640\n'), merged('k0: 2\nk1: 0640\n'));
  const bom = '\uFEFF';
  t.deepEqual(yamlMerge(`${bom}a: 1\nb: 1\n`, `${bom}a: 2\nb: 1\n`, `${bom}a: 1\nb: 3\n`), merged(`${bom}a: 2\nb: 3\n`));
  t.deepEqual(yamlMerge(`${bom}${printed('v1', 'c2')}`, `${bom}${printed('v1', 'c5')}`, `${bom}${printed('v9', 'note')}`), merged(`${bom}${printed('v9', 'c5')}`));
});

test('where the structural merge could only reformat ours, it refuses with a conflict that says so', (t) => {
  // a whitespace-only line the printer drops, where theirs brings a key back: git conflicts, and
  // keeping the line is not possible without guessing
  const r = yamlMerge('a: 1\nb: 2\n', '\t\nb: 2\n', 'c: 3\nb: 2\n');
  t.deepEqual(r, { conflict: 'both sides changed line 1; cannot merge structurally: the structural merge would reformat the file (line 1 would change: "\\t")' });
});

test('a comment ours wrote in a list it otherwise left alone survives theirs\' change next to it', (t) => {
  const file = (image: string, comment = '') => `spec:\n  containers:\n  - name: app${comment}\n    image: ${image}\n  - name: sidecar\n    image: envoy:1\n`;
  t.deepEqual(yamlMerge(file('app:2'), file('app:2', ' # main'), file('app:1')), merged(file('app:1', ' # main')));
  // where theirs reorders the list, it could only be taken whole: ours' comment would go, so it conflicts
  const reordered = 'spec:\n  containers:\n  - name: sidecar\n    image: envoy:1\n  - name: app\n    image: app:2\n';
  t.is(
    conflictOf(yamlMerge(file('app:2'), file('app:2', ' # main'), reordered)),
    'both sides changed lines 3-6; cannot merge structurally: document 1: spec.containers would be replaced whole, losing comments added or changed in it since the bad commit',
  );
});
