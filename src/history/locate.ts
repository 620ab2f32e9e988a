import { RevertImpossible } from '../errors.ts';
import type { Evidence } from '../decide/types.ts';
import { REVERT_ITSELF_FAILED } from '../decide/guards.ts';
import type { CommitInfo, RepoReader } from '../repo/types.ts';
import { modelTarget, inPaths, type TargetModeler } from '../model/index.ts';
import { ModelHistory } from '../model/history.ts';
import type { InputDelta, Setter } from '../model/types.ts';
import { changedFiles, changedOutside, commitRange, mainline, units } from './graph.ts';
import { formatImageRef, parseImageRef, sameImage, type ImageRef } from '../observe/image-ref.ts';
import { lastgoodTarget, parseTrailers, revertedBy } from './trailers.ts';

/** How to compute the revert's content (revert/threeway.ts). */
export type RevertSpec =
  /**
   * the net change of a whole range: 3-way with base = attempted, theirs = applied, on the files the
   * bad commits changed (a commit of the range that changed nothing the engine reads for the target
   * is kept, with its files)
   */
  | { kind: 'range'; base: string; theirs: string; files: string[] }
  /** each bad unit undone against its first parent (`git revert -m 1`), newest first */
  | { kind: 'commits'; steps: Array<{ base: string; theirs: string | undefined }> };

export interface Located {
  /** the bad commits, newest first: mainline commits (a merged pull request is named by its merge commit) */
  bad: CommitInfo[];
  /** commits after the last-known-good that also changed what the engine reads for the target, or its paths, and are not bad (kept by a revert, undone by a restore) */
  later: CommitInfo[];
  /** full SHA of the last-known-good revision */
  lastKnownGood: string;
  /** true when the last-known-good was observed healthy (a verified record) */
  verified: boolean;
  how: 'revision' | 'image' | 'chart' | 'values' | 'commit' | 'named';
  /** how the bad commits were found, for people: the signals used and what they said */
  explanation: string;
  /** a lastgood commit on the branch already reverts these bad commits (the sync has not caught up yet) */
  alreadyRevertedBy?: string;
  /** the content to undo */
  revert: RevertSpec;
  /** files (under the target paths) that the bad commits changed: a `revert` may touch no other (blast-radius guard) */
  touched: string[];
  /** the revision the engine reports applied, and the one it attempts, when reported */
  applied?: string;
  attempted?: string;
}

export interface LocateInput {
  reader: RepoReader;
  branch: string;
  head: string;
  /** the target's paths: what a revert may write */
  paths: string[];
  evidence: Evidence[];
  /** what the engine reads for the target (src/model); default: the target's paths */
  model?: TargetModeler;
  /** how far back along first parents to look for the commit that introduced an image or chart */
  searchLimit?: number;
  /** commits lastgood observed healthy for this target (verified records), any order: where the engine reports no applied revision, the newest one below the attempted revision bounds the range */
  verified?: string[];
  /** the target's name: a lastgood revert is this target's when its Lastgood-Target trailer names it (or it wrote into the target's paths) */
  target?: string;
}

/** What revert/threeway.ts plans from a Located: the undo steps and the files they may change. */
export function revertInput(located: Pick<Located, 'revert'>, paths: string[]): { steps: Array<{ base: string; theirs: string | undefined }>; paths: string[] } {
  const r = located.revert;
  return r.kind === 'range' ? { steps: [{ base: r.base, theirs: r.theirs }], paths: r.files } : { steps: r.steps, paths };
}

/** locate's inputs with the model's history. */
interface Ctx extends LocateInput {
  history: ModelHistory;
  /** the engine, in words: "Flux Kustomization flux-system/apps (spec.path ./apps)" */
  engine: string;
  /** true when the model is the target's paths (no engine object to follow): messages speak of paths */
  pathsOnly: boolean;
}

const short = (sha: string) => sha.slice(0, 12);
const ref = (e: Pick<Evidence, 'kind' | 'namespace' | 'name'>) => `${e.kind} ${e.namespace ? `${e.namespace}/` : ''}${e.name}`;
const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
const subject = (c: CommitInfo) => c.message.split('\n')[0]!.trim();
const list = (xs: string[], max = 5) => `${xs.slice(0, max).join(', ')}${xs.length > max ? `, … (${xs.length} in all)` : ''}`;

/** What the engine reports about revisions: the range `applied..attempted`, or less. */
type RangeState =
  | { state: 'none' }
  | { state: 'unknown'; attempted: string; by: Evidence }
  | { state: 'empty'; attempted: string; applied: string; by: Evidence }
  | { state: 'range'; attempted: string; applied: string; by: Evidence; commits: CommitInfo[]; line: CommitInfo[]; units: Map<string, CommitInfo[]>; selectedBy?: string };

/** One content signal (an image, a chart, a promotion's commit) and what the history says about it. */
interface Finding {
  /** e.g. "image ghcr.io/acme/shop:1.4.0 of Deployment prod/shop" */
  signal: string;
  how: Located['how'];
  result: { found: CommitInfo } | { absent: true } | { older: number } | { outsideRange: CommitInfo } | { superseded: CommitInfo } | { before: string } | { cluster: string };
}

