import path from 'node:path';
import { ConfigError, InputError, redact } from '../errors.ts';
import type { Config } from '../config/schema.ts';
import type { RepoBackend } from '../repo/types.ts';
import type { TransferEvent } from '../repo/types.ts';
import { LocalRepo } from './local/index.ts';
import { parseGitHubUrl } from './github/url.ts';
import { gitRemoteMatches, parseHttpUrl } from './git-remote/match.ts';
import { isReviewProvider, providerOf } from './providers.ts';

export interface OpenRepoOptions {
  /** the repo URL or path from config, or --repo */
  location: string;
  /** relative local paths are resolved against this folder (the config file's, or the cwd for --repo) */
  relativeTo: string;
  apiUrl?: string;
  token?: string;
  /** the config file repo.url comes from: an unsupported one is reported with its file and line */
  configFile?: string;
  /** the location is the --repo flag, not repo.url */
  fromFlag?: boolean;
  /** the config's repo settings (the git backend reads auth, cacheDir, insecure, transport, signing; GitHub reads github.environment) */
  repo?: Partial<Config['repo']>;
  /** warnings that do not stop a run (credentials over plain http, a redirect to another host) */
  onWarning?: (message: string) => void;
  /** the bytes of a transfer as they arrive, for a door that shows progress (git over HTTPS) */
  onProgress?: (event: TransferEvent) => void;
  /** the environment repo.auth reads (default: process.env) */
  env?: Record<string, string | undefined>;
  /** a host API's retries (default 3) and the unit of its waits (default 1000 ms; tests use a few ms) */
  hostApi?: { maxRetries?: number; retryUnitMs?: number; commits?: 'git' | 'api' };
}

export interface ConfiguredRepoOptions extends Pick<OpenRepoOptions, 'onWarning' | 'onProgress' | 'hostApi'> {
  /** the door's environment: GITHUB_API_URL, repo.auth's variables, and the token where the door has none of its own */
  env: Record<string, string | undefined>;
  /** the door's own token (the Action's github-token input; none when it is empty), or the environment's */
  credentials: 'environment' | { token: string | undefined };
  /** `--repo`: this location instead of repo.url, relative to the working directory */
  repoFlag?: string;
}

/**
 * The repository a config names, opened as every door opens it (the CLI, the Action, the
 * controller through the CLI): repo.url relative to the config file's folder, or --repo relative
 * to the working directory; the API URL from repo.apiUrl, else GITHUB_API_URL (what Actions sets
 * on GitHub Enterprise Server); the token LASTGOOD_GITHUB_TOKEN, else GITHUB_TOKEN, unless the door
 * has its own.
 */
export function openConfiguredRepo(config: Config, configFile: string, opts: ConfiguredRepoOptions): Promise<RepoBackend> {
  return openRepo(configuredOptions(config, configFile, opts));
}

/**
 * `lastgood validate`: the refusals of repo.url that opening it would give first, without the
 * network, the disk or the secrets (an unsupported location, credentials in the URL, plain http
 * without repo.insecure), each with the file and line of repo.url.
 */
export async function checkConfiguredRepo(config: Config, configFile: string, env: Record<string, string | undefined>): Promise<void> {
  const opts = configuredOptions(config, configFile, { env, credentials: { token: undefined } });
  await (await factoryFor(opts)).check?.(opts.location, opts);
}

function configuredOptions(config: Config, configFile: string, opts: ConfiguredRepoOptions): OpenRepoOptions {
  const { env, credentials, repoFlag, ...rest } = opts;
  const token = credentials === 'environment' ? env.LASTGOOD_GITHUB_TOKEN ?? env.GITHUB_TOKEN : credentials.token;
  return {
    ...rest,
    location: repoFlag ?? config.repo.url,
    relativeTo: repoFlag ? process.cwd() : path.dirname(path.resolve(configFile)),
    ...(config.repo.apiUrl ?? env.GITHUB_API_URL ? { apiUrl: config.repo.apiUrl ?? env.GITHUB_API_URL } : {}),
    ...(token ? { token } : {}),
    repo: config.repo,
    env,
    ...(repoFlag ? { fromFlag: true } : { configFile }),
  };
}

