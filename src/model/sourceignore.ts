import ignore, { type Ignore } from 'ignore';
import { InputError } from '../errors.ts';
import type { TreeView } from './tree.ts';

/**
 * What Flux's source artifact leaves out of a GitRepository checkout: the rules of fluxcd/pkg
 * `sourceignore/sourceignore.go` (ExcludeVCS, ExcludeExt, ExcludeCI, ExcludeExtra; `.sourceignore`
 * files, each scoped to its own folder: LoadIgnorePatterns) and `artifact/storage/archive.go`
 * SourceIgnoreFilter: when any user pattern exists (a `.sourceignore`, or the GitRepository's
 * `spec.ignore`), only the VCS defaults are kept beside them; otherwise every default applies.
 * Patterns are gitignore patterns (go-git's gitignore: the last match wins, a negation
 * re-includes), matched here with `ignore`.
 *
 * One approximation, for speed on large repositories: `.sourceignore` files are read in the
 * folders above and inside the Kustomization's path (the only ones whose patterns can reach the
 * files it builds), and "a user pattern exists" is decided from those and `spec.ignore`. A
 * `.sourceignore` elsewhere in the repository would switch off the default exclusions (images,
 * CI files, `.sops.yaml`) for the whole artifact; a manifest graph rarely names such files.
 */

const EXCLUDE_VCS = ['.git/', '.gitignore', '.gitmodules', '.gitattributes'];
const EXCLUDE_EXT = ['*.jpg', '*.jpeg', '*.gif', '*.png', '*.wmv', '*.flv', '*.tar.gz', '*.zip'];
const EXCLUDE_CI = ['.github/', '.circleci/', '.travis.yml', '.gitlab-ci.yml', 'appveyor.yml', '.drone.yml', 'cloudbuild.yaml', 'codeship-services.yml', 'codeship-steps.yml'];
const EXCLUDE_EXTRA = ['**/.goreleaser.yml', '**/.sops.yaml', '**/.flux.yaml'];

interface Pattern {
  /** the folder the pattern is scoped to ("" = the repository root) */
  domain: string;
  matcher: Ignore;
  /**
   * When set, the pattern can match a path (or a folder above it) only through a segment equal
   * to `text` (`name`) or ending with it (`suffix`): a cheap test before `ignore`'s, made once per
   * folder for the folder's segments and once per file for its name.
   */
  segment?: { kind: 'name' | 'suffix'; text: string };
}

const segmentMatches = (p: Pattern, segment: string) => (p.segment!.kind === 'name' ? segment === p.segment!.text : segment.endsWith(p.segment!.text));

/**
 * A pattern that names one path segment literally, or by a leading `*` (`.gitignore`, `*.jpg`,
 * `**\/.sops.yaml`, `.github/`, negated or not) matches a path only through a segment equal to
 * that name or ending with that suffix; anything else is left to `ignore` itself.
 */
