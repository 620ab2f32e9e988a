import { KubeConfig, KubernetesObjectApi } from '@kubernetes/client-node';
import { InputError, RemoteError } from '../errors.ts';
import { scrubDeep } from '../scrub.ts';
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
 */
export function loadKubeConfig(choice: KubeConfigChoice = {}): KubeConfig {
  const kc = new KubeConfig();
  try {
    if (choice.kubeconfig) kc.loadFromFile(choice.kubeconfig);
    else kc.loadFromDefault();
  } catch (error) {
    throw new RemoteError('kubernetes', `cannot load a kubeconfig${choice.kubeconfig ? ` from ${choice.kubeconfig}` : ' (in-cluster service account or KUBECONFIG)'}: ${(error as Error).message}`, { cause: error });
  }
  if (choice.context) {
    const names = kc.getContexts().map((c) => c.name);
    if (!names.includes(choice.context)) throw new InputError(`--context ${choice.context}: no such context in the kubeconfig (it has: ${names.join(', ') || 'none'})`);
    kc.setCurrentContext(choice.context);
  }
  return kc;
}

/**
 * observe/kube, list-once: reads each configured object through the usual kubeconfig rules
 * (KUBECONFIG, ~/.kube/config, in-cluster service account). A missing object is left out (the
 * verdict shows it as NotFound); any other API failure is a RemoteError (exit 3). Every string of
 * an object is scrubbed of secrets and bounded before anything else sees it (src/scrub.ts).
 */
export async function readFromCluster(resources: ResourceRef[], kubeconfig?: string, context?: string): Promise<Observed[]> {
  const kc = loadKubeConfig({ kubeconfig, context });
  const api = KubernetesObjectApi.makeApiClient(kc);
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
      const code = (error as { code?: number; statusCode?: number }).code ?? (error as { statusCode?: number }).statusCode;
      if (code === 404) continue;
      throw new RemoteError('kubernetes', `cannot read ${r.kind} ${r.namespace ? `${r.namespace}/` : ''}${r.name}: ${(error as Error).message}`, { status: code, cause: error });
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
  let api: KubernetesObjectApi | undefined;
  return async (ref) => {
    api ??= KubernetesObjectApi.makeApiClient(kubeconfig instanceof KubeConfig ? kubeconfig : loadKubeConfig({ kubeconfig, context }));
    try {
      const object = (await api.read({ apiVersion: ref.apiVersion, kind: ref.kind, metadata: { name: ref.name, ...(ref.namespace ? { namespace: ref.namespace } : {}) } })) as unknown as KubeObject;
      const scrubbed = scrubDeep(object);
      checkStatusTimes(scrubbed, 'kube');
      return scrubbed;
    } catch (error) {
      const code = (error as { code?: number; statusCode?: number }).code ?? (error as { statusCode?: number }).statusCode;
      if (code === 404) return undefined;
      throw new RemoteError('kubernetes', `cannot read ${ref.kind} ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name}: ${(error as Error).message}`, { status: code, cause: error });
    }
  };
}
