import path from 'node:path/posix';
import jsYaml from 'js-yaml';
import { isRemote, KUSTOMIZATION_FILES, parseKustomization, type Kustomization } from './kustomization.ts';

/**
 * What a build reads: walked before kustomize runs, for two reasons.
 *
 * 1. Nothing outside the repository, nothing remote. Flux confines kustomize to the artifact root
 *    (fluxcd/pkg `kustomize/filesys/fs_secure.go`, isSecurePath) while letting it load anywhere
 *    inside (LoadRestrictionsNone). The kustomize binary lastgood runs has no such jail: with
 *    LoadRestrictionsNone a `resources: [../../../../etc/…]` would read this machine's files into
 *    a diff. So every path a reachable kustomization (or a builtin plugin config it names) refers
 *    to is checked against the repository root, and a remote base (which Flux would clone, and
 *    lastgood will not fetch) makes the target "cannot verify".
 * 2. Only what the build reads is written to the temporary tree: a revision's files can be tens of
 *    thousands, a target's build reads a few dozen (bench/render.bench.ts).
 *
 * The paths a kustomization names: kustomize api/types/kustomization.go and the generator args.
 */

export interface Tree {
  /** the text of a repo-relative file, or undefined */
  read(p: string): string | undefined;
  isDir(p: string): boolean;
  /** every file at or below a repo-relative directory ('' = the root) */
  filesUnder(dir: string): string[];
  /** the files directly in a directory */
  filesIn(dir: string): string[];
}

export interface BuildInputs {
  /** why the build must not run (a path outside the repository, a remote base) */
  problem?: string;
  /** the repo-relative files the build may read */
  files: Set<string>;
}

const escapes = (p: string) => path.isAbsolute(p) || p === '..' || p.startsWith('../');
const isInline = (s: string) => s.includes('\n');

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : typeof v === 'string' ? [v] : [];
}

function objects(v: unknown): Record<string, unknown>[] {
  return Array.isArray(v) ? v.filter((x): x is Record<string, unknown> => !!x && typeof x === 'object' && !Array.isArray(x)) : [];
}

type Ref = { field: string; ref: string; kind: 'dir-or-file' | 'file' | 'plugin' | 'tree' };

/** Every reference a kustomization makes. */
function references(k: Kustomization): Ref[] {
  const out: Ref[] = [];
  const add = (field: string, values: string[], kind: Ref['kind'] = 'file') => {
    for (const v of values) if (v) out.push({ field, ref: v, kind });
  };
  for (const f of ['resources', 'bases', 'components']) add(f, strings(k[f]).filter((s) => !isInline(s)), 'dir-or-file');
  // generators/transformers/validators: a directory (a kustomization), a file or inline YAML, both builtin plugin configs
  for (const f of ['generators', 'transformers', 'validators']) add(f, strings(k[f]), 'plugin');
  add('crds', strings(k.crds));
  add('configurations', strings(k.configurations));
  add('patchesStrategicMerge', strings(k.patchesStrategicMerge).filter((s) => !isInline(s) && !s.trimStart().startsWith('{')));
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
  const charts = objects(k.helmCharts);
  if (globals && typeof globals === 'object') add('helmGlobals', [...strings(globals.chartHome), ...strings(globals.configHome)], 'tree');
  if (charts.length && !(globals && typeof globals === 'object' && strings(globals.chartHome).length)) add('helmCharts (chartHome)', ['charts'], 'tree');
  for (const c of charts) add('helmCharts[].valuesFile', [...strings(c.valuesFile), ...strings(c.additionalValuesFiles)]);
  return out;
}

/** Paths inside a builtin plugin config (PatchTransformer path, ConfigMapGenerator files, …), any depth. */
function pluginReferences(text: string): Ref[] {
  const out: Ref[] = [];
  let docs: unknown[];
  try {
    docs = jsYaml.loadAll(text, undefined, { schema: jsYaml.CORE_SCHEMA });
  } catch {
    return out; // kustomize reports it
  }
  const walk = (v: unknown, key: string) => {
    if (Array.isArray(v)) v.forEach((x) => walk(x, key));
    else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) walk(x, k);
    else if (typeof v === 'string' && ['path', 'files', 'envs', 'env', 'valuesFile', 'additionalValuesFiles', 'chartHome', 'configHome'].includes(key) && !isInline(v)) {
      out.push({ field: `plugin config ${key}`, ref: key === 'files' && v.includes('=') ? v.slice(v.indexOf('=') + 1) : v, kind: key.endsWith('Home') ? 'tree' : 'file' });
    }
  };
  for (const d of docs) walk(d, '');
  return out;
}

/**
 * Walk the kustomizations reachable from `root` (repo-relative): the files they may read, or the
 * reason not to build, naming the file and the entry.
 */
export function buildInputs(tree: Tree, root: string): BuildInputs {
  const files = new Set<string>();
  const seen = new Set<string>();
  const check = (file: string, dir: string, r: Ref): string | undefined => {
    if (isRemote(r.ref)) return `${file}: ${r.field} entry ${r.ref} is remote: lastgood does not fetch remote bases, so it cannot render this target`;
    const target = path.normalize(path.join(dir, r.ref));
    if (escapes(r.ref.startsWith('/') ? r.ref : target)) return `${file}: ${r.field} entry ${r.ref} is outside the repository: not rendered (the build would read files of this machine)`;
    return undefined;
  };
  const visit = (dir: string): string | undefined => {
    if (seen.has(dir)) return undefined;
    seen.add(dir);
    // the folder's own files: its kustomization, and what kustomize may find next to it
    for (const f of tree.filesIn(dir)) files.add(f);
    const name = KUSTOMIZATION_FILES.find((f) => tree.read(path.join(dir, f)) !== undefined);
    if (!name) return undefined;
    const file = path.join(dir, name);
    let k: Kustomization;
    try {
      k = parseKustomization(tree.read(file)!, file);
    } catch {
      return undefined; // kustomize reports a broken file itself, with its own message
    }
    const refs = references(k);
    for (let i = 0; i < refs.length; i++) {
      const r = refs[i]!;
      if (r.kind === 'plugin' && isInline(r.ref)) {
        refs.push(...pluginReferences(r.ref));
        continue;
      }
      const problem = check(file, dir, r);
      if (problem) return problem;
      const target = path.normalize(path.join(dir, r.ref));
      const rel = target === '.' ? '' : target;
      if (tree.read(rel) !== undefined) {
        files.add(rel);
        if (r.kind === 'plugin') refs.push(...pluginReferences(tree.read(rel)!));
      } else if (tree.isDir(rel)) {
        if (r.kind === 'tree') for (const f of tree.filesUnder(rel)) files.add(f);
        else {
          const nested = visit(rel);
          if (nested) return nested;
        }
      }
    }
    return undefined;
  };
  const problem = visit(root === '.' ? '' : root);
  return problem ? { problem, files } : { files };
}
