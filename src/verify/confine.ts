import path from 'node:path/posix';
import { isRemote, KUSTOMIZATION_FILES, parseKustomization, type Kustomization } from './kustomization.ts';

/**
 * What a build may read: nothing outside the repository, nothing remote.
 *
 * Flux confines kustomize to the artifact root (fluxcd/pkg `kustomize/filesys/fs_secure.go`,
 * isSecurePath) while letting it load anywhere inside (LoadRestrictionsNone). The kustomize binary
 * lastgood runs has no such jail: with LoadRestrictionsNone a `resources: [../../../../etc/…]` would
 * read this machine's files into a diff. So every path a reachable kustomization names is checked
 * against the repository root before the build, and a remote base (which Flux would clone, and
 * lastgood will not fetch) makes the target "cannot verify".
 *
 * Paths that a kustomization names (kustomize api/types/kustomization.go and the generator args).
 */

export interface Tree {
  /** the text of a repo-relative file, or undefined */
  read(p: string): string | undefined;
  isDir(p: string): boolean;
}

const escapes = (p: string) => path.isAbsolute(p) || p === '..' || p.startsWith('../');
const isInline = (s: string) => s.includes('\n');

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : typeof v === 'string' ? [v] : [];
}

function objects(v: unknown): Record<string, unknown>[] {
  return Array.isArray(v) ? v.filter((x): x is Record<string, unknown> => !!x && typeof x === 'object' && !Array.isArray(x)) : [];
}

/** Every reference a kustomization makes: [field, value, may be a kustomization directory]. */
function references(k: Kustomization): Array<[string, string, boolean]> {
  const out: Array<[string, string, boolean]> = [];
  const add = (field: string, values: string[], dirs = false) => {
    for (const v of values) if (v && !isInline(v)) out.push([field, v, dirs]);
  };
  for (const f of ['resources', 'bases', 'components', 'generators', 'transformers', 'validators']) add(f, strings(k[f]), true);
  add('crds', strings(k.crds));
  add('configurations', strings(k.configurations));
  add('patchesStrategicMerge', strings(k.patchesStrategicMerge).filter((s) => !s.trimStart().startsWith('{')));
  for (const f of ['patches', 'patchesJson6902', 'replacements']) add(`${f}[].path`, objects(k[f]).flatMap((p) => strings(p.path)));
  for (const f of ['configMapGenerator', 'secretGenerator']) {
    for (const g of objects(k[f])) {
      add(`${f}[].files`, strings(g.files).map((s) => (s.includes('=') ? s.slice(s.indexOf('=') + 1) : s)));
      add(`${f}[].envs`, [...strings(g.envs), ...strings(g.env)]);
    }
  }
  const openapi = k.openapi as Record<string, unknown> | undefined;
  if (openapi && typeof openapi === 'object') add('openapi.path', strings(openapi.path));
  const globals = k.helmGlobals as Record<string, unknown> | undefined;
  if (globals && typeof globals === 'object') add('helmGlobals', [...strings(globals.chartHome), ...strings(globals.configHome)]);
  for (const c of objects(k.helmCharts)) add('helmCharts[].valuesFile', [...strings(c.valuesFile), ...strings(c.additionalValuesFiles)]);
  return out;
}

/**
 * Walks the kustomizations reachable from `root` (repo-relative). Returns undefined when every path
 * stays inside the repository and nothing is remote; else the reason, naming the file and the entry.
 */
export function confinementProblem(tree: Tree, root: string): string | undefined {
  const seen = new Set<string>();
  const visit = (dir: string): string | undefined => {
    if (seen.has(dir)) return undefined;
    seen.add(dir);
    const name = KUSTOMIZATION_FILES.find((f) => tree.read(path.join(dir, f)) !== undefined);
    if (!name) return undefined;
    const file = path.join(dir, name);
    let k: Kustomization;
    try {
      k = parseKustomization(tree.read(file)!, file);
    } catch {
      return undefined; // kustomize reports a broken file itself, with its own message
    }
    for (const [field, ref, dirs] of references(k)) {
      if (isRemote(ref)) return `${file}: ${field} entry ${ref} is remote: lastgood does not fetch remote bases, so it cannot render this target`;
      const target = path.normalize(path.join(dir, ref));
      if (escapes(ref.startsWith('/') ? ref : target)) return `${file}: ${field} entry ${ref} is outside the repository: not rendered (the build would read files of this machine)`;
      if (dirs && tree.isDir(target)) {
        const problem = visit(target === '.' ? '' : target);
        if (problem) return problem;
      }
    }
    return undefined;
  };
  return visit(root);
}
