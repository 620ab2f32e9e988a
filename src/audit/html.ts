import { redact } from '../scrub.ts';
import { VERSION } from '../version.ts';
import { counts, rowOf, when, windowLine, type Color } from './format.ts';
import type { AuditLog, Entry, TargetLog } from './schema.ts';

/**
 * `lastgood log --html`: the log as one self-contained HTML5 document for an incident review, and
 * the pieces the controller's page at `/` shares with it (src/controller/page.ts): the document's
 * shell and style, and the timeline, an inline SVG. No script, no external resource (no font, no
 * CDN, no image): it opens offline, and under the controller's Content-Security-Policy
 * (`default-src 'none'; style-src 'unsafe-inline'; img-src data:`).
 *
 * Every text that comes from the repository or the cluster (subjects, authors, reasons, evidence,
 * branch and target names, URLs) is scrubbed of secrets one piece at a time, then escaped
 * (`outside`), never the whole document at once (a scrubbing rule that ate a quote would turn text
 * into markup); a link is made only from a `url` field, and only for an http(s) URL: anything else
 * is shown as text. The phrases are those of `lastgood log` (format.ts: `rowOf`, `windowLine`).
 */

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text (or an attribute value, in double or single quotes) as HTML: no markup, no entity, no control character survives. */
export function escapeHtml(text: string): string {
  return text
    // C0 controls but tab, line feed and carriage return (HTML has no use for them), and DEL
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g, '\uFFFD')
    .replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);
}

/** Outside text (the repository's, the cluster's): its secrets out, then escaped. */
export function outside(text: string): string {
  return escapeHtml(redact(text));
}

