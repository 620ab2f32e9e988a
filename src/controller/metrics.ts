/**
 * The controller's Prometheus metrics (prom-client), on a registry of its own (no global
 * singleton: two controllers in one process, as the tests run them, keep their own counts).
 *
 * Every series is there from the first scrape: counters at 0, each label value the controller can
 * give (every configured target, every watched kind, every action and outcome) — a series that
 * appears only with its first increment makes `rate()` and `increase()` miss that increment, and an
 * alert on it never fires the first time (the Prometheus docs' "Avoid missing metrics"). Label
 * values are bounded by the config: `target` is a configured target's name, `kind` a kind the
 * targets name, never a value read from the cluster or a payload.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { ActionKind, VerdictState } from '../decide/types.ts';
import { RECOVERY_PHASES } from '../decide/recovery.ts';

export type RevertResult = 'created' | 'existing' | 'nothing-to-write' | 'refused' | 'impossible' | 'error';

export const VERDICTS: readonly VerdictState[] = ['healthy', 'progressing', 'failed', 'stuck'];
export const ACTIONS: readonly ActionKind[] = ['none', 'wait', 'revert', 'alert'];
export const REVERT_RESULTS: readonly RevertResult[] = ['created', 'existing', 'nothing-to-write', 'refused', 'impossible', 'error'];
/** the outside systems the controller meets (RemoteError's, src/errors.ts, but the CLI's `controller`), at 0 from the start */
export const REMOTE_SYSTEMS: readonly string[] = ['git', 'github', 'gitlab', 'gitea', 'bitbucket', 'azure-devops', 'kubernetes', 'webhook', 'prometheus'];

/** What the metrics are labelled with: the config's, nothing else. */
export interface MetricLabels {
  targets: readonly string[];
  /** the kinds the targets name (lastgood_watch_restarts_total{kind}) */
  kinds: readonly string[];
}

export interface ControllerMetrics {
  readonly registry: Registry;
  /** a target's verdict changed (from undefined: first seen; to undefined: forgotten) */
  verdictChanged(target: string, from: VerdictState | undefined, to: VerdictState | undefined): void;
  decision(action: ActionKind): void;
  revert(target: string, result: RevertResult, failureToRevertSeconds?: number): void;
  /** whether the target's current failure has its revert (a commit on the branch or a request open): lastgood_target_reverted */
  reverted(target: string, is: boolean): void;
  watchRestart(kind: string): void;
  remoteError(system: string): void;
  synced(target: string, at: number): void;
  leader(is: boolean): void;
  recorded(): void;
  /** the target still failed at lastgood's own revert (the rollback did not recover it): lastgood_rollbacks_not_recovered_total */
  notRecovered(target: string): void;
  /** a reminder that the target's revert request is still open while it stays failed: lastgood_revert_reminders_total */
  reminded(target: string): void;
  /** a revert's recovery, observed once by the replica that recorded it: lastgood_recovery_seconds and lastgood_recovery_phase_seconds */
  recovered(target: string, mode: 'commit' | 'pull-request', seconds: number, phases: Array<{ phase: string; seconds: number }>): void;
}

/** The metric names, for docs/monitoring.md, the dashboard and the alert rules (test/monitoring.test.ts checks them against a scrape). */
export const METRIC_NAMES = [
  'lastgood_targets', 'lastgood_target_verdict', 'lastgood_target_reverted', 'lastgood_decisions_total', 'lastgood_reverts_total',
  'lastgood_failure_to_revert_seconds', 'lastgood_watch_restarts_total', 'lastgood_remote_errors_total',
  'lastgood_target_last_sync_timestamp_seconds', 'lastgood_leader', 'lastgood_lkg_recorded_total', 'lastgood_rollbacks_not_recovered_total', 'lastgood_revert_reminders_total',
  'lastgood_recovery_seconds', 'lastgood_recovery_phase_seconds',
] as const;

