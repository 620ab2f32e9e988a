/**
 * "Verified" means stable (issue 19): a revision becomes a verified last-known-good only after the
 * target has stayed healthy, at that revision, for the target's `soak` (default 5m) — the idea of
 * Kargo's `requiredSoakTime` ("a minimum duration for which the requested Freight must have
 * continuously occupied ('soaked in') an upstream Stage", kargo charts/kargo/resources/crds/
 * kargo.akuity.io_stages.yaml). A target flapping between failed and healthy at a bad revision is
 * never healthy for long enough, so its bad revision is never recorded as good.
 *
 * Since when the target has been healthy at the revision is the later of
 * - what its objects say: the newest `since` of its healthy objects (the last one to turn healthy,
 *   from their own condition times), which a one-shot door (`check --record`, the Action) can read
 *   at one moment; and
 * - what a door that watches saw: when it first saw the target healthy at this revision after
 *   seeing it otherwise (a failure, another revision). Where no object tells a time, the watching
 *   door counts from its first sight; a one-shot door then cannot tell, and says so.
 * A revision seen failing is thus recorded only after a new, whole soak. Pure.
 */
import { formatDuration } from '../config/duration.ts';
import { ageMs } from '../observe/times.ts';
import type { Verdict } from './types.ts';

/** What a watching door saw of the target's current healthy run (src/decide/tracker.ts keeps it). */
export interface HealthyRun {
  revision: string;
  /** when the door first saw the target healthy at this revision, in this unbroken run (ms) */
  since: number;
  /** the door saw the target otherwise (failing, progressing, another revision) right before this run */
  broken: boolean;
}

export type Soak =
  | { ok: true; revision: string; since: number }
  | { ok: false; revision?: string; reason: string; /** when it will have soaked, if it stays as it is */ at?: number };

/** The git revision a healthy verdict runs: what its objects attempted (and applied), else what last succeeded. */
export function healthyRevision(verdict: Verdict): string | undefined {
  if (verdict.verdict !== 'healthy') return undefined;
  return verdict.evidence.map((e) => e.attempted?.sha ?? e.lastSucceeded?.sha).find(Boolean);
}

export function soaked(input: { verdict: Verdict; soakMs: number; now: number; watched?: HealthyRun }): Soak {
  const { verdict, soakMs, now, watched } = input;
  if (verdict.verdict !== 'healthy') return { ok: false, reason: `not healthy (${verdict.verdict})` };
  const revision = healthyRevision(verdict);
  if (!revision) return { ok: false, reason: 'no object of the target reports a git revision' };
  let since: number | undefined;
  for (const e of verdict.evidence) {
    if (e.state !== 'healthy' || !e.since || e.foreign) continue;
    const t = Date.parse(e.since);
    if (!Number.isNaN(t) && (since === undefined || t > since)) since = t;
  }
  const seen = watched && watched.revision === revision ? watched : undefined;
  if (seen && (seen.broken || since === undefined)) since = since === undefined ? seen.since : Math.max(since, seen.since);
  if (since === undefined) {
    return { ok: false, revision, reason: `healthy at ${revision.slice(0, 12)}, but no object says since when: it cannot be told to have stayed healthy for the soak (${formatDuration(soakMs)}); the controller records it after watching it that long` };
  }
  const healthyFor = ageMs(since, now);
  if (healthyFor >= soakMs) return { ok: true, revision, since };
  return {
    ok: false, revision, at: since + soakMs,
    reason: `healthy at ${revision.slice(0, 12)} for ${formatDuration(healthyFor)} only, less than the soak (${formatDuration(soakMs)}): not yet verified`,
  };
}
