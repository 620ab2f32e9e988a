import type { Evidence } from '../decide/types.ts';
import type { Report, TargetOutcome } from '../engine/types.ts';
import { redact } from '../scrub.ts';
import { diffStatLines, terminalJson, terminalLines, terminalText as x } from '../revert/markup.ts';

/**
 * The human report of check/run/revert: what each target's verdict is, why, and what was done.
 * Evidence was scrubbed where it entered (observe); the text is scrubbed again on the way out.
 * Every text that comes from the repository, the cluster or a metrics provider goes through
 * terminalText (`x` here): an escape sequence or a line break in it is written out, never sent to
 * the terminal or made into a line of the report (revert/markup.ts).
 */
export interface FormatOptions {
  showDiff?: boolean;
  /** a terminal: colours (unless NO_COLOR) and the evidence in aligned columns; a pipe or file gets plain text */
  tty?: { color: boolean };
}

export function formatReport(report: Report, opts: FormatOptions = {}): string {
  return redact(report.targets.map((t) => formatTarget(t, opts)).join('\n'));
}

/**
 * A terminal gets aligned columns and colours, as flux and argocd print them; colours never when
 * NO_COLOR is set to anything but "" (no-color.org). A pipe or a file gets the plain text that
 * scripts and the tests read, whatever the environment says.
 */
export function terminalStyle(stream: { isTTY?: boolean }, env: Record<string, string | undefined>): FormatOptions['tty'] {
  if (!stream.isTTY) return undefined;
  return { color: !env.NO_COLOR };
}

const VERDICT_LABEL: Record<TargetOutcome['verdict'], string> = { healthy: 'HEALTHY', progressing: 'PROGRESSING', failed: 'FAILED', stuck: 'STUCK' };
const SGR = { red: '31', green: '32', yellow: '33', cyan: '36', bold: '1', dim: '2' } as const;
const VERDICT_COLOR: Record<TargetOutcome['verdict'], keyof typeof SGR> = { healthy: 'green', progressing: 'yellow', failed: 'red', stuck: 'red' };
const ACTION_COLOR: Record<TargetOutcome['action'], keyof typeof SGR> = { none: 'dim', wait: 'yellow', alert: 'red', revert: 'cyan' };
const STATE_COLOR: Record<string, keyof typeof SGR> = { healthy: 'green', progressing: 'yellow', suspended: 'yellow', failed: 'red', unknown: 'dim' };

function formatTarget(t: TargetOutcome, opts: FormatOptions): string {
  const paint = (color: keyof typeof SGR | undefined, text: string, bold = false) => (opts.tty?.color && color ? `\x1b[${bold ? '1;' : ''}${SGR[color]}m${text}\x1b[0m` : text);
  const lines: string[] = [];
  // a check that ended in error can never conclude as it is: said in the headline, not only in the error line
  const inError = t.error?.code === 4 ? ` — ${paint('red', 'CHECK IN ERROR', true)} (exit 4)` : '';
  // a person's revert with no cluster read: no verdict, no evidence (they were computed from objects nobody read)
  const unread = t.byPerson && !t.byPerson.clusterRead;
  if (unread) lines.push(`${paint(undefined, x(t.name))}: ${paint('cyan', 'REVERT BY HAND', true)}${t.byPerson!.reason ? ` — reason: ${x(t.byPerson!.reason)}` : ''}`);
  else lines.push(`${paint(undefined, x(t.name))}: ${paint(VERDICT_COLOR[t.verdict], VERDICT_LABEL[t.verdict], true)}${t.class && t.verdict === 'failed' ? ` (${x(t.class)})` : ''}${inError}`);
  lines.push(unread ? '  evidence: not read (a revert by hand names its commits)' : `  evidence:`);
  if (!unread && opts.tty) {
    // aligned columns: object, state, reason, then since and the message
    const rows = t.evidence.map((e) => ({ ref: objectRef(e), e }));
    const width = Math.max(0, ...rows.map((r) => r.ref.length));
    const stateWidth = Math.max(0, ...rows.map((r) => r.e.state.length));
    for (const { ref, e } of rows) {
      lines.push(`    ${ref.padEnd(width)}  ${paint(STATE_COLOR[e.state], x(e.state).padEnd(stateWidth))}  (${x(e.reason)})${e.since ? ` since ${x(e.since)}` : ''}${messageText(e.message, 160)}`, ...analysisRows(e));
    }
  } else if (!unread) for (const e of t.evidence) lines.push(`    ${evidenceRow(e)}`, ...analysisRows(e));
  lines.push(`  decision: ${paint(ACTION_COLOR[t.action], t.action, true)} — ${x(t.reason)}`);
  if (t.bad.length) lines.push(`  bad commit${t.bad.length > 1 ? 's' : ''}: ${t.bad.map(x).join(', ')}`);
  if (t.explanation) lines.push(`  found by: ${x(t.explanation)}`);
  if (t.lastKnownGood) lines.push(`  last-known-good: ${x(t.lastKnownGood)} (${x(t.lkg ?? (t.verified ? 'verified: observed healthy' : 'unverified'))})`);
  if (t.checked) lines.push(`  checked: ${x(t.checked.summary)}`);
  if (t.checked?.rendered) lines.push(`  rendered: ${x(t.checked.rendered.summary)}`);
  if (t.error) lines.push(`  error (exit ${t.error.code}): ${x(t.error.message)}`);
  for (const n of t.notes ?? []) lines.push(`  note: ${x(n)}`);
  if (t.commit) lines.push(`  ${t.created === false ? 'existing commit' : 'new commit'}: ${x(t.commit)}${t.branch ? ` on ${x(t.branch)}` : ''}`);
  if (t.pullRequest) lines.push(`  pull request: ${x(t.pullRequest)}`);
  if (t.diffStat && (t.commit || t.diff)) lines.push(...diffStatLines(t.diffStat).map((l) => `  ${x(l)}`));
  // a dry run's diff on request; a plan that was refused (blast radius) is always shown
  if (t.diff && (opts.showDiff || t.action === 'alert')) lines.push('', terminalLines(t.diff));
  if (t.checked?.rendered && opts.showDiff) lines.push('', terminalLines(t.checked.rendered.text));
  return lines.join('\n') + '\n';
}

