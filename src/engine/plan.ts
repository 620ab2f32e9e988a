/**
 * The change a revert writes: its files (revert, restore, freeze edits), then its texts. The files
 * are planned first (`plan`); the texts are made once, from the plan as verified and rendered
 * (`withTexts`): the commit message and, for a pull request, its title and body, each built once
 * by revert/message.ts from one value (`messageInput`).
 */
import { RevertImpossible } from '../errors.ts';
import { revertInput, type Located } from '../history/locate.ts';
import type { Change, FileChange, Person } from '../repo/types.ts';
import { commitMessage, pullRequestText } from '../revert/message.ts';
import { nextSteps } from '../decide/next-steps.ts';
import { planRestore } from '../revert/restore.ts';
import { planRevert } from '../revert/threeway.ts';
import { planFreeze } from '../revert/freeze.ts';
import type { TargetOutcome, RevertOptions } from './types.ts';
import { commitLinks } from './effects.ts';

export function messageInput(opts: RevertOptions, located: Located, planned?: Planned, checked?: TargetOutcome['checked']) {
  return {
    target: opts.target.name,
    paths: opts.target.paths,
    strategy: planned?.strategy ?? (opts.target.strategy === 'restore' ? ('restore' as const) : ('revert' as const)),
    verdict: opts.verdict,
    located,
    notes: [...(planned?.notes ?? []), ...new Set(opts.verdict.evidence.flatMap((e) => e.notes ?? []))],
    frozen: planned?.frozen ?? [],
    rejected: planned?.rejected ?? [],
    reason: opts.reason,
    ...(opts.byPerson ? { byPerson: opts.byPerson } : {}),
    now: opts.now,
    ...(checked ? { checked } : {}),
    next: nextSteps(opts.observed, { resources: opts.target.resources }),
  };
}

export interface Planned {
  files: FileChange[];
  strategy: 'revert' | 'restore';
  /** the freeze edits' files */
  freezeFiles: string[];
  frozen: string[];
  rejected: string[];
  /** what a person should know about how the plan was made (a fallback, a skipped freeze edit) */
  notes: string[];
}

/**
 * The files of the change: `revert` undoes exactly the bad commits (3-way); `restore` sets the
 * target paths to their tree at the last-known-good; `revert-or-restore` restores only when the
 * revert conflicts. Then the freeze edits, which may lie outside the target paths.
 */
async function planFiles(opts: RevertOptions, head: string, located: Located): Promise<Planned> {
  const { repo, target } = opts;
  const restore = () => planRestore(repo, { head, lastKnownGood: located.lastKnownGood, paths: target.paths });
  const planned: Planned = { files: [], strategy: 'revert', freezeFiles: [], frozen: [], rejected: [], notes: [] };
  if (target.strategy === 'restore' || located.bad.length === 0) {
    planned.files = await restore();
    planned.strategy = 'restore';
  } else {
    try {
      planned.files = (await planRevert(repo, { head, ...revertInput(located, target.paths) })).files;
    } catch (error) {
      if (!(error instanceof RevertImpossible) || target.strategy !== 'revert-or-restore') throw error;
      planned.files = await restore();
      planned.strategy = 'restore';
      planned.notes.push(`the revert conflicted (${error.message}); restored the last-known-good instead (strategy revert-or-restore)`);
    }
  }
  if (target.freeze === 'auto' && planned.files.length > 0) {
    const badImages = [...new Set(opts.verdict.evidence.filter((e) => e.state === 'failed').flatMap((e) => e.attempted?.images ?? []))];
    const freeze = await planFreeze(repo, { head, paths: target.paths, badImages, badCommits: located.bad, mode: 'auto' });
    const taken = new Set(planned.files.map((f) => f.path));
    for (const f of freeze.files) {
      // the revert's own content wins inside the target paths; the freeze edit of that file is left out and said
      if (taken.has(f.path)) planned.notes.push(`freeze edit of ${f.path} left out: the revert changes that file`);
      else {
        planned.files.push(f);
        planned.freezeFiles.push(f.path);
      }
    }
    planned.frozen.push(...freeze.frozen, ...freeze.warnings.map((w) => `not frozen: ${w}`));
    planned.rejected.push(...freeze.rejected);
  }
  return planned;
}

/** A change whose files are planned, before its texts are made. */
export type DraftChange = Omit<Change, 'message' | 'pullRequest'>;

export async function plan(opts: RevertOptions, head: string, located: Located): Promise<{ draft: DraftChange; planned: Planned }> {
  const planned = await planFiles(opts, head, located);
  const author: Person = { ...opts.config.repo.author, timestamp: Math.floor(opts.now.getTime() / 1000), timezoneOffset: 0 };
  const draft: DraftChange = {
    target: opts.target.name,
    branch: opts.config.repo.branch,
    paths: opts.target.paths,
    parent: head,
    files: planned.files,
    author,
    bad: located.bad.map((c) => c.oid),
    lastKnownGood: located.lastKnownGood,
  };
  return { draft, planned };
}

/**
 * The change with its texts, made once from what the plan became: `checked`, what verify and the
 * render check said (absent where the plan was refused before); a pull request's title and body
 * only for `pull-request` mode.
 */
export function withTexts(draft: DraftChange, opts: RevertOptions, located: Located, planned: Planned, checked: TargetOutcome['checked'], texts: { pullRequest: boolean; diffStat?: string }): Change {
  const input = messageInput(opts, located, planned, checked);
  const change: Change = { ...draft, message: commitMessage(input) };
  if (texts.pullRequest) {
    const pr = pullRequestText({ ...input, diffStat: texts.diffStat ?? '', commitUrl: commitLinks(opts), ...(opts.repo.markdown ? { markdown: opts.repo.markdown } : {}) });
    change.pullRequest = { ...pr, ...opts.config.pullRequest };
  }
  return change;
}
