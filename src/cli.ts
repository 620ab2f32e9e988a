import path from 'node:path';
import { errorText, terminalJson, terminalText } from './revert/markup.ts';
import { Argument, Command, CommanderError, Option } from 'commander';
import type { Logger } from 'pino';
import type { Config } from './config/schema.ts';
import type { Report } from './engine/index.ts';
import { InputError, LastgoodError, LocalError, redact, type ExitCode } from './errors.ts';
import { makeOutputFolder } from './output-folder.ts';
import { scrubText } from './scrub.ts';
import { VERSION } from './version.ts';
import { progressReporter } from './report/progress.ts';
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
const engine = () => import('./engine/index.ts');
const openConfiguredRepo: typeof import('./deliver/registry.ts').openConfiguredRepo = async (...args) => (await import('./deliver/registry.ts')).openConfiguredRepo(...args);

/** --now is strict ISO 8601 with a zone: a lenient parse read "1" as the year 2001. */
async function parseNow(value: string | undefined): Promise<Date> {
  if (value === undefined) return new Date();
  const { parseTime, TIME_FORMAT_HINT } = await import('./observe/times.ts');
  const t = parseTime(value);
  if (t === undefined) throw new InputError(`--now ${JSON.stringify(value)}: not a valid time (${TIME_FORMAT_HINT})`);
  return new Date(t);
}

/** Objects from --snapshot files, else from the cluster (only the targets' configured resources). */
async function observe(snapshots: string[] | undefined, config: Config, target: string | undefined, cluster: ClusterFlags = {}): Promise<Observed[]> {
  if (snapshots && snapshots.length > 0) return readSnapshots(snapshots);
  // loaded on demand: the Kubernetes client is heavy, and most runs read snapshots
  const { readFromCluster } = await import('./observe/kube.ts');
  const { selectTargets } = await engine();
  return readFromCluster(selectTargets(config, target).flatMap((t) => t.resources), cluster.kubeconfig, cluster.context);
}

/** --kubeconfig and --context, as kubectl, flux and argocd take them */
interface ClusterFlags {
  kubeconfig?: string;
  context?: string;
}

function clusterOptions(command: Command): Command {
  return command
    .option('--kubeconfig <file>', 'the kubeconfig to read the cluster with (default: KUBECONFIG, ~/.kube/config, in-cluster)')
    .option('--context <name>', 'the kubeconfig context to use (default: its current-context)');
}

/** Metric checks due by `now` (docs/metrics.md): templates and ReplicaSets are read from the cluster unless the objects come from snapshots. */
async function analyseFor(config: Config, configFile: string, observed: Observed[], now: Date, target: string | undefined, snapshots: string[] | undefined, cluster: ClusterFlags = {}) {
  const { analyse } = await engine();
  const read = snapshots && snapshots.length > 0 ? undefined : (await import('./observe/kube.ts')).clusterReader(cluster.kubeconfig, cluster.context);
  return analyse({ config, observed, now, target, ...(read ? { read } : {}), provider: { relativeTo: path.dirname(path.resolve(configFile)), env: process.env } });
}

/**
 * The repository backend; `progress`: show a long fetch's progress on stderr; `onWarning`: where a
 * backend's warnings go (default stderr; the controller's go through its logger: its stderr is its
 * JSON log, issue 35).
 */
async function repoFor(config: Config, configFile: string, repoFlag: string | undefined, opts: { progress?: boolean; onWarning?: (message: string) => void } = {}) {
  const progress = opts.progress ?? true;
  // a command that reads the repository builds models: the first would grow V8's young generation
  // to 128 MB (engine/heap.ts); commands that do not (health, --version) do not load perf_hooks for it
  (await import('./engine/heap.ts')).boundYoungGeneration();
  return openConfiguredRepo(config, configFile, {
    env: process.env,
    credentials: 'environment',
    ...(repoFlag ? { repoFlag } : {}),
    // what a backend warns of outside a delivery (credentials over plain http, a reviewer not requested)
    onWarning: opts.onWarning ?? ((message: string) => process.stderr.write(`lastgood: warning: ${terminalText(redact(message))}\n`)),
    // a fetch that takes over a second shows its progress on stderr — a terminal's, as git does, or
    // any with LASTGOOD_PROGRESS=1 (LASTGOOD_PROGRESS_AFTER_MS: after how long)
    ...(progress && (process.stderr.isTTY || process.env.LASTGOOD_PROGRESS === '1') ? { onProgress: progressReporter({ write: (text) => process.stderr.write(text), tty: Boolean(process.stderr.isTTY), afterMs: Number(process.env.LASTGOOD_PROGRESS_AFTER_MS ?? 1000) }) } : {}),
  });
}

