// Counts the assertions written in the tests: each call of an ava assertion (`t.is(`, `t.deepEqual(`,
// …) in test/ (support included), per file and in all. Issue 38: a suite made faster keeps every
// assertion; this is how the closing note counts them before and after.
//   node scripts/count-assertions.ts [--json]
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const METHODS = ['is', 'not', 'true', 'false', 'truthy', 'falsy', 'deepEqual', 'notDeepEqual', 'like', 'regex', 'notRegex', 'throws', 'throwsAsync', 'notThrows', 'notThrowsAsync', 'assert', 'pass', 'fail', 'snapshot'];
const CALL = new RegExp(`\\bt\\.(${METHODS.join('|')})\\(`, 'g');

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node-lowest' ? [] : files(p);
    return e.name.endsWith('.ts') ? [p] : [];
  });
}

const counts = files(path.join(ROOT, 'test')).map((f) => ({ file: path.relative(ROOT, f), assertions: (readFileSync(f, 'utf8').match(CALL) ?? []).length })).filter((c) => c.assertions > 0);
const total = counts.reduce((a, c) => a + c.assertions, 0);
if (process.argv.includes('--json')) process.stdout.write(JSON.stringify({ total, files: counts }) + '\n');
else process.stdout.write(`${total} assertions in ${counts.length} files\n`);
