import { rmSync } from 'node:fs';
import path from 'node:path';
import test from 'ava';
import jsYaml from 'js-yaml';
import { LocalRepo } from '../src/deliver/local/index.ts';
import { RevertImpossible } from '../src/errors.ts';
import { locate, revertInput } from '../src/history/locate.ts';
import { modelTarget } from '../src/model/index.ts';
import type { KubeObject } from '../src/observe/types.ts';
import type { FileChange } from '../src/repo/types.ts';
import { blobOid, planRevert } from '../src/revert/threeway.ts';
import { verifyPlan } from '../src/verify/model-check.ts';
import { renderCheck } from '../src/verify/render-check.ts';
import type { Renderer } from '../src/verify/render.ts';
import { withCheckout } from './support/git.ts';
import { everyBackend, evidenceOf, gitRevertOracle, History, locateAndPlan, type EngineSetup } from './support/history.ts';
import { canary, deployment, helmRelease, kustomization } from './support/objects.ts';
import { testRenderer } from './support/renderer.ts';
import { runSync } from './support/spawner.ts';

/**
 * Issue 34: every refusal text is checked by a test that the condition it states holds. Each test
 * builds a git history (native git) where the condition really holds, runs lastgood's locate (and
 * the plan, the model check and the render check where the text comes from them), asserts the
 * refusal by its distinctive words, and then checks the condition itself independently of
 * lastgood: with git (the commit is the root, the revision is not in the repository or not on the
 * branch, nothing differs between two trees, which commit changed which file) or with the
 * machine's kustomize on real checkouts (what the build renders after the revert).
 *
 * Covered here:
 * - src/history/locate.ts: "cannot tell which commit is bad" (applied = attempted; no revision and
 *   no image; no revision and an image nothing sets), "is the first commit of the repository" (no
 *   range, and a range selected by the image), "attempts revision …, which is not in the
 *   repository", "is not on branch", "reports applied revision …, which is not in the repository",
 *   "cannot be bounded: … not an ancestor" (also in history-shapes.test.ts), "nothing in the
 *   repository changed between them" (an empty commit; a commit and its revert), "cannot be tied
 *   to a commit between them";
 * - src/revert/threeway.ts: "lastgood never reverts its own reverts" (planRevert's `bad` input:
 *   locate and `revert --bad` refuse such a commit earlier, with their own words), "it would be
 *   both a file and a folder";
 * - src/verify/model-check.ts: "the revert changes no file … reads", "'s build would fail",
 *   "would be set to …, but the last-known-good … set", the chart "would be pinned to …, but the
 *   last-known-good pinned", "the values of HelmRelease … would not be the last-known-good's";
 * - src/verify/render-check.ts: "the build would fail where it builds at the head and at the
 *   last-known-good", "would set N field(s) to values the last-known-good never had".
 * The other refusal texts of these files are asserted elsewhere (history-shapes, history-signals,
 * model-*.test.ts, render-*.test.ts, revert-threeway).
 *
 * Writing these found three texts that were false in some histories, now fixed and tested: "cannot
 * be tied to a commit" where a merged branch set a value and set it back (here), "nothing in the
 * repository changed" where the paths model had narrowed to one overlay (model-overlays), and a
 * chart "pinned to @, …" where a values-only HelmRelease patch sat beside the release
 * (model-own-manifest); and a range revert that replaced a later commit's file with a folder
 * (here: refused as a file/folder conflict).
 */

const IMAGE = 'ghcr.io/acme/shop';
const K = { apiVersion: 'kustomize.toolkit.fluxcd.io/v1', kind: 'Kustomization', namespace: 'flux-system', name: 'apps' };
const D = { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'prod', name: 'shop' };
const HR = { apiVersion: 'helm.toolkit.fluxcd.io/v2', kind: 'HelmRelease', namespace: 'prod', name: 'podinfo' };
const APP = 'apps/shop/';

