/**
 * Notifications for what a run did: a generic webhook (JSON POST) and a Slack-compatible incoming
 * webhook, for `alert`, revert done (`reverted`), revert failed (`revert-failed`), a revert request
 * still open (`unmerged`) and the target healthy again at the revert (`recovered`).
 *
 * Webhook URLs are secrets: they come from the environment (LASTGOOD_WEBHOOK_URL,
 * LASTGOOD_SLACK_WEBHOOK_URL) or from config that names an env var or a file (a mounted Secret),
 * never from config text. They are registered with redact() and never logged. A failure to notify
 * is logged (without the URL) and never changes the run's outcome or exit code.
 */
import { readFile } from 'node:fs/promises';
import type { Logger } from 'pino';
import type { ResolvedNotify, SecretRefConfig } from '../config/schema.ts';
import { revertItselfFailed } from '../decide/guards.ts';
import type { Report, TargetOutcome } from '../engine/types.ts';
import { redact, registerSecret } from '../errors.ts';
import { scrubbedCopy } from '../scrub.ts';

export type NotifyEventName = 'alert' | 'reverted' | 'revert-failed' | 'unmerged' | 'recovered';
export type ChannelKind = 'webhook' | 'slack';

export interface Channel {
  kind: ChannelKind;
  url: string;
}

export interface NotifyOptions {
  /** the config's `notify`, resolved (config/schema.ts resolveNotify) */
  config?: ResolvedNotify;
  env?: Record<string, string | undefined>;
  log: Pick<Logger, 'warn' | 'info' | 'debug'>;
  now: Date;
  /**
   * Claims a notification before it is sent (report/once.ts): with it, a revert is announced once
   * whoever made it and however many runs find it (a lost answer, a rerun, another replica);
   * without it, only the run that made the revert announces it.
   */
  claim?: (t: TargetOutcome, event: NotifyEventName) => Promise<boolean>;
  /** the repository host's commit pages (RepoBackend.commitUrl): links in the messages */
  commitUrl?: (sha: string) => string;
  /** events not to send this time: already told (a retry of the same failed revert) */
  except?: readonly NotifyEventName[];
}

export interface Delivery {
  channel: ChannelKind;
  target: string;
  event: NotifyEventName;
  ok: boolean;
  /** HTTP status, or the error (without the URL) */
  detail: string;
}

const DEFAULT_EVENTS: NotifyEventName[] = ['alert', 'reverted', 'revert-failed', 'unmerged', 'recovered'];
/** the schema's default `notify.timeout` (10s), where no config is given */
const DEFAULT_TIMEOUT_MS = 10_000;
const ENV_DEFAULTS: Record<ChannelKind, string> = { webhook: 'LASTGOOD_WEBHOOK_URL', slack: 'LASTGOOD_SLACK_WEBHOOK_URL' };

/** Which notification an outcome calls for, if any. */
export function eventFor(t: Pick<TargetOutcome, 'action' | 'reason' | 'commit' | 'created'>): NotifyEventName | undefined {
  if (t.action === 'revert' && t.commit && t.created !== false) return 'reverted';
  if (t.action === 'alert') return /^(revert impossible|revert failed)\b/.test(t.reason) || revertItselfFailed(t.reason) ? 'revert-failed' : 'alert';
  return undefined;
}

/** The channels configured (config first, else the default env vars). Reads env and files; never throws. */
export async function channelsFor(opts: Pick<NotifyOptions, 'config' | 'env' | 'log'>): Promise<Channel[]> {
  const env = opts.env ?? process.env;
  const out: Channel[] = [];
  for (const kind of ['webhook', 'slack'] as const) {
    const ref: SecretRefConfig = opts.config?.[kind]?.urlFrom ?? { env: ENV_DEFAULTS[kind] };
    const url = await readSecret(ref, env, kind, opts.log, opts.config?.[kind] !== undefined);
    if (!url) continue;
    registerSecret(url);
    if (!/^https?:\/\//i.test(url)) {
      opts.log.warn({ channel: kind, ...describeRef(ref) }, 'notification URL is not an http(s) URL; channel skipped');
      continue;
    }
    out.push({ kind, url });
  }
  return out;
}

