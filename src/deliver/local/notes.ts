import nodeFs from 'node:fs';
import git from 'isomorphic-git';
import { formatReceipt, formatRecord, formatRecovery, hasReceipt, hasRecovery, NOTES_REF, parseNote, parseRecoveries, type NotesStore, type RecoveryRecord, type VerifiedRecord } from '../../history/notes.ts';
import type { Person } from '../../repo/types.ts';
import { objectWritingFs, readRef, RefLock } from './refs.ts';
import { diskError } from '../../errors.ts';

/** Verified last-known-good records as git notes in a repository on disk (the local and git-remote backends). */

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
 * `refs/notes/lastgood.lock` with git's own ref lock protocol (src/deliver/local/refs.ts): the new notes
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

  /** Appends `line` to `commit`'s note under the lock; false when the note already has it (or `present` says so). */
  async function write(commit: string, line: string, present?: (text: string) => boolean): Promise<boolean> {
    try {
      return await writeLocked(commit, line, present);
    } catch (error) {
      // the machine's disk (full, read-only): said as such, with the folder; the notes ref did not move
      throw diskError(error, gitdir, `the notes ${NOTES_REF}`) ?? error;
    }
  }

  async function writeLocked(commit: string, line: string, present: (text: string) => boolean = (text) => text.split('\n').some((l) => l.trimEnd() === line)): Promise<boolean> {
    const lock = await RefLock.acquire(gitdir, NOTES_REF, { label: 'notes', timeoutMs: opts.lockTimeoutMs ?? 10_000 });
    try {
      const parent = await lock.current();
      const notes = parent ? await readNotesTree(parent) : new Map<string, string>();
      const existing = notes.get(commit);
      const before = existing ? await readText(existing) : '';
      if (present(before)) return false;
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
      return true;
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
    async claim(bad, receipt) {
      if (!/^[0-9a-f]{40}([0-9a-f]{24})?$/.test(bad)) throw new TypeError(`claim: not a full commit SHA: ${bad}`);
      return write(bad, formatReceipt(receipt), (text) => hasReceipt(text, receipt));
    },
    async recordRecovery(rec) {
      if (!/^[0-9a-f]{40}([0-9a-f]{24})?$/.test(rec.revert)) throw new TypeError(`recordRecovery: not a full commit SHA: ${rec.revert}`);
      return write(rec.revert, formatRecovery(rec), (text) => hasRecovery(text, rec));
    },
    async recoveries(target) {
      const head = await currentRef();
      if (!head) return [];
      const out: RecoveryRecord[] = [];
      for (const [, blob] of await readNotesTree(head)) {
        for (const rec of parseRecoveries(await readText(blob))) if (target === undefined || rec.target === target) out.push(rec);
      }
      return out.sort((a, b) => (a.healthy === b.healthy ? a.revert.localeCompare(b.revert) : a.healthy < b.healthy ? 1 : -1));
    },
  };
}
