import { randomInt } from 'node:crypto';

/**
 * The one retry rule (issue 38). Every wait before trying again — a read whose server failed, a
 * write whose answer was lost, a lock held by another writer, a watch that broke, an act that
 * failed — is `backoffDelay`: exponential from a base, capped, with a random part so that replicas
 * and runs that failed together do not try again together. The loops that send once and ask
 * whether it landed before sending again use `retry`; the others (a lock's deadline, a watch's
 * timer, the tracker's schedule) take only the delay.
 */
export interface Backoff {
  /** the first wait, ms */
  baseMs: number;
  /** the longest wait before the random part (default: none) */
  maxMs?: number;
  /** a random part of up to this share of the wait is added (0.5: up to half again) */
  spread?: number;
  /** a random part of up to this many ms is added */
  spreadMs?: number;
}

/** A random whole number in [0, below) (node:crypto's, as the rest of lastgood draws them). */
export type Draw = (below: number) => number;
const draw: Draw = (below) => (below >= 1 ? randomInt(Math.floor(below)) : 0);

/** The wait after the n-th failure in a row (n from 0): baseMs·2ⁿ, at most maxMs, plus its random part. */
export function backoffDelay(n: number, b: Backoff, random: Draw = draw): number {
  const wait = Math.min(b.baseMs * 2 ** Math.min(Math.max(0, n), 30), b.maxMs ?? Number.POSITIVE_INFINITY);
  return wait + (b.spread ? random(wait * b.spread) : 0) + (b.spreadMs ? random(b.spreadMs) : 0);
}

/**
 * Git's own wait for a lock file (lockfile.c lock_file_timeout): the n-th wait (n from 1) is about
 * n² ms, ±25%, at most 1 s; lastgood takes refs under git's lock as git does.
 */
export function gitLockfileDelay(n: number, random: Draw = draw): number {
  const multiplier = Math.min(1000, n * n);
  return ((750 + random(500)) * multiplier) / 1000;
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export interface RetryOptions<T> {
  /** tries in all (the first included) */
  attempts: number;
  backoff: Backoff;
  /**
   * After a failure: throw to stop (the error, or a clearer one), return `{ value }` to end with what
   * was found another way (a write whose answer was lost, found landed), or nothing to wait and try
   * again. `last`: no try is left, so it must throw or return a value.
   */
  onFailure: (error: unknown, attempt: number, last: boolean) => Promise<{ value: T } | void> | { value: T } | void;
  /** the wait itself (tests pass one that does not wait) */
  wait?: (ms: number) => Promise<void>;
}

export async function retry<T>(fn: (attempt: number) => Promise<T>, opts: RetryOptions<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (error) {
      const last = attempt >= opts.attempts;
      const settled = await opts.onFailure(error, attempt, last);
      if (settled) return settled.value;
      if (last) throw error;
      await (opts.wait ?? sleep)(backoffDelay(attempt - 1, opts.backoff));
    }
  }
}
