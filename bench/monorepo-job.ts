/**
 * The job process of bench/monorepo.bench.ts: one engine `run()` per failure line on stdin, as a
 * controller or a CI job runs it, printing what it measured. Bundled by the bench before it runs
 * (users run lastgood bundled), so that the cold rows pay Node's start-up, not TypeScript's.
 *
 *   node monorepo-job.mjs --job BACKEND LOCATION REPO.json
 */
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { boundYoungGeneration } from '../src/engine/heap.ts';
// static, as src/report/log.ts has it: a split bundle's dynamic import() of a CommonJS package has only its default export
import { pino } from 'pino';
import { monorepoScenario, type Monorepo } from '../test/support/monorepo.ts';

export const TOKEN = 'ghs_benchTokenNotARealOne000000000000';

export type Backend = 'local' | 'git-remote' | 'github';

/** One failure the job reverts: the bad commit, what Flux applied before it, when. */
export interface Failure {
  bad: string;
  applied: string;
  now: string;
  badImage: string;
}

/** What the job process prints per run. */
export interface JobResult {
  ms: number;
  cpuMs: number;
  rssMb: number;
  startupMs?: number;
  created: boolean;
  error?: string;
}

/** One run() per failure line on stdin. */
async function job(backend: Backend, location: string, repoFile: string): Promise<void> {
  const startupMs = performance.now();
  // as the CLI and the Action do at their start (src/engine/heap.ts); the warm process's Node flags size the young generation themselves
  boundYoungGeneration();
  const { ConfigSchema } = await import('../src/config/schema.ts');
  const { run } = await import('../src/engine/index.ts');
  const repo = JSON.parse(readFileSync(repoFile, 'utf8')) as Monorepo;
  const cpu = () => {
    const c = process.cpuUsage();
    return (c.user + c.system) / 1000;
  };
  let reader;
  if (backend === 'local') reader = new (await import('../src/deliver/local/index.ts')).LocalRepo(location);
  else if (backend === 'git-remote') {
    const { url, cacheDir } = JSON.parse(location) as { url: string; cacheDir: string };
    reader = new (await import('../src/deliver/git-remote/remote-repo.ts')).RemoteRepo({ url, cacheDir });
  } else {
    const { createGitHubBackend } = await import('../src/deliver/github/index.ts');
    reader = createGitHubBackend({ owner: 'acme', repo: 'gitops', token: TOKEN, baseUrl: location, writeIntervalMs: 0 });
  }
  const url = backend === 'github' ? 'https://github.com/acme/gitops' : backend === 'local' ? location : (JSON.parse(location) as { url: string }).url;
  let first = true;
  for await (const line of createInterface({ input: process.stdin })) {
    if (!line.startsWith('{')) break;
    const failure = JSON.parse(line) as Failure;
    const scenario = monorepoScenario({ ...repo, ...failure }, { url, mode: 'commit' });
    const config = ConfigSchema.parse({ ...scenario.config, repo: { ...scenario.config.repo, ...(backend === 'github' ? { apiUrl: location } : {}) } });
    const started = performance.now();
    const cpu0 = cpu();
    const report = await run({ config, observed: scenario.objects.map((object) => ({ object: object as never, source: 'bench' })), now: new Date(failure.now), repo: reader, dryRun: false, log: pino({ level: 'silent' }) });
    const outcome = report.targets[0]!;
    const result: JobResult = {
      ms: performance.now() - started, cpuMs: cpu() - cpu0, rssMb: process.resourceUsage().maxRSS / 1024,
      ...(first ? { startupMs } : {}), created: outcome.created === true,
      ...(outcome.created ? {} : { error: outcome.error?.message ?? outcome.reason }),
    };
    first = false;
    process.stdout.write(`${JSON.stringify(result)}\n`);
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2] === '--job') {
  await job(process.argv[3] as Backend, process.argv[4]!, process.argv[5]!);
}
