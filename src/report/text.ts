import type { Evidence } from '../decide/types.ts';
import type { Report, TargetOutcome } from '../engine.ts';
import { redact } from '../scrub.ts';

/**
 * The human report of check/run/revert: what each target's verdict is, why, and what was done.
 * Evidence was scrubbed where it entered (observe); the text is scrubbed again on the way out.
 */
export function formatReport(report: Report, opts: { showDiff?: boolean } = {}): string {
  return redact(report.targets.map((t) => formatTarget(t, opts)).join('\n'));
}

const VERDICT_LABEL: Record<TargetOutcome['verdict'], string> = { healthy: 'HEALTHY', progressing: 'PROGRESSING', failed: 'FAILED', stuck: 'STUCK' };

function formatTarget(t: TargetOutcome, opts: { showDiff?: boolean }): string {
  const lines: string[] = [];
  lines.push(`${t.name}: ${VERDICT_LABEL[t.verdict]}${t.class && t.verdict === 'failed' ? ` (${t.class})` : ''}`);
  lines.push(`  evidence:`);
  for (const e of t.evidence) lines.push(`    ${evidenceRow(e)}`, ...analysisRows(e));
  lines.push(`  decision: ${t.action} — ${t.reason}`);
  if (t.bad.length) lines.push(`  bad commit${t.bad.length > 1 ? 's' : ''}: ${t.bad.join(', ')}`);
  if (t.explanation) lines.push(`  found by: ${t.explanation}`);
  if (t.lastKnownGood) lines.push(`  last-known-good: ${t.lastKnownGood} (${t.lkg ?? (t.verified ? 'verified: observed healthy' : 'unverified')})`);
  if (t.error) lines.push(`  error (exit ${t.error.code}): ${t.error.message}`);
  for (const n of t.notes ?? []) lines.push(`  note: ${n}`);
  if (t.commit) lines.push(`  ${t.created === false ? 'existing commit' : 'new commit'}: ${t.commit}${t.branch ? ` on ${t.branch}` : ''}`);
  if (t.pullRequest) lines.push(`  pull request: ${t.pullRequest}`);
  if (t.diffStat && (t.commit || t.diff)) lines.push(...t.diffStat.split('\n').map((l) => `  ${l}`));
  // a dry run's diff on request; a plan that was refused (blast radius) is always shown
  if (t.diff && (opts.showDiff || t.action === 'alert')) lines.push('', t.diff);
  return lines.join('\n') + '\n';
}

function evidenceRow(e: Evidence): string {
  const ref = `${e.groupKind} ${e.namespace ? `${e.namespace}/` : ''}${e.name}`;
  const msg = e.message ? `: ${e.message.replace(/\s*\n\s*/g, ' ').slice(0, 160)}` : '';
  return `${ref} ${e.state} (${e.reason})${e.since ? ` since ${e.since}` : ''}${msg}`;
}

/** A metric check's query, condition, latest value and time, and what comes next (README "Metric checks"). */
function analysisRows(e: Evidence): string[] {
  const a = e.analysis;
  if (!a) return [];
  const rows: string[] = [];
  const last = a.measurements[a.measurements.length - 1];
  rows.push(`      ${a.phase}: ${a.taken}${a.count !== undefined ? ` of ${a.count}` : ''} measurement${a.taken === 1 && a.count === undefined ? '' : 's'}, ${a.failed} failed, ${a.inconclusive} inconclusive, ${a.errors} in error${a.rollout ? `; window from ${a.rollout.start} (${a.rollout.startedBy})` : ''}`);
  if (last) rows.push(`      last: ${last.value || 'no value'} at ${last.at}: ${last.phase} (${last.message.replace(/\s*\n\s*/g, ' ').slice(0, 200)})`);
  for (const q of a.queries) rows.push(`      ${a.queries.length > 1 ? `${q.name}: ` : ''}${q.condition}; query: ${q.query.replace(/\s+/g, ' ').trim().slice(0, 300)}`);
  if (a.nextAt) rows.push(`      next measurement at ${a.nextAt}`);
  return rows;
}

/** The DESIGN.md --json document, scrubbed (redact keeps JSON text valid). */
export function reportJson(report: Report): string {
  return redact(JSON.stringify({ targets: report.targets.map(jsonTarget) }, null, 2)) + '\n';
}

function jsonTarget(t: TargetOutcome): Record<string, unknown> {
  const out: Record<string, unknown> = {
    name: t.name, verdict: t.verdict, class: t.class ?? null, summary: t.summary,
    evidence: t.evidence.map((e) => ({
      apiVersion: e.apiVersion, kind: e.kind, namespace: e.namespace ?? null, name: e.name, state: e.state, reason: e.reason, message: e.message,
      ...(e.since ? { since: e.since } : {}),
      ...(e.attempted?.raw || e.attempted?.sha ? { revision: e.attempted.raw ?? e.attempted.sha } : {}),
      ...(e.analysis ? { analysis: e.analysis } : {}),
    })),
    bad: t.bad, lastKnownGood: t.lastKnownGood ?? null, verified: t.verified ?? null,
    action: t.action, reason: t.reason, commit: t.commit ?? null, pullRequest: t.pullRequest ?? null,
  };
  if (t.branch) out.branch = t.branch;
  if (t.created !== undefined) out.created = t.created;
  if (t.diff !== undefined) out.diff = t.diff;
  if (t.explanation) out.explanation = t.explanation;
  if (t.notes) out.notes = t.notes;
  if (t.error) out.error = t.error;
  return out;
}
