import test from 'ava';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { lastgoodEngine } from './support/engine-run.ts';
import { commit, fingerprint, git, makeRepo, tempDir, writeFile } from './support/git.ts';
import { canary, deployment, kustomization, yamlDocs } from './support/objects.ts';
import { RENDER } from './support/render-off.ts';

/**
 * Policies and guards end to end: the engine as `lastgood run`/`check` call it (in this process,
 * support/engine-run.ts: the CLI door has its own tests), real git repositories, fixed clocks (issue 7).
 */

const TARGET_PATH = 'apps/podinfo/overlays/prod/';
const FAILED_AT = '2026-11-01T12:00:00Z';
const at = (minutes: number) => new Date(Date.parse(FAILED_AT) + minutes * 60_000).toISOString();

interface Scenario {
  repo: string;
  c2: string; c3: string; c4: string;
  dir: string;
  config: string;
}

/** c1 initial, c2 good, c3 bad podinfo release, c4 unrelated; one target watched through `resources`. */
function scenario(resources: string, targetExtra = ''): Scenario {
  const repo = makeRepo();
  commit(repo, { [`${TARGET_PATH}kustomization.yaml`]: 'images:\n  - name: podinfo\n    newTag: 6.0.0\n', 'apps/redis/values.yaml': 'replicas: 1\n' }, 'initial');
  const c2 = commit(repo, { [`${TARGET_PATH}replicas.yaml`]: 'replicas: 2\n' }, 'podinfo: two replicas');
  const c3 = commit(repo, { [`${TARGET_PATH}kustomization.yaml`]: 'images:\n  - name: podinfo\n    newTag: 6.1.0\n' }, 'podinfo: release 6.1.0');
  const c4 = commit(repo, { 'apps/redis/values.yaml': 'replicas: 3\n' }, 'redis: three replicas');
  const dir = tempDir('lastgood-policy-');
  const config = writeFile(dir, 'lastgood.yaml', `repo:
  url: ${repo}
  branch: main
${RENDER()}defaults:
  mode: commit
  strategy: restore
  confirmations: 2
targets:
  - name: podinfo-prod
    paths: [${TARGET_PATH}]
${targetExtra}    resources:
${resources}`);
  return { repo, c2, c3, c4, dir, config };
}

const FLAGGER_RESOURCES = `      - { apiVersion: flagger.app/v1beta1, kind: Canary, namespace: prod, name: podinfo }
      - { apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: apps }
`;

/** Flux applied c4 fine; Flagger ≥ 1.44 failed the promotion and kept the canary at weight 100. */
function flaggerSnapshot(s: Scenario, phase: 'Failed' | 'Succeeded', since = FAILED_AT): string {
  return writeFile(s.dir, `cluster-${phase}.yaml`, yamlDocs(
    canary({ phase, weight: phase === 'Failed' ? 100 : 0, since }),
    // the canary's target workload runs the release's image: what names the bad commit
    deployment({ image: 'podinfo:6.1.0', state: 'available' }),
    kustomization({ attempted: `main@sha1:${s.c4}`, applied: `main@sha1:${s.c4}`, ready: 'True', since: '2026-11-01T11:50:00Z' }),
  ));
}

const json = (stdout: string) => JSON.parse(stdout).targets[0];

