/**
 * The engine: the one pipeline every door (CLI, Action, controller) runs. Each step is a file:
 * check.ts (verdict and decision, pure), run.ts (the whole pipeline per target), revert.ts
 * (locate, plan, verify, deliver), plan.ts (the change and its message), effects.ts (hooks,
 * notifications, superseded requests), record.ts (verified last-known-good records),
 * outcome.ts (outcomes and exit codes), validate.ts (`lastgood validate`); types.ts holds the inputs and outcomes as types only.
 */
export type { TargetOutcome, Report, CheckOptions, RunOptions, TrackedRunOptions, RevertOptions, PersonRevertOptions, RecordOutcome } from './types.ts';
export { exitCodeFor, personRevertExitCode } from './outcome.ts';
export { selectTargets, assessTarget, analyse, analysisSessions, check, checkReport } from './check.ts';
export { commitLinks, remindUnmerged } from './effects.ts';
export { run, gatherGuards, runTracked } from './run.ts';
export { revertTarget, personRevert } from './revert.ts';
export { checkAndRecord, recordHealthy } from './record.ts';
export { validateConfigFile } from './validate.ts';
export { recover, type Recovery, type KnownRevert } from './recovery.ts';
