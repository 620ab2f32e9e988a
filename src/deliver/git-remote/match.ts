import { parseGitHubUrl } from '../github/url.ts';
import type { GitRemoteConfig } from './config.ts';

/** Which locations the git backend takes; kept apart so that the registry loads no git code to decide. */

export function parseHttpUrl(location: string): URL | undefined {
  try {
    const u = new URL(location);
    return u.protocol === 'https:' || u.protocol === 'http:' ? u : undefined;
  } catch {
    return undefined;
  }
}

/** Whether the GitHub API backend is meant: github.com, or the host of the GitHub API URL (GHES). */
function isGitHubApi(url: URL, location: string, apiUrl: string | undefined): boolean {
  if (!parseGitHubUrl(location, apiUrl)) return false;
  if (url.hostname === 'github.com') return true;
  const api = apiUrl ? parseHttpUrl(apiUrl) : undefined;
  return api !== undefined && api.hostname === url.hostname;
}

/**
 * The git backend takes every http(s) URL except a GitHub one, which keeps the API backend unless
 * repo.transport is "git". A URL with credentials in it is taken too, to be refused plainly.
 */
export function gitRemoteMatches(location: string, opts: { apiUrl?: string; repo?: GitRemoteConfig }): boolean {
  const url = parseHttpUrl(location);
  if (!url) return false;
  if (url.username || url.password) return true;
  if (opts.repo?.transport === 'git' || opts.repo?.provider === 'git') return true;
  if (opts.repo?.provider === 'github') return false;
  if (opts.repo?.transport === 'api') return false;
  return !isGitHubApi(url, location, opts.apiUrl);
}

