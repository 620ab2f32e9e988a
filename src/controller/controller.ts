/**
 * `lastgood controller`: the in-cluster door onto the engine. It watches the objects the targets
 * name (observe/watch.ts), keeps each target's observations over time with the engine's tracker
 * (decide/tracker.ts), and calls the same engine functions as the CLI and the Action: `assessTarget`
 * for the verdict, `runTracked` to revert or alert, `recordHealthy` to record a verified
 * last-known-good. No stage logic here: what to do is the tracker's and decide's; this file only
 * says when (a change, a timer) and who (the leader).
 *
 * - Watch-driven: a change of an object re-decides its targets (changes within one turn of the
 *   event loop are one observation); the tracker's `nextAt` re-decides a target with no change
 *   (stuckAfter, a policy wait, the next confirmation, maxAge, cooldown, freezeUntil).
 * - The hot path (object change → verdict → decide) touches no repository; only a decision to act
 *   (revert, alert, hook) or a healthy revision not yet recorded does, on a queue of bounded
 *   concurrency, one job per target at a time: a revert in flight never delays other decisions.
 * - Exactly once: one leader acts (Lease); the tracker acts once per failure; and after a restart,
 *   or in another cluster watching the same target, the engine finds what was done in the
 *   repository itself (trailers, the PR branch lastgood/<target>/<bad12>, notes).
 * - Shutdown: no new work; a revert in flight finishes (or, past the grace period, is abandoned:
 *   a delivery is one ref update, so nothing is ever half-written); the lease is released.
 */
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { systemClock, type Clock, type Timer } from '../clock.ts';
import { parseDuration } from '../config/duration.ts';
import { Controller as ControllerSchema, resolveTarget, type Config, type ControllerConfig, type ResolvedTarget } from '../config/schema.ts';
import { failingRevision } from '../decide/guards.ts';
import { acted, evaluate, NEW_TRACK, observe, type Evaluation, type Track } from '../decide/tracker.ts';
import type { RepoGuards, Verdict } from '../decide/types.ts';
import { analysisSessions, assessTarget, gatherGuards, recordHealthy, recover, remindUnmerged, runTracked, type KnownRevert, type TargetOutcome } from '../engine/index.ts';
import { soaked } from '../decide/soak.ts';
import { phaseSeconds, recoveryMs } from '../decide/recovery.ts';
import type { RecoveryRecord } from '../history/notes.ts';
import { notYetAnalysed, type AnalysisResult, type AnalysisSession } from '../analysis/index.ts';
import { clusterReader } from '../observe/kube.ts';
import { kubeErrorText, kubeServer } from '../observe/kube-errors.ts';
import { LastgoodError, RemoteError } from '../errors.ts';
import { kindsToWatch, objectKey, watchObjects, type ObjectWatch, type WatchOptions } from '../observe/watch.ts';
import { groupKind, type Observed } from '../observe/types.ts';
import type { RepoBackend } from '../repo/types.ts';
import { isOwnRevert } from '../report/once.ts';
import { revertItselfFailed } from '../decide/guards.ts';
import { eventFor } from '../report/notify.ts';
import { readAuditLog } from '../audit/timeline.ts';
import { eventRecorder, type EventRecorder } from './events.ts';
import { serveEndpoints } from './http.ts';
import { leaderElector, type LeaderElector } from './leader.ts';
import { controllerMetrics, REMOTE_SYSTEMS, type ControllerMetrics, type RevertResult } from './metrics.ts';
import { renderPage, type PageTimeline } from './page.ts';
import { targetStatus, type KnownGood, type LastAction, type TargetsDocument } from './status.ts';

export interface ControllerOptions {
  config: Config;
  kc: KubeConfig;
  repo: RepoBackend;
  log: Logger;
  /** links to commits in PR bodies */
  commitUrl?: (sha: string) => string;
  /** this replica's name (default: POD_NAME or the host name, with a random suffix) */
  identity?: string;
  /** overrides of the config's controller section (tests: listen on 127.0.0.1:0) */
  settings?: Partial<ControllerConfig>;
  /** leader-election timings (default client-go's: 15 s, 10 s, 2 s), and the clock they run on (default: the real one) */
  lease?: { leaseDurationMs?: number; renewDeadlineMs?: number; retryPeriodMs?: number; clock?: Clock };
  watch?: WatchOptions;
  /** how long shutdown waits for repository work in flight (default 20 s, within the pod's 30 s grace) */
  shutdownGraceMs?: number;
  /** observers, for tests and the benchmark: every evaluation (with when its first change arrived, if a change queued it), every act */
  onEvaluated?(target: string, evaluation: Evaluation, at: number, changedAt: number | undefined): void;
  onActed?(target: string, outcome: TargetOutcome): void;
  /** test hook: runs after the engine delivered a revert, before the controller records anything of it */
  afterDeliver?(outcome: TargetOutcome): Promise<void>;
  /** serve Node's process metrics too (default true) */
  processMetrics?: boolean;
  /** the clock decisions are made on and deadlines kept by (default: the real one; tests drive their own) */
  clock?: Clock;
  /** where files named by the config are (analysis.prometheus.auth.*File; default: the working directory) */
  configDir?: string;
  /** observer, for tests and the benchmark: a target's metric checks after each update (the measurements it took) */
  onAnalysed?(target: string, result: AnalysisResult): void;
}

