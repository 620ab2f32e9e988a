/**
 * Issue 37, "What happens next, in the PR": from the upstream objects in fixtures/upstream/ (their
 * headers name source and licence), what the revert's pull request says will happen after the
 * merge, and about how long it takes. Variants (a Rollout with `rollbackWindow`, a Canary with
 * `skipAnalysis`) are derived here from an upstream object.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import test from 'ava';
import fc from 'fast-check';
import MarkdownIt from 'markdown-it';
import { parseAllDocuments } from 'yaml';
import { nextSteps, stepText, type NextSteps } from '../src/decide/next-steps.ts';
import type { KubeObject, Observed } from '../src/observe/types.ts';
import type { Evidence, Verdict } from '../src/decide/types.ts';
import type { Located } from '../src/history/locate.ts';
import { pullRequestText, type PullRequestInput } from '../src/revert/message.ts';
import { ROOT } from './support/cli.ts';

const UPSTREAM = path.join(ROOT, 'fixtures', 'upstream');

/** The objects of an upstream file; flux2's test data has Go-template namespaces, filled in as its tests do. */
function upstream(file: string): KubeObject[] {
  const text = readFileSync(path.join(UPSTREAM, file), 'utf8').replaceAll('{{ .fluxns }}', 'flux-system').replaceAll('{{ .ns }}', 'default');
  return parseAllDocuments(text, { uniqueKeys: false }).map((d) => d.toJS() as KubeObject).filter((o) => o && typeof o === 'object');
}
const one = (file: string, kind?: string): KubeObject => {
  const found = upstream(file).filter((o) => !kind || o.kind === kind);
  if (found.length !== 1) throw new Error(`${file}: ${found.length} objects${kind ? ` of kind ${kind}` : ''}`);
  return found[0]!;
};
const observed = (...objects: KubeObject[]): Observed[] => objects.map((object) => ({ object, source: 'upstream' }));
const resource = (o: KubeObject) => ({ apiVersion: o.apiVersion, kind: o.kind, namespace: o.metadata.namespace, name: o.metadata.name });
/** the lines as text, the cluster's text in backticks */
const lines = (next: NextSteps) => next.steps.map((s) => stepText(s, (x) => `\`${x}\``));
const clone = <T>(v: T): T => structuredClone(v);

// ---- Flux --------------------------------------------------------------------------------------

test('Flux Kustomization with its GitRepository observed: the source interval, sooner with a webhook Receiver', (t) => {
  const chain = upstream('flux-helmrelease/flux2-trace-helmrelease-chain.yaml');
  const ks = chain.find((o) => o.kind === 'Kustomization')!;
  const next = nextSteps(observed(...chain), { resources: [resource(ks)] });
  t.deepEqual(lines(next), [
    'Flux: GitRepository `flux-system/flux-system` fetches the merge within `5m` (its `spec.interval`; sooner with a webhook Receiver), and Kustomization `flux-system/infrastructure` applies it at once; it also reconciles every `5m`.',
  ]);
  t.is(next.steps[0]!.object, 'kustomize.toolkit.fluxcd.io/Kustomization flux-system/infrastructure');
  t.is(next.steps[0]!.ms, 5 * 60_000);
  t.is(next.totalMs, 5 * 60_000);
  t.false(next.partial);
  t.is(next.summary, 'About 5m in all by these numbers.');
});

test('Flux Kustomization, its GitRepository not observed: no estimate, and it says why', (t) => {
  const ks = one('flux-kustomization/argocd-healthy.yaml');
  const next = nextSteps(observed(ks));
  t.deepEqual(lines(next), [
    "Flux: Kustomization `default/podinfo` applies the merge as soon as its source GitRepository `default/podinfo` fetches it, within that source's `spec.interval`, which lastgood did not read (sooner with a webhook Receiver); it also reconciles every `10m`.",
  ]);
  t.is(next.steps[0]!.ms, undefined);
  t.is(next.totalMs, undefined);
  t.true(next.partial);
  t.is(next.summary, 'No estimate in all: lastgood could not compute how long these steps take.');
});

