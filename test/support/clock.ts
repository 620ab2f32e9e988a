import type { Clock, Timer } from '../../src/clock.ts';

/**
 * A clock the test drives (src/clock.ts): `now()` moves only when the test says, and a timer fires
 * when the test moves the clock past its deadline, in deadline order, each seeing `now()` at its
 * own deadline. Timers set by a firing timer are honoured within the same advance. Nothing here
 * depends on how fast the machine is: a test asserts *which* clock time something happened at.
 */
export interface TestClock extends Clock {
  /** moves the clock forward by `ms`, firing every timer due on the way */
  advance(ms: number): void;
  /** moves the clock to `at` (never backwards), firing every timer due on the way */
  advanceTo(at: number): void;
  /** the deadlines of the timers waiting, earliest first */
  readonly pending: number[];
  /** the earliest deadline waiting, if any */
  readonly next: number | undefined;
}

export function testClock(start = Date.now()): TestClock {
  let now = start;
  let seq = 0;
  const timers: Array<{ at: number; seq: number; fn: () => void; live: boolean }> = [];
  const sorted = () => timers.filter((t) => t.live).sort((a, b) => a.at - b.at || a.seq - b.seq);
  const clock: TestClock = {
    now: () => now,
    setTimer(fn, ms): Timer {
      const t = { at: now + Math.max(0, ms), seq: seq++, fn, live: true };
      timers.push(t);
      return { cancel: () => void (t.live = false) };
    },
    advance(ms) {
      clock.advanceTo(now + ms);
    },
    advanceTo(at) {
      for (;;) {
        const due = sorted().find((t) => t.at <= at);
        if (!due) break;
        due.live = false;
        timers.splice(timers.indexOf(due), 1);
        now = Math.max(now, due.at);
        due.fn();
      }
      now = Math.max(now, at);
      for (let i = timers.length - 1; i >= 0; i--) if (!timers[i]!.live) timers.splice(i, 1);
    },
    get pending() {
      return sorted().map((t) => t.at);
    },
    get next() {
      return sorted()[0]?.at;
    },
  };
  return clock;
}
