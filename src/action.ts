/**
 * The GitHub Action door (action.yml → dist/action.js, bundled by scripts/build-action.ts).
 * Like the CLI door: read the inputs, validate them up front, call the engine, report. No stage
 * logic here. Two ways in, one engine:
 *
 * - event-driven: the workflow runs on a `repository_dispatch` (Flux githubdispatch, Argo CD
 *   notifications, relayed Flagger or Alertmanager webhooks) or `event` names a payload file;
 *   the event's objects are observed (observe/event.ts) and matched to the configured targets;
 * - in-pipeline: after a deploy step, the targets are read from the cluster (`kubeconfig`, or
 *   in-cluster) or from `snapshot` files, and with `wait` polled until each target has a verdict.
 *
 * Outputs and the job summary describe what happened; exit codes follow DESIGN.md (any non-zero
 * fails the step: 1 a failed target was not reverted, 2 bad input or config, 3 an outside system failed).
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import * as core from '@actions/core';
import type { Logger } from 'pino';
import { formatDuration, parseDuration } from './config/duration.ts';
import { loadConfig } from './config/load.ts';
import { resolveTarget, type Config, type ResolvedTarget } from './config/schema.ts';
import { evaluate, NEW_TRACK, observe as observeTarget, type Track } from './decide/tracker.ts';
import type { Verdict } from './decide/types.ts';
import { openConfiguredRepo } from './deliver/registry.ts';
import { analysisSessions, check, commitLinks, exitCodeFor, personRevert, personRevertExitCode, recordHealthy, run, runTracked, selectTargets, type Report, type TargetOutcome } from './engine/index.ts';
import type { AnalysisResult, Lookup } from './analysis/index.ts';
import { InputError, LastgoodError, registerSecret } from './errors.ts';
import { ALERT_API_VERSION } from './observe/event-alertmanager.ts';
import { eventScope, matchEvent, readEvent, withEventObjects, type EventMatch, type ParsedEvent } from './observe/event.ts';
import type { ResourceRef } from './observe/kube.ts';
import { readSnapshots } from './observe/snapshot.ts';
import type { Observed } from './observe/types.ts';
import { makeLogger as logger } from './report/log.ts';
import { redact } from './scrub.ts';
import { reportJson } from './report/text.ts';
import { primaryOutcome, renderSummary } from './report/summary.ts';
import type { DeliveryMode, RepoBackend } from './repo/types.ts';
import { boundYoungGeneration } from './engine/heap.ts';

interface Inputs {
  configFile: string;
  target?: string;
  mode?: DeliveryMode;
  strategy?: 'revert' | 'restore' | 'revert-or-restore';
  dryRun: boolean;
  /** after the run, record each target's observed health (verified last-known-good: GitHub deployments, git notes) */
  record: boolean;
  token?: string;
  kubeconfig?: string;
  snapshots: string[];
  waitMs?: number;
  intervalMs: number;
  eventFile?: string;
  /** a person's revert (workflow_dispatch): the bad commit, what to go back to, why */
  bad?: string;
  to?: string;
  reason?: string;
}

const DEFAULT_INTERVAL_MS = 5000;

