import { randomBytes } from 'node:crypto';
import type { Octokit } from '@octokit/rest';
import { RemoteError } from '../../errors.ts';
import { formatReceipt, type Receipt } from '../../history/notes.ts';
import { isLostAnswer, SEND_ONCE } from './graphql.ts';
import { backoffDelay, sleep } from '../../retry.ts';

/**
 * Claims of a revert's side effects on GitHub (history/notes.ts Receipt; issue 19: the notification
 * is sent once across retries, reruns and replicas). Git notes are not reachable through GitHub's
 * API, but refs are, and creating one is a compare-and-swap: a claim is the ref
 *
 *   refs/lastgood/done/<target>/<bad commit>/<effect>
 *
 * created at a blob that says what was claimed, by whom and when ("Create a reference" takes any
 * fully qualified name under refs/ with two slashes, docs.github.com/rest/git/refs). Of two
 * writers one creates it and the other is told "Reference already exists". A claim whose answer
 * was lost is told from another writer's by the ref's value: its blob holds a nonce of this claim.
 * The refs are outside refs/heads and refs/tags: no branch, tag or pull request shows them.
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
  // claimed already (another controller of a fleet, an earlier run): nothing written. Only two
  // claims racing past this read leave the loser's blob, unreachable, for GitHub's gc.
  if ((await current()) !== undefined) return false;
  let blob: string;
  try {
    // content-addressed, and unique to this claim (the nonce): the plugins may send it again safely
    const { data } = await octokit.rest.git.createBlob({ ...repo, content: `${formatReceipt(receipt)} by=${randomBytes(8).toString('hex')}\n`, encoding: 'utf-8' });
    blob = data.sha;
  } catch (error) {
    throw fail(error);
  }
  const attempts = opts.attempts ?? 4;
  for (let attempt = 1; ; attempt++) {
    try {
      await octokit.rest.git.createRef({ ...repo, ref, sha: blob, request: SEND_ONCE });
      return true;
    } catch (error) {
      const status = (error as { status?: number }).status;
      // claimed already: by this very claim whose answer was lost, or by another writer
      if (status === 422 && /already exists/i.test((error as Error).message)) return (await current()) === blob;
      if (!isLostAnswer(error) || attempt >= attempts) throw fail(error);
      const now = await current();
      if (now !== undefined) return now === blob;
      await sleep(backoffDelay(attempt - 1, { baseMs: opts.retryUnitMs ?? 1000 }));
    }
  }
}
