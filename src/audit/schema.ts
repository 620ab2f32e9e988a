import { z } from 'zod';

/**
 * The document `lastgood log --json` prints, published as JSON Schema (templates/log.schema.json,
 * `lastgood schema --log`) so that a CI job or an incident tool can rely on it. Every object is
 * strict: a field is added here, with its meaning, or not at all. Times are ISO 8601 in UTC.
 */

const Sha = z.string().regex(/^[0-9a-f]{40}$/).describe('a full commit SHA');
const Time = z.string().describe('ISO 8601, UTC');
const Url = z.string().nullable().describe('its page on the repository host; null where there is none (a local repository)');

export const HoldsSchema = z.strictObject({
  state: z.enum(['holds', 'undone', 'superseded', 'released-since']).describe(
    "holds: the target paths are still as the revert left them; undone: a person's git revert of it, or the first change after it set the paths back to what the revert removed; superseded: a later lastgood revert of the same target; released-since: the first change of the target paths after it (a new release)",
  ),
  commit: Sha.nullable().describe('the commit that undid or superseded it, or the first change after it; null when it holds'),
  at: Time.nullable(),
  author: z.string().nullable().describe('who made that commit (name <email>)'),
  subject: z.string().nullable(),
});

export const RevertEntrySchema = z.strictObject({
  kind: z.literal('revert'),
  at: Time.describe('when it reached the branch (the commit time of the commit on the branch)'),
  commit: Sha.describe('the commit lastgood wrote (with the Lastgood-* trailers)'),
  landedAs: Sha.describe('the commit on the branch that brought it: itself, or the merge / squash commit of its request'),
  via: z.enum(['commit', 'request', 'merge']).describe('commit: pushed to the branch; request: a merged pull or merge request; merge: a merge of its review branch'),
  request: z.strictObject({ noun: z.string(), number: z.number().int(), url: z.string() }).nullable(),
  subject: z.string(),
  strategy: z.enum(['revert', 'restore']).nullable(),
  verdict: z.string().nullable().describe('the target was failed or stuck'),
  class: z.string().nullable().describe('analysis | promotion | stuck'),
  reverts: z.array(Sha).describe('Lastgood-Reverts: the bad commits'),
  restores: Sha.nullable().describe('Lastgood-Restores: the last-known-good'),
  lastKnownGoodVerified: z.boolean().nullable(),
  evidence: z.array(z.string()).describe('Lastgood-Evidence trailers'),
  details: z.array(z.string()).describe("the body's evidence lines: object, state, reason, since, message"),
  reason: z.string().nullable().describe("a person's reason (lastgood revert --reason)"),
  url: Url,
  holds: HoldsSchema,
});

export const RequestEntrySchema = z.strictObject({
  kind: z.literal('request'),
  at: Time.describe('when it was opened (a review branch: its commit time)'),
  noun: z.string().describe('pull request, merge request, or branch (a host lastgood opens no requests on: the review branch it pushed)'),
  number: z.number().int().nullable(),
  url: z.string().nullable(),
  branch: z.string().describe('lastgood/<target>/<bad12>'),
  head: Sha.nullable(),
  title: z.string().nullable(),
  state: z.enum(['open', 'merged', 'closed']).describe('closed: closed without merging'),
  mergedAt: Time.nullable(),
  closedAt: Time.nullable(),
  mergeCommit: Sha.nullable(),
  class: z.string().nullable(),
  reverts: z.array(Sha),
  restores: Sha.nullable(),
  evidence: z.array(z.string()),
});

export const VerifiedEntrySchema = z.strictObject({
  kind: z.literal('verified'),
  at: Time.describe('when lastgood observed the target healthy there'),
  commit: Sha,
  evidence: z.string(),
  where: z.string().describe('git notes refs/notes/lastgood, or GitHub deployments'),
  url: Url,
});

