// The process that starts the tests' synchronous commands for a test worker (test/support/spawner.ts):
// plain JavaScript importing only Node's own modules, so it stays small (~40 MB) and a fork of it is
// cheap. One request per line on the request FIFO, one answer per line on the answer FIFO, in order.
import { spawnSync } from 'node:child_process';
import { createReadStream, openSync, writeSync } from 'node:fs';
import { createInterface } from 'node:readline';

const [requests, answers] = process.argv.slice(2);
// opened in the worker's order (requests, then answers), each waiting for the worker's end
const input = createReadStream('', { fd: openSync(requests, 'r') });
const out = openSync(answers, 'w');

function answer(value) {
  const line = Buffer.from(JSON.stringify(value) + '\n');
  for (let at = 0; at < line.length; ) at += writeSync(out, line, at);
}

for await (const line of createInterface({ input, crlfDelay: Infinity })) {
  const { file, args, cwd, env, input } = JSON.parse(line);
  let r;
  try {
    r = spawnSync(file, args, { cwd, env, stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'], input: input === undefined ? undefined : Buffer.from(input, 'base64'), maxBuffer: 2 ** 30 });
  } catch (error) {
    // a request spawnSync refuses before it starts anything (a NUL byte in an argument): answered,
    // not thrown (thrown, this process died and the worker waited for an answer until its timeout)
    answer({ status: null, signal: null, stdout: '', stderr: '', error: { message: error.message, code: error.code } });
    continue;
  }
  answer({
    status: r.status,
    signal: r.signal,
    stdout: r.stdout?.toString('base64') ?? '',
    stderr: r.stderr?.toString('base64') ?? '',
    error: r.error ? { message: r.error.message, code: r.error.code } : undefined,
  });
}
// the worker closed its end (it exited): so does this process
process.exit(0);
