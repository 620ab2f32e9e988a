import type { Change } from '../repo/types.ts';

/** DESIGN.md: the pull-request branch of a revert, `lastgood/<target>/<first 12 of the bad SHA>`. */
export function reviewBranch(change: Pick<Change, 'target' | 'bad'>): string {
  return `${reviewBranchPrefix(change.target)}${(change.bad[0] ?? 'unknown').slice(0, 12)}`;
}

/** The branches lastgood makes for a target's review requests (DESIGN.md "PR branch"): only requests from these can be its own. */
export function reviewBranchPrefix(target: string): string {
  return `lastgood/${target}/`;
}
