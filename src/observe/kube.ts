import { KubeConfig, KubernetesObjectApi } from '@kubernetes/client-node';
import { InputError, RemoteError } from '../errors.ts';
import { scrubDeep } from '../scrub.ts';
import { apiMessage, checkKubernetesApi, httpStatus, kubeServer, unreachable } from './kube-errors.ts';
import { checkStatusTimes } from './times.ts';
import type { KubeObject, Observed } from './types.ts';

export interface ResourceRef {
  apiVersion: string;
  kind: string;
  namespace?: string;
  name: string;
}

export interface KubeConfigChoice {
  /** a kubeconfig file (--kubeconfig), instead of KUBECONFIG / ~/.kube/config / the service account */
  kubeconfig?: string | undefined;
  /** a context of it (--context), instead of its current-context */
  context?: string | undefined;
}

/**
 * The cluster to talk to, by kubectl's rules: --kubeconfig, else KUBECONFIG, else ~/.kube/config,
 * else the in-cluster service account; --context picks a context other than the current one.
 * With none of them, client-node falls back to http://localhost:8080 and every request then fails
 * with "HTTP protocol is not allowed when skipTLSVerify is not set": that is said as what it is,
 * bad usage (exit 2), before any request (the controller stops at start instead of retrying). A
 * kubeconfig that cannot be read is bad input naming the file.
 */
export function loadKubeConfig(choice: KubeConfigChoice = {}): KubeConfig {
  const kc = new KubeConfig();
  const source = choice.kubeconfig ?? (process.env.KUBECONFIG || undefined);
  try {
    if (choice.kubeconfig) kc.loadFromFile(choice.kubeconfig);
    else kc.loadFromDefault();
  } catch (error) {
    throw new InputError(`cannot read the kubeconfig: ${(error as Error).message}`, { ...(source ? { file: source } : {}), cause: error });
  }
  if (choice.context) {
    const names = kc.getContexts().map((c) => c.name);
    if (!names.includes(choice.context)) throw new InputError(`--context ${choice.context}: no such context in the kubeconfig (it has: ${names.join(', ') || 'none'})`);
    kc.setCurrentContext(choice.context);
  }
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new InputError(`the kubeconfig names no current cluster (its current-context "${kc.getCurrentContext()}" has none): choose one with --context or kubectl config use-context`, source ? { file: source } : {});
  // client-node's fallback when nothing is configured (config.js loadFromDefault): no cluster at all
  if (!choice.kubeconfig && cluster.name === 'cluster' && cluster.server === 'http://localhost:8080' && kc.getCurrentUser()?.name === 'user') {
    throw new InputError('no Kubernetes cluster to read: KUBECONFIG is not set, there is no ~/.kube/config, and this is not a pod with a service account; set KUBECONFIG or --kubeconfig (the Action: the kubeconfig input), or give --snapshot files instead of the cluster');
  }
  return kc;
}

/**
 * observe/kube, list-once: reads each configured object through the usual kubeconfig rules
 * (KUBECONFIG, ~/.kube/config, in-cluster service account). A missing object is left out (the
 * verdict shows it as NotFound) once the server is known to be a Kubernetes API (kube-errors.ts:
 * any web server answers 404); any other API failure is a RemoteError (exit 3) naming the server
 * or the object and the cause. Every string of an object is scrubbed of secrets and bounded before
 * anything else sees it (src/scrub.ts).
 */
export async function readFromCluster(resources: ResourceRef[], kubeconfig?: string, context?: string): Promise<Observed[]> {
  const kc = loadKubeConfig({ kubeconfig, context });
  const api = KubernetesObjectApi.makeApiClient(kc);
  let isKubernetes: Promise<void> | undefined;
  const seen = new Set<string>();
  const out: Observed[] = [];
  for (const r of resources) {
    const key = `${r.apiVersion}|${r.kind}|${r.namespace ?? ''}|${r.name}`;
    if (seen.has(key)) continue;
    seen.add(key);
    let object: KubeObject;
    try {
      object = (await api.read({ apiVersion: r.apiVersion, kind: r.kind, metadata: { name: r.name, ...(r.namespace ? { namespace: r.namespace } : {}) } })) as unknown as KubeObject;
    } catch (error) {
      const code = httpStatus(error);
      if (code === 404) {
        await (isKubernetes ??= checkKubernetesApi(kc));
        continue;
      }
      throw unreachable(error, kubeServer(kc)) ?? new RemoteError('kubernetes', `cannot read ${r.kind} ${r.namespace ? `${r.namespace}/` : ''}${r.name}: ${apiMessage(error)}`, { status: code, cause: error });
    }
    const scrubbed = scrubDeep(object);
    checkStatusTimes(scrubbed, 'kube');
    out.push({ object: scrubbed, source: 'kube' });
  }
  return out;
}

/**
 * One object by name, on demand (what metric analysis reads besides the watched objects: the new
 * ReplicaSet of a rollout, AnalysisTemplates, MetricTemplates): undefined when it does not exist,
 * RemoteError when the API fails. Scrubbed like every object read.
 */
export function clusterReader(kubeconfig?: string | KubeConfig, context?: string): (ref: ResourceRef) => Promise<KubeObject | undefined> {
  let kc: KubeConfig | undefined;
  let api: KubernetesObjectApi | undefined;
  let isKubernetes: Promise<void> | undefined;
  return async (ref) => {
    kc ??= kubeconfig instanceof KubeConfig ? kubeconfig : loadKubeConfig({ kubeconfig, context });
    api ??= KubernetesObjectApi.makeApiClient(kc);
    try {
      const object = (await api.read({ apiVersion: ref.apiVersion, kind: ref.kind, metadata: { name: ref.name, ...(ref.namespace ? { namespace: ref.namespace } : {}) } })) as unknown as KubeObject;
      const scrubbed = scrubDeep(object);
      checkStatusTimes(scrubbed, 'kube');
      return scrubbed;
    } catch (error) {
      const code = httpStatus(error);
      if (code === 404) {
        // asked once per reader; asked again after a failure (the controller's reader lives long)
        await (isKubernetes ??= checkKubernetesApi(kc).catch((e: unknown) => {
          isKubernetes = undefined;
          throw e;
        }));
        return undefined;
      }
      throw unreachable(error, kubeServer(kc)) ?? new RemoteError('kubernetes', `cannot read ${ref.kind} ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name}: ${apiMessage(error)}`, { status: code, cause: error });
    }
  };
}
