// The process that starts a test worker's streaming children (test/support/spawner.ts
// spawnRelayed): plain JavaScript importing only Node's own modules, so it stays small and a fork
// of it is cheap. JSON lines in on stdin (spawn, stdin bytes, stdin end), JSON lines out on stdout
// (stdout and stderr bytes, close, error), each tagged with the child's id, in the order they happen.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

const children = new Map();
const send = (message) => process.stdout.write(JSON.stringify(message) + '\n');

for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  const m = JSON.parse(line);
  if (m.t === 'spawn') {
    const child = spawn(m.file, m.args, { cwd: m.cwd, env: m.env, stdio: ['pipe', 'pipe', 'pipe'] });
    children.set(m.id, child);
    child.stdout.on('data', (d) => send({ id: m.id, t: 'out', d: d.toString('base64') }));
    child.stderr.on('data', (d) => send({ id: m.id, t: 'err', d: d.toString('base64') }));
    child.stdin.on('error', () => {}); // a child may exit before reading its input
    child.on('error', (e) => {
      children.delete(m.id);
      send({ id: m.id, t: 'error', message: e.message, code: e.code });
    });
    child.on('close', (code, signal) => {
      children.delete(m.id);
      send({ id: m.id, t: 'close', code, signal });
    });
  } else if (m.t === 'in') children.get(m.id)?.stdin.write(Buffer.from(m.d, 'base64'));
  else if (m.t === 'end') children.get(m.id)?.stdin.end();
}
// the worker closed its end (it exited): so does this process, and what it started
for (const child of children.values()) child.kill('SIGKILL');
process.exit(0);
