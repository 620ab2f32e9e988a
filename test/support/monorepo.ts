/**
 * The monorepo shape (issue 22): a GitOps repository as large teams have it, where one target is a
 * needle in a busy history. Written with `git fast-import`, deterministic for a seed.
 *
 * - `apps/kustomization.yaml` lists every application's prod overlay: one Flux Kustomization
 *   (`apps`, spec.path ./apps) builds them all; `apps/app-NNNNN/base/{deployment,service,
 *   kustomization}.yaml` and `overlays/{dev,staging,prod}/{kustomization,deployment-patch}.yaml`
 *   (9 files an application), padded with `docs/` and `infra/` files up to the file count.
 * - History: after the initial layout, `commits` commits about 7 minutes apart: mostly an image
 *   bot (`flux-image-automation`) bumping one overlay's tag, and people changing several files at
 *   once (replicas, docs, infra), some of them merged pull requests (a two-commit branch merged
 *   with `--no-ff`). None touches the target's application.
 * - The target (`targetApp`, its prod overlay) is touched by one person's commit about halfway
 *   down (`touches: 'once'`) or by nothing since the initial layout (`'never'`); then, near the
 *   top: the commit Flux last applied, `range` bot commits, the bad commit (a new image tag and
 *   more replicas in the target's prod overlay), and `tail` bot commits up to the head.
 * - `now` is ten minutes after the bad commit: what a failing run sees.
 *
 * `appendCommits` adds commits on top (a lastgood revert at a chosen time, more bot commits) for
 * the tests of the guards.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';

export interface MonorepoOptions {
  /** applications under apps/ (9 files each) */
  apps: number;
  /** total files (docs/ and infra/ pad the applications up to it) */
  files: number;
  /** commits after the initial layout, the bad one and the tail included */
  commits: number;
  touches: 'once' | 'never';
  /** bot commits between the applied revision and the bad commit */
  range?: number;
  /** bot commits after the bad commit */
  tail?: number;
  seed?: number;
  /** the application the target is (default app-00042, or the middle one for small shapes) */
  targetApp?: number;
}

export interface Monorepo {
  gitdir: string;
  head: string;
  /** the bad commit: the target's prod overlay gets image tag 2.0.0 */
  bad: string;
  /** the revision Flux last applied (the bad commit's range starts after it) */
  applied: string;
  /** the one older commit that touched the target ('once'), else undefined */
  olderTouch?: string;
  /** the target's application (app-00042), its paths and images */
  app: string;
  paths: string[];
  goodImage: string;
  badImage: string;
  files: number;
  commits: number;
  /** ten minutes after the bad commit (and after the head), ISO */
  now: string;
  /** the head commit's time, seconds */
  headTime: number;
}

const ENVS = ['dev', 'staging', 'prod'] as const;
const FILES_PER_APP = 9;
const STEP = 420; // seconds between commits: about 7 minutes
/** the bad commit's time: the scenarios' "now" is ten minutes after it */
export const BAD_AT = Date.parse('2026-11-20T12:00:00Z') / 1000;

const GIT_ENV = { ...process.env, GIT_CONFIG_NOSYSTEM: '1' };

/** mulberry32: small, fast, deterministic. */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const appName = (i: number) => `app-${String(i).padStart(5, '0')}`;

