/**
 * The assess stage: `assess(object, now) → Health`. Importing this module registers every
 * assessor (each family module registers itself with the registry).
 */
import './generic.ts';
import './workloads.ts';
import './flagger.ts';
import './flux.ts';
import './argo-rollouts.ts';
import './argocd.ts';
import './kargo.ts';

export { assess, assessorFor, registeredKinds } from './registry.ts';
export { parseRevision } from './revision.ts';
export { HEALTH_STATES } from './types.ts';
export type { Assessor, FailureClass, Health, HealthState, Revision } from './types.ts';
