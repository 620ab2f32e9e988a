/**
 * Outside text — what a repository, a cluster or a metrics provider says: commit subjects, file
 * names, status and event messages, image tags, object, target and branch names — put where people
 * read it. Whoever can push a commit or set a status chooses that text, so it is shown, never acted
 * on:
 *
 * - Markdown (pull/merge request bodies, review comments, the Action's job summary): it is quoted
 *   as code. Inside a code span or a fenced code block CommonMark makes no link, image, emphasis,
 *   raw HTML or comment (spec 0.31.2 §6.1 code spans, §4.5 fenced code blocks), and every host
 *   leaves code alone when it looks for its own references: mentions, `#123`, `org/repo#123`,
 *   commit SHAs (GitHub, docs.github.com "Autolinked references and URLs"; Gitea/Forgejo
 *   docs.gitea.com/usage/automatically-linked-references: "they should not be included inside
 *   code text"), `@user`, `!123`, `~label`, `%milestone` (GitLab: references are not made, nor
 *   users notified, in code — gitlab-foss!753), work items, emoji and math (Azure DevOps
 *   learn.microsoft.com …/wiki/markdown-guidance: "To escape emojis, enclose them using the `
 *   character"). So outside text never goes into Markdown as prose: only through codeSpan and
 *   codeBlock.
 * - Terminals (the CLI's report, progress lines, pretty logs): terminalText writes its control
 *   characters out (`\x1b`, `\n`), so an escape sequence or a line break in a file name neither
 *   drives the terminal nor forges a line of the report.
 */

/**
 * The characters outside text may not bring in as they are: C0 (U+0000–U+001F), DEL, C1
 * (U+0080–U+009F), the line and paragraph separators, and the bidirectional formatting characters
 * that reorder what a reader sees (CVE-2021-42574, "Trojan Source").
 */
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
/** the same but line feeds and tabs: what a multi-line block keeps */
const CONTROL_BUT_LF_TAB = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const hex = (code: number, width: number) => code.toString(16).padStart(width, '0');

/**
 * A control character as Markdown readers see it: C0 and DEL as their Unicode control pictures
 * (`\n` → `␊`, ESC → `␛`, DEL → `␡`, U+2400 block), the others as `\u0085`.
 */
function picture(c: string): string {
  const code = c.codePointAt(0)!;
  if (code < 0x20) return String.fromCodePoint(0x2400 + code);
  if (code === 0x7f) return '\u2421';
  return `\\u${hex(code, 4)}`;
}

/** What outside text shows in Markdown on one line: control characters as pictures (`\n` → `␊`), so nothing in it starts a new block or table row. */
export function visibleControls(text: string): string {
  return text.replace(CONTROL, picture);
}

/**
 * `<!--` opens an HTML comment, and lastgood finds its own requests again by such a comment
 * (`<!-- lastgood:target=… -->`): outside text never carries one into a body, even inside code
 * (where it would only show, but a search of the raw text would find it). A zero-width space goes
 * between `<` and `!`: it reads the same.
 */
const COMMENT_OPEN = /<!--/g;
const breakComments = (text: string) => text.replace(COMMENT_OPEN, '<\u200b!--');

/**
 * How a host's Markdown differs where it matters for quoting outside text, chosen by each host's
 * backend (`markdown` on the backend; src/deliver/<host>/). What is the same everywhere — code
 * spans with a longer fence (Python-Markdown, Bitbucket Cloud's renderer, takes a longer fence as
 * CommonMark does), fenced blocks, references not made in code — is not a setting.
 */
export interface MarkdownDialect {
  /** the renderer family, for messages and tests */
  readonly name: string;
  /**
   * the host renders raw HTML (sanitised: GitHub, GitLab, Gitea, Azure DevOps); false: it shows the
   * tags as text (Bitbucket), so lastgood writes none of its own (`<sub>`, `<details>`)
   */
  readonly html: boolean;
  /**
   * how a `|` in a code span inside a table cell is written. GFM splits a row at every unescaped
   * pipe, inside code spans too, and `\|` is a pipe in the cell (GFM spec 0.29 §4.10 example 200;
   * GitLab keeps it so: gitlab-org/gitlab#322503). Python-Markdown keeps a backslash in code as
   * text, and its older tables split at every pipe: there the pipe is substituted (`¦`).
   */
  readonly tableCodePipe: 'backslash' | 'substitute';
}

