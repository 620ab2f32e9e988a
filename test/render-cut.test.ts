import test from 'ava';
import fc from 'fast-check';
import { LocalRepo } from '../src/deliver/local/index.ts';
import { modelTarget } from '../src/model/index.ts';
import type { RenderSpec } from '../src/model/types.ts';
import type { KubeObject } from '../src/observe/types.ts';
import type { FileChange } from '../src/repo/types.ts';
import { renderRevisions } from '../src/verify/render-check.ts';
import { splitDocuments } from '../src/verify/objects.ts';
import { objectKeyOf } from '../src/verify/objects.ts';
import { render, type Renderer } from '../src/verify/render.ts';
import jsYaml from 'js-yaml';
import { commit, makeRepo } from './support/git.ts';
import { testRenderer } from './support/renderer.ts';

/**
 * Issue 33: the render check builds only the part of the engine's build that reaches the target
 * (the kustomizations on the way from spec.path to the target's paths, and everything those
 * read), and falls back to the whole build where that cut could change the target's objects. The
 * property: on generated repositories (a Flux Kustomization over a listing root or over a folder
 * Flux generates a kustomization for; applications with bases, overlays, a shared component,
 * patches, a shared generated ConfigMap some of them refer to, root transformers), for plans that
 * change a base, an overlay, the component, a patch, a root transformer or another application,
 * every object the cut render prints is, byte for byte, the document the whole build prints for
 * it — the whole build rendered by the real kustomize (kubectl kustomize here) as the oracle.
 * Where the check falls back, it renders the whole build, and says why.
 */

interface Shape {
  apps: number;
  /** the Flux Kustomization builds a listing root (clusters/prod) or a folder without a kustomization (apps/) */
  root: 'listing' | 'generated';
  /** the overlays take a shared component (a label) */
  component: boolean;
  /** a shared folder generates a ConfigMap (a hashed name) that application 0 refers to */
  shared: boolean;
  /** application 0's base generates a ConfigMap of its own, referred to by its Deployment */
  ownGenerator: boolean;
  /** per-object transformers of the listing root */
  rootTransforms: Array<'labels' | 'annotations' | 'images' | 'patch' | 'namespace'>;
  /** a transformer of the listing root that reaches across resources (the cut must fall back) */
  rootAcross: 'none' | 'namePrefix' | 'configMapGenerator' | 'replacements';
  /** Flux's own spec: targetNamespace and images are per object, namePrefix reaches across */
  fluxSpec: 'none' | 'targetNamespace' | 'images' | 'namePrefix';
}

type Plan = 'overlay-tag' | 'base-replicas' | 'component-label' | 'patch' | 'root-transform' | 'other-app' | 'shared-literal';

const app = (i: number) => `app-${i}`;

function files(s: Shape, v: { tag: string; replicas: number; team: string; patch: number; root: string; other: string; literal: string }): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < s.apps; i++) {
    const a = app(i);
    const refs = i === 0 && s.shared ? '\n        envFrom:\n        - configMapRef: {name: shared-config}' : i === 0 && s.ownGenerator ? '\n        envFrom:\n        - configMapRef: {name: own-config}' : '';
    out[`apps/${a}/base/deployment.yaml`] = `apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: ${a}\nspec:\n  replicas: ${i === 0 ? v.replicas : 1}\n  selector:\n    matchLabels: {app: ${a}}\n  template:\n    metadata:\n      labels: {app: ${a}}\n    spec:\n      containers:\n      - name: main\n        image: registry.example.com/${a}:1.0.0${refs}\n`;
    out[`apps/${a}/base/service.yaml`] = `apiVersion: v1\nkind: Service\nmetadata:\n  name: ${a}\nspec:\n  selector: {app: ${a}}\n  ports:\n  - port: 80\n`;
    out[`apps/${a}/base/kustomization.yaml`] = `resources:\n- deployment.yaml\n- service.yaml\n${i === 0 && s.ownGenerator ? 'configMapGenerator:\n- name: own-config\n  literals: [mode=on]\n' : ''}`;
    const tag = i === 0 ? v.tag : i === 1 ? v.other : '1.0.0';
    out[`apps/${a}/overlays/prod/kustomization.yaml`] = `apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: prod\nresources:\n- ../../base\npatches:\n- path: patch.yaml\nimages:\n- name: registry.example.com/${a}\n  newTag: "${tag}"\n${s.component ? 'components:\n- ../../../../components/team\n' : ''}`;
    out[`apps/${a}/overlays/prod/patch.yaml`] = `apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: ${a}\nspec:\n  template:\n    metadata:\n      annotations: {sizing: "${i === 0 ? v.patch : 1}"}\n`;
  }
  if (s.component) out['components/team/kustomization.yaml'] = `apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nlabels:\n- pairs: {team: ${v.team}}\n`;
  if (s.shared) {
    out['shared/kustomization.yaml'] = `namespace: prod\nconfigMapGenerator:\n- name: shared-config\n  literals: [region=${v.literal}]\n`;
  }
  if (s.root === 'listing') {
    const lines = ['apiVersion: kustomize.config.k8s.io/v1beta1', 'kind: Kustomization', 'resources:'];
    for (let i = 0; i < s.apps; i++) lines.push(`- ../../apps/${app(i)}/overlays/prod`);
    if (s.shared) lines.push('- ../../shared');
    for (const t of s.rootTransforms) {
      if (t === 'labels') lines.push('commonLabels:', `  cluster: ${v.root}`);
      if (t === 'annotations') lines.push('commonAnnotations:', `  owner: ${v.root}`);
      if (t === 'images') lines.push('images:', `- name: registry.example.com/${app(0)}`, `  newName: mirror.example.com/${v.root}/${app(0)}`);
      if (t === 'patch') lines.push('patches:', '- target: {kind: Deployment}', `  patch: '[{"op": "add", "path": "/metadata/annotations/root", "value": "${v.root}"}]'`);
      if (t === 'namespace') lines.push('namespace: prod');
    }
    if (s.rootAcross === 'namePrefix') lines.push('namePrefix: c-');
    if (s.rootAcross === 'configMapGenerator') lines.push('configMapGenerator:', '- name: cluster-info', '  namespace: prod', `  literals: [name=${v.root}]`);
    if (s.rootAcross === 'replacements') {
      lines.push('replacements:', '- source: {kind: Service, name: app-1, fieldPath: metadata.name}', '  targets:', '  - select: {kind: Deployment, name: app-0}', '    fieldPaths: [metadata.annotations.peer]', '    options: {create: true}');
    }
    out['clusters/prod/kustomization.yaml'] = `${lines.join('\n')}\n`;
  }
  // a file beside the applications that no build reads
  out['docs/README.md'] = '# notes\n';
  return out;
}

