import jsYaml from 'js-yaml';
import { createHash } from 'node:crypto';
import { mkdirSync, promises as fs, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { redact } from '../scrub.ts';
import { applyArgoKustomize, argoBuildFlags, ArgoEditError } from './argocd.ts';
import { buildInputs } from './confine.ts';
import { fluxGeneratedResources, fluxSubstitute, FluxSpecError, foldFluxSpec } from './flux.ts';
import { KUSTOMIZATION_FILES, parseKustomization, writeKustomization } from './kustomization.ts';
import { parseObjects, splitDocuments, type RenderedObject } from './objects.ts';
import { firstLines, runBounded, type Renderer } from './renderer.ts';

/**
 * The render check of issue 18 (points 5 and 6): build a target as its GitOps engine would, with
 * the real kustomize, so that a planned revert can be verified on what the engine builds.
 * research/render.md §1 (Flux), §2 (Argo CD), §6 (the predicate and the PR output).
 */

export { compareRenders, type AwayField, type RenderComparison } from './compare.ts';
export { DEFAULT_MAX_CHARS, renderedDiff, type RenderedDiff } from './diff.ts';
export { fluxGeneratedResources, substituteFromPlaceholder } from './flux.ts';
export type { RenderedObject } from './objects.ts';
export { detectRenderer, type Renderer, type Unavailable } from './renderer.ts';

/** What to render: one revision's files as the engine would see them. */
export interface RenderInput {
  /** repo-relative path → bytes of every file the engine's build may read at this revision
   *  (symlinks already handled by the caller as the engine does: dropped for Flux, resolved for Argo CD) */
  files: Map<string, Uint8Array>;
  /** the folder kustomize builds, repo-relative, '' = repository root */
  root: string;
  engine: 'flux' | 'argocd';
  /** Flux Kustomization spec, folded into the root kustomization in place as kustomize-controller's
   *  generator does. When the root folder has no kustomization file, `generatedResources` lists the
   *  resources Flux's scanManifests would generate; when omitted it is computed from `files`
   *  (fluxGeneratedResources). */
  flux?: { spec: Record<string, unknown>; generatedResources?: string[]; substituteFrom?: { values: Record<string, string>; complete: boolean } };
  /** Argo CD `spec.source.kustomize` options, argocd-cm `kustomize.buildOptions` (default none =
   *  LoadRestrictionsRootOnly), and the build environment `${ARGOCD_APP_*}` expands from */
  argocd?: { kustomize?: Record<string, unknown>; buildOptions?: string[]; env?: Record<string, string> };
  /** kustomization file → resources (entries as written) the build leaves out: a cut of the engine's build (model/types.ts RenderCut) */
  cut?: Map<string, string[]>;
}

export type RenderResult =
  | {
      objects: RenderedObject[];
      /** the build output: kustomize's YAML, after Flux's post-build substitution */
      output: string;
      /** false when substitution rewrote a document or used placeholders: `output` is then not
       *  byte for byte what the engine builds, and fluxDigest(output) cannot match the cluster's */
      exactOutput: boolean;
      /** what the reader must know about this render (placeholders, kustomize version) */
      notes: string[];
    }
  /** `limit`: stopped by a bound of lastgood's (time, output, memory), not by the build itself */
  | { failed: string; limit?: true };

/**
 * The bounds of one kustomize run (docs/security.md, "Bounds on what is read"): beyond them it is stopped and the render
 * check says "not rendered: limit" (issue 35: a resource file that expands took more than 2 GB).
 * Memory is the child's resident set (Linux); a cut render takes tens of MB, a whole build of
 * thousands of applications about 150 MB.
 */
export const RENDER_BOUNDS = { timeoutMs: 120_000, maxOutputBytes: 64 << 20, maxRssBytes: 384 << 20 } as const;

export interface RenderOptions {
  /** default RENDER_BOUNDS.timeoutMs (120 s) */
  timeoutMs?: number;
  /** stdout + stderr, default RENDER_BOUNDS.maxOutputBytes (64 MiB) */
  maxOutputBytes?: number;
  /** the renderer's resident memory, default RENDER_BOUNDS.maxRssBytes (384 MiB) */
  maxRssBytes?: number;
  /** where the temporary tree goes (default os.tmpdir()) */
  tmpDir?: string;
}

/** Flux's status.history[].digest of a build output: "sha256:<hex>" of its bytes
 *  (kustomization_controller.go L444: digest.FromBytes(resources), go-digest's canonical sha256). */
export function fluxDigest(output: string): string {
  return `sha256:${createHash('sha256').update(output, 'utf8').digest('hex')}`;
}

/** a repository-relative path that stays inside the repository */
const isInside = (p: string) => p !== '' && !p.startsWith('/') && !p.includes('\0') && !p.split('/').includes('..');

/** What kustomize said, first lines, with the temporary directory taken out of paths. */
function kustomizeMessage(text: string, tmpRoot: string): string {
  let t = text.replaceAll(`${tmpRoot}/`, '').replaceAll(tmpRoot, '.');
  // kubectl wraps the error in a klog line: E1125 22:02:54.530043 11356 run.go:72] "command failed" err=<\n\t…\n >
  const klog = /"command failed" err=<\n([^]*?)\n >/.exec(t);
  if (klog) t = klog[1]!.replace(/^\t/gm, '');
  // …or on one line, quoted: E1125 23:13:18.832724 3555 run.go:72] "command failed" err="accumulating …"
  const quoted = /"command failed" err="((?:[^"\\]|\\.)*)"/.exec(t);
  if (!klog && quoted) t = quoted[1]!.replace(/\\(.)/g, '$1');
  return redact(firstLines(t.trim().replace(/^Error: /, ''), 12)).slice(0, 4000);
}

