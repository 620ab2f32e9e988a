import test from 'ava';
import { V1MicroTime } from '@kubernetes/client-node';
import { leaderElector } from '../src/controller/leader.ts';
import { testClock, type TestClock } from './support/clock.ts';
import { startKubeEmulator, type KubeEmulator } from './support/kube-emulator.ts';
import { memoryLogger, until } from './support/controller-scenario.ts';

/**
 * Leader election on a Lease, through client-node against the Kubernetes API emulator. The
 * electors run on a clock the test moves (support/clock.ts): expiry, renew deadlines and retries
 * are asserted in that clock's time, whatever the load on the machine.
 */

// client-go's own timings: on the test's clock they cost no waiting, and each lease request may take
// the whole retry period (2 s, the elector's request timeout) of real time on a loaded machine
const TIMINGS = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2000 };
const LEASE = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', namespace: 'lastgood', name: 'lastgood-controller' };

function elector(kube: KubeEmulator, identity: string, events: string[], clock: TestClock) {
  return leaderElector({
    kc: kube.kubeConfig(), namespace: 'lastgood', name: 'lastgood-controller', identity, log: memoryLogger('silent').log, ...TIMINGS, clock,
    onStartedLeading: () => events.push(`${identity} leads`),
    onStoppedLeading: () => events.push(`${identity} stops`),
  });
}

/**
 * Moves the clock a step at a time until `done`, never while an elector is in the middle of a step:
 * before each move, every one of the `electors` has its next timer set (it is waiting on the clock).
 * Returns the clock time it took.
 */
async function advanceUntil(clock: TestClock, done: () => boolean, electors = 1, step = 100, limit = 120_000): Promise<number> {
  const from = clock.now();
  for (;;) {
    await until('the electors waiting on the clock', () => done() || clock.pending.length >= electors);
    if (done()) return clock.now() - from;
    if (clock.now() - from > limit) throw new Error(`not done within ${limit} ms of clock time`);
    clock.advance(step);
  }
}

const holder = (kube: KubeEmulator) => (kube.get(LEASE) as unknown as { spec: { holderIdentity?: string; leaseTransitions?: number; renewTime?: string } } | undefined)?.spec;

test('a lease held by a replica that died is taken only after it expired, as this process measures it', async (t) => {
  const kube = await startKubeEmulator({ namespaces: ['default', 'lastgood'] });
  t.teardown(() => kube.close());
  // a holder that renewed "just now" and then died: its renewTime never changes again
  const clock = testClock();
  kube.apply({ ...LEASE, metadata: { name: LEASE.name, namespace: LEASE.namespace }, spec: { holderIdentity: 'ghost', leaseDurationSeconds: 1, renewTime: new V1MicroTime(clock.now()).toISOString(), leaseTransitions: 3 } });
  const events: string[] = [];
  const e = elector(kube, 'alive', events, clock);
  e.start();
  t.teardown(() => e.stop());
  await until('the lease first read', () => kube.requests(/leases/).length > 0 && clock.next !== undefined);
  t.false(e.isLeader);
  const waited = await advanceUntil(clock, () => e.isLeader);
  t.true(waited >= 1000, `took over after ${waited} ms of clock time: not before the lease expired (1 s from when it was first seen)`);
  t.true(waited <= 1000 + TIMINGS.retryPeriodMs * 2.2 + 100, `and within a jittered retry period of it (${waited} ms)`);
  t.deepEqual(events, ['alive leads']);
  t.like(holder(kube), { holderIdentity: 'alive', leaseTransitions: 4 });
  t.regex(holder(kube)!.renewTime!, /\.\d{6}Z$/, 'MicroTime: six fractional digits');
});

test('two candidates: one leads and renews; the other stands by; a release hands over within a retry period', async (t) => {
  const kube = await startKubeEmulator({ namespaces: ['default', 'lastgood'] });
  t.teardown(() => kube.close());
  const clock = testClock();
  const events: string[] = [];
  const a = elector(kube, 'a', events, clock);
  const b = elector(kube, 'b', events, clock);
  a.start();
  await advanceUntil(clock, () => a.isLeader);
  b.start();
  t.teardown(() => Promise.all([a.stop(), b.stop()]));
  await until('b has read the lease', () => b.holder === 'a');
  const renewed = holder(kube)!.renewTime;
  // a few retry periods of clock time: the leader renews, the standby keeps standing by
  const renewals = () => kube.requests(/leases\/lastgood-controller$/).filter((r) => r.method === 'PUT').length;
  const before = renewals();
  await advanceUntil(clock, () => renewals() >= before + 3, 2);
  t.true(a.isLeader);
  t.false(b.isLeader);
  t.is(b.holder, 'a');
  t.not(holder(kube)!.renewTime, renewed, 'the leader renews');
  await a.stop();
  t.is(holder(kube)!.holderIdentity, '', 'released');
  const took = await advanceUntil(clock, () => b.isLeader);
  t.true(took <= TIMINGS.retryPeriodMs * 2.2 + 100, `a released lease is taken at the standby's next retry, not after it expired (${took} ms of clock time)`);
  t.deepEqual(events, ['a leads', 'a stops', 'b leads']);
});

test('a leader that cannot renew (API errors) steps down after the renew deadline', async (t) => {
  const kube = await startKubeEmulator({ namespaces: ['default', 'lastgood'] });
  t.teardown(() => kube.close());
  const clock = testClock();
  const events: string[] = [];
  const a = elector(kube, 'a', events, clock);
  a.start();
  t.teardown(() => a.stop());
  await advanceUntil(clock, () => a.isLeader);
  kube.failNext(/leases\/lastgood-controller$/, 100, 503);
  const took = await advanceUntil(clock, () => !a.isLeader);
  t.true(took >= TIMINGS.renewDeadlineMs - TIMINGS.retryPeriodMs, `not before the renew deadline (${took} ms of clock time)`);
  t.true(took <= TIMINGS.renewDeadlineMs + TIMINGS.retryPeriodMs + 100, `and at the first failed renewal past it (${took} ms)`);
  t.deepEqual(events, ['a leads', 'a stops']);
});

test('timings must keep retry < renew deadline < lease duration', (t) => {
  t.throws(() => leaderElector({ kc: undefined as never, namespace: 'x', name: 'y', identity: 'z', log: memoryLogger('silent').log, leaseDurationMs: 1000, renewDeadlineMs: 2000, retryPeriodMs: 100, onStartedLeading() {}, onStoppedLeading() {} }), { instanceOf: RangeError });
});
