import test from 'ava';
import { V1MicroTime } from '@kubernetes/client-node';
import { leaderElector } from '../src/controller/leader.ts';
import { startKubeEmulator, type KubeEmulator } from './support/kube-emulator.ts';
import { memoryLogger, until } from './support/controller-scenario.ts';

/** Leader election on a Lease, through client-node against the Kubernetes API emulator. */

const TIMINGS = { leaseDurationMs: 1200, renewDeadlineMs: 800, retryPeriodMs: 150 };
const LEASE = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', namespace: 'lastgood', name: 'lastgood-controller' };

function elector(kube: KubeEmulator, identity: string, events: string[]) {
  return leaderElector({
    kc: kube.kubeConfig(), namespace: 'lastgood', name: 'lastgood-controller', identity, log: memoryLogger('silent').log, ...TIMINGS,
    onStartedLeading: () => events.push(`${identity} leads`),
    onStoppedLeading: () => events.push(`${identity} stops`),
  });
}

const holder = (kube: KubeEmulator) => (kube.get(LEASE) as unknown as { spec: { holderIdentity?: string; leaseTransitions?: number; renewTime?: string } } | undefined)?.spec;

test('a lease held by a replica that died is taken only after it expired, as this process measures it', async (t) => {
  const kube = await startKubeEmulator({ namespaces: ['default', 'lastgood'] });
  t.teardown(() => kube.close());
  // a holder that renewed "just now" and then died: its renewTime never changes again
  kube.apply({ ...LEASE, metadata: { name: LEASE.name, namespace: LEASE.namespace }, spec: { holderIdentity: 'ghost', leaseDurationSeconds: 1, renewTime: new V1MicroTime().toISOString(), leaseTransitions: 3 } });
  const events: string[] = [];
  const e = elector(kube, 'alive', events);
  const started = Date.now();
  e.start();
  t.teardown(() => e.stop());
  await until('leading', () => e.isLeader, 5000);
  const waited = Date.now() - started;
  t.true(waited >= 1000, `took over after ${waited} ms: not before the lease expired (1 s from when it was first seen)`);
  t.deepEqual(events, ['alive leads']);
  t.like(holder(kube), { holderIdentity: 'alive', leaseTransitions: 4 });
  t.regex(holder(kube)!.renewTime!, /\.\d{6}Z$/, 'MicroTime: six fractional digits');
});

test('two candidates: one leads and renews; the other stands by; a release hands over within a retry period', async (t) => {
  const kube = await startKubeEmulator({ namespaces: ['default', 'lastgood'] });
  t.teardown(() => kube.close());
  const events: string[] = [];
  const a = elector(kube, 'a', events);
  const b = elector(kube, 'b', events);
  a.start();
  await until('a leads', () => a.isLeader);
  b.start();
  t.teardown(() => Promise.all([a.stop(), b.stop()]));
  const renewed = holder(kube)!.renewTime;
  await new Promise((r) => setTimeout(r, 700));
  t.true(a.isLeader);
  t.false(b.isLeader);
  t.is(b.holder, 'a');
  t.not(holder(kube)!.renewTime, renewed, 'the leader renews');
  const stopped = Date.now();
  await a.stop();
  t.is(holder(kube)!.holderIdentity, '', 'released');
  await until('b leads', () => b.isLeader, 3000);
  t.true(Date.now() - stopped < TIMINGS.leaseDurationMs, 'a released lease is taken without waiting for it to expire');
  t.deepEqual(events, ['a leads', 'a stops', 'b leads']);
});

test('a leader that cannot renew (API errors) steps down after the renew deadline', async (t) => {
  const kube = await startKubeEmulator({ namespaces: ['default', 'lastgood'] });
  t.teardown(() => kube.close());
  const events: string[] = [];
  const a = elector(kube, 'a', events);
  a.start();
  t.teardown(() => a.stop());
  await until('a leads', () => a.isLeader);
  kube.failNext(/leases\/lastgood-controller$/, 100, 503);
  const failing = Date.now();
  await until('a steps down', () => !a.isLeader, 5000);
  t.true(Date.now() - failing >= TIMINGS.renewDeadlineMs - TIMINGS.retryPeriodMs, 'not before the renew deadline');
  t.deepEqual(events, ['a leads', 'a stops']);
});

test('timings must keep retry < renew deadline < lease duration', (t) => {
  t.throws(() => leaderElector({ kc: undefined as never, namespace: 'x', name: 'y', identity: 'z', log: memoryLogger('silent').log, leaseDurationMs: 1000, renewDeadlineMs: 2000, retryPeriodMs: 100, onStartedLeading() {}, onStoppedLeading() {} }), { instanceOf: RangeError });
});
