import { RevertImpossible } from '../errors.ts';
import type { Evidence } from '../decide/types.ts';
import type { CommitInfo, RepoReader } from '../repo/types.ts';
import { lastgoodTarget, parseTrailers, revertedBy } from './trailers.ts';

export interface Located {
  /** the commits judged bad, newest first: these are what a revert undoes */
  bad: CommitInfo[];
  /** commits after the bad ones that also touched the target paths (not deployed, or not bad); a restore discards them too */
  later: CommitInfo[];
  /** full SHA of the last-known-good revision */
  lastKnownGood: string;
  /** true when the last-known-good was observed healthy (a verified record), false when it is the commit before the first bad one */
  verified: boolean;
  how: 'revision' | 'image';
  /** one line saying how the bad commits were found */
  explanation: string;
  /** a lastgood commit on the branch already reverts these bad commits (the sync has not caught up yet) */
  alreadyRevertedBy?: string;
}

export interface LocateInput {
  reader: RepoReader;
  branch: string;
  head: string;
  paths: string[];
  evidence: Evidence[];
  /** how far back to look for an image (commits touching the target paths) */
  searchLimit?: number;
}

/**
 * Finds the bad commit(s) and the last-known-good: from the revision the GitOps engine reports
 * (Flux lastAttemptedRevision/lastAppliedRevision, Argo CD sync revision, Kargo commit), else by
 * matching the failing workloads' images to the target paths' history. Throws RevertImpossible
 * with the reason when it cannot name the bad commit with confidence.
 */
export async function locate(input: LocateInput): Promise<Located> {
  const failing = input.evidence.filter((e) => e.state === 'failed' || e.state === 'progressing');
  const reporting = [...failing, ...input.evidence].find((e) => e.attempted?.sha);
  if (reporting?.attempted?.sha) return locateByRevision(input, reporting);
  const images = unique(failing.flatMap((e) => e.attempted?.images ?? []));
  if (images.length > 0) return locateByImage(input, images);
  throw new RevertImpossible(
    'cannot tell which commit is bad: no object of the target reports a git revision, and no failing workload names an image',
    ['add the Flux Kustomization / Argo CD Application that applies the target, or the failing Deployment, to the target\'s resources'],
  );
}

async function locateByRevision(input: LocateInput, e: Evidence): Promise<Located> {
  const { reader, paths, head } = input;
  const attemptedRaw = e.attempted!.sha!;
  const attempted = await reader.resolveCommit(attemptedRaw);
  if (!attempted) throw new RevertImpossible(`${e.kind} ${e.namespace ?? ''}/${e.name} attempts revision ${e.attempted!.raw ?? attemptedRaw}, which is not in the repository`);
  if (!(await reader.isAncestor(attempted, head))) {
    throw new RevertImpossible(`the attempted revision ${attempted} is not on branch ${input.branch}`);
  }
  const appliedRaw = e.lastSucceeded?.sha;
  const applied = appliedRaw ? await reader.resolveCommit(appliedRaw) : undefined;
  const usable = applied && applied !== attempted && (await reader.isAncestor(applied, attempted)) ? applied : undefined;
  const range = await reader.commitsTouching(attempted, paths, usable ? { stop: usable } : { limit: 1 });
  refuseRevertOfRevert(range);
  const bad = range;
  if (bad.length === 0) {
    throw new RevertImpossible(
      usable
        ? `no commit between the applied revision ${usable.slice(0, 12)} and the attempted ${attempted.slice(0, 12)} touched the target paths: the failure does not come from this target's files`
        : `no commit up to the attempted revision ${attempted.slice(0, 12)} touched the target paths`,
    );
  }
  const later = (await reader.commitsTouching(head, paths, { stop: attempted })).filter((c) => !lastgoodTarget(c.message));
  const oldest = bad[bad.length - 1]!;
  const lkg = oldest.parents[0];
  if (!lkg) throw new RevertImpossible(`the bad commit ${oldest.oid} is the first commit of the repository: there is nothing to go back to`);
  const ref = `${e.kind} ${e.namespace ? `${e.namespace}/` : ''}${e.name}`;
  return {
    bad, later, lastKnownGood: lkg, verified: false, how: 'revision',
    explanation: usable
      ? `${ref} attempted ${attempted.slice(0, 12)} after applying ${usable.slice(0, 12)}; ${bad.length} commit${bad.length === 1 ? '' : 's'} in between touched the target paths`
      : `${ref} attempted ${attempted.slice(0, 12)}; no applied revision is reported, so the newest commit up to it that touched the target paths is taken as bad`,
  };
}

