import { createRequire } from 'node:module';
import { PerformanceObserver } from 'node:perf_hooks';

/** Node flags that size the young generation: where one is given (the controller's Deployment sets one), it is obeyed as given. */
const YOUNG_GENERATION_FLAGS = /--(max|min)[-_]semi[-_]space[-_]size|--semi[-_]space[-_]growth[-_]factor/;

/** Where the young generation stops growing: 8 MB semi-spaces (as `--max-semi-space-size=8`). */
export const YOUNG_GENERATION_BYTES = 8 * 1024 * 1024;

let bounding = false;

/**
 * Bounds V8's young generation for this process, as `--max-semi-space-size=8` would, which a
 * process cannot set for itself: V8 sizes the young generation when the heap is set up, and
 * `v8.setFlagsFromString('--max-semi-space-size=…')` after that changes nothing (measured on the
 * monorepo bench: 296 MB peak either way). What V8 reads later is the growth factor: each time
 * the young generation grows, it becomes `--semi-space-growth-factor` times larger, up to the
 * maximum (v8 src/heap/new-spaces.cc, SemiSpaceNewSpace::Grow). So the young generation grows as
 * usual until it is seen, after a garbage collection, at half of `limitBytes` or more, and then
 * the factor becomes 1: it stays there.
 *
 * Why: on a machine with gigabytes of memory V8 lets the young generation reach 64 MB semi-spaces
 * (128 MB and more of resident memory) while a cold process builds its first model; a cold
 * monorepo revert peaked at ~300 MB where its live heap was ~70 MB. Bounded at 8 MB it peaks at
 * ~185 MB (the growth factor 1 from the start measured 0 to 8% more CPU, within the bench's noise).
 *
 * In practice: Node reports the young generation's pages (new_space.space_size) at 16 MB from the
 * first collection on (Node 24, x64), at or above half the bound, so the factor becomes 1 at the
 * first collection seen: the young generation stays near V8's initial size. The bench measured the
 * same CPU within its noise (a load average of 2 to 25); choosing the bound from the semi-space's
 * real capacity is left to a quieter measurement.
 *
 * Best effort: the collection is seen after the fact (a PerformanceObserver's entries come in a
 * setImmediate, Node's lib/internal/perf/observe.js), so the young generation may grow once more
 * before it is held, or more where the event loop does not turn for long. Returns false when
 * Node's options already size the young generation. Called by the doors before the first model
 * build: the CLI when a command opens the repository, the Action at its start.
 */
export function boundYoungGeneration(limitBytes = YOUNG_GENERATION_BYTES, nodeOptions = process.env.NODE_OPTIONS ?? '', execArgv = process.execArgv): boolean {
  if ([nodeOptions, ...execArgv].some((o) => YOUNG_GENERATION_FLAGS.test(o))) return false;
  // once a process (a command may open several repositories)
  if (bounding) return true;
  bounding = true;
  const observer = new PerformanceObserver(() => {
    // node:v8 (a few ms to load) waits until the whole heap could hold a young generation at half the bound beside the rest
    if (process.memoryUsage().heapTotal < limitBytes) return;
    const v8 = createRequire(import.meta.url)('node:v8') as typeof import('node:v8');
    const young = v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space');
    // held from half the bound: the collection is seen late (after a turn of the event loop or
    // two), and the young generation may have doubled again meanwhile, up to the bound
    if (!young || young.space_size < limitBytes / 2) return;
    v8.setFlagsFromString('--semi-space-growth-factor=1');
    observer.disconnect();
  });
  observer.observe({ entryTypes: ['gc'] });
  return true;
}
