/**
 * What happens after a revert's pull request is merged, and about how long it takes (issue 37),
 * from the target's objects as lastgood read them: when the GitOps engine takes the merge, and
 * whether a progressive delivery controller runs its steps and analysis again on the way back.
 * Pure; never throws: a field that cannot be read makes its line say so.
 *
 * The rules, each from its upstream:
 * - Flux Kustomization: `.spec.interval` is how often it reconciles anyway; "If the
 *   .metadata.generation of a resource changes … or the Source revision changes (which generates a
 *   Kubernetes event), this is handled instantly outside the interval window"
 *   (fluxcd/kustomize-controller docs/spec/v1/kustomizations.md "Interval", at 186fb3b29138;
 *   internal/controller/kustomization_manager.go:167 watches the GitRepository's revision). So the
 *   merge waits for the source's `.spec.interval` (the GitRepository's poll), or a webhook
 *   Receiver, which lastgood does not read.
 * - Flux HelmRelease: the same for its own spec (fluxcd/helm-controller docs/spec/v2/helmreleases.md
 *   "Interval", at 0f61a8607a62); the upgrade waits up to `.spec.timeout` (default 5m0s, "Timeout");
 *   a chart read from a GitRepository or Bucket is rebuilt only on a new chart version unless
 *   `reconcileStrategy: Revision` (api/v2/helmrelease_types.go:405, default ChartVersion).
 * - Argo CD Application: with automated sync it syncs at its next refresh: `timeout.reconciliation`
 *   120s "with additional jitter", `timeout.reconciliation.jitter` 60s by default
 *   (argoproj/argo-cd docs/operator-manual/argocd-cm.yaml), so about every 3 minutes, sooner with
 *   a webhook; `automated.enabled: false` turns it off (Argo CD 3.1); without it, someone syncs.
 * - Flagger Canary (fluxcd/flagger at 15bd6ad555e6): a new pod template is a new revision and runs
 *   a whole analysis (pkg/controller/scheduler.go:852 shouldAdvance) — except that "do not trigger
 *   a canary deployment on manual rollback": a template whose hash is `status.lastPromotedSpec`
 *   starts none (pkg/canary/spec.go:39 hasSpecChanged), unless a tracked ConfigMap or Secret
 *   changed (pkg/canary/config_tracker.go:263). The analysis: a tick every `analysis.interval`
 *   (default 60s, at least 10s: pkg/apis/flagger/v1beta1/canary.go:637); A/B testing (match and
 *   iterations) and blue/green (iterations) advance one iteration a tick (scheduler.go:639 runAB,
 *   :682 runBlueGreen; canary.go:693 DeploymentStrategy); a canary one weight step a tick until
 *   maxWeight (scheduler.go:41 maxWeight, :58 nextStepWeight, :565 runCanary) — Flagger's own
 *   formula `interval * (maxWeight / stepWeight)` (docs/gitbook/usage/deployment-strategies.md);
 *   the kubernetes provider has no traffic weights and sets 10 iterations (scheduler.go:475). A
 *   failed check does not advance, and `threshold` failed checks (default 1) end the rollout
 *   (scheduler.go:430). `skipAnalysis: true`, or no analysis, promotes at once (scheduler.go:778).
 * - Argo Rollouts Rollout (argoproj/argo-rollouts at 9f8d111d8f8e): going back is fast-tracked,
 *   skipping the steps and the analysis, when the new pod template is the stable ReplicaSet's and
 *   the update had not completed (rollout/canary.go:363 "Rollback to stable ReplicaSets",
 *   rollout/sync.go:1204 isFastRollback, rollout/analysis.go:75), or when it is a ReplicaSet within
 *   `spec.rollbackWindow.revisions` before the stable one (sync.go:1216 isRollbackWithinWindow,
 *   docs/features/rollback.md); otherwise the canary steps run again (a pause's `duration` is
 *   seconds, or a Go duration: pkg/apis/rollouts/v1alpha1/types.go:863 DurationSeconds; a pause
 *   without one waits for a person), or the blue-green promotion (`autoPromotionEnabled`,
 *   `autoPromotionSeconds`, the pre/post-promotion analyses: types.go:183-212).
 *
 * lastgood cannot always tell which way a controller goes (it does not hash pod templates, nor see
 * the ReplicaSets' ages): the line says both, and the estimate counts the slower.
 */
