import test from 'ava';
import fc from 'fast-check';
import { decide } from '../src/decide/decide.ts';
import type { Evidence } from '../src/decide/types.ts';
import { evidenceFor, verdictFor } from '../src/decide/verdict.ts';
import { ageMs, CLOCK_SKEW_MS } from '../src/observe/times.ts';
import { resolveTarget } from '../src/config/schema.ts';
import { runAction } from './support/action.ts';
import { lastgood } from './support/cli.ts';
import { testClock } from './support/clock.ts';
import { commit, fingerprint, git, makeRepo, tempDir, writeFile } from './support/git.ts';
import { startKubeEmulator } from './support/kube-emulator.ts';
import { kustomization, yamlDocs } from './support/objects.ts';
import { backend, commitsSince, config, configText, evaluations, gitopsRepo, iso, startController, until } from './support/controller-scenario.ts';

/**
 * Issue 19 class 3: one rule of time for every door. A time up to CLOCK_SKEW_MS ahead of the clock
 * is read as "now" (an age is never negative); beyond it the observation is refused as evidence,
 * with the field, the time and the clock in the reason, and nothing is done about the target: by
 * the CLI, the Action and the controller alike.
 */

const MIN = 60_000;
const KUSTOMIZATION_ONLY = `
      - { apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: apps }`;

const cfg = config(configText({ url: '/nowhere', resources: KUSTOMIZATION_ONLY, defaults: '  cooldown: 30m\n' }));
const target = resolveTarget(cfg, cfg.targets[0]!);
const SHA_BAD = 'c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3';
const SHA_OK = 'c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2';

function observed(ready: 'True' | 'False' | 'Unknown', since: number) {
  return [{ object: kustomization({ attempted: `main@sha1:${SHA_BAD}`, applied: `main@sha1:${SHA_OK}`, ready, since: iso(since) }) as never, source: 'cluster.yaml' }];
}

