/**
 * What a model build read from one revision's tree, recorded by the TreeView it read through, so
 * that another revision can be told to read the same without building its model: a history walk
 * over a busy monorepo asks "did this commit change what the engine reads for the target?" at
 * every commit, and most commits change nothing it reads.
 *
 * The answer comes from the tree diff between the two revisions, as `git diff-tree` computes it:
 * only entries whose oids differ are looked at, and a folder is entered only when something read
 * lies below it. A model is the same at both revisions when no entry it read differs, no folder
 * it listed gained, lost or changed a file, and no file of a name it searched for by name
 * (`.sourceignore` files anywhere below a folder) changed. Blob contents are read by oid, so an
 * entry's oid stands for its content. Sound as long as engines read the tree only through the
 * TreeView (EngineModeler.build gets nothing else).
 *
 * Reads nest: a part of a build (one application's kustomizations) records its own, all below one
 * folder (its home), and the whole holds it by that folder instead of copying its records, so a
 * build that reuses 2,000 remembered parts adds 2,000 references, not their records.
 */

/** Kinds of record; a value is what the path was at the recording revision. */
export const AS_FOLDER = 'dir';
export const ABSENT = '-';

export class Reads {
  /** path → "mode oid" (its entry), "dir" (that it is a folder), or "-" (absent) */
  readonly entries = new Map<string, string>();
  /** folders whose whole listing was read: the names, modes and file oids of their entries */
  readonly listings = new Set<string>();
  /** folder → names: every file of that name below the folder was looked for */
  readonly searches = new Map<string, Set<string>>();
  /**
   * path → entry read for a rule of the build that lives above what it applies to (a Flux
   * `.sourceignore` of a folder above the file asked about): compared like an entry, but it does
   * not decide the home (a part reused elsewhere checks its guards itself: TreeView.guardsHold)
   */
  readonly guards = new Map<string, string>();
  /** home folder → the reads of parts recorded apart, each entirely at or below its home */
  readonly parts = new Map<string, Reads[]>();
  private ancestors: Set<string> | undefined;
  private home: string | null | undefined = null;

  private changed(): void {
    this.ancestors = undefined;
    this.home = null;
  }
  entry(path: string, value: string): void {
    const known = this.entries.get(path);
    // a full entry says more than "a folder": keep it
    if (known === undefined || (known === AS_FOLDER && value !== AS_FOLDER)) {
      this.entries.set(path, value);
      this.changed();
    }
  }
  guard(path: string, value: string): void {
    if (this.guards.has(path)) return;
    this.guards.set(path, value);
    this.changed();
  }
  /** Every guard of these reads and of the parts they hold. */
  *allGuards(seen = new Set<Reads>()): Generator<[string, string]> {
    if (seen.has(this)) return;
    seen.add(this);
    yield* this.guards;
    for (const list of this.parts.values()) for (const part of list) yield* part.allGuards(seen);
  }
  listing(dir: string): void {
    if (this.listings.has(dir)) return;
    this.listings.add(dir);
    this.changed();
  }
  search(dir: string, name: string): void {
    const names = this.searches.get(dir) ?? new Set();
    if (names.has(name)) return;
    this.searches.set(dir, names.add(name));
    this.changed();
  }
  /** Adds another record's reads (a part read apart): held by its home folder, or copied when it has none. */
  add(other: Reads): void {
    if (other === this) return;
    const home = other.commonFolder();
    if (home !== undefined) {
      const list = this.parts.get(home);
      if (list?.includes(other)) return;
      this.parts.set(home, [...(list ?? []), other]);
    } else {
      for (const [p, v] of other.entries) this.entry(p, v);
      for (const d of other.listings) this.listings.add(d);
      for (const [p, v] of other.guards) this.guard(p, v);
      for (const [d, names] of other.searches) for (const n of names) this.search(d, n);
      for (const [h, list] of other.parts) this.parts.set(h, [...new Set([...(this.parts.get(h) ?? []), ...list])]);
    }
    this.changed();
  }

  /** Every folder that holds something read here (the diff enters only these), parts' homes included. */
  folders(): Set<string> {
    if (this.ancestors) return this.ancestors;
    const out = new Set<string>(['']);
    const up = (p: string) => {
      for (let i = p.lastIndexOf('/'); i > 0; i = p.lastIndexOf('/', i - 1)) {
        const d = p.slice(0, i);
        if (out.has(d)) return;
        out.add(d);
      }
    };
    const at = (d: string) => {
      out.add(d);
      up(d);
    };
    for (const p of this.entries.keys()) up(p);
    for (const p of this.guards.keys()) up(p);
    for (const d of this.listings) at(d);
    for (const d of this.searches.keys()) at(d);
    for (const d of this.parts.keys()) at(d);
    this.ancestors = out;
    return out;
  }

