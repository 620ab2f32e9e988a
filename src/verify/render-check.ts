import jsYaml from 'js-yaml';
import type { KubeObject } from '../observe/types.ts';
import { isRemote, KUSTOMIZATION_FILES } from '../model/kustomize.ts';
import { inputDelta, type RenderSpec, type TargetModel } from '../model/types.ts';
import type { FileChange, RepoReader } from '../repo/types.ts';
import { blobOid } from '../revert/threeway.ts';
import { compareRenders, detectRenderer, fluxDigest, render, renderedDiff, type Renderer, type RenderedDiff, type RenderedObject, type Unavailable } from './render.ts';
import { danglingReferences } from './references.ts';
import { cachedRender, renderKey } from './render-cache.ts';

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
  /** `whole`: the whole build was rendered (every file under the engine's path read), not only the part that reaches the target */
  | { accepted: true; diff: RenderedDiff; notes: string[]; whole: boolean };

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
  /** where renders are kept for the next process (repo.cacheDir); without it, only for this one */
  cacheDir?: string;
}

/** The three renders the check compares, and how they were made (the part that reaches the target, or the whole build, and why). */
export interface Renders {
  head: Rendered;
  after: Rendered;
  lastKnownGood: Rendered;
  /** true: only the part of the build that reaches the target was rendered (cutRenders) */
  cut: boolean;
  /** for people: what was rendered, and why the whole build when it was */
  note: string;
  /** files a render left out: remote resources lastgood never fetches */
  remote: string[];
}

/** Renders the head, the planned revert and the last-known-good as the engine builds them (the part that reaches the target where that is sound). */
export async function renderRevisions(input: Pick<RenderCheckInput, 'reader' | 'files' | 'lastKnownGood' | 'cacheDir' | 'engineObject'> & { renderer: Renderer; specs: { head: RenderSpec; after: RenderSpec; lastKnownGood: RenderSpec } }): Promise<Renders> {
  const { renderer } = input;
  const contents = new Map<string, Uint8Array>();
  for (const f of input.files) if ('content' in f) contents.set(blobOid(f.content, input.lastKnownGood.length === 64 ? 'sha256' : 'sha1'), f.content);
  const dropped = new Set<string>();
  const run = (spec: RenderSpec) => renderSpec({ reader: input.reader, renderer, contents, dropped, spec, ...(input.cacheDir ? { cacheDir: input.cacheDir } : {}) });
  // head, after, last-known-good: the three builds at once (three kustomize processes)
  const specs = [input.specs.head, input.specs.after, input.specs.lastKnownGood];
  const buildFailed = engineBuildFailed(input.engineObject);
  const cut = buildFailed ? { note: `rendered the whole build: ${buildFailed}` } : await cutRenders(specs, run);
  const wholeSpecs = async () => Promise.all(specs.map(async (s) => (s.whole ? (await s.whole()).spec : s)));
  const [head, after, lastKnownGood] = 'results' in cut ? cut.results : ((await Promise.all((await wholeSpecs()).map(run))) as [Rendered, Rendered, Rendered]);
  return { head, after, lastKnownGood, cut: 'results' in cut, note: cut.note, remote: [...dropped] };
}

/** One revision's build: its files read (or taken from the planned change), remote resources left out, rendered or found by the digest of its inputs. */
async function renderSpec(i: { reader: RepoReader; renderer: Renderer; contents: Map<string, Uint8Array>; dropped: Set<string>; spec: RenderSpec; cacheDir?: string }): Promise<Rendered> {
  const { spec } = i;
  const files = new Map<string, Uint8Array>();
  for (const [p, oid] of spec.files) {
    const bytes = i.contents.get(oid) ?? (await i.reader.readBlob(oid));
    files.set(p, KUSTOMIZATION_FILES.includes(p.split('/').pop()!) ? withoutRemote(bytes, p, i.dropped) : bytes);
  }
  // the same inputs render the same: the after of a revert that restores the last-known-good is rendered once for both
  return cachedRender(renderKey(i.renderer, spec), i.cacheDir, () =>
    render(i.renderer, { files, root: spec.root, engine: spec.engine, ...(spec.flux ? { flux: spec.flux } : {}), ...(spec.argocd ? { argocd: spec.argocd } : {}), ...(spec.cut ? { cut: spec.cut.dropped } : {}) }));
}

/**
 * Starts the renders of revisions the check will compare (the head, the last-known-good) while
 * the plan is made and checked against the model: the check finds them by the digest of their
 * inputs (render-cache.ts), already under way. Only cuts that can stand on their own are started
 * (a whole build waits until the check knows it needs one). A hint: nothing is awaited or said.
 */
export function renderAhead(input: { reader: RepoReader; renderer: Renderer | Unavailable; specs: Array<RenderSpec | undefined>; cacheDir?: string }): void {
  if ('unavailable' in input.renderer) return;
  for (const spec of input.specs) {
    if (!spec?.cut || spec.cut.across.length > 0) continue;
    void renderSpec({ reader: input.reader, renderer: input.renderer, contents: new Map(), dropped: new Set(), spec, ...(input.cacheDir ? { cacheDir: input.cacheDir } : {}) }).catch(() => undefined);
  }
}

