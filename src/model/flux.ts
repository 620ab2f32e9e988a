import { parseImageRef } from '../observe/image-ref.ts';
import type { KubeObject, Observed } from '../observe/types.ts';
import { findObserved, groupKind } from '../observe/types.ts';
import { cutOf, KUSTOMIZATION_FILES, kustomizationIn, loadAllSafe, nodesOf, prefetchGraph, prefetchNear, renamesOutside, walkGraph, type Graph, type WalkRules } from './kustomize.ts';
import { describeRef, registerEngine } from './registry.ts';
import { digestOf, scopeGraph, settersOf, type TargetScope } from './scope.ts';
import { findOwnManifest, MAX_MANIFEST_FILES, substituted } from './own-manifest.ts';
import { substitutedSetters, substitution } from './substitute.ts';
import { LazySourceIgnore } from './sourceignore.ts';
import { joinInside, within, type TreeView } from './tree.ts';
import { ABSENT } from './reads.ts';
import type { ModelInput, RenderSpec, Setter, WholeBuild } from './types.ts';

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
 *   (GenerateManifest L162-347) — fields of the cluster object, or of the Kustomization's own
 *   manifest where the target's paths hold it (ownSpec: a parent applies that file, so a commit
 *   changes them);
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

/**
 * The graph kustomize-controller builds for `kustomization` at one revision. With `anchors` (the
 * target's paths), only the part that reaches them is read (kustomize.ts WalkOptions): the
 * kustomizations on the way from spec.path and everything in the anchors; `graph.pruned` says
 * whether anything was left unread.
 */
export async function fluxGraph(view: TreeView, kustomization: KubeObject, gitRepository?: KubeObject, anchors?: string[], manifest?: { path: string }): Promise<FluxGraph> {
  const spec: Rec = isRec(kustomization.spec) ? kustomization.spec : {};
  const name = `Kustomization ${kustomization.metadata.namespace ? `${kustomization.metadata.namespace}/` : ''}${kustomization.metadata.name}`;
  const rootDir = joinInside('', String(spec.path ?? './')) ?? '';
  const repoSpec: Rec = isRec(gitRepository?.spec) ? gitRepository.spec : {};
  const specIgnore = typeof repoSpec.ignore === 'string' ? repoSpec.ignore : undefined;
  const ignore = new LazySourceIgnore(view, rootDir, specIgnore);
  const rules: WalkRules = {
    engine: 'Flux', symlinks: 'drop', load: 'anywhere', helm: false,
    ignored: (file, isDir) => ignore.ignored(file, isDir),
    sourceWide: () => ignore.wide,
    // the ignore rules a remembered reading depends on are its guards (reads.ts): only spec.ignore keys it
    memoKey: `flux|${JSON.stringify(specIgnore ?? null)}`,
  };
  // a reader that fetches on demand gets what the walk reads ahead, a level to a request
  if (anchors) await prefetchNear([view], rootDir, anchors);
  else {
    // a backend that can list the folder in one request does so before it is walked whole
    await view.prefetchTree(rootDir);
    // a reader that fetches on demand gets the graph's kustomizations (and, for the kustomization
    // Flux generates, every manifest) in one request rather than one at a time
    if (await kustomizationIn(view, rootDir, rules)) await prefetchGraph(view, rootDir);
    else await view.prefetch(rootDir, 'manifests', (n) => KUSTOMIZATION_FILES.includes(n) || /\.ya?ml$/.test(n));
  }
  let generated: string[] | undefined;
  const scanErrors: string[] = [];
  let scanPruned = false;
  const graph = await walkGraph(view, rootDir, rules, async () => {
    const scanned = await scanManifests(view, rootDir, rules, anchors);
    scanErrors.push(...scanned.errors);
    generated = scanned.resources;
    scanPruned = scanned.pruned;
    return { apiVersion: 'kustomize.config.k8s.io/v1beta1', kind: 'Kustomization', resources: scanned.resources };
  }, anchors ? { anchors } : {});
  if (scanPruned) graph.pruned = true;
  // what the generated kustomization lists that the walk left unread is not rendered either (the cut)
  const left = new Set(graph.root.resources.filter((r) => r.kind === 'pruned').map((r) => r.entry));
  if (generated && left.size > 0) generated = generated.filter((e) => !left.has(e));
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
  if (isRec(spec.decryption)) global(`${name} decrypts SOPS-encrypted files (spec.decryption): their plain text is not in the repository`);
  if (Array.isArray(repoSpec.include) && repoSpec.include.length > 0) global(`the GitRepository copies other repositories' artifacts into this source (spec.include): those files are not in this repository`);
  return { ...graph, opaque, missing, rootDir, ...(generated ? { generated } : {}), ignoreFiles: ignoreFilesRead(view), specSetters: specSetters(spec, manifest ? { where: manifest.path, inRepo: true } : { where: `${name} spec`, inRepo: false }) };
}