export function deploymentYaml(app: string): string {
  return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ${app}
spec:
  replicas: 1
  selector:
    matchLabels:
      app: ${app}
  template:
    metadata:
      labels:
        app: ${app}
    spec:
      containers:
        - name: ${app}
          image: registry.example.com/${app}:1.0.0
          ports:
            - containerPort: 8080
          resources:
            requests: {cpu: 100m, memory: 128Mi}
`;
}

export const serviceYaml = (app: string) => `apiVersion: v1
kind: Service
metadata:
  name: ${app}
spec:
  selector:
    app: ${app}
  ports:
    - port: 80
      targetPort: 8080
`;

export const baseKustomization = `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - deployment.yaml
  - service.yaml
`;

export function overlayKustomization(app: string, env: string, tag: string): string {
  return `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: ${env}
resources:
  - ../../base
patches:
  - path: deployment-patch.yaml
images:
  - name: registry.example.com/${app}
    newTag: ${tag} # {"$imagepolicy": "flux-system:${app}-${env}:tag"}
`;
}

export function overlayPatch(app: string, env: string, replicas: number): string {
  return `# ${env} sizing for ${app}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: ${app}
spec:
  replicas: ${replicas}
  template:
    metadata:
      annotations:
        environment: ${env}
`;
}

export const data = (s: string) => `data ${Buffer.byteLength(s)}\n${s}\n`;

/** A fast-import stream writer with back-pressure. */
export function fastImport(gitdir: string) {
  const child = spawn('git', ['fast-import', '--quiet', '--done'], { cwd: gitdir, env: GIT_ENV, stdio: ['pipe', 'inherit', 'inherit'] });
  const exited = new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', resolve);
  });
  let buffered: string[] = [];
  let size = 0;
  const flush = async () => {
    if (buffered.length === 0) return;
    const chunk = buffered.join('');
    buffered = [];
    size = 0;
    if (!child.stdin.write(chunk)) await new Promise((resolve) => child.stdin.once('drain', resolve));
  };
  return {
    async emit(s: string) {
      buffered.push(s);
      size += s.length;
      if (size > 1 << 20) await flush();
    },
    async end() {
      buffered.push('done\n');
      await flush();
      child.stdin.end();
      const code = await exited;
      if (code !== 0) throw new Error(`git fast-import exited with ${code}`);
    },
  };
}

interface Who {
  name: string;
  email: string;
}
const BOT: Who = { name: 'flux-image-automation', email: 'fluxcdbot@users.noreply.github.com' };
const PEOPLE: Who[] = ['Ana', 'Bo', 'Chidi', 'Dana', 'Emil', 'Farah'].map((n) => ({ name: n, email: `${n.toLowerCase()}@example.com` }));

/** Writes the monorepo into `gitdir` (a new bare repository). */
export async function generateMonorepo(gitdir: string, opts: MonorepoOptions): Promise<Monorepo> {
  const rnd = random(opts.seed ?? 42);
  const apps = opts.apps;
  const range = opts.range ?? 3;
  const tail = opts.tail ?? 5;
  const targetIndex = opts.targetApp ?? Math.min(42, Math.floor(apps / 2));
  const target = appName(targetIndex);
  rmSync(gitdir, { recursive: true, force: true });
  mkdirSync(gitdir, { recursive: true });
  execFileSync('git', ['init', '-q', '--bare', '-b', 'main', gitdir], { env: GIT_ENV });
  const fi = fastImport(gitdir);

  let clock = BAD_AT - (opts.commits - tail + 1) * STEP;
  let mark = 0;
  let mainMark = 0;
  const header = (ref: string, who: Who, message: string, from: number | undefined, merge?: number, at?: number) => {
    clock = at ?? clock + STEP - 60 + Math.floor(rnd() * 120);
    mark++;
    const sig = `${who.name} <${who.email}> ${clock} +0000`;
    return `commit ${ref}\nmark :${mark}\nauthor ${sig}\ncommitter ${sig}\n${data(message)}${from ? `from :${from}\n` : ''}${merge ? `merge :${merge}\n` : ''}`;
  };

  // the initial layout
  const tags = new Map<string, number>();
  const replicas = new Map<string, number>();
  await fi.emit(header('refs/heads/main', PEOPLE[0]!, 'initial layout\n', undefined));
  mainMark = mark;
  let written = 0;
  await fi.emit(`M 100644 inline apps/kustomization.yaml\n${data(`apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n${Array.from({ length: apps }, (_, i) => `  - ${appName(i)}/overlays/prod\n`).join('')}`)}`);
  written++;
  for (let i = 0; i < apps; i++) {
    const app = appName(i);
    await fi.emit(`M 100644 inline apps/${app}/base/deployment.yaml\n${data(deploymentYaml(app))}`);
    await fi.emit(`M 100644 inline apps/${app}/base/service.yaml\n${data(serviceYaml(app))}`);
    await fi.emit(`M 100644 inline apps/${app}/base/kustomization.yaml\n${data(baseKustomization)}`);
    for (const env of ENVS) {
      tags.set(`${app}/${env}`, 0);
      replicas.set(`${app}/${env}`, 2);
      await fi.emit(`M 100644 inline apps/${app}/overlays/${env}/kustomization.yaml\n${data(overlayKustomization(app, env, '1.0.0'))}`);
      await fi.emit(`M 100644 inline apps/${app}/overlays/${env}/deployment-patch.yaml\n${data(overlayPatch(app, env, 2))}`);
    }
    written += FILES_PER_APP;
  }
  const padding: string[] = [];
  for (let i = 0; written < opts.files; i++, written++) {
    const p = i % 4 === 3 ? `infra/terraform/module-${String(i).padStart(5, '0')}.tf` : `docs/runbooks/note-${String(i).padStart(5, '0')}.md`;
    padding.push(p);
    await fi.emit(`M 100644 inline ${p}\n${data(`# ${p}\n\n${'lorem ipsum '.repeat(8 + Math.floor(rnd() * 8))}\n`)}`);
  }

  const otherApp = () => {
    for (;;) {
      const i = Math.floor(rnd() * apps);
      if (i !== targetIndex) return appName(i);
    }
  };
  const env = () => ENVS[Math.floor(rnd() * ENVS.length)]!;
  const bump = (app: string, e: string) => {
    const n = tags.get(`${app}/${e}`)! + 1;
    tags.set(`${app}/${e}`, n);
    return { message: `chore(${app}): ${e} image 1.0.${n}\n\n[ci skip]\n`, ops: `M 100644 inline apps/${app}/overlays/${e}/kustomization.yaml\n${data(overlayKustomization(app, e, `1.0.${n}`))}` };
  };
  const botCommit = async (at?: number) => {
    const b = bump(otherApp(), env());
    await fi.emit(header('refs/heads/main', BOT, b.message, mainMark, undefined, at) + b.ops);
    mainMark = mark;
  };
  const personOps = () => {
    let ops = '';
    const n = 1 + Math.floor(rnd() * 4);
    for (let k = 0; k < n; k++) {
      const r = rnd();
      if (r < 0.5) {
        const app = otherApp();
        const e = env();
        const count = 1 + Math.floor(rnd() * 6);
        replicas.set(`${app}/${e}`, count);
        ops += `M 100644 inline apps/${app}/overlays/${e}/deployment-patch.yaml\n${data(overlayPatch(app, e, count))}`;
      } else if (padding.length > 0) {
        const p = padding[Math.floor(rnd() * padding.length)]!;
        ops += `M 100644 inline ${p}\n${data(`# ${p}\n\nrevised ${Math.floor(rnd() * 1e9)}\n`)}`;
      }
    }
    return ops;
  };
  let prs = 0;
  const personCommit = async () => {
    const who = PEOPLE[Math.floor(rnd() * PEOPLE.length)]!;
    if (rnd() < 0.25) {
      // a merged pull request: two commits on a branch, merged with --no-ff
      prs++;
      await fi.emit(`reset refs/heads/pr\nfrom :${mainMark}\n\n`);
      await fi.emit(header('refs/heads/pr', who, `pr #${prs}: part 1\n`, undefined) + personOps());
      await fi.emit(header('refs/heads/pr', who, `pr #${prs}: part 2\n`, undefined) + personOps());
      const tip = mark;
      await fi.emit(header('refs/heads/main', who, `Merge pull request #${prs} from acme/pr-${prs}\n`, mainMark, tip));
      mainMark = mark;
      return 3;
    }
    await fi.emit(header('refs/heads/main', who, `ops: tune ${who.name.toLowerCase()}'s services\n`, mainMark) + personOps());
    mainMark = mark;
    return 1;
  };

  // the busy history below the scenario's top
  const body = opts.commits - tail - range - 1;
  const touchAt = opts.touches === 'once' ? Math.floor(body / 2) : -1;
  const report = Math.max(1, Math.floor(body / 10));
  for (let c = 0; c < body; ) {
    if (c === touchAt) {
      const count = 3;
      replicas.set(`${target}/prod`, count);
      await fi.emit(header('refs/heads/main', PEOPLE[1]!, `${target}: prod runs ${count} replicas\n`, mainMark) + `M 100644 inline apps/${target}/overlays/prod/deployment-patch.yaml\n${data(overlayPatch(target, 'prod', count))}`);
      mainMark = mark;
      c++;
      continue;
    }
    if (rnd() < 0.8 || c + 3 > body) {
      await botCommit();
      c++;
    } else c += await personCommit();
    if (c % report === 0) process.stderr.write(`monorepo: ${c}/${opts.commits} commits\n`);
  }
  for (let c = 0; c < range; c++) await botCommit();
  // the bad commit: a new image and more replicas in the target's prod overlay
  await fi.emit(
    header('refs/heads/main', PEOPLE[2]!, `${target}: release 2.0.0 to prod\n`, mainMark, undefined, Math.max(BAD_AT, clock + 1)) +
      `M 100644 inline apps/${target}/overlays/prod/kustomization.yaml\n${data(overlayKustomization(target, 'prod', '2.0.0'))}` +
      `M 100644 inline apps/${target}/overlays/prod/deployment-patch.yaml\n${data(overlayPatch(target, 'prod', 9))}`,
  );
  mainMark = mark;
  const badAt = clock;
  // the bot goes on while the release fails: a commit every 90 s
  for (let c = 0; c < tail; c++) await botCommit(clock + 90);
  const headTime = clock;
  await fi.end();
  execFileSync('git', ['update-ref', '-d', 'refs/heads/pr'], { cwd: gitdir, env: GIT_ENV, stdio: 'ignore' });
  const rev = (spec: string) => execFileSync('git', ['rev-parse', spec], { cwd: gitdir, env: GIT_ENV, encoding: 'utf8' }).trim();
  const head = rev('refs/heads/main');
  const bad = rev(`main~${tail}`);
  const applied = rev(`main~${tail + range + 1}`);
  const olderTouch = opts.touches === 'once' ? execFileSync('git', ['log', '--format=%H', '--first-parent', '-n', '1', `${bad}^`, '--', `apps/${target}/overlays/prod/`], { cwd: gitdir, env: GIT_ENV, encoding: 'utf8' }).trim() : undefined;
  return {
    gitdir, head, bad, applied, ...(olderTouch ? { olderTouch } : {}),
    app: target, paths: [`apps/${target}/overlays/prod/`],
    goodImage: `registry.example.com/${target}:1.0.0`, badImage: `registry.example.com/${target}:2.0.0`,
    files: written, commits: opts.commits,
    now: new Date(Math.max(badAt + 600, headTime + 60) * 1000).toISOString(),
    headTime,
  };
}

