/**
 * The engine's inputs and outputs, as types only: the doors, report/ and the controller take them
 * from here, and nothing here imports the engine's steps (so report/notify.ts, which the engine
 * calls, can name an outcome without an import circle).
 */
import type { Logger } from 'pino';
import type { Config, ResolvedTarget } from '../config/schema.ts';
import type { Decision, Evidence, HookPlan, RepoGuards, Verdict } from '../decide/types.ts';
import type { ExitCode } from '../errors.ts';
import type { Observed } from '../observe/types.ts';
import type { DeliveryMode, RepoBackend } from '../repo/types.ts';
import type { Evaluation } from '../decide/tracker.ts';
import type { AnalysisResult } from '../analysis/index.ts';

/** What happened to one target: the DESIGN.md --json shape plus what a person needs to read. */
/** A revert a person asked for (`lastgood revert`, the Action's `bad`): what the texts say instead of a cluster verdict. */
export interface ByPerson {
  reason?: string;
  /** whether lastgood read the cluster for it (--snapshot, or a cluster the Action read); without, no cluster state is claimed */
  clusterRead: boolean;
}

export interface TargetOutcome {
  name: string;
  verdict: Verdict['verdict'];
  /** a person asked for this revert (issue 36: its request and summary said "progressing" from objects nobody read) */
  byPerson?: ByPerson;
  class?: Verdict['class'];
  summary: string;
  evidence: Evidence[];
  action: Decision['action'];
  reason: string;
  bad: string[];
  lastKnownGood?: string;
  verified?: boolean;
  /** what the last-known-good is, in words (verified, the applied revision, the commit before the first bad one) */
  lkg?: string;
  /** how the bad commits were found: the signals and what they said */
  explanation?: string;
  commit?: string;
  branch?: string;
  pullRequest?: string;
  /** false when an earlier run already made this revert */
  created?: boolean;
  /** what the objects say a person should know (Argo CD will sync a revert only after its retries end) */
  notes?: string[];
  /** this target's run ended in an error (the others went on): its exit code and message */
  error?: { code: ExitCode; message: string };
  /** dry run, or a plan the blast-radius guard refused: the change that would be written */
  diff?: string;
  /** how the plan was checked against what the engine builds (src/verify): one line, and the rendered diff where a renderer ran, else why none did */
  checked?: { summary: string; rendered?: { summary: string; text: string; markdown: string }; notRendered?: string };
  diffStat?: string;
  message?: string;
}

export interface Report {
  targets: TargetOutcome[];
}

export interface CheckOptions {
  config: Config;
  observed: Observed[];
  now: Date;
  target?: string;
  /** consecutive failed assessments per target (controller, --wait); one-shot runs see 1 */
  observations?: Map<string, number>;
  /** per target: what the repository says about its past reverts (run gathers it; check has no repository) */
  guards?: Map<string, RepoGuards>;
  /** per target: its metric checks' evidence (`analyse`, or a door's analysis sessions) */
  analysis?: Map<string, Pick<AnalysisResult, 'evidence'>>;
}

export interface RunOptions extends CheckOptions {
  repo: RepoBackend;
  mode?: DeliveryMode;
  dryRun: boolean;
  log: Logger;
  /** host links for PR bodies (default: the backend's, see commitLinks) */
  commitUrl?: (sha: string) => string;
  /** environment for notification URLs (default: process.env) */
  env?: Record<string, string | undefined>;
  /**
   * The door has already told people that reverting this failure failed (a retry of the same
   * failure, controller/controller.ts): no second `revert-failed` notification for it.
   */
  failureAnnounced?: boolean;
}

export interface TrackedRunOptions extends Omit<RunOptions, 'target' | 'observations' | 'guards'> {
  target: ResolvedTarget;
  /** the tracker's evaluation of this observation (src/decide/tracker.ts) */
  evaluation: Pick<Evaluation, 'verdict' | 'byTracker' | 'decision'>;
  /** consecutive failed observations the tracker counted */
  observations: number;
  guards?: RepoGuards;
}

export interface RevertOptions extends Omit<RunOptions, 'observations' | 'target'> {
  target: ResolvedTarget;
  verdict: Verdict;
  /** a recovery hook to run right before delivery (policy `{ hook, then: revert }`) */
  hook?: HookPlan;
  /** lastgood revert --bad/--to: a person names the commits */
  bad?: string;
  to?: string;
  reason?: string;
  /** set by personRevert: a person asked for this revert */
  byPerson?: ByPerson;
}

export interface PersonRevertOptions extends Omit<RevertOptions, 'target' | 'verdict' | 'hook'> {
  /** the target's name */
  target: string;
}

export interface RecordOutcome {
  target: string;
  commit?: string;
  recorded: boolean;
  reason: string;
  /** what was recorded: the target seen healthy (a verified last-known-good) or seen failed there */
  state?: 'healthy' | 'failed';
  /** healthy at a revision, but not for the whole soak yet: it may be recorded later */
  soaking?: boolean;
}
