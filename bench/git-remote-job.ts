/**
 * The job process of bench/git-remote.bench.ts: what the engine does for one target through the
 * git backend (head, the newest commit touching the folder, the folder at its parent and at head,
 * deliver in commit mode), once per "go" line on stdin, printing its ms and the backend's stats.
 * Bundled by the bench before it runs (bench/bundle.ts), as users run lastgood.
 *
 *   node git-remote-job.js --job URL CACHEDIR FOLDER
 */
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { boundYoungGeneration } from '../src/engine/heap.ts';

async function job(url: string, cacheDir: string, folder: string): Promise<void> {
  // as the CLI and the Action do at their start (src/engine/heap.ts); the warm process's Node flags size the young generation themselves
  boundYoungGeneration();
  const { RemoteRepo } = await import('../src/deliver/git-remote/remote-repo.ts');
  const { firstParentLog } = await import('../src/history/graph.ts');
  const repo = new RemoteRepo({ url, cacheDir });
  // from the process's start to here: Node and loading the bundle's modules
  let startupMs: number | undefined = performance.now();
  const paths = [folder];
  const lines = createInterface({ input: process.stdin });
  for await (const line of lines) {
    if (line !== 'go') break;
    const started = performance.now();
    const head = await repo.head('main');
    const [bad] = await firstParentLog(repo, head, { paths, limit: 1 });
    if (!bad) throw new Error('no commit touches the folder');
    const lkg = bad.parents[0]!;
    const [good, now] = await Promise.all([repo.listFiles(lkg, paths), repo.listFiles(head, paths)]);
    const files: Array<{ path: string; mode: string; oid: string } | { path: string; delete: true }> = [...good].map(([p, e]) => ({ path: p, mode: e.mode, oid: e.oid }));
    for (const p of now.keys()) if (!good.has(p)) files.push({ path: p, delete: true });
    const result = await repo.deliver({
      target: 'app-00000-prod', branch: 'main', paths, parent: head, files,
      message: `Revert app-00000-prod to ${lkg.slice(0, 12)}\n\nLastgood-Target: app-00000-prod\nLastgood-Reverts: ${bad.oid}\nLastgood-Restores: ${lkg}\n`,
      author: { name: 'lastgood', email: 'lastgood@example.com', timestamp: Math.floor(Date.now() / 1000), timezoneOffset: 0 },
      bad: [bad.oid], lastKnownGood: lkg,
    }, 'commit');
    if (!result.created) throw new Error('the revert was not pushed');
    process.stdout.write(`${JSON.stringify({ ms: performance.now() - started, ...(startupMs !== undefined ? { startupMs } : {}), ...repo.stats })}\n`);
    startupMs = undefined;
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2] === '--job') {
  await job(process.argv[3]!, process.argv[4]!, process.argv[5]!);
}