test('property: within the skew tolerance a time is "now": no age, wait, cooldown or summary is ever negative', (t) => {
  fc.assert(
    fc.property(
      fc.integer({ min: Date.parse('2020-01-01T00:00:00Z'), max: Date.parse('2040-01-01T00:00:00Z') }),
      fc.integer({ min: -2 * 86_400_000, max: CLOCK_SKEW_MS }),
      fc.constantFrom<'True' | 'False' | 'Unknown'>('True', 'False', 'Unknown'),
      fc.integer({ min: -CLOCK_SKEW_MS, max: 2 * 3_600_000 }),
      (now, offset, ready, revertedAgo) => {
        const evidence = evidenceFor(target, observed(ready, now + offset), new Date(now));
        const verdict = verdictFor(target, evidence, new Date(now));
        // the git host's clock: its commit date may lie a little ahead of ours too
        const guards = { lastRevert: { commit: SHA_OK, at: iso(now - revertedAgo), deployed: true } };
        const decision = decide({ verdict, target, now: new Date(now), observations: 2, guards });
        const text = `${verdict.summary} | ${decision.reason}`;
        return !/(^|[\s(])-\d/.test(text) && evidence.every((e) => !e.clockRefused) && decision.heldBy !== 'clock';
      },
    ),
  );
  t.is(ageMs(1000, 500), 0);
  t.is(ageMs(500, 1000), 500);
});

test('property: beyond the tolerance the observation is refused as evidence, and nothing is judged, whatever its state and the policy', (t) => {
  fc.assert(
    fc.property(
      fc.integer({ min: Date.parse('2020-01-01T00:00:00Z'), max: Date.parse('2040-01-01T00:00:00Z') }),
      fc.integer({ min: CLOCK_SKEW_MS + 1000, max: 30 * 86_400_000 }),
      fc.constantFrom<'True' | 'False' | 'Unknown'>('True', 'False', 'Unknown'),
      fc.constantFrom('revert', 'alert', 'none'),
      (now, ahead, ready, policy) => {
        const t2 = { ...target, onFailure: { ...target.onFailure, analysis: policy as 'revert' } };
        const [e] = evidenceFor(t2, observed(ready, now + ahead), new Date(now)) as [Evidence];
        const verdict = verdictFor(t2, [e], new Date(now));
        const decision = decide({ verdict, target: t2, now: new Date(now), observations: 5 });
        return e.state === 'unknown' && e.reason === 'ClockSkew' && /refused as evidence/.test(e.message) && /^cluster\.yaml: Kustomization flux-system\/apps: status\.conditions\[0\]\.lastTransitionTime /.test(e.message)
          && decision.action === 'none' && decision.heldBy === 'clock' && decision.reason.includes(e.message);
      },
    ),
  );
  t.pass();
});

// ---- the doors -----------------------------------------------------------------------------------

const P = 'apps/podinfo/prod/';
const NOW = '2026-11-01T12:05:00Z';

function scenario() {
  const repo = makeRepo();
  const good = commit(repo, { [`${P}kustomization.yaml`]: 'images: [{ name: podinfo, newTag: 6.0.0 }]\n' }, 'podinfo 6.0.0');
  const bad = commit(repo, { [`${P}kustomization.yaml`]: 'images: [{ name: podinfo, newTag: 6.1.0 }]\n' }, 'podinfo 6.1.0');
  const dir = tempDir('lastgood-time-');
  const configFile = writeFile(dir, 'lastgood.yaml', `repo:\n  url: ${repo}\ndefaults: { mode: commit, strategy: restore, confirmations: 1 }\ntargets:\n  - name: podinfo-prod\n    paths: [${P}]\n    resources:${KUSTOMIZATION_ONLY}\n`);
  const snapshot = (since: string) => writeFile(dir, 'cluster.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${bad}`, applied: `main@sha1:${good}`, ready: 'False', since })));
  return { repo, good, bad, dir, configFile, snapshot };
}

const FUTURE = /cluster\.yaml: Kustomization flux-system\/apps: status\.conditions\[0\]\.lastTransitionTime 2026-11-01T14:05:00\.000Z is in the future of the clock \(2026-11-01T12:05:00\.000Z\) by 2h, more than the 5m allowed for clock skew: refused as evidence/;

test('the CLI: a failure two hours ahead is refused (exit 2, the field and the times named), nothing written; check says the same', async (t) => {
  const s = scenario();
  const before = fingerprint(s.repo);
  const snap = s.snapshot('2026-11-01T14:05:00Z');
  const run = await lastgood(['run', '--now', NOW, '--config', s.configFile, '--snapshot', snap, '--json']);
  t.is(run.code, 2, run.stderr);
  t.regex(run.stderr, FUTURE);
  const [outcome] = JSON.parse(run.stdout).targets;
  t.like(outcome, { action: 'none', error: { code: 2 } });
  t.is(outcome.evidence[0].reason, 'ClockSkew');
  t.is(fingerprint(s.repo), before, 'nothing written');
  const check = await lastgood(['check', '--now', NOW, '--config', s.configFile, '--snapshot', snap]);
  t.is(check.code, 2, check.stderr);
  t.regex(check.stdout, /not judged: .*refused as evidence/);
  // within the tolerance: read as now ("0s ago"), and acted on
  const ok = await lastgood(['run', '--now', NOW, '--config', s.configFile, '--snapshot', s.snapshot('2026-11-01T12:08:00Z'), '--json']);
  t.is(ok.code, 0, ok.stderr);
  t.regex(JSON.parse(ok.stdout).targets[0].reason, /HealthCheckFailed 0s ago/);
  t.not(git(s.repo, 'rev-parse', 'main'), s.bad, 'reverted');
});

test('the Action: the same snapshot is refused the same way (exit 2, nothing written)', async (t) => {
  const s = scenario();
  const before = fingerprint(s.repo);
  // the Action reads the clock; a time two hours ahead of it
  const ahead = new Date(Date.now() + 2 * 3_600_000).toISOString();
  s.snapshot(ahead);
  const r = await runAction({ workspace: s.dir, token: 'ghs_unused0000000000000000000000000000', with: { config: 'lastgood.yaml', snapshot: 'cluster.yaml' }, eventName: 'push' });
  t.is(r.code, 2, r.stdout + r.stderr);
  t.regex(r.stdout, /refused as evidence/);
  t.is(fingerprint(s.repo), before, 'nothing written');
});

test('the controller: a failure two hours ahead of its clock is not acted on, and says why; the same failure at a sane time is', async (t) => {
  const repo = gitopsRepo();
  const kube = await startKubeEmulator({ namespaces: ['default', 'prod', 'flux-system', 'lastgood'] });
  t.teardown(() => kube.close());
  const clock = testClock();
  const ahead = clock.now() + 2 * 3_600_000;
  kube.apply(kustomization({ attempted: `main@sha1:${repo.c3}`, applied: `main@sha1:${repo.c2}`, ready: 'False', since: iso(ahead) }));
  const be = await backend('local', repo);
  const c = config(configText({ url: be.url, resources: KUSTOMIZATION_ONLY, target: '    confirmations: 1\n' }));
  const { seen, onEvaluated } = evaluations();
  const { controller, acted, lines } = await startController(kube, c, be.open(), { clock, onEvaluated });
  t.teardown(() => controller.stop());
  await until('ready, leading and observed', () => controller.ready && controller.isLeader && seen.length > 0);
  t.like(seen[0], { action: 'none', heldBy: 'clock', act: false });
  const said = lines.find((l) => l.msg === 'decided');
  t.regex(String(said?.reason), /not judged: Kustomization flux-system\/apps: status\.conditions\[0\]\.lastTransitionTime .* is in the future of the clock .* by 2h, more than the 5m allowed for clock skew: refused as evidence/);
  // an hour of clock time with no event: still nothing (no maxAge, wait or stuckAfter ran on that time)
  clock.advance(60 * MIN);
  await controller.idle();
  t.deepEqual(acted, []);
  t.is(commitsSince(repo.bare, repo.c4).length, 0);
  // the object's time is sane again: judged, and reverted
  kube.setStatus({ apiVersion: 'kustomize.toolkit.fluxcd.io/v1', kind: 'Kustomization', namespace: 'flux-system', name: 'apps' }, (kustomization({ attempted: `main@sha1:${repo.c3}`, applied: `main@sha1:${repo.c2}`, ready: 'False', since: iso(clock.now()) }) as { status: unknown }).status);
  const outcome = await until('the revert', () => acted[0]);
  t.like(outcome, { action: 'revert', bad: [repo.c3] });
  t.is(commitsSince(repo.bare, repo.c4).length, 1);
});
