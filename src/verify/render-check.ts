import jsYaml from 'js-yaml';
import type { KubeObject } from '../observe/types.ts';
import { isRemote, KUSTOMIZATION_FILES } from '../model/kustomize.ts';
import type { TargetModel } from '../model/types.ts';
import type { FileChange, RepoReader } from '../repo/types.ts';
import { blobOid } from '../revert/threeway.ts';
import { compareRenders, detectRenderer, fluxDigest, render, renderedDiff, type Renderer, type RenderedDiff, type RenderedObject } from './render.ts';

/**
 * The verify stage, second layer: where a kustomize is available, the target is rendered as its
 * engine builds it (src/verify/render.ts) at the head, after the planned revert and at the
 * last-known-good, and the plan holds only if the render changes and every field it changes takes
 * the last-known-good's value (research/render.md §6.1). Where no renderer exists, or the model
 * gives nothing to render (a HelmRelease, the paths model), the model's verdict stands and the
 * output says the render was not possible.
 */

export type RenderCheck =
  | { skipped: string }
  | { refused: string; diff?: RenderedDiff }
  | { accepted: true; diff: RenderedDiff; notes: string[] };

/** One detection per process and setting: it spawns the binary. */
const detected = new Map<string, Promise<Renderer | { unavailable: string }>>();

/** The renderer for a config's `render.kustomize` (auto | off | a path). */
export function rendererFor(setting: string | undefined): Promise<Renderer | { unavailable: string }> {
  const key = setting ?? 'auto';
  let p = detected.get(key);
  if (!p) detected.set(key, (p = detectRenderer(key === 'auto' ? {} : { configured: key })));
  return p;
}

export interface RenderCheckInput {
  reader: RepoReader;
  renderer: Renderer | { unavailable: string };
  models: { head: TargetModel; after: TargetModel; lastKnownGood: TargetModel };
  /** the planned change: new file contents not yet in the repository come from here */
  files: FileChange[];
  lastKnownGood: string;
  /** the engine object (a Flux Kustomization's status.history digests say whether the render reproduces what Flux built) */
  engineObject?: KubeObject;
}

