/**
 * The one scrubber for outside text (issue 15). Evidence comes from the cluster and from event
 * payloads, and lastgood writes it into commit messages, PR bodies, Action outputs, job summaries,
 * notifications, logs and stdout: every piece is scrubbed of secrets and bounded in size first.
 *
 * - `redact(text)`: removes registered secrets (the tokens and webhook URLs lastgood was given)
 *   and well-known credential shapes (the rules of src/scrub-rules.ts, after gitleaks'). Safe on
 *   JSON text: no pattern starts or ends inside an escape sequence, so redacting a serialised
 *   document leaves it valid JSON.
 * - `scrubText(text, { maxBytes })`: redact, then bound (default 4 KiB) with a visible marker.
 * - `scrubDeep(value)`: scrubText on every string of an object tree, in place (the observe boundary).
 *
 * This module imports nothing from lastgood but its own rules (src/scrub-rules.ts): errors.ts
 * builds on it.
 */
import { REDACTED, rulesFor } from './scrub-rules.ts';

export { REDACTED };

/** The default bound for one piece of outside text (an event message, a condition message). */
export const MAX_TEXT_BYTES = 4096;

const secrets = new Set<string>();
/** Every spelling of the registered secrets, longest first (a secret may contain another). */
let spellings: string[] = [];

/** Register a secret (token, webhook URL) so that it is removed wherever it appears. */
export function registerSecret(value: string | undefined): void {
  const v = value?.trim();
  if (!v || v.length < 6 || secrets.has(v)) return;
  secrets.add(v);
  const forms = new Set<string>([v, encodeURIComponent(v), JSON.stringify(v).slice(1, -1), Buffer.from(v).toString('base64')]);
  spellings = [...new Set([...spellings, ...forms])].filter((s) => s.length >= 6).sort((a, b) => b.length - a.length);
}

/**
 * Environment variables that hold what lastgood is given to act with: registered at start, so that
 * their values never reach an output even when they come back inside cluster or event text.
 */
export const SECRET_ENV = [
  'LASTGOOD_GITHUB_TOKEN', 'LASTGOOD_GIT_TOKEN', 'GITHUB_TOKEN', 'GH_TOKEN', 'INPUT_GITHUB-TOKEN', 'INPUT_GITHUB_TOKEN',
  'LASTGOOD_WEBHOOK_URL', 'LASTGOOD_SLACK_WEBHOOK_URL', 'ACTIONS_RUNTIME_TOKEN', 'ACTIONS_ID_TOKEN_REQUEST_TOKEN',
];

/**
 * Words that make a name look secret: an environment variable's name (withheld from a command
 * hook, decide/hook.ts) or a git configuration key (`http.extraHeader`, `credential.helper`). One
 * list for both, so that a name is judged alike wherever it comes from.
 */
export const SECRET_NAME = /TOKEN|SECRET|PASSWORD|PASSWD|KEY|WEBHOOK|CREDENTIAL|EXTRAHEADER/i;

/** Whether `value` is (or contains) a registered secret. */
export function containsSecret(value: string): boolean {
  for (const v of secrets) if (value.includes(v)) return true;
  return false;
}

export function registerEnvironmentSecrets(env: Record<string, string | undefined> = process.env): void {
  for (const name of SECRET_ENV) registerSecret(env[name]);
}

registerEnvironmentSecrets();

/** Removes every registered secret and anything that looks like a credential. */
export function redact(text: string): string {
  if (text.length < 6) return text; // too short to hold a secret
  let out = text;
  for (const s of spellings) if (out.includes(s)) out = out.split(s).join(REDACTED);
  // A rule runs only where one of its keywords is: most strings (names, reasons, revisions) skip
  // them all. Where something was removed, once more: a token glued to the end of one removed by a
  // later rule (`…KEY-1…ghp_…`) starts a word only now; so a second redact finds nothing new.
  for (let pass = 0; pass < 3; pass++) {
    const before = out;
    for (const rule of rulesFor(out)) out = out.replace(rule.pattern, rule.replacement);
    if (out === before) break;
  }
  return out;
}

/** Cuts `text` to at most `maxBytes` UTF-8 bytes, saying how much was cut. */
export function bound(text: string, maxBytes = MAX_TEXT_BYTES): string {
  if (text.length <= maxBytes / 3) return text; // at most 3 bytes per UTF-16 unit: surely within
  const bytes = Buffer.byteLength(text);
  if (bytes <= maxBytes) return text;
  const kept = Buffer.from(text).subarray(0, maxBytes).toString('utf8').replace(/\uFFFD+$/, '');
  return `${kept}…[truncated ${bytes - Buffer.byteLength(kept)} bytes]`;
}

/**
 * Scrubs one piece of outside text: secrets out, then bounded. A huge piece is cut before the
 * patterns run (they stay linear on what is kept) and cut again after; a secret straddling the
 * first cut lies far beyond the second.
 */
export function scrubText(text: string, opts: { maxBytes?: number } = {}): string {
  const max = opts.maxBytes ?? MAX_TEXT_BYTES;
  const pre = Number.isFinite(max) && text.length > max * 4 + 1024 ? text.slice(0, max * 4 + 1024) : text;
  const cut = pre.length < text.length ? Buffer.byteLength(text) - Buffer.byteLength(pre) : 0;
  const out = bound(redact(pre), max);
  if (cut === 0) return out;
  const m = /…\[truncated (\d+) bytes\]$/.exec(out);
  return m ? out.replace(/…\[truncated \d+ bytes\]$/, `…[truncated ${Number(m[1]) + cut} bytes]`) : `${out}…[truncated ${cut} bytes]`;
}

/**
 * Scrubs every string in an object tree, in place, and returns it. Shared subtrees (YAML anchors)
 * and cycles are visited once. Keys are kept: they are field names, and annotations' keys are
 * bounded by Kubernetes; values are what carries outside text.
 */
export function scrubDeep<T>(value: T, opts: { maxBytes?: number } = {}): T {
  const seen = new Set<object>();
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return scrubText(v, opts);
    if (typeof v !== 'object' || v === null || seen.has(v) || v instanceof Date) return v;
    seen.add(v);
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) v[i] = walk(v[i]);
    } else {
      const o = v as Record<string, unknown>;
      for (const k of Object.keys(o)) o[k] = walk(o[k]);
    }
    return v;
  };
  return walk(value) as T;
}

/** A scrubbed deep copy (for outputs: the report itself is left as it is). */
export function scrubbedCopy<T>(value: T, opts: { maxBytes?: number } = {}): T {
  return scrubDeep(structuredClone(value), opts);
}
