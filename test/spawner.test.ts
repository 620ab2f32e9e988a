import test from 'ava';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, realpathSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { collectRelayed, runRelayed, runSync, runSyncBuffer } from './support/spawner.ts';

// The tests read every CLI run's output through the relay (support/cli.ts): what a command prints
// must come back as it printed it, whatever the chunks the pipes cut it into.

test('a relayed command\'s output comes back whole: characters split between chunks are kept', async (t) => {
  // 600,000 bytes of three-byte characters: the pipes cut them into chunks of 64 KiB, mid-character
  const r = await collectRelayed(process.execPath, ['-e', 'process.stdout.write("→".repeat(200000)); process.stderr.write("é".repeat(100000))']);
  t.is(r.code, 0);
  t.is(r.stdout, '→'.repeat(200000));
  t.is(r.stderr, 'é'.repeat(100000));
});

test('a relayed command gets its input, and a failing one is reported with its code and output', async (t) => {
  const echoed = await collectRelayed(process.execPath, ['-e', 'process.stdin.pipe(process.stdout)'], { input: 'ünïcode\n' });
  t.is(echoed.stdout, 'ünïcode\n');
  const failed = await t.throwsAsync(runRelayed(process.execPath, ['-e', 'process.stderr.write("no"); process.exit(3)']));
  t.like(failed, { code: 3, stderr: 'no' });
});

// runSync goes through spawner-child.js, which must answer as execFileSync would: the tests'
// thousands of git commands read their output and their failures through it.

test('runSync: stdout comes back byte for byte (binary, larger than a pipe), with its input, its cwd and only the environment given', (t) => {
  const bytes = Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 7919) % 256));
  t.deepEqual(runSyncBuffer('cat', [], { input: bytes }), bytes);
  t.deepEqual(runSyncBuffer('cat', [], {}), Buffer.alloc(0), 'no input: an empty stdin, as execFileSync with stdio ignore');
  const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'lastgood-spawner-test-')));
  t.is(runSync('pwd', [], { cwd: dir }), `${dir}\n`);
  const env = { PATH: process.env.PATH!, ONLY_THIS: 'a=b c', EMPTY: '' };
  const printed = runSync('env', [], { env }).split('\n').filter(Boolean).sort();
  t.deepEqual(printed, ['EMPTY=', 'ONLY_THIS=a=b c', `PATH=${process.env.PATH}`]);
  // arguments are passed as they are: spaces, quotes, an empty one, characters outside ASCII
  const args = ['a b', '"q"', '', 'ünï', '$HOME'];
  t.is(runSync(process.execPath, ['-e', 'process.stdout.write(JSON.stringify(process.argv.slice(1)))', ...args]), JSON.stringify(args));
  // the same as execFileSync answers it
  t.is(runSync('git', ['--version']), execFileSync('git', ['--version'], { encoding: 'utf8' }));
});

test('runSync: a failure is thrown as execFileSync throws it: status, stdout and stderr; a signal by name; a command that cannot start by its code', (t) => {
  const failed = t.throws(() => runSync('sh', ['-c', 'printf out; printf "err ü" >&2; exit 3'])) as Error & { status: number; stdout: string; stderr: string; signal: string | null };
  t.like(failed, { status: 3, stdout: 'out', stderr: 'err ü', signal: null });
  t.regex(failed.message, /^Command failed: sh -c /);
  const killed = t.throws(() => runSync('sh', ['-c', 'kill -TERM $$'])) as Error & { status: number | null; signal: string };
  t.like(killed, { status: null, signal: 'SIGTERM' });
  const missing = t.throws(() => runSync('lastgood-no-such-command', [])) as Error & { code: string };
  t.is(missing.code, 'ENOENT');
  t.is(runSync('true', []), '', 'and the helper answers the next request after each');
  // a request that cannot be made at all is an error too, and the helper goes on answering
  t.throws(() => runSync('echo', ['a\0b']), { message: /null bytes/ });
  t.is(runSync('echo', ['after']), 'after\n');
});
