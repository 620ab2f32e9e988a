import { RemoteError } from '../../errors.ts';
import { hostFailure } from '../review-request.ts';

/** What both Bitbucket clients (@coderabbitai/bitbucket, Cloud and Data Center) answer: data, or an error body with the response. */
export type ClientAnswer = Promise<{ data?: unknown; error?: unknown; response: Response }>;

/**
 * The data of a Bitbucket answer, or a RemoteError with the host's own words (`wordsOf` reads them
 * from the edition's error body) and, for the statuses `hint` names, what the credentials need.
 */
export async function bitbucketAnswer<T>(what: string, where: string, answer: ClientAnswer, wordsOf: (body: unknown) => string, hint: (status: number) => string | undefined): Promise<T> {
  let result;
  try {
    result = await answer;
  } catch (error) {
    if (error instanceof RemoteError) throw error;
    throw new RemoteError('bitbucket', `${what} on ${where}: ${(error as Error)?.message ?? String(error)}`, { cause: error });
  }
  if (result.response.ok) return result.data as T;
  const status = result.response.status;
  throw hostFailure('bitbucket', `${what} on ${where}`, status, wordsOf(result.error), hint(status));
}
