import test from 'ava';
import jsYaml from 'js-yaml';
import { lastgoodEngine } from './support/engine-run.ts';
import { commit, fingerprint, git, makeRepo, tempDir, writeFile } from './support/git.ts';
import { gitHelmRelease, repoHelmRelease } from './support/helm-manifests.ts';
import { helmRelease, kustomization, yamlDocs } from './support/objects.ts';
import { testRenderer } from './support/renderer.ts';

/**
 * Issue 34, class 2: "cannot render" is not "renders the same". The render check builds what
 * kustomize builds; a Helm chart's templates and values (helm-controller builds them) and a
 * HelmRelease a parent applies from the target's paths are not in it. Where the revert changes only
 * such inputs, an unchanged render says nothing about them: the check says "not rendered" and why,
 * and the model's verdict stands (before: refused, "the target is the same before and after the
 * revert"). A revert whose rendered inputs change nothing is still refused as the same (the sibling).
 * Through the engine as `lastgood run` calls it (support/engine-run.ts) with the render on (kubectl kustomize), the revert's bytes checked against git's.
 */

const NOW = ['--now', '2026-11-01T12:05:00Z'];
const kz = (r: string[]) => `apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n${r.map((x) => `  - ${x}`).join('\n')}\n`;
const gitRepository = {
  apiVersion: 'source.toolkit.fluxcd.io/v1', kind: 'GitRepository', metadata: { name: 'flux-system', namespace: 'flux-system' },
  spec: { interval: '1m0s', ref: { branch: 'main' }, url: 'ssh://git@github.com/acme/gitops' },
  status: { conditions: [{ type: 'Ready', status: 'True', reason: 'Succeeded', message: 'stored artifact', lastTransitionTime: '2026-11-01T11:00:00Z' }] },
};
const chartYaml = `apiVersion: v2\nname: podinfo\nversion: 6.5.4\nappVersion: 6.5.4\n`;
const template = (probe: string) => `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  template:
    spec:
      containers:
        - name: podinfo
          image: ghcr.io/stefanprodan/podinfo:6.5.4
          readinessProbe: { httpGet: { path: ${probe}, port: 9898 } }
`;
const specOf = (m: string) => (jsYaml.load(m) as { spec: Record<string, unknown> }).spec;

function config(dir: string, repo: string, paths: string[]): string {
  return writeFile(dir, 'lastgood.yaml', `repo:\n  url: ${repo}\ndefaults:\n  mode: commit\n  confirmations: 1\ntargets:\n  - name: podinfo-prod\n    paths: [${paths.join(', ')}]\n    resources:\n      - { apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: apps }\n      - { apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease, namespace: prod, name: podinfo }\n`);
}

function fluxApps(path: string, attempted: string) {
  const k = kustomization({ attempted: `main@sha1:${attempted}`, applied: `main@sha1:${attempted}`, ready: 'True' });
  k.spec = { ...k.spec, path };
  return k;
}

test('a git chart under reconcileStrategy Revision: a template change is reverted, the render check says it could not render the chart (not "the same")', async (t) => {
  if (!(await testRenderer(t))) return;
  const repo = makeRepo();
  commit(repo, {
    'apps/prod/kustomization.yaml': kz(['podinfo']),
    'apps/prod/podinfo/kustomization.yaml': kz(['release.yaml']),
    'apps/prod/podinfo/release.yaml': gitHelmRelease('Revision'),
    'charts/podinfo/Chart.yaml': chartYaml,
    'charts/podinfo/templates/deployment.yaml': template('/readyz'),
  }, 'initial');
  const applied = commit(repo, { 'README.md': 'x\n' }, 'docs');
  const probe = commit(repo, { 'charts/podinfo/templates/deployment.yaml': template('/healthz') }, 'chart: probe /healthz');
  const hr = helmRelease({ spec: specOf(gitHelmRelease('Revision')), attempted: `6.5.4+${probe.slice(0, 12)}`, history: [{ chartVersion: `6.5.4+${applied.slice(0, 12)}`, lastDeployed: '2026-11-01T09:00:00Z' }] });
  const dir = tempDir('lastgood-unseen-');
  const snapshot = writeFile(dir, 'cluster.yaml', yamlDocs(fluxApps('./apps/prod', probe), hr, gitRepository));
  const r = await lastgoodEngine(['run', ...NOW, '--config', config(dir, repo, ['apps/prod/podinfo/', 'charts/podinfo/']), '--snapshot', snapshot, '--json']);
  t.is(r.code, 0, r.stdout + r.stderr);
  const out = JSON.parse(r.stdout).targets[0];
  t.deepEqual(out.bad, [probe]);
  t.is(git(repo, 'show', 'main:charts/podinfo/templates/deployment.yaml') + '\n', template('/readyz'), 'the bytes git revert writes');
  t.regex(JSON.stringify(out), /not rendered: the revert changes charts\/podinfo\/templates\/deployment\.yaml, which Flux Kustomization flux-system\/apps .* reads but a kustomize render does not build/);
});