/**
 * Finds the bad commit(s) and the last-known-good, over what the GitOps engine reads for the
 * target (src/model), from every signal the target's objects give:
 *
 * - the **revision range** the engine reports (`applied..attempted`: Flux
 *   lastApplied/lastAttempted, Argo CD's deployment before and at the failure, a chart built from
 *   git), over the whole commit graph;
 * - **content signals**: the exact image a failing workload runs (the commit that introduced it
 *   into what the engine reads), a HelmRelease's chart version (the commit that pinned it) or, when
 *   the chart did not change, its values; a Kargo Promotion's own commit.
 *
 * **A sync is never split**: what the engine attempted in one step shipped together, so where it
 * reports the range, every commit of the range that changed what it reads for the target is bad
 * and is reverted with the others (content signals explain, they do not select inside a range).
 * Where it reports only the attempted revision, the content signal selects the range: from the
 * commit that introduced what fails to the attempted revision. Where it reports no range at all,
 * the commit that introduced what fails is bad. Commits after the attempted revision are kept.
 * A bad change in a file the engine reads from outside the target's paths is refused, naming the
 * files and the commits. When signals disagree or none is specific, locate refuses
 * (RevertImpossible) and says which signals said what.
 */
export async function locate(input: LocateInput): Promise<Located> {
  const model = input.model ?? modelTarget({ reader: input.reader, target: { name: '', paths: input.paths, resources: [] }, observed: [] });
  const ctx: Ctx = {
    ...input,
    history: new ModelHistory(input.reader, model),
    engine: model.describe,
    pathsOnly: model.engine === 'paths',
  };
  const failing = input.evidence.filter((e) => (e.state === 'failed' || e.state === 'progressing') && !e.foreign);
  const range = await revisionRange(input, failing);
  const findings = await contentFindings(ctx, failing, range);
  const candidates = findings.filter((f): f is Finding & { result: { found: CommitInfo } } => 'found' in f.result);
  const rangeNote = describeRange(range);

  if (range.state === 'range') return fromRange(ctx, range, findings, 'revision');
  if (range.state === 'unknown') {
    // the engine reports what it attempted but not what it applied: the content signal selects where the sync began
    if (candidates.length > 0) return fromRange(ctx, await selectedRange(ctx, range, candidates), findings, candidates[0]!.how);
    // else the failing revision counts only where it changed what the engine reads itself
    const attempted = await input.reader.readCommit(range.attempted);
    if (await ctx.history.touches(attempted)) {
      const own: Finding & { result: { found: CommitInfo } } = { signal: `the failing revision ${short(attempted.oid)} itself changed ${ctx.pathsOnly ? 'the target paths' : `what ${ctx.engine} reads for the target`} (earlier commits are not blamed: name them with lastgood revert --bad)`, how: 'revision', result: { found: attempted } };
      return fromCandidates(ctx, range, [...findings, own], [own]);
    }
  }
  if (candidates.length > 0) return fromCandidates(ctx, range, findings, candidates);

  const details = findings.map(describeFinding).filter((s): s is string => Boolean(s));
  if (range.state === 'empty') {
    // what fails is set in what the engine reads, but by a commit beyond the search: say that, not that nothing names it
    const older = findings.find((f): f is Finding & { result: { older: number } } => 'older' in f.result);
    throw new RevertImpossible(
      older
        ? `cannot tell which commit is bad: ${rangeNote}, and what the failing object names was set more than ${older.result.older} commits back (the search stops there)`
        : `cannot tell which commit is bad: ${rangeNote}, and no failing object names what fails in what the engine reads for the target (a new image or chart version)`,
      [...details, failing.some((e) => e.groupKind === HELMRELEASE || (e.attempted?.images?.length ?? 0) > 0) ? 'name the commit: lastgood revert --bad SHA' : 'add the failing workload (Deployment, Rollout, Pod) or HelmRelease to the target\'s resources, or name the commit: lastgood revert --bad SHA'],
    );
  }
  if (range.state === 'unknown') {
    throw new RevertImpossible(
      `cannot tell which commit is bad: ${rangeNote}, so where the bad commits begin is unknown; the failing revision did not change ${ctx.pathsOnly ? 'the target paths' : `what ${ctx.engine} reads for the target`} itself, and no failing object names what fails in ${ctx.pathsOnly ? 'them' : 'it'}`,
      [...details, 'name the commit: lastgood revert --bad SHA'],
    );
  }
  const imageGone = await alreadyReverted(ctx, findings);
  if (imageGone) return imageGone;
  if (findings.length > 0) {
    throw new RevertImpossible(`cannot tell which commit is bad: no object of the target reports a git revision, and ${details.join('; ')}`);
  }
  // an image without a tag or digest ("latest" by default) names no version a commit could have set
  const untagged = failing.flatMap((e) => e.failingImages?.length ? e.failingImages : (e.attempted?.images ?? []));
  throw new RevertImpossible(
    `cannot tell which commit is bad: no object of the target reports a git revision, and no failing workload names ${untagged.length ? `an image with a tag or digest (${untagged.slice(0, 3).join(', ')}: no version a commit could have set)` : 'an image'}`,
    ['add the Flux Kustomization / Argo CD Application that applies the target, or the failing Deployment, to the target\'s resources'],
  );
}

/**
 * The engine reports the attempted revision only: the oldest commit a content signal names opens
 * the range (its first parent is where the sync began), which runs to the attempted revision.
 */
async function selectedRange(ctx: Ctx, range: RangeState & { state: 'unknown' }, candidates: Array<Finding & { result: { found: CommitInfo } }>): Promise<RangeState & { state: 'range' }> {
  const { reader } = ctx;
  let oldest = candidates[0]!.result.found;
  for (const f of candidates.slice(1)) if (await reader.isAncestor(f.result.found.oid, oldest.oid)) oldest = f.result.found;
  const before = oldest.parents[0];
  if (!before) throw new RevertImpossible(`the bad commit ${oldest.oid} is the first commit of the repository: there is nothing to go back to`);
  const r = await commitRange(reader, range.attempted, [before]);
  if (!r.bounded) throw new RevertImpossible(`the range of bad commits ${short(before)}..${short(range.attempted)} cannot be bounded: ${r.reason}`);
  const line = mainline(r.commits, range.attempted);
  const selectedBy = `${candidates.map((f) => describeFinding(f)!).join('; ')}`;
  return { state: 'range', attempted: range.attempted, applied: before, by: range.by, commits: r.commits, line, units: units(r.commits, line), selectedBy };
}

