/**
 * `npm run bench [-- --only PREFIX]`: runs every bench/*.bench.ts and prints one JSON object per
 * line per measurement on stdout, nothing else (progress goes to stderr).
 * A bench module exports `prefix` (the start of every "bench" name it emits) and a default
 * async generator yielding measurement rows.
 */
import { readdir } from 'node:fs/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import path from 'node:path';
import { ensureCli } from '../scripts/build-cli.ts';

export interface BenchModule {
  prefix: string;
  default: () => AsyncIterable<Record<string, unknown> & { bench: string }>;
}

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const onlyAt = args.indexOf('--only');
const only = onlyAt >= 0 ? args[onlyAt + 1] ?? '' : '';

// benches spawn the CLI users run (bin/lastgood.js → dist/cli/): built first when a source is newer
await ensureCli();

const files = (await readdir(here)).filter((f) => f.endsWith('.bench.ts')).sort();
for (const file of files) {
  const mod = (await import(pathToFileURL(path.join(here, file)).href)) as BenchModule;
  if (only && !(mod.prefix.startsWith(only) || only.startsWith(mod.prefix))) continue;
  process.stderr.write(`bench: ${file}\n`);
  for await (const row of mod.default()) {
    if (only && !row.bench.startsWith(only)) continue;
    process.stdout.write(JSON.stringify(row) + '\n');
  }
}
