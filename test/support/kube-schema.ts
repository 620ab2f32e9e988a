import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import jsyaml from 'js-yaml';

/**
 * CustomResourceDefinitions for the Kubernetes emulator (kube-emulator.ts): reading CRD YAML into
 * resource types, and a validator for their structural `openAPIV3Schema` that behaves like the API
 * server's: wrong types, missing required fields, enum and format violations are errors; fields
 * the schema does not know are pruned (and reported, so a strict caller can refuse them); `null` in
 * a field that is not `nullable` is pruned; `default`s are filled in.
 *
 * Checked: type, properties, required, items, additionalProperties, enum, nullable, format
 * (date-time and date only), pattern, min/max Length/Items/Properties, minimum/maximum,
 * allOf/anyOf/oneOf/not, x-kubernetes-preserve-unknown-fields, x-kubernetes-int-or-string,
 * x-kubernetes-embedded-resource. Not checked: x-kubernetes-validations (CEL), list-type/map keys
 * uniqueness, metadata beyond what the emulator itself checks.
 */

export interface Schema {
  type?: 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean';
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  additionalProperties?: Schema | boolean;
  enum?: unknown[];
  nullable?: boolean;
  format?: string;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  minProperties?: number;
  maxProperties?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: boolean;
  exclusiveMaximum?: boolean;
  default?: unknown;
  allOf?: Schema[];
  anyOf?: Schema[];
  oneOf?: Schema[];
  not?: Schema;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-embedded-resource'?: boolean;
}

/** One served group/version/kind and how the API server treats it. */
export interface ResourceType {
  group: string;
  version: string;
  kind: string;
  listKind: string;
  /** the URL segment, e.g. "canaries" */
  plural: string;
  singular: string;
  namespaced: boolean;
  shortNames: string[];
  /** a `status` subresource: the main endpoint ignores status, `/status` changes only status */
  statusSubresource: boolean;
  /** defined by a CRD: schema-checked, no strategic merge patch, list items keep apiVersion/kind */
  custom: boolean;
  /** metadata.generation is kept and bumped on spec changes */
  generation: boolean;
  schema?: Schema;
  /** where the definition came from (CRD file), for messages */
  source?: string;
}

export function apiVersionOf(t: Pick<ResourceType, 'group' | 'version'>): string {
  return t.group ? `${t.group}/${t.version}` : t.version;
}

interface CrdDocument {
  kind?: string;
  spec?: {
    group: string;
    scope: 'Namespaced' | 'Cluster';
    names: { kind: string; listKind?: string; plural: string; singular?: string; shortNames?: string[] };
    versions: Array<{ name: string; served: boolean; schema?: { openAPIV3Schema?: Schema }; subresources?: { status?: object } }>;
  };
}

const PARSED = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../node_modules/.cache/lastgood-crds');

/**
 * A CRD file's documents, as js-yaml reads them, kept as JSON under node_modules/.cache by the
 * hash of the file's text: the fixtures' 2.6 MB of CRD YAML take js-yaml ~0.4 s of CPU, their
 * JSON ~12 ms, and each test process that starts the Kubernetes emulator reads them. Kept only
 * when the JSON reads back equal to what js-yaml gave (a YAML timestamp would come back a string).
 */
function crdDocuments(file: string): CrdDocument[] {
  const text = readFileSync(file, 'utf8');
  const cached = path.join(PARSED, `${createHash('sha256').update(text).digest('hex')}.json`);
  try {
    return JSON.parse(readFileSync(cached, 'utf8')) as CrdDocument[];
  } catch {
    // not cached yet (or a torn write, which the rename below prevents): parse the YAML
  }
  const docs = jsyaml.loadAll(text) as CrdDocument[];
  const json = JSON.stringify(docs);
  if (isDeepStrictEqual(JSON.parse(json), docs)) {
    mkdirSync(PARSED, { recursive: true });
    const temporary = `${cached}.${process.pid}.tmp`;
    writeFileSync(temporary, json);
    renameSync(temporary, cached);
  }
  return docs;
}

/** Each file's types, read once per process: emulators and checks in one test process share them. */
const loaded = new Map<string, ResourceType[]>();

/** The served versions of every CRD in the given YAML files (multi-document files allowed). Shared: never change the result. */
export function loadCrds(files: readonly string[]): ResourceType[] {
  return files.flatMap((file) => {
    let types = loaded.get(file);
    if (!types) loaded.set(file, (types = crdTypesIn(file)));
    return types;
  });
}

