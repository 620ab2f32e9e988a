import test from 'ava';
import fc from 'fast-check';
import { evaluate, NEW_TRACK, observe, type Track } from '../src/decide/tracker.ts';
import { soaked } from '../src/decide/soak.ts';
import type { Evidence, Verdict } from '../src/decide/types.ts';
import { verdictFor } from '../src/decide/verdict.ts';
import { lastgood } from './support/cli.ts';
import { testClock } from './support/clock.ts';
import { commit, git, makeRepo, tempDir, writeFile } from './support/git.ts';
import { kustomization, yamlDocs } from './support/objects.ts';
import { backend, cluster, config, configText, evaluations, failCanary, gitopsRepo, startController, until } from './support/controller-scenario.ts';

/**
 * Issue 19 class 2: "verified" means stable. A revision is recorded as a verified last-known-good
 * only after the target has stayed healthy at it for the soak (default 5m); a target flapping
 * between failed and healthy at a bad revision never gets that revision recorded, and a revision
 * seen failing needs a whole new soak. The controller, `check --record` and the Action follow the
 * same rule (decide/soak.ts).
 */

const MIN = 60_000;
const SOAK = 5 * MIN;
const SHA = 'c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3';
const target = { name: 'podinfo-prod', confirmations: 2, stuckAfterMs: 15 * MIN, onFailure: { analysis: 'none' as const, promotion: 'none' as const, stuck: 'none' as const }, soakMs: SOAK };

function canaryEvidence(state: 'healthy' | 'failed', since: number | undefined, sha = SHA): Evidence {
  return {
    apiVersion: 'flagger.app/v1beta1', kind: 'Canary', groupKind: 'flagger.app/Canary', namespace: 'prod', name: 'podinfo',
    state, reason: state === 'failed' ? 'Failed' : 'Succeeded', message: '', attempted: { sha },
    ...(since !== undefined ? { since: new Date(since).toISOString() } : {}), ...(state === 'failed' ? { failureClass: 'analysis' as const, terminal: true } : {}),
  };
}

test('property: the tracker says "soaked" only when the target has been healthy at the revision, without a break it saw or its objects tell, for the whole soak', (t) => {
  const step = fc.record({
    state: fc.constantFrom<'healthy' | 'failed'>('healthy', 'failed'),
    dt: fc.integer({ min: 0, max: 3 * MIN }),
    revision: fc.constantFrom(SHA, 'c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4'),
    objectsTell: fc.boolean(),
  });
  fc.assert(
    fc.property(fc.array(step, { minLength: 1, maxLength: 60 }), (steps) => {
      let now = Date.parse('2026-11-01T12:00:00Z');
      let track: Track = NEW_TRACK;
      // the truth: when the current healthy run at the current revision began
      let runStart: number | undefined;
      let runRevision: string | undefined;
      for (const s of steps) {
        now += s.dt;
        const changed = s.state !== 'healthy' || runRevision !== s.revision || runStart === undefined;
        if (s.state === 'healthy' && changed) {
          runStart = now;
          runRevision = s.revision;
        }
        if (s.state !== 'healthy') {
          runStart = undefined;
          runRevision = undefined;
        }
        const verdict: Verdict = verdictFor(target, [canaryEvidence(s.state, s.objectsTell ? (s.state === 'healthy' ? runStart : now) : undefined, s.revision)], new Date(now));
        track = observe(track, verdict, now);
        const e = evaluate(track, { verdict, target, now, intervalMs: 10_000, soakMs: SOAK });
        if (e.soak?.ok) {
          // the first observation may be of a target healthy for long already: only breaks this door saw count then
          const sawBreak = track.healthy?.broken;
          if (sawBreak && now - runStart! < SOAK) return false;
          if (e.soak.revision !== runRevision) return false;
        }
        if (s.state === 'healthy' && e.soak && !e.soak.ok && e.soak.at !== undefined && !(e.nextAt !== undefined && e.nextAt <= e.soak.at)) return false;
      }
      return true;
    }),
  );
  t.pass();
});

