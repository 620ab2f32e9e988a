import test from 'ava';
import { Octokit } from '@octokit/rest';
import { configText, drivenScenario, failCanary, TOKEN, until } from './support/controller-scenario.ts';
import { webhookReceiver } from './support/webhook.ts';

/**
 * A revert pull request left unmerged while production stays broken (issue 37): the controller
 * reminds once per `remindUnmerged` — an `unmerged` notification and the counter — never more often,
 * and stops once the request is merged. Through the controller against the Kubernetes API emulator
 * and the GitHub API emulator, on a driven clock.
 */

const EVERY_MS = 30 * 60_000;

test('an unmerged revert request is reminded once per interval while the target stays failed, and no more once it is merged', async (t) => {
  const hook = await webhookReceiver(t);
  const posts = hook.received;

  const { clock, kube, be, start } = await drivenScenario(t, 'github');
  const { controller, acted } = await start(`${configText({ url: be.url, apiUrl: be.apiUrl!, mode: 'pull-request', controller: '  remindUnmerged: 30m\n' })}notify:\n  webhook: { urlFrom: { file: ${hook.urlFile} } }\n`);

  clock.advance(1000);
  failCanary(kube, 'Failed', clock);
  const opened = await until('the pull request', () => acted[0]);
  t.truthy(opened.pullRequest);
  await until('the revert announced', () => posts.length >= 1);
  await controller.idle();
  t.deepEqual(posts.map((p) => p.event), ['reverted']);
  const scrape = async () => (await (await fetch(`http://127.0.0.1:${controller.address!.port}/metrics`)).text());

  // not before the interval
  clock.advance(EVERY_MS - 1);
  await controller.idle();
  t.deepEqual(posts.map((p) => p.event), ['reverted'], 'nothing before the interval');
  // at the interval, once; and once more an interval later
  clock.advance(1);
  await until('the first reminder', () => posts.length >= 2);
  await controller.idle();
  clock.advance(EVERY_MS / 2);
  await controller.idle();
  t.is(posts.length, 2, 'never more often than the interval');
  clock.advance(EVERY_MS / 2);
  await until('the second reminder', () => posts.length >= 3);
  await controller.idle();
  t.deepEqual(posts.map((p) => p.event), ['reverted', 'unmerged', 'unmerged']);
  t.true(posts.slice(1).every((p) => p.pullRequest === opened.pullRequest), 'each names the pull request');
  t.regex(await scrape(), /^lastgood_revert_reminders_total\{target="podinfo-prod"\} 2$/m);

  // merged: no more reminders, however long the target stays failed
  const number = Number(/\/pull\/(\d+)$/.exec(opened.pullRequest!)![1]);
  await new Octokit({ auth: TOKEN, baseUrl: be.apiUrl }).rest.pulls.merge({ owner: 'acme', repo: 'gitops', pull_number: number, merge_method: 'merge' });
  for (let i = 0; i < 3; i++) {
    clock.advance(EVERY_MS);
    await controller.idle();
  }
  t.is(posts.length, 3, 'no reminder once merged');
  t.regex(await scrape(), /^lastgood_revert_reminders_total\{target="podinfo-prod"\} 2$/m);
  t.is(acted.length, 1, 'acted once: reminders are not acts');
});
