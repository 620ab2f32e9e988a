import { createHash } from 'node:crypto';
import { manifestFacts } from '../history/manifests.ts';
import type { KubeObject } from '../observe/types.ts';
import { formatImageRef } from '../observe/image-ref.ts';
import { loadAllSafe, type GraphFile, type KNode } from './kustomize.ts';
import { within, type TreeView } from './tree.ts';
import type { InputRole, ModelInput, Setter } from './types.ts';

/**
 * Which part of an engine's build belongs to the target. One Flux Kustomization or Argo CD
 * Application often builds many applications (`./apps` with podinfo, redis, …); a target is one
 * of them. A node of the kustomization graph is the target's when it lies under the target's
 * paths, or when one of its resource files declares an object the target lists (its Deployment,
 * Canary, HelmRelease: so a folder that moved out of the paths is still recognised as the target's).
 * The target reads:
 *
 * - every file of the nodes under its paths (and everything they load);
 * - from each node above them, the kustomization file's part that concerns the target (its
 *   transforms, and the `resources:` entries that lead to the target: a sibling application
 *   added to the list changes nothing the target builds) and every file it loads for its
 *   transforms (patches, generator inputs, components), which apply to the target's objects too.
 */

export interface TargetScope {
  paths: string[];
  /** objects the target lists that a manifest in the repository may declare (not the engine objects themselves) */
  objects: Array<{ kind: string; name: string; namespace?: string }>;
  /** the engine objects the target lists, as observed (a HelmRelease's values may be generated in any graph they read) */
  engines?: KubeObject[];
}

/** Resource files outside the paths whose objects are read to recognise the target's (beyond this: by paths only). */
const MAX_IDENTITY_READS = 2000;

type Rec = Record<string, unknown>;
const isRec = (v: unknown): v is Rec => typeof v === 'object' && v !== null && !Array.isArray(v);

/** True when a repo-relative file lies in one of the target paths (a folder path ends with "/"). */
export function inPaths(file: string, paths: string[]): boolean {
  return paths.some((p) => {
    const clean = p.replace(/\/+$/, '');
    return file === clean || file.startsWith(`${clean}/`);
  });
}

export interface Scoped {
  inputs: ModelInput[];
  /** files whose content sets what can fail (resources, patches, kustomization files, values) */
  contentFiles: GraphFile[];
  /** inline texts of the target's nodes (patches, transformer configs), with their kustomization file */
  inline: Array<{ where: string; text: string }>;
  /** true when the build holds something of the target */
  builds: boolean;
  /** the folders of the kustomizations the target reads (its own and those above them) */
  dirs: Set<string>;
  notes: string[];
}

