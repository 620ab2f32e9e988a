import test from 'ava';
import { deployment, kustomization } from './support/objects.ts';
import { commitsSince, configText, drivenScenario, failCanary, iso, until } from './support/controller-scenario.ts';

/**
 * A rollback that does not recover (issue 37): lastgood reverts the failed release, Flux applies the
 * revert, and the canary fails again at it. One loud alert — the decision, one Event, the counter
 * the LastgoodRollbackDidNotRecover rule reads — and never a second revert (no revert of a revert).
 * Through the controller against the Kubernetes API emulator and a local repository, on a driven clock.
 */

test('the target fails again at lastgood\'s own revert: one alert, one Event, the not-recovered counter once, no second revert', async (t) => {
  const { repo, clock, kube, be, start } = await drivenScenario(t, 'local');
  const { controller, acted, seen } = await start(configText({ url: be.url }));

  clock.advance(1000);
  failCanary(kube, 'Failed', clock);
  const revert = await until('the revert', () => acted[0]);
  t.is(revert.action, 'revert');
  const [made] = commitsSince(repo.bare, repo.c4);
  t.is(revert.commit, made!.sha);
  await controller.idle();

  // Flux applies the revert; the canary analyses it and fails again
  clock.advance(60_000);
  const applied = iso(clock.now());
  kube.apply(kustomization({ attempted: `main@sha1:${made!.sha}`, applied: `main@sha1:${made!.sha}`, ready: 'True', since: applied }));
  kube.apply(deployment({ image: 'ghcr.io/stefanprodan/podinfo:6.0.0', state: 'available', since: applied }));
  failCanary(kube, 'Progressing', clock);
  clock.advance(120_000);
  failCanary(kube, 'Failed', clock);
  const alert = await until('the alert', () => acted[1]);
  t.is(alert.action, 'alert');
  t.regex(alert.reason, new RegExp(`the revert itself failed: the failing revision ${made!.sha.slice(0, 12)} is lastgood's own revert for podinfo-prod`));

  // more changes of the failed canary, and time: nothing more
  for (let i = 0; i < 3; i++) {
    const before = seen.length;
    clock.advance(60_000);
    failCanary(kube, 'Failed', clock);
    await until('the change observed', () => seen.length > before);
  }
  await controller.idle();
  t.is(acted.length, 2, 'acted twice: the revert, then the alert');
  t.deepEqual(commitsSince(repo.bare, repo.c4).map((c) => c.sha), [made!.sha], 'no revert of the revert');
  await until('the two Events', () => kube.events().length >= 2);
  const events = kube.events() as unknown as Array<{ reason: string; type: string; note: string }>;
  t.is(events.length, 2, events.map((e) => e.reason).join(', '));
  t.like(events[1], { type: 'Warning' });
  t.regex(events[1]!.note, /the revert itself failed/);
  const metrics = await (await fetch(`http://127.0.0.1:${controller.address!.port}/metrics`)).text();
  t.regex(metrics, /^lastgood_rollbacks_not_recovered_total\{target="podinfo-prod"\} 1$/m);
  t.regex(metrics, /^lastgood_reverts_total\{target="podinfo-prod",outcome="created"\} 1$/m);
});