/** Every input is read and checked before anything else happens. */
async function readInputs(): Promise<Inputs> {
  const workspace = process.env.GITHUB_WORKSPACE || process.cwd();
  const inWorkspace = (p: string) => path.resolve(workspace, p);
  const optional = (name: string) => core.getInput(name) || undefined;

  const mode = optional('mode');
  if (mode !== undefined && mode !== 'commit' && mode !== 'pull-request') throw new InputError(`input mode: "${mode}" is not commit or pull-request`);
  const strategy = optional('strategy');
  if (strategy !== undefined && strategy !== 'revert' && strategy !== 'restore' && strategy !== 'revert-or-restore') {
    throw new InputError(`input strategy: "${strategy}" is not revert, restore or revert-or-restore`);
  }
  let record = false;
  try {
    record = optional('record') === undefined ? false : core.getBooleanInput('record');
  } catch {
    throw new InputError(`input record: "${core.getInput('record')}" is not true or false`);
  }
  let dryRun = false;
  try {
    dryRun = optional('dry-run') === undefined ? false : core.getBooleanInput('dry-run');
  } catch {
    throw new InputError(`input dry-run: "${core.getInput('dry-run')}" is not true or false`);
  }
  const waitText = optional('wait');
  const waitMs = waitText === undefined ? undefined : parseDuration(waitText);
  if (waitText !== undefined && waitMs === undefined) throw new InputError(`input wait: "${waitText}" is not a duration like 30s, 5m or 1h`);
  const intervalText = optional('interval');
  const intervalMs = intervalText === undefined ? DEFAULT_INTERVAL_MS : parseDuration(intervalText);
  if (intervalMs === undefined || intervalMs <= 0) throw new InputError(`input interval: "${intervalText}" is not a duration like 5s`);

  const token = optional('github-token');
  if (token) {
    core.setSecret(token);
    registerSecret(token);
  }
  const bad = optional('bad');
  const to = optional('to');
  const reason = optional('reason');
  const sha = /^[0-9a-f]{4,40}$/i;
  if (bad !== undefined && !sha.test(bad)) throw new InputError(`input bad: "${bad}" is not a commit SHA`);
  if (to !== undefined && !sha.test(to)) throw new InputError(`input to: "${to}" is not a commit SHA`);
  if (bad === undefined && (to !== undefined || reason !== undefined)) throw new InputError(`input ${to !== undefined ? 'to' : 'reason'} is for a revert by hand: give the bad commit (input bad) too`);
  if (bad !== undefined && !optional('target')) throw new InputError('input bad: a revert by hand names its target (input target)');
  const kubeconfig = optional('kubeconfig');
  const eventInput = optional('event');
  // The workflow's own payload is a lastgood event only when the workflow ran on a repository_dispatch.
  const eventFile = eventInput ? inWorkspace(eventInput) : process.env.GITHUB_EVENT_NAME === 'repository_dispatch' ? process.env.GITHUB_EVENT_PATH : undefined;
  return {
    configFile: inWorkspace(core.getInput('config') || 'lastgood.yaml'),
    target: optional('target'),
    mode,
    strategy,
    dryRun,
    record,
    token,
    kubeconfig: kubeconfig && (await kubeconfigFile(kubeconfig, inWorkspace)),
    snapshots: core.getMultilineInput('snapshot').flatMap((l) => l.split(',')).map((s) => s.trim()).filter(Boolean).map(inWorkspace),
    ...(waitMs !== undefined ? { waitMs } : {}),
    intervalMs,
    ...(eventFile ? { eventFile } : {}),
    ...(bad ? { bad } : {}),
    ...(to ? { to } : {}),
    ...(reason ? { reason } : {}),
  };
}

const KUBECONFIG_SECRET = /\b(token|password|client-key-data|client-certificate-data|id-token|refresh-token|access-token)"?\s*:\s*["']?([^\s"',}]{6,})/g;

/** `kubeconfig` is a path, or the kubeconfig itself (then masked and written to a private temp file). */
async function kubeconfigFile(value: string, inWorkspace: (p: string) => string): Promise<string> {
  if (!value.includes('\n')) return inWorkspace(value);
  // Mask the credentials in it (not every line: masking "kind: Config" would garble the whole log).
  for (const m of value.matchAll(KUBECONFIG_SECRET)) {
    core.setSecret(m[2]!);
    registerSecret(m[2]!);
  }
  const dir = await mkdtemp(path.join(process.env.RUNNER_TEMP || os.tmpdir(), 'lastgood-'));
  const file = path.join(dir, 'kubeconfig');
  await writeFile(file, value, { mode: 0o600 });
  return file;
}

