import http from 'node:http';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { KubeConfig } from '@kubernetes/client-node';
import jsyaml from 'js-yaml';
import { keepAliveAsHosts } from './http-keepalive.ts';
import { PatchError, jsonPatch, mergePatch } from './kube-patch.ts';
import { apiVersionOf, checkObject, describe, equalJson, loadBuiltinSchemas, loadCrds, type FieldError, type ResourceType } from './kube-schema.ts';
import { SelectorError, fieldsMatch, labelsMatch, parseFieldSelector, parseLabelSelector, type FieldRequirement, type LabelRequirement } from './kube-select.ts';

/**
 * A Kubernetes API server emulator for tests, on 127.0.0.1 (random port), spoken to by the real
 * `@kubernetes/client-node` through a kubeconfig file it writes (http, bearer token checked).
 *
 *   const kube = await startKubeEmulator();            // all CRDs in fixtures/crds
 *   const kc = kube.kubeConfig();                       // a KubeConfig read from kube.kubeconfigPath
 *   kube.apply(canary);                                 // seed (schema-checked, strict; throws KubeApiError)
 *   kube.setStatus(canary, { phase: 'Failed' });        // what a controller's status write does
 *   kube.delete(canary);
 *   kube.dropWatches();                                 // cut every open watch mid-stream
 *   kube.failNext(/canaries\?.*watch=true/, 1, 500);    // the next matching request answers 500
 *   kube.compact();                                     // resuming from an older resourceVersion gets 410
 *   kube.events(); kube.requests(/leases/);
 *   await kube.close();
 *
 * The protocol as the real server speaks it:
 * - discovery (/api, /api/v1, /apis, /apis/<g>, /apis/<g>/<v>, /version) for the built-in kinds
 *   lastgood reads (Pods, Events, ConfigMaps, Namespaces, Deployments, StatefulSets, DaemonSets,
 *   ReplicaSets, Jobs, Leases, events.k8s.io Events) and for every served version of the CRDs;
 * - get/list/create/update/patch/delete, namespaced and cluster-scoped; one global resourceVersion
 *   counter; uid, creationTimestamp, generation (bumped when anything but metadata/status changes);
 *   a no-op update keeps the resourceVersion and sends no event; finalizers hold a delete
 *   (deletionTimestamp) until they are removed;
 * - status subresource: the main endpoint ignores `status` (create drops it), `/status` changes only
 *   status; kinds without one (Application, AnalysisRun, ...) take status on the main endpoint;
 * - optimistic concurrency: a stale metadata.resourceVersion on update/patch is 409 Conflict; create
 *   of an existing name is 409 AlreadyExists; a custom object update without resourceVersion is 422;
 * - patches: merge, JSON patch, strategic merge (as merge; 415 for custom kinds, as the real
 *   server), apply (as merge; creates);
 * - CRD schemas checked on every write (422 Invalid with causes); unknown fields pruned with a
 *   `Warning` header, or 400 under `fieldValidation=Strict`;
 * - list: labelSelector, fieldSelector (the labels the real server allows), limit/continue
 *   (a continue token older than the last compaction is 410); built-in list items carry no
 *   apiVersion/kind, as the real server's do;
 * - watch (`?watch=true` or `/watch/` paths): chunked newline-delimited events from a
 *   resourceVersion (none or "0": the current objects as ADDED first); selectors, with ADDED/DELETED
 *   when an object starts/stops matching; BOOKMARK when `allowWatchBookmarks=true` (every
 *   `bookmarkIntervalMs`, and on `bookmark()`); `timeoutSeconds`; a resourceVersion older than the
 *   last `compact()` is refused with 410 Expired, in-stream as an ERROR event (default, as the watch
 *   cache does) or as an HTTP 410 (`gone: 'status'`).
 *
 * Not emulated: RBAC, admission webhooks, CEL rules, managedFields, namespace cascade, garbage
 * collection, protobuf, aggregated discovery, `sendInitialEvents`, deletecollection; a list ignores
 * `resourceVersion`/`resourceVersionMatch` and serves the newest state.
 */

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  [key: string]: unknown;
}

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  [key: string]: unknown;
}

export interface ObjectRef {
  apiVersion: string;
  kind: string;
  name: string;
  namespace?: string;
}

export interface RequestRecord {
  method: string;
  /** path and query, as received */
  url: string;
  /** 0 while a response is pending */
  status: number;
  watch: boolean;
}

export interface KubeEmulatorOptions {
  /** CRD YAML files to serve (default: every file in fixtures/crds) */
  crds?: string[];
  /** the bearer token the kubeconfig carries and the server demands (default: random) */
  token?: string;
  /** how a watch from a compacted resourceVersion is refused (default 'event') */
  gone?: 'event' | 'status';
  /** BOOKMARK period on watches that allow bookmarks (default: none; `bookmark()` sends one) */
  bookmarkIntervalMs?: number;
  /** namespaces that exist at start (default: default, kube-system) */
  namespaces?: string[];
}

export interface KubeEmulator {
  /** http://127.0.0.1:<port> */
  readonly url: string;
  readonly token: string;
  readonly kubeconfigPath: string;
  /** a KubeConfig loaded from kubeconfigPath; each has its own connection pool */
  kubeConfig(): KubeConfig;
  /** the newest resourceVersion handed out */
  readonly resourceVersion: string;
  /** how a watch from a compacted resourceVersion is refused, from now on */
  gone: 'event' | 'status';

  /**
   * Create or replace (status included) as a test seed; the namespace is created if missing;
   * metadata.generation/uid/creationTimestamp are kept if given. Schema-checked: throws KubeApiError
   * (422) where the server would refuse it, and also (unless `prune`) for fields the server would
   * silently drop, so a seed never loses data unnoticed.
   */
  apply(obj: object, opts?: { prune?: boolean }): KubeObject;
  /** Replace the status (as a controller's status update does: generation unchanged). */
  setStatus(ref: ObjectRef | KubeObject, status: unknown): KubeObject;
  /** Delete (finalizers hold it, as on the server); undefined if it did not exist. */
  delete(ref: ObjectRef | KubeObject): KubeObject | undefined;
  get(ref: ObjectRef | KubeObject): KubeObject | undefined;
  list(apiVersion: string, kind: string, namespace?: string): KubeObject[];
  /** Problems the server would refuse the object for, as "field: message" lines; [] when it would store it. */
  validate(obj: object): string[];
  /** Every Event stored: core v1 and events.k8s.io/v1, oldest first. */
  events(): KubeObject[];
  readonly resourceTypes: readonly ResourceType[];

