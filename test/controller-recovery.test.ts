import test from 'ava';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Octokit } from '@octokit/rest';
import { readAuditLog } from '../src/audit/timeline.ts';
import { formatLogMarkdown, formatLogText } from '../src/audit/format.ts';
import { formatLogHtml } from '../src/audit/html.ts';
import { AuditLogSchema, type RecoveredEntry } from '../src/audit/schema.ts';
import { formatStatusTable, type TargetsDocument } from '../src/controller/status.ts';
import { LocalRepo } from '../src/deliver/local/index.ts';
import { lastgood } from './support/cli.ts';
import { git, tempDir } from './support/git.ts';
import { deployment, kustomization } from './support/objects.ts';
import { canaryObject, commitsSince, configText, drivenScenario, iso, TOKEN, until } from './support/controller-scenario.ts';
import type { KubeEmulator } from './support/kube-emulator.ts';
import { webhookReceiver } from './support/webhook.ts';

/**
 * Did the rollback recover production, and how long did it take (issue 37)? Through the controller
 * against the Kubernetes API emulator and a git repository, on a driven clock: the canary fails,
 * lastgood reverts, Flux applies the revert, the canary succeeds at it and stays healthy for the
 * soak. The phases are recorded once on the revert's git note with the times each happened, shown
 * by `log` (text, JSON, Markdown, HTML) and /targets; the histogram is observed once; one
 * notification and one Event say it (and, in pull-request mode, one comment on the merged request,
 * also when the comment's answer is lost and two replicas both see the recovery).
 */

const SOAK_MS = 5 * 60_000;

function setCanary(kube: KubeEmulator, phase: string, since: number): void {
  const c = canaryObject({ phase, since: iso(since) }) as { status: unknown };
  kube.setStatus({ apiVersion: 'flagger.app/v1beta1', kind: 'Canary', namespace: 'prod', name: 'podinfo' }, c.status);
}

/** Flux applies `revision`: the Kustomization reports it, the Deployment rolls back to 6.0.0, Flagger starts analysing. */
function fluxApplies(kube: KubeEmulator, revision: string, at: number): void {
  kube.apply(kustomization({ attempted: `main@sha1:${revision}`, applied: `main@sha1:${revision}`, ready: 'True', since: iso(at) }));
  kube.apply(deployment({ image: 'ghcr.io/stefanprodan/podinfo:6.0.0', state: 'available', since: iso(at) }));
  setCanary(kube, 'Progressing', at);
}

const scrape = async (port: number) => (await (await fetch(`http://127.0.0.1:${port}/metrics`)).text());
/** The config's lines that send notifications to the test's receiver. */
const notifyTo = (urlFile: string) => `notify:\n  webhook: { urlFrom: { file: ${urlFile} } }\n`;

