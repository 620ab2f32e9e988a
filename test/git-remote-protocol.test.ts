import test from 'ava';
import fc from 'fast-check';
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { indexPack, objectId, PackError, type ObjectType } from '../src/deliver/git-remote/pack-index.ts';
import { writePack } from '../src/deliver/git-remote/pack-write.ts';
import { DELIM, FLUSH, PacketReader, packetText, pktLine, readSideBand } from '../src/deliver/git-remote/pkt-line.ts';
import { commitPageUrl, newPullRequestUrl, hostKind } from '../src/deliver/git-remote/hosts.ts';
import { loadCredentials } from '../src/deliver/git-remote/auth.ts';
import { gitRemoteMatches } from '../src/deliver/git-remote/match.ts';
import { redact } from '../src/errors.ts';
import { commit, git, makeRepo, tempDir } from './support/git.ts';

/** The git backend's parts that need no server: pkt-lines, pack indexing, host links, credentials, matching. */

test('pkt-lines: whatever is framed reads back the same, flushes and delimiters included', (t) => {
  fc.assert(
    fc.property(fc.array(fc.oneof(fc.uint8Array({ minLength: 1, maxLength: 300 }), fc.constantFrom('flush', 'delim')), { maxLength: 20 }), (items) => {
      const wire = Buffer.concat(items.map((i) => (i === 'flush' ? FLUSH : i === 'delim' ? DELIM : pktLine(i))));
      const reader = new PacketReader(wire);
      for (const item of items) {
        const p = reader.next()!;
        if (item === 'flush') t.is(p.kind, 'flush');
        else if (item === 'delim') t.is(p.kind, 'delim');
        else t.deepEqual(p.kind === 'data' ? new Uint8Array(p.data) : undefined, item);
      }
      t.true(reader.done);
    }),
    { numRuns: 100 },
  );
});

test('side band: the pack from band 1, progress from band 2, band 3 is the server\'s error', (t) => {
  const band = (n: number, s: string) => pktLine(Buffer.concat([Buffer.from([n]), Buffer.from(s)]));
  const ok = readSideBand(new PacketReader(Buffer.concat([band(2, 'Counting objects\n'), band(1, 'PACK'), band(1, 'rest'), FLUSH])));
  t.is(ok.data.toString(), 'PACKrest');
  t.is(ok.progress, 'Counting objects\n');
  t.throws(() => readSideBand(new PacketReader(Buffer.concat([band(1, 'PA'), band(3, 'upload-pack: not our ref 1234')]))), { message: /the server failed: upload-pack: not our ref 1234/ });
  t.is(packetText(new PacketReader(pktLine('version 2\n')).next()!), 'version 2');
  t.throws(() => new PacketReader(Buffer.from('00zz')).next(), { message: /bad pkt-line length/ });
});

/** A repository whose pack has deltas (many versions of the same files). */
function deltaRepo(versions: string[][]): string {
  const repo = makeRepo();
  for (const [i, files] of versions.entries()) {
    commit(repo, Object.fromEntries(files.map((content, j) => [`apps/a${j}/values.yaml`, content])), `v${i}`);
  }
  return repo;
}

function gitPack(repo: string, args: string[] = ['--delta-base-offset']): { pack: Buffer; idx: Buffer } {
  const out = tempDir('lastgood-pack-');
  const objects = git(repo, 'rev-list', '--objects', '--all').split('\n').map((l) => l.split(' ')[0]).join('\n');
  execFileSync('git', ['pack-objects', '-q', '--window=10', '--depth=20', ...args, path.join(out, 'p')], { cwd: repo, input: `${objects}\n` });
  const name = readdirSync(out).find((f) => f.endsWith('.pack'))!;
  return { pack: readFileSync(path.join(out, name)), idx: readFileSync(path.join(out, name.replace(/\.pack$/, '.idx'))) };
}

