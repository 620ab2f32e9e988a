/**
 * log: `lastgood log` over a repository of 100,000 commits (issue 24), as a user runs it (the CLI,
 * a spawned process), against native git reading the same window in the same run:
 *
 * - `log/week`: the default window (the last 7 days: 1,008 commits of this history, one every
 *   10 minutes), three targets; the baseline is `git log --first-parent --since=<the same time>
 *   --format=%H%x00%B` (git reading the same commits' messages: what lastgood parses, not what it
 *   concludes from them);
 * - `log/30d`: `--since 30d` (4,320 commits);
 * - `log/limit`: `--since` older than the whole history: lastgood stops at its limit (5,000
 *   commits) and says so; the baseline is `git log --first-parent -n 5000`.
 *
 * The history (generated once with git fast-import, cached under os.tmpdir()): 200 apps × 3
 * environments, one image bump every 10 minutes, a lastgood revert of app-00000's prod overlay
 * every 400 commits (with lastgood's trailers), a person's undoing of every fifth revert, and
 * releases of that overlay in between. ms = median of the repetitions; rssMb = the child's maxRSS
 * (/usr/bin/time for git; without it null).
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const BIN_PATH = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'bin', 'lastgood.js');

export const prefix = 'log';

const COMMITS = 100_000;
const APPS = 200;
const ENVS = ['dev', 'staging', 'prod'] as const;
const START = 1_790_000_000 - COMMITS * 600; // the newest commit just before "now"
const NOW = new Date((START + COMMITS * 600 + 600) * 1000).toISOString();
const REPS = 3;
const GENERATOR_VERSION = 2;
const TIME = existsSync('/usr/bin/time') ? '/usr/bin/time' : undefined;

const app = (i: number) => `app-${String(i).padStart(5, '0')}`;
const overlay = (a: string, env: string, tag: string) => `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [../../base]
images:
  - name: ghcr.io/acme/${a}
    newTag: "${tag}"
labels:
  - pairs: { environment: ${env} }
`;

function revertMessage(target: string, bad: string, lkg: string): string {
  return `lastgood: revert ${target} to ${lkg.slice(0, 12)} (Kustomization flux-system/${target} HealthCheckFailed)

lastgood reverted the bad commits of ${target} (apps/app-00000/overlays/prod/) because it failed (analysis).
Last-known-good: ${lkg} (unverified: the revision the GitOps engine last applied).
Found by: the bench.

Evidence:
- kustomize.toolkit.fluxcd.io/Kustomization flux-system/${target}: failed (HealthCheckFailed) since 2026-01-01T00:00:00.000Z: health check failed

Bad commits:
- ${bad} app-00000 prod: bad

Lastgood-Target: ${target}
Lastgood-Reverts: ${bad}
Lastgood-Restores: ${lkg}
Lastgood-Evidence: kustomize.toolkit.fluxcd.io/Kustomization flux-system/${target} state=failed reason=HealthCheckFailed
`;
}

/**
 * The history, written with git fast-import. A revert's trailers name a synthetic bad commit and
 * last-known-good (fast-import tells SHAs only at the end): the bench measures reading the history,
 * and the revert, the releases and the people's undoing of it are real commits on the branch.
 */