  /** Cut open watches (default: mid-stream, no final chunk; `graceful`: end the response cleanly). Returns how many. */
  dropWatches(opts?: { graceful?: boolean; match?: RegExp }): number;
  /** The next `times` requests whose path+query matches answer `status` with a Status body. */
  failNext(match: RegExp, times?: number, status?: number, opts?: { method?: string }): void;
  /** Hold the next `times` matching requests (default: all) for `ms` before answering. */
  delay(match: RegExp, ms: number, times?: number): void;
  /** Holds every request matching until `release()` is called (a condition, not a time: the test decides when). */
  hold(match: RegExp): { release(): void };
  /** Forget history up to now: a watch, or a continue token, from an older resourceVersion gets 410. */
  compact(): void;
  /** Send a BOOKMARK now on every watch that allows them. */
  bookmark(): void;
  /** Requests received (path+query matching), oldest first. */
  requests(match?: RegExp): RequestRecord[];
  /** Watches open now (path+query matching). */
  openWatches(match?: RegExp): number;
  close(): Promise<void>;
}

/** A refusal, as the API server's Status object. */
export class KubeApiError extends Error {
  readonly code: number;
  readonly reason: string;
  readonly details: Record<string, unknown> | undefined;
  constructor(code: number, reason: string, message: string, details?: Record<string, unknown>) {
    super(message);
    this.code = code;
    this.reason = reason;
    this.details = details;
  }
  status(): Record<string, unknown> {
    return statusBody(this.code, this.reason, this.message, this.details);
  }
}

export const CRD_DIR = fileURLToPath(new URL('../../fixtures/crds/', import.meta.url));
export const ALL_CRDS: readonly string[] = readdirSync(CRD_DIR).filter((f) => f.endsWith('.yaml')).map((f) => path.join(CRD_DIR, f));

const REASONS: Record<number, string> = {
  400: 'BadRequest', 401: 'Unauthorized', 403: 'Forbidden', 404: 'NotFound', 405: 'MethodNotAllowed', 409: 'Conflict',
  410: 'Expired', 415: 'UnsupportedMediaType', 422: 'Invalid', 429: 'TooManyRequests', 500: 'InternalError', 503: 'ServiceUnavailable', 504: 'Timeout',
};

function statusBody(code: number, reason: string, message: string, details?: Record<string, unknown>): Record<string, unknown> {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, ...(details ? { details } : {}), code };
}

/**
 * Schemas of the built-in kinds lastgood install writes, from Kubernetes' OpenAPI
 * (fixtures/kubernetes/builtin-definitions.yaml); the other built-ins are served unchecked.
 */
const BUILTIN_SCHEMAS = loadBuiltinSchemas(path.join(path.dirname(fileURLToPath(import.meta.url)), '../../fixtures/kubernetes/builtin-definitions.yaml'));

function builtin(group: string, version: string, kind: string, plural: string, namespaced: boolean, statusSubresource: boolean, generation: boolean, shortNames: string[] = []): ResourceType {
  const schema = BUILTIN_SCHEMAS.get(`${group ? `${group}/` : ''}${version}/${kind}`);
  return { group, version, kind, listKind: `${kind}List`, plural, singular: kind.toLowerCase(), namespaced, shortNames, statusSubresource, custom: false, generation, ...(schema ? { schema, source: 'Kubernetes v1.35 OpenAPI' } : {}) };
}

const BUILTINS: ResourceType[] = [
  builtin('', 'v1', 'Namespace', 'namespaces', false, true, false, ['ns']),
  builtin('', 'v1', 'Pod', 'pods', true, true, false, ['po']),
  builtin('', 'v1', 'Event', 'events', true, false, false, ['ev']),
  builtin('', 'v1', 'ConfigMap', 'configmaps', true, false, false, ['cm']),
  builtin('apps', 'v1', 'Deployment', 'deployments', true, true, true, ['deploy']),
  builtin('apps', 'v1', 'StatefulSet', 'statefulsets', true, true, true, ['sts']),
  builtin('apps', 'v1', 'DaemonSet', 'daemonsets', true, true, true, ['ds']),
  builtin('apps', 'v1', 'ReplicaSet', 'replicasets', true, true, true, ['rs']),
  builtin('batch', 'v1', 'Job', 'jobs', true, true, true),
  builtin('coordination.k8s.io', 'v1', 'Lease', 'leases', true, false, false),
  builtin('events.k8s.io', 'v1', 'Event', 'events', true, false, false, ['ev']),
  builtin('', 'v1', 'ServiceAccount', 'serviceaccounts', true, false, false, ['sa']),
  builtin('', 'v1', 'Service', 'services', true, true, false, ['svc']),
  builtin('', 'v1', 'Secret', 'secrets', true, false, false),
  builtin('rbac.authorization.k8s.io', 'v1', 'ClusterRole', 'clusterroles', false, false, false),
  builtin('rbac.authorization.k8s.io', 'v1', 'ClusterRoleBinding', 'clusterrolebindings', false, false, false),
  builtin('rbac.authorization.k8s.io', 'v1', 'Role', 'roles', true, false, false),
  builtin('rbac.authorization.k8s.io', 'v1', 'RoleBinding', 'rolebindings', true, false, false),
  builtin('policy', 'v1', 'PodDisruptionBudget', 'poddisruptionbudgets', true, true, true, ['pdb']),
];

const typeKey = (t: Pick<ResourceType, 'group' | 'version' | 'plural'>) => `${t.group}/${t.version}/${t.plural}`;
const objectKey = (ns: string | undefined, name: string) => `${ns ?? ''}/${name}`;
const now = () => new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
const clone = <T>(v: T): T => structuredClone(v);
const resourceName = (t: ResourceType) => (t.group ? `${t.plural}.${t.group}` : t.plural);
const qualifiedKind = (t: ResourceType) => (t.group ? `${t.kind}.${t.group}` : t.kind);

interface HistoryEntry {
  rv: number;
  typeKey: string;
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  obj: KubeObject;
  prev?: KubeObject;
}

interface Watcher {
  type: ResourceType;
  namespace: string | undefined;
  labels: LabelRequirement[];
  fields: FieldRequirement[];
  bookmarks: boolean;
  url: string;
  res: http.ServerResponse;
  timers: NodeJS.Timeout[];
}

interface Fault {
  match: RegExp;
  method: string | undefined;
  remaining: number;
  status: number;
}

/** How a write arrived: through the API (`api`) or as a test seed; `strict` turns pruned fields into errors. */
interface WriteCtx {
  api: boolean;
  strict: boolean;
  warnings: string[];
}

class Emulator implements KubeEmulator {
  url = '';
  readonly token: string;
  readonly kubeconfigPath: string;
  gone: 'event' | 'status';
  readonly resourceTypes: ResourceType[];

