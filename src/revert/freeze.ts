import { isMap, isScalar, isSeq, parseAllDocuments, YAMLSeq } from 'yaml';
import type { Document } from 'yaml';
import type { CommitInfo, FileChange, RepoReader } from '../repo/types.ts';
import { isYamlPath, parseYamlDocuments, printLike } from './yaml-merge.ts';

/**
 * Freeze: edits made in the same commit as the revert so that an image bot does not re-ship the
 * version that was just reverted (fluxcd/flux2#4676, argoproj-labs/argocd-image-updater#1249).
 *
 * Detection is conservative: only the identities and messages the bots use by default.
 * - Flux image automation: the commit's author or committer name/email contains "fluxcdbot"
 *   (the identity of Flux's docs and bootstrap), or its subject is the controller's default
 *   `Update from image update automation`, or the guide's template `Automated image update`
 *   with an `Automation name: <ns>/<name>` line.
 * - Argo CD Image Updater: the subject is `build: automatic update of <app>` (its default
 *   template, also with a `[skip ci] ` prefix), or the author is `argocd-image-updater` /
 *   `noreply@argoproj.io` (its default git user).
 *
 * What is frozen:
 * - Flux: `spec.suspend: true` on every `image.toolkit.fluxcd.io` ImageUpdateAutomation in the
 *   repository whose `spec.update.path` (default: the repository root) contains a target path
 *   (and, when the commit message names the automation, only that one). Suspending is what
 *   Flux's API offers for this: ImagePolicy `filterTags.pattern` is an RE2 regex (no negative
 *   look-ahead, so it cannot say "anything but this tag"), and excluding the tag through the
 *   ImageRepository's `exclusionList` would only make the policy pick the next newest tag, which
 *   may be just as untested. A human resumes the automation after fixing the image.
 * - Argo CD Image Updater: the bad tag is added to the ignore list of the image's alias: the
 *   `argocd-image-updater.argoproj.io/<alias>.ignore-tags` annotation of the Application (v0.x,
 *   annotation based) or `commonUpdateSettings.ignoreTags` of the image in an `ImageUpdater`
 *   resource (v1.x, CRD based). The Application is the one the commit names, else those whose
 *   source path contains a target path.
 *
 * The repository is searched for these manifests through the reader: at most MAX_SCANNED YAML
 * files are read (paths that look like Flux/Argo CD configuration first), so that a plan on
 * GitHub's API stays within a few hundred requests; `warnings` says when the bound was hit.
 * All edits go through the `yaml` Document API, comments and layout kept (printLike).
 */

export const MAX_SCANNED = 400;

export interface FreezePlan {
  /** file contents to write in the same commit (the automation manifests, wherever they live) */
  files: FileChange[];
  /** what was frozen, one human line each, for the commit message and PR body */
  frozen: string[];
  /** the image references that are now rejected */
  rejected: string[];
  /** automation detected but not frozen, and why (one line each) */
  warnings: string[];
}

type Bot = { kind: 'flux'; automation?: string } | { kind: 'argocd'; app?: string };

/** Which image bot made this commit, if any (rules above). */
export function detectImageBot(commit: Pick<CommitInfo, 'message' | 'author' | 'committer'>): Bot | undefined {
  const subject = commit.message.split('\n', 1)[0]!.trim();
  const who = `${commit.author.name} ${commit.author.email} ${commit.committer.name} ${commit.committer.email}`.toLowerCase();
  const argo = /^(?:\[skip ci\]\s*)?build: automatic update of\s+"?([^"\s]+)"?/.exec(subject);
  if (argo) return { kind: 'argocd', app: argo[1] };
  if (/(^|\s)argocd-image-updater(\s|$)/.test(`${commit.author.name} ${commit.committer.name}`.toLowerCase()) || who.includes('noreply@argoproj.io')) {
    return { kind: 'argocd' };
  }
  const automation = /^Automation name:\s*(\S+)/m.exec(commit.message)?.[1];
  if (who.includes('fluxcdbot') || subject === 'Update from image update automation' || (subject === 'Automated image update' && automation)) {
    return automation ? { kind: 'flux', automation } : { kind: 'flux' };
  }
  return undefined;
}