/** The target's part of a kustomization graph. */
export async function scopeGraph(view: TreeView, root: KNode, scope: TargetScope): Promise<Scoped> {
  const notes: string[] = [];
  const outside = new Set<string>();
  // only whether there are more than MAX_IDENTITY_READS matters: the count stops past it
  const collectOutside = (n: KNode, seen = new Set<KNode>()) => {
    if (seen.has(n) || outside.size > MAX_IDENTITY_READS) return;
    seen.add(n);
    for (const r of n.resources) {
      if (r.kind === 'file' && !inPaths(r.file.path, scope.paths)) outside.add(r.file.oid);
      if (r.kind === 'node') collectOutside(r.node, seen);
    }
    for (const c of n.components) collectOutside(c, seen);
  };
  collectOutside(root);
  const readIdentities = scope.objects.length > 0 && outside.size <= MAX_IDENTITY_READS;
  // a reader that fetches on demand gets them in one request, not one each (nothing for a local reader)
  if (readIdentities) await view.prefetchBlobs([...outside]);
  if (scope.objects.length > 0 && !readIdentities) notes.push(`the build has more than ${MAX_IDENTITY_READS} resource files outside the target's paths: the target's objects are recognised by its paths only`);

  const declares = async (f: GraphFile): Promise<boolean> => {
    if (!readIdentities) return false;
    const docs = await view.parse('yaml-all', f.oid, loadAllSafe, f.path);
    return docs.some((d) => isRec(d) && scope.objects.some((o) => matches(o, d)));
  };
  const fileIn = new Map<GraphFile, boolean>();
  const fileInScope = async (f: GraphFile): Promise<boolean> => {
    let v = fileIn.get(f);
    // a file reached through a link in the paths is the target's as much as the link is
    if (v === undefined) fileIn.set(f, (v = inPaths(f.path, scope.paths) || Boolean(f.via?.some((l) => inPaths(l.path, scope.paths))) || (await declares(f))));
    return v;
  };
  // whether a node holds something of the target is a function of the node (its folders' readings
  // are remembered and shared across revisions, kustomize.ts): answers are kept across builds
  const crossKey = `scope|${JSON.stringify(scope)}|${readIdentities}`;
  let known = view.memo.get(crossKey) as WeakMap<KNode, boolean> | undefined;
  if (!known) view.memo.set(crossKey, (known = new WeakMap()));
  const kept = known;
  let cut = false;
  const memo = new Map<KNode, Promise<boolean>>();
  const nodeInScope = (n: KNode, stack = new Set<KNode>()): Promise<boolean> => {
    const answered = kept.get(n);
    if (answered !== undefined) return Promise.resolve(answered);
    const pending = memo.get(n);
    if (pending) return pending;
    if (stack.has(n)) {
      cut = true;
      return Promise.resolve(false);
    }
    stack.add(n);
    const p = (async () => {
      if (wholeNode(n, scope)) return true;
      for (const r of n.resources) {
        if (r.kind === 'file' && (await fileInScope(r.file))) return true;
        if (r.kind === 'node' && (await nodeInScope(r.node, stack))) return true;
      }
      for (const c of n.components) if (await nodeInScope(c, stack)) return true;
      return false;
    })();
    memo.set(n, p);
    return p;
  };

  const inputs = new Map<string, ModelInput>();
  const contentFiles = new Map<string, GraphFile>();
  const inline: Scoped['inline'] = [];
  const add = (path: string, digest: string, role: InputRole) => {
    if (!inputs.has(path)) inputs.set(path, { path, digest, role });
  };
  const addFile = (f: GraphFile) => {
    add(f.path, f.oid, f.role);
    for (const link of f.via ?? []) add(link.path, link.oid, f.role);
    contentFiles.set(f.path, f);
  };
  const visited = new Set<KNode>();
  const collect = async (n: KNode, whole: boolean): Promise<void> => {
    if (visited.has(n)) return;
    visited.add(n);
    whole ||= wholeNode(n, scope);
    const keep: string[] = [];
    for (const r of n.resources) {
      if (r.kind === 'opaque') {
        keep.push(r.entry);
        continue;
      }
      // a folder the walk left unread (off the way to the target's paths) is not the target's, as an entry out of scope is not
      if (r.kind === 'pruned') continue;
      const take = whole || (r.kind === 'file' ? await fileInScope(r.file) : await nodeInScope(r.node));
      if (!take) continue;
      keep.push(r.entry);
      if (r.kind === 'file') addFile(r.file);
      else {
        for (const link of r.via ?? []) add(link.path, link.oid, 'resource');
        await collect(r.node, whole);
      }
    }
    const where = n.file?.path ?? `${n.dir || '.'}/kustomization.yaml (generated)`;
    if (n.file && whole) addFile(n.file);
    else {
      // only the part that concerns the target: its transforms and the entries that lead to it
      const doc = { ...n.doc, resources: keep, bases: undefined };
      add(n.file?.path ?? `${n.dir ? `${n.dir}/` : ''}(generated kustomization)`, digestOf(doc), 'kustomization');
      if (n.file) contentFiles.set(n.file.path, n.file);
    }
    for (const f of n.files) addFile(f);
    for (const text of n.inline) inline.push({ where, text });
    for (const c of n.components) await collect(c, true);
  };
  const builds = await nodeInScope(root);
  await collect(root, false);
  // answers that no cycle cut short hold for the node wherever it appears
  if (!cut) for (const [n, p] of memo) kept.set(n, await p);
  return { inputs: [...inputs.values()], contentFiles: [...contentFiles.values()], inline, builds, dirs: new Set([...visited].map((n) => n.dir)), notes };
}

function wholeNode(n: KNode, scope: TargetScope): boolean {
  return scope.paths.some((p) => within(n.dir, p.replace(/\/+$/, '')));
}

function matches(o: TargetScope['objects'][number], doc: Rec): boolean {
  const meta = isRec(doc.metadata) ? doc.metadata : {};
  if (doc.kind !== o.kind || meta.name !== o.name) return false;
  return !(o.namespace && typeof meta.namespace === 'string' && meta.namespace !== o.namespace);
}

/** A stable digest of a parsed document (keys sorted). */
export function digestOf(value: unknown): string {
  return `d:${createHash('sha1').update(stableJson(value)).digest('hex')}`;
}

function stableJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stableJson).join(',')}]`;
  if (isRec(v)) return `{${Object.keys(v).filter((k) => v[k] !== undefined).sort().map((k) => `${JSON.stringify(k)}:${stableJson(v[k])}`).join(',')}}`;
  return JSON.stringify(v) ?? 'null';
}

/** What the target's files and inline texts set: images, chart pins, Helm values. */
export async function settersOf(view: TreeView, files: GraphFile[], inline: Scoped['inline']): Promise<Setter[]> {
  const out: Setter[] = [];
  const push = (where: string, facts: ReturnType<typeof manifestFacts>) => {
    for (const image of facts.images) out.push({ what: 'image', where, inRepo: true, image });
    for (const c of facts.charts) {
      const release = `${c.namespace ? `${c.namespace}/` : ''}${c.name}`;
      // a values-only patch of a HelmRelease pins no chart
      if (c.chart || c.version) out.push({ what: 'chart', where, inRepo: true, chart: { release, ...(c.chart ? { name: c.chart } : {}), ...(c.version ? { version: c.version } : {}) } });
      if (c.values !== undefined) out.push({ what: 'values', where, inRepo: true, values: { release, digest: digestOf(c.values) } });
    }
  };
  for (const f of files) {
    if (!/\.(ya?ml|json)$/i.test(f.path) && !/(^|\/)Kustomization$/.test(f.path)) continue;
    push(f.path, await view.parse(`facts:${f.path.split('/').pop()}`, f.oid, (bytes) => manifestFacts(bytes, f.path), f.path));
  }
  for (const { where, text } of inline) push(where, manifestFacts(text, ''));
  return dedupe(out);
}

function dedupe(setters: Setter[]): Setter[] {
  const seen = new Set<string>();
  return setters.filter((s) => {
    const key = `${s.what}|${s.where}|${s.image ? formatImageRef(s.image) : ''}|${JSON.stringify(s.chart ?? s.values ?? '')}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
