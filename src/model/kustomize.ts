import path from 'node:path/posix';
import { loadAllYaml, loadYaml, loadYamlOr, rethrowBound } from '../yaml-read.ts';
import type { InputRole } from './types.ts';
import { joinInside, TreeView, within, type Link } from './tree.ts';
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
  /** files the engine never sees (Flux's source ignore rules); asked lazily, folder by folder */
  ignored?: (file: string, isDir: boolean) => boolean | Promise<boolean>;
  /** a count that grows when an answer depended on the whole source (a reading during which it grew is not remembered) */
  sourceWide?: () => number;
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
  | { kind: 'opaque'; entry: string }
  /** a resource the walk did not read: it lies neither on the way to the target's paths nor in them (WalkOptions.anchors) */
  | { kind: 'pruned'; entry: string; dir: string };

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
  /**
   * With WalkOptions.anchors: the nodes on the way to the anchors (the root, and the
   * kustomizations whose folder lies above an anchor), whose other resources were left unread.
   * Their own transforms apply to what the walk read too (a render of the cut keeps them).
   */
  above?: KNode[];
  /** true when the walk left some resource unread (a cut of the engine's build) */
  pruned?: boolean;
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
    if (r.kind === 'file' && !(await rules.ignored?.(p, false))) found.push({ name, path: r.path, oid: r.oid, ...(r.via ? { via: r.via, named: p } : {}) });
  }
  if (found.length > 1) return { error: `${dir || '.'}: found multiple kustomization files (${found.map((f) => f.name).join(', ')}): kustomize refuses the folder` };
  const [first] = found;
  return first ? { path: first.path, oid: first.oid, ...(first.via ? { via: first.via, named: first.named! } : {}) } : undefined;
}

