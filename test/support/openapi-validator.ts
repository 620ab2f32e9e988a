import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

/**
 * A compact validator for GitHub's OpenAPI 3.0 description (`@octokit/openapi`), covering the
 * subset of JSON Schema the description uses: $ref, type, nullable, enum, properties, required,
 * additionalProperties, items, allOf/anyOf/oneOf, min/max(Length|Items|imum), pattern, and the
 * `date-time` / `uri` formats. Every check returns messages ("$.head.repo.owner: required …");
 * an empty list means valid.
 */

export type Schema = Record<string, unknown>;
export interface OpenApiDocument {
  paths: Record<string, Record<string, Operation>>;
  components: Record<string, Record<string, unknown>>;
}
export interface Operation {
  operationId: string;
  parameters?: Array<Schema>;
  requestBody?: { required?: boolean; content?: Record<string, { schema?: Schema }> };
  responses: Record<string, Schema>;
}

let cached: OpenApiDocument | undefined;

/** GitHub's published description of api.github.com, parsed once per process. */
export function gitHubOpenApi(): OpenApiDocument {
  if (!cached) {
    const require = createRequire(import.meta.url);
    const dir = path.dirname(require.resolve('@octokit/openapi/package.json'));
    cached = JSON.parse(readFileSync(path.join(dir, 'generated', 'api.github.com.json'), 'utf8')) as OpenApiDocument;
  }
  return cached;
}

