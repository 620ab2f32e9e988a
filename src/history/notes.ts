import nodeFs from 'node:fs';
import git from 'isomorphic-git';
import { objectWritingFs, readRef, RefLock } from '../deliver/refs.ts';
import type { Person } from '../repo/types.ts';

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

type Fs = typeof import('node:fs');

export interface LocalNotesOptions {
  fs: Fs;
  /** the working tree, when there is one */
  dir?: string;
  gitdir: string;
  /** who writes the notes commits (default "lastgood <lastgood@localhost>") */
  author?: Omit<Person, 'timestamp' | 'timezoneOffset'>;
  /** how long to wait for another writer's lock before giving up (default 10 s) */
  lockTimeoutMs?: number;
}

/**
 * A notes store on a local repository (working copy or bare). Writers serialize on the lock file
 * `refs/notes/lastgood.lock` with git's own ref lock protocol (src/deliver/refs.ts): the new notes
 * commit is written on top of the ref's value read under the lock, and the lock file, holding the
 * new value, is renamed over the ref. Native git (`git notes --ref=lastgood add`) takes the same
 * lock, so it and lastgood never lose each other's notes either. The ref is read strictly: a
 * broken notes ref is refused, never read around.
 */
export function openLocalNotes(opts: LocalNotesOptions): NotesStore {
  const { fs, gitdir } = opts;
  const cache = {};
  // objects are written whole on the real file system (refs.ts); another fs is used as given
  const objectFs = fs === nodeFs ? objectWritingFs(gitdir) : fs;
  const who = opts.author ?? { name: 'lastgood', email: 'lastgood@localhost' };

  const currentRef = () => readRef(gitdir, NOTES_REF);

  /** The notes tree as commit → note blob oid, reading git's fan-out layout (ab/cdef…) too. */
  async function readNotesTree(notesCommit: string): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    const { commit } = await git.readCommit({ fs, gitdir, oid: notesCommit, cache });
    const walk = async (treeOid: string, prefix: string): Promise<void> => {
      const { tree } = await git.readTree({ fs, gitdir, oid: treeOid, cache });
      for (const e of tree) {
        if (e.type === 'tree') await walk(e.oid, prefix + e.path);
        else if (e.type === 'blob' && /^[0-9a-f]+$/.test(prefix + e.path)) out.set(prefix + e.path, e.oid);
      }
    };
    await walk(commit.tree, '');
    return out;
  }

  async function readText(oid: string): Promise<string> {
    return Buffer.from((await git.readBlob({ fs, gitdir, oid, cache })).blob).toString('utf8');
  }

  async function write(commit: string, line: string): Promise<void> {
    const lock = await RefLock.acquire(gitdir, NOTES_REF, { label: 'notes', timeoutMs: opts.lockTimeoutMs ?? 10_000 });
    try {
      const parent = await lock.current();
      const notes = parent ? await readNotesTree(parent) : new Map<string, string>();
      const existing = notes.get(commit);
      const before = existing ? await readText(existing) : '';
      if (before.split('\n').some((l) => l.trimEnd() === line)) return;
      const text = `${before}${before && !before.endsWith('\n') ? '\n' : ''}${line}\n`;
      notes.set(commit, await git.writeBlob({ fs: objectFs, gitdir, blob: Buffer.from(text, 'utf8') }));
      // a flat notes tree: git reads any fan-out, and rewrites its own when it needs to
      const tree = await git.writeTree({
        fs: objectFs,
        gitdir,
        tree: [...notes].sort(([a], [b]) => (a < b ? -1 : 1)).map(([name, oid]) => ({ path: name, oid, mode: '100644', type: 'blob' as const })),
      });
      const now = { ...who, timestamp: Math.floor(Date.now() / 1000), timezoneOffset: 0 };
      const notesCommit = await git.writeCommit({
        fs: objectFs,
        gitdir,
        commit: { tree, parent: parent ? [parent] : [], author: now, committer: now, message: `Notes added by 'lastgood'\n` },
      });
      await lock.commit(notesCommit, parent);
    } finally {
      await lock.release();
    }
  }

  return {
    async list(target) {
      const head = await currentRef();
      if (!head) return [];
      const out: VerifiedRecord[] = [];
      for (const [commit, blob] of await readNotesTree(head)) {
        for (const rec of parseNote(commit, await readText(blob))) if (target === undefined || rec.target === target) out.push(rec);
      }
      return out.sort((a, b) => (a.at === b.at ? a.commit.localeCompare(b.commit) : a.at < b.at ? 1 : -1));
    },
    async record(commit, rec) {
      if (!/^[0-9a-f]{40}([0-9a-f]{24})?$/.test(commit)) throw new TypeError(`record: not a full commit SHA: ${commit}`);
      await write(commit, formatRecord(rec));
    },
  };
}
