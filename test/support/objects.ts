/** Readable builders for cluster objects in tests (STYLE.md: fixture builders). */

export function kustomization(o: { name?: string; namespace?: string; attempted: string; applied?: string; ready: 'True' | 'False' | 'Unknown'; reason?: string; message?: string; since?: string }) {
  const since = o.since ?? '2026-11-01T12:00:00Z';
  return {
    apiVersion: 'kustomize.toolkit.fluxcd.io/v1',
    kind: 'Kustomization',
    metadata: { name: o.name ?? 'apps', namespace: o.namespace ?? 'flux-system', generation: 1 },
    spec: { interval: '10m', path: './apps', prune: true, sourceRef: { kind: 'GitRepository', name: 'flux-system' }, wait: true },
    status: {
      observedGeneration: 1,
      lastAttemptedRevision: o.attempted,
      ...(o.applied ? { lastAppliedRevision: o.applied } : {}),
      conditions: [
        {
          type: 'Ready', status: o.ready, lastTransitionTime: since,
          reason: o.reason ?? (o.ready === 'True' ? 'ReconciliationSucceeded' : o.ready === 'False' ? 'HealthCheckFailed' : 'Progressing'),
          message: o.message ?? (o.ready === 'True' ? `Applied revision: ${o.attempted}` : o.ready === 'False' ? 'health check failed after 5m0s: timeout waiting for: [Deployment/prod/podinfo status: \'InProgress\']' : 'Reconciliation in progress'),
        },
        ...(o.ready === 'Unknown' ? [{ type: 'Reconciling', status: 'True', reason: 'Progressing', message: 'Reconciliation in progress', lastTransitionTime: since }] : []),
      ],
    },
  };
}

export function deployment(o: { name?: string; namespace?: string; image: string; state: 'available' | 'progressing' | 'deadline'; since?: string }) {
  const since = o.since ?? '2026-11-01T12:00:00Z';
  const progressing =
    o.state === 'deadline'
      ? { type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded', message: `ReplicaSet "${o.name ?? 'podinfo'}-7d9c" has timed out progressing.`, lastUpdateTime: since, lastTransitionTime: since }
      : o.state === 'progressing'
        ? { type: 'Progressing', status: 'True', reason: 'ReplicaSetUpdated', message: 'ReplicaSet is progressing.', lastUpdateTime: since, lastTransitionTime: since }
        : { type: 'Progressing', status: 'True', reason: 'NewReplicaSetAvailable', message: 'ReplicaSet has successfully progressed.', lastUpdateTime: since, lastTransitionTime: since };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: o.name ?? 'podinfo', namespace: o.namespace ?? 'prod', generation: 2 },
    spec: { replicas: 2, selector: { matchLabels: { app: o.name ?? 'podinfo' } }, template: { metadata: { labels: { app: o.name ?? 'podinfo' } }, spec: { containers: [{ name: 'app', image: o.image }] } } },
    status: {
      observedGeneration: 2, replicas: 2,
      updatedReplicas: o.state === 'available' ? 2 : 1,
      readyReplicas: o.state === 'available' ? 2 : 1,
      availableReplicas: o.state === 'available' ? 2 : 1,
      ...(o.state === 'available' ? {} : { unavailableReplicas: 1 }),
      conditions: [
        { type: 'Available', status: o.state === 'available' ? 'True' : 'False', reason: 'MinimumReplicasAvailable', message: '', lastUpdateTime: since, lastTransitionTime: since },
        progressing,
      ],
    },
  };
}

export function canary(o: { name?: string; namespace?: string; phase: string; weight?: number; since?: string }) {
  const since = o.since ?? '2026-11-01T12:00:00Z';
  const ready = ['Succeeded', 'Initialized'].includes(o.phase) ? 'True' : o.phase === 'Failed' ? 'False' : 'Unknown';
  return {
    apiVersion: 'flagger.app/v1beta1',
    kind: 'Canary',
    metadata: { name: o.name ?? 'podinfo', namespace: o.namespace ?? 'prod', generation: 1 },
    spec: { targetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: o.name ?? 'podinfo' } },
    status: {
      phase: o.phase, canaryWeight: o.weight ?? 0, failedChecks: o.phase === 'Failed' ? 5 : 0, iterations: 0,
      lastTransitionTime: '2026-11-01T12:30:00Z',
      conditions: [{ type: 'Promoted', status: ready, reason: o.phase, message: o.phase === 'Failed' ? 'Canary analysis failed, Deployment scaled to zero.' : 'Canary analysis completed successfully, promotion finished.', lastUpdateTime: since, lastTransitionTime: since }],
    },
  };
}

export function yamlDocs(...objects: object[]): string {
  return objects.map((o) => JSON.stringify(o, null, 2)).join('\n---\n') + '\n';
}

/**
 * An Argo CD Application (argoproj.io/v1alpha1) as the cluster reports it, with its spec: each
 * `history` entry a successful sync an hour after the previous one (RevisionHistory: id, revision or
 * revisions, deployStartedAt, deployedAt), the health turned Degraded a few minutes after the last
 * (compare ../shared fixtures argocd-application-degraded-later-sync.yaml).
 */
