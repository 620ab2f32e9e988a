import type { Octokit } from '@octokit/rest';
import type { NotesStore, Observation, RecordResult, VerifiedRecord } from '../../history/notes.ts';
import { isLostAnswer, SEND_ONCE, type GitHubGraphQL } from './graphql.ts';
import { retry } from '../../retry.ts';

/**
 * Verified last-known-good records on GitHub, as Deployments: GitHub's own model of "which commit
 * runs where, and did it work", shown on the repository's Environments page, on commits and on
 * pull requests. (Git notes are not reachable through GitHub's API.)
 *
 * - one deployment per revision and environment (the environment is named after the target:
 *   `repo.github.environment`, default "{target}"), task "lastgood", however many runs observe it;
 * - observed healthy → a status `success`; the environment's other lastgood deployments that were
 *   active become `inactive` (superseded). Observed failed → `failure`. The same state twice is
 *   one status;
 * - `list` reads the newest deployments of the environment in one GraphQL query: a deployment that
 *   ever had a `success` status is a verified record (inactive ones too: they were seen healthy,
 *   then superseded).
 *
 * Needs `deployments: write` (read to list). Without it lastgood says so once, and goes on
 * unverified: a revert is never held up by its bookkeeping.
 */

export const DEPLOYMENT_TASK = 'lastgood';

export interface DeploymentsOptions {
  owner: string;
  repo: string;
  octokit: Octokit;
  gql: GitHubGraphQL;
  /** the environment name of a target: "{target}" is replaced (default "{target}") */
  environment?: string;
  /** said once when the token lacks the permission */
  onWarning?: (message: string) => void;
  /** the unit of the backoff after a lost answer (default 1000 ms; tests use a few ms) */
  retryUnitMs?: number;
}

interface GqlDeployment {
  databaseId: number | null;
  commitOid: string;
  createdAt: string;
  environment: string | null;
  task: string | null;
  payload: string | null;
  state: string | null;
  latestStatus: { state: string } | null;
  statuses: { nodes: Array<{ state: string; createdAt: string; description: string | null }> } | null;
}

/** The payload lastgood puts on its deployments: which target, seen how. */
interface Payload {
  lastgood?: { target?: string; evidence?: string };
}

const parsePayload = (raw: string | null): Payload => {
  try {
    const value = raw ? (JSON.parse(raw) as unknown) : {};
    return typeof value === 'object' && value !== null ? (value as Payload) : {};
  } catch {
    return {};
  }
};

const isPermissionFailure = (error: unknown) => {
  const e = error as { status?: number; message?: string };
  return e?.status === 403 || e?.status === 404 || /not accessible by integration|permission/i.test(e?.message ?? '');
};

export function environmentName(template: string | undefined, target: string): string {
  return (template ?? '{target}').replaceAll('{target}', target);
}

/**
 * A deployment write whose answer may be lost after GitHub applied it: sent once (SEND_ONCE), and
 * after a lost answer `landed` reads what it would have made (the deployment of this commit and
 * target; its latest status) before it is sent again. One deployment and one status per
 * observation, however the answers go.
 */
function settleOnce<T>(send: () => Promise<T>, landed: () => Promise<T | undefined>, attempts: number, unitMs: number): Promise<T> {
  return retry(send, {
    attempts,
    backoff: { baseMs: unitMs },
    onFailure: async (error, _attempt, last) => {
      if (!isLostAnswer(error) || last) throw error;
      const found = await landed();
      return found !== undefined ? { value: found } : undefined;
    },
  });
}

