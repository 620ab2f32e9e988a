import type { KubeObject, Observed } from '../observe/types.ts';
import type { TargetScope } from './scope.ts';
import type { TreeView } from './tree.ts';
import type { EngineKind, TargetModel } from './types.ts';

/**
 * The engines lastgood models, registered by the group/Kind of their object (STYLE.md: a
 * string-keyed registry behind one interface). Each engine's module registers itself; the model
 * stage's door (index.ts) imports them all.
 */

/** One engine: how to model what its object builds. */
export interface EngineModeler {
  /** group/Kind of the engine object */
  kind: string;
  engine: EngineKind;
  describe(object: KubeObject): string;
  /** undefined when the object tells what is needed; else why not (an event-made object has no spec) */
  unusable(object: KubeObject): string | undefined;
  /** the model at one revision; `observed` gives related objects (the GitRepository, a HelmRelease's Kustomization): find them with `findObserved` */
  build(view: TreeView, object: KubeObject, scope: TargetScope, observed: readonly Observed[]): Promise<TargetModel>;
  /**
   * A hint for a reader that fetches on demand: what builds at these revisions will read, asked
   * for ahead, together (before a revision is compared with models already built: that compare
   * reads the same folders).
   */
  prefetch?(views: TreeView[], object: KubeObject, scope: TargetScope): Promise<void>;
}

/**
 * An engine object that refines another engine's model (a HelmRelease applied by a Kustomization:
 * its chart and values are set by files that Kustomization reads); runs after the primary engine.
 */
export interface EngineRefiner {
  kind: string;
  describe(object: KubeObject): string;
  unusable(object: KubeObject): string | undefined;
  refine(view: TreeView, object: KubeObject, base: TargetModel, scope: TargetScope, observed: readonly Observed[]): Promise<TargetModel>;
}

export const modelers = new Map<string, EngineModeler>();
export const refiners = new Map<string, EngineRefiner>();

export function registerEngine(m: EngineModeler): void {
  modelers.set(m.kind, m);
}
export function registerRefiner(r: EngineRefiner): void {
  refiners.set(r.kind, r);
}


/** `Kind namespace/name` of an object, for messages. */
export function describeRef(o: KubeObject): string {
  return `${o.kind} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`;
}
