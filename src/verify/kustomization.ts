import { parse } from 'yaml';

/**
 * Reading and writing kustomization files for the renderer, and what every kustomize build reads.
 * Field names from kustomize `api/types/kustomization.go` (the Kustomization struct's json tags).
 */

/** konfig.RecognizedKustomizationFileNames(), in kustomize's order */
export const KUSTOMIZATION_FILES = ['kustomization.yaml', 'kustomization.yml', 'Kustomization'];

/** The top-level fields of kustomize's Kustomization type (api/types/kustomization.go L36-182). */
export const KUSTOMIZATION_FIELDS = new Set([
  'apiVersion', 'kind', 'metadata', 'openapi', 'namePrefix', 'nameSuffix', 'namespace', 'commonLabels', 'labels',
  'commonAnnotations', 'patchesStrategicMerge', 'patchesJson6902', 'patches', 'images', 'imageTags', 'replacements',
  'replicas', 'vars', 'sortOptions', 'resources', 'components', 'crds', 'bases', 'configMapGenerator', 'secretGenerator',
  'helmGlobals', 'helmCharts', 'helmChartInflationGenerator', 'generatorOptions', 'configurations', 'generators',
  'transformers', 'validators', 'buildMetadata',
]);

export type Kustomization = Record<string, unknown>;

/** A kustomization file's content as an object; a file that is not a YAML mapping is an error naming it. */
export function parseKustomization(text: string, file: string): Kustomization {
  let doc: unknown;
  try {
    // merge keys (<<) as go-yaml v2 reads them; kustomize reads one document
    doc = parse(text, { merge: true, uniqueKeys: false });
  } catch (e) {
    throw new Error(`${file}: not valid YAML: ${(e as Error).message.split('\n')[0]}`);
  }
  if (doc === null || doc === undefined) return {};
  if (typeof doc !== 'object' || Array.isArray(doc)) throw new Error(`${file}: a kustomization must be a YAML mapping`);
  return doc as Kustomization;
}

/**
 * Written as JSON, which is YAML: every string stays a string whatever it looks like, so what
 * kustomize reads back is exactly the object (Flux and `kustomize edit` write YAML through Go's
 * encoders; only the bytes of the file differ, not what it says).
 */
export function writeKustomization(k: Kustomization): string {
  return JSON.stringify(k, null, 2) + '\n';
}

export const isRemote = (ref: string) =>
  /^(git::|gh:|ssh:\/\/|https?:\/\/|git@|github\.com[:/]|[a-z0-9.-]+\.[a-z]{2,}\/[^/]+\/[^/]+\.git)/i.test(ref) || /\?ref=/.test(ref);
