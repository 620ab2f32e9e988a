import path from 'node:path/posix';
import jsYaml from 'js-yaml';
import type { InputRole } from './types.ts';
import { joinInside, within, type Link, type TreeView } from './tree.ts';
import type { Reads } from './reads.ts';

/**
 * The graph a kustomize build reads, walked as kustomize walks it (sigs.k8s.io/kustomize
 * api/types/kustomization.go for the fields, api/internal/target/kusttarget.go for the order), on
 * a TreeView: which kustomization files, resource files, sub-kustomizations, patches, generator
 * inputs and transformer configs one build reads. Pure over the tree; nothing is rendered here.
 *
 * The engine decides two rules (research/render.md §1.2, §2.3):
 * - `load`: Flux builds with LoadRestrictionsNone (files may be loaded from anywhere inside the
 *   source artifact, never outside it: fluxcd/pkg kustomize/kustomize_generator.go Build); Argo CD
 *   runs kustomize with its default LoadRestrictionsRootOnly (a file must lie in or below the
 *   kustomization that names it; another kustomization directory may lie anywhere).
 * - `symlinks`: Flux drops them from its artifact; Argo CD follows those that stay in the repository.
 */

/** kustomize's own file names, in its order (api/konfig RecognizedKustomizationFileNames). */
export const KUSTOMIZATION_FILES = ['kustomization.yaml', 'kustomization.yml', 'Kustomization'];

export interface WalkRules {
  /** "Flux" / "Argo CD": for messages */
  engine: string;
  symlinks: 'drop' | 'follow';
  load: 'anywhere' | 'root-only';
  /** files the engine never sees (Flux's source ignore rules) */
  ignored?: (file: string, isDir: boolean) => boolean;
  /** `helmCharts:` builds (Argo CD with --enable-helm); Flux never enables it */
  helm: boolean;
  /**
   * The same for every build whose rules answer alike (the engine, these fields, the ignore
   * rules' files): folders' readings are remembered across revisions under it. Absent: nothing is
   * remembered.
   */
  memoKey?: string;
}

type Rec = Record<string, unknown>;
const isRec = (v: unknown): v is Rec => typeof v === 'object' && v !== null && !Array.isArray(v);
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);
const recs = (v: unknown): Rec[] => (Array.isArray(v) ? v.filter(isRec) : []);

/** A file read by the build, with why. */
export interface GraphFile {
  path: string;
  oid: string;
  role: InputRole;
  /** the symlinks the engine followed to reach it (Argo CD): each is an input too, a retargeted link changes the build */
  via?: Link[];
  /** where the build names it, when a symlink leads elsewhere (a render writes the file there too) */
  named?: string;
}

export type GraphResource =
  | { kind: 'file'; entry: string; file: GraphFile }
  | { kind: 'node'; entry: string; node: KNode; via?: Link[] }
  | { kind: 'opaque'; entry: string };

/** One kustomization in the graph. */
export interface KNode {
  dir: string;
  /** the kustomization file; undefined where the engine generates one (Flux, a folder without one) */
  file?: GraphFile;
  /** its parsed content (the generated one for Flux) */
  doc: Rec;
  /** `resources:` (and legacy `bases:`), in order */
  resources: GraphResource[];
  components: KNode[];
  /** every other file it reads: patches, generator inputs, CRDs, configurations, replacements, transformer configs */
  files: GraphFile[];
  /** inline texts that may set images: inline patches, inline transformer configs */
  inline: string[];
}

export interface Graph {
  root: KNode;
  /** every file read, by path (the render materialises these) */
  files: Map<string, GraphFile>;
  /** what the model cannot see into, with the folder of the kustomization that names it (a target's model says only its own) */
  opaque: Array<{ dir: string; text: string }>;
  missing: string[];
}

/** A remote base or resource, which kustomize clones: the model cannot see into it. */
export function isRemote(entry: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(entry) || /^git@/.test(entry) || /^(github\.com|gitlab\.com|bitbucket\.org)\//.test(entry) || /\?(ref|version|timeout|submodules)=/.test(entry) || /\/\/[^/]/.test(entry.replace(/^[a-z]+:\/\//i, ''));
}