/** Where the targets' objects come from, besides the event: snapshot files, the cluster, or nowhere; `lookup` reads one more object by name (the cluster only). */
type ObjectSource = { kind: 'snapshot' | 'cluster' | 'none'; read(resources: ResourceRef[]): Promise<Observed[]>; lookup?: Lookup };

function objectSource(inputs: Inputs): ObjectSource {
  if (inputs.snapshots.length > 0) return { kind: 'snapshot', read: () => readSnapshots(inputs.snapshots) };
  const cluster = inputs.kubeconfig || process.env.KUBECONFIG || process.env.KUBERNETES_SERVICE_HOST;
  let reader: Lookup | undefined;
  if (cluster) {
    return {
      kind: 'cluster',
      read: async (resources) => {
        // loaded on demand: the Kubernetes client is heavy and event-only runs never need it
        const { readFromCluster } = await import('./observe/kube.ts');
        return readFromCluster(resources, inputs.kubeconfig);
      },
      lookup: async (ref) => {
        reader ??= (await import('./observe/kube.ts')).clusterReader(inputs.kubeconfig);
        return reader(ref);
      },
    };
  }
  return { kind: 'none', read: async () => [] };
}

/** The `strategy` input overrides the config's, for every target. */
function withStrategy(config: Config, strategy: Inputs['strategy']): Config {
  if (!strategy) return config;
  return { ...config, defaults: { ...config.defaults, strategy }, targets: config.targets.map((t) => ({ ...t, strategy })) };
}

function makeLogger(): Logger {
  // people read core.info lines and the summary; pino's JSON lines are for step debug logging (ACTIONS_STEP_DEBUG)
  return logger(process.env.LASTGOOD_LOG_LEVEL ?? (core.isDebug() ? 'debug' : 'warn'));
}

interface RunContext {
  config: Config;
  targets: ResolvedTarget[];
  repo: RepoBackend;
  inputs: Inputs;
  source: ObjectSource;
  eventObserved: Observed[];
  log: Logger;
  commitUrl?: (sha: string) => string;
  /** metric checks (docs/metrics.md): each measurement taken once, when due, over the whole run */
  analyse(observed: Observed[], now: Date): Promise<Map<string, AnalysisResult>>;
}

async function observe(ctx: RunContext): Promise<Observed[]> {
  const resources = ctx.targets.flatMap((t) => t.resources).filter((r) => r.apiVersion !== ALERT_API_VERSION);
  return withEventObjects(await ctx.source.read(resources), ctx.eventObserved);
}

/** One observation, then the engine for each target. */
async function runOnce(ctx: RunContext, observations?: Map<string, number>, observed?: Observed[]): Promise<Report> {
  const seen = observed ?? (await observe(ctx));
  const now = new Date();
  const analysis = await ctx.analyse(seen, now);
  const targets: TargetOutcome[] = [];
  for (const t of ctx.targets) {
    const report = await run({
      config: ctx.config, observed: seen, now, target: t.name, repo: ctx.repo, mode: ctx.inputs.mode, dryRun: ctx.inputs.dryRun, log: ctx.log, analysis,
      ...(observations ? { observations } : {}), ...(ctx.commitUrl ? { commitUrl: ctx.commitUrl } : {}),
    });
    targets.push(...report.targets);
  }
  return { targets };
}

/**
 * In-pipeline `wait`: observe every `interval` until each target is settled (healthy, stuck, or
 * failed and confirmed), counting the observations with the engine's tracker
 * (src/decide/tracker.ts). A target still progressing when the wait ends is stuck, and its stuck
 * policy decides.
 */
