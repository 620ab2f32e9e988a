import { readFileSync } from 'node:fs';
import {
  buildClientSchema,
  getNamedType,
  graphql,
  GraphQLError,
  isObjectType,
  parse,
  validate,
  type DocumentNode,
  type GraphQLFieldResolver,
  type GraphQLSchema,
  type IntrospectionQuery,
} from 'graphql';

/**
 * The GraphQL side of the GitHub emulator: every document a client sends is parsed and validated
 * against GitHub's published schema (@octokit/graphql-schema's introspection result, built with
 * graphql-js's `buildClientSchema`; its SDL file has duplicate fields and is refused by
 * `buildSchema`), then executed by graphql-js against resolvers the emulator supplies. So aliases,
 * fragments, variables, abstract types and the serial execution of mutations behave as the
 * specification says, and a field GitHub does not have fails validation.
 *
 * On top of the schema, GitHub's own rules (docs "Rate limits and query limits for the GraphQL
 * API"): every connection needs `first` or `last` between 1 and 100. A field the schema has but the
 * emulator does not implement is a violation too (the test learns that the emulator must grow).
 *
 * Errors come back as GitHub sends them: HTTP 200, `data` with what succeeded, and
 * `errors: [{ type, path, locations, message }]` (@octokit/graphql turns them into a
 * GraphqlResponseError carrying both).
 */

let cachedSchema: GraphQLSchema | undefined;

/**
 * The schema is read when a test first asks GitHub a GraphQL question: the package's own entry
 * point parses its 5 MB schema.json twice and builds a schema at import (its `validate`), ~0.5 s of
 * CPU in every test file that only starts the emulator. Its schema.json is read here instead.
 */
export function gitHubGraphQLSchema(): GraphQLSchema {
  if (!cachedSchema) {
    const file = new URL('./schema.json', import.meta.resolve('@octokit/graphql-schema'));
    const raw = JSON.parse(readFileSync(file, 'utf8')) as { data?: IntrospectionQuery } & IntrospectionQuery;
    cachedSchema = buildClientSchema(raw.data ?? raw);
  }
  return cachedSchema;
}

/**
 * A query parsed and validated against GitHub's schema, once per query text per process: the
 * backend sends the same few queries thousands of times, and validating one against a schema of
 * GitHub's size is most of what the emulator spends on a request. (Both depend on the text and
 * the schema only; graphql-js does not change a document it executes.)
 */
const checkedBySchema = new WeakMap<GraphQLSchema, Map<string, { document: DocumentNode; invalid: readonly GraphQLError[] }>>();

function checkedDocument(schema: GraphQLSchema, query: string): { document: DocumentNode; invalid: readonly GraphQLError[] } {
  let bySchema = checkedBySchema.get(schema);
  if (!bySchema) checkedBySchema.set(schema, (bySchema = new Map()));
  let found = bySchema.get(query);
  if (!found) {
    const document = parse(query);
    bySchema.set(query, (found = { document, invalid: validate(schema, document) }));
  }
  return found;
}

/** An error a resolver throws to answer as GitHub does: `type` is GitHub's (NOT_FOUND, FORBIDDEN, UNPROCESSABLE, STALE_DATA…). */
export class GitHubGraphQLError extends Error {
  readonly type: string;
  constructor(type: string, message: string) {
    super(message);
    this.type = type;
  }
}

export interface GraphQLReply {
  status: number;
  body: { data?: unknown; errors?: Array<Record<string, unknown>> };
}

export interface GraphQLRequestInfo {
  /** the operation's kind: a mutation is a write (pacing, permissions) */
  kind: 'query' | 'mutation' | 'invalid';
  /** top-level fields, e.g. ["repository"] or ["createRef", "createCommitOnBranch"] */
  fields: string[];
}

/** Tells what a document asks for without executing it (for the request log). */
export function describeDocument(query: string): GraphQLRequestInfo {
  try {
    const doc = parse(query);
    const op = doc.definitions.find((d) => d.kind === 'OperationDefinition');
    if (!op || op.kind !== 'OperationDefinition') return { kind: 'invalid', fields: [] };
    const fields = op.selectionSet.selections.flatMap((s) => (s.kind === 'Field' ? [s.name.value] : []));
    return { kind: op.operation === 'mutation' ? 'mutation' : 'query', fields };
  } catch {
    return { kind: 'invalid', fields: [] };
  }
}