import { formatDuration } from '../config/duration.ts';
import { parseGoDuration } from '../analysis/argo.ts';
import { FLAGGER_ANALYSIS_INTERVAL_MS, FLAGGER_MIN_ANALYSIS_INTERVAL_MS } from '../analysis/flagger.ts';
import { groupKind, keyOf, objectKey, objectRef, type KubeObject, type Observed } from '../observe/types.ts';

/** A piece of a line: lastgood's own words (a string), or text read from the cluster, which Markdown quotes as code. */
export type Piece = string | { readonly quoted: string };

export interface NextStep {
  /** the object the line comes from: "group/Kind namespace/name" */
  readonly object: string;
  /** sync: the engine takes the merge; apply: a controller applies the changed object; rollout: progressive delivery */
  readonly phase: 'sync' | 'apply' | 'rollout';
  readonly pieces: readonly Piece[];
  /** about how long the step takes, in ms, where it can be computed (the slower way where lastgood cannot tell) */
  readonly ms?: number;
  /** the step waits for a person (a manual sync, an indefinite pause, a promotion by hand, a suspended object) */
  readonly needsPerson?: boolean;
}

export interface NextSteps {
  readonly steps: readonly NextStep[];
  /** the longest step of each phase, added up (sync, then apply, then rollout); absent when no step has an estimate */
  readonly totalMs?: number;
  /** a step has no estimate or waits for a person: the total is a lower bound */
  readonly partial: boolean;
  /** the total in one sentence (lastgood's own words), absent without steps */
  readonly summary?: string;
}

export interface NextStepsOptions {
  /** the target's resources: only these objects get lines (sources are looked up among all observed); default all */
  resources?: ReadonlyArray<{ apiVersion: string; kind: string; namespace?: string; name: string }>;
}

/** A line as plain text; `quote` marks the cluster's text (default: as it is). */
export function stepText(step: Pick<NextStep, 'pieces'>, quote: (s: string) => string = (s) => s): string {
  return step.pieces.map((p) => (typeof p === 'string' ? p : quote(p.quoted))).join('');
}

export function nextSteps(observed: readonly Observed[], opts: NextStepsOptions = {}): NextSteps {
  const index = new Map<string, Observed>();
  for (const o of observed) if (!index.has(keyOf(o))) index.set(keyOf(o), o);
  const mine = opts.resources
    ? opts.resources.map((r) => index.get(objectKey(groupKind(r.apiVersion, r.kind), r.namespace, r.name))).filter((o): o is Observed => o !== undefined)
    : [...index.values()];
  const find = (gk: string, namespace: string | undefined, name: string) => index.get(objectKey(gk, namespace, name))?.object;
  const steps: NextStep[] = [];
  for (const o of new Set(mine)) {
    const object = o.object;
    const step = stepFor(object, find);
    if (step) steps.push(step);
  }
  const order = { sync: 0, apply: 1, rollout: 2 } as const;
  steps.sort((a, b) => order[a.phase] - order[b.phase]);
  return summarise(steps);
}