async function runWaiting(ctx: RunContext, waitMs: number): Promise<Report> {
  const started = Date.now();
  const tracks = new Map<string, Track>();
  let observed: Observed[] = [];
  let analysis = new Map<string, AnalysisResult>();
  let last: Array<{ target: ResolvedTarget; verdict: Verdict }> = [];
  let lastLine = '';
  let lastPrinted = 0;
  let timedOut = false;
  for (;;) {
    observed = await observe(ctx);
    const now = Date.now();
    analysis = await ctx.analyse(observed, new Date(now));
    last = check({ config: ctx.config, observed, now: new Date(now), analysis }).filter((c) => ctx.targets.some((t) => t.name === c.target.name));
    const pending: Array<{ target: ResolvedTarget; verdict: Verdict }> = [];
    for (const { target, verdict } of last) {
      const track = observeTarget(tracks.get(target.name) ?? NEW_TRACK, verdict, now);
      tracks.set(target.name, track);
      if (!evaluate(track, { verdict, target, now, intervalMs: ctx.inputs.intervalMs }).settled) pending.push({ target, verdict });
    }
    ctx.log.debug({ pending: pending.map((p) => p.target.name), elapsedMs: now - started }, 'observed targets');
    const line = pending.map((p) => `${p.target.name}: ${p.verdict.summary}`).join('; ');
    if (pending.length > 0 && (line !== lastLine || now - lastPrinted > 60_000)) {
      core.info(redact(`waiting (${formatDuration(now - started)} of ${formatDuration(waitMs)}): ${line}`));
      lastLine = line;
      lastPrinted = now;
    }
    if (pending.length === 0) break;
    if (Date.now() - started + ctx.inputs.intervalMs > waitMs) {
      timedOut = true;
      break;
    }
    await sleep(ctx.inputs.intervalMs);
  }
  const now = Date.now();
  const waited = formatDuration(waitMs);
  const targets: TargetOutcome[] = [];
  for (const { target, verdict } of last) {
    const track = tracks.get(target.name)!;
    const evaluation = evaluate(track, { verdict, target, now, intervalMs: ctx.inputs.intervalMs, ...(timedOut ? { deadline: waited } : {}) });
    targets.push(await runTracked({
      config: ctx.config, observed, now: new Date(now), target, evaluation, observations: track.failedInARow,
      repo: ctx.repo, mode: ctx.inputs.mode, dryRun: ctx.inputs.dryRun, log: ctx.log, analysis,
      ...(ctx.commitUrl ? { commitUrl: ctx.commitUrl } : {}),
    }));
  }
  return { targets };
}

/**
 * `record: true`: what each target is observed as after the run, recorded where the repository
 * keeps verified records (on GitHub: a deployment per target environment, `success` or
 * `failure`). A store that cannot record says why, and the run's outcome does not change.
 */
async function recordObserved(ctx: RunContext, report: Report): Promise<void> {
  const observed = await observe(ctx);
  const now = new Date();
  const analysis = await ctx.analyse(observed, now);
  for (const target of ctx.targets) {
    for (const r of await recordHealthy({ config: ctx.config, observed, now, target: target.name, repo: ctx.repo, failures: true, analysis })) {
      const outcome = report.targets.find((t) => t.name === r.target);
      if (outcome) outcome.reason = `${outcome.reason}; ${r.reason}`;
      core.info(redact(`${r.target}: ${r.reason}`));
    }
  }
}

function setOutputs(report: Report): TargetOutcome | undefined {
  const main = primaryOutcome(report);
  const pr = main?.pullRequest ? /\/pull\/(\d+)/.exec(main.pullRequest)?.[1] : undefined;
  // outputs are files other steps read: scrubbed (the runner's masking covers only its log)
  const output = (name: string, value: string) => core.setOutput(name, redact(value));
  output('verdict', main?.verdict ?? 'none');
  output('action', main?.action ?? 'none');
  output('target', main?.name ?? '');
  output('bad-revision', main?.bad[0] ?? '');
  output('last-known-good', main?.lastKnownGood ?? '');
  output('commit', main?.commit ?? '');
  output('pull-request-url', main?.pullRequest ?? '');
  output('pull-request-number', pr ?? '');
  output('report', reportJson(report).trim());
  return main;
}

