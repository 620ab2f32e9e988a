import test from 'ava';
import { asText, everyBackend, evidenceOf, History, type EngineSetup } from './support/history.ts';
import { deployment, kustomization } from './support/objects.ts';
import { configMap, deploy, IMAGE } from './support/podinfo-manifests.ts';

/**
 * Issue 18: lastgood decides from what Flux actually builds for a target (src/model), not from
 * which commits touched the configured paths. Histories built with native git, run through every
 * backend (local, GitHub emulator, git over HTTP), asserting the bad commits, the last-known-good,
 * the refusal reason or the exact bytes planned (with `git revert` as the oracle).
 */

const K = { apiVersion: 'kustomize.toolkit.fluxcd.io/v1', kind: 'Kustomization', namespace: 'flux-system', name: 'apps' };
const D = { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'prod', name: 'podinfo' };

const kz = (resources: string[], extra = '') => `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
${resources.map((r) => `  - ${r}`).join('\n')}
${extra}`;

/** The Flux Kustomization as the cluster reports it, with its spec (what lastgood models). */
function flux(o: { path: string; attempted: string; applied?: string; ready?: 'True' | 'False'; spec?: Record<string, unknown> }) {
  const k = kustomization({ attempted: `main@sha1:${o.attempted}`, ...(o.applied ? { applied: `main@sha1:${o.applied}` } : {}), ready: o.ready ?? 'False' });
  k.spec = { ...k.spec, path: o.path, ...o.spec };
  return k;
}

function setup(objects: object[]): EngineSetup {
  return { resources: [K, D], objects };
}

