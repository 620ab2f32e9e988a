import { parseTrailers } from '../history/trailers.ts';

/**
 * What a lastgood commit says about itself, read back from its message: the trailers of DESIGN.md
 * ("Commits and pull requests") and the body templates/commit-message.md writes (src/revert/message.ts).
 * Pure: a message in, a record out (undefined for a commit lastgood did not write).
 */
export interface RevertRecord {
  target: string;
  /** the bad commits it reverts, as the trailer names them (full SHAs) */
  reverts: string[];
  /** the last-known-good it goes back to */
  restores?: string;
  strategy?: 'revert' | 'restore';
  /** the target's verdict when it was made: failed or stuck */
  verdict?: string;
  /** analysis | promotion | stuck */
  class?: string;
  /** the last-known-good was verified (observed healthy) when the revert was made; undefined when the body does not say */
  verified?: boolean;
  /** `Lastgood-Evidence` trailers: `group/Kind namespace/name state=… reason=…` */
  evidence: string[];
  /** the body's evidence lines (object: state (reason) since …: message) */
  details: string[];
  /** a person's reason (`lastgood revert --reason`), where one was given */
  reason?: string;
  subject: string;
}

const SHA = /^[0-9a-f]{40}$/;

export function parseRevertMessage(message: string): RevertRecord | undefined {
  const trailers = parseTrailers(message);
  const target = trailers.get('Lastgood-Target')?.[0];
  if (!target) return undefined;
  const lines = message.split('\n');
  const subject = lines[0]!.trim();
  const reverts = (trailers.get('Lastgood-Reverts') ?? []).flatMap((v) => v.split(',')).map((s) => s.trim().toLowerCase()).filter((s) => SHA.test(s));
  const restores = trailers.get('Lastgood-Restores')?.[0]?.trim().toLowerCase();
  const out: RevertRecord = { target, reverts, evidence: trailers.get('Lastgood-Evidence') ?? [], details: [], subject };
  if (restores && SHA.test(restores)) out.restores = restores;
  const strategy = /^lastgood: (revert|restore) /.exec(subject)?.[1];
  if (strategy === 'revert' || strategy === 'restore') out.strategy = strategy;
  // "lastgood reverted the bad commits of T (paths) because it failed (analysis)." / "… because it is stuck."
  const because = / because it (?:failed \((\w+)\)|is (\w+))\.$/m.exec(message);
  if (because?.[1]) {
    out.verdict = 'failed';
    out.class = because[1];
  } else if (because?.[2]) {
    out.verdict = because[2];
    if (because[2] === 'stuck') out.class = 'stuck';
  }
  const lkg = /^Last-known-good: [0-9a-f]{40} \((verified|unverified)\b/m.exec(message);
  if (lkg) out.verified = lkg[1] === 'verified';
  const start = lines.findIndex((l) => l === 'Evidence:');
  if (start >= 0) {
    for (const line of lines.slice(start + 1)) {
      if (!line.startsWith('- ')) break;
      out.details.push(line.slice(2));
    }
  }
  const reason = /^Reason given: (.*)$/m.exec(message)?.[1]?.trim();
  if (reason) out.reason = reason;
  return out;
}

/**
 * The commits a message says it reverts the way `git revert` writes it ("This reverts commit
 * <sha>."; builtin/revert.c), abbreviated or full.
 */
export function revertsNamed(message: string): string[] {
  return [...message.matchAll(/This reverts commit ([0-9a-f]{7,40})\b/g)].map((m) => m[1]!);
}
