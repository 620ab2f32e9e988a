import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from './cli.ts';

/** The documentation: README.md, and the pages under docs/ it links (one per door and per topic). */

export const DOCS_DIR = path.join(ROOT, 'docs');

/** Every page under docs/, as paths relative to the repository ("docs/cli.md"), sorted. */
export function docsPages(): string[] {
  return readdirSync(DOCS_DIR).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`);
}

/** The text of docs/NAME.md ("cli", "action", …). */
export function docsPage(name: string): string {
  return readFileSync(path.join(DOCS_DIR, `${name}.md`), 'utf8');
}

/**
 * A section of a markdown text, from its heading (e.g. "## Worked example") to the next heading of
 * the same level; `file` names the text in the error when the heading is missing.
 */
export function section(markdown: string, heading: string, file = 'README.md'): string {
  const start = markdown.indexOf(`\n${heading}\n`);
  if (start < 0) throw new Error(`${file} has no "${heading}"`);
  const level = /^#+/.exec(heading)![0];
  const rest = markdown.slice(start + heading.length + 2);
  const end = rest.search(new RegExp(`^${level} `, 'm'));
  return end < 0 ? rest : rest.slice(0, end);
}

/** The fenced code blocks of a markdown text, with their language ("" for none). */
export function fences(text: string): Array<{ lang: string; body: string }> {
  return [...text.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map((m) => ({ lang: m[1]!, body: m[2]! }));
}
