import path from 'node:path/posix';
import { loadYamlOr } from '../yaml-read.ts';
import { parseImageRef } from '../observe/image-ref.ts';
import { findObserved, type KubeObject, type Observed } from '../observe/types.ts';
import { readChart } from './chart.ts';
import { imageTexts } from './flux.ts';
import { cutOf, nodesOf, prefetchNear, renamesOutside, walkGraph, type GraphFile, type KNode, type WalkRules } from './kustomize.ts';
import { describeRef, registerEngine } from './registry.ts';
import { digestOf, inPaths, scopeGraph, settersOf, type TargetScope } from './scope.ts';
import { findOwnManifest } from './own-manifest.ts';
import { clean, joinInside, within, type TreeView } from './tree.ts';
import type { ModelInput, RenderSpec, Setter, TargetModel, WholeBuild } from './types.ts';
import { imageSetters, isRec, setParameter, type ValuesLayer } from './values.ts';

/**
 * What Argo CD's repo-server builds for an Application (research/render.md §2; argoproj/argo-cd
 * at 37ee009, reposerver/repository/repository.go unless said otherwise), per source of
 * `spec.source` or `spec.sources`:
 *
 * - `.argocd-source.yaml` and `.argocd-source-<appName>.yaml` in the app path are JSON-merge-patched
 *   into the source, tool fields only (mergeSourceParameters L1896-1946): argocd-image-updater's git
 *   write-back lands there (`kustomize.images`, `helm.parameters`), so those files set images;
 * - the source type: exactly one explicit `kustomize`/`helm`/`directory`/`plugin` block
 *   (types.go ExplicitType L3804-3829, after the merge above), else discovery by the app path's own
 *   files: a name ending in `Chart.yaml` → Helm, a kustomization file → Kustomize (set after Helm,
 *   so it wins), else Directory (util/app/discovery/discovery.go Discover L50-69, AppType L73-83);
 * - Directory: `*.yaml|yml|json|jsonnet` (L1995), the top folder only unless `recurse`,
 *   `include`/`exclude` globs on the path below the app path, files with `+argocd:skip-file-rendering`
 *   skipped (getPotentiallyValidManifestFile L2142-2216);
 * - Kustomize: `kustomize build` with its default LoadRestrictionsRootOnly unless argocd-cm's
 *   `kustomize.buildOptions` says otherwise (util/kustomize/kustomize.go L384-390), after
 *   `kustomize edit` applies the source's name prefix, images (L183-200), patches (L282-335), components (L337-378);
 * - Helm: `helm template` of the chart at the path, or of a chart from a Helm repository, with
 *   `valueFiles` (relative to the app path, `/…` from the repository root, `$ref/…` from the source
 *   with that `ref`, globs expanded: getResolvedValueFiles L1461-1573), then `values`/`valuesObject`
 *   (valuesObject wins: values.go L91-101), then `parameters` (helmTemplate L1285-1440);
 * - Plugin (config management plugins): opaque.
 *
 * Symlinks are followed while they stay inside the repository and refused outside it
 * (getPotentiallyValidManifestFile L2159-2183). Argo CD also refuses a whole repository that holds
 * any out-of-bounds symlink (L492-493, util/app/path CheckOutOfBoundsSymlinks); the model checks
 * the links on the way of what it reads only, not every link of the repository.
 *
 * Which repository a source reads cannot be told apart here (the configured repository's URL and
 * the source's `repoURL` are spelt in many ways): a git source with a `path`, and a `ref:` source,
 * are taken as this repository's; a source with `chart:` is a chart from a Helm repository.
 */

type Rec = Record<string, unknown>;
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

const APPLICATION = 'argoproj.io/Application';
const MANIFEST_FILE = /^.*\.(yaml|yml|json|jsonnet)$/;
const SKIP_MARKER = '+argocd:skip-file-rendering';
const KUSTOMIZATION_NAMES = ['kustomization.yaml', 'kustomization.yml', 'Kustomization'];

function sourcesOf(app: KubeObject): Array<{ source: Rec; field: string }> {
  const spec: Rec = isRec(app.spec) ? app.spec : {};
  if (Array.isArray(spec.sources) && spec.sources.length > 0) return spec.sources.filter(isRec).map((source, i) => ({ source, field: `spec.sources[${i}]` }));
  return isRec(spec.source) ? [{ source: spec.source, field: 'spec.source' }] : [];
}

export function describeArgo(app: KubeObject): string {
  const sources = sourcesOf(app);
  const one = (s: Rec) => (str(s.chart) ? `chart ${String(s.chart)} ${String(s.targetRevision ?? '')}`.trim() : str(s.path) !== undefined ? `path ${String(s.path)}` : str(s.ref) ? `ref ${String(s.ref)}` : 'no path');
  const what = sources.length === 1 ? one(sources[0]!.source) : `sources: ${sources.map((s) => one(s.source)).join('; ')}`;
  return `Argo CD Application ${app.metadata.namespace ? `${app.metadata.namespace}/` : ''}${app.metadata.name} (${what})`;
}