function summarise(steps: NextStep[]): NextSteps {
  if (steps.length === 0) return { steps, partial: false };
  let totalMs: number | undefined;
  for (const phase of ['sync', 'apply', 'rollout'] as const) {
    const known = steps.filter((s) => s.phase === phase && s.ms !== undefined).map((s) => s.ms!);
    if (known.length) totalMs = (totalMs ?? 0) + Math.max(...known);
  }
  const partial = steps.some((s) => s.ms === undefined || s.needsPerson);
  const names = { sync: 'the sync', apply: 'the upgrade', rollout: 'the rollout' } as const;
  const phases = (['sync', 'apply', 'rollout'] as const).filter((p) => steps.some((s) => s.phase === p));
  const rule = [
    phases.length > 1 ? `${phases.map((p) => names[p]).join(', then ')}, each as long as its slowest line` : steps.length > 1 ? 'the slowest line' : '',
    phases.includes('rollout') ? 'where lastgood cannot tell which way a controller goes, it counts the slower' : '',
  ].filter(Boolean).join('; ');
  const by = rule ? `by these numbers (${rule})` : 'by these numbers';
  const waits = steps.some((s) => s.needsPerson) ? 'waits for a person' : 'has no estimate';
  const summary = totalMs === undefined
    ? `No estimate in all: ${steps.some((s) => s.needsPerson) ? 'a step above waits for a person' : 'lastgood could not compute how long these steps take'}.`
    : partial
      ? `At least ${formatDuration(totalMs)} in all ${by}; a step above ${waits}.`
      : `About ${formatDuration(totalMs)} in all ${by}.`;
  return { steps, ...(totalMs !== undefined ? { totalMs } : {}), partial, summary };
}

type Find = (groupKind: string, namespace: string | undefined, name: string) => KubeObject | undefined;
type Rec = Record<string, unknown>;

const rec = (v: unknown): Rec => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Rec) : {});
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
/** a whole number ≥ 0 (numbers or numeric strings), else undefined */
const count = (v: unknown): number | undefined => {
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^\s*\d+\s*$/.test(v) ? Number(v) : NaN;
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
};
/** cluster text as the line quotes it: a string as given (cut at 100 characters), else its JSON */
const q = (v: unknown): Piece => {
  const s = typeof v === 'string' ? v : JSON.stringify(v) ?? String(v);
  return { quoted: s.length > 100 ? `${s.slice(0, 99)}…` : s };
};
const ref = (o: KubeObject) => q(objectRef(o));
const fmt = formatDuration;

/** A Go duration (metav1.Duration) read: ms, or why not. */
function goDuration(v: unknown): { ms: number } | { bad: unknown } | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  const ms = typeof v === 'string' ? parseGoDuration(v.trim()) : undefined;
  return ms !== undefined && ms >= 0 && Number.isFinite(ms) ? { ms } : { bad: v };
}

function stepFor(o: KubeObject, find: Find): NextStep | undefined {
  const gk = groupKind(String(o.apiVersion ?? ''), String(o.kind ?? ''));
  const object = `${gk} ${objectRef(o)}`;
  switch (gk) {
    case 'kustomize.toolkit.fluxcd.io/Kustomization':
      return { object, ...kustomization(o, find) };
    case 'helm.toolkit.fluxcd.io/HelmRelease':
      return { object, ...helmRelease(o) };
    case 'argoproj.io/Application':
      return { object, ...application(o) };
    case 'flagger.app/Canary':
      return { object, ...canary(o) };
    case 'argoproj.io/Rollout':
      return { object, ...rollout(o) };
    default:
      return undefined;
  }
}

type Body = Omit<NextStep, 'object'>;

// ---- Flux ----------------------------------------------------------------------------------------

const SOURCE_GROUP = 'source.toolkit.fluxcd.io';

function suspended(what: string, o: KubeObject, phase: NextStep['phase'], does: string): Body | undefined {
  if (rec(o.spec).suspend !== true) return undefined;
  return { phase, pieces: [`Flux: ${what} `, ref(o), ` is suspended (`, q('spec.suspend: true'), `): it ${does} nothing until someone resumes it.`], needsPerson: true };
}

