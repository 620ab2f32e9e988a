import path from 'node:path/posix';
import { loadYamlOr } from '../yaml-read.ts';
import { parseImageRef } from '../observe/image-ref.ts';
import type { KubeObject, Observed } from '../observe/types.ts';
import { findObserved, groupKind } from '../observe/types.ts';
import { readChart } from './chart.ts';
import { fluxGraph, imageTexts } from './flux.ts';
import { KUSTOMIZATION_FILES, loadAllSafe, type Graph } from './kustomize.ts';
import { describeRef, registerRefiner } from './registry.ts';
import { digestOf, type TargetScope } from './scope.ts';
import { sourceIgnore } from './sourceignore.ts';
import { dataOf, findMaker } from './makers.ts';
import { findOwnManifest } from './own-manifest.ts';
import { joinInside, type TreeView } from './tree.ts';
import type { ModelInput, Setter, TargetModel } from './types.ts';
import { imageSetters, isRec, setParameter, type ValuesLayer } from './values.ts';

/**
 * What Flux's helm-controller releases for a HelmRelease, refining the model of the engine that
 * applies the HelmRelease (research/render.md §3; fluxcd/helm-controller 0f61a86,
 * fluxcd/source-controller 39b711b, fluxcd/pkg e2cfd1a):
 *
 * - the chart: from a HelmRepository or OCI source, its pinned `version` (a semver range resolved
 *   at reconcile time) is the chart's setter; from a GitRepository, the chart folder of the source
 *   artifact (symlinks dropped, ignore rules applied). Under `reconcileStrategy: ChartVersion` (the
 *   default) source-controller builds no new chart until Chart.yaml's name or version changes
 *   (internal/helm/chart/builder_local.go L113-131: the cached chart is reused while they match,
 *   whatever else changed, valuesFiles included): every other file of the chart ships only with a
 *   version change. Under `Revision` every commit makes a new chart version
 *   (internal/controller/helmchart_controller.go L771-795), so every change ships. The
 *   HelmRelease's `version` is ignored for git charts (docs/spec/v1/helmcharts.md "Version").
 *   A HelmChart whose generation changes is rebuilt too (`Force`, L764); a HelmRelease edit of its
 *   chart spec is not modelled as shipping the chart's files;
 * - the values: `valuesFrom` ConfigMaps and Secrets merged in order, `targetPath` setting one
 *   path, inline `values` last (fluxcd/pkg chartutil/values.go ChartValuesFromReferences
 *   L153-256). A ConfigMap or Secret is linked to what makes it in the repository — a kustomize
 *   `configMapGenerator`/`secretGenerator` or a plain manifest among the graphs the target's engine
 *   objects read — whose files become values inputs; one made elsewhere cannot be verified;
 * - `postRenderers[].kustomize.images` and `.patches` set images over the rendered chart
 *   (api/v2 helmrelease_types.go PostRenderer L241, Kustomize L216).
 */

type Rec = Record<string, unknown>;
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

const HELMRELEASE = 'helm.toolkit.fluxcd.io/HelmRelease';
const GIT_REPOSITORY = 'source.toolkit.fluxcd.io/GitRepository';
const FLUX_KUSTOMIZATION = 'kustomize.toolkit.fluxcd.io/Kustomization';

export function describeHelm(hr: KubeObject): string {
  const spec: Rec = isRec(hr.spec) ? hr.spec : {};
  const chartSpec: Rec = isRec(spec.chart) && isRec(spec.chart.spec) ? spec.chart.spec : {};
  const ref: Rec = isRec(chartSpec.sourceRef) ? chartSpec.sourceRef : isRec(spec.chartRef) ? spec.chartRef : {};
  const chart = str(chartSpec.chart) ?? str(ref.name) ?? '?';
  return `Flux HelmRelease ${hr.metadata.namespace ? `${hr.metadata.namespace}/` : ''}${hr.metadata.name} (chart ${chart}${str(ref.kind) ? ` from ${String(ref.kind)} ${String(ref.name ?? '')}` : ''})`;
}

