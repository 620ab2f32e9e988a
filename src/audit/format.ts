import { redact } from '../scrub.ts';
import { codeSpan, PORTABLE_MARKDOWN, terminalJson, terminalText } from '../revert/markup.ts';
import type { AuditLog, AuditWindow, Entry, Holds, RecoveredEntry, RequestEntry, RevertEntry, TargetLog } from './schema.ts';
import { formatDuration } from '../config/duration.ts';

/**
 * `lastgood log` as people read it: aligned text for a terminal (colours when it is one and
 * NO_COLOR is unset, as the run report: src/report/text.ts), Markdown for an incident report or a
 * job summary, and the JSON document of schema.ts. Everything is scrubbed on the way out.
 */

export const short = (sha: string) => sha.slice(0, 12);
/** 2026-11-01T12:07:00Z: seconds are what a commit time has */
export const when = (isoTime: string) => isoTime.replace(/\.\d{3}Z$/, 'Z');
const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

const SGR = { red: '31', green: '32', yellow: '33', cyan: '36', dim: '2' } as const;
export type Color = keyof typeof SGR;

export function windowLine(w: AuditWindow, log: Pick<AuditLog, 'branch' | 'head' | 'repository'>): string {
  const stopped = w.stoppedBy === 'limit'
    ? `stopped at the limit of ${w.limit} commits (${w.oldestRead ? when(w.oldestRead) : '?'}): older history was not read`
    : w.stoppedBy === 'root' ? 'the whole history' : "back to the window's start";
  return `${log.branch} at ${short(log.head)} in ${log.repository}, ${when(w.since)} to ${when(w.until)} (${w.why}): ${plural(w.commitsRead, 'commit')} read, ${stopped}`;
}

export function counts(t: TargetLog): string {
  const n = (k: Entry['kind']) => t.entries.filter((e) => e.kind === k).length;
  const parts = [
    n('revert') && plural(n('revert'), 'revert'),
    n('request') && plural(n('request'), 'request'),
    n('verified') && plural(n('verified'), 'verified last-known-good'),
    n('person-revert') && plural(n('person-revert'), "person's revert", "people's reverts"),
    n('recovered') && plural(n('recovered'), 'recovery', 'recoveries'),
  ].filter(Boolean);
  return parts.length ? parts.join(', ') : 'nothing in this window';
}

function verdictPhrase(e: { class: string | null } & Partial<Pick<RevertEntry, 'verdict'>>): string {
  if (e.verdict === 'stuck' || e.class === 'stuck') return 'stuck';
  return e.class ? `failed (${e.class})` : (e.verdict ?? 'failed');
}

/** `quote`: how outside text (an author, a subject) is written where the phrase lands (code in Markdown) */
export function holdsPhrase(h: Holds, quote: (text: string) => string = (text) => text): string {
  const by = (c: string | null) => (c ? short(c) : '?');
  switch (h.state) {
    case 'holds':
      return 'holds';
    case 'undone':
      return `undone by ${by(h.commit)} (${quote(h.author ?? '?')}, ${when(h.at!)})`;
    case 'superseded':
      return `superseded by lastgood's revert ${by(h.commit)} (${when(h.at!)})`;
    case 'released-since':
      return `changed since by ${by(h.commit)} (${quote(h.author ?? '?')}, ${when(h.at!)}): ${quote(h.subject ?? '')}`;
  }
}

const HOLDS_COLOR: Record<Holds['state'], Color> = { holds: 'green', undone: 'red', superseded: 'yellow', 'released-since': 'yellow' };
const STATE_COLOR: Record<RequestEntry['state'], Color> = { open: 'yellow', merged: 'green', closed: 'dim' };
const KIND_COLOR: Record<Entry['kind'], Color> = { revert: 'cyan', request: 'cyan', verified: 'green', 'person-revert': 'red', recovered: 'green' };

/** One entry as `lastgood log` phrases it (the text, and the HTML of html.ts). */
export interface Row {
  at: string;
  kind: string;
  ref: string;
  kindColor: Color;
  /** the first line, with coloured parts */
  text: Array<string | [Color, string]>;
  more: string[];
}