function kustomization(o: KubeObject, find: Find): Body {
  const stopped = suspended('Kustomization', o, 'sync', 'applies');
  if (stopped) return stopped;
  const spec = rec(o.spec);
  const own = goDuration(spec.interval);
  const ownPieces: Piece[] = own && 'ms' in own
    ? ['; it also reconciles every ', q(spec.interval), '.']
    : own ? ['; its own ', q('spec.interval'), ' ', q(spec.interval), ' could not be read.'] : ['.'];
  const sourceRef = rec(spec.sourceRef);
  const sourceKind = str(sourceRef.kind) ?? 'GitRepository';
  const sourceName = str(sourceRef.name);
  const sourceNamespace = str(sourceRef.namespace) ?? o.metadata.namespace;
  if (!sourceName) return { phase: 'sync', pieces: ['Flux: Kustomization ', ref(o), ' names no source (', q('spec.sourceRef'), '): lastgood cannot tell when it takes the merge', ...ownPieces] };
  const sourceText = q(sourceNamespace ? `${sourceNamespace}/${sourceName}` : sourceName);
  if (sourceKind !== 'GitRepository') {
    return { phase: 'sync', pieces: ['Flux: Kustomization ', ref(o), ' applies the merge once its source ', q(sourceKind), ' ', sourceText, ' has it; lastgood cannot tell when that is (something must publish the merge there)', ...ownPieces] };
  }
  const source = find(`${SOURCE_GROUP}/GitRepository`, sourceNamespace, sourceName);
  if (!source) {
    return {
      phase: 'sync',
      pieces: ['Flux: Kustomization ', ref(o), ' applies the merge as soon as its source GitRepository ', sourceText, ` fetches it, within that source's `, q('spec.interval'), ', which lastgood did not read (sooner with a webhook Receiver)', ...ownPieces],
    };
  }
  const polled = goDuration(rec(source.spec).interval);
  const poll = rec(source.spec).interval;
  if (rec(source.spec).suspend === true) {
    return { phase: 'sync', pieces: ['Flux: GitRepository ', sourceText, ' is suspended (', q('spec.suspend: true'), '): Kustomization ', ref(o), ' gets the merge only after someone resumes it.'], needsPerson: true };
  }
  const within: Piece[] = polled && 'ms' in polled
    ? ['within ', q(poll), ' (its ', q('spec.interval'), '; sooner with a webhook Receiver)']
    : ['at its ', q('spec.interval'), ', which could not be read', ...(polled ? [' (', q(poll), ')'] : []), ' (sooner with a webhook Receiver)'];
  return {
    phase: 'sync',
    pieces: ['Flux: GitRepository ', sourceText, ' fetches the merge ', ...within, ', and Kustomization ', ref(o), ' applies it at once', ...ownPieces],
    ...(polled && 'ms' in polled ? { ms: polled.ms } : {}),
  };
}

const HELM_TIMEOUT_MS = 5 * 60_000;

function helmRelease(o: KubeObject): Body {
  const stopped = suspended('HelmRelease', o, 'apply', 'upgrades');
  if (stopped) return stopped;
  const spec = rec(o.spec);
  const interval = goDuration(spec.interval);
  const timeout = goDuration(spec.timeout);
  const pieces: Piece[] = ['Flux: HelmRelease ', ref(o), ' upgrades as soon as its changed spec is applied (a spec change is handled at once'];
  if (interval && 'ms' in interval) pieces.push(', not at its interval ', q(spec.interval));
  else if (interval) pieces.push('; its ', q('spec.interval'), ' ', q(spec.interval), ' could not be read');
  pieces.push(')');
  let ms: number | undefined = HELM_TIMEOUT_MS;
  if (!timeout) pieces.push(', waiting up to 5m0s for the release (the default ', q('spec.timeout'), ')');
  else if ('ms' in timeout) {
    ms = timeout.ms;
    pieces.push(', waiting up to ', q(spec.timeout), ' for the release (', q('spec.timeout'), ')');
  } else {
    ms = undefined;
    pieces.push('; its ', q('spec.timeout'), ' ', q(spec.timeout), ' could not be read');
  }
  const chart = rec(rec(spec.chart).spec);
  const chartSource = rec(chart.sourceRef);
  const chartKind = str(chartSource.kind);
  if ((chartKind === 'GitRepository' || chartKind === 'Bucket') && chart.reconcileStrategy !== 'Revision') {
    pieces.push('; its chart comes from ', q(chartKind), ' ', q(str(chartSource.name) ?? ''), ', and a chart changed there without a new version is not rebuilt (', q(`reconcileStrategy: ${str(chart.reconcileStrategy) ?? 'ChartVersion'}`), ')');
  }
  pieces.push('.');
  return { phase: 'apply', pieces, ...(ms !== undefined ? { ms } : {}) };
}

