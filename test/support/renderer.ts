import type { ExecutionContext } from 'ava';
import { detectRenderer, type Renderer } from '../../src/verify/render.ts';

/**
 * The machine's kustomize (`kustomize`, else `kubectl kustomize`) for the render tests, or the
 * test says it did not run: it passes saying so, and fails where LASTGOOD_REQUIRE_KUSTOMIZE=1
 * (.ci/run sets it when either is on the PATH) — never a silent pass.
 */
const detected = detectRenderer();

export async function testRenderer(t: ExecutionContext, opts: { say?: boolean } = {}): Promise<Renderer | undefined> {
  const r = await detected;
  if ('unavailable' in r) {
    const line = `render test NOT RUN: ${r.unavailable} (install kustomize or kubectl to run it)`;
    if (process.env.LASTGOOD_REQUIRE_KUSTOMIZE === '1') t.fail(`${line}; LASTGOOD_REQUIRE_KUSTOMIZE=1`);
    else {
      t.log(line);
      t.pass(line);
    }
    return undefined;
  }
  if (opts.say) t.log(`rendering with ${r.kind} (kustomize ${r.version})`);
  return r;
}