/**
 * RFC 7386 JSON merge patch (objects merge, null deletes, anything else replaces), as
 * mergeSourceParameters applies `.argocd-source*.yaml` with jsonpatch.MergePatch.
 */
function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isRec(patch)) return patch;
  const out: Rec = isRec(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

/**
 * A glob as Argo CD matches directory `include`/`exclude` (util/glob, gobwas/glob compiled without
 * separators: `*` crosses "/", `?` one character, `[…]`/`[!…]` classes, `{a,b}` alternatives).
 */
export function argoGlob(pattern: string): RegExp {
  let re = '';
  let depth = 0;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '\\' && i + 1 < pattern.length) re += `\\${pattern[++i]}`;
    else if (c === '*') re += '.*';
    else if (c === '?') re += '.';
    else if (c === '[') {
      const end = pattern.indexOf(']', i + 1);
      if (end < 0) re += '\\[';
      else {
        const body = pattern.slice(i + 1, end);
        re += `[${body.startsWith('!') ? `^${body.slice(1)}` : body}]`;
        i = end;
      }
    } else if (c === '{') {
      depth++;
      re += '(?:';
    } else if (c === '}' && depth > 0) {
      depth--;
      re += ')';
    } else if (c === ',' && depth > 0) re += '|';
    else re += c.replace(/[.+^$()|/]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}

const parseYaml = (bytes: Uint8Array, where?: string): unknown => loadYamlOr(bytes, (message) => ({ __error: message }), where);

/** What one build of the Application gathers across its sources. */
interface Acc {
  inputs: Map<string, ModelInput>;
  setters: Setter[];
  opaque: string[];
  missing: string[];
  regions: Set<string>;
  builds: boolean;
  renders: RenderSpec[];
  producing: number;
}

registerEngine({
  kind: APPLICATION,
  engine: 'argocd',
  describe: describeArgo,
  unusable: (app) => (sourcesOf(app).length > 0 ? undefined : `${describeRef(app)} has no spec here (an event carries only its status)`),
  async build(view, clusterApp, scope, observed) {
    const acc: Acc = { inputs: new Map(), setters: [], opaque: [], missing: [], regions: new Set(), builds: false, renders: [], producing: 0 };
    // the Application's own manifest, where the target's paths hold it (an app of apps applies it): its spec at this revision is that file's
    const own = await ownApplication(view, clusterApp, scope);
    const app: KubeObject = own.manifest ? { ...clusterApp, spec: own.spec } : clusterApp;
    if (own.manifest) addInput(acc, { path: own.manifest.path, digest: own.manifest.digest, role: 'engine-object' });
    if (own.note) acc.opaque.push(own.note);
    const sources = sourcesOf(app);
    const refs = new Map<string, Rec>();
    for (const { source } of sources) if (str(source.ref)) refs.set(`$${String(source.ref)}`, source);
    const buildOptions = kustomizeBuildOptions(observed);
    for (const { source, field } of sources) {
      // a ref-only source renders nothing: other sources read files through it (repository.go L663)
      if (sources.length > 1 && str(source.ref) && source.path === undefined && !str(source.chart)) continue;
      acc.producing++;
      const ctx: SourceCtx = { view, app, scope, acc, field, refs, buildOptions, name: `${describeRef(app)} ${field}`, ...(own.manifest ? { own: own.manifest.path } : {}) };
      if (str(source.chart)) await chartFromRepository(ctx, source);
      else if (/^oci:\/\//.test(String(source.repoURL ?? ''))) {
        // an OCI artifact source (Argo CD 3.1+, IsOCI): its files are not in this repository
        acc.opaque.push(`${ctx.name} reads the OCI artifact ${String(source.repoURL)} ${String(source.targetRevision ?? '')}: not this repository`.trim());
        acc.builds = true;
      } else if (typeof source.path === 'string') await gitSource(ctx, source);
      else acc.opaque.push(`${ctx.name} has neither a path nor a chart: the model cannot tell what it builds`);
    }
    return {
      engine: 'argocd',
      describe: describeArgo(app),
      inputs: acc.inputs,
      setters: acc.setters,
      opaque: acc.opaque,
      missing: acc.missing,
      builds: acc.builds,
      regions: [...acc.regions],
      // a render needs one kustomize build: an Application whose only manifest source is kustomize
      ...(acc.producing === 1 && acc.renders.length === 1 ? { render: acc.renders[0]! } : {}),
    } satisfies TargetModel;
  },
});

interface SourceCtx {
  view: TreeView;
  app: KubeObject;
  scope: TargetScope;
  acc: Acc;
  /** `spec.source` or `spec.sources[i]` */
  field: string;
  refs: Map<string, Rec>;
  buildOptions: string[];
  /** "Application argocd/shop spec.source": where cluster-set fields live, for messages */
  name: string;
  /** the file in git that declares the Application, when one does: its fields are set there, by commits */
  own?: string;
}

/** Where a field of the Application's own spec is set: its manifest in git, else the cluster object. */
const specOrigin = (ctx: SourceCtx, field: string): Origin => (ctx.own ? { where: ctx.own, inRepo: true } : { where: `${ctx.name}.${field}`, inRepo: false });

/**
 * The Application's spec at this revision: its manifest's, where the target's paths hold the file
 * that declares it (applied by a parent Application: Argo CD's app of apps), else the cluster
 * object's. An override written only to the cluster object (argocd-image-updater without git
 * write-back) is then not in the file, and the file's value is what a sync of the parent restores.
 */
async function ownApplication(view: TreeView, app: KubeObject, scope: TargetScope): Promise<{ spec: Rec; manifest?: { path: string; digest: string }; note?: string }> {
  const cluster: Rec = isRec(app.spec) ? app.spec : {};
  const sourcePaths = (spec: Rec) => JSON.stringify((Array.isArray(spec.sources) ? spec.sources : [spec.source]).map((s) => (isRec(s) ? s.path ?? s.chart : undefined)));
  const found = await findOwnManifest(view, {
    group: 'argoproj.io', kind: 'Application', name: app.metadata.name, ...(app.metadata.namespace ? { namespace: app.metadata.namespace } : {}),
    // one file per cluster folder: the one that builds the same paths as the cluster object
    prefer: (spec) => sourcePaths(spec) === sourcePaths(cluster),
    declares: (spec) => isRec(spec.source) || Array.isArray(spec.sources),
  }, scope.paths);
  if (found.ambiguous) return { spec: cluster, note: `${describeRef(app)} is declared by ${found.ambiguous.length} files in the target's paths (${found.ambiguous.slice(0, 3).join(', ')}): its spec is taken as the cluster reports it` };
  if (found.found && (isRec(found.found.spec.source) || Array.isArray(found.found.spec.sources))) return { spec: found.found.spec, manifest: { path: found.found.path, digest: digestOf(found.found.spec) } };
  return (await fromApplicationSet(view, app, scope, cluster)) ?? { spec: cluster };
}

/**
 * An Application an ApplicationSet generates (its ownerReference names it): where the target's
 * paths hold the ApplicationSet, its `spec.template.spec` is the Application's spec at that
 * revision, field by field. A field whose text holds a `{{…}}` of the generators' parameters keeps
 * the cluster's value (the rendered one), as a `${var}` of Flux's substitution does; a field the
 * template leaves out is not the Application's.
 */
async function fromApplicationSet(view: TreeView, app: KubeObject, scope: TargetScope, cluster: Rec): Promise<{ spec: Rec; manifest: { path: string; digest: string } } | undefined> {
  const owners = Array.isArray(app.metadata.ownerReferences) ? app.metadata.ownerReferences.filter(isRec) : [];
  const owner = owners.find((o) => o.kind === 'ApplicationSet' && typeof o.name === 'string');
  if (!owner) return undefined;
  const found = await findOwnManifest(view, { group: 'argoproj.io', kind: 'ApplicationSet', name: String(owner.name), ...(app.metadata.namespace ? { namespace: app.metadata.namespace } : {}) }, scope.paths);
  const template: Rec | undefined = found.found && isRec(found.found.spec.template) ? found.found.spec.template : undefined;
  if (!found.found || !template || !isRec(template.spec)) return undefined;
  const merged = fromTemplate(template.spec, cluster);
  if (!isRec(merged) || (!isRec(merged.source) && !Array.isArray(merged.sources))) return undefined;
  // the generators too: a parameter they give the template changes what is generated
  return { spec: merged, manifest: { path: found.found.path, digest: digestOf(found.found.spec) } };
}

/** A template's value where it is literal, the cluster's where it holds a `{{…}}` parameter (objects: key by key). */
function fromTemplate(template: unknown, cluster: unknown): unknown {
  if (isRec(template)) {
    const out: Rec = {};
    for (const [k, v] of Object.entries(template)) out[k] = fromTemplate(v, isRec(cluster) ? cluster[k] : undefined);
    return out;
  }
  return JSON.stringify(template ?? null).includes('{{') ? cluster : template;
}

/** argocd-cm `kustomize.buildOptions`, when the ConfigMap was observed (a flag such as `--load-restrictor LoadRestrictionsNone`). */
function kustomizeBuildOptions(observed: readonly Observed[]): string[] {
  const cm = findObserved(observed, (o) => o.kind === 'ConfigMap' && o.name === 'argocd-cm');
  const raw = (cm as unknown as { data?: unknown } | undefined)?.data;
  const data: Rec = isRec(raw) ? raw : {};
  return typeof data['kustomize.buildOptions'] === 'string' ? data['kustomize.buildOptions'].split(/\s+/).filter(Boolean) : [];
}

function addInput(acc: Acc, input: ModelInput): void {
  if (!acc.inputs.has(input.path)) acc.inputs.set(input.path, input);
  acc.regions.add(input.path);
}

function addGraphFile(acc: Acc, f: GraphFile, role = f.role): void {
  addInput(acc, { path: f.path, digest: f.oid, role });
  for (const l of f.via ?? []) addInput(acc, { path: l.path, digest: l.oid, role });
}

/** The release a Helm source renders: `helm.releaseName`, else the Application's name; its namespace. */
function releaseOf(ctx: SourceCtx, helm: Rec): string {
  const spec: Rec = isRec(ctx.app.spec) ? ctx.app.spec : {};
  const dest: Rec = isRec(spec.destination) ? spec.destination : {};
  const ns = str(helm.namespace) ?? str(dest.namespace);
  return `${ns ? `${ns}/` : ''}${str(helm.releaseName) ?? ctx.app.metadata.name}`;
}

// ---- a git source ---------------------------------------------------------------------------------

interface Origin {
  where: string;
  inRepo: boolean;
}

async function gitSource(ctx: SourceCtx, source: Rec): Promise<void> {
  const { view, acc } = ctx;
  const appPath = joinInside('', String(source.path));
  if (appPath === undefined) {
    acc.missing.push(`${ctx.name}.path ${String(source.path)} lies outside the repository (Argo CD refuses it)`);
    return;
  }
  acc.regions.add(appPath);
  const at = await view.resolve(appPath, 'follow');
  if (at.kind === 'escapes') {
    acc.missing.push(`${ctx.name}.path ${appPath} is a symlink to ${at.target}, outside the repository (Argo CD refuses it)`);
    return;
  }
  if (at.kind !== 'dir') {
    acc.missing.push(`${ctx.name}.path ${appPath || '.'} is not a folder of the repository at this revision ("app path does not exist")`);
    return;
  }
  for (const l of at.via ?? []) addInput(acc, { path: l.path, digest: l.oid, role: 'resource' });
  const dir = at.path;

  // .argocd-source.yaml, then .argocd-source-<appName>.yaml (appName is the Application's instance
  // name: "<namespace>_<name>" outside Argo CD's own namespace, types.go InstanceName)
  const entries = await view.list(dir);
  const own = [`.argocd-source-${ctx.app.metadata.name}.yaml`, `.argocd-source-${ctx.app.metadata.namespace ?? ''}_${ctx.app.metadata.name}.yaml`].find((n) => entries.has(n));
  let merged: Rec = source;
  const origins = new Map<string, Origin>();
  const clusterOrigin = (field: string): Origin => specOrigin(ctx, field);
  for (const name of ['.argocd-source.yaml', ...(own ? [own] : [])]) {
    const p = dir ? `${dir}/${name}` : name;
    acc.regions.add(p);
    const r = await view.resolve(p, 'follow');
    if (r.kind === 'escapes') {
      acc.missing.push(`${p} is a symlink to ${r.target}, outside the repository`);
      continue;
    }
    if (r.kind !== 'file') continue;
    addGraphFile(acc, { path: r.path, oid: r.oid, role: 'source-params', ...(r.via ? { via: r.via } : {}) });
    const patch = await view.parse('yaml', r.oid, parseYaml, r.path);
    if (isRec(patch) && typeof patch.__error === 'string') {
      acc.missing.push(`${p} does not parse (Argo CD: "error while parsing source parameters"): ${patch.__error}`);
      continue;
    }
    if (!isRec(patch)) continue;
    merged = mergePatch(merged, patch) as Rec;
    for (const tool of ['kustomize', 'helm', 'directory', 'plugin']) {
      const t = patch[tool];
      if (!isRec(t)) continue;
      for (const [k, v] of Object.entries(t)) {
        if (v === null) origins.delete(`${tool}.${k}`);
        else origins.set(`${tool}.${k}`, { where: p, inRepo: true });
      }
    }
  }
  // only the tools' fields may be overridden (mergeSourceParameters L1939-1943)
  merged = { ...merged, repoURL: source.repoURL, path: source.path, targetRevision: source.targetRevision, chart: source.chart };
  const origin = (field: string): Origin => origins.get(field) ?? clusterOrigin(field);

  const explicit = ['kustomize', 'helm', 'directory', 'plugin'].filter((k) => merged[k] !== undefined && merged[k] !== null);
  if (explicit.length > 1) {
    acc.missing.push(`${ctx.name}: multiple application sources defined: ${explicit.join(',')} (Argo CD refuses it)`);
    return;
  }
  let type = explicit[0];
  if (!type) {
    // discovery looks at the app path's own files only (the "." entry of Discover)
    let found = 'directory';
    for (const [name, e] of entries) {
      if (e.type === 'tree') continue;
      if (name.endsWith('Chart.yaml') && found === 'directory') found = 'helm';
      if (KUSTOMIZATION_NAMES.includes(name)) found = 'kustomize';
    }
    type = found;
  }
  const chosen = merged[type];
  const options: Rec = isRec(chosen) ? chosen : {};
  if (type === 'directory') await directory(ctx, dir, options);
  else if (type === 'kustomize') await kustomize(ctx, dir, options, origin);
  else if (type === 'helm') await helmAtPath(ctx, dir, options, origin);
  else await plugin(ctx, dir, options);
}

// ---- Directory ------------------------------------------------------------------------------------

async function directory(ctx: SourceCtx, dir: string, options: Rec): Promise<void> {
  const { view, acc, scope } = ctx;
  const recurse = options.recurse === true;
  const include = str(options.include);
  const exclude = str(options.exclude);
  const noExtensionFilter = options.disableExtensionFilter === true;
  // the whole folder is the target's when it lies in the target's paths
  const whole = scope.paths.some((p) => within(dir, clean(p)));
  const files: Array<{ rel: string; file: GraphFile }> = [];
  const skipped: GraphFile[] = [];
  const walk = async (sub: string): Promise<void> => {
    for (const [name, e] of [...(await view.list(sub))].sort(([a], [b]) => (a < b ? -1 : 1))) {
      const p = sub ? `${sub}/${name}` : name;
      // filepath.Walk does not follow a symlinked folder: a link is a file entry here
      if (e.type === 'tree') {
        if (recurse) await walk(p);
        continue;
      }
      if (e.type !== 'blob') continue;
      const rel = dir ? p.slice(dir.length + 1) : p;
      if (!noExtensionFilter && !MANIFEST_FILE.test(name)) continue;
      // include/exclude match the path below the app path, a link's own (L2191-2197)
      if (exclude && argoGlob(exclude).test(rel)) continue;
      if (include && !argoGlob(include).test(rel)) continue;
      let file: GraphFile;
      if (e.mode === '120000') {
        const r = await view.resolve(p, 'follow');
        if (r.kind === 'escapes') {
          acc.missing.push(`illegal filepath in symlink at ${rel}: ${p} points to ${r.target}, outside the repository (Argo CD refuses the application)`);
          if (whole || inPaths(p, scope.paths)) addInput(acc, { path: p, digest: e.oid, role: 'resource' });
          continue;
        }
        // a dangling link, or one to a folder, is skipped by Argo CD; the link itself decides that
        if (r.kind !== 'file') {
          if (whole || inPaths(p, scope.paths)) addInput(acc, { path: p, digest: e.oid, role: 'resource' });
          continue;
        }
        file = { path: r.path, oid: r.oid, role: 'resource', ...(r.via ? { via: r.via } : {}) };
      } else file = { path: p, oid: e.oid, role: 'resource' };
      const text = Buffer.from(await view.read(file.oid, file.path)).toString('utf8');
      if (text.includes(SKIP_MARKER)) {
        skipped.push(file);
        continue;
      }
      if (name.endsWith('.jsonnet')) acc.opaque.push(`${p} is Jsonnet, which Argo CD evaluates (with its libraries and variables): the model does not evaluate it`);
      files.push({ rel, file });
    }
  };
  await walk(dir);
  const node: KNode = { dir, doc: { resources: files.map((f) => f.rel) }, resources: files.map((f) => ({ kind: 'file' as const, entry: f.rel, file: f.file })), components: [], files: [], inline: [] };
  const scoped = await scopeGraph(view, node, scope);
  // the folder's file list is no file of its own (scopeGraph names it as Flux's generated kustomization)
  for (const i of scoped.inputs) if (!i.path.includes('(generated')) addInput(acc, i);
  // a file that carries the skip marker is read and renders nothing: removing the marker changes the build
  for (const f of skipped) {
    if (!whole && !inPaths(f.path, scope.paths) && !f.via?.some((l) => inPaths(l.path, scope.paths))) continue;
    addInput(acc, { path: f.path, digest: `skip:${SKIP_MARKER}`, role: 'resource' });
    for (const l of f.via ?? []) addInput(acc, { path: l.path, digest: l.oid, role: 'resource' });
  }
  acc.setters.push(...(await settersOf(view, scoped.contentFiles, [])));
  acc.opaque.push(...scoped.notes);
  acc.builds ||= scoped.builds;
}

// ---- Kustomize ------------------------------------------------------------------------------------

async function kustomize(ctx: SourceCtx, dir: string, options: Rec, origin: (field: string) => Origin): Promise<void> {
  const { view, acc, scope } = ctx;
  const rules: WalkRules = {
    engine: 'Argo CD',
    symlinks: 'follow',
    // argocd-cm kustomize.buildOptions are passed to `kustomize build` (kustomize.go L384-390)
    load: ctx.buildOptions.includes('LoadRestrictionsNone') || ctx.buildOptions.includes('--load-restrictor=LoadRestrictionsNone') ? 'anywhere' : 'root-only',
    helm: ctx.buildOptions.includes('--enable-helm'),
  };
  // only the part of the build that reaches the target's paths is read (kustomize.ts WalkOptions); the whole where that part holds nothing of it
  await prefetchNear([view], dir, scope.paths);
  let graph = await walkGraph(view, dir, rules, undefined, { anchors: scope.paths });
  if (graph.pruned && !(await scopeGraph(view, graph.root, scope)).builds) graph = await walkGraph(view, dir, rules);
  const cut = cutOf(graph);
  // kustomize.components: `kustomize edit add component`, relative to the app path (L337-378)
  for (const c of strings(options.components)) {
    const target = joinInside(dir, c);
    if (target === undefined) {
      acc.missing.push(`component ${c} of ${ctx.name}.kustomize lies outside the repository`);
      continue;
    }
    if (options.ignoreMissingComponents === true && (await view.resolve(target, 'follow')).kind !== 'dir') continue;
    const sub = await walkGraph(view, target, rules);
    if (sub.root.file) graph.root.components.push(sub.root);
    for (const [p, f] of sub.files) graph.files.set(p, f);
    graph.missing.push(...sub.missing);
    graph.opaque.push(...sub.opaque);
  }
  const scoped = await scopeGraph(view, graph.root, scope);
  for (const i of scoped.inputs) addInput(acc, i);
  const patchFiles: GraphFile[] = [];
  const inline: Array<{ where: string; text: string }> = [...scoped.inline];
  // kustomize.patches are appended to the kustomization's patches (L282-335): a file patch is loaded like any other
  for (const p of Array.isArray(options.patches) ? options.patches.filter(isRec) : []) {
    if (typeof p.path === 'string') {
      const target = joinInside(dir, p.path);
      const r = target === undefined ? undefined : await view.resolve(target, 'follow');
      if (r?.kind === 'file') {
        const f: GraphFile = { path: r.path, oid: r.oid, role: 'patch', ...(r.via ? { via: r.via, named: target! } : {}) };
        addGraphFile(acc, f);
        patchFiles.push(f);
        graph.files.set(f.path, f);
      } else acc.missing.push(`patch ${p.path} of ${ctx.name}.kustomize.patches does not exist${r?.kind === 'escapes' ? ' inside the repository' : ''}`);
    }
  }
  acc.setters.push(...(await settersOf(view, [...scoped.contentFiles, ...patchFiles], inline)), ...kustomizeOptionSetters(options, origin));
  // what the model cannot see into, said only where the target reads it (a remote base of a sibling application is not the target's)
  acc.opaque.push(...graph.opaque.filter((o) => scoped.dirs.has(o.dir)).map((o) => o.text), ...scoped.notes);
  acc.missing.push(...graph.missing);
  acc.builds ||= scoped.builds;
  for (const n of nodesOf(graph.root)) acc.regions.add(n.dir);
  // a file read through a symlink is written where the build names it too (a render writes files, not links);
  // a folder reached through a symlink is not: its render fails as the build would not (the render check then says so)
  const renderFiles = new Map([...graph.files].map(([p, f]) => [p, f.oid]));
  for (const n of nodesOf(graph.root)) {
    for (const f of [n.file, ...n.resources.map((r) => (r.kind === 'file' ? r.file : undefined)), ...n.files]) if (f?.named) renderFiles.set(f.named, f.oid);
  }
  for (const f of patchFiles) if (f.named) renderFiles.set(f.named, f.oid);
  const argocd = { kustomize: options, ...(ctx.buildOptions.length ? { buildOptions: ctx.buildOptions } : {}) };
  // the Application's own manifest and the .argocd-source files: folded into the kustomize options
  const folded = [...(ctx.own ? [ctx.own] : []), ...[...acc.inputs.values()].filter((i) => i.role === 'source-params').map((i) => i.path)];
  let whole: Promise<WholeBuild> | undefined;
  acc.renders.push({
    engine: 'argocd',
    root: dir,
    files: renderFiles,
    argocd,
    ...(folded.length ? { folded } : {}),
    ...(cut
      ? {
          // kustomize.namePrefix/nameSuffix of the Application are `kustomize edit` steps on the root: a rename across every resource
          cut: { ...cut, across: [...cut.across, ...['namePrefix', 'nameSuffix'].filter((f) => str(options[f])).map((f) => `${ctx.name}.kustomize.${f}`)] },
          whole: () =>
            (whole ??= (async () => {
              // read apart from this model's view, its components and patch files as above
              const all = await walkGraph(view.fork(), dir, rules);
              const files = new Map([...all.files].map(([p, f]) => [p, f.oid]));
              for (const [p, oid] of renderFiles) if (!files.has(p)) files.set(p, oid);
              for (const n of nodesOf(all.root)) {
                for (const f of [n.file, ...n.resources.map((r) => (r.kind === 'file' ? r.file : undefined)), ...n.files]) if (f?.named) files.set(f.named, f.oid);
              }
              return { spec: { engine: 'argocd', root: dir, files, argocd, ...(folded.length ? { folded } : {}) } satisfies RenderSpec, renames: renamesOutside(all, graph) };
            })()),
        }
      : {}),
  });
}

/**
 * Images set by the source's kustomize options (`kustomize edit set image`, inline patches): a field
 * of the Application, or of the `.argocd-source*.yaml` file that wrote it last. An image is
 * `[old=]new[:tag][@digest]` (types.go KustomizeImage).
 */
function kustomizeOptionSetters(options: Rec, origin: (field: string) => Origin): Setter[] {
  const out: Setter[] = [];
  const images = origin('kustomize.images');
  for (const text of strings(options.images)) {
    const rhs = text.includes('=') ? text.slice(text.indexOf('=') + 1) : text;
    const image = parseImageRef(rhs);
    if (image && (image.tag || image.digest)) out.push({ what: 'image', where: images.where, inRepo: images.inRepo, image });
  }
  const patches = origin('kustomize.patches');
  for (const p of Array.isArray(options.patches) ? options.patches.filter(isRec) : []) {
    if (typeof p.patch !== 'string') continue;
    for (const text of imageTexts(p.patch)) {
      const image = parseImageRef(text);
      if (image && (image.tag || image.digest)) out.push({ what: 'image', where: patches.where, inRepo: patches.inRepo, image });
    }
  }
  return out;
}

// ---- Helm -----------------------------------------------------------------------------------------

/** A chart kept in the repository at the app path. */
async function helmAtPath(ctx: SourceCtx, dir: string, options: Rec, origin: (field: string) => Origin): Promise<void> {
  const { view, acc } = ctx;
  const chart = await readChart(view, dir, { symlinks: 'follow', engine: 'Argo CD' });
  for (const f of chart.files) addGraphFile(acc, f);
  for (const d of chart.dirs) acc.regions.add(d);
  acc.missing.push(...chart.missing);
  acc.opaque.push(...chart.opaque);
  const release = releaseOf(ctx, options);
  if (chart.chartYaml) acc.setters.push({ what: 'chart', where: chart.chartYaml.path, inRepo: true, chart: { release, ...(chart.chartYaml.name ? { name: chart.chartYaml.name } : {}), ...(chart.chartYaml.version ? { version: chart.chartYaml.version } : {}) } });
  const base: ValuesLayer[] = chart.valuesPath ? [{ where: chart.valuesPath, inRepo: true, values: chart.values }] : [];
  await helmValues(ctx, dir, options, origin, release, base);
  acc.builds ||= chart.files.length > 0;
}

/** A chart from a Helm repository (or OCI registry): its version is the source's targetRevision, a field of the Application. */
async function chartFromRepository(ctx: SourceCtx, source: Rec): Promise<void> {
  const { acc } = ctx;
  const options: Rec = isRec(source.helm) ? source.helm : {};
  const release = releaseOf(ctx, options);
  acc.setters.push({ what: 'chart', ...specOrigin(ctx, 'targetRevision'), chart: { release, name: String(source.chart), ...(str(source.targetRevision) ? { version: String(source.targetRevision) } : {}) } });
  acc.opaque.push(`${ctx.name}: chart ${String(source.chart)} ${String(source.targetRevision ?? '')} comes from ${String(source.repoURL ?? 'a chart repository')}; its own values and templates are not in this repository`);
  // .argocd-source files are read from the app path, which for a repository chart is the unpacked chart: not this repository
  await helmValues(ctx, undefined, options, (field) => specOrigin(ctx, field), release, []);
  acc.builds = true;
}

/**
 * The values of a Helm source, in Helm's order: value files, then values/valuesObject, then
 * parameters; value files are inputs of the model, the rest set from the Application (or an
 * `.argocd-source*.yaml` file).
 */
async function helmValues(ctx: SourceCtx, appDir: string | undefined, options: Rec, origin: (field: string) => Origin, release: string, base: ValuesLayer[]): Promise<void> {
  const { view, acc } = ctx;
  const layers: ValuesLayer[] = [...base];
  const ignoreMissing = options.ignoreMissingValueFiles === true;
  for (const raw of strings(options.valueFiles)) {
    const resolved = resolveValueFile(ctx, appDir, raw);
    if ('skip' in resolved) {
      if (resolved.skip) acc.opaque.push(resolved.skip);
      continue;
    }
    const paths = /[*?[]/.test(resolved.path) ? await expandGlob(view, resolved.path) : [resolved.path];
    if (paths.length === 0 && !ignoreMissing) acc.missing.push(`values file glob ${raw} of ${ctx.name}.helm matches no file`);
    for (const p of paths) {
      acc.regions.add(p);
      const r = await view.resolve(p, 'follow');
      if (r.kind === 'escapes') {
        acc.missing.push(`values file ${raw} of ${ctx.name}.helm is a symlink to ${r.target}, outside the repository`);
        continue;
      }
      if (r.kind !== 'file') {
        if (!ignoreMissing) acc.missing.push(`values file ${raw} of ${ctx.name}.helm does not exist (${p})`);
        continue;
      }
      addGraphFile(acc, { path: r.path, oid: r.oid, role: 'values', ...(r.via ? { via: r.via } : {}) });
      const v = await view.parse('yaml', r.oid, parseYaml, r.path);
      if (isRec(v) && typeof v.__error === 'string') acc.missing.push(`values file ${r.path} does not parse: ${v.__error}`);
      else layers.push({ where: r.path, inRepo: true, values: isRec(v) ? v : {} });
    }
  }
  // --set-file parameters read a file as one value: an input, no image
  for (const p of Array.isArray(options.fileParameters) ? options.fileParameters.filter(isRec) : []) {
    if (typeof p.path !== 'string') continue;
    const resolved = resolveValueFile(ctx, appDir, p.path);
    if ('skip' in resolved) continue;
    const r = await view.resolve(resolved.path, 'follow');
    if (r.kind === 'file') addGraphFile(acc, { path: r.path, oid: r.oid, role: 'values', ...(r.via ? { via: r.via } : {}) });
    else acc.missing.push(`file parameter ${String(p.name)} of ${ctx.name}.helm reads ${p.path}, which does not exist`);
  }
  // valuesObject wins over values (values.go ValuesYAML)
  const objectOrigin = origin('helm.valuesObject');
  if (isRec(options.valuesObject)) layers.push({ ...objectOrigin, values: options.valuesObject });
  else if (typeof options.values === 'string' && options.values.trim()) {
    const v = parseYaml(Buffer.from(options.values));
    if (isRec(v) && typeof v.__error !== 'string') layers.push({ ...origin('helm.values'), values: v });
  }
  const params = Array.isArray(options.parameters) ? options.parameters.filter(isRec) : [];
  if (params.length) {
    const values: Rec = {};
    for (const p of params) if (typeof p.name === 'string') setParameter(values, p.name, String(p.value ?? ''), p.forceString === true || p.forcestring === true);
    layers.push({ ...origin('helm.parameters'), values });
  }
  acc.setters.push(...imageSetters(layers));
  for (const l of layers) acc.setters.push({ what: 'values', where: l.where, inRepo: l.inRepo, values: { release, digest: digestOf(l.values) } });
}

/** Where a values file lies in the repository; `skip` when it is not in it (a URL, a ref to a chart source). */
function resolveValueFile(ctx: SourceCtx, appDir: string | undefined, raw: string): { path: string } | { skip: string | undefined } {
  if (raw.startsWith('$')) {
    const name = raw.split('/')[0]!;
    const ref = ctx.refs.get(name);
    if (!ref) {
      ctx.acc.missing.push(`${ctx.name}.helm.valueFiles names ${raw}, but no source has ref: ${name.slice(1)} ("source referenced ${name}, which is not one of the available sources")`);
      return { skip: undefined };
    }
    if (str(ref.chart)) return { skip: `values file ${raw} comes from a chart source: not in this repository` };
    // the ref source is this repository (see the module comment); its path is from the repository root
    const rel = joinInside('', raw.slice(name.length + 1));
    if (rel === undefined) {
      ctx.acc.missing.push(`values file ${raw} of ${ctx.name}.helm leaves the repository`);
      return { skip: undefined };
    }
    return { path: rel };
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(raw)) return { skip: `values file ${raw} of ${ctx.name}.helm is fetched from a URL at build time` };
  // a chart from a Helm repository reads relative value files from inside the unpacked chart
  if (appDir === undefined) return { skip: undefined };
  const rel = raw.startsWith('/') ? joinInside('', raw.slice(1)) : joinInside(appDir, raw);
  if (rel === undefined) {
    ctx.acc.missing.push(`values file ${raw} of ${ctx.name}.helm leaves the repository`);
    return { skip: undefined };
  }
  return { path: rel };
}

/** A values file glob expanded as doublestar does (lexical order): the files below its fixed prefix that match. */
async function expandGlob(view: TreeView, pattern: string): Promise<string[]> {
  const parts = pattern.split('/');
  const fixed: string[] = [];
  for (const p of parts) {
    if (/[*?[{]/.test(p)) break;
    fixed.push(p);
  }
  const out: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    for (const [name, e] of await view.list(dir)) {
      const p = dir ? `${dir}/${name}` : name;
      if (e.type === 'tree') await walk(p);
      else if (e.type === 'blob' && path.matchesGlob(p, pattern)) out.push(p);
    }
  };
  await walk(fixed.join('/'));
  return out.sort();
}

// ---- Plugin ---------------------------------------------------------------------------------------

async function plugin(ctx: SourceCtx, dir: string, options: Rec): Promise<void> {
  const { view, acc } = ctx;
  acc.opaque.push(`${ctx.name} renders with a config management plugin${str(options.name) ? ` (${String(options.name)})` : ''}: the model cannot see what it builds`);
  const walk = async (sub: string): Promise<void> => {
    for (const [name, e] of await view.list(sub)) {
      const p = sub ? `${sub}/${name}` : name;
      if (e.type === 'tree') await walk(p);
      else if (e.type === 'blob') addInput(acc, { path: p, digest: e.oid, role: 'resource' });
    }
  };
  await walk(dir);
  acc.builds = true;
}
