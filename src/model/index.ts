import type { ResolvedTarget } from '../config/schema.ts';
import type { KubeObject, Observed } from '../observe/types.ts';
import { findObserved, groupKind } from '../observe/types.ts';
import type { FileChange, RepoReader } from '../repo/types.ts';
import './flux.ts';
import './argocd.ts';
import './helm.ts';
import { modelers, refiners, type EngineModeler, type EngineRefiner } from './registry.ts';
import { overlayOf } from './overlays.ts';
import { inPaths, scopeGraph, settersOf, type TargetScope } from './scope.ts';
import { Lru } from '../repo/lru.ts';
import { ObjectCache, TreeView } from './tree.ts';
import { sameReads, type Reads } from './reads.ts';
import type { EngineKind, ModelInput, TargetModel, TargetModeler } from './types.ts';

export type { TargetModel, TargetModeler } from './types.ts';
export { inputDelta } from './types.ts';

/**
 * The model stage's door: from the engine objects a target lists (as observed in the cluster, a
 * snapshot or an event) to a TargetModeler that answers "what does the engine read and set for
 * this target at this revision". Engines are registered by the group/Kind of their object; where
 * the target lists none whose spec lastgood can read (an event carries no spec), the model is the
 * target's paths, as lastgood judged before it modelled engines, and says so.
 */


/**
 * The target's own paths as the model (no engine object to follow); where they hold several
 * overlays and exactly one builds the target's objects, what that overlay's build reads
 * (overlays.ts).
 */
async function pathsModel(view: TreeView, scope: TargetScope, why: string): Promise<TargetModel> {
  const overlay = await overlayOf(view, scope);
  if (overlay) {
    const scoped = await scopeGraph(view, overlay.graph.root, { ...scope, paths: [`${overlay.dir}/`] });
    const o = scope.objects[0]!;
    return {
      engine: 'paths',
      describe: `the target's paths (${scope.paths.join(', ')}): ${why}; the kustomization ${overlay.dir} builds ${o.kind} ${o.namespace ? `${o.namespace}/` : ''}${o.name} (its namespace and name), so the model reads what its build reads`,
      inputs: new Map(scoped.inputs.map((i) => [i.path, i])),
      setters: await settersOf(view, scoped.contentFiles, scoped.inline),
      opaque: [...overlay.graph.opaque.map((x) => x.text), ...scoped.notes],
      missing: overlay.graph.missing,
      builds: scoped.builds,
      // which overlay builds the target depends on every kustomization under the paths
      regions: scope.paths.map((p) => p.replace(/\/+$/, '')),
    };
  }
  const inputs = new Map<string, ModelInput>();
  const files: Array<{ path: string; oid: string; role: 'resource' }> = [];
  const walk = async (dir: string): Promise<void> => {
    for (const [name, e] of await view.list(dir)) {
      const p = dir ? `${dir}/${name}` : name;
      if (e.type === 'tree') await walk(p);
      else if (e.type === 'blob') {
        inputs.set(p, { path: p, digest: e.oid, role: 'resource' });
        if (e.mode !== '120000') files.push({ path: p, oid: e.oid, role: 'resource' });
      }
    }
  };
  for (const p of scope.paths) {
    const clean = p.replace(/\/+$/, '');
    const e = await view.entry(clean);
    if (e?.type === 'tree') await walk(clean);
    else if (e?.type === 'blob' && !p.endsWith('/')) {
      inputs.set(clean, { path: clean, digest: e.oid, role: 'resource' });
      files.push({ path: clean, oid: e.oid, role: 'resource' });
    }
  }
  return {
    engine: 'paths',
    describe: `the target's paths (${scope.paths.join(', ')}): ${why}`,
    inputs,
    setters: await settersOf(view, files, []),
    opaque: [],
    missing: [],
    builds: inputs.size > 0,
    regions: scope.paths.map((p) => p.replace(/\/+$/, '')),
  };
}

export interface ModelerInput {
  reader: RepoReader;
  target: Pick<ResolvedTarget, 'name' | 'paths' | 'resources'>;
  /** every observed object (the target's and related ones: GitRepositories) */
  observed: Observed[];
  /** the cache of trees, blobs and memoised parts (default: the reader's own, shared by every target and run of the process) */
  cache?: ObjectCache;
}

/** One cache per reader object: a long-running process (the controller) keeps what it read between runs. */
const caches = new WeakMap<RepoReader, ObjectCache>();
export function cacheOf(reader: RepoReader): ObjectCache {
  let c = caches.get(reader);
  if (!c) caches.set(reader, (c = new ObjectCache(reader)));
  return c;
}

/** A model and what its build read. */
interface Built {
  model: TargetModel;
  reads: Reads;
  tree: string;
}

/**
 * Models kept per target (revisions sharing one count once). A model of a large graph holds its
 * files and what its build read (~1 MB for the monorepo's 2,200 applications): a history walk
 * keeps the revisions it is near, and builds again (from remembered parts) any it comes back to.
 */
const MODELS_KEPT = 24;
/** Recently used models a new revision is compared with before building its own. */
const REUSE_CANDIDATES = 3;

