import { RevertImpossible } from '../errors.ts';
import type { Evidence } from '../decide/types.ts';
import type { CommitInfo, RepoReader } from '../repo/types.ts';
import { changedFiles, changedOutside, commitRange, mainline, touches, units } from './graph.ts';
import { formatImageRef, parseImageRef, type ImageRef } from './image-ref.ts';
import { ManifestReader, sameValues } from './manifests.ts';
import { lastgoodTarget, parseTrailers, revertedBy } from './trailers.ts';

/** How to compute the revert's content (revert/threeway.ts). */
export type RevertSpec =
  /** the net change of a whole range: 3-way with base = attempted, theirs = applied */
  | { kind: 'range'; base: string; theirs: string }
  /** each bad unit undone against its first parent (`git revert -m 1`), newest first */
  | { kind: 'commits'; steps: Array<{ base: string; theirs: string | undefined }> };

export interface Located {
  /** the bad commits, newest first: mainline commits (a merged pull request is named by its merge commit) */
  bad: CommitInfo[];
  /** commits after the last-known-good that also changed the target paths and are not bad (kept by a revert, undone by a restore) */
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
  paths: string[];
  evidence: Evidence[];
  /** how far back along first parents to look for the commit that introduced an image or chart */
  searchLimit?: number;
  /** commits lastgood observed healthy for this target (verified records), any order: where the engine reports no applied revision, the newest one below the attempted revision bounds the range */
  verified?: string[];
}

const short = (sha: string) => sha.slice(0, 12);
const ref = (e: Pick<Evidence, 'kind' | 'namespace' | 'name'>) => `${e.kind} ${e.namespace ? `${e.namespace}/` : ''}${e.name}`;
const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
const subject = (c: CommitInfo) => c.message.split('\n')[0]!.trim();

/** What the engine reports about revisions: the range `applied..attempted`, or less. */
type RangeState =
  | { state: 'none' }
  | { state: 'unknown'; attempted: string; by: Evidence }
  | { state: 'empty'; attempted: string; applied: string; by: Evidence }
  | { state: 'range'; attempted: string; applied: string; by: Evidence; commits: CommitInfo[]; line: CommitInfo[]; units: Map<string, CommitInfo[]> };

/** One content signal (an image, a chart, a promotion's commit) and what the history says about it. */
interface Finding {
  /** e.g. "image ghcr.io/acme/shop:1.4.0 of Deployment prod/shop" */
  signal: string;
  how: Located['how'];
  result: { found: CommitInfo } | { absent: true } | { older: number } | { outsideRange: CommitInfo } | { superseded: CommitInfo };
}

/**
 * Finds the bad commit(s) and the last-known-good from every signal the target's objects give:
 *
 * - the **revision range** the GitOps engine reports (`applied..attempted`: Flux
 *   lastApplied/lastAttempted, Argo CD's deployment before and at the failure, a chart built from
 *   git), over the whole commit graph;
 * - **content signals**: the exact image a failing workload runs (the commit that introduced it
 *   into the target paths), a HelmRelease's chart version (the commit that pinned it) or, when the
 *   chart did not change, its values; a Kargo Promotion's own commit.
 *
 * The bad commit is the one that introduced what fails; other commits are kept. Without a content
 * signal, the bad commits are those of the range whose changes make up the range's net change to
 * the target paths. Where the engine reports no applied revision, lastgood's own newest verified
 * record below the attempted revision bounds the range; failing that, the attempted revision is
 * named only when it changed the target paths itself. When signals disagree or none is specific,
 * locate refuses (RevertImpossible) and says which signals said what.
 */