/** The monorepo of these options, generated once and kept under `dir` (a marker file names the options). */
export async function cachedMonorepo(dir: string, opts: MonorepoOptions): Promise<Monorepo> {
  const marker = `${dir}/lastgood-monorepo.json`;
  const want = JSON.stringify({ version: 1, ...opts });
  if (existsSync(marker)) {
    const cached = JSON.parse(readFileSync(marker, 'utf8')) as { want: string; repo: Monorepo };
    if (cached.want === want) return cached.repo;
  }
  const repo = await generateMonorepo(dir, opts);
  writeFileSync(marker, JSON.stringify({ want, repo }));
  return repo;
}

/** One commit to append: files to write (null deletes), its message and time. */
export interface AppendedCommit {
  files: Record<string, string | null>;
  message: string;
  /** seconds since the epoch */
  at: number;
  author?: Who;
}

/** Appends commits on top of a branch (one `git fast-import`, the times as given); returns their SHAs. */
export function appendCommits(gitdir: string, commits: AppendedCommit[], branch = 'main'): string[] {
  if (commits.length === 0) return [];
  const data = (text: string) => `data ${Buffer.byteLength(text)}\n${text}\n`;
  const stream = commits.map((c, i) => {
    const who = c.author ?? PEOPLE[3]!;
    const sign = `${who.name} <${who.email}> ${c.at} +0000`;
    const changes = Object.entries(c.files).map(([file, content]) => (content === null ? `D ${file}\n` : `M 100644 inline ${file}\n${data(content)}`));
    return `commit refs/heads/${branch}\nmark :${i + 1}\nauthor ${sign}\ncommitter ${sign}\n${data(c.message)}${i === 0 ? `from refs/heads/${branch}^0\n` : ''}${changes.join('')}\n`;
  }).join('');
  const marks = `${gitdir}/lastgood-append-marks`;
  execFileSync('git', ['fast-import', '--quiet', '--done', `--export-marks=${marks}`], { cwd: gitdir, env: GIT_ENV, input: `${stream}done\n`, stdio: ['pipe', 'ignore', 'pipe'] });
  const byMark = new Map(readFileSync(marks, 'utf8').trim().split('\n').map((line) => line.split(' ') as [string, string]));
  rmSync(marks, { force: true });
  return commits.map((_, i) => byMark.get(`:${i + 1}`)!);
}