const deploy = (tag: string) => `apiVersion: apps/v1
kind: Deployment
metadata:
  name: shop
  namespace: prod
spec:
  selector:
    matchLabels: { app: shop }
  template:
    metadata:
      labels: { app: shop }
    spec:
      containers:
        - name: app
          image: ${IMAGE}:${tag}
`;
const configMap = (name: string, level: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  namespace: prod\ndata:\n  level: ${level}\n`;
const kz = (resources: string[], extra = '') => `apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n${resources.map((r) => `  - ${r}`).join('\n')}\n${extra}`;

/** A Flux Kustomization as the cluster reports it (applied left out: it reports none). */
function flux(o: { attempted: string; applied?: string; ready?: 'True' | 'False'; path?: string }) {
  const k = kustomization({ attempted: `main@sha1:${o.attempted}`, ...(o.applied ? { applied: `main@sha1:${o.applied}` } : {}), ready: o.ready ?? 'False' });
  k.spec = { ...k.spec, path: o.path ?? './apps/shop' };
  return k;
}
const failingShop = (tag: string) => deployment({ name: 'shop', image: `${IMAGE}:${tag}`, state: 'deadline' });
const engine = (objects: object[], resources = [K]): EngineSetup => ({ resources, objects });
const local = (h: History) => new LocalRepo(h.dir);

/** True when git answers the command with exit 0 (a question git answers by its exit code). */
function gitSays(h: History, ...args: string[]): boolean {
  try {
    h.git(...args);
    return true;
  } catch {
    return false;
  }
}
const inRepository = (h: History, sha: string) => gitSays(h, 'cat-file', '-e', `${sha}^{commit}`);
const short = (sha: string) => sha.slice(0, 12);

/** The files under `dir` that a plan changes: those whose bytes after it differ from the head's, or that it adds or deletes. */
function written(h: History, head: string, after: Map<string, Buffer>, dir: string): string[] {
  const before = new Map(h.git('ls-tree', '-r', head, '--', dir).split('\n').filter(Boolean).map((l) => [l.split('\t')[1]!, l.split(/\s+/)[2]!] as const));
  return [...new Set([...before.keys(), ...after.keys()])].filter((p) => before.get(p) !== (after.has(p) ? blobOid(after.get(p)!) : undefined)).sort();
}

/** A plain app: its kustomization and its Deployment at 1.0.0, built by the Flux Kustomization at ./apps/shop. */
function shopRepo(): { h: History; applied: string } {
  const h = new History();
  h.commit({ [`${APP}kustomization.yaml`]: kz(['deploy.yaml']), [`${APP}deploy.yaml`]: deploy('1.0.0') }, 'shop 1.0.0');
  return { h, applied: h.commit({ 'README.md': 'gitops\n' }, 'docs') };
}

/** The same app applied through clusters/prod (the Flux Kustomization's spec.path ./clusters/prod). */
function clusterRepo(): { h: History; applied: string } {
  const h = new History();
  h.commit({ 'clusters/prod/kustomization.yaml': kz(['../../apps/shop']), [`${APP}kustomization.yaml`]: kz(['deploy.yaml']), [`${APP}deploy.yaml`]: deploy('1.0.0') }, 'shop 1.0.0');
  return { h, applied: h.commit({ 'README.md': 'gitops\n' }, 'docs') };
}

/**
 * What the machine's kustomize builds from a checkout of `rev` with `change` written (as Flux
 * builds: no load restrictions), or its error: the oracle for what the cluster would run.
 */
function kustomizeBuild(r: Renderer, h: History, rev: string, change: readonly FileChange[] | undefined, root: string): { objects: Array<Record<string, any>> } | { failed: string } {
  return withCheckout(h.dir, rev, change, (wt) => {
    try {
      const out = runSync(r.command[0]!, [...r.command.slice(1), path.join(wt, root), '--load-restrictor', 'LoadRestrictionsNone']);
      return { objects: (jsYaml.loadAll(out) as Array<Record<string, any>>).filter(Boolean) };
    } catch (error) {
      return { failed: (error as Error).message };
    }
  });
}
const objectsOf = (b: ReturnType<typeof kustomizeBuild>) => {
  if ('failed' in b) throw new Error(`the build fails: ${b.failed}`);
  return b.objects;
};
const imageOf = (b: ReturnType<typeof kustomizeBuild>) => objectsOf(b).find((o) => o.kind === 'Deployment')!.spec.template.spec.containers[0].image as string;

/** locate, plan, the model check and (given a renderer) the render check, called as the engine calls them. */
async function pipeline(h: History, paths: string[], objects: object[], resources: EngineSetup['resources'], renderer?: Renderer) {
  const reader = local(h);
  const head = await reader.head('main');
  const evidence = evidenceOf(objects, resources);
  const model = modelTarget({ reader, target: { name: 'shop', paths, resources }, observed: objects.map((o) => ({ object: o as KubeObject, source: 'test' })) });
  const located = await locate({ reader, branch: 'main', head, paths, evidence, model });
  const plan = await planRevert(reader, { head, ...revertInput(located, paths) });
  const verification = await verifyPlan({ modeler: model, head, lastKnownGood: located.lastKnownGood, files: plan.files, paths, evidence, how: located.how, bad: located.bad });
  const engineObject = objects.find((o) => (o as KubeObject).kind === 'Kustomization') as KubeObject | undefined;
  const rendered = renderer ? await renderCheck({ reader, renderer, models: verification.models, files: plan.files, lastKnownGood: located.lastKnownGood, ...(engineObject ? { engineObject } : {}) }) : undefined;
  return { head, located, plan, verification, rendered };
}

// ---- src/history/locate.ts ---------------------------------------------------------------------

test('locate: applied = attempted and no failing object names what fails: "cannot tell which commit is bad", and nothing lies between', async (t) => {
  const { h } = shopRepo();
  const synced = h.commit({ [`${APP}notes.yaml`]: 'owner: shop-team\n' }, 'shop: notes');
  const k = flux({ attempted: synced, applied: synced });
  // only the engine object; then a workload whose image nothing in the repository sets
  for (const objects of [[k], [k, failingShop('9.9.9')]]) {
    const o = await locateAndPlan(local(h), [APP], evidenceOf(objects), 'main', engine(objects, [K, D]));
    t.regex(o.refused!, new RegExp(`^cannot tell which commit is bad: Kustomization flux-system/apps reports the failing revision ${short(synced)} as applied \\(applied = attempted: nothing lies between\\), and no failing object names what fails in what the engine reads for the target \\(a new image or chart version\\)`));
    t.falsy(o.located, 'no commit named');
  }
  // the condition: the engine reports one revision as both, no commit lies between them, and the failing image is set nowhere in the repository
  const [e] = evidenceOf([k]);
  t.is(e!.attempted!.sha, synced);
  t.is(e!.lastSucceeded!.sha, synced);
  t.is(h.git('rev-list', '--count', `${synced}..${synced}`), '0');
  t.false(gitSays(h, 'grep', '-q', `${IMAGE}:9.9.9`, synced), 'the image 9.9.9 is in no file at the failing revision');
});

test('locate: applied = attempted and the failing image was set beyond the search limit: the refusal says so (not that nothing names what fails)', async (t) => {
  const { h } = shopRepo();
  const bump = h.commit({ [`${APP}deploy.yaml`]: deploy('1.1.0') }, 'shop 1.1.0');
  for (let i = 0; i < 4; i++) h.commit({ [`${APP}notes-${i}.md`]: `${i}\n` }, `notes ${i}`);
  const head = h.git('rev-parse', 'main');
  const k = flux({ attempted: head, applied: head, ready: 'True', path: './apps/shop' });
  const d = failingShop('1.1.0');
  const reader = local(h);
  const model = modelTarget({ reader, target: { name: 'shop', paths: [APP], resources: [K, D] }, observed: [k, d].map((o) => ({ object: o as unknown as KubeObject, source: 'test' })) });
  const error = await t.throwsAsync(locate({ reader, branch: 'main', head, paths: [APP], evidence: evidenceOf([k, d], [K, D]), model, searchLimit: 2 }));
  t.true(error instanceof RevertImpossible);
  t.regex(error!.message, /^cannot tell which commit is bad: .*, and what the failing object names was set more than 2 commits back \(the search stops there\)$/);
  // the condition: the commit that set the image lies more than 2 commits behind the head
  t.is(Number(h.git('rev-list', '--count', `${bump}..${head}`)), 4);
});

test('locate: no object reports a revision and none names an image: "no object of the target reports a git revision, and no failing workload names an image"', async (t) => {
  const { h } = shopRepo();
  const c = canary({ name: 'shop', phase: 'Failed' });
  const evidence = evidenceOf([c]);
  const o = await locateAndPlan(local(h), [APP], evidence);
  t.regex(o.refused!, /^cannot tell which commit is bad: no object of the target reports a git revision, and no failing workload names an image add the Flux Kustomization \/ Argo CD Application that applies the target, or the failing Deployment, to the target's resources/);
  t.falsy(o.located);
  // the condition: the evidence holds a failing object, and none of it carries a git revision or an image
  t.true(evidence.some((e) => e.state === 'failed'));
  t.true(evidence.every((e) => !e.attempted?.sha && !e.lastSucceeded?.sha));
  t.true(evidence.every((e) => !(e.attempted?.images?.length) && !(e.failingImages?.length)));
});

test('locate: no object reports a revision and the failing image has no tag: the refusal says the image names no version (not that no workload names an image)', async (t) => {
  const { h } = shopRepo();
  const d = deployment({ name: 'shop', image: IMAGE, state: 'deadline' });
  const evidence = evidenceOf([d]);
  const o = await locateAndPlan(local(h), [APP], evidence);
  t.regex(o.refused!, /^cannot tell which commit is bad: no object of the target reports a git revision, and no failing workload names an image with a tag or digest \(ghcr\.io\/acme\/shop: no version a commit could have set\)/);
  t.falsy(o.located);
  // the condition: the failing workload names an image, without a tag or digest
  t.deepEqual(evidence.flatMap((e) => e.attempted?.images ?? []), [IMAGE]);
});

test('locate: no object reports a revision and the failing image is set by nothing the engine reads: "no object of the target reports a git revision", naming the image', async (t) => {
  const { h } = shopRepo();
  h.commit({ [`${APP}deploy.yaml`]: deploy('1.1.0') }, 'shop 1.1.0');
  const evidence = evidenceOf([failingShop('2.0.0')]);
  const o = await locateAndPlan(local(h), [APP], evidence);
  t.regex(o.refused!, /^cannot tell which commit is bad: no object of the target reports a git revision, and image ghcr\.io\/acme\/shop:2\.0\.0 of Deployment prod\/shop: not set by anything the engine reads for the target at the failing revision/);
  t.falsy(o.located);
  t.true(evidence.every((e) => !e.attempted?.sha && !e.lastSucceeded?.sha), 'no object reports a git revision');
  t.false(gitSays(h, 'grep', '-q', 'shop:2.0.0', 'HEAD'), 'nothing in the repository sets 2.0.0');
});

test('locate: the failing image came with the root commit: "the bad commit … is the first commit of the repository" (no range, and a range selected by the image)', async (t) => {
  const h = new History();
  const root = h.commit({ [`${APP}kustomization.yaml`]: kz(['deploy.yaml']), [`${APP}deploy.yaml`]: deploy('1.0.0') }, 'shop 1.0.0');
  const docs = h.commit({ 'README.md': 'gitops\n' }, 'docs');
  const d = failingShop('1.0.0');
  // no engine object: the image alone names the commit (fromCandidates)
  const none = await locateAndPlan(local(h), [APP], evidenceOf([d]));
  // the engine reports the attempted revision only: the image selects where the range begins (selectedRange)
  const k = flux({ attempted: docs });
  const selected = await locateAndPlan(local(h), [APP], evidenceOf([k, d]), 'main', engine([k, d], [K, D]));
  for (const o of [none, selected]) {
    t.is(o.refused, `the bad commit ${root} is the first commit of the repository: there is nothing to go back to `);
    t.falsy(o.located);
  }
  // the condition: the named commit is the repository's only root, and it has no parent
  t.is(h.git('rev-list', '--max-parents=0', 'HEAD'), root);
  t.false(gitSays(h, 'rev-parse', '--verify', '-q', `${root}^`));
  t.true(gitSays(h, 'grep', '-q', `${IMAGE}:1.0.0`, root), 'the root commit set the failing image');
});

test('locate: the engine attempts a revision the repository does not hold: "attempts revision …, which is not in the repository"', async (t) => {
  const { h, applied } = shopRepo();
  h.commit({ [`${APP}deploy.yaml`]: deploy('1.1.0') }, 'shop 1.1.0');
  const ghost = 'c0ffee'.padEnd(40, '5');
  const o = await locateAndPlan(local(h), [APP], evidenceOf([flux({ attempted: ghost, applied })]));
  t.is(o.refused, `Kustomization flux-system/apps attempts revision main@sha1:${ghost}, which is not in the repository `);
  t.falsy(o.located);
  t.false(inRepository(h, ghost), 'git has no such commit');
  t.true(inRepository(h, applied));
});

test('locate: the attempted revision is on another branch: "the attempted revision … is not on branch main"', async (t) => {
  const { h, applied } = shopRepo();
  h.branch('feature', applied);
  const feature = h.commit({ [`${APP}deploy.yaml`]: deploy('2.0.0') }, 'feature: shop 2.0.0');
  h.branch('main');
  h.commit({ [`${APP}deploy.yaml`]: deploy('1.1.0') }, 'shop 1.1.0');
  const o = await locateAndPlan(local(h), [APP], evidenceOf([flux({ attempted: feature, applied })]));
  t.is(o.refused, `the attempted revision ${feature} (Kustomization flux-system/apps) is not on branch main `);
  t.falsy(o.located);
  // the condition: the commit exists, and main does not contain it
  t.true(inRepository(h, feature));
  t.false(gitSays(h, 'merge-base', '--is-ancestor', feature, 'main'));
  t.deepEqual(h.git('branch', '--format=%(refname:short)', '--contains', feature).split('\n'), ['feature']);
});

test('locate: the engine reports an applied revision the repository does not hold: "reports applied revision …, which is not in the repository: the range of bad commits cannot be bounded"', async (t) => {
  const { h } = shopRepo();
  const attempted = h.commit({ [`${APP}deploy.yaml`]: deploy('1.1.0') }, 'shop 1.1.0');
  const ghost = 'dead'.padEnd(40, '7');
  const o = await locateAndPlan(local(h), [APP], evidenceOf([flux({ attempted, applied: ghost })]));
  t.is(o.refused, `Kustomization flux-system/apps reports applied revision main@sha1:${ghost}, which is not in the repository: the range of bad commits cannot be bounded `);
  t.falsy(o.located);
  t.false(inRepository(h, ghost));
  t.true(inRepository(h, attempted));
});

test('locate: the applied revision is not an ancestor of the attempted one: "the range of bad commits cannot be bounded: … not an ancestor of the attempted"', async (t) => {
  const { h, applied } = shopRepo();
  // what the cluster applied was force-pushed away
  h.branch('gone', applied);
  const orphaned = h.commit({ [`${APP}deploy.yaml`]: deploy('1.0.1') }, 'shop 1.0.1');
  h.branch('main');
  const attempted = h.commit({ [`${APP}deploy.yaml`]: deploy('1.1.0') }, 'shop 1.1.0');
  h.git('branch', '-D', 'gone');
  const o = await locateAndPlan(local(h), [APP], evidenceOf([flux({ attempted, applied: orphaned })]));
  t.regex(o.refused!, new RegExp(`^the range of bad commits cannot be bounded: Kustomization flux-system/apps applied ${short(orphaned)}, which is not an ancestor of the attempted ${short(attempted)} \\(a force-push, or another branch\\)`));
  t.falsy(o.located);
  t.true(inRepository(h, orphaned) && inRepository(h, attempted), 'both commits exist');
  t.false(gitSays(h, 'merge-base', '--is-ancestor', orphaned, attempted));
});

test('locate: the range holds commits but no change: "nothing in the repository changed between them: the failure does not come from a commit" (an empty commit; a commit and its revert), on every backend', async (t) => {
  const { h, applied } = shopRepo();
  const empty = h.commit({}, 'ci: retrigger the pipeline');
  const e1 = await everyBackend(t, h, [APP], evidenceOf([flux({ attempted: empty, applied })]));
  t.is(e1.refused, `Kustomization flux-system/apps attempted ${short(empty)} after applying ${short(applied)}, but nothing in the repository changed between them: the failure does not come from a commit (the cluster, a registry, a dependency) `);
  const bump = h.commit({ [`${APP}deploy.yaml`]: deploy('1.1.0') }, 'shop 1.1.0');
  const back = h.revert(bump);
  const e2 = await locateAndPlan(local(h), [APP], evidenceOf([flux({ attempted: back, applied })]));
  t.regex(e2.refused!, /, but nothing in the repository changed between them; 2 commits in between changed it and changed it back: the failure does not come from a commit \(the cluster, a registry, a dependency\)/);
  // the condition: commits lie between, and the two trees are the same (not a file of the repository differs)
  for (const attempted of [empty, back]) {
    t.true(Number(h.git('rev-list', '--count', `${applied}..${attempted}`)) > 0);
    t.is(h.git('rev-parse', `${applied}^{tree}`), h.git('rev-parse', `${attempted}^{tree}`));
    t.is(h.git('diff', '--name-only', applied, attempted), '');
  }
  t.deepEqual(h.git('rev-list', `${applied}..${back}`, '--', APP).split('\n'), [back, bump], 'two commits changed the app and changed it back');
});

test('locate: a file edited while the build did not read it, then read by another commit: "the change to … cannot be tied to a commit between them"', async (t) => {
  const h = new History();
  h.commit({ [`${APP}kustomization.yaml`]: kz(['deploy.yaml']), [`${APP}deploy.yaml`]: deploy('1.0.0'), [`${APP}config.yaml`]: configMap('shop', 'info') }, 'shop 1.0.0, config not built yet');
  const applied = h.commit({ 'README.md': 'gitops\n' }, 'docs');
  const edit = h.commit({ [`${APP}config.yaml`]: configMap('shop', 'debug') }, 'config: debug');
  const read = h.commit({ [`${APP}kustomization.yaml`]: kz(['deploy.yaml', 'config.yaml']) }, 'shop: build the config');
  const k = flux({ attempted: read, applied });
  const o = await locateAndPlan(local(h), [APP], evidenceOf([k]), 'main', engine([k]));
  t.is(o.refused, `Kustomization flux-system/apps attempted ${short(read)} after applying ${short(applied)}: the change to ${APP}config.yaml cannot be tied to a commit between them; a person must look `);
  t.falsy(o.located);
  // the condition: what the cluster gets from config.yaml (level: debug, now built) is no one commit's change:
  // the only commit that changed the file did so while no kustomization listed it, and the one that listed it left it as it was
  t.deepEqual(h.git('rev-list', `${applied}..${read}`, '--', `${APP}config.yaml`).split('\n'), [edit]);
  t.notRegex(h.git('show', `${edit}:${APP}kustomization.yaml`), /config\.yaml/, 'the build did not read config.yaml when it changed');
  t.regex(h.git('show', `${read}:${APP}kustomization.yaml`), /config\.yaml/);
  t.is(h.git('diff', '--name-only', edit, read), `${APP}kustomization.yaml`, 'the commit that made the build read it did not change it');
});

// ---- src/revert/threeway.ts --------------------------------------------------------------------

test('locate: a branch that set the image and set it back, merged after a mainline commit made the same change: the mainline commit is bad (the branch\'s change and its undo cancel each other, not the mainline\'s)', async (t) => {
  const h = new History();
  h.commit({ [`${APP}deploy.yaml`]: deploy('1.0.0') }, 'shop 1.0.0');
  const applied = h.commit({ 'README.md': 'x\n' }, 'docs');
  h.branch('topic', applied);
  h.commit({ [`${APP}deploy.yaml`]: deploy('1.1.0') }, 'topic: try 1.1.0');
  h.commit({ [`${APP}deploy.yaml`]: deploy('1.0.0') }, 'topic: back to 1.0.0');
  h.git('checkout', '-q', 'main');
  const a1 = h.commit({ [`${APP}deploy.yaml`]: deploy('1.1.0') }, 'shop 1.1.0');
  const merged = h.merge('topic');
  const k = flux({ attempted: merged, applied, path: './apps/shop' });
  const o = await everyBackend(t, h, [APP], evidenceOf([k, failingShop('1.1.0')], [K, D]), engine([k, failingShop('1.1.0')], [K, D]));
  t.falsy(o.refused, o.refused);
  t.deepEqual(o.located!.bad.map((c) => c.oid), [a1]);
  t.is(o.after!.get(`${APP}deploy.yaml`)!.toString(), deploy('1.0.0'));
  // the condition: along the mainline, only a1 changed the file (the merge kept its first parent's 1.1.0)
  t.is(h.git('log', '--first-parent', '--format=%H', `${applied}..${merged}`, '--', `${APP}deploy.yaml`), a1);
});

test('plan: a lastgood revert named as bad: "commit … is a lastgood revert (Lastgood-Target: …): lastgood never reverts its own reverts"', async (t) => {
  const { h } = shopRepo();
  const bad = h.commit({ [`${APP}deploy.yaml`]: deploy('1.1.0') }, 'shop 1.1.0');
  const revert = h.commit({ [`${APP}deploy.yaml`]: deploy('1.0.0') }, `Revert shop-prod to ${short(bad)}\n\nLastgood-Target: shop-prod\nLastgood-Reverts: ${bad}\n`);
  const error = await t.throwsAsync(planRevert(local(h), { head: revert, bad: [revert], paths: [APP] }), { instanceOf: RevertImpossible });
  t.is(error.message, `commit ${short(revert)} is a lastgood revert (Lastgood-Target: shop-prod): lastgood never reverts its own reverts`);
  // the condition: the named commit carries lastgood's trailer for that target
  t.is(h.git('log', '-1', '--format=%(trailers:key=Lastgood-Target,valueonly)', revert), 'shop-prod');
  // locate, planRevert's only caller here, never names it: the engine reporting it as failing is refused before any plan
  const o = await locateAndPlan(local(h), [APP], evidenceOf([flux({ attempted: revert, applied: bad })]));
  t.regex(o.refused!, new RegExp(`^the revert itself failed: ${revert} is a lastgood revert`));
});

test('plan: the revert restores a file under a folder whose name is a file at the head: "revert conflicts in …: it would be both a file and a folder"', async (t) => {
  const h = new History();
  h.commit({ [`${APP}deploy.yaml`]: deploy('1.0.0'), [`${APP}conf/level.yaml`]: 'level: info\n' }, 'shop 1.0.0');
  const bad = h.commit({ [`${APP}deploy.yaml`]: deploy('1.1.0'), [`${APP}conf/level.yaml`]: null }, 'shop 1.1.0, conf folder dropped');
  rmSync(path.join(h.dir, APP, 'conf'), { recursive: true, force: true });
  h.commit({ [`${APP}conf`]: 'level: debug\n' }, 'conf as one file');
  const o = await locateAndPlan(local(h), [APP], evidenceOf([failingShop('1.1.0')]));
  t.deepEqual(o.located!.bad.map((c) => c.oid), [bad]);
  t.is(o.planConflict, `revert conflicts in ${APP}conf: it would be both a file and a folder`);
  // the condition: apps/shop/conf is a file at the head, and undoing the bad commit restores apps/shop/conf/level.yaml
  t.is(h.git('cat-file', '-t', `HEAD:${APP}conf`), 'blob');
  t.is(h.git('diff', '--name-status', bad, `${bad}^`, '--', `${APP}conf`), `A\t${APP}conf/level.yaml`);
  t.true(gitRevertOracle(h.dir, o.located!, [APP]).conflict, 'git revert of the same commit does not apply either');
});

test('plan: the same file/folder conflict when the bad commit is found as a range (whose plan lists only the bad commits\' files): refused, and the later commit\'s file is not replaced by a folder', async (t) => {
  const h = new History();
  h.commit({ [`${APP}deploy.yaml`]: deploy('1.0.0'), [`${APP}conf/level.yaml`]: 'level: info\n' }, 'shop 1.0.0');
  const applied = h.commit({ 'README.md': 'x\n' }, 'docs');
  const bad = h.commit({ [`${APP}deploy.yaml`]: deploy('1.1.0'), [`${APP}conf/level.yaml`]: null }, 'shop 1.1.0, conf folder dropped');
  rmSync(path.join(h.dir, APP, 'conf'), { recursive: true, force: true });
  h.commit({ [`${APP}conf`]: 'level: debug\n' }, 'conf as one file');
  const k = flux({ attempted: bad, applied, path: './apps/shop' });
  const o = await locateAndPlan(local(h), [APP], evidenceOf([k, failingShop('1.1.0')], [K, D]));
  t.deepEqual(o.located!.bad.map((c) => c.oid), [bad]);
  t.is(o.located!.revert.kind, 'range');
  t.is(o.planConflict, `revert conflicts in ${APP}conf: it would be both a file and a folder (a file at the head)`);
  // the condition: the later commit's apps/shop/conf is a file at the head, and the range's revert re-creates apps/shop/conf/level.yaml
  t.is(h.git('cat-file', '-t', `HEAD:${APP}conf`), 'blob');
  t.is(h.git('diff', '--name-status', bad, applied, '--', `${APP}conf`), `A\t${APP}conf/level.yaml`);
});

// ---- src/verify/model-check.ts -----------------------------------------------------------------

test('verify: the app moved to another folder after the bad commit: "the revert changes no file … reads for this target", and the failing version keeps running', async (t) => {
  const { h, applied } = clusterRepo();
  const bad = h.commit({ [`${APP}deploy.yaml`]: deploy('1.1.0') }, 'shop 1.1.0');
  const moved = h.commit({ 'apps/shop-v2/kustomization.yaml': kz(['deploy.yaml']), 'apps/shop-v2/deploy.yaml': deploy('1.1.0'), 'clusters/prod/kustomization.yaml': kz(['../../apps/shop-v2']) }, 'shop moves to apps/shop-v2');
  const k = flux({ attempted: bad, applied, path: './clusters/prod' });
  const d = failingShop('1.1.0');
  const o = await locateAndPlan(local(h), [APP], evidenceOf([k, d], [K, D]), 'main', engine([k, d], [K, D]));
  t.deepEqual(o.located!.bad.map((c) => c.oid), [bad]);
  t.is(o.refused, `verify: the revert changes no file Flux Kustomization flux-system/apps (spec.path ./clusters/prod) reads for this target: at the head it reads nothing in the target's paths (${APP}), what it builds for the target comes from apps/shop-v2/, clusters/prod/; writing it would report the failure handled while the failing version keeps running (bad: ${short(bad)})`);
  // the condition: the revert writes apps/shop/deploy.yaml only, which the build no longer includes
  const head = h.rev('HEAD');
  t.is(head, moved);
  t.deepEqual(written(h, head, o.after!, APP), [`${APP}deploy.yaml`]);
  t.is(h.git('show', `${head}:clusters/prod/kustomization.yaml`), kz(['../../apps/shop-v2']).trim(), 'the build reads apps/shop-v2, not apps/shop');
  const r = await testRenderer(t);
  if (!r) return;
  const change: FileChange[] = [{ path: `${APP}deploy.yaml`, mode: '100644', content: o.after!.get(`${APP}deploy.yaml`)! }];
  t.is(imageOf(kustomizeBuild(r, h, head, change, 'clusters/prod')), `${IMAGE}:1.1.0`, 'after the revert the build still runs the failing image');
  t.deepEqual(objectsOf(kustomizeBuild(r, h, head, change, 'clusters/prod')), objectsOf(kustomizeBuild(r, h, head, [], 'clusters/prod')), 'the build is the same with and without the revert');
});