/** An http(s) URL fit for an href (credentials in it dropped), or undefined: `javascript:`, `data:`, a relative or broken URL. */
export function httpUrl(url: string | null | undefined): string | undefined {
  if (!url || !/^https?:\/\//i.test(url)) return undefined;
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return undefined;
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') return undefined;
  u.username = '';
  u.password = '';
  return u.href;
}

/** `html` (already HTML) linked to `url` when it is an http(s) URL; as it is otherwise. */
export function linkTo(html: string, url: string | null | undefined): string {
  const href = httpUrl(url);
  return href ? `<a href="${outside(href)}">${html}</a>` : html;
}

/** A URL field: a link when http(s), its text otherwise (never a link to anything else). */
export function urlHtml(url: string): string {
  return linkTo(outside(url), url);
}

// ---- the document

/** Text #1f2328 and #57606a on white: 15.8:1 and 6.4:1; the tones 5.5:1 to 8:1 (WCAG AA asks 4.5:1 for text, 3:1 for marks). */
const STYLE = `
:root { color-scheme: light; }
body { margin: 0; background: #fff; color: #1f2328; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Liberation Sans", "DejaVu Sans", sans-serif; }
main { max-width: 1100px; margin: 0 auto; padding: 1.5rem 1rem 2rem; }
footer { max-width: 1100px; margin: 0 auto; padding: 0 1rem 2rem; color: #57606a; font-size: 13px; }
h1 { font-size: 1.5rem; margin: 0 0 .5rem; }
h2 { font-size: 1.2rem; margin: 2rem 0 .5rem; }
code { font: 13px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", "DejaVu Sans Mono", monospace; overflow-wrap: anywhere; }
a { color: #0a4fa3; }
.muted { color: #57606a; }
.notes { border-left: 4px solid #9a6700; padding: .25rem .75rem; background: #fff8c5; }
table { border-collapse: collapse; width: 100%; margin: .5rem 0 1rem; }
caption { text-align: left; font-weight: 600; padding: .25rem 0; }
th, td { text-align: left; vertical-align: top; padding: .35rem .5rem; border-bottom: 1px solid #d0d7de; }
th { background: #f6f8fa; font-weight: 600; }
td.when { white-space: nowrap; }
td .more { display: block; color: #57606a; font-size: 13px; }
.tone-red { color: #b42318; } .tone-green { color: #116329; } .tone-yellow { color: #7d4e00; } .tone-cyan { color: #0a4fa3; } .tone-dim { color: #57606a; }
.legend { list-style: none; display: flex; flex-wrap: wrap; gap: .25rem 1.25rem; padding: 0; margin: .5rem 0; }
.legend li { display: flex; align-items: center; gap: .35rem; }
.timeline { width: 100%; height: auto; display: block; border: 1px solid #d0d7de; border-radius: 6px; }
.symbol { vertical-align: -2px; }
.error { border-left: 4px solid #b42318; padding: .25rem .75rem; background: #ffebe9; }
`;

/** What a page of lastgood may load: its own inline style and data: images (no script, no font, no frame, no form). */
export const PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

/** One self-contained HTML5 document: `body` is the HTML inside <body> (its <main> and <footer>). The empty icon: no browser asks for /favicon.ico. */
export function htmlDocument(title: string, body: string): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="${PAGE_CSP}">
<meta name="referrer" content="no-referrer">
<link rel="icon" href="data:,">
<title>${title}</title>
<style>${STYLE}</style>
</head>
<body>
${body}
</body>
</html>
`;
}

export function footerHtml(what: string, now: Date): string {
  return `<footer><p>${what} by lastgood ${escapeHtml(VERSION)} at ${escapeHtml(when(now.toISOString()))}.</p></footer>`;
}

// ---- the timeline

/**
 * What the timeline marks, each its own shape (told apart without colour) and colour, and named in
 * the legend. The log's entries today; a kind of mark more (the recovery phases) is one member
 * here and the marks that make it (`TimelineRow`).
 */
export type MarkKind = Entry['kind'];

interface MarkStyle {
  /** the legend's name */
  label: string;
  /** how they are counted (one, many), as `lastgood log` counts entries */
  one: string;
  many: string;
  colour: string;
  /** the shape, centred on 0,0, about 14 units across */
  shape: (colour: string) => string;
}

export const MARKS: Record<MarkKind, MarkStyle> = {
  revert: { label: "lastgood's revert", one: 'revert', many: 'reverts', colour: '#0a4fa3', shape: (c) => `<circle r="6.5" fill="${c}"/>` },
  request: { label: 'request or review branch', one: 'request', many: 'requests', colour: '#6639ba', shape: (c) => `<rect x="-5.5" y="-5.5" width="11" height="11" fill="#fff" stroke="${c}" stroke-width="2.5"/>` },
  verified: { label: 'verified last-known-good', one: 'verified last-known-good', many: 'verified last-known-goods', colour: '#116329', shape: (c) => `<path d="M0 -7.5 L7.5 0 L0 7.5 L-7.5 0 Z" fill="${c}"/>` },
  'person-revert': { label: "a person's revert", one: "person's revert", many: "people's reverts", colour: '#b42318', shape: (c) => `<path d="M-6 -6 L6 6 M6 -6 L-6 6" stroke="${c}" stroke-width="3.2" stroke-linecap="round"/>` },
  recovered: { label: 'recovered at the revert', one: 'recovery', many: 'recoveries', colour: '#116329', shape: (c) => `<path d="M-6 0.5 L-2 4.5 L6 -4.5" fill="none" stroke="${c}" stroke-width="3.2" stroke-linecap="round" stroke-linejoin="round"/>` },
};

export interface TimelineMark {
  kind: MarkKind;
  /** ISO 8601 */
  at: string;
  /** the tooltip: plain outside text, escaped where it lands */
  title: string;
}

export interface TimelineRow {
  name: string;
  marks: TimelineMark[];
}

/** An entry's one line, as `lastgood log` prints it: what, which commit, and the text. */
function entryLine(e: Entry): string {
  const r = rowOf(e);
  return `${when(r.at)} ${r.kind} ${r.ref}: ${r.text.map((p) => (typeof p === 'string' ? p : p[1])).join('')}`;
}

/** A target's rows of the timeline: a mark per entry. */
export function timelineRow(t: TargetLog): TimelineRow {
  return { name: t.name, marks: t.entries.map((e) => ({ kind: e.kind, at: e.at, title: entryLine(e) })) };
}

/** The symbol of a kind of mark, for a legend or a table (decorative: its text says the same). */
export function markSymbol(kind: MarkKind): string {
  const m = MARKS[kind];
  return `<svg class="symbol" aria-hidden="true" focusable="false" width="16" height="16" viewBox="-8 -8 16 16">${m.shape(m.colour)}</svg>`;
}

export function timelineLegend(): string {
  return `<ul class="legend" aria-label="Legend of the timeline">${(Object.keys(MARKS) as MarkKind[]).map((k) => `<li>${markSymbol(k)}<span>${escapeHtml(MARKS[k].label)}</span></li>`).join('')}</ul>`;
}

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const STEPS = [HOUR, 2 * HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR, DAY, 2 * DAY, 5 * DAY, 7 * DAY, 14 * DAY, 30 * DAY, 91 * DAY, 182 * DAY, 365 * DAY];

/** The axis' ticks: the smallest step that gives at most 7, aligned on UTC (days on midnight). */
function ticks(from: number, to: number): Array<{ at: number; label: string }> {
  const step = STEPS.find((s) => (to - from) / s <= 7) ?? STEPS[STEPS.length - 1]!;
  const out: Array<{ at: number; label: string }> = [];
  for (let t = Math.ceil(from / step) * step; t <= to; t += step) {
    const iso = new Date(t).toISOString();
    out.push({ at: t, label: step < DAY ? `${iso.slice(5, 10)} ${iso.slice(11, 16)}` : iso.slice(0, 10) });
  }
  return out;
}

const plural = (n: number, s: MarkStyle) => `${n} ${n === 1 ? s.one : s.many}`;

/**
 * The timeline as an inline SVG: the window (`since`..`until`) across, a row per target, a mark
 * per entry with its tooltip (`<title>`) and `data-kind`. Marks outside the window are left out
 * (the tables list them). Its accessible name says what it shows, in words.
 */
export function timelineSvg(rows: TimelineRow[], window: { since: string; until: string }): string {
  const from = Date.parse(window.since);
  const to = Math.max(Date.parse(window.until), from + 1);
  const W = 960;
  const LEFT = 180;
  const RIGHT = 24;
  const TOP = 12;
  const ROW = 34;
  const AXIS = 30;
  const H = TOP + Math.max(rows.length, 1) * ROW + AXIS;
  const x = (t: number) => LEFT + ((t - from) / (to - from)) * (W - LEFT - RIGHT);
  const inWindow = (m: TimelineMark) => {
    const t = Date.parse(m.at);
    return t >= from && t <= to;
  };
  const said = rows.map((r) => {
    const shown = r.marks.filter(inWindow);
    const kinds = (Object.keys(MARKS) as MarkKind[]).map((k) => [k, shown.filter((m) => m.kind === k).length] as const).filter(([, n]) => n > 0);
    return `${r.name}: ${kinds.length ? kinds.map(([k, n]) => plural(n, MARKS[k])).join(', ') : 'nothing'}`;
  });
  const label = `Timeline from ${when(new Date(from).toISOString())} to ${when(new Date(to).toISOString())} (UTC). ${said.join('; ') || 'No target'}.`;
  const out: string[] = [];
  out.push(`<svg class="timeline" role="img" aria-label="${outside(label)}" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" font-family="system-ui, 'Liberation Sans', 'DejaVu Sans', sans-serif" font-size="13">`);
  out.push(`<title>${outside(label)}</title>`);
  out.push(`<rect x="0" y="0" width="${W}" height="${H}" fill="#fff"/>`);
  const bottom = TOP + Math.max(rows.length, 1) * ROW;
  for (const tick of ticks(from, to)) {
    const tx = x(tick.at).toFixed(1);
    out.push(`<line x1="${tx}" y1="${TOP}" x2="${tx}" y2="${bottom}" stroke="#d0d7de" stroke-width="1"/>`);
    // a label near the right edge ends there (not cut off)
    const anchor = x(tick.at) > W - 48 ? `x="${W - 4}" text-anchor="end"` : `x="${tx}" text-anchor="middle"`;
    out.push(`<text ${anchor} y="${bottom + 19}" fill="#57606a">${escapeHtml(tick.label)}</text>`);
  }
  out.push(`<line x1="${LEFT}" y1="${bottom}" x2="${W - RIGHT}" y2="${bottom}" stroke="#57606a" stroke-width="1"/>`);
  for (const [i, r] of rows.entries()) {
    const y = TOP + i * ROW + ROW / 2;
    const name = r.name.length > 24 ? `${r.name.slice(0, 23)}…` : r.name;
    out.push(`<g class="row" data-target="${outside(r.name)}">`);
    out.push(`<line x1="${LEFT}" y1="${y}" x2="${W - RIGHT}" y2="${y}" stroke="#eaeef2" stroke-width="1"/>`);
    out.push(`<text x="${LEFT - 10}" y="${y + 4.5}" text-anchor="end" fill="#1f2328"><title>${outside(r.name)}</title>${outside(name)}</text>`);
    // oldest first, each in the first lane (middle, above, below) where it covers no other; when all three are taken, over the newest
    const lanes: number[][] = [[], [], []];
    for (const m of [...r.marks].filter(inWindow).sort((a, b) => Date.parse(a.at) - Date.parse(b.at))) {
      const style = MARKS[m.kind];
      const mx = x(Date.parse(m.at));
      const lane = Math.max(0, lanes.findIndex((xs) => xs.every((other) => Math.abs(other - mx) >= 13)));
      lanes[lane]!.push(mx);
      const my = y + [0, -10, 10][lane]!;
      out.push(`<g class="mark mark-${m.kind}" data-kind="${m.kind}" data-at="${escapeHtml(m.at)}" transform="translate(${mx.toFixed(1)} ${my})"><title>${outside(m.title)}</title>${style.shape(style.colour)}</g>`);
    }
    out.push('</g>');
  }
  out.push('</svg>');
  return out.join('\n');
}

