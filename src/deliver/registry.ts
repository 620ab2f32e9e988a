import path from 'node:path';
import { ConfigError } from '../errors.ts';
import type { RepoBackend } from '../repo/types.ts';
import { LocalRepo } from './local.ts';
import { parseGitHubUrl } from './github-url.ts';

export interface OpenRepoOptions {
  /** the repo URL or path from config, or --repo */
  location: string;
  /** relative local paths are resolved against this folder (the config file's, or the cwd for --repo) */
  relativeTo: string;
  apiUrl?: string;
  token?: string;
}

/** A backend factory per kind of location, chosen by `matches` (the way renovate registers platforms). */
export interface BackendFactory {
  kind: string;
  matches(location: string, opts: OpenRepoOptions): boolean;
  open(location: string, opts: OpenRepoOptions): Promise<RepoBackend>;
}

const factories: BackendFactory[] = [];

export function registerBackend(factory: BackendFactory): void {
  factories.unshift(factory);
}

const isUrl = (s: string) => /^[a-z][a-z0-9+.-]*:\/\//i.test(s);

registerBackend({
  kind: 'local',
  matches: (location) => !isUrl(location) || location.startsWith('file://'),
  open: async (location, opts) => new LocalRepo(path.resolve(opts.relativeTo, location.replace(/^file:\/\//, ''))),
});

registerBackend({
  kind: 'github',
  matches: (location, opts) => parseGitHubUrl(location, opts.apiUrl) !== undefined,
  // loaded on demand: Octokit is only needed for GitHub repositories
  open: async (location, opts) => (await import('./github.ts')).gitHubBackendFactory.open(location, opts),
});

export async function openRepo(opts: OpenRepoOptions): Promise<RepoBackend> {
  const factory = factories.find((f) => f.matches(opts.location, opts));
  if (!factory) {
    throw new ConfigError(`repo.url "${opts.location.replace(/\/\/[^@/]*@/, '//')}" is not supported: use a local path (working copy or bare repository) or a GitHub https URL`);
  }
  return factory.open(opts.location, opts);
}