test('verify: a later commit names a file the revert deletes: "after the revert …\'s build would fail", where it builds at the head and at the last-known-good', async (t) => {
  const h = new History();
  h.commit({ 'apps/kustomization.yaml': kz(['shop']), [`${APP}kustomization.yaml`]: kz(['deploy.yaml']), [`${APP}deploy.yaml`]: deploy('1.0.0') }, 'shop 1.0.0');
  const applied = h.commit({ 'README.md': 'gitops\n' }, 'docs');
  const pdb = 'apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: shop\n  namespace: prod\nspec:\n  minAvailable: 2\n';
  const bad = h.commit({ [`${APP}kustomization.yaml`]: kz(['deploy.yaml', 'pdb.yaml']), [`${APP}pdb.yaml`]: pdb }, 'shop: a disruption budget');
  h.commit({ 'apps/kustomization.yaml': kz(['shop'], 'patches:\n  - path: shop/pdb.yaml\n') }, 'apps: enforce the shop budget');
  const k = flux({ attempted: bad, applied, path: './apps' });
  const o = await locateAndPlan(local(h), [APP], evidenceOf([k]), 'main', engine([k]));
  t.deepEqual(o.located!.bad.map((c) => c.oid), [bad]);
  t.is(o.refused, `verify: after the revert Flux Kustomization flux-system/apps (spec.path ./apps)'s build would fail: patch shop/pdb.yaml in apps does not exist (bad: ${short(bad)})`);
  // the condition: the revert deletes apps/shop/pdb.yaml while the head's apps/kustomization.yaml names it; the last-known-good did not
  t.false(o.after!.has(`${APP}pdb.yaml`));
  t.regex(h.git('show', 'HEAD:apps/kustomization.yaml'), /- path: shop\/pdb\.yaml/);
  t.notRegex(h.git('show', `${applied}:apps/kustomization.yaml`), /pdb/);
  const r = await testRenderer(t);
  if (!r) return;
  t.truthy(objectsOf(kustomizeBuild(r, h, 'HEAD', [], 'apps')), 'it builds at the head');
  t.truthy(objectsOf(kustomizeBuild(r, h, applied, [], 'apps')), 'it builds at the last-known-good');
  const after = kustomizeBuild(r, h, 'HEAD', [{ path: `${APP}pdb.yaml`, delete: true }, { path: `${APP}kustomization.yaml`, mode: '100644', content: o.after!.get(`${APP}kustomization.yaml`)! }], 'apps');
  t.true('failed' in after && /pdb\.yaml/.test(after.failed), 'kustomize fails on the missing patch after the revert');
});

