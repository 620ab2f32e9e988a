/**
 * observe/watch: informers over @kubernetes/client-node for the controller (observe/kube.ts stays
 * the list-once reader). One ListWatch per kind and namespace the targets name (cluster-wide for a
 * resource without a namespace), for built-in and custom kinds alike: the resource path comes from
 * the API server's discovery, through client-node's own KubernetesObjectApi.
 *
 * client-node's informer stops for good on any error other than 410 Gone (it relists by itself
 * on 410) and calls its `error` callbacks, also when it is stopped on purpose (an AbortError):
 * here every error of a watch we did not stop restarts it after a backoff (1 s doubling to 30 s),
 * resuming from its last resourceVersion (a 410 then makes it relist). Requests other than the
 * watch get a timeout of their own (client-node sets none). Objects of interest (the names the
 * targets list) are scrubbed of secrets and their status times checked before anyone sees them.
 */
import {
  createConfiguration, KubernetesObjectApi, ListWatch, Observable, ServerConfiguration, Watch,
  type KubeConfig, type KubernetesListObject, type KubernetesObject, type ObservableMiddleware,
} from '@kubernetes/client-node';
import { scrubDeep } from '../scrub.ts';
import { checkStatusTimes } from './times.ts';
import { groupKind, objectKey, type KubeObject, type Observed } from './types.ts';
import { backoffDelay } from '../retry.ts';

export interface WatchedKind {
  apiVersion: string;
  kind: string;
  /** undefined: every namespace (or a cluster-scoped kind) */
  namespace?: string;
  /** the objects of interest; changes to others of this kind are not reported */
  names: ReadonlySet<string>;
}

export type ChangeType = 'add' | 'update' | 'delete';

export interface WatchHandlers {
  /** an object of interest changed; `observed` is undefined when it was deleted */
  change(key: string, observed: Observed | undefined, type: ChangeType): void;
  /** the first list of a kind has arrived: its objects are known (once per kind) */
  synced?(kind: WatchedKind): void;
  /** a watch stopped on an error; it starts again after delayMs */
  restart?(kind: WatchedKind, error: unknown, delayMs: number): void;
  /** an object of interest was refused (a status time that does not parse): it counts as not found */
  invalid?(object: KubeObject, error: unknown): void;
}

export interface ObjectWatch {
  /** starts every informer; resolves when each has made its first attempt (synced or not) */
  start(): Promise<void>;
  /** stops every informer; no handler is called after it resolves */
  stop(): Promise<void>;
  /** the object of interest as last seen, or undefined */
  get(key: string): Observed | undefined;
  /** every watched kind has listed at least once */
  readonly synced: boolean;
  /** watch restarts after errors, since start */
  readonly restarts: number;
}

export interface WatchOptions {
  /** timeout of each discovery and list request (default 30 s) */
  requestTimeoutMs?: number;
  /** first restart delay after an error (default 1 s; doubles up to maxBackoffMs) */
  backoffMs?: number;
  maxBackoffMs?: number;
}

const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';
/** objects per list request, and how many kinds are listed at once at start */
const LIST_PAGE = 500;
const START_CONCURRENCY = 4;

/** A list's continue token: `_continue` where client-node typed the list (built-in kinds), `continue` where it did not. */
function continueOf(list: KubernetesListObject<KubernetesObject>): string | undefined {
  const meta = list.metadata as { _continue?: string; continue?: string } | undefined;
  return meta?._continue || meta?.continue || undefined;
}

/** "group/Kind|namespace|name": how objects are named in the store (the same rule as evidenceFor's index). */
export { objectKey };

/** client-node's dynamic client, asked only for a kind's list path (discovery, cached per API version). */
class ResourcePaths extends KubernetesObjectApi {
  listPath(apiVersion: string, kind: string, namespace: string | undefined): Promise<string> {
    return this.specUriPath({ apiVersion, kind, metadata: namespace ? { namespace } : {} }, 'list');
  }
}

/** A per-request timeout: the only one client-node offers is a signal set by a middleware. */
function timeoutMiddleware(ms: number): ObservableMiddleware {
  return {
    pre: (ctx) => {
      ctx.setSignal(AbortSignal.timeout(ms));
      return new Observable(Promise.resolve(ctx));
    },
    post: (res) => new Observable(Promise.resolve(res)),
  };
}

function dynamicClient(kc: KubeConfig, timeoutMs: number): ResourcePaths {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig names no current cluster');
  return new ResourcePaths(createConfiguration({
    baseServer: new ServerConfiguration(cluster.server, {}),
    authMethods: { default: kc },
    middleware: [timeoutMiddleware(timeoutMs)],
  }));
}

interface Informer {
  kind: WatchedKind;
  gk: string;
  informer?: ListWatch<KubernetesObject>;
  synced: boolean;
  /** consecutive failed attempts (reset once a list succeeds) */
  failures: number;
  timer?: NodeJS.Timeout;
}