export async function renderCheck(input: RenderCheckInput): Promise<RenderCheck> {
  const { models } = input;
  if ('unavailable' in input.renderer) return { skipped: `the render check was not possible: ${input.renderer.unavailable}` };
  if (!models.head.render || !models.after.render || !models.lastKnownGood.render) {
    return { skipped: `the render check was not possible: ${models.head.engine === 'paths' ? 'no engine object tells how the target is built' : `${models.head.describe} is not built with kustomize`}` };
  }
  const renders = await renderRevisions({ ...input, renderer: input.renderer, specs: { head: models.head.render, after: models.after.render, lastKnownGood: models.lastKnownGood.render } });
  const { head, after, lastKnownGood: lkg } = renders;
  const stopped = [head, after, lkg].find((r): r is { failed: string; limit: true } => 'failed' in r && r.limit === true);
  if (stopped) return { skipped: `not rendered: limit: ${stopped.failed} (a bound of lastgood's, docs/security.md); the model's verdict stands` };
  if ('failed' in head) return { skipped: `the render check was not possible: the build fails at the head: ${head.failed}` };
  if ('failed' in lkg) return { skipped: `the render check was not possible: the build fails at the last-known-good: ${lkg.failed}` };
  if ('failed' in after) return { refused: `after the revert the build would fail where it builds at the head and at the last-known-good: ${after.failed}` };
  // a build of no objects at all tells nothing about what the cluster runs (the target's objects come from elsewhere)
  if (head.objects.length === 0 && lkg.objects.length === 0) return { skipped: 'the render check was not possible: the build renders no objects at the head or at the last-known-good' };
  const diff = renderedDiff(head.objects, after.objects);
  const cmp = compareRenders({ lastKnownGood: lkg.objects, head: head.objects, reverted: after.objects });
  if (!cmp.changes) {
    // "the same" is said only of what was rendered: a change to what kustomize does not build (a Helm
    // chart's templates or values, a HelmRelease applied from outside the build) is not seen by it
    const unseen = unrendered(models);
    if (unseen.length > 0) return { skipped: `not rendered: the revert changes ${unseen.slice(0, 3).join(', ')}${unseen.length > 3 ? ', …' : ''}, which ${models.head.describe} reads but a kustomize render does not build (Helm renders charts and values); the render of the rest shows no difference, and the model's verdict stands` };
    return { refused: 'rendered as the engine builds it, the target is the same before and after the revert: it would change nothing the cluster runs', diff };
  }
  if (cmp.away.length > 0) {
    const shown = cmp.away.slice(0, 3).map((a) => `${a.key}${a.path ? ` ${a.path}` : ''}: ${show(a.head)} → ${show(a.reverted)} (the last-known-good has ${show(a.lastKnownGood)})`);
    return { refused: `rendered as the engine builds it, the revert would set ${cmp.away.length} field${cmp.away.length === 1 ? '' : 's'} to values the last-known-good never had: ${shown.join('; ')}${cmp.away.length > 3 ? '; …' : ''}`, diff };
  }
  const notes = [...new Set([...head.notes, ...after.notes])];
  if (renders.note) notes.push(renders.note);
  if (renders.remote.length > 0) notes.push(`rendered without the remote resources ${renders.remote.slice(0, 3).join(', ')} (lastgood fetches nothing; they are the same in the three renders)`);
  if (cmp.kept.length > 0) notes.push(`rendered: ${cmp.kept.length} field${cmp.kept.length === 1 ? '' : 's'} changed since the last-known-good by later commits stay as they are (${[...new Set(cmp.kept.map((k) => k.key))].slice(0, 3).join(', ')})`);
  const digest = historyDigest(input.engineObject, input.lastKnownGood);
  // only the whole build's bytes can be Flux's (a cut prints fewer objects)
  if (digest && lkg.exactOutput && !renders.cut) {
    notes.push(fluxDigest(lkg.output) === digest
      ? `the render of the last-known-good reproduces the digest Flux recorded for it (${digest.slice(0, 19)}…)`
      : `the render of the last-known-good does not reproduce the digest Flux recorded for it (${digest.slice(0, 19)}…): ${head.notes[0] ?? 'another kustomize version'} (Flux builds with its own; a signal, not a refusal)`);
  }
  return { accepted: true, diff, notes, whole: !renders.cut };
}

type Rendered = Awaited<ReturnType<typeof render>>;

/**
 * The inputs the revert changes that a kustomize render cannot see: a Helm chart's files and values
 * (helm-controller and Argo CD's helm build them, not kustomize), and an engine object's own
 * manifest that is neither a file of the build nor folded into its options (a HelmRelease a parent
 * applies from the target's paths).
 */
