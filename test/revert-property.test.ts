import test from 'ava';
import fc from 'fast-check';
import { LocalRepo } from '../src/deliver/local/index.ts';
import { RevertImpossible } from '../src/errors.ts';
import type { FileChange } from '../src/repo/types.ts';
import { mergeText } from '../src/revert/merge-lines.ts';
import { planRevert } from '../src/revert/threeway.ts';
import { commit, git, makeRepo } from './support/git.ts';
import { runSync } from './support/spawner.ts';

/**
 * Properties of planRevert over generated histories of YAML files (each line unique, so that the
 * line diffs are unambiguous and native git is a fair oracle).
 */

const author = { name: 'lastgood', email: 'lastgood@example.com', timestamp: 1_790_000_000, timezoneOffset: 0 };
const FILES = ['a/x.yaml', 'a/y.yaml', 'b/x.yaml', 'a/deep/z.yaml'] as const;
const KEYS = 6;

type Model = Array<{ value: string; comment: string }>;

function render(model: Model): string {
  return `# generated\nkind: Config\n${model.map((k, i) => `k${i}: ${k.value}${k.comment ? ` # ${k.comment}` : ''}\n`).join('')}`;
}

function fresh(): Model {
  return Array.from({ length: KEYS }, (_, i) => ({ value: `init${i}`, comment: `note ${i}` }));
}

const edit = fc.record({
  file: fc.constantFrom(...FILES),
  key: fc.integer({ min: 0, max: KEYS - 1 }),
  op: fc.constantFrom('set', 'set', 'set', 'comment', 'rm'),
});
const history = fc.array(fc.array(edit, { minLength: 1, maxLength: 3 }), { minLength: 2, maxLength: 5 });

/** Builds the repository: a root commit with every file, then one commit per generated step. */
function build(steps: Array<Array<{ file: string; key: number; op: string }>>): { dir: string; shas: string[] } {
  const dir = makeRepo();
  const models = new Map<string, Model | undefined>(FILES.map((f) => [f, fresh()]));
  let counter = 0;
  const snapshot = () => Object.fromEntries([...models].map(([f, m]) => [f, m ? render(m) : null]));
  const shas = [commit(dir, { ...snapshot(), 'outside/o.yaml': 'o: 0\n' }, 'root')];
  for (const [i, step] of steps.entries()) {
    for (const e of step) {
      if (e.op === 'rm') {
        models.set(e.file, undefined);
        continue;
      }
      const model = models.get(e.file) ?? fresh();
      counter++;
      if (e.op === 'set') model[e.key]!.value = `v${counter}`;
      else model[e.key]!.comment = `c${counter}`;
      models.set(e.file, model);
    }
    shas.push(commit(dir, { ...snapshot(), 'outside/o.yaml': `o: ${i + 1}\n` }, `step ${i}`));
  }
  return { dir, shas };
}

async function apply(repo: LocalRepo, head: string, files: FileChange[], message = 'revert\n'): Promise<string> {
  return repo.writeChangeCommit({ target: 't', branch: 'main', parent: head, files, message, author, bad: [], lastKnownGood: head });
}

const inside = (target: string) => (p: string) => (target.endsWith('/') ? p.startsWith(target) : p === target);
const lsTree = (dir: string, rev: string, target: string) => git(dir, 'ls-tree', '-r', rev, '--', target.replace(/\/$/, ''));

/**
 * Native `git revert --no-commit`: the target's entries as "mode oid path" lines, or the files
 * where git conflicts inside the target. Rename detection is off: lastgood matches files by path
 * only, and the generated files are near copies of each other, so a delete plus a re-create in
 * one step passes for a rename and git merges edits across files (then "cleanly" reverts a file
 * whose edits it moved elsewhere). `--strategy=recursive`: git 2.39's revert ignores
 * `-X no-renames` under the default ort strategy; newer git maps recursive to ort.
 */
function nativeRevert(dir: string, bad: string, target: string): { entries: string } | { conflicted: string[] } {
  const clean = target.replace(/\/$/, '');
  try {
    try {
      git(dir, 'revert', '--no-commit', '--strategy=recursive', '-X', 'no-renames', bad);
    } catch {
      // git conflicted somewhere: only conflicts inside the target count
    }
    const unmerged = git(dir, 'ls-files', '-u', '--', clean);
    if (unmerged !== '') return { conflicted: [...new Set(unmerged.split('\n').map((l) => l.slice(l.indexOf('\t') + 1)))].sort() };
    return { entries: git(dir, 'ls-files', '-s', '--', clean).split('\n').filter(Boolean).map((l) => l.replace(/^(\d+) (\w+) 0\t/, '$1 $2 ')).join('\n') };
  } finally {
    try {
      git(dir, 'revert', '--abort');
    } catch {
      git(dir, 'reset', '-q', '--hard', 'HEAD');
    }
  }
}

const entries = (dir: string, rev: string, target: string) =>
  lsTree(dir, rev, target).split('\n').filter(Boolean).map((l) => l.replace(/^(\d+) blob (\w+)\t/, '$1 $2 ')).join('\n');

function show(dir: string, rev: string, file: string): string | undefined {
  try {
    return runSync('git', ['show', `${rev}:${file}`], { cwd: dir });
  } catch {
    return undefined;
  }
}

