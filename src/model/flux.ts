import { parseImageRef } from '../history/image-ref.ts';
import type { KubeObject, Observed } from '../observe/types.ts';
import { findObserved, groupKind } from '../observe/types.ts';
import { KUSTOMIZATION_FILES, kustomizationIn, loadAllSafe, nodesOf, prefetchGraph, walkGraph, type Graph, type WalkRules } from './kustomize.ts';
import { describeRef, registerEngine } from './registry.ts';
import { scopeGraph, settersOf } from './scope.ts';
import { sourceIgnore } from './sourceignore.ts';
import { joinInside, type TreeView } from './tree.ts';
import type { ModelInput, Setter } from './types.ts';

/**
 * What Flux's kustomize-controller builds for a Kustomization (research/render.md §1):
 *
 * - the source is the GitRepository's artifact, not a checkout: symlinks dropped, `.sourceignore`
 *   and `spec.ignore` applied (sourceignore.ts);
 * - `spec.path` inside it (securejoin: never outside; kustomization_controller.go L371-381);
 * - its kustomization file, or the one Flux generates where there is none: every `*.yaml`/`*.yml`
 *   below, recursively, a sub-folder with a kustomization of its own taken as a folder resource
 *   and not descended into (fluxcd/pkg kustomize/kustomize_generator.go generateKustomization);
 * - the Kustomization's own spec folded into that file in place: `targetNamespace`,
 *   `namePrefix`/`nameSuffix`, `patches` appended, `components` appended, `images` merged by name
 *   (GenerateManifest L162-347) — fields of the cluster object, which no commit changes;
 * - built with LoadRestrictionsNone and builtin plugins only (kustomize_generator.go Build), then
 *   post-build substitution per object (kustomize_varsub.go).
 */

type Rec = Record<string, unknown>;
const isRec = (v: unknown): v is Rec => typeof v === 'object' && v !== null && !Array.isArray(v);

export interface FluxGraph extends Graph {
  /** spec.path, normalised ("" = the artifact root) */
  root: Graph['root'];
  rootDir: string;
  /** the resources Flux generates where spec.path has no kustomization file */
  generated?: string[];
  /** `.sourceignore` files read: inputs of the build */
  ignoreFiles: Array<{ path: string; oid: string }>;
  /** images and patches set by the Kustomization's own spec */
  specSetters: Setter[];
}

export function describeFlux(k: KubeObject): string {
  const path = String(k.spec?.path ?? './');
  return `Flux Kustomization ${k.metadata.namespace ? `${k.metadata.namespace}/` : ''}${k.metadata.name} (spec.path ${path})`;
}

/** The graph kustomize-controller builds for `kustomization` at one revision. */
export async function fluxGraph(view: TreeView, kustomization: KubeObject, gitRepository?: KubeObject): Promise<FluxGraph> {
  const spec: Rec = isRec(kustomization.spec) ? kustomization.spec : {};
  const name = `Kustomization ${kustomization.metadata.namespace ? `${kustomization.metadata.namespace}/` : ''}${kustomization.metadata.name}`;
  const rootDir = joinInside('', String(spec.path ?? './')) ?? '';
  const repoSpec: Rec = isRec(gitRepository?.spec) ? gitRepository.spec : {};
  // a backend that can list the folder in one request does so before it is walked (the .sourceignore search reads every folder)
  await view.prefetchTree(rootDir);
  const ignore = await sourceIgnore(view, rootDir, typeof repoSpec.ignore === 'string' ? repoSpec.ignore : undefined);
  const rules: WalkRules = { engine: 'Flux', symlinks: 'drop', load: 'anywhere', ignored: ignore.ignored, helm: false, memoKey: `flux|${ignore.key}` };
  // a reader that fetches on demand gets the graph's kustomizations (and, for the kustomization
  // Flux generates, every manifest) in one request rather than one at a time
  if (await kustomizationIn(view, rootDir, rules)) await prefetchGraph(view, rootDir);
  else await view.prefetch(rootDir, 'manifests', (n) => KUSTOMIZATION_FILES.includes(n) || /\.ya?ml$/.test(n));
  let generated: string[] | undefined;
  const scanErrors: string[] = [];
  const graph = await walkGraph(view, rootDir, rules, async () => {
    const scanned = await scanManifests(view, rootDir, rules);
    scanErrors.push(...scanned.errors);
    generated = scanned.resources;
    return { apiVersion: 'kustomize.config.k8s.io/v1beta1', kind: 'Kustomization', resources: scanned.resources };
  });
  const opaque = [...graph.opaque];
  const global = (text: string) => opaque.push({ dir: rootDir, text });
  const missing = [...scanErrors, ...graph.missing];
  if (rootDir && (await view.resolve(rootDir, 'drop')).kind !== 'dir') {
    missing.unshift(`${name}: spec.path ./${rootDir} is not a folder of the source at this revision ("kustomization path not found")`);
  }
  // spec.components: local, relative to spec.path, appended to the root kustomization (GenerateManifest L255-269)
  for (const c of Array.isArray(spec.components) ? spec.components : []) {
    if (typeof c !== 'string') continue;
    const sub = await walkGraph(view, joinInside(rootDir, c) ?? c, rules);
    if (sub.root.file || sub.root.resources.length) graph.root.components.push(sub.root);
    for (const [p, f] of sub.files) graph.files.set(p, f);
    missing.push(...sub.missing.filter(() => spec.ignoreMissingComponents !== true));
    opaque.push(...sub.opaque);
  }
  const postBuild = isRec(spec.postBuild) ? spec.postBuild : {};
  if (Array.isArray(postBuild.substituteFrom) && postBuild.substituteFrom.length > 0) {
    global(`${name} substitutes variables from ${postBuild.substituteFrom.map((s) => (isRec(s) ? `${String(s.kind)}/${String(s.name)}` : '?')).join(', ')} in the cluster after the build (kustomize_varsub.go): their values are not in the repository`);
  }
  if (isRec(spec.decryption)) global(`${name} decrypts SOPS-encrypted files (spec.decryption): their plain text is not in the repository`);
  if (Array.isArray(repoSpec.include) && repoSpec.include.length > 0) global(`the GitRepository copies other repositories' artifacts into this source (spec.include): those files are not in this repository`);
  return { ...graph, opaque, missing, rootDir, ...(generated ? { generated } : {}), ignoreFiles: ignore.files, specSetters: specSetters(spec, name) };
}

