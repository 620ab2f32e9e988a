import test from 'ava';
import { testClock } from './support/clock.ts';
import { git } from './support/git.ts';
import {
  backend, cluster, commitsSince, config, configText, evaluations, failCanary, gitopsRepo, startController, until, type BackendKind,
} from './support/controller-scenario.ts';

/**
 * The controller end to end, in this process: the real @kubernetes/client-node informers against
 * the Kubernetes API emulator, the engine, and a real repository (local bare repository, or the
 * GitHub API emulator over one). A canary goes Progressing → Failed and exactly one revert follows.
 */

const CANARY_WATCH = /canaries\?.*watch=true/;

for (const kind of ['local', 'http', 'github'] as BackendKind[]) {
  // how fast is `npm run bench -- --only controller`'s business; here: the change itself decides, no timer
  test(`${kind}: Progressing → Failed → exactly one revert, decided on the change itself`, async (t) => {
    const repo = gitopsRepo();
    const clock = testClock();
    const kube = await cluster(repo, { clock });
    t.teardown(() => kube.close());
    const be = await backend(kind, repo);
    t.teardown(() => be.close());
    const mode = kind === 'github' ? 'pull-request' : 'commit';
    // rendered as the engine builds it, as a controller does by default
    const cfg = config(configText({ url: be.url, ...(be.apiUrl ? { apiUrl: be.apiUrl } : {}), ...(be.repoSettings ? { repoSettings: be.repoSettings } : {}), mode, render: true }));
    const { seen, onEvaluated } = evaluations();
    const { controller, acted, lines } = await startController(kube, cfg, be.open(), { clock, onEvaluated });
    t.teardown(() => controller.stop());
    await until('ready, leading and observed', () => controller.ready && controller.isLeader && seen.length > 0);
    t.deepEqual(acted, [], 'nothing to do while the canary progresses');

    clock.advance(1000);
    const changed = clock.now();
    failCanary(kube, 'Failed', clock);
    const outcome = await until('the revert', () => acted[0]);
    const deciding = seen.find((s) => s.act)!;
    t.like(deciding, { at: changed, verdict: 'failed', action: 'revert' }, 'decided at the moment of the change');
    t.true(deciding.changedAt !== undefined, 'by the change, not by a timer');
    t.is(clock.now(), changed, 'no clock time had to pass');
    t.is(outcome.action, 'revert');
    t.true(outcome.created);
    t.deepEqual(outcome.bad, [repo.c3]);
    t.is(outcome.lastKnownGood, repo.c2);
    if (kind !== 'github') {
      const made = commitsSince(repo.bare, repo.c4);
      t.is(made.length, 1);
      t.is(made[0]!.sha, outcome.commit!);
      t.regex(made[0]!.message, new RegExp(`^Lastgood-Reverts: ${repo.c3}$`, 'm'));
      t.regex(made[0]!.message, /^Lastgood-Evidence: flagger\.app\/Canary prod\/podinfo state=failed reason=Failed/m);
    } else {
      t.is(be.github!.pulls.length, 1);
      t.is(be.github!.pulls[0]!.head, `lastgood/podinfo-prod/${repo.c3.slice(0, 12)}`);
      t.is(git(repo.bare, 'rev-parse', 'main'), repo.c4, 'main untouched in pull-request mode');
    }

    // the Event on the failing object
    await until('the Event', () => kube.events().length > 0);
    const [event] = kube.events();
    t.like(event, { apiVersion: 'events.k8s.io/v1', reason: kind === 'github' ? 'RevertPullRequestOpened' : 'RevertCommitted', type: 'Normal', reportingController: 'lastgood.dev/controller' });
    t.like((event as unknown as { regarding: object }).regarding, { kind: 'Canary', namespace: 'prod', name: 'podinfo' });

    // more changes of the failed canary: the failure was acted on, nothing more is written
    for (let i = 0; i < 3; i++) {
      const before = seen.length;
      clock.advance(10);
      failCanary(kube, 'Failed', clock);
      await until('the change observed', () => seen.length > before);
    }
    await controller.idle();
    t.is(acted.length, 1, 'acted once');
    if (kind !== 'github') t.is(commitsSince(repo.bare, repo.c4).length, 1);
    else t.is(be.github!.pulls.length, 1);

    const metrics = await (await fetch(`http://127.0.0.1:${controller.address!.port}/metrics`)).text();
    t.regex(metrics, /^lastgood_reverts_total\{target="podinfo-prod",outcome="created"\} 1$/m);
    t.regex(metrics, /^lastgood_targets\{verdict="failed"\} 1$/m);
    t.regex(metrics, /^lastgood_failure_to_revert_seconds_count 1$/m);
    t.regex(metrics, /^lastgood_decisions_total\{action="revert"\} \d+$/m);
    t.regex(metrics, /^lastgood_target_last_sync_timestamp_seconds\{target="podinfo-prod"\} \d/m);
    t.regex(metrics, /^lastgood_leader 1$/m);

    // every line about the target names it, and the revision once it is known
    const about = lines.filter((l) => l.target !== undefined);
    t.true(about.length > 0);
    for (const l of lines.filter((x) => /decided|revert done|located bad revision|delivered revert/.test(String(x.msg)) && x.verdict !== 'progressing')) {
      t.is(l.target, 'podinfo-prod', JSON.stringify(l));
      t.truthy(l.revision, JSON.stringify(l));
    }
  });
}