  private readonly dir: string;
  private readonly server: http.Server;
  private readonly bookmarkIntervalMs: number | undefined;
  private readonly byKey = new Map<string, ResourceType>();
  private readonly byKind = new Map<string, ResourceType>();
  private readonly store = new Map<string, Map<string, KubeObject>>();
  private history: HistoryEntry[] = [];
  private rv = 0;
  /** the oldest resourceVersion a watch may resume from */
  private floor = 0;
  private readonly watchers = new Set<Watcher>();
  private readonly faults: Fault[] = [];
  private readonly delays: Array<{ match: RegExp; ms: number; remaining: number }> = [];
  /** responses delay() holds, each with its release */
  private readonly held = new Set<() => void>();
  private readonly gates: Array<{ match: RegExp; open: Promise<void>; released: boolean }> = [];
  private readonly log: RequestRecord[] = [];

  constructor(opts: KubeEmulatorOptions) {
    this.token = opts.token ?? randomBytes(16).toString('hex');
    this.gone = opts.gone ?? 'event';
    this.bookmarkIntervalMs = opts.bookmarkIntervalMs;
    this.resourceTypes = [...BUILTINS, ...loadCrds(opts.crds ?? ALL_CRDS)];
    for (const t of this.resourceTypes) {
      this.byKey.set(typeKey(t), t);
      this.byKind.set(`${apiVersionOf(t)}/${t.kind}`, t);
      this.store.set(typeKey(t), new Map());
    }
    for (const ns of opts.namespaces ?? ['default', 'kube-system']) this.ensureNamespace(ns);
    this.dir = mkdtempSync(path.join(tmpdir(), 'lastgood-kube-'));
    this.kubeconfigPath = path.join(this.dir, 'kubeconfig');
    this.server = http.createServer((req, res) => {
      this.handle(req, res).catch((err: unknown) => {
        if (!res.headersSent) this.sendJson(res, undefined, 500, statusBody(500, 'InternalError', String(err)));
        else res.destroy();
      });
    });
    keepAliveAsHosts(this.server);
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    writeFileSync(this.kubeconfigPath, jsyaml.dump({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'emulator', cluster: { server: this.url, 'insecure-skip-tls-verify': true } }],
      users: [{ name: 'lastgood-test', user: { token: this.token } }],
      contexts: [{ name: 'emulator', context: { cluster: 'emulator', user: 'lastgood-test', namespace: 'default' } }],
      'current-context': 'emulator',
    }), { mode: 0o600 });
  }

  kubeConfig(): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromFile(this.kubeconfigPath);
    return kc;
  }

  get resourceVersion(): string {
    return String(this.rv);
  }

  // ---- test-side API ----

  apply(input: object, opts: { prune?: boolean } = {}): KubeObject {
    const obj = clone(input) as KubeObject;
    const t = this.typeOf(obj);
    const ns = t.namespaced ? obj.metadata?.namespace ?? 'default' : undefined;
    if (ns) this.ensureNamespace(ns);
    const ctx: WriteCtx = { api: false, strict: !opts.prune, warnings: [] };
    const meta = { ...obj.metadata };
    delete meta.resourceVersion;
    delete meta.selfLink;
    delete meta.managedFields;
    const body = { ...obj, metadata: { ...meta, ...(ns ? { namespace: ns } : {}) } };
    return this.current(t, ns, meta.name ?? '')
      ? clone(this.update(t, ns, meta.name ?? '', body, undefined, ctx))
      : clone(this.create(t, ns, body, ctx));
  }

  setStatus(ref: ObjectRef | KubeObject, status: unknown): KubeObject {
    const { t, ns, name } = this.resolve(ref);
    const body = { apiVersion: apiVersionOf(t), kind: t.kind, metadata: { name, ...(ns ? { namespace: ns } : {}) }, status };
    return clone(this.update(t, ns, name, body, 'status', { api: false, strict: true, warnings: [] }));
  }

  delete(ref: ObjectRef | KubeObject): KubeObject | undefined {
    const { t, ns, name } = this.resolve(ref);
    if (!this.current(t, ns, name)) return undefined;
    return clone(this.remove(t, ns, name, undefined).obj);
  }

  get(ref: ObjectRef | KubeObject): KubeObject | undefined {
    const { t, ns, name } = this.resolve(ref);
    const obj = this.current(t, ns, name);
    return obj && clone(obj);
  }

  list(apiVersion: string, kind: string, namespace?: string): KubeObject[] {
    const t = this.typeOf({ apiVersion, kind });
    return [...this.objects(t).values()].filter((o) => namespace === undefined || o.metadata.namespace === namespace).map(clone);
  }

  validate(input: object): string[] {
    const obj = input as KubeObject;
    try {
      const t = this.typeOf(obj);
      const ctx: WriteCtx = { api: false, strict: true, warnings: [] };
      this.admit(t, { ...obj, metadata: { ...obj.metadata, namespace: t.namespaced ? obj.metadata?.namespace ?? 'default' : undefined } }, ctx);
      return [];
    } catch (err) {
      if (!(err instanceof KubeApiError)) throw err;
      const causes = (err.details?.causes as Array<{ field: string; message: string }> | undefined) ?? [];
      return causes.length > 0 ? causes.map((c) => `${c.field}: ${c.message}`) : [err.message];
    }
  }

  events(): KubeObject[] {
    const all = [...this.objects(this.byKind.get('v1/Event')!).values(), ...this.objects(this.byKind.get('events.k8s.io/v1/Event')!).values()];
    return all.sort((a, b) => Number(a.metadata.resourceVersion) - Number(b.metadata.resourceVersion)).map(clone);
  }

  dropWatches(opts: { graceful?: boolean; match?: RegExp } = {}): number {
    let n = 0;
    for (const w of [...this.watchers]) {
      if (opts.match && !opts.match.test(w.url)) continue;
      this.closeWatch(w, !opts.graceful);
      n++;
    }
    return n;
  }

  failNext(match: RegExp, times = 1, status = 500, opts: { method?: string } = {}): void {
    this.faults.push({ match, method: opts.method?.toUpperCase(), remaining: times, status });
  }

  delay(match: RegExp, ms: number, times = Infinity): void {
    this.delays.push({ match, ms, remaining: times });
  }

  hold(match: RegExp): { release(): void } {
    let release!: () => void;
    const gate = { match, open: new Promise<void>((resolve) => (release = resolve)), released: false };
    this.gates.push(gate);
    return {
      release: () => {
        gate.released = true;
        release();
      },
    };
  }

  compact(): void {
    this.floor = this.rv;
    this.history = [];
  }

  bookmark(): void {
    for (const w of this.watchers) if (w.bookmarks) this.sendBookmark(w);
  }

  requests(match?: RegExp): RequestRecord[] {
    return this.log.filter((r) => !match || match.test(r.url)).map((r) => ({ ...r }));
  }

  openWatches(match?: RegExp): number {
    return [...this.watchers].filter((w) => !match || match.test(w.url)).length;
  }

  async close(): Promise<void> {
    // a response held by delay() ends now: its timer would keep the test's process alive for its whole length
    for (const release of [...this.held]) release();
    for (const w of [...this.watchers]) this.closeWatch(w, true);
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    rmSync(this.dir, { recursive: true, force: true });
  }

  // ---- store ----

  private objects(t: ResourceType): Map<string, KubeObject> {
    return this.store.get(typeKey(t))!;
  }

  private current(t: ResourceType, ns: string | undefined, name: string): KubeObject | undefined {
    return this.objects(t).get(objectKey(t.namespaced ? ns : undefined, name));
  }

  private typeOf(obj: { apiVersion?: unknown; kind?: unknown }): ResourceType {
    const t = this.byKind.get(`${String(obj.apiVersion)}/${String(obj.kind)}`);
    if (!t) throw new KubeApiError(404, 'NotFound', `no matches for kind "${String(obj.kind)}" in version "${String(obj.apiVersion)}"`);
    return t;
  }

  private resolve(ref: ObjectRef | KubeObject): { t: ResourceType; ns: string | undefined; name: string } {
    const t = this.typeOf(ref);
    const meta = 'metadata' in ref ? ref.metadata : ref;
    return { t, ns: t.namespaced ? meta.namespace ?? 'default' : undefined, name: meta.name ?? '' };
  }

  private ensureNamespace(ns: string): void {
    const t = this.byKind.get('v1/Namespace')!;
    if (!this.current(t, undefined, ns)) this.create(t, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }, { api: false, strict: true, warnings: [] });
  }

  private record(t: ResourceType, type: HistoryEntry['type'], obj: KubeObject, prev?: KubeObject): void {
    const entry: HistoryEntry = { rv: Number(obj.metadata.resourceVersion), typeKey: typeKey(t), type, obj: clone(obj), ...(prev ? { prev } : {}) };
    this.history.push(entry);
    for (const w of this.watchers) if (typeKey(w.type) === entry.typeKey) this.deliver(w, entry);
  }

  /** Schema and built-in checks; returns the object as it would be stored (pruned, defaulted). */
  private admit(t: ResourceType, obj: KubeObject, ctx: WriteCtx): KubeObject {
    const meta = obj.metadata ?? {};
    const name = meta.name ?? '';
    const errors: FieldError[] = [];
    const nameOk = t.kind === 'Namespace' ? /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(name) && name.length <= 63 : /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(name) && name.length <= 253;
    if (!name) errors.push({ reason: 'FieldValueRequired', field: 'metadata.name', message: 'Required value: name or generateName is required' });
    else if (!nameOk) errors.push({ reason: 'FieldValueInvalid', field: 'metadata.name', message: `Invalid value: ${JSON.stringify(name)}: a lowercase RFC 1123 ${t.kind === 'Namespace' ? 'label' : 'subdomain'} must consist of lower case alphanumeric characters, '-' or '.'` });
    let out = obj;
    if (t.schema) {
      const r = checkObject(t.schema, obj);
      errors.push(...r.errors);
      out = r.value as KubeObject;
      if (r.unknown.length > 0) {
        if (ctx.strict) {
          if (ctx.api) throw new KubeApiError(400, 'BadRequest', `strict decoding error: ${r.unknown.map((u) => `unknown field "${u}"`).join(', ')}`);
          errors.push(...r.unknown.map((u): FieldError => ({ reason: 'FieldValueInvalid', field: u, message: 'unknown field (the server would prune it)' })));
        } else {
          ctx.warnings.push(...r.unknown.map((u) => `unknown field "${u}"`));
        }
      }
    }
    errors.push(...builtinChecks(t, out));
    if (errors.length > 0) {
      const list = errors.map(describe);
      throw new KubeApiError(422, 'Invalid', `${qualifiedKind(t)} "${name}" is invalid: ${list.length === 1 ? list[0] : `[${list.join(', ')}]`}`, {
        name, group: t.group, kind: t.kind, causes: errors.map((e) => ({ reason: e.reason, message: e.message, field: e.field })),
      });
    }
    return out;
  }

  private create(t: ResourceType, ns: string | undefined, body: KubeObject, ctx: WriteCtx): KubeObject {
    checkTypeMeta(t, body);
    const meta: ObjectMeta = { ...body.metadata };
    if (t.namespaced) {
      if (meta.namespace && ns && meta.namespace !== ns) throw new KubeApiError(400, 'BadRequest', 'the namespace of the provided object does not match the namespace sent on the request');
      meta.namespace = ns;
      if (!this.current(this.byKind.get('v1/Namespace')!, undefined, ns!)) throw new KubeApiError(404, 'NotFound', `namespaces "${ns}" not found`, { name: ns, kind: 'namespaces' });
    } else {
      delete meta.namespace;
    }
    if (!meta.name && meta.generateName) meta.name = `${meta.generateName}${randomBytes(4).toString('hex').slice(0, 5)}`;
    if (ctx.api) {
      // The real storage layer refuses this with a plain error, hence a 500.
      if (meta.resourceVersion) throw new KubeApiError(500, 'InternalError', 'resourceVersion should not be set on objects to be created');
      for (const f of ['uid', 'creationTimestamp', 'generation', 'deletionTimestamp'] as const) delete meta[f];
    }
    decodeMicroTimes(t, body);
    let obj: KubeObject = { ...body, metadata: meta };
    if (ctx.api && t.statusSubresource) delete obj.status;
    obj = this.admit(t, obj, ctx);
    const name = obj.metadata.name!;
    if (this.current(t, ns, name)) throw new KubeApiError(409, 'AlreadyExists', `${resourceName(t)} "${name}" already exists`, { name, group: t.group, kind: t.plural });
    if (t.kind === 'Namespace' && obj.status === undefined) obj.status = { phase: 'Active' };
    obj.metadata = {
      ...obj.metadata,
      uid: obj.metadata.uid ?? randomUUID(),
      resourceVersion: String(++this.rv),
      creationTimestamp: obj.metadata.creationTimestamp ?? now(),
      ...(t.generation ? { generation: obj.metadata.generation ?? 1 } : {}),
    };
    this.objects(t).set(objectKey(obj.metadata.namespace, name), obj);
    this.record(t, 'ADDED', obj);
    return obj;
  }

  private update(t: ResourceType, ns: string | undefined, name: string, body: KubeObject, sub: 'status' | undefined, ctx: WriteCtx): KubeObject {
    const old = this.current(t, ns, name);
    if (!old) throw notFound(t, name);
    checkTypeMeta(t, body);
    const bmeta = body.metadata ?? {};
    if (bmeta.name !== undefined && bmeta.name !== name) throw new KubeApiError(400, 'BadRequest', `the name of the object (${bmeta.name}) does not match the name on the URL (${name})`);
    if (t.namespaced && bmeta.namespace !== undefined && bmeta.namespace !== ns) throw new KubeApiError(400, 'BadRequest', 'the namespace of the provided object does not match the namespace sent on the request');
    if (bmeta.resourceVersion !== undefined && bmeta.resourceVersion !== '') {
      if (bmeta.resourceVersion !== old.metadata.resourceVersion) throw conflict(t, name);
    } else if (ctx.api && t.custom) {
      throw new KubeApiError(422, 'Invalid', `${qualifiedKind(t)} "${name}" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update`, {
        name, group: t.group, kind: t.kind, causes: [{ reason: 'FieldValueInvalid', message: 'Invalid value: 0x0: must be specified for an update', field: 'metadata.resourceVersion' }],
      });
    }
    if (bmeta.uid && bmeta.uid !== old.metadata.uid) throw new KubeApiError(409, 'Conflict', `Operation cannot be fulfilled on ${resourceName(t)} "${name}": Precondition failed: UID in precondition: ${bmeta.uid}, UID in object meta: ${old.metadata.uid}`, { name, group: t.group, kind: t.plural });

    decodeMicroTimes(t, body);
    let next: KubeObject;
    if (sub === 'status') {
      next = { ...clone(old) };
      if (body.status === undefined) delete next.status;
      else next.status = clone(body.status);
    } else {
      const system: ObjectMeta = {
        name: old.metadata.name, uid: old.metadata.uid, creationTimestamp: old.metadata.creationTimestamp,
        ...(old.metadata.namespace ? { namespace: old.metadata.namespace } : {}),
        ...(old.metadata.generation !== undefined ? { generation: old.metadata.generation } : {}),
        ...(old.metadata.deletionTimestamp ? { deletionTimestamp: old.metadata.deletionTimestamp } : {}),
      };
      // A test seed may set generation, uid and timestamps; the API may not.
      const keep = ctx.api ? system : { ...system, ...pick(bmeta, ['generation', 'uid', 'creationTimestamp', 'deletionTimestamp']) };
      next = { ...clone(body), metadata: { ...clone(bmeta), ...keep } };
      delete next.metadata.resourceVersion;
      if (ctx.api && t.statusSubresource) {
        if (old.status === undefined) delete next.status;
        else next.status = clone(old.status);
      }
    }
    next = this.admit(t, next, ctx);
    const comparable = (o: KubeObject) => ({ ...o, metadata: { ...o.metadata, resourceVersion: undefined } });
    if (equalJson(JSON.parse(JSON.stringify(comparable(next))), JSON.parse(JSON.stringify(comparable(old))))) return old;
    if (t.generation && (ctx.api || bmeta.generation === undefined) && specChanged(t, old, next)) next.metadata.generation = (old.metadata.generation ?? 0) + 1;
    next.metadata.resourceVersion = String(++this.rv);
    if (next.metadata.deletionTimestamp && (next.metadata.finalizers ?? []).length === 0) {
      this.objects(t).delete(objectKey(next.metadata.namespace, name));
      this.record(t, 'DELETED', next, old);
      return next;
    }
    this.objects(t).set(objectKey(next.metadata.namespace, name), next);
    this.record(t, 'MODIFIED', next, old);
    return next;
  }

  private patch(t: ResourceType, ns: string | undefined, name: string, contentType: string, patch: unknown, sub: 'status' | undefined, ctx: WriteCtx, fieldManager: string | null): KubeObject {
    const old = this.current(t, ns, name);
    const type = contentType.split(';')[0]!.trim();
    if (type === 'application/apply-patch+yaml' && !fieldManager) {
      throw new KubeApiError(400, 'BadRequest', 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch');
    }
    if (!old) {
      if (type !== 'application/apply-patch+yaml') throw notFound(t, name);
      const body = patch as KubeObject;
      return this.create(t, ns, { ...body, metadata: { ...body.metadata, ...(ns ? { namespace: ns } : {}) } }, ctx);
    }
    let patched: unknown;
    try {
      switch (type) {
        case 'application/merge-patch+json':
        case 'application/apply-patch+yaml':
          patched = mergePatch(old, patch);
          break;
        case 'application/strategic-merge-patch+json':
          if (t.custom) throw new KubeApiError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml`);
          patched = mergePatch(old, patch);
          break;
        case 'application/json-patch+json':
          patched = jsonPatch(old, patch);
          break;
        default:
          throw new KubeApiError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml${t.custom ? '' : ', application/strategic-merge-patch+json'}`);
      }
    } catch (err) {
      if (err instanceof PatchError) throw new KubeApiError(422, 'Invalid', `the server rejected our request due to an error in our request: ${err.message}`);
      throw err;
    }
    return this.update(t, ns, name, patched as KubeObject, sub, ctx);
  }

  private remove(t: ResourceType, ns: string | undefined, name: string, preconditions: { resourceVersion?: string; uid?: string } | undefined): { obj: KubeObject; gone: boolean } {
    const old = this.current(t, ns, name);
    if (!old) throw notFound(t, name);
    if (preconditions?.resourceVersion && preconditions.resourceVersion !== old.metadata.resourceVersion) throw conflict(t, name);
    if (preconditions?.uid && preconditions.uid !== old.metadata.uid) {
      throw new KubeApiError(409, 'Conflict', `Operation cannot be fulfilled on ${resourceName(t)} "${name}": Precondition failed: UID in precondition: ${preconditions.uid}, UID in object meta: ${old.metadata.uid}`);
    }
    if ((old.metadata.finalizers ?? []).length > 0) {
      if (old.metadata.deletionTimestamp) return { obj: old, gone: false };
      const next = { ...clone(old), metadata: { ...clone(old.metadata), deletionTimestamp: now(), deletionGracePeriodSeconds: 0, resourceVersion: String(++this.rv) } };
      this.objects(t).set(objectKey(ns && t.namespaced ? ns : undefined, name), next);
      this.record(t, 'MODIFIED', next, old);
      return { obj: next, gone: false };
    }
    const last = { ...clone(old), metadata: { ...clone(old.metadata), resourceVersion: String(++this.rv) } };
    this.objects(t).delete(objectKey(t.namespaced ? ns : undefined, name));
    this.record(t, 'DELETED', last, old);
    return { obj: last, gone: true };
  }

  // ---- watch ----

  private visible(w: Watcher, obj: KubeObject): boolean {
    return (w.namespace === undefined || obj.metadata.namespace === w.namespace) && labelsMatch(w.labels, obj.metadata.labels) && fieldsMatch(w.fields, obj);
  }

  private deliver(w: Watcher, e: HistoryEntry): void {
    const nowVisible = this.visible(w, e.obj);
    const wasVisible = e.prev !== undefined && this.visible(w, e.prev);
    let type: 'ADDED' | 'MODIFIED' | 'DELETED' | undefined;
    if (e.type === 'ADDED') type = nowVisible ? 'ADDED' : undefined;
    else if (e.type === 'DELETED') type = nowVisible || wasVisible ? 'DELETED' : undefined;
    else if (nowVisible) type = wasVisible ? 'MODIFIED' : 'ADDED';
    else if (wasVisible) type = 'DELETED';
    if (type) this.writeEvent(w, type, e.obj);
  }

  private writeEvent(w: Watcher, type: string, obj: unknown): void {
    if (!w.res.writableEnded && !w.res.destroyed) w.res.write(`${JSON.stringify({ type, object: obj })}\n`);
  }

  private sendBookmark(w: Watcher): void {
    this.writeEvent(w, 'BOOKMARK', { kind: w.type.kind, apiVersion: apiVersionOf(w.type), metadata: { resourceVersion: String(this.rv) } });
  }

  private closeWatch(w: Watcher, abrupt: boolean): void {
    this.watchers.delete(w);
    for (const timer of w.timers) clearTimeout(timer);
    // destroy(): the socket closes with no terminating chunk, as when a connection or apiserver dies.
    if (abrupt) w.res.socket?.destroy();
    else w.res.end();
  }

  private watch(t: ResourceType, ns: string | undefined, name: string | undefined, q: URLSearchParams, req: http.IncomingMessage, res: http.ServerResponse, rec: RequestRecord): void {
    const labels = parseLabelSelector(q.get('labelSelector'));
    const fields = parseFieldSelector(q.get('fieldSelector'), `${t.group}/${t.version}/${t.kind}`);
    if (name) fields.push({ path: 'metadata.name', negate: false, value: name });
    const rvParam = q.get('resourceVersion') ?? '';
    let from: number | undefined;
    if (rvParam !== '' && rvParam !== '0') {
      from = Number(rvParam);
      if (!Number.isInteger(from) || from < 0) throw new KubeApiError(400, 'BadRequest', `resourceVersion: Invalid value: "${rvParam}": must be a non-negative integer`);
    }
    const expired = from !== undefined && from < this.floor;
    if (expired && this.gone === 'status') throw new KubeApiError(410, 'Expired', `too old resource version: ${from} (${this.floor})`);
    rec.status = 200;
    res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache, private', 'Transfer-Encoding': 'chunked' });
    res.flushHeaders();
    const w: Watcher = { type: t, namespace: t.namespaced ? ns : undefined, labels, fields, bookmarks: q.get('allowWatchBookmarks') === 'true', url: req.url ?? '', res, timers: [] };
    if (expired) {
      this.writeEvent(w, 'ERROR', statusBody(410, 'Expired', `too old resource version: ${from} (${this.floor})`));
      res.end();
      return;
    }
    if (from === undefined) {
      for (const obj of this.objects(t).values()) if (this.visible(w, obj)) this.writeEvent(w, 'ADDED', obj);
    } else {
      for (const e of this.history) if (e.rv > from && e.typeKey === typeKey(t)) this.deliver(w, e);
    }
    this.watchers.add(w);
    res.on('close', () => {
      this.watchers.delete(w);
      for (const timer of w.timers) clearTimeout(timer);
    });
    const timeout = Number(q.get('timeoutSeconds') ?? '');
    if (timeout > 0) w.timers.push(setTimeout(() => this.closeWatch(w, false), timeout * 1000));
    if (w.bookmarks && this.bookmarkIntervalMs) w.timers.push(setInterval(() => this.sendBookmark(w), this.bookmarkIntervalMs));
  }

  // ---- HTTP ----

  private sendJson(res: http.ServerResponse, rec: RequestRecord | undefined, status: number, body: unknown, headers: Record<string, string | string[]> = {}): void {
    if (rec) rec.status = status;
    const text = JSON.stringify(body);
    res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text), ...headers });
    res.end(text);
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://emulator');
    const method = (req.method ?? 'GET').toUpperCase();
    const rec: RequestRecord = { method, url: req.url ?? '', status: 0, watch: false };
    this.log.push(rec);
    const raw = await readBody(req);

    for (const gate of this.gates) if (!gate.released && gate.match.test(rec.url)) await gate.open;
    const delay = this.delays.find((d) => d.remaining > 0 && d.match.test(rec.url));
    if (delay) {
      delay.remaining--;
      await new Promise<void>((resolve) => {
        const release = () => {
          clearTimeout(timer);
          this.held.delete(release);
          resolve();
        };
        const timer = setTimeout(release, delay.ms);
        this.held.add(release);
      });
    }
    const fault = this.faults.find((f) => f.remaining > 0 && f.match.test(rec.url) && (!f.method || f.method === method));
    if (fault) {
      fault.remaining--;
      const reason = REASONS[fault.status] ?? 'InternalError';
      const headers: Record<string, string> = fault.status === 429 || fault.status === 503 ? { 'Retry-After': '1' } : {};
      this.sendJson(res, rec, fault.status, statusBody(fault.status, reason, `injected fault (${reason})`), headers);
      return;
    }
    if (req.headers.authorization !== `Bearer ${this.token}`) {
      this.sendJson(res, rec, 401, statusBody(401, 'Unauthorized', 'Unauthorized'));
      return;
    }
    try {
      const ctx: WriteCtx = { api: true, strict: url.searchParams.get('fieldValidation') === 'Strict', warnings: [] };
      const result = this.route(method, url, raw, req, res, rec, ctx);
      if (result === undefined) return; // a watch: the response is streaming
      const headers: Record<string, string[]> = ctx.warnings.length > 0 && url.searchParams.get('fieldValidation') !== 'Ignore' ? { Warning: ctx.warnings.map((w) => `299 - ${JSON.stringify(w)}`) } : {};
      this.sendJson(res, rec, result.status, result.body, headers);
    } catch (err) {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      const e = err instanceof KubeApiError ? err
        : err instanceof SelectorError ? new KubeApiError(400, 'BadRequest', `unable to parse requirement: ${err.message}`)
          : new KubeApiError(500, 'InternalError', String(err));
      this.sendJson(res, rec, e.code, e.status());
    }
  }

  private route(method: string, url: URL, raw: string, req: http.IncomingMessage, res: http.ServerResponse, rec: RequestRecord, ctx: WriteCtx): { status: number; body: unknown } | undefined {
    const p = url.pathname.replace(/\/+$/, '');
    const discovery = this.discovery(p);
    if (discovery !== undefined) {
      if (method !== 'GET') throw new KubeApiError(405, 'MethodNotAllowed', `the server does not allow this method on the requested resource`);
      return { status: 200, body: discovery };
    }
    const m = p.match(/^\/api\/(v1)(\/.*)?$/) ?? p.match(/^\/apis\/([^/]+\/[^/]+)(\/.*)?$/);
    if (!m) throw new KubeApiError(404, 'NotFound', 'the server could not find the requested resource');
    const [group, version] = m[1]!.includes('/') ? m[1]!.split('/') as [string, string] : ['', m[1]!];
    const segs = (m[2] ?? '').split('/').filter((s) => s !== '').map(decodeURIComponent);
    let watchPath = false;
    if (segs[0] === 'watch') {
      watchPath = true;
      segs.shift();
    }
    let ns: string | undefined;
    let plural: string | undefined;
    let name: string | undefined;
    let sub: string | undefined;
    if (segs[0] === 'namespaces' && segs.length >= 3 && !(segs.length === 3 && ['status', 'finalize'].includes(segs[2]!))) {
      [, ns, plural, name, sub] = segs;
    } else {
      [plural, name, sub] = segs;
    }
    const t = plural ? this.byKey.get(`${group}/${version}/${plural}`) : undefined;
    if (!t || segs.length > (ns ? 5 : 3)) throw new KubeApiError(404, 'NotFound', 'the server could not find the requested resource');
    if (ns !== undefined && !t.namespaced) throw new KubeApiError(404, 'NotFound', 'the server could not find the requested resource');
    if (t.namespaced && ns === undefined && name !== undefined) throw new KubeApiError(404, 'NotFound', 'the server could not find the requested resource');
    if (sub !== undefined && !(sub === 'status' && t.statusSubresource)) throw new KubeApiError(404, 'NotFound', 'the server could not find the requested resource');
    const status = sub as 'status' | undefined;
    const q = url.searchParams;
    const isWatch = watchPath || q.get('watch') === 'true' || q.get('watch') === '1';

    if (method === 'GET' && isWatch) {
      rec.watch = true;
      this.watch(t, ns, name, q, req, res, rec);
      return undefined;
    }
    if (method === 'GET' && name === undefined) return { status: 200, body: this.listBody(t, ns, q) };
    if (method === 'GET') {
      const obj = this.current(t, ns, name!);
      if (!obj) throw notFound(t, name!);
      return { status: 200, body: obj };
    }
    if (method === 'POST' && name === undefined) {
      if (ns === undefined && t.namespaced) throw new KubeApiError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource');
      return { status: 201, body: this.create(t, ns, parseJson(raw) as KubeObject, ctx) };
    }
    if (name === undefined) throw new KubeApiError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource');
    if (method === 'PUT') return { status: 200, body: this.update(t, ns, name, parseJson(raw) as KubeObject, status, ctx) };
    if (method === 'PATCH') {
      const type = req.headers['content-type'] ?? '';
      const body = type.startsWith('application/apply-patch+yaml') ? parseYaml(raw) : parseJson(raw);
      const existed = this.current(t, ns, name) !== undefined;
      const obj = this.patch(t, ns, name, type, body, status, ctx, q.get('fieldManager'));
      return { status: existed ? 200 : 201, body: obj };
    }
    if (method === 'DELETE' && status === undefined) {
      const opts = raw ? parseJson(raw) as { preconditions?: { resourceVersion?: string; uid?: string } } : {};
      const { obj, gone } = this.remove(t, ns, name, opts.preconditions);
      if (!gone || t.custom) return { status: 200, body: obj };
      return { status: 200, body: { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details: { name, group: t.group, kind: t.plural, uid: obj.metadata.uid } } };
    }
    throw new KubeApiError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource');
  }

  private listBody(t: ResourceType, ns: string | undefined, q: URLSearchParams): unknown {
    const labels = parseLabelSelector(q.get('labelSelector'));
    const fields = parseFieldSelector(q.get('fieldSelector'), `${t.group}/${t.version}/${t.kind}`);
    const all = [...this.objects(t).entries()]
      .filter(([, o]) => (ns === undefined || o.metadata.namespace === ns) && labelsMatch(labels, o.metadata.labels) && fieldsMatch(fields, o))
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    let listRv = this.rv;
    let start = 0;
    const token = q.get('continue');
    if (token) {
      let parsed: { rv: number; key: string };
      try {
        parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as { rv: number; key: string };
      } catch {
        throw new KubeApiError(400, 'BadRequest', 'continue key is not valid: illegal base64 data');
      }
      if (parsed.rv < this.floor) {
        throw new KubeApiError(410, 'Expired', 'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.');
      }
      listRv = parsed.rv;
      start = all.findIndex(([k]) => k > parsed.key);
      if (start < 0) start = all.length;
    }
    const limit = Number(q.get('limit') ?? '0');
    const page = limit > 0 ? all.slice(start, start + limit) : all.slice(start);
    const remaining = all.length - start - page.length;
    const lastKey = page.at(-1)?.[0];
    const metadata: Record<string, unknown> = { resourceVersion: String(listRv) };
    if (remaining > 0 && lastKey !== undefined) {
      metadata.continue = Buffer.from(JSON.stringify({ rv: listRv, key: lastKey })).toString('base64url');
      if (labels.length === 0 && fields.length === 0) metadata.remainingItemCount = remaining;
    }
    // The real server leaves apiVersion/kind out of built-in list items (custom ones keep them).
    const items = page.map(([, o]) => {
      if (t.custom) return o;
      const { apiVersion: _a, kind: _k, ...rest } = o;
      return rest;
    });
    return { kind: t.listKind, apiVersion: apiVersionOf(t), metadata, items };
  }

  private discovery(p: string): unknown {
    const groups = new Map<string, ResourceType[]>();
    for (const t of this.resourceTypes) {
      const gv = apiVersionOf(t);
      groups.set(gv, [...(groups.get(gv) ?? []), t]);
    }
    const groupVersions = (name: string) => [...new Set(this.resourceTypes.filter((t) => t.group === name).map((t) => t.version))].map((v) => ({ groupVersion: `${name}/${v}`, version: v }));
    const groupDoc = (name: string) => {
      const versions = groupVersions(name);
      return { kind: 'APIGroup', apiVersion: 'v1', name, versions, preferredVersion: versions[0] };
    };
    if (p === '/version') return { major: '1', minor: '34', gitVersion: 'v1.34.0-lastgood-emulator', platform: 'linux/amd64' };
    if (p === '/api') return { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: this.url.replace('http://', '') }] };
    if (p === '/apis') {
      const names = [...new Set(this.resourceTypes.filter((t) => t.group).map((t) => t.group))];
      return { kind: 'APIGroupList', apiVersion: 'v1', groups: names.map(groupDoc).map(({ kind: _k, apiVersion: _a, ...g }) => g) };
    }
    let m = p.match(/^\/apis\/([^/]+)$/);
    if (m && this.resourceTypes.some((t) => t.group === m![1])) return groupDoc(m[1]!);
    m = p.match(/^\/api\/(v1)$/) ?? p.match(/^\/apis\/([^/]+\/[^/]+)$/);
    if (m && groups.has(m[1]!)) {
      const verbs = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];
      const resources = groups.get(m[1]!)!.flatMap((t) => [
        { name: t.plural, singularName: t.singular, namespaced: t.namespaced, kind: t.kind, verbs, ...(t.shortNames.length > 0 ? { shortNames: t.shortNames } : {}) },
        ...(t.statusSubresource ? [{ name: `${t.plural}/status`, singularName: '', namespaced: t.namespaced, kind: t.kind, verbs: ['get', 'patch', 'update'] }] : []),
      ]);
      return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: m[1], resources };
    }
    return undefined;
  }
}