// ---- the revision range ---------------------------------------------------------------------------

async function revisionRange(input: LocateInput, failing: Evidence[]): Promise<RangeState> {
  const { reader } = input;
  const reporting = [...failing, ...input.evidence.filter((e) => !failing.includes(e))].filter((e) => e.attempted?.sha);
  if (reporting.length === 0) return { state: 'none' };
  // the first object whose revision is in this repository (a chart built from git may come from another one)
  let e: Evidence | undefined;
  let attempted: string | undefined;
  for (const candidate of reporting) {
    attempted = await reader.resolveCommit(candidate.attempted!.sha!);
    if (attempted) {
      e = candidate;
      break;
    }
  }
  if (!e || !attempted) {
    const first = reporting[0]!;
    throw new RevertImpossible(`${ref(first)} attempts revision ${first.attempted!.raw ?? first.attempted!.sha}, which is not in the repository`);
  }
  if (!(await reader.isAncestor(attempted, input.head))) {
    throw new RevertImpossible(`the attempted revision ${attempted} (${ref(e)}) is not on branch ${input.branch}`);
  }
  // two failing objects that attempt different revisions, neither containing the other, cannot both be right
  for (const other of reporting.filter((o) => o !== e && failing.includes(o))) {
    const sha = await reader.resolveCommit(other.attempted!.sha!);
    if (!sha || sha === attempted) continue;
    if (!(await reader.isAncestor(sha, attempted)) && !(await reader.isAncestor(attempted, sha))) {
      throw new RevertImpossible(`signals disagree: ${ref(e)} attempts ${short(attempted)} but ${ref(other)} attempts ${short(sha)}, and neither contains the other`);
    }
  }
  const appliedSha = e.lastSucceeded?.sha ?? (await newestVerifiedBelow(input, attempted));
  if (!appliedSha) return { state: 'unknown', attempted, by: e };
  const applied = await reader.resolveCommit(appliedSha);
  if (!applied) throw new RevertImpossible(`${ref(e)} reports applied revision ${e.lastSucceeded!.raw ?? appliedSha}, which is not in the repository: the range of bad commits cannot be bounded`);
  if (applied === attempted) return { state: 'empty', attempted, applied, by: e };
  if (!(await reader.isAncestor(applied, attempted))) {
    throw new RevertImpossible(
      `the range of bad commits cannot be bounded: ${ref(e)} applied ${short(applied)}, which is not an ancestor of the attempted ${short(attempted)} (a force-push, or another branch)`,
      ['a person must look; lastgood revert --bad SHA names the commit'],
    );
  }
  const r = await commitRange(reader, attempted, [applied]);
  if (!r.bounded) throw new RevertImpossible(`the range of bad commits ${short(applied)}..${short(attempted)} cannot be bounded: ${r.reason}`);
  const line = mainline(r.commits, attempted);
  return { state: 'range', attempted, applied, by: e, commits: r.commits, line, units: units(r.commits, line) };
}

/** The newest commit lastgood verified healthy for the target that the attempted revision contains. */
async function newestVerifiedBelow(input: LocateInput, attempted: string): Promise<string | undefined> {
  let best: CommitInfo | undefined;
  for (const sha of input.verified ?? []) {
    if (sha === attempted || !(await input.reader.isAncestor(sha, attempted))) continue;
    const c = await input.reader.readCommit(sha);
    if (!best || (await input.reader.isAncestor(best.oid, c.oid))) best = c;
  }
  return best?.oid;
}

function describeRange(range: RangeState): string {
  switch (range.state) {
    case 'none':
      return 'no object reports a git revision';
    case 'unknown':
      return `${ref(range.by)} attempts ${short(range.attempted)} and reports no applied revision`;
    case 'empty':
      return `${ref(range.by)} reports the failing revision ${short(range.attempted)} as applied (applied = attempted: nothing lies between)`;
    case 'range':
      if (range.selectedBy) return `${ref(range.by)} attempted ${short(range.attempted)} and reports no applied revision; ${range.selectedBy}, so the sync that failed began after ${short(range.applied)}`;
      return range.by.lastSucceeded?.sha
        ? `${ref(range.by)} attempted ${short(range.attempted)} after applying ${short(range.applied)}`
        : `${ref(range.by)} attempted ${short(range.attempted)}; lastgood observed ${short(range.applied)} healthy (verified record)`;
  }
}

// ---- content signals ------------------------------------------------------------------------------

const KARGO_PROMOTION = 'kargo.akuity.io/Promotion';
const HELMRELEASE = 'helm.toolkit.fluxcd.io/HelmRelease';

const releaseKey = (e: Pick<Evidence, 'namespace' | 'name'>) => `${e.namespace ? `${e.namespace}/` : ''}${e.name}`;
/** A setter's release matches the HelmRelease (a manifest may leave its namespace to kustomize). */
const sameRelease = (setterRelease: string, e: Pick<Evidence, 'namespace' | 'name'>) => setterRelease === releaseKey(e) || setterRelease === e.name || (!e.namespace && setterRelease.endsWith(`/${e.name}`));

