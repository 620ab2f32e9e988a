// `npm test`: the type check (tsc), the import-circle check (scripts/import-cycles.ts) and the
// tests (ava), started together. The checks take ~20 s on one core while the tests keep both
// cores busy for minutes: run one after the other, the suite waited for them. Their output is
// held and printed whole when they end (at once if they fail, so a type error is seen early);
// the exit code is non-zero if any of the three fails.
//   node scripts/test.ts [ava arguments...]
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const bin = (name: string) => path.join(ROOT, 'node_modules', '.bin', name);
const TSC = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

interface Ended {
  name: string;
  code: number;
  output: string;
}

/** Runs a check with its output held; prints it at once when the check fails. */
function check(name: string, command: string, args: string[]): Promise<Ended> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.on('error', (error) => resolve({ name, code: 1, output: `${name}: cannot start: ${error.message}\n` }));
    child.on('close', (code, signal) => {
      const ended = { name, code: code ?? 1, output: output + (signal ? `${name}: ended by ${signal}\n` : '') };
      if (ended.code !== 0) process.stderr.write(`\n✘ ${name} failed (the tests go on; npm test will fail):\n${ended.output}\n`);
      resolve(ended);
    });
  });
}

const checks = Promise.all([
  // TypeScript 7's native tsc: the same diagnostics as TypeScript 6's, for 7 CPU-s on a fresh clone
  // where TypeScript 6 took 34 (on the cores the tests need). Named by path: node_modules/.bin/tsc
  // may be the one of `typescript-api` (TypeScript 6, kept for scripts/import-cycles.ts's parser).
  // Incremental: what tsc learnt of the unchanged files is kept between runs (3 CPU-s when nothing changed).
  check('type check (tsc)', process.execPath, [TSC, '-p', 'tsconfig.json', '--noEmit', '--incremental', '--tsBuildInfoFile', path.join(ROOT, 'node_modules', '.cache', 'lastgood-tsc', 'tsbuildinfo')]),
  check('import circles', process.execPath, [path.join(ROOT, 'scripts', 'import-cycles.ts')]),
]);
const tests = new Promise<number>((resolve) => {
  const child = spawn(bin('ava'), process.argv.slice(2), { cwd: ROOT, stdio: 'inherit' });
  child.on('error', () => resolve(1));
  child.on('close', (code) => resolve(code ?? 1));
});

const [ended, avaCode] = await Promise.all([checks, tests]);
for (const e of ended) if (e.code === 0 && e.output.trim()) process.stdout.write(`${e.name}: ${e.output.trim()}\n`);
const failed = [...ended.filter((e) => e.code !== 0).map((e) => e.name), ...(avaCode !== 0 ? ['tests (ava)'] : [])];
if (failed.length) process.stderr.write(`npm test failed: ${failed.join(', ')}\n`);
process.exit(failed.length ? 1 : 0);
