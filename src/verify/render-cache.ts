import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { RenderSpec } from '../model/types.ts';
import { Lru } from '../repo/lru.ts';
import { parseObjects, splitDocuments } from './objects.ts';
import type { RenderResult } from './render.ts';
import type { Renderer } from './renderer.ts';

/**
 * Renders by the digest of their inputs (issue 33): a build is a function of the renderer, the
 * files it reads (by blob oid), the folder it builds and the engine's options, so one computed
 * for a digest is the same wherever it is asked again — the head and the last-known-good of a
 * second failure in the same repository, the after of a revert that restores the last-known-good
 * exactly (the same files: one render for both). Kept in memory for the process (the controller)
 * and, where a folder is given (repo.cacheDir), on disk for the next process. Only builds that
 * succeeded are kept: a failure may be the machine's (a timeout, a limit).
 */

const KEPT_IN_MEMORY = 64;
/** an output larger than this is not written to disk (the render's own bound is 64 MiB) */
const MAX_STORED_BYTES = 8 << 20;
/** renders kept on disk; beyond this the oldest are removed */
const MAX_STORED_FILES = 512;

type Success = Extract<RenderResult, { objects: unknown }>;
const memory = new Lru<string, Promise<RenderResult>>(KEPT_IN_MEMORY);

/** The digest of what a render of `spec` reads and how: equal digests render the same. */
export function renderKey(renderer: Renderer, spec: RenderSpec, extra: unknown = null): string {
  const h = createHash('sha256');
  h.update(JSON.stringify([renderer.command, renderer.version, spec.engine, spec.root, spec.flux ?? null, spec.argocd ?? null, extra]));
  for (const [p, oid] of [...spec.files].sort(([a], [b]) => (a < b ? -1 : 1))) h.update(`\0${p}\0${oid}`);
  for (const [k, entries] of [...(spec.cut?.dropped ?? new Map<string, string[]>())].sort(([a], [b]) => (a < b ? -1 : 1))) h.update(`\0cut\0${k}\0${entries.join('\0')}`);
  return h.digest('hex');
}

/** The render for `key`: remembered, read from `dir`, or made by `make` (and kept). */
export function cachedRender(key: string, dir: string | undefined, make: () => Promise<RenderResult>): Promise<RenderResult> {
  let p = memory.get(key);
  if (!p) {
    p = (async () => {
      const stored = dir ? await readStored(dir, key) : undefined;
      if (stored) return stored;
      const made = await make();
      if (dir && 'objects' in made) await store(dir, key, made);
      return made;
    })();
    memory.set(key, p);
    // a failure is not remembered: the next asker renders again
    p.then((r) => 'failed' in r && memory.get(key) === p && memory.delete(key), () => memory.get(key) === p && memory.delete(key));
  }
  return p;
}

const fileOf = (dir: string, key: string) => path.join(dir, 'renders', `${key}.json`);

async function readStored(dir: string, key: string): Promise<Success | undefined> {
  try {
    // nothing larger than lastgood writes is read (the folder is shared with whatever else is on the volume)
    if ((await fs.stat(fileOf(dir, key))).size > 2 * MAX_STORED_BYTES) return undefined;
    const data = JSON.parse(await fs.readFile(fileOf(dir, key), 'utf8')) as { output?: unknown; exactOutput?: unknown; notes?: unknown };
    if (typeof data.output !== 'string' || typeof data.exactOutput !== 'boolean' || !Array.isArray(data.notes)) return undefined;
    return { objects: parseObjects(splitDocuments(data.output)), output: data.output, exactOutput: data.exactOutput, notes: data.notes.map(String) };
  } catch {
    // absent, unreadable or half-written by a process that died: rendered again
    return undefined;
  }
}

/** Written beside, then renamed: a reader sees a whole file or none. A failure to write costs only the next render. */
async function store(dir: string, key: string, r: Success): Promise<void> {
  if (Buffer.byteLength(r.output) > MAX_STORED_BYTES) return;
  const file = fileOf(dir, key);
  try {
    await fs.mkdir(path.dirname(file), { recursive: true });
    const tmp = `${file}.${process.pid}.tmp`;
    await fs.writeFile(tmp, JSON.stringify({ output: r.output, exactOutput: r.exactOutput, notes: r.notes }));
    await fs.rename(tmp, file);
    await prune(path.dirname(file));
  } catch {
    // a full or read-only disk: the render stands, it is only not kept
  }
}

async function prune(folder: string): Promise<void> {
  const names = (await fs.readdir(folder)).filter((n) => n.endsWith('.json'));
  if (names.length <= MAX_STORED_FILES) return;
  const aged = await Promise.all(names.map(async (n) => ({ n, t: (await fs.stat(path.join(folder, n)).catch(() => undefined))?.mtimeMs ?? 0 })));
  aged.sort((a, b) => a.t - b.t);
  for (const { n } of aged.slice(0, names.length - MAX_STORED_FILES)) await fs.rm(path.join(folder, n), { force: true });
}