let exitCode: ExitCode = 0;

// `lastgood health … | head`: a reader that stops early is not an error
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(exitCode);
  throw error;
});

async function print(report: Report, json: boolean, showDiff = false, jsonFile?: string): Promise<void> {
  const { formatReport, reportJson, terminalStyle } = await import('./report/text.ts');
  const tty = terminalStyle(process.stdout, process.env);
  process.stdout.write(json ? reportJson(report) : formatReport(report, { showDiff, ...(tty ? { tty } : {}) }));
  // a target's error is in the report; stderr says it too, as for errors that stop the whole run
  // one line each: a line break in the message (a file name, a status) is written as \n, never a line a reader takes as lastgood's
  for (const t of report.targets) if (t.error) process.stderr.write(`lastgood: ${t.name}: ${errorText(redact(t.error.message))}\n`);
  exitCode = (await engine()).exitCodeFor(report);
  // --json-file: the JSON document for a machine (a CI artifact), the text above for the person reading the log.
  // Written last: when it fails (checked writable before the run; a disk can still fill), the report was printed
  if (jsonFile) {
    try {
      await (await import('node:fs/promises')).writeFile(jsonFile, reportJson(report));
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      // Node says "ENOSPC: no space left on device, write": the words, then the code
      const words = (error as Error).message.replace(/^[A-Z]+: /, '').replace(/, \w+(?: '.*')?$/, '');
      throw new LocalError(`--json-file ${jsonFile}: cannot write the JSON report: ${words}${code ? ` (${code})` : ''}; the report above is the run's, and what it wrote stands`, { path: jsonFile, ...(code ? { code } : {}), cause: error });
    }
  }
}

/**
 * --json-file is checked before the run writes anything (its folder exists and can be written, it
 * is no folder): a run that committed a revert must not end unable to write its report.
 */
async function checkJsonFile(file: string | undefined): Promise<void> {
  if (file === undefined) return;
  const fs = await import('node:fs/promises');
  const stat = await fs.stat(file).catch(() => undefined);
  if (stat?.isDirectory()) throw new InputError(`--json-file ${file}: is a folder; name a file to write the JSON report to`);
  const target = stat ? file : path.dirname(path.resolve(file));
  try {
    await fs.access(target, fs.constants.W_OK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? `the folder ${path.dirname(path.resolve(file))} does not exist` : code === 'EACCES' || code === 'EPERM' || code === 'EROFS' ? `${stat ? 'the file' : 'its folder'} cannot be written (${code})` : (error as Error).message;
    throw new InputError(`--json-file ${file}: ${why}; nothing was run`);
  }
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

/**
 * A JSON document for stdout: JSON.stringify leaves DEL, the C1 controls (U+009B is an 8-bit
 * terminal escape) and the bidirectional marks as they are; terminalJson writes them as \u
 * escapes, which parse back to the same value (revert/markup.ts).
 */
const jsonText = (value: unknown, indent?: number) => terminalJson(JSON.stringify(value, null, indent));

const program = new Command()
  .name('lastgood')
  .description('Turn a failed promotion in a Kubernetes cluster into a revert in the GitOps config repository.')
  .version(VERSION)
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
    // every object is printed: parsed at once, not when read (observe/snapshot.ts)
    for (const { object } of await readSnapshots(files.length ? files : ['-'], { eager: true })) {
      const h = assess(object, now);
      const line: Record<string, unknown> = {
        apiVersion: object.apiVersion, kind: object.kind, namespace: object.metadata.namespace ?? null, name: object.metadata.name,
        state: h.state, reason: h.reason, message: h.message,
      };
      if (h.since) line.since = h.since;
      const revision = h.attempted?.raw ?? h.attempted?.sha ?? h.attempted?.chart ?? h.attempted?.images?.join(',');
      if (revision) line.revision = revision;
      process.stdout.write(jsonText(line) + '\n');
    }
  });

