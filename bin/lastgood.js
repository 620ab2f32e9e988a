#!/usr/bin/env node
// Launcher: lastgood runs its TypeScript source with Node 24's type stripping. On an older
// system Node, re-run with the Node 24 that the project installs as a dependency (the `node`
// package), so `npx lastgood` works on a machine whose own Node is 20.
import { spawn } from 'node:child_process';
import * as nodeModule from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const major = Number(process.versions.node.split('.')[0]);
if (major >= 24) {
  // Node's on-disk compile cache (os.tmpdir() unless NODE_COMPILE_CACHE says where): a warm start
  // loads the type-stripped sources in a quarter of the time; without a writable cache it is a no-op
  nodeModule.enableCompileCache?.();
  await import('../src/cli.ts');
} else {
  const require = nodeModule.createRequire(import.meta.url);
  let node;
  try {
    node = path.join(path.dirname(require.resolve('node/package.json')), 'bin', 'node');
  } catch {
    process.stderr.write(`lastgood: needs Node 24 or later (this is ${process.version}), and the bundled Node is not installed: run npm ci\n`);
    process.exit(2);
  }
  const self = fileURLToPath(import.meta.url);
  const child = spawn(node, [self, ...process.argv.slice(2)], { stdio: 'inherit' });
  // A signal to the launcher goes to the child: ending only the launcher would leave the child
  // running (and writing a revert) with no one waiting for it.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(signal, () => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    });
  }
  child.on('error', (error) => {
    process.stderr.write(`lastgood: cannot start ${node}: ${error.message}\n`);
    process.exit(3);
  });
  child.on('exit', (code, signal) => {
    process.exit(code ?? (signal ? 128 + (os.constants.signals[signal] ?? 0) : 3));
  });
}
