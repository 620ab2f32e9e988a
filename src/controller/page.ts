/**
 * The controller's page at `/`: what `/targets` tells (status.ts), for people, and the last 30
 * days of the repository's history as the timeline of `lastgood log --html` (audit/html.ts). Read
 * only, no login, no script: server-rendered HTML under the Content-Security-Policy of http.ts.
 * It shows what /targets exposes and what the repository's history holds, nothing more. Pure:
 * built from the document and the log the controller hands it.
 */
import { escapeHtml, footerHtml, htmlDocument, linkTo, outside, timelineSection } from '../audit/html.ts';
import { holdsPhrase, short, when } from '../audit/format.ts';
import type { AuditLog, RevertEntry } from '../audit/schema.ts';
import type { TargetsDocument, TargetStatus } from './status.ts';

/** The repository's history for the timeline, or why it could not be read. */
export type PageTimeline = { log: AuditLog } | { error: string };

export interface PageOptions {
  /** how many days the timeline covers (for its heading) */
  days: number;
  /** the host's page of a commit (none for a local repository) */
  commitUrl?: (sha: string) => string | undefined;
}

/** A time as the tables show it: `2026-11-01 12:07:00` (UTC, said in the headings) */
const time = (s: string | null) => (s ? when(s).replace('T', ' ').replace('Z', '') : '');

/** The verdict's words say it; the colour and the shape only repeat it. */
const VERDICT_TONE: Record<TargetStatus['verdict'], { tone: string; shape: string }> = {
  healthy: { tone: 'tone-green', shape: '<circle r="5" fill="#116329"/>' },
  progressing: { tone: 'tone-cyan', shape: '<circle r="5" fill="none" stroke="#0a4fa3" stroke-width="2.5"/>' },
  failed: { tone: 'tone-red', shape: '<path d="M-5 -5 L5 5 M5 -5 L-5 5" stroke="#b42318" stroke-width="3" stroke-linecap="round"/>' },
  stuck: { tone: 'tone-yellow', shape: '<rect x="-4.5" y="-4.5" width="9" height="9" fill="#7d4e00"/>' },
  unknown: { tone: 'tone-dim', shape: '<circle r="4.5" fill="none" stroke="#57606a" stroke-width="2" stroke-dasharray="2 2"/>' },
};

function commitHtml(sha: string, commitUrl: PageOptions['commitUrl']): string {
  return linkTo(`<code>${outside(short(sha))}</code>`, commitUrl?.(sha));
}

function verdictCell(t: TargetStatus): string {
  const v = VERDICT_TONE[t.verdict];
  const words = t.verdict + (t.class && t.verdict === 'failed' ? ` (${t.class})` : '');
  const summary = t.summary ? `<span class="more">${outside(t.summary)}</span>` : '';
  const waiting = t.waitingFor ? `<span class="more">waiting for ${outside(t.waitingFor.guard)}${t.waitingFor.until ? ` until ${escapeHtml(time(t.waitingFor.until))}` : ''}</span>` : '';
  return `<td data-verdict="${escapeHtml(t.verdict)}"><svg class="symbol" aria-hidden="true" focusable="false" width="14" height="14" viewBox="-7 -7 14 14">${v.shape}</svg> <strong class="${v.tone}">${outside(words)}</strong>${summary}${waiting}</td>`;
}

function lastActionCell(t: TargetStatus, commitUrl: PageOptions['commitUrl']): string {
  const a = t.lastAction;
  if (!a) return '<td class="muted">none since this controller started</td>';
  const parts = [`<strong>${outside(a.action)}</strong>`];
  if (a.commit) parts.push(commitHtml(a.commit, commitUrl));
  // a request's URL links; anything else it holds (a review branch) is text
  if (a.pullRequest) parts.push(linkTo(outside(a.pullRequest), a.pullRequest));
  if (a.created === false) parts.push('(made earlier)');
  parts.push(`at ${escapeHtml(time(a.at))}`);
  const error = a.error ? `<span class="more tone-red">error: ${outside(a.error)}</span>` : '';
  return `<td class="last-action">${parts.join(' ')}<span class="more">${outside(a.reason)}</span>${error}</td>`;
}

