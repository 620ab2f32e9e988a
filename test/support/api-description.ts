import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import yaml from 'js-yaml';
import { OpenApiValidator, resolveRef, type OpenApiDocument, type Operation, type Schema } from './openapi-validator.ts';

/**
 * The published API descriptions of the git hosts, as kept in fixtures/host-api/ (see SOURCES.md
 * there: where each was copied from, at which commit, under which terms), loaded for the
 * OpenApiValidator that checks GitHub's emulator.
 *
 * The validator reads OpenAPI 3; Swagger 2.0 descriptions (Gitea's, GitLab's, Azure DevOps') are
 * converted on load: `in: body` parameters become the request body, the other parameters get a
 * `schema`, responses' `schema` goes under `content`, and the base path is put in front of every
 * path. Swagger 2.0 cannot say that a value may be null, and neither Gitea's nor GitLab's
 * generator marks it (`x-nullable`), while both hosts send null for absent values: in a converted
 * description every schema is nullable unless it says `x-nullable: false`.
 */

const here = path.dirname(fileURLToPath(import.meta.url));
export const HOST_API_DIR = path.resolve(here, '../../fixtures/host-api');

type Swagger2 = {
  swagger: '2.0';
  basePath?: string;
  paths: Record<string, Record<string, unknown>>;
  definitions?: Record<string, Schema>;
  parameters?: Record<string, Schema>;
  responses?: Record<string, Schema>;
};

const METHODS = new Set(['get', 'put', 'post', 'delete', 'patch', 'head', 'options']);
const SCHEMA_KEYS = ['type', 'format', 'enum', 'items', 'minimum', 'maximum', 'minLength', 'maxLength', 'pattern', 'default', 'collectionFormat'];

/** Every schema object below `node` made nullable (Swagger 2.0 has no way to say it; see above). */
function nullableEverywhere(node: unknown, seen = new Set<unknown>()): void {
  if (!node || typeof node !== 'object' || seen.has(node)) return;
  seen.add(node);
  if (Array.isArray(node)) {
    for (const x of node) nullableEverywhere(x, seen);
    return;
  }
  const o = node as Record<string, unknown>;
  if ((typeof o.type === 'string' || o.properties || o.items) && o['x-nullable'] !== false) o.nullable = true;
  for (const v of Object.values(o)) nullableEverywhere(v, seen);
}

function fromSwagger2(doc: Swagger2): OpenApiDocument {
  const base = (doc.basePath ?? '').replace(/\/+$/, '');
  const paths: Record<string, Record<string, Operation>> = {};
  const resolveParam = (p: Schema) => (typeof p.$ref === 'string' ? resolveRef<Schema>(doc as unknown as OpenApiDocument, p) : p);
  for (const [template, item] of Object.entries(doc.paths)) {
    const shared = ((item.parameters as Schema[] | undefined) ?? []).map(resolveParam);
    const out: Record<string, Operation> = {};
    for (const [method, raw] of Object.entries(item)) {
      if (!METHODS.has(method)) continue;
      const op = raw as Operation & { parameters?: Schema[]; responses: Record<string, Schema>; consumes?: string[] };
      const params = [...shared, ...(op.parameters ?? []).map(resolveParam)];
      const byName = new Map(params.map((p) => [`${p.in}:${p.name}`, p]));
      const parameters: Schema[] = [];
      let requestBody: Operation['requestBody'];
      const form: Record<string, Schema> = {};
      const formRequired: string[] = [];
      for (const p of byName.values()) {
        if (p.in === 'body') requestBody = { required: Boolean(p.required), content: { 'application/json': { schema: p.schema as Schema } } };
        else if (p.in === 'formData') {
          form[p.name as string] = Object.fromEntries(SCHEMA_KEYS.filter((k) => k in p).map((k) => [k, p[k]]));
          if (p.required) formRequired.push(p.name as string);
        } else parameters.push({ name: p.name, in: p.in, required: Boolean(p.required), schema: p.schema ?? Object.fromEntries(SCHEMA_KEYS.filter((k) => k in p).map((k) => [k, p[k]])) });
      }
      if (!requestBody && Object.keys(form).length) {
        requestBody = { required: formRequired.length > 0, content: { 'application/json': { schema: { type: 'object', properties: form, required: formRequired } } } };
      }
      const responses: Record<string, Schema> = {};
      for (const [status, r] of Object.entries(op.responses ?? {})) {
        const resolved = resolveRef<Schema>(doc as unknown as OpenApiDocument, r);
        responses[status] = resolved.schema ? { description: resolved.description, content: { 'application/json': { schema: resolved.schema } } } : { description: resolved.description };
      }
      out[method] = { ...op, operationId: op.operationId ?? `${method} ${template}`, parameters, ...(requestBody ? { requestBody } : {}), responses } as Operation;
    }
    paths[`${base}${template}`] = out;
  }
  // an excerpt (GitLab's) names definitions it does not carry: those are not checked (accept anything)
  const definitions = { ...(doc.definitions ?? {}) };
  for (const m of JSON.stringify(doc.paths).matchAll(/"#\/definitions\/([^"]+)"/g)) definitions[m[1]!] ??= {};
  const converted = { ...doc, definitions, paths, components: { schemas: definitions } } as unknown as OpenApiDocument;
  nullableEverywhere((converted as unknown as { definitions?: unknown }).definitions);
  nullableEverywhere(paths);
  return converted;
}

/** An OpenAPI 3 description whose paths are relative to its server's path (Bitbucket's "/2.0", "/rest"): the server path goes in front. */
function withServerPath(doc: OpenApiDocument & { servers?: Array<{ url: string }> }, serverPath: string | undefined): OpenApiDocument {
  if (!serverPath) return doc;
  const paths: OpenApiDocument['paths'] = {};
  for (const [template, item] of Object.entries(doc.paths)) paths[`${serverPath}${template}`] = item;
  return { ...doc, paths };
}

const cache = new Map<string, OpenApiDocument>();

/**
 * A host's description from fixtures/host-api/, ready for OpenApiValidator. `serverPath` puts an
 * OpenAPI 3 description's paths under the path the emulator serves them at.
 */
export function hostApiDescription(file: string, opts: { serverPath?: string } = {}): OpenApiDocument {
  const key = `${file}|${opts.serverPath ?? ''}`;
  let doc = cache.get(key);
  if (!doc) {
    const text = readFileSync(path.join(HOST_API_DIR, file), 'utf8').replace(/^\uFEFF/, '');
    const raw = (file.endsWith('.json') ? JSON.parse(text) : yaml.load(text)) as Record<string, unknown>;
    doc = raw.swagger === '2.0' ? fromSwagger2(raw as unknown as Swagger2) : withServerPath(raw as unknown as OpenApiDocument, opts.serverPath);
    cache.set(key, doc);
  }
  return doc;
}

export function hostApiValidator(file: string, opts: { serverPath?: string } = {}): OpenApiValidator {
  return new OpenApiValidator(hostApiDescription(file, opts));
}
