/**
 * `lastgood controller --config FILE`: the process around the controller. Reads the cluster
 * through the usual kubeconfig rules (in-cluster service account, KUBECONFIG), runs until SIGTERM
 * or SIGINT, then stops gracefully (controller.ts) and exits 0.
 *
 * Test-only hook (documented in docs/development.md): LASTGOOD_TEST_HANG_AFTER_DELIVER=1
 * makes the process stop dead right after the engine delivered a revert, before the controller
 * records anything of it, and say so on stderr ("test hook: hanging after delivery"), so that a
 * test can SIGKILL it at exactly that moment and restart it.
 */
import type { Logger } from 'pino';
import type { Config } from '../config/schema.ts';
import { loadKubeConfig } from '../observe/kube.ts';
import type { RepoBackend } from '../repo/types.ts';
import { createController } from './controller.ts';

export interface RunControllerOptions {
  config: Config;
  repo: RepoBackend;
  log: Logger;
  commitUrl?: (sha: string) => string;
  /** --kubeconfig, --context */
  kubeconfig?: string | undefined;
  context?: string | undefined;
}

/** Runs until a stop signal; resolves with the exit code. */
export async function runController(opts: RunControllerOptions): Promise<0> {
  // no kubeconfig at all stops the controller at start, said as such (exit 2): there is nothing to retry
  const kc = loadKubeConfig(opts);
  const hang = process.env.LASTGOOD_TEST_HANG_AFTER_DELIVER === '1';
  const controller = createController({
    config: opts.config, kc, repo: opts.repo, log: opts.log,
    ...(opts.commitUrl ? { commitUrl: opts.commitUrl } : {}),
    ...(hang ? {
      afterDeliver: async (outcome) => {
        process.stderr.write(`test hook: hanging after delivery of ${outcome.commit}\n`);
        await new Promise(() => {});
      },
    } : {}),
  });
  const stopped = new Promise<string>((resolve) => {
    for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => resolve(signal));
  });
  await controller.start();
  const signal = await stopped;
  opts.log.info({ signal }, 'stop signal received');
  await controller.stop();
  // keep-alive connections of the Kubernetes and GitHub clients must not hold the exit
  setTimeout(() => process.exit(0), 200).unref();
  return 0;
}
