import { isDeepStrictEqual } from 'node:util';
import { loadAllYaml, rethrowBound } from '../yaml-read.ts';
import type { RepoReader } from '../repo/types.ts';
import { formatImageRef, parseImageRef, sameImage, type ImageRef } from '../observe/image-ref.ts';

/**
 * What the manifests under a target's paths say, read for locate: the images they name and the
 * Helm charts they pin. Read-only and lenient (a file that does not parse says nothing); results
 * are cached per blob, so walking a history reads each version of a file once.
 *
 * Images are found wherever manifests name them:
 * - any string value that is a full image reference with a tag or digest (`containers[].image`,
 *   `initContainers[].image`, Rollouts, CronJobs, Flux image-policy marked fields);
 * - kustomize `images:` entries (`name`, `newName`, `newTag`, `digest`): the image they produce;
 * - Helm values maps: `{ repository, tag }`, `{ registry, repository, tag }`, `{ name, tag }`,
 *   with `digest` or `version` in place of `tag` (common chart conventions).
 */

export interface ChartPin {
  /** the HelmRelease (or Argo CD Application) that pins it */
  kind: string;
  name: string;
  namespace?: string;
  chart?: string;
  version?: string;
  /** the HelmRelease's `spec.values` and `spec.valuesFrom`, to tell a values-only change */
  values?: unknown;
}

export interface ManifestFacts {
  images: ImageRef[];
  charts: ChartPin[];
}

type Rec = Record<string, unknown>;
const isRec = (v: unknown): v is Rec => typeof v === 'object' && v !== null && !Array.isArray(v);
const text = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : typeof v === 'number' ? String(v) : undefined);

const MANIFEST_FILE = /\.(ya?ml|json)$/i;

/** kustomize reads these names as its kustomization (kind and apiVersion may be left out there). */
const KUSTOMIZATION_FILE = /(^|\/)(kustomization\.ya?ml|Kustomization)$/;

/** The facts of one file's content (`path` tells a kustomization file). Never throws, but for a file beyond the YAML bounds (yaml-read.ts). */
export function manifestFacts(content: Uint8Array | string, path = ''): ManifestFacts {
  const out: ManifestFacts = { images: [], charts: [] };
  let docs: unknown[];
  try {
    const s = typeof content === 'string' ? content : Buffer.from(content).toString('utf8');
    docs = loadAllYaml(s, { json: true, ...(path ? { where: path } : {}) });
  } catch (error) {
    rethrowBound(error);
    return out;
  }
  for (const doc of docs) {
    // a JSON6902 patch is a list of operations: its values may set images too
    if (Array.isArray(doc)) walk(doc, out.images, false);
    if (!isRec(doc)) continue;
    chartOf(doc, out.charts);
    const kustomize = doc.kind === 'Kustomization' ? typeof doc.apiVersion === 'string' && doc.apiVersion.startsWith('kustomize.config.k8s.io') : KUSTOMIZATION_FILE.test(path) && doc.kind === undefined;
    walk(doc, out.images, kustomize);
  }
  return out;
}

function walk(node: unknown, images: ImageRef[], kustomization: boolean): void {
  if (typeof node === 'string') {
    addImage(images, node);
    return;
  }
  if (Array.isArray(node)) {
    for (const item of node) walk(item, images, false);
    return;
  }
  if (!isRec(node)) return;
  if (kustomization && Array.isArray(node.images)) {
    for (const entry of node.images) {
      if (!isRec(entry)) continue;
      const name = text(entry.newName) ?? text(entry.name);
      const tag = text(entry.newTag);
      const digest = text(entry.digest);
      if (name && (tag || digest)) addImage(images, `${name}${tag ? `:${tag}` : ''}${digest ? `@${digest}` : ''}`);
    }
  }
  const repository = text(node.repository) ?? (text(node.tag) || text(node.digest) ? text(node.name) : undefined);
  const version = text(node.tag) ?? text(node.version);
  const digest = text(node.digest);
  if (repository && (version || digest)) {
    const registry = text(node.registry);
    const full = registry && !repository.startsWith(`${registry}/`) ? `${registry}/${repository}` : repository;
    addImage(images, `${full}${version ? `:${version}` : ''}${digest ? `@${digest}` : ''}`);
  }
  for (const [key, value] of Object.entries(node)) {
    if (kustomization && key === 'images') continue;
    walk(value, images, false);
  }
}

