import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import jsYaml from 'js-yaml';
import { InputError } from '../errors.ts';
import { scrubDeep } from '../scrub.ts';
import { checkStatusTimes } from './times.ts';
import type { KubeObject, Observed } from './types.ts';

/**
 * observe/snapshot: objects from files, folders and stdin ("-"), as `kubectl get -o yaml|json`
 * prints them: YAML or JSON, multi-document, `kind: List`. js-yaml reads (fast on large dumps);
 * `json: true` makes a duplicate key keep the last value instead of failing, as the API server does.
 *
 * Outside text stops here: every string of every object is scrubbed of secrets and bounded
 * (src/scrub.ts), and every status time must parse (a time ahead of the clock is the engine's to
 * refuse, for every door alike: observe/times.ts clockRefusal). No objects at all is bad input: an empty snapshot would make every resource NotFound.
 */
export async function readSnapshots(paths: string[], opts: { stdin?: NodeJS.ReadableStream } = {}): Promise<Observed[]> {
  const out: Observed[] = [];
  const files: string[] = [];
  for (const p of paths) {
    if (p === '-') {
      files.push('stdin');
      out.push(...parseSnapshot(await readStream(opts.stdin ?? process.stdin), '-'));
      continue;
    }
    const expanded = await expand(p);
    files.push(...(expanded.length ? expanded : [`${p} (no .yaml, .yml or .json files)`]));
    for (const file of expanded) out.push(...parseSnapshot(await readFile(file, 'utf8'), file));
  }
  if (out.length === 0 && paths.length > 0) {
    const one = paths.length === 1 && paths[0] !== '-' && files.length <= 1;
    throw new InputError(`no Kubernetes objects in ${one ? 'the snapshot' : files.join(', ')}: nothing to judge (an empty snapshot would make every resource NotFound)`, one ? { file: paths[0]! } : {});
  }
  return out;
}

const SNAPSHOT_FILE = /\.(ya?ml|json)$/i;

async function expand(p: string): Promise<string[]> {
  let info;
  try {
    info = await stat(p);
  } catch (error) {
    throw new InputError(`cannot read snapshot: ${(error as NodeJS.ErrnoException).code ?? error}`, { file: p, cause: error });
  }
  if (!info.isDirectory()) return [p];
  const entries = await readdir(p, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile() && SNAPSHOT_FILE.test(e.name))
    .map((e) => path.join(e.parentPath, e.name))
    .sort();
}

async function readStream(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks).toString('utf8');
}

/** Parses one file's text into objects; `source` names the file in errors. */
export function parseSnapshot(text: string, source: string): Observed[] {
  try {
    return objectsOf(text, source);
  } catch (error) {
    // Upstream test data is sometimes a Go template ({{ .ns }}); read its placeholders as plain words.
    if (!GO_PLACEHOLDER.test(text)) throw error;
    try {
      return objectsOf(text.replace(GO_PLACEHOLDER_ALL, '$1'), source);
    } catch {
      throw error;
    }
  }
}

const GO_PLACEHOLDER = /\{\{-?\s*\.?([\w.]+)\s*-?\}\}/;
const GO_PLACEHOLDER_ALL = new RegExp(GO_PLACEHOLDER.source, 'g');

function objectsOf(text: string, source: string): Observed[] {
  let docs: unknown[];
  try {
    docs = loadAll(text);
  } catch (error) {
    throw yamlError(error, source);
  }
  const out: Observed[] = [];
  docs.forEach((doc, index) => collect(doc, source, index, out));
  return out;
}

function loadAll(text: string): unknown[] {
  return jsYaml.loadAll(text, null, { json: true }).filter((d) => d !== null && d !== undefined);
}

function yamlError(error: unknown, source: string): InputError {
  const mark = (error as { mark?: { line?: number } }).mark;
  const reason = (error as { reason?: string }).reason ?? (error as Error).message;
  return new InputError(`cannot parse as YAML or JSON: ${reason}`, { file: source, line: mark?.line !== undefined ? mark.line + 1 : undefined, cause: error });
}

function collect(doc: unknown, source: string, index: number, out: Observed[]): void {
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
    throw new InputError(`document ${index + 1} is not a Kubernetes object`, { file: source });
  }
  const o = doc as Record<string, unknown>;
  if (typeof o.kind === 'string' && /List$/.test(o.kind) && Array.isArray(o.items)) {
    for (const item of o.items) collect(item, source, index, out);
    return;
  }
  const metadata = o.metadata as Record<string, unknown> | undefined;
  if (typeof o.apiVersion !== 'string' || typeof o.kind !== 'string' || typeof metadata?.name !== 'string') {
    throw new InputError(`document ${index + 1} is not a Kubernetes object (apiVersion, kind and metadata.name are required)`, { file: source });
  }
  if (metadata.namespace !== undefined && typeof metadata.namespace !== 'string') {
    throw new InputError(`document ${index + 1}: metadata.namespace is not a string`, { file: source });
  }
  const object = scrubDeep(o) as unknown as KubeObject;
  checkStatusTimes(object, source, `document ${index + 1} (${object.kind} ${typeof metadata.namespace === 'string' ? `${metadata.namespace}/` : ''}${object.metadata.name})`);
  out.push({ object, source });
}
