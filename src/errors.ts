import { redact } from './scrub.ts';

/**
 * Typed errors, converted to exit codes once, at the door (cli.ts / action.ts).
 * Every error carries its cause; none may carry a token (see redact()).
 */
/** 0 nothing failed or all handled; 1 failed, not reverted; 2 bad input; 3 an outside system failed; 4 a metric check ended in error (it can never conclude as it is). */
export type ExitCode = 0 | 1 | 2 | 3 | 4;

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

/** An outside system (git remote, a git host's API, Kubernetes API) failed after retries. Exit 3. */
export class RemoteError extends LastgoodError {
  readonly exitCode = 3 as const;
  /** `controller`: a running lastgood controller asked over HTTP (`lastgood status`) */
  readonly system: 'git' | 'github' | 'gitlab' | 'gitea' | 'bitbucket' | 'azure-devops' | 'kubernetes' | 'webhook' | 'prometheus' | 'controller';
  readonly status: number | undefined;
  constructor(system: RemoteError['system'], message: string, opts: { status?: number; cause?: unknown } = {}) {
    super(`${system}: ${message}`, { cause: opts.cause });
    this.system = system;
    this.status = opts.status;
  }
}

/**
 * This machine failed the run: a full disk under repo.cacheDir, a folder lastgood cannot write, the
 * controller's port taken by another process. A world fault like RemoteError (exit 3); `path` names
 * the folder or address, `code` is the system's (ENOSPC, EACCES, EADDRINUSE).
 */
export class LocalError extends LastgoodError {
  readonly exitCode = 3 as const;
  readonly path: string | undefined;
  readonly code: string | undefined;
  constructor(message: string, opts: { path?: string; code?: string; cause?: unknown } = {}) {
    super(message, { cause: opts.cause });
    this.path = opts.path;
    this.code = opts.code;
  }
}

/** The file system's errors that are the machine's state, not lastgood's: said as such, with the folder. */
const DISK_CODES: Record<string, string> = {
  ENOSPC: 'no space is left on the device',
  EDQUOT: 'the disk quota is exhausted',
  EROFS: 'the file system is read-only',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EIO: 'an I/O error occurred',
};

/** The machine's words for a file-system error's code ("no space is left on the device"), or undefined for another code. */
export function diskWords(code: string | undefined): string | undefined {
  return code ? DISK_CODES[code] : undefined;
}

/** A LocalError for a file-system error of the machine while writing under `folder` (`what`: repo.cacheDir, …); undefined for any other error. */
export function diskError(error: unknown, folder: string, what: string): LocalError | undefined {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (!code || !DISK_CODES[code]) return undefined;
  const fix = code === 'ENOSPC' || code === 'EDQUOT' ? 'free some space there, or point it at another volume' : 'give lastgood write access to it, or point it elsewhere';
  return new LocalError(`cannot write under ${folder} (${what}): ${DISK_CODES[code]} (${code}); ${fix}. What was half-written was removed; nothing was written to the repository`, { path: folder, code, cause: error });
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

/**
 * Thrown when the branch moved between plan and delivery: the engine re-plans on the new head, and
 * gives up after a few tries. A branch that keeps moving is an outside system's state: exit 3.
 */
export class StaleHeadError extends LastgoodError {
  readonly exitCode = 3 as const;
  readonly head: string;
  constructor(branch: string, head: string) {
    super(`branch ${branch} kept moving while the revert was planned (now at ${head}); nothing was written: run again when pushes to it settle`);
    this.head = head;
  }
}

// The scrubber lives in scrub.ts (one for every output); errors keep exporting it.
export { redact, registerSecret } from './scrub.ts';