test('a pack git wrote (offset deltas) indexes to the very .idx git writes', async (t) => {
  const base = 'image:\n  tag: 1.0.0\nreplicas: 2\n' + 'padding line for deltas\n'.repeat(40);
  const repo = deltaRepo(Array.from({ length: 12 }, (_, i) => [base.replace('1.0.0', `1.0.${i}`), base.replace('replicas: 2', `replicas: ${i}`)]));
  const { pack, idx } = gitPack(repo);
  const indexed = await indexPack(pack);
  t.true(Buffer.compare(indexed.idx, idx) === 0, 'byte-identical to git pack-objects\' index');
  t.is(indexed.count, Number(git(repo, 'rev-list', '--objects', '--all').split('\n').length));
});

test('reference deltas, and a thin pack whose bases are outside it, index like git', async (t) => {
  const base = 'kind: Deployment\n' + 'line\n'.repeat(200);
  const repo = deltaRepo(Array.from({ length: 6 }, (_, i) => [`${base}tag: ${i}\n`]));
  const { pack, idx } = gitPack(repo, ['--no-reuse-delta']); // without --delta-base-offset, deltas name their base by id
  t.true(Buffer.compare((await indexPack(pack)).idx, idx) === 0, 'ref-delta pack');

  // a thin pack of the last commit against its parent: its delta bases are left out
  const head = git(repo, 'rev-parse', 'HEAD');
  const thin = execFileSync('git', ['pack-objects', '--stdout', '--thin', '--revs', '-q'], { cwd: repo, input: `${head}\n^${head}~1\n` });
  const have = new Map<string, { type: 'blob'; content: Buffer }>();
  for (const line of git(repo, 'rev-list', '--objects', `${head}~1`).split('\n')) {
    const oid = line.split(' ')[0]!;
    if (git(repo, 'cat-file', '-t', oid) === 'blob') have.set(oid, { type: 'blob', content: execFileSync('git', ['cat-file', 'blob', oid], { cwd: repo }) });
  }
  const indexed = await indexPack(thin, async (oid) => have.get(oid));
  const expected = git(repo, 'rev-list', '--objects', `${head}`, `^${head}~1`).split('\n').map((l) => l.split(' ')[0]).sort();
  t.deepEqual(indexed.oids().sort(), expected);
  await t.throwsAsync(indexPack(thin), { instanceOf: PackError, message: /deltas have no base/ });
});

