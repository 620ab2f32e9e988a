import test from 'ava';
import fc from 'fast-check';
import type { OnFailureConfig, PolicyConfig } from '../src/config/schema.ts';
import { decide, type DecideTarget } from '../src/decide/decide.ts';
import type { ActionKind, Evidence, GuardName, RepoGuards } from '../src/decide/types.ts';
import { verdictFor } from '../src/decide/verdict.ts';
import { parseConfig } from '../src/config/load.ts';
import { resolveOnFailure, resolveTarget } from '../src/config/schema.ts';

/** Policies × failure classes × guards, with plain data and a fixed clock (issue 7). */

const now = new Date('2026-11-01T12:20:00Z');
const ago = (minutes: number) => new Date(now.getTime() - minutes * 60_000).toISOString();
const SHA_BAD = 'c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3';
const SHA_NEW = 'e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5';
const SHA_APPLIED = 'a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2';
const SHA_REVERT = 'f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0';

const canary = (state: Evidence['state'], extra: Partial<Evidence> = {}): Evidence => ({
  apiVersion: 'flagger.app/v1beta1', kind: 'Canary', groupKind: 'flagger.app/Canary', namespace: 'prod', name: 'podinfo',
  state, reason: state === 'failed' ? 'Failed' : state === 'healthy' ? 'Succeeded' : 'Progressing', message: '', ...extra,
});
const failedCanary = (minutes: number, extra: Partial<Evidence> = {}) => canary('failed', { since: ago(minutes), failureClass: 'analysis', terminal: true, ...extra });
const promotionFailed = (minutes: number) => canary('failed', { reason: 'PromotionFailed', since: ago(minutes), failureClass: 'promotion', terminal: true });
const kustomization = (state: Evidence['state'], extra: Partial<Evidence> = {}): Evidence => ({
  apiVersion: 'kustomize.toolkit.fluxcd.io/v1', kind: 'Kustomization', groupKind: 'kustomize.toolkit.fluxcd.io/Kustomization', namespace: 'flux-system', name: 'apps',
  state, reason: state === 'healthy' ? 'ReconciliationSucceeded' : state === 'failed' ? 'HealthCheckFailed' : 'Progressing', message: '', ...extra,
});
const promotion = (name: string, state: Evidence['state'], extra: Partial<Evidence> = {}): Evidence => ({
  apiVersion: 'kargo.akuity.io/v1alpha1', kind: 'Promotion', groupKind: 'kargo.akuity.io/Promotion', namespace: 'kargo-demo', name,
  state, reason: state === 'failed' ? 'Errored' : state === 'progressing' ? 'Running' : 'Succeeded', message: '', ...extra,
});
const application = (state: Evidence['state'], reason: string): Evidence => ({
  apiVersion: 'argoproj.io/v1alpha1', kind: 'Application', groupKind: 'argoproj.io/Application', namespace: 'argocd', name: 'podinfo-prod', state, reason, message: '',
});

const DEFAULTS: OnFailureConfig = { analysis: 'revert', promotion: { wait: '10m', then: 'revert' }, stuck: 'alert' };
// policies are stated as lastgood.yaml writes them, and resolved as the config loader resolves them
const baseTarget = {
  name: 'podinfo-prod', stuckAfterMs: 15 * 60_000, confirmations: 2, onFailure: resolveOnFailure(DEFAULTS),
  settle: true, maxAgeMs: 20 * 60_000 as number | undefined, cooldownMs: 30 * 60_000, freezeUntil: undefined as string | undefined,
};

interface Row {
  name: string;
  evidence: Evidence[];
  target?: Partial<DecideTarget>;
  onFailure?: Partial<OnFailureConfig>;
  observations?: number;
  guards?: RepoGuards;
  action: ActionKind;
  reason: RegExp;
  heldBy?: GuardName;
  hook?: boolean;
}

const hookPolicy = (then: 'revert' | 'alert' | 'none', extra: Record<string, unknown> = {}): PolicyConfig =>
  ({ hook: { command: ['./heal.sh'], timeout: '30s' }, then, onHookFailure: 'alert', ...extra }) as PolicyConfig;

