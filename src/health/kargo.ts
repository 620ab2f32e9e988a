/**
 * Kargo `Promotion` and `Stage` (kargo.akuity.io/v1alpha1). Source: api/v1alpha1/promotion_types.go,
 * stage_types.go, pkg/promotion (research/failure-signals.md §3).
 *
 * - Promotion `Failed` is a business failure (a step judged the freight bad: class `analysis`);
 *   `Errored` is technical (step errors past their threshold, timeouts; an Argo CD sync failure
 *   in `argocd-update` also lands here: class `promotion`). Both are terminal. `Aborted` is a
 *   person's decision and says nothing about the revision (`unknown`).
 * - The GitOps commit Kargo wrote is in `status.state.<step alias>.commit`, taken only from a
 *   step that published it (push, merge or wait-for-PR) and succeeded: a local `git-commit`
 *   whose push failed is not in the repository.
 * - A Stage's `freightHistory[0]` is only advanced by successful promotions: the last-known-good.
 * - Kargo's own rollbacks (Kargo EE auto-rollback, v1.11): a rollback Promotion carries the
 *   annotation `kargo.akuity.io/rollback: "true"` (akuity/kargo api/v1alpha1/annotations.go
 *   `AnnotationKeyRollback`; pkg/promotion/promotion.go turns it into `ctx.meta.promotion.rollback`).
 *   Its Health carries `revertHazard: engine-rollback`: a git revert would duel with it, and Kargo
 *   does not roll back a failed rollback, so neither should lastgood.
 */
import type { KubeObject } from '../observe/types.ts';
import { registerAssessor } from './registry.ts';
import { parseRevision } from './revision.ts';
import { arr, conditions, conditionSince, findCondition, health, isoTime, isTerminating, isTrue, metadataOf, num, rec, str, terminating } from './status.ts';
import type { Health, Revision } from './types.ts';

type Rec = Record<string, unknown>;

/** Step kinds whose output `commit` is in the remote repository. */
const PUBLISHING_STEPS = new Set(['git-push', 'git-merge-pr', 'git-wait-for-pr', 'github-push']);

interface Step {
  alias: string;
  uses?: string;
  status?: string;
  startedAt?: string;
  finishedAt?: string;
  message?: string;
}

/** akuity/kargo api/v1alpha1/annotations.go: `AnnotationKeyRollback` with `AnnotationValueTrue`. */
const ROLLBACK_ANNOTATION = 'kargo.akuity.io/rollback';

export function assessPromotion(object: KubeObject): Health {
  const attempted = promotionRevision(object);
  const rollback = str(rec(metadataOf(object).annotations)[ROLLBACK_ANNOTATION]) === 'true';
  return health({
    ...promotionHealth(object),
    ...(attempted ? { attempted } : {}),
    ...(rollback
      ? {
          revertHazard: {
            kind: 'engine-rollback' as const,
            message: `this Promotion is Kargo's own rollback (annotation ${ROLLBACK_ANNOTATION}: "true", Kargo EE auto-rollback): a git revert would duel with it, and Kargo does not roll back a failed rollback`,
          },
        }
      : {}),
  });
}

function promotionHealth(object: KubeObject): Health {
  if (isTerminating(object)) return terminating(object);
  const status = rec(object.status);
  const phase = str(status.phase) ?? 'Pending';
  const message = str(status.message) ?? '';
  const finishedAt = isoTime(status.finishedAt);
  const steps = promotionSteps(object);
  const current = num(status.currentStep);
  const step = current !== undefined ? steps[current] : undefined;
  switch (phase) {
    case 'Pending':
      return health({ state: 'progressing', reason: 'Pending', message: message || 'queued behind other promotions of the stage', since: isoTime(rec(object.metadata).creationTimestamp) });
    case 'Running': {
      const what = step ? `running step ${step.alias}${step.uses ? ` (${step.uses})` : ''}` : 'running';
      return health({ state: 'progressing', reason: 'Running', message: message ? `${what}: ${message}` : what, since: step?.startedAt ?? isoTime(status.startedAt) });
    }
    case 'Succeeded':
      return health({ state: 'healthy', reason: 'Succeeded', message: message || 'promotion succeeded', since: finishedAt });
    case 'Failed':
    case 'Errored': {
      const failedStep = steps.find((s) => s.status === phase) ?? step;
      return health({
        state: 'failed',
        reason: phase,
        message: (failedStep ? `step ${failedStep.alias}${failedStep.uses ? ` (${failedStep.uses})` : ''}: ` : '') + (message || failedStep?.message || `promotion ${phase.toLowerCase()}`),
        since: finishedAt ?? failedStep?.finishedAt,
        failureClass: phase === 'Failed' ? 'analysis' : 'promotion',
        terminal: true,
      });
    }
    case 'Aborted':
      return health({ state: 'unknown', reason: 'Aborted', message: message || 'promotion aborted', since: finishedAt });
    default:
      return health({ state: 'unknown', reason: 'UnknownPhase', message: `unknown promotion phase ${JSON.stringify(phase)}` });
  }
}