async function contentFindings(ctx: Ctx, failing: Evidence[], range: RangeState): Promise<Finding[]> {
  const { reader, history } = ctx;
  const start = range.state === 'none' ? ctx.head : range.attempted;
  const limit = ctx.searchLimit ?? 200;
  const out: Finding[] = [];
  const setters = async (c: string): Promise<Setter[]> => (await history.at(c)).setters;
  const place = async (signal: string, how: Located['how'], found: Introduced): Promise<void> => {
    if (!('commit' in found)) {
      out.push({ signal, how, result: found });
      return;
    }
    const commit = found.commit;
    if (range.state === 'range') {
      // found along first parents from the attempted revision: inside the range it is a mainline commit;
      // a merge that brought the thing in from outside the range (a `git pull` of an applied commit) did not introduce it
      const fromInside = range.line.some((c) => c.oid === commit.oid) && (commit.parents.length < 2 || mergeBringsFromRange(range, found.fromParents));
      if (!fromInside) {
        out.push({ signal, how, result: { outsideRange: commit } });
        return;
      }
    }
    out.push({ signal, how, result: { found: commit } });
  };

  for (const e of failing) {
    // a Kargo Promotion writes one commit: that commit is the promotion
    if (e.groupKind === KARGO_PROMOTION && e.attempted?.sha && !e.lastSucceeded?.sha) {
      const sha = await reader.resolveCommit(e.attempted.sha);
      if (sha) {
        const commit = await reader.readCommit(sha);
        if (await history.touches(commit)) out.push({ signal: `the commit ${short(sha)} of ${ref(e)}`, how: 'commit', result: { found: commit } });
      }
    }
    if (e.groupKind === HELMRELEASE && e.attempted?.chart) {
      const version = e.attempted.chart;
      const chartChanged = !e.lastSucceeded?.chart || e.lastSucceeded.chart !== version;
      if (chartChanged) {
        const has = async (c: string) => (await setters(c)).some((s) => s.what === 'chart' && s.chart && sameRelease(s.chart.release, e) && s.chart.version === version);
        await place(`chart ${e.attempted.chartName ? `${e.attempted.chartName} ` : ''}${version} of ${ref(e)}`, 'chart', await introducer(ctx, start, has, limit));
      } else {
        // the chart is the one that worked: what changed is the values. Only since that release last
        // went out (status.history lastDeployed) and inside the reported range: older changes ran then
        const valuesAt = async (c: string) => (await setters(c)).filter((s) => s.what === 'values' && s.values && sameRelease(s.values.release, e)).map((s) => `${s.where}:${s.values!.digest}`).sort().join('|');
        const changed = async (c: CommitInfo) => {
          const parent = c.parents[0];
          if (!parent) return true;
          const [now, before] = await Promise.all([valuesAt(c.oid), valuesAt(parent)]);
          // a release that did not exist before was created, not changed
          return before !== '' && now !== before;
        };
        const lastAt = e.lastSucceeded?.at;
        const since = lastAt ? Date.parse(lastAt) : undefined;
        const within = range.state === 'range' ? new Set(range.line.map((c) => c.oid)) : undefined;
        // values the model cannot follow (a ConfigMap generated outside what the engine reads) are said with the signal
        const unseen = (await history.at(start)).opaque.filter((o) => o.startsWith(`values of ${ref(e)} `));
        const signal = `values of ${ref(e)} (its chart ${version} did not change${lastAt ? `; its last successful release went out ${lastAt}` : ''}${unseen.map((o) => `; cannot verify: ${o}`).join('')})`;
        await place(signal, 'values', await newestChange(ctx, start, changed, limit, { since, within }));
      }
    }
    const images = imageSignals(e);
    if (images.length === 0) continue;
    const placed: Array<{ image: ImageRef; found: Introduced }> = [];
    for (const image of images) {
      // only what a commit can have set: a field of a cluster object (an image updater's override) is the same at every commit
      const has = async (c: string) => (await setters(c)).some((s) => s.what === 'image' && s.inRepo && s.image && sameImage(image, s.image));
      let found = await introducer(ctx, start, has, limit);
      if ('absent' in found) {
        const cluster = (await setters(start)).find((s) => s.what === 'image' && !s.inRepo && s.image && sameImage(image, s.image));
        if (cluster) found = { cluster: cluster.where };
      }
      placed.push({ image, found });
    }
    const specific = Boolean(e.failingImages?.length);
    if (specific || range.state === 'range') {
      for (const p of placed) await place(`image ${formatImageRef(p.image)} of ${ref(e)}`, 'image', p.found);
      continue;
    }
    // Without a range and without knowing which container fails, the workload's newest image change
    // is what its current rollout brought: images introduced before it ran in the previous one.
    const located = placed.filter((p) => 'commit' in p.found);
    const newest = await newestOf(reader, located.map((p) => (p.found as { commit: CommitInfo }).commit));
    for (const p of placed) {
      const signal = `image ${formatImageRef(p.image)} of ${ref(e)}`;
      if (!('commit' in p.found) || p.found.commit.oid === newest?.oid) await place(signal, 'image', p.found);
      else out.push({ signal, how: 'image', result: { superseded: p.found.commit } });
    }
  }
  return out;
}

/** The images a failing object runs: the failing containers' where it tells them, else its template's. */
function imageSignals(e: Evidence): ImageRef[] {
  const texts = e.failingImages?.length ? e.failingImages : (e.attempted?.images ?? []);
  const out: ImageRef[] = [];
  for (const t of texts) {
    const image = parseImageRef(t);
    if (image && (image.tag || image.digest) && !out.some((o) => formatImageRef(o) === formatImageRef(image))) out.push(image);
  }
  return out;
}

