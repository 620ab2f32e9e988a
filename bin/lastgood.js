#!/usr/bin/env node
// The `lastgood` command: runs the CLI bundle (dist/cli/, built by scripts/build-cli.ts; `npm ci`
// and `npm pack` build it). Plain JavaScript for Node 20 and later: what a user installs never
// needs TypeScript, a build step or the project's dev-only Node.
import * as nodeModule from 'node:module';

// Node's on-disk compile cache (os.tmpdir(), or NODE_COMPILE_CACHE): a warm start compiles none of
// the bundle again. Node < 22.1 has none; an unwritable cache is a no-op.
nodeModule.enableCompileCache?.();
try {
  await import('../dist/cli/cli.js');
} catch (error) {
  if (error?.code === 'ERR_MODULE_NOT_FOUND' && String(error.message).includes('dist/cli/cli.js')) {
    process.stderr.write('lastgood: the CLI is not built (dist/cli/): run `npm run build` (npm ci does it)\n');
    process.exit(2);
  }
  throw error;
}