/** Parses a kustomization; a file that does not parse makes the build fail. */
export function parseKustomization(bytes: Uint8Array, where?: string): Rec | { error: string } {
  try {
    const doc = loadYaml(Buffer.from(bytes).toString('utf8'), where ? { where } : {});
    if (doc === null || doc === undefined) return {};
    return isRec(doc) ? doc : { error: 'not a mapping' };
  } catch (error) {
    rethrowBound(error);
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
  /** a resource left unread: off the way to the anchors (WalkOptions), not even looked up */
  | { k: 'pruned'; entry: string; dir: string }
  | { k: 'inline'; text: string };

interface NodeReading {
  /** false: the folder cannot be built (the messages say why) */
  ok: boolean;
  file?: GraphFile;
  doc: Rec;
  events: NodeEvent[];
}

/** A remembered reading of a folder: valid at any revision where `home`'s tree is `oid` and the rules it read above home (reads.ts guards) are the same. */
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

export interface WalkOptions {
  /**
   * The target's paths (folders or files, repo-relative): the walk reads only what reaches them
   * (issue 33: cost follows the change, not the repository). The root, and a kustomization whose
   * folder lies above an anchor, read only the resources that lie in an anchor or above one; the
   * others (sibling applications of a listing) are left unread, not even looked up, and named as
   * `pruned` resources. What lies in an anchor is walked whole, with everything it loads from
   * anywhere. Components are always walked (they transform what the kustomization builds).
   */
  anchors?: string[];
}

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
export async function walkGraph(view: TreeView, dir: string, rules: WalkRules, generated?: () => Promise<Rec | { error: string }>, opts: WalkOptions = {}): Promise<Graph> {
  const graph: Graph = { root: undefined as unknown as KNode, files: new Map(), opaque: [], missing: [] };
  const anchors = opts.anchors?.map((a) => a.replace(/\/+$/, ''));
  if (anchors) graph.above = [];
  const inAnchor = (d: string) => anchors!.some((a) => within(d, a));
  const aboveAnchor = (d: string) => anchors!.some((a) => d !== a && within(a, d));
  const wide = () => rules.sourceWide?.() ?? 0;
  const visiting = new Set<string>();
  const done = new Map<string, KNode>();

  /**
   * Reads one folder's kustomization and what it loads; its sub-folders are only named. `prune`:
   * for a node on the way to the anchors, the resources to leave unread (by where they point,
   * before anything is read there).
   */
  const readNode = async (nodeDir: string, isRoot: boolean, prune?: (target: string) => boolean): Promise<NodeReading> => {
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
      if (r.kind !== 'file' || (await rules.ignored?.(target, false))) {
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
      const parsed = await view.parse('kustomization', kfile.oid, (b) => parseKustomization(b, kfile.path), kfile.path);
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
      if (prune?.(target)) {
        events.push({ k: 'pruned', entry, dir: target });
        continue;
      }
      const r = await view.resolve(target, rules.symlinks);
      if (r.kind === 'dir' && !(await rules.ignored?.(r.path, true))) {
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
        const configs = await view.parse('yaml-all', f.oid, loadAllSafe, f.path);
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
      if ((await view.treeOidAt(v.home)) === v.oid && (await view.guardsHold(v.reads))) {
        view.replay(v.reads);
        return v.reading;
      }
    }
    const wideBefore = wide();
    const { value, reads } = await view.collect(() => readNode(nodeDir, false));
    // a planned change over the tree is this view's alone: what was read through it is not remembered
    if (view.changed || wide() !== wideBefore) return value;
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
      if ((await view.treeOidAt(v.home)) === v.oid && (await view.guardsHold(v.reads))) return v;
    }
    return undefined;
  };

  /**
   * `above`: the node lies on the way to the anchors (its folder above one, or the root), not in
   * one: it enters only the resource folders that reach an anchor, and is never remembered whole
   * (what it leaves out depends on the anchors).
   */
  const visit = async (nodeDir: string, isRoot: boolean, above = false): Promise<KNode | undefined> => {
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
    const hit = isRoot || above ? undefined : await subgraphHit(nodeDir);
    if (hit) {
      view.replay(hit.reads);
      for (const e of hit.effects) apply(e);
      for (const [d, n] of hit.nodes) built(d, n);
      return hit.node;
    }
    visiting.add(key);
    // the root is never remembered whole (its own reading changes at most revisions): nothing to record for it
    const rec: Recorder = { effects: [], nodes: [], dirs: new Set(), complete: !above };
    if (!isRoot) recorders.push(rec);
    const wideBefore = wide();
    let node: KNode | undefined;
    let reads: Reads;
    try {
      ({ value: node, reads } = await view.collect(async () => {
        // a node on the way to the anchors is read apart from the shared readings: what it leaves unread depends on them
        const reading = isRoot || above ? await readNode(nodeDir, isRoot, above ? (t) => !inAnchor(t) && !aboveAnchor(t) : undefined) : await memoRead(nodeDir);
        const n: KNode = { dir: nodeDir, ...(reading.file ? { file: reading.file } : {}), doc: reading.doc, resources: [], components: [], files: [], inline: [] };
        if (reading.ok) built(key, n);
        if (above && reading.ok) graph.above!.push(n);
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
              // a resource folder of a node on the way lies in an anchor (walked whole) or above one (on the way too)
              const childAbove = above && ev.into === 'resources' && !inAnchor(ev.dir);
              const child = await visit(ev.dir, false, childAbove);
              if (child && ev.into === 'resources') n.resources.push({ kind: 'node', entry: ev.entry!, node: child, ...(ev.via ? { via: ev.via } : {}) });
              else if (child) n.components.push(child);
              break;
            }
            case 'remote':
              n.resources.push({ kind: 'opaque', entry: ev.entry });
              break;
            case 'pruned':
              n.resources.push({ kind: 'pruned', entry: ev.entry, dir: ev.dir });
              graph.pruned = true;
              for (const r of recorders) r.complete = false;
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
    if (!isRoot && node && rec.complete && rules.memoKey && !view.changed && wide() === wideBefore) {
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

  const root = await visit(dir, true, anchors !== undefined && !inAnchor(dir));
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
      const doc = (await view.parse('kustomization', f.oid, (b) => parseKustomization(b, `the kustomization file of ${f.dir || '.'}/`), `the kustomization file of ${f.dir || '.'}/`)) as Rec;
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

/**
 * For a reader that fetches on demand (GitHub, git over HTTPS): what a walk with anchors
 * (WalkOptions) reads, asked for ahead a level at a time, each level one request: first the
 * folders on the way from the repository's root to the build's root and to each anchor (as
 * listings) and the anchors whole; then what the kustomizations now at hand name beyond what was
 * asked (a base, a component, a patch file), whole; at most four levels. A hint only: the walk
 * reads what it reads either way, and what this misses is fetched when read. Records nothing.
 */
export async function prefetchNear(views: TreeView[], dir: string, anchors: string[]): Promise<void> {
  const live = views.filter((v) => v.prefetches);
  if (live.length === 0) return;
  const ways = new Set<string>();
  const up = (p: string) => {
    const parts = p ? p.split('/') : [];
    for (let i = 0; i <= parts.length; i++) ways.add(parts.slice(0, i).join('/'));
  };
  up(dir);
  const ends = [...new Set(anchors.map((a) => a.replace(/\/+$/, '')))];
  for (const a of ends) up(a.includes('/') ? a.slice(0, a.lastIndexOf('/')) : '');
  // per revision: what is asked next, and everything asked so far
  let levels = live.map((view) => ({ view, wholes: ends, asked: [...ends] }));
  for (let level = 0; level < 4 && levels.length > 0; level++) {
    await TreeView.prefetchFolders(levels.map(({ view, wholes }) => ({ view, ways: level === 0 ? [...ways] : [], wholes })));
    const next: typeof levels = [];
    for (const { view, wholes, asked } of levels) {
      const found = new Set<string>();
      for (const w of wholes) {
        for (const k of await kustomizationsBelow(view, w, 3)) {
          const doc = await view.parse('kustomization', k.oid, (b) => parseKustomization(b, `the kustomization file of ${k.dir || '.'}/`), `the kustomization file of ${k.dir || '.'}/`);
          if ('error' in doc && Object.keys(doc).length === 1) continue;
          for (const ref of namedPaths(doc as Rec)) {
            const target = joinInside(k.dir, ref);
            if (target !== undefined && !asked.some((a) => within(target, a))) found.add(target);
          }
        }
      }
      if (found.size > 0) next.push({ view, wholes: [...found], asked: [...asked, ...found] });
    }
    levels = next;
  }
}

/** The kustomization files in `dir` and the folders below it, `depth` levels down, as trees read so far tell (records nothing). */
async function kustomizationsBelow(view: TreeView, dir: string, depth: number): Promise<Array<{ dir: string; oid: string }>> {
  const oid = await view.treeOidAt(dir);
  if (oid === undefined) return [];
  const out: Array<{ dir: string; oid: string }> = [];
  const go = async (tree: string, at: string, left: number): Promise<void> => {
    const entries = await view.entriesOf(tree, at);
    const k = KUSTOMIZATION_FILES.map((n) => entries.get(n)).find((e) => e?.type === 'blob' && e.mode !== '120000');
    if (k) out.push({ dir: at, oid: k.oid });
    if (left > 0) for (const [name, e] of entries) if (e.type === 'tree') await go(e.oid, at ? `${at}/${name}` : name, left - 1);
  };
  await go(oid, dir, depth);
  return out;
}

/** Every local path a kustomization names (resources, components, patches, generator inputs, configs). */
function namedPaths(doc: Rec): string[] {
  const out = [...strings(doc.resources), ...strings(doc.bases), ...strings(doc.components), ...strings(doc.crds), ...strings(doc.configurations)];
  for (const p of [...recs(doc.patches), ...recs(doc.patchesJson6902), ...recs(doc.replacements)]) if (typeof p.path === 'string') out.push(p.path);
  for (const p of strings(doc.patchesStrategicMerge)) if (!p.includes('\n')) out.push(p);
  for (const g of [...recs(doc.configMapGenerator), ...recs(doc.secretGenerator)]) {
    for (const f of strings(g.files)) out.push(f.includes('=') ? f.slice(f.indexOf('=') + 1) : f);
    out.push(...strings(g.envs));
    if (typeof g.env === 'string') out.push(g.env);
  }
  for (const field of ['generators', 'transformers', 'validators']) out.push(...strings(doc[field]).filter((x) => !x.includes('\n')));
  if (isRec(doc.openapi) && typeof doc.openapi.path === 'string') out.push(doc.openapi.path);
  return out.filter((p) => p !== '' && !isRemote(p));
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

const safeLoad = (text: string): unknown => loadYamlOr(text, () => undefined);

/** Every document of a YAML file (none when it does not parse). */
export function loadAllSafe(bytes: Uint8Array, where?: string): unknown[] {
  try {
    return loadAllYaml(Buffer.from(bytes).toString('utf8'), where ? { where } : {}).filter((d) => d !== null && d !== undefined);
  } catch (error) {
    rethrowBound(error);
    return [];
  }
}

/**
 * Fields of a kustomization whose effect reaches across the resources it builds: a rename that
 * kustomize carries into every reference (a prefix, a suffix, a generator's hash: nameref,
 * api/filters/nameref), values copied from one object into another (replacements, vars),
 * configurations and plugins that may do either. A cut of the build that leaves resources out
 * holds for what it keeps only where no kustomization on the way has one of them.
 */
const ACROSS = ['namePrefix', 'nameSuffix', 'configMapGenerator', 'secretGenerator', 'generators', 'transformers', 'validators', 'replacements', 'vars', 'configurations', 'crds', 'helmCharts', 'helmGlobals', 'helmChartInflationGenerator'];

/** The fields of a node (and of the components it takes) that reach across its resources. */
export function acrossFields(n: KNode, seen = new Set<KNode>()): string[] {
  if (seen.has(n)) return [];
  seen.add(n);
  const where = n.file?.path ?? `${n.dir || '.'} (generated kustomization)`;
  const own = ACROSS.filter((f) => {
    const v = n.doc[f];
    return v !== undefined && v !== null && v !== '' && !(Array.isArray(v) && v.length === 0) && !(isRec(v) && Object.keys(v).length === 0);
  }).map((f) => `${f} in ${where}`);
  return [...own, ...n.components.flatMap((c) => acrossFields(c, seen))];
}

/** What a render of a walked cut (WalkOptions.anchors) leaves out, and what could make it unsound. */
export function cutOf(graph: Graph): { dropped: Map<string, string[]>; across: string[]; kept: number; left: number } | undefined {
  if (!graph.pruned) return undefined;
  const dropped = new Map<string, string[]>();
  let left = 0;
  for (const n of graph.above ?? []) {
    const entries = n.resources.filter((r) => r.kind === 'pruned').map((r) => r.entry);
    left += entries.length;
    if (entries.length && n.file) dropped.set(n.file.named ?? n.file.path, entries);
  }
  const across = [...new Set((graph.above ?? []).flatMap((n) => acrossFields(n)))];
  return { dropped, across, kept: nodesOf(graph.root).length, left };
}

/** The kustomizations of `whole` outside `cut` that rename or carry values across resources. */
export function renamesOutside(whole: Graph, cut: Graph): string[] {
  const inCut = new Set(nodesOf(cut.root).map((n) => n.dir));
  return nodesOf(whole.root).filter((n) => !inCut.has(n.dir)).flatMap((n) => acrossFields(n, new Set(n.components)));
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