clusterOptions(program
  .command('check'))
  .description('the verdict and decision for each target, without writing anything (except --record)')
  .requiredOption('--config <file>', 'the config file (lastgood.yaml)')
  .option('--snapshot <path>', 'objects from a file or folder (repeatable); without it, the cluster', collect)
  .option('--target <name>', 'only this target')
  .option('--now <time>', 'the clock, ISO 8601 (default: now)')
  .option('--record', 'record a verified last-known-good note for every healthy target')
  .option('--json', 'print one JSON document')
  .action(async (o: { config: string; snapshot?: string[]; target?: string; now?: string; record?: boolean; json?: boolean } & ClusterFlags) => {
    const config = await loadConfig(o.config);
    const now = await parseNow(o.now);
    const observed = await observe(o.snapshot, config, o.target, o);
    const { checkAndRecord } = await engine();
    const analysis = await analyseFor(config, o.config, observed, now, o.target, o.snapshot, o);
    const report = await checkAndRecord({ config, observed, now, target: o.target, analysis, ...(o.record ? { repo: () => repoFor(config, o.config, undefined) } : {}) });
    await print(report, Boolean(o.json));
  });

program
  .command('lkg')
  .description('list the verified last-known-good records (git notes under refs/notes/lastgood)')
  .requiredOption('--config <file>', 'the config file (lastgood.yaml)')
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
      process.stdout.write(jsonText({ targets: targets.map((t) => ({ name: t.name, records: records.filter((r) => r.target === t.name) })) }, 2) + '\n');
      return;
    }
    for (const t of targets) {
      const mine = records.filter((r) => r.target === t.name);
      process.stdout.write(`${t.name}: ${mine.length ? `${mine.length} verified revision${mine.length === 1 ? '' : 's'}` : 'no verified revision yet (lastgood check --record writes them)'}\n`);
      for (const r of mine) process.stdout.write(`  ${r.commit}  ${r.at}  ${r.evidence}\n`);
    }
  });

program
  .command('log')
  .description('what lastgood did to each target, newest first: reverts and whether they still hold, requests, verified records, people\'s reverts (reads only)')
  .requiredOption('--config <file>', 'the config file (lastgood.yaml)')
  .option('--target <name>', 'only this target')
  .option('--since <when>', 'how far back: a duration (30d, 36h) or an ISO 8601 time (default: 7d; at most 5,000 commits are read)')
  .option('--repo <path|url>', 'the config repository (overrides repo.url)')
  .option('--now <time>', 'the clock, ISO 8601 (default: now)')
  .option('--json', 'print one JSON document (templates/log.schema.json)')
  .option('--markdown', 'print Markdown (an incident report, a job summary)')
  .option('--html', 'print one self-contained HTML page with a timeline (an incident review: > report.html)')
  .action(async (o: { config: string; target?: string; since?: string; repo?: string; now?: string; json?: boolean; markdown?: boolean; html?: boolean }) => {
    const formats = (['json', 'markdown', 'html'] as const).filter((f) => o[f]);
    if (formats.length > 1) throw new InputError(`log: ${formats.map((f) => `--${f}`).join(' and ')} cannot be used together`);
    const config = await loadConfig(o.config);
    const now = await parseNow(o.now);
    const targets = (await engine()).selectTargets(config, o.target);
    const { readAuditLog, sinceFrom } = await import('./audit/timeline.ts');
    const { parseDuration } = await import('./config/duration.ts');
    const { parseTime } = await import('./observe/times.ts');
    const window = sinceFrom(o.since, now, { duration: parseDuration, time: parseTime });
    if ('error' in window) throw new InputError(window.error);
    const repo = await repoFor(config, o.config, o.repo);
    const log = await readAuditLog({ repo, branch: config.repo.branch, targets: targets.map((t) => ({ name: t.name, paths: t.paths })), since: window.since, why: window.why, now });
    const { formatLogJson, formatLogMarkdown, formatLogText } = await import('./audit/format.ts');
    const { terminalStyle } = await import('./report/text.ts');
    if (o.html) {
      const { formatLogHtml } = await import('./audit/html.ts');
      process.stdout.write(formatLogHtml(log, { now }));
      return;
    }
    process.stdout.write(o.json ? formatLogJson(log) : o.markdown ? formatLogMarkdown(log) : formatLogText(log, { color: terminalStyle(process.stdout, process.env)?.color ?? false }));
  });