function pick(meta: ObjectMeta, keys: string[]): ObjectMeta {
  return Object.fromEntries(keys.filter((k) => meta[k] !== undefined).map((k) => [k, meta[k]]));
}

function notFound(t: ResourceType, name: string): KubeApiError {
  return new KubeApiError(404, 'NotFound', `${resourceName(t)} "${name}" not found`, { name, group: t.group, kind: t.plural });
}

function conflict(t: ResourceType, name: string): KubeApiError {
  return new KubeApiError(409, 'Conflict', `Operation cannot be fulfilled on ${resourceName(t)} "${name}": the object has been modified; please apply your changes to the latest version and try again`, { name, group: t.group, kind: t.plural });
}

function checkTypeMeta(t: ResourceType, body: KubeObject): void {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new KubeApiError(400, 'BadRequest', 'the body of the request must be an object');
  const expected = apiVersionOf(t);
  if (body.apiVersion !== undefined && body.apiVersion !== expected) throw new KubeApiError(400, 'BadRequest', `the API version in the data (${String(body.apiVersion)}) does not match the expected API version (${expected})`);
  if (body.kind !== undefined && body.kind !== t.kind) throw new KubeApiError(400, 'BadRequest', `the kind in the data (${String(body.kind)}) does not match the expected kind (${t.kind})`);
  body.apiVersion = expected;
  body.kind = t.kind;
  body.metadata ??= {};
}