/**
 * A kustomization on the way of a cut (a listing of thousands of applications): read with js-yaml's
 * core schema, ten times faster than the yaml package on a 200 KB listing (the values are the same:
 * strings stay strings, no timestamps), and with the yaml package where js-yaml refuses it (a key
 * twice, which kustomize's reader takes).
 */
function parseListing(text: string, file: string): Record<string, unknown> {
  // merge keys (<<) are the yaml package's to read (js-yaml's core schema leaves them as keys)
  if (text.includes('<<')) return parseKustomization(text, file);
  try {
    const doc = jsYaml.load(text, { schema: jsYaml.CORE_SCHEMA });
    if (doc && typeof doc === 'object' && !Array.isArray(doc)) return doc as Record<string, unknown>;
  } catch {
    // below
  }
  return parseKustomization(text, file);
}

export async function render(renderer: Renderer, input: RenderInput, opts: RenderOptions = {}): Promise<RenderResult> {
  const base = await fs.mkdtemp(path.join(opts.tmpDir ?? os.tmpdir(), 'lastgood-render-'));
  try {
    return await renderIn(base, renderer, input, opts);
  } catch (e) {
    if (e instanceof FluxSpecError || e instanceof ArgoEditError) return { failed: redact(e.message) };
    return { failed: redact(`render failed: ${(e as Error).message}`.replaceAll(`${base}/repo/`, '').replaceAll(base, '')) };
  } finally {
    await fs.rm(base, { recursive: true, force: true });
  }
}

