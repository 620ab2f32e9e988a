import path from 'node:path';
import { Command, CommanderError, Option } from 'commander';
import type { Logger } from 'pino';
import type { Config } from './config/schema.ts';
import type { Report } from './engine.ts';
import { InputError, LastgoodError, redact, type ExitCode } from './errors.ts';
import { scrubText } from './scrub.ts';
import type { Observed } from './observe/types.ts';

/**
 * The CLI door: parse arguments, call the engine, print, exit with DESIGN.md's codes. No stage
 * logic here. Modules load when a command needs them: `lastgood health` over a folder of objects
 * should not pay for git, YAML editing and zod.
 */
const { makeLogger } = await import('./report/log.ts');
let logger: Logger | undefined;
const log = (): Logger => (logger ??= makeLogger(process.env.LASTGOOD_LOG_LEVEL ?? 'warn'));
const { readSnapshots } = await import('./observe/snapshot.ts');
const loadConfig = async (file: string) => (await import('./config/load.ts')).loadConfig(file);
const engine = () => import('./engine.ts');
const openRepo: typeof import('./deliver/registry.ts').openRepo = async (opts) => (await import('./deliver/registry.ts')).openRepo(opts);

/** --now is strict ISO 8601 with a zone: a lenient parse read "1" as the year 2001. */
async function parseNow(value: string | undefined): Promise<Date> {
  if (value === undefined) return new Date();
  const { parseTime, TIME_FORMAT_HINT } = await import('./observe/times.ts');
  const t = parseTime(value);
  if (t === undefined) throw new InputError(`--now ${JSON.stringify(value)}: not a valid time (${TIME_FORMAT_HINT})`);
  return new Date(t);
}

/** Objects from --snapshot files, else from the cluster (only the targets' configured resources). */
async function observe(snapshots: string[] | undefined, config: Config, target: string | undefined, now: Date): Promise<Observed[]> {
  if (snapshots && snapshots.length > 0) return readSnapshots(snapshots);
  // loaded on demand: the Kubernetes client is heavy, and most runs read snapshots
  const { readFromCluster } = await import('./observe/kube.ts');
  const { selectTargets } = await engine();
  return readFromCluster(selectTargets(config, target).flatMap((t) => t.resources));
}

async function repoFor(config: Config, configFile: string, repoFlag: string | undefined) {
  return openRepo({
    location: repoFlag ?? config.repo.url,
    relativeTo: repoFlag ? process.cwd() : path.dirname(path.resolve(configFile)),
    apiUrl: config.repo.apiUrl ?? process.env.GITHUB_API_URL,
    token: process.env.LASTGOOD_GITHUB_TOKEN ?? process.env.GITHUB_TOKEN,
    repo: config.repo,
    // what a backend warns of outside a delivery (credentials over plain http, a reviewer not requested)
    onWarning: (message: string) => process.stderr.write(`lastgood: warning: ${redact(message)}\n`),
    ...(repoFlag ? { fromFlag: true } : { configFile }),
  });
}

let exitCode: ExitCode = 0;