/** GitHub (cmark-gfm), GitLab (GLFM: comrak), Gitea/Forgejo (goldmark), Azure DevOps ("GitHub-flavored extensions"). */
export const GITHUB_FLAVORED: MarkdownDialect = { name: 'GitHub Flavored Markdown', html: true, tableCodePipe: 'backslash' };

/**
 * Bitbucket Data Center: CommonMark with GFM tables; "Bitbucket Data Center doesn't support HTML
 * tags and all HTML tags are escaped" (confluence.atlassian.com/bitbucketserver/markdown-syntax-guide-776639995.html).
 */
export const COMMONMARK_WITHOUT_HTML: MarkdownDialect = { name: 'CommonMark, HTML escaped', html: false, tableCodePipe: 'backslash' };

/**
 * Bitbucket Cloud: Python-Markdown in safe mode, "we don't support arbitrary HTML in Markdown"
 * (bitbucket.org/tutorials/markdowndemo); its tables keep a backslash inside code as text.
 */
export const PYTHON_MARKDOWN: MarkdownDialect = { name: 'Python-Markdown, safe mode', html: false, tableCodePipe: 'substitute' };

/** Where the host is not known: what renders the same, and safely, on every host above. */
export const PORTABLE_MARKDOWN: MarkdownDialect = { name: 'portable', html: false, tableCodePipe: 'substitute' };

function longestRun(text: string, char: string): number {
  let longest = 0;
  let run = 0;
  for (const c of text) {
    run = c === char ? run + 1 : 0;
    if (run > longest) longest = run;
  }
  return longest;
}

/**
 * Outside text as one inline code span (CommonMark §6.1): the fence is one backtick longer than
 * the longest backtick run in the text, so nothing in it closes the span, and a space pads a text
 * that starts or ends with a backtick (or with spaces at both ends), which CommonMark strips
 * again. Shown as it is, except: control characters as pictures (visibleControls), `<!--` broken
 * (a zero-width space after `<`), and, in a table cell (`table`: the host's dialect), `|` as the
 * dialect writes it. An empty text shows as one space.
 */
export function codeSpan(text: string, table?: MarkdownDialect): string {
  let body = breakComments(visibleControls(text));
  if (table) body = body.replaceAll('|', table.tableCodePipe === 'backslash' ? '\\|' : '\u00a6');
  if (body === '') return '` `';
  const fence = '`'.repeat(longestRun(body, '`') + 1);
  const pad = body.startsWith('`') || body.endsWith('`') || (body.startsWith(' ') && body.endsWith(' ') && /[^ ]/.test(body)) ? ' ' : '';
  return `${fence}${pad}${body}${pad}${fence}`;
}

/**
 * Outside text of many lines (a diffstat, a diff) as one fenced code block (CommonMark §4.5): the
 * fence is longer than any backtick run inside, so no line closes it (a closing fence is of the
 * same character, at least as long: tildes cannot close it). Line feeds and tabs are kept, other
 * control characters shown as pictures (a bare CR would end a line), `<!--` broken as in codeSpan.
 * `info` is lastgood's own (`diff`), never outside text.
 */
export function codeBlock(text: string, info = ''): string {
  if (info.includes('`') || /\s/.test(info)) throw new Error(`a code block's info string is one word without backticks: ${JSON.stringify(info)}`);
  const body = breakComments(text.replace(CONTROL_BUT_LF_TAB, picture));
  const fence = '`'.repeat(Math.max(3, longestRun(body, '`') + 1));
  return `${fence}${info}\n${body}${body === '' || body.endsWith('\n') ? '' : '\n'}${fence}`;
}

/**
 * A time as the cluster gave it (a condition's lastTransitionTime): plain where it is an RFC 3339
 * time, which can hold no markup, else quoted like any outside text.
 */
