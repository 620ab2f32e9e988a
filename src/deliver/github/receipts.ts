import type { Octokit } from '@octokit/rest';
import { RemoteError } from '../../errors.ts';
import type { Receipt } from '../../history/notes.ts';
import { isLostAnswer, SEND_ONCE } from './graphql.ts';
import { backoffDelay, sleep } from '../../retry.ts';

/**
 * Claims of a revert's side effects on GitHub (history/notes.ts Receipt; issue 19: the notification
 * is sent once across retries, reruns and replicas). Git notes are not reachable through GitHub's
 * API, but refs are, and creating one is a compare-and-swap: a claim is the ref
 *
 *   refs/lastgood/done/<target>/<bad commit>/<effect>
 *
 * created at the revert commit ("Create a reference" takes any fully qualified name under refs/
 * with two slashes, docs.github.com/rest/git/refs). Of two writers one creates it and the other
 * is told "Reference already exists"; nothing else is written, so a claim that loses (every
 * replica of a fleet but one) leaves nothing behind. A claim whose answer was lost cannot be told
 * from another writer's: it is taken as another's, and the notification is lost rather than sent
 * twice (report/once.ts). The refs are outside refs/heads and refs/tags: no branch, tag or pull
 * request shows them.
 */
export function claimRef(bad: string, receipt: Pick<Receipt, 'target' | 'effect'>): string {
  return `refs/lastgood/done/${receipt.target}/${bad}/${receipt.effect}`;
}

export async function claimOnGitHub(octokit: Octokit, repo: { owner: string; repo: string }, bad: string, receipt: Receipt, opts: { attempts?: number; retryUnitMs?: number } = {}): Promise<boolean> {
  const ref = claimRef(bad, receipt);
  const what = `claiming ${receipt.effect} for ${receipt.target}`;
  const fail = (error: unknown) => new RemoteError('github', `${what} (${ref}) failed: ${(error as Error)?.message ?? String(error)}`, { status: (error as { status?: number }).status, cause: error });
  const current = async (): Promise<string | undefined> => {
    try {
      const { data } = await octokit.rest.git.getRef({ ...repo, ref: ref.replace(/^refs\//, '') });
      return data.object.sha;
    } catch (error) {
      if ((error as { status?: number }).status === 404) return undefined;
      throw fail(error);
    }
  };
  // claimed already (another replica of a fleet, an earlier run): nothing written
  if ((await current()) !== undefined) return false;
  // the claim is the ref alone, at the revert commit (already in the repository): a claim that
  // loses a race writes nothing either
  const at = receipt.revert;
  const attempts = opts.attempts ?? 4;
  for (let attempt = 1; ; attempt++) {
    try {
      await octokit.rest.git.createRef({ ...repo, ref, sha: at, request: SEND_ONCE });
      return true;
    } catch (error) {
      const status = (error as { status?: number }).status;
      // claimed already: by this very claim whose answer was lost, or by another writer
      // claimed by another writer, or by this very claim whose answer was lost: the two are not
      // told apart, and neither announces (a notification lost rather than sent twice, once.ts)
      if (status === 422 && /already exists/i.test((error as Error).message)) return false;
      if (!isLostAnswer(error) || attempt >= attempts) throw fail(error);
      const now = await current();
      if (now !== undefined) return false;
      await sleep(backoffDelay(attempt - 1, { baseMs: opts.retryUnitMs ?? 1000 }));
    }
  }
}