/** A backend factory per kind of location, chosen by `matches` (the way renovate registers platforms). */
export interface BackendFactory {
  kind: string;
  matches(location: string, opts: OpenRepoOptions): boolean;
  open(location: string, opts: OpenRepoOptions): Promise<RepoBackend>;
  /** the refusals `open` gives that need neither the network, the disk nor the secrets (`lastgood validate`) */
  check?(location: string, opts: OpenRepoOptions): Promise<void>;
}

const factories: BackendFactory[] = [];

export function registerBackend(factory: BackendFactory): void {
  factories.unshift(factory);
}

const isUrl = (s: string) => /^[a-z][a-z0-9+.-]*:\/\//i.test(s);

registerBackend({
  kind: 'local',
  matches: (location) => !isUrl(location) || location.startsWith('file://'),
  open: async (location, opts) => new LocalRepo(path.resolve(opts.relativeTo, location.replace(/^file:\/\//, '')), { explainMissing: true }),
});

registerBackend({
  kind: 'github',
  matches: (location, opts) => parseGitHubUrl(location, opts.apiUrl) !== undefined,
  // loaded on demand: Octokit is only needed for GitHub repositories
  open: async (location, opts) => (await import('./github/index.ts')).gitHubBackendFactory.open(location, opts),
});

registerBackend({
  kind: 'git',
  // any git host over smart HTTP; checked before GitHub's, which it leaves github.com and GHES URLs to
  matches: (location, opts) => /^https?:\/\//i.test(location) && gitRemoteMatches(location, opts),
  open: async (location, opts) => (await import('./git-remote/index.ts')).openGitRemote(location, opts),
  check: async (location, opts) => void (await (await import('./git-remote/index.ts')).checkRemoteUrl(location, opts)),
});

registerBackend({
  kind: 'review',
  // GitLab, Gitea/Forgejo, Bitbucket (Cloud, Data Center), Azure DevOps: git for commits, the host's API for requests;
  // checked first: known from a public host's URL, or named by repo.provider
  matches: (location, opts) => {
    const url = parseHttpUrl(location);
    if (!url || opts.repo?.transport === 'git') return false;
    return isReviewProvider(providerOf(url, opts.repo?.provider));
  },
  open: async (location, opts) => (await import('./open-review.ts')).openReviewRepo(location, opts),
  check: async (location, opts) => void (await (await import('./open-review.ts')).checkReviewUrl(location, opts)),
});

/** The backend factory for the location; an unsupported one is refused with the file and line of repo.url. */
async function factoryFor(opts: OpenRepoOptions): Promise<BackendFactory> {
  const factory = factories.find((f) => f.matches(opts.location, opts));
  if (factory) return factory;
  const what = `"${redact(opts.location.replace(/\/\/[^@/]*@/, '//'))}" is not supported: use a local path (working copy or bare repository) or an https URL of a git repository${opts.apiUrl ? '' : ' (GitHub Enterprise Server: set repo.apiUrl)'}`;
  if (opts.fromFlag) throw new InputError(`--repo ${what}`);
  if (!opts.configFile) throw new ConfigError(`repo.url ${what}`);
  const { configFieldLine } = await import('../config/load.ts');
  const line = await configFieldLine(opts.configFile, ['repo', 'url']);
  throw new ConfigError(`repo.url ${what}`, { file: opts.configFile, ...(line ? { line } : {}) });
}

export async function openRepo(opts: OpenRepoOptions): Promise<RepoBackend> {
  const factory = await factoryFor(opts);
  const backend = await factory.open(opts.location, opts);
  // what the engine keeps between runs beside the repository (renders by digest: src/verify/render-cache.ts)
  if (opts.repo?.cacheDir && backend.cacheDir === undefined) Object.defineProperty(backend, 'cacheDir', { value: path.resolve(opts.relativeTo, opts.repo.cacheDir), enumerable: true });
  return backend;
}