type Introduced = { commit: CommitInfo; fromParents: string[] } | { absent: true } | { older: number } | { before: string } | { cluster: string };

/**
 * The commit that introduced something into what the engine reads for the target: along first
 * parents from `start`, the oldest commit of the unbroken run that has it. A merge found so is
 * where the thing reached the mainline; `fromParents` names its other parents that have it.
 */
async function introducer(ctx: Ctx, start: string, has: (commit: string) => Promise<boolean>, limit: number): Promise<Introduced> {
  const { reader, history } = ctx;
  if (!(await has(start))) return { absent: true };
  let c = await reader.readCommit(start);
  for (let n = 0; ; n++) {
    const parent = c.parents[0];
    if (!parent) return { commit: c, fromParents: [] };
    // a commit that did not change what the engine reads has what its parent has
    if ((await history.touches(c)) && !(await has(parent))) {
      const fromParents: string[] = [];
      for (const p of c.parents.slice(1)) if (await has(p)) fromParents.push(p);
      return { commit: c, fromParents };
    }
    if (n >= limit) return { older: limit };
    c = await reader.readCommit(parent);
  }
}

/**
 * The newest commit along first parents from `start` for which `changed` holds (only commits that
 * changed what the engine reads are asked), no older than `since` (ms) and inside `within` when given.
 */
async function newestChange(ctx: Ctx, start: string, changed: (c: CommitInfo) => Promise<boolean>, limit: number, bounds: { since?: number; within?: Set<string> }): Promise<Introduced> {
  const { reader, history } = ctx;
  let c = await reader.readCommit(start);
  for (let n = 0; n < limit; n++) {
    if (bounds.within && !bounds.within.has(c.oid)) return { absent: true };
    if (bounds.since !== undefined && c.committer.timestamp * 1000 <= bounds.since) return { before: new Date(bounds.since).toISOString() };
    if ((await history.touches(c)) && (await changed(c))) return { commit: c, fromParents: [] };
    const parent = c.parents[0];
    if (!parent) return { absent: true };
    c = await reader.readCommit(parent);
  }
  return { older: limit };
}

/**
 * True when a merge introduced the thing from inside the range: an other parent that has it lies in
 * the range (the merged branch brought it), or none has it (the merge itself made it).
 */
function mergeBringsFromRange(range: RangeState & { state: 'range' }, fromParents: string[]): boolean {
  const inRange = new Set(range.commits.map((c) => c.oid));
  return fromParents.length === 0 || fromParents.some((p) => inRange.has(p));
}

/** The newest of several commits on one first-parent line (the one whose ancestors the others are). */
async function newestOf(reader: RepoReader, commits: CommitInfo[]): Promise<CommitInfo | undefined> {
  let best: CommitInfo | undefined;
  for (const c of commits) if (!best || (c.oid !== best.oid && (await reader.isAncestor(best.oid, c.oid)))) best = c;
  return best;
}

function describeFinding(f: Finding): string | undefined {
  const r = f.result;
  if ('found' in r) return `${f.signal}: introduced by ${short(r.found.oid)} (${subject(r.found)})`;
  if ('absent' in r) return `${f.signal}: not set by anything the engine reads for the target at the failing revision`;
  if ('outsideRange' in r) return `${f.signal}: introduced by ${short(r.outsideRange.oid)}, at or before the applied revision (it ran before)`;
  if ('superseded' in r) return `${f.signal}: introduced earlier by ${short(r.superseded.oid)}, before the workload's newest image change (kept)`;
  if ('cluster' in r) return `${f.signal}: set by ${r.cluster}, a field of the cluster object that no revert of the repository changes`;
  if ('before' in r) return `${f.signal}: no commit since ${r.before} changed what sets them in what the engine reads for the target (older changes went out with that release)`;
  return `${f.signal}: older than the ${r.older} commits searched`;
}

// ---- assembling the answer ------------------------------------------------------------------------

/** Refuses a bad change the engine reads from outside the target's paths, naming the files and the commits. */
async function refuseOutside(ctx: Ctx, changed: InputDelta[], makers: CommitInfo[], context: string, ends?: { before: string; after: string }): Promise<void> {
  const outside = changed.filter((d) => !inPaths(d.path, ctx.paths)).map((d) => d.path);
  if (outside.length === 0) return;
  let moved = '';
  if (ends) {
    const [before, after] = await Promise.all([ctx.history.at(ends.before), ctx.history.at(ends.after)]);
    const inside = (m: typeof before) => [...m.inputs.keys()].some((p) => inPaths(p, ctx.paths));
    if (inside(before) && !inside(after)) {
      const dirs = [...new Set(outside.filter((p) => after.inputs.has(p)).map((p) => p.slice(0, p.lastIndexOf('/') + 1) || p))];
      moved = `; at ${short(ends.after)} the engine no longer reads the target's paths at all${dirs.length ? `: what it builds for the target moved to ${list(dirs, 3)}` : ''}`;
    }
  }
  const by = makers.length ? ` (by ${makers.slice(0, 3).map((c) => `${short(c.oid)} ${JSON.stringify(subject(c))}`).join(', ')}${makers.length > 3 ? ', …' : ''})` : '';
  throw new RevertImpossible(
    `${context}: the bad change is in files that ${ctx.engine} reads for this target outside its paths (${ctx.paths.join(', ')}): ${list(outside)}${by}${moved}; a revert limited to the target's paths would not undo it`,
    [`if those files belong to the target (a shared base, a moved folder, values kept elsewhere), add their folder to the target's paths; otherwise name the commit to revert: lastgood revert --bad SHA`],
  );
}

