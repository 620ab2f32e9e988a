/**
 * The side effects of a revert, exactly once across retries, reruns and replicas (issue 19). A
 * revert is recognised by what it is: a lastgood commit whose trailers name the target and the
 * failure it answers (its bad commits), whoever made it and whether the process that made it saw
 * the answer. What must not happen twice is claimed in the repository itself before it is done
 * (history/notes.ts Receipt: a note line under git's lock or the server's compare-and-swap, a ref on
 * GitHub), so a retry, a rerun or the next leader finds the claim. Where the backend keeps no
 * records, only the run that made the revert does them (its `created`).
 *
 * What each side effect relies on:
 * - the notification: this claim ("notified"), made right before sending: a crash between the two
 *   loses it rather than sending it twice;
 * - labels, reviewers, assignees: the pull request itself (the GitHub backend adds what it lacks);
 * - the Kubernetes Event: its name, derived from the revert (controller/events.ts): the API server
 *   refuses a second one;
 * - deployments, a superseded pull request's comment: looked for before they are written again.
 */
import type { Logger } from 'pino';
import type { TargetOutcome } from '../engine.ts';
import { lastgoodTarget, revertedBy } from '../history/trailers.ts';
import type { RepoBackend } from '../repo/types.ts';

export type Effect = 'notified';

/**
 * The outcome's commit is lastgood's revert of this failure: made by this run, or found with the
 * trailers that name the target and the failing commit (not a person's revert, not another target's).
 */
export async function isOwnRevert(repo: Pick<RepoBackend, 'readCommit'>, t: Pick<TargetOutcome, 'name' | 'action' | 'commit' | 'created' | 'bad'>): Promise<boolean> {
  if (t.action !== 'revert' || !t.commit || !t.bad[0]) return false;
  if (t.created) return true;
  const c = await repo.readCommit(t.commit);
  return lastgoodTarget(c.message) === t.name && revertedBy(c.message).includes(t.bad[0]);
}

/** True when this caller is the one to do `effect` for the outcome's revert (and it is lastgood's revert of this failure). */
export async function claimEffect(repo: RepoBackend, t: TargetOutcome, effect: Effect, now: Date, log: Pick<Logger, 'warn'>): Promise<boolean> {
  const bad = t.bad[0];
  const store = repo.notes?.();
  if (!t.commit || !bad || !store?.claim) return t.created !== false;
  try {
    // a revert found, not made here: announced only if it is lastgood's revert of this failure (not a person's)
    if (!(await isOwnRevert(repo, t))) return false;
    return await store.claim(bad, { target: t.name, effect, revert: t.commit, at: now.toISOString() });
  } catch (error) {
    // the claim could not be written: fall back to the run that made the revert
    log.warn({ target: t.name, effect, err: error instanceof Error ? error.message : String(error) }, 'cannot claim a side effect of the revert in the repository; only the run that made it does it');
    return t.created !== false;
  }
}
