
/**
 * Verified last-known-good records, kept in git itself as notes under refs/notes/lastgood on the
 * verified commit (`git log --notes=lastgood -- <paths>` shows the audit). One line per record:
 *
 *   lastgood verified target=<name> at=<ISO time> evidence=<one line>
 *
 * Several targets may verify the same commit: records are appended to the commit's note.
 */

import type { RecoveryTimes } from '../decide/recovery.ts';

export const NOTES_REF = 'refs/notes/lastgood';

export interface VerifiedRecord {
  commit: string;
  target: string;
  at: string;
  evidence: string;
}

/** One observation of a target at a revision, as a store records it. */
export interface Observation {
  target: string;
  at: string;
  evidence: string;
}

/**
 * A side effect of a revert done once (issue 19: the notification), claimed in the repository
 * itself so that retries, reruns and replicas agree: on the bad commit's note, one line per effect,
 *
 *   lastgood done target=<name> effect=<effect> revert=<sha> at=<ISO time>
 *
 * A claim is atomic where the notes are written under git's lock or the server's compare-and-swap:
 * of two writers, one adds the line and the other finds it.
 */
export interface Receipt {
  target: string;
  effect: string;
  /** the revert commit (or the pull request's head) it is about */
  revert: string;
  at: string;
}

export function formatReceipt(r: Receipt): string {
  const word = (s: string) => s.replace(/\s+/g, '_');
  return `lastgood done target=${word(r.target)} effect=${word(r.effect)} revert=${word(r.revert)} at=${word(r.at)}`;
}

/** Whether a note's text already holds a claim of this effect for this target (whatever its revert and time). */
export function hasReceipt(text: string, r: Pick<Receipt, 'target' | 'effect'>): boolean {
  const prefix = `lastgood done target=${r.target.replace(/\s+/g, '_')} effect=${r.effect.replace(/\s+/g, '_')} `;
  return text.split('\n').some((l) => l.startsWith(prefix));
}

/**
 * What a store did with an observation. A store that cannot keep records (no permission) says
 * so, and the run goes on unverified; `void` means recorded.
 */
export interface RecordResult {
  recorded: boolean;
  /** why not, or what happened ("already recorded") */
  reason?: string;
}

/**
 * Verified last-known-good records, wherever a backend keeps them: git notes (local and git
 * remotes), GitHub Deployments (src/deliver/github/deployments.ts). The engine reads them to bound
 * and verify a revert, and records what it observed.
 */
export interface NotesStore {
  /** Every verified record (of one target when given), newest `at` first. */
  list(target?: string): Promise<VerifiedRecord[]>;
  /** Records that the target was observed healthy at `commit`; recording the same observation twice is a no-op. */
  record(commit: string, rec: Observation): Promise<void | RecordResult>;
  /**
   * Records that the target failed at `commit`, where the store keeps failures too (GitHub: a
   * deployment status "failure"); stores of verified records only leave it out.
   */
  recordFailure?(commit: string, rec: Observation): Promise<void | RecordResult>;
  /** Where the records are kept, for people ("git notes refs/notes/lastgood", "GitHub deployments"). */
  readonly where?: string;
  /**
   * Claims a side effect of a revert, on `bad`'s note: true for exactly one caller, false when it
   * was claimed before (by a retry, a rerun or another replica).
   */
  claim?(bad: string, receipt: Receipt): Promise<boolean>;
  /**
   * Records a revert's recovery on the revert commit's note (issue 37), at most once per target and
   * revert: true for exactly one caller (the one whose line was added, under git's lock or the
   * server's compare-and-swap), false when it was recorded before. The record is the claim of the
   * recovery's announcements (the pull request's comment, the notification, the Event).
   */
  recordRecovery?(rec: RecoveryRecord): Promise<boolean>;
  /** Every recovery recorded (of one target when given), newest `healthy` first. */
  recoveries?(target?: string): Promise<RecoveryRecord[]>;
}

/**
 * A revert's recovery (decide/recovery.ts), one line on the note of the revert commit lastgood wrote:
 *
 *   lastgood recovered target=<name> revert=<sha> revision=<sha> mode=<commit|pull-request> began=<ISO> confirmed=<ISO> written=<ISO> [merged=<ISO>] synced=<ISO> healthy=<ISO>
 */
