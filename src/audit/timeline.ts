/**
 * `lastgood log`: what lastgood did to each target, read back from the repository (issue 24). It
 * only reads, through the RepoBackend port, so it runs in CI with read-only credentials:
 *
 * - the branch's first-parent line, newest first, back to `since` (the window) and never more than
 *   `limit` commits (a repository of 100,000 commits answers in seconds: the cost is the window's,
 *   not the history's). The first-parent line is the branch as it moved: each commit on it is one
 *   push or one merge, which is how a revert reaches the branch (pushed, or a request merged);
 * - each commit carrying `Lastgood-Target` (DESIGN.md trailers) is a revert; a merged request's
 *   merge or squash commit is its revert landing; and, on a host lastgood opens no requests on, a
 *   merge whose second parent is a lastgood commit;
 * - whether each revert still holds, from the commits after it: a person's `git revert` of it, or
 *   the first change of the target paths after it when it sets them back to what the revert
 *   removed (undone); a later lastgood revert of the target (superseded); otherwise that first
 *   change is a later release (found by bisection: a few reads per revert, not one per commit);
 * - the requests lastgood opened (RepoBackend.reviewRequests: GitHub, the merge-request hosts) and
 *   their state, or its review branches where the host has no request API (RepoBackend.branches);
 * - the verified last-known-good records (NotesStore: git notes, GitHub deployments);
 * - the recoveries the controller recorded (engine/recovery.ts: the target healthy again at a revert, with its phases).
 */
import { LastgoodError, RemoteError } from '../errors.ts';
import { NOTES_REF, recoveryTimesOf, type NotesStore } from '../history/notes.ts';
import { phaseSeconds, recoveryMs } from '../decide/recovery.ts';
import type { CommitInfo, RepoBackend, ReviewState } from '../repo/types.ts';
import { parseRevertMessage, revertsNamed, type RevertRecord } from './record.ts';
import { LOG_SCHEMA_ID, type AuditLog, type Entry, type Holds, type PersonRevertEntry, type RecoveredEntry, type RequestEntry, type RevertEntry, type TargetLog, type VerifiedEntry } from './schema.ts';

/**
 * The most first-parent commits one log reads, and the window without --since: a week answers
 * "what did the robot do last night, and does it still hold" on a busy repository (a commit every
 * ten minutes is 1,008 a week) in seconds; the limit bounds a --since that reaches far back
 * (`npm run bench -- --only log`: a local repository reads a few hundred to a few thousand commits
 * a second through isomorphic-git, native git tens of thousands).
 */
export const LOG_COMMIT_LIMIT = 5_000;
export const DEFAULT_SINCE_DAYS = 7;
/** Commits older than `since` read before the walk stops: a commit's time may be out of order (a rebase, a skewed clock; git's SLOP). */
const SLOP = 5;
/** Where lastgood's review branches live (src/deliver/branch.ts). */
const REVIEW_PREFIX = 'lastgood/';

export interface AuditOptions {
  repo: RepoBackend;
  branch: string;
  targets: Array<{ name: string; paths: string[] }>;
  since: Date;
  /** where `since` comes from, for people ("--since 7d", "default: the last 30 days") */
  why: string;
  now: Date;
  limit?: number;
}

/** A request as the log sees it: the host's (with a number) or a review branch (without one). */
interface FoundRequest {
  noun: string;
  number?: number;
  url?: string;
  branch: string;
  head?: string;
  title?: string;
  state: ReviewState;
  createdAt: string;
  mergedAt?: string;
  closedAt?: string;
  mergeCommit?: string;
  /** what its head commit says (a lastgood commit) */
  record?: RevertRecord;
  headCommit?: CommitInfo;
}

/** A revert on the branch: the lastgood commit, the commit of the branch that brought it, and how. */
interface Landing {
  commit: CommitInfo;
  landed: CommitInfo;
  /** index of `landed` in the first-parent line (newest first) */
  index: number;
  record: RevertRecord;
  via: RevertEntry['via'];
  request?: FoundRequest;
}

const iso = (seconds: number) => new Date(seconds * 1000).toISOString();
const isoOf = (text: string) => new Date(Date.parse(text)).toISOString();
const personOf = (c: CommitInfo) => `${c.author.name} <${c.author.email}>`;
const subjectOf = (c: CommitInfo) => c.message.split('\n')[0]!.trim();

