/**
 * Pure readings of a target's evidence for decide's guards: is another promotion or sync in flight
 * (settle), does an object carry the hold annotation. No I/O.
 */
import { parseRevision } from '../health/revision.ts';
import type { Revision } from '../health/types.ts';
import type { Evidence } from './types.ts';
import { describe } from './verdict.ts';

const KARGO_PROMOTION = 'kargo.akuity.io/Promotion';
const KARGO_STAGE = 'kargo.akuity.io/Stage';
const ARGOCD_APPLICATION = 'argoproj.io/Application';
const FLUX_KINDS = new Set(['kustomize.toolkit.fluxcd.io/Kustomization', 'helm.toolkit.fluxcd.io/HelmRelease']);

/** Reasons an Argo CD Application assessor may give while a sync operation runs. */
const ARGOCD_RUNNING = /^(Running|Syncing|SyncRunning|SyncTerminating|OperationRunning|OperationRequested|Terminating)$/;

/** One object applying a promotion or sync right now, and how to name it for people. */
export interface InFlight {
  evidence: Evidence;
  /** e.g. "Promotion kargo-demo/prod.x Running" */
  description: string;
}

/**
 * The objects of a target that are applying another promotion or sync while the target is failed.
 * Failed objects never count (their own retry is not "another promotion"), nor the objects that
 * are the failure of a stuck target (`isTheFailure`: progressing longer than stuckAfter).
 *
 * - any object whose assessor set `inFlight`;
 * - a Kargo Promotion that is progressing (Pending or Running: Kargo's own "settled" rule), a Stage
 *   with an active promotion;
 * - an Argo CD Application whose sync operation is running;
 * - a Flux Kustomization/HelmRelease reconciling a revision that is NEWER than the failed one:
 *   a different revision from every failing object's attempted revision, and not the revision it
 *   already applied (a periodic re-reconcile of the applied revision is routine, not a promotion).
 */
export function inFlightOf(evidence: Evidence[], opts: { isTheFailure?: (e: Evidence) => boolean } = {}): InFlight[] {
  const failing = evidence.filter((e) => e.state === 'failed' || opts.isTheFailure?.(e));
  const failedShas = new Set(failing.map((e) => e.attempted?.sha).filter((s): s is string => Boolean(s)));
  const out: InFlight[] = [];
  for (const e of evidence) {
    if (failing.includes(e)) continue;
    if (e.inFlight || isKargoInFlight(e) || isArgoSyncRunning(e)) {
      out.push({ evidence: e, description: `${describe(e)} ${e.reason}` });
      continue;
    }
    if (FLUX_KINDS.has(e.groupKind) && e.state === 'progressing') {
      const revision = reconcilingRevision(e);
      if (!revision?.sha) {
        // a reconcile whose revision nobody tells: it may be a new one, so hold (the reconcile ends within its timeout)
        if (e.reason !== 'Suspended') out.push({ evidence: e, description: `${describe(e)} ${e.reason}` });
        continue;
      }
      if (matchesAny(revision.sha, failedShas)) continue;
      if (e.lastSucceeded?.sha && sameSha(e.lastSucceeded.sha, revision.sha)) continue;
      out.push({ evidence: e, description: `${describe(e)} ${e.reason} at ${revision.sha.slice(0, 12)}` });
    }
  }
  return out;
}

function isKargoInFlight(e: Evidence): boolean {
  if (e.groupKind === KARGO_PROMOTION) return e.state === 'progressing';
  if (e.groupKind === KARGO_STAGE) return e.state === 'progressing' && /Promoting|ActivePromotion/.test(e.reason);
  return false;
}

function isArgoSyncRunning(e: Evidence): boolean {
  if (e.groupKind !== ARGOCD_APPLICATION || e.state !== 'progressing') return false;
  return ARGOCD_RUNNING.test(e.reason) || /\b(sync|operation)\b[^.]*\b(running|in progress)\b/i.test(e.message);
}

/** The revision a Flux object is reconciling: named in its Reconciling/Ready message ("… revision main@sha1:…"), else its last attempted one. */
function reconcilingRevision(e: Evidence): Revision | undefined {
  const named = /\brevision:?\s+(\S+?)[\s,;)]*(?:\s|$)/.exec(e.message);
  if (named) {
    const r = parseRevision(named[1]!.replace(/[.,;:]+$/, ''));
    if (r.sha) return r;
  }
  return e.attempted;
}

function sameSha(a: string, b: string): boolean {
  const n = Math.min(a.length, b.length);
  return n >= 7 && a.slice(0, n).toLowerCase() === b.slice(0, n).toLowerCase();
}

function matchesAny(sha: string, shas: Set<string>): boolean {
  for (const s of shas) if (sameSha(s, sha)) return true;
  return false;
}

/** The `lastgood.dev/hold` annotations on the target's objects, as "Kind ns/name: reason". */
export function holdsOf(evidence: Evidence[]): string[] {
  return evidence.filter((e) => e.hold !== undefined).map((e) => `${describe(e)}: ${e.hold}`);
}

/**
 * The git revision the failure is tied to, chosen as locate() chooses it: the first failing (or
 * progressing) object that reports one, else any object of the target that does (e.g. the Flux
 * Kustomization next to a Flagger Canary).
 */
export function failingRevision(evidence: Evidence[]): string | undefined {
  const failing = evidence.filter((e) => e.state === 'failed' || e.state === 'progressing');
  return [...failing, ...evidence].find((e) => e.attempted?.sha)?.attempted?.sha;
}

/**
 * The words that say a target failed at lastgood's own revert: decide's revert-of-revert guard and
 * locate's refusal both say them. A notification calls that `revert-failed`, and the controller
 * counts it as a rollback that did not recover (lastgood_rollbacks_not_recovered_total).
 */
export const REVERT_ITSELF_FAILED = 'the revert itself failed';

/** The outcome's reason says the target failed at lastgood's own revert. */
export function revertItselfFailed(reason: string): boolean {
  return reason.includes(`${REVERT_ITSELF_FAILED}: `);
}
