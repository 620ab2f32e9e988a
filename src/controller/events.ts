/**
 * Kubernetes Events on the failing object (`kubectl describe` and `kubectl events` show them):
 * one when a revert is written, one when a failure is left to a person, one when the target
 * recovered at lastgood's revert. The one write the
 * controller makes in the cluster, and an optional one: a refusal (no RBAC for events) is logged,
 * never retried, and changes nothing else.
 *
 * events.k8s.io/v1 Events, named as client-go's recorder names them (<object>.<hex time>), with
 * an eventTime in V1MicroTime (a real API server refuses a millisecond time there).
 */
import { createHash } from 'node:crypto';
import { EventsV1Api, V1MicroTime, type KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { TargetOutcome } from '../engine/types.ts';
import type { KubeObject } from '../observe/types.ts';
import { redact } from '../scrub.ts';
import { kubeErrorText, kubeServer } from '../observe/kube-errors.ts';

export const REPORTING_CONTROLLER = 'lastgood.dev/controller';
/** the API server refuses an Event note over 1024 bytes */
const NOTE_MAX_BYTES = 1024;

export interface EventRecorder {
  /** an Event on `object` about what was done for the target, once (its name is the revert's); never throws */
  record(object: KubeObject, outcome: TargetOutcome): Promise<void>;
}

/**
 * The Event's name: the object's, and a digest of what it reports (the target, the reason, the
 * failure's bad commit and the revert or pull request). The same report made again (a retry, a
 * restarted controller, the next leader after one killed between its push and its Event) has the
 * same name, and the API server refuses the second (409 AlreadyExists): one Event per revert.
 */
export function eventName(object: KubeObject, outcome: TargetOutcome, reason: string): string {
  const failure = outcome.bad[0] ?? outcome.evidence.filter((e) => e.state === 'failed').map((e) => `${e.attempted?.sha ?? ''}@${e.since ?? ''}`).join(',');
  const made = outcome.pullRequest ?? outcome.commit ?? '';
  const digest = createHash('sha256').update(`${outcome.name}\n${reason}\n${failure}\n${made}`).digest('hex').slice(0, 16);
  return `${object.metadata.name}.${digest}`;
}

export function eventRecorder(kc: KubeConfig, identity: string, log: Logger): EventRecorder {
  const api = kc.makeApiClient(EventsV1Api);
  return {
    async record(object, outcome) {
      const what = describeOutcome(outcome);
      if (!what) return;
      const namespace = object.metadata.namespace ?? 'default';
      try {
        await api.createNamespacedEvent({
          namespace,
          body: {
            metadata: { name: eventName(object, outcome, what.reason), namespace },
            eventTime: new V1MicroTime(),
            reportingController: REPORTING_CONTROLLER,
            reportingInstance: identity.slice(0, 128),
            action: what.action,
            reason: what.reason,
            type: what.type,
            regarding: {
              apiVersion: object.apiVersion, kind: object.kind, name: object.metadata.name,
              ...(object.metadata.namespace ? { namespace: object.metadata.namespace } : {}),
              ...(typeof object.metadata.uid === 'string' ? { uid: object.metadata.uid } : {}),
              ...(typeof object.metadata.resourceVersion === 'string' ? { resourceVersion: object.metadata.resourceVersion } : {}),
            },
            note: truncate(redact(what.note), NOTE_MAX_BYTES),
          },
        });
      } catch (error) {
        // written already (by this controller before a restart, or the leader before this one): once is enough
        if ((error as { code?: number }).code === 409) {
          log.debug({ target: outcome.name, reason: what.reason }, 'the Event was created before');
          return;
        }
        log.warn({ target: outcome.name, err: kubeErrorText(error, kubeServer(kc)) }, 'cannot create a Kubernetes Event (RBAC: create events.k8s.io events)');
      }
    },
  };
}

function describeOutcome(o: TargetOutcome): { action: string; reason: string; type: 'Normal' | 'Warning'; note: string } | undefined {
  const bad = o.bad.length ? ` ${o.bad.map((s) => s.slice(0, 12)).join(', ')}` : '';
  const to = o.lastKnownGood ? ` back to ${o.lastKnownGood.slice(0, 12)}${o.verified ? ' (verified)' : ''}` : '';
  // the caller tells a revert of lastgood's (made now, or found made) from anything else (report/once.ts isOwnRevert)
  if (o.action === 'revert' && o.pullRequest) {
    return { action: 'Revert', reason: 'RevertPullRequestOpened', type: 'Normal', note: `lastgood opened ${o.pullRequest} for target ${o.name}: reverts${bad}${to}. ${o.summary}` };
  }
  if (o.action === 'revert' && o.commit) {
    return { action: 'Revert', reason: 'RevertCommitted', type: 'Normal', note: `lastgood committed ${o.commit.slice(0, 12)} on the config repository for target ${o.name}: reverts${bad}${to}. ${o.summary}` };
  }
  // a recovery (engine/recovery.ts): healthy again at lastgood's revert
  if (o.action === 'none' && o.verdict === 'healthy' && o.commit) {
    return { action: 'Recover', reason: 'Recovered', type: 'Normal', note: `lastgood: target ${o.name} ${o.reason}` };
  }
  if (o.action === 'alert' && (o.verdict === 'failed' || o.verdict === 'stuck')) {
    return { action: 'Alert', reason: 'NotReverted', type: 'Warning', note: `lastgood did not revert target ${o.name}: ${o.reason}` };
  }
  return undefined;
}

function truncate(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text) <= maxBytes) return text;
  let cut = text.slice(0, maxBytes - 3);
  while (Buffer.byteLength(cut) > maxBytes - 3) cut = cut.slice(0, -1);
  return `${cut}...`;
}
