import path from 'node:path/posix';
import jsYaml from 'js-yaml';
import { parse, stringify, type Tags } from 'yaml';
import { envsubst, EnvsubstError } from '../model/envsubst.ts';
import { KUSTOMIZATION_FIELDS, KUSTOMIZATION_FILES, type Kustomization } from './kustomization.ts';

/**
 * What Flux's kustomize-controller does around `kustomize build`, ported from upstream:
 * fluxcd/pkg `kustomize/kustomize_generator.go` and `kustomize/kustomize_varsub.go` at e2cfd1a
 * (tag kustomize/v1.39.0, pinned by kustomize-controller 186fb3b's go.mod), and
 * kustomize-controller `internal/controller/kustomization_controller.go` at 186fb3b.
 */

export class FluxSpecError extends Error {}

const KUSTOMIZATION_VERSION = 'kustomize.config.k8s.io/v1beta1';

const isMap = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/** unstructured.NestedString: absent → undefined; present but not a string → error (as Flux fails). */
function nestedString(spec: Record<string, unknown>, field: string): string | undefined {
  if (!Object.hasOwn(spec, field) || spec[field] === undefined) return undefined;
  const v = spec[field];
  if (typeof v !== 'string') throw new FluxSpecError(`.spec.${field} accessor error: ${JSON.stringify(v)} is of the type ${typeof v}, expected string`);
  return v;
}

function nestedSlice(spec: Record<string, unknown>, field: string): unknown[] | undefined {
  const v = spec[field];
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v)) throw new FluxSpecError(`.spec.${field} accessor error: expected a list`);
  return v;
}

/** adaptSelector (kustomize_generator.go L634-646): Flux's Selector → kustomize's, empty fields dropped */
function adaptSelector(t: unknown): Record<string, string> | undefined {
  if (!isMap(t)) return undefined;
  const out: Record<string, string> = {};
  for (const f of ['group', 'version', 'kind', 'name', 'namespace', 'labelSelector', 'annotationSelector']) {
    if (typeof t[f] === 'string' && t[f] !== '') out[f] = t[f] as string;
  }
  return out;
}

