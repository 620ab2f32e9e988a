/**
 * The generic fallback, after kstatus (sigs.k8s.io/cli-utils/pkg/kstatus/status `Compute`):
 * deletion → progressing; observedGeneration behind generation → progressing; `Stalled=True` →
 * failed; `Reconciling=True` → progressing; a `Ready` condition decides (False/Unknown is
 * progressing, never failed: kstatus cannot tell "failed" from "not yet" on Ready alone);
 * no conditions at all → healthy ("absence of conditions means reconciled"), which covers
 * ConfigMap, Secret, plain Service and most kinds without a status.
 * Also a few core kinds kstatus special-cases (Service LoadBalancer, PVC, CRD).
 */
import type { KubeObject } from '../observe/types.ts';
import { registerAssessor, registerFallback } from './registry.ts';
import type { Health } from './types.ts';
import {
  arr,
  conditions,
  conditionSince,
  findCondition,
  generation,
  generationNotObserved,
  health,
  isTerminating,
  isTrue,
  num,
  rec,
  str,
  terminating,
} from './status.ts';

export function assessGeneric(object: KubeObject): Health {
  if (isTerminating(object)) return terminating(object);
  if (generationNotObserved(object)) {
    return health({
      state: 'progressing',
      reason: 'LatestGenerationNotObserved',
      message: `generation ${generation(object)} not yet observed (status.observedGeneration ${num(rec(object.status).observedGeneration)})`,
    });
  }
  const list = conditions(object);
  const stalled = list.find((c) => c.type === 'Stalled' && isTrue(c));
  if (stalled) {
    return health({
      state: 'failed',
      reason: stalled.reason || 'Stalled',
      message: stalled.message,
      since: conditionSince(stalled),
      terminal: true,
      failureClass: 'analysis',
    });
  }
  const reconciling = list.find((c) => c.type === 'Reconciling' && isTrue(c));
  if (reconciling) {
    return health({ state: 'progressing', reason: reconciling.reason || 'Reconciling', message: reconciling.message, since: conditionSince(reconciling) });
  }
  const ready = findCondition(list, 'Ready');
  if (ready) {
    if (isTrue(ready)) return health({ state: 'healthy', reason: ready.reason || 'Ready', message: ready.message, since: conditionSince(ready) });
    return health({ state: 'progressing', reason: ready.reason || 'NotReady', message: ready.message, since: conditionSince(ready) });
  }
  return health({ state: 'healthy', reason: 'Current', message: 'no conditions: resource is current' });
}

/** Service: current, except a LoadBalancer still waiting for its address. */
function assessService(object: KubeObject): Health {
  if (isTerminating(object)) return terminating(object);
  if (str(rec(object.spec).type) === 'LoadBalancer') {
    const ingress = arr(rec(rec(object.status).loadBalancer).ingress);
    if (ingress.length === 0) return health({ state: 'progressing', reason: 'NoIPAssigned', message: 'waiting for the load balancer address' });
  }
  return health({ state: 'healthy', reason: 'Current', message: 'service is ready' });
}

function assessPersistentVolumeClaim(object: KubeObject): Health {
  if (isTerminating(object)) return terminating(object);
  const phase = str(rec(object.status).phase);
  if (phase === 'Bound') return health({ state: 'healthy', reason: 'Bound', message: 'claim is bound' });
  if (phase === 'Lost') return health({ state: 'failed', reason: 'Lost', message: 'claim lost its volume', terminal: true });
  return health({ state: 'progressing', reason: phase ?? 'NotBound', message: 'claim is not bound' });
}

function assessCustomResourceDefinition(object: KubeObject): Health {
  if (isTerminating(object)) return terminating(object);
  const list = conditions(object);
  const names = findCondition(list, 'NamesAccepted');
  if (names && names.status === 'False') {
    return health({ state: 'failed', reason: names.reason || 'NamesNotAccepted', message: names.message, since: conditionSince(names), terminal: true });
  }
  const established = findCondition(list, 'Established');
  if (isTrue(established)) return health({ state: 'healthy', reason: 'Established', message: established?.message ?? '', since: conditionSince(established) });
  return health({ state: 'progressing', reason: established?.reason || 'NotEstablished', message: established?.message ?? 'CRD is not established' });
}

registerFallback(assessGeneric);
registerAssessor('Service', assessService);
registerAssessor('PersistentVolumeClaim', assessPersistentVolumeClaim);
registerAssessor(['apiextensions.k8s.io/CustomResourceDefinition'], assessCustomResourceDefinition);