test('a HelmRelease a parent applies from the target\'s paths: its chart bump is reverted, not rendered by kustomize and said so', async (t) => {
  if (!(await testRenderer(t))) return;
  const release = (v: string) => repoHelmRelease(v);
  const repo = makeRepo();
  commit(repo, {
    'clusters/prod/kustomization.yaml': kz(['../../apps/podinfo/release.yaml']),
    'apps/podinfo/release.yaml': release('6.5.3'),
    'apps/podinfo/config/kustomization.yaml': kz(['configmap.yaml']),
    'apps/podinfo/config/configmap.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: podinfo-dashboards\n  namespace: prod\n',
  }, 'initial');
  const applied = commit(repo, { 'README.md': 'x\n' }, 'docs');
  const bump = commit(repo, { 'apps/podinfo/release.yaml': release('6.5.4') }, 'podinfo chart 6.5.4');
  const hr = helmRelease({ spec: specOf(release('6.5.4')), attempted: '6.5.4', reason: 'RetriesExceeded', history: [{ chartVersion: '6.5.4', lastDeployed: '2026-11-01T12:00:00Z', status: 'failed' }, { chartVersion: '6.5.3', lastDeployed: '2026-11-01T09:00:00Z', status: 'deployed' }] });
  const dir = tempDir('lastgood-unseen-');
  const snapshot = writeFile(dir, 'cluster.yaml', yamlDocs(fluxApps('./apps/podinfo/config', bump), hr, gitRepository));
  const before = fingerprint(repo);
  const r = await lastgoodEngine(['run', ...NOW, '--config', config(dir, repo, ['apps/podinfo/']), '--snapshot', snapshot, '--json']);
  t.is(r.code, 0, r.stdout + r.stderr);
  const out = JSON.parse(r.stdout).targets[0];
  t.deepEqual(out.bad, [bump]);
  t.not(fingerprint(repo), before);
  t.is(git(repo, 'show', 'main:apps/podinfo/release.yaml') + '\n', release('6.5.3'));
  t.is(git(repo, 'rev-parse', `main~1`), bump, 'one revert commit on top of the bump');
  t.regex(JSON.stringify(out), /not rendered: the revert changes apps\/podinfo\/release\.yaml/);
  t.not(applied, bump);
});

test('the sibling: a change to a file the render does build, that renders the same (a comment), is still refused as the same, and nothing is written', async (t) => {
  if (!(await testRenderer(t))) return;
  const repo = makeRepo();
  commit(repo, {
    'apps/prod/kustomization.yaml': kz(['podinfo']),
    'apps/prod/podinfo/kustomization.yaml': kz(['release.yaml']),
    'apps/prod/podinfo/release.yaml': gitHelmRelease('Revision'),
    'charts/podinfo/Chart.yaml': chartYaml,
    'charts/podinfo/templates/deployment.yaml': template('/readyz'),
  }, 'initial');
  const applied = commit(repo, { 'README.md': 'x\n' }, 'docs');
  const comment = commit(repo, { 'apps/prod/podinfo/release.yaml': `# owned by the podinfo team\n${gitHelmRelease('Revision')}` }, 'release: owner comment');
  // the chart did not change: helm-controller's release failed on something this repository did not change
  const k = kustomization({ attempted: `main@sha1:${comment}`, applied: `main@sha1:${applied}`, ready: 'False', message: "health check failed after 5m0s: timeout waiting for: [HelmRelease/prod/podinfo status: 'InProgress']" });
  k.spec = { ...k.spec, path: './apps/prod' };
  const hr = helmRelease({ spec: specOf(gitHelmRelease('Revision')), attempted: `6.5.4+${comment.slice(0, 12)}`, history: [{ chartVersion: `6.5.4+${applied.slice(0, 12)}`, lastDeployed: '2026-11-01T09:00:00Z' }] });
  const dir = tempDir('lastgood-unseen-');
  const snapshot = writeFile(dir, 'cluster.yaml', yamlDocs(k, hr, gitRepository));
  const before = fingerprint(repo);
  const r = await lastgoodEngine(['run', ...NOW, '--config', config(dir, repo, ['apps/prod/podinfo/', 'charts/podinfo/']), '--snapshot', snapshot, '--json']);
  t.is(r.code, 1, r.stdout + r.stderr);
  const out = JSON.parse(r.stdout).targets[0];
  t.regex(out.reason, /rendered as the engine builds it, the target is the same before and after the revert: it would change nothing the cluster runs/);
  t.is(fingerprint(repo), before, 'nothing written');
});
