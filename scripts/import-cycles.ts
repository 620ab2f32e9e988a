// Import circles in src/: every relative import (type-only ones too: a type that two modules
// need lives where both can take it) is an edge; a strongly connected component of more than
// one module, or a module importing itself, is a circle. Run by `npm test`; exit 1 names each.
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

if (import.meta.url === `file://${process.argv[1]}`) {
  const root = resolve(process.argv[2] ?? 'src');
  const graph = importGraph(root);
  const found = circles(graph);
  if (found.length === 0) {
    console.log(`import-cycles: ${graph.size} modules in ${relative(process.cwd(), root) || '.'}, no circle`);
  } else {
    for (const c of found) console.error(`import circle: ${c.join(' ↔ ')}`);
    process.exit(1);
  }
}