const parseYaml = (bytes: Uint8Array, where?: string): unknown => loadYamlOr(bytes, () => undefined, where);

/** What a refinement adds to the base model. */
interface Refined {
  inputs: Map<string, ModelInput>;
  setters: Setter[];
  opaque: string[];
  missing: string[];
  regions: Set<string>;
}

const add = (r: Refined, input: ModelInput) => {
  if (!r.inputs.has(input.path)) r.inputs.set(input.path, input);
  r.regions.add(input.path);
};

registerRefiner({
  kind: HELMRELEASE,
  describe: describeHelm,
  unusable: (hr) => (isRec(hr.spec) && (isRec(hr.spec.chart) || isRec(hr.spec.chartRef)) ? undefined : `${describeRef(hr)} has no spec here (an event carries only its status)`),
  async refine(view, hr, base, scope, observed) {
    const r: Refined = { inputs: new Map(base.inputs), setters: [...base.setters], opaque: [...base.opaque], missing: [...base.missing], regions: new Set(base.regions) };
    // its manifest among the files the engine reads for the target, else in the target's paths (applied by a parent)
    const name = describeRef(hr);
    const search = await findOwnManifest(view, {
      group: 'helm.toolkit.fluxcd.io', kind: 'HelmRelease', name: hr.metadata.name, ...(hr.metadata.namespace ? { namespace: hr.metadata.namespace } : {}),
      // a patch of some of its fields (values only, as a kustomize patch file) is not its manifest
      declares: (spec) => isRec(spec.chart) || isRec(spec.chartRef),
    }, scope.paths, [...base.inputs.values()].filter((i) => i.role !== 'kustomization').map((i) => i.path));
    const manifest = search.found;
    const spec: Rec = manifest?.spec ?? (isRec(hr.spec) ? hr.spec : {});
    const namespace = manifest?.namespace ?? hr.metadata.namespace;
    const release = `${namespace ? `${namespace}/` : ''}${hr.metadata.name}`;
    // where the HelmRelease's own fields are set: its manifest in the repository, else the cluster object.
    // A manifest the build reads already sets its chart and values (scope.ts settersOf); one applied by
    // a parent from the target's paths is an input of its own, and its fields setters here.
    const own = manifest ? { where: manifest.path, inRepo: true, inBuild: base.inputs.has(manifest.path) } : { where: `${name} spec`, inRepo: false, inBuild: false };
    if (manifest && !own.inBuild) add(r, { path: manifest.path, digest: digestOf(manifest.spec), role: 'engine-object' });
    if (!manifest) r.opaque.push(`${name}: its manifest is not among the files the engine reads for the target${search.ambiguous ? ` (${search.ambiguous.length} files in the target's paths declare it: ${search.ambiguous.slice(0, 3).join(', ')})` : ''}; its spec is taken as the cluster reports it`);

    const layers: ValuesLayer[] = [];
    // the files that may make a ConfigMap, a Secret or a chart source: read once, when needed
    let files: Promise<Map<string, string>> | undefined;
    const candidates = () => (files ??= candidateFiles(view, base, scope, observed));
    await chart(view, hr, spec, release, own, r, layers, scope, observed, candidates);
    await values(view, hr, spec, release, r, layers, candidates);
    if (isRec(spec.values)) layers.push({ ...own, values: spec.values });
    if (!own.inBuild) r.setters.push({ what: 'values', where: own.where, inRepo: own.inRepo, values: { release, digest: digestOf({ values: spec.values ?? null, valuesFrom: spec.valuesFrom ?? null }) } });
    r.setters.push(...imageSetters(layers), ...postRendererSetters(spec, own));
    return {
      ...base,
      describe: `${base.describe} + ${describeHelm(hr)}`,
      inputs: r.inputs,
      setters: r.setters,
      opaque: r.opaque,
      missing: r.missing,
      builds: base.builds || r.inputs.size > base.inputs.size,
      regions: [...r.regions],
    };
  },
});

const releaseMatches = (s: string, release: string, name: string) => s === release || s === name || s.endsWith(`/${name}`);

/** The chart: its pin, or the chart folder kept in git with its reconcile strategy. */
async function chart(view: TreeView, hr: KubeObject, spec: Rec, release: string, own: { where: string; inRepo: boolean; inBuild: boolean }, r: Refined, layers: ValuesLayer[], scope: TargetScope, observed: readonly Observed[], candidates: () => Promise<Map<string, string>>): Promise<void> {
  const name = describeRef(hr);
  const chartSpec: Rec = isRec(spec.chart) && isRec(spec.chart.spec) ? spec.chart.spec : {};
  const sourceRef: Rec = isRec(chartSpec.sourceRef) ? chartSpec.sourceRef : {};
  if (isRec(spec.chartRef)) {
    // OCIRepository / HelmChart: the version lives in that object; where its manifest is read for the target, that file pins the chart
    const refKind = str(spec.chartRef.kind) ?? '?';
    const refName = str(spec.chartRef.name) ?? '?';
    const refNs = str(spec.chartRef.namespace) ?? hr.metadata.namespace;
    const pin = refKind === 'OCIRepository' || refKind === 'HelmChart' ? await sourceManifest(view, await candidates(), refKind, refName, refNs) : undefined;
    if (pin) {
      r.setters = r.setters.filter((s) => !(s.what === 'chart' && s.chart && releaseMatches(s.chart.release, release, hr.metadata.name) && !s.chart.version));
      r.setters.push({ what: 'chart', where: pin.path, inRepo: true, chart: { release, ...(pin.name ? { name: pin.name } : {}), ...(pin.version ? { version: pin.version } : {}) } });
      add(r, { path: pin.path, digest: pin.oid, role: 'chart' });
    } else r.opaque.push(`${name} takes its chart from ${refKind} ${refNs ? `${refNs}/` : ''}${refName}, whose manifest is not among the files the engine objects of the target read: the chart version it resolves to is not modelled`);
    return;
  }
  const kind = str(sourceRef.kind);
  if (kind === 'Bucket') {
    r.opaque.push(`${name} takes its chart from Bucket ${String(sourceRef.name ?? '?')}: not this repository`);
    return;
  }
  if (kind !== 'GitRepository') {
    // a HelmRepository (or an OCI HelmRepository): the pinned version is the chart's setter; the manifest's own pin is already one
    if (!own.inBuild && str(chartSpec.version)) r.setters.push({ what: 'chart', where: own.where, inRepo: own.inRepo, chart: { release, ...(str(chartSpec.chart) ? { name: String(chartSpec.chart) } : {}), version: String(chartSpec.version) } });
    return;
  }
  // a chart from a GitRepository: which one? Where both it and the applying Kustomization's are observed and differ, another repository
  const refNs = str(sourceRef.namespace) ?? hr.metadata.namespace ?? '';
  const gitRepo = findObserved(observed, (o) => groupKind(o.apiVersion, o.kind) === GIT_REPOSITORY && o.name === sourceRef.name && (o.namespace ?? '') === refNs);
  const ours = (scope.engines ?? []).filter((o) => groupKind(o.apiVersion, o.kind) === FLUX_KUSTOMIZATION).map((k) => {
    const ref: Rec = isRec(k.spec?.sourceRef) ? k.spec.sourceRef : {};
    return findObserved(observed, (o) => groupKind(o.apiVersion, o.kind) === GIT_REPOSITORY && o.name === ref.name && (o.namespace ?? '') === (str(ref.namespace) ?? k.metadata.namespace ?? ''));
  }).find(Boolean);
  if (gitRepo && ours && gitRepo !== ours && String(gitRepo.spec?.url ?? '') !== String(ours.spec?.url ?? '')) {
    r.opaque.push(`${name} takes its chart from GitRepository ${refNs}/${String(sourceRef.name)} (${String(gitRepo.spec?.url ?? '?')}), another repository than the one its Kustomization reads`);
    return;
  }
  // else: the same repository (a chart from a GitRepository nobody observed is taken as this one)
  const chartDir = joinInside('', String(chartSpec.chart ?? '.'));
  if (chartDir === undefined) {
    r.missing.push(`${name}: chart ${String(chartSpec.chart)} lies outside the source`);
    return;
  }
  const ignore = await sourceIgnore(view, chartDir, typeof gitRepo?.spec?.ignore === 'string' ? gitRepo.spec.ignore : undefined);
  for (const f of ignore.files) add(r, { path: f.path, digest: f.oid, role: 'config' });
  const folder = await readChart(view, chartDir, { symlinks: 'drop', ignored: ignore.ignored, engine: 'Flux' });
  for (const d of folder.dirs) r.regions.add(d);
  r.missing.push(...folder.missing.map((m) => `${name}: ${m}`));
  r.opaque.push(...folder.opaque);
  const strategy = str(chartSpec.reconcileStrategy) ?? 'ChartVersion';
  const chartYaml = folder.chartYaml;
  for (const f of folder.files) {
    if (strategy === 'ChartVersion' && chartYaml) {
      // what decides a new chart build: Chart.yaml's name and version; everything else ships with them
      if (f.path === chartYaml.path) add(r, { path: f.path, digest: digestOf({ name: chartYaml.name ?? null, version: chartYaml.version ?? null }), role: 'chart' });
      else add(r, { path: f.path, digest: f.oid, role: f.role, shipsWith: chartYaml.path });
    } else add(r, { path: f.path, digest: f.oid, role: f.role });
  }
  // the HelmRelease's version pin is ignored for a git chart: the chart's setter is Chart.yaml
  r.setters = r.setters.filter((s) => !(s.what === 'chart' && s.chart && releaseMatches(s.chart.release, release, hr.metadata.name)));
  if (chartYaml) r.setters.push({ what: 'chart', where: chartYaml.path, inRepo: true, chart: { release, ...(chartYaml.name ? { name: chartYaml.name } : {}), ...(chartYaml.version ? { version: chartYaml.version } : {}) } });
  // spec.chart.spec.valuesFiles replace the chart's values.yaml, paths from the source root (helmcharts.md "Values files", builder_local.go mergeFileValues)
  const valuesFiles = strings(chartSpec.valuesFiles);
  if (valuesFiles.length === 0) {
    if (folder.valuesPath) {
      layers.push({ where: folder.valuesPath, inRepo: true, values: folder.values });
      r.setters.push({ what: 'values', where: folder.valuesPath, inRepo: true, values: { release, digest: digestOf(folder.values) } });
    }
    return;
  }
  for (const v of valuesFiles) {
    const p = joinInside('', v);
    if (p === undefined) continue;
    r.regions.add(p);
    const res = await view.resolve(p, 'drop');
    if (res.kind !== 'file' || ignore.ignored(p, false)) {
      if (chartSpec.ignoreMissingValuesFiles !== true) r.missing.push(`${name}: values file ${v} is not in the source ("no values file found at path")`);
      continue;
    }
    add(r, { path: res.path, digest: res.oid, role: 'values', ...(strategy === 'ChartVersion' && chartYaml ? { shipsWith: chartYaml.path } : {}) });
    const parsed = await view.parse('yaml', res.oid, parseYaml, res.path);
    const vals: Rec = isRec(parsed) ? parsed : {};
    layers.push({ where: res.path, inRepo: true, values: vals });
    r.setters.push({ what: 'values', where: res.path, inRepo: true, values: { release, digest: digestOf(vals) } });
  }
}

// ---- valuesFrom -----------------------------------------------------------------------------------

interface Maker {
  /** the file that holds the values, and its values */
  files: Array<{ path: string; oid: string; values: Rec; text?: string }>;
  /** the kustomization whose generator makes it, with the generator's entry */
  kustomization?: { path: string; entry: Rec };
  describe: string;
}

/**
 * Each valuesFrom ConfigMap/Secret linked to what makes it in the repository, among the graphs
 * the target's engine objects read; its files become the target's values inputs.
 */
async function values(view: TreeView, hr: KubeObject, spec: Rec, release: string, r: Refined, layers: ValuesLayer[], candidates: () => Promise<Map<string, string>>): Promise<void> {
  const refs = Array.isArray(spec.valuesFrom) ? spec.valuesFrom.filter(isRec) : [];
  if (refs.length === 0) return;
  const name = describeRef(hr);
  const namespace = hr.metadata.namespace;
  const files = await candidates();
  for (const ref of refs) {
    const kind = str(ref.kind);
    const objectName = str(ref.name);
    if ((kind !== 'ConfigMap' && kind !== 'Secret') || !objectName) continue;
    const key = str(ref.valuesKey) ?? 'values.yaml';
    const maker = await valuesMaker(view, files, kind, objectName, namespace, key);
    const what = `${kind} ${namespace ? `${namespace}/` : ''}${objectName}`;
    if (!maker) {
      r.opaque.push(`values of ${name} come from ${what}${ref.optional === true ? ' (optional)' : ''}, generated outside what the target's engine reads`);
      continue;
    }
    if (maker.kustomization && !r.inputs.has(maker.kustomization.path)) add(r, { path: maker.kustomization.path, digest: digestOf(maker.kustomization.entry), role: 'generator' });
    for (const f of maker.files) {
      add(r, { path: f.path, digest: f.oid, role: 'values' });
      r.setters.push({ what: 'values', where: f.path, inRepo: true, values: { release, digest: digestOf(f.text ?? f.values) } });
      const target = str(ref.targetPath);
      if (target) {
        const v: Rec = {};
        setParameter(v, target, f.text ?? '', ref.literal === true);
        layers.push({ where: f.path, inRepo: true, values: v });
      } else layers.push({ where: f.path, inRepo: true, values: f.values });
    }
  }
}

/** Files that may make a ConfigMap or Secret: the graphs of the target's engine objects, and the model's own inputs. */
async function candidateFiles(view: TreeView, base: TargetModel, scope: TargetScope, observed: readonly Observed[]): Promise<Map<string, string>> {
  const files = new Map<string, string>(base.render?.files ?? []);
  for (const k of scope.engines ?? []) {
    if (groupKind(k.apiVersion, k.kind) !== FLUX_KUSTOMIZATION) continue;
    const ref: Rec = isRec(k.spec?.sourceRef) ? k.spec.sourceRef : {};
    const repo = findObserved(observed, (o) => groupKind(o.apiVersion, o.kind) === GIT_REPOSITORY && o.name === ref.name && (o.namespace ?? '') === (str(ref.namespace) ?? k.metadata.namespace ?? ''));
    const graph: Graph = await fluxGraph(view, k, repo);
    for (const [p, f] of graph.files) if (!files.has(p)) files.set(p, f.oid);
  }
  for (const input of base.inputs.values()) {
    if (files.has(input.path)) continue;
    const res = await view.resolve(input.path, 'follow');
    if (res.kind === 'file') files.set(res.path, res.oid);
  }
  return files;
}

/** The manifest of a chart source object (OCIRepository, HelmChart) among the files: where its version is pinned. */
async function sourceManifest(view: TreeView, files: Map<string, string>, kind: string, name: string, namespace: string | undefined): Promise<{ path: string; oid: string; name?: string; version?: string } | undefined> {
  for (const [file, oid] of files) {
    if (!/\.(ya?ml|json)$/i.test(file) || KUSTOMIZATION_FILES.includes(path.basename(file))) continue;
    for (const doc of await view.parse('yaml-all', oid, loadAllSafe, file)) {
      if (!isRec(doc) || doc.kind !== kind || typeof doc.apiVersion !== 'string' || !doc.apiVersion.startsWith('source.toolkit.fluxcd.io/')) continue;
      const meta: Rec = isRec(doc.metadata) ? doc.metadata : {};
      if (meta.name !== name || (typeof meta.namespace === 'string' && namespace && meta.namespace !== namespace)) continue;
      const spec: Rec = isRec(doc.spec) ? doc.spec : {};
      const ref: Rec = isRec(spec.ref) ? spec.ref : {};
      // OCIRepository spec.ref (tag, semver, digest) and spec.url; HelmChart spec.chart and spec.version
      const version = kind === 'OCIRepository' ? (str(ref.tag) ?? str(ref.semver) ?? str(ref.digest)) : str(spec.version);
      const chartName = kind === 'OCIRepository' ? str(spec.url)?.replace(/^.*\//, '') : str(spec.chart);
      return { path: file, oid, ...(chartName ? { name: chartName } : {}), ...(version ? { version } : {}) };
    }
  }
  return undefined;
}

/** The values key of what makes the ConfigMap/Secret (makers.ts): a generator's files, or a manifest's data. */
async function valuesMaker(view: TreeView, files: Map<string, string>, kind: 'ConfigMap' | 'Secret', name: string, namespace: string | undefined, key: string): Promise<Maker | undefined> {
  const found = await findMaker(view, files, kind, name, namespace);
  if (!found) return undefined;
  if (found.kind === 'generator') return generatorMaker(view, found.dir, found.path, found.entry, key);
  const text = dataOf(kind, found.doc).get(key);
  const parsed = text !== undefined ? parseYaml(Buffer.from(text)) : undefined;
  return { files: [{ path: found.path, oid: found.oid, values: isRec(parsed) ? parsed : {}, ...(text !== undefined ? { text } : {}) }], describe: `${kind} manifest ${found.path}` };
}

/** The files a generator entry makes the values key from: `files:` whose key is the valuesKey, else every file it reads. */
async function generatorMaker(view: TreeView, dir: string, kustomization: string, gen: Rec, key: string): Promise<Maker> {
  const out: Maker = { files: [], kustomization: { path: kustomization, entry: gen }, describe: `${String(gen.name)} generator in ${kustomization}` };
  const entries = strings(gen.files).map((f) => (f.includes('=') ? { key: f.slice(0, f.indexOf('=')), file: f.slice(f.indexOf('=') + 1) } : { key: path.basename(f), file: f }));
  const keyed = entries.filter((e) => e.key === key);
  const envs = [...strings(gen.envs), ...(typeof gen.env === 'string' ? [gen.env] : [])];
  const read = keyed.length ? keyed.map((e) => e.file) : [...entries.map((e) => e.file), ...envs];
  for (const rel of read) {
    const p = joinInside(dir, rel);
    if (p === undefined) continue;
    const res = await view.resolve(p, 'drop');
    if (res.kind !== 'file') continue;
    const text = Buffer.from(await view.read(res.oid, res.path)).toString('utf8');
    const parsed = keyed.length ? parseYaml(Buffer.from(text)) : undefined;
    out.files.push({ path: res.path, oid: res.oid, values: isRec(parsed) ? parsed : {}, text });
  }
  return out;
}

// ---- postRenderers --------------------------------------------------------------------------------

/** Images a post-renderer sets over the rendered chart: `kustomize.images` and inline patches. */
function postRendererSetters(spec: Rec, own: { where: string; inRepo: boolean }): Setter[] {
  const out: Setter[] = [];
  const where = own.inRepo ? own.where : `${own.where}.postRenderers`;
  for (const pr of Array.isArray(spec.postRenderers) ? spec.postRenderers.filter(isRec) : []) {
    const k: Rec = isRec(pr.kustomize) ? pr.kustomize : {};
    for (const i of Array.isArray(k.images) ? k.images.filter(isRec) : []) {
      const repo = str(i.newName) ?? str(i.name);
      const tag = str(i.newTag);
      const digest = str(i.digest);
      const image = repo && (tag || digest) ? parseImageRef(`${repo}${tag ? `:${tag}` : ''}${digest ? `@${digest}` : ''}`) : undefined;
      if (image) out.push({ what: 'image', where, inRepo: own.inRepo, image });
    }
    for (const p of Array.isArray(k.patches) ? k.patches.filter(isRec) : []) {
      if (typeof p.patch !== 'string') continue;
      for (const text of imageTexts(p.patch)) {
        const image = parseImageRef(text);
        if (image && (image.tag || image.digest)) out.push({ what: 'image', where, inRepo: own.inRepo, image });
      }
    }
  }
  return out;
}