for (const gone of ['event', 'status'] as const) {
test(`the watch is cut and a 410 is served in the middle (${gone === 'event' ? 'an ERROR event in the stream' : 'HTTP 410'}): the failure is still seen, and acted on once`, async (t) => {
  const repo = gitopsRepo();
  const kube = await cluster(repo);
  kube.gone = gone;
  t.teardown(() => kube.close());
  const be = await backend('local', repo);
  const { seen, onEvaluated } = evaluations();
  const { controller, acted, lines } = await startController(kube, config(configText({ url: be.url })), be.open(), { onEvaluated });
  t.teardown(() => controller.stop());
  await until('ready and leading', () => controller.ready && controller.isLeader);
  await until('the canary watch', () => kube.openWatches(CANARY_WATCH) === 1);
  const lists = kube.requests(/canaries\?limit=/).length;

  // hold the reconnect so the failure and the compaction happen while no watch is open
  kube.delay(CANARY_WATCH, 300, 1);
  t.true(kube.dropWatches({ match: CANARY_WATCH }) >= 1);
  failCanary(kube);
  kube.compact();
  const outcome = await until('the revert', () => acted[0]);
  t.is(outcome.action, 'revert');
  t.true(outcome.created);
  t.true(kube.requests(/canaries\?limit=/).length > lists, 'relisted after the 410');
  if (gone === 'status') t.true(kube.requests(CANARY_WATCH).some((r) => r.status === 410), 'the resumed watch was refused with 410');
  t.true(kube.requests(CANARY_WATCH).some((r) => r.status === 200), 'watching again');
  const before = seen.length;
  failCanary(kube);
  await until('the change observed', () => seen.length > before);
  await controller.idle();
  t.is(acted.length, 1);
  t.is(commitsSince(repo.bare, repo.c4).length, 1);
  const metrics = await controller.metrics.registry.metrics();
  t.regex(metrics, /^lastgood_watch_restarts_total\{kind="Canary"\} [1-9]/m);
  // the log says what the API answered, in a line: not client-node's error object with the response's headers
  const restarts = lines.filter((l) => l.msg === 'watch stopped on an error; restarting');
  t.true(restarts.length >= 1);
  for (const l of restarts) {
    t.is(typeof l.err, 'string', JSON.stringify(l.err));
    t.notRegex(String(l.err), /headers|content-type/i);
  }
});
}