clusterOptions(program
  .command('run'))
  .description('check every target and revert those whose policy says so')
  .requiredOption('--config <file>', 'the config file (lastgood.yaml)')
  .option('--snapshot <path>', 'objects from a file or folder (repeatable); without it, the cluster', collect)
  .option('--event <file>', 'a webhook payload (Flux, Argo CD, Flagger, Alertmanager), e.g. $TRIGGER_PAYLOAD in a GitLab CI job; without --snapshot and a cluster, only its objects are judged')
  .option('--target <name>', 'only this target')
  .option('--repo <path|url>', 'the config repository (overrides repo.url)')
  .addOption(new Option('--mode <mode>', 'commit or pull-request (overrides the config)').choices(['commit', 'pull-request']))
  .option('--dry-run', 'print the plan and the diff, write nothing')
  .option('--now <time>', 'the clock, ISO 8601 (default: now)')
  .option('--json', 'print one JSON document')
  .option('--json-file <file>', 'also write the JSON document to FILE (a CI artifact); stdout keeps the report for the log')
  .action(async (o: { config: string; snapshot?: string[]; event?: string; target?: string; repo?: string; mode?: 'commit' | 'pull-request'; dryRun?: boolean; now?: string; json?: boolean; jsonFile?: string } & ClusterFlags) => {
    await checkJsonFile(o.jsonFile);
    let config = await loadConfig(o.config);
    const now = await parseNow(o.now);
    const { run, selectTargets } = await engine();
    selectTargets(config, o.target);
    let observed: Observed[];
    if (o.event) {
      // the same payloads as the Action's event input (src/observe/event.ts)
      const { eventScope, matchEvent, readEvent, withEventObjects } = await import('./observe/event.ts');
      const event = await readEvent(o.event, { now });
      const match = matchEvent(event, config);
      // without --snapshot, the cluster is read only where there is one to read (--kubeconfig, KUBECONFIG, in-cluster)
      const cluster = Boolean(o.snapshot?.length || o.kubeconfig || process.env.KUBECONFIG || process.env.KUBERNETES_SERVICE_HOST);
      const scope = eventScope(match, { ...(o.target ? { target: o.target } : {}), eventOnly: !cluster });
      if (scope.unmatched !== undefined) {
        process.stderr.write(`lastgood: nothing to do: ${terminalText(redact(scope.unmatched))} (event: ${terminalText(redact(event.summary))})\n`);
        await print({ targets: [] }, Boolean(o.json), false, o.jsonFile);
        return;
      }
      config = { ...scope.config, targets: scope.config.targets.filter((t) => scope.targets.includes(t.name)) };
      observed = withEventObjects(cluster ? await observe(o.snapshot, config, o.target, o) : [], match.observed);
    } else {
      observed = await observe(o.snapshot, config, o.target, o);
    }
    const analysis = await analyseFor(config, o.config, observed, now, o.target, o.snapshot, o);
    const repo = await repoFor(config, o.config, o.repo);
    const report = await run({ config, observed, now, target: o.target, repo, mode: o.mode, dryRun: Boolean(o.dryRun), log: log(), analysis });
    await print(report, Boolean(o.json), Boolean(o.dryRun), o.jsonFile);
  });

