import test from 'ava';
import { execFileSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, readFileSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from './support/cli.ts';
import { tempDir } from './support/git.ts';
import { npxShim } from './support/npx-shim.ts';

/** The README is true: its worked example runs as written and prints what it shows; its links resolve. */

const README = readFileSync(path.join(ROOT, 'README.md'), 'utf8');

/** The fenced blocks of a section (from its heading to the next heading of the same level). */
function section(heading: string): string {
  const start = README.indexOf(`\n${heading}\n`);
  if (start < 0) throw new Error(`README has no "${heading}"`);
  const level = /^#+/.exec(heading)![0];
  const rest = README.slice(start + heading.length + 2);
  const end = rest.search(new RegExp(`^${level} `, 'm'));
  return end < 0 ? rest : rest.slice(0, end);
}

function fences(text: string): Array<{ lang: string; body: string }> {
  return [...text.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map((m) => ({ lang: m[1]!, body: m[2]! }));
}

/** A copy of the clone's layout a user runs the example in (so it does not race the demo test over .demo/). */
function clone(): string {
  const dir = tempDir('lastgood-readme-');
  cpSync(path.join(ROOT, 'demo'), path.join(dir, 'demo'), { recursive: true });
  copyFileSync(path.join(ROOT, 'package.json'), path.join(dir, 'package.json'));
  for (const shared of ['node_modules', 'bin', 'dist', 'templates']) symlinkSync(path.join(ROOT, shared), path.join(dir, shared), 'dir');
  return dir;
}

function sh(cwd: string, command: string): string {
  // `npx lastgood` is this clone's CLI (npx-shim.ts); node_modules/.bin next, as in an npm script, for the project's Node
  const env = { ...process.env, PATH: `${npxShim()}:${path.join(ROOT, 'node_modules', '.bin')}:${process.env.PATH}` };
  return execFileSync('bash', ['-c', command], { cwd, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Every line of `expected` (… matches anything) appears in `actual`, in order. */
function showsInOrder(actual: string, expected: string): string[] {
  const lines = actual.split('\n');
  const missing: string[] = [];
  let at = 0;
  for (const want of expected.split('\n').filter(Boolean)) {
    const re = new RegExp(`^${want.split('…').map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
    const found = lines.findIndex((l, i) => i >= at && re.test(l));
    if (found < 0) missing.push(want);
    else at = found + 1;
  }
  return missing;
}

test('the worked example: its commands, run as written, print what the README shows, and a second run writes nothing', (t) => {
  const example = section('## Worked example');
  const blocks = fences(example);
  const commands = blocks.find((b) => b.lang === 'sh')!.body.split('\n').map((l) => l.replace(/\s+#.*$/, '').trim()).filter(Boolean);
  t.true(commands.length >= 2, 'the example has commands');
  t.true(commands.every((c) => !/\blastgood run\b/.test(c) || /--now \S+/.test(c)), 'a run of the example states its --now');
  const dir = clone();
  const outputs = commands.map((c) => sh(dir, c));
  // the repository's history, then the run's report, as the two plain blocks after the commands show them
  const [history, report] = blocks.filter((b) => b.lang === '').map((b) => b.body);
  t.deepEqual(showsInOrder(outputs[0]!, history!.replace(/\s+←.*$/gm, '')), [], outputs[0]);
  // the render lines appear only where kustomize or kubectl is installed (the render check)
  const rendering = !/the render check was not possible/.test(outputs.at(-1)!);
  if (!rendering) t.log('the render lines of the worked example were not checked: no kustomize or kubectl here (the report says so)');
  const expected = rendering ? report! : report!.split('\n').filter((l) => !/^ {2}(rendered:|note: rendered)/.test(l)).join('\n');
  t.deepEqual(showsInOrder(outputs.at(-1)!, expected), [], outputs.at(-1));
  const again = sh(dir, commands.at(-1)!);
  t.regex(again, /^ {2}existing commit: [0-9a-f]{40}/m, 'the second run finds its own commit');
});

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, -1, -2 for repeats. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  const body = markdown.replace(/^```[\s\S]*?^```$/gm, '');
  for (const m of body.matchAll(/^#{1,6} (.+)$/gm)) {
    const slug = m[1]!.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return out;
}

test('every link in the README resolves: anchors to its headings, paths to files of the repository', (t) => {
  const targets = new Set(anchors(README));
  const text = README.replace(/^```[\s\S]*?^```$/gm, '').replace(/`[^`\n]*`/g, '');
  const links = [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!);
  t.true(links.length > 5);
  for (const link of links) {
    if (/^[a-z]+:\/\//i.test(link)) continue;
    if (link.startsWith('#')) t.true(targets.has(link.slice(1)), `${link}: no such heading`);
    else t.true(existsSync(path.join(ROOT, link.split('#')[0]!)), `${link}: no such file`);
  }
  // names of files the README mentions as this repository's
  for (const file of ['LICENSE', 'Dockerfile', 'action.yml', 'templates/lastgood.schema.json', 'templates/demo/cluster.yaml', 'templates/demo/lastgood.yaml']) t.true(existsSync(path.join(ROOT, file)), file);
  t.false(/DESIGN\.md|docs\/action\.md/.test(README + readFileSync(path.join(ROOT, 'action.yml'), 'utf8')), 'no link to a file the repository does not have');
});

test('LICENSE is the licence package.json names', (t) => {
  const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { license: string };
  t.is(pkg.license, 'Apache-2.0');
  t.regex(readFileSync(path.join(ROOT, 'LICENSE'), 'utf8'), /^\s*Apache License\s+Version 2\.0, January 2004/);
});
