import fs from 'node:fs';
import { diskWords, InputError, LocalError } from './errors.ts';

/** Why a folder a person named cannot be made, by the system's code. */
const WHY: Record<string, string> = {
  EEXIST: 'is a file, not a folder',
  ENOTDIR: 'lies under a file, not a folder',
  EACCES: 'cannot be made there: permission denied (EACCES)',
  EPERM: 'cannot be made there: operation not permitted (EPERM)',
  ENAMETOOLONG: 'is too long a name (ENAMETOOLONG)',
  ELOOP: 'goes through a loop of symbolic links (ELOOP)',
};
/** The machine's state rather than the name: a world fault (exit 3), not bad usage (words: errors.ts diskWords). */
const MACHINE = new Set(['ENOSPC', 'EDQUOT', 'EROFS', 'EIO']);

/**
 * A folder a command writes into, named by the person (`install --kustomize DIR`, `demo DIR`): made
 * when missing, before anything is written into it. A name that is a file, lies under a file or
 * cannot be made is bad usage naming it (exit 2); a full or read-only disk is the machine's (exit 3).
 * Node's own error would reach the person as "internal error" with a stack.
 */
export function makeOutputFolder(dir: string, what: string): void {
  try {
    fs.mkdirSync(dir, { recursive: true });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? '';
    if (MACHINE.has(code)) throw new LocalError(`${what} ${dir}: cannot make the folder: ${diskWords(code)} (${code}); nothing was written`, { path: dir, code, cause: error });
    throw new InputError(`${what} ${dir}: ${WHY[code] ?? `cannot be made: ${(error as Error).message}`}; nothing was written`, { cause: error });
  }
}