export function timeText(text: string | undefined, table?: MarkdownDialect): string {
  if (!text) return '';
  return /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/.test(text) ? text : codeSpan(text, table);
}

/**
 * The lines of a diffstat (revert/diff.ts diffStat: one ` <path padded to the longest> | <n> <+->`
 * line per file, then the total). A file name may hold a line break: the file lines are found by
 * their ` | ` column, the same on every line, so a break in a name stays inside its line (then
 * shown as `\n` on a terminal, `␊` in Markdown), never a line of its own. Where no column fits, the
 * whole stat is one line.
 */
export function diffStatLines(stat: string): string[] {
  const lastBreak = stat.lastIndexOf('\n');
  if (lastBreak < 0) return [stat];
  const files = stat.slice(0, lastBreak);
  const total = stat.slice(lastBreak + 1);
  const count = Number(/^ (\d+) files? changed, /.exec(total)?.[1] ?? NaN);
  if (!Number.isInteger(count) || count < 1) return [stat];
  for (let width = 0; width <= files.length; width++) {
    const lines = statLinesAt(files, width, count);
    if (lines) return [...lines, total];
  }
  return [stat];
}

const STAT_TAIL = /^ \| +\d+ [+-]*(?: \((?:added|deleted)\))?$/;

/** `count` file lines whose ` | ` is at column `width + 1`, or undefined. */
function statLinesAt(files: string, width: number, count: number): string[] | undefined {
  const out: string[] = [];
  let at = 0;
  while (out.length < count) {
    const bar = at + 1 + width;
    if (files[at] !== ' ' || files.slice(bar, bar + 3) !== ' | ') return undefined;
    const end = files.indexOf('\n', bar) < 0 ? files.length : files.indexOf('\n', bar);
    if (!STAT_TAIL.test(files.slice(bar, end))) return undefined;
    out.push(files.slice(at, end));
    at = end + 1;
  }
  return at >= files.length ? out : undefined;
}

/** A diffstat as a code block: one line per file, a line break in a file name shown as `␊` (diffStatLines, visibleControls). */
export function diffStatBlock(stat: string): string {
  return codeBlock(diffStatLines(stat).map(visibleControls).join('\n'));
}

/**
 * Outside text on a terminal: control characters written out — `\n`, `\r`, `\t` by name, others
 * as `\x1b` (up to U+00FF) or `\u202e` — so the text stays on its line and sends the terminal
 * nothing. A backslash is left as it is: the text can spell `\n` but not make one.
 */
export function terminalText(text: string): string {
  return text.replace(CONTROL, (c) => {
    if (c === '\n') return '\\n';
    if (c === '\r') return '\\r';
    if (c === '\t') return '\\t';
    const code = c.codePointAt(0)!;
    return code <= 0xff ? `\\x${hex(code, 2)}` : `\\u${hex(code, 4)}`;
  });
}

/**
 * An error message for stderr, where every line must be lastgood's: one line, its control
 * characters written out (terminalText), a line break as `\n` too. The one exception is what a git
 * server said, which lastgood writes as git does, a line each marked `remote: `
 * (deliver/git-remote/remote-repo.ts): a line break before `remote: ` is kept, so no text a message
 * quotes can start a line that reads as lastgood's.
 */
export function errorText(message: string): string {
  const [first = '', ...rest] = message.split('\n');
  return rest.reduce((out, line) => `${out}${line.startsWith('remote: ') ? '\n' : '\\n'}${terminalText(line)}`, terminalText(first));
}

/** Text of many lines on a terminal (a diff): each line as terminalText, the line breaks kept. */
export function terminalLines(text: string): string {
  return text.split('\n').map(terminalText).join('\n');
}

/**
 * JSON text for a terminal (the JSON log lines on stderr): JSON.stringify writes C0 as escapes
 * but DEL, C1, the separators and the bidirectional characters as they are; they become `\u…`
 * escapes too, which parse back to the same value.
 */
export function terminalJson(json: string): string {
  // a raw line break is the indentation's (JSON.stringify escapes every one inside a string)
  return json.replace(CONTROL, (c) => (c === '\n' ? c : `\\u${hex(c.codePointAt(0)!, 4)}`));
}