export function openDeploymentRecords(opts: DeploymentsOptions): NotesStore {
  const args = { owner: opts.owner, repo: opts.repo };
  const once = <T>(send: () => Promise<T>, landed: () => Promise<T | undefined>) => settleOnce(send, landed, 4, opts.retryUnitMs ?? 1000);
  let refused: string | undefined;
  const refuse = (what: string, error: unknown): RecordResult => {
    if (!refused) {
      refused = `the token cannot ${what} deployments on ${opts.owner}/${opts.repo} (it needs "deployments: write"): verified last-known-good revisions are not recorded there, and reverts say "unverified"`;
      opts.onWarning?.(refused);
    }
    void error;
    return { recorded: false, reason: refused };
  };
  const envOf = (target: string) => environmentName(opts.environment, target);

  /** The newest deployments (of some environments), newest first. */
  async function deployments(environments: string[] | undefined): Promise<GqlDeployment[]> {
    const doc = `query($owner: String!, $name: String!${environments ? ', $envs: [String!]' : ''}) { repository(owner: $owner, name: $name) { deployments(${environments ? 'environments: $envs, ' : ''}first: 100, orderBy: { field: CREATED_AT, direction: DESC }) { nodes { databaseId commitOid createdAt environment task payload state latestStatus { state } statuses(first: 20) { nodes { state createdAt description } } } } } }`;
    const data = await opts.gql.query<{ repository: { deployments: { nodes: GqlDeployment[] } | null } }>('reading deployments', 'deployments', doc, { owner: opts.owner, name: opts.repo, ...(environments ? { envs: environments } : {}) });
    return (data.repository.deployments?.nodes ?? []).filter((d) => d.task === DEPLOYMENT_TASK);
  }

  const cache = new Map<string, VerifiedRecord[]>();

  async function write(commit: string, rec: Observation, state: 'success' | 'failure'): Promise<RecordResult> {
    if (refused) return { recorded: false, reason: refused };
    const environment = envOf(rec.target);
    let existing: GqlDeployment[];
    try {
      existing = await deployments([environment]);
    } catch (error) {
      if (isPermissionFailure(error)) return refuse('read', error);
      throw error;
    }
    cache.clear();
    const mine = existing.find((d) => d.commitOid === commit && parsePayload(d.payload).lastgood?.target === rec.target);
    const latest = mine?.latestStatus?.state.toLowerCase();
    if (mine && latest === state) return { recorded: true, reason: `already recorded (deployment ${mine.databaseId} to ${environment})` };
    const description = rec.evidence.slice(0, 140);
    const fresh = async () => {
      cache.clear();
      return deployments([environment]);
    };
    try {
      let id = mine?.databaseId ?? undefined;
      if (id === undefined) {
        id = await once(async () => {
          const { data } = await opts.octokit.rest.repos.createDeployment({
            ...args, ref: commit, task: DEPLOYMENT_TASK, environment, description: `lastgood observed ${rec.target}`,
            // a record of what runs, not a request to deploy: no merge of the default branch, no status checks
            auto_merge: false, required_contexts: [], transient_environment: false,
            payload: { lastgood: { target: rec.target, at: rec.at, evidence: rec.evidence.slice(0, 1000) } },
            request: SEND_ONCE,
          });
          if (!('id' in data)) throw new Error(`GitHub did not create the deployment: ${(data as { message?: string }).message ?? 'no reason given'}`);
          return data.id;
        }, async () => (await fresh()).find((d) => d.commitOid === commit && parsePayload(d.payload).lastgood?.target === rec.target)?.databaseId ?? undefined);
      }
      const deploymentId = id;
      const statusOf = async (dep: number) => (await fresh()).find((d) => d.databaseId === dep)?.latestStatus?.state.toLowerCase();
      await once(async () => {
        await opts.octokit.rest.repos.createDeploymentStatus({ ...args, deployment_id: deploymentId, state, environment, description, auto_inactive: false, request: SEND_ONCE });
        return true;
      }, async () => ((await statusOf(deploymentId)) === state ? true : undefined));
      // superseded: the environment's other lastgood deployments that were active
      if (state === 'success') {
        for (const other of existing) {
          if (other.databaseId === null || other.databaseId === id || other.state !== 'ACTIVE') continue;
          const otherId = other.databaseId;
          await once(async () => {
            await opts.octokit.rest.repos.createDeploymentStatus({ ...args, deployment_id: otherId, state: 'inactive', environment, description: `superseded by ${commit.slice(0, 12)}`, request: SEND_ONCE });
            return true;
          }, async () => ((await statusOf(otherId)) === 'inactive' ? true : undefined));
        }
      }
      return { recorded: true, reason: `deployment ${id} to ${environment}: ${state}` };
    } catch (error) {
      if (isPermissionFailure(error)) return refuse('write', error);
      throw error;
    }
  }

  return {
    where: 'GitHub deployments',
    async list(target) {
      const key = target ?? '\0all';
      const cached = cache.get(key);
      if (cached) return cached;
      if (refused) return [];
      let found: GqlDeployment[];
      try {
        found = await deployments(target === undefined ? undefined : [envOf(target)]);
      } catch (error) {
        if (isPermissionFailure(error)) {
          refuse('read', error);
          return [];
        }
        throw error;
      }
      const out: VerifiedRecord[] = [];
      for (const d of found) {
        const payload = parsePayload(d.payload).lastgood;
        if (!payload?.target || (target !== undefined && payload.target !== target)) continue;
        // the newest success, whatever order GitHub lists statuses in
        const seen = (d.statuses?.nodes ?? []).filter((s) => s.state === 'SUCCESS').sort((a, b) => (a.createdAt < b.createdAt ? 1 : -1))[0];
        if (!seen) continue;
        out.push({ commit: d.commitOid, target: payload.target, at: seen.createdAt, evidence: payload.evidence ?? seen.description ?? '' });
      }
      out.sort((a, b) => (a.at === b.at ? a.commit.localeCompare(b.commit) : a.at < b.at ? 1 : -1));
      cache.set(key, out);
      return out;
    },
    record: (commit, rec) => write(commit, rec, 'success'),
    recordFailure: (commit, rec) => write(commit, rec, 'failure'),
  };
}