test('Flux HelmRelease: upgraded at once when its spec changes, up to its timeout; with its Kustomization, one after the other', (t) => {
  const hr = one('flux-helmrelease/argocd-healthy.yaml');
  t.deepEqual(lines(nextSteps(observed(hr))), [
    'Flux: HelmRelease `default/podinfo` upgrades as soon as its changed spec is applied (a spec change is handled at once, not at its interval `10m`), waiting up to `5m` for the release (`spec.timeout`).',
  ]);
  const chain = upstream('flux-helmrelease/flux2-trace-helmrelease-chain.yaml');
  const next = nextSteps(observed(...chain), { resources: chain.filter((o) => o.kind === 'HelmRelease' || o.kind === 'Kustomization').map(resource) });
  t.deepEqual(lines(next), [
    'Flux: GitRepository `flux-system/flux-system` fetches the merge within `5m` (its `spec.interval`; sooner with a webhook Receiver), and Kustomization `flux-system/infrastructure` applies it at once; it also reconciles every `5m`.',
    'Flux: HelmRelease `default/podinfo` upgrades as soon as its changed spec is applied (a spec change is handled at once, not at its interval `5m`), waiting up to 5m0s for the release (the default `spec.timeout`).',
  ]);
  t.is(next.totalMs, 10 * 60_000, 'the sync, then the upgrade');
  t.is(next.summary, 'About 10m in all by these numbers (the sync, then the upgrade, each as long as its slowest line).');
  // a chart read from git is rebuilt only on a new version (reconcileStrategy ChartVersion, the default)
  const fromGit = clone(hr);
  fromGit.spec.chart.spec.sourceRef = { kind: 'GitRepository', name: 'charts' };
  t.regex(lines(nextSteps(observed(fromGit)))[0]!, /; its chart comes from `GitRepository` `charts`, and a chart changed there without a new version is not rebuilt \(`reconcileStrategy: ChartVersion`\)\.$/);
  fromGit.spec.chart.spec.reconcileStrategy = 'Revision';
  t.notRegex(lines(nextSteps(observed(fromGit)))[0]!, /reconcileStrategy/);
});

test('a suspended Flux object waits for a person', (t) => {
  const ks = clone(one('flux-kustomization/argocd-healthy.yaml'));
  ks.spec.suspend = true;
  const next = nextSteps(observed(ks));
  t.deepEqual(lines(next), ['Flux: Kustomization `default/podinfo` is suspended (`spec.suspend: true`): it applies nothing until someone resumes it.']);
  t.true(next.steps[0]!.needsPerson);
  t.is(next.summary, 'No estimate in all: a step above waits for a person.');
});

// ---- Argo CD -----------------------------------------------------------------------------------

test('Argo CD Application with automated sync: its next refresh, 3 minutes by default', (t) => {
  const next = nextSteps(observed(one('argocd-application/argocd-controller-live-child-application.yaml')));
  t.deepEqual(lines(next), [
    'Argo CD: Application `argocd/argo-workflows` syncs the merge at its next refresh: every 3 minutes by default (`timeout.reconciliation` 120s plus up to 60s of jitter), sooner with a webhook.',
  ]);
  t.is(next.totalMs, 180_000);
  t.false(next.partial);
});

test('Argo CD Application without automated sync, or with it turned off: someone must sync it', (t) => {
  const manual = nextSteps(observed(one('argocd-application/argocd-controller-diff-cache-synced-healthy.yaml')));
  t.deepEqual(lines(manual), ['Argo CD: Application `argo-cd/velero-test` has no automated sync (`spec.syncPolicy.automated`): it will show OutOfSync until someone syncs it.']);
  t.true(manual.steps[0]!.needsPerson);
  t.is(manual.totalMs, undefined);
  // argo-watcher's test data is an Application's spec and status only: named here
  const partial = one('argocd-application/argo-watcher-out-of-sync-multi-source.yaml');
  const off = nextSteps(observed({ ...partial, apiVersion: 'argoproj.io/v1alpha1', kind: 'Application', metadata: { name: 'catalog', namespace: 'argocd' } }));
  t.deepEqual(lines(off), ['Argo CD: Application `argocd/catalog` has its automated sync turned off (`automated.enabled: false`): it will show OutOfSync until someone syncs it.']);
  t.true(off.steps[0]!.needsPerson);
});

