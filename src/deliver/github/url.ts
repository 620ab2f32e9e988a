/** Kept apart from github.ts so that recognising a GitHub URL does not load Octokit. */

/** `https://github.com/owner/repo(.git)` or a GHES URL → owner, repo and the API root. */
export function parseGitHubUrl(url: string, apiUrl?: string): { owner: string; repo: string; baseUrl: string } | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') return undefined;
  const m = /^\/([^/]+)\/([^/]+?)(?:\.git)?\/?$/.exec(parsed.pathname);
  if (!m) return undefined;
  const isDotCom = parsed.hostname === 'github.com';
  if (!isDotCom && !apiUrl) return undefined;
  return { owner: m[1]!, repo: m[2]!, baseUrl: apiUrl ?? 'https://api.github.com' };
}

