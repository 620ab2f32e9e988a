import type { Evidence } from '../decide/types.ts';
import { formatImageRef, parseImageRef, sameImage, type ImageRef } from '../observe/image-ref.ts';
import { inPaths } from '../model/scope.ts';
import { inputDelta, type InputDelta, type Setter, type TargetModel, type TargetModeler } from '../model/types.ts';
import type { CommitInfo, FileChange } from '../repo/types.ts';

/**
 * The verify stage, first layer (always on, no binaries): a planned change is checked against the
 * model of what the engine reads for the target (src/model), before anything is written.
 *
 * - **It must change what the engine builds.** A revert that changes no input of the target (the
 *   folder moved and nothing reads the old one; a symlink Flux drops; a chart template under
 *   `reconcileStrategy: ChartVersion`) would be reported as handled while the bad version keeps
 *   running: refused.
 * - **It must restore the last-known-good's values of what failed**: the images the failing
 *   objects run, the HelmRelease's chart version, its values when they are what failed — as set
 *   after the revert, per image repository, equal to what the last-known-good set. Set by a
 *   cluster object's own spec (a Flux Kustomization's `spec.images`) is out of a revert's reach: refused.
 * - **It must not break the build**: what the engine could not read after the revert and could at
 *   both the head and the last-known-good (a resource the revert removes while something still
 *   names it) is refused.
 *
 * What the model cannot see into (remote bases, plugins, SOPS, variables from the cluster) is said
 * as a note, never silently passed.
 */

export interface VerifyInput {
  modeler: TargetModeler;
  head: string;
  lastKnownGood: string;
  /** the planned change (revert and freeze edits) */
  files: FileChange[];
  paths: string[];
  evidence: Evidence[];
  /** how the bad commits were found: values are checked when they are what failed */
  how: string;
  bad: CommitInfo[];
  /** the target allows a change that empties it (blastRadius.allowEmpty): building nothing of it is then not refused here */
  allowEmpty?: boolean;
}

export interface Verification {
  /** why the plan may not be written; undefined when it may */
  refused?: string;
  /** what a person should know: what the model could not verify */
  notes: string[];
  /** the inputs of the target the change alters (head → after) */
  changed: InputDelta[];
  /** what failed and was checked to take the last-known-good's value again */
  restored: string[];
  models: { head: TargetModel; after: TargetModel; lastKnownGood: TargetModel };
}

/** One line for people: what the plan was checked against and what it changes. */
export function describeVerification(v: Verification): string {
  const m = v.models.head;
  const files = v.changed.map((d) => d.path);
  const what = m.engine === 'paths' ? `the target's paths (no engine object tells what the engine reads)` : m.describe;
  return `the revert changes ${files.length} file${files.length === 1 ? '' : 's'} that ${what} reads for the target (${files.slice(0, 4).join(', ')}${files.length > 4 ? ', …' : ''})${v.restored.length ? `; ${v.restored.join('; ')}` : ''}`;
}

const short = (sha: string) => sha.slice(0, 12);