const MICRO_TIME_FIELDS: Record<string, string[][]> = {
  'coordination.k8s.io/Lease': [['spec', 'acquireTime'], ['spec', 'renewTime']],
  'events.k8s.io/Event': [['eventTime'], ['series', 'lastObservedTime']],
  '/Event': [['eventTime'], ['series', 'lastObservedTime']],
};

/**
 * metav1.MicroTime is decoded with the fixed layout 2006-01-02T15:04:05.000000Z07:00: exactly six
 * fractional digits, so JavaScript's toISOString() (three) is refused with a 400 before validation
 * (kubernetes/kubernetes#89156, PR #141204 still open). client-node's V1MicroTime pads to six.
 */
function decodeMicroTimes(t: ResourceType, obj: KubeObject): void {
  for (const fieldPath of MICRO_TIME_FIELDS[`${t.group}/${t.kind}`] ?? []) {
    let v: unknown = obj;
    for (const part of fieldPath) v = typeof v === 'object' && v !== null ? (v as Record<string, unknown>)[part] : undefined;
    if (v === undefined || v === null) continue;
    if (typeof v !== 'string' || !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}(Z|[+-]\d{2}:\d{2})$/.test(v)) {
      throw new KubeApiError(400, 'BadRequest', `${t.kind} in version "${t.version}" cannot be handled as a ${t.kind}: parsing time ${JSON.stringify(String(v))} as "2006-01-02T15:04:05.000000Z07:00": cannot parse ${fieldPath.join('.')}`);
    }
  }
}

