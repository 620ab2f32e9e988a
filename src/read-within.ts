import { closeSync, openSync, readSync } from 'node:fs';

/** The most a file holding a secret may hold (a token, a password, an SSH key): 64 KiB (docs/security.md). */
export const MAX_SECRET_FILE_BYTES = 64 << 10;

/**
 * A file, a pipe or a device read as UTF-8 text, at most `maxBytes`: undefined when it holds
 * more, and no more than the bound is ever read (`/dev/zero`, an endless pipe stop there). The
 * system's errors (no such file, a folder) are the caller's to say. Synchronous: its readers (the
 * config, an event, a credential) read before anything else runs.
 */
export function readTextWithin(file: string, maxBytes: number): string | undefined {
  const fd = openSync(file, 'r');
  try {
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const chunk = Buffer.allocUnsafe(Math.min(1 << 20, maxBytes + 1 - total));
      const bytesRead = readSync(fd, chunk, 0, chunk.length, null);
      if (bytesRead === 0) break;
      chunks.push(chunk.subarray(0, bytesRead));
      total += bytesRead;
      if (total > maxBytes) return undefined;
    }
    return Buffer.concat(chunks, total).toString('utf8');
  } finally {
    closeSync(fd);
  }
}