function pattern(domain: string, line: string): Pattern {
  const matcher = ignore().add(line);
  const body = line.replace(/\s+$/, '').replace(/^!/, '').replace(/^\//, '').replace(/^\*\*\//, '').replace(/\/$/, '');
  if (body !== '' && !body.includes('/') && !/[?[\]\\\s!#]/.test(body)) {
    const star = body.indexOf('*');
    if (star < 0) return { domain, matcher, segment: { kind: 'name', text: body } };
    if (star === 0 && !body.slice(1).includes('*')) return { domain, matcher, segment: { kind: 'suffix', text: body.slice(1) } };
  }
  return { domain, matcher };
}

export type IgnoreRule = (file: string, isDir: boolean) => boolean;

export interface SourceIgnore {
  ignored: IgnoreRule;
  /** the `.sourceignore` files read (inputs of the build: a change to one changes the artifact) */
  files: Array<{ path: string; oid: string }>;
  /** the same for every revision with the same rules (memoised parts of a build key on it) */
  key: string;
}

/**
 * The artifact's ignore rule for the files under `root` at one revision. The rule of the same
 * `.sourceignore` files and `spec.ignore` is built once per reader and shared by every revision
 * that has them (its answers are remembered: a large graph asks about the same folders often).
 */
export async function sourceIgnore(view: TreeView, root: string, specIgnore?: string): Promise<SourceIgnore> {
  const files: Array<{ path: string; oid: string }> = [];
  // the folders above the root, then the root's own subtree (parents before children, as LoadIgnorePatterns)
  const parts = root ? root.split('/') : [];
  for (let i = 0; i < parts.length; i++) {
    const path = [...parts.slice(0, i), '.sourceignore'].join('/');
    const own = await view.entry(path);
    if (own && own.type === 'blob' && own.mode !== '120000') files.push({ path, oid: own.oid });
  }
  files.push(...(await view.findNamed(root, '.sourceignore')));
  const key = `sourceignore|${JSON.stringify([files, specIgnore ?? null])}`;
  const known = view.memo.get(key) as SourceIgnore | undefined;
  if (known) return known;
  const user: Pattern[] = [];
  for (const f of files) {
    const dir = f.path.includes('/') ? f.path.slice(0, f.path.lastIndexOf('/')) : '';
    const text = Buffer.from(await view.read(f.oid, f.path)).toString('utf8');
    for (const line of patternLines(text, f.path)) user.push(pattern(dir, line));
  }
  if (specIgnore) for (const line of patternLines(specIgnore, 'the GitRepository\'s spec.ignore')) user.push(pattern('', line));
  const defaults = (user.length > 0 ? EXCLUDE_VCS : [...EXCLUDE_VCS, ...EXCLUDE_EXT, ...EXCLUDE_CI, ...EXCLUDE_EXTRA]).map((p) => pattern('', p));
  const patterns = [...defaults, ...user];
  // per folder, what each pattern needs of a path in it: 0 it cannot apply (another domain), 1 it
  // may match (a segment of the folder fits, or it has no cheap test), 2 it may match only
  // through the path's last segment (its name); folders with the same needs share one plan
  const SKIP = 0;
  const LIVE = 1;
  const BY_NAME = 2;
  const plans = new Map<string, Uint8Array>();
  const folderPlans = new Map<string, Uint8Array>();
  const planOf = (folder: string): Uint8Array => {
    let plan = folderPlans.get(folder);
    if (plan) return plan;
    const needs = new Uint8Array(patterns.length);
    const segments = folder === '' ? [] : folder.split('/');
    for (let i = 0; i < patterns.length; i++) {
      const p = patterns[i]!;
      if (p.domain && folder !== p.domain && !folder.startsWith(`${p.domain}/`)) needs[i] = SKIP;
      else if (!p.segment) needs[i] = LIVE;
      else {
        // the folder's segments below the pattern's domain
        const below = p.domain ? p.domain.split('/').length : 0;
        let fits = false;
        for (let k = below; k < segments.length && !fits; k++) fits = segmentMatches(p, segments[k]!);
        needs[i] = fits ? LIVE : BY_NAME;
      }
    }
    const key = needs.join('');
    plan = plans.get(key);
    if (!plan) plans.set(key, (plan = needs));
    if (folderPlans.size > 200_000) folderPlans.clear();
    folderPlans.set(folder, plan);
    return plan;
  };
  const matches = (file: string, isDir: boolean): boolean => {
    let ignored = false;
    const slash = file.lastIndexOf('/');
    const plan = planOf(slash < 0 ? '' : file.slice(0, slash));
    const name = slash < 0 ? file : file.slice(slash + 1);
    for (let i = 0; i < patterns.length; i++) {
      const need = plan[i];
      if (need === SKIP) continue;
      const p = patterns[i]!;
      if (need === BY_NAME && !segmentMatches(p, name)) continue;
      const rel = p.domain ? file.slice(p.domain.length + 1) : file;
      const r = p.matcher.test(isDir ? `${rel}/` : rel);
      if (r.ignored) ignored = true;
      else if (r.unignored) ignored = false;
    }
    return ignored;
  };
  const answers = new Map<string, boolean>();
  const ask = (file: string, isDir: boolean): boolean => {
    const k = isDir ? `${file}/` : file;
    let v = answers.get(k);
    if (v === undefined) {
      // a file is left out when it or any folder above it is (the archive walk skips an ignored folder whole)
      const slash = file.lastIndexOf('/');
      v = (slash > 0 && ask(file.slice(0, slash), true)) || matches(file, isDir);
      if (answers.size > 200_000) answers.clear();
      answers.set(k, v);
    }
    return v;
  };
  const rule: SourceIgnore = { ignored: ask, files, key };
  view.memo.set(key, rule);
  return rule;
}

/**
 * What lastgood reads of one `.sourceignore` (or `spec.ignore`): each pattern is matched against
 * the paths a build asks about, so a file of 100,000 lines cost a gigabyte (issue 35). Real ones
 * hold tens of lines; beyond these bounds the file is refused, named (exit 2).
 */
export const SOURCEIGNORE_BOUNDS = { maxBytes: 256 << 10, maxPatterns: 2_000 } as const;

function patternLines(text: string, where: string): string[] {
  if (text.length > SOURCEIGNORE_BOUNDS.maxBytes) {
    throw new InputError(`${Math.round(text.length / 1024)} KiB of ignore patterns, more than the ${SOURCEIGNORE_BOUNDS.maxBytes >> 10} KiB lastgood reads from one`, { file: where });
  }
  const lines = text.split(/\r?\n/);
  const out: string[] = [];
  for (const [i, l] of lines.entries()) {
    if (l.startsWith('#') || l.trim().length === 0) continue;
    if (out.length === SOURCEIGNORE_BOUNDS.maxPatterns) {
      throw new InputError(`more than ${SOURCEIGNORE_BOUNDS.maxPatterns.toLocaleString('en-US')} ignore patterns, the most lastgood matches paths against`, { file: where, line: i + 1 });
    }
    out.push(l);
  }
  return out;
}

/**
 * The same rule, read lazily for the paths a build asks about (issue 33: cost follows the change).
 * The patterns that can apply to a path are those of `spec.ignore` and of the `.sourceignore`
 * files in the folders above it (each file is scoped to its folder: LoadIgnorePatterns), so a path
 * costs a look at its own folders, not a search of the whole repository. Each answer records those
 * files as guards of the part of the build being read (reads.ts): a part remembered across
 * revisions is reused only where they are the same. Only the switch of the defaults ("a user
 * pattern exists": then only the VCS exclusions are kept) depends on every `.sourceignore` of the
 * source; it is searched for, as `sourceIgnore` does, the first time a path that one of the
 * switched defaults (images, CI files, `.sops.yaml`) would leave out is asked about — which a
 * manifest graph rarely does — and a part whose answer depended on it is not remembered (`wide`).
 */
export class LazySourceIgnore {
  private readonly view: TreeView;
  private readonly root: string;
  private readonly spec: Pattern[];
  /** folder → its `.sourceignore` (the entry as read, its patterns: none without a file, or for a symlink) */
  private readonly own = new Map<string, Promise<{ path: string; entry: string; patterns: Pattern[] }>>();
  private readonly answers = new Map<string, Promise<{ ignored: boolean; wide: boolean }>>();
  private switched: Promise<boolean> | undefined;
  /** the `.sourceignore` files read so far: inputs of the build */
  readonly files: Array<{ path: string; oid: string }> = [];
  /** grows with every answer that depended on the whole source (the defaults' switch) */
  wide = 0;

  constructor(view: TreeView, root: string, specIgnore?: string) {
    this.view = view;
    this.root = root;
    this.spec = specIgnore ? patternLines(specIgnore, 'the GitRepository\'s spec.ignore').map((line) => pattern('', line)) : [];
  }

  /** True when Flux's artifact leaves `file` out (it or a folder above it matches). */
  async ignored(file: string, isDir: boolean): Promise<boolean> {
    const a = await this.answer(file, isDir);
    if (a.wide) this.wide++;
    return a.ignored;
  }

  private async answer(file: string, isDir: boolean): Promise<{ ignored: boolean; wide: boolean }> {
    const slash = file.lastIndexOf('/');
    const folder = slash < 0 ? '' : file.slice(0, slash);
    // the rules above the path are what the answer depends on: recorded for the part asking, every time
    for (const f of await this.rulesAbove(folder)) this.view.guard(f.path, f.entry);
    const k = isDir ? `${file}/` : file;
    let v = this.answers.get(k);
    if (!v) this.answers.set(k, (v = this.decide(file, folder, isDir)));
    return v;
  }

  private async decide(file: string, folder: string, isDir: boolean): Promise<{ ignored: boolean; wide: boolean }> {
    let wide = false;
    if (folder !== '') {
      const up = await this.answer(folder, true);
      if (up.ignored) return up;
      wide = up.wide;
    }
    const user = [...(await this.rulesAbove(folder)).flatMap((f) => f.patterns), ...this.spec];
    let defaults = VCS;
    if (user.length === 0 && SWITCHED.some((p) => matchOne(p, file, isDir) !== undefined)) {
      wide = true;
      if (!(await this.anyUserPattern())) defaults = ALL_DEFAULTS;
    }
    let ignored = false;
    for (const p of [...defaults, ...user]) {
      const r = matchOne(p, file, isDir);
      if (r !== undefined) ignored = r;
    }
    return { ignored, wide };
  }

  /** The `.sourceignore` of `folder` and of every folder above it, outermost first. */
  private rulesAbove(folder: string): Promise<Array<{ path: string; entry: string; patterns: Pattern[] }>> {
    const parts = folder ? folder.split('/') : [];
    return Promise.all(Array.from({ length: parts.length + 1 }, (_, i) => this.patternsIn(parts.slice(0, i).join('/'))));
  }

  private patternsIn(folder: string): Promise<{ path: string; entry: string; patterns: Pattern[] }> {
    let p = this.own.get(folder);
    if (!p) {
      this.own.set(folder, (p = (async () => {
        const path = folder ? `${folder}/.sourceignore` : '.sourceignore';
        const e = await this.view.guardEntry(path);
        const entry = e ? `${e.mode} ${e.oid}` : '-';
        if (!e || e.type !== 'blob' || e.mode === '120000') return { path, entry, patterns: [] };
        this.files.push({ path, oid: e.oid });
        const text = Buffer.from(await this.view.read(e.oid, path)).toString('utf8');
        return { path, entry, patterns: patternLines(text, path).map((line) => pattern(folder, line)) };
      })()));
    }
    return p;
  }

  /** "A user pattern exists": `spec.ignore`, or a `.sourceignore` with a pattern above or below the root (as `sourceIgnore` decides it). */
  private anyUserPattern(): Promise<boolean> {
    return (this.switched ??= (async () => {
      if (this.spec.length > 0) return true;
      const parts = this.root ? this.root.split('/') : [];
      const folders = parts.map((_, i) => parts.slice(0, i).join('/'));
      for (const f of await this.view.findNamed(this.root, '.sourceignore')) folders.push(f.path.includes('/') ? f.path.slice(0, f.path.lastIndexOf('/')) : '');
      for (const folder of folders) if ((await this.patternsIn(folder)).patterns.length > 0) return true;
      return false;
    })());
  }
}

const VCS = EXCLUDE_VCS.map((p) => pattern('', p));
const SWITCHED = [...EXCLUDE_EXT, ...EXCLUDE_CI, ...EXCLUDE_EXTRA].map((p) => pattern('', p));
const ALL_DEFAULTS = [...VCS, ...SWITCHED];

/** What one pattern says of a path: true (left out), false (re-included by a negation), undefined (no match). */
function matchOne(p: Pattern, file: string, isDir: boolean): boolean | undefined {
  if (p.domain && file !== p.domain && !file.startsWith(`${p.domain}/`)) return undefined;
  if (file === p.domain) return undefined;
  if (p.segment && !(p.domain ? file.slice(p.domain.length + 1) : file).split('/').some((s) => segmentMatches(p, s))) return undefined;
  const rel = p.domain ? file.slice(p.domain.length + 1) : file;
  const r = p.matcher.test(isDir ? `${rel}/` : rel);
  return r.ignored ? true : r.unignored ? false : undefined;
}
