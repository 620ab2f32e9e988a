import { pino, type Logger } from 'pino';
import { redact } from '../scrub.ts';

/**
 * The logger of every door: JSON lines on stderr. Fields that name credentials are censored by
 * path, and every line is scrubbed as it is written (redact keeps JSON text valid), so that a
 * secret inside a logged message or object never reaches the log, at any level.
 */
export const LOG_REDACT_PATHS = [
  'token', '*.token', 'auth', '*.auth', 'password', '*.password', 'authorization', '*.authorization',
  'headers.authorization', '*.headers.authorization', 'headers.cookie', '*.headers.cookie', 'webhook', '*.webhook',
];

export function makeLogger(level: string): Logger {
  return pino({ level, base: undefined, redact: { paths: LOG_REDACT_PATHS, censor: '***' }, hooks: { streamWrite: redact } }, pino.destination(2));
}
