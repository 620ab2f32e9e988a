import test, { type ExecutionContext } from 'ava';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { escapeHtml, formatLogHtml, httpUrl } from '../src/audit/html.ts';
import type { AuditLog } from '../src/audit/schema.ts';
import { LocalRepo } from '../src/deliver/local/index.ts';
import { lastgood, ROOT } from './support/cli.ts';
import { testClock, type TestClock } from './support/clock.ts';
import { cluster, config, configText, failCanary, gitopsRepo, startController, until, type GitopsRepo } from './support/controller-scenario.ts';
import { addAndCommit, git, makeRepo, tempDir, writeFile } from './support/git.ts';
import { kustomization, yamlDocs } from './support/objects.ts';
import { RENDER } from './support/render-off.ts';
import type { Controller } from '../src/controller/controller.ts';
import type { TargetOutcome } from '../src/engine/index.ts';

/**
 * The controller's page at `/` and `lastgood log --html` (issue 37): served and written as one
 * self-contained HTML document (no script, no external resource), with every outside text
 * escaped; then loaded in a real browser, headless Chromium (Debian's `chromium`; puppeteer-core
 * drives it, downloads none): the DOM read back (targets, verdicts, commits, the timeline's marks),
 * no request but the document's own, axe-core's accessibility check (no serious or critical
 * violation), and a screenshot saved as a test artifact (test-artifacts/).
 *
 * Without chromium on the PATH the browser tests log why and pass; with LASTGOOD_REQUIRE_CHROMIUM=1
 * (.ci/run sets it, after installing the package) they fail instead.
 */

const HOSTILE = '<img src=x onerror=alert(1)> <script>alert(1)</script> javascript:alert(1)';
const ARTIFACTS = path.join(ROOT, 'test-artifacts');

