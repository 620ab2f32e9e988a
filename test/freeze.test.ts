import test from 'ava';
import { parseAllDocuments } from 'yaml';
import { LocalRepo } from '../src/deliver/local/index.ts';
import { detectImageBot, planFreeze, splitImage } from '../src/revert/freeze.ts';
import { commit, git, makeRepo } from './support/git.ts';

/** Freeze edits on real repositories: valid YAML, comments and layout kept, only the right objects. */

const IUA = `# image automation for production
apiVersion: image.toolkit.fluxcd.io/v1beta2
kind: ImageUpdateAutomation
metadata:
  name: prod-apps
  namespace: flux-system
spec:
  interval: 30m   # scan twice an hour
  sourceRef:
    kind: GitRepository
    name: flux-system
  git:
    commit:
      author:
        email: fluxcdbot@users.noreply.github.com
        name: fluxcdbot
  update:
    path: ./apps/podinfo/overlays/prod
    strategy: Setters
---
# staging has its own automation; it must not be touched
apiVersion: image.toolkit.fluxcd.io/v1beta2
kind: ImageUpdateAutomation
metadata:
  name: staging-apps
  namespace: flux-system
spec:
  interval: 30m
  sourceRef: {kind: GitRepository, name: flux-system}
  update:
    path: ./apps/podinfo/overlays/staging
`;

const deploy = (tag: string) => `apiVersion: apps/v1
kind: Deployment
metadata: {name: podinfo, namespace: prod}
spec:
  template:
    spec:
      containers:
        - name: podinfo
          image: ghcr.io/stefanprodan/podinfo:${tag} # {"$imagepolicy": "flux-system:podinfo"}
`;

const APP = `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: podinfo-prod
  namespace: argocd
  annotations:
    # which images the updater may bump
    argocd-image-updater.argoproj.io/image-list: web=ghcr.io/stefanprodan/podinfo:~6, sidecar=envoyproxy/envoy
    argocd-image-updater.argoproj.io/web.ignore-tags: latest
    argocd-image-updater.argoproj.io/write-back-method: git
spec:
  project: default
  source:
    repoURL: https://github.com/acme/gitops
    path: apps/podinfo/overlays/prod
  destination: {server: https://kubernetes.default.svc, namespace: prod}
`;

function botRepo(files: Record<string, string>, bot: { name: string; email: string; message: string }) {
  const dir = makeRepo();
  commit(dir, { ...files, 'apps/podinfo/overlays/prod/deployment.yaml': deploy('6.5.0') }, 'base');
  // the bot's commit, with the bot's identity
  const bad = commitAs(dir, bot, { 'apps/podinfo/overlays/prod/deployment.yaml': deploy('6.6.0') });
  return { dir, bad };
}

function commitAs(dir: string, who: { name: string; email: string; message: string }, files: Record<string, string>): string {
  commit(dir, files, 'placeholder');
  git(dir, '-c', `user.name=${who.name}`, '-c', `user.email=${who.email}`, 'commit', '-q', '--amend', '--reset-author', '-m', who.message);
  return git(dir, 'rev-parse', 'HEAD');
}

test('Flux: the ImageUpdateAutomation covering the target is suspended, the other left alone, comments kept', async (t) => {
  const { dir, bad } = botRepo({ 'clusters/prod/image-automation.yaml': IUA }, { name: 'fluxcdbot', email: 'fluxcdbot@users.noreply.github.com', message: 'Update from image update automation' });
  const repo = new LocalRepo(dir);
  const plan = await planFreeze(repo, { head: bad, paths: ['apps/podinfo/overlays/prod/'], badImages: [], badCommits: [await repo.readCommit(bad)], mode: 'auto' });
  t.deepEqual(plan.rejected, ['ghcr.io/stefanprodan/podinfo:6.6.0'], 'the bad image is found in the commit when not given');
  t.is(plan.files.length, 1);
  t.is(plan.files[0]!.path, 'clusters/prod/image-automation.yaml');
  const text = Buffer.from((plan.files[0] as { content: Uint8Array }).content).toString();
  t.is(text, IUA.replace('    strategy: Setters\n', '    strategy: Setters\n  suspend: true\n'));
  const docs = parseAllDocuments(text);
  t.true(Array.isArray(docs));
  if (Array.isArray(docs)) t.deepEqual(docs.map((d) => (d.toJS() as { spec: { suspend?: boolean } }).spec.suspend), [true, undefined]);
  t.regex(plan.frozen[0]!, /suspended Flux ImageUpdateAutomation flux-system\/prod-apps/);
  t.deepEqual(plan.warnings, []);

  t.deepEqual(await planFreeze(repo, { head: bad, paths: ['apps/podinfo/overlays/prod/'], badImages: [], badCommits: [await repo.readCommit(bad)], mode: 'off' }), { files: [], frozen: [], rejected: [], warnings: [] });
});