/**
 * The `.sourceignore` files the build's answers depended on (the guards it read, its remembered
 * parts' included): inputs of the build, whichever part asked first.
 */
function ignoreFilesRead(view: TreeView): Array<{ path: string; oid: string }> {
  const out = new Map<string, string>();
  for (const [path, value] of view.reads.allGuards()) {
    if (value === ABSENT || !(path === '.sourceignore' || path.endsWith('/.sourceignore'))) continue;
    const [mode, oid] = value.split(' ');
    if (mode !== '120000' && oid) out.set(path, oid);
  }
  return [...out].sort(([a], [b]) => (a < b ? -1 : 1)).map(([path, oid]) => ({ path, oid }));
}

/**
 * Flux's generated kustomization: every YAML file below `dir` (walk order), a sub-folder with a
 * kustomization file as a folder resource, not descended into; a file that is not Kubernetes YAML
 * fails the build ("failed to decode Kubernetes YAML from …"). Depends on everything below `dir`;
 * each folder's part is remembered by its tree oid (and the `.sourceignore` files above it), so a
 * revision costs its changed folders only.
 *
 * With `anchors` (the target's paths), only the folders on the way to them and in them are
 * scanned (kustomize.ts WalkOptions): the generated kustomization then lists the part of the
 * build that reaches the target, the cut that is rendered (`pruned` says whether it is one).
 */
