import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import test from 'ava';
import fc from 'fast-check';
import jsYaml from 'js-yaml';
import { LocalRepo } from '../src/deliver/local/index.ts';
import { locate, revertInput } from '../src/history/locate.ts';
import { modelTarget } from '../src/model/index.ts';
import type { KubeObject } from '../src/observe/types.ts';
import { planRevert } from '../src/revert/threeway.ts';
import { verifyPlan } from '../src/verify/model-check.ts';
import { renderCheck } from '../src/verify/render-check.ts';
import { detectRenderer } from '../src/verify/render.ts';
import { addAndCommit, makeRepo, withCheckout } from './support/git.ts';
import { runSync } from './support/spawner.ts';
import { evidenceOf } from './support/history.ts';
import { kustomization } from './support/objects.ts';

/**
 * Issue 18 property: over random kustomize trees and histories (a base and a prod overlay of one
 * application, a sibling application, one Flux Kustomization building them all; commits that bump
 * images in the base, in the overlay's `images:` or through an inline JSON6902 patch, scale, edit a
 * ConfigMap, add a file, touch the sibling or nothing Flux reads), with a random applied..attempted
 * range and random target paths, every plan lastgood accepts (model check, then render check)
 * makes the target's rendered objects — rendered independently here with `kubectl kustomize
 * --load-restrictor LoadRestrictionsNone` on real checkouts, as Flux builds — equal to the
 * last-known-good's in every field it changes, and changes at least one; the test fails if it
 * holds only by refusing.
 */

const renderer = detectRenderer();
const IMAGE = 'ghcr.io/acme/shop';

type Op =
  | { kind: 'base-image'; tag: string }
  | { kind: 'overlay-image'; tag: string | null }
  | { kind: 'patch-image'; tag: string | null }
  | { kind: 'replicas'; n: number }
  | { kind: 'config'; level: string }
  | { kind: 'extra'; on: boolean }
  | { kind: 'sibling'; n: number }
  | { kind: 'docs'; n: number };

const tag = fc.constantFrom('1.0.0', '1.1.0', '2.0.0', '2.1.0-rc1');
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('base-image' as const), tag }),
  fc.record({ kind: fc.constant('overlay-image' as const), tag: fc.option(tag, { nil: null }) }),
  fc.record({ kind: fc.constant('patch-image' as const), tag: fc.option(tag, { nil: null }) }),
  fc.record({ kind: fc.constant('replicas' as const), n: fc.integer({ min: 1, max: 4 }) }),
  fc.record({ kind: fc.constant('config' as const), level: fc.constantFrom('info', 'debug', 'warn') }),
  fc.record({ kind: fc.constant('extra' as const), on: fc.boolean() }),
  fc.record({ kind: fc.constant('sibling' as const), n: fc.integer({ min: 1, max: 9 }) }),
  fc.record({ kind: fc.constant('docs' as const), n: fc.integer({ min: 1, max: 9 }) }),
);

interface State {
  baseImage: string;
  overlayImage: string | null;
  patchImage: string | null;
  replicas: number;
  level: string;
  extra: boolean;
  sibling: number;
  docs: number;
}

function files(s: State): Record<string, string | null> {
  const overlay = [
    'apiVersion: kustomize.config.k8s.io/v1beta1',
    'kind: Kustomization',
    'resources:',
    '  - ../base',
    ...(s.extra ? ['  - pdb.yaml'] : []),
    ...(s.overlayImage ? ['images:', `  - name: ${IMAGE}`, `    newTag: ${s.overlayImage}`] : []),
    'patches:',
    '  - target: { kind: Deployment, name: shop }',
    '    patch: |-',
    '      - op: replace',
    '        path: /spec/replicas',
    `        value: ${s.replicas}`,
    ...(s.patchImage ? ['      - op: replace', '        path: /spec/template/spec/containers/0/image', `        value: ${IMAGE}:${s.patchImage}`] : []),
  ].join('\n') + '\n';
  return {
    'clusters/prod/kustomization.yaml': 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../../apps/shop/prod\n  - ../../apps/redis\n',
    'apps/shop/base/kustomization.yaml': 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - deploy.yaml\n  - config.yaml\n',
    'apps/shop/base/deploy.yaml': `apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: shop\n  namespace: prod\nspec:\n  replicas: 1\n  selector:\n    matchLabels: { app: shop }\n  template:\n    metadata:\n      labels: { app: shop }\n    spec:\n      containers:\n        - name: app\n          image: ${IMAGE}:${s.baseImage}\n`,
    'apps/shop/base/config.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shop\n  namespace: prod\ndata:\n  level: ${s.level}\n`,
    'apps/shop/prod/kustomization.yaml': overlay,
    'apps/shop/prod/pdb.yaml': s.extra ? 'apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: shop\n  namespace: prod\nspec:\n  maxUnavailable: 1\n' : null,
    'apps/redis/kustomization.yaml': 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - cm.yaml\n',
    'apps/redis/cm.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: redis\n  namespace: prod\ndata:\n  maxmemory: "${s.sibling}00mb"\n`,
    'docs/README.md': `notes ${s.docs}\n`,
  };
}

