import test from 'ava';
import { chmodSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { RETRY_MAX_MS } from '../src/decide/tracker.ts';
import { testClock } from './support/clock.ts';
import {
  backend, cluster, commitsSince, config, configText, evaluations, failCanary, gitopsRepo, startController, until,
} from './support/controller-scenario.ts';
import { webhookReceiver } from './support/webhook.ts';

/**
 * A revert the git server keeps refusing (a server hook): the controller retries with its backoff,
 * and people are told once that reverting this failure failed, not at every attempt (issue 35: a
 * retrying controller sent 9 revert-failed notifications in 4 minutes). Through the controller,
 * against the Kubernetes API emulator and git's own http-backend, on a driven clock.
 */

test('a revert the server refuses, retried: every attempt fails, one revert-failed notification', async (t) => {
  const repo = gitopsRepo();
  // the server's own refusal, as a pre-receive hook says it
  const preReceive = path.join(repo.bare, 'hooks', 'pre-receive');
  writeFileSync(preReceive, '#!/bin/sh\necho "main is frozen by the release team" >&2\nexit 1\n');
  chmodSync(preReceive, 0o755);
  const hook = await webhookReceiver(t);

  const clock = testClock();
  const kube = await cluster(repo, { clock });
  t.teardown(() => kube.close());
  const be = await backend('http', repo);
  t.teardown(() => be.close());
  const cfg = config(`${configText({ url: be.url, ...(be.repoSettings ? { repoSettings: be.repoSettings } : {}) })}notify:\n  webhook: { urlFrom: { file: ${hook.urlFile} } }\n`);
  const { seen, onEvaluated } = evaluations();
  const { controller, acted } = await startController(kube, cfg, be.open(), { clock, onEvaluated });
  t.teardown(() => controller.stop());
  await until('ready, leading and observed', () => controller.ready && controller.isLeader && seen.length > 0);

  clock.advance(1000);
  failCanary(kube, 'Failed', clock);
  await until('the first attempt', () => acted.length >= 1);
  await controller.idle();
  // the retries come on the controller's backoff: the clock moves past each one
  for (let attempt = 2; attempt <= 4; attempt++) {
    clock.advance(RETRY_MAX_MS);
    await until(`attempt ${attempt}`, () => acted.length >= attempt);
    await controller.idle();
  }
  t.true(acted.length >= 4, `${acted.length} attempts`);
  for (const outcome of acted) {
    t.is(outcome.action, 'alert');
    t.regex(outcome.reason, /^revert failed\b/);
    t.regex(outcome.error?.message ?? '', /main is frozen by the release team/);
  }
  t.deepEqual(commitsSince(repo.bare, repo.c4), [], 'nothing landed');
  t.deepEqual(hook.received.map((p) => p.event), ['revert-failed'], 'told once, at the first attempt');
});
