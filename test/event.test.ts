import test from 'ava';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseConfig } from '../src/config/load.ts';
import { assess } from '../src/health/index.ts';
import { matchEvent, parseEvent, readEvent, withEventObjects } from '../src/observe/event.ts';
import { alertMatchesResource } from '../src/observe/event-alertmanager.ts';
import { InputError } from '../src/errors.ts';
import { tempDir, writeFile } from './support/git.ts';

const FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'events');
const SHA = '5b8a2d2a0d8d6c5e0ad2c2e8e2f9e4b1c3d7a6f0';
const NOW = new Date('2026-11-22T03:30:00Z');
const fixture = (name: string) => JSON.parse(readFileSync(path.join(FIXTURES, name), 'utf8'));

const config = parseConfig(`repo: { url: ./repo }
targets:
  - name: podinfo-prod
    paths: [apps/podinfo/prod/]
    resources:
      - { apiVersion: kustomize.toolkit.fluxcd.io/v1beta2, kind: Kustomization, namespace: flux-system, name: apps }
      - { apiVersion: argoproj.io/v1alpha1, kind: Application, namespace: argocd, name: podinfo-prod }
      - { apiVersion: flagger.app/v1beta1, kind: Canary, namespace: prod, name: podinfo }
      - { apiVersion: apps/v1, kind: Deployment, namespace: prod, name: podinfo }
  - name: podinfo-helm
    paths: [apps/podinfo-helm/]
    resources:
      - { apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease, namespace: prod, name: podinfo }
  - name: flux-system
    paths: [clusters/prod/]
    resources:
      - { apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: flux-system }
`, 'lastgood.yaml');

test('Flux HealthCheckFailed (githubdispatch): a failed Kustomization attempting the event revision, matched across API versions', (t) => {
  const event = parseEvent(fixture('flux-kustomization-health-check-failed.json'), 'e.json');
  t.is(event.sender, 'flux');
  t.is(event.dispatchType, 'Kustomization/apps.flux-system');
  const h = assess(event.objects[0]!, NOW);
  t.like(h, { state: 'failed', reason: 'HealthCheckFailed', terminal: true, failureClass: 'analysis', since: '2026-11-22T03:10:00.000Z' });
  t.is(h.attempted?.sha, SHA);
  const m = matchEvent(event, config);
  t.deepEqual(m.targets, ['podinfo-prod']);
  t.is(m.observed[0]!.object.apiVersion, 'kustomize.toolkit.fluxcd.io/v1beta2', 'observed under the API version the target names');
  t.is(m.observed[0]!.source, 'event:e.json');
});

test('Flux info events: reconciled → healthy at the revision; Progressing → progressing', (t) => {
  const ok = parseEvent(fixture('flux-kustomization-reconciled.json'), 'e.json');
  t.like(assess(ok.objects[0]!, NOW), { state: 'healthy', reason: 'ReconciliationSucceeded' });
  t.is(assess(ok.objects[0]!, NOW).lastSucceeded?.sha, SHA);
  const data = fixture('flux-kustomization-reconciled.json');
  data.client_payload.reason = 'Progressing';
  t.is(assess(parseEvent(data, 'e.json').objects[0]!, NOW).state, 'progressing');
});

test('Flux: a group-prefixed revision key (older notification-controller) is read too', (t) => {
  const data = fixture('flux-kustomization-health-check-failed.json').client_payload;
  data.metadata = { 'kustomize.toolkit.fluxcd.io/revision': `main@sha1:${SHA}` };
  t.is(assess(parseEvent(data, 'e.json').objects[0]!, NOW).attempted?.sha, SHA, 'a bare client_payload (no repository_dispatch wrapper) is read as well');
});

test('Flux HelmRelease UpgradeFailed: failed, the chart version as the attempted revision, matched to its own target', (t) => {
  const event = parseEvent(fixture('flux-helmrelease-upgrade-failed.json'), 'e.json');
  const h = assess(event.objects[0]!, NOW);
  t.like(h, { state: 'failed', reason: 'UpgradeFailed' });
  t.is(h.attempted?.chart, '6.1.0');
  t.deepEqual(matchEvent(event, config).targets, ['podinfo-helm']);
});