function crdTypesIn(file: string): ResourceType[] {
  const types: ResourceType[] = [];
  for (const doc of crdDocuments(file)) {
    if (!doc || doc.kind !== 'CustomResourceDefinition' || !doc.spec) continue;
    const { group, scope, names } = doc.spec;
    for (const v of doc.spec.versions) {
      if (!v.served) continue;
      types.push({
        group, version: v.name, kind: names.kind, listKind: names.listKind ?? `${names.kind}List`,
        plural: names.plural, singular: names.singular ?? names.kind.toLowerCase(), namespaced: scope === 'Namespaced',
        shortNames: names.shortNames ?? [], statusSubresource: v.subresources?.status !== undefined, custom: true, generation: true,
        ...(v.schema?.openAPIV3Schema ? { schema: v.schema.openAPIV3Schema } : {}), source: file,
      });
    }
  }
  return types;
}

/** A field error as the API server words it in a Status `details.causes` entry. */
export interface FieldError {
  reason: 'FieldValueRequired' | 'FieldValueInvalid' | 'FieldValueTypeInvalid' | 'FieldValueNotSupported' | 'FieldValueTooLong' | 'FieldValueTooMany';
  field: string;
  message: string;
}

export interface CheckResult {
  /** the object after pruning and defaulting */
  value: Record<string, unknown>;
  errors: FieldError[];
  /** paths of fields dropped because the schema does not know them */
  unknown: string[];
}

const PRUNE = Symbol('prune');

/** Validate a whole custom object against its CRD schema (metadata, apiVersion and kind are left to the caller). */
export function checkObject(schema: Schema, obj: Record<string, unknown>): CheckResult {
  const ctx: Ctx = { errors: [], unknown: [], prune: true };
  // metadata is the emulator's to check (name, namespace); the CRD may only constrain name.
  const root = { ...schema, properties: { ...schema.properties, metadata: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } } satisfies Schema;
  const value = walk(root, obj, '', ctx);
  return { value: (value === PRUNE ? {} : value) as Record<string, unknown>, errors: ctx.errors, unknown: ctx.unknown };
}

/** Validate a value against a (sub)schema; no pruning. Path as the API server writes it ("status.conditions[0].type"). */
export function checkValue(schema: Schema, value: unknown, path = ''): FieldError[] {
  const ctx: Ctx = { errors: [], unknown: [], prune: false };
  walk(schema, value, path, ctx);
  return ctx.errors;
}

/** "status.x: Invalid value: ...", as in a 422 message. */
export function describe(e: FieldError): string {
  return `${e.field}: ${e.message}`;
}

interface Ctx {
  errors: FieldError[];
  unknown: string[];
  /** prune unknown and null fields and fill defaults (false inside allOf/anyOf/oneOf/not) */
  prune: boolean;
}

function shown(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (v === null) return '"null"';
  if (Array.isArray(v)) return '"array"';
  if (typeof v === 'object') return '"object"';
  return String(v);
}

function typeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

function typeMatches(type: NonNullable<Schema['type']>, v: unknown): boolean {
  const actual = typeOf(v);
  return actual === type || (type === 'number' && actual === 'integer');
}

function join(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}

