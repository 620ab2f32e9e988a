import test from 'ava';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { CONFIG_BOUNDS } from '../src/config/load.ts';
import { CONTROLLER_NODE_OPTIONS } from '../src/controller/install.ts';
import { SOURCEIGNORE_BOUNDS } from '../src/model/sourceignore.ts';
import { BUILD_BOUNDS } from '../src/model/tree.ts';
import { MAX_SNAPSHOT_BYTES } from '../src/observe/snapshot.ts';
import { detectRenderer, render } from '../src/verify/render.ts';
import { loadAllYaml, loadYaml, YAML_BOUNDS, YamlBoundError } from '../src/yaml-read.ts';
import { BIN, lastgood, ROOT } from './support/cli.ts';
import { commit, fingerprint, makeRepo, tempDir, writeFile } from './support/git.ts';
import { kustomization, yamlDocs } from './support/objects.ts';

/**
 * Inputs that exhausted memory or time (issue 35), each refused at a stated bound with the file
 * named, under the controller's Node options (its heap cap): a YAML alias bomb, a huge file, a
 * `.sourceignore` of 100,000 lines, a snapshot that never ends (/dev/zero, /dev/urandom, endless
 * stdin), and the renderer's own memory. Where GNU time is there, the peak RSS is checked below
 * the controller pod's 512 MiB too.
 */

const NOW = ['--now', '2026-11-01T12:05:00Z'];
const K = '{ apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: apps }';
const CAPPED = { NODE_OPTIONS: CONTROLLER_NODE_OPTIONS };
const MEMORY_CAP_KB = 512 * 1024;

/** A billion laughs: 9 levels of 9 aliases, 9^9 nodes once expanded, in 400 bytes. */
function aliasBomb(): string {
  const names = 'abcdefghi';
  let s = `${names[0]}: &${names[0]} ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n`;
  for (let i = 1; i < names.length; i++) s += `${names[i]}: &${names[i]} [${Array(9).fill(`*${names[i - 1]}`).join(', ')}]\n`;
  return s;
}

/** A repository whose bad commit writes `files` into the target's folder, and the run's inputs. */
function scenario(files: Record<string, string>, extra: Record<string, string> = {}) {
  const repo = makeRepo();
  commit(repo, { 'apps/podinfo/kustomization.yaml': 'resources:\n  - deploy.yaml\n', 'apps/podinfo/deploy.yaml': 'kind: Deployment\nimage: podinfo:1.0\n', ...extra }, 'initial');
  const applied = commit(repo, { 'README.md': 'x\n' }, 'docs');
  const bad = commit(repo, files, 'the change');
  const dir = tempDir('lastgood-bounds-');
  const config = writeFile(dir, 'lastgood.yaml', `repo: { url: ${repo}, branch: main }\ndefaults: { mode: commit, strategy: revert, confirmations: 1 }\ntargets:\n  - name: podinfo\n    paths: [apps/podinfo/]\n    resources: [${K}]\n`);
  const snapshot = writeFile(dir, 'cluster.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${bad}`, applied: `main@sha1:${applied}`, ready: 'False', message: 'health check failed' })));
  return { repo, dir, config, snapshot, bad };
}

/** Runs the CLI under GNU time where it is: its peak RSS in KB, or undefined. */
async function cliPeak(args: string[], env: Record<string, string>, stdinCommand?: string): Promise<{ code: number | null; stdout: string; stderr: string; peakKb?: number }> {
  const time = existsSync('/usr/bin/time') ? '/usr/bin/time' : undefined;
  const dir = tempDir('lastgood-peak-');
  const out = path.join(dir, 'time');
  const node = [process.execPath, BIN, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  const command = `${stdinCommand ? `${stdinCommand} | ` : ''}${time ? `${time} -o ${out} -f %M ` : ''}${node}`;
  return new Promise((resolve) => {
    const child = spawn('sh', ['-c', command], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr, ...(time && existsSync(out) ? { peakKb: Number(readFileSync(out, 'utf8').trim().split('\n').pop()) } : {}) }));
  });
}

function underCap(t: import('ava').ExecutionContext, peakKb: number | undefined): void {
  if (peakKb === undefined) t.log('GNU time is not on this machine: the peak RSS is not measured (the heap cap still holds)');
  else t.true(peakKb < MEMORY_CAP_KB, `peak RSS ${Math.round(peakKb / 1024)} MiB`);
}

