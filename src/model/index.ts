import type { ResolvedTarget } from '../config/schema.ts';
import type { KubeObject, Observed } from '../observe/types.ts';
import { groupKind } from '../observe/types.ts';
import type { FileChange, RepoReader } from '../repo/types.ts';
import { describeFlux, fluxGraph } from './flux.ts';
import { nodesOf } from './kustomize.ts';
import { inPaths, scopeGraph, settersOf, type TargetScope } from './scope.ts';
import { ObjectCache, TreeView } from './tree.ts';
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

/** One engine: how to model what its object builds. */
export interface EngineModeler {
  /** group/Kind of the engine object */
  kind: string;
  engine: EngineKind;
  describe(object: KubeObject): string;
  /** undefined when the object tells what is needed; else why not (an event-made object has no spec) */
  unusable(object: KubeObject): string | undefined;
  /** the model at one revision; `observed` gives related objects (the GitRepository, a HelmRelease's Kustomization) */
  build(view: TreeView, object: KubeObject, scope: TargetScope, observed: KubeObject[]): Promise<TargetModel>;
}

/**
 * An engine object that refines another engine's model (a HelmRelease applied by a Kustomization:
 * its chart and values are set by files that Kustomization reads); runs after the primary engine.
 */
export interface EngineRefiner {
  kind: string;
  describe(object: KubeObject): string;
  unusable(object: KubeObject): string | undefined;
  refine(view: TreeView, object: KubeObject, base: TargetModel, scope: TargetScope, observed: KubeObject[]): Promise<TargetModel>;
}

const modelers = new Map<string, EngineModeler>();
const refiners = new Map<string, EngineRefiner>();

export function registerEngine(m: EngineModeler): void {
  modelers.set(m.kind, m);
}
export function registerRefiner(r: EngineRefiner): void {
  refiners.set(r.kind, r);
}

const FLUX_KUSTOMIZATION = 'kustomize.toolkit.fluxcd.io/Kustomization';
const GIT_REPOSITORY = 'source.toolkit.fluxcd.io/GitRepository';

registerEngine({
  kind: FLUX_KUSTOMIZATION,
  engine: 'flux',
  describe: describeFlux,
  unusable: (k) => (k.spec && typeof k.spec === 'object' && 'sourceRef' in k.spec ? undefined : `${describeRef(k)} has no spec here (an event carries only its status)`),
  async build(view, k, scope, observed) {
    const ref = k.spec?.sourceRef ?? {};
    const repo = observed.find((o) => groupKind(o.apiVersion, o.kind) === GIT_REPOSITORY && o.metadata.name === ref.name && (o.metadata.namespace ?? '') === (ref.namespace ?? k.metadata.namespace ?? ''));
    const graph = await fluxGraph(view, k, repo);
    const scoped = await scopeGraph(view, graph.root, scope);
    const inputs = new Map<string, ModelInput>(scoped.inputs.map((i) => [i.path, i]));
    for (const f of graph.ignoreFiles) inputs.set(f.path, { path: f.path, digest: f.oid, role: 'config' });
    const setters = [...(await settersOf(view, scoped.contentFiles, scoped.inline)), ...graph.specSetters];
    const files = new Map([...graph.files].map(([p, f]) => [p, f.oid]));
    return {
      engine: 'flux',
      describe: describeFlux(k),
      inputs,
      setters,
      opaque: [...graph.opaque, ...scoped.notes],
      missing: graph.missing,
      builds: scoped.builds,
      regions: [...new Set([graph.rootDir, ...nodesOf(graph.root).map((n) => n.dir), ...inputs.keys(), ...ancestorIgnoreFiles(graph.rootDir)])],
      render: { engine: 'flux', root: graph.rootDir, files, flux: { spec: (k.spec ?? {}) as Record<string, unknown>, ...(graph.generated ? { generatedResources: graph.generated } : {}) } },
    };
  },
});

/** `.sourceignore` files that may appear above a Flux root and change its artifact. */
function ancestorIgnoreFiles(root: string): string[] {
  const parts = root ? root.split('/') : [];
  return parts.map((_, i) => [...parts.slice(0, i), '.sourceignore'].join('/'));
}

function describeRef(o: KubeObject): string {
  return `${o.kind} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`;
}

/** The target's own paths as the model (no engine object to follow). */
async function pathsModel(view: TreeView, scope: TargetScope, why: string): Promise<TargetModel> {
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
  /** one cache per reader, shared by every target of a run */
  cache?: ObjectCache;
}

/** The engine kinds that are not the target's own objects in the repository. */
const ENGINE_KINDS = new Set([FLUX_KUSTOMIZATION, 'argoproj.io/Application', GIT_REPOSITORY]);

/** A cached modeler for one target. */
export function modelTarget(input: ModelerInput): TargetModeler {
  const cache = input.cache ?? new ObjectCache(input.reader);
  const objects = input.observed.map((o) => o.object);
  const listed = input.target.resources.map((r) => objects.find((o) => o.kind === r.kind && o.metadata.name === r.name && (o.metadata.namespace ?? '') === (r.namespace ?? '') && groupKind(o.apiVersion, o.kind) === groupKind(r.apiVersion, r.kind)));
  const scope: TargetScope = {
    paths: input.target.paths,
    objects: input.target.resources.filter((r) => !ENGINE_KINDS.has(groupKind(r.apiVersion, r.kind))).map((r) => ({ kind: r.kind, name: r.name, ...(r.namespace ? { namespace: r.namespace } : {}) })),
  };
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
  const byTree = new Map<string, Promise<TargetModel>>();
  return {
    describe,
    engine: primary?.modeler.engine ?? (refining.length ? 'helm' : 'paths'),
    async at(commit) {
      const tree = await cache.rootTree(commit);
      let p = byTree.get(tree);
      if (!p) byTree.set(tree, (p = TreeView.at(cache, commit).then(build)));
      return p;
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