test('Argo CD sync failed: a failed Application attempting the sync revision; "<no value>" is read as absent', (t) => {
  const event = parseEvent(fixture('argocd-sync-failed.json'), 'e.json');
  t.is(event.sender, 'argocd');
  const app = event.objects[0]!;
  t.is(app.status.health.message, undefined);
  const h = assess(app, NOW);
  t.like(h, { state: 'failed', reason: 'SyncFailed', terminal: true });
  t.is(h.attempted?.sha, SHA);
  t.deepEqual(matchEvent(event, config).targets, ['podinfo-prod']);
});

test('Argo CD health Degraded after a successful sync: failed (analysis)', (t) => {
  const h = assess(parseEvent(fixture('argocd-app-degraded.json'), 'e.json').objects[0]!, NOW);
  t.like(h, { state: 'failed', reason: 'Degraded', failureClass: 'analysis' });
  t.is(h.attempted?.sha, SHA);
});

test('Argo CD: a template sending the whole Application ({{toJson .app}}) is used as it is', (t) => {
  const application = {
    apiVersion: 'argoproj.io/v1alpha1', kind: 'Application', metadata: { name: 'podinfo-prod', namespace: 'argocd' },
    status: { health: { status: 'Degraded', message: 'boom' }, sync: { status: 'Synced', revision: SHA } },
  };
  const event = parseEvent({ event_type: 'argocd', client_payload: { source: 'argocd', application } }, 'e.json');
  t.deepEqual(event.objects[0], application);
  t.deepEqual(matchEvent(event, config).targets, ['podinfo-prod']);
});

test('Flagger event webhook: a Canary in its phase, since the event time; Failed at full weight is a promotion failure', (t) => {
  const event = parseEvent(fixture('flagger-canary-failed.json'), 'e.json');
  t.is(event.sender, 'flagger');
  t.like(assess(event.objects[0]!, NOW), { state: 'failed', reason: 'Failed', failureClass: 'analysis', since: '2026-11-22T03:10:00.000Z' });
  t.deepEqual(matchEvent(event, config).targets, ['podinfo-prod']);
  const data = fixture('flagger-canary-failed.json');
  data.client_payload.metadata.canaryWeight = '100';
  t.like(assess(parseEvent(data, 'e.json').objects[0]!, NOW), { state: 'failed', reason: 'PromotionFailed', failureClass: 'promotion' });
  data.client_payload.phase = 'Progressing';
  t.is(assess(parseEvent(data, 'e.json').objects[0]!, NOW).state, 'progressing');
});

test('Flagger ≥ 1.44 "Promotion of … failed, primary not ready" sent while the phase is still Promoting: a failed promotion, terminal, with the revert hazard', (t) => {
  const event = parseEvent(fixture('flagger-promotion-failed.json'), 'e.json');
  t.is(event.objects[0]!.status.phase, 'Failed');
  const h = assess(event.objects[0]!, NOW);
  t.like(h, { state: 'failed', reason: 'PromotionFailed', failureClass: 'promotion', terminal: true, since: '2026-11-22T03:20:00.000Z', revertHazard: { kind: 'flagger-promotion-failure' } });
  t.regex(h.message, /exceeded its progress deadline/);
  t.deepEqual(matchEvent(event, config).targets, ['podinfo-prod']);
  // The generic Warning Flagger records just before ("podinfo-primary.prod not ready: …") is still progress.
  const before = fixture('flagger-promotion-failed.json');
  before.client_payload.metadata.eventMessage = 'podinfo-primary.prod not ready: deployment "podinfo-primary" exceeded its progress deadline';
  t.like(assess(parseEvent(before, 'e.json').objects[0]!, NOW), { state: 'progressing', reason: 'Promoting' });
  // A Normal event with the same words is not the failure.
  const normal = fixture('flagger-promotion-failed.json');
  normal.client_payload.metadata.eventType = 'Normal';
  t.is(assess(parseEvent(normal, 'e.json').objects[0]!, NOW).state, 'progressing');
});