/** IsLocalRelativePath (kustomize_generator.go L775-791) */
export function isLocalRelativePath(p: string): boolean {
  for (const prefix of ['git::', 'gh:', 'ssh://', 'https://', 'http://', 'git@', 'github.com:', 'github.com/']) {
    if (prefix.length < p.length && p.slice(0, prefix.length).toLowerCase() === prefix) return false;
  }
  return !(p.startsWith('/') || p.toLowerCase().replace(/^file:\/\//, '').startsWith('/'));
}

/**
 * The kustomization Flux builds: GenerateManifest (kustomize_generator.go L162-347), in place.
 *
 * - `existing`: the parsed kustomization file of spec.path, or undefined when Flux generated one
 *   (findOrGenerateKustomization, L525-570: `resources` = what scanManifests found, or
 *   `namespace: _placeholder` when it found nothing).
 * - the file is read into kustomize's typed struct and written back (L195-204, L341): top-level
 *   fields kustomize does not know are dropped; apiVersion/kind default.
 */
export function foldFluxSpec(
  existing: Kustomization | undefined,
  generatedResources: string[] | undefined,
  spec: Record<string, unknown>,
  componentExists: (relativeToRoot: string) => boolean,
): Kustomization {
  let kus: Kustomization = { apiVersion: KUSTOMIZATION_VERSION, kind: 'Kustomization' };
  if (existing) {
    for (const [k, v] of Object.entries(existing)) if (KUSTOMIZATION_FIELDS.has(k) && v !== null && v !== undefined) kus[k] = v;
    // L206-210: a found file with no resources gets originAnnotations, to avoid "kustomization.yaml is empty"
    if (!Array.isArray(kus.resources) || kus.resources.length === 0) kus.buildMetadata = ['originAnnotations'];
  } else if (generatedResources && generatedResources.length > 0) {
    kus = { ...kus, resources: [...generatedResources] };
  } else {
    kus.namespace = '_placeholder'; // L559-563
  }

  const tg = nestedString(spec, 'targetNamespace'); // L219-225
  if (tg !== undefined) kus.namespace = tg;
  const prefix = nestedString(spec, 'namePrefix'); // L227-233
  if (prefix !== undefined) kus.namePrefix = prefix;
  const suffix = nestedString(spec, 'nameSuffix'); // L235-241
  if (suffix !== undefined) kus.nameSuffix = suffix;

  // L243-253: spec.patches appended (inline patch + target)
  const patches = nestedSlice(spec, 'patches') ?? [];
  if (patches.length) {
    const list = Array.isArray(kus.patches) ? [...kus.patches] : [];
    for (const [i, p] of patches.entries()) {
      if (!isMap(p)) throw new FluxSpecError(`unable to get patches: unable to convert patch ${i} to map[string]interface{}`);
      const entry: Record<string, unknown> = { patch: typeof p.patch === 'string' ? p.patch : '' };
      const target = adaptSelector(p.target);
      if (target) entry.target = target;
      list.push(entry);
    }
    kus.patches = list;
  }

  // L255-269: components must be local and relative; a missing one skipped with ignoreMissingComponents
  const components = nestedSlice(spec, 'components') ?? [];
  const ignoreMissing = spec.ignoreMissingComponents === true;
  for (const c of components) {
    if (typeof c !== 'string') throw new FluxSpecError('unable to get components: expected a list of strings');
    if (!isLocalRelativePath(c)) throw new FluxSpecError(`component path '${c}' must be local and relative`);
    if (!componentExists(c) && ignoreMissing) continue;
    kus.components = [...(Array.isArray(kus.components) ? kus.components : []), c];
  }

  // L271-294: the v1beta2 fields, appended
  for (const p of nestedSlice(spec, 'patchesStrategicMerge') ?? []) {
    kus.patchesStrategicMerge = [...(Array.isArray(kus.patchesStrategicMerge) ? kus.patchesStrategicMerge : []), JSON.stringify(p)];
  }
  for (const p of nestedSlice(spec, 'patchesJson6902') ?? []) {
    if (!isMap(p)) continue;
    const entry: Record<string, unknown> = { patch: JSON.stringify(p.patch ?? null) };
    const target = adaptSelector(p.target);
    if (target) entry.target = target;
    kus.patchesJson6902 = [...(Array.isArray(kus.patchesJson6902) ? kus.patchesJson6902 : []), entry];
  }

  // L296-331: images merged by name into the file's entries
  const images = nestedSlice(spec, 'images') ?? [];
  if (images.length) {
    const list = (Array.isArray(kus.images) ? kus.images : []).map((i) => (isMap(i) ? { ...i } : i)) as Array<Record<string, unknown>>;
    for (const [i, im] of images.entries()) {
      if (!isMap(im)) throw new FluxSpecError(`unable to get images: unable to convert patch ${i} to map[string]interface{}`);
      const str = (f: string) => (typeof im[f] === 'string' ? (im[f] as string) : '');
      const name = str('name');
      const at = list.findIndex((e) => isMap(e) && (e.name ?? '') === name);
      if (at >= 0) {
        const e = list[at]!;
        if (str('newName') !== '') e.newName = str('newName');
        // newTag and digest select the version together: setting one clears the other (L310-322)
        if (str('newTag') !== '' || str('digest') !== '') {
          setOrDrop(e, 'newTag', str('newTag'));
          setOrDrop(e, 'digest', str('digest'));
        }
      } else {
        const e: Record<string, unknown> = { name };
        for (const f of ['newName', 'newTag', 'digest']) if (str(f) !== '') e[f] = str(f);
        list.push(e);
      }
    }
    kus.images = list;
  }

  // L333-339
  const buildMetadata = nestedSlice(spec, 'buildMetadata');
  if (buildMetadata && buildMetadata.length > 0) kus.buildMetadata = buildMetadata;
  return kus;
}

/** Go's omitempty: an empty string is not written */
function setOrDrop(o: Record<string, unknown>, field: string, v: string): void {
  if (v === '') delete o[field];
  else o[field] = v;
}

/**
 * scanManifests (kustomize_generator.go L575-632) over the artifact's files: every *.yaml/*.yml
 * under root, recursively, in lexical walk order; a sub-directory holding a kustomization file is
 * one resource and is not descended into. Paths as Flux writes them ("./apps/x.yaml").
 * Each file must decode as Kubernetes YAML, else Flux's build fails (L624-627): thrown here.
 */
export function fluxGeneratedResources(files: Map<string, Uint8Array>, root: string): string[] {
  const prefix = root === '' || root === '.' ? '' : `${root.replace(/\/+$/, '')}/`;
  // the directory tree under root
  interface Dir { files: Set<string>; dirs: Map<string, Dir> }
  const top: Dir = { files: new Set(), dirs: new Map() };
  for (const p of files.keys()) {
    if (!p.startsWith(prefix)) continue;
    const parts = p.slice(prefix.length).split('/');
    let d = top;
    for (const seg of parts.slice(0, -1)) {
      if (!d.dirs.has(seg)) d.dirs.set(seg, { files: new Set(), dirs: new Map() });
      d = d.dirs.get(seg)!;
    }
    d.files.add(parts.at(-1)!);
  }
  const out: string[] = [];
  const walk = (d: Dir, rel: string) => {
    // filepath.Walk visits the entries of a directory sorted by name, files and directories together
    const names = [...new Set([...d.files, ...d.dirs.keys()])].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    for (const name of names) {
      const p = rel ? `${rel}/${name}` : name;
      const sub = d.dirs.get(name);
      if (sub) {
        if (KUSTOMIZATION_FILES.some((k) => sub.files.has(k))) out.push(`./${p}`);
        else walk(sub, p);
        continue;
      }
      const ext = path.extname(name);
      if (ext !== '.yaml' && ext !== '.yml') continue;
      try {
        jsYaml.loadAll(Buffer.from(files.get(prefix + p)!).toString('utf8'));
      } catch (e) {
        throw new FluxSpecError(`failed to decode Kubernetes YAML from ${prefix + p}: ${(e as Error).message.split('\n')[0]}`);
      }
      out.push(`./${p}`);
    }
  };
  walk(top, '');
  return out;
}

/** kustomize_varsub.go L41 */
const VAR_NAME = /^[_A-Za-z][_A-Za-z0-9]*$/;
const SUBSTITUTE_KEY = 'kustomize.toolkit.fluxcd.io/substitute';

/** The value that stands for a variable whose value lives in the cluster (postBuild.substituteFrom). */
export const substituteFromPlaceholder = (name: string) => `lastgood-substituteFrom-${name}`;

export interface SubstitutionResult {
  docs: string[];
  /** true when a document's text was rewritten by substitution (its bytes are then ours, not Flux's) */
  rewritten: boolean;
  /** variables that took a placeholder, for the notes */
  placeholders: string[];
}

/**
 * Post-build substitution per resource, as kustomization_controller.go build() L815-831 runs
 * SubstituteVariables (kustomize_varsub.go L91-149) on each resource:
 *
 * - a resource labelled or annotated `kustomize.toolkit.fluxcd.io/substitute: disabled` is skipped;
 * - vars = substituteFrom's (the cluster's ConfigMaps/Secrets) overridden by inline
 *   postBuild.substitute, newlines removed;
 * - substitution runs when there are vars or substituteStrategy is Always, on the resource's YAML
 *   text; a variable without a value becomes "" (the controller's default, non-strict mode).
 *
 * substituteFrom values made in the repository (`fromRepo`: a generator or a manifest the model
 * found, src/model/substitute.ts) are those of the revision rendered. Others are not known here:
 * a variable not set inline nor by those takes a stable placeholder (`lastgood-substituteFrom-NAME`). The same in the three renders, so
 * the comparison is relative and needs no cluster and no secret; the placeholder is in the output.
 */
export function fluxSubstitute(docs: string[], spec: Record<string, unknown>, fromRepo?: { values: Record<string, string>; complete: boolean }): SubstitutionResult {
  const postBuild = spec.postBuild;
  if (!isMap(postBuild)) return { docs, rewritten: false, placeholders: [] };
  const inline = postBuild.substitute;
  const vars = new Map<string, string>();
  if (inline !== undefined && inline !== null) {
    if (!isMap(inline)) throw new FluxSpecError('.spec.postBuild.substitute accessor error: expected a map of strings');
    for (const [k, v] of Object.entries(inline)) {
      if (typeof v !== 'string') throw new FluxSpecError(`.spec.postBuild.substitute.${k} accessor error: ${JSON.stringify(v)} is of the type ${typeof v}, expected string`);
      vars.set(k, v.replaceAll('\n', ''));
    }
  }
  const fromCluster = Array.isArray(postBuild.substituteFrom) && postBuild.substituteFrom.length > 0;
  const always = postBuild.substituteStrategy === 'Always';
  if (vars.size === 0 && !fromCluster && !always) return { docs, rewritten: false, placeholders: [] };
  for (const name of vars.keys()) {
    if (!VAR_NAME.test(name)) throw new FluxSpecError(`'${name}' var name is invalid, must match '^[_[:alpha:]][_[:alpha:][:digit:]]*$'`);
  }
  const placeholders = new Set<string>();
  const mapping = (name: string): [string, boolean] => {
    const v = vars.get(name) ?? fromRepo?.values[name];
    if (v !== undefined) return [v, true];
    if (fromCluster && !fromRepo?.complete) {
      placeholders.add(name);
      return [substituteFromPlaceholder(name), true];
    }
    return ['', true];
  };
  let rewritten = false;
  const out = docs.map((doc) => {
    const o = jsYaml.load(doc, { schema: jsYaml.CORE_SCHEMA }) as Record<string, unknown> | undefined;
    const meta = (o?.metadata ?? {}) as { labels?: Record<string, unknown>; annotations?: Record<string, unknown> };
    if (meta.labels?.[SUBSTITUTE_KEY] === 'disabled' || meta.annotations?.[SUBSTITUTE_KEY] === 'disabled') return doc;
    let text: string;
    try {
      text = envsubst(doc, mapping);
    } catch (e) {
      const what = `${String(o?.kind ?? '')}/${String((meta as { name?: unknown }).name ?? '')}`;
      if (e instanceof EnvsubstError) throw new FluxSpecError(`post build failed for '${what}': envsubst error: variable substitution failed: ${e.message}`);
      throw e;
    }
    if (text === doc) return doc;
    rewritten = true;
    return reserialize(text, o);
  });
  return { docs: out, rewritten, placeholders: [...placeholders].sort() };
}

/** YAML 1.1 scalars as go-yaml v2 resolves them into an interface{}: no timestamps, no sexagesimal. */
const yaml11Scalars = (tags: Tags): Tags =>
  tags.filter((t) => typeof t !== 'object' || (t.format !== 'TIME' && !/:(timestamp|binary|omap|pairs|set)$/.test(t.tag)));

/**
 * Flux turns the substituted text into JSON (sigs.k8s.io/yaml YAMLToJSON, go-yaml v2: YAML 1.1
 * scalars) and kustomize writes it back with sorted keys. We do the same with the yaml library:
 * same content and key order; the bytes may differ from Go's encoder (line folding, quoting).
 */
function reserialize(text: string, original: Record<string, unknown> | undefined): string {
  let v: unknown;
  try {
    v = parse(text, { version: '1.1', merge: true, customTags: yaml11Scalars });
  } catch (e) {
    const meta = (original?.metadata ?? {}) as { name?: unknown };
    throw new FluxSpecError(`post build failed for '${String(original?.kind ?? '')}/${String(meta.name ?? '')}': envsubst error: YAMLToJSON: ${(e as Error).message.split('\n')[0]}`);
  }
  return stringify(v, { sortMapEntries: true, indentSeq: false, lineWidth: 0, version: '1.1' });
}