function which(bin: string): string | undefined {
  try {
    return execFileSync('which', [bin], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim() || undefined;
  } catch {
    return undefined;
  }
}
const CHROMIUM = which('chromium');
const CHROMIUM_MISSING = 'no chromium on the PATH (Debian: apt-get install chromium; .ci/run installs it)';

/** A test that needs Chromium: run with it; without it, logs why and passes (fails where LASTGOOD_REQUIRE_CHROMIUM=1). */
function browserTest(title: string, fn: (t: ExecutionContext, chromium: string) => Promise<void>): void {
  test(title, async (t) => {
    if (!CHROMIUM) {
      if (process.env.LASTGOOD_REQUIRE_CHROMIUM === '1') return t.fail(`LASTGOOD_REQUIRE_CHROMIUM=1: ${CHROMIUM_MISSING}`);
      t.log(`not run: ${CHROMIUM_MISSING}`);
      return t.pass();
    }
    await fn(t, CHROMIUM);
  });
}

async function launch(t: ExecutionContext, chromium: string): Promise<Browser> {
  const browser = await puppeteer.launch({
    executablePath: chromium, headless: true, userDataDir: tempDir('lastgood-chromium-'),
    args: ['--no-sandbox', '--headless=new', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--no-default-browser-check'],
  });
  t.teardown(() => browser.close());
  return browser;
}

/** A page that remembers every request it made, and may run axe-core despite the document's CSP. */
async function openPage(browser: Browser): Promise<{ page: Page; requests: string[] }> {
  const page = await browser.newPage();
  // the documents forbid every script (CSP): axe-core is injected by the test, not by them
  await page.setBypassCSP(true);
  await page.setViewport({ width: 1280, height: 900 });
  const requests: string[] = [];
  page.on('request', (r) => requests.push(r.url()));
  return { page, requests };
}

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: Array<{ target: unknown; failureSummary?: string }>;
}

/** axe-core's whole rule set over the page: the serious and critical violations, said in words. */
async function axeViolations(page: Page): Promise<string[]> {
  await page.addScriptTag({ content: AXE });
  const violations = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run(context: unknown, options: object): Promise<{ violations: AxeViolation[] }> } }).axe;
    const r = await axe.run((globalThis as unknown as { document: unknown }).document, { resultTypes: ['violations'] });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => ({ target: n.target, failureSummary: n.failureSummary })) }));
  });
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.impact} ${v.id}: ${v.help}\n${v.nodes.map((n) => `  ${JSON.stringify(n.target)}: ${n.failureSummary ?? ''}`).join('\n')}`);
}

/** What the DOM holds: the timeline's marks by kind, elements that must not be there, the text. */
async function readDom(page: Page) {
  return page.evaluate(() => {
    const doc = (globalThis as unknown as { document: { querySelectorAll(s: string): ArrayLike<{ getAttribute(n: string): string | null; textContent: string | null }>; body: { innerText: string }; documentElement: { lang: string } } }).document;
    const all = (s: string) => Array.from(doc.querySelectorAll(s));
    const marks: Record<string, number> = {};
    for (const m of all('svg.timeline [data-kind]')) marks[m.getAttribute('data-kind')!] = (marks[m.getAttribute('data-kind')!] ?? 0) + 1;
    return {
      lang: doc.documentElement.lang,
      h1: all('h1').map((e) => e.textContent ?? ''),
      mains: all('main').length,
      captions: all('table > caption').map((e) => e.textContent ?? ''),
      svgLabel: all('svg.timeline[role="img"]').map((e) => e.getAttribute('aria-label') ?? ''),
      markTitles: all('svg.timeline [data-kind] > title').map((e) => e.textContent ?? ''),
      marks,
      legend: all('.legend li').map((e) => e.textContent ?? ''),
      links: all('a[href]').map((e) => e.getAttribute('href') ?? ''),
      dangerous: all('script, img, iframe, object, embed, link:not([rel="icon"][href="data:,"]), [onerror], [onload]').length,
      text: doc.body.innerText,
    };
  });
}

async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: path.join(ARTIFACTS, name) as `${string}.png`, fullPage: true });
}

// ---- the controller's page

/** A repository backend whose history reads (the log's only `branches` call) are counted, and may be held or fail. */
function countedRepo(bare: string) {
  const repo = new LocalRepo(bare);
  const reads = { count: 0, hold: undefined as Promise<void> | undefined, fail: undefined as Error | undefined };
  const branches = repo.branches.bind(repo);
  repo.branches = async (prefix: string) => {
    reads.count++;
    await reads.hold;
    if (reads.fail) throw reads.fail;
    return branches(prefix);
  };
  return { repo, reads };
}

interface Reverted {
  repo: GitopsRepo;
  clock: TestClock;
  controller: Controller;
  outcome: TargetOutcome;
  reads: ReturnType<typeof countedRepo>['reads'];
  url: string;
}

/** A controller (local repository) that reverted the failed canary once. */
async function reverted(t: ExecutionContext): Promise<Reverted> {
  const repo = gitopsRepo();
  const clock = testClock();
  const kube = await cluster(repo, { clock });
  t.teardown(() => kube.close());
  const { repo: backend, reads } = countedRepo(repo.bare);
  const { controller, acted } = await startController(kube, config(configText({ url: repo.bare })), backend, { clock });
  t.teardown(() => controller.stop());
  await until('ready and leading', () => controller.ready && controller.isLeader);
  clock.advance(1000);
  failCanary(kube, 'Failed', clock);
  const outcome = await until('the revert', () => acted[0]);
  await controller.idle();
  t.is(outcome.action, 'revert');
  t.truthy(outcome.commit);
  return { repo, clock, controller, outcome, reads, url: `http://127.0.0.1:${controller.address!.port}/` };
}

/** A person undoes the revert by hand (its content, not `git revert`), at the controller's clock, with `subject`. */
function personUndoes(r: Reverted, subject: string): string {
  const work = path.join(tempDir('lastgood-page-clone-'), 'work');
  git(path.dirname(work), 'clone', '-q', r.repo.bare, work);
  const date = `${Math.floor(r.clock.now() / 1000)} +0000`;
  const env = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', HOME: os.tmpdir(), GIT_AUTHOR_NAME: 'Mallory', GIT_AUTHOR_EMAIL: 'mallory@example.com', GIT_COMMITTER_NAME: 'Mallory', GIT_COMMITTER_EMAIL: 'mallory@example.com', GIT_AUTHOR_DATE: date, GIT_COMMITTER_DATE: date };
  execFileSync('git', ['checkout', '-q', `${r.outcome.commit}~1`, '--', 'apps/podinfo/overlays/prod/'], { cwd: work, env });
  const sha = addAndCommit(work, ['-q', '-m', subject], env);
  execFileSync('git', ['push', '-q', 'origin', 'main'], { cwd: work, env });
  return sha;
}

