// Import circles and layers in src/: every relative import (type-only ones too: a type that two
// modules need lives where both can take it) is an edge; a strongly connected component of more
// than one module, or a module importing itself, is a circle; an import into a later layer
// (LAYERS, the pipeline's order) goes the wrong way. Run by `npm test`; exit 1 names each.
//   node scripts/import-cycles.ts [DIR]
import { readdirSync, readFileSync, statSync, existsSync } from 'node:fs';
import { join, dirname, resolve, relative } from 'node:path';
// TypeScript 6's JavaScript API (package alias `typescript-api`): TypeScript 7, which type-checks, has none
import ts from 'typescript-api';

export function importGraph(root: string): Map<string, string[]> {
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const p = join(dir, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (p.endsWith('.ts') && !p.endsWith('.d.ts')) files.push(p);
    }
  };
  walk(root);
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    const edges = new Set<string>();
    for (const ref of info.importedFiles) {
      const spec = ref.fileName;
      if (!spec.startsWith('.')) continue;
      const target = resolveModule(resolve(dirname(file), spec));
      if (target) edges.add(relative(root, target));
    }
    graph.set(relative(root, file), [...edges]);
  }
  return graph;
}

function resolveModule(path: string): string | undefined {
  for (const p of [path.replace(/\.js$/, '.ts'), path, `${path}.ts`, join(path, 'index.ts')]) {
    if (p.endsWith('.ts') && existsSync(p) && statSync(p).isFile()) return p;
  }
  return undefined;
}

/** Tarjan's strongly connected components; the circles are those of two or more, or a self-edge. */
export function circles(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const indexOf = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    indexOf.set(v, index); low.set(v, index); index++;
    stack.push(v); onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!indexOf.has(w)) { visit(w); low.set(v, Math.min(low.get(v)!, low.get(w)!)); }
      else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, indexOf.get(w)!));
    }
    if (low.get(v) === indexOf.get(v)) {
      const component: string[] = [];
      let w: string;
      do { w = stack.pop()!; onStack.delete(w); component.push(w); } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.sort());
    }
  };
  for (const v of [...graph.keys()].sort()) if (!indexOf.has(v)) visit(v);
  return found;
}

/**
 * The layers of src/, in the order a run flows (DESIGN.md "The pipeline"): a module may import its
 * own layer and those before it, never a later one. Within a layer the stages lean on each other
 * (the model is read by locate and verify, and reads the history; observe and config share the
 * object types); the circle check above keeps them from going round.
 * - base: what every stage may use (errors, the scrubber, the clock, bounded YAML, the version);
 * - cluster: reading the config and the cluster, and judging it (config, observe, assess, analysis, decide);
 * - repository: the repository port, the history, the model, the plan and its verification;
 * - deliver: the backends behind the port;
 * - engine: the engine that composes the stages, its reports and the audit log;
 * - doors: the CLI, the Action, the controller.
 * A module is placed by its first folder under src/ (a file directly in src/ by its name).
 */
export const LAYERS: ReadonlyArray<{ name: string; members: readonly string[] }> = [
  { name: 'base', members: ['errors.ts', 'network.ts', 'scrub.ts', 'scrub-rules.ts', 'clock.ts', 'yaml-read.ts', 'retry.ts', 'version.ts', 'output-folder.ts', 'read-within.ts'] },
  { name: 'cluster', members: ['config', 'observe', 'health', 'analysis', 'decide'] },
  { name: 'repository', members: ['repo', 'history', 'model', 'revert', 'verify'] },
  { name: 'deliver', members: ['deliver'] },
  { name: 'engine', members: ['engine', 'report', 'audit'] },
  { name: 'doors', members: ['cli.ts', 'action.ts', 'completion.ts', 'version-info.ts', 'demo', 'controller'] },
];

/** The layer of a module (its path relative to src/), or undefined when no layer names it. */
export function layerOf(module: string, layers: typeof LAYERS = LAYERS): number | undefined {
  const top = module.split(/[\\/]/)[0]!;
  const i = layers.findIndex((l) => l.members.includes(top));
  return i < 0 ? undefined : i;
}

/** Imports that go from a layer to a later one, and modules no layer names. */
export function layerViolations(graph: Map<string, string[]>, layers: typeof LAYERS = LAYERS): string[] {
  const out: string[] = [];
  for (const [from, targets] of [...graph].sort(([a], [b]) => a.localeCompare(b))) {
    const a = layerOf(from, layers);
    if (a === undefined) {
      out.push(`${from}: in no layer (scripts/import-cycles.ts LAYERS)`);
      continue;
    }
    for (const to of targets) {
      const b = layerOf(to, layers);
      if (b !== undefined && b > a) out.push(`${from} (${layers[a]!.name}) imports ${to} (${layers[b]!.name}), a later layer`);
    }
  }
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const root = resolve(process.argv[2] ?? 'src');
  const graph = importGraph(root);
  const found = circles(graph);
  const wrongWay = layerViolations(graph);
  for (const c of found) console.error(`import circle: ${c.join(' ↔ ')}`);
  for (const v of wrongWay) console.error(`layer: ${v}`);
  if (found.length > 0 || wrongWay.length > 0) process.exit(1);
  console.log(`import-cycles: ${graph.size} modules in ${relative(process.cwd(), root) || '.'}, no circle, no import into a later layer (${LAYERS.map((l) => l.name).join(' → ')})`);
}
