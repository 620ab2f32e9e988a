import ignore, { type Ignore } from 'ignore';
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
    const text = Buffer.from(await view.read(f.oid)).toString('utf8');
    for (const line of patternLines(text)) user.push(pattern(dir, line));
  }
  if (specIgnore) for (const line of patternLines(specIgnore)) user.push(pattern('', line));
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

function patternLines(text: string): string[] {
  return text.split(/\r?\n/).filter((l) => !l.startsWith('#') && l.trim().length > 0);
}