/** The first kustomization file in `dir` (kustomize's order), or undefined. */
export async function kustomizationIn(view: TreeView, dir: string, rules: WalkRules): Promise<{ path: string; oid: string; via?: Link[]; named?: string } | { error: string } | undefined> {
  const found: Array<{ name: string; path: string; oid: string; via?: Link[]; named?: string }> = [];
  for (const name of KUSTOMIZATION_FILES) {
    const p = dir ? `${dir}/${name}` : name;
    const r = await view.resolve(p, rules.symlinks);
    // a kustomization file that is a symlink (Argo CD follows it): the file read is its target, the link an input too
    if (r.kind === 'file' && !rules.ignored?.(p, false)) found.push({ name, path: r.path, oid: r.oid, ...(r.via ? { via: r.via, named: p } : {}) });
  }
  if (found.length > 1) return { error: `${dir || '.'}: found multiple kustomization files (${found.map((f) => f.name).join(', ')}): kustomize refuses the folder` };
  const [first] = found;
  return first ? { path: first.path, oid: first.oid, ...(first.via ? { via: first.via, named: first.named! } : {}) } : undefined;
}

/** Parses a kustomization; a file that does not parse makes the build fail. */
export function parseKustomization(bytes: Uint8Array): Rec | { error: string } {
  try {
    const doc = jsYaml.load(Buffer.from(bytes).toString('utf8'));
    if (doc === null || doc === undefined) return {};
    return isRec(doc) ? doc : { error: 'not a mapping' };
  } catch (error) {
    return { error: (error as Error).message.split('\n')[0]! };
  }
}

// builtin plugin kinds a `generators:`/`transformers:` file may configure (kustomize api/builtins);
// anything else is an exec or Go plugin, which Flux disables and which the model cannot see into
const BUILTIN_KINDS = new Set([
  'AnnotationsTransformer', 'ConfigMapGenerator', 'HashTransformer', 'HelmChartInflationGenerator', 'IAMPolicyGenerator',
  'ImageTagTransformer', 'LabelTransformer', 'NamespaceTransformer', 'PatchJson6902Transformer', 'PatchStrategicMergeTransformer',
  'PatchTransformer', 'PrefixSuffixTransformer', 'PrefixTransformer', 'SuffixTransformer', 'ReplacementTransformer',
  'ReplicaCountTransformer', 'SecretGenerator', 'SortOrderTransformer', 'ValueAddTransformer',
]);

/**
 * What reading one kustomization tells, in the order the walk meets it: files it reads, folders
 * it builds (visited after), messages. The reading of a folder depends only on what it read (not
 * on its children), so a later revision where none of that changed reuses it (memoRead).
 */
type NodeEvent =
  | { k: 'missing'; text: string }
  | { k: 'opaque'; text: string }
  /** a file read (graph.files); `into` the node's resources or files */
  | { k: 'file'; file: GraphFile; into?: 'resources' | 'files'; entry?: string }
  | { k: 'child'; dir: string; into: 'resources' | 'components'; entry?: string; via?: Link[] }
  | { k: 'remote'; entry: string }
  | { k: 'inline'; text: string };

interface NodeReading {
  /** false: the folder cannot be built (the messages say why) */
  ok: boolean;
  file?: GraphFile;
  doc: Rec;
  events: NodeEvent[];
}

/** A remembered reading of a folder: valid at any revision where `home`'s tree is `oid`. */
interface MemoReading {
  home: string;
  oid: string;
  reads: Reads;
  reading: NodeReading;
}
/** What visiting a folder adds to the graph, in order. */
type Effect = { k: 'missing'; text: string } | { k: 'opaque'; dir: string; text: string } | { k: 'file'; file: GraphFile };

/** A folder with everything it builds, remembered: valid where `home`'s tree is `oid` and none of its folders was visited yet. */
interface MemoSubgraph {
  home: string;
  oid: string;
  reads: Reads;
  node: KNode;
  effects: Effect[];
  nodes: Array<[string, KNode]>;
}

/** Versions of a folder's reading kept (the revisions of one walk share most). */
const MEMO_VERSIONS = 4;

