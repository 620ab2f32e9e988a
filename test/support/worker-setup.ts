import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { enableCompileCache } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Runs in every ava worker before its test file (ava's `require`).
 *
 * One temporary folder per worker, removed when the worker exits: every `os.tmpdir()` of the test
 * file, of the code it runs in-process and of the CLIs and servers it spawns (TMPDIR is
 * inherited) lands in it. Without it each run of the suite left ~1 GB of repositories behind.
 *
 * Node's compile cache, shared by the workers and the CLIs they spawn (NODE_COMPILE_CACHE is
 * inherited; bin/lastgood.js enables it too): a module is compiled once per machine, not once per
 * worker and per spawned CLI. ava.config.js sets it for the workers from their first module on;
 * it is set here again for a worker started another way.
 */

// ava starts workers with --enable-source-maps, which makes Node read and parse the source map of
// every dependency module as it loads (@kubernetes/client-node, octokit…): about 0.5 s of CPU per
// worker. Our TypeScript runs with its types stripped in place, so its positions are already right.
process.setSourceMapsEnabled(false);

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const cache = path.join(root, 'node_modules', '.cache', 'lastgood-compile');
mkdirSync(cache, { recursive: true });
process.env.NODE_COMPILE_CACHE = cache;
enableCompileCache(cache);

// git init and clone copy git's template folder (sample hooks and more) into every repository the
// tests make: an empty template (hooks/ and info/ kept, tests write hooks) is 18 files less a repository.
const template = path.join(root, 'node_modules', '.cache', 'lastgood-git-template');
mkdirSync(path.join(template, 'hooks'), { recursive: true });
mkdirSync(path.join(template, 'info'), { recursive: true });
process.env.GIT_TEMPLATE_DIR = template;
// and every `git commit` the tests make would start `git maintenance run --auto` (a process each)
process.env.GIT_CONFIG_COUNT = '2';
process.env.GIT_CONFIG_KEY_0 = 'maintenance.auto';
process.env.GIT_CONFIG_VALUE_0 = 'false';
process.env.GIT_CONFIG_KEY_1 = 'gc.auto';
process.env.GIT_CONFIG_VALUE_1 = '0';

const workerTmp = mkdtempSync(path.join(os.tmpdir(), 'lastgood-test-worker-'));
process.env.TMPDIR = workerTmp;
process.on('exit', () => {
  try {
    rmSync(workerTmp, { recursive: true, force: true, maxRetries: 2 });
  } catch {
    // a process the test spawned may still be writing there; the OS's tmp cleaning takes the rest
  }
});
