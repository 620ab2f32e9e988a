import test from 'ava';
import { Readable } from 'node:stream';
import { parseSnapshot, readSnapshots } from '../src/observe/snapshot.ts';
import { InputError } from '../src/errors.ts';
import { tempDir, writeFile } from './support/git.ts';

test('multi-document YAML, kind: List and JSON are all read', async (t) => {
  const dir = tempDir();
  writeFile(dir, 'a.yaml', 'apiVersion: v1\nkind: Service\nmetadata: {name: a, namespace: x}\n---\napiVersion: v1\nkind: List\nitems:\n  - apiVersion: v1\n    kind: Pod\n    metadata: {name: b}\n  - apiVersion: apps/v1\n    kind: Deployment\n    metadata: {name: c}\n');
  writeFile(dir, 'sub/b.json', JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'd' } }));
  writeFile(dir, 'notes.txt', 'not a snapshot');
  const objects = await readSnapshots([dir]);
  t.deepEqual(objects.map((o) => o.object.metadata.name), ['a', 'b', 'c', 'd']);
  t.true(objects[3]!.source.endsWith('b.json'));
});

test('stdin is read for "-"', async (t) => {
  const objects = await readSnapshots(['-'], { stdin: Readable.from(['apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n']) });
  t.is(objects[0]!.object.kind, 'Service');
  t.is(objects[0]!.source, '-');
});

test('duplicate keys and conditions: {} are tolerated (upstream fixtures have both)', (t) => {
  const [o] = parseSnapshot('apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n  name: b\nstatus:\n  conditions: {}\n', 'f.yaml');
  t.is(o!.object.metadata.name, 'b');
  t.deepEqual(o!.object.status, { conditions: {} });
});

test('Go-template placeholders in upstream test data are read as words', (t) => {
  const [o] = parseSnapshot('apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n  namespace: {{ .fluxns }}\n', 'f.yaml');
  t.is(o!.object.metadata.namespace, 'fluxns');
});

test('what cannot be parsed is named with its file and line', (t) => {
  const e = t.throws(() => parseSnapshot('apiVersion: v1\nkind: Service\nmetadata: {name: [x\n', 'broken.yaml'), { instanceOf: InputError });
  t.regex(e!.message, /^broken\.yaml:\d+: cannot parse as YAML or JSON/);
  t.throws(() => parseSnapshot('- 1\n- 2\n', 'list.yaml'), { message: /list\.yaml: document 1 is not a Kubernetes object/ });
  // an item of a kubectl List is named by its place in it, and a document by its place in the stream
  const item = (name: string) => `- apiVersion: v1\n  kind: ConfigMap\n  metadata: { ${name} }\n`;
  t.throws(() => parseSnapshot(`apiVersion: v1\nkind: List\nitems:\n${item('name: a')}${item('name: b')}${item('namespace: x')}`, 'list.yaml'), { message: 'list.yaml: document 1, item 3 of its List is not a Kubernetes object (apiVersion, kind and metadata.name are required)' });
  t.throws(() => parseSnapshot('apiVersion: v1\nkind: ConfigMap\nmetadata: { name: a }\n---\n---\nkind: ConfigMap\n', 'docs.yaml'), { message: /^docs\.yaml: document 3 is not a Kubernetes object/ });
  t.throws(() => parseSnapshot('kind: Service\n', 'x.yaml'), { message: /apiVersion, kind and metadata\.name are required/ });
});

test('a missing file is an input error naming it', async (t) => {
  await t.throwsAsync(readSnapshots(['/nonexistent/snap.yaml']), { instanceOf: InputError, message: /\/nonexistent\/snap\.yaml: cannot read snapshot: ENOENT/ });
});
