/**
 * Which host a repository URL is on, and where that host keeps the repository's API and web pages.
 * Public hosts are known from their URL; a self-hosted one is named by `repo.provider` (a name in a
 * host name — "gitlab.example.com" — is a hint for links, never a reason to call an API).
 * Pure functions of the URL and the config: the registry decides with them before loading a client.
 */

export type ReviewProvider = 'gitlab' | 'gitea' | 'bitbucket' | 'bitbucket-server' | 'azure-devops';
export type Provider = 'github' | ReviewProvider | 'git';
export type ConfiguredProvider = Provider | 'forgejo';

export const REVIEW_PROVIDERS: readonly ReviewProvider[] = ['gitlab', 'gitea', 'bitbucket', 'bitbucket-server', 'azure-devops'];

/** The provider of a public host, from its name alone; undefined for any other host. */
export function publicProvider(url: URL): Provider | undefined {
  const host = url.hostname.toLowerCase();
  if (host === 'github.com') return 'github';
  if (host === 'gitlab.com') return 'gitlab';
  if (host === 'codeberg.org') return 'gitea';
  if (host === 'bitbucket.org') return 'bitbucket';
  if (host === 'dev.azure.com' || host.endsWith('.visualstudio.com')) return 'azure-devops';
  return undefined;
}

/** repo.provider (forgejo speaks Gitea's API v1) or, for a public host, its URL. */
export function providerOf(url: URL, configured?: ConfiguredProvider): Provider | undefined {
  if (configured === 'forgejo') return 'gitea';
  return configured ?? publicProvider(url);
}

export const isReviewProvider = (p: Provider | undefined): p is ReviewProvider => p !== undefined && (REVIEW_PROVIDERS as readonly string[]).includes(p);

/** Where a repository lives on its host: the API base, the repository's web page, and the names the API takes. */
export interface HostCoordinates {
  provider: ReviewProvider;
  /** the API base URL (GitLab .../api/v4, Gitea .../api/v1, Bitbucket Cloud .../2.0 or Data Center .../rest, Azure DevOps the organization/collection) */
  api: string;
  /** the repository's web page, without a trailing "/" */
  web: string;
  /** GitLab: the project's full path; Gitea and Bitbucket Cloud: owner/workspace; Bitbucket DC: the project key; Azure DevOps: the project */
  owner: string;
  /** the repository's name (GitLab: the last path segment) */
  repo: string;
}

const trimGit = (p: string) => p.replace(/\.git\/?$/, '').replace(/\/+$/, '');

/**
 * The coordinates of `url` on `provider`, or a sentence saying what shape the URL should have.
 * `apiUrl` (repo.apiUrl) overrides the API base where the host puts it elsewhere.
 */
export function hostCoordinates(url: URL, provider: ReviewProvider, apiUrl?: string): HostCoordinates | string {
  const origin = `${url.protocol}//${url.host}`;
  const segments = trimGit(url.pathname).split('/').filter(Boolean).map(decodeURIComponent);
  const api = (fallback: string) => (apiUrl ?? fallback).replace(/\/+$/, '');
  switch (provider) {
    case 'gitlab': {
      // https://gitlab.com/group/subgroup/project(.git): the project is the whole path, below a
      // relative URL root when repo.apiUrl names one (https://HOST/gitlab/api/v4)
      const root = apiUrl && new URL(apiUrl).origin === url.origin ? new URL(apiUrl).pathname.replace(/\/api\/v4\/?$/, '').split('/').filter(Boolean) : [];
      const project = root.every((r, i) => segments[i] === r) ? segments.slice(root.length) : segments;
      if (project.length < 2) return 'a GitLab project URL is https://HOST/GROUP/PROJECT(.git)';
      const base = `${origin}${root.length ? `/${root.join('/')}` : ''}`;
      return { provider, api: api(`${origin}/api/v4`), web: `${base}/${project.join('/')}`, owner: project.slice(0, -1).join('/'), repo: project.at(-1)! };
    }
    case 'gitea': {
      if (segments.length < 2) return 'a Gitea/Forgejo repository URL is https://HOST/OWNER/REPO(.git)';
      const [owner, repo] = segments.slice(-2) as [string, string];
      const root = segments.slice(0, -2).map(encodeURIComponent).join('/');
      return { provider, api: api(`${origin}${root ? `/${root}` : ''}/api/v1`), web: `${origin}${root ? `/${root}` : ''}/${owner}/${repo}`, owner, repo };
    }
    case 'bitbucket': {
      if (segments.length !== 2) return 'a Bitbucket Cloud repository URL is https://bitbucket.org/WORKSPACE/REPO(.git)';
      const [owner, repo] = segments as [string, string];
      return { provider, api: api('https://api.bitbucket.org/2.0'), web: `${origin}/${owner}/${repo}`, owner, repo };
    }
    case 'bitbucket-server': {
      // clone URL https://HOST[/CONTEXT]/scm/PROJECT/REPO.git
      const scm = segments.lastIndexOf('scm');
      if (scm < 0 || segments.length !== scm + 3) return 'a Bitbucket Data Center clone URL is https://HOST[/CONTEXT]/scm/PROJECT/REPO.git';
      const context = segments.slice(0, scm).map(encodeURIComponent).join('/');
      const base = `${origin}${context ? `/${context}` : ''}`;
      const [owner, repo] = segments.slice(scm + 1) as [string, string];
      return { provider, api: api(`${base}/rest`), web: `${base}/projects/${encodeURIComponent(owner)}/repos/${encodeURIComponent(repo)}`, owner, repo };
    }
    case 'azure-devops': {
      // https://dev.azure.com/ORG/PROJECT/_git/REPO, https://ORG.visualstudio.com/PROJECT/_git/REPO, https://HOST/COLLECTION/PROJECT/_git/REPO
      const at = segments.indexOf('_git');
      if (at < 1 || segments.length !== at + 2) return 'an Azure DevOps repository URL is https://dev.azure.com/ORG/PROJECT/_git/REPO';
      const collection = segments.slice(0, at - 1).map(encodeURIComponent).join('/');
      const base = `${origin}${collection ? `/${collection}` : ''}`;
      const owner = segments[at - 1]!;
      const repo = segments[at + 1]!;
      return { provider, api: api(base), web: `${base}/${encodeURIComponent(owner)}/_git/${encodeURIComponent(repo)}`, owner, repo };
    }
  }
}