// ---- Argo CD -------------------------------------------------------------------------------------

const ARGOCD_REFRESH_MS = 180_000;

function application(o: KubeObject): Body {
  const policy = rec(rec(o.spec).syncPolicy);
  const automated = policy.automated;
  if (automated === undefined || automated === null) {
    return { phase: 'sync', pieces: ['Argo CD: Application ', ref(o), ' has no automated sync (', q('spec.syncPolicy.automated'), '): it will show OutOfSync until someone syncs it.'], needsPerson: true };
  }
  if (rec(automated).enabled === false) {
    return { phase: 'sync', pieces: ['Argo CD: Application ', ref(o), ' has its automated sync turned off (', q('automated.enabled: false'), '): it will show OutOfSync until someone syncs it.'], needsPerson: true };
  }
  return {
    phase: 'sync',
    pieces: ['Argo CD: Application ', ref(o), ' syncs the merge at its next refresh: every 3 minutes by default (', q('timeout.reconciliation'), ' 120s plus up to 60s of jitter), sooner with a webhook.'],
    ms: ARGOCD_REFRESH_MS,
  };
}

// ---- Flagger -------------------------------------------------------------------------------------

function canary(o: KubeObject): Body {
  const spec = rec(o.spec);
  const status = rec(o.status);
  const analysis = spec.analysis ?? spec.canaryAnalysis;
  const targetRef = rec(spec.targetRef);
  const target: Piece[] = [q(str(targetRef.kind) ?? 'Deployment'), ' ', q(str(targetRef.name) ?? o.metadata.name)];
  if (spec.skipAnalysis === true || analysis === undefined || analysis === null) {
    const why: Piece[] = spec.skipAnalysis === true ? [' has ', q('skipAnalysis: true')] : [' has no analysis (', q('spec.analysis'), ')'];
    return { phase: 'rollout', pieces: ['Flagger: Canary ', ref(o), ...why, ': it promotes the revert without analysis once its pods are ready.'], ms: 0 };
  }
  const a = rec(analysis);
  // interval: canary.go:637 GetAnalysisInterval
  let intervalMs = FLAGGER_ANALYSIS_INTERVAL_MS;
  let intervalPieces: Piece[] = ['60s (the default)'];
  const read = goDuration(a.interval);
  if (read && 'ms' in read) {
    intervalMs = Math.max(read.ms, FLAGGER_MIN_ANALYSIS_INTERVAL_MS);
    intervalPieces = read.ms < FLAGGER_MIN_ANALYSIS_INTERVAL_MS ? [q(a.interval), ', which Flagger raises to 10s,'] : [q(a.interval)];
  } else if (read) intervalPieces = [q(a.interval), ' (could not be read; Flagger then uses 60s)'];
  const threshold = count(a.threshold) || 1;
  const iterations = count(a.iterations) ?? 0;
  const kubernetes = spec.provider === 'kubernetes';
  let ticks: number | undefined;
  let how: Piece[];
  if (iterations > 0) {
    ticks = iterations;
    const ab = Array.isArray(a.match) && a.match.length > 0 && !kubernetes;
    how = [' × ', q(a.iterations), ` iterations (${ab ? 'A/B testing' : 'blue/green'})`];
  } else if (kubernetes) {
    ticks = 10;
    how = [' × 10 iterations (blue/green: the ', q('kubernetes'), ' provider sets 10 when none are given)'];
  } else {
    const stepWeight = count(a.stepWeight) ?? 0;
    const stepWeights = Array.isArray(a.stepWeights) ? a.stepWeights.map(count).filter((w): w is number => w !== undefined && w > 0) : [];
    const maxWeight = stepWeights.length ? Math.min(100, stepWeights.at(-1)!) : (count(a.maxWeight) || 100);
    if (stepWeight > 0) {
      ticks = Math.ceil(maxWeight / stepWeight);
      how = [' × ', String(ticks), ' weight steps (maxWeight ', stepWeights.length ? q(`${maxWeight} (last of stepWeights)`) : a.maxWeight !== undefined ? q(a.maxWeight) : '100 (the default)', ' / stepWeight ', q(a.stepWeight), ')'];
    } else if (stepWeights.length) {
      ticks = stepWeights.filter((w) => w <= 100).length || 1;
      how = [' × ', String(ticks), ' weight steps (', q(`stepWeights: ${JSON.stringify(a.stepWeights)}`), ')'];
    } else {
      how = [', but lastgood cannot count its steps (no stepWeight, stepWeights or iterations)'];
    }
  }
  const estimate: Piece[] = ticks !== undefined ? [' = about ', fmt(intervalMs * ticks)] : [];
  const failures: Piece[] = [
    '; each failed check costs one more interval, and at ',
    ...(count(a.threshold) ? [q(a.threshold), ` failed check${threshold > 1 ? 's' : ''} (`, q('threshold'), ')'] : ['1 failed check (the default ', q('threshold'), ')']),
    ' Flagger gives up and keeps the primary as it is.',
  ];
  const analysisPieces: Piece[] = [...intervalPieces, ...how, ...estimate, ...failures];
  const lastApplied = str(status.lastAppliedSpec);
  const lastPromoted = str(status.lastPromotedSpec);
  const lead: Piece[] = lastApplied && lastPromoted && lastApplied !== lastPromoted
    ? ['Flagger: Canary ', ref(o), ' has not promoted the failing revision (', q(`lastAppliedSpec ${lastApplied}`), ', ', q(`lastPromotedSpec ${lastPromoted}`), '): if the revert brings ', ...target, ' back to the pod template Flagger last promoted, and no ConfigMap or Secret it tracks changes, Flagger starts no analysis; otherwise it runs a whole analysis before promoting: ']
    : ['Flagger: Canary ', ref(o), ' sees the revert as a new revision of ', ...target, ' and runs a whole analysis before promoting it: '];
  return { phase: 'rollout', pieces: [...lead, ...analysisPieces], ...(ticks !== undefined ? { ms: intervalMs * ticks } : {}) };
}