export interface Controller {
  /** starts the watches, leader election and the endpoints; resolves once started (not yet synced) */
  start(): Promise<void>;
  /** graceful stop: no new work, work in flight finishes within the grace period, the lease is released */
  stop(): Promise<void>;
  readonly ready: boolean;
  readonly isLeader: boolean;
  readonly identity: string;
  /** the endpoints' address, once started (undefined when not listening) */
  readonly address: AddressInfo | undefined;
  readonly metrics: ControllerMetrics;
  /** what the tracker remembers of a target (tests) */
  track(target: string): Track | undefined;
  /** each target's verdict, decision, what it waits for, last-known-good and last action: GET /targets */
  status(): TargetsDocument;
  /** resolves when no repository work is queued or in flight (tests) */
  idle(): Promise<void>;
}

/** One configured target and what the controller keeps for it. */
interface Slot {
  target: ResolvedTarget;
  /** store keys of its resources, and of the kinds they belong to (for "synced") */
  keys: string[];
  kinds: string[];
  track: Track;
  verdict?: Verdict;
  observed: Observed[];
  evaluation?: Evaluation;
  /** what was last logged (a line only when it changes) */
  said?: { verdict: string; action: string; heldBy: string | undefined };
  queued: boolean;
  /** when the change that queued the next evaluation arrived (undefined: a timer or a sync queued it) */
  changedAt?: number;
  timer?: Timer;
  /** when the timer fires, and when the tracker wants the target looked at again (may be later) */
  timerAt?: number;
  wantAt?: number;
  /** repository work for this target is queued or running */
  busy: boolean;
  /** what the repository said about past reverts, reused for the same failure until `until` */
  guards?: { key: string; guards: RepoGuards; until: number };
  /** commits recorded as verified last-known-good for this target (full SHAs) */
  recorded: Set<string>;
  log: Logger;
  /** for /targets: when it was last assessed, the newest last-known-good known, what was last done */
  assessedAt?: number;
  lastKnownGood?: KnownGood;
  lastAction?: LastAction;
  /** the failure (its tracker key) whose failed revert people were told about: its retries say nothing more */
  failureToldFor?: string;
  /** the failure (tracker key) whose revert exists: lastgood_target_reverted */
  revertedKey?: string;
  /**
   * Recovery (engine/recovery.ts): whether to look for it when the target has soaked healthy (it was
   * seen failing or stuck since the last look, or first seen healthy and not yet soaked after a
   * start); the revert this replica made, with the times it saw; the revision the engine reported
   * and when it was first seen; the last recovery known, for /targets.
   */
  recoveryDue: boolean;
  known?: KnownRevert;
  applied?: { sha: string; at: number };
  lastRecovery?: RecoveryRecord;
  /** pull-request mode with remindUnmerged: the revert request of a failure, reminded of while it stays open and the failure stays */
  reminder?: { key: string; outcome: TargetOutcome; timer?: Timer };
  /** metric checks (src/analysis/): the session keeps the measurements; an update runs off the hot path */
  analysis?: {
    session: AnalysisSession;
    /** the workload object the last update saw (an update is due when it changes) */
    seen?: unknown;
    /** an update is running or queued: the evaluation waits for it before acting */
    pending: boolean;
    /** the evidence the last evaluation used (the engine's run and record see the same) */
    evidence?: AnalysisResult['evidence'];
  };
}

const DEFAULT_GRACE_MS = 20_000;
/** How long GET /targets waits for the repository's records the first time (it answers with what it knows after that). */
const STATUS_RECORDS_WAIT_MS = 3_000;
/** The page's timeline: the repository's last 30 days, read again at most once a minute (of the controller's clock). */
const PAGE_TIMELINE_DAYS = 30;
const PAGE_TIMELINE_TTL_MS = 60_000;