/**
 * Executes one GraphQL request body against `root` (the Query and Mutation fields the emulator
 * implements; nested objects are plain objects whose properties are values or functions of the
 * field's arguments). Schema violations and unemulated fields go to `violations`.
 */
export async function executeGraphQL(rawBody: string, root: Record<string, unknown>, violations: string[]): Promise<GraphQLReply> {
  let request: { query?: unknown; variables?: unknown; operationName?: unknown };
  try {
    request = JSON.parse(rawBody) as typeof request;
  } catch {
    violations.push('graphql: the body is not JSON');
    return { status: 400, body: { errors: [{ message: 'Problems parsing JSON' }] } };
  }
  if (typeof request.query !== 'string') {
    violations.push('graphql: no query in the body');
    return { status: 200, body: { errors: [{ message: 'A query attribute must be specified and must be a string.' }] } };
  }
  const schema = gitHubGraphQLSchema();
  let checked;
  try {
    checked = checkedDocument(schema, request.query);
  } catch (error) {
    violations.push(`graphql: the document does not parse: ${(error as Error).message}`);
    return { status: 200, body: { errors: [{ message: (error as Error).message }] } };
  }
  const { document, invalid } = checked;
  if (invalid.length > 0) {
    violations.push(...invalid.map((e) => `graphql: ${e.message}`));
    return { status: 200, body: { errors: invalid.map((e) => ({ path: [], locations: e.locations, message: e.message, extensions: { code: 'schemaViolation' } })) } };
  }

  const fieldResolver: GraphQLFieldResolver<unknown, unknown> = (source, args, context, info) => {
    const named = getNamedType(info.returnType);
    if (isObjectType(named) && named.name.endsWith('Connection')) {
      const { first, last } = args as { first?: number; last?: number };
      const ok = (n: number | undefined) => n !== undefined && n >= 1 && n <= 100;
      if (!ok(first) && !ok(last)) violations.push(`graphql: ${info.parentType.name}.${info.fieldName} needs first or last between 1 and 100 (GitHub's node limit)`);
    }
    if (source === null || source === undefined) return null;
    const object = source as Record<string, unknown>;
    if (!(info.fieldName in object)) {
      violations.push(`graphql: ${info.parentType.name}.${info.fieldName} is not emulated`);
      return null;
    }
    const value = object[info.fieldName];
    return typeof value === 'function' ? (value as (a: unknown, c: unknown) => unknown).call(object, args, context) : value;
  };

  const result = await graphql({
    schema,
    source: request.query,
    rootValue: root,
    variableValues: (request.variables ?? {}) as Record<string, unknown>,
    ...(typeof request.operationName === 'string' ? { operationName: request.operationName } : {}),
    fieldResolver,
  });
  const errors = result.errors?.map((e: GraphQLError) => {
    const original = e.originalError;
    if (original && !(original instanceof GitHubGraphQLError)) violations.push(`graphql: emulator error at ${e.path?.join('.')}: ${original.stack ?? original.message}`);
    if (!original) violations.push(`graphql: ${e.message}`); // variable coercion and other request errors
    return { type: original instanceof GitHubGraphQLError ? original.type : 'INTERNAL', path: e.path ?? [], locations: e.locations ?? [], message: e.message };
  });
  return { status: 200, body: { data: result.data ?? null, ...(errors && errors.length ? { errors } : {}) } };
}

/** A connection as GitHub shapes it: `nodes`, `edges`, `totalCount`, `pageInfo`, sliced by `first`/`last`. */
export function connection<T>(all: T[], args: { first?: number; last?: number }): Record<string, unknown> {
  const slice = args.first !== undefined ? all.slice(0, args.first) : args.last !== undefined ? all.slice(Math.max(0, all.length - args.last)) : all;
  return {
    nodes: slice,
    edges: slice.map((node, i) => ({ node, cursor: Buffer.from(`cursor:${i}`).toString('base64') })),
    totalCount: all.length,
    pageInfo: { hasNextPage: slice.length < all.length && args.first !== undefined, hasPreviousPage: false, startCursor: null, endCursor: null },
  };
}
