import test, { type ExecutionContext } from 'ava';
import fc from 'fast-check';
import MarkdownIt from 'markdown-it';
import { Octokit } from '@octokit/rest';
import path from 'node:path';
import type { Observed } from '../src/observe/types.ts';
import type { Evidence, Verdict } from '../src/decide/types.ts';
import type { Report, TargetOutcome } from '../src/engine/index.ts';
import type { Located } from '../src/history/locate.ts';
import type { Change, CommitInfo } from '../src/repo/types.ts';
import { createGitHubBackend } from '../src/deliver/github/index.ts';
import { openGitLab } from '../src/deliver/gitlab/index.ts';
import { openGitea } from '../src/deliver/gitea/index.ts';
import { openBitbucketCloud } from '../src/deliver/bitbucket/cloud.ts';
import { openBitbucketDataCenter } from '../src/deliver/bitbucket/data-center.ts';
import { openAzureDevOps } from '../src/deliver/azure-devops/index.ts';
import type { HostCoordinates } from '../src/deliver/providers.ts';
import { carriesMarker, markedAsOurs, requestMarker } from '../src/deliver/marker.ts';
import { codeBlock, codeSpan, diffStatLines, errorText, GITHUB_FLAVORED, PORTABLE_MARKDOWN, PYTHON_MARKDOWN, terminalJson, terminalText, type MarkdownDialect } from '../src/revert/markup.ts';
import { formatReport, reportJson } from '../src/report/text.ts';
import { slackMessage } from '../src/report/notify.ts';
import { formatLogMarkdown, formatLogText } from '../src/audit/format.ts';
import type { AuditLog } from '../src/audit/schema.ts';
import { renderSummary } from '../src/report/summary.ts';
import { prettyLine, uniqueKeys } from '../src/report/log.ts';
import { progressReporter } from '../src/report/progress.ts';
import { diffStat, type FileDiff } from '../src/revert/diff.ts';
import { pullRequestText, type PullRequestInput } from '../src/revert/message.ts';
import { forgeScenario, P, TARGET, values } from './support/forge-scenario.ts';
import { openModelRequest } from './support/forge-emulator.ts';
import { HOSTS } from './support/hosts-under-test.ts';
import { startGitHubEmulator } from './support/github-emulator.ts';
import { commit, git, makeRepo, tempDir } from './support/git.ts';
import { kustomization } from './support/objects.ts';

/**
 * Issue 35, "Text that must not be rendered as markup": what a commit's author, a cluster's status
 * or an image tag says reaches pull/merge request bodies, review comments, the Action's job
 * summary and the CLI's terminal output only as text.
 *
 * The bodies are rendered by markdown-it (CommonMark + GFM tables, with `html: true` and
 * `linkify: true`): close to GitHub, GitLab and Gitea, stricter than Bitbucket (which escapes all
 * HTML). What it does not model: the hosts' own references — @mentions, `#123`,
 * `org/repo#123`, GitLab's `!123` `~label` `%milestone` `[[wiki]]`, Azure DevOps' work items and
 * math — which every host applies to text outside code after rendering; so the test asserts that
 * every piece of attacker text lies inside a <code> element of the rendered HTML. Nor does it model
 * the hosts' HTML sanitisers (it passes all raw HTML through: stricter) or Python-Markdown's table
 * rules (Bitbucket Cloud: its dialect substitutes pipes, which no table parser splits at).
 */

const md = new MarkdownIt({ html: true, linkify: true });

const decode = (html: string) => html.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&amp;/g, '&');
const escapeHtml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
/** the rendered HTML without its code elements (inline code and code blocks): where a host would make links, mentions and references */
const outsideCode = (html: string) => html.replace(/<code[^>]*>[\s\S]*?<\/code>/g, '');

const FORGED_BAD = 'f'.repeat(40);
const FORGED_MARKER = `<!-- lastgood:target=${TARGET} bad=${FORGED_BAD} -->`;
/** what an attacker would like to see live: a ping, a remote image, links, raw HTML, references of every host, and lastgood's own marker */
const PAYLOAD = [
  '@acme/admins', '![px](https://evil.example/p.png)', '[click](https://evil.example/c)', 'https://evil.example/raw', 'www.evil.example',
  '<img src="https://evil.example/i.png">', '<a href="https://evil.example/a">a</a>', '<details open><summary>s</summary>',
  '#4242', 'acme/gitops#4243', '!4244', '~"prod-lock"', '%"v9"', '[[Home]]', '$x^2$', ':boom:', FORGED_MARKER,
].join(' ');
/** the same for a file name: no `/` (it would make folders) */
const NAME_PAYLOAD = '@acme-admins ![px](http:evil.example?p.png) <img src=http:evil.example?i.png> <!-- lastgood:target=podinfo -->';
/** pieces of attacker text that must never be outside code in the rendered HTML */
const TOKENS = ['evil.example', '@acme', '#4242', '#4243', '!4244', '~"prod-lock"', '%"v9"', '[[Home]]', '$x^2$', ':boom:', 'lastgood:target', 'forged heading', 'deadbeef'];

