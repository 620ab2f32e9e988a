import jsYaml from 'js-yaml';
import { InputError } from './errors.ts';

/**
 * YAML from a repository or a snapshot, read within bounds (issue 35). js-yaml is the fast reader,
 * but it has no bound on aliases: `&a [x, x, …]`, `&b [*a, *a, …]` … is a kilobyte that parses in
 * milliseconds into a graph that shares its nodes, and whatever walks the result afterwards (the
 * image search, a digest, a copy) visits it expanded: 9^9 nodes, gigabytes. The `yaml` library
 * bounds this with `maxAliasCount`; here the same bound is measured on js-yaml's result, only when
 * the text holds an alias at all (GitOps YAML rarely does): the size of the document once
 * expanded, counted over the shared graph without expanding it.
 */

/** The bounds, stated in docs/security.md ("Bounds on what is read"). */
export const YAML_BOUNDS = {
  /** one file: a kustomization, a values file or a manifest larger than this is refused */
  maxBytes: 8 << 20,
  /** nodes of one file once its aliases are expanded (every mapping, sequence and scalar counts) */
  maxExpandedNodes: 1_000_000,
} as const;

/** A file beyond a bound: refused with the file and line named, before anything walks it (exit 2). */
export class YamlBoundError extends InputError {
  constructor(what: string, opts: { where?: string; line?: number } = {}) {
    super(what, { ...(opts.where ? { file: opts.where } : {}), ...(opts.line ? { line: opts.line } : {}) });
  }
}

export interface ReadOptions {
  /** the file, for the refusal (its path in the repository, or the snapshot's name) */
  where?: string;
  schema?: jsYaml.Schema;
  json?: boolean;
  /** another bound on the text's size (a snapshot file holds many objects: observe/snapshot.ts bounds it) */
  maxBytes?: number;
}

// an alias token (YAML 1.2 §6.9.2 `*name`) after a separator: a mention of `*` inside a plain
// scalar such as "a*b" does not match; a quoted "*x" may, which costs only the measurement
const ALIAS = /(?:^|[\s[{,:?-])\*[^\s,[\]{}]/m;

export function loadYaml(text: string, opts: ReadOptions = {}): unknown {
  checkSize(text, opts);
  const doc = jsYaml.load(text, loadOptions(opts));
  checkExpansion([doc], text, opts.where);
  return doc;
}

export function loadAllYaml(text: string, opts: ReadOptions = {}): unknown[] {
  checkSize(text, opts);
  const docs = jsYaml.loadAll(text, null, loadOptions(opts));
  checkExpansion(docs, text, opts.where);
  return docs;
}

/**
 * A file's document, or `onError(first line of the parse error)` where it does not parse: the
 * readers that take a bad file as "does not parse" (a bound's refusal is still thrown).
 */
export function loadYamlOr<T>(content: Uint8Array | string, onError: (message: string) => T, where?: string): unknown {
  try {
    return loadYaml(typeof content === 'string' ? content : Buffer.from(content).toString('utf8'), where ? { where } : {});
  } catch (error) {
    rethrowBound(error);
    return onError((error as Error).message.split('\n')[0]!);
  }
}

/** Rethrows a bound's refusal from a reader that otherwise reads a bad file as "does not parse". */
export function rethrowBound(error: unknown): void {
  if (error instanceof YamlBoundError) throw error;
}

function loadOptions(opts: ReadOptions): jsYaml.LoadOptions {
  return { ...(opts.schema ? { schema: opts.schema } : {}), ...(opts.json ? { json: true } : {}) };
}

function checkSize(text: string, opts: ReadOptions): void {
  const max = opts.maxBytes ?? YAML_BOUNDS.maxBytes;
  // a string's length counts UTF-16 units: at most the bytes of its UTF-8 form, so this never refuses a file within the bound
  if (text.length > max) {
    throw new YamlBoundError(`${mib(Buffer.byteLength(text))} of YAML, more than lastgood reads from one file (${mib(max)})`, { ...(opts.where ? { where: opts.where } : {}) });
  }
}

function checkExpansion(docs: unknown[], text: string, where: string | undefined): void {
  const alias = ALIAS.exec(text);
  if (!alias) return;
  const sizes = new Map<object, number>();
  let total = 0;
  for (const doc of docs) {
    total += expandedSize(doc, sizes, new Set());
    if (total > YAML_BOUNDS.maxExpandedNodes) {
      const line = text.slice(0, alias.index + alias[0].indexOf('*')).split('\n').length;
      throw new YamlBoundError(
        `its aliases expand to more than ${YAML_BOUNDS.maxExpandedNodes.toLocaleString('en-US')} nodes (from the alias on line ${line} on): refused as a resource-exhaustion attack, as the yaml library's maxAliasCount does`,
        { ...(where ? { where } : {}), line },
      );
    }
  }
}

/** Nodes of `value` expanded, each shared node's size computed once; a node inside itself is unbounded. */
function expandedSize(value: unknown, sizes: Map<object, number>, open: Set<object>): number {
  if (value === null || typeof value !== 'object') return 1;
  const known = sizes.get(value);
  if (known !== undefined) return known;
  if (open.has(value)) return Infinity;
  open.add(value);
  let size = 1;
  const children = Array.isArray(value) ? value : Object.values(value as Record<string, unknown>);
  for (const child of children) {
    size += expandedSize(child, sizes, open);
    if (size > YAML_BOUNDS.maxExpandedNodes) break;
  }
  open.delete(value);
  sizes.set(value, size);
  return size;
}

const mib = (bytes: number) => `${(bytes / (1 << 20)).toFixed(bytes < 1 << 20 ? 2 : 0)} MiB`;