async function writeSummary(markdown: string): Promise<void> {
  if (!process.env.GITHUB_STEP_SUMMARY) return;
  await core.summary.addRaw(redact(markdown)).write();
}

/** Annotations: a notice per revert, a warning per wait, an error per failed target left as it is. */
function annotate(report: Report, dryRun: boolean): void {
  for (const t of report.targets) {
    const title = `lastgood: ${t.name}`;
    if (t.action === 'revert') core.notice(redact(`${t.name} ${t.byPerson && !t.byPerson.clusterRead ? 'revert by hand' : t.verdict}: ${dryRun ? 'would revert' : t.pullRequest ? `revert pull request ${t.pullRequest}` : t.commit ? `reverted by ${t.commit}` : 'nothing to write'} — ${t.reason}`), { title });
    else if (t.action === 'wait') core.warning(redact(`${t.name}: ${t.reason}`), { title });
    else if (t.action === 'alert' && (t.verdict === 'failed' || t.verdict === 'stuck')) core.error(redact(`${t.name} ${t.verdict} and was not reverted: ${t.reason}`), { title });
  }
}

function repoFor(inputs: Inputs, config: Config): Promise<RepoBackend> {
  return openConfiguredRepo(config, inputs.configFile, {
    env: process.env,
    credentials: { token: inputs.token },
    onWarning: (message: string) => core.warning(redact(message), { title: 'lastgood' }),
  });
}

/**
 * A person's revert (`bad`, with `target`, `to`, `reason`; typically a workflow_dispatch): the
 * engine's revert, as `lastgood revert --bad` — the automatic guards (confirmations, cooldown,
 * maxAge) do not hold it back, the blast-radius guard does. Snapshot or cluster objects, when
 * given, are its evidence.
 */
async function revertByHand(inputs: Inputs, config: Config, log: Logger): Promise<void> {
  const [target] = selectTargets(config, inputs.target);
  const source = objectSource(inputs);
  const observed = source.kind === 'none' ? [] : await source.read(target!.resources.filter((r) => r.apiVersion !== ALERT_API_VERSION));
  const repo = await repoFor(inputs, config);
  const commitUrl = commitLinks({ repo });
  const report = await personRevert({
    config, observed, now: new Date(), repo, target: target!.name, bad: inputs.bad, to: inputs.to, reason: inputs.reason,
    mode: inputs.mode, dryRun: inputs.dryRun, log, ...(commitUrl ? { commitUrl } : {}),
  });
  setOutputs(report);
  annotate(report, inputs.dryRun);
  await writeSummary(renderSummary(report, { dryRun: inputs.dryRun, ...(commitUrl ? { commitUrl } : {}) }));
  process.exitCode = personRevertExitCode(report);
  const [outcome] = report.targets;
  if (process.exitCode !== 0) core.setFailed(redact(`${outcome!.name} was not reverted: ${outcome!.reason}`));
}

