import path from 'node:path/posix';
import jsYaml from 'js-yaml';
import type { InputRole } from './types.ts';
import { joinInside, within, type Link, type TreeView } from './tree.ts';

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
 * Walks the kustomization graph rooted at `dir`. `generated` stands for the kustomization the
 * engine writes where the folder has none (Flux), with the resources it lists.
 */
export async function walkGraph(view: TreeView, dir: string, rules: WalkRules, generated?: () => Promise<Rec | { error: string }>): Promise<Graph> {
  const graph: Graph = { root: undefined as unknown as KNode, files: new Map(), opaque: [], missing: [] };
  const visiting = new Set<string>();
  const done = new Map<string, KNode>();

  const addFile = (f: GraphFile): GraphFile => {
    if (!graph.files.has(f.path)) graph.files.set(f.path, f);
    return f;
  };

  /** A file the node at `root` loads: must exist, and obey the load rule. */
  const loadFile = async (root: string, rel: string, role: InputRole, what: string): Promise<GraphFile | undefined> => {
    const target = joinInside(root, rel);
    if (target === undefined) {
      graph.missing.push(`${what} ${rel} in ${root || '.'} points outside the repository (${rules.engine} refuses it)`);
      return undefined;
    }
    if (rules.load === 'root-only' && !within(target, root)) {
      graph.missing.push(`${what} ${rel} in ${root || '.'} lies outside that kustomization's folder: ${rules.engine} builds with kustomize's LoadRestrictionsRootOnly, which refuses it`);
      return undefined;
    }
    const r = await view.resolve(target, rules.symlinks);
    if (r.kind === 'escapes') {
      graph.missing.push(`${what} ${rel} in ${root || '.'} is a symlink to ${r.target}, outside the repository`);
      return undefined;
    }
    if (r.kind === 'dropped') {
      graph.missing.push(`${what} ${rel} in ${root || '.'} goes through the symlink ${r.link}, which ${rules.engine} leaves out of its source`);
      return undefined;
    }
    if (r.kind !== 'file' || rules.ignored?.(target, false)) {
      graph.missing.push(`${what} ${rel} in ${root || '.'} does not exist${r.kind === 'file' ? ` in ${rules.engine}'s source (ignored)` : ''}`);
      return undefined;
    }
    if (rules.load === 'root-only' && !within(r.path, root)) {
      graph.missing.push(`${what} ${rel} in ${root || '.'} is a symlink to ${r.path}, outside that kustomization's folder (kustomize's LoadRestrictionsRootOnly refuses it)`);
      return undefined;
    }
    return addFile({ path: r.path, oid: r.oid, role, ...(r.via ? { via: r.via, named: target } : {}) });
  };

  const visit = async (nodeDir: string, isRoot: boolean): Promise<KNode | undefined> => {
    const key = nodeDir;
    if (done.has(key)) return done.get(key);
    if (visiting.has(key)) {
      graph.missing.push(`${nodeDir || '.'}: a cycle of kustomizations (kustomize refuses it)`);
      return undefined;
    }
    visiting.add(key);
    try {
      const kfile = await kustomizationIn(view, nodeDir, rules);
      let doc: Rec;
      let file: GraphFile | undefined;
      if (kfile && 'error' in kfile) {
        graph.missing.push(kfile.error);
        return undefined;
      }
      if (kfile) {
        file = addFile({ path: kfile.path, oid: kfile.oid, role: 'kustomization', ...(kfile.via ? { via: kfile.via, named: kfile.named! } : {}) });
        const parsed = await view.parse('kustomization', kfile.oid, parseKustomization);
        if ('error' in parsed && typeof parsed.error === 'string' && Object.keys(parsed).length === 1) {
          graph.missing.push(`${kfile.path} does not parse: ${parsed.error}`);
          return undefined;
        }
        doc = parsed as Rec;
      } else if (isRoot && generated) {
        const g = await generated();
        if ('error' in g && typeof g.error === 'string') {
          graph.missing.push(g.error);
          return undefined;
        }
        doc = g as Rec;
      } else {
        graph.missing.push(`${nodeDir || '.'} has no kustomization file (${KUSTOMIZATION_FILES.join(', ')}): kustomize cannot build it`);
        return undefined;
      }
      const node: KNode = { dir: nodeDir, ...(file ? { file } : {}), doc, resources: [], components: [], files: [], inline: [] };
      done.set(key, node);

      // resources and the deprecated bases: a file, a kustomization folder, or a remote
      for (const entry of [...strings(doc.resources), ...strings(doc.bases)]) {
        if (isRemote(entry)) {
          graph.opaque.push({ dir: nodeDir, text: `remote resource ${entry} in ${file?.path ?? nodeDir}: kustomize fetches it at build time` });
          node.resources.push({ kind: 'opaque', entry });
          continue;
        }
        const target = joinInside(nodeDir, entry);
        if (target === undefined) {
          graph.missing.push(`resource ${entry} in ${file?.path ?? nodeDir} points outside the repository`);
          continue;
        }
        const r = await view.resolve(target, rules.symlinks);
        if (r.kind === 'dir' && !rules.ignored?.(r.path, true)) {
          const child = await visit(r.path, false);
          if (child) node.resources.push({ kind: 'node', entry, node: child, ...(r.via ? { via: r.via } : {}) });
          continue;
        }
        const f = await loadFile(nodeDir, entry, 'resource', 'resource');
        if (f) node.resources.push({ kind: 'file', entry, file: f });
      }
      for (const entry of strings(doc.components)) {
        if (isRemote(entry)) {
          graph.opaque.push({ dir: nodeDir, text: `remote component ${entry} in ${file?.path ?? nodeDir}` });
          continue;
        }
        const target = joinInside(nodeDir, entry);
        const child = target === undefined ? undefined : await visit(target, false);
        if (child) node.components.push(child);
        else if (target === undefined) graph.missing.push(`component ${entry} in ${file?.path ?? nodeDir} points outside the repository`);
      }
      const load = async (rel: unknown, role: InputRole, what: string) => {
        if (typeof rel !== 'string' || rel === '') return;
        const f = await loadFile(nodeDir, rel, role, what);
        if (f) node.files.push(f);
      };
      for (const c of strings(doc.crds)) await load(c, 'crd', 'CRD');
      for (const c of strings(doc.configurations)) await load(c, 'config', 'configuration');
      if (isRec(doc.openapi)) await load(doc.openapi.path, 'config', 'openapi');
      for (const p of recs(doc.patches)) {
        if (typeof p.path === 'string') await load(p.path, 'patch', 'patch');
        if (typeof p.patch === 'string') node.inline.push(p.patch);
      }
      for (const p of recs(doc.patchesJson6902)) {
        if (typeof p.path === 'string') await load(p.path, 'patch', 'patch');
        if (typeof p.patch === 'string') node.inline.push(p.patch);
      }
      // a patchesStrategicMerge entry is a file when it names one, else an inline patch (kustomize FixKustomizationPreMarshalling)
      for (const p of Array.isArray(doc.patchesStrategicMerge) ? doc.patchesStrategicMerge : []) {
        if (typeof p !== 'string') continue;
        const looksInline = p.includes('\n') || /^\s*(apiVersion|kind|metadata)\s*:/.test(p);
        if (looksInline) node.inline.push(p);
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
            pluginConfig(cfg, `inline ${field} in ${file?.path ?? nodeDir}`, nodeDir);
            if (typeof entry === 'string') node.inline.push(entry);
            else node.inline.push(JSON.stringify(entry));
            continue;
          }
          if (typeof entry !== 'string') continue;
          if (isRemote(entry)) {
            graph.opaque.push({ dir: nodeDir, text: `remote ${field} entry ${entry} in ${file?.path ?? nodeDir}` });
            continue;
          }
          const target = joinInside(nodeDir, entry);
          const r = target === undefined ? undefined : await view.resolve(target, rules.symlinks);
          if (r?.kind === 'dir') {
            const child = await visit(r.path, false);
            if (child) node.components.push(child);
            continue;
          }
          const f = await loadFile(nodeDir, entry, 'transformer', `${field} entry`);
          if (!f) continue;
          node.files.push(f);
          const configs = await view.parse('yaml-all', f.oid, loadAllSafe);
          for (const cfg of configs) {
            pluginConfig(cfg, f.path, nodeDir);
            // a builtin config may itself load a file (PatchTransformer path, ReplacementTransformer path)
            if (isRec(cfg) && typeof cfg.path === 'string') await load(cfg.path, 'patch', `${String(cfg.kind)} path`);
          }
        }
      }
      const helmCharts = recs(doc.helmCharts);
      if (helmCharts.length > 0 || isRec(doc.helmGlobals)) {
        if (!rules.helm) {
          graph.missing.push(`${file?.path ?? nodeDir} inflates Helm charts (helmCharts:), which needs kustomize --enable-helm: ${rules.engine} does not enable it`);
        } else {
          for (const chart of helmCharts) {
            if (typeof chart.valuesFile === 'string') await load(chart.valuesFile, 'values', 'Helm valuesFile');
            for (const v of strings(chart.additionalValuesFiles)) await load(v, 'values', 'Helm values file');
            graph.opaque.push({ dir: nodeDir, text: `Helm chart ${String(chart.name ?? '?')} ${String(chart.version ?? '')} inflated by ${file?.path ?? nodeDir} (${chart.repo ? `from ${String(chart.repo)}` : 'a local chart'}): its templates are not modelled` });
          }
        }
      }
      return node;
    } finally {
      visiting.delete(key);
    }
  };

  const pluginConfig = (cfg: unknown, where: string, nodeDir: string) => {
    if (!isRec(cfg) || typeof cfg.kind !== 'string') return;
    if (!BUILTIN_KINDS.has(cfg.kind)) graph.opaque.push({ dir: nodeDir, text: `plugin ${String(cfg.apiVersion ?? '')}/${cfg.kind} configured in ${where}: not a kustomize builtin, the model cannot see what it does` });
  };

  const root = await visit(dir, true);
  graph.root = root ?? { dir, doc: {}, resources: [], components: [], files: [], inline: [] };
  return graph;
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
