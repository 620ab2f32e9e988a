import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { TestFn } from 'ava';
import { tempDir } from './git.ts';

/**
 * A real Prometheus for tests: Debian's `prometheus` package (2.42), on 127.0.0.1, over a TSDB
 * backfilled from OpenMetrics text by `promtool tsdb create-blocks-from openmetrics`. PromQL is
 * evaluated by Prometheus; lastgood reaches it through its HTTP API as it would in production.
 *
 * Without the binaries the tests that need them are skipped and say so in their titles; with
 * LASTGOOD_REQUIRE_PROMETHEUS=1 (.ci/run sets it, after installing the package) they fail instead.
 */

function which(bin: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const full = path.join(dir, bin);
    try {
      execFileSync(full, ['--version'], { stdio: 'ignore' });
      return full;
    } catch {
      // not here
    }
  }
  return undefined;
}

const PROMETHEUS = which('prometheus');
const PROMTOOL = which('promtool');
export const PROMETHEUS_MISSING = PROMETHEUS && PROMTOOL ? undefined : 'prometheus and promtool are not installed (apt-get install -y prometheus)';

/** `test` when Prometheus is installed; otherwise a skip that says why (or a failure where CI requires it). */
export function withPrometheus<T>(test: TestFn<T>): TestFn<T> {
  if (!PROMETHEUS_MISSING) return test;
  if (process.env.LASTGOOD_REQUIRE_PROMETHEUS === '1') {
    const failing = ((title: string) => test(`${title} [needs Prometheus]`, (t) => t.fail(PROMETHEUS_MISSING))) as unknown as TestFn<T>;
    return Object.assign(failing, { serial: failing }) as TestFn<T>;
  }
  const skipped = ((title: string) => test.skip(`${title} [skipped: ${PROMETHEUS_MISSING}]`, () => {})) as unknown as TestFn<T>;
  return Object.assign(skipped, { serial: skipped }) as TestFn<T>;
}

export interface PrometheusServer {
  url: string;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
  });
}

/** Backfills a TSDB from OpenMetrics text and serves it. */
export async function startPrometheus(openMetrics: string): Promise<PrometheusServer> {
  if (PROMETHEUS_MISSING) throw new Error(PROMETHEUS_MISSING);
  const dir = tempDir('lastgood-prom-');
  const input = path.join(dir, 'series.om');
  const data = path.join(dir, 'data');
  writeFileSync(input, openMetrics);
  execFileSync(PROMTOOL!, ['tsdb', 'create-blocks-from', 'openmetrics', input, data], { stdio: 'pipe' });
  const config = path.join(dir, 'prometheus.yml');
  writeFileSync(config, 'global:\n  scrape_interval: 1h\n');
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    const child: ChildProcess = spawn(PROMETHEUS!, [
      `--config.file=${config}`, `--storage.tsdb.path=${data}`, `--web.listen-address=127.0.0.1:${port}`,
      // backfilled blocks may be old: never compact them away
      '--storage.tsdb.retention.time=100y', '--log.level=warn',
    ], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (d) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const url = `http://127.0.0.1:${port}`;
    const stop = async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await exited;
      }
    };
    // ready when /-/ready answers 200 (blocks loaded); a lost port race ends the process: try another port
    for (;;) {
      if (child.exitCode !== null) break;
      try {
        const res = await fetch(`${url}/-/ready`);
        if (res.ok) return { url, stop };
      } catch {
        // not listening yet
      }
      await Promise.race([exited, new Promise((r) => setTimeout(r, 50))]);
    }
    if (attempt >= 3) throw new Error(`prometheus did not start: ${stderr.slice(-2000)}`);
  }
}