export async function verifyPlan(input: VerifyInput): Promise<Verification> {
  const { modeler } = input;
  const [head, lastKnownGood, after] = await Promise.all([modeler.at(input.head), modeler.at(input.lastKnownGood), modeler.withChange(input.head, input.files)]);
  const models = { head, after, lastKnownGood };
  const changed = inputDelta(head, after);
  const notes = [...new Set(after.opaque)].map((o) => `cannot verify: ${o}`);
  const alreadyBroken = after.missing.filter((m) => head.missing.includes(m));
  if (alreadyBroken.length) notes.push(`as modelled, ${engineName(head)}'s build fails at the head and still would after the revert: ${alreadyBroken.slice(0, 3).join('; ')}${alreadyBroken.length > 3 ? '; …' : ''}`);
  const badList = input.bad.length ? ` (bad: ${input.bad.map((c) => short(c.oid)).join(', ')})` : '';
  const restored: string[] = [];
  const refuse = (reason: string): Verification => ({ refused: `${reason}${badList}`, notes, changed, restored, models });

  if (changed.length === 0) {
    const inside = [...head.inputs.keys()].some((p) => inPaths(p, input.paths));
    const where = !inside && head.inputs.size > 0
      ? `: at the head it reads nothing in the target's paths (${input.paths.join(', ')}), what it builds for the target comes from ${folders([...head.inputs.keys()]).join(', ')}`
      : '';
    return refuse(`the revert changes no file ${engineName(head)} reads for this target${where}; writing it would report the failure handled while the failing version keeps running`);
  }
  if (head.builds && !after.builds && !input.allowEmpty) {
    return refuse(`after the revert ${engineName(head)} would build nothing of the target (its paths ${input.paths.join(', ')} would no longer be part of the build)`);
  }
  const broken = after.missing.filter((m) => !head.missing.includes(m) && !lastKnownGood.missing.includes(m));
  if (broken.length > 0) return refuse(`after the revert ${engineName(head)}'s build would fail: ${broken.slice(0, 3).join('; ')}`);

  for (const e of input.evidence.filter((x) => x.state === 'failed' && !x.foreign)) {
    for (const image of failingImages(e)) {
      // the failing image set by a cluster object's own spec (an Application's kustomize.images or helm.parameters,
      // a Kustomization's spec.images): no revert of the repository changes it, whatever the bad commits did
      const clusterSet = after.setters.filter((s) => s.what === 'image' && !s.inRepo && s.image && sameRepo(s.image, image) && sameImage(image, s.image));
      if (clusterSet.length > 0) {
        return refuse(`${formatImageRef(image)} is set by ${clusterSet.map((s) => s.where).join(', ')}, a field of a cluster object that no revert of the repository changes`);
      }
      const [h, l, a] = [imagesOf(head, image), imagesOf(lastKnownGood, image), imagesOf(after, image)];
      if (sameSet(h, l)) continue; // not changed by the bad commits: not what the revert is about
      if (!sameSet(a, l)) {
        const now = a.length ? a.map((x) => `${x.text} (${x.where})`).join(', ') : 'nothing';
        const was = l.length ? l.map((x) => x.text).join(', ') : 'nothing';
        return refuse(`after the revert ${repoOf(image)} would be set to ${now}, but the last-known-good ${short(input.lastKnownGood)} set ${was}`);
      }
      // what the bad commits changed, set back (a base's tag that an overlay's images: overrides, the same at both, is not news)
      const back = l.filter((x) => !h.some((y) => y.text === x.text));
      const line = `${repoOf(image)} set back to ${(back.length ? back : l).map((x) => x.text).join(', ') || 'nothing'}, as at the last-known-good`;
      if (!restored.includes(line)) restored.push(line);
    }
    const version = e.attempted?.chart;
    if (e.groupKind === 'helm.toolkit.fluxcd.io/HelmRelease' && version) {
      const release = `${e.namespace ? `${e.namespace}/` : ''}${e.name}`;
      const [h, l, a] = [chartsOf(head, release, e.name), chartsOf(lastKnownGood, release, e.name), chartsOf(after, release, e.name)];
      if (h !== l && a !== l) return refuse(`after the revert the chart of HelmRelease ${release} would be pinned to ${a || 'nothing'}, but the last-known-good pinned ${l || 'nothing'}`);
      if (h !== l) restored.push(`the chart of HelmRelease ${release} pinned back to ${l}, as at the last-known-good`);
      if (input.how === 'values') {
        const [hv, lv, av] = [valuesOf(head, release, e.name), valuesOf(lastKnownGood, release, e.name), valuesOf(after, release, e.name)];
        if (hv !== lv && av !== lv) return refuse(`after the revert the values of HelmRelease ${release} would not be the last-known-good's`);
        if (hv !== lv) restored.push(`the values of HelmRelease ${release} back to the last-known-good's`);
      }
    }
  }
  return { notes, changed, restored, models };
}

function engineName(m: TargetModel): string {
  return m.engine === 'paths' ? 'lastgood (by the target\'s paths)' : m.describe;
}

function folders(paths: string[]): string[] {
  return [...new Set(paths.map((p) => (p.includes('/') ? p.slice(0, p.lastIndexOf('/') + 1) : p)))].slice(0, 3);
}

/** The images a failed object runs that the revert is about: the failing containers', else its template's. */
function failingImages(e: Evidence): ImageRef[] {
  const texts = e.failingImages?.length ? e.failingImages : (e.attempted?.images ?? []);
  return texts.map((t) => parseImageRef(t)).filter((i): i is ImageRef => Boolean(i && (i.tag || i.digest)));
}

const repoOf = (i: ImageRef) => `${i.registry}/${i.repository}`;
const sameRepo = (a: ImageRef, b: ImageRef) => a.registry === b.registry && a.repository === b.repository;

/** What the repository's files set for one image repository: the references, with where. */
function imagesOf(m: TargetModel, image: ImageRef): Array<{ text: string; where: string }> {
  const out = new Map<string, string>();
  for (const s of m.setters) {
    if (s.what !== 'image' || !s.inRepo || !s.image || !sameRepo(s.image, image)) continue;
    const text = formatImageRef(s.image);
    if (!out.has(text)) out.set(text, s.where);
  }
  return [...out].map(([text, where]) => ({ text, where })).sort((a, b) => a.text.localeCompare(b.text));
}

function sameSet(a: Array<{ text: string }>, b: Array<{ text: string }>): boolean {
  return a.length === b.length && a.every((x, i) => x.text === b[i]!.text);
}

const releaseMatches = (s: string, release: string, name: string) => s === release || s === name;

function chartsOf(m: TargetModel, release: string, name: string): string {
  return pick(m.setters, 'chart', release, name, (s) => `${s.chart!.name ?? ''}@${s.chart!.version ?? ''}`);
}

function valuesOf(m: TargetModel, release: string, name: string): string {
  return pick(m.setters, 'values', release, name, (s) => s.values!.digest);
}

function pick(setters: Setter[], what: 'chart' | 'values', release: string, name: string, text: (s: Setter) => string): string {
  return [...new Set(setters.filter((s) => s.what === what && releaseMatches((s.chart ?? s.values)!.release, release, name)).map(text))].sort().join(', ');
}
