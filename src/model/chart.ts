import ignore from 'ignore';
import { loadYamlOr } from '../yaml-read.ts';
import type { GraphFile } from './kustomize.ts';
import { joinInside, type Link, type TreeView } from './tree.ts';
import { isRec } from './values.ts';

/**
 * A Helm chart kept as a folder of the repository, read as Helm loads it (helm pkg/chart/v2/loader
 * directory.go LoadDir): every file below the chart folder, except what `.helmignore` excludes
 * (pkg/ignore/rules.go, gitignore-like patterns, plus the default `templates/.?*`), symlinks
 * followed (sympath.Walk) — or, where the chart comes out of Flux's source artifact, dropped with
 * the artifact's ignore rules applied. Local dependencies (`file://` in Chart.yaml) are read too;
 * a dependency fetched from a chart repository at build time and not vendored in `charts/` cannot
 * be seen into.
 */

type Rec = Record<string, unknown>;

export interface ChartFolder {
  dir: string;
  /** every file the chart loads (Chart.yaml role 'chart', values.yaml role 'values', the rest 'chart') */
  files: GraphFile[];
  /** Chart.yaml, when present */
  chartYaml?: { path: string; oid: string; name?: string; version?: string };
  /** the chart's own values.yaml, parsed ({} when absent or not a mapping) */
  values: Rec;
  valuesPath?: string;
  missing: string[];
  opaque: string[];
  /** folders read (the chart's and its local dependencies'), for the model's regions */
  dirs: string[];
}

export interface ChartRules {
  symlinks: 'drop' | 'follow';
  /** the engine's own ignore rules (Flux's source artifact) */
  ignored?: (file: string, isDir: boolean) => boolean;
  engine: string;
}

const parseYaml = (bytes: Uint8Array, where?: string): unknown => loadYamlOr(bytes, (message) => ({ __error: message }), where);

/** Reads the chart folder `dir` at one revision. */
export async function readChart(view: TreeView, dir: string, rules: ChartRules, depth = 0): Promise<ChartFolder> {
  const out: ChartFolder = { dir, files: [], values: {}, missing: [], opaque: [], dirs: [dir] };
  const top = await view.resolve(dir, rules.symlinks);
  if (top.kind !== 'dir') {
    out.missing.push(`the chart folder ${dir || '.'} does not exist${top.kind === 'escapes' ? ` (a symlink to ${top.target}, outside the repository)` : top.kind === 'dropped' ? ` in ${rules.engine}'s source (it goes through the symlink ${top.link})` : ''}`);
    return out;
  }
  const root = top.path;
  out.dir = root;
  out.dirs = [root];
  const helmignore = ignore();
  const ignoreFile = (await view.list(root)).get('.helmignore');
  if (ignoreFile && ignoreFile.type === 'blob' && ignoreFile.mode !== '120000') {
    helmignore.add(Buffer.from(await view.read(ignoreFile.oid, root ? `${root}/.helmignore` : '.helmignore')).toString('utf8'));
  }
  helmignore.add('templates/.?*');
  const walk = async (real: string, rel: string, via: Link[], seen: Set<string>): Promise<void> => {
    if (seen.has(real)) return;
    seen.add(real);
    for (const [name, e] of [...(await view.list(real))].sort(([a], [b]) => (a < b ? -1 : 1))) {
      const relPath = rel ? `${rel}/${name}` : name;
      const full = real ? `${real}/${name}` : name;
      if (rules.ignored?.(full, e.type === 'tree')) continue;
      if (e.mode === '120000') {
        if (rules.symlinks === 'drop') continue;
        const r = await view.resolve(full, 'follow');
        if (r.kind === 'escapes') {
          out.missing.push(`${full} in the chart ${root || '.'} is a symlink to ${r.target}, outside the repository (${rules.engine} refuses it)`);
          continue;
        }
        const links = [...via, ...(r.kind === 'file' || r.kind === 'dir' ? (r.via ?? []) : [])];
        if (r.kind === 'dir') {
          if (!helmignore.ignores(`${relPath}/`)) await walk(r.path, relPath, links, seen);
        } else if (r.kind === 'file' && !helmignore.ignores(relPath)) {
          out.files.push({ path: r.path, oid: r.oid, role: role(relPath), via: links });
        }
        continue;
      }
      if (e.type === 'tree') {
        if (!helmignore.ignores(`${relPath}/`)) await walk(full, relPath, via, seen);
      } else if (e.type === 'blob' && !helmignore.ignores(relPath)) {
        out.files.push({ path: full, oid: e.oid, role: role(relPath), ...(via.length ? { via } : {}) });
      }
    }
  };
  await walk(root, '', top.via ?? [], new Set());

  const chartFile = out.files.find((f) => f.path === (root ? `${root}/Chart.yaml` : 'Chart.yaml'));
  if (!chartFile) {
    out.missing.push(`${root || '.'} has no Chart.yaml: Helm cannot load the chart`);
    return out;
  }
  const meta = await view.parse('yaml', chartFile.oid, parseYaml, chartFile.path);
  const m: Rec = isRec(meta) ? meta : {};
  if (typeof m.__error === 'string') out.missing.push(`${chartFile.path} does not parse: ${m.__error}`);
  out.chartYaml = { path: chartFile.path, oid: chartFile.oid, ...(typeof m.name === 'string' ? { name: m.name } : {}), ...(m.version !== undefined ? { version: String(m.version) } : {}) };
  const valuesFile = out.files.find((f) => f.path === (root ? `${root}/values.yaml` : 'values.yaml'));
  if (valuesFile) {
    const v = await view.parse('yaml', valuesFile.oid, parseYaml, valuesFile.path);
    out.values = isRec(v) && typeof v.__error !== 'string' ? v : {};
    out.valuesPath = valuesFile.path;
    if (isRec(v) && typeof v.__error === 'string') out.missing.push(`${valuesFile.path} does not parse: ${v.__error}`);
  }

  // dependencies: vendored under charts/, a local folder (file://), or fetched at build time
  const vendored = out.files.map((f) => f.path.slice(root ? root.length + 1 : 0)).filter((p) => p.startsWith('charts/'));
  for (const dep of Array.isArray(m.dependencies) ? m.dependencies.filter(isRec) : []) {
    const name = typeof dep.name === 'string' ? dep.name : undefined;
    if (!name) continue;
    if (vendored.some((p) => p.startsWith(`charts/${name}/`) || new RegExp(`^charts/${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}-[^/]*\\.tgz$`).test(p))) continue;
    const repo = typeof dep.repository === 'string' ? dep.repository : '';
    if (repo.startsWith('file://') && depth < 8) {
      const local = joinInside(root, repo.slice('file://'.length));
      if (local === undefined) {
        out.missing.push(`dependency ${name} of ${chartFile.path} (${repo}) lies outside the repository`);
        continue;
      }
      const sub = await readChart(view, local, rules, depth + 1);
      out.files.push(...sub.files);
      out.missing.push(...sub.missing);
      out.opaque.push(...sub.opaque);
      out.dirs.push(...sub.dirs);
      continue;
    }
    out.opaque.push(`dependency ${name} ${String(dep.version ?? '')} of ${chartFile.path} is fetched from ${repo || 'a chart repository'} at build time (not vendored in charts/): its templates are not in this repository`);
  }
  return out;
}

function role(rel: string): GraphFile['role'] {
  return rel === 'values.yaml' ? 'values' : 'chart';
}