/** What kube-apiserver's validation would say about the built-in kinds the controller writes. */
function builtinChecks(t: ResourceType, obj: KubeObject): FieldError[] {
  const errors: FieldError[] = [];
  const required = (field: string, v: unknown) => {
    if (v === undefined || v === null || v === '') errors.push({ reason: 'FieldValueRequired', field, message: 'Required value' });
  };
  const o = obj as Record<string, any>;
  if (t.group === 'events.k8s.io' && t.kind === 'Event') {
    required('eventTime', o.eventTime);
    required('reportingController', o.reportingController);
    required('reportingInstance', o.reportingInstance);
    required('action', o.action);
    required('reason', o.reason);
    if (!['Normal', 'Warning'].includes(o.type)) errors.push({ reason: 'FieldValueNotSupported', field: 'type', message: `Unsupported value: ${JSON.stringify(o.type ?? '')}: supported values: "Normal", "Warning"` });
    if (typeof o.note === 'string' && Buffer.byteLength(o.note) > 1024) errors.push({ reason: 'FieldValueTooLong', field: 'note', message: 'Too long: may not be more than 1024 bytes' });
    if (o.regarding?.namespace && o.regarding.namespace !== obj.metadata.namespace) errors.push({ reason: 'FieldValueInvalid', field: 'regarding.namespace', message: `Invalid value: ${JSON.stringify(o.regarding.namespace)}: does not match event.namespace` });
  }
  if (t.group === '' && t.kind === 'Event') {
    required('involvedObject', o.involvedObject);
    if (o.involvedObject?.namespace && o.involvedObject.namespace !== obj.metadata.namespace) errors.push({ reason: 'FieldValueInvalid', field: 'involvedObject.namespace', message: `Invalid value: ${JSON.stringify(o.involvedObject.namespace)}: does not match event.namespace` });
    if (o.type !== undefined && !['Normal', 'Warning'].includes(o.type)) errors.push({ reason: 'FieldValueNotSupported', field: 'type', message: `Unsupported value: ${JSON.stringify(o.type)}: supported values: "Normal", "Warning"` });
  }
  if (t.kind === 'Lease') {
    const d = o.spec?.leaseDurationSeconds;
    if (d !== undefined && !(Number.isInteger(d) && d > 0)) errors.push({ reason: 'FieldValueInvalid', field: 'spec.leaseDurationSeconds', message: `Invalid value: ${JSON.stringify(d)}: must be greater than 0` });
  }
  return errors;
}

