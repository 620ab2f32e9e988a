import test from 'ava';
import fc from 'fast-check';
import { applyArgoKustomize, argoBuildFlags, argoEnvsubst, splitImage } from '../src/verify/argocd.ts';
import { envsubst } from '../src/model/envsubst.ts';
import { foldFluxSpec } from '../src/verify/flux.ts';
import { deepEqual, flatten } from '../src/verify/objects.ts';
import { compareRenders, detectRenderer, render, renderedDiff, type RenderedObject, type Renderer } from '../src/verify/render.ts';

/**
 * The parts of the render check that need no kustomize: the verification predicate over three
 * renders (research/render.md §6.1), the rendered diff, the ports of Flux's generator and
 * envsubst and of Argo CD's kustomize edits, and the confinement of what a build may read.
 */

// ---------- the predicate, for all inputs ----------

const scalar = fc.oneof(fc.constantFrom('a', 'b', 'c', 'nginx:1', 'nginx:2'), fc.integer({ min: 0, max: 3 }), fc.boolean());
const container = fc.record({ name: fc.constantFrom('app', 'sidecar', 'init'), image: fc.constantFrom('app:1', 'app:2', 'app:3'), env: fc.array(fc.record({ name: fc.constantFrom('A', 'B'), value: scalar }), { maxLength: 2 }) });
const spec = fc.record({
  replicas: fc.option(fc.integer({ min: 0, max: 3 }), { nil: undefined }),
  template: fc.record({ spec: fc.record({ containers: fc.uniqueArray(container, { selector: (c) => c.name, maxLength: 3 }) }) }),
  extra: fc.dictionary(fc.constantFrom('x', 'y', 'z'), scalar, { maxKeys: 2 }),
}, { requiredKeys: ['template'] });
const key = fc.constantFrom('apps/Deployment prod/a', 'apps/Deployment prod/b', 'ConfigMap prod/c');
const objects = fc.uniqueArray(fc.record({ key, object: spec.map((s) => JSON.parse(JSON.stringify(s)) as Record<string, unknown>) }), { selector: (o) => o.key, maxLength: 3 });

/** A revert that takes, object by object and field by field, either head's or the LKG's value. */
function mix(head: RenderedObject[], lkg: RenderedObject[], pick: boolean[]): RenderedObject[] {
  const l = new Map(lkg.map((o) => [o.key, o.object]));
  const h = new Map(head.map((o) => [o.key, o.object]));
  const out: RenderedObject[] = [];
  let i = 0;
  for (const k of [...new Set([...h.keys(), ...l.keys()])].sort()) {
    const useLkg = pick[i++ % Math.max(1, pick.length)] ?? false;
    const ho = h.get(k);
    const lo = l.get(k);
    if (ho && lo) {
      // field by field: each top-level field from one side
      const o: Record<string, unknown> = {};
      for (const f of new Set([...Object.keys(ho), ...Object.keys(lo)])) {
        const from = (pick[i++ % Math.max(1, pick.length)] ?? false) ? lo : ho;
        if (Object.hasOwn(from, f)) o[f] = from[f];
      }
      out.push({ key: k, object: o });
    } else {
      const o = useLkg ? lo : ho;
      if (o) out.push({ key: k, object: o });
    }
  }
  return out;
}

const sameRender = (a: RenderedObject[], b: RenderedObject[]) =>
  a.length === b.length && a.every((o) => deepEqual(o.object, b.find((x) => x.key === o.key)?.object));

test('predicate: a revert to exactly the LKG never moves away from it, and changes something iff head differs', (t) => {
  fc.assert(fc.property(objects, objects, (lkg, head) => {
    const c = compareRenders({ lastKnownGood: lkg, head, reverted: lkg });
    return c.away.length === 0 && c.changes === !sameRender(head, lkg) && c.kept.length === 0;
  }), { numRuns: 300 });
  t.pass();
});

test('predicate: a revert that keeps head changes nothing, and keeps every field where head left the LKG', (t) => {
  fc.assert(fc.property(objects, objects, (lkg, head) => {
    const c = compareRenders({ lastKnownGood: lkg, head, reverted: head });
    const keptSomething = c.kept.length > 0;
    return !c.changes && c.away.length === 0 && keptSomething === !sameRender(head, lkg);
  }), { numRuns: 300 });
  t.pass();
});