/** The timeline's section of a page: heading, window, legend, the SVG. */
export function timelineSection(log: AuditLog, heading = 'Timeline'): string {
  return `<section aria-labelledby="timeline-heading">
<h2 id="timeline-heading">${escapeHtml(heading)}</h2>
<p class="muted">${outside(windowLine(log.window, log))}.</p>
${log.notes.length ? `<div class="notes">${log.notes.map((n) => `<p>Note: ${outside(n)}</p>`).join('')}</div>` : ''}
${timelineLegend()}
${timelineSvg(log.targets.map(timelineRow), log.window)}
</section>`;
}

// ---- `lastgood log --html`

const TONE: Record<Color, string> = { red: 'tone-red', green: 'tone-green', yellow: 'tone-yellow', cyan: 'tone-cyan', dim: 'tone-dim' };

/** The URL fields of an entry: the only texts made links. */
function urlsOf(e: Entry): string[] {
  const urls = [e.url, e.kind === 'revert' ? e.request?.url : undefined];
  return urls.filter((u): u is string => Boolean(u));
}

function entryRowHtml(e: Entry): string {
  const r = rowOf(e);
  const urls = urlsOf(e);
  const text = r.text.map((p) => (typeof p === 'string' ? outside(p) : `<strong class="${TONE[p[0]]}">${outside(p[1])}</strong>`)).join('');
  const more = r.more.map((m) => `<span class="more">${urls.includes(m) ? urlHtml(m) : outside(m)}</span>`).join('');
  const ref = `<code>${outside(r.ref)}</code>`;
  return `<tr data-kind="${e.kind}"><td class="when">${escapeHtml(when(r.at).replace('T', ' ').replace('Z', ''))}</td><td>${markSymbol(e.kind)} ${outside(r.kind)}</td><td>${linkTo(ref, e.url)}</td><td>${text}${more}</td></tr>`;
}