const objectRef = (e: Evidence) => x(`${e.groupKind} ${e.namespace ? `${e.namespace}/` : ''}${e.name}`);

/** A status message on the evidence line: its line breaks joined (a message of many lines reads as one), cut to `max`. */
const messageText = (message: string, max: number) => (message ? `: ${x(message.replace(/\s*\n\s*/g, ' ').slice(0, max))}` : '');

function evidenceRow(e: Evidence): string {
  return `${objectRef(e)} ${x(e.state)} (${x(e.reason)})${e.since ? ` since ${x(e.since)}` : ''}${messageText(e.message, 160)}`;
}

/** A metric check's query, condition, latest value and time, and what comes next (docs/metrics.md). */
function analysisRows(e: Evidence): string[] {
  const a = e.analysis;
  if (!a) return [];
  const rows: string[] = [];
  const last = a.measurements[a.measurements.length - 1];
  rows.push(`      ${x(a.phase)}: ${a.taken}${a.count !== undefined ? ` of ${a.count}` : ''} measurement${a.taken === 1 && a.count === undefined ? '' : 's'}, ${a.failed} failed, ${a.inconclusive} inconclusive, ${a.errors} in error${a.rollout ? `; window from ${x(a.rollout.start)} (${x(a.rollout.startedBy)})` : ''}`);
  if (last) rows.push(`      last: ${x(last.value || 'no value')} at ${x(last.at)}: ${x(last.phase)} (${x(last.message.replace(/\s*\n\s*/g, ' ').slice(0, 200))})`);
  for (const q of a.queries) rows.push(`      ${a.queries.length > 1 ? `${x(q.name)}: ` : ''}${x(q.condition)}; query: ${x(q.query.replace(/\s+/g, ' ').trim().slice(0, 300))}`);
  if (a.nextAt) rows.push(`      next measurement at ${x(a.nextAt)}`);
  return rows;
}

/** The DESIGN.md --json document, scrubbed (redact keeps JSON text valid). */
export function reportJson(report: Report): string {
  // the C1 controls and bidirectional marks as \u escapes, as in every JSON lastgood prints (the same value parsed)
  return terminalJson(redact(JSON.stringify({ targets: report.targets.map(jsonTarget) }, null, 2))) + '\n';
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
  if (t.checked) out.checked = { summary: t.checked.summary, ...(t.checked.rendered ? { rendered: { summary: t.checked.rendered.summary, diff: t.checked.rendered.text } } : {}) };
  if (t.error) out.error = t.error;
  return out;
}