test('commit mode: failure → revert → applied → healthy for the soak: the phases on the revert\'s note, in log and /targets, the histogram, one notification and one Event', async (t) => {
  const hook = await webhookReceiver(t);
  const { repo, clock, kube, be, start } = await drivenScenario(t, 'local', { start: Date.parse('2026-11-28T12:00:00Z') });
  const { controller, acted, seen } = await start(`${configText({ url: be.url })}${notifyTo(hook.urlFile)}`);
  const port = controller.address!.port;

  // the canary failed 30 s before lastgood sees it (its own condition time): detection took 30 s
  clock.advance(1000);
  const began = clock.now() - 30_000;
  const confirmed = clock.now();
  setCanary(kube, 'Failed', began);
  const revert = await until('the revert', () => acted[0]);
  t.is(revert.action, 'revert');
  const [made] = commitsSince(repo.bare, repo.c4);
  t.is(revert.commit, made!.sha);
  await controller.idle();

  // Flux applies the revert a minute later; the canary succeeds at it 90 s after that
  clock.advance(60_000);
  const synced = clock.now();
  fluxApplies(kube, made!.sha, synced);
  await until('the revert seen applied', () => seen.some((s) => s.at === synced));
  clock.advance(90_000);
  const healthy = clock.now();
  setCanary(kube, 'Succeeded', healthy);
  await until('healthy seen', () => seen.some((s) => s.at === healthy && s.verdict === 'healthy'));
  await controller.idle();
  t.deepEqual(hook.received.map((p) => p.event), ['reverted'], 'not recovered before the soak');
  t.regex(await scrape(port), /^lastgood_recovery_seconds_count\{target="podinfo-prod",mode="commit"\} 0$/m);

  // healthy for the whole soak: verified, and recovered
  clock.advance(SOAK_MS);
  await until('the recovery announced', () => hook.received.length >= 2);
  await controller.idle();

  const line = `lastgood recovered target=podinfo-prod revert=${made!.sha} revision=${made!.sha} mode=commit began=${iso(began)} confirmed=${iso(confirmed)} written=${iso(confirmed)} synced=${iso(synced)} healthy=${iso(healthy)}`;
  const note = git(repo.bare, 'notes', '--ref=lastgood', 'show', made!.sha).split('\n');
  t.true(note.includes(line), note.join('\n'));
  t.is(note.filter((l) => l.startsWith('lastgood recovered ')).length, 1);

  // one notification, with the phases
  t.deepEqual(hook.received.map((p) => p.event), ['reverted', 'recovered']);
  const told = hook.received[1] as unknown as { reason: string; commit: string; recovery: { seconds: number; mode: string; phases: Array<{ phase: string; seconds: number }> } };
  t.is(told.commit, made!.sha);
  t.is(told.reason, `recovered at 2026-11-28T12:02:31Z, 3m after the failure began (detect 30s, revert 0s, sync 1m, rollout 1m30s), at ${made!.sha.slice(0, 12)} containing lastgood's revert ${made!.sha.slice(0, 12)}`);
  t.deepEqual(told.recovery.phases, [{ phase: 'detect', seconds: 30 }, { phase: 'revert', seconds: 0 }, { phase: 'sync', seconds: 60 }, { phase: 'rollout', seconds: 90 }]);
  t.is(told.recovery.seconds, 180);

  // the histogram, once, by target and mode; each phase
  const metrics = await scrape(port);
  t.regex(metrics, /^lastgood_recovery_seconds_count\{target="podinfo-prod",mode="commit"\} 1$/m);
  t.regex(metrics, /^lastgood_recovery_seconds_sum\{target="podinfo-prod",mode="commit"\} 180$/m);
  t.regex(metrics, /^lastgood_recovery_phase_seconds_sum\{target="podinfo-prod",phase="sync"\} 60$/m);
  t.regex(metrics, /^lastgood_recovery_phase_seconds_count\{target="podinfo-prod",phase="review"\} 0$/m);

  // one Event, Normal, on the engine object that applied the revert
  await until('the Recovered Event', () => kube.events().some((e) => (e as { reason?: string }).reason === 'Recovered'));
  const events = kube.events() as unknown as Array<{ reason: string; type: string; note: string; regarding: { kind: string } }>;
  const recovered = events.filter((e) => e.reason === 'Recovered');
  t.is(recovered.length, 1);
  t.like(recovered[0], { type: 'Normal', regarding: { kind: 'Kustomization' } });
  t.regex(recovered[0]!.note, /^lastgood: target podinfo-prod recovered at 2026-11-28T12:02:31Z, 3m after the failure began/);

  // /targets and `lastgood status`'s table
  const doc = (await (await fetch(`http://127.0.0.1:${port}/targets`)).json()) as TargetsDocument;
  t.like(doc.targets[0]!.lastRecovery, { revert: made!.sha, revision: made!.sha, mode: 'commit', began: iso(began), synced: iso(synced), healthy: iso(healthy) });
  t.true(formatStatusTable(doc).includes(`podinfo-prod: recovered at 2026-11-28T12:02:31Z, 3m after the failure began (detect 30s, revert 0s, sync 1m, rollout 1m30s), at ${made!.sha.slice(0, 12)} (revert ${made!.sha.slice(0, 12)})`), formatStatusTable(doc));

  // more time and more observations: nothing more
  for (let i = 0; i < 3; i++) {
    const before = seen.length;
    clock.advance(SOAK_MS);
    setCanary(kube, 'Succeeded', healthy + (i + 1) * 1000);
    await until('observed', () => seen.length > before);
    await controller.idle();
  }
  t.deepEqual(hook.received.map((p) => p.event), ['reverted', 'recovered']);
  t.regex(await scrape(port), /^lastgood_recovery_seconds_count\{target="podinfo-prod",mode="commit"\} 1$/m);

  // the log, on a fresh reader of the repository: the recovery with each phase's time
  const auditLog = AuditLogSchema.parse(await readAuditLog({
    repo: new LocalRepo(repo.bare), branch: 'main', targets: [{ name: 'podinfo-prod', paths: ['apps/podinfo/overlays/prod/'] }],
    since: new Date(Date.parse('2026-11-28T00:00:00Z')), why: 'test', now: new Date(clock.now()),
  }));
  const entry = auditLog.targets[0]!.entries.find((e): e is RecoveredEntry => e.kind === 'recovered');
  t.deepEqual(entry, {
    kind: 'recovered', at: iso(healthy), revert: made!.sha, revision: made!.sha, mode: 'commit', began: iso(began), confirmed: iso(confirmed), written: iso(confirmed),
    merged: null, synced: iso(synced), healthy: iso(healthy), seconds: 180,
    phases: [{ phase: 'detect', seconds: 30 }, { phase: 'revert', seconds: 0 }, { phase: 'sync', seconds: 60 }, { phase: 'rollout', seconds: 90 }], url: null,
  });
  const textLog = formatLogText(auditLog);
  t.regex(textLog, new RegExp(`recovered +${made!.sha.slice(0, 12)} +healthy again at lastgood's revert ${made!.sha.slice(0, 12)}, 3m after the failure began \\(detect 30s, revert 0s, sync 1m, rollout 1m30s\\)`));
  t.true(textLog.includes(`began ${iso(began).slice(11, 19)}Z, confirmed ${iso(confirmed).slice(11, 19)}Z, written ${iso(confirmed).slice(11, 19)}Z, synced ${iso(synced).slice(11, 19)}Z, healthy ${iso(healthy).slice(11, 19)}Z (commit mode)`), textLog);
  t.regex(formatLogMarkdown(auditLog), /\| recovered \| `[0-9a-f]{12}` \| healthy again at lastgood's revert `[0-9a-f]{12}`, \*\*3m after the failure began \(detect 30s, revert 0s, sync 1m, rollout 1m30s\)\*\*<br>began /);
  const html = formatLogHtml(auditLog, { now: new Date(clock.now()) });
  t.regex(html, /<g class="mark mark-recovered" data-kind="recovered" data-at="2026-11-28T12:02:31\.000Z"/);
  t.regex(html, /<tr data-kind="recovered">/);

  // and through the door: `lastgood log` on the repository
  const dir = tempDir('lastgood-recovery-log-');
  const cfg = path.join(dir, 'lastgood.yaml');
  writeFileSync(cfg, configText({ url: repo.bare }));
  const cli = await lastgood(['log', '--config', cfg, '--since', '2026-11-28T00:00:00Z', '--now', iso(clock.now())]);
  t.is(cli.code, 0, cli.stderr);
  t.true(cli.stdout.includes(`healthy again at lastgood's revert ${made!.sha.slice(0, 12)}, 3m after the failure began`), cli.stdout);
});

test('pull-request mode, two replicas, the comment\'s answer lost: one comment on the merged pull request, one notification, one Event, one observation', async (t) => {
  const hook = await webhookReceiver(t);
  // the emulator merges at the machine's time: the driven clock starts there
  const { clock, kube, be, start } = await drivenScenario(t, 'github');
  const text = `${configText({ url: be.url, apiUrl: be.apiUrl!, mode: 'pull-request', controller: '  leaderElection: false\n' })}${notifyTo(hook.urlFile)}`;
  const a = await start(text, { identity: 'replica-a' });
  const b = await start(text, { identity: 'replica-b' });
  const [one, two] = [a, b];

  clock.advance(1000);
  setCanary(kube, 'Failed', clock.now() - 30_000);
  await until('both acted', () => a.acted.length > 0 && b.acted.length > 0);
  await Promise.all([a.controller.idle(), b.controller.idle()]);
  const github = be.github!;
  t.is(github.pulls.length, 1, 'one pull request for the two replicas');
  const pull = github.pulls[0]!;

  // a person merges it; Flux applies the merge, the canary succeeds at it
  clock.advance(120_000);
  const merged = await new Octokit({ auth: TOKEN, baseUrl: be.apiUrl }).rest.pulls.merge({ owner: 'acme', repo: 'gitops', pull_number: pull.number, merge_method: 'merge' });
  clock.advance(60_000);
  const synced = clock.now();
  fluxApplies(kube, merged.data.sha, synced);
  await until('the merge seen applied', () => one.seen.some((s) => s.at === synced) && two.seen.some((s) => s.at === synced));
  clock.advance(60_000);
  setCanary(kube, 'Succeeded', clock.now());
  await until('healthy seen by both', () => one.seen.some((s) => s.verdict === 'healthy') && two.seen.some((s) => s.verdict === 'healthy'));
  await Promise.all([a.controller.idle(), b.controller.idle()]);

  // the comment is made, and its answer lost: the replica looks before it comments again
  github.inject({ status: 502, afterApply: true, match: (method, p) => method === 'POST' && new RegExp(`/issues/${pull.number}/comments$`).test(p) });
  clock.advance(SOAK_MS);
  await until('the recovery announced', () => hook.received.some((p) => p.event === 'recovered'));
  await Promise.all([a.controller.idle(), b.controller.idle()]);
  // both replicas have looked: the one that recorded it, and the one that found it claimed
  await until('both replicas know the recovery', () => a.controller.status().targets[0]!.lastRecovery && b.controller.status().targets[0]!.lastRecovery);
  await Promise.all([a.controller.idle(), b.controller.idle()]);

  t.true(github.log.some((r) => r.method === 'POST' && r.status === 502 && /\/comments$/.test(r.path)), 'the comment\'s answer was lost');
  const recoveredComments = pull.comments.filter((c) => c.body.includes('recovered at'));
  t.is(recoveredComments.length, 1, pull.comments.map((c) => c.body).join('\n---\n'));
  t.regex(recoveredComments[0]!.body, /^lastgood: `podinfo-prod` recovered at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ, \S+ after the failure began \(detect 30s, revert 0s, review \w+, sync \w+, rollout \w+\), at `[0-9a-f]{12}`\.\n\n\| phase \| took \|\n\|---\|---\|\n\| detect \| 30 s \|\n\| revert \| 0 s \|\n\| review \| \d+ s \|\n\| sync \| \d+ s \|\n\| rollout \| \d+ s \|\n$/);
  t.is(hook.received.filter((p) => p.event === 'recovered').length, 1, 'one notification for the two replicas');
  t.is((hook.received.find((p) => p.event === 'recovered') as unknown as { recovery: { mode: string } }).recovery.mode, 'pull-request');
  const observed = await Promise.all([a, b].map(async (r) => Number(/^lastgood_recovery_seconds_count\{target="podinfo-prod",mode="pull-request"\} (\d+)$/m.exec(await scrape(r.controller.address!.port))?.[1])));
  t.is(observed[0]! + observed[1]!, 1, `one observation between the two replicas (${observed.join(', ')})`);
  await until('the Recovered Event', () => kube.events().some((e) => (e as { reason?: string }).reason === 'Recovered'));
  t.is(kube.events().filter((e) => (e as { reason?: string }).reason === 'Recovered').length, 1);
  t.deepEqual(github.violations, []);
});

test('a controller restarted between the revert and the recovery tells the same phases from the repository and the objects\' own times', async (t) => {
  const hook = await webhookReceiver(t);
  const { repo, clock, kube, be, start } = await drivenScenario(t, 'local', { start: Date.parse('2026-11-28T12:00:00Z') });
  const text = `${configText({ url: be.url })}${notifyTo(hook.urlFile)}`;
  const one = await start(text);
  clock.advance(1000);
  const began = clock.now() - 30_000;
  const confirmed = clock.now();
  setCanary(kube, 'Failed', began);
  await until('the revert', () => one.acted[0]);
  await one.controller.idle();
  await one.controller.stop();
  const [made] = commitsSince(repo.bare, repo.c4);

  // a new process: it remembers nothing of the revert
  clock.advance(30_000);
  const two = await start(text);
  clock.advance(30_000);
  const synced = clock.now();
  fluxApplies(kube, made!.sha, synced);
  clock.advance(90_000);
  const healthy = clock.now();
  setCanary(kube, 'Succeeded', healthy);
  await until('healthy seen', () => two.seen.some((s) => s.at === healthy && s.verdict === 'healthy'));
  await two.controller.idle();
  clock.advance(SOAK_MS);
  await until('the recovery announced', () => hook.received.some((p) => p.event === 'recovered'));
  await two.controller.idle();

  // began from the revert's evidence; confirmed and written from its commit time; synced from the Kustomization's own time
  const line = `lastgood recovered target=podinfo-prod revert=${made!.sha} revision=${made!.sha} mode=commit began=${iso(began)} confirmed=${iso(confirmed)} written=${iso(confirmed)} synced=${iso(synced)} healthy=${iso(healthy)}`;
  t.true(git(repo.bare, 'notes', '--ref=lastgood', 'show', made!.sha).split('\n').includes(line), git(repo.bare, 'notes', '--ref=lastgood', 'show', made!.sha));
  t.deepEqual(hook.received.map((p) => p.event), ['reverted', 'recovered']);
  t.regex(await scrape(two.controller.address!.port), /^lastgood_recovery_seconds_sum\{target="podinfo-prod",mode="commit"\} 180$/m);
});