/** Steps with their alias (`as`, default `step-<n>` 1-based), kind (`uses`) and execution status. */
function promotionSteps(object: KubeObject): Step[] {
  const specSteps = arr(rec(object.spec).steps).map(rec);
  const metadata = arr(rec(object.status).stepExecutionMetadata).map(rec);
  const count = Math.max(specSteps.length, metadata.length);
  const steps: Step[] = [];
  for (let i = 0; i < count; i++) {
    const spec = specSteps[i] ?? {};
    const meta = metadata[i] ?? {};
    const step: Step = { alias: str(meta.alias) ?? str(spec.as) ?? `step-${i + 1}` };
    const uses = str(spec.uses);
    if (uses) step.uses = uses;
    const s = str(meta.status);
    if (s) step.status = s;
    const startedAt = isoTime(meta.startedAt);
    if (startedAt) step.startedAt = startedAt;
    const finishedAt = isoTime(meta.finishedAt);
    if (finishedAt) step.finishedAt = finishedAt;
    const message = str(meta.message);
    if (message) step.message = message;
    steps.push(step);
  }
  return steps;
}

/** The published commit (newest publishing step that succeeded) and the freight's images. */
function promotionRevision(object: KubeObject): Revision | undefined {
  const status = rec(object.status);
  const state = rec(status.state);
  const steps = promotionSteps(object);
  let revision: Revision | undefined;
  for (let i = steps.length - 1; i >= 0 && !revision; i--) {
    const step = steps[i]!;
    if (step.status !== 'Succeeded') continue;
    const output = rec(state[step.alias]);
    const commit = str(output.commit);
    // Without the spec, a step output with a branch is push output.
    const publishes = step.uses ? PUBLISHING_STEPS.has(step.uses) : str(output.branch) !== undefined;
    if (commit && publishes) revision = commitRevision(commit, str(output.branch));
  }
  const images = freightImages(rec(status.freight));
  if (images.length > 0) revision = { ...(revision ?? {}), images };
  return revision;
}

function commitRevision(commit: string, branch: string | undefined): Revision {
  const revision = parseRevision(commit);
  if (branch) revision.ref = branch;
  return revision;
}

/** Freight images as "repo:tag" or "repo@digest" (digest preferred: it is what was deployed). */
function freightImages(freight: Rec): string[] {
  const images: string[] = [];
  const add = (list: unknown): void => {
    for (const image of arr(list).map(rec)) {
      const repo = str(image.repoURL);
      if (!repo) continue;
      const tag = str(image.tag);
      const name = tag ? `${repo}:${tag}` : str(image.digest) ? `${repo}@${str(image.digest)}` : undefined;
      if (name && !images.includes(name)) images.push(name);
    }
  };
  add(freight.images);
  for (const item of Object.values(rec(freight.items))) add(rec(item).images);
  return images;
}

export function assessStage(object: KubeObject): Health {
  const status = rec(object.status);
  const assessed = stageHealth(object);
  const lastSucceeded = freightRevision(rec(arr(status.freightHistory)[0]));
  const lastPromotion = rec(status.currentPromotion ?? status.lastPromotion);
  const attemptedImages = freightImages(rec(lastPromotion.freight));
  const attempted: Revision | undefined = attemptedImages.length > 0 ? { raw: str(rec(lastPromotion.freight).name), images: attemptedImages } : undefined;
  if (attempted && attempted.raw === undefined) delete attempted.raw;
  const rollback = stageRollbackInFlight(status);
  return health({ ...assessed, ...(attempted ? { attempted } : {}), ...(lastSucceeded ? { lastSucceeded } : {}), ...(rollback ? { revertHazard: rollback } : {}) });
}

/**
 * A Stage names no rollback flag: `status.currentPromotion` is a PromotionReference (name, freight,
 * status, finishedAt), without the Promotion's annotations (akuity/kargo api/v1alpha1/stage_types.go).
 * Kargo EE records each origin's last verified Freight in `status.metadata.stableFreight`
 * ("Warehouse/<name>": <freight name>) and rolls back by promoting it (docs
 * 50-user-guide/20-how-to-guides/20-working-with-projects.md "Auto-Rollback"): a running promotion
 * of that Freight is read as a rollback in flight. A person promoting the stable Freight by hand is
 * a rollback as well, and a revert must not race it either.
 */
