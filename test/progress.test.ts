import test from 'ava';
import path from 'node:path';
import { progressReporter, type TransferEvent } from '../src/report/progress.ts';
import { lastgood } from './support/cli.ts';
import { commit, git, makeRepo, tempDir, writeFile } from './support/git.ts';
import { startGitHttpServer } from './support/git-http-server.ts';

/** Progress of a long fetch on stderr: none for a fetch under a second, then the bytes so far, then a last line. */

function reporter(tty: boolean) {
  let clock = 0;
  const out: string[] = [];
  const report = progressReporter({ write: (t) => out.push(t), now: () => clock, tty });
  return { out, at: (ms: number, e: TransferEvent) => ((clock = ms), report(e)) };
}

test('a fetch that ends within a second shows nothing', (t) => {
  const r = reporter(false);
  r.at(0, { host: 'git.example', bytes: 1000 });
  r.at(999, { host: 'git.example', bytes: 2_000_000 });
  r.at(999, { host: 'git.example', bytes: 2_000_000, done: true });
  t.deepEqual(r.out, []);
});

test('past a second: a line every five seconds where lines cannot be rewritten, and a last line with the total and the time', (t) => {
  const r = reporter(false);
  r.at(0, { host: 'git.example', bytes: 0 });
  r.at(1000, { host: 'git.example', bytes: 3 * 1024 * 1024 });
  r.at(3000, { host: 'git.example', bytes: 5 * 1024 * 1024 });
  r.at(6000, { host: 'git.example', bytes: 9 * 1024 * 1024 });
  r.at(6500, { host: 'git.example', bytes: 10 * 1024 * 1024, done: true });
  t.deepEqual(r.out, [
    'lastgood: fetching from git.example: 3.0 MiB\n',
    'lastgood: fetching from git.example: 9.0 MiB\n',
    'lastgood: fetching from git.example: 10.0 MiB, done in 6.5 s\n',
  ]);
  // the next answer starts its own second
  r.at(7000, { host: 'git.example', bytes: 10 });
  r.at(7500, { host: 'git.example', bytes: 20, done: true });
  t.is(r.out.length, 3);
});

test('on a terminal the line is rewritten in place, at most ten times a second', (t) => {
  const r = reporter(true);
  r.at(0, { host: 'h', bytes: 0 });
  for (let ms = 1000; ms <= 1500; ms += 10) r.at(ms, { host: 'h', bytes: ms * 1024 });
  r.at(1600, { host: 'h', bytes: 1600 * 1024, done: true });
  t.true(r.out.slice(0, -1).every((l) => l.startsWith('\r\x1b[K') && !l.endsWith('\n')));
  t.is(r.out.length - 1, 6, '1000, 1100, …, 1500');
  t.is(r.out.at(-1), '\r\x1b[Klastgood: fetching from h: 1.6 MiB, done in 1.6 s\n');
});

test('the CLI shows the progress of its fetches on a terminal\'s stderr, or with LASTGOOD_PROGRESS=1 (threshold lowered to 0 here), and stdout stays the report', async (t) => {
  const work = makeRepo();
  const P = 'apps/podinfo/prod/';
  commit(work, { [`${P}kustomization.yaml`]: 'images: [{ name: podinfo, newTag: 6.0.0 }]\n' }, 'podinfo 6.0.0');
  const root = tempDir('lastgood-progress-');
  git(root, 'clone', '-q', '--bare', work, path.join(root, 'gitops.git'));
  const server = await startGitHttpServer({ root });
  t.teardown(() => server.close());
  const dir = tempDir('lastgood-progress-cfg-');
  const config = writeFile(dir, 'lastgood.yaml', `repo:\n  url: ${server.url}/gitops.git\n  insecure: true\ntargets:\n  - name: podinfo-prod\n    paths: [${P}]\n    resources:\n      - { apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: apps }\n`);
  const r = await lastgood(['lkg', '--config', config], { env: { LASTGOOD_PROGRESS: '1', LASTGOOD_PROGRESS_AFTER_MS: '0', LASTGOOD_GIT_TOKEN: '' } });
  t.is(r.code, 0, r.stderr);
  t.regex(r.stderr, new RegExp(`^lastgood: fetching from ${server.url.replace('http://', '').replace(/\./g, '\\.')}: \\d+ KiB, done in \\d+\\.\\d s$`, 'm'));
  t.notRegex(r.stdout, /fetching/);
  // stderr not a terminal and no LASTGOOD_PROGRESS: nothing, as git does
  const quiet = await lastgood(['lkg', '--config', config], { env: { LASTGOOD_PROGRESS_AFTER_MS: '0', LASTGOOD_GIT_TOKEN: '' } });
  t.is(quiet.code, 0, quiet.stderr);
  t.notRegex(quiet.stderr, /fetching/);
});
