/**
 * When the analysis window starts: a rollout of a plain workload, detected from the workload
 * itself. lastgood never pauses or scales it; it only reads it.
 *
 * - Deployment: the new ReplicaSet is the one the `Progressing` condition names (the Deployment
 *   controller writes `Created new replica set "x"`, `Found new replica set "x"`, `ReplicaSet "x"
 *   is progressing.`, `ReplicaSet "x" has successfully progressed.`: kubernetes
 *   pkg/controller/deployment/sync.go and util/deployment_util.go); its `pod-template-hash` is the
 *   name's suffix. The rollout began when that ReplicaSet was created (its creationTimestamp, read
 *   where the door can: the cluster, or a snapshot that includes it), else when the condition says
 *   `NewReplicaSetCreated` / `FoundNewReplicaSet` (its lastUpdateTime). Without either, the last
 *   progress the condition reports is used, and the evidence says the start is approximate.
 * - StatefulSet: `status.updateRevision` names the ControllerRevision of the new pods (their
 *   `controller-revision-hash` label); the rollout began when it was created.
 * - A spec the controller has not observed yet (`observedGeneration` behind `generation`) is a
 *   rollout about to start: nothing is measured until the new revision is known.
 */
import { podSpecImages, rec, str } from '../health/status.ts';
import { parseImageRef } from '../observe/image-ref.ts';
import { parseTime } from '../observe/times.ts';
import type { KubeObject } from '../observe/types.ts';
import type { RolloutFacts } from './types.ts';

export interface ObjectRefLike {
  apiVersion: string;
  kind: string;
  namespace?: string;
  name: string;
}

/** Reads an object that was not among the observed ones (the cluster), or undefined when there is none (a snapshot). */
/** An object by reference: from what was observed, else read from the cluster (`observedOnly`: never read). */
export type Lookup = (ref: ObjectRefLike, opts?: { observedOnly?: boolean }) => Promise<KubeObject | undefined>;

export interface Rollout {
  workload: ObjectRefLike;
  facts: RolloutFacts;
  /** the new revision's images (init containers first), for locate */
  images: string[];
  /** when the rollout began, ms since the epoch */
  start: number;
  /** how the start is known, for people */
  startedBy: string;
  /** false when the start is the last progress the workload reports (later than the real start) */
  exact: boolean;
  /** names this rollout: a new revision or a new start is a new analysis */
  key: string;
}

export type RolloutState = { rollout: Rollout } | { waiting: string } | { unknown: string };

const NEW_RS = /(?:ReplicaSet|replica set) "([^"]+)"/;

/** A time of an object: a string in a snapshot, a Date where @kubernetes/client-node typed the object. */
function time(value: unknown): number | undefined {
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? undefined : value.getTime();
  return typeof value === 'string' ? parseTime(value) : undefined;
}

function generationLags(object: KubeObject): boolean {
  const generation = Number(object.metadata.generation);
  const observed = Number(rec(object.status).observedGeneration);
  return Number.isFinite(generation) && Number.isFinite(observed) && observed < generation;
}

function describe(o: ObjectRefLike): string {
  return `${o.kind} ${o.namespace ? `${o.namespace}/` : ''}${o.name}`;
}

function factsOf(target: string, workload: ObjectRefLike, revision: string, hash: string, images: string[]): RolloutFacts {
  const image = images[0] ?? '';
  const ref = parseImageRef(image);
  return { target, namespace: workload.namespace ?? '', kind: workload.kind, workload: workload.name, revision, podTemplateHash: hash, image, imageTag: ref?.tag ?? ref?.digest ?? '' };
}

/** The first container image is the main one; init containers come first in podSpecImages. */
function mainImages(template: unknown): string[] {
  const spec = rec(rec(template).spec);
  const main = podSpecImages({ containers: spec.containers });
  const all = podSpecImages(spec);
  return [...main, ...all.filter((i) => !main.includes(i))];
}