test('verify: a later commit pins the image in the kustomization: "after the revert ghcr.io/acme/shop would be set to …, but the last-known-good … set …"', async (t) => {
  const { h, applied } = clusterRepo();
  const bad = h.commit({ [`${APP}deploy.yaml`]: deploy('1.1.0') }, 'shop 1.1.0');
  h.commit({ [`${APP}kustomization.yaml`]: kz(['deploy.yaml'], `images:\n  - name: ${IMAGE}\n    newTag: 1.2.0\n`) }, 'shop: pin 1.2.0');
  const k = flux({ attempted: bad, applied, path: './clusters/prod' });
  const d = failingShop('1.1.0');
  const o = await locateAndPlan(local(h), [APP], evidenceOf([k, d], [K, D]), 'main', engine([k, d], [K, D]));
  t.deepEqual(o.located!.bad.map((c) => c.oid), [bad]);
  t.is(o.located!.lastKnownGood, applied);
  t.is(o.refused, `verify: after the revert ${IMAGE} would be set to ${IMAGE}:1.0.0 (${APP}deploy.yaml), ${IMAGE}:1.2.0 (${APP}kustomization.yaml), but the last-known-good ${short(applied)} set ${IMAGE}:1.0.0 (bad: ${short(bad)})`);
  // the condition: after the revert the files set 1.0.0 and 1.2.0, the last-known-good's 1.0.0 only
  t.regex(o.after!.get(`${APP}deploy.yaml`)!.toString(), /shop:1\.0\.0/);
  t.regex(o.after!.get(`${APP}kustomization.yaml`)!.toString(), /newTag: 1\.2\.0/);
  t.notRegex(h.git('show', `${applied}:${APP}kustomization.yaml`), /images:/);
  const r = await testRenderer(t);
  if (!r) return;
  const change: FileChange[] = [{ path: `${APP}deploy.yaml`, mode: '100644', content: o.after!.get(`${APP}deploy.yaml`)! }];
  t.is(imageOf(kustomizeBuild(r, h, 'HEAD', change, 'clusters/prod')), `${IMAGE}:1.2.0`, 'the build after the revert runs 1.2.0');
  t.is(imageOf(kustomizeBuild(r, h, applied, [], 'clusters/prod')), `${IMAGE}:1.0.0`, 'the last-known-good ran 1.0.0');
});