/**
 * Flux's generated kustomization: every YAML file below `dir` (walk order), a sub-folder with a
 * kustomization file as a folder resource, not descended into; a file that is not Kubernetes YAML
 * fails the build ("failed to decode Kubernetes YAML from …"). Depends on everything below `dir`;
 * each folder's part is remembered by its tree oid, so a revision costs its changed folders only.
 */
async function scanManifests(view: TreeView, dir: string, rules: WalkRules): Promise<{ resources: string[]; errors: string[] }> {
  const resources: string[] = [];
  const errors: string[] = [];
  const relOf = (path: string) => `./${path.slice(dir ? dir.length + 1 : 0)}`;
  const decodeError = (path: string) => `failed to decode Kubernetes YAML from ${path}: Flux's generated kustomization takes every YAML file under spec.path (exclude it with .sourceignore)`;
  const isKube = async (oid: string) => {
    const docs = await view.parse('yaml-all', oid, loadAllSafe);
    return docs.every((d) => isRec(d) && typeof d.apiVersion === 'string' && typeof d.kind === 'string');
  };
  const hasKustomization = (entries: Map<string, { type: string; mode: string }>) => KUSTOMIZATION_FILES.some((k) => entries.get(k)?.type === 'blob' && entries.get(k)?.mode !== '120000');

  const root = view.changed ? undefined : await view.dependOnTree(dir);
  if (root !== undefined && rules.memoKey) {
    // below `sub` (tree `oid`): the generated entries, as paths relative to `sub`, and which do not decode
    type Found = Array<{ rel: string; bad: boolean }>;
    const walk = async (sub: string, oid: string): Promise<Found> => {
      const key = `fluxscan|${rules.memoKey}|${sub}|${oid}`;
      const known = view.memo.get(key) as Found | undefined;
      if (known) return known;
      const out: Found = [];
      const entries = [...(await view.entriesOf(oid, sub))].sort(([a], [b]) => (a < b ? -1 : 1));
      for (const [name, e] of entries) {
        const path = sub ? `${sub}/${name}` : name;
        if (e.mode === '120000' || rules.ignored?.(path, e.type === 'tree')) continue;
        if (e.type === 'tree') {
          if (hasKustomization(await view.entriesOf(e.oid, path))) out.push({ rel: name, bad: false });
          else for (const f of await walk(path, e.oid)) out.push({ rel: `${name}/${f.rel}`, bad: f.bad });
          continue;
        }
        if (e.type !== 'blob' || !/\.ya?ml$/.test(name)) continue;
        // Flux's build stops at a file that does not decode; the model goes on (the file is still what the build reads) and says so
        out.push({ rel: name, bad: !(await isKube(e.oid)) });
      }
      view.memo.set(key, out);
      return out;
    };
    for (const f of await walk(dir, root)) {
      const path = dir ? `${dir}/${f.rel}` : f.rel;
      if (f.bad) errors.push(decodeError(path));
      resources.push(relOf(path));
    }
    return { resources, errors };
  }
  const walk = async (sub: string): Promise<void> => {
    const entries = [...(await view.list(sub))].sort(([a], [b]) => (a < b ? -1 : 1));
    for (const [name, e] of entries) {
      const path = sub ? `${sub}/${name}` : name;
      if (e.mode === '120000' || rules.ignored?.(path, e.type === 'tree')) continue;
      if (e.type === 'tree') {
        if (hasKustomization(await view.list(path))) resources.push(relOf(path));
        else await walk(path);
        continue;
      }
      if (e.type !== 'blob' || !/\.ya?ml$/.test(name)) continue;
      if (!(await isKube(e.oid))) errors.push(decodeError(path));
      resources.push(relOf(path));
    }
  };
  await walk(dir);
  return { resources, errors };
}

