/** A Kubernetes object as read from a snapshot, the API or an event. Only the fields lastgood reads are typed. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    generation?: number | string;
    annotations?: Record<string, string>;
    labels?: Record<string, string>;
    [key: string]: unknown;
  };
  spec?: any;
  status?: any;
  [key: string]: unknown;
}

/** An object together with where it came from (file path, "-" for stdin, "kube", "event"). */
export interface Observed {
  object: KubeObject;
  source: string;
}

/** "group/Kind" as used by the assessor registry; core objects have an empty group ("/Pod" → written "Pod"). */
export function groupKind(apiVersion: string, kind: string): string {
  const slash = apiVersion.lastIndexOf('/');
  const group = slash < 0 ? '' : apiVersion.slice(0, slash);
  return group ? `${group}/${kind}` : kind;
}

/** "namespace/name", or "name" for cluster-scoped objects. */
export function objectRef(o: Pick<KubeObject, 'metadata'>): string {
  return o.metadata.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : o.metadata.name;
}
