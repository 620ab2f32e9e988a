import fs from 'node:fs';
import path from 'node:path';
import git from 'isomorphic-git';
import { InputError } from '../errors.ts';
import { makeOutputFolder } from '../output-folder.ts';
import { loadTemplate } from '../revert/template.ts';

/**
 * The demo's GitOps repository, built with isomorphic-git at fixed times so its commits have the
 * same SHAs on every machine (demo/cluster.yaml names them, as a real cluster would).
 */
const author = (minute: number) => ({ name: 'Platform Team', email: 'platform@example.com', timestamp: Date.UTC(2026, 10, 21, 9, minute) / 1000, timezoneOffset: 0 });

const overlay = (tag: string, extra = '') => `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: prod
resources:
  - ../../base
${extra}images:
  - name: ghcr.io/stefanprodan/podinfo
    newTag: ${tag} # bumped by the release pipeline
`;

const history: Array<{ message: string; files: Record<string, string | null> }> = [
  {
    message: 'Bootstrap prod: podinfo 6.9.2 and redis',
    files: {
      'apps/podinfo/base/kustomization.yaml': 'resources:\n  - deployment.yaml\n  - canary.yaml\n',
      'apps/podinfo/base/deployment.yaml': 'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: podinfo\nspec:\n  replicas: 2\n  selector:\n    matchLabels: { app: podinfo }\n  template:\n    metadata:\n      labels: { app: podinfo }\n    spec:\n      containers:\n        - name: podinfod\n          image: ghcr.io/stefanprodan/podinfo:6.9.2\n',
      'apps/podinfo/base/canary.yaml': 'apiVersion: flagger.app/v1beta1\nkind: Canary\nmetadata:\n  name: podinfo\nspec:\n  targetRef: { apiVersion: apps/v1, kind: Deployment, name: podinfo }\n  analysis: { interval: 1m, threshold: 5, maxWeight: 50, stepWeight: 10 }\n',
      'apps/podinfo/overlays/prod/kustomization.yaml': overlay('6.9.2'),
      'apps/redis/kustomization.yaml': 'resources:\n  - https://github.com/example/redis//deploy?ref=v7.4.1\n',
      'clusters/prod/apps.yaml': 'apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: apps\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./apps\n  prune: true\n  wait: true\n  sourceRef: { kind: GitRepository, name: flux-system }\n',
    },
  },
  { message: 'podinfo: release 6.9.3 to prod', files: { 'apps/podinfo/overlays/prod/kustomization.yaml': overlay('6.9.3') } },
  { message: 'redis: raise maxmemory to 512mb', files: { 'apps/redis/maxmemory.yaml': 'maxmemory: 512mb\n' } },
  {
    message: 'podinfo: release 7.0.0 to prod with the new cache backend',
    files: {
      'apps/podinfo/overlays/prod/kustomization.yaml': overlay('7.0.0', 'patches:\n  - path: cache.yaml\n'),
      'apps/podinfo/overlays/prod/cache.yaml': 'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: podinfo\nspec:\n  template:\n    spec:\n      containers:\n        - name: podinfod\n          env:\n            - { name: PODINFO_CACHE_SERVER, value: "tcp://redis:6379" }\n',
    },
  },
];

export async function buildDemoRepo(dir: string): Promise<string[]> {
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  await git.init({ fs, dir, defaultBranch: 'main' });
  const shas: string[] = [];
  for (const [i, step] of history.entries()) {
    for (const [file, content] of Object.entries(step.files)) {
      const full = path.join(dir, file);
      if (content === null) {
        fs.rmSync(full);
        await git.remove({ fs, dir, filepath: file });
      } else {
        fs.mkdirSync(path.dirname(full), { recursive: true });
        fs.writeFileSync(full, content);
        await git.add({ fs, dir, filepath: file });
      }
    }
    shas.push(await git.commit({ fs, dir, message: step.message, author: author(i * 7), committer: author(i * 7) }));
  }
  return shas;
}

/** The demo's commits, newest first: SHA and subject. */
export async function demoLog(dir: string, shas: string[]): Promise<Array<{ sha: string; subject: string }>> {
  return Promise.all([...shas].reverse().map(async (sha) => ({ sha, subject: (await git.readCommit({ fs, dir, oid: sha })).commit.message.split('\n')[0]! })));
}

/** What `lastgood demo DIR` wrote, and the commands that reproduce the README's worked example from it. */
export interface DemoFolder {
  dir: string;
  repo: string;
  config: string;
  snapshot: string;
  shas: string[];
  /** the clock the demo's objects are read at (their times are those of 2026-11-21) */
  now: string;
}

export const DEMO_NOW = '2026-11-21T09:52:00Z';

/**
 * `lastgood demo [DIR]` (issue 36): the worked example from the package alone. Writes DIR/gitops
 * (the repository, built with isomorphic-git at fixed times: the same SHAs everywhere),
 * DIR/cluster.yaml (the cluster as `kubectl get -o yaml` prints it after the failure) and
 * DIR/lastgood.yaml. DIR must be new or empty (`replace`: its demo files are written again).
 */
export async function writeDemo(dir: string, opts: { replace?: boolean } = {}): Promise<DemoFolder> {
  const root = path.resolve(dir);
  if (fs.existsSync(root)) {
    if (!fs.statSync(root).isDirectory()) throw new InputError(`${dir}: not a folder`);
    if (!opts.replace && fs.readdirSync(root).length > 0) throw new InputError(`${dir}: the folder is not empty; give a new or empty one (the demo writes gitops/, cluster.yaml and lastgood.yaml there)`);
  }
  makeOutputFolder(root, 'demo');
  const repo = path.join(root, 'gitops');
  const shas = await buildDemoRepo(repo);
  const config = path.join(root, 'lastgood.yaml');
  const snapshot = path.join(root, 'cluster.yaml');
  fs.writeFileSync(config, loadTemplate('demo/lastgood.yaml'));
  fs.writeFileSync(snapshot, loadTemplate('demo/cluster.yaml'));
  return { dir: root, repo, config, snapshot, shas, now: DEMO_NOW };
}