// ---- Flagger -----------------------------------------------------------------------------------

const canaryLead = 'Flagger: Canary `test/podinfo` sees the revert as a new revision of `Deployment` `podinfo` and runs a whole analysis before promoting it: ';
const failures = '; each failed check costs one more interval, and at `10` failed checks (`threshold`) Flagger gives up and keeps the primary as it is.';

test('Flagger weight-based canary: interval × maxWeight / stepWeight', (t) => {
  const next = nextSteps(observed(one('flagger-canary-spec/flagger-examples-istio-canary.yaml')));
  t.deepEqual(lines(next), [`${canaryLead}\`15s\` × 10 weight steps (maxWeight \`50\` / stepWeight \`5\`) = about 2m30s${failures}`]);
  t.is(next.totalMs, 150_000);
  const steps = nextSteps(observed(one('flagger-canary-spec/flagger-examples-linkerd-canary-steps.yaml')));
  t.deepEqual(lines(steps), [`${canaryLead}\`15s\` × 11 weight steps (\`stepWeights: [5,10,15,20,25,30,35,40,45,50,55]\`) = about 2m45s${failures}`]);
  t.is(steps.totalMs, 165_000);
});

test('Flagger canary with iterations (A/B testing): interval × iterations; blue/green likewise', (t) => {
  const ab = one('flagger-canary-spec/flagger-examples-istio-abtest.yaml');
  const next = nextSteps(observed(ab));
  t.deepEqual(lines(next), [`${canaryLead}\`15s\` × \`10\` iterations (A/B testing) = about 2m30s${failures}`]);
  t.is(next.totalMs, 150_000);
  const blueGreen = clone(ab);
  delete blueGreen.spec.analysis.match;
  blueGreen.spec.analysis.interval = '1m';
  t.deepEqual(lines(nextSteps(observed(blueGreen))), [`${canaryLead}\`1m\` × \`10\` iterations (blue/green) = about 10m${failures}`]);
  t.is(nextSteps(observed(blueGreen)).totalMs, 10 * 60_000);
});

test('Flagger: a failing revision never promoted may come back without analysis; skipAnalysis promotes at once', (t) => {
  // the weight-based example with the status of Argo CD's failed Canary (lastAppliedSpec ≠ lastPromotedSpec)
  const failed = { ...clone(one('flagger-canary-spec/flagger-examples-istio-canary.yaml')), status: one('flagger-canary/argocd-degraded.yaml').status };
  const next = nextSteps(observed(failed));
  t.deepEqual(lines(next), [
    'Flagger: Canary `test/podinfo` has not promoted the failing revision (`lastAppliedSpec 765c47b8f7`, `lastPromotedSpec fc74df5fc`): if the revert brings `Deployment` `podinfo` back to the pod template Flagger last promoted, and no ConfigMap or Secret it tracks changes, Flagger starts no analysis; otherwise it runs a whole analysis before promoting: '
      + `\`15s\` × 10 weight steps (maxWeight \`50\` / stepWeight \`5\`) = about 2m30s${failures}`,
  ]);
  t.is(next.totalMs, 150_000, 'the slower way counts');
  const skip = clone(one('flagger-canary-spec/flagger-examples-istio-canary.yaml'));
  skip.spec.skipAnalysis = true;
  const skipped = nextSteps(observed(skip));
  t.deepEqual(lines(skipped), ['Flagger: Canary `test/podinfo` has `skipAnalysis: true`: it promotes the revert without analysis once its pods are ready.']);
  t.is(skipped.totalMs, 0);
  t.deepEqual(lines(nextSteps(observed(one('flagger-canary/argocd-degraded.yaml')))), ['Flagger: Canary `default/podinfo` has no analysis (`spec.analysis`): it promotes the revert without analysis once its pods are ready.']);
});

// ---- Argo Rollouts -----------------------------------------------------------------------------

test('Argo Rollout without rollbackWindow: the canary steps run again', (t) => {
  const rollout = one('argo-rollout/argocd-healthy_newWorkloadGeneration.yaml');
  const next = nextSteps(observed(rollout));
  t.deepEqual(lines(next), [
    'Argo Rollouts: Rollout `default/rollout-ref-deployment` has no `rollbackWindow`, so the revert rolls out like a new revision: it runs its 2 canary steps again: timed pauses of about 10s in all (`10s`).',
  ]);
  t.is(next.totalMs, 10_000);
  t.false(next.partial);
});

