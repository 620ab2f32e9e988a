import test from 'ava';
import { collectRelayed, runRelayed } from './support/spawner.ts';

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
