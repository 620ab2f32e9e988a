import path from 'node:path';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { loadConfig } from '../../src/config/load.ts';
import { openConfiguredRepo } from '../../src/deliver/registry.ts';
import { analyse, checkAndRecord, exitCodeFor, run, validateConfigFile, type Report } from '../../src/engine/index.ts';
import { LastgoodError } from '../../src/errors.ts';
import { readSnapshots } from '../../src/observe/snapshot.ts';
import { parseTime } from '../../src/observe/times.ts';
import { formatReport, reportJson } from '../../src/report/text.ts';
import type { CliResult } from './cli.ts';

/**
 * The engine as `lastgood run` and `lastgood check [--record]` call it (src/cli.ts), in this
 * process: for tests whose subject is what the engine decides (policies, analysis, backends), or a
 * history that lastgood's own runs make before the test reads it. Issue 38: each door keeps its
 * own tests that start it as a user does; an engine case through the CLI paid a Node start and a
 * cold JIT per run (0.5–0.7 CPU-s, measured on audit-log).
 *
 * The same glue as the door: the config file, the snapshots, metric analysis without a cluster,
 * the backend from the registry with the door's token and API URL; the report printed as the door
 * prints it (`--json`, or the text without a terminal), its exit code, and an error the door
 * would print as `lastgood: …` with its exit code. `env` is what the door's process would have on
 * top of this one's. What is the door's alone (argument parsing, the text for a terminal,
 * the refusal of an older Node) is tested through the CLI.
 */
export interface EngineRunOptions {
  config: string;
  snapshots: string[];
  target?: string;
  /** ISO 8601, as --now */
  now: string;
  mode?: 'commit' | 'pull-request';
  dryRun?: boolean;
  env?: Record<string, string>;
}

async function prepare(opts: EngineRunOptions) {
  const config = await loadConfig(opts.config);
  const ms = parseTime(opts.now);
  if (ms === undefined) throw new Error(`engine-run: --now ${opts.now} is not a time`);
  const now = new Date(ms);
  const observed = await readSnapshots(opts.snapshots);
  const env: Record<string, string | undefined> = { ...process.env, ...opts.env };
  const analysis = await analyse({ config, observed, now, target: opts.target, provider: { relativeTo: path.dirname(path.resolve(opts.config)), env } });
  const repo = async () => openConfiguredRepo(config, opts.config, { env, credentials: 'environment', onWarning: () => {} });
  return { config, now, observed, env, analysis, repo };
}

/** `lastgood run`: the engine's report. */
export async function runReport(opts: EngineRunOptions): Promise<Report> {
  const { config, now, observed, env, analysis, repo } = await prepare(opts);
  return run({ config, observed, now, target: opts.target, repo: await repo(), mode: opts.mode, dryRun: Boolean(opts.dryRun), log: pino({ level: 'silent' }), analysis, env });
}

/** `lastgood check [--record]`: the engine's report, as the door asks for it (engine/record.ts checkAndRecord). */
export async function checkReportOf(opts: EngineRunOptions & { record?: boolean }): Promise<Report> {
  const { config, now, observed, analysis, repo } = await prepare(opts);
  return checkAndRecord({ config, observed, now, target: opts.target, analysis, ...(opts.record ? { repo } : {}) });
}

/**
 * `lastgood run|check` with the door's arguments (--config, --snapshot…, --target, --now,
 * --mode, --dry-run, --record, --json), or `lastgood validate --config`, answered in-process:
 * what the CLI would print on stdout, its stderr lines for target errors and thrown errors, and
 * its exit code. Any other argument is refused: that is the CLI's to test.
 */
export async function lastgoodEngine(args: string[], opts: { env?: Record<string, string> } = {}): Promise<CliResult> {
  const [command, ...rest] = args;
  if (command === 'validate') return validate(rest);
  if (command !== 'run' && command !== 'check') throw new Error(`lastgoodEngine: ${command} is the CLI's to test`);
  const { values } = parseArgs({
    args: rest, strict: true, allowPositionals: false,
    options: { config: { type: 'string' }, snapshot: { type: 'string', multiple: true }, target: { type: 'string' }, now: { type: 'string' }, mode: { type: 'string' }, 'dry-run': { type: 'boolean' }, record: { type: 'boolean' }, json: { type: 'boolean' } },
  });
  if (!values.config || !values.snapshot?.length || !values.now) throw new Error('lastgoodEngine: --config, --snapshot and --now are required');
  if (command === 'run' && values.record) throw new Error('lastgoodEngine: run takes no --record');
  const engineOpts: EngineRunOptions = {
    config: values.config, snapshots: values.snapshot, now: values.now,
    ...(values.target ? { target: values.target } : {}),
    ...(values.mode ? { mode: values.mode as 'commit' | 'pull-request' } : {}),
    ...(values['dry-run'] ? { dryRun: true } : {}),
    ...(opts.env ? { env: opts.env } : {}),
  };
  try {
    const report = command === 'run' ? await runReport(engineOpts) : await checkReportOf({ ...engineOpts, record: Boolean(values.record) });
    const stdout = values.json ? reportJson(report) : formatReport(report, { showDiff: Boolean(values['dry-run']) });
    const stderr = report.targets.filter((t) => t.error).map((t) => `lastgood: ${t.name}: ${t.error!.message}\n`).join('');
    return { code: exitCodeFor(report), stdout, stderr };
  } catch (error) {
    return asDoorError(error);
  }
}

/** `lastgood validate --config FILE`: the config loaded as the door loads it, and what the door says of it. */
async function validate(args: string[]): Promise<CliResult> {
  const { values } = parseArgs({ args, strict: true, allowPositionals: false, options: { config: { type: 'string' } } });
  if (!values.config) throw new Error('lastgoodEngine: validate needs --config');
  try {
    return { code: 0, stdout: await validateConfigFile(values.config, process.env), stderr: '' };
  } catch (error) {
    return asDoorError(error);
  }
}

/** An error as the door prints it (`lastgood: …`, its exit code); anything else is a defect and is thrown. */
function asDoorError(error: unknown): CliResult {
  if (error instanceof LastgoodError) return { code: error.exitCode, stdout: '', stderr: `lastgood: ${error.message}\n` };
  throw error;
}