test('Argo Rollout with rollbackWindow: a fast rollback if the last-known-good is in the window, else the steps', (t) => {
  const rollout = clone(one('argo-rollout/argocd-healthy_newWorkloadGeneration.yaml'));
  rollout.spec.rollbackWindow = { revisions: 3 };
  const next = nextSteps(observed(rollout));
  t.deepEqual(lines(next), [
    'Argo Rollouts: Rollout `default/rollout-ref-deployment` has `rollbackWindow.revisions: 3`: if the last-known-good is among the last `3` revisions before the current one, a fast rollback skips the steps and analysis; otherwise it runs its 2 canary steps again: timed pauses of about 10s in all (`10s`).',
  ]);
  t.is(next.totalMs, 10_000, 'the slower way counts');
});

test('Argo Rollout that had not completed its update: back to stable at once, else the steps, with pauses for a person', (t) => {
  const next = nextSteps(observed(one('argo-rollout/argocd-degraded_abortedRollout.yaml')));
  t.deepEqual(lines(next), [
    'Argo Rollouts: Rollout `default/canary-demo` had not completed its update (stable ReplicaSet `645d5dbc4c`, current `6758949f55`): if the revert brings back the stable pod template, Argo Rollouts returns to it at once, skipping the steps and analysis; otherwise it runs its 6 canary steps again: timed pauses of about 10s in all (`10`), 2 indefinite pauses (`pause: {}`) that someone must promote.',
  ]);
  t.true(next.steps[0]!.needsPerson);
  t.true(next.partial);
  t.is(next.summary, 'At least 10s in all by these numbers (where lastgood cannot tell which way a controller goes, it counts the slower); a step above waits for a person.');
});

test('Argo Rollout blue-green: promoted when the preview is ready, or by a person', (t) => {
  const auto = nextSteps(observed(one('argo-rollout/argocd-bluegreen-healthy_servingActiveService.yaml')));
  t.deepEqual(lines(auto), ['Argo Rollouts: Rollout `default/ks-guestbook-ui` has no `rollbackWindow`, so the revert rolls out like a new revision: it promotes the new ReplicaSet as soon as the preview is ready (blue-green).']);
  t.is(auto.totalMs, 0);
  const manual = nextSteps(observed(one('argo-rollout/rollouts-info-bluegreen-paused.yaml')));
  t.deepEqual(lines(manual), [
    'Argo Rollouts: Rollout `jesse-test/bluegreen-demo` had not completed its update (stable ReplicaSet `6cbccd9f99`, current `74b948fccb`): if the revert brings back the stable pod template, Argo Rollouts returns to it at once, skipping the steps and analysis; otherwise it waits for someone to promote the new ReplicaSet (`autoPromotionEnabled: false`).',
  ]);
  t.true(manual.steps[0]!.needsPerson);
  const delayed = clone(one('argo-rollout/argocd-bluegreen-healthy_servingActiveService.yaml'));
  Object.assign(delayed.spec.strategy.blueGreen, { autoPromotionSeconds: 90, prePromotionAnalysis: { templates: [{ templateName: 'smoke' }] } });
  t.deepEqual(lines(nextSteps(observed(delayed))), [
    'Argo Rollouts: Rollout `default/ks-guestbook-ui` has no `rollbackWindow`, so the revert rolls out like a new revision: it promotes the new ReplicaSet `90` seconds after the preview is ready (`autoPromotionSeconds`), with a pre-promotion analysis lastgood does not time.',
  ]);
  t.is(nextSteps(observed(delayed)).totalMs, 90_000);
});

// ---- together, and what is not the target's --------------------------------------------------------