/** The rollout the workload is making (or made last), with its start. */
export async function rolloutOf(object: KubeObject, target: string, lookup: Lookup): Promise<RolloutState> {
  const workload: ObjectRefLike = { apiVersion: object.apiVersion, kind: object.kind, ...(object.metadata.namespace ? { namespace: object.metadata.namespace } : {}), name: object.metadata.name };
  if (generationLags(object)) return { waiting: `${describe(workload)}: generation ${object.metadata.generation} not yet observed by its controller: the rollout has not started` };
  if (object.kind === 'Deployment') return deploymentRollout(object, workload, target, lookup);
  if (object.kind === 'StatefulSet') return statefulSetRollout(object, workload, target, lookup);
  return { unknown: `${describe(workload)}: lastgood detects rollouts of Deployments and StatefulSets` };
}

async function deploymentRollout(object: KubeObject, workload: ObjectRefLike, target: string, lookup: Lookup): Promise<RolloutState> {
  const conditions = Array.isArray(rec(object.status).conditions) ? (rec(object.status).conditions as unknown[]).map(rec) : [];
  const progressing = conditions.find((c) => c.type === 'Progressing');
  const rsName = NEW_RS.exec(str(progressing?.message) ?? '')?.[1];
  if (!rsName) {
    return { unknown: `${describe(workload)} does not name its new ReplicaSet (no Progressing condition naming one: the Deployment needs spec.progressDeadlineSeconds, which defaults to 600)` };
  }
  const rs = await lookup({ apiVersion: 'apps/v1', kind: 'ReplicaSet', namespace: workload.namespace, name: rsName });
  const labelHash = str(rs?.metadata.labels?.['pod-template-hash']);
  const hash = labelHash ?? (rsName.startsWith(`${workload.name}-`) ? rsName.slice(workload.name.length + 1) : rsName);
  const images = mainImages(rs ? rec(rs.spec).template : rec(object.spec).template);
  const facts = factsOf(target, workload, rsName, hash, images);
  const created = time(rs?.metadata.creationTimestamp);
  let start: number | undefined;
  let startedBy: string;
  let exact = true;
  const reason = str(progressing?.reason);
  const updated = time(progressing?.lastUpdateTime) ?? time(progressing?.lastTransitionTime);
  if (created !== undefined) {
    start = created;
    startedBy = `ReplicaSet ${rsName} created`;
  } else if ((reason === 'NewReplicaSetCreated' || reason === 'FoundNewReplicaSet') && updated !== undefined) {
    start = updated;
    startedBy = `Progressing=${reason} (ReplicaSet ${rsName})`;
  } else if (updated !== undefined) {
    start = updated;
    exact = false;
    startedBy = `Progressing ${reason ?? ''} last updated (approximate: the ReplicaSet ${rsName} itself was not read; a snapshot with it, or the cluster, gives the exact start)`;
  } else {
    return { unknown: `${describe(workload)}: no time tells when ReplicaSet ${rsName} began` };
  }
  return { rollout: { workload, facts, images, start, startedBy, exact, key: `${describe(workload)}@${rsName}@${start}` } };
}

async function statefulSetRollout(object: KubeObject, workload: ObjectRefLike, target: string, lookup: Lookup): Promise<RolloutState> {
  const status = rec(object.status);
  const revision = str(status.updateRevision);
  if (!revision) return { waiting: `${describe(workload)} reports no updateRevision yet` };
  const cr = await lookup({ apiVersion: 'apps/v1', kind: 'ControllerRevision', namespace: workload.namespace, name: revision });
  const images = mainImages(rec(object.spec).template);
  const facts = factsOf(target, workload, revision, revision, images);
  const created = time(cr?.metadata.creationTimestamp);
  if (created !== undefined) {
    return { rollout: { workload, facts, images, start: created, startedBy: `ControllerRevision ${revision} created`, exact: true, key: `${describe(workload)}@${revision}@${created}` } };
  }
  const conditions = Array.isArray(status.conditions) ? (status.conditions as unknown[]).map(rec) : [];
  const progressing = conditions.find((c) => c.type === 'Progressing');
  const updated = time(progressing?.lastUpdateTime) ?? time(progressing?.lastTransitionTime);
  if (updated !== undefined) {
    return { rollout: { workload, facts, images, start: updated, startedBy: 'Progressing last updated (approximate)', exact: false, key: `${describe(workload)}@${revision}@${updated}` } };
  }
  return { unknown: `${describe(workload)} does not tell when revision ${revision} began: give its ControllerRevision (a snapshot with it, or the cluster)` };
}