function walk(s: Schema, v: unknown, path: string, ctx: Ctx): unknown {
  const fail = (reason: FieldError['reason'], message: string) => ctx.errors.push({ reason, field: path || '<root>', message });
  if (v === null) {
    if (s.nullable) return v;
    // The API server prunes nulls in fields that are not nullable, before defaulting and validation.
    if (ctx.prune) return PRUNE;
    if (s.type || s['x-kubernetes-int-or-string']) fail('FieldValueTypeInvalid', `Invalid value: "null": ${path} in body must be of type ${s.type ?? 'int-or-string'}: "null"`);
    return v;
  }
  if (s['x-kubernetes-int-or-string']) {
    const t = typeOf(v);
    if (t !== 'integer' && t !== 'string') {
      fail('FieldValueTypeInvalid', `Invalid value: ${shown(v)}: ${path} in body must be of type integer,string: ${shown(v)}`);
      return v;
    }
  } else if (s.type && !typeMatches(s.type, v)) {
    fail('FieldValueTypeInvalid', `Invalid value: ${shown(v)}: ${path} in body must be of type ${s.type}: ${shown(v)}`);
    return v;
  }

  let out = v;
  // Value-validation subschemas (inside oneOf etc.) often carry only `required`: walk those too.
  if (typeof v === 'object' && !Array.isArray(v) && (!ctx.prune || s.type === 'object' || s.properties || s.additionalProperties || s['x-kubernetes-preserve-unknown-fields'])) {
    out = walkObject(s, v as Record<string, unknown>, path, ctx);
  } else if (Array.isArray(v)) {
    out = v.map((item, i) => {
      if (!s.items) return item;
      const at = `${path}[${i}]`;
      if (item === null && !s.items.nullable) {
        ctx.errors.push({ reason: 'FieldValueTypeInvalid', field: at, message: `Invalid value: "null": ${at} in body must be of type ${s.items.type ?? 'object'}: "null"` });
        return item;
      }
      return walk(s.items, item, at, ctx);
    });
    if (s.minItems !== undefined && v.length < s.minItems) fail('FieldValueInvalid', `Invalid value: ${v.length}: ${path} in body should have at least ${s.minItems} items`);
    if (s.maxItems !== undefined && v.length > s.maxItems) fail('FieldValueTooMany', `Too many: ${v.length}: must have at most ${s.maxItems} items`);
  } else if (typeof v === 'string') {
    const length = [...v].length;
    if (s.minLength !== undefined && length < s.minLength) fail('FieldValueInvalid', `Invalid value: ${shown(v)}: ${path} in body should be at least ${s.minLength} chars long`);
    if (s.maxLength !== undefined && length > s.maxLength) fail('FieldValueTooLong', `Too long: may not be more than ${s.maxLength} bytes`);
    if (s.pattern !== undefined && !matches(s.pattern, v)) fail('FieldValueInvalid', `Invalid value: ${shown(v)}: ${path} in body should match '${s.pattern}'`);
    if (s.format && !formatOk(s.format, v)) fail('FieldValueInvalid', `Invalid value: ${shown(v)}: ${path} in body must be of type ${s.format}: ${shown(v)}`);
  } else if (typeof v === 'number') {
    if (s.minimum !== undefined && (s.exclusiveMinimum ? v <= s.minimum : v < s.minimum)) fail('FieldValueInvalid', `Invalid value: ${v}: ${path} in body should be greater than or equal to ${s.minimum}`);
    if (s.maximum !== undefined && (s.exclusiveMaximum ? v >= s.maximum : v > s.maximum)) fail('FieldValueInvalid', `Invalid value: ${v}: ${path} in body should be less than or equal to ${s.maximum}`);
  }

  if (s.enum && !s.enum.some((e) => equalJson(e, v))) {
    fail('FieldValueNotSupported', `Unsupported value: ${shown(v)}: supported values: ${s.enum.map((e) => shown(e)).join(', ')}`);
  }
  const sub = (schemas: Schema[]) => schemas.map((x) => checkValue(x, out, path));
  if (s.allOf) for (const errs of sub(s.allOf)) ctx.errors.push(...errs);
  if (s.anyOf && !s['x-kubernetes-int-or-string']) {
    const results = sub(s.anyOf);
    if (!results.some((r) => r.length === 0)) fail('FieldValueInvalid', `Invalid value: ${shown(v)}: ${path} in body must validate at least one schema (anyOf): ${results.flat().map(describe).join('; ')}`);
  }
  if (s.oneOf) {
    const passing = sub(s.oneOf).filter((r) => r.length === 0).length;
    if (passing !== 1) fail('FieldValueInvalid', `Invalid value: ${shown(v)}: ${path} in body must validate one and only one schema (oneOf), ${passing} matched`);
  }
  if (s.not && checkValue(s.not, out, path).length === 0) fail('FieldValueInvalid', `Invalid value: ${shown(v)}: ${path} in body should not validate the schema (not)`);
  return out;
}

function walkObject(s: Schema, v: Record<string, unknown>, path: string, ctx: Ctx): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const keepUnknown = s['x-kubernetes-preserve-unknown-fields'] === true || s.additionalProperties === true;
  const embedded = s['x-kubernetes-embedded-resource'] === true;
  for (const [key, value] of Object.entries(v)) {
    const child = s.properties?.[key] ?? (typeof s.additionalProperties === 'object' ? s.additionalProperties : undefined);
    const at = join(path, key);
    if (child) {
      const r = walk(child, value, at, ctx);
      if (r !== PRUNE) out[key] = r;
    } else if (keepUnknown || (embedded && ['apiVersion', 'kind', 'metadata'].includes(key))) {
      out[key] = value;
    } else if (ctx.prune) {
      // A null carries nothing (e.g. a pod template's `creationTimestamp: null`): dropped without a word.
      if (value !== null) ctx.unknown.push(at);
    } else {
      out[key] = value;
    }
  }
  if (ctx.prune) {
    for (const [key, child] of Object.entries(s.properties ?? {})) {
      if (!(key in out) && child.default !== undefined) out[key] = structuredClone(child.default);
    }
  }
  for (const key of s.required ?? []) {
    if (!(key in out)) ctx.errors.push({ reason: 'FieldValueRequired', field: join(path, key), message: 'Required value' });
  }
  const count = Object.keys(out).length;
  if (s.minProperties !== undefined && count < s.minProperties) ctx.errors.push({ reason: 'FieldValueInvalid', field: path, message: `Invalid value: ${count}: ${path} in body should have at least ${s.minProperties} properties` });
  if (s.maxProperties !== undefined && count > s.maxProperties) ctx.errors.push({ reason: 'FieldValueTooMany', field: path, message: `Too many: ${count}: must have at most ${s.maxProperties} items` });
  return out;
}

