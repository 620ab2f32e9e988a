import { createHash, randomInt } from 'node:crypto';
import type { TransferEvent } from '../../repo/types.ts';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import git from 'isomorphic-git';
import { diskError, InputError, RemoteError, StaleHeadError, registerSecret } from '../../errors.ts';
import { scrubText } from '../../scrub.ts';
import { NOTES_REF, type NotesStore } from '../../history/notes.ts';
import { openLocalNotes } from '../local/notes.ts';
import type { Change, CommitInfo, DeliveryMode, DeliveryResult, FileEntry, RepoBackend, TreeItem } from '../../repo/types.ts';
import { reviewBranch } from '../branch.ts';
import { LocalRepo } from '../local/index.ts';
import type { GitCredentials } from './auth.ts';
import { commitPageUrl, newPullRequestUrl } from './hosts.ts';
import { SmartHttp } from './http.ts';
import { Mirror } from './mirror.ts';
import { PackError, type IndexedPack, type ObjectType } from './pack-index.ts';
import { writePack } from './pack-write.ts';
import { discoverReceivePack, discoverUploadPack, lsRefs, pushPack, ZERO_OID, type FetchResponse, type ReceivePackAdvert, type UploadPack } from './protocol.ts';
import type { CommitSigner } from './signing.ts';
import { backoffDelay, sleep } from '../../retry.ts';

/**
 * A repository on any git host, over smart HTTP (issue 12). Reads go to a LocalRepo over a bare
 * mirror on disk: the branch is fetched shallow (`depth` commits) and, where the server supports
 * it, without blobs (`filter blob:none`); an object the mirror lacks is fetched when a read needs
 * it — a commit past the shallow boundary by deepening (doubling the step each time), a blob or
 * tree by its id — and the read is retried, so src/history walks `applied..attempted` as it does
 * on a full clone. A push sends exactly the new objects with `<old> <new> <ref>`: the server
 * compares the old value under its ref lock, so a concurrent push makes ours fail rather than
 * overwrite it, and the engine re-plans on the new head.
 */

export interface RemoteRepoOptions {
  /** the repository URL without credentials */
  url: string;
  credentials?: GitCredentials;
  /** a folder for the persistent mirror (repo.cacheDir); without it, a temporary one removed at exit */
  cacheDir?: string;
  /** commits fetched below the branch head at first (default 50) */
  depth?: number;
  /** attempts of one read request on 5xx and dropped connections (default 4) */
  attempts?: number;
  /** backoff base, ms (default 250; tests use a few ms) */
  backoffMs?: number;
  /** one request's time limit, ms */
  timeoutMs?: number;
  /** attempts of a push whose connection failed before the server answered (default 3) */
  pushAttempts?: number;
  /** signs revert commits (repo.signing) */
  signer?: CommitSigner;
  /** warnings that do not stop anything (a redirect to another host) */
  onWarning?: (message: string) => void;
  /** the bytes of each answer as they arrive (a door shows a long fetch's progress) */
  onProgress?: (event: TransferEvent) => void;
}

type MissingKind = 'commit' | 'object';

/** The largest deepening step: past it, a history is read in steps of this size. */
const MAX_DEEPEN = 3200;
/** Reads retried after fetching a missing object, per call (a folder may miss several subtrees). */
const MAX_MISSES = 64;
/** Clock skew allowed when isAncestor prunes commits older than the ancestor (git's SLOP idea). */
const SKEW_SECONDS = 86_400;
const PUSH_RACE_ATTEMPTS = 4;
/** At most this many listed file contents wait to be fetched together (target folders are small). */
const PREFETCH_MAX = 500;
/** Blobs asked for in one fetch when a read announces many (a request's size stays reasonable: 41 bytes a want). */
const PREFETCH_BATCH = 20_000;

/** The object a failed isomorphic-git read lacked, when that is why it failed. */
function missingOid(error: unknown): string | undefined {
  const e = error as { code?: string; data?: { what?: string }; cause?: unknown };
  if (e?.code === 'NotFoundError' && typeof e.data?.what === 'string' && /^[0-9a-f]{40}$/.test(e.data.what)) return e.data.what;
  return undefined;
}

/** how long the notes ref listed with a branch head stands for the run's reads of its records (as GitHub's headTtlMs) */
const NOTES_AT_HEAD_MS = 30_000;