/** A HelmRelease of a chart from a HelmRepository, as kept in git. */
const release = (o: { chart?: string; version: string; replicas?: number; level?: string }) => `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: podinfo
  namespace: prod
spec:
  interval: 10m
  chart:
    spec:
      chart: ${o.chart ?? 'podinfo'}
      version: ${o.version}
      sourceRef:
        kind: HelmRepository
        name: podinfo
        namespace: flux-system
  values:
    replicaCount: ${o.replicas ?? 2}
    ui:
      color: blue
    logLevel: ${o.level ?? 'info'}
`;
const REL = 'apps/podinfo/release.yaml';
function helmRepo(): { h: History; applied: string } {
  const h = new History();
  h.commit({ 'clusters/prod/kustomization.yaml': kz(['../../apps/podinfo']), 'apps/podinfo/kustomization.yaml': kz(['release.yaml']), [REL]: release({ version: '6.5.3' }) }, 'podinfo 6.5.3');
  return { h, applied: h.commit({ 'README.md': 'gitops\n' }, 'docs') };
}
const specOf = (manifest: string) => (jsYaml.load(manifest) as { spec: Record<string, unknown> }).spec;
const chartSpec = (manifest: string) => (specOf(manifest) as { chart: { spec: { chart: string; version: string } } }).chart.spec;
const valuesOf = (manifest: string) => specOf(manifest).values;

