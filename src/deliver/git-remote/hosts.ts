/**
 * What lastgood knows of git hosts without their APIs: which kind a URL names, and the web page
 * where a person opens a merge request from a pushed branch. Opening the request itself needs each
 * host's API (a later issue); until then pull-request mode pushes the branch and prints this link.
 */

export type HostKind = 'gitlab' | 'gitea' | 'bitbucket' | 'github' | 'unknown';

export function hostKind(url: URL): HostKind {
  const host = url.hostname.toLowerCase();
  if (host === 'github.com' || host.endsWith('.github.com')) return 'github';
  if (host === 'gitlab.com' || /(^|[.-])gitlab([.-]|$)/.test(host)) return 'gitlab';
  if (host === 'bitbucket.org') return 'bitbucket';
  if (host === 'codeberg.org' || /(^|[.-])(gitea|forgejo)([.-]|$)/.test(host)) return 'gitea';
  return 'unknown';
}

/** The host's "new merge request" page for `branch` into `base`; undefined for a host lastgood does not know. */
export function newPullRequestUrl(repoUrl: string, branch: string, base: string): string | undefined {
  const url = new URL(repoUrl);
  const project = url.pathname.replace(/\.git\/?$/, '').replace(/\/+$/, '');
  const web = `${url.protocol}//${url.host}${project}`;
  const b = encodeURIComponent(branch);
  const t = encodeURIComponent(base);
  switch (hostKind(url)) {
    case 'gitlab':
      return `${web}/-/merge_requests/new?merge_request%5Bsource_branch%5D=${b}&merge_request%5Btarget_branch%5D=${t}`;
    case 'gitea':
      return `${web}/compare/${encodeURIComponent(base)}...${branch.split('/').map(encodeURIComponent).join('/')}`;
    case 'bitbucket':
      return `${web}/pull-requests/new?source=${b}&dest=${t}`;
    case 'github':
      return `${web}/compare/${encodeURIComponent(base)}...${branch.split('/').map(encodeURIComponent).join('/')}?expand=1`;
    default:
      return undefined;
  }
}

/** The web page of a commit on a host lastgood knows; undefined for another host (a wrong link is worse than none). */
export function commitPageUrl(repoUrl: string, sha: string): string | undefined {
  const url = new URL(repoUrl);
  const web = `${url.protocol}//${url.host}${url.pathname.replace(/\.git\/?$/, '').replace(/\/+$/, '')}`;
  switch (hostKind(url)) {
    case 'gitlab':
      return `${web}/-/commit/${sha}`;
    case 'bitbucket':
      return `${web}/commits/${sha}`;
    case 'gitea':
    case 'github':
      return `${web}/commit/${sha}`;
    default:
      return undefined;
  }
}
