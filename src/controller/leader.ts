/**
 * Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection package does it
 * (k8s.io/client-go/tools/leaderelection/leaderelection.go: tryAcquireOrRenew, renew, release;
 * learnt from, not copied): several replicas of the controller act as one.
 *
 * - Timings are client-go's defaults: a 15 s lease, a 10 s renew deadline, a 2 s retry period
 *   (with jitter for the candidates); retry < renew deadline < lease duration is enforced.
 * - Expiry is judged by this process's own clock, from when it last saw the lease record change,
 *   never by comparing its clock with another node's renewTime (clock skew between nodes).
 * - Every write is an update with the resourceVersion read (optimistic concurrency): of two
 *   candidates racing for an expired lease, the API server lets exactly one win (409 for the other).
 * - On shutdown the leader releases the lease (empty holder, 1 s duration), so a standby takes
 *   over within a retry period instead of a lease duration.
 * - Times are V1MicroTime (six fractional digits): a real API server refuses a millisecond Date.
 *
 * The Lease makes one replica act inside one cluster; it is not what prevents a second revert
 * (two clusters have two Leases): the repository is, and a leader that lost its lease mid-revert
 * is caught there too.
 */
import { CoordinationV1Api, Observable, V1MicroTime, type ConfigurationOptions, type KubeConfig, type V1Lease, type V1LeaseSpec } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { systemClock, type Clock, type Timer } from '../clock.ts';
import { kubeErrorText, kubeServer } from '../observe/kube-errors.ts';

export interface LeaderElectionOptions {
  kc: KubeConfig;
  namespace: string;
  name: string;
  /** this replica's identity (pod name and a random suffix) */
  identity: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  onStartedLeading(): void;
  onStoppedLeading(): void;
  log: Logger;
  /** the clock lease expiry is judged by and retries are timed on (default: the real one) */
  clock?: Clock;
}

export const LEASE_DURATION_MS = 15_000;
export const RENEW_DEADLINE_MS = 10_000;
export const RETRY_PERIOD_MS = 2_000;
/** client-go JitterFactor for candidates: wait between retry and retry × 2.2 */
const JITTER = 1.2;

export interface LeaderElector {
  readonly isLeader: boolean;
  /** the current holder as last read (may be this replica), '' when none */
  readonly holder: string;
  /** begins trying to acquire, then renewing, in the background */
  start(): void;
  /** stops; a leader releases the lease first */
  stop(): Promise<void>;
}

const status = (error: unknown): number | undefined => (error as { code?: number }).code;

