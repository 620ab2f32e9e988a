import { ConfigError, InputError } from '../errors.ts';
import { checkRemoteUrl, prepareGitRemote } from './git-remote/index.ts';
import { hostCoordinates, providerOf, publicProvider, type ConfiguredProvider, type HostCoordinates, type ReviewProvider } from './providers.ts';
import type { GitRemoteConfig } from './git-remote/index.ts';
import { ReviewRequestRepo, type HostOpenOptions, type ReviewHost } from './review-request.ts';
import type { TransferEvent } from '../repo/types.ts';

/**
 * Opens a repository on a host with a review-request API: the git backend over repo.url (reads,
 * commits, the review branch) and the host's API client from its folder (src/deliver/<host>/),
 * loaded only for that host.
 */

/** What the registry passes on (its OpenRepoOptions, structurally: no import back into the registry). */
export interface ReviewOpenOptions {
  relativeTo: string;
  configFile?: string;
  fromFlag?: boolean;
  repo?: GitRemoteConfig & { apiUrl?: string; branch?: string; provider?: string };
  env?: Record<string, string | undefined>;
  onWarning?: (message: string) => void;
  onProgress?: (event: TransferEvent) => void;
  hostApi?: { maxRetries?: number; retryUnitMs?: number; commits?: 'git' | 'api' };
}

async function openHost(provider: ReviewProvider, opts: HostOpenOptions): Promise<ReviewHost> {
  switch (provider) {
    case 'gitlab':
      return (await import('./gitlab/index.ts')).openGitLab(opts);
    case 'gitea':
      return (await import('./gitea/index.ts')).openGitea(opts);
    case 'bitbucket':
      return (await import('./bitbucket/cloud.ts')).openBitbucketCloud(opts);
    case 'bitbucket-server':
      return (await import('./bitbucket/data-center.ts')).openBitbucketDataCenter(opts);
    case 'azure-devops':
      return (await import('./azure-devops/index.ts')).openAzureDevOps(opts);
  }
}

/**
 * The checks on a review host's repo.url that need neither the network nor the secrets (`lastgood
 * validate` runs them too): a repository URL of the provider, and the git backend's URL checks.
 */
export async function checkReviewUrl(location: string, opts: ReviewOpenOptions): Promise<{ url: URL; provider: ReviewProvider; coordinates: HostCoordinates }> {
  let url = new URL(location);
  // an Azure DevOps clone URL names the organization as a user (https://ORG@dev.azure.com/…): not a credential
  if (url.username && !url.password && publicProvider(url) === 'azure-devops') {
    url.username = '';
    url = new URL(url.href);
  }
  const provider = providerOf(url, opts.repo?.provider as ConfiguredProvider | undefined) as ReviewProvider;
  const coordinates = hostCoordinates(url, provider, opts.repo?.apiUrl);
  if (typeof coordinates === 'string') {
    const message = `"${url.origin}${url.pathname}" is not a repository URL of ${provider}: ${coordinates}`;
    if (opts.fromFlag) throw new InputError(`--repo ${message}`);
    const { configFieldLine } = await import('../config/load.ts');
    const line = opts.configFile ? await configFieldLine(opts.configFile, ['repo', 'url']) : undefined;
    throw new ConfigError(`repo.url ${message}`, { ...(opts.configFile ? { file: opts.configFile } : {}), ...(line ? { line } : {}) });
  }
  await checkRemoteUrl(url.href, opts);
  return { url, provider, coordinates };
}

export async function openReviewRepo(location: string, opts: ReviewOpenOptions): Promise<ReviewRequestRepo> {
  const { url, provider, coordinates } = await checkReviewUrl(location, opts);
  const { repo: git, credentials, warn } = await prepareGitRemote(url.href, {
    relativeTo: opts.relativeTo,
    ...(opts.configFile ? { configFile: opts.configFile } : {}),
    ...(opts.fromFlag ? { fromFlag: true } : {}),
    ...(opts.repo ? { repo: opts.repo } : {}),
    ...(opts.env ? { env: opts.env } : {}),
    ...(opts.onWarning ? { onWarning: opts.onWarning } : {}),
    // a long fetch shows its progress as with the plain git provider (issue 36: GitLab showed none)
    ...(opts.onProgress ? { onProgress: opts.onProgress } : {}),
  });
  const host = await openHost(provider, {
    coordinates, credentials, onWarning: warn,
    ...(opts.configFile ? { configFile: opts.configFile } : {}),
    ...(opts.hostApi?.maxRetries !== undefined ? { maxRetries: opts.hostApi.maxRetries } : {}),
    ...(opts.hostApi?.retryUnitMs !== undefined ? { retryUnitMs: opts.hostApi.retryUnitMs } : {}),
  });
  return new ReviewRequestRepo({ git, host, baseBranch: opts.repo?.branch ?? 'main', onWarning: warn, ...(opts.hostApi?.commits ? { commits: opts.hostApi.commits } : {}) });
}