program
  .command('revert')
  .description('revert a target now, because a person says so')
  .requiredOption('--config <file>', 'the config file (lastgood.yaml)')
  .requiredOption('--target <name>', 'the target to revert')
  .option('--bad <sha>', 'the bad commit (without it: located from the objects of --snapshot; revert reads no cluster)')
  .option('--to <sha>', 'the revision to go back to (default: the commit before the bad one)')
  .option('--snapshot <path>', 'objects from a file or folder (repeatable)', collect)
  .option('--repo <path|url>', 'the config repository (overrides repo.url)')
  .addOption(new Option('--mode <mode>', 'commit or pull-request').choices(['commit', 'pull-request']))
  .option('--reason <text>', 'why: said in the commit message, the pull request and the report')
  .option('--dry-run', 'print the plan and the diff, write nothing')
  .option('--now <time>', 'the clock, ISO 8601 (default: now)')
  .option('--json', 'print one JSON document')
  .action(async (o: { config: string; target: string; bad?: string; to?: string; snapshot?: string[]; repo?: string; mode?: 'commit' | 'pull-request'; reason?: string; dryRun?: boolean; now?: string; json?: boolean }) => {
    const config = await loadConfig(o.config);
    const now = await parseNow(o.now);
    const { personRevert, personRevertExitCode, selectTargets } = await engine();
    selectTargets(config, o.target);
    if (!o.bad && !o.snapshot?.length) throw new InputError('revert needs --bad SHA, or --snapshot to locate the bad commit from the cluster state');
    const observed = o.snapshot?.length ? await readSnapshots(o.snapshot) : [];
    const repo = await repoFor(config, o.config, o.repo);
    const report = await personRevert({ config, observed, now, repo, target: o.target, bad: o.bad, to: o.to, reason: o.reason, mode: o.mode, dryRun: Boolean(o.dryRun), log: log() });
    const { formatReport, reportJson, terminalStyle } = await import('./report/text.ts');
    const tty = terminalStyle(process.stdout, process.env);
    process.stdout.write(o.json ? reportJson(report) : formatReport(report, { showDiff: Boolean(o.dryRun), ...(tty ? { tty } : {}) }));
    exitCode = personRevertExitCode(report);
  });

program
  .command('validate')
  .description('validate lastgood.yaml')
  .requiredOption('--config <file>', 'the config file (lastgood.yaml)')
  .action(async (o: { config: string }) => {
    process.stdout.write(await (await engine()).validateConfigFile(o.config, process.env));
  });

clusterOptions(program
  .command('controller'))
  .description('watch the cluster and revert failed promotions as they happen (runs until SIGTERM)')
  .requiredOption('--config <file>', 'the config file (lastgood.yaml)')
  .action(async (o: { config: string } & ClusterFlags) => {
    const config = await loadConfig(o.config);
    const controllerLog = makeLogger(process.env.LASTGOOD_LOG_LEVEL ?? 'info');
    const repo = await repoFor(config, o.config, undefined, { progress: false, onWarning: (message) => controllerLog.warn({ repo: config.repo.url }, redact(message)) });
    const { runController } = await import('./controller/main.ts');
    exitCode = await runController({ config, repo, log: controllerLog, kubeconfig: o.kubeconfig, context: o.context });
  });

program
  .command('status')
  .description("what the running controller holds for each target: verdict, decision, what it waits for, last-known-good, last action (its GET /targets)")
  .requiredOption('--controller <url>', "the controller's HTTP port, e.g. http://127.0.0.1:8080 after kubectl -n lastgood port-forward svc/lastgood-controller 8080")
  .option('--json', 'print the JSON document as the controller serves it')
  .action(async (o: { controller: string; json?: boolean }) => {
    const { fetchTargets } = await import('./controller/status-client.ts');
    const doc = await fetchTargets(o.controller);
    if (o.json) {
      process.stdout.write(jsonText(doc, 2) + '\n');
      return;
    }
    const { formatStatusTable } = await import('./controller/status.ts');
    process.stdout.write(formatStatusTable(doc));
  });

