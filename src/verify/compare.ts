import { deepEqual, flatten, type RenderedObject } from './objects.ts';

/** A field the revert sets to neither the current value nor the last-known-good's. */
export interface AwayField {
  key: string;
  /** JSON-pointer-like path inside the object; '' = the object as a whole (absent from some render) */
  path: string;
  head: unknown;
  reverted: unknown;
  lastKnownGood: unknown;
}

export interface RenderComparison {
  /** false: the revert changes nothing the engine builds */
  changes: boolean;
  /** fields where reverted ≠ head and reverted ≠ lastKnownGood: the revert moves away from the LKG */
  away: AwayField[];
  /** fields where head ≠ lastKnownGood but reverted = head: a later change the revert keeps */
  kept: Array<{ key: string; path: string }>;
  /** objects added, removed, changed from head to reverted */
  summary: { added: string[]; removed: string[]; changed: string[] };
}

function byKey(objects: RenderedObject[]): Map<string, Record<string, unknown>> {
  return new Map(objects.map((o) => [o.key, o.object]));
}

/**
 * The verification predicate of research/render.md §6.1 over three renders of one target: the
 * revert must change something, and every field it changes must take the last-known-good's value.
 *
 * Objects present in all three renders are compared leaf by leaf (objects.ts flatten: arrays of
 * named items keyed by name). An object missing from any render is compared whole, as one field
 * with path '' (undefined = absent): a revert that re-creates an object the LKG did not have is
 * "away"; one that keeps an object added after the LKG is "kept".
 */
export function compareRenders(r: { lastKnownGood: RenderedObject[]; head: RenderedObject[]; reverted: RenderedObject[] }): RenderComparison {
  const l = byKey(r.lastKnownGood);
  const h = byKey(r.head);
  const v = byKey(r.reverted);
  const keys = [...new Set([...l.keys(), ...h.keys(), ...v.keys()])].sort();
  const away: AwayField[] = [];
  const kept: Array<{ key: string; path: string }> = [];
  const summary = { added: [] as string[], removed: [] as string[], changed: [] as string[] };

  for (const key of keys) {
    const lo = l.get(key);
    const ho = h.get(key);
    const vo = v.get(key);
    if (ho && !vo) summary.removed.push(key);
    else if (!ho && vo) summary.added.push(key);
    else if (ho && vo && !deepEqual(ho, vo)) summary.changed.push(key);

    if (!lo || !ho || !vo) {
      const rh = deepEqual(vo, ho);
      if (!rh && !deepEqual(vo, lo)) away.push({ key, path: '', head: ho, reverted: vo, lastKnownGood: lo });
      if (rh && !deepEqual(ho, lo)) kept.push({ key, path: '' });
      continue;
    }
    const fl = flatten(lo);
    const fh = flatten(ho);
    const fv = flatten(vo);
    const paths = [...new Set([...fl.keys(), ...fh.keys(), ...fv.keys()])].sort();
    for (const path of paths) {
      const lv = fl.get(path);
      const hv = fh.get(path);
      const vv = fv.get(path);
      const rh = deepEqual(vv, hv);
      if (!rh && !deepEqual(vv, lv)) away.push({ key, path, head: hv, reverted: vv, lastKnownGood: lv });
      if (rh && !deepEqual(hv, lv)) kept.push({ key, path });
    }
  }
  const changes = summary.added.length + summary.removed.length + summary.changed.length > 0;
  return { changes, away, kept, summary };
}