export function watchObjects(kc: KubeConfig, kinds: WatchedKind[], handlers: WatchHandlers, opts: WatchOptions = {}): ObjectWatch {
  const timeoutMs = opts.requestTimeoutMs ?? 30_000;
  const backoffMs = opts.backoffMs ?? 1000;
  const maxBackoffMs = opts.maxBackoffMs ?? 30_000;
  const client = dynamicClient(kc, timeoutMs);
  const store = new Map<string, Observed>();
  const informers: Informer[] = kinds.map((kind) => ({ kind, gk: groupKind(kind.apiVersion, kind.kind), synced: false, failures: 0 }));
  let stopping = false;
  let restarts = 0;

  const ingest = (inf: Informer, raw: KubernetesObject, type: ChangeType): void => {
    if (stopping) return;
    const name = raw.metadata?.name;
    if (!name || !inf.kind.names.has(name)) return;
    const object = raw as unknown as KubeObject;
    // list items of built-in kinds carry no apiVersion/kind: the informer's kind is theirs
    object.apiVersion ||= inf.kind.apiVersion;
    object.kind ||= inf.kind.kind;
    const key = objectKey(inf.gk, object.metadata.namespace, name);
    if (type === 'delete') {
      store.delete(key);
      handlers.change(key, undefined, type);
      return;
    }
    // what no assessor reads and a real API server sends in full with every change: not kept
    delete object.metadata.managedFields;
    const annotations = object.metadata.annotations;
    if (annotations && LAST_APPLIED in annotations) delete annotations[LAST_APPLIED];
    try {
      scrubDeep(object);
      checkStatusTimes(object, 'kube');
    } catch (error) {
      store.delete(key);
      handlers.invalid?.(object, error);
      handlers.change(key, undefined, 'delete');
      return;
    }
    const observed: Observed = { object, source: 'kube' };
    store.set(key, observed);
    handlers.change(key, observed, type);
  };

  const scheduleRestart = (inf: Informer, error: unknown): void => {
    if (stopping || inf.timer) return;
    inf.failures++;
    restarts++;
    const delay = backoffDelay(inf.failures - 1, { baseMs: backoffMs, maxMs: maxBackoffMs });
    handlers.restart?.(inf.kind, error, delay);
    inf.timer = setTimeout(() => {
      inf.timer = undefined;
      void open(inf);
    }, delay);
  };

  const open = async (inf: Informer): Promise<void> => {
    if (stopping) return;
    if (!inf.informer) {
      let path: string;
      try {
        path = await client.listPath(inf.kind.apiVersion, inf.kind.kind, inf.kind.namespace);
      } catch (error) {
        scheduleRestart(inf, error);
        return;
      }
      const list = async (): Promise<KubernetesListObject<KubernetesObject>> => {
        // in pages: a namespace of thousands of objects never sits in memory twice (text and objects) at once
        const result = await client.list<KubernetesObject>(inf.kind.apiVersion, inf.kind.kind, inf.kind.namespace, undefined, undefined, undefined, undefined, undefined, LIST_PAGE);
        for (let token = continueOf(result); token; ) {
          const page = await client.list<KubernetesObject>(inf.kind.apiVersion, inf.kind.kind, inf.kind.namespace, undefined, undefined, undefined, undefined, undefined, LIST_PAGE, token);
          for (const item of page.items) result.items.push(item);
          result.metadata = page.metadata;
          token = continueOf(page);
        }
        // the list is in; once the informer has applied it (synchronously, after this promise settles) the kind is known
        setImmediate(() => {
          inf.failures = 0;
          if (inf.synced || stopping) return;
          inf.synced = true;
          handlers.synced?.(inf.kind);
        });
        return result;
      };
      const informer = new ListWatch<KubernetesObject>(path, new Watch(kc), list, false);
      informer.on('add', (o) => ingest(inf, o, 'add'));
      informer.on('update', (o) => ingest(inf, o, 'update'));
      informer.on('delete', (o) => ingest(inf, o, 'delete'));
      // any error but 410 stops the informer; stop() itself reports an AbortError
      informer.on('error', (error) => scheduleRestart(inf, error));
      inf.informer = informer;
    }
    await inf.informer.start();
  };

  return {
    async start() {
      stopping = false;
      // a few first lists at a time: all at once, their responses would peak in memory together
      const queue = [...informers];
      const next = async (): Promise<void> => {
        for (let inf = queue.shift(); inf; inf = queue.shift()) await open(inf);
      };
      await Promise.all(Array.from({ length: Math.min(START_CONCURRENCY, queue.length) }, next));
    },
    async stop() {
      stopping = true;
      for (const inf of informers) {
        if (inf.timer) clearTimeout(inf.timer);
        inf.timer = undefined;
      }
      await Promise.all(informers.map((inf) => inf.informer?.stop()));
    },
    get: (key) => store.get(key),
    get synced() {
      return informers.every((inf) => inf.synced);
    },
    get restarts() {
      return restarts;
    },
  };
}

/** The kinds to watch for a set of resources: one per group/Kind and namespace, with the names of interest. */
export function kindsToWatch(resources: Array<{ apiVersion: string; kind: string; namespace?: string; name: string }>): WatchedKind[] {
  const byKey = new Map<string, WatchedKind & { names: Set<string> }>();
  for (const r of resources) {
    const key = `${groupKind(r.apiVersion, r.kind)}|${r.namespace ?? '*'}`;
    let kind = byKey.get(key);
    if (!kind) byKey.set(key, (kind = { apiVersion: r.apiVersion, kind: r.kind, ...(r.namespace ? { namespace: r.namespace } : {}), names: new Set() }));
    kind.names.add(r.name);
  }
  // a kind watched in every namespace needs no per-namespace watch besides
  const everywhere = new Set([...byKey.values()].filter((k) => !k.namespace).map((k) => groupKind(k.apiVersion, k.kind)));
  const out: WatchedKind[] = [];
  for (const k of byKey.values()) {
    const gk = groupKind(k.apiVersion, k.kind);
    if (k.namespace && everywhere.has(gk)) {
      for (const n of k.names) byKey.get(`${gk}|*`)!.names.add(n);
      continue;
    }
    out.push(k);
  }
  return out;
}
