/**
 * Time as a door sees it: the clock it reads and the timers it sets. The production clock is the
 * real one; tests pass a clock they drive (test/support/clock.ts), so that "the target is looked at
 * again when stuckAfter runs out" is a statement about the clock, not about how busy the machine is.
 * Only deadlines the product keeps go through it (tracker timers, leader election, shutdown grace):
 * network timeouts and retry backoffs stay on real time.
 */
export interface Timer {
  cancel(): void;
}

export interface Clock {
  /** ms since the epoch */
  now(): number;
  /** runs `fn` once `ms` have passed on this clock; never keeps the process alive on its own */
  setTimer(fn: () => void, ms: number): Timer;
}

/** The largest delay a Node timer takes (a longer one fires at once). */
const MAX_DELAY_MS = 2 ** 31 - 1;

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer(fn, ms) {
    const handle = setTimeout(fn, Math.max(0, Math.min(ms, MAX_DELAY_MS)));
    handle.unref?.();
    return { cancel: () => clearTimeout(handle) };
  },
};
