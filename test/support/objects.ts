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