function stageRollbackInFlight(status: Rec): Health['revertHazard'] {
  const current = rec(status.currentPromotion);
  const freight = str(rec(current.freight).name);
  if (!freight) return undefined;
  const stable = Object.entries(rec(rec(status.metadata).stableFreight)).find(([, name]) => str(name) === freight);
  if (!stable) return undefined;
  return {
    kind: 'engine-rollback',
    message: `Kargo is promoting ${stable[0]}'s stable Freight ${freight} (status.metadata.stableFreight) in Promotion ${str(current.name) ?? '?'}: a rollback is in flight, and a git revert would race it`,
  };
}

function freightRevision(collection: Rec): Revision | undefined {
  if (Object.keys(collection).length === 0) return undefined;
  const images = freightImages(collection);
  const id = str(collection.id);
  const revision: Revision = {};
  if (id) revision.raw = id;
  if (images.length > 0) revision.images = images;
  return Object.keys(revision).length > 0 ? revision : undefined;
}

/** Ready=False/Verified=False reasons and what they mean. */
const STAGE_FAILURES: Record<string, { state: Health['state']; failureClass?: 'analysis' | 'promotion'; terminal?: boolean }> = {
  LastPromotionFailed: { state: 'failed', failureClass: 'analysis', terminal: true },
  LastPromotionErrored: { state: 'failed', failureClass: 'promotion', terminal: true },
  LastPromotionAborted: { state: 'unknown' },
  VerificationFailed: { state: 'failed', failureClass: 'analysis', terminal: true },
  VerificationError: { state: 'failed', failureClass: 'promotion', terminal: true },
  VerificationInconclusive: { state: 'suspended' },
  VerificationAborted: { state: 'unknown' },
  Unhealthy: { state: 'failed', failureClass: 'analysis' },
};

function stageHealth(object: KubeObject): Health {
  if (isTerminating(object)) return terminating(object);
  const list = conditions(object);
  const stalled = list.find((c) => c.type === 'Stalled' && isTrue(c));
  if (stalled) return health({ state: 'failed', reason: stalled.reason || 'Stalled', message: stalled.message, since: conditionSince(stalled), terminal: true });
  const promoting = list.find((c) => c.type === 'Promoting' && isTrue(c));
  if (promoting) return health({ state: 'progressing', reason: promoting.reason || 'Promoting', message: promoting.message || 'a promotion is running', since: conditionSince(promoting) });
  const ready = findCondition(list, 'Ready');
  if (isTrue(ready)) return health({ state: 'healthy', reason: ready!.reason || 'Ready', message: ready!.message, since: conditionSince(ready) });
  // The most specific explanation wins: the last promotion, then verification, then health.
  for (const c of [ready, findCondition(list, 'Verified'), findCondition(list, 'Healthy')]) {
    if (!c || c.status === 'True') continue;
    const known = STAGE_FAILURES[c.reason];
    if (known) return health({ state: known.state, reason: c.reason, message: c.message, since: conditionSince(c), failureClass: known.failureClass, terminal: known.terminal });
  }
  if (ready) return health({ state: 'progressing', reason: ready.reason || 'NotReady', message: ready.message, since: conditionSince(ready) });
  const reconciling = list.find((c) => c.type === 'Reconciling' && isTrue(c));
  if (reconciling) return health({ state: 'progressing', reason: reconciling.reason || 'Reconciling', message: reconciling.message, since: conditionSince(reconciling) });
  // Before conditions (Kargo < 1.0): status.health.status.
  const legacy = str(rec(rec(object.status).health).status);
  if (legacy === 'Healthy') return health({ state: 'healthy', reason: 'Healthy', message: 'stage health Healthy' });
  if (legacy === 'Unhealthy') return health({ state: 'failed', reason: 'Unhealthy', message: arr(rec(rec(object.status).health).issues).map(str).filter(Boolean).join('; ') || 'stage is unhealthy' });
  if (legacy === 'Progressing') return health({ state: 'progressing', reason: 'Progressing', message: 'stage health Progressing' });
  return health({ state: 'unknown', reason: 'NoConditions', message: 'stage reports no conditions' });
}

registerAssessor('kargo.akuity.io/Promotion', assessPromotion);
registerAssessor('kargo.akuity.io/Stage', assessStage);