const jitter = (attempt: number) => sleep(backoffDelay(attempt, { baseMs: 20, maxMs: 320, spreadMs: 100 }));

export class RemoteRepo implements RepoBackend {
  readonly kind = 'git';
  readonly description: string;

  commitUrl(sha: string): string | undefined {
    return commitPageUrl(this.description, sha);
  }
  readonly mirror: Mirror;
  readonly http: SmartHttp;
  private readonly local: LocalRepo;
  private readonly opts: RemoteRepoOptions;
  private readonly temporary: boolean;
  private caps: Promise<UploadPack> | undefined;
  private deepenStep: number;
  /** how deep below the branch heads the mirror goes (version 0 servers deepen from the heads) */
  private depthReached: number;
  /** one fetch at a time per instance; concurrent misses of the same object share it */
  private fetching: Promise<unknown> = Promise.resolve();
  private readonly inflight = new Map<string, Promise<void>>();
  /**
   * The notes ref as the last branch read listed it (one ls-refs for both): what the run reads of
   * its records is the repository as of its head read. A write lists the ref again (its
   * compare-and-swap needs the server's value now), and so does the next head read.
   */
  private notesAtHead: { tip: string | undefined; at: number } | undefined;
  /** contents of listed files the mirror lacks: fetched together at the first read of one */
  private readonly listed = new Set<string>();
  /** fetches, objects fetched and pushes, for the benches and tests */
  readonly stats = { fetches: 0, objects: 0, pushes: 0 };
  private readonly warn: (message: string) => void;