/** Images and patches the Kustomization's own spec sets (cluster object fields). */
function specSetters(spec: Rec, name: string): Setter[] {
  const out: Setter[] = [];
  for (const i of Array.isArray(spec.images) ? spec.images : []) {
    if (!isRec(i)) continue;
    const repo = typeof i.newName === 'string' ? i.newName : typeof i.name === 'string' ? i.name : undefined;
    const tag = typeof i.newTag === 'string' ? i.newTag : undefined;
    const digest = typeof i.digest === 'string' ? i.digest : undefined;
    const image = repo && (tag || digest) ? parseImageRef(`${repo}${tag ? `:${tag}` : ''}${digest ? `@${digest}` : ''}`) : undefined;
    if (image) out.push({ what: 'image', where: `${name} spec.images`, inRepo: false, image });
  }
  for (const p of Array.isArray(spec.patches) ? spec.patches : []) {
    if (!isRec(p) || typeof p.patch !== 'string') continue;
    for (const text of imageTexts(p.patch)) {
      const image = parseImageRef(text);
      if (image && (image.tag || image.digest)) out.push({ what: 'image', where: `${name} spec.patches`, inRepo: false, image });
    }
  }
  return out;
}

/** The strings of a patch text that may be image references (inline patches set images too). */
export function imageTexts(patch: string): string[] {
  const out: string[] = [];
  const walk = (v: unknown) => {
    if (typeof v === 'string') {
      if (v.includes(':') || v.includes('@')) out.push(v);
    } else if (Array.isArray(v)) v.forEach(walk);
    else if (isRec(v)) Object.values(v).forEach(walk);
  };
  loadAllSafe(Buffer.from(patch)).forEach(walk);
  return out;
}


const FLUX_KUSTOMIZATION = 'kustomize.toolkit.fluxcd.io/Kustomization';
const GIT_REPOSITORY = 'source.toolkit.fluxcd.io/GitRepository';

/** `.sourceignore` files that may appear above a Flux root and change its artifact. */
function ancestorIgnoreFiles(root: string): string[] {
  const parts = root ? root.split('/') : [];
  return parts.map((_, i) => [...parts.slice(0, i), '.sourceignore'].join('/'));
}

registerEngine({
  kind: FLUX_KUSTOMIZATION,
  engine: 'flux',
  describe: describeFlux,
  unusable: (k) => (k.spec && typeof k.spec === 'object' && 'sourceRef' in k.spec ? undefined : `${describeRef(k)} has no spec here (an event carries only its status)`),
  async build(view, k, scope, observed) {
    const ref = k.spec?.sourceRef ?? {};
    const repo = findObserved(observed, (o) => groupKind(o.apiVersion, o.kind) === GIT_REPOSITORY && o.name === ref.name && (o.namespace ?? '') === (ref.namespace ?? k.metadata.namespace ?? ''));
    const graph = await fluxGraph(view, k, repo);
    const scoped = await scopeGraph(view, graph.root, scope);
    const inputs = new Map<string, ModelInput>(scoped.inputs.map((i) => [i.path, i]));
    for (const f of graph.ignoreFiles) inputs.set(f.path, { path: f.path, digest: f.oid, role: 'config' });
    await view.prefetchBlobs(scoped.contentFiles.map((f) => f.oid));
    const setters = [...(await settersOf(view, scoped.contentFiles, scoped.inline)), ...graph.specSetters];
    // path → oid of every file of the graph, made when a render asks (a history walk builds many models and renders none)
    let files: Map<string, string> | undefined;
    let regions: string[] | undefined;
    const graphFiles = graph.files;
    return {
      engine: 'flux',
      describe: describeFlux(k),
      inputs,
      setters,
      opaque: [...graph.opaque.filter((o) => scoped.dirs.has(o.dir)).map((o) => o.text), ...scoped.notes],
      missing: graph.missing,
      builds: scoped.builds,
      // made when asked (a walk of a 2,200-application graph builds many models and asks none)
      get regions() {
        return (regions ??= [...new Set([graph.rootDir, ...nodesOf(graph.root).map((n) => n.dir), ...inputs.keys(), ...ancestorIgnoreFiles(graph.rootDir)])]);
      },
      render: {
        engine: 'flux',
        root: graph.rootDir,
        get files() {
          return (files ??= new Map([...graphFiles].map(([p, f]) => [p, f.oid])));
        },
        flux: { spec: (k.spec ?? {}) as Record<string, unknown>, ...(graph.generated ? { generatedResources: graph.generated } : {}) } },
    };
  },
});

