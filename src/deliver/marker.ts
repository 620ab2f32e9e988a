import type { Change } from '../repo/types.ts';
import { reviewBranchPrefix } from './branch.ts';

/**
 * The hidden marker lastgood appends to a review request's description, `<!-- lastgood:target=<t>
 * bad=<sha> -->`, to find the request again whatever its branch (PullRequestSpec). It counts only
 * where lastgood wrote it:
 *
 * - on a request from one of lastgood's own branches of the target (`lastgood/<target>/…`, in the
 *   repository itself, not a fork): who can make those can push to the repository anyway, while
 *   anyone who can open a request can write a description;
 * - on a line of its own, as lastgood writes it, not inside other text: outside text in a
 *   description is quoted as code and never holds `<!--` (revert/markup.ts), and a marker quoted
 *   in a line of text does not count either.
 */
export function requestMarker(change: Pick<Change, 'target' | 'bad'>): string {
  return `<!-- lastgood:target=${change.target} bad=${change.bad[0] ?? 'unknown'} -->`;
}

/** `body` carries `marker` as lastgood writes it: a line of its own. */
export function carriesMarker(body: string, marker: string): boolean {
  return body.split(/\r\n|\r|\n/).some((line) => line.trim() === marker);
}

/** A request lastgood may take as its own by the marker: from the target's lastgood branch, not a fork, with the marker on its own line. */
export function markedAsOurs(request: { branch: string; fromFork: boolean; body: string }, change: Pick<Change, 'target' | 'bad'>): boolean {
  return !request.fromFork && request.branch.startsWith(reviewBranchPrefix(change.target)) && carriesMarker(request.body, requestMarker(change));
}

/** The description without lastgood's markers: what is compared to tell whether the evidence changed. */
export function withoutMarkers(body: string): string {
  return body.replace(/<!-- lastgood:[^>]*-->/g, '').trim();
}