async function scanManifests(view: TreeView, dir: string, rules: WalkRules, anchors?: string[]): Promise<{ resources: string[]; errors: string[]; pruned: boolean }> {
  const resources: string[] = [];
  const errors: string[] = [];
  const relOf = (path: string) => `./${path.slice(dir ? dir.length + 1 : 0)}`;
  const decodeError = (path: string) => `failed to decode Kubernetes YAML from ${path}: Flux's generated kustomization takes every YAML file under spec.path (exclude it with .sourceignore)`;
  const isKube = async (oid: string, where: string) => {
    const docs = await view.parse('yaml-all', oid, loadAllSafe, where);
    return docs.every((d) => isRec(d) && typeof d.apiVersion === 'string' && typeof d.kind === 'string');
  };
  const hasKustomization = (entries: Map<string, { type: string; mode: string }>) => KUSTOMIZATION_FILES.some((k) => entries.get(k)?.type === 'blob' && entries.get(k)?.mode !== '120000');
  const ignored = async (path: string, isDir: boolean) => Boolean(await rules.ignored?.(path, isDir));
  const ends = anchors?.map((a) => a.replace(/\/+$/, ''));
  let pruned = false;

  /** Every YAML file and kustomization folder below `sub`, read through the view (its listings recorded). */
  const walkListed = async (sub: string, onTheWay: boolean): Promise<void> => {
    const entries = [...(await view.list(sub))].sort(([a], [b]) => (a < b ? -1 : 1));
    for (const [name, e] of entries) {
      const path = sub ? `${sub}/${name}` : name;
      // on the way to the anchors: a folder neither in one nor above one is left unread (asked first: it costs no read)
      const inEnd = !onTheWay || ends!.some((a) => within(path, a));
      if (e.type === 'tree' && !inEnd && !ends!.some((a) => within(a, path))) {
        pruned = true;
        continue;
      }
      if (e.mode === '120000' || (await ignored(path, e.type === 'tree'))) continue;
      if (e.type === 'tree') {
        if (hasKustomization(await view.list(path))) resources.push(relOf(path));
        else await walkListed(path, !inEnd);
        continue;
      }
      if (e.type !== 'blob' || !/\.ya?ml$/.test(name)) continue;
      if (!(await isKube(e.oid, path))) errors.push(decodeError(path));
      resources.push(relOf(path));
    }
  };
  if (ends && !ends.some((a) => within(dir, a))) {
    await walkListed(dir, true);
    return { resources, errors, pruned };
  }

  const root = view.changed ? undefined : await view.dependOnTree(dir);
  if (root !== undefined && rules.memoKey) {
    // the `.sourceignore` files above `dir` decide answers below it as much as the tree does
    const parts = dir ? dir.split('/') : [];
    let above = '';
    for (let i = 0; i < parts.length; i++) {
      const e = await view.guardEntry([...parts.slice(0, i), '.sourceignore'].join('/'));
      above += `${e ? e.oid : ABSENT},`;
    }
    // below `sub` (tree `oid`): the generated entries, as paths relative to `sub`, and which do not decode
    type Found = Array<{ rel: string; bad: boolean }>;
    const walk = async (sub: string, oid: string, chain: string): Promise<Found> => {
      const entries = [...(await view.entriesOf(oid, sub))].sort(([a], [b]) => (a < b ? -1 : 1));
      const own = entries.find(([n]) => n === '.sourceignore')?.[1];
      const rulesKey = `${chain}${own ? own.oid : ABSENT},`;
      const key = `fluxscan|${rules.memoKey}|${sub}|${oid}|${rulesKey}`;
      const known = view.memo.get(key) as Found | undefined;
      if (known) return known;
      const wideBefore = rules.sourceWide?.() ?? 0;
      const out: Found = [];
      for (const [name, e] of entries) {
        const path = sub ? `${sub}/${name}` : name;
        if (e.mode === '120000' || (await ignored(path, e.type === 'tree'))) continue;
        if (e.type === 'tree') {
          if (hasKustomization(await view.entriesOf(e.oid, path))) out.push({ rel: name, bad: false });
          else for (const f of await walk(path, e.oid, rulesKey)) out.push({ rel: `${name}/${f.rel}`, bad: f.bad });
          continue;
        }
        if (e.type !== 'blob' || !/\.ya?ml$/.test(name)) continue;
        // Flux's build stops at a file that does not decode; the model goes on (the file is still what the build reads) and says so
        out.push({ rel: name, bad: !(await isKube(e.oid, path)) });
      }
      if ((rules.sourceWide?.() ?? 0) === wideBefore) view.memo.set(key, out);
      return out;
    };
    for (const f of await walk(dir, root, above)) {
      const path = dir ? `${dir}/${f.rel}` : f.rel;
      if (f.bad) errors.push(decodeError(path));
      resources.push(relOf(path));
    }
    return { resources, errors, pruned };
  }
  await walkListed(dir, false);
  return { resources, errors, pruned };
}

