import path from 'node:path';
import type { TransferEvent } from '../../repo/types.ts';
import { ConfigError, InputError } from '../../errors.ts';
import { loadCredentials, type GitCredentials } from './auth.ts';
import type { GitRemoteConfig } from './config.ts';
import { RemoteRepo } from './remote-repo.ts';
import { loadSigner } from './signing.ts';
import { parseHttpUrl } from './match.ts';

/**
 * The `git` backend's door: which locations it takes, and the checks on repo.url before anything
 * is sent (no credentials in the URL, no clear-text http without repo.insecure).
 */

export type { GitRemoteConfig } from './config.ts';

export interface GitRemoteOpenOptions {
  relativeTo: string;
  apiUrl?: string;
  configFile?: string;
  fromFlag?: boolean;
  repo?: GitRemoteConfig;
  env?: Record<string, string | undefined>;
  onWarning?: (message: string) => void;
  onProgress?: (event: TransferEvent) => void;
}

const isLoopback = (host: string) => host === 'localhost' || /^127\./.test(host) || host === '[::1]' || host === '::1';

async function refuse(message: string, opts: Pick<GitRemoteOpenOptions, 'configFile' | 'fromFlag'>): Promise<never> {
  if (opts.fromFlag) throw new InputError(`--repo ${message}`);
  if (!opts.configFile) throw new ConfigError(`repo.url ${message}`);
  const { configFieldLine } = await import('../../config/load.ts');
  const line = await configFieldLine(opts.configFile, ['repo', 'url']);
  throw new ConfigError(`repo.url ${message}`, { file: opts.configFile, ...(line ? { line } : {}) });
}

export async function openGitRemote(location: string, opts: GitRemoteOpenOptions): Promise<RemoteRepo> {
  return (await prepareGitRemote(location, opts)).repo;
}

/**
 * The checks on repo.url, the credentials repo.auth names, and the git backend over them; the
 * hosts with a review-request API (src/deliver/review-request.ts) open their API with the same
 * credentials, so that a token is read once and sent only to the configured host.
 */
/**
 * The checks on repo.url that need neither the network nor the secrets (`lastgood validate` runs
 * them too): no credentials in the URL, no query or fragment, no clear-text http without
 * repo.insecure. The URL, for the backend.
 */
export async function checkRemoteUrl(location: string, opts: Pick<GitRemoteOpenOptions, 'configFile' | 'fromFlag' | 'repo'>): Promise<URL> {
  const url = parseHttpUrl(location)!;
  if (url.username || url.password) {
    url.username = '';
    url.password = '';
    await refuse(`"${url.href}" is not supported with credentials in the URL: they would be logged and stored in plain text. Remove them and put the secret in the environment or a file named by repo.auth (e.g. auth: { tokenEnv: LASTGOOD_GIT_TOKEN })`, opts);
  }
  if (url.search || url.hash) await refuse(`${url.href}: a repository URL has no query or fragment`, opts);
  if (url.protocol === 'http:' && !opts.repo?.insecure) {
    await refuse(`${url.href} is plain http: everything, credentials included, would cross the network unencrypted. Use https, or set repo.insecure: true for a server inside the cluster or a test`, opts);
  }
  return url;
}

export async function prepareGitRemote(location: string, opts: GitRemoteOpenOptions): Promise<{ repo: RemoteRepo; url: URL; credentials: GitCredentials | undefined; warn: (m: string) => void }> {
  const url = await checkRemoteUrl(location, opts);
  const env = opts.env ?? process.env;
  const warn = opts.onWarning ?? ((m: string) => process.stderr.write(`lastgood: warning: ${m}\n`));
  const where = { relativeTo: opts.relativeTo, env, ...(opts.configFile ? { configFile: opts.configFile } : {}) };
  const credentials = loadCredentials(opts.repo?.auth, url.hostname, where, opts.repo?.provider ? { provider: opts.repo.provider } : {});
  if (url.protocol === 'http:' && credentials && !isLoopback(url.hostname)) {
    warn(`!!! repo.insecure: credentials (${credentials.source}) are sent in clear text over plain http to ${url.host}, which is not this machine: anyone on the network path can read them and push to the repository !!!`);
  }
  const signer = opts.repo?.signing ? loadSigner(opts.repo.signing, where) : undefined;
  const repo = new RemoteRepo({
    url: url.href.replace(/\/+$/, ''),
    ...(credentials ? { credentials } : {}),
    ...(opts.repo?.cacheDir ? { cacheDir: path.resolve(opts.relativeTo, opts.repo.cacheDir) } : {}),
    ...(signer ? { signer } : {}),
    onWarning: warn,
    ...(opts.onProgress ? { onProgress: opts.onProgress } : {}),
  });
  return { repo, url, credentials, warn };
}

export { RemoteRepo } from './remote-repo.ts';