function unrendered(models: RenderCheckInput['models']): string[] {
  const spec = models.head.render;
  const seen = new Set([...(spec?.folded ?? []), ...(models.after.render?.folded ?? [])]);
  const files = spec?.files;
  return inputDelta(models.head, models.after)
    .filter((d) => !files?.has(d.path) && (d.role === 'chart' || d.role === 'values' || (d.role === 'engine-object' && !seen.has(d.path))))
    .map((d) => d.path);
}

/**
 * Where the engine itself says its build failed, only the whole build can tell why: a cut leaves
 * out resources that may be what fails it (two resources of one id, once a root transformer has
 * set their namespace). Elsewhere the engine built the revisions it attempted and applied, which
 * is what lets a cut stand for them (cutRenders). Flux: Ready False with BuildFailed
 * (kustomize-controller api/v1 reasons); Argo CD: a ComparisonError condition.
 */
function engineBuildFailed(k: KubeObject | undefined): string | undefined {
  const conditions = Array.isArray(k?.status?.conditions) ? (k!.status.conditions as Array<Record<string, unknown>>) : [];
  if (conditions.some((c) => c.type === 'Ready' && c.status === 'False' && c.reason === 'BuildFailed')) return `${k!.kind} ${k!.metadata.namespace ? `${k!.metadata.namespace}/` : ''}${k!.metadata.name} reports that its build failed`;
  if (conditions.some((c) => c.type === 'ComparisonError')) return `${k!.kind} ${k!.metadata.namespace ? `${k!.metadata.namespace}/` : ''}${k!.metadata.name} reports a comparison error`;
  return undefined;
}

/**
 * The three renders of a cut build (model/types.ts RenderCut: only the part of the build that
 * reaches the target), where the cut can be shown to give the target's objects exactly as the
 * whole build does; otherwise why the whole build must be rendered. The cut stands on what the
 * engine did: it built the revision it attempted (the head's sync; where it says the build
 * failed, engineBuildFailed, the whole is rendered) and built and applied the last-known-good, so
 * the resources the cut leaves out do not collide there with those it keeps. It holds when:
 * - every revision's model is cut (a revision read whole would add objects the others lack);
 * - no kustomization on the way carries anything across its resources (a prefix or a generator's
 *   hash is written into references to any resource; replacements copy values between them);
 * - the cut builds at the three revisions (a root patch aimed at a resource left out fails it);
 * - the revert makes no object that neither the head nor the last-known-good makes (only the
 *   whole build tells whether it collides with a resource left out: kustomize refuses two
 *   resources of one id);
 * - no name the rendered objects refer to that the cut lacks is renamed outside it (kustomize
 *   rewrites references across the whole build, references.ts): where some is, the whole build
 *   (read, not rendered) is asked which kustomizations outside the cut rename anything.
 */
async function cutRenders(specs: RenderSpec[], run: (spec: RenderSpec) => Promise<Rendered>): Promise<{ results: [Rendered, Rendered, Rendered]; note: string } | { note: string }> {
  const whole = (why: string) => ({ note: `rendered the whole build: ${why}` });
  if (!specs.some((s) => s.cut)) return { note: '' };
  if (!specs.every((s) => s.cut && s.whole)) return whole('the part of the build that reaches the target could not be told at every revision');
  const across = [...new Set(specs.flatMap((s) => s.cut!.across))];
  if (across.length > 0) return whole(`what reaches the target could not be rendered apart: ${list(across)} carry names or values across resources`);
  const results = (await Promise.all(specs.map(run))) as [Rendered, Rendered, Rendered];
  const failed = results.find((r): r is { failed: string } => 'failed' in r);
  if (failed) return whole(`the part of the build that reaches the target does not build alone (${firstLine(failed.failed)})`);
  const [head, after, lkg] = results as Array<Extract<Rendered, { objects: unknown }>>;
  const before = new Set([...head!.objects, ...lkg!.objects].map((o) => o.key));
  const made = after!.objects.map((o) => o.key).filter((k) => !before.has(k));
  if (made.length > 0) return whole(`the revert makes ${list(made)}, which neither the head nor the last-known-good builds`);
  const dangling = [...new Set(results.flatMap((r) => danglingReferences((r as { objects: RenderedObject[] }).objects)))];
  if (dangling.length > 0) {
    const renames = [...new Set((await Promise.all(specs.map((s) => s.whole!()))).flatMap((w) => w.renames))];
    if (renames.length > 0) return whole(`the target's objects refer to names the part that reaches it does not hold (${list(dangling)}), and kustomizations outside it rename (${list(renames)})`);
  }
  const c = specs[0]!.cut!;
  return { results, note: `rendered the part of the build that reaches the target (${c.kept} kustomization${c.kept === 1 ? '' : 's'}${c.left ? `; ${c.left} other resource${c.left === 1 ? '' : 's'} of the kustomizations on the way left out` : '; the resources beside it left out'}): nothing on the way carries names or values across resources` };
}

const list = (xs: string[]) => `${xs.slice(0, 3).join('; ')}${xs.length > 3 ? `; … (${xs.length} in all)` : ''}`;
const firstLine = (s: string) => s.split('\n')[0]!;

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