test('predicate: any field-by-field mix of head and LKG never moves away; a third value anywhere is named', (t) => {
  fc.assert(fc.property(objects, objects, fc.array(fc.boolean(), { minLength: 1, maxLength: 12 }), (lkg, head, pick) => {
    const reverted = mix(head, lkg, pick);
    if (compareRenders({ lastKnownGood: lkg, head, reverted }).away.length !== 0) return false;
    // inject a value neither render has
    if (reverted.length === 0) return true;
    const victim = structuredClone(reverted[0]!);
    (victim.object as { lastgoodInjected?: string }).lastgoodInjected = 'neither';
    const c = compareRenders({ lastKnownGood: lkg, head, reverted: [victim, ...reverted.slice(1)] });
    return c.changes && c.away.some((a) => a.key === victim.key && (a.path === '/lastgoodInjected' || a.path === ''));
  }), { numRuns: 300 });
  t.pass();
});

test('predicate: containers are compared by name, so reordering them is no change; an image moved away is named with its three values', (t) => {
  const dep = (containers: Array<{ name: string; image: string }>) => [{ key: 'apps/Deployment prod/a', object: { spec: { template: { spec: { containers } } } } }];
  const lkg = dep([{ name: 'app', image: 'app:1' }, { name: 'side', image: 'side:1' }]);
  const head = dep([{ name: 'app', image: 'app:2' }, { name: 'side', image: 'side:1' }]);
  const reordered = dep([{ name: 'side', image: 'side:1' }, { name: 'app', image: 'app:1' }]);
  const c = compareRenders({ lastKnownGood: lkg, head, reverted: reordered });
  t.deepEqual(c.away, []);
  t.true(c.changes);
  const wrong = compareRenders({ lastKnownGood: lkg, head, reverted: dep([{ name: 'app', image: 'app:3' }, { name: 'side', image: 'side:1' }]) });
  t.deepEqual(wrong.away, [{ key: 'apps/Deployment prod/a', path: '/spec/template/spec/containers/name=app/image', head: 'app:2', reverted: 'app:3', lastKnownGood: 'app:1' }]);
  t.deepEqual([...flatten({ a: [], b: {}, 'c/d': [1] }).keys()], ['/a', '/b', '/c~1d/0']);
});

test('predicate: objects added after the LKG and kept are "kept"; an object the revert re-creates that the LKG lacked is "away"', (t) => {
  const cm = (name: string, v: string) => ({ key: `ConfigMap prod/${name}`, object: { data: { v } } });
  const c = compareRenders({ lastKnownGood: [cm('a', '1')], head: [cm('a', '2'), cm('new', '1')], reverted: [cm('a', '1'), cm('new', '1')] });
  t.deepEqual(c.kept, [{ key: 'ConfigMap prod/new', path: '' }]);
  t.deepEqual(c.away, []);
  t.deepEqual(c.summary, { added: [], removed: [], changed: ['ConfigMap prod/a'] });
  const d = compareRenders({ lastKnownGood: [cm('a', '1')], head: [cm('a', '2')], reverted: [cm('a', '1'), cm('ghost', '1')] });
  t.deepEqual(d.away.map((a) => [a.key, a.path]), [['ConfigMap prod/ghost', '']]);
  t.deepEqual(d.summary.added, ['ConfigMap prod/ghost']);
});

// ---------- the rendered diff ----------

