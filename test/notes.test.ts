import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import test from 'ava';
import { newestVerified, parseNote } from '../src/history/notes.ts';
import { openLocalNotes } from '../src/deliver/local/notes.ts';
import { commit, git, makeRepo, tempDir } from './support/git.ts';

/** Verified last-known-good records in git notes: format, appending, races, and native git's view. */

const NOTES_MODULE = pathToFileURL(path.resolve('src/deliver/local/notes.ts')).href;

test('records are appended to the commit note, listed per target, and shown by git log --notes=lastgood', async (t) => {
  const dir = makeRepo();
  const c1 = commit(dir, { 'a.yaml': 'a: 1\n' }, 'one');
  const c2 = commit(dir, { 'a.yaml': 'a: 2\n' }, 'two');
  const store = openLocalNotes({ fs, dir, gitdir: path.join(dir, '.git') });
  t.deepEqual(await store.list(), []);
  await store.record(c1, { target: 'podinfo-prod', at: '2026-11-01T10:00:00Z', evidence: 'apps/Deployment prod/podinfo state=healthy' });
  await store.record(c2, { target: 'podinfo-prod', at: '2026-11-01T11:00:00Z', evidence: 'multi\nline evidence' });
  await store.record(c2, { target: 'api-prod', at: '2026-11-01T11:05:00Z', evidence: 'ok' });
  await store.record(c2, { target: 'api-prod', at: '2026-11-01T11:05:00Z', evidence: 'ok' }); // same line again: no-op

  t.deepEqual(await store.list('podinfo-prod'), [
    { commit: c2, target: 'podinfo-prod', at: '2026-11-01T11:00:00Z', evidence: 'multi line evidence' },
    { commit: c1, target: 'podinfo-prod', at: '2026-11-01T10:00:00Z', evidence: 'apps/Deployment prod/podinfo state=healthy' },
  ]);
  t.is((await store.list()).length, 3);
  t.is(
    git(dir, 'notes', '--ref=lastgood', 'show', c2),
    'lastgood verified target=podinfo-prod at=2026-11-01T11:00:00Z evidence=multi line evidence\nlastgood verified target=api-prod at=2026-11-01T11:05:00Z evidence=ok',
  );
  const log = git(dir, 'log', '--notes=lastgood', '--format=%H%n%N');
  t.true(log.includes(`${c1}\nlastgood verified target=podinfo-prod at=2026-11-01T10:00:00Z`), log);
  t.is(git(dir, 'rev-list', '--count', 'refs/notes/lastgood'), '3', 'one notes commit per new record');
  t.false(fs.existsSync(path.join(dir, '.git/refs/notes/lastgood.lock')));
});

test('notes written by native git are read and appended to, in a bare repository', async (t) => {
  const work = makeRepo();
  const c1 = commit(work, { 'a.yaml': 'a: 1\n' }, 'one');
  const bare = path.join(tempDir(), 'bare.git');
  git(work, 'clone', '-q', '--bare', work, bare);
  git(bare, 'notes', '--ref=lastgood', 'add', '-m', 'lastgood verified target=by-git at=2026-01-01T00:00:00Z evidence=native\nsome other text', c1);
  git(bare, 'pack-refs', '--all');
  const store = openLocalNotes({ fs, gitdir: bare });
  await store.record(c1, { target: 'by-lastgood', at: '2026-01-02T00:00:00Z', evidence: 'iso' });
  t.deepEqual((await store.list()).map((r) => r.target), ['by-lastgood', 'by-git']);
  t.is(git(bare, 'notes', '--ref=lastgood', 'show', c1).split('\n').length, 3);
  t.is(git(bare, 'fsck', '--no-progress'), '');
});

test('two stores racing in one process both keep their records', async (t) => {
  const dir = makeRepo();
  const shas = [1, 2, 3, 4, 5].map((i) => commit(dir, { 'a.yaml': `a: ${i}\n` }, `c${i}`));
  const gitdir = path.join(dir, '.git');
  // ten writers queue on one lock: the wait for it is not what this test is about (a loaded machine may take long)
  const [one, two] = [openLocalNotes({ fs, dir, gitdir, lockTimeoutMs: 110_000 }), openLocalNotes({ fs, dir, gitdir, lockTimeoutMs: 110_000 })];
  await Promise.all(
    shas.flatMap((sha, i) => [
      one!.record(sha, { target: 'one', at: `2026-11-01T10:0${i}:00Z`, evidence: 'e' }),
      two!.record(sha, { target: 'two', at: `2026-11-01T10:0${i}:00Z`, evidence: 'e' }),
    ]),
  );
  const all = await one!.list();
  t.is(all.length, 10);
  t.is(git(dir, 'rev-list', '--count', 'refs/notes/lastgood'), '10');
});

test('two processes racing both keep their records (the lock is the one native git uses)', async (t) => {
  const dir = makeRepo();
  const shas = [1, 2, 3].map((i) => commit(dir, { 'a.yaml': `a: ${i}\n` }, `c${i}`));
  const script = (target: string) => `
    import fs from 'node:fs';
    const { openLocalNotes } = await import(${JSON.stringify(NOTES_MODULE)});
    const store = openLocalNotes({ fs, gitdir: ${JSON.stringify(path.join(dir, '.git'))} });
    for (const [i, sha] of ${JSON.stringify(shas)}.entries()) {
      for (let n = 0; n < 4; n++) await store.record(sha, { target: '${target}', at: '2026-11-01T10:0' + i + ':0' + n + 'Z', evidence: 'run ' + n });
    }`;
  const run = (target: string) =>
    new Promise<number | null>((resolve, reject) => {
      const child = spawn(process.execPath, ['--input-type=module', '-e', script(target)], { stdio: ['ignore', 'inherit', 'inherit'] });
      child.on('error', reject);
      child.on('exit', resolve);
    });
  // a native git writer joins the race too
  const native = new Promise<void>((resolve) => {
    const child = spawn('git', ['notes', '--ref=lastgood', 'append', '-m', 'lastgood verified target=native at=2026-11-01T09:00:00Z evidence=git', shas[0]!], { cwd: dir, stdio: 'ignore' });
    child.on('exit', () => resolve());
  });
  t.deepEqual(await Promise.all([run('alpha'), run('beta')]), [0, 0]);
  await native;
  const records = await openLocalNotes({ fs, gitdir: path.join(dir, '.git') }).list();
  t.is(records.filter((r) => r.target === 'alpha').length, 12);
  t.is(records.filter((r) => r.target === 'beta').length, 12);
  // git's own writer either won its lock or failed cleanly: it never erased anyone's notes
  t.true(records.filter((r) => r.target === 'native').length <= 1);
  t.is(git(dir, 'fsck', '--no-progress'), '');
});

test('newestVerified picks the newest candidate verified for the target; parseNote ignores other lines', (t) => {
  const records = [
    ...parseNote('c3', 'lastgood verified target=api at=2026-01-01T00:00:00Z evidence=x\nnot a record'),
    ...parseNote('c2', 'lastgood verified target=web at=2026-01-01T00:00:00Z evidence=x'),
    ...parseNote('c1', 'lastgood verified target=web at=2026-01-01T00:00:00Z evidence=x'),
  ];
  t.is(records.length, 3);
  t.is(newestVerified(records, 'web', ['c4', 'c3', 'c2', 'c1']), 'c2');
  t.is(newestVerified(records, 'api', ['c4', 'c3']), 'c3');
  t.is(newestVerified(records, 'db', ['c4', 'c3']), undefined);
});