export async function readAuditLog(opts: AuditOptions): Promise<AuditLog> {
  const { repo, branch } = opts;
  const limit = opts.limit ?? LOG_COMMIT_LIMIT;
  const since = Math.floor(opts.since.getTime() / 1000);
  const head = await repo.head(branch);
  const scan = await scanFirstParents(repo, head, since, limit);
  const notes: string[] = [];
  const requests = await findRequests(opts, head, notes);
  const url = (sha: string) => repo.commitUrl?.(sha) ?? null;

  // the reverts on the branch, newest first (the line's order)
  const headOf = new Map<string, FoundRequest>();
  const mergedAs = new Map<string, FoundRequest>();
  for (const r of requests) {
    if (r.head) headOf.set(r.head, r);
    if (r.state === 'merged' && r.mergeCommit) mergedAs.set(r.mergeCommit, r);
  }
  const landings: Landing[] = [];
  const landingAt = new Map<string, Landing>();
  for (const [index, c] of scan.line.entries()) {
    if (c.committer.timestamp < since) continue;
    const landing = await landingOf(repo, c, index, headOf, mergedAs);
    if (landing) {
      landings.push(landing);
      landingAt.set(c.oid, landing);
    }
  }

  const store = repo.notes?.();
  const targets: TargetLog[] = [];
  for (const target of opts.targets) {
    const entries: Entry[] = [];
    const keys = pathKeys(repo, target.paths);
    for (const landing of landings.filter((l) => l.record.target === target.name)) {
      const holds = await holdsOf(landing, scan.line, landingAt, keys);
      entries.push(revertEntry(landing, holds.holds, url));
      if (holds.person) entries.push({ ...holds.person, url: url(holds.person.commit) });
    }
    for (const r of requests) {
      const rest = r.branch.slice(`${REVIEW_PREFIX}${target.name}/`.length);
      if (!r.branch.startsWith(`${REVIEW_PREFIX}${target.name}/`) || rest.includes('/')) continue;
      entries.push(requestEntry(r));
    }
    if (store) entries.push(...(await verifiedEntries(store, target.name, opts.since, notes, url)));
    if (store?.recoveries) entries.push(...(await recoveredEntries(store, target.name, opts.since, notes, url)));
    entries.sort(newestFirst);
    targets.push({ name: target.name, paths: target.paths, entries });
  }

  return {
    $schema: LOG_SCHEMA_ID,
    repository: repo.description,
    branch,
    head,
    window: {
      since: opts.since.toISOString(), until: opts.now.toISOString(), why: opts.why, commitsRead: scan.line.length, limit,
      stoppedBy: scan.stoppedBy, oldestRead: scan.line.length ? iso(scan.line[scan.line.length - 1]!.committer.timestamp) : null,
    },
    notes,
    targets,
  };
}

/** The first-parent line from `head`, newest first, until `since` (with slop), the root, or `limit` commits. */
async function scanFirstParents(repo: RepoBackend, head: string, since: number, limit: number): Promise<{ line: CommitInfo[]; stoppedBy: 'since' | 'limit' | 'root' }> {
  const line: CommitInfo[] = [];
  let older = 0;
  for (let oid: string | undefined = head; oid; ) {
    if (line.length >= limit) return { line, stoppedBy: 'limit' };
    const c: CommitInfo = await repo.readCommit(oid);
    line.push(c);
    older = c.committer.timestamp < since ? older + 1 : 0;
    if (older > SLOP) return { line, stoppedBy: 'since' };
    oid = c.parents[0];
  }
  return { line, stoppedBy: older > 0 ? 'since' : 'root' };
}

/** The requests lastgood opened (any state), or its review branches on a host without a request API. */
async function findRequests(opts: AuditOptions, head: string, notes: string[]): Promise<FoundRequest[]> {
  const { repo } = opts;
  const out: FoundRequest[] = [];
  if (repo.reviewRequests) {
    try {
      for (const r of await repo.reviewRequests({ base: opts.branch, branchPrefix: REVIEW_PREFIX, since: opts.since })) out.push({ ...r });
    } catch (error) {
      // a token that may read the code but not the requests: the log says what it could not read
      if (!(error instanceof RemoteError) || (error.status !== 403 && error.status !== 404)) throw error;
      notes.push(`the requests lastgood opened were not read: ${error.message}`);
    }
  } else if (repo.branches) {
    for (const [branch, tip] of await repo.branches(REVIEW_PREFIX)) {
      const c = await repo.readCommit(tip);
      const merged = await repo.isAncestor(tip, head);
      if (merged && c.committer.timestamp < Math.floor(opts.since.getTime() / 1000)) continue;
      out.push({ noun: 'branch', branch, head: tip, title: subjectOf(c), state: merged ? 'merged' : 'open', createdAt: iso(c.committer.timestamp), headCommit: c });
    }
  }
  for (const r of out) {
    if (!r.head) continue;
    try {
      r.headCommit ??= await repo.readCommit(r.head);
      r.record = parseRevertMessage(r.headCommit.message);
    } catch (error) {
      // a head the host no longer serves (a deleted branch on a git host): the request is listed without its trailers
      if (!(error instanceof LastgoodError)) throw error;
    }
  }
  return out;
}