test('rendered diff: Secret values never appear, but which keys change does; tracking labels are stripped', (t) => {
  const secret = (pw: string, extra: Record<string, string> = {}) => ({
    key: 'Secret prod/db',
    object: { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'db', namespace: 'prod', labels: { 'kustomize.toolkit.fluxcd.io/name': 'apps', team: 'db' } }, data: { password: pw, user: 'YWRtaW4=', ...extra }, stringData: { token: `plain-${pw}` } },
  });
  const d = renderedDiff([secret('c2VjcmV0MQ==')], [secret('c2VjcmV0Mg==', { extra: 'eHh4eA==' })]);
  for (const out of [d.text, d.markdown]) {
    t.false(/c2VjcmV0|YWRtaW4|eHh4eA|plain-/.test(out), 'no secret value in the diff');
    t.false(out.includes('kustomize.toolkit.fluxcd.io/name'));
  }
  t.regex(d.text, /-\s+password: "?<redacted: before>"?\n\+\s+password: "?<redacted: after>"?/);
  t.regex(d.text, /\+\s+extra: "?<redacted>"?/);
  t.regex(d.text, /\n {3}user: <redacted>\n/, 'unchanged: the same mask on both sides, a context line');
  t.regex(d.markdown, /^\*\*Rendered diff\*\*: The revert changes 1 rendered object \(1 changed, 0 added, 0 removed\)\.\n\n<details><summary>Secret prod\/db \(changed\)<\/summary>\n\n```diff\n/);
  t.is(renderedDiff([secret('a')], [secret('a')]).summary, 'The revert changes no rendered object.');
});

test('rendered diff: never longer than the cap, says how many objects it left out, and shows what fits', (t) => {
  const cm = (i: number, v: string, size: number) => ({ key: `ConfigMap prod/cm-${String(i).padStart(3, '0')}`, object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${i}` }, data: { v: v.repeat(size) } } });
  fc.assert(fc.property(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 1, max: 3000 }), fc.integer({ min: 200, max: 20_000 }), (n, size, maxChars) => {
    const head = Array.from({ length: n }, (_, i) => cm(i, 'a', size));
    const reverted = Array.from({ length: n }, (_, i) => cm(i, 'b', size));
    const d = renderedDiff(head, reverted, { maxChars });
    if (d.markdown.length > maxChars || d.text.length > maxChars) return false;
    const shown = (d.markdown.match(/<details>/g) ?? []).length;
    const more = /(\d+) more objects not shown/.exec(d.markdown);
    return more ? Number(more[1]) + shown <= n && Number(more[1]) >= 1 : shown === n;
  }), { numRuns: 150 });
  const big = renderedDiff(Array.from({ length: 50 }, (_, i) => cm(i, 'a', 2000)), Array.from({ length: 50 }, (_, i) => cm(i, 'b', 2000)));
  t.true(big.markdown.length <= 60_000);
  t.regex(big.markdown, /\n\d+ more objects not shown\.\n$/);
});