program
  .command('install')
  .description("print the controller's Kubernetes manifests for this config (kubectl apply -f -), or write them as a kustomize base")
  .requiredOption('--config <file>', 'the config file (lastgood.yaml)')
  .option('--image <image>', 'the controller image (default: controller.image in the config)')
  .option('--registry <registry>', `the registry the image was pushed to: REGISTRY/lastgood:${VERSION}`)
  .option('--namespace <name>', "the controller's namespace (default: controller.namespace, else lastgood)")
  .option('--ca-file <pem>', "a private CA's certificates (the git host's): mounted, and named in NODE_EXTRA_CA_CERTS")
  .option('--kustomize <dir>', 'write a kustomize base into DIR (kubectl apply -k DIR; commit it for Flux or Argo CD) instead of printing')
  .option('--monitoring', "the controller's monitoring instead: a PrometheusRule (alerts), a ServiceMonitor and the Grafana dashboard")
  .option('--force', 'with --kustomize: replace files of DIR that differ from what lastgood writes (edited by hand)')
  .action(async (o: { config: string; image?: string; registry?: string; namespace?: string; caFile?: string; kustomize?: string; monitoring?: boolean; force?: boolean }) => {
    const { readFile } = await import('node:fs/promises');
    const config = await loadConfig(o.config);
    if (o.monitoring) {
      const { monitoringManifests } = await import('./controller/install.ts');
      const out = await monitoringManifests({ config, ...(o.namespace ? { namespace: o.namespace } : {}) });
      if (!o.kustomize) {
        process.stdout.write(out.yaml);
        return;
      }
      await writeKustomizeBase(o.kustomize, out.kustomize, Boolean(o.force));
      return;
    }
    let ca: { file: string; pem: string } | undefined;
    if (o.caFile) {
      try {
        ca = { file: o.caFile, pem: await readFile(o.caFile, 'utf8') };
      } catch (error) {
        throw new InputError(`${o.caFile}: cannot read the CA bundle: ${(error as Error).message}`);
      }
    }
    const { installManifests } = await import('./controller/install.ts');
    const out = await installManifests({ config, configText: await readFile(o.config, 'utf8'), ...(o.image ? { image: o.image } : {}), ...(o.registry ? { registry: o.registry } : {}), ...(o.namespace ? { namespace: o.namespace } : {}), ...(ca ? { ca } : {}) });
    for (const w of out.warnings) process.stderr.write(`lastgood: warning: ${terminalText(w)}\n`);
    if (!o.kustomize) {
      process.stdout.write(out.yaml);
      return;
    }
    await writeKustomizeBase(o.kustomize, out.kustomize, Boolean(o.force));
  });

/**
 * `install --kustomize DIR`: the files written into DIR. A file there that differs from what lastgood
 * writes was edited by hand (or by an older lastgood): it is not replaced without --force, and
 * nothing is written at all (issue 36: the edit was lost silently).
 */
async function writeKustomizeBase(dir: string, files: Record<string, string>, force: boolean): Promise<void> {
  const { readFile, writeFile } = await import('node:fs/promises');
  const differing: string[] = [];
  for (const [name, text] of Object.entries(files)) {
    const now = await readFile(path.join(dir, name), 'utf8').catch(() => undefined);
    if (now !== undefined && now !== text) differing.push(name);
  }
  if (differing.length > 0 && !force) {
    throw new InputError(`${dir}: ${differing.join(', ')} differ${differing.length === 1 ? 's' : ''} from what lastgood writes (edited by hand?): nothing written; run without --kustomize to see lastgood's, or pass --force to replace ${differing.length === 1 ? 'it' : 'them'}`);
  }
  makeOutputFolder(dir, '--kustomize');
  for (const [name, text] of Object.entries(files)) await writeFile(path.join(dir, name), text);
  process.stdout.write(`${dir}: ${Object.keys(files).join(', ')}${differing.length ? ` (replaced: ${differing.join(', ')})` : ''} (kubectl apply -k ${dir})\n`);
}

program
  .command('schema')
  .description('print the JSON Schema of lastgood.yaml (--log: of the `lastgood log --json` document)')
  .option('--log', 'the schema of `lastgood log --json`')
  .action(async (o: { log?: boolean }) => {
    const schema = o.log ? (await import('./audit/schema.ts')).logJsonSchema() : (await import('./config/schema.ts')).configJsonSchema();
    process.stdout.write(JSON.stringify(schema, null, 2) + '\n');
  });

program
  .command('version')
  .description('print the versions of lastgood and Node, and the kustomize the render check would use')
  .option('--config <file>', 'a config file: honour its render.kustomize (without it: kustomize, else kubectl kustomize, on the PATH)')
  .option('--json', 'print one JSON document')
  .action(async (o: { config?: string; json?: boolean }) => {
    const setting = o.config ? (await loadConfig(o.config)).render?.kustomize : undefined;
    const { formatVersionInfo, versionInfo } = await import('./version-info.ts');
    const info = await versionInfo(setting);
    process.stdout.write(o.json ? JSON.stringify(info, null, 2) + '\n' : formatVersionInfo(info));
  });

