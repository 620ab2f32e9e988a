/** A target's outcome from its verdict and decision, an error in it, and the exit codes (DESIGN.md) of a finished run. */
import type { Logger } from 'pino';
import type { Decision, Verdict } from '../decide/types.ts';
import { LastgoodError, redact, type ExitCode } from '../errors.ts';
import type { TargetOutcome, Report } from './types.ts';

export function baseOutcome(verdict: Verdict, decision: Decision): TargetOutcome {
  const o: TargetOutcome = { name: verdict.target, verdict: verdict.verdict, summary: verdict.summary, evidence: verdict.evidence, action: decision.action, reason: decision.reason, bad: [] };
  if (verdict.class) o.class = verdict.class;
  const notes = [...new Set(verdict.evidence.flatMap((e) => e.notes ?? []))];
  if (notes.length) o.notes = notes;
  // a time ahead of the clock is bad input for a door that reads it once (exit 2); the controller only holds the target
  if (decision.heldBy === 'clock') o.error = { code: 2, message: decision.reason };
  // evidence that could not be evaluated (a metric provider unreachable, a template that cannot be read): said, with its exit code, unless the target failed anyway
  const problems = verdict.verdict === 'failed' ? [] : verdict.evidence.filter((e) => e.problem);
  if (problems.length) {
    const code = Math.max(...problems.map((e) => e.problem!.code)) as 2 | 3 | 4;
    o.error = { code, message: redact(problems.map((e) => `${e.kind} ${e.namespace ? `${e.namespace}/` : ''}${e.name}: ${e.problem!.message}`).join('; ')) };
  }
  return o;
}

export function recordError(outcome: TargetOutcome, error: unknown, log: Logger): void {
  const code: ExitCode = error instanceof LastgoodError ? error.exitCode : 3;
  const message = error instanceof Error ? error.message : String(error);
  if (!(error instanceof LastgoodError)) log.error({ target: outcome.name, err: error }, 'internal error');
  outcome.action = 'alert';
  outcome.error = { code, message: redact(error instanceof LastgoodError ? message : `internal error: ${message}`) };
  outcome.reason = `revert failed: ${outcome.error.message}`;
}

/**
 * DESIGN.md exit codes for a finished run, the worst over its targets: 4 a metric check ended in
 * error (issue 34: it can never conclude as it is), 3 an outside system failed, 2 bad input, 1 a
 * target is failed or stuck and was not reverted, 0 otherwise.
 */
export function exitCodeFor(report: Report): ExitCode {
  let code: ExitCode = 0;
  for (const t of report.targets) {
    const mine: ExitCode = t.error ? t.error.code : (t.verdict === 'failed' || t.verdict === 'stuck') && t.action === 'alert' ? 1 : 0;
    if (mine > code) code = mine;
  }
  return code;
}

/**
 * The exit code of a revert a person asked for: 1 when it was not made (the blast-radius guard
 * refused it, it was impossible), else the worst target error, else 0.
 */
export function personRevertExitCode(report: Report): ExitCode {
  let code: ExitCode = 0;
  for (const t of report.targets) {
    const mine: ExitCode = t.error ? t.error.code : t.action === 'alert' ? 1 : 0;
    if (mine > code) code = mine;
  }
  return code;
}