// ---- Argo Rollouts -------------------------------------------------------------------------------

/** types.go:863 DurationSeconds: an integer is seconds; a string of digits too; else a Go duration. */
function pauseMs(v: unknown): number | undefined {
  const n = count(v);
  if (n !== undefined) return n * 1000;
  const d = goDuration(v);
  return d && 'ms' in d ? Math.floor(d.ms / 1000) * 1000 : undefined;
}

function rolloutCost(o: KubeObject): { pieces: Piece[]; ms?: number; needsPerson?: boolean } {
  const strategy = rec(rec(o.spec).strategy);
  if (strategy.blueGreen !== undefined) {
    const bg = rec(strategy.blueGreen);
    const analyses = [bg.prePromotionAnalysis !== undefined && 'a pre-promotion analysis', bg.postPromotionAnalysis !== undefined && 'a post-promotion analysis'].filter((s): s is string => typeof s === 'string');
    const timed: Piece[] = analyses.length ? [`, with ${analyses.join(' and ')} lastgood does not time`] : [];
    if (bg.autoPromotionEnabled === false) {
      return { pieces: ['waits for someone to promote the new ReplicaSet (', q('autoPromotionEnabled: false'), ')', ...timed, '.'], needsPerson: true };
    }
    const seconds = count(bg.autoPromotionSeconds);
    if (seconds) return { pieces: ['promotes the new ReplicaSet ', q(String(bg.autoPromotionSeconds)), ' seconds after the preview is ready (', q('autoPromotionSeconds'), ')', ...timed, '.'], ms: seconds * 1000 };
    return { pieces: ['promotes the new ReplicaSet as soon as the preview is ready (blue-green)', ...timed, '.'], ms: 0 };
  }
  if (strategy.canary === undefined) return { pieces: ['rolls it out by a strategy lastgood does not read.'] };
  const steps = Array.isArray(rec(strategy.canary).steps) ? (rec(strategy.canary).steps as unknown[]) : [];
  if (steps.length === 0) return { pieces: ['replaces the pods at once (no canary steps).'], ms: 0 };
  let ms = 0;
  const timed: unknown[] = [];
  let indefinite = 0;
  const unreadable: unknown[] = [];
  let untimed = 0;
  for (const step of steps.map(rec)) {
    if (step.pause !== undefined) {
      const duration = rec(step.pause).duration;
      if (duration === undefined || duration === null) indefinite++;
      else {
        const d = pauseMs(duration);
        if (d === undefined) unreadable.push(duration);
        else {
          ms += d;
          timed.push(duration);
        }
      }
    }
    if (step.analysis !== undefined || step.experiment !== undefined) untimed++;
  }
  const parts: Piece[][] = [];
  if (timed.length) parts.push(['timed pauses of about ', fmt(ms), ' in all (', ...timed.flatMap((d, i) => (i ? [', ', q(d)] : [q(d)])), ')']);
  if (indefinite) parts.push([`${indefinite} indefinite pause${indefinite > 1 ? 's' : ''} (`, q('pause: {}'), ') that someone must promote']);
  if (unreadable.length) parts.push([`${unreadable.length} pause${unreadable.length > 1 ? 's' : ''} whose duration could not be read (`, ...unreadable.flatMap((d, i) => (i ? [', ', q(d)] : [q(d)])), ')']);
  if (untimed) parts.push([`${untimed} analysis or experiment step${untimed > 1 ? 's' : ''} lastgood does not time`]);
  if (!parts.length) parts.push(['no pauses']);
  return {
    pieces: [`runs its ${steps.length} canary step${steps.length > 1 ? 's' : ''} again: `, ...parts.flatMap((p, i) => (i ? [', ', ...p] : p)), '.'],
    ...(unreadable.length ? {} : { ms }),
    ...(indefinite ? { needsPerson: true } : {}),
  };
}