/** A path as one shell word: quoted only where it must be. */
const shellWord = (p: string) => (/^[\w./@%+=:,-]+$/.test(p) ? p : `'${p.replace(/'/g, `'\\''`)}'`);

program
  .command('demo')
  .description('write the worked example into DIR (a GitOps repository, a cluster snapshot, a config) and print the commands to run on it')
  .argument('[dir]', 'a new or empty folder', 'lastgood-demo')
  .action(async (dir: string) => {
    const { demoLog, writeDemo } = await import('./demo/index.ts');
    const demo = await writeDemo(dir);
    const shown = (p: string) => shellWord(path.relative(process.cwd(), p) || '.');
    const lines = [
      `wrote ${shown(demo.dir)}/:`,
      `  gitops/        a GitOps repository (Flux, podinfo and redis in prod), four commits:`,
      ...(await demoLog(demo.repo, demo.shas)).map((c, i) => `                   ${c.sha.slice(0, 12)}  ${c.subject}${i === 0 ? '   <- the bad release' : ''}`),
      `  cluster.yaml   the cluster after Flux applied the last commit and Flagger's canary analysis failed`,
      `  lastgood.yaml  one target, podinfo in prod, reverted by a direct commit`,
      '',
      'Run:',
      `  lastgood run --config ${shown(demo.config)} --snapshot ${shown(demo.snapshot)} --now ${demo.now}`,
      '',
      `(--now: the objects' times are those of ${demo.now.slice(0, 10)}; without it the failure is days old and maxAge ignores it.)`,
      `Then \`git -C ${shown(demo.repo)} log --stat -1\` shows the revert; run the same command again and it finds its own revert and writes nothing.`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  });

// for shell completion: the target names of a config, one a line; nothing (exit 0) for a config it cannot read
program
  .command('__targets', { hidden: true })
  .requiredOption('--config <file>', 'the config file (lastgood.yaml)')
  .action(async (o: { config: string }) => {
    try {
      process.stdout.write((await loadConfig(o.config)).targets.map((t) => `${t.name}\n`).join(''));
    } catch {
      // a half-typed path: no names
    }
  });

program
  .command('completion')
  .description('print a shell completion script: source <(lastgood completion bash)')
  .addArgument(new Argument('<shell>', 'bash, zsh or fish').choices(['bash', 'zsh', 'fish']))
  .action(async (shell: 'bash' | 'zsh' | 'fish') => {
    const { completionScript } = await import('./completion.ts');
    const commands = program.commands.filter((c) => !c.name().startsWith('__')).map((c) => ({
      name: c.name(),
      description: c.description(),
      fileArguments: c.registeredArguments.some((a) => /file/i.test(a.description)),
      ...(c.registeredArguments[0]?.argChoices ? { argumentChoices: c.registeredArguments[0].argChoices } : {}),
      options: c.options.filter((o) => o.long).map((o) => ({
        flag: o.long!,
        description: o.description,
        value: o.required || o.optional,
        file: /<(file|path|pem|dir)/.test(o.flags) || /<path\|url>/.test(o.flags),
        ...(/<dir>/.test(o.flags) ? { dir: true } : {}),
        ...(o.long === '--target' ? { target: true } : {}),
        ...(o.argChoices ? { choices: o.argChoices } : {}),
      })),
    }));
    process.stdout.write(completionScript(shell, commands));
  });

try {
  await program.parseAsync(process.argv);
  process.exitCode = exitCode;
} catch (error) {
  if (error instanceof CommanderError) {
    process.exitCode = error.exitCode === 0 ? 0 : 2;
  } else if (error instanceof LastgoodError) {
    // already redacted; bounded too: an error may quote outside text
    // repository and cluster text in a message (a file name, a status) shows its control characters written out,
    // line breaks too: the message is one line (but a git server's `remote:` lines, revert/markup.ts errorText)
    process.stderr.write(`lastgood: ${errorText(scrubText(error.message, { maxBytes: 16_384 }))}\n`);
    process.exitCode = error.exitCode;
  } else {
    process.stderr.write(`lastgood: internal error: ${redact(error instanceof Error ? (error.stack ?? error.message) : String(error))}\n`);
    process.exitCode = 3;
  }
}
