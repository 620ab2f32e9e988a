import test from 'ava';
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