/** Whether the branch commit `c` brings a lastgood revert: itself, a merged request, a merge of a review branch. */
async function landingOf(repo: RepoBackend, c: CommitInfo, index: number, headOf: Map<string, FoundRequest>, mergedAs: Map<string, FoundRequest>): Promise<Landing | undefined> {
  const own = parseRevertMessage(c.message);
  const request = headOf.get(c.oid) ?? mergedAs.get(c.oid);
  if (own) return { commit: c, landed: c, index, record: own, via: request ? 'request' : 'commit', ...(request ? { request } : {}) };
  if (request?.record && request.headCommit) return { commit: request.headCommit, landed: c, index, record: request.record, via: 'request', request };
  const second = c.parents[1];
  if (!second) return undefined;
  const merged = headOf.get(second);
  if (merged?.record && merged.headCommit) {
    // a review branch (no request API) merged by a person is a merge; a host's request, its request
    return merged.number === undefined ? { commit: merged.headCommit, landed: c, index, record: merged.record, via: 'merge' } : { commit: merged.headCommit, landed: c, index, record: merged.record, via: 'request', request: merged };
  }
  // a host with a request API told every request above; elsewhere a merge's second parent is read (one commit)
  if (repo.reviewRequests) return undefined;
  const inner = await repo.readCommit(second).catch((error: unknown) => {
    if (error instanceof LastgoodError) return undefined;
    throw error;
  });
  const record = inner ? parseRevertMessage(inner.message) : undefined;
  return inner && record ? { commit: inner, landed: c, index, record, via: 'merge' } : undefined;
}

/** The state of a target's paths at a commit, as one comparable string (cached: each commit is asked once per target). */
function pathKeys(repo: RepoBackend, paths: string[]) {
  const cache = new Map<string, string>();
  return async (commit: CommitInfo): Promise<string> => {
    let key = cache.get(commit.oid);
    if (key === undefined) {
      key = (await Promise.all(paths.map((p) => repo.pathOid(commit.oid, p)))).map((o) => o ?? '-').join(' ');
      cache.set(commit.oid, key);
    }
    return key;
  };
}

/**
 * Whether a revert still holds, from the branch's commits after it: a later lastgood revert of the
 * target supersedes it; a commit that `git revert`s it undoes it (both from the messages, already
 * read). Otherwise the target's paths decide: as it left them at the head, it holds (one read);
 * else the first commit after it that changed them is found by bisection over the first-parent
 * line (a few reads, not one per commit: a change that was changed back in between is not seen,
 * as `git log` with a path would not show it either), and it undid the revert when it set the
 * paths back to what the revert removed (a person's revert, listed as its own entry), or is a
 * later release of the target.
 */
async function holdsOf(landing: Landing, line: CommitInfo[], landingAt: Map<string, Landing>, keyAt: ReturnType<typeof pathKeys>): Promise<{ holds: Holds; person?: Omit<PersonRevertEntry, 'url'> }> {
  const ended = (state: Holds['state'], c: CommitInfo): Holds => ({ state, commit: c.oid, at: iso(c.committer.timestamp), author: personOf(c), subject: subjectOf(c) });
  const person = (c: CommitInfo, how: PersonRevertEntry['how']) => ({
    holds: ended('undone', c),
    person: { kind: 'person-revert' as const, at: iso(c.committer.timestamp), commit: c.oid, author: personOf(c), subject: subjectOf(c), undid: landing.commit.oid, how },
  });
  for (let i = landing.index - 1; i >= 0; i--) {
    const c = line[i]!;
    const other = landingAt.get(c.oid);
    if (other && other.record.target === landing.record.target) return { holds: ended('superseded', c) };
    if (!other && revertsNamed(c.message).some((s) => landing.commit.oid.startsWith(s) || landing.landed.oid.startsWith(s))) return person(c, 'git revert');
  }
  const after = await keyAt(landing.landed);
  if (landing.index === 0 || (await keyAt(line[0]!)) === after) return { holds: { state: 'holds', commit: null, at: null, author: null, subject: null } };
  // line[older] still has the paths as the revert left them, line[newer] does not: bisect to the first change
  let older = landing.index;
  let newer = 0;
  while (older - newer > 1) {
    const mid = (older + newer) >> 1;
    if ((await keyAt(line[mid]!)) === after) older = mid;
    else newer = mid;
  }
  const first = line[newer]!;
  const parent = line[landing.index + 1]?.oid === landing.landed.parents[0] ? line[landing.index + 1] : undefined;
  if (parent && !landingAt.has(first.oid) && (await keyAt(first)) === (await keyAt(parent))) return person(first, 'content');
  return { holds: ended('released-since', first) };
}