/** A lastgood revert for this target, or one of another target that wrote into this target's paths. */
async function isOwnRevert(ctx: Ctx, c: CommitInfo): Promise<boolean> {
  const by = lastgoodTarget(c.message);
  if (by === undefined) return false;
  if (ctx.target === undefined || by === ctx.target) return true;
  return (await filesChanged(ctx, c)).length > 0;
}

/** The git-level files under the paths that a commit changed (what a revert of it writes). */
async function filesChanged(ctx: Ctx, c: CommitInfo): Promise<string[]> {
  return (await changedFiles(ctx.reader, c.parents[0], c.oid, ctx.paths)).map((d) => d.path);
}

/** No range (or applied = attempted): the commits the content signals name are bad, nothing else. */
async function fromCandidates(ctx: Ctx, range: RangeState, findings: Finding[], candidates: Array<Finding & { result: { found: CommitInfo } }>): Promise<Located> {
  const distinct = new Map<string, CommitInfo>();
  for (const f of candidates) distinct.set(f.result.found.oid, f.result.found);
  if (distinct.size > 1) {
    throw new RevertImpossible(
      `signals disagree: they name ${plural(distinct.size, 'different commit')} (${[...distinct.keys()].map(short).join(', ')}) and ${describeRange(range)}, so nothing bounds them`,
      candidates.map((f) => describeFinding(f)!),
    );
  }
  const bad = [...distinct.values()];
  for (const c of bad) {
    if (lastgoodTarget(c.message)) throw new RevertImpossible(`${REVERT_ITSELF_FAILED}: ${c.oid} is a lastgood revert (no revert of a revert); a person must look`);
  }
  const oldest = bad[bad.length - 1]!;
  const lkg = oldest.parents[0];
  if (!lkg) throw new RevertImpossible(`the bad commit ${oldest.oid} is the first commit of the repository: there is nothing to go back to`);
  const used = candidates.map((f) => describeFinding(f)!);
  const rangeText = range.state === 'none' ? '' : `${describeRange(range)}; `;
  for (const c of bad) await refuseOutside(ctx, await ctx.history.commit(c), [c], `${rangeText}${used.join('; ')}`);
  const touched = new Set<string>();
  for (const c of bad) for (const f of await filesChanged(ctx, c)) touched.add(f);
  const later = await laterCommits(ctx, lkg, new Set(bad.map((c) => c.oid)));
  const how = candidates[0]!.how;
  const others = findings.filter((f) => !('found' in f.result)).map(describeFinding).filter(Boolean);
  const keptNote = later.length ? `; the engine reports no range of the failing sync, so ${plural(later.length, 'later commit')} to what it reads for the target ${later.length === 1 ? 'is' : 'are'} kept` : '';
  return {
    bad,
    later,
    lastKnownGood: lkg,
    verified: false,
    how,
    explanation: `${rangeText}${used.join('; ')}${others.length ? `; also: ${others.join('; ')}` : ''}${keptNote}`,
    revert: { kind: 'commits', steps: bad.map((c) => ({ base: c.oid, theirs: c.parents[0] })) },
    touched: [...touched].sort(),
    ...(range.state === 'empty' ? { applied: range.applied } : {}),
    ...(range.state !== 'none' ? { attempted: range.attempted } : {}),
  };
}

/**
 * A range (reported by the engine, or selected by a content signal): what the engine attempted in
 * one step. Its net change to what the engine reads for the target is what failed; every mainline
 * unit that contributes to it is bad, and they are reverted together (never split). A merge that
 * changed nothing on the mainline (`-s ours`), a `git pull` merge and a commit cancelled by its
 * exact revert inside the range contribute nothing.
 */
