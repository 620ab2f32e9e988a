import { pino, type Logger } from 'pino';
import { redact } from '../scrub.ts';
import { terminalJson, terminalLines, terminalText } from '../revert/markup.ts';

/**
 * The logger of every door: JSON lines on stderr, one object per line, with the time as ISO 8601
 * (`"time":"2026-11-21T09:52:00.000Z"`, not epoch milliseconds: what people and log stores read
 * without a conversion). Fields that name credentials are censored by path, and every line is
 * scrubbed as it is written (redact keeps JSON text valid), so that a secret inside a logged
 * message or object never reaches the log, at any level.
 *
 * - No key twice on one line: pino writes a child logger's bindings and the call's fields side by
 *   side (`log.child({ revision }).info({ revision })` writes "revision" twice, which JSON parsers
 *   read differently); each line is rewritten with the last value of each key (the call's, the
 *   most specific).
 * - `LASTGOOD_LOG_FORMAT=pretty` (for a terminal): `TIME LEVEL message key=value …`, colours when
 *   stderr is a terminal and NO_COLOR is unset. pino-pretty would do it as a worker-thread
 *   transport with a dozen dependencies in the bundle and the image; this is one function.
 */
export const LOG_REDACT_PATHS = [
  'token', '*.token', 'auth', '*.auth', 'password', '*.password', 'authorization', '*.authorization',
  'headers.authorization', '*.headers.authorization', 'headers.cookie', '*.headers.cookie', 'webhook', '*.webhook',
];

export type LogFormat = 'json' | 'pretty';

export function logFormat(env: Record<string, string | undefined> = process.env): LogFormat {
  const value = (env.LASTGOOD_LOG_FORMAT ?? 'json').trim().toLowerCase();
  return value === 'pretty' ? 'pretty' : 'json';
}

export interface LoggerOptions {
  format?: LogFormat;
  /** where the lines go (default: stderr) */
  write?: (line: string) => void;
  /** pretty format: colour the level (default: stderr is a terminal and NO_COLOR is unset) */
  color?: boolean;
}

export function makeLogger(level: string, opts: LoggerOptions = {}): Logger {
  const format = opts.format ?? logFormat();
  const color = opts.color ?? (Boolean(process.stderr.isTTY) && !process.env.NO_COLOR);
  const rewrite = (line: string) => (format === 'pretty' ? prettyLine(line, color) : uniqueKeys(line));
  const options = { level, base: undefined, timestamp: pino.stdTimeFunctions.isoTime, redact: { paths: LOG_REDACT_PATHS, censor: '***' }, hooks: { streamWrite: (s: string) => rewrite(redact(s)) } };
  if (opts.write) {
    const write = opts.write;
    return pino(options, { write: (s: string) => write(s) });
  }
  return pino(options, pino.destination(2));
}

/** One JSON line with each key once (the last value wins, at the first key's place). */
export function uniqueKeys(line: string): string {
  const text = line.endsWith('\n') ? line.slice(0, -1) : line;
  try {
    // control characters JSON.stringify leaves as they are (DEL, C1) become escapes too: nothing reaches the terminal (revert/markup.ts)
    return terminalJson(JSON.stringify(JSON.parse(text))) + '\n';
  } catch {
    return line;
  }
}

const LEVELS: Record<number, [string, string]> = { 10: ['TRACE', '2'], 20: ['DEBUG', '2'], 30: ['INFO', '32'], 40: ['WARN', '33'], 50: ['ERROR', '31'], 60: ['FATAL', '31'] };

/** A JSON line as a person reads it: `2026-11-21T09:52:00.000Z INFO  decided target=podinfo-prod verdict=failed …`. */
export function prettyLine(line: string, color = false): string {
  let obj: Record<string, unknown>;
  try {
    obj = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line;
  }
  const { time, level, msg, err, ...rest } = obj;
  const [name, sgr] = LEVELS[Number(level)] ?? [String(level), '0'];
  const lvl = color ? `\x1b[${sgr}m${name.padEnd(5)}\x1b[0m` : name.padEnd(5);
  // a string bare where it can be read back (no space, quote or "="), else quoted; anything else as JSON;
  // control characters written out either way (a message or a value may quote a file name or a cluster's words)
  const value = (v: unknown) => terminalText(typeof v !== 'string' ? JSON.stringify(v) : v !== '' && !/[\s"=]/.test(v) ? v : JSON.stringify(v));
  const fields = Object.entries(rest).map(([k, v]) => `${terminalText(k)}=${value(v)}`).join(' ');
  const parts = [terminalText(String(time ?? '')), lvl, terminalText(String(msg ?? '')), fields].filter(Boolean).join(' ');
  const e = err as { message?: string; stack?: string } | string | undefined;
  const error = e === undefined ? '' : typeof e === 'string' ? `\n    ${terminalText(e)}` : `\n    ${terminalLines(e.stack ?? e.message ?? JSON.stringify(e)).split('\n').join('\n    ')}`;
  return `${parts}${error}\n`;
}