/** A commit that lastgood itself made is never reverted: when it is the one that failed, say so. */
function refuseRevertOfRevert(range: CommitInfo[]): void {
  const newest = range[0];
  if (newest && lastgoodTarget(newest.message)) {
    throw new RevertImpossible(`the revert itself failed: ${newest.oid} is a lastgood revert (no revert of a revert); a person must look`);
  }
  const idx = range.findIndex((c) => lastgoodTarget(c.message));
  if (idx > 0) range.splice(idx); // only the commits after lastgood's own revert are candidates
}

async function locateByImage(input: LocateInput, images: string[]): Promise<Located> {
  const { reader, head, paths } = input;
  const history = await reader.commitsTouching(head, paths, { limit: input.searchLimit ?? 200 });
  const contains = new Map<string, boolean>();
  const hasImage = async (commit: string | undefined): Promise<boolean> => {
    if (!commit) return false;
    const known = contains.get(commit);
    if (known !== undefined) return known;
    const files = await reader.listFiles(commit, paths);
    let found = false;
    for (const entry of files.values()) {
      const text = Buffer.from(await reader.readBlob(entry.oid)).toString('utf8');
      if (images.some((image) => mentionsImage(text, image))) { found = true; break; }
    }
    contains.set(commit, found);
    return found;
  };
  // Newest first: the introducing commit is the oldest of the run of commits that mention the image.
  let introducer: CommitInfo | undefined;
  for (const commit of history) {
    if (!(await hasImage(commit.oid))) break;
    introducer = commit;
  }
  const newest = history[0];
  if (!introducer && newest && lastgoodTarget(newest.message)) {
    // The image is gone from the branch because lastgood's own revert removed it: nothing new to do.
    const trailers = parseTrailers(newest.message);
    const reverted = revertedBy(newest.message);
    const restores = trailers.get('Lastgood-Restores')?.[0] ?? newest.parents[0] ?? newest.oid;
    const bad = await Promise.all(reverted.map((sha) => reader.readCommit(sha)));
    return {
      bad, later: [], lastKnownGood: restores, verified: false, how: 'image', alreadyRevertedBy: newest.oid,
      explanation: `the failing image is no longer on ${input.branch}: ${newest.oid.slice(0, 12)} already reverted it and the cluster has not synced yet`,
    };
  }
  if (!introducer) {
    throw new RevertImpossible(`the failing image${images.length > 1 ? 's' : ''} ${images.join(', ')} ${images.length > 1 ? 'are' : 'is'} not in the target paths at the head of ${input.branch}: nothing to revert`);
  }
  if (await hasImage(introducer.parents[0])) {
    throw new RevertImpossible(`the failing image ${images.join(', ')} is older than the ${history.length} commits searched: cannot name the commit that introduced it`);
  }
  if (lastgoodTarget(introducer.message)) {
    throw new RevertImpossible(`the revert itself failed: ${introducer.oid} is a lastgood revert (no revert of a revert); a person must look`);
  }
  const lkg = introducer.parents[0];
  if (!lkg) throw new RevertImpossible(`the bad commit ${introducer.oid} is the first commit of the repository: there is nothing to go back to`);
  const later = history.slice(0, history.indexOf(introducer)).filter((c) => !lastgoodTarget(c.message));
  return {
    bad: [introducer], later, lastKnownGood: lkg, verified: false, how: 'image',
    explanation: `no object reports a git revision; ${introducer.oid.slice(0, 12)} is the commit that introduced the failing image ${images.join(', ')} into the target paths`,
  };
}

/**
 * True when a manifest mentions the image: the full reference, or (kustomize `images:` and Helm
 * values split it) the image's name and its tag/digest as separate words.
 */
export function mentionsImage(text: string, image: string): boolean {
  if (text.includes(image)) return true;
  const at = image.indexOf('@');
  const colon = image.lastIndexOf(':');
  const slash = image.lastIndexOf('/');
  let name = image;
  let version = '';
  if (at >= 0) { name = image.slice(0, at); version = image.slice(at + 1); }
  else if (colon > slash) { name = image.slice(0, colon); version = image.slice(colon + 1); }
  if (!version || version === 'latest') return false;
  const shortName = name.slice(name.lastIndexOf('/') + 1);
  const word = (w: string) => new RegExp(`(^|[^A-Za-z0-9_.-])${w.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}($|[^A-Za-z0-9_.-])`).test(text);
  return word(version) && (text.includes(name) || word(shortName));
}

function unique<T>(xs: T[]): T[] {
  return [...new Set(xs)];
}
