import test from 'ava';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { transform } from 'esbuild';
import { ENGINES, lowestNode } from '../scripts/build-cli.ts';
import { ROOT } from './support/cli.ts';
import { tempDir } from './support/git.ts';

/**
 * The Node contract of bin/lastgood.js (issue 36): before it loads the bundle, it checks the Node
 * running it against package.json "engines" — read there, the one place the versions are written —
 * and refuses any other in one sentence, exit 2, no stack. Here with made-up "engines" beside a
 * copy of the file and a stand-in bundle; test/package.test.ts runs the real package on the lowest
 * Node "engines" admits, on 24, and on the system's Node 20, which it refuses.
 */

const BIN = path.join(ROOT, 'bin', 'lastgood.js');
const V = process.versions.node;
const [MAJOR, MINOR] = V.split('.').map(Number) as [number, number, number];

/** bin/lastgood.js in a package whose "engines" is `engines` (none: no package.json), with a bundle that only says it was loaded. */
function packageWith(engines: string | undefined): string {
  const dir = tempDir('lastgood-engines-');
  mkdirSync(path.join(dir, 'bin'));
  mkdirSync(path.join(dir, 'dist', 'cli'), { recursive: true });
  copyFileSync(BIN, path.join(dir, 'bin', 'lastgood.js'));
  writeFileSync(path.join(dir, 'dist', 'cli', 'cli.js'), "process.stdout.write('bundle loaded\\n');\n");
  writeFileSync(path.join(dir, 'dist', 'cli', 'package.json'), '{ "type": "module" }\n');
  if (engines !== undefined) writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'lastgood', type: 'module', engines: { node: engines } }));
  else writeFileSync(path.join(dir, 'bin', 'package.json'), '{ "type": "module" }\n');
  return dir;
}

function runWith(engines: string | undefined) {
  const r = spawnSync(process.execPath, [path.join(packageWith(engines), 'bin', 'lastgood.js'), '--version'], { encoding: 'utf8' });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const refusal = (engines: string, wanted: string) => `lastgood: this is Node.js ${V}, and lastgood needs Node.js ${wanted} (package.json "engines": "${engines}"): install one of those (https://nodejs.org) and run lastgood with it.\n`;

test('a Node "engines" admits runs the bundle', (t) => {
  for (const engines of [ENGINES, `>=${MAJOR}`, `^${MAJOR}.${MINOR}.0`, `~${V}`, V, `>=${MAJOR - 2} <${MAJOR + 1}`, `^${MAJOR - 2}.0.0 || >=${MAJOR}`, `>=${MAJOR}.0.0 <=${V}`]) {
    const r = runWith(engines);
    t.is(r.code, 0, `${engines}: ${r.stderr}`);
    t.is(r.stdout, 'bundle loaded\n', engines);
    t.is(r.stderr, '', engines);
  }
});

test('a Node "engines" does not admit is refused in one sentence, exit 2, no stack, the bundle not loaded', (t) => {
  const cases: Array<[string, string]> = [
    ['>=99', '99.0.0 or later'],
    [`^${MAJOR}.${MINOR + 1}.0`, `${MAJOR}.${MINOR + 1}.0 or a later ${MAJOR}.x`],
    [`^22.19.0 || >=${MAJOR + 1}`, `22.19.0 or a later 22.x, or ${MAJOR + 1}.0.0 or later`],
    [`>=22 <${MAJOR}`, `22.0.0 or later and earlier than ${MAJOR}.0.0`],
    [`~${MAJOR}.${MINOR + 1}.0`, `${MAJOR}.${MINOR + 1}.0 or a later ${MAJOR}.${MINOR + 1}.x`],
    [`${MAJOR}.${MINOR}.999`, `${MAJOR}.${MINOR}.999`],
  ];
  for (const [engines, wanted] of cases) {
    const r = runWith(engines);
    t.is(r.code, 2, engines);
    t.is(r.stdout, '', `${engines}: the bundle was not loaded`);
    t.is(r.stderr, refusal(engines, wanted));
  }
});

test('an "engines" the small reader cannot parse, or no package.json, is not held against the user', (t) => {
  for (const engines of ['*', 'lts/*', '>= 22', undefined]) {
    const r = runWith(engines);
    t.is(r.code, 0, `${engines}: ${r.stderr}`);
    t.is(r.stdout, 'bundle loaded\n');
  }
});

test("bin/lastgood.js is JavaScript Node 18 parses (so that an old Node reaches the refusal): esbuild lowers nothing for node18", async (t) => {
  const source = readFileSync(BIN, 'utf8');
  const asIs = await transform(source, { format: 'esm', target: 'esnext', loader: 'js' });
  const forNode18 = await transform(source, { format: 'esm', target: 'node18', loader: 'js' });
  t.is(forNode18.code, asIs.code);
  // and it imports only Node's own modules before the check: the bundle is a dynamic import after it
  const imports = [...source.matchAll(/^import .* from '([^']+)';$/gm)].map((m) => m[1]);
  t.deepEqual(imports, ['node:fs', 'node:module']);
  t.true(source.indexOf('nodeRefusal(process.versions.node)') < source.indexOf("await import('../dist/cli/cli.js')"));
});

test('the lowest version "engines" admits (what the bundle is built for and the tests run on)', (t) => {
  t.is(lowestNode('^22.19.0 || >=24'), '22.19.0');
  t.is(lowestNode('>=24 || ^22.19.0'), '22.19.0');
  t.is(lowestNode('>=20'), '20.0.0');
  t.is(lowestNode('>=22.15 <23 || >=24'), '22.15.0');
  t.throws(() => lowestNode('<24'), { message: /no lower bound/ });
});