function addImage(images: ImageRef[], value: string): void {
  if (!value.includes(':') && !value.includes('@')) return; // a bare name pins nothing
  const ref = parseImageRef(value);
  if (!ref || (!ref.tag && !ref.digest)) return;
  if (!images.some((i) => formatImageRef(i) === formatImageRef(ref))) images.push(ref);
}

function chartOf(doc: Rec, charts: ChartPin[]): void {
  const kind = text(doc.kind);
  const metadata = isRec(doc.metadata) ? doc.metadata : {};
  const name = text(metadata.name);
  if (!kind || !name) return;
  const namespace = text(metadata.namespace);
  const spec = isRec(doc.spec) ? doc.spec : {};
  if (kind === 'HelmRelease') {
    const chartSpec = isRec(spec.chart) && isRec(spec.chart.spec) ? spec.chart.spec : {};
    const ref = isRec(spec.chartRef) ? spec.chartRef : undefined;
    charts.push({
      kind, name, ...(namespace ? { namespace } : {}),
      ...(text(chartSpec.chart) ? { chart: text(chartSpec.chart) } : ref && text(ref.name) ? { chart: text(ref.name) } : {}),
      ...(text(chartSpec.version) ? { version: text(chartSpec.version) } : {}),
      values: { values: spec.values ?? null, valuesFrom: spec.valuesFrom ?? null },
    });
  } else if (kind === 'Application') {
    const sources = [spec.source, ...(Array.isArray(spec.sources) ? spec.sources : [])].filter(isRec);
    for (const s of sources) {
      if (!text(s.chart)) continue;
      charts.push({ kind, name, ...(namespace ? { namespace } : {}), chart: text(s.chart), ...(text(s.targetRevision) ? { version: text(s.targetRevision) } : {}) });
    }
  }
}

/** Reads the facts of the manifests under `paths` at commits, caching per blob. */
export class ManifestReader {
  private readonly byBlob = new Map<string, Promise<ManifestFacts>>();
  private readonly reader: RepoReader;
  private readonly paths: string[];

  constructor(reader: RepoReader, paths: string[]) {
    this.reader = reader;
    this.paths = paths;
  }

  /** The facts of every manifest file under the paths at `commit`, by file path. */
  async at(commit: string): Promise<Map<string, ManifestFacts>> {
    const files = await this.reader.listFiles(commit, this.paths);
    const out = new Map<string, ManifestFacts>();
    for (const [path, entry] of files) {
      if (!MANIFEST_FILE.test(path) || entry.mode === '120000' || entry.mode === '160000') continue;
      // the same blob reads differently as a kustomization file: the name is part of the key
      const key = KUSTOMIZATION_FILE.test(path) ? `k:${entry.oid}` : entry.oid;
      let facts = this.byBlob.get(key);
      if (!facts) this.byBlob.set(key, (facts = this.reader.readBlob(entry.oid).then((bytes) => manifestFacts(bytes, path))));
      out.set(path, await facts);
    }
    return out;
  }

  /** True when a manifest under the paths at `commit` names the running image. */
  async hasImage(commit: string, image: ImageRef): Promise<boolean> {
    for (const facts of (await this.at(commit)).values()) if (facts.images.some((w) => sameImage(image, w))) return true;
    return false;
  }

  /** The chart pins of one release (by name, and namespace where both tell it) at `commit`. */
  async chartPins(commit: string, release: { name: string; namespace?: string }): Promise<ChartPin[]> {
    const out: ChartPin[] = [];
    for (const facts of (await this.at(commit)).values()) {
      for (const c of facts.charts) {
        if (c.name === release.name && (!c.namespace || !release.namespace || c.namespace === release.namespace)) out.push(c);
      }
    }
    return out;
  }
}

/** True when two sets of chart pins set the same values. */
export function sameValues(a: ChartPin[], b: ChartPin[]): boolean {
  return isDeepStrictEqual(a.map((c) => c.values ?? null), b.map((c) => c.values ?? null));
}