test('verify: a later commit changed the chart\'s name: "after the revert the chart of HelmRelease prod/podinfo would be pinned to …, but the last-known-good pinned …"', async (t) => {
  const { h, applied } = helmRepo();
  const bad = h.commit({ [REL]: release({ version: '6.5.4' }) }, 'podinfo chart 6.5.4');
  h.commit({ [REL]: release({ chart: 'podinfo-lts', version: '6.5.4' }) }, 'podinfo: the LTS chart');
  const k = flux({ attempted: bad, applied, path: './clusters/prod' });
  const hr = helmRelease({ spec: specOf(release({ version: '6.5.4' })), attempted: '6.5.4', history: [{ chartVersion: '6.5.4', lastDeployed: '2026-11-01T12:00:00Z', status: 'failed' }, { chartVersion: '6.5.3', lastDeployed: '2026-11-01T09:00:00Z' }] });
  const o = await locateAndPlan(local(h), ['apps/podinfo/'], evidenceOf([k, hr], [K, HR]), 'main', engine([k, hr], [K, HR]));
  t.deepEqual(o.located!.bad.map((c) => c.oid), [bad]);
  t.is(o.refused, `verify: after the revert the chart of HelmRelease prod/podinfo would be pinned to podinfo-lts@6.5.3, but the last-known-good pinned podinfo@6.5.3 (bad: ${short(bad)})`);
  // the condition: the HelmRelease as the revert leaves it pins podinfo-lts 6.5.3; at the last-known-good, podinfo 6.5.3
  t.deepEqual(chartSpec(o.after!.get(REL)!.toString()), { ...chartSpec(release({ version: '6.5.3' })), chart: 'podinfo-lts' });
  t.is(chartSpec(h.git('show', `${applied}:${REL}`)).chart, 'podinfo');
  t.is(chartSpec(h.git('show', `${applied}:${REL}`)).version, '6.5.3');
});