test('Argo CD Image Updater: the bad tag joins the alias ignore-tags annotation, comments kept', async (t) => {
  const { dir, bad } = botRepo({ 'argocd/apps/podinfo-prod.yaml': APP }, { name: 'argocd-image-updater', email: 'noreply@argoproj.io', message: 'build: automatic update of podinfo-prod\n\nupdates image stefanprodan/podinfo tag \'6.5.0\' to \'6.6.0\'\n' });
  const repo = new LocalRepo(dir);
  const plan = await planFreeze(repo, { head: bad, paths: ['apps/podinfo/overlays/prod/'], badImages: ['ghcr.io/stefanprodan/podinfo:6.6.0'], badCommits: [await repo.readCommit(bad)], mode: 'auto' });
  t.deepEqual(plan.rejected, ['ghcr.io/stefanprodan/podinfo:6.6.0']);
  const text = Buffer.from((plan.files[0] as { content: Uint8Array }).content).toString();
  t.is(text, APP.replace('web.ignore-tags: latest', 'web.ignore-tags: latest,6.6.0'));
  t.regex(plan.frozen[0]!, /ignores ghcr.io\/stefanprodan\/podinfo:6.6.0 for Application podinfo-prod/);
});

test('Argo CD Image Updater v1: ignoreTags of the matching image in an ImageUpdater resource', async (t) => {
  const updater = `apiVersion: argocd-image-updater.argoproj.io/v1alpha1
kind: ImageUpdater
metadata:
  name: prod
  namespace: argocd
spec:
  applicationRefs:
    - namePattern: "podinfo-*"
      images:
        # the web image
        - alias: web
          imageName: ghcr.io/stefanprodan/podinfo:~6
    - namePattern: "other-*"
      images:
        - alias: web
          imageName: ghcr.io/stefanprodan/podinfo
`;
  const { dir, bad } = botRepo({ 'argocd/updater.yaml': updater }, { name: 'argocd-image-updater', email: 'noreply@argoproj.io', message: 'build: automatic update of podinfo-prod' });
  const repo = new LocalRepo(dir);
  const plan = await planFreeze(repo, { head: bad, paths: ['apps/podinfo/overlays/prod/'], badImages: ['ghcr.io/stefanprodan/podinfo:6.6.0'], badCommits: [await repo.readCommit(bad)], mode: 'auto' });
  const text = Buffer.from((plan.files[0] as { content: Uint8Array }).content).toString();
  t.is(text, updater.replace('          imageName: ghcr.io/stefanprodan/podinfo:~6\n', '          imageName: ghcr.io/stefanprodan/podinfo:~6\n          commonUpdateSettings:\n            ignoreTags: [ 6.6.0 ]\n'));
});

test('a human commit freezes nothing', async (t) => {
  const { dir, bad } = botRepo({ 'clusters/prod/image-automation.yaml': IUA }, { name: 'Jane', email: 'jane@example.com', message: 'bump podinfo' });
  const repo = new LocalRepo(dir);
  const plan = await planFreeze(repo, { head: bad, paths: ['apps/podinfo/overlays/prod/'], badImages: ['ghcr.io/stefanprodan/podinfo:6.6.0'], badCommits: [await repo.readCommit(bad)], mode: 'auto' });
  t.deepEqual(plan, { files: [], frozen: [], rejected: [], warnings: [] });
});

test('Flux automation without a covering ImageUpdateAutomation is reported, not guessed', async (t) => {
  const { dir, bad } = botRepo({ 'clusters/prod/image-automation.yaml': IUA.replace('./apps/podinfo/overlays/prod', './apps/other') }, { name: 'fluxcdbot', email: 'fluxcdbot@users.noreply.github.com', message: 'Update from image update automation' });
  const repo = new LocalRepo(dir);
  const plan = await planFreeze(repo, { head: bad, paths: ['apps/podinfo/overlays/prod/'], badImages: [], badCommits: [await repo.readCommit(bad)], mode: 'auto' });
  t.deepEqual(plan.files, []);
  t.regex(plan.warnings[0]!, /no ImageUpdateAutomation in the repository covers/);
});

test('detection rules and image parsing', (t) => {
  const person = (name: string, email: string) => ({ name, email, timestamp: 0, timezoneOffset: 0 });
  const human = person('Jane', 'jane@example.com');
  t.deepEqual(detectImageBot({ message: 'Automated image update\n\nAutomation name: flux-system/prod-apps\n', author: human, committer: human }), { kind: 'flux', automation: 'flux-system/prod-apps' });
  t.deepEqual(detectImageBot({ message: '[skip ci] build: automatic update of "podinfo-prod"\n', author: human, committer: human }), { kind: 'argocd', app: 'podinfo-prod' });
  t.is(detectImageBot({ message: 'Automated image update', author: human, committer: human }), undefined);
  t.is(detectImageBot({ message: 'bump podinfo to 6.6.0', author: human, committer: human }), undefined);
  t.deepEqual(splitImage('localhost:5000/app:1.2'), { repo: 'localhost:5000/app', tag: '1.2' });
  t.deepEqual(splitImage('nginx@sha256:abcd'), { repo: 'nginx' });
});