function lastRevertCell(t: TargetStatus, timeline: PageTimeline, commitUrl: PageOptions['commitUrl']): string {
  if (!('log' in timeline)) return '<td class="muted">not read</td>';
  const r = timeline.log.targets.find((x) => x.name === t.name)?.entries.find((e): e is RevertEntry => e.kind === 'revert');
  if (!r) return '<td class="muted">none in the window</td>';
  // its recovery, as the controller knows it (recorded or read from the records): the phases' times
  const recovered = t.lastRecovery?.revert === r.commit ? `<span class="more recovery tone-green">${outside(t.lastRecovery.sentence)}</span>` : '';
  const ref = linkTo(`<code>${outside(short(r.commit))}</code>`, r.url ?? commitUrl?.(r.commit));
  const via = r.request ? ` via ${linkTo(`${outside(r.request.noun)} #${r.request.number}`, r.request.url)}` : '';
  return `<td class="last-revert">${ref}${via} at ${escapeHtml(time(r.at))}<span class="more">${outside(holdsPhrase(r.holds))}</span>${recovered}</td>`;
}

function lastKnownGoodCell(t: TargetStatus, commitUrl: PageOptions['commitUrl']): string {
  const k = t.lastKnownGood;
  if (!k) return '<td class="muted">none known</td>';
  return `<td>${commitHtml(k.commit, commitUrl)}<span class="more">${escapeHtml(k.source === 'recorded' ? 'recorded by this controller' : "from the repository's records")}${k.at ? ` at ${escapeHtml(time(k.at))}` : ''}</span></td>`;
}

export function renderPage(doc: TargetsDocument, timeline: PageTimeline, opts: PageOptions): string {
  const { commitUrl } = opts;
  const rows = doc.targets.map((t) => `<tr data-target="${outside(t.name)}"><th scope="row">${outside(t.name)}</th>${verdictCell(t)}<td class="when">${escapeHtml(time(t.since))}</td>${lastActionCell(t, commitUrl)}${lastRevertCell(t, timeline, commitUrl)}${lastKnownGoodCell(t, commitUrl)}</tr>`);
  const heading = `The last ${opts.days} days`;
  const timelineHtml = 'log' in timeline
    ? timelineSection(timeline.log, heading)
    : `<section aria-labelledby="timeline-heading">\n<h2 id="timeline-heading">${escapeHtml(heading)}</h2>\n<p class="error" role="status">The timeline could not be read: ${outside(timeline.error)}</p>\n</section>`;
  const role = doc.leader ? 'the leader: it acts' : 'a standby: another replica acts';
  const body = `<main>
<h1>lastgood controller <code>${outside(doc.controller)}</code></h1>
<p>This replica is ${role}; ${doc.synced ? 'its watches are synced' : 'its watches have not all listed yet'}. At ${escapeHtml(time(doc.now))} UTC. The same as JSON: <a href="/targets">/targets</a>.</p>
<section aria-labelledby="targets-heading">
<h2 id="targets-heading">Targets</h2>
<table class="targets">
<caption>Each target as this controller holds it: its verdict, since when, and what was last done</caption>
<thead><tr><th scope="col">Target</th><th scope="col">Verdict</th><th scope="col">Since (UTC)</th><th scope="col">Last action (this controller)</th><th scope="col">Last revert (repository)</th><th scope="col">Last-known-good</th></tr></thead>
<tbody>
${rows.join('\n')}
</tbody>
</table>
</section>
${timelineHtml}
</main>
${footerHtml('Served', new Date(doc.now))}`;
  return htmlDocument(`lastgood controller ${outside(doc.controller)}`, body);
}