export async function locate(input: LocateInput): Promise<Located> {
  const failing = input.evidence.filter((e) => (e.state === 'failed' || e.state === 'progressing') && !e.foreign);
  const range = await revisionRange(input, failing);
  const findings = await contentFindings(input, failing, range);
  const candidates = findings.filter((f): f is Finding & { result: { found: CommitInfo } } => 'found' in f.result);
  const rangeNote = describeRange(range);

  if (candidates.length > 0) return fromCandidates(input, range, findings, candidates);
  if (range.state === 'unknown') {
    // without an applied revision, the failing revision counts only where it changed the paths itself
    const attempted = await input.reader.readCommit(range.attempted);
    if (await touches(input.reader, attempted, input.paths)) {
      const own: Finding & { result: { found: CommitInfo } } = { signal: `the failing revision ${short(attempted.oid)} itself changed the target paths (earlier commits are not blamed: name them with lastgood revert --bad)`, how: 'revision', result: { found: attempted } };
      return fromCandidates(input, range, [...findings, own], [own]);
    }
  }

  if (range.state === 'range') {
    const unused = findings.map(describeFinding).filter(Boolean);
    return fromRange(input, range, unused);
  }
  const details = findings.map(describeFinding).filter((s): s is string => Boolean(s));
  if (range.state === 'empty') {
    throw new RevertImpossible(
      `cannot tell which commit is bad: ${rangeNote}, and no failing object names what fails in the target paths (a new image or chart version)`,
      [...details, 'add the failing workload (Deployment, Rollout, Pod) or HelmRelease to the target\'s resources, or name the commit: lastgood revert --bad SHA'],
    );
  }
  if (range.state === 'unknown') {
    throw new RevertImpossible(
      `cannot tell which commit is bad: ${rangeNote}, so where the bad commits begin is unknown; the failing revision did not change the target paths itself, and no failing object names what fails in them`,
      [...details, 'name the commit: lastgood revert --bad SHA'],
    );
  }
  const imageGone = await alreadyReverted(input, findings);
  if (imageGone) return imageGone;
  if (findings.length > 0) {
    throw new RevertImpossible(`cannot tell which commit is bad: no object of the target reports a git revision, and ${details.join('; ')}`);
  }
  throw new RevertImpossible(
    'cannot tell which commit is bad: no object of the target reports a git revision, and no failing workload names an image',
    ['add the Flux Kustomization / Argo CD Application that applies the target, or the failing Deployment, to the target\'s resources'],
  );
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
      return range.by.lastSucceeded?.sha
        ? `${ref(range.by)} attempted ${short(range.attempted)} after applying ${short(range.applied)}`
        : `${ref(range.by)} attempted ${short(range.attempted)}; lastgood observed ${short(range.applied)} healthy (verified record)`;
  }
}

// ---- content signals ------------------------------------------------------------------------------

const KARGO_PROMOTION = 'kargo.akuity.io/Promotion';
const HELMRELEASE = 'helm.toolkit.fluxcd.io/HelmRelease';