function targetSection(t: TargetLog, index: number): string {
  const id = `target-${index}`;
  const head = `<h2 id="${id}">${outside(t.name)}</h2>\n<p>${t.paths.map((p) => `<code>${outside(p)}</code>`).join(', ')}: ${outside(counts(t))}.</p>`;
  return `<section aria-labelledby="${id}">
${head}
<table>
<caption>What lastgood did to ${outside(t.name)}, newest first</caption>
<thead><tr><th scope="col">When (UTC)</th><th scope="col">What</th><th scope="col">Commit</th><th scope="col">Details</th></tr></thead>
<tbody>
${t.entries.length ? t.entries.map(entryRowHtml).join('\n') : '<tr><td colspan="4">Nothing in this window.</td></tr>'}
</tbody>
</table>
</section>`;
}

/** `lastgood log --html`: one self-contained document (the timeline, then a table per target). */
export function formatLogHtml(log: AuditLog, opts: { now: Date }): string {
  const title = `lastgood log: ${log.branch} of ${log.repository}`;
  const body = `<main>
<h1>lastgood log: <code>${outside(log.branch)}</code> of <code>${outside(log.repository)}</code></h1>
${timelineSection(log)}
${log.targets.map(targetSection).join('\n')}
</main>
${footerHtml('Written', opts.now)}`;
  return htmlDocument(outside(title), body);
}