  constructor(opts: RemoteRepoOptions) {
    this.opts = opts;
    this.warn = opts.onWarning ?? ((m) => process.stderr.write(`lastgood: warning: ${m}\n`));
    this.description = opts.url;
    if (opts.credentials) registerSecret(opts.credentials.header);
    this.http = new SmartHttp({
      url: opts.url,
      ...(opts.credentials ? { credentials: opts.credentials } : {}),
      ...(opts.attempts !== undefined ? { attempts: opts.attempts } : {}),
      ...(opts.backoffMs !== undefined ? { backoffMs: opts.backoffMs } : {}),
      ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}),
      onWarning: this.warn,
      ...(opts.onProgress ? { onProgress: opts.onProgress } : {}),
    });
    this.temporary = !opts.cacheDir;
    const gitdir = opts.cacheDir ? path.join(path.resolve(opts.cacheDir), mirrorName(opts.url)) : fs.mkdtempSync(path.join(os.tmpdir(), 'lastgood-mirror-'));
    if (this.temporary) removeAtExit(gitdir);
    this.mirror = Mirror.open(gitdir, opts.url, opts.cacheDir ? `repo.cacheDir ${path.resolve(opts.cacheDir)}` : 'the temporary folder of this run\'s mirror');
    this.local = new LocalRepo(gitdir);
    this.deepenStep = opts.depth ?? 50;
    this.depthReached = opts.depth ?? 50;
  }

  /** Removes a temporary mirror now (a cacheDir mirror stays for the next run). */
  close(): void {
    if (this.temporary) fs.rmSync(this.mirror.gitdir, { recursive: true, force: true });
  }

  private capabilities(): Promise<UploadPack> {
    this.caps ??= discoverUploadPack(this.http).catch((error: unknown) => {
      this.caps = undefined;
      throw error;
    });
    return this.caps;
  }

  /**
   * blob:none where the server filters and sends objects by id; otherwise whole trees and blobs
   * (a v0 server that sends only what its refs reach could not send a missing blob later).
   */
  private async filter(): Promise<string | undefined> {
    const up = await this.capabilities();
    return up.filter && up.wantAny ? 'blob:none' : undefined;
  }

  /**
   * Deepening the history brings commits only (`tree:0`) where the server filters and sends
   * objects by id: a walk down the history reads commits (the guards read messages for the
   * cooldown window), and the trees of the few commits a model needs are fetched when read, each
   * with its subtrees minus what the mirror's heads already have.
   */
  private async deepenFilter(): Promise<string | undefined> {
    const up = await this.capabilities();
    return up.filter && up.wantAny ? 'tree:0' : undefined;
  }

  /** Runs fetches one after another (the shallow file and refs change between them). */
  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.fetching.then(fn, fn);
    this.fetching = run.catch(() => undefined);
    return run;
  }

  /** Fetches, stores the pack and records the new shallow boundary. */
  private async fetchInto(req: { wants: string[]; haves?: string[]; deepen?: number; filter?: string | undefined }): Promise<void> {
    const shallows = [...this.mirror.readShallow()];
    let res: FetchResponse;
    let stored: IndexedPack | undefined;
    for (let attempt = 1; ; attempt++) {
      res = await (await this.capabilities()).fetch({
        wants: req.wants,
        haves: (req.haves ?? []).filter((h) => this.mirror.has(h)),
        shallows,
        ...(req.deepen !== undefined ? { deepen: req.deepen } : {}),
        ...(req.filter ? { filter: req.filter } : {}),
      });
      this.stats.fetches++;
      try {
        stored = await this.mirror.storePack(res.pack, async (oid) => this.rawObject(oid));
        break;
      } catch (error) {
        if (!(error instanceof PackError)) throw error;
        // a pack damaged on the wire (a checksum that does not match): transient, fetched again once
        if (attempt >= 2) throw new RemoteError('git', `the pack ${this.description} sent was damaged twice (${error.message}): a proxy or the network corrupts the answers; nothing was written`, { cause: error });
      }
    }
    this.stats.objects += stored?.count ?? 0;
    if (res.shallow.length || res.unshallow.length) {
      await this.mirror.locked(async () => {
        const set = this.mirror.readShallow();
        for (const s of res.shallow) set.add(s);
        for (const s of res.unshallow) set.delete(s);
        // a boundary commit whose parents arrived since is no longer one
        for (const s of [...set]) {
          const c = await this.local.readCommit(s).catch(() => undefined);
          if (c && c.parents.every((p) => this.mirror.has(p))) set.delete(s);
        }
        this.mirror.writeShallow(set);
      });
    }
  }

  private async rawObject(oid: string): Promise<{ type: ObjectType; content: Uint8Array } | undefined> {
    try {
      const o = await git.readObject({ fs, gitdir: this.mirror.gitdir, oid, format: 'content', cache: this.local.cache });
      return { type: o.type as ObjectType, content: o.object as Uint8Array };
    } catch {
      return undefined;
    }
  }

  /** Brings `ref` at `tip` into the mirror: an incremental fetch from what it has, cut at `depth`. */
  private async fetchTip(ref: string, tip: string, opts: { deepen?: number; filter?: boolean } = {}): Promise<void> {
    // a new head starts a new walk: deepening starts again from the first step
    this.deepenStep = this.opts.depth ?? 50;
    await this.serial(async () => {
      if (!this.mirror.has(tip)) {
        const known = this.mirror.readRef(ref);
        const haves = [...new Set([known, ...this.localHeads()].filter((h): h is string => Boolean(h)))];
        await this.fetchInto({ wants: [tip], haves, deepen: opts.deepen ?? this.opts.depth ?? 50, filter: opts.filter === false ? undefined : await this.filter() });
      }
      await this.mirror.locked(() => this.mirror.writeRef(ref, tip));
    });
  }

  private localHeads(): string[] {
    const dir = path.join(this.mirror.gitdir, 'refs', 'heads');
    const out: string[] = [];
    const walk = (d: string, prefix: string) => {
      for (const e of fs.readdirSync(d, { withFileTypes: true })) {
        if (e.isDirectory()) walk(path.join(d, e.name), `${prefix}${e.name}/`);
        else if (!e.name.includes('.tmp-')) {
          const oid = this.mirror.readRef(`refs/heads/${prefix}${e.name}`);
          if (oid) out.push(oid);
        }
      }
    };
    walk(dir, '');
    return out.slice(0, 32);
  }

  /** Fetches one missing object: a commit by deepening below it, anything else by id. */
  private fetchMissing(oid: string, kind: MissingKind): Promise<void> {
    const key = `${kind}:${oid}`;
    let p = this.inflight.get(key);
    if (!p) {
      p = this.serial(async () => {
        if (this.mirror.has(oid)) return;
        const haves = this.localHeads();
        if (!(await this.capabilities()).wantAny) {
          // a server that sends only what its refs reach: deepen every branch the mirror follows
          // one more step (nothing was filtered, so a missing object lies below the boundary)
          const step = this.deepenStep;
          this.deepenStep = Math.min(MAX_DEEPEN, step * 2);
          this.depthReached += step;
          const shallowBefore = [...this.mirror.readShallow()].sort().join();
          const packsBefore = this.mirror.packCount();
          await this.fetchInto({ wants: haves, haves, deepen: this.depthReached });
          if (this.mirror.packCount() === packsBefore && [...this.mirror.readShallow()].sort().join() === shallowBefore) {
            throw new RemoteError('git', `${this.description} did not send object ${oid} (not in the history of the branches fetched)`);
          }
          return;
        }
        if (kind === 'commit') {
          const step = this.deepenStep;
          this.deepenStep = Math.min(MAX_DEEPEN, step * 2);
          await this.fetchInto({ wants: [oid], haves, deepen: step, filter: await this.deepenFilter() });
        } else {
          const together = [oid, ...[...this.listed].filter((o) => o !== oid && !this.mirror.has(o))];
          this.listed.clear();
          await this.fetchInto({ wants: together, haves, filter: await this.filter() });
        }
        if (!this.mirror.has(oid)) throw new RemoteError('git', `${this.description} did not send object ${oid}`);
      }).finally(() => this.inflight.delete(key));
      this.inflight.set(key, p);
    }
    return p;
  }

  /** A read on the mirror that fetches what it lacks and tries again. */
  private async withObjects<T>(kind: MissingKind, read: () => Promise<T>): Promise<T> {
    for (let miss = 0; ; miss++) {
      try {
        return await read();
      } catch (error) {
        const oid = missingOid(error);
        if (!oid || miss >= MAX_MISSES) throw error;
        try {
          await this.fetchMissing(oid, kind);
        } catch (fetchError) {
          if (fetchError instanceof RemoteError && fetchError.status !== undefined && fetchError.status >= 400 && fetchError.status !== 404) throw fetchError;
          if (fetchError instanceof RemoteError && /not our ref|not found|refused the fetch|did not send/i.test(fetchError.message)) {
            throw new RemoteError('git', `object ${oid} is not in ${this.description} (the history cannot be read further)`, { cause: fetchError });
          }
          throw fetchError;
        }
      }
    }
  }

  // ---- RepoReader --------------------------------------------------------------------------

  async head(branch: string): Promise<string> {
    const ref = `refs/heads/${branch}`;
    // the notes ref in the same listing: the run's records are read as of this head
    const asked = [ref, NOTES_REF];
    let refs: Map<string, string>;
    if (this.caps) refs = await (await this.caps).listRefs(asked);
    else {
      // discovery and a version 2 ls-refs at once (one round trip less); git asks in that order,
      // so when the ls-refs fails (a redirect the discovery settles, a version 0 server) it is asked again
      const listed = lsRefs(this.http, asked, { retry: false });
      listed.catch(() => undefined);
      const up = await this.capabilities();
      refs = up.version === 2 ? await listed.catch(() => up.listRefs(asked)) : await up.listRefs(asked);
    }
    this.notesAtHead = { tip: refs.get(NOTES_REF), at: Date.now() };
    const tip = refs.get(ref);
    if (!tip) throw new InputError(`branch "${branch}" does not exist in ${this.description}`);
    if (this.mirror.readRef(ref) !== tip || !this.mirror.has(tip)) await this.fetchTip(ref, tip);
    return tip;
  }

  async resolveCommit(shaOrPrefix: string): Promise<string | undefined> {
    const sha = shaOrPrefix.toLowerCase();
    if (!/^[0-9a-f]{4,40}$/.test(sha)) return undefined;
    const found = await this.local.resolveCommit(sha);
    if (found) return found;
    if (sha.length !== 40) return undefined;
    try {
      await this.readCommit(sha);
      return sha;
    } catch (error) {
      if (error instanceof RemoteError && error.status !== undefined && (error.status === 401 || error.status === 403)) throw error;
      return undefined;
    }
  }

  readCommit(oid: string): Promise<CommitInfo> {
    return this.withObjects('commit', () => this.local.readCommit(oid));
  }

  /**
   * The files under the paths. Their contents, where a blob-less mirror lacks them, are noted:
   * the first read of a missing file fetches every noted one in the same request (the planners
   * read the files they list, and one round trip per file would add up), and a listing whose
   * files are never read costs nothing.
   */
  async listFiles(commit: string, paths: string[]): Promise<Map<string, FileEntry>> {
    await this.readCommit(commit);
    const files = await this.withObjects('object', () => this.local.listFiles(commit, paths));
    for (const f of files.values()) {
      if (this.listed.size >= PREFETCH_MAX) break;
      if (!this.mirror.has(f.oid)) this.listed.add(f.oid);
    }
    return files;
  }

  async pathOid(commit: string, p: string): Promise<string | undefined> {
    await this.readCommit(commit);
    return this.withObjects('object', () => this.local.pathOid(commit, p));
  }

  /** The missing ones of these blobs, in one fetch per PREFETCH_BATCH (the model reads a graph's kustomizations together). */
  async prefetch(oids: string[]): Promise<void> {
    // a server that sends only what its refs reach sent whole trees and files with the history
    if (!(await this.capabilities()).wantAny) return;
    const missing = this.mirror.missing([...new Set(oids)]);
    for (let i = 0; i < missing.length; i += PREFETCH_BATCH) {
      const batch = missing.slice(i, i + PREFETCH_BATCH);
      await this.serial(async () => {
        const still = this.mirror.missing(batch);
        if (still.length > 0) await this.fetchInto({ wants: still, haves: this.localHeads(), filter: await this.filter() });
      });
    }
  }

  readBlob(oid: string): Promise<Uint8Array> {
    return this.withObjects('object', () => this.local.readBlob(oid));
  }

  readTree(oid: string): Promise<TreeItem[]> {
    return this.withObjects('object', () => this.local.readTree(oid));
  }

  /**
   * Whether `ancestor` is reachable from `descendant`: a walk down from the descendant that skips
   * commits older than the ancestor (allowing a day of clock skew), so that a shallow mirror is
   * deepened only as far as the ancestor's time, never to the root.
   */
  async isAncestor(ancestor: string, descendant: string): Promise<boolean> {
    if (ancestor === descendant) return true;
    const target = await this.readCommit(ancestor).catch(() => undefined);
    if (!target) return false;
    const cutoff = target.committer.timestamp - SKEW_SECONDS;
    const seen = new Set<string>([descendant]);
    const queue = [descendant];
    while (queue.length) {
      const c = await this.readCommit(queue.shift()!);
      for (const p of c.parents) {
        if (p === ancestor) return true;
        if (seen.has(p)) continue;
        seen.add(p);
        const parent = await this.readCommit(p);
        if (parent.committer.timestamp >= cutoff) queue.push(p);
        if (seen.size > 100_000) return false;
      }
    }
    return false;
  }

  /** RepoBackend.branches: the remote's branches under `prefix` and their tips (one ref listing; nothing fetched). */
  async branches(prefix: string): Promise<Map<string, string>> {
    const refs = await (await this.capabilities()).listRefs([`refs/heads/${prefix}`]);
    return new Map([...refs].filter(([name]) => name.startsWith(`refs/heads/${prefix}`)).map(([name, oid]) => [name.slice('refs/heads/'.length), oid] as [string, string]).sort(([a], [b]) => a.localeCompare(b)));
  }

  // ---- notes ---------------------------------------------------------------------------------

  notes(): NotesStore {
    const local = () => openLocalNotes({ fs, gitdir: this.mirror.gitdir });
    return {
      where: `git notes ${NOTES_REF} on ${this.description}`,
      list: async (target) => {
        // as the head read listed it, while that is recent (a controller's next run reads its head again)
        const seen = this.notesAtHead;
        await this.syncNotes(seen && Date.now() - seen.at < NOTES_AT_HEAD_MS ? seen : undefined);
        return local().list(target);
      },
      record: async (commit, rec) => {
        await this.writeNote(commit, async (store) => {
          await store.record(commit, rec);
        });
      },
      // a claim is the server's compare-and-swap of the notes ref: of two writers, one pushes the line, the other finds it
      claim: (bad, receipt) => this.writeNote(bad, (store) => store.claim!(bad, receipt)),
      recordRecovery: (rec) => this.writeNote(rec.revert, (store) => store.recordRecovery!(rec)),
      recoveries: async (target) => {
        await this.syncNotes();
        return local().recoveries!(target);
      },
    };
  }

  /**
   * Changes the remote's notes: `edit` runs on a local notes ref set to the remote's (under the
   * mirror's lock), and what it made is pushed as a compare-and-swap of the remote ref. A lost race
   * does it again on top of the other writer's notes, so nothing is dropped. False when `edit`
   * found nothing to add (the line was there already).
   */
  private async writeNote(commit: string, edit: (store: NotesStore) => Promise<boolean | void>): Promise<boolean> {
    const local = () => openLocalNotes({ fs, gitdir: this.mirror.gitdir });
    for (let attempt = 0; ; attempt++) {
      const remote = await this.syncNotes();
      const mine = await this.mirror.locked(async () => {
        this.mirror.writeRef(NOTES_REF, remote);
        await edit(local());
        const made = this.mirror.readRef(NOTES_REF);
        this.mirror.writeRef(NOTES_REF, remote);
        return made;
      });
      if (!mine || mine === remote) return false; // there already
      const outcome = await this.pushRef(NOTES_REF, remote ?? ZERO_OID, mine, await this.newObjects(mine, remote));
      if (outcome.ok) return true;
      if (attempt + 1 >= PUSH_RACE_ATTEMPTS * 2) throw new RemoteError('git', `${NOTES_REF} on ${this.description} kept moving: the note on ${commit.slice(0, 12)} was not written`);
      await jitter(attempt);
    }
  }

  /** The remote's notes ref, fetched into the mirror (tip, its tree and blobs); undefined when absent. */
  private async syncNotes(listed?: { tip: string | undefined }): Promise<string | undefined> {
    const tip = listed ? listed.tip : (await (await this.capabilities()).listRefs([NOTES_REF])).get(NOTES_REF);
    if (!tip) {
      await this.mirror.locked(() => this.mirror.writeRef(NOTES_REF, undefined));
      return undefined;
    }
    // notes need their blobs: no filter; only the newest notes commit is read
    if (!this.mirror.has(tip)) {
      await this.serial(() => this.fetchInto({ wants: [tip], haves: [this.mirror.readRef(NOTES_REF)].filter((h): h is string => Boolean(h)), deepen: 1 }));
    }
    await this.mirror.locked(() => this.mirror.writeRef(NOTES_REF, tip));
    return tip;
  }

  // ---- delivery ------------------------------------------------------------------------------

  async deliver(change: Change, mode: DeliveryMode): Promise<DeliveryResult> {
    const branchRef = `refs/heads/${change.branch}`;
    // the push's ref advertisement is asked for while the objects are written: it tells whether the branch moved
    const advertised = discoverReceivePack(this.http);
    advertised.catch(() => undefined);
    const commit = await this.writeCommit(change);
    const objects = await this.newObjects(commit, change.parent);
    const advert = await advertised;
    const current = advert.refs.get(branchRef);
    if (!current) throw new InputError(`branch "${change.branch}" does not exist in ${this.description}`);
    if (current !== change.parent) {
      await Promise.all([this.fetchTip(branchRef, current), jitter(randomInt(4))]);
      throw new StaleHeadError(change.branch, current);
    }
    if (mode === 'commit') {
      const outcome = await this.pushRef(branchRef, change.parent, commit, objects, advert);
      // the same revert planned by another run is the same commit (same tree, parent, message, time): then it is not ours
      if (outcome.ok) return { commit, branch: change.branch, created: outcome.pushed };
      await jitter(randomInt(4));
      if (outcome.now !== ZERO_OID) await this.fetchTip(branchRef, outcome.now);
      throw new StaleHeadError(change.branch, outcome.now === ZERO_OID ? '(deleted)' : outcome.now);
    }
    const branch = reviewBranch(change);
    const link = newPullRequestUrl(this.opts.url, branch, change.branch);
    const warnings = [link ? `pushed ${branch}; open the merge request at ${link}` : `pushed ${branch}; open a merge request from it into ${change.branch} (set repo.provider for lastgood to open it)`];
    // the engine reports the warnings (with the merge-request link) as notes of the outcome
    const pushed = await this.pushPrepared(branch, commit, objects, advert);
    return { ...pushed, warnings };
  }

  /**
   * Pull-request mode for the hosts whose API opens the request (src/deliver/review-request.ts):
   * the change's commit on `branch` (default `lastgood/<target>/<bad12>`), which moves only when
   * the planned tree differs and only from the value just read; `created` is false when the branch
   * already held that tree. Refused like deliver() when the base branch moved since the plan.
   */
  async pushReviewBranch(change: Change, branch = reviewBranch(change)): Promise<{ commit: string; branch: string; created: boolean }> {
    const advertised = discoverReceivePack(this.http);
    advertised.catch(() => undefined);
    const commit = await this.writeCommit(change);
    const objects = await this.newObjects(commit, change.parent);
    const advert = await advertised;
    const current = advert.refs.get(`refs/heads/${change.branch}`);
    if (!current) throw new InputError(`branch "${change.branch}" does not exist in ${this.description}`);
    if (current !== change.parent) {
      await Promise.all([this.fetchTip(`refs/heads/${change.branch}`, current), jitter(randomInt(4))]);
      throw new StaleHeadError(change.branch, current);
    }
    return this.pushPrepared(branch, commit, objects, advert);
  }

  /**
   * Deletes `branch` if it still points at `expected` (a compare-and-swap: a branch somebody moved
   * since is left alone). True when it is gone.
   */
  async deleteBranch(branch: string, expected: string): Promise<boolean> {
    const ref = `refs/heads/${branch}`;
    const outcome = await this.pushRef(ref, expected, ZERO_OID, []);
    if (outcome.ok) await this.mirror.locked(() => this.mirror.writeRef(ref, undefined));
    return outcome.ok;
  }

  /** The review branch at `commit`: found as it is when it already holds the same tree, else pushed from the value read. */
  private async pushPrepared(branch: string, commit: string, objects: string[], advert: ReceivePackAdvert): Promise<{ commit: string; branch: string; created: boolean }> {
    const ref = `refs/heads/${branch}`;
    const tree = (await this.readCommit(commit)).tree;
    let fresh: ReceivePackAdvert | undefined = advert;
    for (let attempt = 0; attempt < PUSH_RACE_ATTEMPTS; attempt++) {
      const now = fresh ?? (await discoverReceivePack(this.http));
      fresh = undefined;
      const existing = now.refs.get(ref);
      if (existing) {
        if (!this.mirror.has(existing)) await this.fetchTip(ref, existing, { deepen: 1 });
        if ((await this.readCommit(existing)).tree === tree) {
          await this.mirror.locked(() => this.mirror.writeRef(ref, existing));
          return { commit: existing, branch, created: false };
        }
      }
      // the review branch moves only from the value just read: a second run's identical push is found above
      const outcome = await this.pushRef(ref, existing ?? ZERO_OID, commit, objects, now);
      if (outcome.ok) return { commit, branch, created: outcome.pushed };
      await jitter(attempt);
    }
    throw new RemoteError('git', `branch ${branch} on ${this.description} kept moving: gave up after ${PUSH_RACE_ATTEMPTS} attempts`);
  }

  /** The change's commit in the mirror (signed when repo.signing says so). */
  private async writeCommit(change: Change): Promise<string> {
    // every tree on the way to a changed file is in the mirror first (fetching one takes the lock)
    const folders = new Set(change.files.map((f) => f.path.split('/').slice(0, -1).join('/')).filter(Boolean));
    for (const folder of folders) await this.pathOid(change.parent, folder);
    // objects are written under the lock: isomorphic-git writes a loose object in place, and
    // another process sharing the mirror must not read one half-written
    return this.mirror.locked(async () => {
      try {
        const unsigned = await this.local.writeChangeCommit(change);
        if (!this.opts.signer) return unsigned;
        const c = await this.local.readCommit(unsigned);
        return await this.opts.signer.sign({ gitdir: this.mirror.gitdir, tree: c.tree, parents: c.parents, message: c.message, author: c.author, committer: c.committer });
      } catch (error) {
        throw diskError(error, path.dirname(this.mirror.gitdir), this.mirror.where) ?? error;
      }
    });
  }

  /**
   * The objects of `commit` the remote lacks, given that it has `base`: the commit, and the trees
   * and blobs along the paths that differ from base's which are not in a fetched pack (what came
   * from the remote is the remote's, with everything it names; what lastgood wrote is loose).
   */
  private async newObjects(commit: string, base: string | undefined): Promise<string[]> {
    const out = [commit];
    const c = await this.readCommit(commit);
    const baseTree = base ? (await this.readCommit(base)).tree : undefined;
    const walk = async (tree: string, old: string | undefined): Promise<void> => {
      if (tree === old || this.mirror.isPacked(tree)) return;
      out.push(tree);
      const [entries, before] = await Promise.all([this.readTree(tree), old ? this.readTree(old) : Promise.resolve([] as TreeItem[])]);
      const prior = new Map(before.map((e) => [e.path, e]));
      for (const e of entries) {
        const p = prior.get(e.path);
        if (p && p.oid === e.oid) continue;
        if (e.type === 'tree') await walk(e.oid, p?.type === 'tree' ? p.oid : undefined);
        else if (e.type === 'blob' && !this.mirror.isPacked(e.oid) && this.mirror.has(e.oid)) out.push(e.oid);
      }
    };
    await walk(c.tree, baseTree);
    return [...new Set(out)];
  }

  private async landed(ref: string, value: string, pushed: boolean): Promise<{ ok: true; pushed: boolean }> {
    await this.mirror.locked(() => this.mirror.writeRef(ref, value));
    return { ok: true, pushed };
  }

  /**
   * One compare-and-swap on a remote ref: `old` → `value`, sending `objects`. A connection that
   * fails before the answer is settled by reading the ref again: at `value` it landed, at `old`
   * it is sent again, anything else means someone else moved it.
   */
  private async pushRef(ref: string, old: string, value: string, objects: string[], advert?: ReceivePackAdvert): Promise<{ ok: true; pushed: boolean } | { ok: false; now: string }> {
    // a delete sends no pack (receive-pack reads one only for commands that are not deletes)
    const pack = value === ZERO_OID ? Buffer.alloc(0) : writePack(objects.map((oid) => this.local.objects.read(oid)));
    const attempts = this.opts.pushAttempts ?? 3;
    for (let attempt = 1; ; attempt++) {
      const now = advert ?? (await discoverReceivePack(this.http));
      advert = undefined;
      const before = now.refs.get(ref) ?? ZERO_OID;
      if (before === value) return { ok: true, pushed: attempt > 1 };
      if (before !== old) return { ok: false, now: before };
      let result;
      try {
        this.stats.pushes++;
        result = await pushPack(this.http, now, [{ ref, old, new: value }], pack);
      } catch (error) {
        const status = error instanceof RemoteError ? error.status : undefined;
        if (status !== undefined && status < 500) throw error;
        // the answer was lost: the ref tells whether the push landed
        const after = (await discoverReceivePack(this.http)).refs.get(ref) ?? ZERO_OID;
        if (after === value) return this.landed(ref, value, true);
        if (after !== old) return { ok: false, now: after };
        if (attempt >= attempts) throw error;
        await jitter(attempt);
        continue;
      }
      // a hook's own words (a DCO check, a protected-branch rule on GitLab or Gitea), as git shows them, scrubbed
      // (side band 2; git's own lines about the push are left out)
      const words = result.messages.map((m) => m.replace(/^remote:\s*/, '')).filter((m) => !/^(error:|To |\s*!)/.test(m));
      const said = words.length ? `\n${words.slice(-20).map((l) => `remote: ${scrubText(l, { maxBytes: 500 })}`).join('\n')}` : '';
      if (result.unpack !== 'ok') throw new RemoteError('git', `${this.description} could not store the pushed objects: ${result.unpack}${said}`);
      const status = result.refs.get(ref);
      if (status?.ok) return this.landed(ref, value, true);
      const after = (await discoverReceivePack(this.http)).refs.get(ref) ?? ZERO_OID;
      if (after === value) return this.landed(ref, value, false);
      if (after !== old) return { ok: false, now: after };
      // another writer held git's lock on the ref (its own update, which left the ref as it was):
      // a lost race like any other, not a refusal. receive-pack says so with the ref backend's
      // "cannot lock ref '…': Unable to create '….lock': File exists" (git refs/files-backend.c,
      // lock_raw_ref), as "error: …" on side band 2 before its status "ng <ref> failed to update ref".
      if (attempt < attempts && result.messages.some((m) => /cannot lock ref .*\.lock'?: File exists/.test(m))) {
        await jitter(attempt);
        continue;
      }
      throw new RemoteError('git', `${this.description} refused the update of ${ref}: ${status?.reason ?? 'no status reported'}${said || ' (a protected branch or a server hook?)'}`);
    }
  }
}

/** One mirror per repository URL in a shared cacheDir: a readable name and a hash of the URL. */
function mirrorName(url: string): string {
  const u = new URL(url);
  const readable = `${u.host}${u.pathname}`.replace(/\.git\/?$/, '').replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 80);
  return `${readable}-${createHash('sha256').update(url).digest('hex').slice(0, 12)}.git`;
}

const temporaries = new Set<string>();
function removeAtExit(dir: string): void {
  if (temporaries.size === 0) {
    process.once('exit', () => {
      for (const d of temporaries) fs.rmSync(d, { recursive: true, force: true });
    });
  }
  temporaries.add(dir);
}
