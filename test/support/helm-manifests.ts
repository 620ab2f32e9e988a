/**
 * HelmRelease manifests as teams keep them in git, shared by the Helm tests: a chart kept in this
 * repository (the GitRepository the Kustomization reads) under a reconcile strategy, and a chart
 * pinned from a HelmRepository.
 */

/** A HelmRelease of the chart in ./charts/podinfo of this repository. */
export const gitHelmRelease = (strategy: 'ChartVersion' | 'Revision', values = '    replicaCount: 2\n') => `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: podinfo
  namespace: prod
spec:
  interval: 10m
  chart:
    spec:
      chart: ./charts/podinfo
      reconcileStrategy: ${strategy}
      sourceRef:
        kind: GitRepository
        name: flux-system
        namespace: flux-system
  install:
    remediation:
      retries: 3
  values:
${values}`;

/** A HelmRelease of podinfo pinned to `version` from a HelmRepository, rolled back when its upgrade fails. */
export const repoHelmRelease = (version: string, replicas = 2) => `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: podinfo
  namespace: prod
spec:
  interval: 10m
  chart:
    spec:
      chart: podinfo
      version: ${version}
      sourceRef:
        kind: HelmRepository
        name: podinfo
        namespace: flux-system
  upgrade:
    remediation:
      retries: 3
      strategy: rollback
  values:
    replicaCount: ${replicas}
`;