test('rendered diff: added and removed objects, and a ``` line cannot close the fence', (t) => {
  const o = (name: string, v: string) => ({ key: `ConfigMap prod/${name}`, object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { script: v } } });
  const d = renderedDiff([o('old', 'x')], [o('new', '```\nrm -rf /\n')]);
  t.is(d.summary, 'The revert changes 2 rendered objects (0 changed, 1 added, 1 removed).');
  t.regex(d.markdown, /<summary>ConfigMap prod\/new \(added\)<\/summary>/);
  t.regex(d.markdown, /<summary>ConfigMap prod\/old \(removed\)<\/summary>/);
  t.is((d.markdown.match(/^```/gm) ?? []).length, 4, 'two fences per object, nothing else at column 0');
});

// ---------- ports of upstream rules ----------

test('envsubst as fluxcd/pkg envsubst: ${var} functions, $$ escapes, bare $var untouched, syntax errors', (t) => {
  const vars: Record<string, string> = { A: 'hello', EMPTY: '', P: 'a/b/c.tar.gz' };
  const m = (n: string): [string, boolean] => [vars[n] ?? '', true];
  const cases: Array<[string, string]> = [
    ['x ${A} y', 'x hello y'], ['$${A}', '${A}'], ['$A and $5', '$A and $5'], ['${EMPTY:=d}', 'd'], ['${UNSET:-d${A}}', 'dhello'],
    ['${A^^}', 'HELLO'], ['${A^}', 'Hello'], ['${#A}', '5'], ['${A:1:2}', 'el'], ['${A:-2}', 'hello'], ['${P%.*}', 'a/b/c.tar'], ['${P%%.*}', 'a/b/c'],
    ['${P#*/}', 'b/c.tar.gz'], ['${P##*/}', 'c.tar.gz'], ['${A/l/L}', 'heLlo'], ['${A//l/L}', 'heLLo'], ['${A/#he/HE}', 'HEllo'], ['${A/%lo/LO}', 'helLO'],
  ];
  for (const [input, want] of cases) t.is(envsubst(input, m), want, input);
  t.throws(() => envsubst('${A', m), { message: 'missing closing brace' });
  t.throws(() => envsubst('${}', m), { message: 'unable to parse variable name' });
  t.throws(() => envsubst('${X}', () => ['', false]), { message: 'variable not set (strict mode): "X"' });
  t.is(envsubst('${X:=ok}', () => ['', false]), 'ok');
});

test('Flux GenerateManifest fold: images merged by name (tag and digest as one), unknown fields dropped, components checked', (t) => {
  const file = { resources: ['a.yaml'], images: [{ name: 'app', newName: 'reg/app', digest: 'sha256:1' }], unknown: 1 };
  const k = foldFluxSpec(file, undefined, { images: [{ name: 'app', newTag: '2.0' }, { name: 'other', newName: 'reg/other' }], nameSuffix: '' }, () => true);
  t.deepEqual(k, {
    apiVersion: 'kustomize.config.k8s.io/v1beta1', kind: 'Kustomization', resources: ['a.yaml'], nameSuffix: '',
    images: [{ name: 'app', newName: 'reg/app', newTag: '2.0' }, { name: 'other', newName: 'reg/other' }],
  });
  // a found file without resources gets originAnnotations (L206-210); a generated empty one a placeholder namespace
  t.deepEqual(foldFluxSpec({ components: ['c'] }, undefined, {}, () => true).buildMetadata, ['originAnnotations']);
  t.is(foldFluxSpec(undefined, [], {}, () => true).namespace, '_placeholder');
  t.throws(() => foldFluxSpec(undefined, ['./a.yaml'], { components: ['https://github.com/x/y'] }, () => true), { message: "component path 'https://github.com/x/y' must be local and relative" });
  t.deepEqual(foldFluxSpec(undefined, ['./a.yaml'], { components: ['../gone', '../here'], ignoreMissingComponents: true }, (c) => c === '../here').components, ['../here']);
  t.deepEqual(foldFluxSpec({ resources: ['x'], patches: [{ path: 'p.yaml' }] }, undefined, { patches: [{ patch: 'P', target: { kind: 'Deployment', name: '' } }] }, () => true).patches, [{ path: 'p.yaml' }, { patch: 'P', target: { kind: 'Deployment' } }]);
});

test('Argo CD kustomize edits: set image replaces the entry (* keeps a field), labels refuse to overwrite without force, env expansion', (t) => {
  const k = applyArgoKustomize({ resources: ['a'], images: [{ name: 'app', newName: 'reg/app', newTag: '1' }, { name: 'z', newTag: '9' }] }, { images: ['app=*:2', 'b@sha256:abc'] }, {}, () => true)!;
  t.deepEqual(k.images, [{ name: 'app', newName: 'reg/app', newTag: '2' }, { name: 'b', digest: 'sha256:abc' }, { name: 'z', newTag: '9' }]);
  t.is(applyArgoKustomize({ resources: ['a'] }, {}, {}, () => true), undefined, 'no option, no rewrite');
  t.throws(() => applyArgoKustomize({ commonLabels: { team: 'a' } }, { commonLabels: { team: 'b' } }, {}, () => true), { message: 'label team already in kustomization file. Use --force to override.' });
  t.deepEqual(applyArgoKustomize({ commonLabels: { team: 'a' } }, { commonLabels: { team: '$APP-x' }, forceCommonLabels: true }, { APP: 'web' }, () => true)!.commonLabels, { team: 'web-x' });
  t.deepEqual(applyArgoKustomize({ bases: ['../b'] }, { nameSuffix: '-x' }, {}, () => true), { apiVersion: 'kustomize.config.k8s.io/v1beta1', kind: 'Kustomization', resources: ['../b'], nameSuffix: '-x' });
  t.is(argoEnvsubst('$$a ${B} $C ${} $', { B: 'b' }), '$a b   $');
  t.deepEqual(splitImage('localhost:5000/app:1@sha256:x'), { name: 'localhost:5000/app', tag: '1', digest: 'sha256:x' });
  t.deepEqual(argoBuildFlags(['--load-restrictor LoadRestrictionsNone --enable-helm']), ['--load-restrictor', 'LoadRestrictionsNone', '--enable-helm']);
  t.throws(() => argoBuildFlags(['--enable-alpha-plugins --enable-exec']), { message: /--enable-alpha-plugins is not rendered by lastgood/ });
});

// ---------- what a build may read, and detection ----------

/** A renderer that must never be reached: these renders are refused before kustomize runs. */
const unreachable: Renderer = { command: ['/nonexistent/lastgood-test-kustomize', 'build'], version: 'v5.8.1', kind: 'kustomize' };
const enc = (s: string) => new TextEncoder().encode(s);

test('a build never reads outside the repository, nor anything remote: refused before kustomize runs', async (t) => {
  const cases: Array<[Record<string, string>, RegExp]> = [
    [{ 'apps/x/kustomization.yaml': 'resources: [../../../../../../etc]\n' }, /apps\/x\/kustomization\.yaml: resources entry \.\.\/\.\.\/\.\.\/\.\.\/\.\.\/\.\.\/etc is outside the repository/],
    [{ 'apps/x/kustomization.yaml': 'resources: [../base]\n', 'apps/base/kustomization.yaml': 'configMapGenerator:\n- name: c\n  files: [key=/etc/passwd]\n' }, /apps\/base\/kustomization\.yaml: configMapGenerator\[\]\.files entry \/etc\/passwd is outside the repository/],
    [{ 'apps/x/kustomization.yaml': 'patches:\n- path: ../../../secret.yaml\n' }, /patches\[\]\.path entry \.\.\/\.\.\/\.\.\/secret\.yaml is outside/],
    [{ 'apps/x/kustomization.yaml': 'resources: [https://github.com/acme/base//app?ref=v1]\n' }, /is remote: lastgood does not fetch remote bases/],
    [{ 'apps/x/kustomization.yaml': 'transformers: [t.yaml]\n', 'apps/x/t.yaml': 'apiVersion: builtin\nkind: PatchTransformer\nmetadata: {name: p}\npath: ../../../../etc/passwd\n' }, /apps\/x\/kustomization\.yaml: plugin config path entry \.\.\/\.\.\/\.\.\/\.\.\/etc\/passwd is outside/],
    [{ 'apps/x/kustomization.yaml': 'generators:\n- |\n  apiVersion: builtin\n  kind: ConfigMapGenerator\n  metadata: {name: c}\n  files: [k=/root/.ssh/id_rsa]\n' }, /plugin config files entry \/root\/\.ssh\/id_rsa is outside/],
  ];
  for (const [files, want] of cases) {
    for (const engine of ['flux', 'argocd'] as const) {
      const r = await render(unreachable, { files: new Map(Object.entries(files).map(([p, s]) => [p, enc(s)])), root: 'apps/x', engine });
      t.true('failed' in r && want.test(r.failed), `${engine}: ${JSON.stringify(r)}`);
    }
  }
  const outside = await render(unreachable, { files: new Map([['../x.yaml', enc('a: 1')]]), root: '', engine: 'flux' });
  t.deepEqual(outside, { failed: '../x.yaml: not a repository-relative path' });
  const noPath = await render(unreachable, { files: new Map([['a/x.yaml', enc('a: 1')]]), root: 'b', engine: 'flux' });
  t.deepEqual(noPath, { failed: 'kustomization path not found: b' });
});

test('detectRenderer: off, a configured path that is not a binary, nothing on the PATH', async (t) => {
  t.deepEqual(await detectRenderer({ configured: 'off' }), { unavailable: 'rendering is turned off (render.kustomize: off)' });
  t.deepEqual(await detectRenderer({ configured: '/nonexistent/kustomize' }), { unavailable: 'the configured renderer /nonexistent/kustomize is not an executable file' });
  t.deepEqual(await detectRenderer({ env: { PATH: '/nonexistent' } }), { unavailable: 'neither kustomize nor kubectl is on the PATH' });
});