/** Follows `#/components/...` references (chains included). */
export function resolveRef<T = Schema>(doc: OpenApiDocument, node: unknown): T {
  let current = node as Schema;
  for (let hops = 0; current && typeof current.$ref === 'string'; hops++) {
    if (hops > 50) throw new Error(`$ref loop at ${current.$ref}`);
    const parts = (current.$ref as string).replace(/^#\//, '').split('/');
    let target: unknown = doc;
    for (const p of parts) target = (target as Record<string, unknown> | undefined)?.[p.replace(/~1/g, '/').replace(/~0/g, '~')];
    if (target === undefined) throw new Error(`unresolved $ref ${current.$ref}`);
    current = target as Schema;
  }
  return current as T;
}

const typeOf = (v: unknown): string => (v === null ? 'null' : Array.isArray(v) ? 'array' : Number.isInteger(v) ? 'integer' : typeof v);

export function validateSchema(doc: OpenApiDocument, schemaNode: unknown, value: unknown, at = '$'): string[] {
  const schema = resolveRef(doc, schemaNode);
  if (!schema || typeof schema !== 'object') return [];
  const errors: string[] = [];

  if (value === null) {
    if (schema.nullable === true) return [];
    // an untyped schema with no constraints accepts null; a typed one needs `nullable`
    if (schema.type !== undefined || schema.properties !== undefined || schema.enum !== undefined) {
      if (Array.isArray(schema.enum) && schema.enum.includes(null)) return [];
      return [`${at}: null is not allowed (not nullable)`];
    }
  }

  if (Array.isArray(schema.allOf)) {
    for (const sub of schema.allOf) errors.push(...validateSchema(doc, sub, value, at));
  }
  if (Array.isArray(schema.anyOf)) {
    const results = schema.anyOf.map((sub) => validateSchema(doc, sub, value, at));
    if (!results.some((r) => r.length === 0)) errors.push(`${at}: matches none of anyOf (${results.map((r) => r[0]).join(' | ')})`);
  }
  if (Array.isArray(schema.oneOf)) {
    const results = schema.oneOf.map((sub) => validateSchema(doc, sub, value, at));
    const matching = results.filter((r) => r.length === 0).length;
    if (matching === 0) errors.push(`${at}: matches none of oneOf (${results.map((r) => r[0]).join(' | ')})`);
    else if (matching > 1) errors.push(`${at}: matches ${matching} schemas of oneOf, exactly one is allowed`);
  }

  if (Array.isArray(schema.enum) && !schema.enum.some((e) => e === value)) {
    errors.push(`${at}: ${JSON.stringify(value)} is not one of ${JSON.stringify(schema.enum)}`);
  }

  const type = schema.type as string | undefined;
  const actual = typeOf(value);
  if (type) {
    const ok = type === actual || (type === 'number' && actual === 'integer');
    if (!ok) {
      errors.push(`${at}: expected ${type}${schema.nullable ? ' or null' : ''}, got ${actual}`);
      return errors;
    }
  }

  if (actual === 'string') {
    const s = value as string;
    if (typeof schema.minLength === 'number' && s.length < schema.minLength) errors.push(`${at}: shorter than ${schema.minLength}`);
    if (typeof schema.maxLength === 'number' && s.length > schema.maxLength) errors.push(`${at}: longer than ${schema.maxLength}`);
    if (typeof schema.pattern === 'string' && !new RegExp(schema.pattern, 'u').test(s)) errors.push(`${at}: does not match /${schema.pattern}/`);
    if (schema.format === 'date-time' && !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(s)) errors.push(`${at}: not an ISO 8601 date-time: ${JSON.stringify(s)}`);
    if (schema.format === 'uri' && !URL.canParse(s)) errors.push(`${at}: not a URI: ${JSON.stringify(s)}`);
  }
  if (actual === 'integer' || actual === 'number') {
    const n = value as number;
    if (typeof schema.minimum === 'number' && n < schema.minimum) errors.push(`${at}: below minimum ${schema.minimum}`);
    if (typeof schema.maximum === 'number' && n > schema.maximum) errors.push(`${at}: above maximum ${schema.maximum}`);
  }
  if (actual === 'array') {
    const items = value as unknown[];
    if (typeof schema.minItems === 'number' && items.length < schema.minItems) errors.push(`${at}: fewer than ${schema.minItems} items`);
    if (typeof schema.maxItems === 'number' && items.length > schema.maxItems) errors.push(`${at}: more than ${schema.maxItems} items`);
    if (schema.items) items.forEach((item, i) => errors.push(...validateSchema(doc, schema.items, item, `${at}[${i}]`)));
  }
  if (actual === 'object') {
    const obj = value as Record<string, unknown>;
    const properties = (schema.properties ?? {}) as Record<string, unknown>;
    for (const key of (schema.required as string[] | undefined) ?? []) {
      if (!(key in obj)) errors.push(`${at}: required property "${key}" is missing`);
    }
    for (const [key, v] of Object.entries(obj)) {
      if (key in properties) errors.push(...validateSchema(doc, properties[key], v, `${at}.${key}`));
      else if (schema.additionalProperties === false) errors.push(`${at}: unexpected property "${key}"`);
      else if (schema.additionalProperties && typeof schema.additionalProperties === 'object') {
        errors.push(...validateSchema(doc, schema.additionalProperties, v, `${at}.${key}`));
      }
    }
  }
  return errors;
}

export interface OperationMatch {
  method: string;
  template: string;
  operation: Operation;
  /** decoded path parameters */
  params: Record<string, string>;
}

/** Parameters whose values contain "/" (sent encoded by Octokit as %2F, or raw): matched greedily. */
const SLASHY = new Set(['ref', 'path', 'basehead']);

interface CompiledPath {
  template: string;
  regex: RegExp;
  names: string[];
  literal: number;
}

/** Each description's path templates, compiled once per process (an emulator starts per test; GitHub's has ~1,000 paths). */
const compiledPaths = new WeakMap<OpenApiDocument, CompiledPath[]>();

export class OpenApiValidator {
  readonly doc: OpenApiDocument;
  private readonly compiled: CompiledPath[];

  constructor(doc: OpenApiDocument = gitHubOpenApi()) {
    this.doc = doc;
    let compiled = compiledPaths.get(doc);
    if (!compiled) compiledPaths.set(doc, (compiled = compilePaths(doc)));
    this.compiled = compiled;
  }

  /** The operation for a method and raw (still percent-encoded) path; the most specific template wins. */
  findOperation(method: string, rawPath: string): OperationMatch | undefined {
    const m = method.toLowerCase();
    let best: { c: CompiledPath; groups: string[] } | undefined;
    for (const c of this.compiled) {
      if (!this.doc.paths[c.template]?.[m]) continue;
      const found = c.regex.exec(rawPath);
      if (found && (!best || c.literal > best.c.literal)) best = { c, groups: found.slice(1) };
    }
    if (!best) return undefined;
    const params: Record<string, string> = {};
    best.c.names.forEach((name, i) => (params[name] = decodeURIComponent(best.groups[i] ?? '')));
    return { method: m, template: best.c.template, operation: this.doc.paths[best.c.template]![m]!, params };
  }

  /** A value against a named component schema, e.g. "basic-error". */
  validateResponseSchema(name: string, value: unknown): string[] {
    return validateSchema(this.doc, { $ref: `#/components/schemas/${name}` }, value, `$<${name}>`);
  }

  /** Path and query parameters, and the JSON body, against the operation's description. */
  validateRequest(match: OperationMatch, query: URLSearchParams, body: unknown): string[] {
    const errors: string[] = [];
    const where = `${match.method.toUpperCase()} ${match.template}`;
    const parameters = (match.operation.parameters ?? []).map((p) => resolveRef<Schema & { name: string; in: string; required?: boolean; schema?: Schema }>(this.doc, p));
    const known = new Set<string>();
    for (const p of parameters) {
      if (p.in === 'path') {
        errors.push(...validateSchema(this.doc, p.schema, coerce(this.doc, p.schema, match.params[p.name] ?? ''), `${where} path.${p.name}`));
      } else if (p.in === 'query') {
        known.add(p.name);
        const raw = query.get(p.name);
        if (raw === null) {
          if (p.required) errors.push(`${where}: required query parameter "${p.name}" is missing`);
          continue;
        }
        errors.push(...validateSchema(this.doc, p.schema, coerce(this.doc, p.schema, raw), `${where} query.${p.name}`));
      }
    }
    for (const name of query.keys()) {
      if (!known.has(name)) errors.push(`${where}: unknown query parameter "${name}"`);
    }
    const requestBody = match.operation.requestBody ? resolveRef<NonNullable<Operation['requestBody']>>(this.doc, match.operation.requestBody) : undefined;
    const schema = requestBody?.content?.['application/json']?.schema;
    if (body === undefined) {
      if (requestBody?.required) errors.push(`${where}: a request body is required`);
    } else if (!schema) {
      errors.push(`${where}: the operation takes no JSON body`);
    } else {
      errors.push(...validateSchema(this.doc, schema, body, `${where} body`));
    }
    return errors;
  }

  /** The response status must be described for the operation, and a JSON body must match its schema. */
  validateResponse(match: OperationMatch, status: number, body: unknown): string[] {
    const where = `${match.method.toUpperCase()} ${match.template} → ${status}`;
    const described = match.operation.responses[String(status)] ?? match.operation.responses.default;
    if (!described) return [`${where}: status ${status} is not described for this operation`];
    const response = resolveRef<{ content?: Record<string, { schema?: Schema }> }>(this.doc, described);
    const schema = response.content?.['application/json']?.schema ?? response.content?.['application/scim+json']?.schema;
    // some error statuses are described without a body, yet GitHub sends its usual error object
    if (!schema) return body === undefined || body === '' ? [] : validateSchema(this.doc, { $ref: '#/components/schemas/basic-error' }, body, `${where} body<basic-error>`);
    return validateSchema(this.doc, schema, body, `${where} body`);
  }
}

/** Query and path values arrive as strings: convert them to what the parameter's schema types. */
function coerce(doc: OpenApiDocument, schemaNode: unknown, raw: string): unknown {
  const schema = resolveRef(doc, schemaNode);
  switch (schema?.type) {
    case 'integer':
    case 'number':
      return /^-?\d+(\.\d+)?$/.test(raw) ? Number(raw) : raw;
    case 'boolean':
      return raw === 'true' ? true : raw === 'false' ? false : raw;
    case 'array':
      return raw.split(',');
    default:
      return raw;
  }
}

function compilePaths(doc: OpenApiDocument): CompiledPath[] {
  return Object.keys(doc.paths).map((template) => {
    const names: string[] = [];
    // parameters the description marks as spanning segments (e.g. tree_sha) are greedy too
    const multi = new Set(
      Object.values(doc.paths[template] ?? {})
        .flatMap((op) => (Array.isArray(op?.parameters) ? op.parameters : []))
        .map((p) => resolveRef<Schema & { name: string }>(doc, p))
        .filter((p) => p['x-multi-segment'] === true)
        .map((p) => p.name),
    );
    const source = template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{([^}]+)\}/g, (_, name: string) => {
      names.push(name);
      return SLASHY.has(name) || multi.has(name) ? '(.+)' : '([^/]+)';
    });
    return { template, regex: new RegExp(`^${source}$`), names, literal: template.replace(/\{[^}]+\}/g, '').length };
  });
}