// a folder Flux generates a kustomization for lists each application's base beside its overlay:
// with targetNamespace both Deployments land in one namespace, a build no engine ever applied
const shape: fc.Arbitrary<Shape> = fc.record({
  apps: fc.integer({ min: 2, max: 4 }),
  root: fc.constantFrom('listing' as const, 'generated' as const),
  component: fc.boolean(),
  shared: fc.oneof({ arbitrary: fc.constant(false), weight: 3 }, { arbitrary: fc.constant(true), weight: 1 }),
  ownGenerator: fc.boolean(),
  rootTransforms: fc.subarray(['labels', 'annotations', 'images', 'patch', 'namespace'] as const),
  // mostly what a cut renders, enough of what it must not
  rootAcross: fc.oneof({ arbitrary: fc.constant('none' as const), weight: 6 }, { arbitrary: fc.constantFrom('namePrefix' as const, 'configMapGenerator' as const, 'replacements' as const), weight: 2 }),
  fluxSpec: fc.oneof({ arbitrary: fc.constantFrom('none' as const, 'targetNamespace' as const, 'images' as const), weight: 7 }, { arbitrary: fc.constant('namePrefix' as const), weight: 1 }),
}).filter((s) => !(s.root === 'generated' && s.fluxSpec === 'targetNamespace'));

function kustomization(s: Shape): KubeObject {
  const spec: Record<string, unknown> = { interval: '10m', path: s.root === 'listing' ? './clusters/prod' : './apps', prune: true, sourceRef: { kind: 'GitRepository', name: 'flux-system' } };
  if (s.fluxSpec === 'targetNamespace') spec.targetNamespace = 'prod';
  if (s.fluxSpec === 'images') spec.images = [{ name: 'registry.example.com/app-0', newTag: '9.9.9' }];
  if (s.fluxSpec === 'namePrefix') spec.namePrefix = 'flux-';
  return { apiVersion: 'kustomize.toolkit.fluxcd.io/v1', kind: 'Kustomization', metadata: { name: 'apps', namespace: 'flux-system' }, spec, status: {} } as KubeObject;
}

/** The documents of a build by object key, as kustomize printed each. */
function documents(output: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const d of splitDocuments(output)) {
    const o = jsYaml.load(d, { schema: jsYaml.CORE_SCHEMA }) as Record<string, unknown>;
    out.set(objectKeyOf(o), d);
  }
  return out;
}

async function wholeOutput(r: Renderer, reader: LocalRepo, spec: RenderSpec, contents: Map<string, Uint8Array>): Promise<string> {
  const whole = spec.whole ? (await spec.whole()).spec : spec;
  const files = new Map<string, Uint8Array>();
  for (const [p, oid] of whole.files) files.set(p, contents.get(oid) ?? (await reader.readBlob(oid)));
  const result = await render(r, { files, root: whole.root, engine: whole.engine, ...(whole.flux ? { flux: whole.flux } : {}) });
  if ('failed' in result) throw new Error(`the whole build failed: ${result.failed}`);
  return result.output;
}