/** Images and patches the Kustomization's own spec sets: fields of its manifest in git, else of the cluster object. */
function specSetters(spec: Rec, own: { where: string; inRepo: boolean }): Setter[] {
  const out: Setter[] = [];
  for (const i of Array.isArray(spec.images) ? spec.images : []) {
    if (!isRec(i)) continue;
    const repo = typeof i.newName === 'string' ? i.newName : typeof i.name === 'string' ? i.name : undefined;
    const tag = typeof i.newTag === 'string' ? i.newTag : undefined;
    const digest = typeof i.digest === 'string' ? i.digest : undefined;
    const image = repo && (tag || digest) ? parseImageRef(`${repo}${tag ? `:${tag}` : ''}${digest ? `@${digest}` : ''}`) : undefined;
    if (image) out.push({ what: 'image', where: own.inRepo ? own.where : `${own.where}.images`, inRepo: own.inRepo, image });
  }
  for (const p of Array.isArray(spec.patches) ? spec.patches : []) {
    if (!isRec(p) || typeof p.patch !== 'string') continue;
    for (const text of imageTexts(p.patch)) {
      const image = parseImageRef(text);
      if (image && (image.tag || image.digest)) out.push({ what: 'image', where: own.inRepo ? own.where : `${own.where}.patches`, inRepo: own.inRepo, image });
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

/** The Flux Kustomization that applies `k` (its `kustomize.toolkit.fluxcd.io/name` labels), when observed with its spec. */
function parentOf(k: KubeObject, observed: readonly Observed[]): KubeObject | undefined {
  const labels = k.metadata.labels ?? {};
  const name = labels['kustomize.toolkit.fluxcd.io/name'];
  const namespace = labels['kustomize.toolkit.fluxcd.io/namespace'] ?? k.metadata.namespace;
  const parent = name ? findObserved(observed, (o) => groupKind(o.apiVersion, o.kind) === FLUX_KUSTOMIZATION && o.name === name && (o.namespace ?? '') === (namespace ?? '')) : undefined;
  return parent && isRec(parent.spec) && parent !== k ? parent : undefined;
}

/**
 * The files that may make a substituteFrom ConfigMap/Secret: what this Kustomization's build reads,
 * the target's paths, and what the parent Kustomization that applies it reads (its
 * `kustomize.toolkit.fluxcd.io/name` labels name it), when the parent is observed.
 */
async function substituteCandidates(view: TreeView, graph: FluxGraph, scope: TargetScope, observed: readonly Observed[], k: KubeObject, repo: KubeObject | undefined): Promise<Map<string, string>> {
  const files = new Map<string, string>([...graph.files].map(([p, f]) => [p, f.oid]));
  let looked = 0;
  const walk = async (dir: string): Promise<void> => {
    for (const [name, e] of await view.list(dir)) {
      if (looked > MAX_MANIFEST_FILES) return;
      const p = dir ? `${dir}/${name}` : name;
      if (e.type === 'tree') await walk(p);
      else if (e.type === 'blob' && e.mode !== '120000' && /\.(ya?ml|json)$|(^|\/)Kustomization$/.test(p)) {
        looked++;
        if (!files.has(p)) files.set(p, e.oid);
      }
    }
  };
  for (const d of scope.paths) {
    const dir = d.replace(/\/+$/, '');
    if ((await view.entry(dir))?.type === 'tree') await walk(dir);
  }
  const parent = parentOf(k, observed);
  if (parent) {
    for (const [p, f] of (await fluxGraph(view, parent, repo)).files) if (!files.has(p)) files.set(p, f.oid);
  }
  return files;
}

/**
 * The Kustomization's spec at this revision: its manifest's, where the target's paths hold the
 * file that declares it (applied by a parent Kustomization: what that file says is what
 * kustomize-controller builds once the parent applies it), else the cluster object's. A field
 * whose text carries a `${var}` of the parent's post-build substitution keeps the cluster's
 * value (the substituted one); `sourceRef` left out is the cluster's.
 */
async function ownSpec(view: TreeView, k: KubeObject, scope: TargetScope, observed: readonly Observed[], repo: KubeObject | undefined): Promise<{ spec: Rec; manifest?: { path: string; digest: string }; note?: string; regions: string[] }> {
  const cluster: Rec = isRec(k.spec) ? k.spec : {};
  const ref = {
    group: 'kustomize.toolkit.fluxcd.io', kind: 'Kustomization', name: k.metadata.name, ...(k.metadata.namespace ? { namespace: k.metadata.namespace } : {}),
    // one file per cluster folder: the one that builds the same folder as the cluster object
    prefer: (s: Rec) => s.path === cluster.path,
    // a patch of some of its fields is not its manifest: the manifest names its source
    declares: (s: Rec) => isRec(s.sourceRef),
  };
  let found = await findOwnManifest(view, ref, scope.paths);
  // where the parent that applies it is observed, only a file its build reads is the object's (not another cluster's copy)
  const parent = parentOf(k, observed);
  if (parent && (found.found || found.ambiguous)) {
    const applied = (await fluxGraph(view, parent, repo)).files;
    const candidates = found.found ? [found.found.path] : (found.ambiguous ?? []);
    const inParent = candidates.filter((p) => applied.has(p));
    if (inParent.length === 0) return { spec: cluster, regions: [], note: `${describeRef(k)} is declared in ${candidates.slice(0, 3).join(', ')}, which ${describeRef(parent)}, the parent that applies it, does not read (another cluster's copy): its spec is taken as the cluster reports it` };
    if (inParent.length === 1 && found.found?.path !== inParent[0]) found = await findOwnManifest(view, ref, [inParent[0]!]);
  }
  if (found.ambiguous) return { spec: cluster, regions: [], note: `${describeRef(k)} is declared by ${found.ambiguous.length} files in the target's paths (${found.ambiguous.slice(0, 3).join(', ')}): its spec is taken as the cluster reports it` };
  if (!found.found) return { spec: cluster, regions: [] };
  const spec: Rec = {};
  for (const [key, v] of Object.entries(found.found.spec)) spec[key] = substituted(v) && key in cluster ? cluster[key] : v;
  if (!isRec(spec.sourceRef)) spec.sourceRef = cluster.sourceRef;
  return { spec, manifest: { path: found.found.path, digest: digestOf(found.found.spec) }, regions: [found.found.path] };
}

registerEngine({
  kind: FLUX_KUSTOMIZATION,
  engine: 'flux',
  describe: describeFlux,
  unusable: (k) => (k.spec && typeof k.spec === 'object' && 'sourceRef' in k.spec ? undefined : `${describeRef(k)} has no spec here (an event carries only its status)`),
  prefetch: (views, k, scope) => prefetchNear(views, joinInside('', String(k.spec?.path ?? './')) ?? '', scope.paths),
  async build(view, k, scope, observed) {
    const ref = k.spec?.sourceRef ?? {};
    const repo = findObserved(observed, (o) => groupKind(o.apiVersion, o.kind) === GIT_REPOSITORY && o.name === ref.name && (o.namespace ?? '') === (ref.namespace ?? k.metadata.namespace ?? ''));
    // only the part of the build that reaches the target's paths is read; where that part holds
    // nothing of the target (its folder moved, its objects are declared elsewhere), the whole is
    // the Kustomization's own manifest, where the target's paths hold it: its spec at this revision is that file's
    const own = await ownSpec(view, k, scope, observed, repo);
    const object: KubeObject = own.manifest ? { ...k, spec: own.spec } : k;
    let graph = await fluxGraph(view, object, repo, scope.paths, own.manifest);
    let scoped = await scopeGraph(view, graph.root, scope);
    if (graph.pruned && !scoped.builds) {
      graph = await fluxGraph(view, object, repo, undefined, own.manifest);
      scoped = await scopeGraph(view, graph.root, scope);
    }
    const inputs = new Map<string, ModelInput>(scoped.inputs.map((i) => [i.path, i]));
    for (const f of graph.ignoreFiles) inputs.set(f.path, { path: f.path, digest: f.oid, role: 'config' });
    if (own.manifest) inputs.set(own.manifest.path, { path: own.manifest.path, digest: own.manifest.digest, role: 'engine-object' });
    await view.prefetchBlobs(scoped.contentFiles.map((f) => f.oid));
    const setters = [...(await settersOf(view, scoped.contentFiles, scoped.inline)), ...graph.specSetters];
    // post-build variables: the substituteFrom sources the repository makes are inputs, and images are set through them
    const fluxSpecNow: Rec = isRec(object.spec) ? object.spec : {};
    const sub = await substitution(view, fluxSpecNow, k.metadata.namespace, () => substituteCandidates(view, graph, scope, observed, k, repo));
    const substituteNotes: string[] = [];
    if (sub) {
      for (const i of sub.inputs) if (!inputs.has(i.path)) inputs.set(i.path, i);
      setters.push(...(await substitutedSetters(view, scoped.contentFiles, sub)));
      if (sub.unknown.length) substituteNotes.push(`${describeRef(object)} substitutes variables from ${sub.unknown.join(', ')} in the cluster after the build (kustomize_varsub.go): made nowhere in the repository lastgood searched (the target's paths, what its Kustomization and the parent that applies it read), so their values are not verified`);
    }
    // path → oid of every file of the graph, made when a render asks (a history walk builds many models and renders none)
    let files: Map<string, string> | undefined;
    let regions: string[] | undefined;
    const graphFiles = graph.files;
    const fluxSpec = (object.spec ?? {}) as Record<string, unknown>;
    const cut = cutOf(graph);
    const read = graph;
    // the substituteFrom values the repository makes, and the files they come from: folded into the render
    const fromRepo = sub && Object.keys(sub.fromRepo).length ? { substituteFrom: { values: sub.fromRepo, complete: sub.unknown.length === 0 } } : {};
    const folded = [...(own.manifest ? [own.manifest.path] : []), ...(sub?.inputs.map((i) => i.path) ?? [])];
    let whole: Promise<WholeBuild> | undefined;
    return {
      engine: 'flux',
      describe: describeFlux(object),
      inputs,
      setters,
      opaque: [...graph.opaque.filter((o) => scoped.dirs.has(o.dir)).map((o) => o.text), ...scoped.notes, ...(own.note ? [own.note] : []), ...substituteNotes],
      missing: graph.missing,
      builds: scoped.builds,
      // made when asked (a walk of a 2,200-application graph builds many models and asks none)
      get regions() {
        if (regions) return regions;
        if (!graph.pruned) return (regions = [...new Set([graph.rootDir, ...nodesOf(graph.root).map((n) => n.dir), ...inputs.keys(), ...ancestorIgnoreFiles(graph.rootDir), ...own.regions])]);
        // the part that reaches the target: the kustomizations on the way (their files, not their
        // folders: a sibling application changes nothing here), the folders read whole, and the
        // .sourceignore files above any of them
        const above = new Set(graph.above ?? []);
        const files = (graph.above ?? []).flatMap((n) => (n.file ? [n.file.named ?? n.file.path] : []));
        const whole = nodesOf(graph.root).filter((n) => !above.has(n)).map((n) => n.dir);
        const ignores = [...whole, ...files, ...inputs.keys()].flatMap((p) => ancestorIgnoreFiles(p.includes('/') ? p.slice(0, p.lastIndexOf('/')) : ''));
        return (regions = [...new Set([...files, ...whole, ...inputs.keys(), ...ignores, ...ancestorIgnoreFiles(graph.rootDir), ...own.regions])]);
      },
      render: {
        engine: 'flux',
        root: graph.rootDir,
        get files() {
          return (files ??= new Map([...graphFiles].map(([p, f]) => [p, f.oid])));
        },
        flux: { spec: fluxSpec, ...(graph.generated ? { generatedResources: graph.generated } : {}), ...fromRepo },
        ...(folded.length ? { folded } : {}),
        ...(cut
          ? {
              // kustomize-controller folds spec.namePrefix/nameSuffix into the root (GenerateManifest): a rename across every resource
              cut: { ...cut, across: [...cut.across, ...['namePrefix', 'nameSuffix'].filter((f) => typeof fluxSpec[f] === 'string' && fluxSpec[f] !== '').map((f) => `spec.${f} of ${describeRef(object)}`)] },
              whole: () =>
                (whole ??= (async () => {
                  // read apart from this model's view: its reads stay those of the cut
                  const all = await fluxGraph(view.fork(), object, repo, undefined, own.manifest);
                  const spec: RenderSpec = { engine: 'flux', root: all.rootDir, files: new Map([...all.files].map(([p, f]) => [p, f.oid])), flux: { spec: fluxSpec, ...(all.generated ? { generatedResources: all.generated } : {}), ...fromRepo }, ...(folded.length ? { folded } : {}) };
                  return { spec, renames: renamesOutside(all, read) };
                })()),
            }
          : {}),
      },
    };
  },
});

