import test from 'ava';
import { asText, everyBackend, evidenceOf, History, type EngineSetup } from './support/history.ts';
import { deployment, kustomization } from './support/objects.ts';
import { deploy, IMAGE } from './support/podinfo-manifests.ts';

/**
 * Issue 34, as the part of the build that reaches the target answers it (issue 33's cut model):
 * what the engine reads for a target is what builds the target's objects, not every file under
 * the engine object's spec.path. Histories built with native git, through every backend,
 * asserting the bad commits, the last-known-good and the bytes planned.
 */

const K = { apiVersion: 'kustomize.toolkit.fluxcd.io/v1', kind: 'Kustomization', namespace: 'flux-system', name: 'apps' };
const D = { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'prod', name: 'podinfo' };

const kz = (resources: string[], extra = '') => `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
${resources.map((r) => `  - ${r}`).join('\n')}
${extra}`;
const overlay = (ns: string, tag: string, extra = '') => `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: ${ns}
resources:
  - ../../base
images:
  - name: ${IMAGE}
    newTag: ${tag}
${extra}`;

function flux(path: string, attempted: string, applied: string) {
  const k = kustomization({ attempted: `main@sha1:${attempted}`, applied: `main@sha1:${applied}`, ready: 'False' });
  k.spec = { ...k.spec, path };
  return k;
}

test('a rebase-merged release lands prod image, prod config and a staging change in one sync: the two prod commits are reverted together, the staging one is kept (it builds nothing of prod)', async (t) => {
  const h = new History();
  h.commit({
    'apps/podinfo/base/kustomization.yaml': kz(['deploy.yaml']),
    'apps/podinfo/base/deploy.yaml': deploy('6.9.0'),
    'apps/podinfo/overlays/prod/kustomization.yaml': overlay('prod', '6.9.3'),
    'apps/podinfo/overlays/staging/kustomization.yaml': overlay('staging', '6.9.3'),
  }, 'initial');
  const applied = h.commit({ 'README.md': 'gitops\n' }, 'docs');
  const r1 = h.commit({ 'apps/podinfo/overlays/prod/kustomization.yaml': overlay('prod', '7.0.0') }, 'prod: 7.0.0');
  const r2 = h.commit({ 'apps/podinfo/overlays/prod/kustomization.yaml': overlay('prod', '7.0.0', 'commonLabels:\n  cache: redis\n') }, 'prod: the config 7.0.0 needs');
  const r3 = h.commit({ 'apps/podinfo/overlays/staging/kustomization.yaml': overlay('staging', '7.1.0-rc.1') }, 'staging: 7.1.0-rc.1');
  const k = flux('./apps', r3, applied);
  const evidence = evidenceOf([k, deployment({ image: `${IMAGE}:7.0.0`, state: 'deadline' })], [K, D]);
  const setup: EngineSetup = { resources: [K, D], objects: [k] };
  const o = await everyBackend(t, h, ['apps/podinfo/overlays/prod/'], evidence, setup);
  t.falsy(o.refused, o.refused);
  t.deepEqual(o.located!.bad.map((c) => c.oid).sort(), [r1, r2].sort(), 'both prod commits of the sync, not the staging one');
  t.is(o.located!.lastKnownGood, applied);
  t.deepEqual(Object.keys(asText(o.after)), ['apps/podinfo/overlays/prod/kustomization.yaml']);
  t.is(o.after!.get('apps/podinfo/overlays/prod/kustomization.yaml')!.toString(), overlay('prod', '6.9.3'), 'the prod overlay as before the release');
  t.false(o.located!.bad.some((c) => c.oid === r3), 'the staging commit is kept');
});
