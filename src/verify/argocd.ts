import type { Kustomization } from './kustomization.ts';

/**
 * What Argo CD's repo-server does to a kustomize source before `kustomize build`: the
 * `kustomize edit` commands of argo-cd `util/kustomize/kustomize.go` Build() at 37ee009
 * (L164-381), applied here to the kustomization object, with the semantics of the kustomize
 * edit commands they run (kubernetes-sigs/kustomize `kustomize/commands/edit/`:
 * set/set_name_prefix.go, set/setimage.go, set/setreplicas.go, add/addmetadata.go,
 * set/setnamespace.go, add/addcomponent.go; each reads the file through kustfile.Read, which
 * applies Kustomization.FixKustomization, api/types/kustomization.go L224-267).
 */

export class ArgoEditError extends Error {}

const isMap = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);
const str = (v: unknown) => (typeof v === 'string' ? v : '');

/**
 * Go's os.Expand as Argo CD's Env.Envsubst uses it (pkg/apis/application/v1alpha1/types.go
 * L181-193): `$NAME` and `${NAME}`, `$$` → `$`, an unknown variable → "".
 */
export function argoEnvsubst(s: string, env: Record<string, string>): string {
  const special = (c: string | undefined) => c !== undefined && /[*#$@!?\-0-9]/.test(c);
  const alnum = (c: string | undefined) => c !== undefined && /[A-Za-z0-9_]/.test(c);
  const map = (name: string) => (name === '$' ? '$' : (env[name] ?? ''));
  let out = '';
  let i = 0;
  for (let j = 0; j < s.length; j++) {
    if (s[j] !== '$' || j + 1 >= s.length) continue;
    out += s.slice(i, j);
    const rest = s.slice(j + 1);
    let name = '';
    let w = 0;
    if (rest[0] === '{') {
      if (rest.length > 2 && special(rest[1]) && rest[2] === '}') [name, w] = [rest[1]!, 3];
      else {
        const close = rest.indexOf('}');
        if (close === 1) [name, w] = ['', 2];
        else if (close > 1) [name, w] = [rest.slice(1, close), close + 1];
        else [name, w] = ['', 1];
      }
    } else if (special(rest[0])) [name, w] = [rest[0]!, 1];
    else {
      while (w < rest.length && alnum(rest[w])) w++;
      name = rest.slice(0, w);
    }
    if (name === '' && w > 0) {
      // invalid syntax: the characters are eaten
    } else if (name === '') out += '$';
    else out += map(name);
    j += w;
    i = j + 1;
  }
  return out + s.slice(i);
}

/** kustomize api/internal/image/image.go Split */
export function splitImage(image: string): { name: string; tag: string; digest: string } {
  const slash = image.indexOf('/');
  const offset = slash > 0 ? slash : 0;
  const search = slash > 0 ? image.slice(slash) : image;
  let id = search.indexOf('@');
  let ic = search.indexOf(':');
  if (ic < 0 && id < 0) return { name: image, tag: '', digest: '' };
  if (id >= 0 && (id < ic || ic < 0)) {
    id += offset;
    return { name: image.slice(0, id), tag: '', digest: image.slice(id + 1) };
  }
  if (id >= 0 && ic >= 0) {
    id += offset;
    ic += offset;
    return { name: image.slice(0, ic), tag: image.slice(ic + 1, id), digest: image.slice(id + 1) };
  }
  ic += offset;
  return { name: image.slice(0, ic), tag: image.slice(ic + 1), digest: '' };
}

interface Image { name: string; newName: string; newTag: string; digest: string }

/** setimage.go parse() L209-236 */
function parseImageArg(arg: string): Image {
  const eq = arg.indexOf('=');
  const [key, value] = eq >= 0 ? [arg.slice(0, eq), arg.slice(eq + 1)] : ['', arg];
  const { name, tag, digest } = splitImage(value);
  if (name === arg) throw new ArgoEditError(`kustomize edit set image ${arg}: invalid format of image`);
  return key === '' ? { name, newName: '', newTag: tag, digest } : { name: key, newName: name, newTag: tag, digest };
}

const imageOut = (i: Image) => {
  const o: Record<string, string> = { name: i.name };
  if (i.newName) o.newName = i.newName;
  if (i.newTag) o.newTag = i.newTag;
  if (i.digest) o.digest = i.digest;
  return o;
};

/** setimage.go RunSetImage L121-180: an argument replaces the entry of its name ('*' keeps a field); sorted by name */
function setImages(kus: Kustomization, args: string[]): void {
  const byName = new Map<string, Image>();
  for (const a of args) {
    const im = parseImageArg(a);
    byName.set(im.name, im);
  }
  for (const e of Array.isArray(kus.images) ? kus.images : []) {
    if (!isMap(e)) continue;
    const existing: Image = { name: str(e.name), newName: str(e.newName), newTag: str(e.newTag), digest: str(e.digest) };
    const arg = byName.get(existing.name);
    if (!arg) {
      byName.set(existing.name, existing);
      continue;
    }
    if (arg.newName === '*') arg.newName = existing.newName;
    if (arg.newTag === '*') arg.newTag = existing.newTag;
    if (arg.digest === '*') arg.digest = existing.digest;
  }
  const list = [...byName.values()].map((i) => ({
    name: i.name,
    newName: i.newName === '*' ? '' : i.newName,
    newTag: i.newTag === '*' ? '' : i.newTag,
    digest: i.digest === '*' ? '' : i.digest,
  }));
  list.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  kus.images = list.map(imageOut);
}

/** setreplicas.go RunSetReplicas L82-112: arguments win, other entries kept, sorted by name */
function setReplicas(kus: Kustomization, replicas: unknown[]): void {
  const byName = new Map<string, { name: string; count: number }>();
  for (const r of replicas) {
    if (!isMap(r)) continue;
    const count = typeof r.count === 'number' ? r.count : /^[+-]?\d+$/.test(str(r.count)) ? Number(r.count) : NaN;
    if (!Number.isInteger(count)) throw new ArgoEditError(`expected integer value for count. Received: ${String(r.count)}`);
    const name = str(r.name);
    if (name.includes('=')) throw new ArgoEditError('invalid format of replica, use the following format: <name>=<count>');
    byName.set(name, { name, count });
  }
  for (const e of Array.isArray(kus.replicas) ? kus.replicas : []) {
    if (isMap(e) && !byName.has(str(e.name))) byName.set(str(e.name), e as { name: string; count: number });
  }
  kus.replicas = [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** addmetadata.go writeToMapEntry L159-165 */
function writeEntry(m: Record<string, unknown>, k: string, v: string, force: boolean, kind: string): void {
  if (Object.hasOwn(m, k) && !force) throw new ArgoEditError(`${kind} ${k} already in kustomization file. Use --force to override.`);
  m[k] = v;
}

/** addmetadata.go addLabels L140-148 and writeToLabels L167-192 */
function addLabels(kus: Kustomization, labels: Record<string, string>, o: { force: boolean; withoutSelector: boolean; includeTemplates: boolean }): void {
  if (!o.withoutSelector) {
    if (o.includeTemplates) throw new ArgoEditError('--without-selector flag must be specified for --include-templates to work');
    const m = isMap(kus.commonLabels) ? { ...kus.commonLabels } : {};
    for (const [k, v] of Object.entries(labels)) writeEntry(m, k, v, o.force, 'label');
    kus.commonLabels = m;
    return;
  }
  const list = (Array.isArray(kus.labels) ? kus.labels : []).map((l) => (isMap(l) ? { ...l, pairs: isMap(l.pairs) ? { ...l.pairs } : {} } : l)) as Array<Record<string, unknown> & { pairs: Record<string, unknown> }>;
  const matches = (l: Record<string, unknown>) => (l.includeSelectors === true) === false && (l.includeTemplates === true) === o.includeTemplates;
  for (const [k, v] of Object.entries(labels)) {
    const at = list.findIndex((l) => isMap(l) && matches(l));
    if (at >= 0) writeEntry(list[at]!.pairs, k, v, o.force, 'label');
    else {
      const entry: Record<string, unknown> & { pairs: Record<string, unknown> } = { pairs: { [k]: v }, includeSelectors: false };
      if (o.includeTemplates) entry.includeTemplates = true;
      list.push(entry);
    }
  }
  kus.labels = list;
}

/** FixKustomization (api/types/kustomization.go L224-257), as each `kustomize edit` reads the file */
function fixKustomization(kus: Kustomization): void {
  if (!kus.kind) kus.kind = 'Kustomization';
  if (!kus.apiVersion) kus.apiVersion = kus.kind === 'Component' ? 'kustomize.config.k8s.io/v1alpha1' : 'kustomize.config.k8s.io/v1beta1';
  if (Array.isArray(kus.bases)) {
    kus.resources = [...(Array.isArray(kus.resources) ? kus.resources : []), ...kus.bases];
    delete kus.bases;
  }
  if (Array.isArray(kus.imageTags)) {
    kus.images = [...(Array.isArray(kus.images) ? kus.images : []), ...kus.imageTags];
    delete kus.imageTags;
  }
  for (const f of ['configMapGenerator', 'secretGenerator']) {
    for (const g of Array.isArray(kus[f]) ? (kus[f] as unknown[]) : []) {
      if (isMap(g) && typeof g.env === 'string' && g.env !== '') {
        g.envs = [...(Array.isArray(g.envs) ? g.envs : []), g.env];
        delete g.env;
      }
    }
  }
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/**
 * Apply an Application's `spec.source.kustomize` to the kustomization, in Argo CD's order:
 * namePrefix, nameSuffix, images, replicas, commonLabels, commonAnnotations, namespace, patches,
 * components. Returns undefined when the options ask for no edit (the file is then not rewritten).
 * Throws ArgoEditError with kustomize's own message where `kustomize edit` would fail.
 */
export function applyArgoKustomize(
  original: Kustomization,
  opts: Record<string, unknown>,
  env: Record<string, string>,
  componentExists: (relativeToApp: string) => boolean,
): Kustomization | undefined {
  const kus = structuredClone(original);
  let edited = false;
  const edit = () => {
    if (!edited) fixKustomization(kus);
    edited = true;
  };
  if (str(opts.namePrefix)) {
    edit();
    kus.namePrefix = str(opts.namePrefix);
  }
  if (str(opts.nameSuffix)) {
    edit();
    kus.nameSuffix = str(opts.nameSuffix);
  }
  if (Array.isArray(opts.images) && opts.images.length) {
    edit();
    setImages(kus, opts.images.map((i) => argoEnvsubst(String(i), env)));
  }
  if (Array.isArray(opts.replicas) && opts.replicas.length) {
    edit();
    setReplicas(kus, opts.replicas);
  }
  if (isMap(opts.commonLabels) && Object.keys(opts.commonLabels).length) {
    edit();
    const labels = Object.fromEntries(Object.entries(opts.commonLabels).map(([k, v]) => [k, argoEnvsubst(String(v), env)]));
    addLabels(kus, labels, { force: opts.forceCommonLabels === true, withoutSelector: opts.labelWithoutSelector === true, includeTemplates: opts.labelIncludeTemplates === true });
  }
  if (isMap(opts.commonAnnotations) && Object.keys(opts.commonAnnotations).length) {
    edit();
    const m = isMap(kus.commonAnnotations) ? { ...kus.commonAnnotations } : {};
    for (const [k, v] of Object.entries(opts.commonAnnotations)) {
      writeEntry(m, k, opts.commonAnnotationsEnvsubst === true ? argoEnvsubst(String(v), env) : String(v), opts.forceCommonAnnotations === true, 'annotation');
    }
    kus.commonAnnotations = m;
  }
  if (str(opts.namespace)) {
    edit();
    const ns = str(opts.namespace);
    if (ns.length > 63 || !DNS_LABEL.test(ns)) throw new ArgoEditError(`"${ns}" is not a valid namespace name`);
    kus.namespace = ns;
  }
  if (Array.isArray(opts.patches) && opts.patches.length) {
    // no `kustomize edit` here: Argo CD appends its typed patches to the file's list (L282-335)
    if (kus.patches !== undefined && !Array.isArray(kus.patches)) throw new ArgoEditError(`expected 'patches' field in kustomization.yaml to be []any`);
    kus.patches = [...((kus.patches as unknown[] | undefined) ?? []), ...opts.patches.map((p) => typedPatch(p))];
    edited = true;
  }
  if (Array.isArray(opts.components) && opts.components.length) {
    let found = opts.components.map(String);
    if (opts.ignoreMissingComponents === true) found = found.filter((c) => componentExists(c));
    if (found.length) {
      edit();
      const list = Array.isArray(kus.components) ? [...kus.components] : [];
      for (const c of found) {
        if (!componentExists(c)) throw new ArgoEditError(`kustomize edit add component ${c}: ${c} has no match`);
        if (!list.includes(c)) list.push(c);
      }
      kus.components = list;
    }
  }
  return edited ? kus : undefined;
}

/** KustomizePatch (types.go L804-809): path, patch, target, options, empty fields dropped */
function typedPatch(p: unknown): Record<string, unknown> {
  if (!isMap(p)) return {};
  const out: Record<string, unknown> = {};
  if (str(p.path)) out.path = p.path;
  if (str(p.patch)) out.patch = p.patch;
  if (isMap(p.target)) {
    const t: Record<string, string> = {};
    for (const f of ['group', 'version', 'kind', 'name', 'namespace', 'labelSelector', 'annotationSelector']) if (str(p.target[f])) t[f] = str(p.target[f]);
    out.target = t;
  }
  if (isMap(p.options) && Object.keys(p.options).length) out.options = p.options;
  return out;
}

/**
 * argocd-cm `kustomize.buildOptions`, appended to `kustomize build <path>` (L384-389, L412-413).
 * Only flags that change how kustomize reads the tree are passed; a flag that would run code from
 * the repository (plugins, exec functions) or write files is refused: lastgood renders untrusted
 * repository content on its own machine.
 */
const SAFE_BUILD_FLAGS = new Set(['--load-restrictor', '--load_restrictor', '--enable-helm', '--helm-kube-version', '--helm-api-versions', '--enable-managedby-label', '--reorder', '--stack-trace']);

export function argoBuildFlags(buildOptions: string[]): string[] {
  const flags = buildOptions.flatMap((o) => o.split(/\s+/)).filter(Boolean);
  for (let i = 0; i < flags.length; i++) {
    const f = flags[i]!;
    const name = f.split('=')[0]!;
    if (!SAFE_BUILD_FLAGS.has(name)) throw new ArgoEditError(`kustomize.buildOptions ${f} is not rendered by lastgood (only ${[...SAFE_BUILD_FLAGS].join(', ')})`);
    // a flag given as "--name value": skip the value
    if (!f.includes('=') && ['--load-restrictor', '--load_restrictor', '--helm-kube-version', '--helm-api-versions', '--reorder'].includes(name)) i++;
  }
  return flags;
}