async function contentFindings(input: LocateInput, failing: Evidence[], range: RangeState): Promise<Finding[]> {
  const { reader } = input;
  const start = range.state === 'none' ? input.head : range.attempted;
  const manifests = new ManifestReader(reader, input.paths);
  const limit = input.searchLimit ?? 200;
  const out: Finding[] = [];
  const place = async (signal: string, how: Located['how'], found: Awaited<ReturnType<typeof introducer>>): Promise<void> => {
    if ('absent' in found || 'older' in found) {
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
        if (await touches(reader, commit, input.paths)) out.push({ signal: `the commit ${short(sha)} of ${ref(e)}`, how: 'commit', result: { found: commit } });
      }
    }
    if (e.groupKind === HELMRELEASE && e.attempted?.chart) {
      const release = { name: e.name, ...(e.namespace ? { namespace: e.namespace } : {}) };
      const version = e.attempted.chart;
      const chartChanged = !e.lastSucceeded?.chart || e.lastSucceeded.chart !== version;
      if (chartChanged) {
        const has = async (c: string) => (await manifests.chartPins(c, release)).some((p) => p.version === version);
        await place(`chart ${e.attempted.chartName ? `${e.attempted.chartName} ` : ''}${version} of ${ref(e)}`, 'chart', await introducer(reader, input.paths, start, has, limit));
      } else {
        // the chart is the one that worked: what changed is the values
        const changed = async (c: CommitInfo) => {
          const parent = c.parents[0];
          if (!parent) return true;
          return !sameValues(await manifests.chartPins(c.oid, release), await manifests.chartPins(parent, release));
        };
        await place(`values of ${ref(e)} (its chart ${version} did not change)`, 'values', await newestChange(reader, input.paths, start, changed, limit));
      }
    }
    const images = imageSignals(e);
    if (images.length === 0) continue;
    const placed: Array<{ image: ImageRef; found: Awaited<ReturnType<typeof introducer>> }> = [];
    for (const image of images) placed.push({ image, found: await introducer(reader, input.paths, start, (c) => manifests.hasImage(c, image), limit) });
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

type Introduced = { commit: CommitInfo; fromParents: string[] } | { absent: true } | { older: number };

/**
 * The commit that introduced something into the target paths: along first parents from `start`,
 * the oldest commit of the unbroken run that has it. A merge found so is where the thing reached
 * the mainline; `fromParents` names its other parents that have it.
 */
async function introducer(reader: RepoReader, paths: string[], start: string, has: (commit: string) => Promise<boolean>, limit: number): Promise<Introduced> {
  if (!(await has(start))) return { absent: true };
  let c = await reader.readCommit(start);
  for (let n = 0; ; n++) {
    const parent = c.parents[0];
    if (!parent) return { commit: c, fromParents: [] };
    // a commit that did not change the paths has what its parent has
    const changed = await touches(reader, c, paths);
    if (changed && !(await has(parent))) {
      const fromParents: string[] = [];
      for (const p of c.parents.slice(1)) if (await has(p)) fromParents.push(p);
      return { commit: c, fromParents };
    }
    if (n >= limit) return { older: limit };
    c = await reader.readCommit(parent);
  }
}

/** The newest commit along first parents from `start` for which `changed` holds (only commits that changed the paths are asked). */
async function newestChange(reader: RepoReader, paths: string[], start: string, changed: (c: CommitInfo) => Promise<boolean>, limit: number): Promise<Introduced> {
  let c = await reader.readCommit(start);
  for (let n = 0; n < limit; n++) {
    if ((await touches(reader, c, paths)) && (await changed(c))) return { commit: c, fromParents: [] };
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
  if ('absent' in r) return `${f.signal}: not named in the target paths at the failing revision`;
  if ('outsideRange' in r) return `${f.signal}: introduced by ${short(r.outsideRange.oid)}, at or before the applied revision (it ran before)`;
  if ('superseded' in r) return `${f.signal}: introduced earlier by ${short(r.superseded.oid)}, before the workload's newest image change (kept)`;
  return `${f.signal}: older than the ${r.older} commits searched`;
}

// ---- assembling the answer ------------------------------------------------------------------------

async function fromCandidates(input: LocateInput, range: RangeState, findings: Finding[], candidates: Array<Finding & { result: { found: CommitInfo } }>): Promise<Located> {
  const { reader } = input;
  const distinct = new Map<string, CommitInfo>();
  for (const f of candidates) distinct.set(f.result.found.oid, f.result.found);
  if (range.state !== 'range' && distinct.size > 1) {
    throw new RevertImpossible(
      `signals disagree: they name ${plural(distinct.size, 'different commit')} (${[...distinct.keys()].map(short).join(', ')}) and ${describeRange(range)}, so nothing bounds them`,
      candidates.map((f) => describeFinding(f)!),
    );
  }
  // newest first along the mainline
  const bad = [...distinct.values()].sort((a, b) => b.committer.timestamp - a.committer.timestamp);
  for (const c of bad) {
    if (lastgoodTarget(c.message)) throw new RevertImpossible(`the revert itself failed: ${c.oid} is a lastgood revert (no revert of a revert); a person must look`);
  }
  const oldest = bad[bad.length - 1]!;
  const lkg = oldest.parents[0];
  if (!lkg) throw new RevertImpossible(`the bad commit ${oldest.oid} is the first commit of the repository: there is nothing to go back to`);
  const touched = new Set<string>();
  for (const c of bad) {
    for (const m of range.state === 'range' ? (range.units.get(c.oid) ?? [c]) : [c]) {
      for (const d of await changedFiles(reader, m.parents[0], m.oid, input.paths)) touched.add(d.path);
    }
  }
  const later = await laterCommits(input, lkg, new Set(bad.map((c) => c.oid)));
  const how = candidates[0]!.how;
  const used = candidates.map((f) => describeFinding(f)!);
  const others = findings.filter((f) => !('found' in f.result)).map(describeFinding).filter(Boolean);
  const rangeText = range.state === 'none' ? '' : `${describeRange(range)}; `;
  const keptInRange = range.state === 'range' ? range.line.filter((c) => !distinct.has(c.oid)) : [];
  return {
    bad,
    later,
    lastKnownGood: lkg,
    verified: false,
    how,
    explanation: `${rangeText}${used.join('; ')}${others.length ? `; also: ${others.join('; ')}` : ''}${keptInRange.length ? `; ${plural(keptInRange.length, 'other commit')} of that range ${keptInRange.length === 1 ? 'is' : 'are'} kept` : ''}`,
    revert: { kind: 'commits', steps: bad.map((c) => ({ base: c.oid, theirs: c.parents[0] })) },
    touched: [...touched].sort(),
    ...(range.state === 'range' || range.state === 'empty' ? { applied: range.applied } : {}),
    ...(range.state !== 'none' ? { attempted: range.attempted } : {}),
  };
}

/**
 * No content signal: the range's net change to the target paths is what failed. Each file of the
 * net change is attributed to the units whose commits changed it; those units are the bad ones.
 */
async function fromRange(input: LocateInput, range: RangeState & { state: 'range' }, unused: Array<string | undefined>): Promise<Located> {
  const { reader, paths } = input;
  let theirs = range.applied;
  let line = range.line;
  // lastgood's own revert inside the range is never undone: only what came after it counts
  const ownIndex = line.findIndex((c) => lastgoodTarget(c.message));
  if (ownIndex >= 0) {
    const own = line[ownIndex]!;
    if (ownIndex === 0 || (await Promise.all(line.slice(0, ownIndex).map((c) => touches(reader, c, paths)))).every((t) => !t)) {
      throw new RevertImpossible(`the revert itself failed: ${own.oid} is a lastgood revert (no revert of a revert); a person must look`);
    }
    theirs = own.oid;
    line = line.slice(0, ownIndex);
  }
  const net = await changedFiles(reader, theirs, range.attempted, paths);
  if (net.length === 0) {
    const outside = await changedOutside(reader, theirs, range.attempted, paths);
    const touchedUnits = (await Promise.all(line.map(async (c) => ((await touches(reader, c, paths)) ? c : undefined)))).filter((c): c is CommitInfo => Boolean(c));
    const within = touchedUnits.length ? `; ${plural(touchedUnits.length, 'commit')} in between changed the target paths and changed them back` : '';
    if (outside.length > 0) {
      // name the commits that made the outside change, so a person can look at them
      const outsidePaths = [...new Set(outside.map((f) => f.slice(0, f.lastIndexOf('/') + 1) || f))];
      const makers: CommitInfo[] = [];
      for (const c of line) if (await touches(reader, c, outsidePaths)) makers.push(c);
      const by = makers.length ? ` by ${makers.slice(0, 3).map((c) => `${short(c.oid)} (${subject(c)})`).join(', ')}${makers.length > 3 ? ', …' : ''}` : '';
      throw new RevertImpossible(
        `${describeRange(range)}, but between them nothing changed in the target paths (${paths.join(', ')})${within}; the change touched ${outside.slice(0, 5).join(', ')}${outside.length > 5 ? ', …' : ''} outside them${by}`,
        [`if the target's manifests include those files — a shared kustomize base, values kept elsewhere — add their folder to the target's paths; otherwise the failure does not come from this repository's change`],
      );
    }
    throw new RevertImpossible(`${describeRange(range)}, but nothing in the repository changed between them${within}: the failure does not come from a commit (the cluster, a registry, a dependency)`);
  }
  // which commits changed each file of the net change; a commit and its exact revert (inside the range) cancel
  const byFile = new Map<string, Set<string>>();
  const touchedByUnit = new Map<string, Set<string>>();
  const lineSet = new Set(line.map((c) => c.oid));
  const deltas: Array<{ head: string; path: string; before: string; after: string }> = [];
  for (const [head, members] of range.units) {
    if (!lineSet.has(head)) continue;
    for (const m of members) {
      if (m.parents.length > 1) continue; // merges bring their parents' changes; attributed below only when nothing else explains a file
      if (!(await touches(reader, m, paths))) continue;
      for (const d of await changedFiles(reader, m.parents[0], m.oid, paths)) {
        deltas.push({ head, path: d.path, before: d.before ? `${d.before.mode}:${d.before.oid}` : '-', after: d.after ? `${d.after.mode}:${d.after.oid}` : '-' });
        touchedByUnit.set(head, (touchedByUnit.get(head) ?? new Set()).add(d.path));
      }
    }
  }
  const cancelled = new Set<number>();
  deltas.forEach((d, i) => {
    if (cancelled.has(i)) return;
    const j = deltas.findIndex((e, k) => k !== i && !cancelled.has(k) && e.path === d.path && e.before === d.after && e.after === d.before);
    if (j >= 0) cancelled.add(i).add(j);
  });
  deltas.forEach((d, i) => {
    if (!cancelled.has(i)) byFile.set(d.path, (byFile.get(d.path) ?? new Set()).add(d.head));
  });
  for (const d of net) {
    if (byFile.has(d.path)) continue;
    // a merge that changed the file itself (a conflict resolution or an edit in the merge)
    for (const [head, members] of range.units) {
      if (!lineSet.has(head)) continue;
      for (const m of members.filter((x) => x.parents.length > 1)) {
        const own = await reader.pathOid(m.oid, d.path);
        const parentsDiffer = await Promise.all(m.parents.map(async (p) => (await reader.pathOid(p, d.path)) !== own));
        if (parentsDiffer.every(Boolean)) {
          byFile.set(d.path, (byFile.get(d.path) ?? new Set()).add(head));
          touchedByUnit.set(head, (touchedByUnit.get(head) ?? new Set()).add(d.path));
        }
      }
    }
  }
  const unexplained = net.filter((d) => !byFile.has(d.path)).map((d) => d.path);
  if (unexplained.length > 0) {
    throw new RevertImpossible(`${describeRange(range)}: the change to ${unexplained.join(', ')} cannot be tied to a commit between them; a person must look`);
  }
  const badSet = new Set([...byFile.values()].flatMap((s) => [...s]));
  const bad = line.filter((c) => badSet.has(c.oid));
  const touched = new Set<string>(net.map((d) => d.path));
  for (const c of bad) for (const f of touchedByUnit.get(c.oid) ?? []) touched.add(f);
  const kept = line.filter((c) => !badSet.has(c.oid) && touchedByUnit.has(c.oid));
  const later = await laterCommits(input, range.attempted, badSet);
  const notes = unused.filter(Boolean);
  return {
    bad,
    later: [...kept, ...later.filter((c) => !kept.some((k) => k.oid === c.oid))].sort((a, b) => b.committer.timestamp - a.committer.timestamp),
    lastKnownGood: theirs,
    verified: false,
    how: 'revision',
    explanation:
      `${describeRange(range)}; ${plural(bad.length, 'commit')} in between changed the target paths (${bad.map((c) => short(c.oid)).join(', ')})` +
      (theirs !== range.applied ? `; lastgood's own revert ${short(theirs)} in that range is kept, only what came after it is undone` : '') +
      (notes.length ? `; ${notes.join('; ')}` : ''),
    revert: { kind: 'range', base: range.attempted, theirs },
    touched: [...touched].sort(),
    applied: range.applied,
    attempted: range.attempted,
  };
}

/**
 * Mainline commits between `since` (exclusive) and the head that changed the target paths by
 * commits of their own (not lastgood's, not the bad ones): a revert keeps them, a restore undoes them.
 */
async function laterCommits(input: LocateInput, since: string, bad: Set<string>): Promise<CommitInfo[]> {
  const { reader, paths, head } = input;
  if (since === head) return [];
  const r = await commitRange(reader, head, [since]);
  if (!r.bounded) return [];
  const line = mainline(r.commits, head);
  const out: CommitInfo[] = [];
  for (const [unitHead, members] of units(r.commits, line)) {
    if (bad.has(unitHead)) continue;
    const c = members[0]!;
    if (lastgoodTarget(c.message)) continue;
    let changed = false;
    for (const m of members) if (m.parents.length < 2 && (await touches(reader, m, paths))) changed = true;
    if (changed) out.push(c);
  }
  return out.sort((a, b) => b.committer.timestamp - a.committer.timestamp);
}

/**
 * The failing image is gone from the head because lastgood's own revert removed it and the cluster
 * has not synced yet: nothing new to do.
 */
async function alreadyReverted(input: LocateInput, findings: Finding[]): Promise<Located | undefined> {
  if (!findings.some((f) => f.how === 'image' && 'absent' in f.result)) return undefined;
  const { reader, head, paths } = input;
  const newest = (await firstTouching(reader, head, paths)) ?? undefined;
  if (!newest || !lastgoodTarget(newest.message)) return undefined;
  const trailers = parseTrailers(newest.message);
  const reverted = revertedBy(newest.message);
  const restores = trailers.get('Lastgood-Restores')?.[0] ?? newest.parents[0] ?? newest.oid;
  const bad = await Promise.all(reverted.map((sha) => reader.readCommit(sha)));
  return {
    bad, later: [], lastKnownGood: restores, verified: false, how: 'image', alreadyRevertedBy: newest.oid,
    explanation: `the failing image is no longer on ${input.branch}: ${short(newest.oid)} already reverted it and the cluster has not synced yet`,
    revert: { kind: 'commits', steps: [] }, touched: [],
  };
}

async function firstTouching(reader: RepoReader, from: string, paths: string[]): Promise<CommitInfo | undefined> {
  let c: CommitInfo | undefined = await reader.readCommit(from);
  for (let n = 0; c && n < 200; n++) {
    if (await touches(reader, c, paths)) return c;
    c = c.parents[0] ? await reader.readCommit(c.parents[0]) : undefined;
  }
  return undefined;
}
