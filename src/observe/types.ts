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

/**
 * An object together with where it came from (file path, "-" for stdin, "kube", "event").
 *
 * `id`, where present, names the object without reading `object`: a snapshot's store parses an
 * object only when `object` is first read (observe/snapshot.ts), so code that looks for objects
 * among all observed ones compares `idOf(o)` and reads `object` of the ones it finds.
 */
export interface Observed {
  readonly object: KubeObject;
  readonly source: string;
  readonly id?: ObjectId;
}

/** Who an object is: its API version and kind, namespace and name. */
export interface ObjectId {
  apiVersion: string;
  kind: string;
  namespace?: string;
  name: string;
}

/** An observed object's identity, without parsing it where the observer knows it. */
export function idOf(o: Observed): ObjectId {
  if (o.id) return o.id;
  const { apiVersion, kind, metadata } = o.object;
  return { apiVersion, kind, namespace: metadata.namespace, name: metadata.name };
}

/** "group/Kind|namespace|name": one key per object, whatever its API version. */
export function objectKey(groupKindName: string, namespace: string | undefined, name: string): string {
  return `${groupKindName}|${namespace ?? ''}|${name}`;
}

/** An observed object's key (objectKey), without parsing it where the observer knows it. */
export function keyOf(o: Observed): string {
  const id = idOf(o);
  return objectKey(groupKind(id.apiVersion, id.kind), id.namespace, id.name);
}

/** The first observed object whose identity passes `test`, read only when found. */
export function findObserved(observed: readonly Observed[], test: (id: ObjectId) => boolean): KubeObject | undefined {
  for (const o of observed) if (test(idOf(o))) return o.object;
  return undefined;
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
