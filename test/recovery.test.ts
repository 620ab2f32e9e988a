import test from 'ava';
import fc from 'fast-check';
import { failureBegan, ordered, phases, recoveryMs, recoverySentence, type RecoveryTimes } from '../src/decide/recovery.ts';
import { formatRecovery, hasRecovery, parseRecoveries, type RecoveryRecord } from '../src/history/notes.ts';

/**
 * A recovery's phases (decide/recovery.ts) and its record on a git note (history/notes.ts): rules
 * that must hold for every set of times, whatever clocks they came from.
 */

const T0 = Date.parse('2026-11-28T12:00:00Z');
const time = fc.integer({ min: T0 - 86_400_000, max: T0 + 86_400_000 });
const times = fc.record({ began: time, confirmed: time, written: time, merged: fc.option(time, { nil: undefined }), synced: time, healthy: time })
  .map((t): RecoveryTimes => {
    const { merged, ...rest } = t;
    return merged === undefined ? rest : { ...rest, merged };
  });

test('for all times: phases are never negative, add up to the recovery, and review exists exactly in pull-request mode', (t) => {
  fc.assert(fc.property(times, (x) => {
    const p = phases(x);
    if (p.some((q) => q.ms < 0)) return false;
    if (p.reduce((a, q) => a + q.ms, 0) !== recoveryMs(x)) return false;
    if (p.some((q) => q.phase === 'review') !== (x.merged !== undefined)) return false;
    const o = ordered(x);
    return o.began === x.began && o.confirmed >= o.began && o.written >= o.confirmed && o.synced >= (o.merged ?? o.written) && o.healthy >= o.synced;
  }));
  t.pass();
});

test('times in order are kept as they are; the sentence names each phase', (t) => {
  const x = { began: T0, confirmed: T0 + 30_000, written: T0 + 41_000, merged: T0 + 223_000, synced: T0 + 293_000, healthy: T0 + 372_000 };
  t.deepEqual(ordered(x), x);
  t.is(recoverySentence(x), 'recovered at 2026-11-28T12:06:12Z, 6m12s after the failure began (detect 30s, revert 11s, review 3m2s, sync 1m10s, rollout 1m19s)');
  // a merge the host timed before the revert was written (another clock) takes no time, and takes none from the others
  t.deepEqual(phases({ ...x, merged: T0 }).map((p) => p.ms), [30_000, 11_000, 0, 252_000, 79_000]);
});

test('the failure began at the earliest time its evidence says; none when none says', (t) => {
  t.is(failureBegan(['2026-11-28T12:00:05Z', undefined, '2026-11-28T11:59:00Z', 'not a time']), Date.parse('2026-11-28T11:59:00Z'));
  t.is(failureBegan([undefined, 'garbage']), undefined);
});

const sha = fc.stringMatching(/^[0-9a-f]{40}$/);
const iso = time.map((ms) => new Date(ms).toISOString());
const record = fc.record({
  target: fc.stringMatching(/^[a-z0-9][a-z0-9-]{0,30}$/), revert: sha, revision: sha, mode: fc.constantFrom('commit' as const, 'pull-request' as const),
  began: iso, confirmed: iso, written: iso, merged: fc.option(iso, { nil: undefined }), synced: iso, healthy: iso,
}).map((r): RecoveryRecord => {
  const { merged, ...rest } = r;
  return merged === undefined ? rest : { ...rest, merged };
});

test('for all records: the note line reads back as written, among other lines, and says it is recorded', (t) => {
  fc.assert(fc.property(record, fc.array(fc.string({ unit: 'grapheme-ascii' }).filter((l) => !l.includes('\n') && !l.startsWith('lastgood recovered ')), { maxLength: 3 }), (r, others) => {
    const text = [...others, formatRecovery(r), ...others].join('\n');
    const back = parseRecoveries(text);
    const sorted = (o: object) => JSON.stringify(Object.fromEntries(Object.entries(o).sort(([a], [b]) => a.localeCompare(b))));
    return back.length === 1 && sorted(back[0]!) === sorted(r) && hasRecovery(text, r) && !hasRecovery(others.join('\n'), r);
  }));
  t.pass();
});

test('a recovery line that does not parse is left alone, not read as a recovery', (t) => {
  const good = formatRecovery({ target: 'web', revert: 'a'.repeat(40), revision: 'b'.repeat(40), mode: 'commit', began: '2026-11-28T12:00:00.000Z', confirmed: '2026-11-28T12:00:30.000Z', written: '2026-11-28T12:00:31.000Z', synced: '2026-11-28T12:01:00.000Z', healthy: '2026-11-28T12:02:00.000Z' });
  t.is(good, `lastgood recovered target=web revert=${'a'.repeat(40)} revision=${'b'.repeat(40)} mode=commit began=2026-11-28T12:00:00.000Z confirmed=2026-11-28T12:00:30.000Z written=2026-11-28T12:00:31.000Z synced=2026-11-28T12:01:00.000Z healthy=2026-11-28T12:02:00.000Z`);
  t.deepEqual(parseRecoveries(good.replace('mode=commit', 'mode=sideways')), []);
  t.deepEqual(parseRecoveries(good.replace('healthy=2026-11-28T12:02:00.000Z', 'healthy=soon')), []);
  t.is(parseRecoveries(`lastgood verified target=web at=2026-11-28T12:02:00Z evidence=x\n${good}`).length, 1);
});