function revertEntry(l: Landing, holds: Holds, url: (sha: string) => string | null): RevertEntry {
  const r = l.record;
  return {
    kind: 'revert', at: iso(l.landed.committer.timestamp), commit: l.commit.oid, landedAs: l.landed.oid, via: l.via,
    request: l.request?.number !== undefined && l.request.url ? { noun: l.request.noun, number: l.request.number, url: l.request.url } : null,
    subject: r.subject, strategy: r.strategy ?? null, verdict: r.verdict ?? null, class: r.class ?? null, reverts: r.reverts, restores: r.restores ?? null,
    lastKnownGoodVerified: r.verified ?? null, evidence: r.evidence, details: r.details, reason: r.reason ?? null,
    url: l.request?.url && l.via === 'request' ? url(l.landed.oid) : url(l.commit.oid), holds,
  };
}

function requestEntry(r: FoundRequest): RequestEntry {
  return {
    kind: 'request', at: isoOf(r.createdAt), noun: r.noun, number: r.number ?? null, url: r.url ?? null, branch: r.branch, head: r.head ?? null,
    title: r.title ?? null, state: r.state, mergedAt: r.mergedAt ? isoOf(r.mergedAt) : null, closedAt: r.closedAt ? isoOf(r.closedAt) : null,
    mergeCommit: r.mergeCommit ?? null, class: r.record?.class ?? null, reverts: r.record?.reverts ?? [], restores: r.record?.restores ?? null,
    evidence: r.record?.evidence ?? [],
  };
}

async function verifiedEntries(store: NotesStore, target: string, since: Date, notes: string[], url: (sha: string) => string | null): Promise<VerifiedEntry[]> {
  let records;
  try {
    records = await store.list(target);
  } catch (error) {
    if (!(error instanceof RemoteError) || (error.status !== 403 && error.status !== 404)) throw error;
    notes.push(`the verified records (${store.where ?? `git notes ${NOTES_REF}`}) were not read: ${error.message}`);
    return [];
  }
  // the local store does not name itself: it is git notes
  const where = store.where ?? `git notes ${NOTES_REF}`;
  return records
    .filter((r) => Date.parse(r.at) >= since.getTime())
    .map((r) => ({ kind: 'verified' as const, at: isoOf(r.at), commit: r.commit, evidence: r.evidence, where, url: url(r.commit) }));
}

/** The recoveries the controller recorded on lastgood's reverts (history/notes.ts RecoveryRecord), in the window. */
async function recoveredEntries(store: NotesStore, target: string, since: Date, notes: string[], url: (sha: string) => string | null): Promise<RecoveredEntry[]> {
  let records;
  try {
    records = await store.recoveries!(target);
  } catch (error) {
    if (!(error instanceof RemoteError) || (error.status !== 403 && error.status !== 404)) throw error;
    notes.push(`the recovery records (${store.where ?? `git notes ${NOTES_REF}`}) were not read: ${error.message}`);
    return [];
  }
  return records
    .filter((r) => Date.parse(r.healthy) >= since.getTime())
    .map((r) => {
      const times = recoveryTimesOf(r);
      return {
        kind: 'recovered' as const, at: isoOf(r.healthy), revert: r.revert, revision: r.revision, mode: r.mode,
        began: isoOf(r.began), confirmed: isoOf(r.confirmed), written: isoOf(r.written), merged: r.merged ? isoOf(r.merged) : null,
        synced: isoOf(r.synced), healthy: isoOf(r.healthy), seconds: recoveryMs(times) / 1000,
        phases: phaseSeconds(times), url: url(r.revision),
      };
    });
}

const KIND_ORDER: Record<Entry['kind'], number> = { 'person-revert': 0, recovered: 1, revert: 2, request: 3, verified: 4 };

function newestFirst(a: Entry, b: Entry): number {
  if (a.at !== b.at) return a.at < b.at ? 1 : -1;
  if (a.kind !== b.kind) return KIND_ORDER[a.kind] - KIND_ORDER[b.kind];
  const key = (e: Entry) => ('commit' in e ? e.commit : 'revert' in e ? e.revert : e.branch);
  return key(a) < key(b) ? -1 : 1;
}

/** `--since 7d|36h|ISO`: a duration back from now, or a time. */
export function sinceFrom(value: string | undefined, now: Date, parse: { duration(s: string): number | undefined; time(s: string): number | undefined }): { since: Date; why: string } | { error: string } {
  if (value === undefined) return { since: new Date(now.getTime() - DEFAULT_SINCE_DAYS * 86_400_000), why: `default: the last ${DEFAULT_SINCE_DAYS} days` };
  const ms = parse.duration(value);
  if (ms !== undefined) return { since: new Date(now.getTime() - ms), why: `--since ${value}` };
  const t = parse.time(value);
  if (t !== undefined) return { since: new Date(t), why: `--since ${value}` };
  return { error: `--since ${JSON.stringify(value)}: not a duration (7d, 36h, 90m) nor an ISO 8601 time` };
}