function specChanged(t: ResourceType, a: KubeObject, b: KubeObject): boolean {
  const rest = (o: KubeObject) => {
    const { metadata: _m, status, ...r } = o;
    return t.statusSubresource ? r : { ...r, status };
  };
  return !equalJson(JSON.parse(JSON.stringify(rest(a))), JSON.parse(JSON.stringify(rest(b))));
}

async function readBody(req: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function parseJson(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch (err) {
    throw new KubeApiError(400, 'BadRequest', `the body of the request could not be decoded: ${(err as Error).message}`);
  }
}

function parseYaml(raw: string): unknown {
  try {
    return jsyaml.load(raw, { schema: jsyaml.CORE_SCHEMA });
  } catch (err) {
    throw new KubeApiError(400, 'BadRequest', `error decoding YAML: ${(err as Error).message}`);
  }
}

export async function startKubeEmulator(opts: KubeEmulatorOptions = {}): Promise<KubeEmulator> {
  const emulator = new Emulator(opts);
  await emulator.listen();
  return emulator;
}

/** The objects in a YAML fixture file (header comments skipped; empty documents dropped). */
export function yamlObjects(text: string): KubeObject[] {
  // CORE_SCHEMA: timestamps stay strings, as in the JSON the API server stores (the default schema makes Dates).
  return (jsyaml.loadAll(text, undefined, { schema: jsyaml.CORE_SCHEMA }) as unknown[]).filter((d): d is KubeObject => typeof d === 'object' && d !== null);
}
