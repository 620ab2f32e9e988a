import type { HostUnderTest } from './forge-scenario.ts';
import { startGiteaEmulator } from './gitea-emulator.ts';
import { startGitLabEmulator } from './gitlab-emulator.ts';

/** The hosts the review-request suite runs against, each with its emulator and URL shapes. */
export const HOSTS: HostUnderTest[] = [
  {
    provider: 'gitlab',
    repoPath: 'acme/gitops.git',
    cloneUrl: (base) => `${base}/acme/gitops.git`,
    start: startGitLabEmulator,
    labels: true,
    assignees: true,
    reviewer: 'alice',
    assignee: 'bob',
    createPath: /\/merge_requests$/,
    refusal: 'GitLab: You are not allowed to push code to protected branches on this project.',
    requestPage: (n) => `/acme/gitops/-/merge_requests/${n}`,
    commitPage: (sha) => `/acme/gitops/-/commit/${sha}`,
  },
  {
    provider: 'gitea',
    repoPath: 'acme/gitops.git',
    cloneUrl: (base) => `${base}/acme/gitops.git`,
    start: startGiteaEmulator,
    labels: true,
    assignees: true,
    reviewer: 'alice',
    assignee: 'bob',
    createPath: /\/pulls$/,
    refusal: 'Gitea: branch main is protected from force push and direct writes',
    requestPage: (n) => `/acme/gitops/pulls/${n}`,
    commitPage: (sha) => `/acme/gitops/commit/${sha}`,
  },
];