test('verify: a later commit changed other values of the release whose values failed: "after the revert the values of HelmRelease prod/podinfo would not be the last-known-good\'s"', async (t) => {
  const { h, applied } = helmRepo();
  const bad = h.commit({ [REL]: release({ version: '6.5.3', replicas: 3 }) }, 'podinfo: three replicas');
  h.commit({ [REL]: release({ version: '6.5.3', replicas: 3, level: 'debug' }) }, 'podinfo: debug logs');
  // the sync of the bad commit went through; the release it made failed, on the same chart
  const k = flux({ attempted: bad, applied: bad, ready: 'True', path: './clusters/prod' });
  const hr = helmRelease({ spec: specOf(release({ version: '6.5.3', replicas: 3 })), attempted: '6.5.3', history: [{ chartVersion: '6.5.3', lastDeployed: '2026-11-01T12:00:00Z', status: 'failed' }, { chartVersion: '6.5.3', lastDeployed: '2026-11-01T09:00:00Z' }] });
  const o = await locateAndPlan(local(h), ['apps/podinfo/'], evidenceOf([k, hr], [K, HR]), 'main', engine([k, hr], [K, HR]));
  t.deepEqual(o.located!.bad.map((c) => c.oid), [bad]);
  t.is(o.located!.how, 'values');
  t.is(o.located!.lastKnownGood, applied);
  t.is(o.refused, `verify: after the revert the values of HelmRelease prod/podinfo would not be the last-known-good's (bad: ${short(bad)})`);
  // the condition: the values the revert leaves differ from the last-known-good's (the later debug logs stay)
  const after = valuesOf(o.after!.get(REL)!.toString());
  const lkg = valuesOf(h.git('show', `${applied}:${REL}`));
  t.notDeepEqual(after, lkg);
  t.deepEqual(after, { ...(lkg as object), logLevel: 'debug' });
});