export function controllerMetrics(opts: { processMetrics?: boolean; labels?: MetricLabels } = {}): ControllerMetrics {
  const registry = new Registry();
  const names = opts.labels?.targets ?? [];
  const targets = new Gauge({ name: 'lastgood_targets', help: 'Targets by their current verdict', labelNames: ['verdict'], registers: [registry] });
  for (const v of VERDICTS) targets.set({ verdict: v }, 0);
  const verdictOf = new Gauge({ name: 'lastgood_target_verdict', help: "1 for each target's current verdict, 0 for the others (all 0 before its first assessment)", labelNames: ['target', 'verdict'], registers: [registry] });
  for (const target of names) for (const verdict of VERDICTS) verdictOf.set({ target, verdict }, 0);
  const reverted = new Gauge({ name: 'lastgood_target_reverted', help: "1 while the target's current failure has its revert (a commit on the branch, or a request opened or found), else 0", labelNames: ['target'], registers: [registry] });
  for (const target of names) reverted.set({ target }, 0);
  // counted on the hot path in plain fields, handed to prom-client when scraped
  const decided: Record<string, number> = {};
  const decisions = new Counter({
    name: 'lastgood_decisions_total', help: 'Decisions made, by action', labelNames: ['action'], registers: [registry],
    collect() {
      for (const action of Object.keys(decided)) {
        if (decided[action]) this.inc({ action }, decided[action]);
        decided[action] = 0;
      }
    },
  });
  for (const action of ACTIONS) decisions.inc({ action }, 0);
  const reverts = new Counter({ name: 'lastgood_reverts_total', help: 'Reverts attempted, by target and outcome', labelNames: ['target', 'outcome'], registers: [registry] });
  for (const target of names) for (const outcome of REVERT_RESULTS) reverts.inc({ target, outcome }, 0);
  const latency = new Histogram({
    name: 'lastgood_failure_to_revert_seconds',
    help: 'From the moment a target failed (as its objects tell it) to its revert written',
    buckets: [1, 5, 15, 30, 60, 120, 300, 600, 1200, 3600],
    registers: [registry],
  });
  const restarts = new Counter({ name: 'lastgood_watch_restarts_total', help: 'Watches restarted after an error, by kind', labelNames: ['kind'], registers: [registry] });
  for (const kind of opts.labels?.kinds ?? []) restarts.inc({ kind }, 0);
  const remote = new Counter({ name: 'lastgood_remote_errors_total', help: 'Errors of outside systems (the git host or its API, kubernetes, webhook, prometheus), by system', labelNames: ['system'], registers: [registry] });
  for (const system of REMOTE_SYSTEMS) remote.inc({ system }, 0);
  const syncedAt = new Map<string, number>(names.map((n) => [n, 0]));
  new Gauge({
    name: 'lastgood_target_last_sync_timestamp_seconds', help: 'When each target was last assessed from synced watches (Unix time; 0 before the first assessment)', labelNames: ['target'], registers: [registry],
    collect() {
      for (const [target, at] of syncedAt) this.set({ target }, at / 1000);
    },
  });
  const leader = new Gauge({ name: 'lastgood_leader', help: '1 when this replica is the acting leader', registers: [registry] });
  const recorded = new Counter({ name: 'lastgood_lkg_recorded_total', help: 'Verified last-known-good records written', registers: [registry] });
  const notRecovered = new Counter({
    name: 'lastgood_rollbacks_not_recovered_total', help: "Failures of a target at lastgood's own revert: the rollback did not recover it (lastgood alerts, and never reverts its revert)", labelNames: ['target'], registers: [registry],
  });
  for (const target of names) notRecovered.inc({ target }, 0);
  const reminders = new Counter({
    name: 'lastgood_revert_reminders_total', help: "Reminders that lastgood's revert request of a failure is still open while the target stays failed (controller.remindUnmerged)", labelNames: ['target'], registers: [registry],
  });
  for (const target of names) reminders.inc({ target }, 0);
  const recovery = new Histogram({
    name: 'lastgood_recovery_seconds', help: "From the moment a target failed to the moment it was healthy again at lastgood's revert (verified: healthy for the soak), by target and mode",
    labelNames: ['target', 'mode'], buckets: [60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 43200, 86400], registers: [registry],
  });
  const recoveryPhase = new Histogram({
    name: 'lastgood_recovery_phase_seconds', help: 'Each phase of a recovery: detect (failure to confirmed), revert (to written), review (to merged: pull-request mode), sync (to applied), rollout (to healthy)',
    labelNames: ['target', 'phase'], buckets: [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 86400], registers: [registry],
  });
  for (const target of names) {
    for (const mode of ['commit', 'pull-request']) recovery.zero({ target, mode });
    for (const phase of RECOVERY_PHASES) recoveryPhase.zero({ target, phase });
  }
  if (opts.processMetrics) collectDefaultMetrics({ register: registry });
  return {
    registry,
    verdictChanged(target, from, to) {
      if (from) targets.dec({ verdict: from });
      if (to) targets.inc({ verdict: to });
      for (const verdict of VERDICTS) verdictOf.set({ target, verdict }, verdict === to ? 1 : 0);
    },
    decision(action) {
      decided[action] = (decided[action] ?? 0) + 1;
    },
    revert(target, result, seconds) {
      reverts.inc({ target, outcome: result });
      if (result === 'created' && seconds !== undefined && seconds >= 0) latency.observe(seconds);
    },
    reverted: (target, is) => reverted.set({ target }, is ? 1 : 0),
    watchRestart: (kind) => restarts.inc({ kind }),
    remoteError: (system) => remote.inc({ system }),
    synced: (target, at) => void syncedAt.set(target, at),
    leader: (is) => leader.set(is ? 1 : 0),
    recorded: () => recorded.inc(),
    notRecovered: (target) => notRecovered.inc({ target }),
    reminded: (target) => reminders.inc({ target }),
    recovered(target, mode, seconds, phases) {
      recovery.observe({ target, mode }, seconds);
      for (const p of phases) recoveryPhase.observe({ target, phase: p.phase }, p.seconds);
    },
  };
}