export function leaderElector(opts: LeaderElectionOptions): LeaderElector {
  const leaseMs = opts.leaseDurationMs ?? LEASE_DURATION_MS;
  const renewDeadlineMs = opts.renewDeadlineMs ?? RENEW_DEADLINE_MS;
  const retryMs = opts.retryPeriodMs ?? RETRY_PERIOD_MS;
  const clock = opts.clock ?? systemClock;
  if (!(retryMs < renewDeadlineMs && renewDeadlineMs < leaseMs)) {
    throw new RangeError(`leader election needs retry period < renew deadline < lease duration (got ${retryMs} ms, ${renewDeadlineMs} ms, ${leaseMs} ms)`);
  }
  const leaseSeconds = Math.max(1, Math.round(leaseMs / 1000));
  const api = opts.kc.makeApiClient(CoordinationV1Api);
  const ref = { name: opts.name, namespace: opts.namespace };
  // each request ends within a retry period: a hung API server must not hold the loop past the renew deadline
  const timeout: ConfigurationOptions = {
    middleware: [{
      pre: (ctx) => {
        ctx.setSignal(AbortSignal.timeout(retryMs));
        return new Observable(Promise.resolve(ctx));
      },
      post: (res) => new Observable(Promise.resolve(res)),
    }],
    middlewareMergeStrategy: 'append',
  };

  let leader = false;
  let holder = '';
  let running = false;
  let timer: Timer | undefined;
  let tick: Promise<void> | undefined;
  let lastRenew = 0;
  let observedRecord = '';
  let observedAt = 0;

  const record = (spec: V1LeaseSpec | undefined) =>
    JSON.stringify([spec?.holderIdentity ?? '', String(spec?.renewTime ?? ''), String(spec?.acquireTime ?? ''), spec?.leaseTransitions ?? 0, spec?.leaseDurationSeconds ?? 0]);

  /** One attempt: true when this replica holds the lease afterwards. Never throws. */
  async function tryAcquireOrRenew(): Promise<boolean> {
    const now = new V1MicroTime(clock.now());
    let lease: V1Lease;
    try {
      lease = await api.readNamespacedLease(ref, timeout);
    } catch (error) {
      if (status(error) !== 404) {
        opts.log.warn({ err: kubeErrorText(error, kubeServer(opts.kc)), lease: opts.name }, 'cannot read the leader-election lease');
        return false;
      }
      try {
        const spec: V1LeaseSpec = { holderIdentity: opts.identity, leaseDurationSeconds: leaseSeconds, acquireTime: now, renewTime: now, leaseTransitions: 0 };
        const created = await api.createNamespacedLease({ namespace: opts.namespace, body: { metadata: { name: opts.name, namespace: opts.namespace }, spec } }, timeout);
        observedRecord = record(created.spec);
        observedAt = clock.now();
        holder = opts.identity;
        return true;
      } catch (createError) {
        if (status(createError) !== 409) opts.log.warn({ err: kubeErrorText(createError, kubeServer(opts.kc)), lease: opts.name }, 'cannot create the leader-election lease');
        return false;
      }
    }
    const spec = lease.spec ?? {};
    const seen = record(spec);
    if (seen !== observedRecord) {
      observedRecord = seen;
      observedAt = clock.now();
    }
    holder = spec.holderIdentity ?? '';
    const mine = holder === opts.identity;
    const durationMs = (spec.leaseDurationSeconds ?? leaseSeconds) * 1000;
    if (holder && !mine && observedAt + durationMs > clock.now()) return false;
    const next: V1LeaseSpec = {
      ...spec,
      holderIdentity: opts.identity,
      leaseDurationSeconds: leaseSeconds,
      renewTime: now,
      // read back as strings: sent again as MicroTime
      acquireTime: mine && spec.acquireTime ? microTime(spec.acquireTime) : now,
      leaseTransitions: (spec.leaseTransitions ?? 0) + (mine ? 0 : 1),
    };
    try {
      const updated = await api.replaceNamespacedLease({ ...ref, body: { ...lease, spec: next } }, timeout);
      observedRecord = record(updated.spec);
      observedAt = clock.now();
      holder = opts.identity;
      return true;
    } catch (error) {
      if (status(error) !== 409) opts.log.warn({ err: kubeErrorText(error, kubeServer(opts.kc)), lease: opts.name }, 'cannot update the leader-election lease');
      return false;
    }
  }

  async function step(): Promise<void> {
    const ok = await tryAcquireOrRenew();
    const now = clock.now();
    if (ok) {
      lastRenew = now;
      if (!leader && running) {
        leader = true;
        opts.log.info({ lease: opts.name, identity: opts.identity }, 'became the leader');
        opts.onStartedLeading();
      }
    } else if (leader && now - lastRenew >= renewDeadlineMs) {
      leader = false;
      opts.log.warn({ lease: opts.name, identity: opts.identity }, 'lost the lease: standing by');
      opts.onStoppedLeading();
    }
  }

  function schedule(): void {
    if (!running) return;
    const delay = leader ? retryMs : retryMs * (1 + Math.random() * JITTER);
    timer = clock.setTimer(() => {
      tick = step().finally(schedule);
    }, delay);
  }

  async function release(): Promise<void> {
    try {
      const lease = await api.readNamespacedLease(ref, timeout);
      if (lease.spec?.holderIdentity !== opts.identity) return;
      const now = new V1MicroTime(clock.now());
      await api.replaceNamespacedLease({ ...ref, body: { ...lease, spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: now, acquireTime: now } } }, timeout);
      opts.log.info({ lease: opts.name, identity: opts.identity }, 'released the lease');
    } catch (error) {
      opts.log.warn({ err: kubeErrorText(error, kubeServer(opts.kc)), lease: opts.name }, 'cannot release the lease (it expires by itself)');
    }
  }

  return {
    get isLeader() {
      return leader;
    },
    get holder() {
      return holder;
    },
    start() {
      if (running) return;
      running = true;
      tick = step().finally(schedule);
    },
    async stop() {
      running = false;
      timer?.cancel();
      await tick;
      if (leader) {
        leader = false;
        opts.onStoppedLeading();
        await release();
      }
    },
  };
}

function microTime(value: Date | string): V1MicroTime {
  const ms = typeof value === 'string' ? Date.parse(value) : value.getTime();
  return new V1MicroTime(Number.isNaN(ms) ? Date.now() : ms);
}
