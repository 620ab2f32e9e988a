import test from 'ava';
import { execFileSync } from 'node:child_process';
import { pino } from 'pino';
import { readAuditLog } from '../src/audit/timeline.ts';
import type { RecoveredEntry } from '../src/audit/schema.ts';
import { loadConfig } from '../src/config/load.ts';
import { resolveTarget } from '../src/config/schema.ts';
import { check, recover } from '../src/engine/index.ts';
import { mergeModelRequest } from './support/forge-emulator.ts';
import { forgeScenario, NOW, TARGET } from './support/forge-scenario.ts';
import { git } from './support/git.ts';
import { HOSTS } from './support/hosts-under-test.ts';

/**
 * A recovery in pull-request mode on each merge-request host (issue 37), through the engine as the
 * controller calls it (engine/recovery.ts): the request lastgood opened is merged, the target is
 * healthy at the merge, and the recovery is recorded on the revert's git note on the host (the
 * server's compare-and-swap of refs/notes/lastgood) once, with one comment on the merged request;
 * a second call (a retry, another replica) finds it recorded and says nothing more. `lastgood log`
 * reads it back with the merge's time.
 */

const log = pino({ level: 'silent' });

for (const host of HOSTS) {
  test(`recovery on ${host.provider}: recorded once on the revert's note, one comment on the merged request, in the log`, async (t) => {
    const s = await forgeScenario(t, host);
    const model = s.emulator.model;
    const opened = (await s.runOnce()).targets[0]!;
    t.is(opened.action, 'revert', opened.reason);
    // a person merges it at 12:20
    const branch = `lastgood/${TARGET}/${s.bad.slice(0, 12)}`;
    git(s.work, 'fetch', '-q', 'origin', branch);
    const when = '2026-11-01T12:20:00Z';
    execFileSync('git', ['merge', '--no-ff', '-q', '-m', `Merge ${branch}`, 'FETCH_HEAD'], {
      cwd: s.work, env: { ...process.env, GIT_AUTHOR_DATE: when, GIT_COMMITTER_DATE: when, GIT_AUTHOR_NAME: 'Maintainer', GIT_AUTHOR_EMAIL: 'm@example.com', GIT_COMMITTER_NAME: 'Maintainer', GIT_COMMITTER_EMAIL: 'm@example.com' },
    });
    const merge = git(s.work, 'rev-parse', 'HEAD');
    git(s.work, 'push', '-q', 'origin', 'HEAD:main');
    mergeModelRequest(model, model.requests[0]!, merge);

    const config = await loadConfig(s.config);
    const target = resolveTarget(config, config.targets[0]!);
    const now = new Date(Date.parse('2026-11-01T12:40:00Z'));
    const [assessed] = check({ config, observed: s.healthy(merge), now, target: TARGET });
    const healthySince = Date.parse('2026-11-01T12:30:00Z');
    const recovery = (repo: Awaited<ReturnType<typeof s.backend>>) => recover({ repo, config, target, verdict: assessed!.verdict, revision: merge, healthySince, syncedAt: Date.parse('2026-11-01T12:25:00Z'), now, log });

    const first = await recovery(await s.backend());
    t.true(first.recovered && first.claimed, first.recovered ? '' : first.reason);
    if (!first.recovered) return;
    t.like(first.record, { target: TARGET, revert: opened.commit, revision: merge, mode: 'pull-request', merged: '2026-11-01T12:20:00.000Z', synced: '2026-11-01T12:25:00.000Z', healthy: '2026-11-01T12:30:00.000Z' });
    const said = () => model.requests[0]!.comments.filter((c) => c.body.includes(' recovered at '));
    t.is(said().length, 1);
    t.true(said()[0]!.body.startsWith(`lastgood: \`${TARGET}\` recovered at 2026-11-01T12:30:00Z, `), said()[0]!.body);

    // another replica (a backend of its own) finds it recorded: nothing more
    const again = await recovery(await s.backend());
    t.true(again.recovered && !again.claimed);
    t.is(said().length, 1);
    t.is(git(s.bare, 'notes', '--ref=lastgood', 'show', opened.commit!).split('\n').filter((l) => l.startsWith('lastgood recovered ')).length, 1);

    const auditLog = await readAuditLog({ repo: await s.backend(), branch: 'main', targets: [{ name: TARGET, paths: target.paths }], since: new Date(NOW.getTime() - 86_400_000), why: 'test', now });
    const entry = auditLog.targets[0]!.entries.find((e): e is RecoveredEntry => e.kind === 'recovered');
    t.like(entry, { revert: opened.commit, revision: merge, mode: 'pull-request', merged: '2026-11-01T12:20:00.000Z', at: '2026-11-01T12:30:00.000Z' });
    t.deepEqual(s.emulator.violations, []);
  });
}