async function readSecret(ref: SecretRefConfig, env: Record<string, string | undefined>, kind: ChannelKind, log: NotifyOptions['log'], configured: boolean): Promise<string | undefined> {
  if ('env' in ref) {
    const value = env[ref.env]?.trim();
    if (!value && configured) log.warn({ channel: kind, env: ref.env }, 'notification channel configured but its environment variable is empty');
    return value || undefined;
  }
  try {
    return (await readFile(ref.file, 'utf8')).trim() || undefined;
  } catch (error) {
    log.warn({ channel: kind, file: ref.file, code: (error as NodeJS.ErrnoException).code }, 'cannot read the notification URL file; channel skipped');
    return undefined;
  }
}

function describeRef(ref: SecretRefConfig): Record<string, string> {
  return 'env' in ref ? { env: ref.env } : { file: ref.file };
}

/** Sends one notification per target outcome that calls for one, to every channel. Never throws. */
export async function notify(report: Report, opts: NotifyOptions): Promise<Delivery[]> {
  const candidates = report.targets.flatMap((t) => {
    // with claims, a revert found made (by an earlier run whose answer or process was lost) is announced too, once
    const event = eventFor(t) ?? (opts.claim && t.action === 'revert' && t.commit ? 'reverted' : undefined);
    return event ? [{ t, event }] : [];
  });
  return send(candidates, opts);
}

/**
 * A reminder that lastgood's revert request of a failure is still open while the target stays
 * failed (the controller's `remindUnmerged`): event `unmerged`, to every channel. Never throws.
 */
export function notifyUnmerged(t: TargetOutcome, opts: NotifyOptions): Promise<Delivery[]> {
  return send([{ t, event: 'unmerged' }], opts);
}

/** What a `recovered` notification says of the recovery, beside the outcome: the phases and their times. */
export interface RecoveryNote {
  /** "recovered at …, 6m12s after the failure began (detect …)" */
  sentence: string;
  mode: 'commit' | 'pull-request';
  revision: string;
  seconds: number;
  times: Record<string, string>;
  phases: Array<{ phase: string; seconds: number }>;
}

/**
 * The target is healthy again at a revision containing lastgood's revert (the controller; claimed
 * once in the repository before it is sent): event `recovered`, to every channel. Never throws.
 */
export function notifyRecovered(t: TargetOutcome, recovery: RecoveryNote, opts: NotifyOptions): Promise<Delivery[]> {
  return send([{ t, event: 'recovered', recovery }], opts);
}

async function send(all: Array<{ t: TargetOutcome; event: NotifyEventName; recovery?: RecoveryNote }>, opts: NotifyOptions): Promise<Delivery[]> {
  const wanted = new Set(opts.config?.events ?? DEFAULT_EVENTS);
  for (const told of opts.except ?? []) wanted.delete(told);
  const candidates = all.filter((c) => wanted.has(c.event));
  if (candidates.length === 0) return [];
  const channels = await channelsFor(opts);
  if (channels.length === 0) return [];
  const pending: typeof candidates = [];
  for (const c of candidates) if (c.event !== 'reverted' || !opts.claim || (await opts.claim(c.t, c.event))) pending.push(c);
  const timeoutMs = opts.config?.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const sends = pending.flatMap(({ t, event, recovery }) =>
    channels.map(async (channel): Promise<Delivery> => {
      // scrubbed again on the way out (evidence was scrubbed where it entered)
      const message = channel.kind === 'slack' ? slackMessage(t, event, opts.commitUrl) : { ...webhookPayload(t, event, opts.now, opts.commitUrl), ...(recovery ? { recovery } : {}) };
      const body = scrubbedCopy(message, { maxBytes: Number.POSITIVE_INFINITY });
      const result = await post(channel.url, body, timeoutMs);
      const delivery: Delivery = { channel: channel.kind, target: t.name, event, ...result };
      if (result.ok) opts.log.info({ channel: channel.kind, target: t.name, event }, 'notification sent');
      else opts.log.warn({ channel: channel.kind, target: t.name, event, detail: result.detail }, 'notification failed');
      return delivery;
    }),
  );
  return Promise.all(sends);
}

