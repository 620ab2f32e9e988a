import type { RenderedObject } from './objects.ts';

/**
 * The names a rendered object refers to, by kustomize's default name-reference rules (kustomize
 * api/konfig/builtinpluginconsts/namereference.go): the fields kustomize rewrites when the object
 * they name is renamed by a prefix, a suffix or a generator's hash, wherever in the build that
 * object lies (nameref runs once over the whole build: api/internal/target/kusttarget.go
 * makeCustomizedResMap → FixBackReferences). A cut of the build (issue 33) renders the target's
 * objects as the whole build does only if no name they refer to is renamed outside the cut: a
 * name they refer to that the cut does not hold is "dangling", and the whole build decides.
 *
 * Covered: pod templates (Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob, Pod,
 * ReplicationController and any kind with spec.template.spec or spec.jobTemplate) — ConfigMaps,
 * Secrets, ServiceAccounts, PersistentVolumeClaims, PriorityClasses, RuntimeClasses; a
 * StatefulSet's serviceName and claim templates' storage classes; RBAC bindings' roles and service
 * accounts; an HPA's target; an Ingress's services, TLS secrets and class; a PVC's volume and
 * storage class; a ServiceAccount's secrets; webhook and APIService services. A custom resource's
 * references exist only through `configurations`, which a cut refuses on the way (model
 * kustomize.ts ACROSS).
 */

export interface NameReference {
  kind: string;
  name: string;
  /** undefined: a cluster-scoped kind, or the referrer's namespace is not known */
  namespace?: string;
  /** where in the referring object, for people */
  field: string;
}

type Rec = Record<string, unknown>;
const isRec = (v: unknown): v is Rec => typeof v === 'object' && v !== null && !Array.isArray(v);
const recs = (v: unknown): Rec[] => (Array.isArray(v) ? v.filter(isRec) : []);
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

const CLUSTER_SCOPED = new Set(['ClusterRole', 'PriorityClass', 'StorageClass', 'PersistentVolume', 'IngressClass', 'RuntimeClass', 'Namespace']);

