import type { Change } from '../../repo/types.ts';
import { gitBlobOid, symlinkRefusal, type GitHubReads, type PathState } from './reads.ts';

/**
 * How a Change becomes a commit on GitHub. By default through the GraphQL `createCommitOnBranch`
 * mutation: GitHub creates and signs the commit (Verified, for GitHub App and user tokens alike)
 * and `expectedHeadOid` makes it a compare-and-swap on the branch. The mutation only adds regular
 * files (contents, no mode) and deletes paths, so a change that sets a mode other than 100644, a
 * symlink or a submodule, or that replaces such an entry, goes through the REST git-data API
 * instead, and the delivery says so (that commit is signed by GitHub only for an installation
 * token, a GitHub App or GITHUB_TOKEN, and only without a custom author: restWarning). A planned
 * deletion of a path the parent does not have is left out (GitHub rejects the whole commit for it).
 */

export interface CommitPlan {
  /** every file of the change is already as planned on the parent: nothing to write */
  noop: boolean;
  /** why createCommitOnBranch cannot write it (undefined: it can) */
  restBecause?: string;
  additions: Array<{ path: string; contents: string }>;
  deletions: Array<{ path: string }>;
  /** the paths the change really changes on the parent */
  changed: string[];
}

const REGULAR = '100644';
const KIND: Record<string, string> = { '100755': 'an executable file (100755)', '120000': 'a symlink (120000)', '160000': 'a submodule (160000)', '040000': 'a folder' };
const kind = (mode: string) => KIND[mode] ?? `mode ${mode}`;

/** Splits a commit message as createCommitOnBranch takes it; GitHub joins them with a blank line. */
export function splitMessage(message: string): { headline: string; body?: string } {
  const text = message.replace(/\r\n/g, '\n');
  const nl = text.indexOf('\n');
  if (nl < 0) return { headline: text };
  const body = text.slice(nl + 1).replace(/^\n+/, '').replace(/\n+$/, '');
  return body ? { headline: text.slice(0, nl), body } : { headline: text.slice(0, nl) };
}

export async function planCommit(change: Change, reads: GitHubReads): Promise<CommitPlan> {
  const reasons: string[] = [];
  const additions: CommitPlan['additions'] = [];
  const deletions: CommitPlan['deletions'] = [];
  const changed: string[] = [];
  for (const f of change.files) {
    const current = reads.cachedEntry(change.parent, f.path) ?? (await reads.pathState(change.parent, f.path));
    if (current.kind === 'symlink') throw symlinkRefusal(f.path, current.at);
    const here = current.kind === 'entry' ? current : undefined;
    if ('delete' in f) {
      // GitHub refuses the whole commit for a deletion of a path the parent does not have: send only real changes
      if (!here) continue;
      changed.push(f.path);
      deletions.push({ path: f.path });
      continue;
    }
    const bytes = 'content' in f ? f.content : await reads.readBlob(f.oid);
    const oid = 'oid' in f ? f.oid : gitBlobOid(bytes);
    if (!here || here.oid !== oid || here.mode !== f.mode) changed.push(f.path);
    if (f.mode !== REGULAR) reasons.push(`${f.path} is ${kind(f.mode)}`);
    else if (here && here.mode !== REGULAR) reasons.push(`${f.path} replaces ${kind(here.mode)}`);
    additions.push({ path: f.path, contents: Buffer.from(bytes).toString('base64') });
  }
  return { noop: changed.length === 0, changed, additions, deletions, ...(reasons.length ? { restBecause: `createCommitOnBranch cannot write file modes, symlinks or submodules: ${reasons.join('; ')}` } : {}) };
}

/**
 * What a REST-written commit is, for the report, truthfully: GitHub signs a commit made through the
 * API only when the request is authenticated as a GitHub App (an installation token, GITHUB_TOKEN)
 * and gives no custom author, committer or signature ("Signature verification for bots",
 * docs.github.com/en/authentication/managing-commit-signature-verification/about-commit-signature-verification).
 * lastgood gives none there, and says what GitHub answered (`signed`), or the rule before it knows.
 */
export function restWarning(because: string, signed?: boolean): string {
  const what = `written through the REST git-data API, not createCommitOnBranch (${because})`;
  if (signed === true) return `${what}; GitHub signed it (Verified)`;
  if (signed === false) return `${what}; it is unsigned: GitHub signs a commit made through its API only for a GitHub App installation token or GITHUB_TOKEN, not for a personal token, so a branch that requires signed commits refuses it`;
  return `${what}; GitHub signs such a commit only for a GitHub App installation token or GITHUB_TOKEN, not for a personal token`;
}

export type { PathState };
