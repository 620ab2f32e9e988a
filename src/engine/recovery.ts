/**
 * Did the rollback recover production (issue 37)? A watching door (the controller) calls `recover`
 * when a target has stayed healthy for its soak at a revision: if that revision contains lastgood's
 * newest revert of the target, and the revert's recovery is not recorded yet, the target recovered
 * now. The phases (decide/recovery.ts) are recorded on the revert commit's note, once, and that
 * record is the claim of the announcements: one comment on the merged pull request, one `recovered`
 * notification (and, by the controller, one Kubernetes Event and one observation of the histogram).
 *
 * Stateless where it can be, so that a restart, another replica or the next leader agree: which
 * revert, whether and how it landed (pushed, or a request merged) and when, come from the
 * repository (audit/timeline.ts, the same reading as `lastgood log`); when the failure began comes
 * from the revert's own evidence lines. Only what a door saw as it happened is better told by it
 * (`known`: the moment it confirmed the failure and wrote the revert, and when it first saw the
 * revision applied); without it, the revert commit's time stands for both, and the healthy run's
 * start for the sync.
 *
 * "Recovered" is the first verified last-known-good at a revision containing the revert: a revert
 * whose target was already recorded healthy past it (by a run before this one, or another
 * controller) recovered then, and is not announced now.
 */
import type { Logger } from 'pino';
import type { Config, ResolvedTarget } from '../config/schema.ts';
import { failureBegan, ordered, phases, phaseSeconds, recoveryMs, recoverySentence, type RecoveryTimes } from '../decide/recovery.ts';
import type { Verdict } from '../decide/types.ts';
import { RECOVERY_TIMES, recoveryTimesOf, type RecoveryRecord } from '../history/notes.ts';
import { notifyRecovered, type RecoveryNote } from '../report/notify.ts';
import type { RepoBackend } from '../repo/types.ts';
import { readAuditLog } from '../audit/timeline.ts';
import type { RecoveredEntry, RevertEntry } from '../audit/schema.ts';
import { notifyOptions } from './effects.ts';
import { codeSpan, type MarkdownDialect } from '../revert/markup.ts';
import type { TargetOutcome } from './types.ts';
import { LastgoodError } from '../errors.ts';

/** How far back a revert is looked for when the door does not remember making it. */
const LOOK_BACK_MS = 7 * 86_400_000;
/** Before the remembered revert's time, for clocks that differ (a commit's time is the run's). */
const SLOP_MS = 3_600_000;

/** What the door that acted remembers of the revert (times in ms on its clock). */
export interface KnownRevert {
  commit: string;
  began?: number;
  confirmed?: number;
  written?: number;
}

export interface RecoverOptions {
  repo: RepoBackend;
  config: Config;
  target: ResolvedTarget;
  /** the healthy verdict at the revision, soaked */
  verdict: Verdict;
  revision: string;
  /** when the healthy run at the revision began (decide/soak.ts) */
  healthySince: number;
  /** when the door first saw the revision applied */
  syncedAt?: number;
  known?: KnownRevert;
  now: Date;
  log: Logger;
  env?: Record<string, string | undefined>;
  commitUrl?: (sha: string) => string;
}

export type Recovery =
  | { recovered: false; reason: string }
  | {
    recovered: true;
    record: RecoveryRecord;
    times: RecoveryTimes;
    /** "recovered at …, 6m12s after the failure began (detect 30s, …)" */
    sentence: string;
    /** this caller recorded it (and so announced it); false: recorded before, by a retry, a rerun or another replica */
    claimed: boolean;
    /** what the notification and the Event are about */
    outcome: TargetOutcome;
  };