test('the sync, then the rollout: the total adds the slowest of each; only the target\'s objects get lines', (t) => {
  const app = one('argocd-application/argocd-controller-live-child-application.yaml');
  const canary = one('flagger-canary-spec/flagger-examples-istio-canary.yaml');
  const rollout = one('argo-rollout/argocd-healthy_newWorkloadGeneration.yaml');
  const all = observed(rollout, canary, app, one('flux-kustomization/argocd-healthy.yaml'));
  const next = nextSteps(all, { resources: [resource(app), resource(canary), resource(rollout)] });
  t.deepEqual(next.steps.map((s) => s.object), ['argoproj.io/Application argocd/argo-workflows', 'flagger.app/Canary test/podinfo', 'argoproj.io/Rollout default/rollout-ref-deployment'], 'the sync first, then the target\'s order');
  t.is(next.totalMs, 180_000 + 150_000);
  t.is(next.summary, 'About 5m30s in all by these numbers (the sync, then the rollout, each as long as its slowest line; where lastgood cannot tell which way a controller goes, it counts the slower).');
  t.deepEqual(nextSteps([]), { steps: [], partial: false });
  t.deepEqual(nextSteps(observed(one('pod/gitops-engine-pod-crashloop.yaml'))).steps, [], 'a Pod has no next step');
});

test('durations that cannot be read are said, never thrown', (t) => {
  const ks = clone(one('flux-kustomization/argocd-healthy.yaml'));
  ks.spec.interval = 'ten minutes';
  const repo = { apiVersion: 'source.toolkit.fluxcd.io/v1', kind: 'GitRepository', metadata: { name: 'podinfo', namespace: 'default' }, spec: { interval: '5 m' } } as KubeObject;
  t.deepEqual(lines(nextSteps(observed(ks, repo), { resources: [resource(ks)] })), [
    'Flux: GitRepository `default/podinfo` fetches the merge at its `spec.interval`, which could not be read (`5 m`) (sooner with a webhook Receiver), and Kustomization `default/podinfo` applies it at once; its own `spec.interval` `ten minutes` could not be read.',
  ]);
  const hr = clone(one('flux-helmrelease/argocd-healthy.yaml'));
  Object.assign(hr.spec, { interval: 42, timeout: 'soon' });
  const helm = nextSteps(observed(hr));
  t.deepEqual(lines(helm), ['Flux: HelmRelease `default/podinfo` upgrades as soon as its changed spec is applied (a spec change is handled at once; its `spec.interval` `42` could not be read); its `spec.timeout` `soon` could not be read.']);
  t.is(helm.totalMs, undefined);
  const canary = clone(one('flagger-canary-spec/flagger-examples-istio-canary.yaml'));
  canary.spec.analysis.interval = '1x';
  t.is(lines(nextSteps(observed(canary)))[0], `${canaryLead}\`1x\` (could not be read; Flagger then uses 60s) × 10 weight steps (maxWeight \`50\` / stepWeight \`5\`) = about 10m${failures}`);
  canary.spec.analysis.interval = '2s';
  t.is(lines(nextSteps(observed(canary)))[0], `${canaryLead}\`2s\`, which Flagger raises to 10s, × 10 weight steps (maxWeight \`50\` / stepWeight \`5\`) = about 1m40s${failures}`);
  const rollout = clone(one('argo-rollout/argocd-healthy_newWorkloadGeneration.yaml'));
  rollout.spec.strategy.canary.steps.push({ pause: { duration: 'forever' } }, { pause: { duration: '90' } });
  const r = nextSteps(observed(rollout));
  t.deepEqual(lines(r), [
    'Argo Rollouts: Rollout `default/rollout-ref-deployment` has no `rollbackWindow`, so the revert rolls out like a new revision: it runs its 4 canary steps again: timed pauses of about 1m40s in all (`10s`, `90`), 1 pause whose duration could not be read (`forever`).',
  ]);
  t.is(r.totalMs, undefined);
  // whatever the spec and status hold, each kind gives its line and never throws
  const kinds = [
    ['kustomize.toolkit.fluxcd.io/v1', 'Kustomization'], ['helm.toolkit.fluxcd.io/v2', 'HelmRelease'], ['argoproj.io/v1alpha1', 'Application'],
    ['flagger.app/v1beta1', 'Canary'], ['argoproj.io/v1alpha1', 'Rollout'],
  ] as const;
  fc.assert(
    fc.property(fc.constantFrom(...kinds), fc.anything(), fc.anything(), ([apiVersion, kind], spec, status) => {
      const next = nextSteps(observed({ apiVersion, kind, metadata: { name: 'x', namespace: 'y' }, spec, status } as KubeObject));
      return next.steps.length === 1 && typeof next.summary === 'string';
    }),
    { numRuns: 500 },
  );
});

