import path from 'node:path/posix';
import { KUSTOMIZATION_FILES, loadAllSafe, parseKustomization } from './kustomize.ts';
import type { TreeView } from './tree.ts';

/**
 * What makes a ConfigMap or Secret in the repository, among given files: a kustomize
 * `configMapGenerator`/`secretGenerator` entry (its name with the kustomization's
 * `namePrefix`/`nameSuffix`, its namespace or the kustomization's), else a plain manifest. Used
 * for a HelmRelease's `valuesFrom` (helm.ts) and a Flux Kustomization's `postBuild.substituteFrom`
 * (substitute.ts); each reads the keys it needs from what is found.
 */

type Rec = Record<string, unknown>;
const isRec = (v: unknown): v is Rec => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

export type MadeBy =
  /** a generator entry of the kustomization file at `path` (whose folder is `dir`) */
  | { kind: 'generator'; path: string; dir: string; entry: Rec }
  /** a manifest document in the file at `path` */
  | { kind: 'manifest'; path: string; oid: string; doc: Rec };

export async function findMaker(view: TreeView, files: Map<string, string>, kind: 'ConfigMap' | 'Secret', name: string, namespace: string | undefined): Promise<MadeBy | undefined> {
  const generatorField = kind === 'ConfigMap' ? 'configMapGenerator' : 'secretGenerator';
  for (const [file, oid] of files) {
    const base = path.basename(file);
    if (KUSTOMIZATION_FILES.includes(base)) {
      const parsed = await view.parse('kustomization', oid, (b) => parseKustomization(b, file), file);
      if ('error' in parsed && typeof parsed.error === 'string' && Object.keys(parsed).length === 1) continue;
      const doc = parsed as Rec;
      for (const gen of Array.isArray(doc[generatorField]) ? (doc[generatorField] as unknown[]).filter(isRec) : []) {
        const genNs = str(gen.namespace) ?? str(doc.namespace);
        const made = `${str(doc.namePrefix) ?? ''}${String(gen.name ?? '')}${str(doc.nameSuffix) ?? ''}`;
        if ((gen.name !== name && made !== name) || (genNs && namespace && genNs !== namespace)) continue;
        return { kind: 'generator', path: file, dir: path.dirname(file) === '.' ? '' : path.dirname(file), entry: gen };
      }
      continue;
    }
    if (!/\.(ya?ml|json)$/i.test(base)) continue;
    for (const doc of await view.parse('yaml-all', oid, loadAllSafe, file)) {
      if (!isRec(doc) || doc.kind !== kind) continue;
      const meta: Rec = isRec(doc.metadata) ? doc.metadata : {};
      if (meta.name !== name || (typeof meta.namespace === 'string' && namespace && meta.namespace !== namespace)) continue;
      return { kind: 'manifest', path: file, oid, doc };
    }
  }
  return undefined;
}

/** A manifest's data as text by key: `data` (base64 for a Secret), with `stringData` written over it. */
export function dataOf(kind: 'ConfigMap' | 'Secret', doc: Rec): Map<string, string> {
  const out = new Map<string, string>();
  if (isRec(doc.data)) for (const [k, v] of Object.entries(doc.data)) if (typeof v === 'string') out.set(k, kind === 'Secret' ? Buffer.from(v, 'base64').toString('utf8') : v);
  if (isRec(doc.stringData)) for (const [k, v] of Object.entries(doc.stringData)) if (typeof v === 'string') out.set(k, v);
  return out;
}