export function application(o: { name?: string; namespace?: string; source?: Record<string, unknown>; sources?: Array<Record<string, unknown>>; destination?: string; history: Array<string | string[]>; health?: 'Healthy' | 'Degraded'; images?: string[] }) {
  const at = (hour: number, sec = 0) => new Date(Date.parse('2026-11-01T08:00:00Z') + hour * 3600_000 + sec * 1000).toISOString().replace('.000', '');
  const rev = (r: string | string[]) => (Array.isArray(r) ? { revisions: r } : { revision: r });
  const last = o.history[o.history.length - 1]!;
  const n = o.history.length;
  const health = o.health ?? 'Degraded';
  return {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Application',
    metadata: { name: o.name ?? 'podinfo-prod', namespace: o.namespace ?? 'argocd' },
    spec: {
      project: 'default',
      ...(o.sources ? { sources: o.sources } : { source: o.source ?? {} }),
      destination: { server: 'https://kubernetes.default.svc', namespace: o.destination ?? 'prod' },
      syncPolicy: { automated: { prune: true, selfHeal: true } },
    },
    status: {
      reconciledAt: at(n, 600),
      health: health === 'Degraded' ? { status: 'Degraded', message: 'Deployment "podinfo" exceeded its progress deadline', lastTransitionTime: at(n - 1, 240) } : { status: 'Healthy', lastTransitionTime: at(n - 1, 60) },
      sync: { status: 'Synced', ...rev(last) },
      operationState: {
        phase: 'Succeeded', message: 'successfully synced (all tasks run)', startedAt: at(n - 1, -2), finishedAt: at(n - 1),
        operation: { initiatedBy: { automated: true }, sync: rev(last) },
        // SyncOperationResult.revision is required: a multi-source result leaves it empty beside revisions
        syncResult: Array.isArray(last) ? { revision: '', revisions: last } : rev(last),
      },
      ...(health === 'Degraded' ? { resources: [{ group: 'apps', version: 'v1', kind: 'Deployment', namespace: o.destination ?? 'prod', name: 'podinfo', status: 'Synced', health: { status: 'Degraded', message: 'Deployment "podinfo" exceeded its progress deadline' } }] } : {}),
      ...(o.images ? { summary: { images: o.images } } : {}),
      history: o.history.map((r, i) => ({ id: i + 1, ...rev(r), deployStartedAt: at(i, -2), deployedAt: at(i) })),
    },
  };
}

/**
 * A Flux HelmRelease (helm.toolkit.fluxcd.io/v2) as the cluster reports it: `attempted` is
 * status.lastAttemptedRevision, `history` the snapshots newest first (compare ../shared fixtures
 * helm-controller-docs-history-example.yaml).
 */
export function helmRelease(o: { name?: string; namespace?: string; spec: Record<string, unknown>; attempted: string; history: Array<{ chartVersion: string; lastDeployed: string; status?: string }>; ready?: 'True' | 'False'; reason?: string; message?: string }) {
  const name = o.name ?? 'podinfo';
  const namespace = o.namespace ?? 'prod';
  return {
    apiVersion: 'helm.toolkit.fluxcd.io/v2',
    kind: 'HelmRelease',
    metadata: { name, namespace, generation: 3 },
    spec: o.spec,
    status: {
      observedGeneration: 3,
      lastAttemptedRevision: o.attempted,
      lastAttemptedGeneration: 3,
      lastAttemptedReleaseAction: 'upgrade',
      history: o.history.map((h, i) => ({
        name, namespace, version: o.history.length - i, chartName: 'podinfo', chartVersion: h.chartVersion, appVersion: h.chartVersion.replace(/\+.*/, ''),
        configDigest: `sha256:${String(i).repeat(64)}`, digest: `sha256:${String(i + 1).repeat(64)}`,
        firstDeployed: h.lastDeployed, lastDeployed: h.lastDeployed, status: h.status ?? (i === 0 ? 'deployed' : 'superseded'),
      })),
      conditions: [
        { type: 'Ready', status: o.ready ?? 'False', reason: o.reason ?? 'UpgradeFailed', message: o.message ?? `Helm upgrade failed for release ${namespace}/${name} with chart podinfo@${o.attempted}: context deadline exceeded`, lastTransitionTime: '2026-11-01T12:00:00Z' },
        { type: 'Released', status: 'False', reason: o.reason ?? 'UpgradeFailed', message: `Helm upgrade failed for release ${namespace}/${name} with chart podinfo@${o.attempted}: context deadline exceeded`, lastTransitionTime: '2026-11-01T12:00:00Z' },
      ],
    },
  };
}

/**
 * The field errors and unknown fields of a custom object against its upstream CRD in fixtures/crds
 * (the API server's structural schema check, test/support/kube-schema.ts): the objects tests build
 * must be ones the cluster would accept.
 */
export async function crdProblems(object: { apiVersion: string; kind: string }): Promise<string[]> {
  const { loadCrds, checkObject, apiVersionOf, describe } = await import('./kube-schema.ts');
  const { readdirSync } = await import('node:fs');
  const dir = new URL('../../fixtures/crds/', import.meta.url).pathname;
  const type = loadCrds(readdirSync(dir).map((f) => `${dir}${f}`)).find((t) => t.kind === object.kind && apiVersionOf(t) === object.apiVersion);
  if (!type?.schema) return [`no CRD for ${object.apiVersion} ${object.kind}`];
  const result = checkObject(type.schema, object as unknown as Record<string, unknown>);
  return [...result.errors.map(describe), ...result.unknown.map((u) => `unknown field ${u}`)];
}