  /**
   * The deepest folder whose tree decides every record, undefined when only the root's does: where
   * that folder's tree oid is the same at another revision, everything read here reads the same
   * there. A record's home is the folder holding it (an entry's parent, a listed or searched
   * folder, a part's home); a path read only as a folder on the way (`dir`) needs no home when it
   * lies at or above the common folder, whose existence implies it.
   */
  commonFolder(): string | undefined {
    if (this.home !== null) return this.home;
    const parentOf = (p: string) => (p.includes('/') ? p.slice(0, p.lastIndexOf('/')) : '');
    const homes: string[] = [];
    const ways: string[] = [];
    for (const [p, v] of this.entries) {
      if (v === AS_FOLDER) ways.push(p);
      else homes.push(parentOf(p));
    }
    homes.push(...this.listings, ...this.searches.keys(), ...this.parts.keys());
    let common: string | undefined;
    if (homes.length > 0) {
      const first = lca(homes);
      const atOrAbove = (w: string, dir: string) => w === dir || dir.startsWith(`${w}/`);
      const c = lca([...homes, ...ways.filter((w) => !atOrAbove(w, first)).map(parentOf)]);
      common = c === '' ? undefined : c;
    }
    this.home = common;
    return common;
  }
}

function lca(dirs: string[]): string {
  // by whole segments: "a/b" and "a/bc" share "a"
  let common: string | undefined;
  for (const d of dirs) {
    if (common === undefined) common = d;
    else while (common !== '' && d !== common && !(d.startsWith(common) && d.charCodeAt(common.length) === 47)) common = common.includes('/') ? common.slice(0, common.lastIndexOf('/')) : '';
    if (common === '') break;
  }
  return common ?? '';
}

/** One entry of a tree, as the diff compares them. */
export interface DiffEntry {
  mode: string;
  oid: string;
  type: string;
}

export type IndexedTree = (oid: string) => Promise<Map<string, DiffEntry>>;

const NO_ENTRIES = new Map<string, DiffEntry>();

/**
 * True when a build that made `reads` at the tree `from` would read the same at the tree `to`.
 * Costs the tree diff between them, restricted to the folders that hold something read.
 */
export async function sameReads(reads: Reads, tree: IndexedTree, from: string, to: string): Promise<boolean> {
  if (from === to) return true;
  /** the names searched for at or above `dir` by any of `active` */
  const searchedAt = (active: Array<{ r: Reads; names: string[] }>, dir: string) =>
    active.map(({ r, names }) => ({ r, names: [...names, ...(r.searches.get(dir) ?? [])] }));
  const walk = async (dir: string, a: string | undefined, b: string | undefined, outer: Array<{ r: Reads; names: string[] }>): Promise<boolean> => {
    if (a === b) return true;
    // the reads that apply here: those passed down, and the parts homed at this folder
    // (a part homed here may hold parts homed here too)
    const homed: Array<{ r: Reads; names: string[] }> = [];
    const seen = new Set(outer.map((o) => o.r));
    for (let i = 0, all = [...outer]; i < all.length; i++) {
      for (const part of all[i]!.r.parts.get(dir) ?? []) {
        if (seen.has(part)) continue;
        seen.add(part);
        const entry = { r: part, names: [] as string[] };
        homed.push(entry);
        all.push(entry);
      }
    }
    // a part's home is a folder at both (what it read as folders on the way there is implied by that)
    if (homed.length > 0 && (a === undefined || b === undefined)) return false;
    const active = searchedAt([...outer, ...homed], dir);
    const [ea, eb] = await Promise.all([a ? tree(a) : NO_ENTRIES, b ? tree(b) : NO_ENTRIES]);
    const visit = async (name: string, x: DiffEntry | undefined, y: DiffEntry | undefined): Promise<boolean> => {
      if (x && y && x.oid === y.oid && x.mode === y.mode) return true;
      const p = dir ? `${dir}/${name}` : name;
      const bothFolders = x?.type === 'tree' && y?.type === 'tree';
      const down: Array<{ r: Reads; names: string[] }> = [];
      for (const act of active) {
        const { r, names } = act;
        // a listing shows names, modes and the oids of files (a folder's oid is read through its own listing)
        if (r.listings.has(dir) && !(bothFolders && x.mode === y.mode)) return false;
        const recorded = r.entries.get(p) ?? r.guards.get(p);
        if (recorded !== undefined && !(recorded === AS_FOLDER && bothFolders)) return false;
        if (names.length > 0 && !bothFolders && names.includes(name)) return false;
        if (names.length > 0 || r.folders().has(p)) down.push(act);
      }
      if (down.length > 0 && (x?.type === 'tree' || y?.type === 'tree')) return walk(p, x?.type === 'tree' ? x.oid : undefined, y?.type === 'tree' ? y.oid : undefined, down);
      return true;
    };
    for (const [name, x] of ea) if (!(await visit(name, x, eb.get(name)))) return false;
    for (const [name, y] of eb) if (!ea.has(name) && !(await visit(name, undefined, y))) return false;
    return true;
  };
  return walk('', from, to, [{ r: reads, names: [] }]);
}