export async function renderCheck(input: RenderCheckInput): Promise<RenderCheck> {
  const { models } = input;
  if ('unavailable' in input.renderer) return { skipped: `the render check was not possible: ${input.renderer.unavailable}` };
  if (!models.head.render || !models.after.render || !models.lastKnownGood.render) {
    return { skipped: `the render check was not possible: ${models.head.engine === 'paths' ? 'no engine object tells how the target is built' : `${models.head.describe} is not built with kustomize`}` };
  }
  const contents = new Map<string, Uint8Array>();
  for (const f of input.files) if ('content' in f) contents.set(blobOid(f.content, input.lastKnownGood.length === 64 ? 'sha256' : 'sha1'), f.content);
  const dropped = new Set<string>();
  const run = async (m: TargetModel) => {
    const spec = m.render!;
    const files = new Map<string, Uint8Array>();
    for (const [p, oid] of spec.files) {
      const bytes = contents.get(oid) ?? (await input.reader.readBlob(oid));
      files.set(p, KUSTOMIZATION_FILES.includes(p.split('/').pop()!) ? withoutRemote(bytes, p, dropped) : bytes);
    }
    return render(input.renderer as Renderer, { files, root: spec.root, engine: spec.engine, ...(spec.flux ? { flux: spec.flux } : {}), ...(spec.argocd ? { argocd: spec.argocd } : {}) });
  };
  const [head, after, lkg] = [await run(models.head), await run(models.after), await run(models.lastKnownGood)];
  if ('failed' in head) return { skipped: `the render check was not possible: the build fails at the head: ${head.failed}` };
  if ('failed' in lkg) return { skipped: `the render check was not possible: the build fails at the last-known-good: ${lkg.failed}` };
  if ('failed' in after) return { refused: `after the revert the build would fail where it builds at the head and at the last-known-good: ${after.failed}` };
  // a build of no objects at all tells nothing about what the cluster runs (the target's objects come from elsewhere)
  if (head.objects.length === 0 && lkg.objects.length === 0) return { skipped: 'the render check was not possible: the build renders no objects at the head or at the last-known-good' };
  const diff = renderedDiff(head.objects, after.objects);
  const cmp = compareRenders({ lastKnownGood: lkg.objects, head: head.objects, reverted: after.objects });
  if (!cmp.changes) return { refused: 'rendered as the engine builds it, the target is the same before and after the revert: it would change nothing the cluster runs', diff };
  if (cmp.away.length > 0) {
    const shown = cmp.away.slice(0, 3).map((a) => `${a.key}${a.path ? ` ${a.path}` : ''}: ${show(a.head)} → ${show(a.reverted)} (the last-known-good has ${show(a.lastKnownGood)})`);
    return { refused: `rendered as the engine builds it, the revert would set ${cmp.away.length} field${cmp.away.length === 1 ? '' : 's'} to values the last-known-good never had: ${shown.join('; ')}${cmp.away.length > 3 ? '; …' : ''}`, diff };
  }
  const notes = [...new Set([...head.notes, ...after.notes])];
  if (dropped.size > 0) notes.push(`rendered without the remote resources ${[...dropped].slice(0, 3).join(', ')} (lastgood fetches nothing; they are the same in the three renders)`);
  if (cmp.kept.length > 0) notes.push(`rendered: ${cmp.kept.length} field${cmp.kept.length === 1 ? '' : 's'} changed since the last-known-good by later commits stay as they are (${[...new Set(cmp.kept.map((k) => k.key))].slice(0, 3).join(', ')})`);
  const digest = historyDigest(input.engineObject, input.lastKnownGood);
  if (digest && lkg.exactOutput) {
    notes.push(fluxDigest(lkg.output) === digest
      ? `the render of the last-known-good reproduces the digest Flux recorded for it (${digest.slice(0, 19)}…)`
      : `the render of the last-known-good does not reproduce the digest Flux recorded for it (${digest.slice(0, 19)}…): ${head.notes[0] ?? 'another kustomize version'} (Flux builds with its own; a signal, not a refusal)`);
  }
  return { accepted: true, diff, notes };
}

/**
 * A kustomization without its remote resources: external inputs are the same in the three renders
 * (research/render.md §6.1 B), so leaving them out keeps the comparison true without fetching.
 */
function withoutRemote(bytes: Uint8Array, path: string, dropped: Set<string>): Uint8Array {
  let doc: unknown;
  try {
    doc = jsYaml.load(Buffer.from(bytes).toString('utf8'));
  } catch {
    return bytes;
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) return bytes;
  const k = doc as Record<string, unknown>;
  let changed = false;
  for (const field of ['resources', 'bases', 'components']) {
    const list = k[field];
    if (!Array.isArray(list)) continue;
    const kept = list.filter((e) => !(typeof e === 'string' && isRemote(e)));
    if (kept.length !== list.length) {
      for (const e of list) if (typeof e === 'string' && isRemote(e)) dropped.add(`${e} (${path})`);
      k[field] = kept;
      changed = true;
    }
  }
  return changed ? Buffer.from(jsYaml.dump(k, { lineWidth: -1 })) : bytes;
}

function show(v: unknown): string {
  if (v === undefined) return 'absent';
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  return s.length > 80 ? `${s.slice(0, 77)}…` : s;
}

/** The digest a Flux Kustomization's status.history records for a revision (kustomize-controller ≥ 1.7). */
function historyDigest(k: KubeObject | undefined, revision: string): string | undefined {
  const history = Array.isArray(k?.status?.history) ? (k!.status.history as unknown[]) : [];
  for (const h of history) {
    const e = h as { digest?: unknown; metadata?: { revision?: unknown } };
    if (typeof e.digest === 'string' && typeof e.metadata?.revision === 'string' && e.metadata.revision.includes(revision)) return e.digest;
  }
  return undefined;
}

export type { RenderedObject };