/** The engine kinds that are not the target's own objects in the repository. */
const ENGINE_KINDS = new Set(['kustomize.toolkit.fluxcd.io/Kustomization', 'argoproj.io/Application', 'source.toolkit.fluxcd.io/GitRepository']);

/** A cached modeler for one target. */
export function modelTarget(input: ModelerInput): TargetModeler {
  const cache = input.cache ?? cacheOf(input.reader);
  // found by identity: a snapshot's objects are parsed only when found (observe/snapshot.ts)
  const objects = input.observed;
  const listed = input.target.resources.map((r) => findObserved(objects, (o) => o.kind === r.kind && o.name === r.name && (o.namespace ?? '') === (r.namespace ?? '') && groupKind(o.apiVersion, o.kind) === groupKind(r.apiVersion, r.kind)));
  const scope: TargetScope = {
    paths: input.target.paths,
    objects: input.target.resources.filter((r) => !ENGINE_KINDS.has(groupKind(r.apiVersion, r.kind))).map((r) => ({ kind: r.kind, name: r.name, ...(r.namespace ? { namespace: r.namespace } : {}) })),
  };
  // the engine objects listed, as observed: the primary's model, and where a HelmRelease's values may be generated
  scope.engines = listed.filter((o): o is KubeObject => Boolean(o && modelers.has(groupKind(o.apiVersion, o.kind))));
  const why: string[] = [];
  const primaries: Array<{ modeler: EngineModeler; object: KubeObject }> = [];
  const refining: Array<{ refiner: EngineRefiner; object: KubeObject }> = [];
  for (const o of listed) {
    if (!o) continue;
    const gk = groupKind(o.apiVersion, o.kind);
    const m = modelers.get(gk);
    const r = refiners.get(gk);
    const reason = m?.unusable(o) ?? r?.unusable(o);
    if (reason) {
      why.push(reason);
      continue;
    }
    if (m) primaries.push({ modeler: m, object: o });
    if (r) refining.push({ refiner: r, object: o });
  }
  const primary = primaries[0];
  const notes = primaries.length > 1 ? [`the target lists ${primaries.length} engine objects; the model follows ${primary!.modeler.describe(primary!.object)}`] : [];
  const describe = primary
    ? [primary.modeler.describe(primary.object), ...refining.map((r) => r.refiner.describe(r.object))].join(' + ')
    : refining.length
      ? refining.map((r) => r.refiner.describe(r.object)).join(' + ')
      : `the target's paths (${input.target.paths.join(', ')})`;
  const fallback = why.length ? why.join('; ') : 'no engine object of the target (Flux Kustomization, Argo CD Application) tells what the engine reads';

  const build = async (view: TreeView): Promise<TargetModel> => {
    let model = primary ? await primary.modeler.build(view, primary.object, scope, objects) : await pathsModel(view, scope, fallback);
    for (const r of refining) model = await r.refiner.refine(view, r.object, model, scope, objects);
    if (notes.length) model = { ...model, opaque: [...model.opaque, ...notes] };
    return model;
  };
  // models by root tree; a revision that reads the same as one already built shares its model
  const byTree = new Lru<string, Promise<Built>>(MODELS_KEPT);
  const recent: Built[] = [];
  const use = (b: Built) => {
    const i = recent.indexOf(b);
    if (i >= 0) recent.splice(i, 1);
    recent.unshift(b);
    if (recent.length > REUSE_CANDIDATES) recent.pop();
    return b;
  };
  const index = (oid: string) => cache.index(oid);
  return {
    describe,
    engine: primary?.modeler.engine ?? (refining.length ? 'helm' : 'paths'),
    ...(primary ? { object: primary.object } : {}),
    async at(commit) {
      const tree = await cache.rootTree(commit);
      let p = byTree.get(tree);
      if (!p) {
        p = (async () => {
          const view = await TreeView.at(cache, commit);
          // a reader that fetches on demand gets what this revision's build reads ahead (the compare below reads it too)
          if (primary?.modeler.prefetch) await primary.modeler.prefetch([view], primary.object, scope);
          // the model of a nearby revision, where nothing it read differs here (a history walk's neighbour)
          for (const b of [...recent]) if (await sameReads(b.reads, index, b.tree, tree)) return b;
          const model = await build(view);
          return { model, reads: view.reads, tree };
        })();
        byTree.set(tree, p);
        p.catch(() => byTree.delete(tree));
      }
      return use(await p).model;
    },
    async prefetch(commits) {
      if (!primary?.modeler.prefetch) return;
      // the revisions not modelled yet, their reads asked for together (one request for all on a reader that reads by path)
      const views: TreeView[] = [];
      for (const c of new Set(commits)) if (!byTree.get(await cache.rootTree(c))) views.push(await TreeView.at(cache, c));
      if (views.length > 1) await primary.modeler.prefetch(views, primary.object, scope);
    },
    async withChange(commit, files: FileChange[]) {
      return build(await TreeView.withChange(cache, commit, files));
    },
  };
}

/** The inputs of a model that lie outside the target's paths. */
export function inputsOutside(model: TargetModel, paths: string[]): ModelInput[] {
  return [...model.inputs.values()].filter((i) => !inPaths(i.path, paths));
}

export { ObjectCache, inPaths };
export { registerEngine, registerRefiner, type EngineModeler, type EngineRefiner } from './registry.ts';
