import test from 'ava';
import { everyBackend, evidenceOf, History } from './support/history.ts';
import { deployment, kustomization } from './support/objects.ts';

/**
 * Issue 34, class 5: every transformer that can set an image is a setter, so the commit that set
 * the failing image is found and reverted: an inline JSON 6902 patch (as a JSON array and as YAML)
 * in a kustomization's `patches:`, and a `replacements:` block copying the image from a ConfigMap.
 * No range from the engine (it applied the bad revision): the image alone tells the commit, and
 * `git revert` is the content oracle (everyBackend).
 */

const IMAGE = 'ghcr.io/stefanprodan/podinfo';
const K = { apiVersion: 'kustomize.toolkit.fluxcd.io/v1', kind: 'Kustomization', namespace: 'flux-system', name: 'apps' };
const D = { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'prod', name: 'podinfo' };
const deploy = 'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: podinfo\n  namespace: prod\nspec:\n  template:\n    spec:\n      containers:\n        - name: podinfo\n          image: ghcr.io/stefanprodan/podinfo:6.5.0\n';
const json6902 = (tag: string) => `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - deploy.yaml
patches:
  - target:
      kind: Deployment
      name: podinfo
    patch: |-
      [{"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "${IMAGE}:${tag}"}]
`;
const yaml6902 = (tag: string) => `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - deploy.yaml
patches:
  - target:
      kind: Deployment
      name: podinfo
    patch: |-
      - op: replace
        path: /spec/template/spec/containers/0/image
        value: ${IMAGE}:${tag}
`;
const replacements = `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - deploy.yaml
  - release.yaml
replacements:
  - source: { kind: ConfigMap, name: release, fieldPath: data.image }
    targets:
      - select: { kind: Deployment, name: podinfo }
        fieldPaths: [spec.template.spec.containers.0.image]
`;
const release = (tag: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: release\n  namespace: prod\ndata:\n  image: ${IMAGE}:${tag}\n`;

const cases: Array<[string, Record<string, string>, (tag: string) => Record<string, string>]> = [
  ['an inline JSON 6902 patch (a JSON array)', { 'apps/prod/kustomization.yaml': json6902('6.5.3') }, (tag) => ({ 'apps/prod/kustomization.yaml': json6902(tag) })],
  ['an inline JSON 6902 patch (YAML)', { 'apps/prod/kustomization.yaml': yaml6902('6.5.3') }, (tag) => ({ 'apps/prod/kustomization.yaml': yaml6902(tag) })],
  ['replacements from a ConfigMap', { 'apps/prod/kustomization.yaml': replacements, 'apps/prod/release.yaml': release('6.5.3') }, (tag) => ({ 'apps/prod/release.yaml': release(tag) })],
];

for (const [name, first, bumpTo] of cases) {
  test(`an image set by ${name}: the commit that set it is bad and reverted, a later commit beside it kept`, async (t) => {
    const h = new History();
    h.commit({ 'apps/prod/deploy.yaml': deploy, ...first }, 'initial');
    const good = h.commit({ 'README.md': 'x\n' }, 'docs');
    const bump = h.commit(bumpTo('6.5.4'), 'podinfo 6.5.4');
    const later = h.commit({ 'apps/prod/notes.txt': 'on call: @platform\n' }, 'notes');
    const k = kustomization({ attempted: `main@sha1:${later}`, applied: `main@sha1:${later}`, ready: 'True' });
    k.spec = { ...k.spec, path: './apps/prod' };
    const d = deployment({ image: `${IMAGE}:6.5.4`, state: 'deadline' });
    const o = await everyBackend(t, h, ['apps/prod/'], evidenceOf([k, d], [K, D]), { resources: [K, D], objects: [k, d] });
    t.falsy(o.refused, o.refused);
    t.deepEqual(o.located!.bad.map((c) => c.oid), [bump]);
    t.is(o.located!.lastKnownGood, good);
    t.regex(o.located!.explanation, new RegExp(`image ${IMAGE.replace(/[./]/g, '\\$&')}:6\\.5\\.4 of Deployment prod/podinfo: introduced by ${bump.slice(0, 12)}`));
    t.is(o.after!.get('apps/prod/notes.txt')?.toString(), 'on call: @platform\n', 'the later commit is kept');
  });
}
