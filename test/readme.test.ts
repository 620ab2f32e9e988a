import test from 'ava';
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, readFileSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { parseConfig } from '../src/config/load.ts';
import { BIN, ROOT } from './support/cli.ts';
import { docsPages, fences, section as sectionOf } from './support/docs.ts';
import { tempDir } from './support/git.ts';
import { npxShim } from './support/npx-shim.ts';

/**
 * The README and the pages under docs/ are true: the worked example runs as written and prints what
 * it shows; their links resolve; the lastgood commands of their shell blocks name commands and
 * options the CLI has; the whole configs they show are configs lastgood accepts.
 */

const README = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
/** README.md and every docs/*.md page, by their path in the repository. */
const DOCS: Array<[file: string, text: string]> = [['README.md', README], ...docsPages().map((f): [string, string] => [f, readFileSync(path.join(ROOT, f), 'utf8')])];

/** The fenced blocks of a README section (from its heading to the next heading of the same level). */
function section(heading: string): string {
  return sectionOf(README, heading);
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

/** Markdown with its fenced blocks and code spans left out: what can hold a link. */
function prose(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```$/gm, '').replace(/`[^`\n]*`/g, '');
}

test('every link in the README and the docs/ pages resolves: anchors to headings of the page they name, paths to files of the repository', (t) => {
  const headings = new Map(DOCS.map(([file, text]) => [file, anchors(text)]));
  t.true(DOCS.length > 5, 'the README and its docs/ pages');
  for (const [file, markdown] of DOCS) {
    const links = [...prose(markdown).matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!);
    if (file === 'README.md') t.true(links.length > 5);
    else t.true(links.some((l) => l.split('#')[0] === '../README.md'), `${file} links back to the README`);
    for (const link of links) {
      if (/^[a-z]+:\/\//i.test(link)) continue;
      const [target, anchor] = link.split('#') as [string, string | undefined];
      // a path is relative to the folder of the page it is in; "#anchor" is the page itself
      const to = target ? path.posix.normalize(path.posix.join(path.posix.dirname(file), target)) : file;
      if (!existsSync(path.join(ROOT, to))) {
        t.fail(`${file}: ${link}: no such file`);
        continue;
      }
      if (anchor === undefined) continue;
      const there = headings.get(to) ?? (to.endsWith('.md') ? anchors(readFileSync(path.join(ROOT, to), 'utf8')) : new Set<string>());
      t.true(there.has(anchor), `${file}: ${link}: no such heading in ${to}`);
    }
  }
  // every page under docs/ is reachable from the README
  const fromReadme = new Set([...prose(README).matchAll(/\]\((docs\/[^)#\s]+)(#[^)\s]*)?\)/g)].map((m) => m[1]!));
  for (const page of docsPages()) t.true(fromReadme.has(page), `${page} is linked from the README`);
  // names of files the README mentions as this repository's
  for (const file of ['LICENSE', 'Dockerfile', 'action.yml', 'templates/lastgood.schema.json', 'templates/demo/cluster.yaml', 'templates/demo/lastgood.yaml']) t.true(existsSync(path.join(ROOT, file)), file);
  const action = readFileSync(path.join(ROOT, 'action.yml'), 'utf8');
  const all = DOCS.map(([, text]) => text).join('\n') + action;
  t.false(/DESIGN\.md/.test(all), 'no link to a file the repository does not have');
  // a docs/ page that the README, a page or action.yml names by its path exists
  for (const [, page] of all.matchAll(/\bdocs\/([\w-]+\.md)\b/g)) t.true(existsSync(path.join(ROOT, 'docs', page!)), `docs/${page} is named but does not exist`);
});

interface Command {
  file: string;
  line: string;
  /** the command ("" for the program itself: `lastgood --version`) */
  sub: string;
  options: string[];
}

/**
 * The lastgood commands of the shell blocks of the README and the docs/ pages (`lastgood …`,
 * `npx lastgood …`, `node …/bin/lastgood.js …`): lines ending in `\` joined, trailing comments
 * dropped, each line cut at the shell's separators (pipes, `&&`, `;`, `&`, substitutions).
 */
function lastgoodCommands(): Command[] {
  const out: Command[] = [];
  for (const [file, text] of DOCS) {
    for (const block of fences(text).filter((b) => b.lang === 'sh')) {
      const lines = block.body.replace(/\\\n\s*/g, ' ').split('\n').map((l) => l.replace(/(^|\s)#.*$/, '').trim()).filter(Boolean);
      for (const line of lines) {
        for (const piece of line.split(/\|\||&&|[|;&]|\$\(|<\(|\)/)) {
          const m = /^\s*(?:npx\s+)?lastgood(?:\s+(.*))?$/.exec(piece) ?? /(?:^|\s)node\s+\S*bin\/lastgood\.js(?:\s+(.*))?$/.exec(piece);
          if (!m) continue;
          const words = (m[1] ?? '').split(/\s+/).filter(Boolean);
          const sub = words[0] && !words[0].startsWith('-') ? words[0] : '';
          out.push({ file, line, sub, options: words.filter((w) => /^--[a-z]/.test(w)).map((w) => w.replace(/=.*$/, '')) });
        }
      }
    }
  }
  return out;
}

test("every lastgood command in the shell blocks of the README and the docs/ pages is a command the CLI has, with options it takes", (t) => {
  const commands = lastgoodCommands();
  t.true(commands.length >= 8, `the shell blocks hold lastgood commands (${commands.length} found)`);
  t.true(commands.some((c) => c.file !== 'README.md'), 'the docs/ pages too');
  const help = new Map<string, string>();
  for (const { file, line, sub, options } of commands) {
    if (!help.has(sub)) {
      const r = spawnSync(process.execPath, [BIN, ...(sub ? [sub] : []), '--help'], { cwd: ROOT, encoding: 'utf8' });
      t.is(r.status, 0, r.stderr);
      // for a command it does not know, commander prints the program's own help
      help.set(sub, r.stdout.startsWith(sub ? `Usage: lastgood ${sub} ` : 'Usage: lastgood [options]') ? r.stdout : '');
    }
    const text = help.get(sub)!;
    if (!text) {
      t.fail(`${file}: \`${line}\`: lastgood has no command "${sub}"`);
      continue;
    }
    for (const option of options) t.regex(text, new RegExp(`(^|[\\s,])${option}(?=[\\s,=<[]|$)`, 'm'), `${file}: \`${line}\`: lastgood ${sub} takes no ${option}`);
  }
  t.log(`${commands.length} lastgood commands checked against the --help of ${help.size} commands`);
});

test('every whole lastgood.yaml the README and the docs/ pages show (a yaml block with top-level repo: and targets:) is a config lastgood accepts', (t) => {
  let whole = 0;
  for (const [file, text] of DOCS) {
    for (const [i, block] of fences(text).filter((b) => b.lang === 'yaml').entries()) {
      // a part of a config, or another tool's file
      if (!/^repo:/m.test(block.body) || !/^targets:/m.test(block.body)) continue;
      whole++;
      t.notThrows(() => parseConfig(block.body, `${file} (yaml block ${i + 1})`), `${file}: yaml block ${i + 1}`);
    }
  }
  t.true(whole >= 2, `the docs show whole configs (${whole} found)`);
});

test('LICENSE is the licence package.json names', (t) => {
  const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { license: string };
  t.is(pkg.license, 'Apache-2.0');
  t.regex(readFileSync(path.join(ROOT, 'LICENSE'), 'utf8'), /^\s*Apache License\s+Version 2\.0, January 2004/);
});