test('the config at its node bound, in the costliest shape (one-character flow scalars), stays under the controller\'s memory; past it, refused', async (t) => {
  const dir = tempDir('lastgood-config-bound-');
  const base = 'repo: { url: ./repo }\ntargets:\n  - name: app\n    paths: [apps/app/]\n    resources:\n      - { apiVersion: apps/v1, kind: Deployment, namespace: prod, name: app }\n';
  const separators = (text: string) => (text.match(/[,:\-[{\n]/g) ?? []).length;
  // `x: [` and its line break, then a comma between two items: items − 1 + 3 separators
  const atBound = (extra: number) => `${base}x: [${Array(CONFIG_BOUNDS.maxSeparators - separators(base) - 2 + extra).fill('1').join(',')}]\n`;
  const within = writeFile(dir, 'within.yaml', atBound(0));
  t.is(separators(readFileSync(within, 'utf8')), CONFIG_BOUNDS.maxSeparators);
  const r = await cliPeak(['validate', '--config', within], CAPPED);
  t.is(r.code, 2, r.stderr);
  t.regex(r.stderr, /within\.yaml:7: unknown field "x"/, 'parsed whole: the schema, not the bound, refuses it');
  underCap(t, r.peakKb);
  const past = await cliPeak(['validate', '--config', writeFile(dir, 'past.yaml', atBound(1))], CAPPED);
  t.is(past.code, 2);
  t.regex(past.stderr, /past\.yaml:7: more than 200,000 YAML nodes by here/);
});

test('the YAML reader measures an alias bomb without expanding it, and refuses it with the line', (t) => {
  const bomb = aliasBomb();
  t.true(bomb.length < 1024);
  const e = t.throws(() => loadYaml(bomb, { where: 'apps/podinfo/values.yaml' }), { instanceOf: YamlBoundError });
  t.regex(e!.message, /^apps\/podinfo\/values\.yaml:2: its aliases expand to more than 1,000,000 nodes \(from the alias on line 2 on\)/);
  t.throws(() => loadAllYaml(`a: 1\n---\n${bomb}`), { instanceOf: YamlBoundError });
  // ordinary aliases, and stars that are no alias, are read as before
  t.deepEqual(loadYaml('base: &b { x: 1 }\nuse: *b\nglob: "a*b"\nlist: [a*b]\n'), { base: { x: 1 }, use: { x: 1 }, glob: 'a*b', list: ['a*b'] });
  // a node inside itself is unbounded
  t.throws(() => loadYaml('a: &a [1, *a]\n'), { instanceOf: Error });
  t.throws(() => loadYaml(`x: "${'y'.repeat(YAML_BOUNDS.maxBytes)}"\n`, { where: 'big.yaml' }), { message: /^big\.yaml: 8 MiB of YAML, more than lastgood reads from one file \(8 MiB\)/ });
});

test('an alias bomb in a file of the bad commit: the run refuses, exit 2, the file and line named, nothing written, within the controller\'s memory', async (t) => {
  // a resource of the target's build (the model reads only what the engine builds)
  const s = scenario({ 'apps/podinfo/deploy.yaml': `kind: Deployment\nimage: podinfo:1.1\n${aliasBomb()}` });
  const before = fingerprint(s.repo);
  const r = await cliPeak(['run', ...NOW, '--config', s.config, '--snapshot', s.snapshot], CAPPED);
  t.is(r.code, 2, r.stdout + r.stderr);
  t.regex(r.stdout + r.stderr, /apps\/podinfo\/deploy\.yaml:4: its aliases expand to more than 1,000,000 nodes \(from the alias on line 4 on\)/);
  t.is(fingerprint(s.repo), before);
  underCap(t, r.peakKb);
});

test('a 45 MB YAML file in the target is refused by its size, named, within the controller\'s memory', async (t) => {
  const line = `  - ${'x'.repeat(96)}\n`;
  const big = `kind: ConfigMap\ndata:\n  items:\n${line.repeat(Math.ceil((45 << 20) / line.length))}`;
  const s = scenario({ 'apps/podinfo/deploy.yaml': big });
  const r = await cliPeak(['run', ...NOW, '--config', s.config, '--snapshot', s.snapshot], CAPPED);
  t.is(r.code, 2, r.stdout + r.stderr);
  t.regex(r.stdout + r.stderr, /apps\/podinfo\/deploy\.yaml: 45 MiB of YAML, more than lastgood reads from one file \(8 MiB\)/);
  underCap(t, r.peakKb);
});

test(`a build that reads more than ${BUILD_BOUNDS.maxBytes >> 20} MiB of files, each within the file bound, is refused at the file that crosses it, named, nothing written, within the controller's memory`, async (t) => {
  // twelve resources of 6 MiB (each below the 8 MiB a file may have): 72 MiB for the build of one revision
  const files: Record<string, string> = {};
  const names = Array.from({ length: 12 }, (_, i) => `part-${String(i).padStart(2, '0')}.yaml`);
  for (const [i, name] of names.entries()) files[`apps/podinfo/${name}`] = `kind: ConfigMap\nmetadata: { name: part-${i} }\ndata:\n  blob: "${String(i % 10).repeat(6 << 20)}"\n`;
  files['apps/podinfo/kustomization.yaml'] = `resources:\n  - deploy.yaml\n${names.map((n) => `  - ${n}\n`).join('')}`;
  const s = scenario(files);
  const before = fingerprint(s.repo);
  const r = await cliPeak(['run', ...NOW, '--config', s.config, '--snapshot', s.snapshot], CAPPED);
  t.is(r.code, 2, r.stdout + r.stderr);
  t.regex(r.stdout + r.stderr, /apps\/podinfo\/part-\d\d\.yaml: reading it, the target's build at this revision reads more than 64 MiB of files: refused as beyond lastgood's bounds/);
  t.is(fingerprint(s.repo), before, 'nothing written');
  underCap(t, r.peakKb);
});

test(`a .sourceignore of 100,000 lines is refused at pattern ${SOURCEIGNORE_BOUNDS.maxPatterns + 1}, named, within the controller's memory`, async (t) => {
  const lines = Array.from({ length: 100_000 }, (_, i) => `/generated/file-${i}.yaml`).join('\n');
  t.true(lines.length > 2_000_000, 'the 2.3 MB file of the issue');
  const s = scenario({ 'apps/podinfo/deploy.yaml': 'kind: Deployment\nimage: podinfo:1.1\n' }, { '.sourceignore': lines.slice(0, SOURCEIGNORE_BOUNDS.maxBytes - 1) });
  const r = await cliPeak(['run', ...NOW, '--config', s.config, '--snapshot', s.snapshot], CAPPED);
  t.is(r.code, 2, r.stdout + r.stderr);
  t.regex(r.stdout + r.stderr, new RegExp(`\\.sourceignore:${SOURCEIGNORE_BOUNDS.maxPatterns + 1}: more than 2,000 ignore patterns`));
  underCap(t, r.peakKb);
  // the whole 2.3 MB file: refused by its size
  const whole = scenario({ 'apps/podinfo/deploy.yaml': 'kind: Deployment\nimage: podinfo:1.1\n' }, { '.sourceignore': lines });
  const w = await cliPeak(['run', ...NOW, '--config', whole.config, '--snapshot', whole.snapshot], CAPPED);
  t.is(w.code, 2, w.stdout + w.stderr);
  t.regex(w.stdout + w.stderr, /\.sourceignore: \d+ KiB of ignore patterns, more than the 256 KiB lastgood reads from one/);
});

for (const device of ['/dev/zero', '/dev/urandom']) {
  test(`--snapshot ${device} stops at once: not text, exit 2`, async (t) => {
    if (!existsSync(device)) return t.pass(`${device} is not on this machine`);
    const s = scenario({ 'apps/podinfo/deploy.yaml': 'kind: Deployment\nimage: podinfo:1.1\n' });
    const r = await cliPeak(['check', ...NOW, '--config', s.config, '--snapshot', device], CAPPED);
    t.is(r.code, 2, r.stdout + r.stderr);
    t.regex(r.stderr, new RegExp(`${device}: the snapshot is not text \\(it holds a NUL byte\\)`));
    t.is(r.stderr.trim().split('\n').length, 1, 'one sentence');
    underCap(t, r.peakKb);
  });
}

test(`an endless stdin snapshot stops at ${MAX_SNAPSHOT_BYTES >> 20} MiB, exit 2`, async (t) => {
  const s = scenario({ 'apps/podinfo/deploy.yaml': 'kind: Deployment\nimage: podinfo:1.1\n' });
  const r = await cliPeak(['check', ...NOW, '--config', s.config, '--snapshot', '-'], CAPPED, 'yes "a: b"');
  t.is(r.code, 2, r.stdout + r.stderr);
  t.regex(r.stderr, /stdin: the snapshot is larger than 128 MiB, the most lastgood reads from one/);
  underCap(t, r.peakKb);
});

test('the renderer is stopped beyond its memory bound, and the render says it was a limit, not the build', async (t) => {
  const renderer = await detectRenderer();
  if ('unavailable' in renderer) {
    if (process.env.LASTGOOD_REQUIRE_KUSTOMIZE) t.fail(renderer.unavailable);
    return t.pass(`no renderer: ${renderer.unavailable}`);
  }
  const files = new Map<string, Uint8Array>([
    ['app/kustomization.yaml', Buffer.from('resources:\n  - cm.yaml\n')],
    ['app/cm.yaml', Buffer.from('apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n')],
  ]);
  // the bound is watched while the renderer runs (every 50 ms): a renderer that holds tens of MB
  // for as long as a large build takes. A stand-in (Node, ~40 MB resident, waiting) so that the
  // watch sees it whatever the machine's load; a real kustomize of this tiny build may end first.
  const holding = { ...renderer, command: [process.execPath, '-e', 'setTimeout(() => {}, 60_000)'] };
  const stopped = await render(holding, { files, root: 'app', engine: 'argocd' }, { maxRssBytes: 8 << 20 });
  t.true('failed' in stopped && stopped.limit === true, JSON.stringify(stopped).slice(0, 300));
  t.regex((stopped as { failed: string }).failed, /used more than 8 MiB of memory/);
  const built = await render(renderer, { files, root: 'app', engine: 'argocd' });
  t.true('objects' in built, JSON.stringify(built).slice(0, 300));
});

test('a snapshot within the bounds is read as before', async (t) => {
  const s = scenario({ 'apps/podinfo/deploy.yaml': 'kind: Deployment\nimage: podinfo:1.1\n' });
  const r = await lastgood(['check', ...NOW, '--config', s.config, '--snapshot', s.snapshot, '--json']);
  t.true(r.code === 0 || r.code === 1, r.stdout + r.stderr);
  t.regex(r.stdout, /"verdict"/);
});