export interface RecoveryRecord {
  target: string;
  /** the commit lastgood wrote (the revert; in pull-request mode the request's head) */
  revert: string;
  /** the revision the target was healthy at (contains the revert) */
  revision: string;
  mode: 'commit' | 'pull-request';
  began: string;
  confirmed: string;
  written: string;
  merged?: string;
  synced: string;
  healthy: string;
}

export const RECOVERY_TIMES = ['began', 'confirmed', 'written', 'merged', 'synced', 'healthy'] as const;

/** A recorded recovery's times, in ms (decide/recovery.ts computes its phases). */
export function recoveryTimesOf(r: RecoveryRecord): RecoveryTimes {
  return {
    began: Date.parse(r.began), confirmed: Date.parse(r.confirmed), written: Date.parse(r.written),
    ...(r.merged ? { merged: Date.parse(r.merged) } : {}), synced: Date.parse(r.synced), healthy: Date.parse(r.healthy),
  };
}

export function formatRecovery(r: RecoveryRecord): string {
  const word = (s: string) => s.replace(/\s+/g, '_');
  const times = RECOVERY_TIMES.flatMap((k) => (r[k] !== undefined ? [`${k}=${word(r[k])}`] : []));
  return `lastgood recovered target=${word(r.target)} revert=${word(r.revert)} revision=${word(r.revision)} mode=${word(r.mode)} ${times.join(' ')}`;
}

/** The line that says a target's recovery from `revert` is recorded (whatever its times). */
export function hasRecovery(text: string, r: Pick<RecoveryRecord, 'target' | 'revert'>): boolean {
  const prefix = `lastgood recovered target=${r.target.replace(/\s+/g, '_')} revert=${r.revert} `;
  return text.split('\n').some((l) => l.startsWith(prefix));
}

/** The recovery records in one note's text (other lines, and records that do not parse, are left alone). */
export function parseRecoveries(text: string): RecoveryRecord[] {
  const out: RecoveryRecord[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('lastgood recovered ')) continue;
    const fields = new Map(line.trimEnd().slice('lastgood recovered '.length).split(' ').map((f) => [f.slice(0, f.indexOf('=')), f.slice(f.indexOf('=') + 1)] as const));
    const target = fields.get('target');
    const revert = fields.get('revert');
    const revision = fields.get('revision');
    const mode = fields.get('mode');
    if (!target || !revert || !revision || (mode !== 'commit' && mode !== 'pull-request')) continue;
    const time = (k: string) => {
      const v = fields.get(k);
      return v !== undefined && !Number.isNaN(Date.parse(v)) ? v : undefined;
    };
    const [began, confirmed, written, merged, synced, healthy] = RECOVERY_TIMES.map(time);
    if (!began || !confirmed || !written || !synced || !healthy) continue;
    out.push({ target, revert, revision, mode, began, confirmed, written, ...(merged ? { merged } : {}), synced, healthy });
  }
  return out;
}

const LINE = /^lastgood verified target=(\S+) at=(\S+) evidence=(.*)$/;

export function formatRecord(rec: { target: string; at: string; evidence: string }): string {
  const oneLine = (s: string) => s.replace(/[\r\n]+/g, ' ').trim();
  const target = oneLine(rec.target).replace(/\s+/g, '_');
  const at = oneLine(rec.at).replace(/\s+/g, '');
  return `lastgood verified target=${target} at=${at} evidence=${oneLine(rec.evidence)}`;
}

/** The records in one note's text (other lines are left alone). */
export function parseNote(commit: string, text: string): VerifiedRecord[] {
  const out: VerifiedRecord[] = [];
  for (const line of text.split('\n')) {
    const m = LINE.exec(line.trimEnd());
    if (m) out.push({ commit, target: m[1]!, at: m[2]!, evidence: m[3]! });
  }
  return out;
}

/** The newest candidate commit (candidates newest first) that has a record for the target. */
export function newestVerified(records: VerifiedRecord[], target: string, candidates: string[]): string | undefined {
  const verified = new Set(records.filter((r) => r.target === target).map((r) => r.commit));
  return candidates.find((c) => verified.has(c));
}