test('any set of files, packed by git with deltas, indexes to git\'s .idx (property)', async (t) => {
  await fc.assert(
    fc.asyncProperty(fc.array(fc.array(fc.string({ minLength: 0, maxLength: 400 }), { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 5 }), async (versions) => {
      const repo = deltaRepo(versions.map((files) => files.map((f) => `${f}\n${'shared tail\n'.repeat(20)}`)));
      const { pack, idx } = gitPack(repo);
      return Buffer.compare((await indexPack(pack)).idx, idx) === 0;
    }),
    { numRuns: 8, seed: Number(process.env.LASTGOOD_PROPERTY_SEED ?? 20261123) },
  );
  t.pass();
});

test('a pack written for a push is one git accepts, holding exactly the objects given (property)', async (t) => {
  // sizes across the header's 4-bit and 7-bit size boundaries (15/16, 2047/2048) and an empty file
  const content = fc.oneof(fc.uint8Array({ maxLength: 40 }), fc.integer({ min: 0, max: 70_000 }).map((n) => Buffer.alloc(n, n % 251)));
  const object = fc.record({ type: fc.constantFrom<ObjectType>('blob', 'commit', 'tree', 'tag'), content });
  await fc.assert(
    fc.asyncProperty(fc.uniqueArray(object, { minLength: 1, maxLength: 12, selector: (o) => objectId(o.type, o.content) }), async (objects) => {
      const repo = tempDir('lastgood-pushpack-');
      git(repo, 'init', '-q', '--bare');
      // index-pack --strict would also check that trees and commits parse: these are arbitrary bytes, as the format allows
      const out = execFileSync('git', ['index-pack', '--stdin'], { cwd: repo, input: writePack(objects) }).toString().trim();
      const listed = execFileSync('git', ['verify-pack', '-v', path.join(repo, 'objects', 'pack', `pack-${out.replace(/^pack\t/, '')}.idx`)]).toString();
      const found = [...listed.matchAll(/^([0-9a-f]{40}) (\w+) +(\d+) /gm)].map((m) => `${m[1]} ${m[2]} ${m[3]}`).sort();
      const wanted = objects.map((o) => `${objectId(o.type, o.content)} ${o.type} ${o.content.byteLength}`).sort();
      t.deepEqual(found, wanted);
      // and lastgood's own reader reads it back to the same ids
      t.deepEqual((await indexPack(writePack(objects))).oids().sort(), objects.map((o) => objectId(o.type, o.content)).sort());
    }),
    { numRuns: 20, seed: Number(process.env.LASTGOOD_PROPERTY_SEED ?? 20261126) },
  );
  t.pass();
});

test('a pack damaged in transit is refused, not stored', async (t) => {
  const repo = deltaRepo([['a: 1\n'], ['a: 2\n']]);
  const { pack } = gitPack(repo);
  const flipped = Buffer.from(pack);
  flipped[40] = flipped[40]! ^ 0xff;
  await t.throwsAsync(indexPack(flipped), { instanceOf: PackError, message: /checksum mismatch/ });
  await t.throwsAsync(indexPack(pack.subarray(0, pack.length - 30)), { instanceOf: PackError });
  await t.throwsAsync(indexPack(Buffer.from('not a pack at all, not at all')), { instanceOf: PackError, message: /no PACK header/ });
  t.is(objectId('blob', Buffer.from('a: 1\n')), git(repo, 'rev-parse', 'HEAD~1:apps/a0/values.yaml'));
});

test('the "new merge request" page of each host lastgood knows', (t) => {
  const branch = 'lastgood/podinfo/0123456789ab';
  t.is(newPullRequestUrl('https://gitlab.example.com/platform/gitops.git', branch, 'main'), 'https://gitlab.example.com/platform/gitops/-/merge_requests/new?merge_request%5Bsource_branch%5D=lastgood%2Fpodinfo%2F0123456789ab&merge_request%5Btarget_branch%5D=main');
  t.is(newPullRequestUrl('https://gitlab.com/group/sub/gitops', branch, 'main'), 'https://gitlab.com/group/sub/gitops/-/merge_requests/new?merge_request%5Bsource_branch%5D=lastgood%2Fpodinfo%2F0123456789ab&merge_request%5Btarget_branch%5D=main');
  t.is(newPullRequestUrl('https://codeberg.org/acme/gitops.git', branch, 'main'), 'https://codeberg.org/acme/gitops/compare/main...lastgood/podinfo/0123456789ab');
  t.is(newPullRequestUrl('https://gitea.acme.internal/acme/gitops.git', branch, 'main'), 'https://gitea.acme.internal/acme/gitops/compare/main...lastgood/podinfo/0123456789ab');
  t.is(newPullRequestUrl('https://bitbucket.org/acme/gitops.git', branch, 'main'), 'https://bitbucket.org/acme/gitops/pull-requests/new?source=lastgood%2Fpodinfo%2F0123456789ab&dest=main');
  t.is(newPullRequestUrl('https://git.example.com/gitops.git', branch, 'main'), undefined);
  t.is(hostKind(new URL('https://forgejo.example.org/x/y')), 'gitea');
  t.is(hostKind(new URL('https://mygitlabmirror.example.org/x/y')), 'unknown', 'a word inside a host name is not a host kind');
});

test('the web page of a commit on each host lastgood knows; none for another host', (t) => {
  const sha = 'a'.repeat(40);
  t.is(commitPageUrl('https://gitlab.example.com/platform/gitops.git', sha), `https://gitlab.example.com/platform/gitops/-/commit/${sha}`);
  t.is(commitPageUrl('https://codeberg.org/acme/gitops.git', sha), `https://codeberg.org/acme/gitops/commit/${sha}`);
  t.is(commitPageUrl('https://bitbucket.org/acme/gitops.git', sha), `https://bitbucket.org/acme/gitops/commits/${sha}`);
  t.is(commitPageUrl('https://git.example.com/gitops.git', sha), undefined);
});

test('credentials: a token from the environment or a file, a user and password from files; every spelling scrubbed', (t) => {
  const dir = tempDir('lastgood-auth-');
  const token = 'glpat-AuthUnitTestToken1234567';
  const env = { LASTGOOD_GIT_TOKEN: token, OTHER: 'x' };
  const fromEnv = loadCredentials({ tokenEnv: 'LASTGOOD_GIT_TOKEN' }, 'gitlab.example.com', { relativeTo: dir, env })!;
  t.is(fromEnv.header, `Basic ${Buffer.from(`oauth2:${token}`).toString('base64')}`);
  t.is(fromEnv.source, 'environment variable LASTGOOD_GIT_TOKEN');
  t.is(redact(`failed with ${fromEnv.header} and ${token}`), 'failed with Basic *** and ***');

  writeFileSync(path.join(dir, 'user'), 'deploy-bot\n');
  writeFileSync(path.join(dir, 'password'), 'Pa55-word-from-a-secret\n');
  const files = loadCredentials({ usernameFile: 'user', passwordFile: 'password' }, 'git.example.com', { relativeTo: dir, env })!;
  t.is(files.header, `Basic ${Buffer.from('deploy-bot:Pa55-word-from-a-secret').toString('base64')}`);
  t.regex(files.source, /file .*password and file .*user/);
  t.false(redact(`x ${files.header}`).includes('Pa55'));

  const bearer = loadCredentials({ tokenEnv: 'LASTGOOD_GIT_TOKEN', scheme: 'bearer' }, 'dev.azure.com', { relativeTo: dir, env })!;
  t.is(bearer.header, `Bearer ${token}`);
  t.is(loadCredentials(undefined, 'bitbucket.org', { relativeTo: dir, env })!.header, `Basic ${Buffer.from(`x-token-auth:${token}`).toString('base64')}`, 'LASTGOOD_GIT_TOKEN by default');
  t.is(loadCredentials(undefined, 'x.example.com', { relativeTo: dir, env: {} }), undefined);

  t.throws(() => loadCredentials({ tokenEnv: 'MISSING_TOKEN' }, 'h', { relativeTo: dir, env, configFile: 'lastgood.yaml' }), { message: /lastgood\.yaml: repo\.auth\.tokenEnv: environment variable MISSING_TOKEN is not set/ });
  t.throws(() => loadCredentials({ tokenFile: 'nope' }, 'h', { relativeTo: dir, env }), { message: /repo\.auth\.tokenFile: cannot read .*nope \(ENOENT\)/ });
  // a bound (64 KiB): /dev/zero, or the wrong file, is refused at once, never read whole
  t.throws(() => loadCredentials({ tokenFile: '/dev/zero' }, 'h', { relativeTo: dir, env, configFile: 'lastgood.yaml' }), { message: 'lastgood.yaml: repo.auth.tokenFile: /dev/zero holds more than 64 KiB, the most lastgood reads as a credential (is it the right file?)' });
  t.throws(() => loadCredentials({ passwordEnv: 'OTHER' }, 'h', { relativeTo: dir, env }), { message: /a password needs a user name/ });
});

test('which URLs the git backend takes: any host but GitHub\'s, GitHub too with transport git', (t) => {
  t.true(gitRemoteMatches('https://gitlab.example.com/platform/gitops.git', {}));
  t.true(gitRemoteMatches('https://gitlab.example.com/platform/gitops.git', { apiUrl: 'https://api.github.com' }), 'GITHUB_API_URL in a workflow does not make GitLab GitHub');
  t.false(gitRemoteMatches('https://github.com/acme/gitops', {}));
  t.true(gitRemoteMatches('https://github.com/acme/gitops', { repo: { transport: 'git' } }));
  t.false(gitRemoteMatches('https://ghe.acme.com/acme/gitops', { apiUrl: 'https://ghe.acme.com/api/v3' }), 'GHES keeps the API');
  t.false(gitRemoteMatches('https://gitea.example.com/acme/gitops', { repo: { transport: 'api' } }));
  t.true(gitRemoteMatches('https://user:secret@github.com/acme/gitops', {}), 'taken, to be refused');
  t.false(gitRemoteMatches('/srv/git/gitops.git', {}));
  t.false(gitRemoteMatches('ssh://git@gitlab.example.com/x.git', {}));
});