export const PersonRevertEntrySchema = z.strictObject({
  kind: z.literal('person-revert'),
  at: Time,
  commit: Sha,
  author: z.string().describe('name <email>'),
  subject: z.string(),
  undid: Sha.describe('the lastgood revert it undid (its commit)'),
  how: z.enum(['git revert', 'content']).describe('git revert: its message says "This reverts commit …"; content: it set the target paths back to what they were before the revert'),
  url: Url,
});

export const RecoveredEntrySchema = z.strictObject({
  kind: z.literal('recovered'),
  at: Time.describe('when the target was healthy again (the start of the healthy run that then soaked)'),
  revert: Sha.describe('the commit lastgood wrote (its revert) that the target recovered at'),
  revision: Sha.describe('the revision the target was verified healthy at (it contains the revert)'),
  mode: z.enum(['commit', 'pull-request']),
  began: Time.describe("the failure began (the failed objects' own times)"),
  confirmed: Time.describe('lastgood confirmed it and decided to revert'),
  written: Time.describe('the revert was written: the commit pushed, or the request opened'),
  merged: Time.nullable().describe('the request was merged (pull-request mode)'),
  synced: Time.describe('the GitOps engine applied a revision containing the revert'),
  healthy: Time.describe('the target was healthy at it'),
  seconds: z.number().nonnegative().describe('from began to healthy'),
  phases: z.array(z.strictObject({
    phase: z.enum(['detect', 'revert', 'review', 'sync', 'rollout']),
    seconds: z.number().nonnegative(),
  })).describe('detect: began → confirmed; revert: → written; review: → merged (pull-request mode); sync: → synced; rollout: → healthy'),
  url: Url,
});

export const EntrySchema = z.discriminatedUnion('kind', [RevertEntrySchema, RequestEntrySchema, VerifiedEntrySchema, PersonRevertEntrySchema, RecoveredEntrySchema]);

export const WindowSchema = z.strictObject({
  since: Time,
  until: Time,
  why: z.string().describe('where `since` comes from: --since, or the default'),
  commitsRead: z.number().int().nonnegative().describe("commits of the branch's first-parent line read"),
  limit: z.number().int().positive().describe('the most commits one log reads'),
  stoppedBy: z.enum(['since', 'limit', 'root']).describe("since: the window's start was reached; limit: the limit was reached first (older history is not read); root: the history begins inside the window"),
  oldestRead: Time.nullable(),
});

export const TargetLogSchema = z.strictObject({
  name: z.string(),
  paths: z.array(z.string()),
  entries: z.array(EntrySchema).describe('newest first'),
});

export const AuditLogSchema = z.strictObject({
  $schema: z.literal('https://lastgood.dev/schema/log.schema.json'),
  repository: z.string(),
  branch: z.string(),
  head: Sha,
  window: WindowSchema,
  /** what could not be read (a request API the token may not use): the log is partial there */
  notes: z.array(z.string()),
  targets: z.array(TargetLogSchema),
});

export type Holds = z.infer<typeof HoldsSchema>;
export type RevertEntry = z.infer<typeof RevertEntrySchema>;
export type RequestEntry = z.infer<typeof RequestEntrySchema>;
export type VerifiedEntry = z.infer<typeof VerifiedEntrySchema>;
export type PersonRevertEntry = z.infer<typeof PersonRevertEntrySchema>;
export type RecoveredEntry = z.infer<typeof RecoveredEntrySchema>;
export type Entry = z.infer<typeof EntrySchema>;
export type AuditWindow = z.infer<typeof WindowSchema>;
export type TargetLog = z.infer<typeof TargetLogSchema>;
export type AuditLog = z.infer<typeof AuditLogSchema>;

export const LOG_SCHEMA_ID = 'https://lastgood.dev/schema/log.schema.json';

/** The JSON Schema published as templates/log.schema.json and printed by `lastgood schema --log`. */
export function logJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(AuditLogSchema, { io: 'output' }) as Record<string, unknown>;
  return { ...schema, $id: LOG_SCHEMA_ID, title: 'lastgood log --json' };
}