export function createController(opts: ControllerOptions): Controller {
  const { config, repo, kc } = opts;
  const clock = opts.clock ?? systemClock;
  const settings: ControllerConfig = { ...ControllerSchema.parse(config.controller ?? {}), ...opts.settings };
  const intervalMs = parseDuration(settings.interval)!;
  const remindEveryMs = settings.remindUnmerged !== undefined ? parseDuration(settings.remindUnmerged) : undefined;
  const identity = opts.identity ?? `${process.env.POD_NAME || os.hostname()}_${randomUUID().slice(0, 8)}`;
  const namespace = settings.namespace ?? process.env.POD_NAMESPACE ?? 'lastgood';
  const log = opts.log.child({ controller: identity });
  const targets = config.targets.map((t) => resolveTarget(config, t));
  // every series from the first scrape, labelled only with what the config names
  const metrics = controllerMetrics({ processMetrics: opts.processMetrics ?? true, labels: { targets: targets.map((t) => t.name), kinds: [...new Set(targets.flatMap((t) => t.resources.map((r) => r.kind)))] } });

  // every target's resources, this one's included: the same verdict as "every other target's" (see assessTarget)
  const allResources = targets.map((t) => t.resources);
  const slots: Slot[] = targets.map((target) => ({
    target,
    keys: target.resources.map((r) => objectKey(groupKind(r.apiVersion, r.kind), r.namespace, r.name)),
    kinds: [...new Set(target.resources.map((r) => kindId(groupKind(r.apiVersion, r.kind), r.namespace)))],
    track: NEW_TRACK,
    observed: [],
    queued: false,
    busy: false,
    recorded: new Set(),
    recoveryDue: false,
    log: log.child({ target: target.name }),
  }));
  // metric checks: one session per target that has them; templates and ReplicaSets are read by name, on demand
  const sessionOf = analysisSessions(config, { read: clusterReader(kc), provider: { relativeTo: opts.configDir ?? process.cwd(), env: process.env } });
  for (const slot of slots) {
    const session = sessionOf(slot.target);
    if (session) slot.analysis = { session, pending: false };
  }
  const byKey = new Map<string, Slot[]>();
  const byKind = new Map<string, Slot[]>();
  for (const slot of slots) {
    for (const key of slot.keys) byKey.set(key, [...(byKey.get(key) ?? []), slot]);
    for (const kind of slot.kinds) byKind.set(kind, [...(byKind.get(kind) ?? []), slot]);
  }

  const syncedKinds = new Set<string>();
  const watch: ObjectWatch = watchObjects(kc, kindsToWatch(targets.flatMap((t) => t.resources)), {
    change(key) {
      const slots = byKey.get(key);
      if (!slots) return;
      const now = clock.now();
      for (const slot of slots) {
        slot.changedAt ??= now;
        enqueue(slot);
      }
    },
    synced(kind) {
      const gk = groupKind(kind.apiVersion, kind.kind);
      // a watch of every namespace covers the targets that name this kind in one namespace too
      const ids = kind.namespace ? [kindId(gk, kind.namespace)] : [...byKind.keys()].filter((id) => id.startsWith(`${gk}|`));
      log.info({ kind: `${kind.kind}.${kind.apiVersion}`, namespace: kind.namespace ?? '*' }, 'watch synced');
      for (const id of ids) {
        syncedKinds.add(id);
        // the first observation of a target is made once all its kinds are listed, and only then
        for (const slot of byKind.get(id) ?? []) if (slot.kinds.every((k) => syncedKinds.has(k))) enqueue(slot);
      }
    },
    restart(kind, error, delayMs) {
      metrics.watchRestart(kind.kind);
      log.warn({ kind: `${kind.kind}.${kind.apiVersion}`, namespace: kind.namespace ?? '*', delayMs, err: kubeErrorText(error, kubeServer(kc)) }, 'watch stopped on an error; restarting');
    },
    invalid(object, error) {
      log.warn({ kind: object.kind, namespace: object.metadata.namespace, name: object.metadata.name, err: error instanceof Error ? error.message : String(error) }, 'object refused: counts as not found');
    },
  }, opts.watch);

  let leading = settings.leaderElection === false;
  let stopping = false;
  let started = false;
  const elector: LeaderElector | undefined = settings.leaderElection === false ? undefined : leaderElector({
    kc, namespace, name: settings.leaseName, identity, log, ...opts.lease,
    onStartedLeading() {
      leading = true;
      metrics.leader(true);
      // act on what is already known: failures waiting for a leader, healthy revisions not recorded
      for (const slot of slots) consider(slot, clock.now());
    },
    onStoppedLeading() {
      leading = false;
      metrics.leader(false);
    },
  });
  metrics.leader(leading);
  const events: EventRecorder | undefined = settings.events ? eventRecorder(kc, identity, log) : undefined;
  let server: (http.Server & { address(): AddressInfo }) | undefined;

  // ---- the hot path: changes → one evaluation per target per turn of the event loop
  let pending: Slot[] = [];
  let flushing = false;
  function enqueue(slot: Slot): void {
    if (slot.queued || stopping) return;
    slot.queued = true;
    pending.push(slot);
    if (!flushing) {
      flushing = true;
      setImmediate(flush);
    }
  }
  function flush(): void {
    const batch = pending;
    pending = [];
    flushing = false;
    const now = clock.now();
    for (const slot of batch) {
      slot.queued = false;
      const changedAt = slot.changedAt;
      slot.changedAt = undefined;
      evaluateSlot(slot, now, changedAt);
    }
  }

  function evaluateSlot(slot: Slot, now: number, changedAt?: number): void {
    if (stopping || !slot.kinds.every((k) => syncedKinds.has(k))) return;
    const observed: Observed[] = [];
    for (const key of slot.keys) {
      const o = watch.get(key);
      if (o) observed.push(o);
    }
    const analysis = slot.analysis ? analyse(slot, observed, now) : undefined;
    if (slot.analysis) slot.analysis.evidence = analysis?.evidence ?? [];
    const verdict = assessTarget(slot.target, observed, new Date(now), allResources, analysis?.evidence);
    const before = slot.verdict?.verdict;
    noteRecovery(slot, verdict, now);
    slot.track = observe(slot.track, verdict, now);
    slot.verdict = verdict;
    slot.observed = observed;
    const guards = slot.guards && slot.guards.until > now ? slot.guards : undefined;
    const evaluation = evaluate(slot.track, { verdict, target: slot.target, now, intervalMs, ...recording(slot, verdict), ...(guards ? { guards: guards.guards } : {}) });
    slot.evaluation = evaluation;
    if (before !== verdict.verdict) metrics.verdictChanged(slot.target.name, before, verdict.verdict);
    metrics.decision(evaluation.decision.action);
    metrics.synced(slot.target.name, now);
    slot.assessedAt = now;
    // the failure whose revert exists is over (healed, or another failure): the gauge goes back to 0
    if (slot.revertedKey !== undefined && slot.revertedKey !== evaluation.failureKey) {
      slot.revertedKey = undefined;
      metrics.reverted(slot.target.name, false);
    }
    schedule(slot, earliest(evaluation.nextAt, analysis?.nextAt));
    tell(slot, evaluation);
    // the observer is told when the decision was made (a batch shares one clock reading `now`)
    if (opts.onEvaluated) opts.onEvaluated(slot.target.name, evaluation, clock.now(), changedAt);
    consider(slot, now);
  }

  /**
   * A target's metric checks: the evidence of the last update, and a new update (off the hot path,
   * its queries bounded) when the workload changed or a measurement is due; the target is evaluated
   * again when it ends.
   */
  function analyse(slot: Slot, observed: Observed[], now: number): AnalysisResult | undefined {
    const a = slot.analysis!;
    const last = a.session.last;
    const w = slot.target.analysis!.workload;
    const workload = observed.find((o) => o.object.kind === w.kind && o.object.metadata.name === w.name && o.object.metadata.namespace === w.namespace)?.object;
    const due = !last || a.seen !== workload || (last.nextAt !== undefined && last.nextAt <= now);
    if (due && !a.pending) {
      a.pending = true;
      const seen = workload;
      analysisJobs.push(async () => {
        try {
          const result = await a.session.update(observed, clock.now());
          a.seen = seen;
          for (const e of result.evidence) if (e.problem?.code === 3) metrics.remoteError(/^(kubernetes|prometheus)/.exec(e.problem.message)?.[1] ?? 'prometheus');
          opts.onAnalysed?.(slot.target.name, result);
        } catch (error) {
          slot.log.error({ err: error }, 'metric analysis failed');
        } finally {
          a.pending = false;
          if (!stopping) enqueue(slot);
        }
      });
      pumpAnalysis();
    }
    return last ?? notYetAnalysed(slot.target);
  }
  const analysisJobs: Array<() => Promise<void>> = [];
  let analysisRunning = 0;
  const ANALYSIS_CONCURRENCY = 16;
  function pumpAnalysis(): void {
    while (!stopping && analysisRunning < ANALYSIS_CONCURRENCY && analysisJobs.length > 0) {
      analysisRunning++;
      void analysisJobs.shift()!().finally(() => {
        analysisRunning--;
        pumpAnalysis();
      });
    }
  }

  /** Logs a target's verdict and decision when they change (not on every observation). */
  function tell(slot: Slot, e: Evaluation): void {
    const said = slot.said;
    if (said && said.verdict === e.verdict.verdict && said.action === e.decision.action && said.heldBy === e.decision.heldBy) return;
    slot.said = { verdict: e.verdict.verdict, action: e.decision.action, heldBy: e.decision.heldBy };
    slot.log.info({ revision: revisionOf(e.verdict), verdict: e.verdict.verdict, action: e.decision.action, reason: e.decision.reason }, 'decided');
  }

  /** The leader's part: act on the evaluation, or record a healthy revision. */
  function consider(slot: Slot, now: number): void {
    const e = slot.evaluation;
    // a decision on metric evidence older than what is observed waits for the update under way
    if (!e || !leading || stopping || slot.busy || slot.analysis?.pending) return;
    if (e.act) return work(slot, () => act(slot));
    // records (verified last-known-good, recoveries) are written where the config allows it
    if (e.verdict.verdict !== 'healthy' || !settings.record || !repo.notes) return;
    const sha = revisionOf(e.verdict);
    if (e.soak?.ok && sha && !isRecorded(slot, sha)) return work(slot, () => record(slot, now));
    if (slot.recoveryDue) {
      const soak = soaked({ verdict: e.verdict, soakMs: slot.target.soakMs, now, ...(slot.track.healthy ? { watched: slot.track.healthy } : {}) });
      if (soak.ok) work(slot, () => recovery(slot, soak.revision, soak.since, now));
      else if (soak.at !== undefined) schedule(slot, earliest(slot.wantAt, soak.at));
    }
  }

  /**
   * What recovery tracking keeps from each observation: the revision the engine reports (and when
   * it was first seen: the sync), and whether to look for a recovery once the target has soaked
   * healthy: after it was seen failing or stuck, or, after a start, when its first sight is a
   * healthy run not yet soaked (it may have just recovered while no replica watched).
   */
  function noteRecovery(slot: Slot, verdict: Verdict, now: number): void {
    const reported = verdict.evidence.map((x) => x.attempted?.sha).find(Boolean);
    if (reported && !(slot.applied && (slot.applied.sha.startsWith(reported) || reported.startsWith(slot.applied.sha)))) slot.applied = { sha: reported, at: now };
    if (verdict.verdict === 'failed' || verdict.verdict === 'stuck') slot.recoveryDue = true;
    else if (!slot.verdict && verdict.verdict === 'healthy') {
      const soak = soaked({ verdict, soakMs: slot.target.soakMs, now });
      if (!soak.ok) slot.recoveryDue = true;
    }
  }

  /** The target has soaked healthy at `revision`: did it recover from lastgood's revert? Recorded and announced once (engine/recovery.ts). */
  async function recovery(slot: Slot, revision: string, healthySince: number, now: number): Promise<void> {
    try {
      const applied = slot.applied && (slot.applied.sha.startsWith(revision) || revision.startsWith(slot.applied.sha)) ? slot.applied.at : undefined;
      const r = await recover({
        repo, config, target: slot.target, verdict: slot.verdict!, revision, healthySince, now: new Date(now), log: slot.log,
        ...(applied !== undefined ? { syncedAt: applied } : {}), ...(slot.known ? { known: slot.known } : {}), ...(opts.commitUrl ? { commitUrl: opts.commitUrl } : {}),
      });
      slot.recoveryDue = false;
      if (!r.recovered) {
        slot.log.debug({ revision, reason: r.reason }, 'no recovery to record');
        return;
      }
      slot.lastRecovery = r.record;
      slot.known = undefined;
      if (!r.claimed) {
        slot.log.info({ revision, revert: r.record.revert }, 'recovery recorded before (a retry, another replica): not announced again');
        return;
      }
      metrics.recovered(slot.target.name, r.record.mode, recoveryMs(r.times) / 1000, phaseSeconds(r.times));
      slot.log.info({ revision, revert: r.record.revert, recovery: r.sentence }, 'recovered');
      // the Event on the engine object that applied the revert (else the target's first object)
      const applier = r.outcome.evidence.find((x) => x.attempted?.sha);
      const regarding = (applier && observedOf(slot, applier)) ?? slot.observed[0];
      if (events && regarding) await events.record(regarding.object, r.outcome);
    } catch (error) {
      if (error instanceof RemoteError) metrics.remoteError(error.system);
      slot.log.warn({ err: error instanceof LastgoodError ? error.message : error }, 'cannot record the recovery (tried again on the next change)');
    }
  }

  /** A healthy revision not recorded yet: the tracker says when it will have soaked (and the controller looks again then). */
  function recording(slot: Slot, verdict: Verdict): { soakMs?: number } {
    if (!settings.record || !repo.notes || verdict.verdict !== 'healthy') return {};
    const sha = revisionOf(verdict);
    return sha && !isRecorded(slot, sha) ? { soakMs: slot.target.soakMs } : {};
  }

  /**
   * Looks at the target again at `at` (undefined: only a change will). A timer is an observation
   * too: the target is assessed at that moment, with no change. The hot path moves `at` on almost
   * every change (a progressing target's stuckAfter deadline follows its objects' times), so a
   * timer that would fire earlier is kept and, when it fires, re-armed for the time wanted then.
   */
  function schedule(slot: Slot, at: number | undefined): void {
    slot.wantAt = at;
    if (at === undefined || stopping) {
      slot.timer?.cancel();
      slot.timer = undefined;
      slot.timerAt = undefined;
      return;
    }
    if (slot.timer && slot.timerAt! <= at) return;
    slot.timer?.cancel();
    arm(slot, at);
  }
  function arm(slot: Slot, at: number): void {
    slot.timerAt = at;
    slot.timer = clock.setTimer(() => {
      slot.timer = undefined;
      slot.timerAt = undefined;
      const wanted = slot.wantAt;
      if (wanted === undefined || stopping) return;
      if (wanted > clock.now()) arm(slot, wanted);
      else enqueue(slot);
    }, at - clock.now());
  }

  // ---- repository work: bounded concurrency, one job per target
  const jobs: Array<() => Promise<void>> = [];
  const running = new Set<Promise<void>>();
  let idleWaiters: Array<() => void> = [];
  function work(slot: Slot, job: () => Promise<void>): void {
    slot.busy = true;
    jobs.push(async () => {
      try {
        await job();
      } catch (error) {
        slot.log.error({ err: error }, 'internal error');
      } finally {
        slot.busy = false;
        // what changed while the job ran is looked at now
        if (!stopping) consider(slot, clock.now());
      }
    });
    pump();
  }
  function pump(): void {
    while (!stopping && running.size < settings.concurrency && jobs.length > 0) {
      const p: Promise<void> = jobs.shift()!().finally(() => {
        running.delete(p);
        pump();
      });
      running.add(p);
    }
    if (running.size === 0 && (jobs.length === 0 || stopping)) {
      const waiters = idleWaiters;
      idleWaiters = [];
      for (const w of waiters) w();
    }
  }

  async function act(slot: Slot): Promise<void> {
    const verdict = slot.verdict;
    if (!verdict) return;
    const now = clock.now();
    // decide again on what is known now: the evaluation that queued this job may be stale (the
    // target healed, or this failure was acted on meanwhile); only then read the repository
    const cached = slot.guards && slot.guards.until > now ? slot.guards.guards : undefined;
    let e = evaluate(slot.track, { verdict, target: slot.target, now, intervalMs, ...(cached ? { guards: cached } : {}) });
    slot.evaluation = e;
    if (!e.act || !e.failureKey) return;
    const key = e.failureKey;
    const revision = revisionOf(e.verdict);
    const tlog = slot.log.child({ revision });
    let guards: RepoGuards;
    try {
      guards = slot.guards?.key === key && slot.guards.until > now ? slot.guards.guards : await gatherGuards({ repo, config, target: slot.target, verdict, now: new Date(now) });
    } catch (error) {
      failed(slot, key, error, tlog);
      return;
    }
    // decide again with what the repository says (cooldown, revert of a revert)
    e = evaluate(slot.track, { verdict, target: slot.target, now, intervalMs, guards });
    slot.evaluation = e;
    if (!e.act) {
      slot.guards = { key, guards, until: e.nextAt ?? now + intervalMs };
      slot.evaluation = e;
      schedule(slot, e.nextAt);
      tell(slot, e);
      return;
    }
    const outcome = await runTracked({
      config, observed: slot.observed, now: new Date(now), target: slot.target, evaluation: e, observations: slot.track.failedInARow, guards,
      repo, dryRun: false, log: tlog, failureAnnounced: slot.failureToldFor === key, ...(opts.commitUrl ? { commitUrl: opts.commitUrl } : {}), ...analysisOf(slot),
    });
    // a retry of this failure's failed revert tells nobody again (one revert-failed notification per failure)
    if (eventFor(outcome) === 'revert-failed') slot.failureToldFor = key;
    if (opts.afterDeliver && outcome.action === 'revert' && outcome.created) await opts.afterDeliver(outcome);
    slot.guards = undefined;
    slot.lastAction = {
      at: new Date().toISOString(), action: outcome.action, reason: outcome.reason, commit: outcome.commit ?? null, pullRequest: outcome.pullRequest ?? null,
      created: outcome.created ?? null, lastKnownGood: outcome.lastKnownGood ?? null, error: outcome.error?.message ?? null,
    };
    if (outcome.action === 'revert' && outcome.commit) {
      const began = e.verdict.since ? Date.parse(e.verdict.since) : Number.NaN;
      slot.known = { commit: outcome.commit, confirmed: now, written: clock.now(), ...(Number.isNaN(began) ? {} : { began }) };
    }
    if (outcome.action === 'revert' && (outcome.commit || outcome.pullRequest)) {
      slot.revertedKey = key;
      metrics.reverted(slot.target.name, true);
    }
    if (remindEveryMs !== undefined && outcome.action === 'revert' && outcome.pullRequest && slot.reminder?.key !== key) {
      slot.reminder?.timer?.cancel();
      slot.reminder = { key, outcome };
      remindLater(slot);
    }
    if (outcome.error) {
      failed(slot, key, new RemoteErrorLike(outcome.error.code, outcome.error.message), tlog);
      metrics.revert(slot.target.name, 'error');
      opts.onActed?.(slot.target.name, outcome);
      return;
    }
    slot.track = acted(slot.track, key, true, clock.now());
    slot.evaluation = evaluate(slot.track, { verdict, target: slot.target, now: clock.now(), intervalMs });
    // the failing revision is lastgood's own revert (history/locate.ts: no revert of a revert): the
    // rollback did not recover the target; said once per failure, as every act is
    if (outcome.action === 'alert' && revertItselfFailed(outcome.reason)) metrics.notRecovered(slot.target.name);
    const result = revertResult(outcome);
    if (result) {
      const since = e.verdict.since ? Date.parse(e.verdict.since) : undefined;
      metrics.revert(slot.target.name, result, since === undefined ? undefined : (clock.now() - since) / 1000);
    }
    tlog.info({ action: outcome.action, commit: outcome.commit, pullRequest: outcome.pullRequest, created: outcome.created, reason: outcome.reason }, outcome.action === 'revert' ? 'revert done' : 'acted');
    opts.onActed?.(slot.target.name, outcome);
    // the Event, once per revert whoever made it (a leader killed after its push left it to this one): events.ts eventName
    const failing = failingObject(slot, e.verdict);
    if (events && failing && (outcome.action === 'alert' || (await isOwnRevert(repo, outcome).catch(() => false)))) await events.record(failing.object, outcome);
  }

  function failed(slot: Slot, key: string, error: unknown, tlog: Logger): void {
    slot.track = acted(slot.track, key, false, clock.now());
    if (error instanceof RemoteError) metrics.remoteError(error.system);
    // the engine reports a target's error in its outcome: RemoteError messages start with the system
    else if (error instanceof RemoteErrorLike && error.code === 3) metrics.remoteError(new RegExp(`^(${REMOTE_SYSTEMS.join('|')}): `).exec(error.message)?.[1] ?? 'unknown');
    const retry = evaluate(slot.track, { verdict: slot.verdict!, target: slot.target, now: clock.now(), intervalMs });
    slot.evaluation = retry;
    schedule(slot, retry.nextAt);
    tlog.error({ err: error instanceof LastgoodError || error instanceof RemoteErrorLike ? error.message : error, retryAt: retry.nextAt ? new Date(retry.nextAt).toISOString() : undefined }, 'acting failed; will retry');
  }

  // ---- reminders of an open revert request (controller.remindUnmerged)
  function remindLater(slot: Slot): void {
    const r = slot.reminder;
    if (!r || remindEveryMs === undefined || stopping) return;
    r.timer = clock.setTimer(() => {
      r.timer = undefined;
      if (slot.reminder !== r || stopping) return;
      work(slot, () => remind(slot, r));
    }, remindEveryMs);
  }
  /**
   * One reminder, if it is still due: the failure it is about is still the target's (not healed,
   * not another failure), this replica leads, and the request is still open on the host (merged or
   * closed: no more reminders). Then the next one an interval later; never more often.
   */
  async function remind(slot: Slot, r: NonNullable<Slot['reminder']>): Promise<void> {
    const e = slot.evaluation;
    if (!e || e.failureKey !== r.key || (e.verdict.verdict !== 'failed' && e.verdict.verdict !== 'stuck')) {
      slot.reminder = undefined;
      return;
    }
    if (!leading) return remindLater(slot);
    try {
      const branch = r.outcome.branch;
      const requests = branch && repo.reviewRequests ? await repo.reviewRequests({ base: config.repo.branch, branchPrefix: branch }) : undefined;
      const request = requests?.find((q) => q.url === r.outcome.pullRequest || q.branch === branch);
      if (request && request.state !== 'open') {
        slot.log.info({ pullRequest: request.url, state: request.state }, 'the revert request is no longer open: no more reminders');
        slot.reminder = undefined;
        return;
      }
      await remindUnmerged(r.outcome, { config, log: slot.log, now: new Date(clock.now()), repo, ...(opts.commitUrl ? { commitUrl: opts.commitUrl } : {}) });
      metrics.reminded(slot.target.name);
      slot.log.warn({ pullRequest: r.outcome.pullRequest }, 'the revert request is still open and the target still failed: reminded');
    } catch (error) {
      if (error instanceof RemoteError) metrics.remoteError(error.system);
      slot.log.warn({ err: error instanceof LastgoodError ? error.message : error }, 'cannot read the revert request for its reminder (tried again at the next one)');
    }
    remindLater(slot);
  }

  // ---- verified last-known-good, as it happens
  let recordedLoad: Promise<void> | undefined;
  function isRecorded(slot: Slot, sha: string): boolean {
    for (const c of slot.recorded) if (c.startsWith(sha) || sha.startsWith(c)) return true;
    return false;
  }
  /** What earlier runs recorded is in the repository: read once, so a restart records nothing twice (and /targets shows each target's newest). */
  function loadRecorded(store: NonNullable<ReturnType<NonNullable<RepoBackend['notes']>>>): Promise<void> {
    return (recordedLoad ??= store.list().then((records) => {
      const bySlot = new Map(slots.map((s) => [s.target.name, s]));
      for (const r of records) {
        const s = bySlot.get(r.target);
        if (!s) continue;
        s.recorded.add(r.commit);
        // newest first: the first record of a target is its newest last-known-good
        s.lastKnownGood ??= { commit: r.commit, at: r.at, source: 'repository' };
      }
      // newest first: each target's newest recovery on record, for /targets (a store that cannot say is left out)
      return store.recoveries?.().then((recoveries) => {
        for (const r of recoveries ?? []) {
          const s = bySlot.get(r.target);
          if (s) s.lastRecovery ??= r;
        }
      });
    }));
  }
  async function record(slot: Slot, now: number): Promise<void> {
    const store = repo.notes?.();
    if (!store) return;
    try {
      await loadRecorded(store);
      const sha = revisionOf(slot.verdict!);
      if (!sha || isRecorded(slot, sha) || slot.verdict?.verdict !== 'healthy') return;
      const watched = slot.track.healthy ? new Map([[slot.target.name, slot.track.healthy]]) : undefined;
      for (const r of await recordHealthy({ config, observed: slot.observed, now: new Date(now), target: slot.target.name, repo, ...analysisOf(slot), ...(watched ? { watched } : {}) })) {
        if (r.recorded && r.commit) {
          slot.recorded.add(r.commit);
          slot.lastKnownGood = { commit: r.commit, at: new Date(now).toISOString(), source: 'recorded' };
          metrics.recorded();
          slot.log.info({ revision: r.commit }, 'recorded verified last-known-good');
        } else if (r.soaking) {
          // healthy, not for the whole soak yet: the tracker looks again when it will have soaked
          slot.log.debug({ revision: sha, reason: r.reason }, 'not recorded yet');
        } else {
          // not a commit of this repository (or no revision told): remember it, do not ask again
          slot.recorded.add(sha);
          slot.log.info({ revision: sha, reason: r.reason }, 'not recorded');
        }
      }
    } catch (error) {
      recordedLoad = undefined;
      if (error instanceof RemoteError) metrics.remoteError(error.system);
      slot.log.warn({ err: error instanceof LastgoodError ? error.message : error }, 'cannot record the verified last-known-good (tried again on the next change)');
    }
  }

  function failingObject(slot: Slot, verdict: Verdict): Observed | undefined {
    const e = verdict.evidence.find((x) => x.state === 'failed' && !x.foreign) ?? verdict.evidence.find((x) => x.state === 'progressing');
    return e ? observedOf(slot, e) : undefined;
  }
  function observedOf(slot: Slot, e: Verdict['evidence'][number]): Observed | undefined {
    return slot.observed.find((o) => o.object.metadata.name === e.name && o.object.metadata.namespace === e.namespace && groupKind(o.object.apiVersion, o.object.kind) === e.groupKind);
  }

  // the page's timeline (pageTimeline below): the last log read, and the read under way
  let pageLog: { at: number; timeline: PageTimeline } | undefined;
  let pageLogReading: Promise<PageTimeline> | undefined;

  return {
    async start() {
      if (started) return;
      started = true;
      log.info({ targets: slots.length, repo: repo.description, namespace, leaderElection: settings.leaderElection }, 'starting');
      if (settings.listen) {
        server = await serveEndpoints(settings.listen, { registry: metrics.registry, readiness, targets: statusWithRecords, page });
        log.info({ address: server.address() }, 'serving /healthz, /readyz, /metrics');
      }
      elector?.start();
      await watch.start();
    },
    async stop() {
      if (stopping) return;
      stopping = true;
      log.info({ inFlight: running.size, queued: jobs.length }, 'stopping');
      for (const slot of slots) {
        slot.timer?.cancel();
        slot.reminder?.timer?.cancel();
      }
      const abandoned = jobs.length;
      jobs.length = 0;
      if (abandoned) log.info({ abandoned }, 'queued repository work abandoned (nothing of it was written)');
      await watch.stop();
      const grace = opts.shutdownGraceMs ?? DEFAULT_GRACE_MS;
      let timer: Timer | undefined;
      const finished = await Promise.race([
        Promise.allSettled([...running]).then(() => true),
        new Promise<boolean>((resolve) => (timer = clock.setTimer(() => resolve(false), grace))),
      ]);
      timer?.cancel();
      if (!finished) log.warn({ graceMs: grace }, 'repository work still in flight at the end of the grace period: abandoned (a delivery is one ref update: nothing is half-written)');
      await elector?.stop();
      if (server) await new Promise<void>((resolve) => server!.close(() => resolve()));
      server?.closeAllConnections();
      log.info({}, 'stopped');
    },
    get ready() {
      return readiness().ready;
    },
    get isLeader() {
      return leading;
    },
    identity,
    get address() {
      return server?.address() as AddressInfo | undefined;
    },
    metrics,
    track: (name) => slots.find((s) => s.target.name === name)?.track,
    status,
    idle: () => (running.size === 0 && jobs.length === 0 ? Promise.resolve() : new Promise<void>((resolve) => idleWaiters.push(resolve))),
  };

  function status(): TargetsDocument {
    return {
      controller: identity, leader: leading, synced: watch.synced, now: new Date().toISOString(),
      targets: slots.map((slot) => targetStatus({
        target: slot.target, track: slot.track,
        ...(slot.evaluation ? { evaluation: slot.evaluation } : {}),
        ...(slot.guards ? { guards: slot.guards.guards } : {}),
        ...(slot.verdict && revisionOf(slot.verdict) ? { revision: revisionOf(slot.verdict)! } : {}),
        ...(slot.lastKnownGood ? { lastKnownGood: slot.lastKnownGood } : {}),
        ...(slot.lastAction ? { lastAction: slot.lastAction } : {}),
        ...(slot.lastRecovery ? { lastRecovery: slot.lastRecovery } : {}),
        ...(slot.assessedAt !== undefined ? { assessedAt: slot.assessedAt } : {}),
      })),
    };
  }

  /**
   * GET /targets: the first time someone asks, each target's last-known-good on record is read
   * from the repository (one read, not at start: a controller nobody asks reads nothing more),
   * waiting for it a few seconds at most; a failure is tried again on the next ask.
   */
  async function statusWithRecords(): Promise<TargetsDocument> {
    const store = settings.record ? repo.notes?.() : undefined;
    if (store && !recordedLoad) {
      const loading = loadRecorded(store).catch((error: unknown) => {
        recordedLoad = undefined;
        log.warn({ err: error instanceof LastgoodError ? error.message : error }, 'cannot read the verified last-known-good records for /targets');
      });
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([loading, new Promise<void>((resolve) => (timer = setTimeout(resolve, STATUS_RECORDS_WAIT_MS)))]);
      clearTimeout(timer);
    }
    return status();
  }

  /**
   * GET /: the targets as /targets tells them, and the repository's last 30 days as a timeline.
   * The log is read once for every page asked within a minute of the controller's clock, and once
   * at a time (a page asked while it is read waits for that read); a failure too is kept for the
   * minute (a host that fails is not asked again by each page), and the page says why.
   */
  function pageTimeline(): Promise<PageTimeline> {
    const at = clock.now();
    if (pageLog && at - pageLog.at < PAGE_TIMELINE_TTL_MS) return Promise.resolve(pageLog.timeline);
    return (pageLogReading ??= readAuditLog({
      repo, branch: config.repo.branch, targets: targets.map((t) => ({ name: t.name, paths: t.paths })),
      since: new Date(at - PAGE_TIMELINE_DAYS * 86_400_000), why: `the last ${PAGE_TIMELINE_DAYS} days`, now: new Date(at),
    }).then(
      (auditLog): PageTimeline => ({ log: auditLog }),
      (error: unknown): PageTimeline => {
        log.warn({ err: error instanceof LastgoodError ? error.message : error }, 'cannot read the repository\'s history for the page');
        return { error: error instanceof Error ? error.message : String(error) };
      },
    ).then((timeline) => {
      pageLog = { at, timeline };
      pageLogReading = undefined;
      return timeline;
    }));
  }
  async function page(): Promise<string> {
    const [doc, timeline] = await Promise.all([statusWithRecords(), pageTimeline()]);
    return renderPage(doc, timeline, { days: PAGE_TIMELINE_DAYS, commitUrl: (sha) => opts.commitUrl?.(sha) ?? repo.commitUrl?.(sha) });
  }

  function readiness() {
    const synced = watch.synced;
    const electing = elector === undefined || started;
    return {
      ready: started && !stopping && synced && electing,
      detail: { synced, leader: leading, ...(elector ? { holder: elector.holder } : {}), ...(stopping ? { stopping: true } : {}) },
    };
  }
}