test('a bad commit that moves the target\'s folder and bumps the image is refused: the revert of the paths would change nothing Flux builds', async (t) => {
  const h = new History();
  h.commit({
    'clusters/prod/kustomization.yaml': kz(['../../apps/podinfo/prod', '../../apps/redis']),
    'apps/podinfo/prod/kustomization.yaml': kz(['deploy.yaml']),
    'apps/podinfo/prod/deploy.yaml': deploy('6.9.3'),
    'apps/redis/kustomization.yaml': kz(['cm.yaml']),
    'apps/redis/cm.yaml': configMap('redis'),
  }, 'initial');
  const applied = h.commit({ 'README.md': 'gitops\n' }, 'docs');
  // the move: the folder is renamed, the parent kustomization follows it, and the image is bumped on the way
  const bad = h.commit({
    'apps/podinfo/prod/kustomization.yaml': null,
    'apps/podinfo/prod/deploy.yaml': null,
    'apps/shop/prod/kustomization.yaml': kz(['deploy.yaml']),
    'apps/shop/prod/deploy.yaml': deploy('7.0.0'),
    'clusters/prod/kustomization.yaml': kz(['../../apps/shop/prod', '../../apps/redis']),
  }, 'move podinfo to apps/shop and release 7.0.0');
  const k = flux({ path: './clusters/prod', attempted: bad, applied });
  const evidence = evidenceOf([k, deployment({ image: `${IMAGE}:7.0.0`, state: 'deadline' })], [K, D]);
  const o = await everyBackend(t, h, ['apps/podinfo/prod/'], evidence, setup([k]));
  t.truthy(o.refused, 'refused, not "handled"');
  t.regex(o.refused!, /the bad change is in files that Flux Kustomization flux-system\/apps \(spec\.path \.\/clusters\/prod\) reads for this target outside its paths/);
  t.regex(o.refused!, /apps\/shop\/prod\/deploy\.yaml/);
  t.regex(o.refused!, /clusters\/prod\/kustomization\.yaml/);
  t.regex(o.refused!, new RegExp(`by ${bad.slice(0, 12)} "move podinfo to apps/shop and release 7\\.0\\.0"`));
  t.regex(o.refused!, /no longer reads the target's paths at all: what it builds for the target moved to apps\/shop\/prod\//);
  t.regex(o.refused!, /add their folder to the target's paths/);
});

test('the same move with the target\'s paths covering both folders: reverted, and the revert restores what Flux builds', async (t) => {
  const h = new History();
  h.commit({
    'clusters/prod/kustomization.yaml': kz(['../../apps/podinfo/prod']),
    'apps/podinfo/prod/kustomization.yaml': kz(['deploy.yaml']),
    'apps/podinfo/prod/deploy.yaml': deploy('6.9.3'),
  }, 'initial');
  const applied = h.commit({ 'README.md': 'gitops\n' }, 'docs');
  const bad = h.commit({
    'apps/podinfo/prod/kustomization.yaml': null,
    'apps/podinfo/prod/deploy.yaml': null,
    'apps/shop/prod/kustomization.yaml': kz(['deploy.yaml']),
    'apps/shop/prod/deploy.yaml': deploy('7.0.0'),
    'clusters/prod/kustomization.yaml': kz(['../../apps/shop/prod']),
  }, 'move podinfo to apps/shop and release 7.0.0');
  const k = flux({ path: './clusters/prod', attempted: bad, applied });
  const evidence = evidenceOf([k, deployment({ image: `${IMAGE}:7.0.0`, state: 'deadline' })], [K, D]);
  const o = await everyBackend(t, h, ['apps/', 'clusters/prod/'], evidence, setup([k]));
  t.falsy(o.refused, o.refused);
  t.deepEqual(o.located!.bad.map((c) => c.oid), [bad]);
  t.is(o.located!.lastKnownGood, applied);
  t.deepEqual(Object.keys(asText(o.after)).filter((p) => !p.startsWith('clusters')), ['apps/podinfo/prod/deploy.yaml', 'apps/podinfo/prod/kustomization.yaml']);
  t.is(o.after!.get('apps/podinfo/prod/deploy.yaml')!.toString(), deploy('6.9.3'));
  t.is(o.after!.get('clusters/prod/kustomization.yaml')!.toString(), kz(['../../apps/podinfo/prod']));
  t.true(o.verification!.changed.length > 0);
});

for (const kind of ['JSON6902', 'strategic-merge'] as const) {
  test(`an image set by an inline ${kind} patch in the kustomization is found and reverted (it is what kustomize renders)`, async (t) => {
    const patch = (tag: string) =>
      kind === 'JSON6902'
        ? `patches:
  - target: { kind: Deployment, name: podinfo }
    patch: |-
      - op: replace
        path: /spec/template/spec/containers/0/image
        value: ${IMAGE}:${tag}
`
        : `patches:
  - patch: |-
      apiVersion: apps/v1
      kind: Deployment
      metadata:
        name: podinfo
      spec:
        template:
          spec:
            containers:
              - name: app
                image: ${IMAGE}:${tag}
`;
    const h = new History();
    h.commit({
      'apps/podinfo/base/kustomization.yaml': kz(['deploy.yaml']),
      'apps/podinfo/base/deploy.yaml': deploy('6.9.0'),
      'apps/podinfo/prod/kustomization.yaml': kz(['../base'], patch('6.9.3')),
      'apps/podinfo/prod/hpa.yaml': 'kind: HorizontalPodAutoscaler\n',
    }, 'initial');
    const bad = h.commit({ 'apps/podinfo/prod/kustomization.yaml': kz(['../base'], patch('7.0.0')) }, 'podinfo 7.0.0 in prod');
    const later = h.commit({ 'apps/redis/cm.yaml': configMap('redis') }, 'redis');
    const k = flux({ path: './apps/podinfo/prod', attempted: later, applied: later, ready: 'True' });
    // the engine applied it; the workload fails on the image the patch set: no range, the image names the commit
    const evidence = evidenceOf([k, deployment({ image: `${IMAGE}:7.0.0`, state: 'deadline' })], [K, D]);
    const o = await everyBackend(t, h, ['apps/podinfo/prod/'], evidence, setup([k]));
    t.falsy(o.refused, o.refused);
    t.deepEqual(o.located!.bad.map((c) => c.oid), [bad]);
    t.regex(o.located!.explanation, new RegExp(`image ghcr\\.io/stefanprodan/podinfo:7\\.0\\.0 of Deployment prod/podinfo: introduced by ${bad.slice(0, 12)}`));
    t.is(o.after!.get('apps/podinfo/prod/kustomization.yaml')!.toString(), kz(['../base'], patch('6.9.3')));
    t.deepEqual(o.verification!.changed.map((d) => d.path), ['apps/podinfo/prod/kustomization.yaml']);
  });
}

test('an image set in a shared base the target reads from outside its paths: refused naming the file and the commit', async (t) => {
  const h = new History();
  h.commit({
    'apps/podinfo/base/kustomization.yaml': kz(['deploy.yaml']),
    'apps/podinfo/base/deploy.yaml': deploy('6.9.3'),
    'apps/podinfo/prod/kustomization.yaml': kz(['../base']),
  }, 'initial');
  const applied = h.commit({ 'README.md': 'x\n' }, 'docs');
  const bad = h.commit({ 'apps/podinfo/base/deploy.yaml': deploy('7.0.0') }, 'base: podinfo 7.0.0');
  const k = flux({ path: './apps/podinfo/prod', attempted: bad, applied });
  const evidence = evidenceOf([k, deployment({ image: `${IMAGE}:7.0.0`, state: 'deadline' })], [K, D]);
  const o = await everyBackend(t, h, ['apps/podinfo/prod/'], evidence, setup([k]));
  t.regex(o.refused!, /reads for this target outside its paths \(apps\/podinfo\/prod\/\): apps\/podinfo\/base\/deploy\.yaml/);
  t.regex(o.refused!, new RegExp(`by ${bad.slice(0, 12)} "base: podinfo 7\\.0\\.0"`));
});

test('symlinks under Flux: a change to a symlink in the target\'s folder changes nothing Flux builds (it drops symlinks), and is said so', async (t) => {
  const h = new History();
  h.commit({
    'apps/podinfo/prod/deploy.yaml': deploy('6.9.3'),
    'shared/a.yaml': configMap('a'),
    'shared/b.yaml': configMap('b'),
  }, 'initial');
  const { symlinkSync } = await import('node:fs');
  const path = await import('node:path');
  symlinkSync('../../../shared/a.yaml', path.join(h.dir, 'apps/podinfo/prod/config.yaml'));
  const applied = h.commit({}, 'link the shared config');
  const fs = await import('node:fs');
  fs.rmSync(path.join(h.dir, 'apps/podinfo/prod/config.yaml'));
  symlinkSync('../../../shared/b.yaml', path.join(h.dir, 'apps/podinfo/prod/config.yaml'));
  const relinked = h.commit({}, 'point the config at b');
  const k = flux({ path: './apps/podinfo/prod', attempted: relinked, applied });
  const evidence = evidenceOf([k], [K]);
  const o = await everyBackend(t, h, ['apps/podinfo/prod/'], evidence, { resources: [K], objects: [k] });
  t.regex(o.refused!, /between them nothing that Flux Kustomization flux-system\/apps \(spec\.path \.\/apps\/podinfo\/prod\) reads for this target changed: apps\/podinfo\/prod\/config\.yaml changed in the target's paths, but it is a symlink, which Flux leaves out of its source/);
  t.notRegex(o.refused!, /goes through a symlink/, 'not refused as bad input');

  // the same symlink change shipped with an image bump: the commit is bad, and the revert restores both (the link too)
  symlinkSync('../../../shared/a.yaml', path.join(h.dir, 'apps/podinfo/prod/other.yaml'));
  fs.rmSync(path.join(h.dir, 'apps/podinfo/prod/config.yaml'));
  symlinkSync('../../../shared/a.yaml', path.join(h.dir, 'apps/podinfo/prod/config.yaml'));
  const both = h.commit({ 'apps/podinfo/prod/deploy.yaml': deploy('7.0.0') }, 'podinfo 7.0.0, config back to a, another link');
  const k2 = flux({ path: './apps/podinfo/prod', attempted: both, applied: relinked });
  const o2 = await everyBackend(t, h, ['apps/podinfo/prod/'], evidenceOf([k2, deployment({ image: `${IMAGE}:7.0.0`, state: 'deadline' })], [K, D]), setup([k2]));
  t.falsy(o2.refused, o2.refused);
  t.deepEqual(o2.located!.bad.map((c) => c.oid), [both]);
  t.is(o2.after!.get('apps/podinfo/prod/deploy.yaml')!.toString(), deploy('6.9.3'));
  t.is(o2.after!.get('apps/podinfo/prod/config.yaml')!.toString(), '../../../shared/b.yaml', 'the link points at b again');
  t.false(o2.after!.has('apps/podinfo/prod/other.yaml'));
});

test('a sibling application added to the parent kustomization in the same sync is not the target\'s change', async (t) => {
  const h = new History();
  h.commit({
    'clusters/prod/kustomization.yaml': kz(['../../apps/podinfo']),
    'apps/podinfo/kustomization.yaml': kz(['deploy.yaml']),
    'apps/podinfo/deploy.yaml': deploy('6.9.3'),
  }, 'initial');
  const applied = h.commit({ 'README.md': 'x\n' }, 'docs');
  const bad = h.commit({ 'apps/podinfo/deploy.yaml': deploy('7.0.0') }, 'podinfo 7.0.0');
  const attempted = h.commit({
    'clusters/prod/kustomization.yaml': kz(['../../apps/podinfo', '../../apps/redis']),
    'apps/redis/kustomization.yaml': kz(['cm.yaml']),
    'apps/redis/cm.yaml': configMap('redis'),
  }, 'add redis');
  const k = flux({ path: './clusters/prod', attempted, applied });
  const evidence = evidenceOf([k, deployment({ image: `${IMAGE}:7.0.0`, state: 'deadline' })], [K, D]);
  const o = await everyBackend(t, h, ['apps/podinfo/'], evidence, setup([k]));
  t.falsy(o.refused, o.refused);
  t.deepEqual(o.located!.bad.map((c) => c.oid), [bad], 'redis is another application: its commit is kept');
  t.is(o.after!.get('apps/podinfo/deploy.yaml')!.toString(), deploy('6.9.3'));
});

test('a rebase-merged release split in two commits (image, then the config it needs) shipped in one sync: both are reverted together', async (t) => {
  const h = new History();
  h.commit({ 'apps/podinfo/deploy.yaml': deploy('6.9.3'), 'apps/podinfo/config.yaml': configMap('info') }, 'initial');
  const applied = h.commit({ 'README.md': 'x\n' }, 'docs');
  const image = h.commit({ 'apps/podinfo/deploy.yaml': deploy('7.0.0') }, 'podinfo 7.0.0 (#41)');
  const config = h.commit({ 'apps/podinfo/config.yaml': configMap('v7-format') }, 'podinfo: the config format 7.x needs (#41)');
  const k = flux({ path: './apps', attempted: config, applied });
  const evidence = evidenceOf([k, deployment({ image: `${IMAGE}:7.0.0`, state: 'deadline' })], [K, D]);
  const o = await everyBackend(t, h, ['apps/podinfo/'], evidence, setup([k]));
  t.falsy(o.refused, o.refused);
  t.deepEqual(o.located!.bad.map((c) => c.oid), [config, image], 'never split what shipped in one sync');
  t.is(o.located!.lastKnownGood, applied);
  t.is(o.after!.get('apps/podinfo/deploy.yaml')!.toString(), deploy('6.9.3'));
  t.is(o.after!.get('apps/podinfo/config.yaml')!.toString(), configMap('info'), 'not 6.9.3 with the 7.x config: a combination that never ran');
  t.regex(o.located!.explanation, /they shipped in one sync and are reverted together/);
});

test('a human commit and an image-bot commit shipped in one sync: both are reverted, and the explanation says why', async (t) => {
  const h = new History();
  const values = (tag: string, replicas: number) => `apiVersion: apps/v1
kind: Deployment
metadata:
  name: podinfo
  namespace: prod
spec:
  replicas: ${replicas}
  template:
    spec:
      containers:
        - name: app
          image: ${IMAGE}:${tag} # {"$imagepolicy": "flux-system:podinfo"}
`;
  h.commit({ 'apps/podinfo/deploy.yaml': values('6.9.3', 2) }, 'initial');
  const applied = h.commit({ 'README.md': 'x\n' }, 'docs');
  const bot = h.commit({ 'apps/podinfo/deploy.yaml': values('7.0.0', 2) }, '[ci skip] Update image ghcr.io/stefanprodan/podinfo to 7.0.0');
  const human = h.commit({ 'apps/podinfo/deploy.yaml': values('7.0.0', 3) }, 'podinfo: three replicas');
  const k = flux({ path: './apps', attempted: human, applied });
  const evidence = evidenceOf([k, deployment({ image: `${IMAGE}:7.0.0`, state: 'deadline' })], [K, D]);
  const o = await everyBackend(t, h, ['apps/podinfo/'], evidence, setup([k]));
  t.falsy(o.refused, o.refused);
  t.deepEqual(o.located!.bad.map((c) => c.oid), [human, bot]);
  t.is(o.after!.get('apps/podinfo/deploy.yaml')!.toString(), values('6.9.3', 2));
  t.regex(o.located!.explanation, /2 commits in between changed what the engine reads for the target .*they shipped in one sync and are reverted together/);
});

test('a merge made with -s ours changes nothing and is never named; the real change of the range is', async (t) => {
  const h = new History();
  const root = h.commit({ 'apps/podinfo/deploy.yaml': deploy('6.9.3'), 'apps/podinfo/config.yaml': configMap('info') }, 'initial');
  const applied = h.commit({ 'README.md': 'x\n' }, 'docs');
  h.branch('experiment', root);
  h.commit({ 'apps/podinfo/deploy.yaml': deploy('8.0.0-rc1') }, 'try 8.0.0-rc1');
  h.branch('main');
  h.git('merge', '-q', '-s', 'ours', '--no-edit', '-m', 'Merge branch experiment (ours: keep main)', 'experiment');
  const ours = h.rev('HEAD');
  const bad = h.commit({ 'apps/podinfo/config.yaml': configMap('debug') }, 'podinfo: debug logs');
  const k = flux({ path: './apps', attempted: bad, applied });
  const o = await everyBackend(t, h, ['apps/podinfo/'], evidenceOf([k], [K]), { resources: [K], objects: [k] });
  t.falsy(o.refused, o.refused);
  t.deepEqual(o.located!.bad.map((c) => c.oid), [bad]);
  t.false(o.located!.bad.some((c) => c.oid === ours), 'the no-op merge is not in the trailers');
  t.is(o.after!.get('apps/podinfo/config.yaml')!.toString(), configMap('info'));
  t.is(o.after!.get('apps/podinfo/deploy.yaml')!.toString(), deploy('6.9.3'));
});

test('.sourceignore: a change to a file Flux leaves out of its artifact is not a change of the target', async (t) => {
  const h = new History();
  h.commit({ 'apps/podinfo/deploy.yaml': deploy('6.9.3'), 'apps/podinfo/notes/deploy-draft.yaml': deploy('6.9.3'), '.sourceignore': 'apps/podinfo/notes/\n' }, 'initial');
  const applied = h.commit({ 'README.md': 'x\n' }, 'docs');
  const draft = h.commit({ 'apps/podinfo/notes/deploy-draft.yaml': deploy('7.0.0') }, 'draft 7.0.0 notes');
  const k = flux({ path: './apps', attempted: draft, applied });
  const o = await everyBackend(t, h, ['apps/podinfo/'], evidenceOf([k], [K]), { resources: [K], objects: [k] });
  t.regex(o.refused!, /nothing that Flux Kustomization flux-system\/apps \(spec\.path \.\/apps\) reads for this target changed/);
});

test('a commit of the range that changed only files the engine does not read for the target is kept, files and all', async (t) => {
  const h = new History();
  h.commit({ 'apps/podinfo/kustomization.yaml': kz(['deploy.yaml']), 'apps/podinfo/deploy.yaml': deploy('6.9.3'), 'apps/podinfo/NOTES.md': 'v6\n', 'apps/podinfo/next/values.yaml': 'tag: 7.1.0\n' }, 'initial');
  const applied = h.commit({ 'README.md': 'x\n' }, 'docs');
  const bad = h.commit({ 'apps/podinfo/deploy.yaml': deploy('7.0.0') }, 'podinfo 7.0.0');
  const notes = h.commit({ 'apps/podinfo/NOTES.md': 'v7\n', 'apps/podinfo/next/values.yaml': 'tag: 7.2.0\n' }, 'notes and the next release\'s draft values');
  const k = flux({ path: './apps/podinfo', attempted: notes, applied });
  const evidence = evidenceOf([k, deployment({ image: `${IMAGE}:7.0.0`, state: 'deadline' })], [K, D]);
  const o = await everyBackend(t, h, ['apps/podinfo/'], evidence, setup([k]));
  t.falsy(o.refused, o.refused);
  t.deepEqual(o.located!.bad.map((c) => c.oid), [bad]);
  t.deepEqual(o.located!.later.map((c) => c.oid), [notes], 'listed as kept');
  t.is(o.after!.get('apps/podinfo/deploy.yaml')!.toString(), deploy('6.9.3'));
  t.is(o.after!.get('apps/podinfo/NOTES.md')!.toString(), 'v7\n', 'and kept indeed');
  t.is(o.after!.get('apps/podinfo/next/values.yaml')!.toString(), 'tag: 7.2.0\n');
});