/**
 * Walks the kustomization graph rooted at `dir`. `generated` stands for the kustomization the
 * engine writes where the folder has none (Flux), with the resources it lists.
 *
 * With `rules.memoKey`, each folder's reading (all but the root's) is remembered under the
 * deepest folder holding what it read (an application's folder, for an overlay that loads
 * `../../base`): at another revision where that folder's tree is the same, the reading is reused
 * and only the graph is linked again. A monorepo's 2,000 applications cost one reading each for
 * the whole walk, not one per revision.
 */
export async function walkGraph(view: TreeView, dir: string, rules: WalkRules, generated?: () => Promise<Rec | { error: string }>): Promise<Graph> {
  const graph: Graph = { root: undefined as unknown as KNode, files: new Map(), opaque: [], missing: [] };
  const visiting = new Set<string>();
  const done = new Map<string, KNode>();

  /** Reads one folder's kustomization and what it loads; its sub-folders are only named. */
  const readNode = async (nodeDir: string, isRoot: boolean): Promise<NodeReading> => {
    const events: NodeEvent[] = [];
    const missing = (text: string) => events.push({ k: 'missing', text });
    const opaque = (text: string) => events.push({ k: 'opaque', text });
    const fail = (): NodeReading => ({ ok: false, doc: {}, events });

    /** A file the node loads: must exist, and obey the load rule. */
    const loadFile = async (rel: string, role: InputRole, what: string, into?: 'resources' | 'files', entry?: string): Promise<GraphFile | undefined> => {
      const root = nodeDir;
      const target = joinInside(root, rel);
      if (target === undefined) {
        missing(`${what} ${rel} in ${root || '.'} points outside the repository (${rules.engine} refuses it)`);
        return undefined;
      }
      if (rules.load === 'root-only' && !within(target, root)) {
        missing(`${what} ${rel} in ${root || '.'} lies outside that kustomization's folder: ${rules.engine} builds with kustomize's LoadRestrictionsRootOnly, which refuses it`);
        return undefined;
      }
      const r = await view.resolve(target, rules.symlinks);
      if (r.kind === 'escapes') {
        missing(`${what} ${rel} in ${root || '.'} is a symlink to ${r.target}, outside the repository`);
        return undefined;
      }
      if (r.kind === 'dropped') {
        missing(`${what} ${rel} in ${root || '.'} goes through the symlink ${r.link}, which ${rules.engine} leaves out of its source`);
        return undefined;
      }
      if (r.kind !== 'file' || rules.ignored?.(target, false)) {
        missing(`${what} ${rel} in ${root || '.'} does not exist${r.kind === 'file' ? ` in ${rules.engine}'s source (ignored)` : ''}`);
        return undefined;
      }
      if (rules.load === 'root-only' && !within(r.path, root)) {
        missing(`${what} ${rel} in ${root || '.'} is a symlink to ${r.path}, outside that kustomization's folder (kustomize's LoadRestrictionsRootOnly refuses it)`);
        return undefined;
      }
      const file: GraphFile = { path: r.path, oid: r.oid, role, ...(r.via ? { via: r.via, named: target } : {}) };
      events.push({ k: 'file', file, ...(into ? { into } : {}), ...(entry !== undefined ? { entry } : {}) });
      return file;
    };
    const pluginConfig = (cfg: unknown, where: string) => {
      if (!isRec(cfg) || typeof cfg.kind !== 'string') return;
      if (!BUILTIN_KINDS.has(cfg.kind)) opaque(`plugin ${String(cfg.apiVersion ?? '')}/${cfg.kind} configured in ${where}: not a kustomize builtin, the model cannot see what it does`);
    };

    const kfile = await kustomizationIn(view, nodeDir, rules);
    let doc: Rec;
    let file: GraphFile | undefined;
    if (kfile && 'error' in kfile) {
      missing(kfile.error);
      return fail();
    }
    if (kfile) {
      file = { path: kfile.path, oid: kfile.oid, role: 'kustomization', ...(kfile.via ? { via: kfile.via, named: kfile.named! } : {}) };
      events.push({ k: 'file', file });
      const parsed = await view.parse('kustomization', kfile.oid, parseKustomization);
      if ('error' in parsed && typeof parsed.error === 'string' && Object.keys(parsed).length === 1) {
        missing(`${kfile.path} does not parse: ${parsed.error}`);
        return fail();
      }
      doc = parsed as Rec;
    } else if (isRoot && generated) {
      const g = await generated();
      if ('error' in g && typeof g.error === 'string') {
        missing(g.error);
        return fail();
      }
      doc = g as Rec;
    } else {
      missing(`${nodeDir || '.'} has no kustomization file (${KUSTOMIZATION_FILES.join(', ')}): kustomize cannot build it`);
      return fail();
    }

    // resources and the deprecated bases: a file, a kustomization folder, or a remote
    for (const entry of [...strings(doc.resources), ...strings(doc.bases)]) {
      if (isRemote(entry)) {
        opaque(`remote resource ${entry} in ${file?.path ?? nodeDir}: kustomize fetches it at build time`);
        events.push({ k: 'remote', entry });
        continue;
      }
      const target = joinInside(nodeDir, entry);
      if (target === undefined) {
        missing(`resource ${entry} in ${file?.path ?? nodeDir} points outside the repository`);
        continue;
      }
      const r = await view.resolve(target, rules.symlinks);
      if (r.kind === 'dir' && !rules.ignored?.(r.path, true)) {
        events.push({ k: 'child', dir: r.path, into: 'resources', entry, ...(r.via ? { via: r.via } : {}) });
        continue;
      }
      await loadFile(entry, 'resource', 'resource', 'resources', entry);
    }
    for (const entry of strings(doc.components)) {
      if (isRemote(entry)) {
        opaque(`remote component ${entry} in ${file?.path ?? nodeDir}`);
        continue;
      }
      const target = joinInside(nodeDir, entry);
      if (target === undefined) missing(`component ${entry} in ${file?.path ?? nodeDir} points outside the repository`);
      else events.push({ k: 'child', dir: target, into: 'components' });
    }
    const load = async (rel: unknown, role: InputRole, what: string) => {
      if (typeof rel !== 'string' || rel === '') return;
      await loadFile(rel, role, what, 'files');
    };
    for (const c of strings(doc.crds)) await load(c, 'crd', 'CRD');
    for (const c of strings(doc.configurations)) await load(c, 'config', 'configuration');
    if (isRec(doc.openapi)) await load(doc.openapi.path, 'config', 'openapi');
    for (const p of recs(doc.patches)) {
      if (typeof p.path === 'string') await load(p.path, 'patch', 'patch');
      if (typeof p.patch === 'string') events.push({ k: 'inline', text: p.patch });
    }
    for (const p of recs(doc.patchesJson6902)) {
      if (typeof p.path === 'string') await load(p.path, 'patch', 'patch');
      if (typeof p.patch === 'string') events.push({ k: 'inline', text: p.patch });
    }
    // a patchesStrategicMerge entry is a file when it names one, else an inline patch (kustomize FixKustomizationPreMarshalling)
    for (const p of Array.isArray(doc.patchesStrategicMerge) ? doc.patchesStrategicMerge : []) {
      if (typeof p !== 'string') continue;
      const looksInline = p.includes('\n') || /^\s*(apiVersion|kind|metadata)\s*:/.test(p);
      if (looksInline) events.push({ k: 'inline', text: p });
      else await load(p, 'patch', 'patch');
    }
    for (const r of recs(doc.replacements)) {
      if (typeof r.path === 'string') await load(r.path, 'replacement', 'replacement');
    }
    for (const gen of [...recs(doc.configMapGenerator), ...recs(doc.secretGenerator)]) {
      for (const f of strings(gen.files)) await load(f.includes('=') ? f.slice(f.indexOf('=') + 1) : f, 'generator', 'generator file');
      for (const f of strings(gen.envs)) await load(f, 'generator', 'generator env file');
      if (typeof gen.env === 'string') await load(gen.env, 'generator', 'generator env file');
    }
    for (const field of ['generators', 'transformers', 'validators'] as const) {
      for (const entry of Array.isArray(doc[field]) ? doc[field] : []) {
        if (isRec(entry) || (typeof entry === 'string' && entry.includes('\n'))) {
          const cfg = typeof entry === 'string' ? safeLoad(entry) : entry;
          pluginConfig(cfg, `inline ${field} in ${file?.path ?? nodeDir}`);
          events.push({ k: 'inline', text: typeof entry === 'string' ? entry : JSON.stringify(entry) });
          continue;
        }
        if (typeof entry !== 'string') continue;
        if (isRemote(entry)) {
          opaque(`remote ${field} entry ${entry} in ${file?.path ?? nodeDir}`);
          continue;
        }
        const target = joinInside(nodeDir, entry);
        const r = target === undefined ? undefined : await view.resolve(target, rules.symlinks);
        if (r?.kind === 'dir') {
          events.push({ k: 'child', dir: r.path, into: 'components' });
          continue;
        }
        const f = await loadFile(entry, 'transformer', `${field} entry`, 'files');
        if (!f) continue;
        const configs = await view.parse('yaml-all', f.oid, loadAllSafe);
        for (const cfg of configs) {
          pluginConfig(cfg, f.path);
          // a builtin config may itself load a file (PatchTransformer path, ReplacementTransformer path)
          if (isRec(cfg) && typeof cfg.path === 'string') await load(cfg.path, 'patch', `${String(cfg.kind)} path`);
        }
      }
    }
    const helmCharts = recs(doc.helmCharts);
    if (helmCharts.length > 0 || isRec(doc.helmGlobals)) {
      if (!rules.helm) {
        missing(`${file?.path ?? nodeDir} inflates Helm charts (helmCharts:), which needs kustomize --enable-helm: ${rules.engine} does not enable it`);
      } else {
        for (const chart of helmCharts) {
          if (typeof chart.valuesFile === 'string') await load(chart.valuesFile, 'values', 'Helm valuesFile');
          for (const v of strings(chart.additionalValuesFiles)) await load(v, 'values', 'Helm values file');
          opaque(`Helm chart ${String(chart.name ?? '?')} ${String(chart.version ?? '')} inflated by ${file?.path ?? nodeDir} (${chart.repo ? `from ${String(chart.repo)}` : 'a local chart'}): its templates are not modelled`);
        }
      }
    }
    return { ok: true, ...(file ? { file } : {}), doc, events };
  };

  /** A folder's reading, reused from another revision where the folder holding what it read is the same tree. */
  const memoRead = async (nodeDir: string): Promise<NodeReading> => {
    if (!rules.memoKey) return readNode(nodeDir, false);
    const key = `knode|${rules.memoKey}|${nodeDir}`;
    const versions = (view.memo.get(key) as MemoReading[] | undefined) ?? [];
    for (const v of versions) {
      if ((await view.treeOidAt(v.home)) === v.oid) {
        view.replay(v.reads);
        return v.reading;
      }
    }
    const { value, reads } = await view.collect(() => readNode(nodeDir, false));
    // a planned change over the tree is this view's alone: what was read through it is not remembered
    if (view.changed) return value;
    const home = reads.commonFolder();
    const oid = home === undefined ? undefined : await view.treeOidAt(home);
    if (home !== undefined && oid !== undefined) view.memo.set(key, [{ home, oid, reads, reading: value }, ...versions].slice(0, MEMO_VERSIONS));
    return value;
  };

  // what each folder being visited (with all it builds) adds to the graph, to remember it whole
  interface Recorder {
    effects: Effect[];
    nodes: Array<[string, KNode]>;
    dirs: Set<string>;
    /** false when it met a folder visited outside it (shared) or a cycle: its effects are not all its own */
    complete: boolean;
  }
  const recorders: Recorder[] = [];
  const apply = (e: Effect) => {
    if (e.k === 'missing') graph.missing.push(e.text);
    else if (e.k === 'opaque') graph.opaque.push({ dir: e.dir, text: e.text });
    else if (!graph.files.has(e.file.path)) graph.files.set(e.file.path, e.file);
    for (const r of recorders) r.effects.push(e);
  };
  const built = (d: string, node: KNode) => {
    done.set(d, node);
    for (const r of recorders) {
      r.nodes.push([d, node]);
      r.dirs.add(d);
    }
  };

  /** A folder with everything it builds, remembered from another revision where the folder holding all they read is the same tree. */
  const subgraphHit = async (nodeDir: string): Promise<MemoSubgraph | undefined> => {
    if (!rules.memoKey) return undefined;
    const versions = (view.memo.get(`ksub|${rules.memoKey}|${nodeDir}`) as MemoSubgraph[] | undefined) ?? [];
    for (const v of versions) {
      if (v.nodes.some(([d]) => done.has(d) || visiting.has(d))) continue;
      if ((await view.treeOidAt(v.home)) === v.oid) return v;
    }
    return undefined;
  };

  const visit = async (nodeDir: string, isRoot: boolean): Promise<KNode | undefined> => {
    const key = nodeDir;
    if (done.has(key)) {
      for (const r of recorders) if (!r.dirs.has(key)) r.complete = false;
      return done.get(key);
    }
    if (visiting.has(key)) {
      for (const r of recorders) r.complete = false;
      apply({ k: 'missing', text: `${nodeDir || '.'}: a cycle of kustomizations (kustomize refuses it)` });
      return undefined;
    }
    const hit = isRoot ? undefined : await subgraphHit(nodeDir);
    if (hit) {
      view.replay(hit.reads);
      for (const e of hit.effects) apply(e);
      for (const [d, n] of hit.nodes) built(d, n);
      return hit.node;
    }
    visiting.add(key);
    // the root is never remembered whole (its own reading changes at most revisions): nothing to record for it
    const rec: Recorder = { effects: [], nodes: [], dirs: new Set(), complete: true };
    if (!isRoot) recorders.push(rec);
    let node: KNode | undefined;
    let reads: Reads;
    try {
      ({ value: node, reads } = await view.collect(async () => {
        const reading = isRoot ? await readNode(nodeDir, true) : await memoRead(nodeDir);
        const n: KNode = { dir: nodeDir, ...(reading.file ? { file: reading.file } : {}), doc: reading.doc, resources: [], components: [], files: [], inline: [] };
        if (reading.ok) built(key, n);
        for (const ev of reading.events) {
          switch (ev.k) {
            case 'missing':
              apply({ k: 'missing', text: ev.text });
              break;
            case 'opaque':
              apply({ k: 'opaque', dir: nodeDir, text: ev.text });
              break;
            case 'file':
              apply({ k: 'file', file: ev.file });
              if (ev.into === 'resources') n.resources.push({ kind: 'file', entry: ev.entry!, file: ev.file });
              else if (ev.into === 'files') n.files.push(ev.file);
              break;
            case 'child': {
              const child = await visit(ev.dir, false);
              if (child && ev.into === 'resources') n.resources.push({ kind: 'node', entry: ev.entry!, node: child, ...(ev.via ? { via: ev.via } : {}) });
              else if (child) n.components.push(child);
              break;
            }
            case 'remote':
              n.resources.push({ kind: 'opaque', entry: ev.entry });
              break;
            case 'inline':
              n.inline.push(ev.text);
              break;
          }
        }
        return reading.ok ? n : undefined;
      }));
    } finally {
      visiting.delete(key);
      if (!isRoot) recorders.splice(recorders.lastIndexOf(rec), 1);
    }
    // remembered whole: a later revision where the folder holding all it read is the same reuses it without visiting
    if (!isRoot && node && rec.complete && rules.memoKey && !view.changed) {
      const home = reads.commonFolder();
      const oid = home === undefined ? undefined : await view.treeOidAt(home);
      if (home !== undefined && oid !== undefined) {
        const k = `ksub|${rules.memoKey}|${nodeDir}`;
        const versions = (view.memo.get(k) as MemoSubgraph[] | undefined) ?? [];
        view.memo.set(k, [{ home, oid, reads, node, effects: rec.effects, nodes: rec.nodes }, ...versions].slice(0, MEMO_VERSIONS));
      }
    }
    return node;
  };

  const root = await visit(dir, true);
  graph.root = root ?? { dir, doc: {}, resources: [], components: [], files: [], inline: [] };
  return graph;
}

/**
 * For a reader that fetches on demand (git over HTTPS, blob-less): the kustomization files of the
 * graph rooted at `dir`, asked for a level at a time (the folders a level's kustomizations name
 * are the next level), so that the walk reads them locally: a few requests for a graph of
 * thousands of applications, and only the files the graph can reach. A hint only: the walk reads
 * what it reads either way, and what this misses is fetched when read.
 */
export async function prefetchGraph(view: TreeView, dir: string): Promise<void> {
  if (!view.prefetches) return;
  const tree = await view.treeOidAt(dir);
  if (tree === undefined) return;
  // after one graph was asked for, the next revision's new kustomizations are among the files
  // that differ below `dir` (a tree diff, entering changed folders only): a warm run's builds ask
  // for those instead of walking 4,400 kustomizations again (one outside `dir` is read on demand)
  const key = `prefetched-graph|${dir}`;
  const before = view.memo.get(key) as string | undefined;
  if (before !== undefined) {
    if (before !== tree) await view.prefetchBlobs(await changedKustomizations(view, dir, before, tree));
    view.memo.set(key, tree);
    return;
  }
  const seen = new Set<string>([dir]);
  for (let level = [dir]; level.length > 0 && seen.size < 200_000; ) {
    const found: Array<{ dir: string; oid: string }> = [];
    for (const d of level) {
      const at = await view.treeOidAt(d);
      if (at === undefined) continue;
      const entries = await view.entriesOf(at, d);
      for (const name of KUSTOMIZATION_FILES) {
        const e = entries.get(name);
        if (e?.type === 'blob' && e.mode !== '120000') found.push({ dir: d, oid: e.oid });
      }
    }
    await view.prefetchBlobs(found.map((f) => f.oid));
    const next: string[] = [];
    for (const f of found) {
      const doc = (await view.parse('kustomization', f.oid, parseKustomization)) as Rec;
      const named = [...strings(doc.resources), ...strings(doc.bases), ...strings(doc.components)];
      for (const field of ['generators', 'transformers', 'validators'] as const) named.push(...strings(doc[field]).filter((x) => !x.includes('\n')));
      for (const entry of named) {
        if (isRemote(entry)) continue;
        const target = joinInside(f.dir, entry);
        if (target === undefined || seen.has(target)) continue;
        seen.add(target);
        if ((await view.treeOidAt(target)) !== undefined) next.push(target);
      }
    }
    level = next;
  }
  view.memo.set(key, tree);
}

/** The kustomization files below `dir` whose blob differs from the tree `from` to the tree `to`. */
async function changedKustomizations(view: TreeView, dir: string, from: string | undefined, to: string): Promise<string[]> {
  const out: string[] = [];
  const [a, b] = await Promise.all([from === undefined ? undefined : view.entriesOf(from, dir), view.entriesOf(to, dir)]);
  for (const [name, e] of b) {
    const old = a?.get(name);
    if (old?.oid === e.oid) continue;
    if (e.type === 'tree') out.push(...(await changedKustomizations(view, dir ? `${dir}/${name}` : name, old?.type === 'tree' ? old.oid : undefined, e.oid)));
    else if (e.type === 'blob' && e.mode !== '120000' && KUSTOMIZATION_FILES.includes(name)) out.push(e.oid);
  }
  return out;
}

function safeLoad(text: string): unknown {
  try {
    return jsYaml.load(text);
  } catch {
    return undefined;
  }
}

/** Every document of a YAML file (none when it does not parse). */
export function loadAllSafe(bytes: Uint8Array): unknown[] {
  try {
    return jsYaml.loadAll(Buffer.from(bytes).toString('utf8')).filter((d) => d !== null && d !== undefined);
  } catch {
    return [];
  }
}

/** Every node of a graph, parents before children. */
export function nodesOf(root: KNode): KNode[] {
  const out: KNode[] = [];
  const seen = new Set<KNode>();
  const go = (n: KNode) => {
    if (seen.has(n)) return;
    seen.add(n);
    out.push(n);
    for (const r of n.resources) if (r.kind === 'node') go(r.node);
    for (const c of n.components) go(c);
  };
  go(root);
  return out;
}
