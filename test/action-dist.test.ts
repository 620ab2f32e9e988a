import test from 'ava';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildAction } from '../scripts/build-action.ts';
import { tempDir } from './support/git.ts';

/**
 * dist/ is committed (the runner runs it straight from the repository): it must be what src/
 * builds today — the check-dist workflow of actions/typescript-action, as a test. The fresh build
 * goes to another folder at another time, so equality also shows the bundle is reproducible.
 */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
let out = '';
let fresh = '';

test.before(async () => {
  out = tempDir('lastgood-dist-');
  await buildAction(out);
  fresh = readFileSync(path.join(out, 'action.js'), 'utf8');
});

test('dist/action.js is the bundle of the current sources (rebuild: node scripts/build-action.ts)', (t) => {
  const committed = readFileSync(path.join(ROOT, 'dist', 'action.js'), 'utf8');
  t.true(fresh === committed, 'dist/action.js is stale: run `node scripts/build-action.ts` (npm run build:action) and commit dist/');
  t.is(readFileSync(path.join(ROOT, 'dist', 'package.json'), 'utf8'), readFileSync(path.join(out, 'package.json'), 'utf8'));
});

test('the bundle carries nothing of the machine or folder that built it', (t) => {
  t.false(fresh.includes(ROOT), 'an absolute source path leaked into the bundle');
  t.false(fresh.includes(out), 'the output path leaked into the bundle');
  t.false(/\b20\d\d-\d\d-\d\dT\d\d:\d\d/.test(fresh.slice(0, 500)), 'a build time in the header');
  t.regex(fresh.split('\n').slice(1, 3).join('\n'), /^import { createRequire[^\n]*\nconst require = /, 'the createRequire banner comes first, before any CommonJS dependency runs');
});

test('action.yml runs the committed bundle on node24', (t) => {
  const yml = readFileSync(path.join(ROOT, 'action.yml'), 'utf8');
  t.regex(yml, /^ {2}using: node24$/m);
  t.regex(yml, /^ {2}main: dist\/action\.js$/m);
});