function rollout(o: KubeObject): Body {
  const status = rec(o.status);
  const stable = str(status.stableRS) ?? str(rec(status.canary).stableRS);
  const current = str(status.currentPodHash);
  const windowSize = count(rec(rec(o.spec).rollbackWindow).revisions) ?? 0;
  const cost = rolloutCost(o);
  const rest = { ...(cost.ms !== undefined ? { ms: cost.ms } : {}), ...(cost.needsPerson ? { needsPerson: true } : {}) };
  if (stable && current && stable !== current) {
    return {
      phase: 'rollout',
      pieces: ['Argo Rollouts: Rollout ', ref(o), ' had not completed its update (stable ReplicaSet ', q(stable), ', current ', q(current), '): if the revert brings back the stable pod template, Argo Rollouts returns to it at once, skipping the steps and analysis; otherwise it ', ...cost.pieces],
      ...rest,
    };
  }
  if (windowSize > 0) {
    return {
      phase: 'rollout',
      pieces: ['Argo Rollouts: Rollout ', ref(o), ' has ', q(`rollbackWindow.revisions: ${windowSize}`), ': if the last-known-good is among the last ', q(String(windowSize)), ' revisions before the current one, a fast rollback skips the steps and analysis; otherwise it ', ...cost.pieces],
      ...rest,
    };
  }
  return { phase: 'rollout', pieces: ['Argo Rollouts: Rollout ', ref(o), ' has no ', q('rollbackWindow'), ', so the revert rolls out like a new revision: it ', ...cost.pieces], ...rest };
}