/** A generated file as its key lines, "kN" → value and comment; the other lines are the fixed header. */
function keyLines(text: string): Map<string, { value: string; comment: string | undefined }> {
  const out = new Map<string, { value: string; comment: string | undefined }>();
  for (const m of text.matchAll(/^(k\d+): (\S+)(?: # (.*))?$/gm)) out.set(m[1]!, { value: m[2]!, comment: m[3] });
  return out;
}

/**
 * What a key-by-key revert makes of a file both sides changed: per key, and per comment, the
 * head's version where the head changed it since the bad commit, else the bad commit's parent's.
 */
function keywiseRevert(bad: string, head: string, parent: string): string {
  const [b, o, p] = [keyLines(bad), keyLines(head), keyLines(parent)];
  const pick = <T>(bv: T, ov: T, pv: T): T => (ov === bv ? pv : ov);
  const lines = [...o.keys()].map((k) => {
    const value = pick(b.get(k)!.value, o.get(k)!.value, p.get(k)!.value);
    const comment = pick(b.get(k)!.comment, o.get(k)!.comment, p.get(k)!.comment);
    return `${k}: ${value}${comment === undefined ? '' : ` # ${comment}`}\n`;
  });
  return `# generated\nkind: Config\n${lines.join('')}`;
}

test('revert stays inside the target paths, agrees with git revert where git merges cleanly, merges YAML key by key where git conflicts, and reverting the revert gives the head back', async (t) => {
  const seen = { clean: 0, yaml: 0, conflict: 0 };
  await fc.assert(
    fc.asyncProperty(history, fc.nat(), fc.constantFrom('a/', 'b/', 'a/x.yaml', 'a/deep/'), async (steps, pick, target) => {
      const { dir, shas } = build(steps);
      const repo = new LocalRepo(dir);
      const head = shas[shas.length - 1]!;
      const bad = shas[1 + (pick % (shas.length - 1))]!;
      const native = nativeRevert(dir, bad, target);
      let plan;
      try {
        plan = await planRevert(repo, { head, bad: [bad], paths: [target] });
      } catch (error) {
        if (!(error instanceof RevertImpossible)) throw error;
        t.true('conflicted' in native, `git reverts ${target} cleanly but lastgood says: ${error.message}`);
        seen.conflict++;
        return;
      }
      for (const f of plan.files) t.true(inside(target)(f.path), `${f.path} is outside ${target}`);
      const reverted = await apply(repo, head, plan.files);
      t.is(git(dir, 'diff', '--name-only', head, reverted).split('\n').filter(Boolean).filter((p) => !inside(target)(p)).length, 0);

      if ('entries' in native) {
        t.is(entries(dir, reverted, target), native.entries);
        seen.clean++;
      } else {
        // git conflicts: on each such file our line merge must conflict too (never cleaner than
        // git), and lastgood must have merged it key by key, comments included
        const parent = git(dir, 'rev-parse', `${bad}^`);
        for (const path of native.conflicted) {
          const [b, o, p, r] = [bad, head, parent, reverted].map((rev) => show(dir, rev, path));
          if (!(b && o && p && r)) return t.fail(`${path}: git conflicts on an added or deleted file, which lastgood merged`);
          t.false(mergeText(b, o, p).clean, `${path}: the line merge is clean where git conflicts`);
          t.is(r, keywiseRevert(b, o, p), `${path}: key-by-key revert`);
          // a file the YAML merge left as it was (only comments that both sides changed) is no change
          t.is(plan.merged.find((m) => m.path === path)?.how, r === o ? undefined : 'yaml', path);
          seen.yaml++;
        }
      }

      // reverting the revert gives the head's target tree back
      const again = await planRevert(repo, { head: reverted, bad: [reverted], paths: [target] });
      const twice = await apply(repo, reverted, again.files);
      t.is(lsTree(dir, twice, target), lsTree(dir, head, target));
    }),
    { numRuns: 30 },
  );
  t.log(seen);
  t.true(seen.clean > 0);
});

test('when the bad commit is the head, the revert gives back the parent tree of the target paths', async (t) => {
  await fc.assert(
    fc.asyncProperty(history, fc.constantFrom('a/', 'b/x.yaml'), async (steps, target) => {
      const { dir, shas } = build(steps);
      const repo = new LocalRepo(dir);
      const head = shas[shas.length - 1]!;
      const plan = await planRevert(repo, { head, bad: [head], paths: [target] });
      t.true(plan.merged.every((m) => m.how === 'clean'));
      const reverted = await apply(repo, head, plan.files);
      t.is(lsTree(dir, reverted, target), lsTree(dir, shas[shas.length - 2]!, target));
    }),
    { numRuns: 10 },
  );
});

test('an unrelated later edit to another key of the same YAML file survives the revert, with its comment', async (t) => {
  await fc.assert(
    fc.asyncProperty(
      fc.integer({ min: 0, max: KEYS - 1 }),
      fc.integer({ min: 0, max: KEYS - 1 }),
      fc.boolean(),
      async (badKey, laterKey, laterComment) => {
        fc.pre(badKey !== laterKey);
        const dir = makeRepo();
        const model = fresh();
        commit(dir, { 'app/c.yaml': render(model) }, 'base');
        const good = structuredClone(model);
        model[badKey]!.value = 'bad';
        const bad = commit(dir, { 'app/c.yaml': render(model) }, 'bad');
        model[laterKey]!.value = 'later';
        if (laterComment) model[laterKey]!.comment = 'why we changed it';
        const head = commit(dir, { 'app/c.yaml': render(model) }, 'later');
        const plan = await planRevert(new LocalRepo(dir), { head, bad: [bad], paths: ['app/'] });
        const expected = structuredClone(model);
        expected[badKey] = good[badKey]!;
        const file = plan.files[0]!;
        t.true('content' in file);
        t.is(Buffer.from((file as { content: Uint8Array }).content).toString(), render(expected));
        // adjacent keys conflict line by line (git too): only the YAML merge keeps both
        t.is(plan.merged[0]!.how, Math.abs(badKey - laterKey) === 1 ? 'yaml' : 'line');
      },
    ),
    { numRuns: 20 },
  );
});
