/**
 * The bounded cache of what a reader read (trees, commits, blobs, their parsed forms): shared by
 * the model's ObjectCache and the backends' own caches, so that every cache of a long-running
 * process is bounded by what it holds, not by how many things it holds (issue 22).
 */

/**
 * A map of recently used values, at most about `limit` of them by `weigh`: two generations, the
 * current one and the one before; a value read from the older one moves up, and when the current
 * one is full the older one is dropped whole. Reads cost one or two lookups (a strict LRU's
 * delete-and-insert on every read was most of a large model walk's time).
 */
export class Lru<K, V> {
  private current = new Map<K, V>();
  private older = new Map<K, V>();
  private weight = 0;
  private readonly limit: number;
  private readonly weigh: (v: V) => number;
  constructor(limit: number, weigh: (v: V) => number = () => 1) {
    this.limit = limit;
    this.weigh = weigh;
  }
  get(key: K): V | undefined {
    const v = this.current.get(key);
    if (v !== undefined) return v;
    const old = this.older.get(key);
    if (old !== undefined) {
      this.older.delete(key);
      this.put(key, old);
    }
    return old;
  }
  /** How many values are held (both generations). */
  get size(): number {
    return this.current.size + this.older.size;
  }
  /** Every value held, the most recent generation first (reading does not move them up). */
  *entries(): IterableIterator<[K, V]> {
    yield* this.current;
    for (const e of this.older) if (!this.current.has(e[0])) yield e;
  }
  has(key: K): boolean {
    return this.current.has(key) || this.older.has(key);
  }
  delete(key: K): void {
    const v = this.current.get(key);
    if (v !== undefined) {
      this.weight -= this.weigh(v);
      this.current.delete(key);
    }
    this.older.delete(key);
  }
  set(key: K, value: V): void {
    this.delete(key);
    this.put(key, value);
  }
  private put(key: K, value: V): void {
    this.current.set(key, value);
    this.weight += this.weigh(value);
    if (this.weight > this.limit / 2) {
      this.older = this.current;
      this.current = new Map();
      this.weight = 0;
    }
  }
}
