import { loadAllSafe } from './kustomize.ts';
import type { TreeView } from './tree.ts';

/**
 * Where the repository holds an engine object's own manifest (issue 34, class 0). A Flux
 * Kustomization, a HelmRelease or an Argo CD Application is often itself kept in git and applied
 * by a parent (Flux's `clusters/prod`, an app of apps): then its spec at a revision is the
 * manifest's, not the cluster object's — a commit that changes `spec.images`, `postBuild`,
 * `spec.chart.spec.version` or `values` there changes what the engine builds for the target as
 * surely as a change to the files it builds.
 */

type Rec = Record<string, unknown>;
const isRec = (v: unknown): v is Rec => typeof v === 'object' && v !== null && !Array.isArray(v);

export interface OwnManifest {
  /** the file that declares it (repo-relative) */
  path: string;
  /** its spec as written there */
  spec: Rec;
  /** its metadata.namespace as written there (absent: left to a parent's namespace) */
  namespace?: string;
}

export interface EngineObjectRef {
  /** the API group the apiVersion starts with ("kustomize.toolkit.fluxcd.io") */
  group: string;
  kind: string;
  name: string;
  namespace?: string;
  /** where several files declare it (one per cluster folder): the one whose spec this says is the object's */
  prefer?: (spec: Rec) => boolean;
  /** whether a document declares the object, rather than patches some of its fields (a values-only HelmRelease patch) */
  declares?: (spec: Rec) => boolean;
}

/** Files looked at for a manifest, per search (beyond: not searched, and the caller says so). */
export const MAX_MANIFEST_FILES = 5000;

/** The engine objects a YAML file declares, parsed once per blob (a file without an engine group is not parsed). */
function engineDocs(bytes: Uint8Array): Rec[] {
  const text = Buffer.from(bytes).toString('utf8');
  if (!text.includes('toolkit.fluxcd.io') && !text.includes('argoproj.io')) return [];
  return loadAllSafe(bytes).filter((d): d is Rec => isRec(d) && typeof d.apiVersion === 'string' && typeof d.kind === 'string');
}

/**
 * The manifest of `object` among `first` (files the engine reads, looked at first) and the YAML
 * files under `dirs` (the target's paths), read through the view so a model records what it
 * depended on. Several matches: the one `prefer` picks, else none (`ambiguous` lists them).
 */
export async function findOwnManifest(view: TreeView, object: EngineObjectRef, dirs: string[], first: Iterable<string> = []): Promise<{ found?: OwnManifest; ambiguous?: string[]; truncated?: boolean }> {
  const matches: Array<OwnManifest & { first: boolean }> = [];
  let searchingFirst = true;
  let looked = 0;
  let truncated = false;
  const seen = new Set<string>();
  const consider = async (file: string): Promise<void> => {
    if (seen.has(file) || !/\.(ya?ml|json)$/i.test(file)) return;
    seen.add(file);
    if (++looked > MAX_MANIFEST_FILES) {
      truncated = true;
      return;
    }
    const r = await view.resolve(file, 'follow');
    if (r.kind !== 'file') return;
    for (const doc of await view.parse('engine-docs', r.oid, engineDocs, r.path)) {
      if (doc.kind !== object.kind || !String(doc.apiVersion).startsWith(`${object.group}/`)) continue;
      const meta: Rec = isRec(doc.metadata) ? doc.metadata : {};
      if (meta.name !== object.name) continue;
      // a manifest without a namespace takes its parent's (a kustomization's `namespace:`, Flux's targetNamespace)
      if (typeof meta.namespace === 'string' && object.namespace && meta.namespace !== object.namespace) continue;
      if (object.declares && !object.declares(isRec(doc.spec) ? doc.spec : {})) continue;
      matches.push({ path: file, spec: isRec(doc.spec) ? doc.spec : {}, ...(typeof meta.namespace === 'string' ? { namespace: meta.namespace } : {}), first: searchingFirst });
    }
  };
  const walk = async (dir: string): Promise<void> => {
    for (const [name, e] of await view.list(dir)) {
      if (truncated) return;
      const p = dir ? `${dir}/${name}` : name;
      if (e.type === 'tree') await walk(p);
      else if (e.type === 'blob' && e.mode !== '120000') await consider(p);
    }
  };
  for (const f of first) await consider(f);
  searchingFirst = false;
  for (const d of dirs) {
    const dir = d.replace(/\/+$/, '');
    const e = await view.entry(dir);
    if (e?.type === 'tree') await walk(dir);
    else if (e?.type === 'blob') await consider(dir);
  }
  const result = { ...(truncated ? { truncated } : {}) };
  const plain = ({ first: _, ...m }: (typeof matches)[number]): OwnManifest => m;
  if (matches.length <= 1) return { ...result, ...(matches[0] ? { found: plain(matches[0]) } : {}) };
  // one among the files the engine reads wins over others in the paths (another cluster's copy)
  const read = matches.filter((m) => m.first);
  if (read.length === 1) return { ...result, found: plain(read[0]!) };
  const preferred = object.prefer ? matches.filter((m) => object.prefer!(m.spec)) : [];
  if (preferred.length === 1) return { ...result, found: plain(preferred[0]!) };
  return { ...result, ambiguous: matches.map((m) => m.path) };
}

/** True when a value holds a `${var}` a parent's post-build substitution fills in (its text in git is not what the cluster gets). */
export function substituted(v: unknown): boolean {
  return JSON.stringify(v ?? null).includes('${');
}