/** "registry/repo:tag" or "repo@sha256:…" → repository and tag (undefined for a digest). */
export function splitImage(ref: string): { repo: string; tag?: string } {
  const at = ref.indexOf('@');
  if (at >= 0) return { repo: ref.slice(0, at).replace(/:[^/:]*$/, '') };
  const slash = ref.lastIndexOf('/');
  const colon = ref.lastIndexOf(':');
  return colon > slash ? { repo: ref.slice(0, colon), tag: ref.slice(colon + 1) } : { repo: ref };
}

/** Docker Hub short names: "nginx" = "docker.io/library/nginx". */
function normalizeRepo(repo: string): string {
  let r = repo.toLowerCase().replace(/^index\.docker\.io\//, 'docker.io/');
  if (!r.includes('/')) r = `docker.io/library/${r}`;
  else if (!/^[^/]+[.:]/.test(r) && !r.startsWith('localhost/')) r = `docker.io/${r}`;
  return r;
}

const clean = (p: string) => p.replace(/^\.?\/+/, '').replace(/\/+$/, '');

/** True when the folder `dir` (repo-relative, "" = root) contains `target`. */
function covers(dir: string, target: string): boolean {
  const d = clean(dir);
  const t = clean(target);
  return d === '' || t === d || t.startsWith(`${d}/`);
}

function globMatch(pattern: string, name: string): boolean {
  const re = new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.')}$`);
  return re.test(name);
}

interface Manifest {
  path: string;
  mode: string;
  text: string;
  docs: Document.Parsed[];
}

const LIKELY = /flux|image|automation|argo|application|clusters?\b|infra/i;

async function scanManifests(reader: RepoReader, head: string, needle: RegExp, warnings: string[]): Promise<Manifest[]> {
  const all = await reader.listFiles(head, ['']);
  const yamlPaths = [...all.keys()].filter(isYamlPath);
  const ordered = [...yamlPaths.filter((p) => LIKELY.test(p)), ...yamlPaths.filter((p) => !LIKELY.test(p))];
  if (ordered.length > MAX_SCANNED) {
    warnings.push(`searched the first ${MAX_SCANNED} of ${ordered.length} YAML files for image automation manifests`);
  }
  const out: Manifest[] = [];
  for (const path of ordered.slice(0, MAX_SCANNED)) {
    const entry = all.get(path);
    if (!entry) continue;
    const text = Buffer.from(await reader.readBlob(entry.oid)).toString('utf8');
    if (!needle.test(text)) continue;
    const docs = parseYamlDocuments(text);
    if (docs) out.push({ path, mode: entry.mode, text, docs });
  }
  return out;
}

function docValue(doc: Document.Parsed): { apiVersion?: string; kind?: string; metadata?: { name?: string; namespace?: string; annotations?: Record<string, unknown> }; spec?: Record<string, unknown> } {
  const v = doc.toJS() as unknown;
  return v && typeof v === 'object' ? (v as ReturnType<typeof docValue>) : {};
}

/** The image references a commit introduced under the paths: `image:` values and kustomize `images:` entries. */
export async function imagesIntroduced(reader: RepoReader, commit: CommitInfo, paths: string[]): Promise<string[]> {
  const [after, before] = await Promise.all([
    reader.listFiles(commit.oid, paths),
    commit.parents[0] ? reader.listFiles(commit.parents[0], paths) : Promise.resolve(new Map()),
  ]);
  const refs = async (oid: string | undefined): Promise<Set<string>> => {
    const out = new Set<string>();
    if (!oid) return out;
    const docs = parseAllDocuments(Buffer.from(await reader.readBlob(oid)).toString('utf8'));
    const visit = (v: unknown): void => {
      if (Array.isArray(v)) v.forEach(visit);
      else if (v && typeof v === 'object') {
        const o = v as Record<string, unknown>;
        if (typeof o.image === 'string') out.add(o.image);
        if (typeof o.name === 'string' && typeof o.newTag === 'string') out.add(`${typeof o.newName === 'string' ? o.newName : o.name}:${o.newTag}`);
        Object.values(o).forEach(visit);
      }
    };
    for (const d of Array.isArray(docs) ? docs : [docs]) if (d.errors.length === 0) visit(d.toJS());
    return out;
  };
  const found: string[] = [];
  for (const [path, entry] of after) {
    if (!isYamlPath(path) || before.get(path)?.oid === entry.oid) continue;
    const [now, then] = await Promise.all([refs(entry.oid), refs(before.get(path)?.oid)]);
    for (const r of now) if (!then.has(r) && !found.includes(r)) found.push(r);
  }
  return found;
}

export async function planFreeze(
  reader: RepoReader,
  opts: { head: string; paths: string[]; badImages: string[]; badCommits: CommitInfo[]; mode: 'auto' | 'off' },
): Promise<FreezePlan> {
  const plan: FreezePlan = { files: [], frozen: [], rejected: [], warnings: [] };
  if (opts.mode === 'off') return plan;
  const bots = opts.badCommits.map(detectImageBot).filter((b): b is Bot => b !== undefined);
  if (bots.length === 0) return plan;

  let images = [...new Set(opts.badImages)];
  if (images.length === 0) {
    for (const c of opts.badCommits) for (const r of await imagesIntroduced(reader, c, opts.paths)) if (!images.includes(r)) images.push(r);
  }
  const edited = new Map<string, Manifest>();

  const flux = bots.filter((b): b is Extract<Bot, { kind: 'flux' }> => b.kind === 'flux');
  const argo = bots.filter((b): b is Extract<Bot, { kind: 'argocd' }> => b.kind === 'argocd');
  const manifests = await scanManifests(
    reader,
    opts.head,
    new RegExp([flux.length ? 'ImageUpdateAutomation' : '', argo.length ? 'argocd-image-updater' : ''].filter(Boolean).join('|')),
    plan.warnings,
  );

  if (flux.length > 0) {
    const named = new Set(flux.map((b) => b.automation).filter((a): a is string => !!a));
    let found = 0;
    for (const m of manifests) {
      for (const doc of m.docs) {
        const v = docValue(doc);
        if (v.kind !== 'ImageUpdateAutomation' || !v.apiVersion?.startsWith('image.toolkit.fluxcd.io/')) continue;
        const id = `${v.metadata?.namespace ?? 'default'}/${v.metadata?.name ?? ''}`;
        if (named.size > 0 && !named.has(id) && !named.has(v.metadata?.name ?? '')) continue;
        const update = (v.spec?.update ?? {}) as { path?: unknown };
        const updatePath = typeof update.path === 'string' ? update.path : '';
        if (!opts.paths.some((p) => covers(updatePath, p))) continue;
        found++;
        if (v.spec?.suspend === true) {
          plan.frozen.push(`Flux ImageUpdateAutomation ${id} (${m.path}) was already suspended`);
          continue;
        }
        doc.setIn(['spec', 'suspend'], true);
        edited.set(m.path, m);
        plan.frozen.push(`suspended Flux ImageUpdateAutomation ${id} in ${m.path} (spec.suspend: true); resume it once a fixed image is available`);
      }
    }
    if (found === 0) plan.warnings.push(`the bad change came from Flux image automation, but no ImageUpdateAutomation in the repository covers ${opts.paths.join(', ')}: suspend it by hand`);
    else plan.rejected.push(...images);
  }

  if (argo.length > 0) {
    const apps = new Set(argo.map((b) => b.app).filter((a): a is string => !!a));
    const bad = images.map((ref) => ({ ref, ...splitImage(ref) })).filter((i) => i.tag !== undefined);
    if (bad.length === 0) plan.warnings.push('the bad change came from Argo CD Image Updater, but no bad image tag is known: nothing to ignore');
    let matched = 0;
    for (const m of manifests) {
      for (const doc of m.docs) {
        const v = docValue(doc);
        if (v.kind === 'Application' && v.apiVersion?.startsWith('argoproj.io/')) {
          const name = v.metadata?.name ?? '';
          const spec = (v.spec ?? {}) as { source?: { path?: string }; sources?: Array<{ path?: string }> };
          const sourcePaths = [spec.source?.path, ...(spec.sources ?? []).map((s) => s.path)].filter((p): p is string => typeof p === 'string');
          const relevant = apps.size > 0 ? apps.has(name) : sourcePaths.some((sp) => opts.paths.some((p) => covers(sp, p)));
          const list = v.metadata?.annotations?.['argocd-image-updater.argoproj.io/image-list'];
          if (!relevant || typeof list !== 'string') continue;
          for (const spec of list.split(',').map((s) => s.trim()).filter(Boolean)) {
            const eq = spec.indexOf('=');
            const alias = eq > 0 ? spec.slice(0, eq) : undefined;
            const imageRepo = splitImage(eq > 0 ? spec.slice(eq + 1) : spec).repo;
            for (const b of bad.filter((x) => normalizeRepo(x.repo) === normalizeRepo(imageRepo))) {
              matched++;
              if (!alias) {
                plan.warnings.push(`Application ${name} (${m.path}) lists ${imageRepo} without an alias, so no ignore-tags annotation can name it: give it an alias to freeze ${b.ref}`);
                continue;
              }
              const key = `argocd-image-updater.argoproj.io/${alias}.ignore-tags`;
              const current = v.metadata?.annotations?.[key];
              const tags = typeof current === 'string' ? current.split(',').map((t) => t.trim()).filter(Boolean) : [];
              if (tags.includes(b.tag!)) continue;
              doc.setIn(['metadata', 'annotations', key], [...tags, b.tag!].join(','));
              edited.set(m.path, m);
              plan.frozen.push(`Argo CD Image Updater ignores ${imageRepo}:${b.tag} for Application ${name} (${key} in ${m.path})`);
              plan.rejected.push(b.ref);
            }
          }
        } else if (v.kind === 'ImageUpdater' && v.apiVersion?.startsWith('argocd-image-updater.argoproj.io/')) {
          const refs = doc.getIn(['spec', 'applicationRefs']);
          if (!isSeq(refs)) continue;
          refs.items.forEach((ref, ri) => {
            if (!isMap(ref)) return;
            const pattern = ref.get('namePattern');
            if (apps.size > 0 && !(typeof pattern === 'string' && [...apps].some((a) => globMatch(pattern, a)))) return;
            const imgs = ref.get('images');
            if (!isSeq(imgs)) return;
            imgs.items.forEach((img, ii) => {
              if (!isMap(img)) return;
              const imageName = img.get('imageName');
              const alias = img.get('alias');
              if (typeof imageName !== 'string') return;
              for (const b of bad.filter((x) => normalizeRepo(x.repo) === normalizeRepo(splitImage(imageName).repo))) {
                matched++;
                const path = ['spec', 'applicationRefs', ri, 'images', ii, 'commonUpdateSettings', 'ignoreTags'];
                const existing = doc.getIn(path);
                if (isSeq(existing)) {
                  if (existing.items.some((t) => (isScalar(t) ? t.value : t) === b.tag)) continue;
                  existing.add(doc.createNode(b.tag));
                } else {
                  const seq = new YAMLSeq();
                  seq.add(doc.createNode(b.tag));
                  seq.flow = true;
                  doc.setIn(path, seq);
                }
                edited.set(m.path, m);
                plan.frozen.push(`Argo CD Image Updater ignores ${splitImage(imageName).repo}:${b.tag} (ImageUpdater ${docValue(doc).metadata?.name ?? ''}, image ${typeof alias === 'string' ? alias : imageName}, in ${m.path})`);
                plan.rejected.push(b.ref);
              }
            });
          });
        }
      }
    }
    if (matched === 0 && bad.length > 0) {
      plan.warnings.push(`the bad change came from Argo CD Image Updater, but no Application or ImageUpdater in the repository configures ${bad.map((b) => b.repo).join(', ')}: add the tag to its ignore list by hand`);
    }
  }

  for (const m of edited.values()) {
    plan.files.push({ path: m.path, mode: m.mode, content: new TextEncoder().encode(printLike(m.text, m.docs)) });
  }
  plan.rejected = [...new Set(plan.rejected)];
  return plan;
}