// ---- src/verify/render-check.ts ----------------------------------------------------------------

test('render: the revert brings back a ConfigMap a later commit re-created under another file: "after the revert the build would fail where it builds at the head and at the last-known-good"', async (t) => {
  const r = await testRenderer(t);
  if (!r) return;
  const h = new History();
  h.commit({ 'clusters/prod/kustomization.yaml': kz(['../../apps/shop']), [`${APP}kustomization.yaml`]: kz(['settings.yaml', 'deploy.yaml']), [`${APP}deploy.yaml`]: deploy('1.0.0'), [`${APP}settings.yaml`]: configMap('shop-settings', 'info') }, 'shop 1.0.0');
  const applied = h.commit({ 'README.md': 'gitops\n' }, 'docs');
  const bad = h.commit({ [`${APP}kustomization.yaml`]: kz(['deploy.yaml']), [`${APP}settings.yaml`]: null }, 'shop: drop the settings');
  h.commit({ [`${APP}kustomization.yaml`]: kz(['deploy.yaml', 'settings-v2.yaml']), [`${APP}settings-v2.yaml`]: configMap('shop-settings', 'debug') }, 'shop: settings v2');
  const k = flux({ attempted: bad, applied, path: './clusters/prod' });
  const p = await pipeline(h, [APP], [k], [K, D], r);
  t.deepEqual(p.located.bad.map((c) => c.oid), [bad]);
  t.falsy(p.verification.refused, 'the model check passes');
  t.true(p.rendered !== undefined && 'refused' in p.rendered);
  const refused = (p.rendered as { refused: string }).refused;
  t.regex(refused, /^after the revert the build would fail where it builds at the head and at the last-known-good: .*may not add resource with an already registered id: ConfigMap\.v1\.\[noGrp\]\/shop-settings\.prod/s);
  // the condition, by the machine's kustomize on checkouts: the head and the last-known-good build, the head with the revert does not
  t.truthy(objectsOf(kustomizeBuild(r, h, p.head, [], 'clusters/prod')));
  t.truthy(objectsOf(kustomizeBuild(r, h, applied, [], 'clusters/prod')));
  const after = kustomizeBuild(r, h, p.head, p.plan.files, 'clusters/prod');
  t.true('failed' in after && /already registered id/.test(after.failed));
});

test('render: a later commit moved the image to a mirror: "rendered as the engine builds it, the revert would set 1 field to values the last-known-good never had"', async (t) => {
  const r = await testRenderer(t);
  if (!r) return;
  const { h, applied } = clusterRepo();
  const bad = h.commit({ [`${APP}deploy.yaml`]: deploy('1.1.0') }, 'shop 1.1.0');
  h.commit({ [`${APP}kustomization.yaml`]: kz(['deploy.yaml'], `images:\n  - name: ${IMAGE}\n    newName: registry.acme.internal/shop\n`) }, 'shop: pull from the mirror');
  const k = flux({ attempted: bad, applied, path: './clusters/prod' });
  const p = await pipeline(h, [APP], [k, failingShop('1.1.0')], [K, D], r);
  t.deepEqual(p.located.bad.map((c) => c.oid), [bad]);
  t.falsy(p.verification.refused, 'the model check passes: the files set the repository ghcr.io/acme/shop back to 1.0.0');
  t.true(p.rendered !== undefined && 'refused' in p.rendered);
  t.is((p.rendered as { refused: string }).refused, 'rendered as the engine builds it, the revert would set 1 field to values the last-known-good never had: apps/Deployment prod/shop /spec/template/spec/containers/name=app/image: registry.acme.internal/shop:1.1.0 → registry.acme.internal/shop:1.0.0 (the last-known-good has ghcr.io/acme/shop:1.0.0)');
  // the condition, by the machine's kustomize: the image after the revert is neither the head's nor the last-known-good's
  const after = imageOf(kustomizeBuild(r, h, p.head, p.plan.files, 'clusters/prod'));
  t.is(after, 'registry.acme.internal/shop:1.0.0');
  t.is(imageOf(kustomizeBuild(r, h, p.head, [], 'clusters/prod')), 'registry.acme.internal/shop:1.1.0');
  t.is(imageOf(kustomizeBuild(r, h, applied, [], 'clusters/prod')), `${IMAGE}:1.0.0`);
});
