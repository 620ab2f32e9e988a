import type { Evidence } from '../decide/types.ts';
import type { Report, TargetOutcome } from '../engine/types.ts';
import { redact } from '../scrub.ts';
import { codeBlock, codeSpan, diffStatBlock, GITHUB_FLAVORED, timeText } from '../revert/markup.ts';

/**
 * The GitHub Actions job summary (GITHUB_STEP_SUMMARY): markdown with the verdict, the evidence
 * table and links, one section per target. Pure: the Action writes what this returns. Text from
 * the repository, the cluster or the event is quoted as code (revert/markup.ts), in GitHub's dialect.
 */
export interface SummaryContext {
  /** the event that started the run (event-driven mode), one line */
  event?: string;
  /** the event concerned no configured target: why */
  unmatched?: string;
  dryRun: boolean;
  /** a link to a commit of the config repository, when it is on a forge */
  commitUrl?: (sha: string) => string;
  /** in-pipeline mode: how long lastgood waited for a verdict */
  waited?: string;
}

const VERDICT_ICON: Record<TargetOutcome['verdict'], string> = { healthy: '✅', progressing: '⏳', failed: '❌', stuck: '⌛' };

export function renderSummary(report: Report, ctx: SummaryContext): string {
  const lines: string[] = [];
  const main = primaryOutcome(report);
  lines.push(`## lastgood: ${main ? headline(main, ctx.dryRun) : 'nothing to do'}`, '');
  if (ctx.event) lines.push(`**Event:** ${codeSpan(ctx.event)}`, '');
  if (ctx.unmatched) lines.push(`The event concerns no configured target (${codeSpan(ctx.unmatched)}): nothing was checked and nothing written. Outputs: \`verdict=none\`, \`action=none\`.`, '');
  if (ctx.waited) lines.push(`Waited ${ctx.waited} for a verdict.`, '');
  if (ctx.dryRun && report.targets.length > 0) lines.push('> [!NOTE]', '> Dry run: nothing was written.', '');
  for (const t of report.targets) lines.push(...targetSection(t, ctx), '');
  // evidence was scrubbed where it entered (observe); the summary is scrubbed again on the way out
  return redact(lines.join('\n').replace(/\n{3,}/g, '\n\n').trimEnd()) + '\n';
}

function headline(t: TargetOutcome, dryRun: boolean): string {
  // a person's revert with no cluster read has no verdict to show (it was computed from objects nobody read)
  const what = t.byPerson && !t.byPerson.clusterRead
    ? `${codeSpan(t.name)} REVERT BY HAND`
    : `${codeSpan(t.name)} ${t.verdict.toUpperCase()}${t.verdict === 'failed' && t.class ? ` (${t.class})` : ''}`;
  switch (t.action) {
    case 'revert':
      if (dryRun) return `${what} — would revert`;
      if (t.pullRequest) return `${what} — revert pull request ${t.created === false ? 'already open' : 'opened'}`;
      if (t.commit) return `${what} — ${t.created === false ? 'already reverted' : 'reverted'}`;
      return `${what} — nothing to write`;
    case 'alert':
      return `${what} — not reverted`;
    case 'wait':
      return `${what} — waiting`;
    default:
      return what;
  }
}

function targetSection(t: TargetOutcome, ctx: SummaryContext): string[] {
  const out: string[] = [];
  const person = t.byPerson;
  if (person && !person.clusterRead) {
    out.push(`### ✋ ${codeSpan(t.name)}: revert by hand`, '');
    out.push(`**Reason:** ${person.reason ? codeSpan(person.reason) : 'none given'}`, '');
    out.push('_The cluster was not read: a revert by hand names its commits, and claims no cluster state._', '');
  } else {
    out.push(`### ${VERDICT_ICON[t.verdict]} ${codeSpan(t.name)}: ${t.verdict}${t.verdict === 'failed' && t.class ? ` (${t.class})` : ''}`, '');
    if (person) out.push(`**Revert by hand.** Reason: ${person.reason ? codeSpan(person.reason) : 'none given'}`, '');
    out.push(`**Decision:** ${t.action} — ${codeSpan(t.reason)}`, '');
    out.push('| object | state | reason | since | message |', '|---|---|---|---|---|');
    for (const e of t.evidence) out.push(evidenceRow(e));
    out.push('');
  }
  const link = (sha: string) => (ctx.commitUrl ? `[${codeSpan(sha.slice(0, 12))}](${ctx.commitUrl(sha)})` : codeSpan(sha.slice(0, 12)));
  const facts: string[] = [];
  if (t.bad.length) facts.push(`- Bad commit${t.bad.length > 1 ? 's' : ''}: ${t.bad.map(link).join(', ')}`);
  if (t.lastKnownGood) facts.push(`- Last-known-good: ${link(t.lastKnownGood)} (${t.verified ? 'verified: observed healthy' : 'unverified: the commit before the first bad one'})`);
  if (t.pullRequest) facts.push(`- Pull request: ${t.pullRequest}${t.created === false ? ' (already open)' : ''}`);
  if (t.commit) facts.push(`- ${t.created === false ? 'Existing' : 'New'} commit: ${link(t.commit)}${t.branch ? ` on ${codeSpan(t.branch)}` : ''}`);
  if (facts.length) out.push(...facts, '');
  if (t.checked) out.push(`**Checked:** ${codeSpan(t.checked.summary)}`, '');
  if (t.checked?.rendered) out.push(t.checked.rendered.markdown, '');
  if (t.diffStat) out.push(diffStatBlock(t.diffStat.trimEnd()), '');
  if (t.diff) out.push('<details><summary>Diff (dry run)</summary>', '', codeBlock(t.diff.trimEnd(), 'diff'), '', '</details>');
  return out;
}

/** One table row: every cell from the cluster as a code span (GitHub: `\\|` for a pipe in it). */
function evidenceRow(e: Evidence): string {
  const cell = (s: string) => (s ? codeSpan(s, GITHUB_FLAVORED) : '');
  const ref = `${e.groupKind} ${e.namespace ? `${e.namespace}/` : ''}${e.name}`;
  return `| ${cell(ref)} | ${e.state} | ${cell(e.reason)} | ${timeText(e.since, GITHUB_FLAVORED)} | ${cell(e.message.slice(0, 300))} |`;
}

const ACTION_RANK: Record<TargetOutcome['action'], number> = { revert: 3, alert: 2, wait: 1, none: 0 };
const VERDICT_RANK: Record<TargetOutcome['verdict'], number> = { failed: 3, stuck: 2, progressing: 1, healthy: 0 };

/** The outcome the Action's single-valued outputs describe: the one that did the most, then the worst verdict. */
export function primaryOutcome(report: Report): TargetOutcome | undefined {
  let best: TargetOutcome | undefined;
  for (const t of report.targets) {
    if (!best || ACTION_RANK[t.action] > ACTION_RANK[best.action] || (ACTION_RANK[t.action] === ACTION_RANK[best.action] && VERDICT_RANK[t.verdict] > VERDICT_RANK[best.verdict])) best = t;
  }
  return best;
}