export async function recover(opts: RecoverOptions): Promise<Recovery> {
  const { repo, target, log } = opts;
  const revision = await repo.resolveCommit(opts.revision);
  if (!revision) return { recovered: false, reason: `revision ${opts.revision} is not in the repository` };
  const since = new Date(opts.known?.written !== undefined ? opts.known.written - SLOP_MS : opts.now.getTime() - LOOK_BACK_MS);
  const auditLog = await readAuditLog({
    repo, branch: opts.config.repo.branch, targets: [{ name: target.name, paths: target.paths }], since, why: 'recovery', now: opts.now,
  });
  // what the log read of the target: its reverts, verified records and recoveries (no second read of the notes)
  const entries = auditLog.targets[0]?.entries ?? [];
  const reverts = entries.filter((e): e is RevertEntry => e.kind === 'revert');
  let entry: RevertEntry | undefined;
  for (const r of reverts) {
    if (r.landedAs === revision || (await repo.isAncestor(r.landedAs, revision))) {
      entry = r;
      break;
    }
  }
  if (!entry) return { recovered: false, reason: `${revision.slice(0, 12)} contains no revert of lastgood's for ${target.name}` };

  const found = entries.find((e): e is RecoveredEntry => e.kind === 'recovered' && e.revert === entry.commit);
  const recorded = found ? recordOf(target.name, found) : undefined;
  // healthy past the revert before this revision: it recovered then, unrecorded (another controller, or none watching)
  for (const v of entries) {
    if (v.kind !== 'verified' || recorded || v.commit === revision || Date.parse(v.at) < Date.parse(entry.at)) continue;
    if (v.commit === entry.landedAs || (await repo.isAncestor(entry.landedAs, v.commit))) {
      return { recovered: false, reason: `already verified healthy past ${entry.commit.slice(0, 12)} at ${v.commit.slice(0, 12)} (${v.at}): it recovered then` };
    }
  }

  const made = await repo.readCommit(entry.commit);
  const known = opts.known?.commit === entry.commit ? opts.known : undefined;
  const failedSince = entry.details.map((d) => /: (?:failed|progressing) \([^)]*\) since (\d{4}-\d\d-\d\dT[\d:.]+(?:Z|[+-]\d\d:\d\d))/.exec(d)?.[1]);
  const madeAt = made.author.timestamp * 1000;
  const writtenAt = made.committer.timestamp * 1000;
  const mode = entry.via === 'commit' ? 'commit' : 'pull-request';
  // what the engine object reporting the revision says: since when it has been in its state there
  const reporter = opts.verdict.evidence.find((e) => e.attempted?.sha && revision.startsWith(e.attempted.sha) && e.since);
  const written = known?.written ?? writtenAt;
  const merged = mode === 'pull-request' ? Date.parse(entry.at) : undefined;
  // the sync: the engine object's own time where it is one for this revision (after the revert
  // landed, not after the door first saw it: a Ready condition kept across revisions keeps its old
  // time), else when the door first saw the revision applied, else the healthy run's start
  const seen = opts.syncedAt ?? opts.healthySince;
  const own = reporter?.since ? Date.parse(reporter.since) : Number.NaN;
  const synced = !Number.isNaN(own) && own >= Math.max(written, merged ?? written) && own <= seen ? own : seen;
  let times = ordered({
    began: known?.began ?? failureBegan(failedSince) ?? madeAt,
    confirmed: known?.confirmed ?? madeAt,
    written,
    ...(merged !== undefined ? { merged } : {}),
    synced,
    healthy: opts.healthySince,
  });
  const iso = (ms: number) => new Date(ms).toISOString();
  // recorded before (by a retry, a rerun, another replica): told as recorded, announced by nobody now
  const record: RecoveryRecord = recorded ?? {
    target: target.name, revert: entry.commit, revision, mode,
    began: iso(times.began), confirmed: iso(times.confirmed), written: iso(times.written),
    ...(times.merged !== undefined ? { merged: iso(times.merged) } : {}), synced: iso(times.synced), healthy: iso(times.healthy),
  };
  if (recorded) times = recoveryTimesOf(recorded);
  const sentence = recoverySentence(times);
  const outcome: TargetOutcome = {
    name: target.name, verdict: 'healthy', summary: `${target.name} is healthy again at ${record.revision.slice(0, 12)}`, evidence: opts.verdict.evidence,
    action: 'none', reason: `${sentence}, at ${record.revision.slice(0, 12)} containing lastgood's revert ${entry.commit.slice(0, 12)}`,
    bad: entry.reverts, ...(entry.restores ? { lastKnownGood: entry.restores } : {}), commit: entry.commit,
    ...(entry.request ? { pullRequest: entry.request.url } : {}),
  };

  // the record is the claim: of two replicas (or a retry after a lost answer), one writes it
  const store = repo.notes?.();
  let claimed: boolean;
  if (recorded) claimed = false;
  else if (store?.recordRecovery) claimed = await store.recordRecovery(record);
  else if (store?.claim && entry.reverts[0]) claimed = await store.claim(entry.reverts[0], { target: target.name, effect: 'recovered', revert: entry.commit, at: opts.now.toISOString() });
  else claimed = true; // nowhere to claim: the door's own memory is the only guard (it asks once per revert)
  if (!claimed) return { recovered: true, record, times, sentence, claimed, outcome };

  if (entry.request && repo.commentOnRequest) {
    try {
      await repo.commentOnRequest(entry.request.number, recoveryComment(target.name, revision, times, sentence, repo.markdown));
    } catch (error) {
      log.warn({ target: target.name, pullRequest: entry.request.url, err: error instanceof LastgoodError ? error.message : String(error) }, 'cannot comment the recovery on the pull request');
    }
  }
  const note: RecoveryNote = {
    sentence, mode, revision, seconds: recoveryMs(times) / 1000,
    times: Object.fromEntries(RECOVERY_TIMES.flatMap((k) => (record[k] !== undefined ? [[k, record[k]]] : []))),
    phases: phaseSeconds(times),
  };
  await notifyRecovered(outcome, note, notifyOptions(opts));
  return { recovered: true, record, times, sentence, claimed, outcome };
}

/** A recovery as the log read it back, as the note records it. */
function recordOf(target: string, e: RecoveredEntry): RecoveryRecord {
  return {
    target, revert: e.revert, revision: e.revision, mode: e.mode, began: e.began, confirmed: e.confirmed, written: e.written,
    ...(e.merged ? { merged: e.merged } : {}), synced: e.synced, healthy: e.healthy,
  };
}

/** The comment on the merged pull request: one line people read, the phases as a table. */
export function recoveryComment(target: string, revision: string, times: RecoveryTimes, sentence: string, dialect?: MarkdownDialect): string {
  const rows = phases(times).map((p) => `| ${p.phase} | ${Math.round(p.ms / 1000)} s |`).join('\n');
  return `lastgood: ${codeSpan(target, dialect)} ${sentence}, at \`${revision.slice(0, 12)}\`.\n\n| phase | took |\n|---|---|\n${rows}\n`;
}