test('Flux HelmRelease RollbackSucceeded (info): a failed, terminal release whose event revision is the last success, not the attempt', (t) => {
  const event = parseEvent(fixture('flux-helmrelease-rollback-succeeded.json'), 'e.json');
  const h = assess(event.objects[0]!, NOW);
  t.like(h, { state: 'failed', reason: 'RollbackSucceeded', failureClass: 'analysis', terminal: true, since: '2026-11-22T03:16:00.000Z' });
  t.like(h.lastSucceeded, { raw: '6.0.3', chart: '6.0.3' });
  t.is(h.attempted, undefined);
  t.deepEqual(matchEvent(event, config).targets, ['podinfo-helm']);
  // A chart built from git: the build suffix is the commit; with an oci-digest key it is not.
  const git = fixture('flux-helmrelease-rollback-succeeded.json');
  git.client_payload.metadata.revision = '6.0.3+5b8a2d2a0d8d';
  t.like(assess(parseEvent(git, 'e.json').objects[0]!, NOW).lastSucceeded, { chart: '6.0.3', sha: '5b8a2d2a0d8d' });
  git.client_payload.metadata['oci-digest'] = 'sha256:5b8a2d2a0d8d6c5e0ad2c2e8e2f9e4b1c3d7a6f05b8a2d2a0d8d6c5e0ad2c2e8';
  t.is(assess(parseEvent(git, 'e.json').objects[0]!, NOW).lastSucceeded?.sha, undefined);
});

test('Flux HelmRelease UninstallSucceeded (info): the revision is the failed release it removed', (t) => {
  const data = fixture('flux-helmrelease-rollback-succeeded.json');
  data.client_payload.reason = 'UninstallSucceeded';
  data.client_payload.message = 'Helm uninstall remediation for release prod/podinfo.v1 with chart podinfo@6.1.0 succeeded';
  data.client_payload.metadata.revision = '6.1.0';
  const h = assess(parseEvent(data, 'e.json').objects[0]!, NOW);
  t.like(h, { state: 'failed', reason: 'UninstallSucceeded', terminal: true, attempted: { chart: '6.1.0' } });
  t.is(h.lastSucceeded, undefined);
});

test('Alertmanager: a firing alert matched by labels becomes a failed lastgood.dev Alert resource of the target', (t) => {
  const event = parseEvent(fixture('alertmanager-firing.json'), 'e.json');
  t.is(event.sender, 'alertmanager');
  const m = matchEvent(event, config);
  t.deepEqual(m.targets, ['podinfo-prod']);
  const target = m.config.targets.find((x) => x.name === 'podinfo-prod')!;
  t.deepEqual(target.resources.at(-1), { apiVersion: 'lastgood.dev/v1alpha1', kind: 'Alert', name: 'PodinfoHighErrorRate', namespace: 'prod' });
  t.is(config.targets[0]!.resources.length, 4, 'the original config is left alone');
  const alert = m.observed[0]!.object;
  t.like(assess(alert, NOW), { state: 'failed', reason: 'AlertFiring', terminal: true, message: 'podinfo in prod answers 12% of requests with 5xx', since: '2026-11-22T03:14:30.123Z' });
});

test('Alertmanager: resolved alerts are healthy; an alert matching nothing is a no-op with the reason', (t) => {
  const resolved = fixture('alertmanager-firing.json');
  resolved.client_payload.alerts[0].status = 'resolved';
  resolved.client_payload.alerts[0].endsAt = '2026-11-22T03:25:00Z';
  const m = matchEvent(parseEvent(resolved, 'e.json'), config);
  t.like(assess(m.observed[0]!.object, NOW), { state: 'healthy', reason: 'AlertResolved', since: '2026-11-22T03:25:00.000Z' });

  const elsewhere = fixture('alertmanager-firing.json');
  elsewhere.client_payload.alerts[0].labels.namespace = 'staging';
  const none = matchEvent(parseEvent(elsewhere, 'e.json'), config);
  t.deepEqual(none.targets, []);
  t.regex(none.unmatched!, /no alert \(PodinfoHighErrorRate\) matches/);
});