async function post(url: string, body: unknown, timeoutMs: number): Promise<{ ok: boolean; detail: string }> {
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'user-agent': 'lastgood' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
      redirect: 'error',
    });
    await response.arrayBuffer().catch(() => undefined);
    return { ok: response.ok, detail: `HTTP ${response.status}` };
  } catch (error) {
    if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) return { ok: false, detail: `no answer within ${timeoutMs / 1000}s` };
    // the error code only: messages name the host and port, and a URL is a secret
    const cause = error instanceof Error ? ((error.cause as NodeJS.ErrnoException | undefined)?.code ?? (error.cause instanceof Error ? error.cause.name : error.name)) : 'error';
    return { ok: false, detail: redact(`request failed: ${cause}`) };
  }
}

/** The generic webhook's JSON document. */
export function webhookPayload(t: TargetOutcome, event: NotifyEventName, now: Date, commitUrl?: (sha: string) => string): Record<string, unknown> {
  return {
    kind: 'lastgood.notification/v1',
    event,
    time: now.toISOString(),
    target: t.name,
    verdict: t.verdict,
    class: t.class ?? null,
    action: t.action,
    reason: t.reason,
    summary: t.summary,
    bad: t.bad,
    lastKnownGood: t.lastKnownGood ?? null,
    commit: t.commit ?? null,
    branch: t.branch ?? null,
    pullRequest: t.pullRequest ?? null,
    // the host's own pages, where the repository is on a host lastgood knows
    ...(commitUrl ? { links: { commit: t.commit ? commitUrl(t.commit) : null, bad: t.bad.map(commitUrl), lastKnownGood: t.lastKnownGood ? commitUrl(t.lastKnownGood) : null } } : {}),
    evidence: t.evidence.map((e) => ({
      apiVersion: e.apiVersion, kind: e.kind, namespace: e.namespace ?? null, name: e.name,
      state: e.state, reason: e.reason, message: e.message, since: e.since ?? null,
    })),
  };
}

const SLACK_HEAD: Record<NotifyEventName, string> = {
  alert: ':rotating_light: lastgood alert',
  reverted: ':rewind: lastgood reverted',
  'revert-failed': ':x: lastgood could not revert',
  unmerged: ":hourglass: lastgood's revert is still not merged",
  recovered: ':white_check_mark: lastgood: recovered',
};

/** A Slack incoming-webhook message (`text` with mrkdwn, which compatible receivers also read). */
export function slackMessage(t: TargetOutcome, event: NotifyEventName, commitUrl?: (sha: string) => string): { text: string } {
  // Slack's link syntax <url|text>, where the host's commit page is known
  const sha = (s: string) => (commitUrl ? `<${commitUrl(s)}|${s.slice(0, 12)}>` : `\`${s.slice(0, 12)}\``);
  const lines = [`${SLACK_HEAD[event]}: *${escapeSlack(t.name)}* ${t.verdict}${t.class ? ` (${t.class})` : ''}`, escapeSlack(t.reason)];
  if (t.pullRequest) lines.push(`pull request: ${t.pullRequest}`);
  else if (t.commit) lines.push(`commit: ${sha(t.commit)}${t.branch ? ` on ${escapeSlack(t.branch)}` : ''}`);
  if (t.bad.length) lines.push(`bad: ${t.bad.map(sha).join(', ')}${t.lastKnownGood ? `, back to ${sha(t.lastKnownGood)}` : ''}`);
  return { text: lines.join('\n') };
}

function escapeSlack(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
