import { KUSTOMIZATION_FILES, loadAllSafe, nodesOf, walkGraph, type Graph, type KNode, type WalkRules } from './kustomize.ts';
import type { TargetScope } from './scope.ts';
import type { TreeView } from './tree.ts';

/**
 * Which kustomization under the target's paths builds its objects, where no engine object says
 * (issue 34, class 4: only the workload was observed). Paths that hold a base and several
 * overlays build the same Deployment into several namespaces or names; the one that failed is
 * made by the overlay whose `namespace:` (the outermost one wins: kustomize's namespace
 * transformer of the including kustomization runs last) and `namePrefix`/`nameSuffix` (outer ones
 * wrap inner ones) give its namespace and name. The model then reads what that overlay's build
 * reads, so a commit to another overlay that brought the same image first is not taken for it.
 */

type Rec = Record<string, unknown>;
const isRec = (v: unknown): v is Rec => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** kustomize itself, as `kustomize build` of a folder loads: any file in the repository, links followed. */
const RULES: WalkRules = { engine: 'kustomize', symlinks: 'follow', load: 'anywhere', helm: false, memoKey: 'overlays' };

/** At most this many kustomizations under the paths are compared (beyond: the whole paths are read, as before). */
const MAX_OVERLAYS = 64;

export interface Overlay {
  /** the folder of the kustomization whose build makes the target's objects */
  dir: string;
  graph: Graph;
}

/** The one root kustomization under the paths whose build makes one of the target's objects, if exactly one does. */
export async function overlayOf(view: TreeView, scope: TargetScope): Promise<Overlay | undefined> {
  if (scope.objects.length === 0) return undefined;
  const dirs: string[] = [];
  const walk = async (dir: string): Promise<boolean> => {
    const entries = await view.list(dir);
    if (KUSTOMIZATION_FILES.some((k) => entries.get(k)?.type === 'blob')) dirs.push(dir);
    if (dirs.length > MAX_OVERLAYS) return false;
    for (const [name, e] of entries) if (e.type === 'tree' && !(await walk(dir ? `${dir}/${name}` : name))) return false;
    return true;
  };
  for (const p of scope.paths) {
    const dir = p.replace(/\/+$/, '');
    if ((await view.entry(dir))?.type === 'tree' && !(await walk(dir))) return undefined;
  }
  if (dirs.length < 2) return undefined;
  const graphs = new Map<string, Graph>();
  for (const d of dirs) graphs.set(d, await walkGraph(view, d, RULES));
  // roots: the kustomizations no other one under the paths includes
  const included = new Set<string>();
  for (const [d, g] of graphs) for (const n of nodesOf(g.root)) if (n.dir !== d) included.add(n.dir);
  const roots = dirs.filter((d) => !included.has(d));
  if (roots.length < 2) return undefined;
  const making: Overlay[] = [];
  for (const d of roots) if (await builds(view, graphs.get(d)!.root, scope)) making.push({ dir: d, graph: graphs.get(d)! });
  return making.length === 1 ? making[0] : undefined;
}

/** Whether a kustomization's build makes one of the target's objects: its kind, name (prefixes, suffixes) and namespace. */
async function builds(view: TreeView, root: KNode, scope: TargetScope): Promise<boolean> {
  const visit = async (n: KNode, outer: { namespace?: string; prefix: string; suffix: string }, seen: Set<KNode>): Promise<boolean> => {
    if (seen.has(n)) return false;
    seen.add(n);
    const here = {
      // the including kustomization's namespace wins over this one's
      ...(outer.namespace ?? str(n.doc.namespace) ? { namespace: outer.namespace ?? str(n.doc.namespace) } : {}),
      prefix: `${outer.prefix}${str(n.doc.namePrefix) ?? ''}`,
      suffix: `${str(n.doc.nameSuffix) ?? ''}${outer.suffix}`,
    };
    for (const r of n.resources) {
      if (r.kind === 'node' && (await visit(r.node, here, seen))) return true;
      if (r.kind !== 'file') continue;
      for (const doc of await view.parse('yaml-all', r.file.oid, loadAllSafe, r.file.path)) {
        if (!isRec(doc)) continue;
        const meta: Rec = isRec(doc.metadata) ? doc.metadata : {};
        const name = `${here.prefix}${String(meta.name ?? '')}${here.suffix}`;
        const namespace = here.namespace ?? str(meta.namespace);
        if (scope.objects.some((o) => o.kind === doc.kind && o.name === name && (!o.namespace || !namespace || o.namespace === namespace))) return true;
      }
    }
    return false;
  };
  return visit(root, { prefix: '', suffix: '' }, new Set());
}