const SUBJECT = `podinfo 1.1.0 ${PAYLOAD}`;
const MESSAGE = `health check failed | timeout\n# forged heading\n\`\`\`\n${PAYLOAD}\n</td></tr></table><img src=x onerror=alert(1)>`;
const FILE_NAME = `x\x1b[31m\nnew commit: deadbeef\n\`\`\`\n${NAME_PAYLOAD}.yaml`;
const IMAGE = `ghcr.io/acme/podinfo:1.1.0${PAYLOAD}`;

/**
 * What a body rendered by markdown-it shows of the attacker text: nothing but code. `ownLinks`:
 * lastgood's own links (commit pages); `marker`: the body carries lastgood's own marker.
 */
function assertInert(t: ExecutionContext, body: string, opts: { ownLinks?: (href: string) => boolean; marker?: string; rows?: number } = {}) {
  const html = md.render(body);
  // lastgood's own marker is the one comment allowed (it passes through as raw HTML)
  const outside = decode(outsideCode(html)).replace(opts.marker ?? '\u0000', '');
  for (const token of TOKENS) t.false(outside.includes(token), `"${token}" outside code:\n${outside}`);
  t.false(/<img\b/.test(html), 'no image');
  for (const [, href] of html.matchAll(/<a href="([^"]*)"/g)) t.true(opts.ownLinks?.(decode(href!)) ?? false, `a link from attacker text: ${href}`);
  for (const tag of ['<details open', '<summary>s', '<a href="https://evil', '<table><img', '<h1']) t.false(html.includes(tag), `raw HTML ${tag}`);
  // the only comment is lastgood's own marker, on its own line, in the text and in the HTML
  t.is(body.split('<!--').length - 1, opts.marker ? 1 : 0, 'no `<!--` from outside text');
  if (opts.marker) t.true(carriesMarker(body, opts.marker));
  t.is(html.split('<!--').length - 1, opts.marker ? 1 : 0);
  // the evidence table keeps its rows and cells
  if (opts.rows !== undefined) {
    const tbody = /<tbody>([\s\S]*?)<\/tbody>/.exec(html)?.[1] ?? '';
    const rows = tbody.match(/<tr>[\s\S]*?<\/tr>/g) ?? [];
    t.is(rows.length, opts.rows, tbody);
    for (const row of rows) t.is(row.split('<td').length - 1, 5, row);
  }
  return html;
}

// ---- the helpers, as properties ------------------------------------------------------------------

/**
 * What quoted text shows of `s` (revert/markup.ts, written again here as the oracle): C0 and DEL as control
 * pictures but `keep`, C1, separators and bidirectional controls as `\u…`, `<!--` broken by a zero-width space.
 */
