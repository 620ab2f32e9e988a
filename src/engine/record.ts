/** Verified last-known-good records: what each target was observed as, at the revision it runs. */
import { soaked, type HealthyRun } from '../decide/soak.ts';
import type { RepoBackend } from '../repo/types.ts';
import { evidenceLine } from '../revert/message.ts';
import type { CheckOptions, RecordOutcome, Report } from './types.ts';
import { check, checkReport } from './check.ts';

/**
 * `check --record`, the Action's `record` and the controller: what each target was observed as, at
 * the revision it runs, recorded where the backend keeps verified records (NotesStore: git notes,
 * GitHub deployments). A target healthy at its revision for the whole soak (decide/soak.ts: its
 * objects' times, and what a watching door saw in `watched`) is a verified last-known-good record; with `failures`, a
 * failed target's failing revision is recorded as failed where the store keeps failures (GitHub: a
 * deployment status "failure"). A store that cannot record says why, and the run goes on unverified.
 */
export async function recordHealthy(opts: CheckOptions & { repo: RepoBackend; failures?: boolean; watched?: Map<string, HealthyRun> }): Promise<RecordOutcome[]> {
  const store = opts.repo.notes?.();
  const out: RecordOutcome[] = [];
  for (const { target, verdict } of check(opts)) {
    const state = verdict.verdict === 'healthy' ? 'healthy' : verdict.verdict === 'failed' && opts.failures ? 'failed' : undefined;
    if (!state) continue;
    if (state === 'failed' && !store?.recordFailure) continue; // a store of verified records only
    if (!store) {
      out.push({ target: target.name, recorded: false, reason: `the ${opts.repo.kind} backend keeps no notes`, state });
      continue;
    }
    if (state === 'healthy') {
      // verified means stable: healthy at that revision for the whole soak, as far as anyone can tell (decide/soak.ts)
      const watched = opts.watched?.get(target.name);
      const soak = soaked({ verdict, soakMs: target.soakMs, now: opts.now.getTime(), ...(watched ? { watched } : {}) });
      if (!soak.ok) {
        out.push({ target: target.name, recorded: false, reason: `not recorded: ${soak.reason}`, state, ...(soak.revision ? { soaking: true } : {}) });
        continue;
      }
    }
    const sha = state === 'healthy'
      ? verdict.evidence.map((e) => e.attempted?.sha ?? e.lastSucceeded?.sha).find(Boolean)
      : verdict.evidence.filter((e) => e.state === 'failed').map((e) => e.attempted?.sha).find(Boolean);
    const commit = sha ? await opts.repo.resolveCommit(sha) : undefined;
    if (!commit) {
      out.push({ target: target.name, recorded: false, reason: sha ? `revision ${sha} is not in the repository` : 'no object of the target reports a git revision', state });
      continue;
    }
    const observation = { target: target.name, at: opts.now.toISOString(), evidence: verdict.evidence.map((e) => evidenceLine(e)).join('; ') };
    const result = state === 'healthy' ? await store.record(commit, observation) : await store.recordFailure!(commit, observation);
    const recorded = result ? result.recorded : true;
    const what = state === 'healthy' ? 'verified last-known-good' : 'failed';
    const reason = recorded ? `recorded ${commit.slice(0, 12)} as ${what}${store.where ? ` (${store.where})` : ''}` : `not recorded: ${result?.reason ?? 'the store refused it'}`;
    out.push({ target: target.name, commit, recorded, reason, state });
  }
  return out;
}

/**
 * `lastgood check [--record]`: each target's verdict and decision, and with `repo` (--record) what
 * was recorded, said in the target's reason; a verified record makes the report name the commit
 * as the target's last-known-good. `repo` is opened only when a record is asked for.
 */
export async function checkAndRecord(opts: CheckOptions & { repo?: () => Promise<RepoBackend> }): Promise<Report> {
  const { targets } = checkReport(opts);
  if (!opts.repo) return { targets };
  for (const r of await recordHealthy({ ...opts, repo: await opts.repo(), failures: true })) {
    const t = targets.find((x) => x.name === r.target)!;
    t.reason = `${t.reason}; ${r.reason}`;
    if (r.recorded && r.commit && r.state === 'healthy') {
      t.lastKnownGood = r.commit;
      t.verified = true;
    }
  }
  return { targets };
}