async function print(report: Report, json: boolean, showDiff = false): Promise<void> {
  const { formatReport, reportJson } = await import('./report/text.ts');
  process.stdout.write(json ? reportJson(report) : formatReport(report, { showDiff }));
  // a target's error is in the report; stderr says it too, as for errors that stop the whole run
  for (const t of report.targets) if (t.error) process.stderr.write(`lastgood: ${t.name}: ${redact(t.error.message)}\n`);
  exitCode = (await engine()).exitCodeFor(report);
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

const program = new Command()
  .name('lastgood')
  .description('Turn a failed promotion in a Kubernetes cluster into a revert in the GitOps config repository.')
  .version('0.1.0')
  .exitOverride()
  .showHelpAfterError();

program
  .command('health')
  .description('print the health of every Kubernetes object in the files (or stdin "-"), one JSON line each')
  .argument('[files...]', 'YAML or JSON files or folders, "-" for stdin', ['-'])
  .option('--now <time>', 'the clock, ISO 8601 (default: now)')
  .action(async (files: string[], o: { now?: string }) => {
    const now = await parseNow(o.now);
    const { assess } = await import('./health/index.ts');
    for (const { object } of await readSnapshots(files.length ? files : ['-'])) {
      const h = assess(object, now);
      const line: Record<string, unknown> = {
        apiVersion: object.apiVersion, kind: object.kind, namespace: object.metadata.namespace ?? null, name: object.metadata.name,
        state: h.state, reason: h.reason, message: h.message,
      };
      if (h.since) line.since = h.since;
      const revision = h.attempted?.raw ?? h.attempted?.sha ?? h.attempted?.chart ?? h.attempted?.images?.join(',');
      if (revision) line.revision = revision;
      process.stdout.write(JSON.stringify(line) + '\n');
    }
  });

program
  .command('check')
  .description('the verdict and decision for each target, without writing anything (except --record)')
  .requiredOption('--config <file>', 'lastgood.yaml')
  .option('--snapshot <path>', 'objects from a file or folder (repeatable); without it, the cluster', collect)
  .option('--target <name>', 'only this target')
  .option('--now <time>', 'the clock, ISO 8601 (default: now)')
  .option('--record', 'record a verified last-known-good note for every healthy target')
  .option('--json', 'print one JSON document')
  .action(async (o: { config: string; snapshot?: string[]; target?: string; now?: string; record?: boolean; json?: boolean }) => {
    const config = await loadConfig(o.config);
    const now = await parseNow(o.now);
    const observed = await observe(o.snapshot, config, o.target, now);
    const { checkReport, recordHealthy } = await engine();
    const { targets } = checkReport({ config, observed, now, target: o.target });
    if (o.record) {
      const repo = await repoFor(config, o.config, undefined);
      for (const r of await recordHealthy({ config, observed, now, target: o.target, repo, failures: true })) {
        const t = targets.find((x) => x.name === r.target)!;
        t.reason = `${t.reason}; ${r.reason}`;
        if (r.recorded && r.commit && r.state === 'healthy') {
          t.lastKnownGood = r.commit;
          t.verified = true;
        }
      }
    }
    await print({ targets }, Boolean(o.json));
  });

program
  .command('lkg')
  .description('list the verified last-known-good records (git notes under refs/notes/lastgood)')
  .requiredOption('--config <file>', 'lastgood.yaml')
  .option('--target <name>', 'only this target')
  .option('--repo <path|url>', 'the config repository (overrides repo.url)')
  .option('--json', 'print one JSON document')
  .action(async (o: { config: string; target?: string; repo?: string; json?: boolean }) => {
    const config = await loadConfig(o.config);
    const targets = (await engine()).selectTargets(config, o.target);
    const repo = await repoFor(config, o.config, o.repo);
    const store = repo.notes?.();
    if (!store) throw new InputError(`the ${repo.kind} repository backend keeps no verified records`);
    const names = new Set(targets.map((t) => t.name));
    const records = (await store.list()).filter((r) => names.has(r.target));
    if (o.json) {
      process.stdout.write(JSON.stringify({ targets: targets.map((t) => ({ name: t.name, records: records.filter((r) => r.target === t.name) })) }, null, 2) + '\n');
      return;
    }
    for (const t of targets) {
      const mine = records.filter((r) => r.target === t.name);
      process.stdout.write(`${t.name}: ${mine.length ? `${mine.length} verified revision${mine.length === 1 ? '' : 's'}` : 'no verified revision yet (lastgood check --record writes them)'}\n`);
      for (const r of mine) process.stdout.write(`  ${r.commit}  ${r.at}  ${r.evidence}\n`);
    }
  });

program
  .command('run')
  .description('check every target and revert those whose policy says so')
  .requiredOption('--config <file>', 'lastgood.yaml')
  .option('--snapshot <path>', 'objects from a file or folder (repeatable); without it, the cluster', collect)
  .option('--target <name>', 'only this target')
  .option('--repo <path|url>', 'the config repository (overrides repo.url)')
  .addOption(new Option('--mode <mode>', 'commit or pull-request (overrides the config)').choices(['commit', 'pull-request']))
  .option('--dry-run', 'print the plan and the diff, write nothing')
  .option('--now <time>', 'the clock, ISO 8601 (default: now)')
  .option('--json', 'print one JSON document')
  .action(async (o: { config: string; snapshot?: string[]; target?: string; repo?: string; mode?: 'commit' | 'pull-request'; dryRun?: boolean; now?: string; json?: boolean }) => {
    const config = await loadConfig(o.config);
    const now = await parseNow(o.now);
    const { run, selectTargets } = await engine();
    selectTargets(config, o.target);
    const observed = await observe(o.snapshot, config, o.target, now);
    const repo = await repoFor(config, o.config, o.repo);
    const report = await run({ config, observed, now, target: o.target, repo, mode: o.mode, dryRun: Boolean(o.dryRun), log: log() });
    await print(report, Boolean(o.json), Boolean(o.dryRun));
  });

program
  .command('revert')
  .description('revert a target now, because a person says so')
  .requiredOption('--config <file>', 'lastgood.yaml')
  .requiredOption('--target <name>', 'the target to revert')
  .option('--bad <sha>', 'the bad commit (default: located from the cluster state)')
  .option('--to <sha>', 'the revision to go back to (default: the commit before the bad one)')
  .option('--snapshot <path>', 'objects from a file or folder (repeatable)', collect)
  .option('--repo <path|url>', 'the config repository (overrides repo.url)')
  .addOption(new Option('--mode <mode>', 'commit or pull-request').choices(['commit', 'pull-request']))
  .option('--reason <text>', 'why, for the commit message')
  .option('--dry-run', 'print the plan and the diff, write nothing')
  .option('--now <time>', 'the clock, ISO 8601 (default: now)')
  .option('--json', 'print one JSON document')
  .action(async (o: { config: string; target: string; bad?: string; to?: string; snapshot?: string[]; repo?: string; mode?: 'commit' | 'pull-request'; reason?: string; dryRun?: boolean; now?: string; json?: boolean }) => {
    const config = await loadConfig(o.config);
    const now = await parseNow(o.now);
    const { revertTarget, selectTargets } = await engine();
    const { evidenceFor, verdictFor } = await import('./decide/verdict.ts');
    const [target] = selectTargets(config, o.target);
    if (!o.bad && !o.snapshot?.length) throw new InputError('revert needs --bad SHA, or --snapshot to locate the bad commit from the cluster state');
    const observed = o.snapshot?.length ? await readSnapshots(o.snapshot) : [];
    const verdict = verdictFor(target!, evidenceFor(target!, observed, now), now);
    const repo = await repoFor(config, o.config, o.repo);
    const report = await revertTarget({ config, observed, now, repo, target: target!, verdict, bad: o.bad, to: o.to, reason: o.reason, mode: o.mode, dryRun: Boolean(o.dryRun), log: log() });
    const { formatReport, reportJson } = await import('./report/text.ts');
    process.stdout.write(o.json ? reportJson(report) : formatReport(report, { showDiff: Boolean(o.dryRun) }));
    exitCode = report.targets.some((t) => t.action === 'alert') ? 1 : 0;
  });

program
  .command('validate')
  .description('validate lastgood.yaml')
  .requiredOption('--config <file>', 'lastgood.yaml')
  .action(async (o: { config: string }) => {
    const config = await loadConfig(o.config);
    process.stdout.write(`${o.config}: valid (${config.targets.length} target${config.targets.length === 1 ? '' : 's'}: ${config.targets.map((t) => t.name).join(', ')})\n`);
  });

program
  .command('controller')
  .description('watch the cluster and revert failed promotions as they happen (runs until SIGTERM)')
  .requiredOption('--config <file>', 'lastgood.yaml')
  .action(async (o: { config: string }) => {
    const config = await loadConfig(o.config);
    const repo = await repoFor(config, o.config, undefined);
    const { runController } = await import('./controller/main.ts');
    exitCode = await runController({ config, repo, log: makeLogger(process.env.LASTGOOD_LOG_LEVEL ?? 'info') });
  });

program
  .command('install')
  .description("print the controller's Kubernetes manifests for this config (kubectl apply -f -)")
  .requiredOption('--config <file>', 'lastgood.yaml')
  .option('--image <image>', 'the controller image', undefined)
  .option('--namespace <name>', "the controller's namespace (default: controller.namespace, else lastgood)")
  .action(async (o: { config: string; image?: string; namespace?: string }) => {
    const { readFile } = await import('node:fs/promises');
    const config = await loadConfig(o.config);
    const { installManifests } = await import('./controller/install.ts');
    const out = await installManifests({ config, configText: await readFile(o.config, 'utf8'), ...(o.image ? { image: o.image } : {}), ...(o.namespace ? { namespace: o.namespace } : {}) });
    for (const w of out.warnings) process.stderr.write(`lastgood: warning: ${w}\n`);
    process.stdout.write(out.yaml);
  });

program
  .command('schema')
  .description('print the JSON Schema of lastgood.yaml')
  .action(async () => {
    const { configJsonSchema } = await import('./config/schema.ts');
    process.stdout.write(JSON.stringify(configJsonSchema(), null, 2) + '\n');
  });

try {
  await program.parseAsync(process.argv);
  process.exitCode = exitCode;
} catch (error) {
  if (error instanceof CommanderError) {
    process.exitCode = error.exitCode === 0 ? 0 : 2;
  } else if (error instanceof LastgoodError) {
    // already redacted; bounded too: an error may quote outside text
    process.stderr.write(`lastgood: ${scrubText(error.message, { maxBytes: 16_384 })}\n`);
    process.exitCode = error.exitCode;
  } else {
    process.stderr.write(`lastgood: internal error: ${redact(error instanceof Error ? (error.stack ?? error.message) : String(error))}\n`);
    process.exitCode = 3;
  }
}
