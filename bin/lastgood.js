#!/usr/bin/env node
// The `lastgood` command: runs the CLI bundle (dist/cli/, built by scripts/build-cli.ts; `npm ci`
// and `npm pack` build it). Plain JavaScript that any Node from 18 on parses: what a user installs
// never needs TypeScript, a build step or the project's dev-only Node. Before the bundle is loaded,
// the Node running it is checked against package.json "engines", so that a Node the bundle cannot
// run on is told so in one sentence (exit 2) instead of crashing somewhere inside it.
//
// "engines" is the one place the supported Node versions are written: this file reads it, the
// bundle is built for its lowest version (scripts/build-cli.ts), and test/package.test.ts runs the
// installed package on that lowest version (test/node-lowest/) and on 24. Why "^22.19.0 || >=24"
// (2026-11): the Kubernetes client's HTTP client (undici 8, inside the bundle) binds zlib's zstd
// decompressor when it is loaded, which Node has from 22.15 and 23.8 (on Node 20 every command
// that reads a cluster died with "Cannot read properties of undefined (reading 'bind')"), and
// undici 8 declares node >=22.19.0; Node 20 left its support window in April 2026; Node 23 (odd,
// unsupported since June 2025) is left out, its 23.0-23.7 having no zstd.
import { readFileSync } from 'node:fs';
import * as nodeModule from 'node:module';

const refusal = nodeRefusal(process.versions.node);
if (refusal) {
  process.stderr.write(`${refusal}\n`);
  process.exit(2);
}

// Node's on-disk compile cache (os.tmpdir(), or NODE_COMPILE_CACHE): a warm start compiles none of
// the bundle again. An unwritable cache is a no-op.
nodeModule.enableCompileCache?.();
try {
  await import('../dist/cli/cli.js');
} catch (error) {
  if (error?.code === 'ERR_MODULE_NOT_FOUND' && String(error.message).includes('dist/cli/cli.js')) {
    process.stderr.write('lastgood: the CLI is not built (dist/cli/): run `npm run build` (npm ci does it)\n');
    process.exit(2);
  }
  throw error;
}

/** The sentence refusing this Node, or undefined when "engines" admits it (or cannot be read: nothing to check against). */
function nodeRefusal(version) {
  let range;
  try {
    range = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).engines.node;
  } catch {
    return undefined;
  }
  if (typeof range !== 'string') return undefined;
  const alternatives = range.split('||').map((a) => a.trim().split(/\s+/).filter(Boolean).map(comparator));
  // a form this small reader does not know is not held against the user
  if (alternatives.some((a) => a.length === 0 || a.includes(undefined))) return undefined;
  const v = triple(version);
  if (alternatives.some((a) => a.every((c) => c.test(v)))) return undefined;
  const wanted = alternatives.map((a) => a.map((c) => c.words).join(' and ')).join(', or ');
  return `lastgood: this is Node.js ${version}, and lastgood needs Node.js ${wanted} (package.json "engines": "${range}"): install one of those (https://nodejs.org) and run lastgood with it.`;
}

/** One comparator of a semver range (>=, >, <=, <, =, ^, ~ or a bare version; missing parts are 0). */
function comparator(text) {
  const m = /^(>=|<=|>|<|=|\^|~)?v?(\d+)(?:\.(\d+))?(?:\.(\d+))?$/.exec(text);
  if (!m) return undefined;
  const op = m[1] || '=';
  const at = [Number(m[2]), Number(m[3] || 0), Number(m[4] || 0)];
  const name = at.join('.');
  const cmp = (v) => compare(v, at);
  switch (op) {
    case '>=': return { test: (v) => cmp(v) >= 0, words: `${name} or later` };
    case '>': return { test: (v) => cmp(v) > 0, words: `later than ${name}` };
    case '<=': return { test: (v) => cmp(v) <= 0, words: `${name} or earlier` };
    case '<': return { test: (v) => cmp(v) < 0, words: `earlier than ${name}` };
    case '^': return { test: (v) => cmp(v) >= 0 && v[0] === at[0], words: `${name} or a later ${at[0]}.x` };
    case '~': return { test: (v) => cmp(v) >= 0 && v[0] === at[0] && v[1] === at[1], words: `${name} or a later ${at[0]}.${at[1]}.x` };
    default: return { test: (v) => cmp(v) === 0, words: name };
  }
}

function triple(version) {
  const parts = String(version).split('.').map((p) => parseInt(p, 10) || 0);
  return [parts[0] || 0, parts[1] || 0, parts[2] || 0];
}

function compare(a, b) {
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return 0;
}