test('one moment (check --record, the Action): the objects\' own times must cover the soak; no time, no record, and it says why', (t) => {
  const now = Date.parse('2026-11-01T12:00:00Z');
  const v = (since?: number) => verdictFor(target, [canaryEvidence('healthy', since)], new Date(now));
  t.like(soaked({ verdict: v(now - 2000), soakMs: SOAK, now }), { ok: false, at: now - 2000 + SOAK });
  t.regex((soaked({ verdict: v(now - 2000), soakMs: SOAK, now }) as { reason: string }).reason, /healthy at c3c3c3c3c3c3 for 2s only, less than the soak \(5m\): not yet verified/);
  t.like(soaked({ verdict: v(now - SOAK), soakMs: SOAK, now }), { ok: true, revision: SHA });
  t.regex((soaked({ verdict: v(undefined), soakMs: SOAK, now }) as { reason: string }).reason, /no object says since when/);
  // a watching door that saw a failure two seconds ago: a new soak, whatever the objects say
  t.like(soaked({ verdict: v(now - 3_600_000), soakMs: SOAK, now, watched: { revision: SHA, since: now - 2000, broken: true } }), { ok: false });
});

test('check --record: healthy for 2s is not recorded (and says why); healthy for the soak is', async (t) => {
  const repo = makeRepo();
  const P = 'apps/podinfo/prod/';
  const good = commit(repo, { [`${P}kustomization.yaml`]: 'images: [{ name: podinfo, newTag: 6.0.0 }]\n' }, 'podinfo 6.0.0');
  const dir = tempDir('lastgood-soak-');
  const configFile = writeFile(dir, 'lastgood.yaml', `repo:\n  url: ${repo}\ndefaults: { mode: commit }\ntargets:\n  - name: podinfo-prod\n    paths: [${P}]\n    resources:\n      - { apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: apps }\n`);
  const snap = (since: string) => writeFile(dir, 'cluster.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${good}`, applied: `main@sha1:${good}`, ready: 'True', since })));
  const early = await lastgood(['check', '--now', '2026-11-01T12:00:02Z', '--config', configFile, '--snapshot', snap('2026-11-01T12:00:00Z'), '--record', '--json']);
  t.is(early.code, 0, early.stderr);
  t.regex(JSON.parse(early.stdout).targets[0].reason, /not recorded: healthy at [0-9a-f]{12} for 2s only, less than the soak \(5m\): not yet verified/);
  t.is(git(repo, 'notes', '--ref=lastgood', 'list'), '', 'no note');
  const later = await lastgood(['check', '--now', '2026-11-01T12:05:00Z', '--config', configFile, '--snapshot', snap('2026-11-01T12:00:00Z'), '--record', '--json']);
  t.is(later.code, 0, later.stderr);
  t.regex(JSON.parse(later.stdout).targets[0].reason, /recorded [0-9a-f]{12} as verified last-known-good/);
  t.regex(git(repo, 'notes', '--ref=lastgood', 'show', good), /^lastgood verified target=podinfo-prod/);
});

test('the controller: a canary flapping between Failed and Succeeded every 2 s at the bad revision never gets it recorded; once it stays healthy for the soak, it is', async (t) => {
  const repo = gitopsRepo();
  const clock = testClock();
  const kube = await cluster(repo, { canaryPhase: 'Progressing', clock });
  t.teardown(() => kube.close());
  const be = await backend('local', repo);
  // a person decides about failures here: this test is about what is recorded
  const cfg = config(configText({ url: be.url, target: '    onFailure: { analysis: none, promotion: none }\n' }));
  const { seen, onEvaluated } = evaluations();
  const { controller } = await startController(kube, cfg, be.open(), { clock, onEvaluated });
  t.teardown(() => controller.stop());
  const notes = async () => (await be.open()).notes!().list('podinfo-prod');
  await until('ready, leading and observed', () => controller.ready && controller.isLeader && seen.length > 0);
  // 10 minutes of flapping, 2 s each way (more than the soak in all, never more than 2 s at once)
  for (let i = 0; i < 300; i++) {
    const before = seen.length;
    clock.advance(2000);
    failCanary(kube, i % 2 === 0 ? 'Succeeded' : 'Failed', clock);
    await until('the flip observed', () => seen.length > before);
  }
  await controller.idle();
  t.deepEqual(await notes(), [], 'the bad revision was never recorded');
  // the last flip left it Failed: now it heals and stays healthy
  clock.advance(2000);
  const healedAt = clock.now();
  failCanary(kube, 'Succeeded', clock);
  await until('healthy again, to be looked at when it will have soaked', () => seen.some((s) => s.at === healedAt && s.verdict === 'healthy' && s.nextAt === healedAt + SOAK));
  clock.advanceTo(healedAt + SOAK - 1);
  await controller.idle();
  t.deepEqual(await notes(), [], 'not before the soak ends');
  clock.advanceTo(healedAt + SOAK);
  const [record] = await until('recorded once soaked, with no further event', async () => {
    const list = await notes();
    return list.length > 0 && list;
  });
  t.is(record!.commit, repo.c3);
});
