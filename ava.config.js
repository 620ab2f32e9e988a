// ava's configuration (a file, not package.json, because the sort below is a function).
import { mkdirSync, statfsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// Node's compile cache for the workers from their first module on (ava's own code, the type
// stripping of test/support/worker-setup.ts): this file runs in ava's main process, whose
// environment each worker inherits. worker-setup.ts enables the same cache for what it loads and
// for the CLIs the tests spawn; set only there, every worker compiled ava and loaded the
// TypeScript stripper anew (~0.2 s of CPU a test file).
const cache = path.join(path.dirname(fileURLToPath(import.meta.url)), 'node_modules', '.cache', 'lastgood-compile');
mkdirSync(cache, { recursive: true });
process.env.NODE_COMPILE_CACHE ??= cache;

// The tests' repositories, clones, mirrors and servers' folders live in memory where the machine
// has a tmpfs at /dev/shm with room (4 GB free): the suite writes and removes ~100,000 small files
// (git objects, refs, locks), and on a disk each worker's cleanup waited seconds for the journal
// (measured: git-remote + local-crash 81 s → 53 s on the same loaded machine). Nothing in the
// tests depends on where the folder is; a TMPDIR set by the caller, or LASTGOOD_TEST_TMPDIR, wins.
const TMPFS_MAGIC = 0x01021994;
function memoryTmp() {
  try {
    const fs = statfsSync('/dev/shm');
    return fs.type === TMPFS_MAGIC && fs.bavail * fs.bsize >= 4 * 2 ** 30 ? '/dev/shm' : undefined;
  } catch {
    return undefined;
  }
}
const tmp = process.env.LASTGOOD_TEST_TMPDIR ?? (process.env.TMPDIR ? undefined : memoryTmp());
if (tmp) process.env.TMPDIR = tmp;

// Two test files run at a time (one per core). Started in name order, the longest files could
// start last and run alone at the end while the other core idles; started longest first, both
// cores stay busy to the end (longest-processing-time-first scheduling). This list only orders:
// a file missing from it runs after these, in name order. Wall seconds per file, measured with
// the whole suite running (2 cores), 2026-11-26; remeasure when a file grows.
const LONGEST_FIRST = [
  'review-hosts', 'audit-log', 'model-property', 'git-remote', 'local-crash', 'refs',
  'exactly-once', 'action', 'local-races', 'busy-branch', 'model-flux', 'analysis-controller',
  'github-backend', 'model-argocd', 'signals', 'package', 'install', 'git-remote-repo', 'run',
  'revert-property', 'analysis-prometheus', 'github-action-record', 'history-shapes', 'model-helm',
  'controller', 'controller-timers', 'controller-observability', 'history-signals',
  'inputs-strict', 'cli-shell',
];
const rank = (file) => {
  const i = LONGEST_FIRST.indexOf(path.basename(file, '.test.ts'));
  return i === -1 ? LONGEST_FIRST.length : i;
};

export default {
  extensions: ['ts'],
  files: ['test/**/*.test.ts'],
  timeout: '120s',
  // a process per test file: tests set process.env (TMPDIR, git's config) and spawn servers and CLIs
  workerThreads: false,
  concurrency: 2,
  require: ['./test/support/worker-setup.ts'],
  sortTestFiles: (a, b) => rank(a) - rank(b) || a.localeCompare(b),
};
