import { chmodSync } from 'node:fs';
import path from 'node:path';
import test from 'ava';
import { LocalRepo } from '../src/deliver/local/index.ts';
import { RevertImpossible } from '../src/errors.ts';
import type { FileChange } from '../src/repo/types.ts';
import { planRestore } from '../src/revert/restore.ts';
import { planRevert } from '../src/revert/threeway.ts';
import { commit, git, makeRepo } from './support/git.ts';

/** Scenarios of the 3-way revert on real repositories, checked against native `git revert`. */

const author = { name: 'lastgood', email: 'lastgood@example.com', timestamp: 1_790_000_000, timezoneOffset: 0 };

async function apply(repo: LocalRepo, head: string, files: FileChange[]): Promise<string> {
  return repo.writeChangeCommit({ target: 't', branch: 'main', parent: head, files, message: 'revert\n', author, bad: [], lastKnownGood: head });
}

/** `git ls-tree -r` of the target path at a commit or tree: modes, oids and names. */
function tree(dir: string, rev: string, target: string): string {
  return git(dir, 'ls-tree', '-r', rev, '--', target.replace(/\/$/, ''));
}

/** What native git makes of the same revert: the tree after `git revert --no-commit`, then reset. */
function nativeRevertTree(dir: string, bad: string[], extra: string[] = []): string | undefined {
  try {
    git(dir, 'revert', '--no-commit', ...extra, ...bad);
    return git(dir, 'write-tree');
  } catch {
    return undefined;
  } finally {
    try {
      git(dir, 'revert', '--abort');
    } catch {
      git(dir, 'reset', '-q', '--hard', 'HEAD');
    }
  }
}

const deployment = (o: { tag: string; replicas: number; pullPolicy?: string; comment?: string }) => `# podinfo in prod
apiVersion: apps/v1
kind: Deployment
metadata:
  name: podinfo
  namespace: prod
spec:
  replicas: ${o.replicas}${o.comment ? ` # ${o.comment}` : ''}
  selector:
    matchLabels:
      app: podinfo
  template:
    metadata:
      labels:
        app: podinfo
    spec:
      containers:
        - name: podinfo
          image: ghcr.io/stefanprodan/podinfo:${o.tag} # the app
          imagePullPolicy: ${o.pullPolicy ?? 'IfNotPresent'}
          ports:
            - containerPort: 9898
`;

const PROD = 'apps/podinfo/overlays/prod/';
const DEPLOY = `${PROD}deployment.yaml`;

test('revert keeps an unrelated later edit that a restore would lose, and agrees with git revert', async (t) => {
  const dir = makeRepo();
  const lkg = commit(dir, { [DEPLOY]: deployment({ tag: '6.5.0', replicas: 2 }), 'apps/other/a.yaml': 'a: 1\n' }, 'podinfo 6.5.0');
  const bad = commit(dir, { [DEPLOY]: deployment({ tag: '6.6.0', replicas: 2 }) }, 'podinfo 6.6.0');
  const head = commit(dir, { [`${PROD}configmap.yaml`]: 'apiVersion: v1\nkind: ConfigMap\n', 'apps/other/a.yaml': 'a: 2\n' }, 'add a configmap');
  const repo = new LocalRepo(dir);

  const plan = await planRevert(repo, { head, bad: [bad], paths: [PROD] });
  t.deepEqual(plan.files.map((f) => f.path), [DEPLOY]);
  t.deepEqual(plan.merged, [{ path: DEPLOY, how: 'clean' }]);
  const reverted = await apply(repo, head, plan.files);
  t.is(git(dir, 'show', `${reverted}:${DEPLOY}`) + '\n', deployment({ tag: '6.5.0', replicas: 2 }));
  t.is(git(dir, 'show', `${reverted}:${PROD}configmap.yaml`), 'apiVersion: v1\nkind: ConfigMap');
  t.is(tree(dir, reverted, PROD), tree(dir, nativeRevertTree(dir, [bad])!, PROD));

  // a restore to the LKG loses the later configmap
  const restore = await planRestore(repo, { head, lastKnownGood: lkg, paths: [PROD] });
  t.true(restore.some((f) => f.path === `${PROD}configmap.yaml` && 'delete' in f));
});

test('a later edit on a nearby line of the same YAML file survives with its comments (line merge conflicts, YAML merge does not)', async (t) => {
  const dir = makeRepo();
  commit(dir, { [DEPLOY]: deployment({ tag: '6.5.0', replicas: 2 }) }, 'podinfo 6.5.0');
  const bad = commit(dir, { [DEPLOY]: deployment({ tag: '6.6.0', replicas: 2 }) }, 'podinfo 6.6.0');
  const head = commit(dir, { [DEPLOY]: deployment({ tag: '6.6.0', replicas: 2, pullPolicy: 'Always' }) }, 'always pull');
  const repo = new LocalRepo(dir);
  t.is(nativeRevertTree(dir, [bad]), undefined, 'native git conflicts on the adjacent lines');

  const plan = await planRevert(repo, { head, bad: [bad], paths: [PROD] });
  t.deepEqual(plan.merged, [{ path: DEPLOY, how: 'yaml' }]);
  const file = plan.files[0]!;
  t.true('content' in file);
  t.is(Buffer.from((file as { content: Uint8Array }).content).toString(), deployment({ tag: '6.5.0', replicas: 2, pullPolicy: 'Always' }));
});

test('reverting a comment change on a line a later commit changed: git conflicts, the YAML merge restores the comment next to the later value', async (t) => {
  const config = (value: string, comment: string) => `# generated\nkind: Config\nk0: ${value} # ${comment}\nk1: init1 # note 1\n`;
  const dir = makeRepo();
  commit(dir, { 'a/x.yaml': config('v1', 'note 0') }, 'base');
  const bad = commit(dir, { 'a/x.yaml': config('v1', 'c2') }, 'comment');
  const head = commit(dir, { 'a/x.yaml': config('v4', 'c2') }, 'later value');
  t.is(nativeRevertTree(dir, [bad]), undefined, 'native git conflicts on the line');
  const plan = await planRevert(new LocalRepo(dir), { head, bad: [bad], paths: ['a/'] });
  t.deepEqual(plan.merged, [{ path: 'a/x.yaml', how: 'yaml' }]);
  t.is(Buffer.from((plan.files[0] as { content: Uint8Array }).content).toString(), config('v4', 'note 0'));
});