async function fromRange(ctx: Ctx, range: RangeState & { state: 'range' }, findings: Finding[], how: Located['how']): Promise<Located> {
  const { reader, paths, history } = ctx;
  let theirs = range.applied;
  let line = range.line;
  // lastgood's own revert inside the range is never undone: only what came after it counts. Own:
  // for this target, or one that wrote into its paths (as history/guards.ts revertOfRevert). Another
  // target's revert beside it in one Kustomization is a commit like any other: taken for this
  // target's, it made a false "the revert itself failed", or the bound below a bad release
  let ownIndex = -1;
  for (const [i, c] of line.entries()) {
    if (await isOwnRevert(ctx, c)) {
      ownIndex = i;
      break;
    }
  }
  if (ownIndex >= 0) {
    const own = line[ownIndex]!;
    if (ownIndex === 0 || (await Promise.all(line.slice(0, ownIndex).map((c) => history.touches(c)))).every((t) => !t)) {
      throw new RevertImpossible(`${REVERT_ITSELF_FAILED}: ${own.oid} is a lastgood revert (no revert of a revert); a person must look`);
    }
    theirs = own.oid;
    line = line.slice(0, ownIndex);
  }
  // every revision of the range is modelled below: a reader that fetches on demand gets what they read in one go
  await history.prefetch([range.attempted, theirs, ...line.flatMap((c) => [c.oid, ...c.parents])]);
  const net = await history.changed(theirs, range.attempted);
  if (net.length === 0) {
    const inside = await changedFiles(reader, theirs, range.attempted, paths);
    if (inside.length > 0) {
      // files of the target's paths changed, but none that the engine reads: say which and why (the
      // paths model reads every file of the paths, unless it narrowed to the overlay that builds the
      // target's objects: model/overlays.ts)
      const model = await history.at(range.attempted);
      const deferred = new Map((await history.changed(theirs, range.attempted, { raw: true })).filter((d) => d.shipsWith).map((d) => [d.path, d.shipsWith!]));
      const why = inside.slice(0, 5).map((d) => {
        const mode = d.after?.mode ?? d.before?.mode;
        const trigger = deferred.get(d.path);
        if (trigger) return `${d.path} changed, but it reaches the cluster only together with a change of ${trigger}, which did not change`;
        if (mode === '120000' && model.engine === 'flux') return `${d.path} changed in the target's paths, but it is a symlink, which Flux leaves out of its source`;
        return `${d.path} changed in the target's paths, but the build does not read it`;
      });
      throw new RevertImpossible(
        `${describeRange(range)}, but between them nothing that ${ctx.pathsOnly ? 'the build of the target\'s objects' : ctx.engine} reads for this target changed: ${why.join('; ')}${inside.length > 5 ? '; …' : ''}${ctx.pathsOnly ? ` (${model.describe})` : ''}; a revert would change nothing the cluster runs`,
        ['the failure does not come from this repository\'s change to the target; a person must look'],
      );
    }
    const outside = await changedOutside(reader, theirs, range.attempted, paths);
    const touchedUnits: CommitInfo[] = [];
    for (const c of line) if (await history.touches(c)) touchedUnits.push(c);
    const within = touchedUnits.length ? `; ${plural(touchedUnits.length, 'commit')} in between changed it and changed it back` : '';
    const signals = findings.map(describeFinding).filter(Boolean);
    const said = signals.length ? ` (${signals.join('; ')})` : '';
    if (outside.length > 0) {
      // name the commits that made the outside change, so a person can look at them
      const outsidePaths = [...new Set(outside.map((f) => f.slice(0, f.lastIndexOf('/') + 1) || f))];
      const makers: CommitInfo[] = [];
      for (const c of line) if ((await changedFiles(reader, c.parents[0], c.oid, outsidePaths)).length > 0) makers.push(c);
      const by = makers.length ? ` by ${makers.slice(0, 3).map((c) => `${short(c.oid)} (${subject(c)})`).join(', ')}${makers.length > 3 ? ', …' : ''}` : '';
      throw new RevertImpossible(
        !ctx.pathsOnly
          ? `${describeRange(range)}, but between them nothing that ${ctx.engine} reads for this target changed${within}; the change touched ${list(outside)}${by}, which the engine does not read for it${said}`
          : `${describeRange(range)}, but between them nothing changed in the target paths (${paths.join(', ')})${within}; the change touched ${list(outside)} outside them${by}${said}`,
        [`if the target's manifests include those files (a shared kustomize base, values kept elsewhere) and the model does not see it, add their folder to the target's paths; otherwise the failure does not come from this repository's change`],
      );
    }
    throw new RevertImpossible(`${describeRange(range)}, but nothing in the repository changed between them${within}: the failure does not come from a commit (the cluster, a registry, a dependency)${said}`);
  }

  // which units changed each input of the net change; a commit and its exact revert (inside the range) cancel
  const lineSet = new Set(line.map((c) => c.oid));
  const deltas: Array<{ head: string; path: string; before: string; after: string }> = [];
  for (const [head, members] of range.units) {
    if (!lineSet.has(head)) continue;
    for (const m of members) {
      if (m.parents.length > 1) continue; // merges bring their parents' changes; a merge's own edits are found below
      // raw: a change that ships only with another (a chart template under ChartVersion) is this commit's part of the range
      for (const d of await history.commit(m, { raw: true })) deltas.push({ head, path: d.path, before: d.before ?? '-', after: d.after ?? '-' });
    }
  }
  const cancelled = new Set<number>();
  // a change and its exact undo cancel within one unit first (a branch that set a value and set it
  // back), and only then across units: else a mainline commit pairs with a merged branch's undo and
  // the branch's own change is left to a merge that did not bring it
  for (const sameUnit of [true, false]) {
    deltas.forEach((d, i) => {
      if (cancelled.has(i)) return;
      const j = deltas.findIndex((e, k) => k !== i && !cancelled.has(k) && (!sameUnit || e.head === d.head) && e.path === d.path && e.before === d.after && e.after === d.before);
      if (j >= 0) cancelled.add(i).add(j);
    });
  }
  const netPaths = new Set(net.map((d) => d.path));
  const byPath = new Map<string, Set<string>>();
  deltas.forEach((d, i) => {
    if (!cancelled.has(i) && netPaths.has(d.path)) byPath.set(d.path, (byPath.get(d.path) ?? new Set()).add(d.head));
  });
  // a unit brought a change to the mainline only if its mainline commit changed that input against its first parent
  // (a merge made with `-s ours` brings nothing, whatever its branch did)
  const heads = new Map(line.map((c) => [c.oid, c]));
  for (const [path, unitHeads] of byPath) {
    for (const h of [...unitHeads]) {
      const c = heads.get(h)!;
      if (c.parents.length > 1 && !(await history.commit(c, { raw: true })).some((d) => d.path === path)) unitHeads.delete(h);
    }
    if (unitHeads.size === 0) byPath.delete(path);
  }
  for (const d of net) {
    if (byPath.has(d.path)) continue;
    // a merge that changed the input itself (a conflict resolution or an edit in the merge)
    for (const c of line.filter((x) => x.parents.length > 1)) {
      const own = await pathState(reader, c.oid, d.path);
      const parentsDiffer = await Promise.all(c.parents.map(async (p) => (await pathState(reader, p, d.path)) !== own));
      if (parentsDiffer.every(Boolean) && (await history.commit(c, { raw: true })).some((x) => x.path === d.path)) byPath.set(d.path, (byPath.get(d.path) ?? new Set()).add(c.oid));
    }
  }
  const unexplained = net.filter((d) => !byPath.has(d.path)).map((d) => d.path);
  if (unexplained.length > 0) {
    throw new RevertImpossible(`${describeRange(range)}: the change to ${list(unexplained)} cannot be tied to a commit between them; a person must look`);
  }
  const badSet = new Set([...byPath.values()].flatMap((s) => [...s]));
  const bad = line.filter((c) => badSet.has(c.oid));
  await refuseOutside(ctx, net, bad.filter((c) => [...byPath].some(([p, hs]) => !inPaths(p, paths) && hs.has(c.oid))), describeRange(range), { before: theirs, after: range.attempted });
  const touched = new Set<string>(net.map((d) => d.path).filter((p) => inPaths(p, paths)));
  for (const c of bad) for (const m of range.units.get(c.oid) ?? [c]) if (m.parents.length < 2 || m === c) for (const f of await filesChanged(ctx, m)) touched.add(f);
  const keptInRange: CommitInfo[] = [];
  for (const c of line) if (!badSet.has(c.oid) && (await unitTouches(ctx, range.units.get(c.oid) ?? [c]))) keptInRange.push(c);
  const later = await laterCommits(ctx, range.attempted, badSet);
  const signals = findings.map(describeFinding).filter(Boolean);
  const together = bad.length > 1 ? `; they shipped in one sync and are reverted together` : '';
  return {
    bad,
    later: [...keptInRange, ...later.filter((c) => !keptInRange.some((k) => k.oid === c.oid))].sort((a, b) => b.committer.timestamp - a.committer.timestamp),
    lastKnownGood: theirs,
    verified: false,
    how,
    explanation:
      `${describeRange(range)}; ${plural(bad.length, 'commit')} in between changed what the engine reads for the target (${bad.map((c) => short(c.oid)).join(', ')})${together}` +
      (theirs !== range.applied ? `; lastgood's own revert ${short(theirs)} in that range is kept, only what came after it is undone` : '') +
      (signals.length && !range.selectedBy ? `; ${signals.join('; ')}` : ''),
    revert: { kind: 'range', base: range.attempted, theirs, files: [...touched].sort() },
    touched: [...touched].sort(),
    applied: theirs === range.applied ? range.applied : theirs,
    attempted: range.attempted,
  };
}

