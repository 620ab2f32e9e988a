import test from 'ava';
import fc from 'fast-check';
import { argoGlob } from '../src/model/argocd.ts';
import { imageSetters, isRec, mergeValues, setParameter } from '../src/model/values.ts';

/**
 * Helm values as the engines combine them (src/model/values.ts): MergeMaps (fluxcd/pkg
 * chartutil/merge.go), `--set` parameters (Helm pkg/strvals), and which layer an image is
 * attributed to; Argo CD's directory include/exclude globs (gobwas/glob without separators).
 */

type Rec = Record<string, unknown>;
const key = fc.constantFrom('image', 'tag', 'repository', 'a', 'b', 'c');
const leaf = fc.oneof(fc.string({ maxLength: 4 }), fc.integer(), fc.boolean(), fc.constant(null), fc.array(fc.integer(), { maxLength: 2 }));
const tree: fc.Arbitrary<Rec> = fc.letrec((tie) => ({
  node: fc.dictionary(key, fc.oneof({ depthSize: 'small' }, leaf, tie('node')), { maxKeys: 4 }),
})).node as fc.Arbitrary<Rec>;

/** Every leaf (a value that is not a mapping) with its path. */
function leaves(v: Rec, prefix: string[] = []): Array<[string[], unknown]> {
  return Object.entries(v).flatMap(([k, x]) => (isRec(x) && Object.keys(x).length > 0 ? leaves(x, [...prefix, k]) : [[[...prefix, k], x] as [string[], unknown]]));
}
const at = (v: unknown, path: string[]): unknown => path.reduce<unknown>((o, k) => (isRec(o) ? o[k] : undefined), v);

test('MergeMaps: every leaf of the later layer is in the result; a leaf of the earlier one stays unless the later one sets that path or one above it', (t) => {
  fc.assert(
    fc.property(tree, tree, (a, b) => {
      const m = mergeValues(a, b);
      for (const [p, x] of leaves(b)) if (!isRec(x)) t.deepEqual(at(m, p), x);
      for (const [p, x] of leaves(a)) {
        const overridden = p.some((_, i) => {
          const over = at(b, p.slice(0, i + 1));
          return over !== undefined && (!isRec(over) || i === p.length - 1);
        });
        if (!overridden && !isRec(x)) t.deepEqual(at(m, p), x);
      }
    }),
  );
});

test('--set parameters: dotted paths, list indexes, escaped dots, and strvals\' typing unless forced to a string', (t) => {
  const v: Rec = {};
  setParameter(v, 'image.tag', '7.0.0');
  setParameter(v, 'replicaCount', '3');
  setParameter(v, 'podAnnotations.prometheus\\.io/scrape', 'true');
  setParameter(v, 'env[1].value', 'x');
  setParameter(v, 'image.pullPolicy', '0755', true);
  t.deepEqual(v, { image: { tag: '7.0.0', pullPolicy: '0755' }, replicaCount: 3, podAnnotations: { 'prometheus.io/scrape': true }, env: [undefined, { value: 'x' }] });
});

test('an image is attributed to the layer from which on the merged values name it; an overridden image is set by no one', (t) => {
  const setters = imageSetters([
    { where: 'chart/values.yaml', inRepo: true, values: { image: { repository: 'ghcr.io/acme/api', tag: '1.0.0' }, sidecar: { image: 'docker.io/envoyproxy/envoy:v1.30.0' } } },
    { where: 'envs/prod.yaml', inRepo: true, values: { replicaCount: 3 } },
    { where: 'Application argocd/api spec.source.helm.parameters', inRepo: false, values: { image: { tag: '1.1.0' } } },
  ]);
  t.deepEqual(setters.map((s) => [s.where, s.inRepo, `${s.image!.repository}:${s.image!.tag}`]).sort(), [
    ['Application argocd/api spec.source.helm.parameters', false, 'acme/api:1.1.0'],
    ['chart/values.yaml', true, 'envoyproxy/envoy:v1.30.0'],
  ]);
});

test('Argo CD directory globs: "*" crosses folders, "?" one character, classes and alternatives', (t) => {
  t.true(argoGlob('*.yaml').test('sub/deploy.yaml'));
  t.true(argoGlob('{deploy,svc}.yaml').test('svc.yaml'));
  t.false(argoGlob('{deploy,svc}.yaml').test('draft.yaml'));
  t.true(argoGlob('d?ploy.[yj]*').test('deploy.json'));
  t.false(argoGlob('[!d]*.yaml').test('deploy.yaml'));
  t.false(argoGlob('a.yaml').test('aXyaml'), 'a dot is a dot');
});
