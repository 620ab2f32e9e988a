/** The podinfo manifests the model tests build histories from (model-flux, model-argocd): one copy. */
export const IMAGE = 'ghcr.io/stefanprodan/podinfo';

export const deploy = (tag: string, extra = '') => `apiVersion: apps/v1
kind: Deployment
metadata:
  name: podinfo
  namespace: prod
spec:
  template:
    spec:
      containers:
        - name: app
          image: ${IMAGE}:${tag}
${extra}`;

export const configMap = (level: string) => `apiVersion: v1
kind: ConfigMap
metadata:
  name: podinfo-config
  namespace: prod
data:
  level: ${level}
`;