test('Alertmanager matching rule: kind label, name+kind labels, exported_namespace first, lastgood_target override', (t) => {
  const deploy = { kind: 'Deployment', namespace: 'prod', name: 'podinfo' };
  t.true(alertMatchesResource({ alertname: 'X', deployment: 'podinfo', namespace: 'prod' }, deploy));
  t.false(alertMatchesResource({ alertname: 'X', deployment: 'podinfo' }, deploy), 'a namespaced resource needs the namespace label');
  t.false(alertMatchesResource({ alertname: 'X', deployment: 'other', namespace: 'prod' }, deploy));
  t.true(alertMatchesResource({ alertname: 'X', name: 'podinfo', kind: 'Deployment', namespace: 'prod' }, deploy));
  t.false(alertMatchesResource({ alertname: 'X', name: 'podinfo', kind: 'Canary', namespace: 'prod' }, deploy));
  // Flux metrics are scraped from flux-system: the object's namespace is exported_namespace
  const ks = { kind: 'Kustomization', namespace: 'flux-system', name: 'apps' };
  t.true(alertMatchesResource({ alertname: 'X', kind: 'Kustomization', name: 'apps', exported_namespace: 'flux-system', namespace: 'monitoring' }, ks));
  t.false(alertMatchesResource({ alertname: 'X', kind: 'Kustomization', name: 'apps', exported_namespace: 'other', namespace: 'flux-system' }, ks));

  const named = fixture('alertmanager-firing.json');
  named.client_payload.alerts[0].labels = { alertname: 'ClusterOnFire', lastgood_target: 'flux-system' };
  t.deepEqual(matchEvent(parseEvent(named, 'e.json'), config).targets, ['flux-system']);
});

test('an event for an object no target lists: no targets, and why', (t) => {
  const data = fixture('flux-kustomization-health-check-failed.json');
  data.client_payload.involvedObject.name = 'infra';
  const m = matchEvent(parseEvent(data, 'e.json'), config);
  t.deepEqual(m.targets, []);
  t.is(m.unmatched, 'no configured target lists Kustomization flux-system/infra');
});

test('malformed payloads: InputError naming the file and the field', async (t) => {
  const bad = (data: unknown, message: RegExp) => {
    const error = t.throws(() => parseEvent(data, 'payload.json'), { instanceOf: InputError });
    t.regex(error!.message, /^payload\.json: /);
    t.regex(error!.message, message);
  };
  bad(fixture('malformed-flux-missing-reason.json'), /not a valid Flux notification-controller event: reason: /);
  bad([1, 2], /not a JSON object/);
  bad({ action: 'x', client_payload: 'text' }, /has no client_payload object/);
  bad({ action: 'deploy', client_payload: { ref: 'main' } }, /not an event lastgood understands \(repository_dispatch "deploy"\)/);
  bad({ client_payload: { alerts: [{ status: 'firing', labels: { severity: 'page' } }] } }, /alerts\.0\.labels: an alert needs an alertname label/);
  bad({ client_payload: { name: 'podinfo', phase: 'Failed' } }, /Flagger event webhook: namespace: /);
  bad({ client_payload: { involvedObject: { kind: 'Kustomization', name: 'apps' }, reason: 'X', severity: 'fatal' } }, /severity: /);

  const dir = tempDir();
  const broken = writeFile(dir, 'event.json', '{"client_payload": ');
  await t.throwsAsync(readEvent(broken), { instanceOf: InputError, message: new RegExp(`^${broken}: the event payload is not JSON`) });
  await t.throwsAsync(readEvent(`${dir}/missing.json`), { instanceOf: InputError, message: /missing\.json: cannot read the event payload: ENOENT/ });
});

test('withEventObjects: the cluster copy of an object wins over the event copy', (t) => {
  const event = parseEvent(fixture('flux-kustomization-health-check-failed.json'), 'e.json');
  const eventObserved = event.objects.map((object) => ({ object, source: 'event:e.json' }));
  const cluster = [{ object: { ...event.objects[0]!, apiVersion: 'kustomize.toolkit.fluxcd.io/v1beta2', status: { conditions: [] } }, source: 'kube' }];
  const other = [{ object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', namespace: 'prod' } }, source: 'kube' }];
  t.deepEqual(withEventObjects(cluster, eventObserved).map((o) => o.source), ['kube']);
  t.deepEqual(withEventObjects(other, eventObserved).map((o) => o.source), ['kube', 'event:e.json']);
});