test('two replicas in one cluster: one leader, one revert; the standby takes over when the leader stops, and writes nothing more', async (t) => {
  const repo = gitopsRepo();
  const kube = await cluster(repo);
  t.teardown(() => kube.close());
  const be = await backend('local', repo);
  const cfg = config(configText({ url: be.url }));
  const clock = testClock();
  const ea = evaluations();
  const eb = evaluations();
  const a = await startController(kube, cfg, be.open(), { identity: 'replica-a', clock, onEvaluated: ea.onEvaluated });
  t.teardown(() => a.controller.stop());
  await until('a leads', () => a.controller.ready && a.controller.isLeader);
  const b = await startController(kube, cfg, be.open(), { identity: 'replica-b', clock, onEvaluated: eb.onEvaluated });
  t.teardown(() => b.controller.stop());
  await until('b ready and standing by', () => b.controller.ready && eb.seen.length > 0);
  // the leader renews, the standby reads the lease held (each at least once)
  const writes = () => kube.requests(/leases\/lastgood-controller$/).filter((r) => r.method === 'PUT').length;
  const renewed = writes();
  await until('a renewal', () => writes() > renewed);
  t.true(a.controller.isLeader !== b.controller.isLeader, 'exactly one leader');
  const [leader, standby, standbySeen] = a.controller.isLeader ? [a, b, eb.seen] : [b, a, ea.seen];

  const before = standbySeen.length;
  failCanary(kube, 'Failed', clock);
  await until('the revert', () => leader.acted[0]);
  await until('the standby decided too', () => standbySeen.slice(before).some((s) => s.verdict === 'failed' && s.act));
  await standby.controller.idle();
  t.is(standby.acted.length, 0, 'the standby decided but did not act');
  t.is(commitsSince(repo.bare, repo.c4).length, 1);
  const lease = kube.get({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', namespace: 'lastgood', name: 'lastgood-controller' }) as unknown as { spec: { holderIdentity: string } };
  t.is(lease.spec.holderIdentity, leader.controller.identity);

  await leader.controller.stop();
  // the lease was released: the standby takes it at its next retry, not after the lease expired
  await until('the standby leads', () => standby.controller.isLeader);
  // it acts on the failure it has seen (its own first act) and finds the revert in the repository
  const second = await until('the new leader acts', () => standby.acted[0]);
  t.is(second.action, 'revert');
  t.false(second.created);
  t.regex(second.reason, /already reverted by/);
  t.is(commitsSince(repo.bare, repo.c4).length, 1, 'still one revert');
  await standby.controller.idle();
  t.is(kube.events().length, 1, 'one Event for the revert, whichever leader wrote it');
});

for (const kind of ['local', 'http', 'github'] as BackendKind[]) {
  test(`${kind}: two controllers in two clusters on one repository (a fleet): one revert`, async (t) => {
    const repo = gitopsRepo();
    const be = await backend(kind, repo);
    t.teardown(() => be.close());
    const east = await cluster(repo);
    const west = await cluster(repo);
    t.teardown(() => east.close());
    t.teardown(() => west.close());
    const cfg = config(configText({ url: be.url, ...(be.apiUrl ? { apiUrl: be.apiUrl } : {}), ...(be.repoSettings ? { repoSettings: be.repoSettings } : {}) }));
    const a = await startController(east, cfg, be.open(), { identity: 'east' });
    const b = await startController(west, cfg, be.open(), { identity: 'west' });
    t.teardown(() => a.controller.stop());
    t.teardown(() => b.controller.stop());
    await until('both lead their cluster', () => a.controller.isLeader && b.controller.isLeader && a.controller.ready && b.controller.ready);

    failCanary(east);
    failCanary(west);
    const [x, y] = await until('both acted', () => a.acted[0] && b.acted[0] && [a.acted[0], b.acted[0]]);
    t.is(x!.action, 'revert');
    t.is(y!.action, 'revert');
    t.is([x!.created, y!.created].filter(Boolean).length, 1, `one created it: ${x!.reason} / ${y!.reason}`);
    t.is(commitsSince(repo.bare, repo.c4).length, 1);
    t.is(x!.commit, y!.commit, 'both name the same revert');
  });
}