/** A bot's image bump of another application (for appended histories). */
export function botBump(app: string, env: string, tag: string, at: number): AppendedCommit {
  return { files: { [`apps/${app}/overlays/${env}/kustomization.yaml`]: overlayKustomization(app, env, tag) }, message: `chore(${app}): ${env} image ${tag}\n\n[ci skip]\n`, at, author: BOT };
}

/**
 * What a failing run sees on the monorepo: Flux's `apps` Kustomization attempted the bad commit
 * after applying `applied` and its health check timed out on the target's Deployment, which
 * exceeded its progress deadline running the bad image. The target lists both; its paths are the
 * application's prod overlay.
 */
export function monorepoScenario(repo: Pick<Monorepo, 'app' | 'paths' | 'bad' | 'applied' | 'badImage' | 'now'>, opts: { url: string; mode?: 'commit' | 'pull-request'; cooldown?: string; attempted?: string }) {
  const since = new Date(Date.parse(repo.now) - 5 * 60_000).toISOString();
  const attempted = opts.attempted ?? repo.bad;
  const kustomization = {
    apiVersion: 'kustomize.toolkit.fluxcd.io/v1',
    kind: 'Kustomization',
    metadata: { name: 'apps', namespace: 'flux-system', generation: 1 },
    spec: { interval: '10m', path: './apps', prune: true, sourceRef: { kind: 'GitRepository', name: 'flux-system' }, wait: true, timeout: '5m' },
    status: {
      observedGeneration: 1,
      lastAttemptedRevision: `main@sha1:${attempted}`,
      lastAppliedRevision: `main@sha1:${repo.applied}`,
      conditions: [{ type: 'Ready', status: 'False', reason: 'HealthCheckFailed', lastTransitionTime: since, message: `health check failed after 5m0s: timeout waiting for: [Deployment/prod/${repo.app} status: 'InProgress']` }],
    },
  };
  const deployment = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: repo.app, namespace: 'prod', generation: 2 },
    spec: { replicas: 9, selector: { matchLabels: { app: repo.app } }, template: { metadata: { labels: { app: repo.app } }, spec: { containers: [{ name: repo.app, image: repo.badImage }] } } },
    status: {
      observedGeneration: 2, replicas: 9, updatedReplicas: 3, readyReplicas: 2, availableReplicas: 2, unavailableReplicas: 7,
      conditions: [
        { type: 'Available', status: 'False', reason: 'MinimumReplicasUnavailable', message: '', lastUpdateTime: since, lastTransitionTime: since },
        { type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded', message: `ReplicaSet "${repo.app}-7d9c" has timed out progressing.`, lastUpdateTime: since, lastTransitionTime: since },
      ],
    },
  };
  const config = {
    repo: { url: opts.url, branch: 'main', author: { name: 'lastgood', email: 'lastgood@example.com' } },
    defaults: { mode: opts.mode ?? 'commit', confirmations: 1, maxAge: '1h', ...(opts.cooldown ? { cooldown: opts.cooldown } : {}) },
    render: { kustomize: 'off' },
    targets: [{
      name: `${repo.app}-prod`,
      paths: repo.paths,
      resources: [
        { apiVersion: 'kustomize.toolkit.fluxcd.io/v1', kind: 'Kustomization', namespace: 'flux-system', name: 'apps' },
        { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'prod', name: repo.app },
      ],
    }],
  };
  return { config, objects: [kustomization, deployment] };
}
