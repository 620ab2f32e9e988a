import { loadConfig, validSummary } from '../config/load.ts';
import { checkConfiguredRepo } from '../deliver/registry.ts';

/**
 * `lastgood validate --config FILE`: what the CLI prints of a valid config. Everything a run would
 * refuse in the file before it reads the cluster or the repository is refused here too, with the
 * file and line: the schema and cross-field rules (config/load.ts), and repo.url as opening it
 * would refuse it (an unsupported location, credentials in the URL, plain http without
 * repo.insecure). Nothing is fetched and no secret is read: a config is validated where its
 * secrets are not.
 */
export async function validateConfigFile(file: string, env: Record<string, string | undefined>): Promise<string> {
  const config = await loadConfig(file);
  await checkConfiguredRepo(config, file, env);
  return validSummary(file, config);
}