async function generate(gitdir: string): Promise<void> {
  rmSync(gitdir, { recursive: true, force: true });
  mkdirSync(gitdir, { recursive: true });
  execFileSync('git', ['init', '-q', '--bare', '-b', 'main', gitdir]);
  const child = spawn('git', ['fast-import', '--quiet', '--done'], { cwd: gitdir, stdio: ['pipe', 'inherit', 'inherit'] });
  const exited = new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', resolve);
  });
  let buffered: string[] = [];
  let size = 0;
  const emit = async (s: string) => {
    buffered.push(s);
    size += s.length;
    if (size < 1 << 20) return;
    const chunk = buffered.join('');
    buffered = [];
    size = 0;
    if (!child.stdin.write(chunk)) await new Promise((resolve) => child.stdin.once('drain', resolve));
  };
  const data = (s: string) => `data ${Buffer.byteLength(s)}\n${s}\n`;
  let mark = 0;
  const commit = (message: string, when: number, who = 'Dev <dev@example.com>') => {
    mark++;
    return `commit refs/heads/main\nmark :${mark}\nauthor ${who} ${when} +0000\ncommitter ${who} ${when} +0000\n${data(message)}${mark > 1 ? `from :${mark - 1}\n` : ''}`;
  };
  let rnd = 42;
  const next = () => (rnd = (rnd * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  await emit(commit('initial layout\n', START));
  for (let i = 0; i < APPS; i++) {
    for (const env of ENVS) await emit(`M 100644 inline apps/${app(i)}/overlays/${env}/kustomization.yaml\n${data(overlay(app(i), env, '1.0.0'))}`);
  }
  let prodTag = 0;
  for (let c = 1; c < COMMITS; c++) {
    const when = START + c * 600;
    if (c % 400 === 0) {
      const bad = (c.toString(16).padStart(8, '0')).repeat(5);
      const lkg = ((c - 1).toString(16).padStart(8, '0')).repeat(5);
      await emit(commit(revertMessage('app-00000-prod', bad, lkg), when, 'lastgood <lastgood@users.noreply.github.com>') + `M 100644 inline apps/${app(0)}/overlays/prod/kustomization.yaml\n${data(overlay(app(0), 'prod', `1.0.${prodTag}`))}`);
    } else if (c % 2000 === 1) {
      // a person sets the overlay back to what the revert just before removed
      await emit(commit('app-00000 prod: the alert was noise, release again\n', when, 'Alice <alice@example.com>') + `M 100644 inline apps/${app(0)}/overlays/prod/kustomization.yaml\n${data(overlay(app(0), 'prod', `1.0.${prodTag + 1}`))}`);
    } else if (c % 400 === 399) {
      prodTag++;
      await emit(commit(`${app(0)} prod: 1.0.${prodTag + 1}\n`, when) + `M 100644 inline apps/${app(0)}/overlays/prod/kustomization.yaml\n${data(overlay(app(0), 'prod', `1.0.${prodTag + 1}`))}`);
    } else {
      const a = app(1 + Math.floor(next() * (APPS - 1)));
      const env = ENVS[Math.floor(next() * ENVS.length)]!;
      await emit(commit(`${a} ${env}: 1.0.${c}\n`, when) + `M 100644 inline apps/${a}/overlays/${env}/kustomization.yaml\n${data(overlay(a, env, `1.0.${c}`))}`);
    }
    if (c % 20_000 === 0) process.stderr.write(`log bench: ${c}/${COMMITS} commits\n`);
  }
  await emit('done\n');
  child.stdin.end(buffered.join(''));
  if ((await exited) !== 0) throw new Error('git fast-import failed');
  // packed as a server packs (git's default delta depth 50), with a commit-graph as git maintains one
  execFileSync('git', ['gc', '-q'], { cwd: gitdir });
}

async function history(): Promise<string> {
  const gitdir = path.join(os.tmpdir(), 'lastgood-bench-log-100k');
  const marker = path.join(gitdir, 'lastgood-bench.json');
  const want = JSON.stringify({ version: GENERATOR_VERSION, COMMITS, APPS });
  if (existsSync(marker) && readFileSync(marker, 'utf8') === want) return gitdir;
  process.stderr.write(`log bench: generating ${COMMITS} commits in ${gitdir}\n`);
  await generate(gitdir);
  writeFileSync(marker, want);
  return gitdir;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}
const round = (x: number) => Math.round(x * 10) / 10;

/** One timed child process: wall ms, maxRSS in MB (null without /usr/bin/time), stdout. */
function timed(cmd: string, args: string[], cwd?: string): { ms: number; rssMb: number | null; stdout: string } {
  const t0 = performance.now();
  const r = TIME ? spawnSync(TIME, ['-f', 'maxrss=%M', cmd, ...args], { cwd, encoding: 'utf8', maxBuffer: 1 << 28 }) : spawnSync(cmd, args, { cwd, encoding: 'utf8', maxBuffer: 1 << 28 });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: exit ${r.status}: ${r.stderr}`);
  const kib = /maxrss=(\d+)/.exec(r.stderr ?? '')?.[1];
  return { ms, rssMb: kib ? Number(kib) / 1024 : null, stdout: r.stdout };
}

export default async function* () {
  const gitdir = await history();
  const dir = path.join(os.tmpdir(), 'lastgood-bench-log-config');
  mkdirSync(dir, { recursive: true });
  const config = path.join(dir, 'lastgood.yaml');
  writeFileSync(config, `repo: { url: ${gitdir}, branch: main }\ntargets:\n${[0, 1, 2].map((i) => `  - name: app-0000${i}-prod\n    paths: [apps/app-0000${i}/overlays/prod/]\n    resources: [{ apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: app-0000${i}-prod }]\n`).join('')}`);
  const since = (days: number) => new Date(Date.parse(NOW) - days * 86_400_000).toISOString();
  const cases = [
    { bench: 'log/week', args: [], git: ['log', '--first-parent', `--since=${since(7)}`, '--format=%H%x00%B', 'main'] },
    { bench: 'log/30d', args: ['--since', '30d'], git: ['log', '--first-parent', `--since=${since(30)}`, '--format=%H%x00%B', 'main'] },
    { bench: 'log/limit', args: ['--since', '2000-01-01T00:00:00Z'], git: ['log', '--first-parent', '-n', '5000', '--format=%H%x00%B', 'main'] },
  ];
  for (const c of cases) {
    const ours: Array<{ ms: number; rssMb: number | null }> = [];
    const theirs: Array<{ ms: number; rssMb: number | null }> = [];
    let doc: { window: { commitsRead: number; stoppedBy: string }; targets: Array<{ entries: unknown[] }> } | undefined;
    for (let i = 0; i < REPS; i++) {
      const r = timed(process.execPath, [BIN_PATH, 'log', '--config', config, '--now', NOW, '--json', ...c.args]);
      doc = JSON.parse(r.stdout);
      ours.push(r);
      theirs.push(timed('git', c.git, gitdir));
    }
    const ms = median(ours.map((x) => x.ms));
    const gitMs = median(theirs.map((x) => x.ms));
    const rss = (xs: typeof ours) => (xs[0]!.rssMb === null ? null : round(Math.max(...xs.map((x) => x.rssMb!))));
    yield {
      bench: c.bench, commits: COMMITS, commitsRead: doc!.window.commitsRead, stoppedBy: doc!.window.stoppedBy, entries: doc!.targets.reduce((n, t) => n + t.entries.length, 0),
      lastgood: { ms: round(ms), rssMb: rss(ours) }, baseline: { name: 'native git log --first-parent', ms: round(gitMs), rssMb: rss(theirs) }, ratio: round(ms / gitMs),
    };
  }
}