/** The metric evidence a slot's last evaluation used, for the engine's run and record. */
function analysisOf(slot: Slot): { analysis?: Map<string, { evidence: AnalysisResult['evidence'] }> } {
  return slot.analysis ? { analysis: new Map([[slot.target.name, { evidence: slot.analysis.evidence ?? [] }]]) } : {};
}

function earliest(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined ? b : b === undefined ? a : Math.min(a, b);
}

/** The failing revision of a failed verdict, the running one of a healthy verdict. */
function revisionOf(verdict: Verdict): string | undefined {
  if (verdict.verdict === 'healthy') return verdict.evidence.map((e) => e.attempted?.sha ?? e.lastSucceeded?.sha).find(Boolean);
  return failingRevision(verdict.evidence);
}

function kindId(gk: string, namespace: string | undefined): string {
  return `${gk}|${namespace ?? '*'}`;
}

function revertResult(o: TargetOutcome): RevertResult | undefined {
  if (o.action === 'revert') {
    if (o.created) return 'created';
    if (o.commit || o.pullRequest) return 'existing';
    return 'nothing-to-write';
  }
  if (/^refused by the blast-radius guard/.test(o.reason)) return 'refused';
  if (/^revert impossible/.test(o.reason)) return 'impossible';
  return undefined;
}

/** A target's run ended in an error the engine reported in its outcome (code 3: an outside system). */
class RemoteErrorLike extends Error {
  readonly code: number;
  constructor(code: number, message: string) {
    super(message);
    this.code = code;
  }
}