// ---- in the pull request -------------------------------------------------------------------------

const md = new MarkdownIt({ html: true, linkify: true });

function prInput(next?: NextSteps): PullRequestInput {
  const person = { name: 'dev', email: 'dev@example.com', timestamp: 1_793_000_000, timezoneOffset: 0 };
  const evidence = [{ apiVersion: 'flagger.app/v1beta1', kind: 'Canary', groupKind: 'flagger.app/Canary', namespace: 'test', name: 'podinfo', state: 'failed', reason: 'Failed', message: 'Canary analysis failed' }] as Evidence[];
  const verdict: Verdict = { target: 'podinfo', verdict: 'failed', class: 'analysis', summary: 'failed (analysis)', evidence };
  const located = {
    bad: [{ oid: 'b'.repeat(40), parents: [], message: 'podinfo 6.0.1', tree: '0'.repeat(40), author: person, committer: person }], later: [],
    lastKnownGood: 'a'.repeat(40), verified: false, how: 'revision', explanation: 'the commit before the first bad one', touched: [], revert: {} as Located['revert'],
  } as unknown as Located;
  return { target: 'podinfo', paths: ['apps/podinfo/'], strategy: 'revert', verdict, located, now: new Date('2026-11-01T12:05:00Z'), diffStat: ' apps/podinfo/deployment.yaml | 2 +-\n 1 file changed', ...(next ? { next } : {}) };
}

test('the pull request says what happens after the merge, the cluster\'s text quoted as code, no link made of it', (t) => {
  const canary = clone(one('flagger-canary-spec/flagger-examples-istio-canary.yaml'));
  // a snapshot's object may be named anything: its name must show, and make nothing
  canary.metadata.name = 'podinfo [click](https://evil.example/c) @acme/admins #4242 <img src=x>';
  canary.spec.analysis.interval = '15s <a href="https://evil.example/a">a</a>';
  const app = one('argocd-application/argocd-controller-live-child-application.yaml');
  const next = nextSteps(observed(app, canary));
  const { body } = pullRequestText(prInput(next));
  const html = md.render(body);
  t.true(html.includes('<h3>After merge</h3>'), html);
  const section = /<h3>After merge<\/h3>\n<ul>\n([\s\S]*?)<\/ul>\n<p>([\s\S]*?)<\/p>/.exec(html);
  t.truthy(section, html);
  const items = section![1]!.match(/<li>[\s\S]*?<\/li>/g) ?? [];
  t.is(items.length, 2);
  t.true(items[0]!.startsWith('<li>Argo CD: Application <code>argocd/argo-workflows</code> syncs the merge'), items[0]);
  t.true(items[1]!.includes('<code>test/podinfo [click](https://evil.example/c) @acme/admins #4242 &lt;img src=x&gt;</code>'), items[1]);
  // the interval cannot be read: Flagger's 60s × 10 steps, after Argo CD's 3m
  t.true(section![2]!.startsWith('About 13m in all by these numbers'), section![2]);
  // nothing of the cluster's text outside code: no link, image or raw HTML from it
  const outside = section![0].replace(/<code>[\s\S]*?<\/code>/g, '');
  for (const token of ['evil.example', '@acme', '#4242', '<img', '<a ']) t.false(outside.includes(token), `${token} outside code: ${outside}`);
  t.false(/<a href/.test(html), 'no link in the body at all (no commit links given)');
  // in the body's order: after the last-known-good, before the changes
  t.true(body.indexOf('### Last-known-good') < body.indexOf('### After merge') && body.indexOf('### After merge') < body.indexOf('### Changes'));
});

test('without next steps the body has no after-merge heading and no gap', (t) => {
  for (const next of [undefined, nextSteps([])]) {
    const { body } = pullRequestText(prInput(next));
    t.false(body.includes('After merge'));
    t.false(body.includes('\n\n\n'));
    t.regex(body, /Found by: `the commit before the first bad one`\.\n\n### Changes/);
  }
});
