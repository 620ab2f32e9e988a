/**
 * health: the assess stage over the fixture corpus (fixtures/upstream + fixtures/synthetic).
 * - `health/corpus`: `lastgood health <every file>` as a spawned process, median wall time and
 *   the child's CPU time (user+sys, from the cutime/cstime of /proc/self/stat, which count
 *   waited-for children; 10 ms resolution). Target: under 1 s of process time for 100+ objects.
 * - `health/assess`: the assessors alone, in process, over the parsed corpus.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { assess } from '../src/health/index.ts';
import { parseSnapshot } from '../src/observe/snapshot.ts';
import type { KubeObject } from '../src/observe/types.ts';

export const prefix = 'health';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const BIN = path.join(ROOT, 'bin', 'lastgood.js');
const CLI_RUNS = 5;
const ASSESS_PASSES = 200;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** CPU ms used by this process's waited-for children so far (Linux /proc; undefined elsewhere). */
function childrenCpuMs(): number | undefined {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // after "(comm)": field 3 is index 0, so cutime (16) and cstime (17) are 13 and 14; clock ticks of 10 ms
    return (Number(fields[13]) + Number(fields[14])) * 10;
  } catch {
    return undefined;
  }
}

/** The fixture files the snapshot reader accepts (partial upstream snippets are skipped) and their objects. */
async function corpus(): Promise<{ files: string[]; objects: KubeObject[] }> {
  const files: string[] = [];
  const objects: KubeObject[] = [];
  for (const dir of ['fixtures/upstream', 'fixtures/synthetic']) {
    const entries = await readdir(path.join(ROOT, dir), { recursive: true, withFileTypes: true });
    for (const entry of entries.filter((e) => e.isFile() && /\.ya?ml$/.test(e.name))) {
      const file = path.join(entry.parentPath, entry.name);
      try {
        const observed = parseSnapshot(await readFile(file, 'utf8'), file);
        files.push(path.relative(ROOT, file));
        objects.push(...observed.map((o) => o.object));
      } catch {
        // not a complete Kubernetes object: the CLI would refuse the whole run
      }
    }
  }
  return { files: files.sort(), objects };
}

export default async function* () {
  const { files, objects } = await corpus();
  const now = new Date('2026-08-25T00:00:00Z');

  const wall: number[] = [];
  const cpu: number[] = [];
  for (let run = 0; run < CLI_RUNS; run++) {
    process.stderr.write(`health: CLI run ${run + 1}/${CLI_RUNS} over ${files.length} files\n`);
    const cpuBefore = childrenCpuMs();
    const start = performance.now();
    const result = spawnSync(process.execPath, [BIN, 'health', '--now', now.toISOString(), ...files], { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 << 20 });
    wall.push(performance.now() - start);
    const cpuAfter = childrenCpuMs();
    if (cpuBefore !== undefined && cpuAfter !== undefined) cpu.push(cpuAfter - cpuBefore);
    if (result.status !== 0) throw new Error(`lastgood health exited ${result.status}: ${result.stderr}`);
    const lines = result.stdout.trimEnd().split('\n').length;
    if (lines !== objects.length) throw new Error(`lastgood health printed ${lines} lines for ${objects.length} objects`);
  }
  yield {
    bench: 'health/corpus',
    objects: objects.length,
    files: files.length,
    lastgood: { ms: Math.round(median(wall)), ...(cpu.length ? { cpuMs: Math.round(median(cpu)) } : {}) },
  };

  for (const o of objects) assess(o, now); // warm up
  const cpuStart = process.cpuUsage();
  const start = performance.now();
  for (let pass = 0; pass < ASSESS_PASSES; pass++) for (const o of objects) assess(o, now);
  const ms = performance.now() - start;
  const used = process.cpuUsage(cpuStart);
  yield {
    bench: 'health/assess',
    objects: objects.length,
    passes: ASSESS_PASSES,
    lastgood: { msPerPass: Number((ms / ASSESS_PASSES).toFixed(3)), usPerObject: Number(((ms * 1000) / (ASSESS_PASSES * objects.length)).toFixed(2)), cpuMs: Math.round((used.user + used.system) / 1000) },
  };
}
