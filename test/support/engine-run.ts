import path from 'node:path';
import { pino } from 'pino';
import { loadConfig } from '../../src/config/load.ts';
import { openRepo } from '../../src/deliver/registry.ts';
import { analyse, checkReport, recordHealthy, run } from '../../src/engine/index.ts';
import { readSnapshots } from '../../src/observe/snapshot.ts';
import { parseTime } from '../../src/observe/times.ts';
import { reportJson } from '../../src/report/text.ts';

/**
 * The engine as `lastgood run` and `lastgood check --record` call it (src/cli.ts), in this
 * process: for tests whose subject is not the CLI door. They make a history with lastgood's own
 * runs, then test what reads it. Issue 38: the door keeps its own tests that start it as a user
 * does; a setup step through it paid a Node start and a cold JIT per run (0.2–0.6 CPU-s).
 *
 * The same glue as the door: the config file, the snapshots, metric analysis without a cluster,
 * the backend from the registry with the door's token and API URL, and the report as `--json`
 * prints it. `env` is what the door's process would have on top of this one's.
 */
export interface EngineRunOptions {
  config: string;
  snapshots: string[];
  target?: string;
  /** ISO 8601, as --now */
  now: string;
  mode?: 'commit' | 'pull-request';
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
  const repo = await openRepo({
    location: config.repo.url,
    relativeTo: path.dirname(path.resolve(opts.config)),
    apiUrl: config.repo.apiUrl ?? env.GITHUB_API_URL,
    token: env.LASTGOOD_GITHUB_TOKEN ?? env.GITHUB_TOKEN,
    repo: config.repo,
    configFile: opts.config,
    env,
    onWarning: () => {},
  });
  return { config, now, observed, env, analysis, repo };
}

/** `lastgood run --config C --snapshot S [--target T] --now N --json`: the JSON document it prints. */
export async function runEngine(opts: EngineRunOptions): Promise<{ targets: Array<Record<string, unknown>> }> {
  const { config, now, observed, env, analysis, repo } = await prepare(opts);
  const report = await run({ config, observed, now, target: opts.target, repo, mode: opts.mode, dryRun: false, log: pino({ level: 'silent' }), analysis, env });
  return JSON.parse(reportJson(report));
}

/** `lastgood check --record`: each selected target's record outcome (its `reason` as the door appends it). */
export async function recordEngine(opts: EngineRunOptions): Promise<Array<{ name: string; reason: string }>> {
  const { config, now, observed, analysis, repo } = await prepare(opts);
  const { targets } = checkReport({ config, observed, now, target: opts.target, analysis });
  for (const r of await recordHealthy({ config, observed, now, target: opts.target, repo, failures: true, analysis })) {
    const t = targets.find((x) => x.name === r.target)!;
    t.reason = `${t.reason}; ${r.reason}`;
  }
  return targets.map((t) => ({ name: t.name, reason: t.reason }));
}