test('an edit to another key with a new comment survives, comments and layout of the head kept byte for byte', async (t) => {
  const dir = makeRepo();
  commit(dir, { [DEPLOY]: deployment({ tag: '6.5.0', replicas: 2 }) }, 'podinfo 6.5.0');
  const bad = commit(dir, { [DEPLOY]: deployment({ tag: '6.6.0', replicas: 2 }) }, 'podinfo 6.6.0');
  const head = commit(dir, { [DEPLOY]: deployment({ tag: '6.6.0', replicas: 4, comment: 'scaled for the sale' }) }, 'scale');
  const plan = await planRevert(new LocalRepo(dir), { head, bad: [bad], paths: [PROD] });
  const text = Buffer.from((plan.files[0] as { content: Uint8Array }).content).toString();
  t.is(text, deployment({ tag: '6.5.0', replicas: 4, comment: 'scaled for the sale' }));
});

test('a conflicting revert throws RevertImpossible naming the files and the commits', async (t) => {
  const dir = makeRepo();
  commit(dir, { [DEPLOY]: deployment({ tag: '6.5.0', replicas: 2 }), [`${PROD}kustomization.yaml`]: 'resources: [deployment.yaml]\n' }, 'podinfo 6.5.0');
  const bad = commit(dir, { [DEPLOY]: deployment({ tag: '6.6.0', replicas: 2 }), [`${PROD}kustomization.yaml`]: 'resources: [deployment.yaml, hpa.yaml]\n' }, 'podinfo 6.6.0');
  const head = commit(dir, { [DEPLOY]: deployment({ tag: '6.6.1', replicas: 2 }) }, 'podinfo 6.6.1 hotfix');
  const error = await t.throwsAsync(planRevert(new LocalRepo(dir), { head, bad: [bad], paths: [PROD] }), { instanceOf: RevertImpossible });
  t.true(error.message.includes(DEPLOY), error.message);
  t.false(error.message.includes('kustomization.yaml'), 'the clean file is not named');
  t.true(error.message.includes(bad.slice(0, 12)), error.message);
  t.true(error.details.some((d) => d.startsWith(`${DEPLOY}:`) && d.includes('spec.template.spec.containers.podinfo.image')), error.details.join('\n'));
  t.is(nativeRevertTree(dir, [bad]), undefined, 'native git conflicts too');
});

test('a non-YAML file changed on the same line conflicts', async (t) => {
  const dir = makeRepo();
  commit(dir, { 'app/values.txt': 'a\nb\nc\n' }, 'base');
  const bad = commit(dir, { 'app/values.txt': 'a\nB\nc\n' }, 'bad');
  const head = commit(dir, { 'app/values.txt': 'a\nBB\nc\n' }, 'later');
  const error = await t.throwsAsync(planRevert(new LocalRepo(dir), { head, bad: [bad], paths: ['app/'] }), { instanceOf: RevertImpossible });
  t.regex(error.details[0]!, /^app\/values\.txt: both sides changed line 2/);
});

