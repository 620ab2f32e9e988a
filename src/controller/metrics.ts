/**
 * The controller's Prometheus metrics (prom-client), on a registry of its own (no global
 * singleton: two controllers in one process, as the tests run them, keep their own counts).
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { ActionKind, VerdictState } from '../decide/types.ts';

export type RevertResult = 'created' | 'existing' | 'nothing-to-write' | 'refused' | 'impossible' | 'error';

export interface ControllerMetrics {
  readonly registry: Registry;
  /** a target's verdict changed (from undefined: first seen; to undefined: forgotten) */
  verdictChanged(from: VerdictState | undefined, to: VerdictState | undefined): void;
  decision(action: ActionKind): void;
  revert(result: RevertResult, failureToRevertSeconds?: number): void;
  watchRestart(kind: string): void;
  remoteError(system: string): void;
  synced(target: string, at: number): void;
  leader(is: boolean): void;
  recorded(): void;
}

export function controllerMetrics(opts: { processMetrics?: boolean } = {}): ControllerMetrics {
  const registry = new Registry();
  const targets = new Gauge({ name: 'lastgood_targets', help: 'Targets by their current verdict', labelNames: ['verdict'], registers: [registry] });
  for (const v of ['healthy', 'progressing', 'failed', 'stuck']) targets.set({ verdict: v }, 0);
  // counted on the hot path in plain fields, handed to prom-client when scraped
  const decided: Record<string, number> = {};
  new Counter({
    name: 'lastgood_decisions_total', help: 'Decisions made, by action', labelNames: ['action'], registers: [registry],
    collect() {
      for (const action of Object.keys(decided)) {
        if (decided[action]) this.inc({ action }, decided[action]);
        decided[action] = 0;
      }
    },
  });
  const reverts = new Counter({ name: 'lastgood_reverts_total', help: 'Reverts attempted, by outcome', labelNames: ['outcome'], registers: [registry] });
  const latency = new Histogram({
    name: 'lastgood_failure_to_revert_seconds',
    help: 'From the moment a target failed (as its objects tell it) to its revert written',
    buckets: [1, 5, 15, 30, 60, 120, 300, 600, 1200, 3600],
    registers: [registry],
  });
  const restarts = new Counter({ name: 'lastgood_watch_restarts_total', help: 'Watches restarted after an error, by kind', labelNames: ['kind'], registers: [registry] });
  const remote = new Counter({ name: 'lastgood_remote_errors_total', help: 'Errors of outside systems (git, github, kubernetes, webhook)', labelNames: ['system'], registers: [registry] });
  const syncedAt = new Map<string, number>();
  new Gauge({
    name: 'lastgood_target_last_sync_timestamp_seconds', help: 'When each target was last assessed from synced watches (Unix time)', labelNames: ['target'], registers: [registry],
    collect() {
      for (const [target, at] of syncedAt) this.set({ target }, at / 1000);
    },
  });
  const leader = new Gauge({ name: 'lastgood_leader', help: '1 when this replica is the acting leader', registers: [registry] });
  const recorded = new Counter({ name: 'lastgood_lkg_recorded_total', help: 'Verified last-known-good records written', registers: [registry] });
  if (opts.processMetrics) collectDefaultMetrics({ register: registry });
  return {
    registry,
    verdictChanged(from, to) {
      if (from) targets.dec({ verdict: from });
      if (to) targets.inc({ verdict: to });
    },
    decision(action) {
      decided[action] = (decided[action] ?? 0) + 1;
    },
    revert(result, seconds) {
      reverts.inc({ outcome: result });
      if (result === 'created' && seconds !== undefined && seconds >= 0) latency.observe(seconds);
    },
    watchRestart: (kind) => restarts.inc({ kind }),
    remoteError: (system) => remote.inc({ system }),
    synced: (target, at) => void syncedAt.set(target, at),
    leader: (is) => leader.set(is ? 1 : 0),
    recorded: () => recorded.inc(),
  };
}
