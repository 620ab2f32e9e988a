import test from 'ava';
import fc from 'fast-check';
import ignore from 'ignore';
import { LocalRepo } from '../src/deliver/local/index.ts';
import { LazySourceIgnore, sourceIgnore } from '../src/model/sourceignore.ts';
import { ObjectCache, TreeView } from '../src/model/tree.ts';
import { commit, makeRepo } from './support/git.ts';

/**
 * Flux's source ignore rule as the model answers it (src/model/sourceignore.ts) against the rule
 * written out plainly: every pattern of every `.sourceignore` and `spec.ignore`, in order, tested
 * with `ignore` on the path relative to the pattern's folder, the last match winning, a path left
 * out when a folder above it is (fluxcd/pkg sourceignore.go, archive.go SourceIgnoreFilter). The
 * model skips patterns that cannot match a path (a cheap test per folder and per name, issue 22):
 * the answers must be the same for every path.
 */

const EXCLUDE_VCS = ['.git/', '.gitignore', '.gitmodules', '.gitattributes'];
const DEFAULTS = [
  ...EXCLUDE_VCS,
  '*.jpg', '*.jpeg', '*.gif', '*.png', '*.wmv', '*.flv', '*.tar.gz', '*.zip',
  '.github/', '.circleci/', '.travis.yml', '.gitlab-ci.yml', 'appveyor.yml', '.drone.yml', 'cloudbuild.yaml', 'codeship-services.yml', 'codeship-steps.yml',
  '**/.goreleaser.yml', '**/.sops.yaml', '**/.flux.yaml',
];

function plainRule(files: Record<string, string>, specIgnore: string | undefined) {
  const lines = (text: string) => text.split(/\r?\n/).filter((l) => !l.startsWith('#') && l.trim().length > 0);
  const user: Array<{ domain: string; line: string }> = [];
  // parents before children, as the model reads them (the order decides which match is last)
  for (const path of Object.keys(files).sort((a, b) => a.split('/').length - b.split('/').length || (a < b ? -1 : 1))) {
    const domain = path.includes('/') ? path.slice(0, path.lastIndexOf('/')) : '';
    for (const line of lines(files[path]!)) user.push({ domain, line });
  }
  if (specIgnore) for (const line of lines(specIgnore)) user.push({ domain: '', line });
  const patterns = [...(user.length > 0 ? EXCLUDE_VCS : DEFAULTS).map((line) => ({ domain: '', line })), ...user];
  const matches = (file: string, isDir: boolean): boolean => {
    let ignored = false;
    for (const p of patterns) {
      if (p.domain && !file.startsWith(`${p.domain}/`)) continue;
      const rel = p.domain ? file.slice(p.domain.length + 1) : file;
      const r = ignore().add(p.line).test(isDir ? `${rel}/` : rel);
      if (r.ignored) ignored = true;
      else if (r.unignored) ignored = false;
    }
    return ignored;
  };
  const rule = (file: string, isDir: boolean): boolean => {
    const slash = file.lastIndexOf('/');
    return (slash > 0 && rule(file.slice(0, slash), true)) || matches(file, isDir);
  };
  return rule;
}

const segment = fc.constantFrom('a', 'b', 'ab', 'x.jpg', 'img.png', 'c.yaml', '.sops.yaml', '.github', '.git', 'docs', 'kustomization.yaml', 'notes', 'a.b');
const pattern = fc.constantFrom('*.jpg', '!x.jpg', 'a', '/a', 'a/', '!a/', 'docs/', '*.yaml', '!c.yaml', '**/b', 'b/c.yaml', '!*.png', 'a/**', '.github', '*b', 'x*', 'notes/', '# a comment', '*.b');
const ignoreFile = fc.constantFrom('.sourceignore', 'a/.sourceignore', 'a/b/.sourceignore', 'b/.sourceignore', 'docs/.sourceignore');

test('the model\'s source ignore rule, whole and lazy, answers as the plain rule for every path, with and without .sourceignore files and spec.ignore', async (t) => {
  const work = makeRepo();
  const reader = new LocalRepo(work);
  await fc.assert(
    fc.asyncProperty(
      fc.dictionary(ignoreFile, fc.array(pattern, { maxLength: 4 }).map((l) => `${l.join('\n')}\n`), { maxKeys: 3 }),
      fc.option(fc.array(pattern, { maxLength: 3 }).map((l) => l.join('\n')), { nil: undefined }),
      fc.array(fc.tuple(fc.array(segment, { minLength: 1, maxLength: 4 }).map((x) => x.join('/')), fc.boolean()), { minLength: 1, maxLength: 25 }),
      async (files, specIgnore, paths) => {
        // each case is one commit: the files of the last case removed, this case's written
        const head = commit(work, { 'README.md': `${JSON.stringify(files)}\n`, ...Object.fromEntries(['.sourceignore', 'a/.sourceignore', 'a/b/.sourceignore', 'b/.sourceignore', 'docs/.sourceignore'].map((f) => [f, files[f] ?? null])) }, 'case');
        const rule = await sourceIgnore(await TreeView.at(new ObjectCache(reader), head), '', specIgnore);
        // the rule read lazily, folder by folder (issue 33), answers the same
        const lazy = new LazySourceIgnore(await TreeView.at(new ObjectCache(reader), head), '', specIgnore);
        const plain = plainRule(files, specIgnore);
        for (const [path, isDir] of paths) {
          const what = `${isDir ? 'folder' : 'file'} ${path} with ${JSON.stringify(files)} and spec.ignore ${JSON.stringify(specIgnore)}`;
          t.is(rule.ignored(path, isDir), plain(path, isDir), what);
          t.is(await lazy.ignored(path, isDir), plain(path, isDir), `lazily: ${what}`);
        }
      },
    ),
    { numRuns: 60 },
  );
});

test('findNamed: files found below folders whose git order differs from their name order come in name order', async (t) => {
  const work = makeRepo();
  // git orders the folder "a" as "a/", after "a-b" and "a.b"; by name it comes first
  const head = commit(work, { 'apps/a/.sourceignore': '1\n', 'apps/a.b/.sourceignore': '2\n', 'apps/a-b/.sourceignore': '3\n', 'apps/a/x/.sourceignore': '4\n', 'apps/.sourceignore': '5\n' }, 'layout');
  const found = await (await TreeView.at(new ObjectCache(new LocalRepo(work)), head)).findNamed('apps', '.sourceignore');
  t.deepEqual(found.map((f) => f.path), ['apps/.sourceignore', 'apps/a/.sourceignore', 'apps/a/x/.sourceignore', 'apps/a-b/.sourceignore', 'apps/a.b/.sourceignore']);
});
