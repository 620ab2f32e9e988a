import { formatImageRef, type ImageRef } from '../observe/image-ref.ts';
import { manifestFacts } from '../history/manifests.ts';
import type { Setter } from './types.ts';

/**
 * Helm values as the engines assemble them, for the model: layers merged in order (the chart's
 * values.yaml, value files, values kept in ConfigMaps, inline values, `--set` parameters), and the
 * images the merged values name, each attributed to the layer that put it there. Shared by the
 * Argo CD Helm source (argocd.ts) and the HelmRelease refiner (helm.ts).
 */

type Rec = Record<string, unknown>;
export const isRec = (v: unknown): v is Rec => typeof v === 'object' && v !== null && !Array.isArray(v);

/** One place that contributes values, lowest precedence first. */
export interface ValuesLayer {
  /** a repository file, or a field of a cluster object ("Application argocd/shop spec.source.helm.parameters") */
  where: string;
  /** false: a field of a cluster object, which no revert of the repository changes */
  inRepo: boolean;
  values: Rec;
}

/**
 * `b` merged into `a`: maps merge key by key, anything else replaces (fluxcd/pkg chartutil/merge.go
 * MergeMaps, itself Helm's pkg/cli/values/options.go mergeMaps: how value files, valuesFrom and
 * inline values combine). A null drops the key when the result is coalesced over the chart's
 * defaults (Helm's CoalesceValues); `dropNulls` does that at the end.
 */
export function mergeValues(a: Rec, b: Rec): Rec {
  const out: Rec = { ...a };
  for (const [k, v] of Object.entries(b)) {
    const old = out[k];
    out[k] = isRec(v) && isRec(old) ? mergeValues(old, v) : v;
  }
  return out;
}

export function dropNulls(v: Rec): Rec {
  const out: Rec = {};
  for (const [k, x] of Object.entries(v)) {
    if (x === null) continue;
    out[k] = isRec(x) ? dropNulls(x) : x;
  }
  return out;
}

/**
 * Sets one `--set` style parameter (`image.tag`, `a.b[0].c`, `a\.b` for a dot inside a key) in
 * `into`, as Helm's pkg/strvals parser does for the common forms; `forceString` keeps the text
 * (`--set-string`), else "true"/"false"/"null" and plain integers are typed as strvals types them.
 */
export function setParameter(into: Rec, name: string, value: string, forceString = false): void {
  const typed: unknown = forceString ? value : value === 'true' ? true : value === 'false' ? false : value === 'null' ? null : /^-?[1-9]\d{0,15}$|^0$/.test(value) ? Number(value) : value;
  const keys: Array<string | number> = [];
  for (const part of name.split(/(?<!\\)\./)) {
    const m = /^(.*?)((?:\[\d+\])*)$/.exec(part.replace(/\\\./g, '.'))!;
    if (m[1]) keys.push(m[1]);
    for (const idx of m[2]!.matchAll(/\[(\d+)\]/g)) keys.push(Number(idx[1]));
  }
  if (keys.length === 0) return;
  let node: Rec | unknown[] = into;
  for (let i = 0; i < keys.length - 1; i++) {
    const k = keys[i]!;
    const nextIsIndex = typeof keys[i + 1] === 'number';
    const cur: unknown = (node as Record<string | number, unknown>)[k];
    const fresh = nextIsIndex ? (Array.isArray(cur) ? cur : []) : isRec(cur) ? cur : {};
    (node as Record<string | number, unknown>)[k] = fresh;
    node = fresh as Rec | unknown[];
  }
  (node as Record<string | number, unknown>)[keys[keys.length - 1]!] = typed;
}

/** The images a values tree names (Helm values shapes: `{repository, tag}`, `{registry, repository, tag}`, full references). */
export function imagesIn(values: unknown): ImageRef[] {
  return manifestFacts(JSON.stringify(values ?? {}), '').images;
}

/**
 * The image setters of merged layers: every image the merged values name, attributed to the
 * layer from which on it is named (a tag set by a parameter over a repository from values.yaml
 * is the parameter's; an image a higher layer overrides is not set at all: it does not run).
 */
export function imageSetters(layers: ValuesLayer[]): Setter[] {
  if (layers.length === 0) return [];
  const seen: string[][] = [];
  let acc: Rec = {};
  for (const layer of layers) {
    acc = mergeValues(acc, layer.values);
    seen.push(imagesIn(dropNulls(acc)).map(formatImageRef));
  }
  const final = imagesIn(dropNulls(acc));
  return final.map((image) => {
    const text = formatImageRef(image);
    let i = layers.length - 1;
    while (i > 0 && seen[i - 1]!.includes(text)) i--;
    return { what: 'image' as const, where: layers[i]!.where, inRepo: layers[i]!.inRepo, image };
  });
}
