import { readFile } from 'node:fs/promises';
import { isMap, isSeq, LineCounter, parseDocument, visit, type Document, type Node } from 'yaml';
import type { z } from 'zod';
import { ConfigError } from '../errors.ts';
import { readTextWithin } from '../read-within.ts';
import { ConfigSchema, type Config } from './schema.ts';

/** Reads and validates lastgood.yaml. Every problem is a ConfigError naming the file, the field and the line. */
export async function loadConfig(file: string): Promise<Config> {
  let text: string | undefined;
  try {
    text = readTextWithin(file, CONFIG_BOUNDS.maxBytes);
  } catch (error) {
    throw new ConfigError(`cannot read the config: ${(error as NodeJS.ErrnoException).code ?? error}`, { file, cause: error });
  }
  if (text === undefined) throw tooLarge(file);
  return parseConfig(text, file);
}

/**
 * The bounds of lastgood.yaml (README, docs/security.md). The config is modelled with its lines
 * (the `yaml` library's Document, for errors that name the line), which costs about 1 KB a node:
 * a flow list of one-character scalars is the most nodes per byte, and 1 MiB of it would need
 * about 500 MB, past the controller's heap. Nodes are counted before parsing, as the separators
 * that can start one (`,` `:` `-` `[` `{` and line breaks: at least one per node); a config of
 * thousands of targets has a few tens of thousands.
 */
export const CONFIG_BOUNDS = { maxBytes: 1 << 20, maxSeparators: 200_000 } as const;

const tooLarge = (file: string) => new ConfigError(`the config is larger than ${CONFIG_BOUNDS.maxBytes >> 20} MiB, the most lastgood reads as lastgood.yaml`, { file });

/** The line where the text's separators pass the bound, or undefined within it. */
function lineBeyondSeparators(text: string): number | undefined {
  const separator = /[,:\-[{\n]/g;
  let count = 0;
  while (separator.exec(text)) {
    if (++count > CONFIG_BOUNDS.maxSeparators) {
      const at = separator.lastIndex;
      let line = 1;
      for (let i = text.indexOf('\n'); i >= 0 && i < at - 1; i = text.indexOf('\n', i + 1)) line++;
      return line;
    }
  }
  return undefined;
}

/** How many alias expansions a config may need: a real config has a few anchors, a bomb has millions. */
const MAX_ALIAS_COUNT = 1000;

/** What `lastgood validate` says of a config that loaded: the file and its targets. */
export function validSummary(file: string, config: Pick<Config, 'targets'>): string {
  return `${file}: valid (${config.targets.length} target${config.targets.length === 1 ? '' : 's'}: ${config.targets.map((t) => t.name).join(', ')})\n`;
}

export function parseConfig(text: string, file: string): Config {
  // a string's length counts UTF-16 units: at most the bytes of its UTF-8 form
  if (text.length > CONFIG_BOUNDS.maxBytes && Buffer.byteLength(text) > CONFIG_BOUNDS.maxBytes) throw tooLarge(file);
  const beyond = lineBeyondSeparators(text);
  if (beyond !== undefined) throw new ConfigError(`more than ${CONFIG_BOUNDS.maxSeparators.toLocaleString('en')} YAML nodes by here (counted as the separators that start one: , : - [ { and line breaks), the most lastgood models in a config`, { file, line: beyond });
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter });
  const yamlError = doc.errors[0];
  if (yamlError) {
    const line = yamlError.linePos?.[0]?.line;
    throw new ConfigError(`not valid YAML: ${yamlError.message.split('\n')[0]}`, { file, line, cause: yamlError });
  }
  let data: unknown;
  try {
    // a YAML alias bomb ("billion laughs") stops at the alias limit instead of eating the memory
    data = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
  } catch (error) {
    throw new ConfigError(`cannot read the YAML: ${error instanceof Error ? error.message : String(error)} (more than ${MAX_ALIAS_COUNT} alias expansions are refused)`, { file, line: firstAliasLine(doc, lineCounter), cause: error });
  }
  if (data === null || data === undefined) throw new ConfigError('the config is empty', { file });
  const result = ConfigSchema.safeParse(data);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const field = formatPath(issue.path);
  // an unknown field is named at its own line, not its mapping's
  const line = issue.code === 'unrecognized_keys' && issue.keys[0] !== undefined ? lineOf(doc, [...issue.path, issue.keys[0]], lineCounter, { key: true }) : lineOf(doc, issue.path, lineCounter);
  throw new ConfigError(`${field ? `${field}: ` : ''}${describeIssue(issue)}`, { file, line, cause: result.error });
}

function describeIssue(issue: z.core.$ZodIssue): string {
  if (issue.code === 'unrecognized_keys') return `unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => JSON.stringify(k)).join(', ')}`;
  if (issue.code === 'invalid_type' && /received undefined/.test(issue.message)) return `required field is missing (expected ${issue.expected})`;
  return issue.message;
}

function formatPath(path: PropertyKey[]): string {
  return path.reduce<string>((acc, key) => (typeof key === 'number' ? `${acc}[${key}]` : acc ? `${acc}.${String(key)}` : String(key)), '');
}

function firstAliasLine(doc: Document, lc: LineCounter): number | undefined {
  let offset: number | undefined;
  visit(doc, {
    Alias(_, node) {
      offset = node.range?.[0];
      return visit.BREAK;
    },
  });
  return offset === undefined ? undefined : lc.linePos(offset).line;
}

/**
 * The line of a field in a config file (e.g. ["repo", "url"]), for errors found after loading
 * (an unsupported repo.url). Undefined when the file cannot be read or parsed.
 */
export async function configFieldLine(file: string, path: PropertyKey[]): Promise<number | undefined> {
  try {
    const lineCounter = new LineCounter();
    const doc = parseDocument(await readFile(file, 'utf8'), { lineCounter });
    return lineOf(doc, path, lineCounter);
  } catch {
    return undefined;
  }
}

/** The line of the deepest node that exists along `path` (the parent when the field is missing). */
/** `key`: the line of the last field's key (an unknown field), not of its value (a value on the next lines). */
function lineOf(doc: Document, path: PropertyKey[], lc: LineCounter, opts: { key?: boolean } = {}): number | undefined {
  let node: unknown = doc.contents;
  let found: Node | undefined = doc.contents ?? undefined;
  for (const [i, key] of path.entries()) {
    if (isMap(node)) {
      const pair = node.items.find((p) => (p.key as { value?: unknown } | null)?.value === key);
      if (!pair) break;
      found = (pair.key as Node) ?? found;
      node = pair.value;
      if (opts.key && i === path.length - 1) break;
      if (node && typeof node === 'object' && 'range' in node) found = node as Node;
    } else if (isSeq(node) && typeof key === 'number') {
      node = node.items[key];
      if (!node) break;
      found = node as Node;
    } else break;
  }
  const offset = found?.range?.[0];
  return offset === undefined ? undefined : lc.linePos(offset).line;
}
