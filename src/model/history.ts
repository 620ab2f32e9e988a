import type { CommitInfo, RepoReader } from '../repo/types.ts';
import { inputDelta, shipped, type InputDelta, type TargetModel, type TargetModeler } from './types.ts';

/**
 * The model over a history: which inputs of the target a commit (or a range) changed. A change
 * counts when the model differs between the two revisions at a path whose git entry differs too:
 * a file the engine reads that was edited, added or removed, or the part of a parent
 * kustomization that concerns the target. Files that only join or leave the model without being
 * changed themselves (a symlink retargeted, a sibling folder renamed into the paths) are not
 * changes of theirs; the commit that made them join is named by its own changed files.
 */
export class ModelHistory {
  readonly modeler: TargetModeler;
  private readonly reader: RepoReader;
  private readonly deltas = new Map<string, Promise<InputDelta[]>>();

  constructor(reader: RepoReader, modeler: TargetModeler) {
    this.reader = reader;
    this.modeler = modeler;
  }

  at(commit: string): Promise<TargetModel> {
    return this.modeler.at(commit);
  }

  /** A hint: these revisions are modelled next (what they read is asked for together). */
  async prefetch(commits: string[]): Promise<void> {
    await this.modeler.prefetch?.(commits);
  }

  /**
   * The inputs changed from `from` to `to` (`from` undefined: the empty tree) that reach the
   * cluster; `raw`: every input changed, also those that ship only with another change
   * (`shipsWith`), to tell which commit made each part of a range's change.
   */
  async changed(from: string | undefined, to: string, opts: { raw?: boolean } = {}): Promise<InputDelta[]> {
    const key = `${from ?? ''}..${to}`;
    let p = this.deltas.get(key);
    if (!p) this.deltas.set(key, (p = this.compute(from, to)));
    const raw = await p;
    return opts.raw ? raw : shipped(raw);
  }

  /** What a commit changed against its first parent. */
  commit(c: CommitInfo, opts: { raw?: boolean } = {}): Promise<InputDelta[]> {
    return this.changed(c.parents[0], c.oid, opts);
  }

  /** True when the commit changed an input of the target against its first parent. */
  async touches(c: CommitInfo): Promise<boolean> {
    return (await this.commit(c)).length > 0;
  }

  private async compute(from: string | undefined, to: string): Promise<InputDelta[]> {
    const after = await this.modeler.at(to);
    if (!from) return [...after.inputs.values()].map((i) => ({ path: i.path, after: i.digest, role: i.role, ...(i.shipsWith ? { shipsWith: i.shipsWith } : {}) }));
    const before = await this.modeler.at(from);
    // the same model: a revision that reads the same as another shares its model (index.ts, reads.ts)
    if (before === after) return [];
    const delta = inputDelta(before, after, { raw: true });
    const out: InputDelta[] = [];
    for (const d of delta) if (!(await this.sameEntries(from, to, [d.path]))) out.push(d);
    return out;
  }

  private async sameEntries(a: string, b: string, paths: string[]): Promise<boolean> {
    const [ca, cb] = await Promise.all([this.reader.readCommit(a), this.reader.readCommit(b)]);
    if (ca.tree === cb.tree) return true;
    for (const p of paths) {
      if (p.includes('(generated')) continue;
      const [x, y] = await Promise.all([this.oid(a, p), this.oid(b, p)]);
      if (x !== y) return false;
    }
    return true;
  }

  /**
   * A path's oid. The backends refuse a path that is a symlink (pathOid: "goes through a
   * symlink"), so a link's own entry is read from its folder: a retargeted link is a changed entry
   * (Argo CD follows links). A path through a symlinked folder counts as its own state.
   */
  private async oid(commit: string, path: string): Promise<string | undefined> {
    try {
      return await this.reader.pathOid(commit, path);
    } catch {
      const slash = path.lastIndexOf('/');
      try {
        const folder = slash < 0 ? (await this.reader.readCommit(commit)).tree : await this.reader.pathOid(commit, path.slice(0, slash));
        if (!folder) return undefined;
        return (await this.reader.readTree(folder)).find((e) => e.path === path.slice(slash + 1))?.oid;
      } catch {
        return 'unreadable';
      }
    }
  }
}