const patterns = new Map<string, RegExp | null>();
function matches(pattern: string, v: string): boolean {
  if (!patterns.has(pattern)) {
    try {
      patterns.set(pattern, new RegExp(pattern, 'u'));
    } catch {
      patterns.set(pattern, null); // an RE2 construct JavaScript lacks: not checked
    }
  }
  const re = patterns.get(pattern);
  return re ? re.test(v) : true;
}

// Loose, as the brief asks: only the time formats are checked (the API server also knows int32, byte, ...).
function formatOk(format: string, v: string): boolean {
  if (format === 'date-time') return /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:?\d{2})$/.test(v) && !Number.isNaN(Date.parse(v));
  if (format === 'date') return /^\d{4}-\d{2}-\d{2}$/.test(v);
  return true;
}

export function equalJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => equalJson(x, b[i]));
  const ak = Object.keys(a);
  const bo = b as Record<string, unknown>;
  return ak.length === Object.keys(bo).length && ak.every((k) => k in bo && equalJson((a as Record<string, unknown>)[k], bo[k]));
}

interface OpenApiV2 {
  $ref?: string;
  type?: Schema['type'];
  format?: string;
  enum?: unknown[];
  required?: string[];
  properties?: Record<string, OpenApiV2>;
  items?: OpenApiV2;
  additionalProperties?: OpenApiV2 | boolean;
  'x-kubernetes-group-version-kind'?: Array<{ group: string; version: string; kind: string }>;
}

/**
 * The built-in kinds' schemas from Kubernetes' OpenAPI (v2) definitions
 * (fixtures/kubernetes/builtin-definitions.yaml), keyed by "apiVersion/kind": the checks kubectl's
 * `--validate=strict` makes (unknown fields, types, required fields, enums), which is all the API
 * server's OpenAPI says of a built-in kind. A `$ref` becomes the same Schema object (the graph may
 * be cyclic; the walk follows the value, which is finite). `int-or-string` and resource quantities
 * take an integer or a string, as the API server decodes them; defaults are left out (the server's
 * defaulting of built-ins is Go code, not the OpenAPI's).
 */
export function loadBuiltinSchemas(file: string): Map<string, Schema> {
  const { definitions } = jsyaml.load(readFileSync(file, 'utf8')) as { definitions: Record<string, OpenApiV2> };
  const byName = new Map(Object.keys(definitions).map((name) => [name, {} as Schema]));
  const intOrString = (name: string) => name === 'io.k8s.apimachinery.pkg.util.intstr.IntOrString' || name === 'io.k8s.apimachinery.pkg.api.resource.Quantity';
  const convert = (o: OpenApiV2): Schema => {
    if (o.$ref) {
      const target = byName.get(o.$ref.replace('#/definitions/', ''));
      if (!target) throw new Error(`${file}: ${o.$ref} is not defined`);
      return target;
    }
    if (o.format === 'int-or-string') return { 'x-kubernetes-int-or-string': true };
    const s: Schema = {};
    if (o.type) s.type = o.type;
    if (o.format === 'date-time') s.format = o.format;
    if (o.enum) s.enum = o.enum;
    if (o.required) s.required = o.required;
    if (o.properties) s.properties = Object.fromEntries(Object.entries(o.properties).map(([k, v]) => [k, convert(v)]));
    if (o.items) s.items = convert(o.items);
    if (o.additionalProperties !== undefined) s.additionalProperties = typeof o.additionalProperties === 'boolean' ? o.additionalProperties : convert(o.additionalProperties);
    // a definition with no type and no properties (RawExtension, JSON) takes anything
    if (!o.type && !o.properties) s['x-kubernetes-preserve-unknown-fields'] = true;
    return s;
  };
  const out = new Map<string, Schema>();
  for (const [name, def] of Object.entries(definitions)) {
    Object.assign(byName.get(name)!, intOrString(name) ? { 'x-kubernetes-int-or-string': true } : convert(def));
    for (const gvk of def['x-kubernetes-group-version-kind'] ?? []) out.set(`${apiVersionOf(gvk)}/${gvk.kind}`, byName.get(name)!);
  }
  return out;
}