export function rowOf(e: Entry): Row {
  switch (e.kind) {
    case 'revert': {
      const via = e.request ? `, via ${e.request.noun} #${e.request.number}` : e.via === 'merge' ? `, merged as ${short(e.landedAs)}` : '';
      const lkg = e.restores ? `, back to ${short(e.restores)}${e.lastKnownGoodVerified === null ? '' : e.lastKnownGoodVerified ? ' (verified)' : ' (unverified)'}` : '';
      return {
        at: e.at, kind: e.strategy === 'restore' ? 'restore' : 'revert', ref: short(e.commit), kindColor: KIND_COLOR.revert,
        text: [`${verdictPhrase(e)}: reverts ${e.reverts.map(short).join(', ') || '?'}${lkg}${via}; `, [HOLDS_COLOR[e.holds.state], holdsPhrase(e.holds)]],
        more: [...e.evidence.map((x) => `evidence: ${x}`), ...(e.reason ? [`reason: ${e.reason}`] : []), ...(e.url ? [e.url] : [])],
      };
    }
    case 'request': {
      const settled = e.state === 'merged' ? ` ${e.mergedAt ? when(e.mergedAt) : ''}${e.mergeCommit ? ` as ${short(e.mergeCommit)}` : ''}` : e.state === 'closed' && e.closedAt ? ` ${when(e.closedAt)}, unmerged` : '';
      const what = e.reverts.length ? `; ${verdictPhrase(e)}: reverts ${e.reverts.map(short).join(', ')}` : '';
      return {
        at: e.at, kind: e.noun, ref: e.number !== null ? `#${e.number}` : short(e.head ?? e.branch), kindColor: KIND_COLOR.request,
        text: [[STATE_COLOR[e.state], e.state], `${settled.trimEnd()}: ${e.branch}${what}`],
        more: [...e.evidence.map((x) => `evidence: ${x}`), ...(e.url ? [e.url] : [])],
      };
    }
    case 'verified':
      return { at: e.at, kind: 'verified', ref: short(e.commit), kindColor: KIND_COLOR.verified, text: [`observed healthy (${e.where}): ${e.evidence}`], more: [] };
    case 'recovered':
      return {
        at: e.at, kind: 'recovered', ref: short(e.revision), kindColor: KIND_COLOR.recovered,
        text: [`healthy again at lastgood's revert ${short(e.revert)}, `, ['green', recoveryPhrase(e)]],
        more: [recoveryTimesLine(e), ...(e.url ? [e.url] : [])],
      };
    case 'person-revert':
      return {
        at: e.at, kind: 'person revert', ref: short(e.commit), kindColor: KIND_COLOR['person-revert'],
        text: [`${e.author} undid lastgood's revert ${short(e.undid)}${e.how === 'git revert' ? ' (git revert)' : ''}: ${e.subject}`],
        more: e.url ? [e.url] : [],
      };
  }
}

/** "6m12s after the failure began (detect 30s, revert 11s, review 3m2s, sync 1m10s, rollout 1m19s)" */
export function recoveryPhrase(e: Pick<RecoveredEntry, 'seconds' | 'phases'>): string {
  return `${formatDuration(e.seconds * 1000)} after the failure began (${e.phases.map((p) => `${p.phase} ${formatDuration(p.seconds * 1000)}`).join(', ')})`;
}

/** Each phase's moment: "began 12:00:00Z, confirmed 12:00:30Z, …" */
export function recoveryTimesLine(e: RecoveredEntry): string {
  const at = (s: string) => when(s).slice(11);
  return `began ${at(e.began)}, confirmed ${at(e.confirmed)}, written ${at(e.written)}${e.merged ? `, merged ${at(e.merged)}` : ''}, synced ${at(e.synced)}, healthy ${at(e.healthy)} (${e.mode} mode)`;
}

