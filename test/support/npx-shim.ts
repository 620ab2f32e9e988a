import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from './cli.ts';
import { tempDir } from './git.ts';

/**
 * A folder to put first on the PATH where the README's commands run as written: its `npx lastgood …`
 * runs this clone's CLI, as `npx lastgood` runs node_modules/.bin/lastgood where the package is
 * installed (in a copy of the clone npx would look for the package in its cache, offline); any
 * other `npx` is npm's own.
 */
export function npxShim(): string {
  const dir = path.join(tempDir('lastgood-npx-'), 'bin');
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, 'npx');
  writeFileSync(file, `#!/usr/bin/env bash
if [ "$1" = lastgood ]; then shift; exec "${process.execPath}" "${path.join(ROOT, 'bin', 'lastgood.js')}" "$@"; fi
PATH="\${PATH#${dir}:}" exec npx "$@"
`);
  chmodSync(file, 0o755);
  return dir;
}
