import { randomInt } from 'node:crypto';
import path from 'node:path';
import git from 'isomorphic-git';
import { RemoteError } from '../errors.ts';
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

export interface NotesStore {
  /** Every record (of one target when given), newest `at` first. */
  list(target?: string): Promise<VerifiedRecord[]>;
  /** Appends a record to the note of `commit`; recording the same line twice is a no-op. */
  record(commit: string, rec: { target: string; at: string; evidence: string }): Promise<void>;
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
 * `refs/notes/lastgood.lock`, created with O_EXCL exactly as git itself does for a ref update: the
 * new notes commit is written on top of the ref's current value, the new value goes into the lock
 * file, and the lock file is renamed over the ref. Native git (`git notes --ref=lastgood add`)
 * takes the same lock, so it and lastgood never lose each other's notes either.
 */
export function openLocalNotes(opts: LocalNotesOptions): NotesStore {
  const { fs, gitdir } = opts;
  const cache = {};
  const refFile = path.join(gitdir, ...NOTES_REF.split('/'));
  const lockFile = `${refFile}.lock`;
  const who = opts.author ?? { name: 'lastgood', email: 'lastgood@localhost' };

  async function currentRef(): Promise<string | undefined> {
    try {
      return await git.resolveRef({ fs, gitdir, ref: NOTES_REF });
    } catch {
      return undefined;
    }
  }

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

  async function lock(): Promise<void> {
    const deadline = Date.now() + (opts.lockTimeoutMs ?? 10_000);
    await fs.promises.mkdir(path.dirname(lockFile), { recursive: true });
    for (let attempt = 0; ; attempt++) {
      try {
        const handle = await fs.promises.open(lockFile, 'wx');
        await handle.close();
        return;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw new RemoteError('git', `cannot create ${lockFile}`, { cause: error });
        if (Date.now() > deadline) {
          throw new RemoteError('git', `another process holds ${lockFile}; if no git or lastgood process is running, remove it`, { cause: error });
        }
        await new Promise((resolve) => setTimeout(resolve, Math.min(200, 5 * 2 ** Math.min(attempt, 5)) + randomInt(10)));
      }
    }
  }

  async function write(commit: string, line: string): Promise<void> {
    await lock();
    let renamed = false;
    try {
      const parent = await currentRef();
      const notes = parent ? await readNotesTree(parent) : new Map<string, string>();
      const existing = notes.get(commit);
      const before = existing ? await readText(existing) : '';
      if (before.split('\n').some((l) => l.trimEnd() === line)) return;
      const text = `${before}${before && !before.endsWith('\n') ? '\n' : ''}${line}\n`;
      notes.set(commit, await git.writeBlob({ fs, gitdir, blob: Buffer.from(text, 'utf8') }));
      // a flat notes tree: git reads any fan-out, and rewrites its own when it needs to
      const tree = await git.writeTree({
        fs,
        gitdir,
        tree: [...notes].sort(([a], [b]) => (a < b ? -1 : 1)).map(([name, oid]) => ({ path: name, oid, mode: '100644', type: 'blob' as const })),
      });
      const now = { ...who, timestamp: Math.floor(Date.now() / 1000), timezoneOffset: 0 };
      const notesCommit = await git.writeCommit({
        fs,
        gitdir,
        commit: { tree, parent: parent ? [parent] : [], author: now, committer: now, message: `Notes added by 'lastgood'\n` },
      });
      await fs.promises.writeFile(lockFile, `${notesCommit}\n`);
      await fs.promises.rename(lockFile, refFile);
      renamed = true;
    } finally {
      if (!renamed) await fs.promises.rm(lockFile, { force: true });
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