const shown = (s: string, keep = '') =>
  s
    .replace(/[\u0000-\u001f\u007f]/g, (c) => (keep.includes(c) ? c : c === '\u007f' ? '\u2421' : String.fromCodePoint(0x2400 + c.charCodeAt(0))))
    .replace(/[\u0080-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
    .replace(/<!--/g, '<\u200b!--');
const shownInline = (s: string) => shown(s);
/** a code block keeps line feeds and tabs */
const shownBlock = (s: string) => shown(s, '\n\t');

const tricky = fc
  .array(fc.constantFrom('`', '``', '```', '````', ' ', '  ', '\n', '\r', '\r\n', '\t', '|', '\\', '\\|', '<!--', '-->', '<', '>', '&amp;', '@x', '#1', '~~~', '\x1b[31m', '\x00', '\u0085', '\u202e', '\u2028', '![x](y)', '<img src=x>', '*', '_', '[', ']', 'a', 'é', '😀'), { maxLength: 12 })
  .map((parts) => parts.join(''));
const anyText = fc.oneof(tricky, fc.string({ unit: 'binary', maxLength: 40 }));

test('codeSpan: any text renders as exactly one <code> element holding it (controls as pictures, `<!--` broken)', (t) => {
  fc.assert(
    fc.property(anyText.filter((s) => s !== ''), (s) => {
      const html = md.render(codeSpan(s));
      return html === `<p><code>${escapeHtml(shownInline(s))}</code></p>\n`;
    }),
    { numRuns: 2000 },
  );
  t.is(md.render(codeSpan('')), '<p><code> </code></p>\n', 'an empty text is one space');
});

test('codeSpan in a table cell: one cell, one <code> element, in each dialect', (t) => {
  const cell = (s: string, dialect: MarkdownDialect) => /<tbody>\n<tr>\n<td>([\s\S]*)<\/td>\n<\/tr>\n<\/tbody>/.exec(md.render(`| a |\n|---|\n| ${codeSpan(s, dialect)} |\n`))?.[1];
  fc.assert(
    fc.property(anyText.filter((s) => s !== ''), (s) => {
      const gfm = cell(s, GITHUB_FLAVORED) === `<code>${escapeHtml(shownInline(s))}</code>`;
      const substituted = cell(s, PORTABLE_MARKDOWN) === `<code>${escapeHtml(shownInline(s).replaceAll('|', '\u00a6'))}</code>`;
      return gfm && substituted;
    }),
    { numRuns: 1000 },
  );
  t.is(codeSpan('a|b', PYTHON_MARKDOWN), '`a\u00a6b`', 'Bitbucket Cloud: no pipe at all');
  t.is(codeSpan('a|b', GITHUB_FLAVORED), '`a\\|b`', 'GFM: an escaped pipe, shown as a pipe');
});

test('codeBlock: any text renders as exactly one <pre><code> holding it (line feeds and tabs kept)', (t) => {
  fc.assert(
    fc.property(anyText, (s) => {
      const shown = shownBlock(s);
      const html = md.render(codeBlock(s));
      return html === `<pre><code>${escapeHtml(shown)}${shown === '' || shown.endsWith('\n') ? '' : '\n'}</code></pre>\n`;
    }),
    { numRuns: 2000 },
  );
  t.regex(codeBlock('a\n````\nb'), /^`{5}\na\n`{4}\nb\n`{5}$/, 'the fence is longer than any backtick run inside');
  t.is(md.render(`${codeBlock('x', 'diff')}\n\nafter`), '<pre><code class="language-diff">x\n</code></pre>\n<p>after</p>\n');
  t.throws(() => codeBlock('x', 'a`b'));
});

test('errorText (stderr): one line, but a git server\'s own `remote:` lines; no quoted text starts a line of lastgood\'s', (t) => {
  t.is(errorText('a\nlastgood: forged\nremote: hook said\x1b[2J\nremote: see x\nafter'), 'a\\nlastgood: forged\nremote: hook said\\x1b[2J\nremote: see x\\nafter');
  // for every text: each line but the first is a server's `remote:` line
  fc.assert(fc.property(anyText, (s) => errorText(s).split('\n').slice(1).every((l) => l.startsWith('remote: ')) && !/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/.test(errorText(s))));
});

test('terminalText: control characters written out, so the text stays on its line', (t) => {
  t.is(terminalText('a\x1b[31mred\nnew commit: x\r\t\x00\x7f\u009b\u202e'), 'a\\x1b[31mred\\nnew commit: x\\r\\t\\x00\\x7f\\x9b\\u202e');
  fc.assert(fc.property(anyText, (s) => !/[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/.test(terminalText(s))));
  const json = terminalJson(JSON.stringify({ m: 'a\u009b31m\u2028b' }));
  t.false(/[\u0080-\u009f\u2028]/.test(json));
  t.deepEqual(JSON.parse(json), { m: 'a\u009b31m\u2028b' }, 'the JSON means the same');
});

// ---- pull/merge request bodies, per host ---------------------------------------------------------

const coordinates = (provider: HostCoordinates['provider']): HostCoordinates => ({ provider, api: 'https://host.example/api', web: 'https://host.example/acme/gitops', owner: 'acme', repo: 'gitops' });

/** each host's own choice of Markdown dialect, as its backend declares it */
const HOST_DIALECTS: Array<[string, MarkdownDialect]> = [
  ['github', createGitHubBackend({ owner: 'acme', repo: 'gitops', token: 'ghs_markupTestToken0123456789' }).markdown],
  ['gitlab', openGitLab({ coordinates: coordinates('gitlab'), credentials: undefined }).markdown],
  ['gitea', openGitea({ coordinates: coordinates('gitea'), credentials: undefined }).markdown],
  ['bitbucket', openBitbucketCloud({ coordinates: coordinates('bitbucket'), credentials: undefined }).markdown],
  ['bitbucket-server', openBitbucketDataCenter({ coordinates: coordinates('bitbucket-server'), credentials: undefined }).markdown],
  ['azure-devops', openAzureDevOps({ coordinates: coordinates('azure-devops'), credentials: undefined }).markdown],
];

const person = { name: 'dev', email: 'dev@example.com', timestamp: 1_793_000_000, timezoneOffset: 0 };
const commitInfo = (oid: string, message: string): CommitInfo => ({ oid, parents: [], message, tree: '0'.repeat(40), author: person, committer: person });
const BAD = 'b'.repeat(40);
const GOOD = 'a'.repeat(40);
const COMMIT_PAGE = 'https://host.example/acme/gitops/commit/';

function hostileInput(markdown?: MarkdownDialect): PullRequestInput {
  const evidence = [
    { apiVersion: 'kustomize.toolkit.fluxcd.io/v1', kind: 'Kustomization', groupKind: 'kustomize.toolkit.fluxcd.io/Kustomization', namespace: 'flux-system', name: 'apps', state: 'failed', reason: 'HealthCheckFailed', message: MESSAGE, since: '2026-11-01T12:00:00Z' },
    { apiVersion: 'example.com/v1', kind: 'Widget', groupKind: 'example.com/Widget', namespace: 'prod', name: 'w', state: 'failed', reason: `Broken|${PAYLOAD}`, message: PAYLOAD, since: `soon ${PAYLOAD}` },
  ] as Evidence[];
  const verdict: Verdict = { target: TARGET, verdict: 'failed', class: 'promotion', summary: `failed (promotion): ${PAYLOAD}`, evidence };
  const located = {
    bad: [commitInfo(BAD, `${SUBJECT}\n\nbody ${PAYLOAD}`)], later: [commitInfo('c'.repeat(40), `later ${PAYLOAD}`)],
    lastKnownGood: GOOD, verified: false, how: 'revision', explanation: `the engine attempted ${PAYLOAD}`, touched: [], revert: {} as Located['revert'],
  } as Located;
  const stat = diffStat([
    { path: `${P}values.yaml`, status: 'modified', added: 1, removed: 1, patch: '' },
    { path: `${P}${FILE_NAME}`, status: 'deleted', added: 0, removed: 1, patch: '' },
  ] satisfies FileDiff[]);
  return {
    target: TARGET, paths: [P, `${P}${FILE_NAME}`], strategy: 'revert', verdict, located, now: new Date('2026-11-01T12:05:00Z'),
    frozen: [`ImagePolicy flux-system/podinfo ignores ${IMAGE}`], rejected: [IMAGE], notes: [`restored ${FILE_NAME}`],
    checked: { summary: `the revert changes 2 files (${FILE_NAME})`, notRendered: `the build fails at ${FILE_NAME}` },
    diffStat: stat, commitUrl: (sha) => `${COMMIT_PAGE}${sha}`, ...(markdown ? { markdown } : {}),
  };
}

for (const [host, dialect] of HOST_DIALECTS) {
  test(`${host}: the request body shows the subject, status message, file name and image tag only as code`, (t) => {
    const { title, body } = pullRequestText(hostileInput(dialect));
    // as the backend writes it: the body, then lastgood's marker on its own line
    const marker = requestMarker({ target: TARGET, bad: [BAD] });
    const html = assertInert(t, `${body.trimEnd()}\n\n${marker}\n`, { ownLinks: (href) => href.startsWith(COMMIT_PAGE), marker, rows: 2 });
    // everything is there to read
    const code = decode([...html.matchAll(/<code[^>]*>([\s\S]*?)<\/code>/g)].map((m) => m[1]).join('\n'));
    for (const text of [SUBJECT, 'ghcr.io/acme/podinfo:1.1.0@acme/admins', 'health check failed', '# forged heading']) t.true(code.includes(text.replace(FORGED_MARKER, FORGED_MARKER.replace('<!--', '<\u200b!--'))), text);
    const stat = decode(/<pre><code>([\s\S]*?)<\/code><\/pre>/.exec(html)?.[1] ?? '');
    t.is(stat.split('\n').length, 4, `the diffstat: a line per file and the total:\n${stat}`);
    t.true(stat.includes('x\u241b[31m\u240anew commit: deadbeef'), 'the file name on its line, its ESC and line break as pictures');
    t.false(title.includes('\n'));
    t.is(html.includes('<sub>'), dialect.html, 'lastgood\'s own small print only where HTML renders');
  });
}

test('the default dialect (host not known) renders the same on every host: no HTML of its own, no pipe in table code', (t) => {
  const { body } = pullRequestText(hostileInput());
  assertInert(t, body, { ownLinks: (href) => href.startsWith(COMMIT_PAGE), rows: 2 });
  t.false(body.includes('<sub>'));
  const rows = body.split('\n').filter((l) => l.startsWith('| `'));
  t.true(rows.every((r) => r.split('|').length === 7), rows.join('\n'));
});

// ---- the job summary -----------------------------------------------------------------------------

test('job summary: a hostile file name, message, subject and tag stay code', (t) => {
  const stat = diffStat([{ path: `${P}${FILE_NAME}`, status: 'deleted', added: 0, removed: 1, patch: '' }]);
  const outcome = {
    name: TARGET, verdict: 'failed', class: 'promotion', summary: PAYLOAD, action: 'revert', reason: `revert: ${SUBJECT}`, bad: [BAD], lastKnownGood: GOOD,
    commit: 'd'.repeat(40), branch: `lastgood/${TARGET}/${PAYLOAD}`, created: true, diffStat: stat, diff: `diff --git a/${FILE_NAME}\n\`\`\`\n${PAYLOAD}\n`,
    checked: { summary: `the revert changes 1 file (${FILE_NAME})` },
    evidence: hostileInput().verdict.evidence,
  } as TargetOutcome;
  const summary = renderSummary({ targets: [outcome] }, { dryRun: true, event: `push ${PAYLOAD}`, commitUrl: (sha) => `${COMMIT_PAGE}${sha}` });
  const html = assertInert(t, summary, { ownLinks: (href) => href.startsWith(COMMIT_PAGE), rows: 2 });
  const shownStat = decode(/<pre><code>([\s\S]*?)<\/code><\/pre>/.exec(html)?.[1] ?? '');
  t.regex(shownStat, /^ apps\/podinfo\/overlays\/prod\/x\u241b\[31m\u240anew commit: deadbeef\u240a```\u240a.* \| +1 -+ \(deleted\)\n 1 file changed/, 'the file name on its line of the diffstat block, its controls as pictures');
  t.is(html.match(/<pre><code/g)?.length, 2, 'the diffstat and the diff, one block each');
});

/** A log of a target whose history holds attacker text everywhere a person or a host can put it. */
function hostileLog(): AuditLog {
  const sha = (c: string) => c.repeat(40);
  const holds = { state: 'released-since' as const, commit: sha('e'), at: '2026-11-10T10:00:00Z', author: `Mallory ${PAYLOAD} <m@evil.example>`, subject: SUBJECT };
  return {
    $schema: 'https://lastgood.dev/schema/log.schema.json', repository: 'https://github.com/acme/gitops', branch: 'main', head: sha('a'),
    window: { since: '2026-11-01T00:00:00Z', until: '2026-11-28T00:00:00Z', why: '--since', commitsRead: 12, limit: 5000, stoppedBy: 'since', oldestRead: '2026-11-01T00:00:00Z' },
    notes: [],
    targets: [{
      name: TARGET, paths: [P],
      entries: [
        { kind: 'person-revert', at: '2026-11-10T11:00:00Z', commit: sha('b'), author: `Mallory <${PAYLOAD}>`, subject: `Revert ${SUBJECT}\x1b[2J\nnew commit: deadbeef`, undid: sha('c'), how: 'git revert', url: `${COMMIT_PAGE}${sha('b')}` },
        { kind: 'verified', at: '2026-11-10T10:30:00Z', commit: sha('d'), evidence: MESSAGE, where: `notes ${PAYLOAD}`, url: null },
        {
          kind: 'revert', at: '2026-11-10T09:40:00Z', commit: sha('c'), landedAs: sha('c'), via: 'commit', request: null, subject: SUBJECT, strategy: 'revert', verdict: 'failed', class: 'promotion',
          reverts: [BAD], restores: GOOD, lastKnownGoodVerified: true, evidence: [MESSAGE], details: [MESSAGE], reason: `by hand: ${PAYLOAD}`, url: `${COMMIT_PAGE}${sha('c')}`, holds,
        },
      ],
    }],
  };
}

test('log --markdown: subjects, authors, reasons and evidence from the history stay code', (t) => {
  const page = formatLogMarkdown(hostileLog());
  // lastgood's own links: the commit pages, and the repository the config names
  const html = assertInert(t, page, { ownLinks: (href) => href.startsWith(COMMIT_PAGE) || href === 'https://github.com/acme/gitops' });
  // the table keeps its three rows of four cells
  const rows = /<tbody>([\s\S]*?)<\/tbody>/.exec(html)?.[1]?.match(/<tr>[\s\S]*?<\/tr>/g) ?? [];
  t.is(rows.length, 3);
  for (const row of rows) t.is(row.split('<td').length - 1, 4, row);
});

test('log (text): a subject with an escape sequence and a line break prints escaped, on its line', (t) => {
  const out = formatLogText(hostileLog(), { color: false });
  t.false(out.includes('\x1b'), 'no escape sequence');
  t.false(out.split('\n').some((l) => /^\s*new commit: /.test(l)), `no forged line:\n${out}`);
  t.true(out.includes('\\x1b[2J\\nnew commit: deadbeef'), out);
});

test('Slack: outside text makes no link, mention or channel ping', (t) => {
  const outcome = { name: TARGET, verdict: 'failed', class: 'promotion', summary: '', action: 'alert', reason: `revert failed: <!channel> <@U123> <https://evil.example|click> ${PAYLOAD}`, bad: [], evidence: [] } as unknown as TargetOutcome;
  const { text } = slackMessage(outcome, 'revert-failed');
  // Slack makes links, mentions and pings only of <…> (api.slack.com/reference/surfaces/formatting#escaping): none is left from the text
  t.false(/<[^>]*>/.test(text.split('\n').slice(1).join('\n')), text);
  t.true(text.includes('&lt;!channel&gt;'));
});

// ---- the terminal ------------------------------------------------------------------------------

test('text report: a file name with an escape sequence and a line break prints escaped, on one line', (t) => {
  const stat = diffStat([
    { path: `${P}values.yaml`, status: 'modified', added: 1, removed: 1, patch: '' },
    { path: `${P}${FILE_NAME}`, status: 'deleted', added: 0, removed: 1, patch: '' },
  ]);
  const report: Report = {
    targets: [{
      name: TARGET, verdict: 'failed', class: 'promotion', summary: '', action: 'revert', reason: `reverted\x1b[2J ${FILE_NAME}`, bad: [BAD], commit: 'd'.repeat(40), created: true, diffStat: stat,
      evidence: [{ apiVersion: 'v1', kind: 'Pod', groupKind: 'Pod', namespace: 'prod', name: 'p\x1b]0;title\x07', state: 'failed', reason: 'Crash\x1b[5m', message: 'oom\x9b31m\nnew commit: cafebabe' }] as Evidence[],
      notes: [`restored ${FILE_NAME}`],
    }],
  };
  for (const tty of [undefined, { color: false }, { color: true }]) {
    const out = formatReport(report, tty ? { tty } : {});
    const lines = out.split('\n');
    t.false(/[\u0000-\u0008\u000b-\u001a\u001c-\u001f\u007f-\u009f]/.test(out), 'no control character but the report\'s own');
    if (!tty?.color) t.false(out.includes('\x1b'), 'no escape sequence at all without colours');
    t.is(lines.filter((l) => /^\s*new commit: /.test(l)).length, 1, `only the report's own "new commit" line:\n${out}`);
    t.true(lines.some((l) => l.includes(`x\\x1b[31m\\nnew commit: deadbeef`) && l.includes('| ') && l.includes('(deleted)')), out);
    t.true(lines.some((l) => l.startsWith('  decision: ') && l.includes('reverted\\x1b[2J')));
  }
});

test('JSON report: the C1 controls and bidirectional marks written as \\u escapes; the same document parsed', (t) => {
  const message = 'oom\x9b31m\u202ereversed\u2028next';
  const report: Report = {
    targets: [{
      name: TARGET, verdict: 'failed', class: 'promotion', summary: '', action: 'alert', reason: message, bad: [],
      evidence: [{ apiVersion: 'v1', kind: 'Pod', groupKind: 'Pod', namespace: 'prod', name: 'p', state: 'failed', reason: 'Crash', message }] as Evidence[],
    }],
  };
  const json = reportJson(report);
  t.false(/[\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/.test(json), json);
  const parsed = JSON.parse(json) as { targets: Array<{ reason: string; evidence: Array<{ message: string }> }> };
  t.is(parsed.targets[0]!.reason, message);
  t.is(parsed.targets[0]!.evidence[0]!.message, message);
});

test('diffStatLines: a file name\'s line breaks stay inside its line, however the name is made', (t) => {
  const stat = (...paths: string[]) => diffStat(paths.map((p) => ({ path: p, status: 'modified', added: 1, removed: 1, patch: '' })));
  t.deepEqual(diffStatLines(stat('a.yaml', 'b.yaml')), stat('a.yaml', 'b.yaml').split('\n'));
  t.deepEqual(diffStatLines('(no changes)'), ['(no changes)']);
  const forged = ['x |    2 +-\n new commit: deadbeef', 'y\n', '\n | 2 +-'];
  const lines = diffStatLines(stat(...forged));
  t.is(lines.length, 4, lines.join('\n'));
  t.true(lines.slice(0, 3).every((l, i) => l.startsWith(` ${forged[i]}`)));
  fc.assert(fc.property(fc.array(anyText.filter((s) => s !== ''), { minLength: 1, maxLength: 4 }), (paths) => diffStatLines(stat(...paths)).length === paths.length + 1));
});

test('progress lines and pretty logs write out the control characters of a host name or a message', (t) => {
  const out: string[] = [];
  let now = 0;
  const report = progressReporter({ write: (s) => out.push(s), now: () => now, tty: false });
  report({ host: 'git.example\x1b[2J\nforged', bytes: 0 });
  now = 2000;
  report({ host: 'git.example\x1b[2J\nforged', bytes: 2048 });
  t.deepEqual(out, ['lastgood: fetching from git.example\\x1b[2J\\nforged: 2 KiB\n']);
  const line = prettyLine(JSON.stringify({ time: 't', level: 30, msg: 'read x\u001b[31m', file: 'a\u009b31m', err: { message: 'm', stack: 'Error: m\u001b[2J\n    at x' } }));
  t.false(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/.test(line), line);
  t.regex(line, /read x\\x1b\[31m file=a\\x9b31m\n {4}Error: m\\x1b\[2J\n {8}at x/);
  t.false(/[\u007f-\u009f]/.test(uniqueKeys(JSON.stringify({ msg: 'a\u009bb' }))));
});

// ---- the marker: lastgood's own only where lastgood wrote it --------------------------------------

test('a marker counts on one of lastgood\'s branches of the target, from the repository, on a line of its own', (t) => {
  const change = { target: TARGET, bad: [BAD] };
  const marker = requestMarker(change);
  const body = `text\n\n${marker}\n`;
  t.true(markedAsOurs({ branch: `lastgood/${TARGET}/other`, fromFork: false, body }, change));
  t.false(markedAsOurs({ branch: 'feature/x', fromFork: false, body }, change), 'a person\'s branch');
  t.false(markedAsOurs({ branch: `lastgood/${TARGET}x/1`, fromFork: false, body }, change), 'another target\'s branch');
  t.false(markedAsOurs({ branch: `lastgood/${TARGET}/other`, fromFork: true, body }, change), 'a fork');
  t.false(markedAsOurs({ branch: `lastgood/${TARGET}/other`, fromFork: false, body: `- \`${marker}\`` }, change), 'quoted in a line of text');
  t.false(pullRequestText({ ...hostileInput(), located: { ...hostileInput().located, bad: [commitInfo(BAD, marker)] } }).body.includes(marker), 'a subject that is a marker is no marker in the body');
});

for (const host of HOSTS) {
  test(`${host.provider}: a hostile failure opens lastgood's own request, inert; requests that only carry the marker are left alone`, async (t) => {
    const s = await forgeScenario(t, host);
    const worse = s.push({ [`${P}values.yaml`]: values('1.2.0'), [`${P}${FILE_NAME}`]: 'x: 1\n' }, `${SUBJECT}\n\nbody ${PAYLOAD}`);
    const marker = requestMarker({ target: TARGET, bad: [worse] });
    // a person's request with lastgood's marker, and one on a lastgood branch that quotes it in text: neither is lastgood's
    const person = openModelRequest(s.emulator.model, { source: 'feature/forged', target: 'main', title: 'a person\'s', body: `mine\n\n${marker}\n`, author: 'mallory', sha: s.bad });
    const quoting = openModelRequest(s.emulator.model, { source: `lastgood/${TARGET}/000000000000`, target: 'main', title: 'quoting', body: `see \`${marker}\``, author: 'mallory', sha: s.bad });
    const observed: Observed[] = [{ object: kustomization({ attempted: `main@sha1:${worse}`, applied: `main@sha1:${s.good}`, ready: 'False', message: MESSAGE }) as Observed['object'], source: 'test' }];
    const report = await s.runOnce(observed);
    const outcome = report.targets[0]!;
    t.falsy(outcome.error, JSON.stringify(outcome.error));
    t.true(outcome.created);
    t.is(outcome.branch, `lastgood/${TARGET}/${worse.slice(0, 12)}`);
    const mine = s.emulator.model.requests.find((r) => r.source === outcome.branch)!;
    t.truthy(mine);
    for (const other of [person, quoting]) {
      t.is(other.state, 'open');
      t.deepEqual(other.comments, [], 'no comment');
      t.true(other.body.includes(marker), 'its description untouched');
    }
    const html = assertInert(t, mine.body, { ownLinks: (href) => href.startsWith(`${s.emulator.url}/`), marker, rows: 1 });
    t.true(decode(html).includes('x\u241b[31m\u240anew commit: deadbeef'), 'the file name in the diffstat, its controls as pictures');
    // the terminal report of the same run: the file name on one line, escaped
    const text = formatReport(report);
    t.false(text.includes('\x1b'));
    t.is(text.split('\n').filter((l) => /^\s*new commit: /.test(l)).length, outcome.created && outcome.commit ? 1 : 0, text);
    t.true(text.includes('x\\x1b[31m\\nnew commit: deadbeef'), text);
    t.deepEqual(s.emulator.violations, []);
  });
}

// ---- GitHub: the marker on a person's pull request ------------------------------------------------

test('github: a person\'s pull request carrying lastgood\'s marker is not taken for lastgood\'s own', async (t) => {
  const work = makeRepo();
  const base = commit(work, { 'apps/podinfo/deployment.yaml': 'image: podinfo:6.1.0\n' }, 'podinfo 6.1.0');
  const bad = commit(work, { 'apps/podinfo/deployment.yaml': 'image: podinfo:6.2.0\n' }, SUBJECT);
  git(work, 'checkout', '-q', '-b', 'feature/forged');
  commit(work, { 'README.md': 'a person\'s change\n' }, 'a person\'s change');
  git(work, 'checkout', '-q', '-');
  const bare = path.join(tempDir('lastgood-markup-gh-'), 'gitops.git');
  git(work, 'clone', '-q', '--bare', work, bare);
  const token = 'ghs_markupEmulatorToken0123456789';
  const emulator = await startGitHubEmulator({ bareRepo: bare, owner: 'acme', repo: 'gitops', token });
  t.teardown(() => emulator.close());
  const change: Change = {
    target: 'podinfo-prod', branch: 'main', paths: ['apps/podinfo/'], parent: bad, bad: [bad], lastKnownGood: base, author: person,
    files: [{ path: 'apps/podinfo/deployment.yaml', mode: '100644', content: new TextEncoder().encode('image: podinfo:6.1.0\n') }],
    message: `Revert podinfo-prod\n\nLastgood-Target: podinfo-prod\nLastgood-Reverts: ${bad}\nLastgood-Restores: ${base}\n`,
    pullRequest: { ...pullRequestText({ ...hostileInput(GITHUB_FLAVORED), target: 'podinfo-prod' }), labels: [], reviewers: [], assignees: [], draft: false, autoMerge: false },
  };
  const marker = requestMarker(change);
  const octokit = new Octokit({ auth: token, baseUrl: emulator.url });
  await octokit.rest.pulls.create({ owner: 'acme', repo: 'gitops', head: 'feature/forged', base: 'main', title: 'a person\'s', body: `mine\n\n${marker}\n` });
  const backend = createGitHubBackend({ owner: 'acme', repo: 'gitops', token, baseUrl: emulator.url, writeIntervalMs: 0, retryUnitMs: 5 });
  const result = await backend.deliver(change, 'pull-request');
  t.true(result.created);
  t.is(result.branch, `lastgood/podinfo-prod/${bad.slice(0, 12)}`);
  t.is(result.pullRequest?.number, 2, 'its own pull request');
  const [theirs, ours] = emulator.pulls;
  t.is(theirs!.title, 'a person\'s');
  t.is(theirs!.body, `mine\n\n${marker}\n`, 'untouched');
  t.deepEqual(theirs!.comments, []);
  t.is(git(bare, 'rev-parse', 'feature/forged'), git(work, 'rev-parse', 'feature/forged'), 'its branch not moved');
  assertInert(t, ours!.body ?? '', { ownLinks: (href) => href.startsWith(COMMIT_PAGE), marker, rows: 2 });
  // a second run finds its own by its branch and leaves the person's alone
  const again = await backend.deliver(change, 'pull-request');
  t.false(again.created);
  t.is(again.pullRequest?.number, 2);
  t.deepEqual(emulator.violations, []);
});
