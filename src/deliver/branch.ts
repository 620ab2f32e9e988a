import type { Change } from '../repo/types.ts';

/** DESIGN.md: the pull-request branch of a revert, `lastgood/<target>/<first 12 of the bad SHA>`. */
export function reviewBranch(change: Pick<Change, 'target' | 'bad'>): string {
  return `lastgood/${change.target}/${(change.bad[0] ?? 'unknown').slice(0, 12)}`;
}