async function renderIn(base: string, renderer: Renderer, input: RenderInput, opts: RenderOptions): Promise<RenderResult> {
  const repo = path.join(base, 'repo');
  const root = input.root.replace(/^\.?\/+/, '').replace(/\/+$/, '');
  if (root !== '' && root !== '.' && !isInside(root)) return { failed: `${input.root}: the path to build must be inside the repository` };
  const rootRel = root === '.' ? '' : root;

  // the tree as the engine sees it: regular files only
  const texts = new Map<string, string>();
  const dirs = new Set<string>(['']);
  const byDir = new Map<string, string[]>();
  for (const p of input.files.keys()) {
    if (!isInside(p)) return { failed: `${p}: not a repository-relative path` };
    const parent = path.posix.dirname(p) === '.' ? '' : path.posix.dirname(p);
    const inDir = byDir.get(parent);
    if (inDir) inDir.push(p);
    else byDir.set(parent, [p]);
    for (let d = path.posix.dirname(p); d !== '.' && !dirs.has(d); d = path.posix.dirname(d)) dirs.add(d);
  }
  const readText = (p: string) => {
    if (texts.has(p)) return texts.get(p);
    const b = input.files.get(p);
    return b === undefined ? undefined : Buffer.from(b).toString('utf8');
  };
  const dirPath = path.join(repo, rootRel);
  if (!dirs.has(rootRel)) {
    return { failed: input.engine === 'flux' ? `kustomization path not found: ${input.root || '.'}` : `${input.root || '.'}: app path does not exist` };
  }
  const kname = KUSTOMIZATION_FILES.find((f) => input.files.has(path.posix.join(rootRel, f)));
  const exists = (rel: string) => {
    const p = path.posix.normalize(path.posix.join(rootRel, rel));
    return input.files.has(p) || dirs.has(p === '.' ? '' : p);
  };
  const notes: string[] = [`rendered with ${renderer.kind === 'kubectl' ? 'kubectl kustomize' : 'kustomize'} ${renderer.version}`];
  // a cut: the kustomizations on the way to the target build only the resources that reach it
  for (const [kfile, entries] of input.cut ?? []) {
    const text = readText(kfile);
    if (text === undefined) continue;
    const left = new Set(entries);
    const doc = parseListing(text, kfile);
    for (const field of ['resources', 'bases']) {
      const list = doc[field];
      if (Array.isArray(list)) doc[field] = list.filter((e) => !(typeof e === 'string' && left.has(e)));
    }
    texts.set(kfile, writeKustomization(doc));
  }
  const flags: string[] = [];

  if (input.engine === 'flux') {
    const spec = input.flux?.spec ?? {};
    const kfile = path.posix.join(rootRel, kname ?? 'kustomization.yaml');
    const existing = kname ? parseKustomization(readText(kfile)!, kfile) : undefined;
    const generated = kname ? undefined : (input.flux?.generatedResources ?? fluxGeneratedResources(input.files, rootRel));
    const kus = foldFluxSpec(existing, generated, spec, exists);
    // kustomize-controller builds with krusty.Options{} whose Reorder is "", so the legacy
    // reordering never runs (kustomize api/krusty/kustomizer.go applySortOrder L129-165); the
    // kustomize CLI reorders unless told otherwise, and kubectl has no --reorder: sortOptions fifo
    // (a no-op sort, plugin/builtin/sortordertransformer) keeps the build's own order, as Flux's.
    if (kus.sortOptions === undefined) kus.sortOptions = { order: 'fifo' };
    texts.set(kfile, writeKustomization(kus));
    // generator.Build: LoadRestrictionsNone (fluxcd/pkg kustomize_generator.go L697-700)
    flags.push('--load-restrictor', 'LoadRestrictionsNone');
  } else {
    if (!kname) return { failed: `${input.root || '.'}: no kustomization file: Argo CD would not build this folder with kustomize` };
    const kfile = path.posix.join(rootRel, kname);
    const options = input.argocd?.kustomize ?? {};
    const edited = applyArgoKustomize(parseKustomization(readText(kfile)!, kfile), options, input.argocd?.env ?? {}, exists);
    if (edited) {
      texts.set(kfile, writeKustomization(edited));
    }
    // no buildOptions: `kustomize build <path>`, the default LoadRestrictionsRootOnly (kustomize.go L384-389)
    flags.push(...argoBuildFlags(input.argocd?.buildOptions ?? []));
  }

  const inputs = buildInputs({
    read: readText,
    isDir: (p) => dirs.has(p),
    filesIn: (d) => [...(byDir.get(d) ?? []), ...[...texts.keys()].filter((t) => path.posix.dirname(t) === (d || '.'))],
    filesUnder: (d) => [...input.files.keys()].filter((f) => d === '' || f.startsWith(`${d}/`)),
  }, rootRel);
  if (inputs.problem) return { failed: inputs.problem };
  // only what the build may read is written (synchronously: many small files are written several
  // times faster than with one await each); the root folder exists even when it holds nothing else
  mkdirSync(dirPath, { recursive: true });
  for (const p of [...inputs.files].sort()) {
    mkdirSync(path.dirname(path.join(repo, p)), { recursive: true });
    writeFileSync(path.join(repo, p), texts.get(p) ?? input.files.get(p)!);
  }

  const [file, ...prefix] = renderer.command;
  const run = await runBounded(file!, [...prefix, dirPath, ...flags], {
    cwd: repo,
    home: base,
    timeoutMs: opts.timeoutMs ?? RENDER_BOUNDS.timeoutMs,
    maxOutputBytes: opts.maxOutputBytes ?? RENDER_BOUNDS.maxOutputBytes,
    maxRssBytes: opts.maxRssBytes ?? RENDER_BOUNDS.maxRssBytes,
  });
  if (run.problem) return { failed: kustomizeMessage(run.problem, repo), ...(run.limit ? { limit: true as const } : {}) };
  if (run.code !== 0) {
    const said = kustomizeMessage(run.stderr || run.stdout, repo);
    if (input.engine === 'flux' && /enable-helm/.test(said)) {
      return { failed: `helmCharts cannot be built under Flux: kustomize-controller builds without --enable-helm (kustomize-controller#548; use a HelmRelease): ${said}` };
    }
    return { failed: said };
  }

  let output = run.stdout;
  let exactOutput = true;
  if (input.engine === 'flux') {
    const docs = splitDocuments(output);
    // kustomization_controller.go L794-798: every resource needs apiVersion, kind and name
    for (const o of parseObjects(docs)) {
      const meta = (o.object.metadata ?? {}) as { name?: unknown };
      if (!o.object.apiVersion || !o.object.kind || !meta.name) return { failed: `failed to decode Kubernetes apiVersion, kind and name from: ${o.key}` };
    }
    const sub = fluxSubstitute(docs, input.flux?.spec ?? {}, input.flux?.substituteFrom);
    if (sub.rewritten) {
      output = sub.docs.map((d) => (d.endsWith('\n') ? d : `${d}\n`)).join('---\n');
      exactOutput = false;
      notes.push('post-build substitution rewrote documents: their YAML is written by lastgood, so the bytes (and the digest) may differ from what Flux builds');
    }
    if (sub.placeholders.length) {
      exactOutput = false;
      notes.push(`postBuild.substituteFrom values live in the cluster: ${sub.placeholders.join(', ')} rendered as placeholders (the same in every render)`);
    }
  }
  return { objects: parseObjects(splitDocuments(output)), output, exactOutput, notes };
}