test('a render cut to what reaches the target prints each of its objects as the whole build does (kubectl kustomize as the oracle), and falls back where it could not', async (t) => {
  const r = await testRenderer(t);
  if (!r) return;
  const repo = makeRepo();
  const reader = new LocalRepo(repo);
  const seen = { cut: 0, whole: 0, reasons: new Set<string>() };
  let previous: Record<string, string> = {};
  await fc.assert(
    fc.asyncProperty(shape, fc.subarray(['overlay-tag', 'base-replicas', 'component-label', 'patch', 'root-transform', 'other-app', 'shared-literal'] as Plan[], { minLength: 1 }), async (s, plan) => {
      const good = { tag: '1.0.0', replicas: 2, team: 'blue', patch: 2, root: 'eu', other: '1.0.0', literal: 'eu-west-1' };
      const bad = {
        tag: plan.includes('overlay-tag') ? '2.0.0' : good.tag,
        replicas: plan.includes('base-replicas') ? 5 : good.replicas,
        team: plan.includes('component-label') ? 'red' : good.team,
        patch: plan.includes('patch') ? 7 : good.patch,
        root: plan.includes('root-transform') ? 'us' : good.root,
        other: plan.includes('other-app') ? '3.0.0' : good.other,
        literal: plan.includes('shared-literal') ? 'us-east-1' : good.literal,
      };
      // each case is two commits over the last case's files: the last-known-good, then the bad change
      const lkgFiles = files(s, good);
      const clear = Object.fromEntries(Object.keys(previous).filter((p) => !(p in lkgFiles)).map((p) => [p, null]));
      const lkg = commit(repo, { ...clear, ...lkgFiles }, 'good');
      const badFiles = files(s, bad);
      const head = commit(repo, badFiles, 'bad');
      previous = badFiles;
      // the revert: the changed files back to the last-known-good
      const enc = (x: string) => new TextEncoder().encode(x);
      const changes: FileChange[] = Object.keys(badFiles).filter((p) => badFiles[p] !== lkgFiles[p]).map((p) => ({ path: p, mode: '100644', content: enc(lkgFiles[p]!) }));
      const contents = new Map<string, Uint8Array>();
      const { blobOid } = await import('../src/revert/threeway.ts');
      for (const c of changes) if ('content' in c) contents.set(blobOid(c.content, 'sha1'), c.content);

      const k = kustomization(s);
      const modeler = modelTarget({ reader, target: { name: 't', paths: ['apps/app-0/overlays/prod/'], resources: [{ apiVersion: 'kustomize.toolkit.fluxcd.io/v1', kind: 'Kustomization', namespace: 'flux-system', name: 'apps' }] }, observed: [{ object: k, source: 'test' }] });
      const [mh, ma, ml] = await Promise.all([modeler.at(head), modeler.withChange(head, changes), modeler.at(lkg)]);
      const specs = { head: mh.render!, after: ma.render!, lastKnownGood: ml.render! };
      const renders = await renderRevisions({ reader, renderer: r, files: changes, lastKnownGood: lkg, specs });
      const what = `${JSON.stringify(s)} plan ${plan.join(',')}: ${renders.note}`;
      // the listing root's own transformers (a generated root has none), Flux's namePrefix
      const across = (s.root === 'listing' && s.rootAcross !== 'none') || s.fluxSpec === 'namePrefix';
      if (!renders.cut) {
        seen.whole++;
        seen.reasons.add(renders.note.replace(/\(.*$/, ''));
        // an across feature, Flux's namePrefix or a rename outside the cut that the target refers to: the fallback is expected
        t.true(across || (s.root === 'listing' && s.shared), `fell back without a reason to: ${what}`);
        return;
      }
      seen.cut++;
      t.false(across, `cut although the root reaches across: ${what}`);
      for (const [name, rendered, spec] of [['head', renders.head, specs.head], ['after', renders.after, specs.after], ['last-known-good', renders.lastKnownGood, specs.lastKnownGood]] as const) {
        if ('failed' in rendered) throw new Error(`${name}: the cut failed: ${rendered.failed} (${what})`);
        const whole = documents(await wholeOutput(r, reader, spec, contents));
        const cut = documents(rendered.output);
        t.true(cut.has('apps/Deployment prod/app-0') || cut.has('apps/Deployment prod/flux-app-0') || [...cut.keys()].some((key) => key.startsWith('apps/Deployment')), `${name}: the cut renders the target's Deployment: ${[...cut.keys()].join(', ')} (${what})`);
        for (const [key, doc] of cut) t.is(doc, whole.get(key) ?? `(${key} is not in the whole build)`, `${name}: ${key} as the whole build prints it (${what})`);
      }
    }),
    { numRuns: Number(process.env.LASTGOOD_CUT_RUNS ?? 24), seed: Number(process.env.LASTGOOD_CUT_SEED ?? 33), endOnFailure: true },
  );
  t.log(`cut renders: ${seen.cut}, whole: ${seen.whole} (${[...seen.reasons].join('; ')})`);
  t.true(seen.cut > 0, 'some cases were rendered cut');
});
