/**
 * What `GET /targets` on the controller's port answers, and `lastgood status --controller URL`
 * prints: each target as the controller holds it in memory — its verdict and since when, the
 * policy's decision and what it waits for (confirmations, a policy `wait` deadline, a cooldown, a
 * freeze), the last-known-good it knows of, and the last thing it did. Pure: built from the
 * controller's own state (the tracker's evaluation, decide's decision), read by nothing else.
 */
import type { ResolvedTarget } from '../config/schema.ts';
import type { Evaluation, Track } from '../decide/tracker.ts';
import type { RepoGuards } from '../decide/types.ts';
import type { TargetOutcome } from '../engine/types.ts';
import { recoveryTimesOf, type RecoveryRecord } from '../history/notes.ts';
import { recoverySentence } from '../decide/recovery.ts';

export const TARGETS_PATH = '/targets';

export interface LastAction {
  at: string;
  action: TargetOutcome['action'];
  reason: string;
  commit: string | null;
  pullRequest: string | null;
  /** false: an earlier run (or another controller) had made it already */
  created: boolean | null;
  lastKnownGood: string | null;
  error: string | null;
}

export interface KnownGood {
  commit: string;
  /** when it was recorded (or seen recorded) */
  at: string | null;
  /** recorded by this process, or read from the repository's records */
  source: 'recorded' | 'repository';
}

export interface TargetStatus {
  name: string;
  /** unknown: not assessed yet (its watches have not all listed) */
  verdict: 'healthy' | 'progressing' | 'failed' | 'stuck' | 'unknown';
  class: string | null;
  /** since when the verdict holds: the objects' own time, else when this process first saw it */
  since: string | null;
  summary: string | null;
  decision: { action: string; reason: string; heldBy: string | null } | null;
  /** what the decision waits for, and until when where a time ends it */
  waitingFor: { guard: string; until: string | null; confirmations: { seen: number; needed: number } | null } | null;
  /** when the controller looks at the target again with no change (a timer) */
  nextLookAt: string | null;
  /** the revision the target failed at, or runs healthy */
  revision: string | null;
  lastKnownGood: KnownGood | null;
  lastAction: LastAction | null;
  /** the last recovery this controller recorded or found recorded: healthy again at lastgood's revert, and its phases' times */
  lastRecovery: (RecoveryRecord & { sentence: string }) | null;
  /** when it was last assessed */
  assessedAt: string | null;
}

export interface TargetsDocument {
  controller: string;
  leader: boolean;
  synced: boolean;
  now: string;
  targets: TargetStatus[];
}

export interface SlotView {
  target: ResolvedTarget;
  track: Track;
  evaluation?: Evaluation;
  /** the repository's guards the last decision used (cooldown) */
  guards?: RepoGuards;
  revision?: string;
  lastKnownGood?: KnownGood;
  lastAction?: LastAction;
  lastRecovery?: RecoveryRecord;
  assessedAt?: number;
}

const isoOf = (ms: number | undefined) => (ms === undefined || Number.isNaN(ms) ? null : new Date(ms).toISOString());

export function targetStatus(slot: SlotView): TargetStatus {
  const e = slot.evaluation;
  const v = e?.verdict;
  return {
    name: slot.target.name,
    verdict: v?.verdict ?? 'unknown',
    class: v?.class ?? null,
    since: v ? (v.since ?? isoOf(slot.track.stateSeenAt)) : null,
    summary: v?.summary ?? null,
    decision: e ? { action: e.decision.action, reason: e.decision.reason, heldBy: e.decision.heldBy ?? null } : null,
    waitingFor: e ? waitingFor(slot, e) : null,
    nextLookAt: isoOf(e?.nextAt),
    revision: slot.revision ?? null,
    lastKnownGood: slot.lastKnownGood ?? null,
    lastAction: slot.lastAction ?? null,
    lastRecovery: slot.lastRecovery ? { ...slot.lastRecovery, sentence: recoverySentence(recoveryTimesOf(slot.lastRecovery)) } : null,
    assessedAt: isoOf(slot.assessedAt),
  };
}

/** The guard holding the decision back, and the time that ends it where one does (tracker.ts computes the same times). */
function waitingFor(slot: SlotView, e: Evaluation): TargetStatus['waitingFor'] {
  const guard = e.decision.heldBy;
  if (!guard) return null;
  const { target } = slot;
  let until: number | undefined;
  let confirmations: { seen: number; needed: number } | null = null;
  const failedAt = e.verdict.since ? Date.parse(e.verdict.since) + (e.verdict.verdict === 'stuck' ? target.stuckAfterMs : 0) : undefined;
  if (guard === 'confirmations') {
    confirmations = { seen: slot.track.failedInARow, needed: target.confirmations };
    until = e.nextAt;
  } else if (guard === 'wait' && failedAt !== undefined) {
    const policy = target.onFailure[e.verdict.class ?? (e.verdict.verdict === 'stuck' ? 'stuck' : 'analysis')];
    const wait = typeof policy === 'object' ? policy.waitMs : undefined;
    if (wait !== undefined) until = failedAt + wait;
  } else if (guard === 'cooldown' && slot.guards?.lastRevert && target.cooldownMs) {
    until = Date.parse(slot.guards.lastRevert.at) + target.cooldownMs;
  } else if (guard === 'freeze' && target.freezeUntil) {
    until = Date.parse(target.freezeUntil);
  }
  return { guard, until: isoOf(until), confirmations };
}

// ---- `lastgood status`: the table a person reads

const short = (s: string | null) => (s && /^[0-9a-f]{40}$/.test(s) ? s.slice(0, 12) : s);
const time = (s: string | null) => (s ? s.replace(/\.\d{3}Z$/, 'Z') : '');

export function formatStatusTable(doc: TargetsDocument): string {
  const header = ['TARGET', 'VERDICT', 'SINCE', 'DECISION', 'WAITING FOR', 'LAST-KNOWN-GOOD', 'LAST ACTION'];
  const rows = doc.targets.map((t) => {
    const w = t.waitingFor;
    const waiting = w ? [w.guard, w.confirmations ? `${w.confirmations.seen}/${w.confirmations.needed}` : '', w.until ? `until ${time(w.until)}` : ''].filter(Boolean).join(' ') : '';
    const a = t.lastAction;
    const last = a ? [a.action, a.commit ? short(a.commit) : '', a.pullRequest ?? '', a.error ? `error: ${a.error}` : a.created === false ? '(existing)' : '', time(a.at)].filter(Boolean).join(' ') : '';
    return [t.name, t.verdict + (t.class && t.verdict === 'failed' ? ` (${t.class})` : ''), time(t.since), t.decision?.action ?? '', waiting, short(t.lastKnownGood?.commit ?? null) ?? '', last];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join('  ').trimEnd();
  const role = doc.leader ? 'leader' : 'standby';
  // a recovery's phases do not fit a column: one line each, under the table
  const recoveries = doc.targets.filter((t) => t.lastRecovery).map((t) => `${t.name}: ${t.lastRecovery!.sentence}, at ${short(t.lastRecovery!.revision)} (revert ${short(t.lastRecovery!.revert)})`);
  return [`controller ${doc.controller} (${role}${doc.synced ? '' : ', watches not synced yet'}) at ${time(doc.now)}`, line(header), ...rows.map(line), ...(recoveries.length ? ['', ...recoveries] : [])].join('\n') + '\n';
}
