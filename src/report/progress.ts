/**
 * Progress of a long transfer on stderr, as git and flux show it: nothing for a fetch that ends
 * within `afterMs` (one second), then the bytes so far — rewritten in place on a terminal, a line
 * every `everyMs` elsewhere (a CI log) — and a last line when it ends. The clock is injected, so
 * the rule is tested without waiting.
 */
import type { TransferEvent } from '../repo/types.ts';
import { terminalText } from '../revert/markup.ts';

export type { TransferEvent };

export interface ProgressOptions {
  write: (text: string) => void;
  now?: () => number;
  tty: boolean;
  afterMs?: number;
  /** where lines cannot be rewritten: one every so often (default 5 s) */
  everyMs?: number;
}

const size = (bytes: number) => (bytes >= 1024 * 1024 ? `${(bytes / 1024 / 1024).toFixed(1)} MiB` : `${Math.round(bytes / 1024)} KiB`);

export function progressReporter(opts: ProgressOptions): (event: TransferEvent) => void {
  const now = opts.now ?? Date.now;
  const afterMs = opts.afterMs ?? 1000;
  const everyMs = opts.everyMs ?? 5000;
  let started: number | undefined;
  let shown: number | undefined;
  return (event) => {
    const t = now();
    started ??= t;
    const elapsed = t - started;
    const line = `lastgood: fetching from ${terminalText(event.host)}: ${size(event.bytes)}`;
    if (event.done) {
      if (shown !== undefined) opts.write(`${opts.tty ? '\r\x1b[K' : ''}${line}, done in ${(elapsed / 1000).toFixed(1)} s\n`);
      started = undefined;
      shown = undefined;
      return;
    }
    if (elapsed < afterMs) return;
    if (opts.tty) {
      if (shown === undefined || t - shown >= 100) {
        opts.write(`\r\x1b[K${line}`);
        shown = t;
      }
    } else if (shown === undefined || t - shown >= everyMs) {
      opts.write(`${line}\n`);
      shown = t;
    }
  };
}