/** The names one object refers to. */
export function referencesOf(object: Rec): NameReference[] {
  const out: NameReference[] = [];
  const meta = isRec(object.metadata) ? object.metadata : {};
  const ns = str(meta.namespace);
  const add = (kind: string, name: unknown, field: string, namespace: unknown = ns) => {
    const n = str(name);
    if (n) out.push({ kind, name: n, field, ...(CLUSTER_SCOPED.has(kind) ? {} : str(namespace) ? { namespace: str(namespace)! } : {}) });
  };
  const spec = isRec(object.spec) ? object.spec : {};
  const kind = String(object.kind ?? '');

  const podSpec = (p: Rec, at: string) => {
    add('ServiceAccount', p.serviceAccountName, `${at}.serviceAccountName`);
    add('ServiceAccount', p.serviceAccount, `${at}.serviceAccount`);
    add('PriorityClass', p.priorityClassName, `${at}.priorityClassName`);
    add('RuntimeClass', p.runtimeClassName, `${at}.runtimeClassName`);
    for (const s of recs(p.imagePullSecrets)) add('Secret', s.name, `${at}.imagePullSecrets`);
    for (const v of recs(p.volumes)) {
      if (isRec(v.configMap)) add('ConfigMap', v.configMap.name, `${at}.volumes.configMap`);
      if (isRec(v.secret)) add('Secret', v.secret.secretName, `${at}.volumes.secret`);
      if (isRec(v.persistentVolumeClaim)) add('PersistentVolumeClaim', v.persistentVolumeClaim.claimName, `${at}.volumes.persistentVolumeClaim`);
      if (isRec(v.projected)) {
        for (const src of recs(v.projected.sources)) {
          if (isRec(src.configMap)) add('ConfigMap', src.configMap.name, `${at}.volumes.projected.configMap`);
          if (isRec(src.secret)) add('Secret', src.secret.name, `${at}.volumes.projected.secret`);
        }
      }
      for (const [key, secretField] of [['csi', 'nodePublishSecretRef'], ['cephfs', 'secretRef'], ['cinder', 'secretRef'], ['flexVolume', 'secretRef'], ['rbd', 'secretRef'], ['iscsi', 'secretRef'], ['scaleIO', 'secretRef'], ['storageos', 'secretRef']] as const) {
        const src = v[key];
        if (isRec(src) && isRec(src[secretField])) add('Secret', (src[secretField] as Rec).name, `${at}.volumes.${key}.${secretField}`);
      }
      if (isRec(v.azureFile)) add('Secret', v.azureFile.secretName, `${at}.volumes.azureFile`);
    }
    for (const field of ['containers', 'initContainers', 'ephemeralContainers']) {
      for (const c of recs(p[field])) {
        for (const e of recs(c.env)) {
          const from = isRec(e.valueFrom) ? e.valueFrom : {};
          if (isRec(from.configMapKeyRef)) add('ConfigMap', from.configMapKeyRef.name, `${at}.${field}.env.configMapKeyRef`);
          if (isRec(from.secretKeyRef)) add('Secret', from.secretKeyRef.name, `${at}.${field}.env.secretKeyRef`);
        }
        for (const e of recs(c.envFrom)) {
          if (isRec(e.configMapRef)) add('ConfigMap', e.configMapRef.name, `${at}.${field}.envFrom.configMapRef`);
          if (isRec(e.secretRef)) add('Secret', e.secretRef.name, `${at}.${field}.envFrom.secretRef`);
        }
      }
    }
  };
  const template = (t: unknown, at: string) => {
    if (isRec(t) && isRec(t.spec)) podSpec(t.spec, `${at}.spec`);
  };
  if (kind === 'Pod') podSpec(spec, 'spec');
  template(spec.template, 'spec.template');
  if (isRec(spec.jobTemplate) && isRec(spec.jobTemplate.spec)) template(spec.jobTemplate.spec.template, 'spec.jobTemplate.spec.template');
  if (kind === 'StatefulSet') {
    add('Service', spec.serviceName, 'spec.serviceName');
    for (const c of recs(spec.volumeClaimTemplates)) if (isRec(c.spec)) add('StorageClass', c.spec.storageClassName, 'spec.volumeClaimTemplates.storageClassName');
  }
  if (kind === 'RoleBinding' || kind === 'ClusterRoleBinding') {
    const roleRef = isRec(object.roleRef) ? object.roleRef : {};
    add(String(roleRef.kind ?? 'ClusterRole'), roleRef.name, 'roleRef');
    for (const s of recs(object.subjects)) if (s.kind === 'ServiceAccount') add('ServiceAccount', s.name, 'subjects', s.namespace ?? ns);
  }
  if (kind === 'HorizontalPodAutoscaler' && isRec(spec.scaleTargetRef)) add(String(spec.scaleTargetRef.kind ?? ''), spec.scaleTargetRef.name, 'spec.scaleTargetRef');
  if (kind === 'Ingress') {
    add('IngressClass', spec.ingressClassName, 'spec.ingressClassName');
    const backend = (b: unknown, at: string) => {
      if (!isRec(b)) return;
      add('Service', b.serviceName, at);
      if (isRec(b.service)) add('Service', b.service.name, at);
    };
    backend(spec.backend, 'spec.backend');
    backend(spec.defaultBackend, 'spec.defaultBackend');
    for (const r of recs(spec.rules)) for (const p of recs(isRec(r.http) ? r.http.paths : undefined)) backend(p.backend, 'spec.rules.http.paths.backend');
    for (const t of recs(spec.tls)) add('Secret', t.secretName, 'spec.tls.secretName');
  }
  if (kind === 'PersistentVolumeClaim') {
    add('PersistentVolume', spec.volumeName, 'spec.volumeName');
    add('StorageClass', spec.storageClassName, 'spec.storageClassName');
  }
  if (kind === 'PersistentVolume') add('StorageClass', spec.storageClassName, 'spec.storageClassName');
  if (kind === 'ServiceAccount') {
    for (const s of recs(object.secrets)) add('Secret', s.name, 'secrets');
    for (const s of recs(object.imagePullSecrets)) add('Secret', s.name, 'imagePullSecrets');
  }
  if (kind === 'APIService' && isRec(spec.service)) add('Service', spec.service.name, 'spec.service', spec.service.namespace);
  if (kind === 'ValidatingWebhookConfiguration' || kind === 'MutatingWebhookConfiguration') {
    for (const w of recs(object.webhooks)) {
      const svc = isRec(w.clientConfig) && isRec(w.clientConfig.service) ? w.clientConfig.service : undefined;
      if (svc) add('Service', svc.name, 'webhooks.clientConfig.service', svc.namespace);
    }
  }
  return out;
}

/** The references of `objects` to names the same build does not hold: what a build outside it may rename. */
export function danglingReferences(objects: RenderedObject[]): string[] {
  const held = new Set<string>();
  for (const { object } of objects) {
    const meta = isRec(object.metadata) ? object.metadata : {};
    held.add(`${String(object.kind)}|${str(meta.namespace) ?? ''}|${String(meta.name)}`);
  }
  const out: string[] = [];
  for (const { key, object } of objects) {
    for (const r of referencesOf(object)) {
      if (held.has(`${r.kind}|${r.namespace ?? ''}|${r.name}`)) continue;
      out.push(`${key} ${r.field} → ${r.kind} ${r.namespace ? `${r.namespace}/` : ''}${r.name}`);
    }
  }
  return [...new Set(out)];
}
