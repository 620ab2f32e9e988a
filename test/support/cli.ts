import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureCli } from '../../scripts/build-cli.ts';
import { collectRelayed } from './spawner.ts';

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
export async function lastgood(args: string[], opts: { cwd?: string; input?: string; env?: Record<string, string> } = {}): Promise<CliResult> {
  // started by the worker's small relay process: a fork of the worker costs in proportion to its memory (support/spawner.ts)
  const r = await collectRelayed(process.execPath, [BIN, ...args], { cwd: opts.cwd ?? ROOT, env: { ...process.env, ...opts.env }, input: opts.input });
  return { code: r.code ?? -1, stdout: r.stdout, stderr: r.stderr };
}
