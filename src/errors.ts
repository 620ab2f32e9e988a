/**
 * Typed errors, converted to exit codes once, at the door (cli.ts / action.ts).
 * Every error carries its cause; none may carry a token (see redact()).
 */
export type ExitCode = 0 | 1 | 2 | 3;

export abstract class LastgoodError extends Error {
  abstract readonly exitCode: ExitCode;
  constructor(message: string, options?: { cause?: unknown }) {
    super(redact(message), options);
    this.name = new.target.name;
  }
}

/** Bad config: names the file, the field and, where known, the line. Exit 2. */
export class ConfigError extends LastgoodError {
  readonly exitCode = 2 as const;
  readonly file: string | undefined;
  readonly line: number | undefined;
  constructor(message: string, opts: { file?: string; line?: number; cause?: unknown } = {}) {
    super(opts.file ? `${opts.file}${opts.line ? `:${opts.line}` : ''}: ${message}` : message, { cause: opts.cause });
    this.file = opts.file;
    this.line = opts.line;
  }
}

/** Bad usage or bad input (snapshot, repository state, arguments). Exit 2. */
export class InputError extends LastgoodError {
  readonly exitCode = 2 as const;
  readonly file: string | undefined;
  readonly line: number | undefined;
  constructor(message: string, opts: { file?: string; line?: number; cause?: unknown } = {}) {
    super(opts.file ? `${opts.file}${opts.line ? `:${opts.line}` : ''}: ${message}` : message, { cause: opts.cause });
    this.file = opts.file;
    this.line = opts.line;
  }
}

/** An outside system (git remote, GitHub, Kubernetes API) failed after retries. Exit 3. */
export class RemoteError extends LastgoodError {
  readonly exitCode = 3 as const;
  readonly system: 'git' | 'github' | 'kubernetes' | 'webhook';
  readonly status: number | undefined;
  constructor(system: RemoteError['system'], message: string, opts: { status?: number; cause?: unknown } = {}) {
    super(`${system}: ${message}`, { cause: opts.cause });
    this.system = system;
    this.status = opts.status;
  }
}

/**
 * A revert was needed but cannot be made (conflict, nothing to revert to, the revert itself failed).
 * Not a crash: the run reports it for its target and exits 1.
 */
export class RevertImpossible extends Error {
  readonly details: string[];
  constructor(message: string, details: string[] = []) {
    super(redact(message));
    this.name = 'RevertImpossible';
    this.details = details.map(redact);
  }
}

/** Thrown when the branch moved between plan and delivery: the engine re-plans on the new head. */
export class StaleHeadError extends Error {
  readonly head: string;
  constructor(branch: string, head: string) {
    super(`branch ${branch} moved to ${head} while the revert was planned`);
    this.name = 'StaleHeadError';
    this.head = head;
  }
}

const secrets = new Set<string>();

/** Register a secret (token, webhook URL) so that redact() removes it wherever it appears. */
export function registerSecret(value: string | undefined): void {
  if (value && value.length >= 6) secrets.add(value);
}

const TOKEN_PATTERNS: RegExp[] = [
  /\bgh[pousr]_[A-Za-z0-9]{20,}\b/g, // GitHub tokens
  /\bgithub_pat_[A-Za-z0-9_]{20,}\b/g,
  /(https?:\/\/)[^/@\s:]+:[^/@\s]+@/g, // credentials in URLs
  /\b(Bearer|token)\s+[A-Za-z0-9._~+/=-]{12,}/gi,
];

/** Removes every registered secret and anything that looks like a token. */
export function redact(text: string): string {
  let out = text;
  for (const s of secrets) out = out.split(s).join('***');
  for (const re of TOKEN_PATTERNS) out = out.replace(re, (m, p1) => (p1 && /^https?:/.test(p1) ? `${p1}***@` : '***'));
  return out;
}