const rows: Row[] = [
  // analysis × revert × confirmations
  { name: 'analysis revert: confirmed by two assessments', evidence: [failedCanary(3, { terminal: false })], observations: 2, action: 'revert', reason: /^failed \(analysis\): Canary prod\/podinfo Failed 3m ago, 2\/2 confirmations, revert$/ },
  { name: 'analysis revert: one assessment, not final: wait for the next', evidence: [failedCanary(3, { terminal: false })], observations: 1, action: 'wait', heldBy: 'confirmations', reason: /1\/2 confirmations$/ },
  { name: 'analysis revert: one assessment of a final (terminal) verdict acts', evidence: [failedCanary(3)], action: 'revert', reason: /the engine's verdict is final \(no further assessment can change it\), revert$/ },
  { name: 'analysis revert: confirmations 5 and a non-terminal failure seen 4 times waits', evidence: [failedCanary(3, { terminal: false })], target: { confirmations: 5 }, observations: 4, action: 'wait', heldBy: 'confirmations', reason: /4\/5 confirmations/ },
  // analysis × alert / none
  { name: 'analysis alert', evidence: [failedCanary(3)], onFailure: { analysis: 'alert' }, action: 'alert', reason: /, alert$/ },
  { name: 'analysis none: ignored', evidence: [failedCanary(3)], onFailure: { analysis: 'none' }, action: 'none', reason: /ignored: the policy for analysis failures is none/ },
  // promotion × wait
  { name: 'promotion wait 10m: 5m old waits', evidence: [promotionFailed(5)], action: 'wait', heldBy: 'wait', reason: /waiting 5m more for it to heal, then revert$/ },
  { name: 'promotion wait 10m: 11m old reverts', evidence: [promotionFailed(11)], action: 'revert', reason: /not healed within 10m, revert$/ },
  { name: 'promotion wait then alert: 11m old alerts', evidence: [promotionFailed(11)], onFailure: { promotion: { wait: '10m', then: 'alert' } }, action: 'alert', reason: /not healed within 10m, alert$/ },
  { name: 'promotion healed within the window: healthy, nothing to do', evidence: [canary('healthy', { since: ago(1) })], action: 'none', reason: /^healthy$/ },
  { name: 'promotion revert: at once', evidence: [promotionFailed(1)], onFailure: { promotion: 'revert' }, action: 'revert', reason: /revert$/ },
  { name: 'promotion none', evidence: [promotionFailed(11)], onFailure: { promotion: 'none' }, action: 'none', reason: /policy for promotion failures is none/ },
  { name: 'mixed analysis + promotion failures are analysis', evidence: [promotionFailed(5), kustomization('failed', { since: ago(5), failureClass: 'analysis', terminal: true })], action: 'revert', reason: /^failed \(analysis\)/ },
  // stuck
  { name: 'stuck alert (default)', evidence: [kustomization('progressing', { since: ago(20) })], action: 'alert', reason: /^stuck: .*, alert$/ },
  { name: 'stuck revert', evidence: [kustomization('progressing', { since: ago(20) })], onFailure: { stuck: 'revert' }, action: 'revert', reason: /revert$/ },
  { name: 'stuck none', evidence: [kustomization('progressing', { since: ago(20) })], onFailure: { stuck: 'none' }, action: 'none', reason: /ignored/ },
  { name: 'stuck wait counts from when it became stuck (5m ago), not from progress start', evidence: [kustomization('progressing', { since: ago(20) })], onFailure: { stuck: { wait: '10m', then: 'revert' } }, action: 'wait', heldBy: 'wait', reason: /waiting 5m more/ },
  { name: 'stuck is not yet stuck: progressing, nothing to do', evidence: [kustomization('progressing', { since: ago(10) })], onFailure: { stuck: 'revert' }, action: 'none', reason: /^progressing/ },
  // maxAge
  { name: 'maxAge: a 45m old failure is ignored with the reason', evidence: [failedCanary(45)], action: 'none', heldBy: 'maxAge', reason: /^ignored: failure is 45m old, older than maxAge 20m; failed \(analysis\)/ },
  { name: 'maxAge off: a 45m old failure is reverted', evidence: [failedCanary(45)], target: { maxAgeMs: undefined }, action: 'revert', reason: /revert$/ },
  { name: 'maxAge never silences an alert', evidence: [failedCanary(45)], onFailure: { analysis: 'alert' }, action: 'alert', reason: /alert$/ },
  { name: 'maxAge: promotion 25m old (wait 10m) is ignored', evidence: [promotionFailed(25)], action: 'none', heldBy: 'maxAge', reason: /^ignored: failure is 25m old/ },
  { name: 'maxAge for stuck counts from when it became stuck', evidence: [kustomization('progressing', { since: ago(30) })], onFailure: { stuck: 'revert' }, action: 'revert', reason: /revert$/ },
  { name: 'maxAge beats a freeze (ignored is final)', evidence: [failedCanary(45)], target: { freezeUntil: '2026-11-01T13:00:00Z' }, action: 'none', heldBy: 'maxAge', reason: /^ignored/ },
  // freeze
  { name: 'freezeUntil in the future holds a revert', evidence: [failedCanary(3)], target: { freezeUntil: '2026-11-01T13:00:00Z' }, action: 'wait', heldBy: 'freeze', reason: /^held: frozen until 2026-11-01T13:00:00Z \(freezeUntil\); failed \(analysis\)/ },
  { name: 'freezeUntil in the past holds nothing', evidence: [failedCanary(3)], target: { freezeUntil: '2026-11-01T12:00:00Z' }, action: 'revert', reason: /revert$/ },
  { name: 'a freeze never holds an alert', evidence: [failedCanary(3)], target: { freezeUntil: '2026-11-01T13:00:00Z' }, onFailure: { analysis: 'alert' }, action: 'alert', reason: /alert$/ },
  { name: 'hold annotation on a healthy object of the target holds the revert', evidence: [failedCanary(3), kustomization('healthy', { hold: 'incident 42: DB migration' })], action: 'wait', heldBy: 'hold', reason: /^held: Kustomization flux-system\/apps: incident 42: DB migration \(annotation lastgood\.dev\/hold\)/ },
  // settle
  { name: 'settle: another Kargo Promotion Running holds the revert', evidence: [promotion('prod-1', 'failed', { since: ago(12), failureClass: 'promotion', terminal: true, attempted: { sha: SHA_BAD } }), promotion('prod-2', 'progressing', { since: ago(1) })], action: 'wait', heldBy: 'settle', reason: /^held: another promotion is running \(Promotion kargo-demo\/prod-2 Running\); failed \(promotion\)/ },
  { name: 'settle: a Pending Kargo Promotion holds too (Kargo\'s "settled")', evidence: [promotion('prod-1', 'failed', { since: ago(12), failureClass: 'promotion', terminal: true }), promotion('prod-2', 'progressing', { reason: 'Pending' })], action: 'wait', heldBy: 'settle', reason: /prod-2 Pending/ },
  { name: 'settle off: the Running Promotion does not hold', evidence: [promotion('prod-1', 'failed', { since: ago(12), failureClass: 'promotion', terminal: true }), promotion('prod-2', 'progressing', { since: ago(1) })], target: { settle: false }, action: 'revert', reason: /revert$/ },
  { name: 'settle: an Argo CD sync running holds', evidence: [failedCanary(3), application('progressing', 'SyncRunning')], action: 'wait', heldBy: 'settle', reason: /Application argocd\/podinfo-prod SyncRunning/ },
  { name: 'settle: an Argo CD Application progressing without an operation does not hold', evidence: [failedCanary(3), application('progressing', 'Progressing')], action: 'revert', reason: /revert$/ },
  { name: 'settle: an assessor-set inFlight holds', evidence: [failedCanary(3), { ...application('progressing', 'Whatever'), inFlight: true }], action: 'wait', heldBy: 'settle', reason: /held: another promotion is running/ },
  { name: 'settle: Flux reconciling a newer revision holds', evidence: [failedCanary(3), kustomization('progressing', { message: `Fetching manifests for revision main@sha1:${SHA_NEW} with a timeout of 5m`, attempted: { sha: SHA_NEW }, lastSucceeded: { sha: SHA_APPLIED } })], action: 'wait', heldBy: 'settle', reason: /Kustomization flux-system\/apps Progressing at e5e5e5e5e5e5/ },
  { name: 'settle: Flux re-reconciling the revision it applied is routine', evidence: [failedCanary(3), kustomization('progressing', { message: `Applying revision main@sha1:${SHA_APPLIED}`, attempted: { sha: SHA_APPLIED }, lastSucceeded: { sha: SHA_APPLIED } })], action: 'revert', reason: /revert$/ },
  { name: 'settle: Flux reconciling the failed revision itself is not another promotion', evidence: [promotion('prod-1', 'failed', { since: ago(12), failureClass: 'promotion', terminal: true, attempted: { sha: SHA_BAD } }), kustomization('progressing', { message: `Health check in progress for revision main@sha1:${SHA_BAD}`, lastSucceeded: { sha: SHA_APPLIED } })], action: 'revert', reason: /revert$/ },
  { name: 'settle: a stuck Kargo Promotion is the failure, not another promotion', evidence: [promotion('prod-1', 'progressing', { since: ago(40) })], onFailure: { stuck: 'revert' }, target: { maxAgeMs: undefined }, action: 'revert', reason: /^stuck: .*revert$/ },
  { name: 'settle: a stuck target with a newer promotion just started is held', evidence: [promotion('prod-1', 'progressing', { since: ago(40) }), promotion('prod-2', 'progressing', { reason: 'Pending', since: ago(1) })], onFailure: { stuck: 'revert' }, target: { maxAgeMs: undefined }, action: 'wait', heldBy: 'settle', reason: /prod-2 Pending/ },
  { name: 'settle never holds an alert', evidence: [promotion('prod-1', 'failed', { since: ago(12), failureClass: 'promotion', terminal: true }), promotion('prod-2', 'progressing')], onFailure: { promotion: 'alert' }, action: 'alert', reason: /alert$/ },
  // cooldown
  { name: 'cooldown: a second revert 10m after the last one (the cluster runs it) is held', evidence: [failedCanary(5)], guards: { lastRevert: { commit: SHA_REVERT, at: ago(10), deployed: true } }, action: 'wait', heldBy: 'cooldown', reason: /^held: cooldown: lastgood reverted this target 10m ago \(f0f0f0f0f0f0\), cooldown 30m; failed/ },
  { name: 'cooldown over: 40m after the last revert', evidence: [failedCanary(5)], guards: { lastRevert: { commit: SHA_REVERT, at: ago(40), deployed: true } }, action: 'revert', reason: /revert$/ },
  { name: 'cooldown: the failure predates the revert (sync not caught up): not a second revert', evidence: [failedCanary(5)], guards: { lastRevert: { commit: SHA_REVERT, at: ago(2), deployed: false } }, action: 'revert', reason: /revert$/ },
  { name: 'cooldown by time when no revision is known: failure after the revert is held', evidence: [failedCanary(5)], guards: { lastRevert: { commit: SHA_REVERT, at: ago(8) } }, action: 'wait', heldBy: 'cooldown', reason: /cooldown/ },
  { name: 'cooldown by time when no revision is known: failure before the revert is not', evidence: [failedCanary(5)], guards: { lastRevert: { commit: SHA_REVERT, at: ago(4) } }, action: 'revert', reason: /revert$/ },
  { name: 'cooldown off', evidence: [failedCanary(5)], target: { cooldownMs: 0 }, guards: { lastRevert: { commit: SHA_REVERT, at: ago(10), deployed: true } }, action: 'revert', reason: /revert$/ },
  // no revert of a revert
  { name: 'the failing revision is lastgood\'s own revert: alert, never revert', evidence: [failedCanary(5)], guards: { revertOfRevert: { commit: SHA_REVERT, target: 'podinfo-prod' } }, action: 'alert', heldBy: 'revert-of-revert', reason: /the failing revision f0f0f0f0f0f0 is lastgood's own revert for podinfo-prod: lastgood never reverts a revert/ },
  { name: 'revert of a revert under cooldown still alerts (a person must look)', evidence: [failedCanary(5)], guards: { revertOfRevert: { commit: SHA_REVERT, target: 'podinfo-prod' }, lastRevert: { commit: SHA_REVERT, at: ago(10), deployed: true } }, action: 'alert', heldBy: 'revert-of-revert', reason: /never reverts a revert/ },
  // hooks
  { name: 'hook then revert: revert with the hook to run first', evidence: [failedCanary(3)], onFailure: { analysis: hookPolicy('revert') }, action: 'revert', hook: true, reason: /hook \(\.\/heal\.sh\), then revert$/ },
  { name: 'hook then none: the hook is the recovery', evidence: [failedCanary(3)], onFailure: { analysis: hookPolicy('none') }, action: 'none', hook: true, reason: /then none$/ },
  { name: 'hook with wait: no hook before the wait is over', evidence: [promotionFailed(3)], onFailure: { promotion: hookPolicy('revert', { wait: '10m' }) }, action: 'wait', heldBy: 'wait', reason: /waiting 7m more for it to heal, then hook \(\.\/heal\.sh\), then revert/ },
  { name: 'a freeze holds a hook too', evidence: [failedCanary(3)], target: { freezeUntil: '2026-11-01T13:00:00Z' }, onFailure: { analysis: hookPolicy('none') }, action: 'wait', heldBy: 'freeze', reason: /^held: frozen/ },
  { name: 'hook then alert under settle is held', evidence: [promotion('prod-1', 'failed', { since: ago(12), failureClass: 'promotion', terminal: true }), promotion('prod-2', 'progressing')], onFailure: { promotion: hookPolicy('alert') }, action: 'wait', heldBy: 'settle', reason: /^held: another promotion is running/ },
];

function decideRow(row: Row) {
  const target = { ...baseTarget, ...row.target, onFailure: resolveOnFailure({ ...DEFAULTS, ...row.onFailure }) };
  const verdict = verdictFor(target, row.evidence, now);
  return decide({ verdict, target, now, observations: row.observations ?? 1, guards: row.guards });
}

for (const row of rows) {
  test(`decide: ${row.name}`, (t) => {
    const decision = decideRow(row);
    t.is(decision.action, row.action, decision.reason);
    t.regex(decision.reason, row.reason);
    t.is(decision.heldBy, row.heldBy, decision.reason);
    t.is(decision.hook !== undefined, row.hook ?? false);
  });
}

test('every guard that holds a revert back says so first in the reason: "held: …", "ignored: …", or the revert-of-revert refusal', (t) => {
  const guarded = rows.filter((r) => r.heldBy && r.heldBy !== 'confirmations' && r.heldBy !== 'wait');
  t.true(new Set(guarded.map((r) => r.heldBy)).size >= 6, 'every guard has a row');
  for (const row of guarded) {
    const { reason } = decideRow(row);
    t.regex(reason, row.heldBy === 'revert-of-revert' ? /never reverts a revert/ : /^(held|ignored): /, row.name);
  }
});

/* Property: with `alert` or `none` (or wait-then-alert) for a class, no input makes decide revert for that class. */

const CLASSES = ['analysis', 'promotion', 'stuck'] as const;
const anyPolicy: fc.Arbitrary<PolicyConfig> = fc.oneof(
  fc.constantFrom<PolicyConfig>('revert', 'alert', 'none', { wait: '5m', then: 'revert' }, { wait: '5m', then: 'alert' }),
  fc.constantFrom('revert', 'alert', 'none').map((then) => hookPolicy(then as 'revert')),
);
const safePolicy: fc.Arbitrary<PolicyConfig> = fc.constantFrom<PolicyConfig>('alert', 'none', { wait: '5m', then: 'alert' }, { wait: '1m', then: 'alert' });

const evidenceArb: fc.Arbitrary<Evidence> = fc.record({
  kind: fc.constantFrom('Canary', 'Kustomization', 'Promotion', 'Application', 'Deployment'),
  state: fc.constantFrom<Evidence['state']>('healthy', 'progressing', 'suspended', 'failed', 'unknown'),
  minutes: fc.option(fc.integer({ min: -5, max: 600 }), { nil: undefined }),
  failureClass: fc.constantFrom<'analysis' | 'promotion'>('analysis', 'promotion'),
  terminal: fc.boolean(),
  hold: fc.option(fc.string(), { nil: undefined }),
  inFlight: fc.boolean(),
  sha: fc.option(fc.constantFrom(SHA_BAD, SHA_NEW, SHA_APPLIED, SHA_REVERT), { nil: undefined }),
  reason: fc.constantFrom('Failed', 'Running', 'Pending', 'SyncRunning', 'Progressing', 'Errored'),
}).map((r) => {
  const groups: Record<string, string> = { Canary: 'flagger.app', Kustomization: 'kustomize.toolkit.fluxcd.io', Promotion: 'kargo.akuity.io', Application: 'argoproj.io', Deployment: 'apps' };
  const e: Evidence = { apiVersion: `${groups[r.kind]}/v1`, kind: r.kind, groupKind: `${groups[r.kind]}/${r.kind}`, namespace: 'ns', name: r.kind.toLowerCase(), state: r.state, reason: r.reason, message: '' };
  if (r.minutes !== undefined) e.since = ago(r.minutes);
  if (r.state === 'failed') e.failureClass = r.failureClass;
  if (r.terminal) e.terminal = true;
  if (r.hold !== undefined) e.hold = r.hold;
  if (r.inFlight) e.inFlight = true;
  if (r.sha) e.attempted = { sha: r.sha };
  return e;
});

const guardsArb: fc.Arbitrary<RepoGuards | undefined> = fc.option(
  fc.record({
    lastRevert: fc.option(fc.record({ commit: fc.constant(SHA_REVERT), at: fc.integer({ min: 0, max: 120 }).map(ago), deployed: fc.option(fc.boolean(), { nil: undefined }) }), { nil: undefined }),
    revertOfRevert: fc.option(fc.constant({ commit: SHA_REVERT, target: 'podinfo-prod' }), { nil: undefined }),
  }).map((g) => JSON.parse(JSON.stringify(g)) as RepoGuards),
  { nil: undefined },
);

test('property: with alert or none for a class, no input yields a revert (or a hook) for that class', (t) => {
  fc.assert(
    fc.property(
      fc.constantFrom(...CLASSES), safePolicy, anyPolicy, anyPolicy,
      fc.array(evidenceArb, { minLength: 1, maxLength: 5 }),
      fc.integer({ min: 1, max: 4 }), fc.integer({ min: 0, max: 6 }), fc.boolean(),
      fc.option(fc.integer({ min: 1, max: 120 }), { nil: undefined }), fc.integer({ min: 0, max: 60 }), fc.option(fc.integer({ min: -60, max: 60 }), { nil: undefined }),
      guardsArb,
      (cls, safe, other1, other2, evidence, confirmations, observations, settle, maxAgeMin, cooldownMin, freezeMin, guards) => {
        const others = CLASSES.filter((c) => c !== cls);
        const onFailure = { [cls]: safe, [others[0]!]: other1, [others[1]!]: other2 } as OnFailureConfig;
        const target = {
          ...baseTarget, onFailure: resolveOnFailure(onFailure), confirmations, settle,
          maxAgeMs: maxAgeMin === undefined ? undefined : maxAgeMin * 60_000, cooldownMs: cooldownMin * 60_000,
          freezeUntil: freezeMin === undefined ? undefined : new Date(now.getTime() + freezeMin * 60_000).toISOString(),
        };
        const verdict = verdictFor(target, evidence, now);
        const decision = decide({ verdict, target, now, observations, guards });
        const verdictClass = verdict.verdict === 'stuck' ? 'stuck' : verdict.class;
        if (verdictClass === cls) {
          if (decision.action === 'revert' || decision.hook) throw new Error(`${cls} with policy ${JSON.stringify(safe)} decided ${decision.action}${decision.hook ? ' with a hook' : ''}: ${decision.reason}`);
        }
      },
    ),
    { numRuns: 3000, seed: 20261101 },
  );
  t.pass();
});

test('property: decide is pure (same input, same decision) and always gives a reason', (t) => {
  fc.assert(
    fc.property(fc.array(evidenceArb, { minLength: 1, maxLength: 4 }), anyPolicy, anyPolicy, anyPolicy, fc.integer({ min: 1, max: 3 }), guardsArb, (evidence, a, p, s, observations, guards) => {
      const target = { ...baseTarget, onFailure: resolveOnFailure({ analysis: a, promotion: p, stuck: s }) };
      const verdict = verdictFor(target, evidence, now);
      const one = decide({ verdict, target, now, observations, guards });
      const two = decide({ verdict: structuredClone(verdict), target, now, observations, guards });
      if (JSON.stringify(one) !== JSON.stringify(two)) throw new Error('not deterministic');
      if (!one.reason) throw new Error('no reason');
      if (one.action === 'revert' && verdict.verdict !== 'failed' && verdict.verdict !== 'stuck') throw new Error(`revert on a ${verdict.verdict} target`);
    }),
    { numRuns: 1000, seed: 7 },
  );
  t.pass();
});

/* Config: policies and guards parse, resolve per target, and refuse what could never act. */

const configText = (extra: string) => `repo:
  url: ./repo
${extra}targets:
  - name: app
    paths: [apps/app/]
    resources:
      - { apiVersion: apps/v1, kind: Deployment, namespace: prod, name: app }
`;

test('config: guard defaults, and per-target overrides', (t) => {
  const config = parseConfig(configText(''), 'c.yaml');
  const target = resolveTarget(config, config.targets[0]!);
  t.is(target.settle, true);
  t.is(target.maxAgeMs, 20 * 60_000);
  t.is(target.cooldownMs, 30 * 60_000);
  t.is(target.freezeUntil, undefined);
  const custom = parseConfig(configText('defaults:\n  maxAge: off\n  cooldown: off\n  freezeUntil: "2026-12-24T00:00:00Z"\n').replace('    resources:', '    settle: false\n    maxAge: 1h\n    onFailure:\n      analysis: { hook: { url: "https://hooks.example/heal" }, then: revert }\n      stuck: { hook: { command: [./heal.sh, --fast], timeout: 5s }, then: none, onHookFailure: revert }\n    resources:'), 'c.yaml');
  const ct = resolveTarget(custom, custom.targets[0]!);
  t.is(ct.settle, false);
  t.is(ct.maxAgeMs, 3_600_000);
  t.is(ct.cooldownMs, 0);
  t.is(ct.freezeUntil, '2026-12-24T00:00:00Z');
  t.deepEqual(ct.onFailure.analysis, { hook: { url: 'https://hooks.example/heal', timeoutMs: 60_000 }, then: 'revert', onHookFailure: 'alert' });
  t.deepEqual(ct.onFailure.stuck, { hook: { command: ['./heal.sh', '--fast'], timeoutMs: 5_000 }, then: 'none', onHookFailure: 'revert' });
  t.deepEqual(ct.onFailure.promotion, { waitMs: 10 * 60_000, then: 'revert' });
});

test('config: a wait as long as maxAge is refused (it could never act)', (t) => {
  t.throws(() => parseConfig(configText('defaults:\n  onFailure: { promotion: { wait: 30m, then: revert } }\n'), 'c.yaml'), { message: /onFailure\.promotion waits 30m, not less than maxAge 20m/ });
  t.notThrows(() => parseConfig(configText('defaults:\n  maxAge: off\n  onFailure: { promotion: { wait: 30m, then: revert } }\n'), 'c.yaml'));
});

test('config: bad policies and guards are refused with the field', (t) => {
  t.throws(() => parseConfig(configText('defaults:\n  onFailure: { analysis: rollback }\n'), 'c.yaml'), { message: /defaults\.onFailure\.analysis/ });
  t.throws(() => parseConfig(configText('defaults:\n  freezeUntil: tomorrow\n'), 'c.yaml'), { message: /defaults\.freezeUntil/ });
  t.throws(() => parseConfig(configText('defaults:\n  cooldown: a while\n'), 'c.yaml'), { message: /defaults\.cooldown/ });
  t.throws(() => parseConfig(configText('defaults:\n  onFailure: { stuck: { hook: { command: [] }, then: revert } }\n'), 'c.yaml'), { message: /defaults\.onFailure\.stuck/ });
  t.throws(() => parseConfig(configText('notify:\n  slack: { urlFrom: { value: "https://hooks.slack.com/x" } }\n'), 'c.yaml'), { message: /notify\.slack\.urlFrom/ });
});