export function formatLogText(log: AuditLog, opts: { color?: boolean } = {}): string {
  const paint = (c: Color, s: string) => (opts.color ? `\x1b[${SGR[c]}m${s}\x1b[0m` : s);
  const lines = [windowLine(log.window, log), ...log.notes.map((n) => `note: ${terminalText(n)}`)];
  for (const t of log.targets) {
    lines.push('', `${t.name} (${t.paths.join(', ')}): ${counts(t)}`);
    const rows = t.entries.map(rowOf);
    const kindWidth = Math.max(0, ...rows.map((r) => r.kind.length));
    const refWidth = Math.max(0, ...rows.map((r) => r.ref.length));
    for (const r of rows) {
      const head = `  ${when(r.at)}  ${paint(r.kindColor, r.kind.padEnd(kindWidth))}  ${r.ref.padEnd(refWidth)}  `;
      // outside text (subjects, authors, evidence) with its control characters written out: no escape sequence or forged line reaches the terminal
      lines.push(head + r.text.map((p) => (typeof p === 'string' ? terminalText(p) : paint(p[0], terminalText(p[1])))).join(''));
      const indent = ' '.repeat(2 + when(r.at).length + 2 + kindWidth + 2 + refWidth + 2);
      for (const m of r.more) lines.push(indent + terminalText(m));
    }
  }
  return redact(lines.join('\n')) + '\n';
}

const cell = (s: string) => s.replace(/\s*\n\s*/g, ' ').replace(/\|/g, '\\|');
/**
 * Outside text (a commit's subject and author, a person's reason, evidence, branch names) as code
 * in a table cell: no link, mention, image or HTML from it (revert/markup.ts). The page is pasted
 * anywhere, so the dialect is the portable one; `cell` finds no pipe left in it.
 */
const code = (s: string) => codeSpan(s, PORTABLE_MARKDOWN);

export function formatLogMarkdown(log: AuditLog): string {
  const link = (sha: string, url: string | null) => (url ? `[${code(short(sha))}](${url})` : code(short(sha)));
  const out = [`## lastgood log: ${code(log.branch)} of ${code(log.repository)}`, '', cell(windowLine(log.window, log)) + '.'];
  for (const n of log.notes) out.push('', `> ${cell(n)}`);
  for (const t of log.targets) {
    out.push('', `### ${t.name}`, '', `${t.paths.map(code).join(', ')}: ${counts(t)}.`);
    if (!t.entries.length) continue;
    out.push('', '| when (UTC) | what | | details |', '|---|---|---|---|');
    for (const e of t.entries) {
      let what: string;
      let ref: string;
      let details: string;
      switch (e.kind) {
        case 'revert':
          what = e.strategy === 'restore' ? 'restore' : 'revert';
          ref = link(e.commit, e.url);
          details = `${verdictPhrase(e)}: reverts ${e.reverts.map((s) => code(short(s))).join(', ')}${e.restores ? `, back to ${code(short(e.restores))}${e.lastKnownGoodVerified ? ' (verified)' : e.lastKnownGoodVerified === false ? ' (unverified)' : ''}` : ''}${e.request ? `, via [${e.request.noun} #${e.request.number}](${e.request.url})` : ''}. **${holdsPhrase(e.holds, code)}**${e.evidence.length ? `<br>${e.evidence.map((x) => code(x)).join('<br>')}` : ''}${e.reason ? `<br>reason: ${code(e.reason)}` : ''}`;
          break;
        case 'request':
          what = e.noun;
          ref = e.number !== null && e.url ? `[#${e.number}](${e.url})` : code(short(e.head ?? e.branch));
          details = `**${e.state}**${e.state === 'merged' && e.mergeCommit ? ` as ${code(short(e.mergeCommit))}` : ''}: ${code(e.branch)}${e.reverts.length ? `, reverts ${e.reverts.map((s) => code(short(s))).join(', ')}` : ''}`;
          break;
        case 'verified':
          what = 'verified';
          ref = link(e.commit, e.url);
          details = `observed healthy (${code(e.where)}): ${code(e.evidence)}`;
          break;
        case 'recovered':
          what = 'recovered';
          ref = link(e.revision, e.url);
          details = `healthy again at lastgood's revert ${code(short(e.revert))}, **${recoveryPhrase(e)}**<br>${recoveryTimesLine(e)}`;
          break;
        case 'person-revert':
          what = "person's revert";
          ref = link(e.commit, e.url);
          details = `${code(e.author)} undid lastgood's revert ${code(short(e.undid))}: ${code(e.subject)}`;
          break;
      }
      out.push(`| ${when(e.at).replace('T', ' ').replace('Z', '')} | ${what} | ${ref} | ${cell(details)} |`);
    }
  }
  return redact(out.join('\n')) + '\n';
}

export function formatLogJson(log: AuditLog): string {
  return terminalJson(redact(JSON.stringify(log, null, 2))) + '\n';
}