const marksIn = (html: string) => {
  const counts: Record<string, number> = {};
  for (const m of html.matchAll(/<g class="mark [^"]*" data-kind="([a-z-]+)"/g)) counts[m[1]!] = (counts[m[1]!] ?? 0) + 1;
  return counts;
};

test('the page at /: HTML under a CSP without script, the targets, the timeline read once a minute and once at a time, escaped', async (t) => {
  const r = await reverted(t);
  const short = r.outcome.commit!.slice(0, 12);
  // three pages asked while the history is read: one read, all three wait for it
  let release!: () => void;
  r.reads.hold = new Promise((resolve) => (release = resolve));
  const before = r.reads.count;
  const asked = [fetch(r.url), fetch(`${r.url}index.html`), fetch(r.url)];
  await until('the history being read', () => r.reads.count > before);
  release();
  r.reads.hold = undefined;
  const responses = await Promise.all(asked);
  t.is(r.reads.count, before + 1, 'one read for three pages');
  for (const res of responses) {
    t.is(res.status, 200);
    t.is(res.headers.get('content-type'), 'text/html; charset=utf-8');
    t.is(res.headers.get('content-security-policy'), "default-src 'none'; style-src 'unsafe-inline'; img-src data:");
    t.is(res.headers.get('cache-control'), 'no-store');
  }
  const html = await responses[0]!.text();
  t.true(html.startsWith('<!DOCTYPE html>\n<html lang="en">'));
  t.regex(html, /<tr data-target="podinfo-prod"><th scope="row">podinfo-prod<\/th><td data-verdict="failed">/);
  t.regex(html, new RegExp(`<td class="last-action"><strong>revert</strong> <code>${short}</code>`), 'the revert, its SHA (a local repository has no commit page)');
  t.regex(html, new RegExp(`<td class="last-revert"><code>${short}</code> at `), 'and the repository says the same');
  t.deepEqual(marksIn(html), { revert: 1 });
  t.notRegex(html, /<script|<[^>]*\ssrc=|@import|url\(/i);
  // the other endpoints as they were
  t.is((await fetch(`${r.url}targets`)).headers.get('content-type'), 'application/json');
  t.regex(await (await fetch(`${r.url}nope`)).text(), /^not found: \/healthz, \/readyz, \/metrics, \/targets, \/\n$/);

  // a person undoes the revert, with a subject that is markup: the page keeps its minute
  const person = personUndoes(r, HOSTILE);
  r.clock.advance(59_999);
  t.deepEqual(marksIn(await (await fetch(r.url)).text()), { revert: 1 }, 'within the minute: the same timeline');
  t.is(r.reads.count, before + 1);
  r.clock.advance(1);
  const after = await (await fetch(r.url)).text();
  t.is(r.reads.count, before + 2, 'a minute later: read again');
  t.deepEqual(marksIn(after), { revert: 1, 'person-revert': 1 });
  t.true(after.includes(`Mallory &lt;mallory@example.com&gt; undid lastgood&#39;s revert ${short}: ${escapeHtml(HOSTILE)}`));
  t.true(after.includes(person.slice(0, 12)));
  t.notRegex(after, /<img|<script|href="javascript/i, 'the subject is text, nowhere markup or a link');

  // the history cannot be read: the targets still, and why not (escaped)
  r.reads.fail = new Error('the host said <b>no</b>');
  r.clock.advance(60_000);
  const failed = await fetch(r.url);
  t.is(failed.status, 200);
  const failedHtml = await failed.text();
  t.regex(failedHtml, /<p class="error" role="status">The timeline could not be read: the host said &lt;b&gt;no&lt;\/b&gt;<\/p>/);
  t.regex(failedHtml, /<th scope="row">podinfo-prod<\/th><td data-verdict="failed">/);
  t.regex(failedHtml, /<td class="muted">not read<\/td>/);
  t.deepEqual(marksIn(failedHtml), {});
});

browserTest('the page at / in Chromium: the target, its verdict, the revert, the timeline; no request but the page; axe finds nothing serious', async (t, chromium) => {
  const r = await reverted(t);
  const short = r.outcome.commit!.slice(0, 12);
  personUndoes(r, `podinfo 6.1.0 again ${HOSTILE}`);
  const browser = await launch(t, chromium);
  const { page, requests } = await openPage(browser);
  const response = await page.goto(r.url, { waitUntil: 'load' });
  t.is(response?.status(), 200);
  const dom = await readDom(page);
  t.is(dom.lang, 'en');
  t.is(dom.mains, 1);
  t.regex(dom.h1[0]!, /^lastgood controller /);
  t.deepEqual(dom.captions, ['Each target as this controller holds it: its verdict, since when, and what was last done']);
  const row = await page.$eval('tr[data-target="podinfo-prod"]', (tr) => ({
    name: tr.querySelector('th')?.textContent, verdict: tr.querySelector('td[data-verdict]')?.textContent,
    lastAction: tr.querySelector('td.last-action')?.textContent, lastRevert: tr.querySelector('td.last-revert')?.textContent,
    links: tr.querySelectorAll('a').length,
  }));
  t.is(row.name, 'podinfo-prod');
  t.regex(row.verdict!, /^ failed \(analysis\)/, 'the verdict in words, not only a colour');
  t.regex(row.lastAction!, new RegExp(`^revert ${short} at `));
  t.regex(row.lastRevert!, new RegExp(`^${short} at .*undone by`));
  t.is(row.links, 0, 'a local repository: the SHA, no link');
  t.deepEqual(dom.marks, { revert: 1, 'person-revert': 1 });
  t.true(dom.markTitles.some((title) => title.endsWith(`podinfo 6.1.0 again ${HOSTILE}`)), 'the subject, as text, in the tooltip');
  t.regex(dom.svgLabel[0]!, /^Timeline from \S+ to \S+ \(UTC\)\. podinfo-prod: 1 revert, 1 person's revert\.$/);
  t.deepEqual(dom.legend, ["lastgood's revert", 'request or review branch', 'verified last-known-good', "a person's revert", 'recovered at the revert']);
  t.deepEqual(dom.links, ['/targets']);
  t.is(dom.dangerous, 0);
  t.deepEqual(requests, [r.url], 'nothing loaded but the page');
  await screenshot(page, 'page.png');
  const serious = await axeViolations(page);
  t.deepEqual(serious, [], serious.join('\n'));
});

// ---- lastgood log --html

const T = (hhmm: string) => `2026-11-10T${hhmm}:00Z`;
const configMap = (name: string, version: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  namespace: prod\ndata:\n  version: "${version}"\n`;

function commitAt(repo: string, when: string, files: Record<string, string>, message: string, who = { name: 'Dev', email: 'dev@example.com' }): string {
  for (const [file, content] of Object.entries(files)) writeFile(repo, file, content);
  return addAndCommit(repo, ['-q', '-m', message], {
    ...process.env, GIT_CONFIG_NOSYSTEM: '1', HOME: os.tmpdir(), GIT_AUTHOR_NAME: who.name, GIT_AUTHOR_EMAIL: who.email, GIT_COMMITTER_NAME: who.name,
    GIT_COMMITTER_EMAIL: who.email, GIT_AUTHOR_DATE: when, GIT_COMMITTER_DATE: when,
  });
}

async function lastgoodRun(args: string[]): Promise<Record<string, unknown>> {
  const r = await lastgood([...args, '--json']);
  if (r.code !== 0) throw new Error(`${args[0]}: exit ${r.code}\n${r.stderr}\n${r.stdout}`);
  return JSON.parse(r.stdout).targets[0] as Record<string, unknown>;
}

function snapshot(dir: string, target: string, o: { attempted: string; applied: string; ready: 'True' | 'False'; since: string }): string {
  return writeFile(dir, `${target}-${o.attempted.slice(0, 8)}-${o.ready}.yaml`, yamlDocs(kustomization({ name: target, attempted: `main@sha1:${o.attempted}`, applied: `main@sha1:${o.applied}`, ready: o.ready, since: o.since })));
}

/**
 * A history lastgood made, and a person around it: podinfo verified at c0, 1.1.0 reverted by
 * lastgood and undone by hand with a subject that is markup; web's failure reverted in a review
 * branch (pull-request mode on a local repository).
 */
async function history(): Promise<{ config: string; dir: string; r1: string; undo: string }> {
  const work = makeRepo();
  const dir = tempDir('lastgood-log-html-');
  const config = writeFile(dir, 'lastgood.yaml', `repo:\n  url: ${work}\n  branch: main\n${RENDER()}defaults: { mode: commit, confirmations: 1, cooldown: off, maxAge: off }\ntargets:\n${['podinfo', 'web'].map((t) => `  - name: ${t}\n    paths: [apps/${t}/]\n    resources:\n      - { apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: ${t} }\n`).join('')}`);
  const c0 = commitAt(work, T('09:00'), { 'apps/podinfo/configmap.yaml': configMap('podinfo', '1.0.0'), 'apps/web/configmap.yaml': configMap('web', 'v1') }, 'bootstrap prod');
  const healthy = snapshot(dir, 'podinfo', { attempted: c0, applied: c0, ready: 'True', since: T('09:00') });
  const rec = await lastgoodRun(['check', '--record', '--now', T('09:10'), '--config', config, '--target', 'podinfo', '--snapshot', healthy]);
  if (!/recorded [0-9a-f]{12} as verified/.test(String(rec.reason))) throw new Error(`record: ${String(rec.reason)}`);
  const bad1 = commitAt(work, T('09:20'), { 'apps/podinfo/configmap.yaml': configMap('podinfo', '1.1.0') }, 'podinfo 1.1.0');
  const r1 = String((await lastgoodRun(['run', '--now', T('09:30'), '--config', config, '--target', 'podinfo', '--snapshot', snapshot(dir, 'podinfo', { attempted: bad1, applied: c0, ready: 'False', since: T('09:30') })])).commit);
  const undo = commitAt(work, T('09:40'), { 'apps/podinfo/configmap.yaml': configMap('podinfo', '1.1.0') }, HOSTILE, { name: 'Mallory', email: 'mallory@example.com' });
  const bad2 = commitAt(work, T('09:50'), { 'apps/web/configmap.yaml': configMap('web', 'v2') }, 'web v2');
  await lastgoodRun(['run', '--now', T('10:00'), '--config', config, '--target', 'web', '--mode', 'pull-request', '--snapshot', snapshot(dir, 'web', { attempted: bad2, applied: undo, ready: 'False', since: T('10:00') })]);
  return { config, dir, r1, undo };
}

const logArgs = (config: string) => ['log', '--now', T('11:00'), '--since', T('00:00'), '--config', config];

test('log --html: one self-contained document, a table per target and the timeline; a hostile subject only as text; with --json or --markdown, exit 2', async (t) => {
  const h = await history();
  const r = await lastgood([...logArgs(h.config), '--html']);
  t.is(r.code, 0, r.stderr);
  const html = r.stdout;
  t.true(html.startsWith('<!DOCTYPE html>\n<html lang="en">\n'));
  t.true(html.endsWith('</html>\n'));
  t.is(html.match(/<html\b/g)?.length, 1, 'one document');
  t.is(html.match(/<main>/g)?.length, 1);
  t.is(html.match(/<table>/g)?.length, 2, 'a table per target');
  t.regex(html, /<caption>What lastgood did to podinfo, newest first<\/caption>/);
  t.regex(html, /<svg class="timeline" role="img" aria-label="Timeline from 2026-11-10T00:00:00Z to 2026-11-10T11:00:00Z \(UTC\)\. podinfo: 1 revert, 1 verified last-known-good, 1 person&#39;s revert; web: 1 request\."/);
  t.deepEqual(marksIn(html), { verified: 1, revert: 1, 'person-revert': 1, request: 1 });
  // nothing loaded: no script, no image, no stylesheet, no font; a link only to an http(s) page (none: a local repository)
  // (escaped text holds no "<": a src= in a tag is an attribute)
  t.notRegex(html, /<(script|img|iframe|object|embed|image|use|foreignObject)\b|<[^>]*\s(src|srcset|xlink:href)=|@import|url\(/i);
  t.deepEqual([...html.matchAll(/<link\b[^>]*>/g)].map((m) => m[0]), ['<link rel="icon" href="data:,">'], 'an empty icon: no request for /favicon.ico');
  t.deepEqual([...html.matchAll(/\bhref="([^"]*)"/g)].map((m) => m[1]), ['data:,']);
  t.regex(html, /<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">/);
  // the hostile subject: text in its row and in its mark's tooltip, never markup nor a link
  const escaped = escapeHtml(HOSTILE);
  t.is(escaped, '&lt;img src=x onerror=alert(1)&gt; &lt;script&gt;alert(1)&lt;/script&gt; javascript:alert(1)');
  t.true(html.includes(`Mallory &lt;mallory@example.com&gt; undid lastgood&#39;s revert ${h.r1.slice(0, 12)}: ${escaped}`));
  t.is(html.split(escaped).length - 1, 2, "the person's revert: its row and its mark's tooltip");
  t.true(html.includes(`<code>${h.undo.slice(0, 12)}</code>`));

  for (const other of ['--json', '--markdown']) {
    const both = await lastgood([...logArgs(h.config), '--html', other]);
    t.is(both.code, 2);
    t.regex(both.stderr, new RegExp(`log: ${other} and --html cannot be used together`));
  }
});

test('log --html: links only from url fields, and only http(s); outside text escaped everywhere', (t) => {
  const sha = (c: string) => c.repeat(40);
  const log: AuditLog = {
    $schema: 'https://lastgood.dev/schema/log.schema.json', repository: 'acme/<gitops>', branch: 'main"><x', head: sha('a'),
    window: { since: '2026-11-01T00:00:00.000Z', until: '2026-11-10T00:00:00.000Z', why: '--since <b>', commitsRead: 3, limit: 5000, stoppedBy: 'root', oldestRead: '2026-11-01T00:00:00.000Z' },
    notes: ['<i>partial</i>'],
    targets: [{
      name: '<svg onload=alert(1)>', paths: ['apps/"x"/'],
      entries: [
        { kind: 'person-revert', at: '2026-11-05T00:00:00.000Z', commit: sha('b'), author: 'Eve <eve@example.com>', subject: HOSTILE, undid: sha('c'), how: 'content', url: 'javascript:alert(1)' },
        { kind: 'verified', at: '2026-11-04T00:00:00.000Z', commit: sha('d'), evidence: '<u>ok</u>', where: 'git notes', url: 'https://user:ghp_0123456789abcdefghijklmnopqrstuvwxyzAB@github.com/acme/gitops/commit/dddd?a="b"' },
        { kind: 'verified', at: '2026-11-03T00:00:00.000Z', commit: sha('e'), evidence: 'x', where: 'git notes', url: ' https://example.com/' },
      ],
    }, { name: 'quiet', paths: ['apps/quiet/'], entries: [] }],
  };
  const html = formatLogHtml(log, { now: new Date('2026-11-10T00:00:00Z') });
  const hrefs = [...html.matchAll(/<a href="([^"]*)"/g)].map((m) => m[1]);
  t.deepEqual(hrefs, ['https://github.com/acme/gitops/commit/dddd?a=%22b%22'], 'only the http(s) URL, without its credentials');
  t.notRegex(html, /ghp_0123456789/);
  t.notRegex(html, /<svg onload|<i>|<u>|<b>|<x|<img|<script/);
  t.deepEqual([...html.matchAll(/\bhref="([^"]*)"/g)].map((m) => m[1]), ['data:,', ...hrefs], 'no other href');
  t.true(html.includes('&lt;svg onload=alert(1)&gt;'));
  t.true(html.includes('javascript:alert(1)'), 'the javascript: URL shown as text');
  t.regex(html, /<caption>What lastgood did to quiet, newest first<\/caption>[\s\S]*<tr><td colspan="4">Nothing in this window\.<\/td><\/tr>/, 'a table for a target with nothing too');
  t.is(httpUrl('javascript:alert(1)'), undefined);
  t.is(httpUrl('data:text/html,x'), undefined);
  t.is(httpUrl('//evil.example/'), undefined);
  t.is(httpUrl('HTTPS://example.com/a b'), 'https://example.com/a%20b');
});

browserTest('log --html in Chromium: the DOM as written, no request but the file, axe finds nothing serious', async (t, chromium) => {
  const h = await history();
  const r = await lastgood([...logArgs(h.config), '--html']);
  t.is(r.code, 0, r.stderr);
  const file = path.join(tempDir('lastgood-report-'), 'report.html');
  writeFileSync(file, r.stdout);
  const browser = await launch(t, chromium);
  const { page, requests } = await openPage(browser);
  await page.goto(`file://${file}`, { waitUntil: 'load' });
  const dom = await readDom(page);
  t.is(dom.lang, 'en');
  t.is(dom.mains, 1);
  t.regex(dom.h1[0]!, /^lastgood log: main of /);
  t.deepEqual(dom.captions, ['What lastgood did to podinfo, newest first', 'What lastgood did to web, newest first']);
  t.deepEqual(dom.marks, { verified: 1, revert: 1, 'person-revert': 1, request: 1 });
  t.is(dom.dangerous, 0, 'the hostile subject made no element');
  t.true(dom.text.includes(HOSTILE), 'it is text on the page');
  t.true(dom.markTitles.some((title) => title.endsWith(HOSTILE)));
  t.deepEqual(dom.links, []);
  t.deepEqual(requests, [`file://${file}`], 'nothing loaded but the file');
  await screenshot(page, 'log.png');
  const serious = await axeViolations(page);
  t.deepEqual(serious, [], serious.join('\n'));
});
