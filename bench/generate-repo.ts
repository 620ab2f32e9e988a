/**
 * Deterministic GitOps-like repositories for the benches, written with `git fast-import`.
 *
 * Layout: apps/app-NNNNN/base/{deployment,service,kustomization}.yaml and
 * apps/app-NNNNN/overlays/{dev,staging,prod}/{kustomization,deployment-patch}.yaml (image tags in
 * the overlays), and a listing root clusters/prod/kustomization.yaml whose resources are every
 * app's prod overlay (../../apps/app-NNNNN/overlays/prod, apps in order: what a Flux Kustomization
 * with path ./clusters/prod builds; apps/ itself has no kustomization.yaml, so one with path ./apps
 * builds what Flux generates there), padded with docs/*.md up to the requested file count. The first commit adds
 * everything; each later commit bumps an image tag or the replicas of one overlay; the last
 * commit is the "bad" one: a new image tag (and more replicas) in app-00000's prod overlay.
 * Generated bare repositories are cached under os.tmpdir()/lastgood-bench-<size>-v<GENERATOR_VERSION>.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
// the app files are the monorepo shape's (test/support/monorepo.ts): one set of manifests for every bench repository
import { appName, baseKustomization, data, deploymentYaml, fastImport, overlayKustomization, overlayPatch, random, serviceYaml } from '../test/support/monorepo.ts';

export const SIZES = {
  small: { files: 200, commits: 500 },
  medium: { files: 5_000, commits: 5_000 },
  large: { files: 50_000, commits: 20_000 },
} as const;
export type SizeName = keyof typeof SIZES;

export interface GeneratedRepo {
  /** the bare repository */
  gitdir: string;
  /** the last commit on main, the bad one */
  bad: string;
  /** the bad commit's target paths */
  paths: string[];
  files: number;
  commits: number;
}

// 3: the listing root clusters/prod/kustomization.yaml (in the place of one docs note)
const GENERATOR_VERSION = 3;
/** the listing root: its kustomization.yaml lists every app's prod overlay */
export const LISTING_ROOT = 'clusters/prod';
const ENVS = ['dev', 'staging', 'prod'] as const;
const FILES_PER_APP = 3 + ENVS.length * 2;

function baseFiles(app: string): Record<string, string> {
  return {
    [`apps/${app}/base/deployment.yaml`]: deploymentYaml(app),
    [`apps/${app}/base/service.yaml`]: serviceYaml(app),
    [`apps/${app}/base/kustomization.yaml`]: baseKustomization,
  };
}