function apply(s: State, o: Op): State {
  switch (o.kind) {
    case 'base-image': return { ...s, baseImage: o.tag };
    case 'overlay-image': return { ...s, overlayImage: o.tag };
    case 'patch-image': return { ...s, patchImage: o.tag };
    case 'replicas': return { ...s, replicas: o.n };
    case 'config': return { ...s, level: o.level };
    case 'extra': return { ...s, extra: o.on };
    case 'sibling': return { ...s, sibling: o.n };
    case 'docs': return { ...s, docs: o.n };
  }
}

function write(dir: string, fs: Record<string, string | null>): void {
  for (const [p, content] of Object.entries(fs)) {
    const full = path.join(dir, p);
    if (content === null) rmSync(full, { force: true });
    else {
      mkdirSync(path.dirname(full), { recursive: true });
      writeFileSync(full, content);
    }
  }
}

let clock = Date.parse('2026-11-02T10:00:00Z') / 1000;
function commitAll(dir: string, message: string): string {
  clock += 60;
  const env = { ...process.env, GIT_AUTHOR_DATE: `${clock} +0000`, GIT_COMMITTER_DATE: `${clock} +0000`, GIT_AUTHOR_NAME: 'Dev', GIT_AUTHOR_EMAIL: 'd@x', GIT_COMMITTER_NAME: 'Dev', GIT_COMMITTER_EMAIL: 'd@x' };
  return addAndCommit(dir, ['-q', '--allow-empty', '-m', message], env);
}

/** The objects Flux builds for clusters/prod, rendered from a plain checkout (independent of lastgood's renderer). */
function renderCheckout(dir: string): Map<string, unknown> {
  const out = runSync('kubectl', ['kustomize', '--load-restrictor', 'LoadRestrictionsNone', path.join(dir, 'clusters/prod')]);
  const objects = new Map<string, unknown>();
  for (const d of jsYaml.loadAll(out) as Array<Record<string, any>>) {
    if (!d) continue;
    objects.set(`${d.kind}/${d.metadata?.namespace ?? ''}/${d.metadata?.name}`, d);
  }
  return objects;
}

/** Every leaf as path → JSON value. */
function leaves(v: unknown, prefix = '', out = new Map<string, string>()): Map<string, string> {
  if (v && typeof v === 'object') {
    const entries = Array.isArray(v) ? v.map((x, i) => [String(i), x] as const) : Object.entries(v);
    if (entries.length === 0) out.set(prefix, JSON.stringify(v));
    for (const [k, x] of entries) leaves(x, `${prefix}/${k}`, out);
  } else out.set(prefix, JSON.stringify(v));
  return out;
}

function flatten(objects: Map<string, unknown>): Map<string, string> {
  const out = new Map<string, string>();
  for (const [key, o] of objects) for (const [p, v] of leaves(o)) out.set(`${key}${p}`, v);
  return out;
}

