import test from 'ava';
import { forgeScenario, P, values } from './support/forge-scenario.ts';
import { git } from './support/git.ts';
import { HOSTS } from './support/hosts-under-test.ts';

/**
 * GitLab can write the review branch's commit itself (the Commits API with `actions`, atomic, at
 * `start_sha`): the other way measured against the push (bench/review-hosts.bench.ts). Both must
 * give the same branch, request and idempotency.
 */

const GITLAB = HOSTS.find((h) => h.provider === 'gitlab')!;

test('through the Commits API: the same branch content and merge request, no push; a rerun writes nothing', async (t) => {
  const s = await forgeScenario(t, GITLAB);
  const first = (await s.runOnce(undefined, await s.backend({ commits: 'api' }))).targets[0]!;
  t.falsy(first.error, JSON.stringify(first.error));
  t.true(first.created);
  const branch = `lastgood/podinfo/${s.bad.slice(0, 12)}`;
  t.is(git(s.bare, 'rev-parse', branch), first.commit!);
  t.is(git(s.bare, 'rev-parse', `${branch}^`), s.bad, 'made at start_sha');
  t.is(git(s.bare, 'show', `${branch}:${P}values.yaml`), values('1.0.0').trim());
  t.regex(git(s.bare, 'log', '-1', '--format=%B', branch), /Lastgood-Target: podinfo/, 'the message carries the trailers');
  t.is(s.server.log.filter((r) => r.service === 'git-receive-pack' && r.method === 'POST').length, 0, 'nothing pushed');
  t.is(s.emulator.log.filter((r) => r.route === 'POST /api/v4/projects/{id}/repository/commits').length, 1);
  t.is(s.emulator.model.requests.length, 1);
  const writes = s.emulator.log.filter((r) => r.write && !r.git).length;
  const again = (await s.runOnce(undefined, await s.backend({ commits: 'api' }))).targets[0]!;
  t.false(again.created);
  t.is(s.emulator.log.filter((r) => r.write && !r.git).length, writes);
  t.deepEqual(s.emulator.violations, []);
});