test('Flagger 1.44 failed promotion (canaryWeight 100): waits for self-heal, then alerts: a revert would route traffic to the broken primary', async (t) => {
  const s = scenario(FLAGGER_RESOURCES);
  const snap = flaggerSnapshot(s, 'Failed');
  const before = fingerprint(s.repo);

  const early = await lastgoodEngine(['run', '--config', s.config, '--snapshot', snap, '--now', at(4), '--json']);
  t.is(early.code, 0, early.stderr);
  const waiting = json(early.stdout);
  t.is(waiting.verdict, 'failed');
  t.is(waiting.class, 'promotion');
  t.is(waiting.action, 'wait');
  t.regex(waiting.reason, /^failed \(promotion\): Canary prod\/podinfo PromotionFailed 4m ago, the engine's verdict is final \(no further assessment can change it\), waiting 6m more for it to heal, then revert$/);
  t.is(fingerprint(s.repo), before, 'nothing written while waiting');

  const late = await lastgoodEngine(['run', '--config', s.config, '--snapshot', snap, '--now', at(11), '--json']);
  t.is(late.code, 1, late.stderr);
  const alerted = json(late.stdout);
  t.is(alerted.action, 'alert');
  t.regex(alerted.reason, /not reverted: .*primary.*allowRevertDuring/);
  t.is(fingerprint(s.repo), before, 'nothing written');
});

test('Flagger 1.44 failed promotion, target opted in (allowRevertDuring): reverts once --now is past the wait', async (t) => {
  const s = scenario(FLAGGER_RESOURCES, '    allowRevertDuring: [flagger-promotion-failure]\n');
  const snap = flaggerSnapshot(s, 'Failed');
  const late = await lastgoodEngine(['run', '--config', s.config, '--snapshot', snap, '--now', at(11), '--json']);
  t.is(late.code, 0, late.stderr + late.stdout);
  const reverted = json(late.stdout);
  t.is(reverted.action, 'revert');
  t.regex(reverted.reason, /not healed within 10m, revert/);
  t.deepEqual(reverted.bad, [s.c3]);
  t.is(reverted.commit, git(s.repo, 'rev-parse', 'main'));
  t.is(git(s.repo, 'rev-parse', 'main^'), s.c4);
  t.regex(git(s.repo, 'show', `main:${TARGET_PATH}kustomization.yaml`), /newTag: 6\.0\.0/);
});

test('Flagger failed promotion healed within the window (Canary Succeeded): no commit', async (t) => {
  const s = scenario(FLAGGER_RESOURCES);
  const before = fingerprint(s.repo);
  const early = await lastgoodEngine(['run', '--config', s.config, '--snapshot', flaggerSnapshot(s, 'Failed'), '--now', at(4), '--json']);
  t.is(json(early.stdout).action, 'wait');
  const healed = await lastgoodEngine(['run', '--config', s.config, '--snapshot', flaggerSnapshot(s, 'Succeeded', at(7)), '--now', at(11), '--json']);
  t.is(healed.code, 0, healed.stderr);
  const out = json(healed.stdout);
  t.is(out.verdict, 'healthy');
  t.is(out.action, 'none');
  t.is(out.commit, null);
  t.is(fingerprint(s.repo), before);
});

function promotionObject(o: { name: string; phase: 'Errored' | 'Running'; commit?: string; startedAt: string; finishedAt?: string; creationTimestamp: string }) {
  const steps = [{ uses: 'git-clone', as: 'clone' }, { uses: 'git-commit', as: 'commit' }, { uses: 'git-push', as: 'push' }, { uses: 'argocd-update', as: 'sync' }];
  const errored = o.phase === 'Errored';
  return {
    apiVersion: 'kargo.akuity.io/v1alpha1',
    kind: 'Promotion',
    metadata: { name: o.name, namespace: 'kargo-demo', creationTimestamp: o.creationTimestamp },
    spec: { stage: 'prod', freight: '1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b', steps },
    status: {
      phase: o.phase,
      ...(errored ? { message: 'step "sync" met error threshold of 1: step "sync" errored: no details provided' } : {}),
      startedAt: o.startedAt,
      ...(o.finishedAt ? { finishedAt: o.finishedAt } : {}),
      currentStep: errored ? 3 : 1,
      stepExecutionMetadata: errored
        ? [
            { alias: 'clone', status: 'Succeeded', startedAt: o.startedAt, finishedAt: o.startedAt },
            { alias: 'commit', status: 'Succeeded', startedAt: o.startedAt, finishedAt: o.startedAt },
            { alias: 'push', status: 'Succeeded', startedAt: o.startedAt, finishedAt: o.startedAt },
            { alias: 'sync', status: 'Errored', errorCount: 1, startedAt: o.startedAt, finishedAt: o.finishedAt, message: 'step "sync" errored' },
          ]
        : [{ alias: 'clone', status: 'Succeeded', startedAt: o.startedAt, finishedAt: o.startedAt }, { alias: 'commit', status: 'Running', startedAt: o.startedAt }],
      state: errored ? { commit: { commit: o.commit }, push: { branch: 'main', commit: o.commit } } : {},
    },
  };
}

test('Kargo: a Promotion Errored while another Promotion of the same stage is Running is held; without it, reverted', async (t) => {
  const resources = `      - { apiVersion: kargo.akuity.io/v1alpha1, kind: Promotion, namespace: kargo-demo, name: prod.01a.errored }
      - { apiVersion: kargo.akuity.io/v1alpha1, kind: Promotion, namespace: kargo-demo, name: prod.01b.running }
`;
  const s = scenario(resources);
  const errored = promotionObject({ name: 'prod.01a.errored', phase: 'Errored', commit: s.c3, startedAt: '2026-11-01T11:58:00Z', finishedAt: FAILED_AT, creationTimestamp: '2026-11-01T11:58:00Z' });
  const running = promotionObject({ name: 'prod.01b.running', phase: 'Running', startedAt: at(10), creationTimestamp: at(10) });
  const snap = writeFile(s.dir, 'kargo.yaml', yamlDocs(errored, running));
  const before = fingerprint(s.repo);

  const r = await lastgoodEngine(['run', '--config', s.config, '--snapshot', snap, '--now', at(11), '--json']);
  t.is(r.code, 0, r.stderr);
  const out = json(r.stdout);
  t.is(out.verdict, 'failed');
  t.is(out.class, 'promotion');
  t.is(out.action, 'wait');
  t.regex(out.reason, /^held: another promotion is running \(Promotion kargo-demo\/prod\.01b\.running Running\); failed \(promotion\): Promotion kargo-demo\/prod\.01a\.errored Errored 11m ago/);
  t.is(fingerprint(s.repo), before);

  // check says the same, in text
  const text = await lastgoodEngine(['check', '--config', s.config, '--snapshot', snap, '--now', at(11)]);
  t.is(text.code, 0, text.stderr);
  t.regex(text.stdout, /decision: wait — held: another promotion is running \(Promotion kargo-demo\/prod\.01b\.running Running\)/);

  // the other promotion gone (settled): the Errored one's commit is reverted
  const settled = writeFile(s.dir, 'kargo-settled.yaml', yamlDocs(errored, { ...running, status: { ...running.status, phase: 'Succeeded', finishedAt: at(12) } }));
  const after = await lastgoodEngine(['run', '--config', s.config, '--snapshot', settled, '--now', at(13), '--json']);
  t.is(after.code, 0, after.stderr);
  const reverted = json(after.stdout);
  t.is(reverted.action, 'revert', reverted.reason);
  t.deepEqual(reverted.bad, [s.c3]);
});

const FLUX_RESOURCES = `      - { apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: apps }
`;

test('a failure older than maxAge is ignored, with the reason, and nothing is written', async (t) => {
  const s = scenario(FLUX_RESOURCES);
  const snap = writeFile(s.dir, 'old.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${s.c4}`, applied: `main@sha1:${s.c2}`, ready: 'False', since: FAILED_AT })));
  const before = fingerprint(s.repo);
  const r = await lastgoodEngine(['run', '--config', s.config, '--snapshot', snap, '--now', at(45), '--json']);
  t.is(r.code, 0, r.stderr);
  const out = json(r.stdout);
  t.is(out.verdict, 'failed');
  t.is(out.action, 'none');
  t.regex(out.reason, /^ignored: failure is 45m old, older than maxAge 20m; failed \(analysis\): Kustomization flux-system\/apps HealthCheckFailed 45m ago$/);
  t.is(fingerprint(s.repo), before);
  // in text too
  const text = await lastgoodEngine(['check', '--config', s.config, '--snapshot', snap, '--now', at(45)]);
  t.regex(text.stdout, /decision: none — ignored: failure is 45m old, older than maxAge 20m/);
});

test('cooldown holds a second revert; a failure of lastgood\'s own revert alerts and is never reverted', async (t) => {
  const s = scenario(FLUX_RESOURCES);
  const first = writeFile(s.dir, 'first.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${s.c4}`, applied: `main@sha1:${s.c2}`, ready: 'False', since: FAILED_AT })));
  const r1 = await lastgoodEngine(['run', '--config', s.config, '--snapshot', first, '--now', at(5), '--json']);
  t.is(r1.code, 0, r1.stderr);
  const revert = json(r1.stdout).commit as string;
  t.is(revert, git(s.repo, 'rev-parse', 'main'));

  // a developer ships 6.2.0 on top of the revert; Flux applies the revert, then fails on 6.2.0
  const c5 = commit(s.repo, { [`${TARGET_PATH}kustomization.yaml`]: 'images:\n  - name: podinfo\n    newTag: 6.2.0\n' }, 'podinfo: release 6.2.0');
  const second = writeFile(s.dir, 'second.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${c5}`, applied: `main@sha1:${revert}`, ready: 'False', since: at(10) })));
  const held = await lastgoodEngine(['run', '--config', s.config, '--snapshot', second, '--now', at(12), '--json']);
  t.is(held.code, 0, held.stderr);
  const out = json(held.stdout);
  t.is(out.action, 'wait');
  t.regex(out.reason, new RegExp(`^held: cooldown: lastgood reverted this target 7m ago \\(${revert.slice(0, 12)}\\), cooldown 30m; failed \\(analysis\\)`));
  t.is(git(s.repo, 'rev-parse', 'main'), c5, 'no second revert within the cooldown');

  // after the cooldown (and within maxAge of the failure) the second revert happens
  const secondLate = writeFile(s.dir, 'second-late.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${c5}`, applied: `main@sha1:${revert}`, ready: 'False', since: at(30) })));
  const late = await lastgoodEngine(['run', '--config', s.config, '--snapshot', secondLate, '--now', at(36), '--json']);
  t.is(late.code, 0, late.stderr);
  t.is(json(late.stdout).action, 'revert', json(late.stdout).reason);
  t.deepEqual(json(late.stdout).bad, [c5]);

  // the revert itself fails in the cluster: alert, exit 1, nothing written
  const s2 = scenario(FLUX_RESOURCES);
  const f1 = writeFile(s2.dir, 'f1.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${s2.c4}`, applied: `main@sha1:${s2.c2}`, ready: 'False', since: FAILED_AT })));
  const made = await lastgoodEngine(['run', '--config', s2.config, '--snapshot', f1, '--now', at(5), '--json']);
  const own = json(made.stdout).commit as string;
  const ownFails = writeFile(s2.dir, 'own.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${own}`, applied: `main@sha1:${s2.c4}`, ready: 'False', since: at(8) })));
  const before = fingerprint(s2.repo);
  const refused = await lastgoodEngine(['run', '--config', s2.config, '--snapshot', ownFails, '--now', at(50), '--json']);
  t.is(refused.code, 1, refused.stderr);
  const alert = json(refused.stdout);
  t.is(alert.action, 'alert');
  t.regex(alert.reason, new RegExp(`the failing revision ${own.slice(0, 12)} is lastgood's own revert for podinfo-prod: lastgood never reverts a revert`));
  t.is(fingerprint(s2.repo), before);
});

test('freeze: freezeUntil and the lastgood.dev/hold annotation hold a revert, and say why', async (t) => {
  const s = scenario(FLUX_RESOURCES, '    freezeUntil: "2026-11-01T13:00:00Z"\n');
  const snap = writeFile(s.dir, 'f.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${s.c4}`, applied: `main@sha1:${s.c2}`, ready: 'False', since: FAILED_AT })));
  const before = fingerprint(s.repo);
  const frozen = await lastgoodEngine(['run', '--config', s.config, '--snapshot', snap, '--now', at(5), '--json']);
  t.is(frozen.code, 0, frozen.stderr);
  t.regex(json(frozen.stdout).reason, /^held: frozen until 2026-11-01T13:00:00Z \(freezeUntil\)/);

  const s2 = scenario(FLUX_RESOURCES);
  const object = kustomization({ attempted: `main@sha1:${s2.c4}`, applied: `main@sha1:${s2.c2}`, ready: 'False', since: FAILED_AT });
  const annotated = { ...object, metadata: { ...object.metadata, annotations: { 'lastgood.dev/hold': 'INC-1234 database migration in progress' } } };
  const held = await lastgoodEngine(['run', '--config', s2.config, '--snapshot', writeFile(s2.dir, 'h.yaml', yamlDocs(annotated)), '--now', at(5), '--json']);
  t.is(held.code, 0, held.stderr);
  t.is(json(held.stdout).action, 'wait');
  t.regex(json(held.stdout).reason, /^held: Kustomization flux-system\/apps: INC-1234 database migration in progress \(annotation lastgood\.dev\/hold\)/);
  t.is(fingerprint(s.repo), before);
});

test('hooks: a command hook gets the verdict on stdin before the revert; never in check or --dry-run; a failing hook alerts', async (t) => {
  const out = tempDir('lastgood-hook-');
  const script = writeFile(out, 'heal.sh', `#!/bin/sh\ncat > "${out}/payload-$$.json"\necho "restarted podinfo"\n`);
  const failing = writeFile(out, 'fail.sh', '#!/bin/sh\ncat >/dev/null\necho "cannot reach the cluster" >&2\nexit 3\n');
  const policy = (cmd: string) => `    onFailure:\n      analysis: { hook: { command: [sh, "${cmd}"], timeout: 10s }, then: revert }\n`;
  const s = scenario(FLUX_RESOURCES, policy(script));
  const snap = writeFile(s.dir, 'f.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${s.c4}`, applied: `main@sha1:${s.c2}`, ready: 'False', since: FAILED_AT })));
  const payloads = () => (existsSync(out) ? readdirPayloads(out) : []);

  const checked = await lastgoodEngine(['check', '--config', s.config, '--snapshot', snap, '--now', at(3), '--json']);
  t.is(json(checked.stdout).action, 'revert');
  t.regex(json(checked.stdout).reason, /hook \(sh\), then revert$/);
  const dry = await lastgoodEngine(['run', '--config', s.config, '--snapshot', snap, '--now', at(3), '--dry-run', '--json']);
  t.regex(json(dry.stdout).reason, /dry run: hook not run, nothing written$/);
  t.deepEqual(payloads(), [], 'no hook in check or --dry-run');

  const r = await lastgoodEngine(['run', '--config', s.config, '--snapshot', snap, '--now', at(3), '--json']);
  t.is(r.code, 0, r.stderr);
  const done = json(r.stdout);
  t.is(done.action, 'revert');
  t.regex(done.reason, /hook succeeded \(sh exited 0: restarted podinfo\)/);
  t.is(done.commit, git(s.repo, 'rev-parse', 'main'));
  const received = payloads();
  t.is(received.length, 1, 'the hook ran once');
  t.like(received[0], { target: 'podinfo-prod', verdict: 'failed' });
  t.is(received[0]?.evidence[0]?.reason, 'HealthCheckFailed');

  const s2 = scenario(FLUX_RESOURCES, policy(failing));
  const snap2 = writeFile(s2.dir, 'f.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${s2.c4}`, applied: `main@sha1:${s2.c2}`, ready: 'False', since: FAILED_AT })));
  const before = fingerprint(s2.repo);
  const bad = await lastgoodEngine(['run', '--config', s2.config, '--snapshot', snap2, '--now', at(3), '--json']);
  t.is(bad.code, 1, bad.stderr);
  t.is(json(bad.stdout).action, 'alert');
  t.regex(json(bad.stdout).reason, /^hook failed \(sh exited 3: cannot reach the cluster\), onHookFailure: alert/);
  t.is(fingerprint(s2.repo), before);
});

function readdirPayloads(dir: string): Array<{ target: string; verdict: string; evidence: Array<{ reason: string }> }> {
  return readdirSync(dir).filter((f) => f.startsWith('payload-')).map((f) => JSON.parse(readFileSync(path.join(dir, f), 'utf8')));
}

test('hooks: a recovery hook with then: none is the recovery; when it fails and onHookFailure says revert, the revert happens', async (t) => {
  const out = tempDir('lastgood-hook-');
  const ok = writeFile(out, 'ok.sh', '#!/bin/sh\ncat >/dev/null\necho "kicked the sync"\n');
  const failing = writeFile(out, 'fail.sh', '#!/bin/sh\ncat >/dev/null\nexit 4\n');
  const policy = (cmd: string) => `    onFailure:\n      analysis: { hook: { command: [sh, "${cmd}"], timeout: 10s }, then: none, onHookFailure: revert }\n`;

  const healed = scenario(FLUX_RESOURCES, policy(ok));
  const snap = writeFile(healed.dir, 'f.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${healed.c4}`, applied: `main@sha1:${healed.c2}`, ready: 'False', since: FAILED_AT })));
  const r = await lastgoodEngine(['run', '--config', healed.config, '--snapshot', snap, '--now', at(3), '--json']);
  t.is(r.code, 0, r.stderr);
  t.is(git(healed.repo, 'rev-parse', 'main'), healed.c4, 'the hook was the recovery: no commit');
  t.regex(json(r.stdout).reason, /hook succeeded/);

  const broken = scenario(FLUX_RESOURCES, policy(failing));
  const snap2 = writeFile(broken.dir, 'f.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${broken.c4}`, applied: `main@sha1:${broken.c2}`, ready: 'False', since: FAILED_AT })));
  const r2 = await lastgoodEngine(['run', '--config', broken.config, '--snapshot', snap2, '--now', at(3), '--json']);
  t.is(r2.code, 0, r2.stderr + r2.stdout);
  const done = json(r2.stdout);
  t.is(done.action, 'revert');
  t.regex(done.reason, /^hook failed \(sh exited 4.*onHookFailure: revert/);
  t.is(done.commit, git(broken.repo, 'rev-parse', 'main'));
  t.is(git(broken.repo, 'rev-parse', 'main^'), broken.c4);
});
