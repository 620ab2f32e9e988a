import test from 'ava';
import fc from 'fast-check';
import { backoffDelay, gitLockfileDelay, retry } from '../src/retry.ts';

/** The one retry rule (src/retry.ts, issue 38): its delays, and the loop that asks whether a lost write landed. */

const none = () => 0;
const most = (below: number) => Math.max(0, Math.ceil(below) - 1);

test('backoffDelay: base·2ⁿ, capped, plus a random part within its bound', (t) => {
  t.deepEqual([0, 1, 2, 3, 4].map((n) => backoffDelay(n, { baseMs: 250 }, none)), [250, 500, 1000, 2000, 4000]);
  t.deepEqual([0, 3, 9].map((n) => backoffDelay(n, { baseMs: 1000, maxMs: 5000 }, none)), [1000, 5000, 5000]);
  t.is(backoffDelay(2, { baseMs: 20, maxMs: 320, spreadMs: 100 }, most), 80 + 99);
  t.is(backoffDelay(1, { baseMs: 250, spread: 0.5 }, most), 500 + 249);
  t.is(backoffDelay(-3, { baseMs: 10 }, none), 10, 'a count below zero is the first wait');
  fc.assert(fc.property(fc.integer({ min: 0, max: 60 }), fc.integer({ min: 1, max: 10_000 }), fc.integer({ min: 1, max: 100_000 }), fc.double({ min: 0, max: 1, noNaN: true }), (n, base, cap, spread) => {
    const d = backoffDelay(n, { baseMs: base, maxMs: Math.max(cap, base), spread, spreadMs: 10 });
    const wait = Math.min(base * 2 ** n, Math.max(cap, base));
    return Number.isFinite(d) && d >= wait && d < wait + wait * spread + 10 + 1;
  }));
});

test("gitLockfileDelay: git's lockfile.c wait, about n² ms ±25%, at most about 1 s", (t) => {
  t.is(gitLockfileDelay(1, none), 0.75);
  t.is(gitLockfileDelay(3, most), (1249 * 9) / 1000);
  t.is(gitLockfileDelay(100, none), 750, 'the multiplier stops at 1000');
});

test('retry: tries again after a failure it may retry, stops on one it may not, and ends with a value found another way', async (t) => {
  const waits: number[] = [];
  const wait = async (ms: number) => void waits.push(ms);
  let calls = 0;
  const value = await retry(async () => {
    if (++calls < 3) throw new Error('503');
    return 'ok';
  }, { attempts: 4, backoff: { baseMs: 100 }, wait, onFailure: (e, _a, last) => { if (last || !/503/.test(String(e))) throw e; } });
  t.is(value, 'ok');
  t.deepEqual(waits, [100, 200]);

  await t.throwsAsync(retry(async () => { throw new Error('404'); }, { attempts: 4, backoff: { baseMs: 100 }, wait, onFailure: (e) => { throw new Error(`stopped: ${String(e)}`); } }), { message: 'stopped: Error: 404' });

  let sent = 0;
  const landed = await retry(async () => { sent++; throw new Error('socket hang up'); }, { attempts: 4, backoff: { baseMs: 100 }, wait, onFailure: (_e, attempt) => (attempt === 2 ? { value: 'found landed' } : undefined) });
  t.is(landed, 'found landed');
  t.is(sent, 2, 'not sent again once it was found');

  let tries = 0;
  await t.throwsAsync(retry(async () => { tries++; throw new Error('503'); }, { attempts: 3, backoff: { baseMs: 1 }, wait, onFailure: () => undefined }), { message: '503' });
  t.is(tries, 3, 'the last error is thrown after the attempts');
});
