import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** templates/ at the project root, found from this file (src/revert/ in source, dist/ when bundled). */
const candidates = [new URL('../../templates/', import.meta.url), new URL('../templates/', import.meta.url), new URL('./templates/', import.meta.url)];

const cache = new Map<string, string>();

export function loadTemplate(name: string): string {
  let text = cache.get(name);
  if (text !== undefined) return text;
  for (const dir of candidates) {
    try {
      text = readFileSync(fileURLToPath(new URL(name, dir)), 'utf8');
      break;
    } catch {
      // try the next location
    }
  }
  if (text === undefined) throw new Error(`template ${name} not found next to lastgood`);
  cache.set(name, text);
  return text;
}

/** Replaces {{name}} placeholders; unknown names become empty; runs of blank lines collapse to one. */
export function render(template: string, values: Record<string, string>): string {
  return template
    .replace(/\{\{(\w+)\}\}/g, (_, key: string) => values[key] ?? '')
    .replace(/[ \t]+$/gm, '')
    .replace(/\n{3,}/g, '\n\n')
    .trim() + '\n';
}