/** A path's entry at a commit, comparable across commits ("-" absent; a path through a symlink is its own state). */
async function pathState(reader: RepoReader, commit: string, path: string): Promise<string> {
  try {
    return (await reader.pathOid(commit, path)) ?? '-';
  } catch {
    return 'unreadable';
  }
}

/**
 * True when a unit's own commits (not its merges) changed what the engine reads for the target or a
 * file of the target's paths: a revert keeps such a commit, a restore undoes it, and both say so.
 */
async function unitTouches(ctx: Ctx, members: CommitInfo[]): Promise<boolean> {
  for (const m of members) if (m.parents.length < 2 && ((await ctx.history.touches(m)) || (await filesChanged(ctx, m)).length > 0)) return true;
  return false;
}

/**
 * Mainline commits between `since` (exclusive) and the head that changed what the engine reads for
 * the target by commits of their own (not lastgood's, not the bad ones): a revert keeps them, a
 * restore undoes them.
 */
async function laterCommits(ctx: Ctx, since: string, bad: Set<string>): Promise<CommitInfo[]> {
  const { reader, head } = ctx;
  if (since === head) return [];
  const r = await commitRange(reader, head, [since]);
  if (!r.bounded) return [];
  const line = mainline(r.commits, head);
  const out: CommitInfo[] = [];
  for (const [unitHead, members] of units(r.commits, line)) {
    if (bad.has(unitHead)) continue;
    const c = members[0]!;
    if (lastgoodTarget(c.message)) continue;
    if (await unitTouches(ctx, members)) out.push(c);
  }
  return out.sort((a, b) => b.committer.timestamp - a.committer.timestamp);
}

/**
 * The failing image is gone from the head because lastgood's own revert removed it and the cluster
 * has not synced yet: nothing new to do.
 */
async function alreadyReverted(ctx: Ctx, findings: Finding[]): Promise<Located | undefined> {
  if (!findings.some((f) => f.how === 'image' && 'absent' in f.result)) return undefined;
  const { reader, head } = ctx;
  const newest = await firstTouching(ctx, head);
  if (!newest || !lastgoodTarget(newest.message)) return undefined;
  const trailers = parseTrailers(newest.message);
  const reverted = revertedBy(newest.message);
  const restores = trailers.get('Lastgood-Restores')?.[0] ?? newest.parents[0] ?? newest.oid;
  const bad = await Promise.all(reverted.map((sha) => reader.readCommit(sha)));
  return {
    bad, later: [], lastKnownGood: restores, verified: false, how: 'image', alreadyRevertedBy: newest.oid,
    explanation: `the failing image is no longer on ${ctx.branch}: ${short(newest.oid)} already reverted it and the cluster has not synced yet`,
    revert: { kind: 'commits', steps: [] }, touched: [],
  };
}

async function firstTouching(ctx: Ctx, from: string): Promise<CommitInfo | undefined> {
  let c: CommitInfo | undefined = await ctx.reader.readCommit(from);
  for (let n = 0; c && n < 200; n++) {
    if (await ctx.history.touches(c)) return c;
    c = c.parents[0] ? await ctx.reader.readCommit(c.parents[0]) : undefined;
  }
  return undefined;
}
