/**
 * A bench's job process built as users run lastgood: bundled with the CLI's own esbuild options
 * (scripts/build-cli.ts BUNDLE_OPTIONS: split ESM, minified), not TypeScript sources under Node's
 * type stripping and unbundled node_modules, which no user pays (~0.4 s and ~35 MB more at start).
 * LASTGOOD_BENCH_JOB=source runs the sources instead (to read a profile against src/ lines).
 *
 * The bundle is run with plain `node FILE`: Node's compile cache is off unless NODE_COMPILE_CACHE
 * is set (bin/lastgood.js turns it on; a first run after an install compiles everything anyway),
 * so a cold row compiles the whole bundle, as the first run of a new installation does.
 */
import { cpSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { BUNDLE_OPTIONS, PACKAGE_JSON } from '../scripts/build-cli.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Bundles `source` (a bench/*-job.ts) into `dir`; returns the file to run with node. */
export async function bundleJob(source: string, dir: string): Promise<string> {
  if (process.env.LASTGOOD_BENCH_JOB === 'source') return source;
  const name = path.basename(source, '.ts');
  await build({ ...BUNDLE_OPTIONS, absWorkingDir: ROOT, entryPoints: { [name]: source }, outdir: dir });
  await writeFile(path.join(dir, 'package.json'), PACKAGE_JSON);
  // the commit message templates, where a bundle looks for them (src/revert/template.ts)
  cpSync(path.join(ROOT, 'templates'), path.join(dir, 'templates'), { recursive: true });
  return path.join(dir, `${name}.js`);
}

/** The environment of a cold job process: no compile cache carried from an earlier run. */
export function coldEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { NODE_COMPILE_CACHE: _cache, ...rest } = env;
  return rest;
}