test('several bad commits are reverted newest first, like git revert of each in turn', async (t) => {
  const dir = makeRepo();
  commit(dir, { [DEPLOY]: deployment({ tag: '6.5.0', replicas: 2 }), [`${PROD}env.yaml`]: 'LOG_LEVEL: info\nREGION: eu\n' }, 'base');
  const bad1 = commit(dir, { [DEPLOY]: deployment({ tag: '6.6.0', replicas: 2 }) }, 'bump 6.6.0');
  const bad2 = commit(dir, { [DEPLOY]: deployment({ tag: '6.7.0', replicas: 2 }), [`${PROD}env.yaml`]: 'LOG_LEVEL: debug\nREGION: eu\n' }, 'bump 6.7.0 + debug');
  const head = commit(dir, { [`${PROD}env.yaml`]: 'LOG_LEVEL: debug\nREGION: eu\nZONE: a\n', 'README.md': 'x\n' }, 'zone');
  const repo = new LocalRepo(dir);
  const plan = await planRevert(repo, { head, bad: [bad2, bad1], paths: [PROD] });
  const reverted = await apply(repo, head, plan.files);
  t.is(git(dir, 'show', `${reverted}:${DEPLOY}`) + '\n', deployment({ tag: '6.5.0', replicas: 2 }));
  t.is(git(dir, 'show', `${reverted}:${PROD}env.yaml`), 'LOG_LEVEL: info\nREGION: eu\nZONE: a');
  t.is(tree(dir, reverted, PROD), tree(dir, nativeRevertTree(dir, [bad2, bad1])!, PROD));
  t.deepEqual(plan.merged, [
    { path: DEPLOY, how: 'clean' },
    { path: `${PROD}env.yaml`, how: 'line' },
  ]);
});

test('adds, deletes and mode changes are reverted; nothing outside the target paths is touched', async (t) => {
  const dir = makeRepo();
  commit(dir, { 'app/a.yaml': 'a: 1\n', 'app/run.sh': 'echo hi\n', 'app/old.yaml': 'old: true\n', 'elsewhere/x.yaml': 'x: 1\n' }, 'base');
  chmodSync(path.join(dir, 'app/run.sh'), 0o755);
  const bad = commit(dir, { 'app/new.yaml': 'new: true\n', 'app/old.yaml': null, 'elsewhere/x.yaml': 'x: 2\n' }, 'bad: add, delete, chmod, and outside');
  const head = commit(dir, { 'app/a.yaml': 'a: 2\n' }, 'later');
  const repo = new LocalRepo(dir);
  const plan = await planRevert(repo, { head, bad: [bad], paths: ['app/'] });
  t.deepEqual(
    plan.files.map((f) => ('delete' in f ? `-${f.path}` : `${f.mode} ${f.path}`)),
    ['-app/new.yaml', '100644 app/old.yaml', '100644 app/run.sh'],
  );
  const reverted = await apply(repo, head, plan.files);
  t.is(tree(dir, reverted, 'app/'), tree(dir, nativeRevertTree(dir, [bad])!, 'app/'));
  t.is(git(dir, 'diff', '--name-only', head, reverted, '--', 'elsewhere'), '');
});

test('a merge commit is reverted against its first parent (git revert -m 1)', async (t) => {
  const dir = makeRepo();
  commit(dir, { [DEPLOY]: deployment({ tag: '6.5.0', replicas: 2 }), [`${PROD}env.yaml`]: 'A: 1\n' }, 'base');
  git(dir, 'checkout', '-q', '-b', 'feature');
  commit(dir, { [DEPLOY]: deployment({ tag: '6.6.0', replicas: 2 }) }, 'feature: bump');
  git(dir, 'checkout', '-q', 'main');
  commit(dir, { [`${PROD}env.yaml`]: 'A: 2\n' }, 'main: env');
  git(dir, 'merge', '-q', '--no-ff', '-m', 'Merge feature', 'feature');
  const merge = git(dir, 'rev-parse', 'HEAD');
  const repo = new LocalRepo(dir);
  const plan = await planRevert(repo, { head: merge, bad: [merge], paths: [PROD] });
  const reverted = await apply(repo, merge, plan.files);
  t.is(git(dir, 'show', `${reverted}:${DEPLOY}`) + '\n', deployment({ tag: '6.5.0', replicas: 2 }));
  t.is(git(dir, 'show', `${reverted}:${PROD}env.yaml`), 'A: 2');
  t.is(tree(dir, reverted, PROD), tree(dir, nativeRevertTree(dir, [merge], ['-m', '1'])!, PROD));
});

test('a commit carrying Lastgood-Target is never reverted', async (t) => {
  const dir = makeRepo();
  commit(dir, { 'app/a.yaml': 'a: 1\n' }, 'base');
  const ours = commit(dir, { 'app/a.yaml': 'a: 0\n' }, 'Revert podinfo\n\nLastgood-Target: podinfo-prod\nLastgood-Reverts: 1234567890123456789012345678901234567890');
  const error = await t.throwsAsync(planRevert(new LocalRepo(dir), { head: ours, bad: [ours], paths: ['app/'] }), { instanceOf: RevertImpossible });
  t.regex(error.message, /Lastgood-Target: podinfo-prod/);
});

test('a revert that is already undone at head is a no-op', async (t) => {
  const dir = makeRepo();
  commit(dir, { 'app/a.yaml': 'a: 1\n' }, 'base');
  const bad = commit(dir, { 'app/a.yaml': 'a: 2\n' }, 'bad');
  const head = commit(dir, { 'app/a.yaml': 'a: 1\n' }, 'manual fix');
  const plan = await planRevert(new LocalRepo(dir), { head, bad: [bad], paths: ['app/'] });
  t.deepEqual(plan, { files: [], merged: [] });
});
