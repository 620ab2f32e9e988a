
/**
 * Verified last-known-good records, kept in git itself as notes under refs/notes/lastgood on the
 * verified commit (`git log --notes=lastgood -- <paths>` shows the audit). One line per record:
 *
 *   lastgood verified target=<name> at=<ISO time> evidence=<one line>
 *
 * Several targets may verify the same commit: records are appended to the commit's note.
 */

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
 * remotes), GitHub Deployments (src/deliver/github-deployments.ts). The engine reads them to bound
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
