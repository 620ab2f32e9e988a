import path from 'node:path/posix';
import { manifestFacts } from '../history/manifests.ts';
import { envsubst } from './envsubst.ts';
import { dataOf, findMaker } from './makers.ts';
import { digestOf } from './scope.ts';
import { joinInside, type TreeView } from './tree.ts';
import type { ModelInput, Setter } from './types.ts';

/**
 * Flux's post-build variables, as far as the repository makes them (issue 34, class 1):
 * `postBuild.substituteFrom` ConfigMaps and Secrets are read from the cluster, in the
 * Kustomization's namespace, in order, later keys winning, then `postBuild.substitute` overrides
 * them, newlines removed (fluxcd/kustomize-controller internal/... kustomize_varsub.go L123-189,
 * research/render.md §1.6). Where the repository itself makes such an object — a kustomize
 * `configMapGenerator`/`secretGenerator`, or a plain manifest, among the files searched — its
 * values at a revision are what the engine substitutes once the parent applies that revision, so
 * its files are inputs of the target, and a change to a literal is a change to what the engine
 * builds for it.
 */

type Rec = Record<string, unknown>;
const isRec = (v: unknown): v is Rec => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

export interface Substitution {
  /** every variable known: substituteFrom's made in the repository, in order, then the inline ones */
  vars: Map<string, string>;
  /** the values of substituteFrom sources found in the repository (the render folds them in) */
  fromRepo: Record<string, string>;
  /** substituteFrom sources made nowhere searched: their values live in the cluster only */
  unknown: string[];
  /** the files that make the sources found (generators' kustomizations and their files, manifests) */
  inputs: ModelInput[];
}

/** Where an object's data comes from in the repository: its variables and the files that make them. */
interface Made {
  vars: Map<string, string>;
  inputs: ModelInput[];
}

/**
 * The post-build variables of a Kustomization spec. `files` are the files searched for the
 * substituteFrom sources (path → blob oid), read only when there are sources.
 */
export async function substitution(view: TreeView, spec: Rec, namespace: string | undefined, files: () => Promise<Map<string, string>>): Promise<Substitution | undefined> {
  const postBuild: Rec = isRec(spec.postBuild) ? spec.postBuild : {};
  const inline: Rec = isRec(postBuild.substitute) ? postBuild.substitute : {};
  const sources = (Array.isArray(postBuild.substituteFrom) ? postBuild.substituteFrom : []).filter(isRec);
  if (sources.length === 0 && Object.keys(inline).length === 0) return undefined;
  const out: Substitution = { vars: new Map(), fromRepo: {}, unknown: [], inputs: [] };
  const searched = sources.length ? await files() : new Map<string, string>();
  for (const s of sources) {
    const kind = s.kind === 'Secret' ? 'Secret' : s.kind === 'ConfigMap' ? 'ConfigMap' : undefined;
    const name = str(s.name);
    if (!kind || !name) continue;
    const made = await findMade(view, searched, kind, name, namespace);
    if (!made) {
      out.unknown.push(`${kind}/${name}${s.optional === true ? ' (optional)' : ''}`);
      continue;
    }
    for (const [k, v] of made.vars) {
      out.vars.set(k, v);
      out.fromRepo[k] = v;
    }
    out.inputs.push(...made.inputs);
  }
  for (const [k, v] of Object.entries(inline)) if (typeof v === 'string') out.vars.set(k, v.replaceAll('\n', ''));
  return out;
}

/**
 * Images the target's files set once the variables are substituted (`image: ${REGISTRY}/app:${TAG}`):
 * the files whose text holds a `${`, expanded as Flux does (envsubst). A variable nobody known sets
 * leaves that file's images unknown when some source lives in the cluster only; otherwise it is ""
 * (the controller's non-strict mode).
 */
export async function substitutedSetters(view: TreeView, files: Array<{ path: string; oid: string }>, sub: Substitution): Promise<Setter[]> {
  const out: Setter[] = [];
  for (const f of files) {
    if (!/\.(ya?ml|json)$/i.test(f.path)) continue;
    const text = Buffer.from(await view.read(f.oid, f.path)).toString('utf8');
    if (!text.includes('${')) continue;
    let unknown = false;
    let expanded: string;
    try {
      expanded = envsubst(text, (name) => {
        const v = sub.vars.get(name);
        if (v !== undefined) return [v, true];
        if (sub.unknown.length) unknown = true;
        return ['', true];
      });
    } catch {
      continue;
    }
    if (unknown) continue;
    for (const image of manifestFacts(expanded, f.path).images) out.push({ what: 'image', where: f.path, inRepo: true, image });
  }
  return out;
}

/** The variables of what makes the ConfigMap/Secret in the repository (makers.ts): every key of a generator entry or a manifest. */
async function findMade(view: TreeView, files: Map<string, string>, kind: 'ConfigMap' | 'Secret', name: string, namespace: string | undefined): Promise<Made | undefined> {
  const found = await findMaker(view, files, kind, name, namespace);
  if (!found) return undefined;
  if (found.kind === 'generator') return generated(view, found.dir, found.path, found.entry);
  const vars = new Map([...dataOf(kind, found.doc)].map(([k, v]) => [k, clean(v)]));
  return { vars, inputs: [{ path: found.path, digest: digestOf({ data: found.doc.data ?? null, stringData: found.doc.stringData ?? null }), role: 'substitute' }] };
}

/** Newlines are removed from a variable's value (kustomize_varsub.go). */
const clean = (v: string) => v.replaceAll('\n', '');

/** A generator entry's keys, as kustomize makes them: `literals`, `envs` files, `files` (key = name or `key=path`). */
async function generated(view: TreeView, dir: string, kustomization: string, gen: Rec): Promise<Made> {
  const vars = new Map<string, string>();
  const inputs: ModelInput[] = [{ path: kustomization, digest: digestOf(gen), role: 'substitute' }];
  const read = async (rel: string): Promise<string | undefined> => {
    const p = joinInside(dir, rel);
    if (p === undefined) return undefined;
    const res = await view.resolve(p, 'drop');
    if (res.kind !== 'file') return undefined;
    inputs.push({ path: res.path, digest: res.oid, role: 'substitute' });
    return Buffer.from(await view.read(res.oid, res.path)).toString('utf8');
  };
  for (const env of [...strings(gen.envs), ...(typeof gen.env === 'string' ? [gen.env] : [])]) {
    const text = await read(env);
    for (const line of (text ?? '').split('\n')) {
      const t = line.trim();
      if (!t || t.startsWith('#') || !t.includes('=')) continue;
      vars.set(t.slice(0, t.indexOf('=')).trim(), clean(t.slice(t.indexOf('=') + 1)));
    }
  }
  for (const f of strings(gen.files)) {
    const [key, rel] = f.includes('=') ? [f.slice(0, f.indexOf('=')), f.slice(f.indexOf('=') + 1)] : [path.basename(f), f];
    const text = await read(rel);
    if (text !== undefined) vars.set(key, clean(text));
  }
  for (const l of strings(gen.literals)) {
    if (!l.includes('=')) continue;
    let v = l.slice(l.indexOf('=') + 1);
    // kustomize strips one pair of surrounding quotes from a literal's value
    if (v.length >= 2 && ((v.startsWith('"') && v.endsWith('"')) || (v.startsWith("'") && v.endsWith("'")))) v = v.slice(1, -1);
    vars.set(l.slice(0, l.indexOf('=')), clean(v));
  }
  return { vars, inputs };
}