/** Writes the repository with git fast-import into `gitdir` (a new bare repository). */
export async function generateRepo(gitdir: string, opts: { files: number; commits: number; seed: number }): Promise<GeneratedRepo> {
  const rnd = random(opts.seed);
  const apps = Math.max(1, Math.floor(opts.files / FILES_PER_APP));
  rmSync(gitdir, { recursive: true, force: true });
  mkdirSync(gitdir, { recursive: true });
  execFileSync('git', ['init', '-q', '--bare', '-b', 'main', gitdir]);
  const importer = fastImport(gitdir);
  const emit = (s: string) => importer.emit(s);
  let clock = 1_750_000_000;
  let mark = 0;
  const commitHeader = (message: string) => {
    clock += 600;
    mark++;
    return `commit refs/heads/main\nmark :${mark}\nauthor Dev <dev@example.com> ${clock} +0000\ncommitter Dev <dev@example.com> ${clock} +0000\n${data(message)}${mark > 1 ? `from :${mark - 1}\n` : ''}`;
  };

  const tags = new Map<string, number>();
  const replicas = new Map<string, number>();
  await emit(commitHeader('initial layout\n'));
  let written = 0;
  for (let i = 0; i < apps; i++) {
    const app = appName(i);
    const files: Record<string, string> = { ...baseFiles(app) };
    for (const env of ENVS) {
      tags.set(`${app}/${env}`, 0);
      replicas.set(`${app}/${env}`, 2);
      files[`apps/${app}/overlays/${env}/kustomization.yaml`] = overlayKustomization(app, env, '1.0.0');
      files[`apps/${app}/overlays/${env}/deployment-patch.yaml`] = overlayPatch(app, env, 2);
    }
    for (const [p, c] of Object.entries(files)) await emit(`M 100644 inline ${p}\n${data(c)}`);
    written += FILES_PER_APP;
  }
  await emit(`M 100644 inline ${LISTING_ROOT}/kustomization.yaml\n${data(`apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n${Array.from({ length: apps }, (_, i) => `  - ../../apps/${appName(i)}/overlays/prod\n`).join('')}`)}`);
  written++;
  // the docs notes as before the listing root, less the last one (the file count stays the
  // requested one); every note's draw is made, so the history after the initial layout is the same
  const notes = Math.max(0, opts.files - apps * FILES_PER_APP);
  for (let i = 0; i < notes; i++) {
    const words = 8 + Math.floor(rnd() * 8);
    if (written >= opts.files) continue;
    await emit(`M 100644 inline docs/note-${String(i).padStart(6, '0')}.md\n${data(`# note ${i}\n\n${'lorem ipsum '.repeat(words)}\n`)}`);
    written++;
  }

  const report = Math.max(1, Math.floor(opts.commits / 10));
  for (let c = 1; c < opts.commits - 1; c++) {
    const app = appName(Math.floor(rnd() * apps));
    const env = ENVS[Math.floor(rnd() * ENVS.length)]!;
    const key = `${app}/${env}`;
    if (rnd() < 0.7) {
      const n = tags.get(key)! + 1;
      tags.set(key, n);
      await emit(commitHeader(`${app} ${env}: 1.0.${n}\n`) + `M 100644 inline apps/${app}/overlays/${env}/kustomization.yaml\n${data(overlayKustomization(app, env, `1.0.${n}`))}`);
    } else {
      const r = 1 + Math.floor(rnd() * 6);
      replicas.set(key, r);
      await emit(commitHeader(`${app} ${env}: ${r} replicas\n`) + `M 100644 inline apps/${app}/overlays/${env}/deployment-patch.yaml\n${data(overlayPatch(app, env, r))}`);
    }
    if (c % report === 0) process.stderr.write(`generate-repo: ${c}/${opts.commits} commits\n`);
  }
  const bad = appName(0);
  await emit(
    commitHeader(`${bad} prod: 2.0.0 (bad)\n`) +
      `M 100644 inline apps/${bad}/overlays/prod/kustomization.yaml\n${data(overlayKustomization(bad, 'prod', '2.0.0'))}` +
      `M 100644 inline apps/${bad}/overlays/prod/deployment-patch.yaml\n${data(overlayPatch(bad, 'prod', 9))}`,
  );
  await importer.end();
  const head = execFileSync('git', ['rev-parse', 'refs/heads/main'], { cwd: gitdir, encoding: 'utf8' }).trim();
  return { gitdir, bad: head, paths: [`apps/${bad}/overlays/prod/`], files: opts.files, commits: opts.commits };
}

/** The cached repository of a size, generated on first use (seed 42). */
export async function benchRepo(size: SizeName): Promise<GeneratedRepo> {
  // the generator's version in the name: branches with another layout, on a machine shared by several
  // working copies, each keep their own cache instead of regenerating (and removing) each other's
  const gitdir = path.join(os.tmpdir(), `lastgood-bench-${size}-v${GENERATOR_VERSION}`);
  const marker = path.join(gitdir, 'lastgood-bench.json');
  const want = { version: GENERATOR_VERSION, ...SIZES[size], seed: 42 };
  if (existsSync(marker)) {
    const cached = JSON.parse(readFileSync(marker, 'utf8')) as { want: typeof want; repo: GeneratedRepo };
    if (JSON.stringify(cached.want) === JSON.stringify(want)) return cached.repo;
  }
  process.stderr.write(`generate-repo: ${size} (${want.files} files, ${want.commits} commits) in ${gitdir}\n`);
  const started = Date.now();
  const repo = await generateRepo(gitdir, want);
  writeFileSync(marker, JSON.stringify({ want, repo }));
  process.stderr.write(`generate-repo: ${size} done in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  return repo;
}