test('an accepted plan makes every field it changes in the rendered target equal to the last-known-good\'s, and changes at least one', async (t) => {
  const r = await renderer;
  if ('unavailable' in r) {
    const line = `render property test NOT RUN: ${r.unavailable}`;
    if (process.env.LASTGOOD_REQUIRE_KUSTOMIZE === '1') t.fail(line);
    else t.log(line);
    t.pass();
    return;
  }
  let accepted = 0;
  let refused = 0;
  const refusals = new Map<string, number>();
  await fc.assert(
    fc.asyncProperty(
      fc.array(op, { minLength: 3, maxLength: 7 }),
      fc.integer({ min: 0, max: 100 }),
      fc.integer({ min: 0, max: 100 }),
      fc.constantFrom(['apps/shop/prod/'], ['apps/shop/'], ['apps/', 'clusters/']).map((p) => [...p]),
      async (ops, a, b, paths) => {
        const dir = makeRepo();
        let state: State = { baseImage: '1.0.0', overlayImage: null, patchImage: null, replicas: 2, level: 'info', extra: false, sibling: 1, docs: 1 };
        write(dir, files(state));
        const commits = [commitAll(dir, 'initial')];
        for (const [i, o] of ops.entries()) {
          state = apply(state, o);
          write(dir, files(state));
          commits.push(commitAll(dir, `${i}: ${o.kind}`));
        }
        const applied = commits[a % (commits.length - 1)]!;
        const attempted = commits[(a % (commits.length - 1)) + 1 + (b % (commits.length - 1 - (a % (commits.length - 1))))]!;
        const k = kustomization({ attempted: `main@sha1:${attempted}`, applied: `main@sha1:${applied}`, ready: 'False' }) as KubeObject;
        k.spec = { ...k.spec, path: './clusters/prod' };
        const resources = [{ apiVersion: 'kustomize.toolkit.fluxcd.io/v1', kind: 'Kustomization', namespace: 'flux-system', name: 'apps' }, { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'prod', name: 'shop' }];
        const evidence = evidenceOf([k], resources.slice(0, 1));
        const reader = new LocalRepo(dir);
        const model = modelTarget({ reader, target: { name: 'shop', paths, resources }, observed: [{ object: k, source: 'test' }] });
        const head = await reader.head('main');
        let reason: string | undefined;
        try {
          const located = await locate({ reader, branch: 'main', head, paths, evidence, model });
          const plan = await planRevert(reader, { head, ...revertInput(located, paths) });
          const v = await verifyPlan({ modeler: model, head, lastKnownGood: located.lastKnownGood, files: plan.files, paths, evidence, how: located.how, bad: located.bad });
          if (v.refused) reason = `model: ${v.refused.split(':')[0]}`;
          else {
            const rc = await renderCheck({ reader, renderer: r, models: v.models, files: plan.files, lastKnownGood: located.lastKnownGood, engineObject: k });
            if ('refused' in rc) reason = `render: ${rc.refused.split(':')[0]}`;
            else {
              // the independent oracle: checkouts of head, the last-known-good, and head with the plan written
              const render = (rev: string, change?: typeof plan.files) => withCheckout(dir, rev, change, (wt) => flatten(renderCheckout(wt)));
              const [h, l, after] = [render(head), render(located.lastKnownGood), render(head, plan.files)];
              const changed = [...new Set([...h.keys(), ...after.keys()])].filter((p) => h.get(p) !== after.get(p));
              t.true(changed.length > 0, `accepted a plan that changes nothing the engine renders (${ops.map((o) => o.kind).join(', ')})`);
              for (const p of changed) t.is(after.get(p), l.get(p), `${p}: the revert sets ${after.get(p)}, the last-known-good had ${l.get(p)}`);
              accepted++;
              return;
            }
          }
        } catch (error) {
          if ((error as Error).name !== 'RevertImpossible') throw error;
          reason = `locate: ${(error as Error).message.replace(/[0-9a-f]{12,40}/g, '…').slice(0, 90)}`;
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
        refused++;
        refusals.set(reason!, (refusals.get(reason!) ?? 0) + 1);
      },
    ),
    { numRuns: 30, seed: Number(process.env.LASTGOOD_PROPERTY_SEED ?? 18) },
  );
  t.log(`accepted ${accepted}, refused ${refused}: ${[...refusals].map(([k, n]) => `${n}× ${k}`).join('; ')}`);
  t.true(accepted >= 10, `the property must not hold only by refusing (accepted ${accepted} of 30)`);
});