async function main(): Promise<void> {
  const inputs = await readInputs();
  const log = makeLogger();
  const config = withStrategy(await loadConfig(inputs.configFile), inputs.strategy);
  selectTargets(config, inputs.target); // an unknown target name fails here, before anything is read

  if (inputs.bad) {
    await revertByHand(inputs, config, log);
    return;
  }

  let event: ParsedEvent | undefined;
  let match: EventMatch | undefined;
  if (inputs.eventFile) {
    event = await readEvent(inputs.eventFile);
    match = matchEvent(event, config);
    core.info(redact(`event: ${event.summary}`));
  }
  const source = objectSource(inputs);
  // Event only (no cluster, no snapshot): a target is judged on the objects the event reports; its other resources cannot be seen.
  const scope = match ? eventScope(match, { ...(inputs.target ? { target: inputs.target } : {}), eventOnly: source.kind === 'none' }) : undefined;
  const runConfig = scope?.config ?? config;
  const targetNames = scope ? scope.targets : selectTargets(config, inputs.target).map((t) => t.name);
  if (event && scope?.unmatched !== undefined) {
    const unmatched = scope.unmatched;
    core.info(redact(`nothing to do: ${unmatched}`));
    setOutputs({ targets: [] });
    await writeSummary(renderSummary({ targets: [] }, { event: event.summary, unmatched, dryRun: inputs.dryRun }));
    return;
  }
  if (!event && source.kind === 'none') {
    throw new InputError('nothing to observe: run on a repository_dispatch event or give the event input, or give cluster access (kubeconfig, in-cluster) or snapshot files');
  }
  const repo = await repoFor(inputs, config);
  const commitUrl = commitLinks({ repo });
  const targets = runConfig.targets.filter((t) => targetNames.includes(t.name)).map((t) => resolveTarget(runConfig, t));
  // metric checks need the workload: with only an event to go by there is nothing to measure
  const sessions = source.kind === 'none' ? undefined : analysisSessions(runConfig, { ...(source.lookup ? { read: source.lookup } : {}), provider: { relativeTo: path.dirname(inputs.configFile), env: process.env } });
  const ctx: RunContext = {
    config: runConfig,
    targets,
    repo, inputs, source, eventObserved: match?.observed ?? [], log,
    ...(commitUrl ? { commitUrl } : {}),
    async analyse(observed, now) {
      const out = new Map<string, AnalysisResult>();
      for (const t of targets) {
        const session = sessions?.(t);
        if (session) out.set(t.name, await session.update(observed, now.getTime()));
      }
      return out;
    },
  };
  const waitMs = source.kind !== 'none' ? inputs.waitMs : undefined;
  if (inputs.waitMs !== undefined && waitMs === undefined) core.warning('wait ignored: there is no cluster access or snapshot to poll, only the event', { title: 'lastgood' });
  const report = waitMs !== undefined ? await runWaiting(ctx, waitMs) : await runOnce(ctx);
  if (inputs.record && !inputs.dryRun) await recordObserved(ctx, report);

  setOutputs(report);
  annotate(report, inputs.dryRun);
  await writeSummary(renderSummary(report, {
    dryRun: inputs.dryRun,
    ...(event ? { event: event.summary } : {}),
    ...(commitUrl ? { commitUrl } : {}),
    ...(waitMs !== undefined ? { waited: formatDuration(waitMs) } : {}),
  }));
  const code = exitCodeFor(report);
  if (code !== 0) {
    const left = report.targets.filter((t) => !t.error && (t.verdict === 'failed' || t.verdict === 'stuck') && t.action === 'alert').map((t) => t.name);
    const errors = report.targets.filter((t) => t.error).map((t) => `${t.name}: ${t.error!.message}`);
    const said = [...errors, ...(left.length ? [`${left.length} target${left.length === 1 ? '' : 's'} failed and ${left.length === 1 ? 'was' : 'were'} not reverted: ${left.join(', ')}`] : [])];
    core.setFailed(redact(said.join('\n')));
    // DESIGN.md's codes, as the CLI's: 2 bad input (a time ahead of the clock), 3 an outside system, 1 a failure left as it is
    process.exitCode = code;
  }
}

// before any work, as the CLI does: a first model build would grow V8's young generation to 128 MB (engine/heap.ts)
boundYoungGeneration();
try {
  await main();
} catch (error) {
  if (error instanceof LastgoodError) {
    const file = (error as { file?: string }).file;
    const line = (error as { line?: number }).line;
    core.error(error.message, { title: 'lastgood', ...(file ? { file: path.relative(process.env.GITHUB_WORKSPACE || process.cwd(), file) } : {}), ...(line ? { startLine: line } : {}) });
    process.exitCode = error.exitCode;
  } else {
    core.setFailed(`internal error: ${redact(error instanceof Error ? (error.stack ?? error.message) : String(error))}`);
    process.exitCode = 3;
  }
}
