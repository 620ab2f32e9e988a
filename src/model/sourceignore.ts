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
}

export type IgnoreRule = (file: string, isDir: boolean) => boolean;

export interface SourceIgnore {
  ignored: IgnoreRule;
  /** the `.sourceignore` files read (inputs of the build: a change to one changes the artifact) */
  files: Array<{ path: string; oid: string }>;
}

/** The artifact's ignore rule for the files under `root` at one revision. */
export async function sourceIgnore(view: TreeView, root: string, specIgnore?: string): Promise<SourceIgnore> {
  const user: Pattern[] = [];
  const files: Array<{ path: string; oid: string }> = [];
  const read = async (dir: string) => {
    const own = (await view.list(dir)).get('.sourceignore');
    if (!own || own.type !== 'blob' || own.mode === '120000') return;
    const path = dir ? `${dir}/.sourceignore` : '.sourceignore';
    files.push({ path, oid: own.oid });
    const text = Buffer.from(await view.read(own.oid)).toString('utf8');
    for (const line of patternLines(text)) user.push({ domain: dir, matcher: ignore().add(line) });
  };
  // the folders above the root, then the root's own subtree (parents before children, as LoadIgnorePatterns)
  const parts = root ? root.split('/') : [];
  for (let i = 0; i < parts.length; i++) await read(parts.slice(0, i).join('/'));
  const walk = async (dir: string): Promise<void> => {
    await read(dir);
    for (const [name, e] of [...(await view.list(dir))].sort(([a], [b]) => (a < b ? -1 : 1))) {
      if (e.type === 'tree' && name !== '.git') await walk(dir ? `${dir}/${name}` : name);
    }
  };
  await walk(root);
  if (specIgnore) for (const line of patternLines(specIgnore)) user.push({ domain: '', matcher: ignore().add(line) });
  const defaults = (user.length > 0 ? EXCLUDE_VCS : [...EXCLUDE_VCS, ...EXCLUDE_EXT, ...EXCLUDE_CI, ...EXCLUDE_EXTRA]).map((p) => ({ domain: '', matcher: ignore().add(p) }));
  const patterns = [...defaults, ...user];
  const matches = (file: string, isDir: boolean): boolean => {
    let ignored = false;
    for (const p of patterns) {
      if (p.domain && !file.startsWith(`${p.domain}/`)) continue;
      const rel = p.domain ? file.slice(p.domain.length + 1) : file;
      const r = p.matcher.test(isDir ? `${rel}/` : rel);
      if (r.ignored) ignored = true;
      else if (r.unignored) ignored = false;
    }
    return ignored;
  };
  // a file is left out when it or any folder above it is (the archive walk skips an ignored folder whole)
  const ignored: IgnoreRule = (file, isDir) => {
    const segments = file.split('/');
    for (let i = 1; i < segments.length; i++) if (matches(segments.slice(0, i).join('/'), true)) return true;
    return matches(file, isDir);
  };
  return { ignored, files };
}

function patternLines(text: string): string[] {
  return text.split(/\r?\n/).filter((l) => !l.startsWith('#') && l.trim().length > 0);
}
