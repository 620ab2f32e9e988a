import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureCli } from '../../scripts/build-cli.ts';
import { spawnRelayed } from './spawner.ts';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const BIN = path.join(ROOT, 'bin', 'lastgood.js');

// BIN runs the bundle (dist/cli/), as an installed package does: built here when a source is newer,
// so a test never runs yesterday's CLI (npm ci builds it too)
await ensureCli();

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI as a user does: a spawned process running the bundle, with this process's Node. */
export function lastgood(args: string[], opts: { cwd?: string; input?: string; env?: Record<string, string> } = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    // started by the worker's small relay process: a fork of the worker costs in proportion to its memory (support/spawner.ts)
    const child = spawnRelayed(process.execPath, [BIN, ...args], { cwd: opts.cwd ?? ROOT, env: { ...process.env, ...opts.env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
    child.stdin.end(opts.input ?? '');
  });
}
