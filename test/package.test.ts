import test from 'ava';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import yaml from 'js-yaml';
import { BUNDLE_OPTIONS, ENGINES, NODE_FLOOR } from '../scripts/build-cli.ts';
import { OMIT, publishedManifest } from '../scripts/publish-manifest.ts';
import { VERSION } from '../src/version.ts';
import { ROOT } from './support/cli.ts';
import { docsPage, docsPages } from './support/docs.ts';
import { cluster, configText, failCanary, gitopsRepo, until, type GitopsRepo } from './support/controller-scenario.ts';
import { git, tempDir } from './support/git.ts';
import type { KubeEmulator } from './support/kube-emulator.ts';

/**
 * The npm package as a user gets it: `npm pack` as a release makes it (its prepack/postpack put
 * the published package.json in the tarball, scripts/publish-manifest.ts; dist/cli/ is the bundle
 * test/support/cli.ts keeps fresh, so the pack builds nothing), installed from the tarball into an
 * empty folder with no dev dependencies and no network, then `lastgood` run from there, as npm
 * linked it — on the lowest Node package.json "engines" admits (test/node-lowest/, a dev
 * dependency, so it is here offline) and on this one (24), with the commands that read a cluster
 * run against the Kubernetes API emulator; and on a Node below "engines", refused in one sentence.
 */

interface Packed {
  filename: string;
  size: number;
  unpackedSize: number;
  files: Array<{ path: string; size: number }>;
}

interface Manifest {
  version: string;
  engines: { node: string };
  dependencies?: object;
  devDependencies: Record<string, string>;
  bin: Record<string, string>;
  [key: string]: unknown;
}

const PKG = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as Manifest;
/** the lowest Node "engines" admits: test/node-lowest/'s dependency, installed by npm ci */
const LOWEST = path.join(ROOT, 'test', 'node-lowest', 'node_modules', 'node', 'bin', 'node');
const NODES: Array<[label: string, node: string, version: string]> = [
  [`the lowest Node "engines" admits (${NODE_FLOOR})`, LOWEST, NODE_FLOOR],
  [`this Node (${process.versions.node})`, process.execPath, process.versions.node],
];

let packed: Packed;
let tarball = '';
let app = '';
let installStderr = '';

test.before(() => {
  const dest = tempDir('lastgood-pack-');
  const out = execFileSync('npm', ['pack', '--json', '--pack-destination', dest], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  packed = (JSON.parse(out) as Packed[])[0]!;
  tarball = path.join(dest, packed.filename);
  app = tempDir('lastgood-user-');
  writeFileSync(path.join(app, 'package.json'), '{ "name": "gitops-tools", "private": true }\n');
  // --offline: the package has no dependencies, so installing it needs nothing from a registry
  const install = spawnSync('npm', ['install', '--offline', '--omit=dev', '--no-audit', '--no-fund', tarball], { cwd: app, encoding: 'utf8' });
  if (install.status !== 0) throw new Error(`npm install ${tarball}: ${install.stderr}`);
  installStderr = install.stderr;
});

test('the tarball holds what a user needs and nothing else', (t) => {
  const files = packed.files.map((f) => f.path).sort();
  const outside = files.filter((f) => !/^(bin\/lastgood\.js|dist\/cli\/[^/]+\.(js|json|txt)|templates\/install\/[a-z-]+\.yaml|templates\/monitoring\/[a-z-]+\.(yaml|json)|templates\/(lastgood|log)\.schema\.json|templates\/(commit-message|pull-request)\.md|templates\/demo\/[a-z-]+\.yaml|README\.md|docs\/[a-z-]+\.md|LICENSE|Dockerfile|package\.json)$/.test(f));
  t.deepEqual(outside, []);
  for (const f of ['bin/lastgood.js', 'dist/cli/cli.js', 'dist/cli/THIRD-PARTY-LICENSES.txt', 'templates/lastgood.schema.json', 'templates/install/deployment.yaml', 'README.md', 'LICENSE']) t.true(files.includes(f), f);
  // the pages the README links
  for (const page of docsPages()) t.true(files.includes(page), page);
  t.false(files.some((f) => /^(src|test|\.ci|bench|demo|fixtures|scripts)\/|action\.yml|dist\/action/.test(f)));
  // the controller image is built from what a user has: the package ships its Dockerfile
  t.true(files.includes('Dockerfile'));
  t.is(PKG.version, VERSION, 'src/version.ts says the package version');
  t.is(PKG.dependencies, undefined, 'everything is in the bundle: nothing to install besides it');
  t.is(PKG.bin.lastgood, 'bin/lastgood.js');
  t.log(`${packed.filename}: ${packed.size} bytes (${(packed.size / 1000).toFixed(0)} kB, ${(packed.size / 1024).toFixed(0)} KiB) packed, ${(packed.unpackedSize / 1000).toFixed(0)} kB unpacked, ${files.length} files`);
});

test('a clean install: no npm warning, and the package.json installed is the published one (no development scripts or dependencies)', (t) => {
  t.notRegex(installStderr, /npm warn/i, installStderr);
  const inTarball = execFileSync('tar', ['-xzOf', tarball, 'package/package.json'], { encoding: 'utf8' });
  const installed = JSON.parse(readFileSync(path.join(app, 'node_modules', 'lastgood', 'package.json'), 'utf8')) as Record<string, unknown>;
  t.deepEqual(installed, JSON.parse(inTarball));
  for (const key of OMIT) t.is(installed[key], undefined, key);
  t.deepEqual(installed.engines, PKG.engines);
  t.is(inTarball, publishedManifest(readFileSync(path.join(ROOT, 'package.json'), 'utf8')));
  // and the development package.json is back in place
  const back = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts?: Record<string, string> };
  t.truthy(back.scripts?.prepack, 'postpack put the development package.json back');
  t.false(existsSync(path.join(ROOT, 'node_modules', '.cache', 'lastgood-pack', 'package.json.aside')));
});

/** A Flux event as its notification-controller posts it: the Kustomization's health check failed at `revision`. */
function fluxEvent(revision: string): string {
  return JSON.stringify({
    involvedObject: { kind: 'Kustomization', namespace: 'flux-system', name: 'apps', uid: '1d2e1a0c-6f0e-4c55-9d8e-6b7a9b0b1f2a', apiVersion: 'kustomize.toolkit.fluxcd.io/v1', resourceVersion: '9184213' },
    severity: 'error',
    timestamp: new Date(Date.now() - 60_000).toISOString().replace(/\.\d+Z$/, 'Z'),
    message: "health check failed after 5m0s: timeout waiting for: [Deployment/prod/podinfo status: 'InProgress']",
    reason: 'HealthCheckFailed',
    metadata: { revision: `main@sha1:${revision}` },
    reportingController: 'kustomize-controller',
    reportingInstance: 'kustomize-controller-7b5d9c8f4d-x2kqv',
  });
}

/** A process's exit code and output, without blocking this process (which may be serving it: the emulator). */
function spawnAsync(command: string, args: string[], opts: { cwd: string; env: NodeJS.ProcessEnv }): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { ...opts, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    child.on('error', (error) => resolve({ status: -1, stdout, stderr: `${stderr}${error.message}` }));
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

/** What `lastgood controller` logs: JSON lines on stderr. */
function startController(bin: string, dir: string, env: NodeJS.ProcessEnv) {
  const child = spawn(bin, ['controller', '--config', 'lastgood.yaml'], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: Array<Record<string, unknown>> = [];
  let text = '';
  child.stderr.on('data', (d: Buffer) => {
    text += d.toString('utf8');
    const parts = text.split('\n');
    text = parts.pop()!;
    for (const l of parts) {
      try {
        lines.push(JSON.parse(l) as Record<string, unknown>);
      } catch {
        lines.push({ text: l });
      }
    }
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, lines, exited };
}

for (const [label, node, version] of NODES) {
  test.serial(`installed from the tarball, on ${label}: --version, check, run, run --event and run --snapshot against the Kubernetes API emulator, controller, install`, async (t) => {
    t.true(existsSync(node), `${node}: npm ci installs it (test/node-lowest/)`);
    const bin = path.join(app, 'node_modules', '.bin', 'lastgood');
    const dir = tempDir('lastgood-user-run-');
    const repo: GitopsRepo = gitopsRepo();
    const kube: KubeEmulator = await cluster(repo);
    t.teardown(() => kube.close());
    writeFileSync(path.join(dir, 'lastgood.yaml'), configText({ url: repo.bare, controller: '  leaderElection: false\n' }));
    // as npm linked it: the .bin link, its `#!/usr/bin/env node` finding this node first on PATH
    const env = { ...process.env, PATH: `${path.dirname(node)}:/usr/bin:/bin`, NODE_COMPILE_CACHE: tempDir('lastgood-cc-'), KUBECONFIG: kube.kubeconfigPath, LASTGOOD_LOG_LEVEL: 'info' };
    // not spawnSync: the emulator answers from this process
    const run = (args: string[]) => spawnAsync(bin, args, { cwd: dir, env });

    const v = await run(['--version']);
    t.is(v.status, 0, `${node}: ${v.stderr}`);
    t.is(v.stdout.trim(), VERSION);
    t.regex((await run(['version'])).stdout, new RegExp(`^node v${version.replaceAll('.', '\\.')}$`, 'm'), 'runs on the Node meant');

    // check: the cluster as it is (Flagger analysing the release)
    const progressing = await run(['check', '--config', 'lastgood.yaml', '--json']);
    t.is(progressing.status, 0, progressing.stderr);
    const states = (out: string) => (JSON.parse(out) as { targets: Array<{ name: string; verdict: string; evidence: Array<{ kind: string; state: string }> }> }).targets[0]!;
    t.is(states(progressing.stdout).verdict, 'progressing', progressing.stdout);
    t.like(states(progressing.stdout).evidence.find((e) => e.kind === 'Canary'), { state: 'progressing' }, 'read from the cluster');

    failCanary(kube);
    const failed = await run(['check', '--config', 'lastgood.yaml']);
    t.regex(failed.stdout, /podinfo-prod: FAILED/, failed.stderr);

    // run, reading the cluster: the revert planned, nothing written
    const head = git(repo.bare, 'rev-parse', 'main');
    const dry = await run(['run', '--config', 'lastgood.yaml', '--dry-run']);
    t.is(dry.status, 0, dry.stderr);
    t.regex(dry.stdout, /podinfo-prod: FAILED/);
    t.regex(dry.stdout, /dry run: nothing written/);
    t.regex(dry.stdout, /\+ {4}newTag: 6\.0\.0/);

    // run --event: the Flux event, and the cluster read beside it
    writeFileSync(path.join(dir, 'event.json'), fluxEvent(repo.c3));
    const event = await run(['run', '--config', 'lastgood.yaml', '--event', 'event.json', '--dry-run']);
    t.is(event.status, 0, event.stderr);
    t.regex(event.stdout, /podinfo-prod: FAILED/);
    t.regex(event.stdout, /\+ {4}newTag: 6\.0\.0/);

    // run --snapshot, and health: the same objects from a file (as `kubectl get -o yaml` writes them)
    const objects = [kube.list('flagger.app/v1beta1', 'Canary', 'prod'), kube.list('kustomize.toolkit.fluxcd.io/v1', 'Kustomization', 'flux-system'), kube.list('apps/v1', 'Deployment', 'prod')].flat();
    writeFileSync(path.join(dir, 'cluster.yaml'), objects.map((o) => yaml.dump(o)).join('---\n'));
    const health = await run(['health', 'cluster.yaml']);
    t.is(health.status, 0, health.stderr);
    t.deepEqual(health.stdout.trim().split('\n').map((l) => (JSON.parse(l) as { state: string }).state), ['failed', 'healthy', 'healthy']);
    const snap = await run(['run', '--config', 'lastgood.yaml', '--snapshot', 'cluster.yaml', '--dry-run']);
    t.is(snap.status, 0, snap.stderr);
    t.regex(snap.stdout, /podinfo-prod: FAILED \(analysis\)/);
    t.regex(snap.stdout, /\+ {4}newTag: 6\.0\.0/);
    t.is(git(repo.bare, 'rev-parse', 'main'), head, 'dry runs write nothing');

    // controller: serves /healthz, stops on SIGTERM with exit 0
    const ctl = startController(bin, dir, env);
    t.teardown(() => void ctl.child.kill('SIGKILL'));
    const serving = await until('the controller serving', () => ctl.lines.find((l) => l.msg === 'serving /healthz, /readyz, /metrics') ?? (ctl.child.exitCode !== null && { exited: ctl.child.exitCode }));
    t.truthy(serving.address, JSON.stringify(ctl.lines));
    const healthz = await fetch(`http://127.0.0.1:${(serving.address as { port: number }).port}/healthz`);
    t.is(healthz.status, 200);
    ctl.child.kill('SIGTERM');
    t.is(await ctl.exited, 0, JSON.stringify(ctl.lines.slice(-5)));

    // install: the manifests and the monitoring templates travel with the package
    const manifests = await run(['install', '--config', 'lastgood.yaml', '--image', 'registry.example/lastgood:1.0.0']);
    t.is(manifests.status, 0, manifests.stderr);
    t.regex(manifests.stdout, /kind: Deployment/);
    const monitoring = await run(['install', '--config', 'lastgood.yaml', '--monitoring']);
    t.is(monitoring.status, 0, monitoring.stderr);
    t.regex(monitoring.stdout, /kind: PrometheusRule[\s\S]*kind: ServiceMonitor[\s\S]*"uid": "lastgood-controller"/);
  });
}

test.serial('from the installed package alone: `lastgood demo` writes the worked example, and the command it prints reverts the bad release as the README shows', async (t) => {
  const bin = path.join(app, 'node_modules', '.bin', 'lastgood');
  // the lowest Node admitted, as a user with an older setup has it; no clone, no TypeScript
  const env = { ...process.env, PATH: `${path.dirname(LOWEST)}:/usr/bin:/bin`, NODE_COMPILE_CACHE: tempDir('lastgood-cc-') };
  const demo = await spawnAsync(bin, ['demo', 'lastgood-demo'], { cwd: app, env });
  t.is(demo.status, 0, demo.stderr);
  t.regex(demo.stdout, /349edffd86e9 {2}podinfo: release 7\.0\.0 to prod with the new cache backend/);
  const printed = /^ {2}lastgood (run .*)$/m.exec(demo.stdout)?.[1];
  t.is(printed, 'run --config lastgood-demo/lastgood.yaml --snapshot lastgood-demo/cluster.yaml --now 2026-11-21T09:52:00Z');
  const run = await spawnAsync(bin, printed!.split(' '), { cwd: app, env });
  t.is(run.status, 0, run.stderr);
  // the README's worked example: the same verdict, bad commit and last-known-good
  t.regex(run.stdout, /podinfo-prod: FAILED \(analysis\)/);
  t.regex(run.stdout, /bad commit: 349edffd86e90846692f498d82676f0ee5085cb3/);
  t.regex(run.stdout, /last-known-good: f5462339b46e2805db7d31280d891206e9e7891e/);
  t.regex(run.stdout, /new commit: [0-9a-f]{40} on main/);
  t.is(git(path.join(app, 'lastgood-demo', 'gitops'), 'rev-parse', 'main^'), '349edffd86e90846692f498d82676f0ee5085cb3');
  const again = await spawnAsync(bin, printed!.split(' '), { cwd: app, env });
  t.regex(again.stdout, /existing commit: [0-9a-f]{40}/, 'a second run finds its own revert');
});

/** A Node on this machine that "engines" does not admit (the system's Node 20, where there is one). */
function nodeBelow(): { node: string; version: string } | undefined {
  for (const candidate of ['/usr/bin/node', '/usr/local/bin/node']) {
    let version: string;
    try {
      version = execFileSync(candidate, ['-p', 'process.versions.node'], { encoding: 'utf8' }).trim();
    } catch {
      continue;
    }
    const [major, minor] = version.split('.').map(Number) as [number, number];
    const floor = NODE_FLOOR.split('.').map(Number) as [number, number];
    if (major < floor[0] || (major === floor[0] && minor < floor[1])) return { node: candidate, version };
  }
  return undefined;
}

test('on a Node "engines" does not admit, the installed CLI says so in one sentence and exits 2, before loading anything', (t) => {
  const below = nodeBelow();
  if (!below) {
    t.log(`skipped: no Node below ${NODE_FLOOR} at /usr/bin/node or /usr/local/bin/node on this machine`);
    t.pass();
    return;
  }
  const bin = path.join(app, 'node_modules', '.bin', 'lastgood');
  const env = { ...process.env, PATH: `${path.dirname(below.node)}:/usr/bin:/bin`, KUBECONFIG: path.join(tempDir(), 'none') };
  for (const args of [['--version'], ['check', '--config', 'lastgood.yaml'], ['controller', '--config', 'lastgood.yaml']]) {
    const r = spawnSync(bin, args, { cwd: app, env, encoding: 'utf8' });
    t.is(r.status, 2, `${below.node} ${args.join(' ')}: ${r.stderr}`);
    t.is(r.stdout, '');
    const lines = r.stderr.split('\n').filter(Boolean);
    t.is(lines.length, 1, r.stderr);
    // the words for each range are test/node-contract.test.ts's
    t.true(lines[0]!.startsWith(`lastgood: this is Node.js ${below.version}, and lastgood needs Node.js ${NODE_FLOOR} or `), lines[0]);
    t.true(lines[0]!.endsWith(`(package.json "engines": "${ENGINES}"): install one of those (https://nodejs.org) and run lastgood with it.`), lines[0]);
  }
  t.log(`${below.node} (${below.version}): refused`);
});

test("the $schema line of docs/config.md names the schema the installed package carries, the one `lastgood schema` prints", (t) => {
  const readme = docsPage('config');
  const line = /^# yaml-language-server: \$schema=(\S+)$/m.exec(readme);
  t.truthy(line, 'docs/config.md shows a $schema line');
  const file = path.join(app, line![1]!);
  t.true(existsSync(file), `${line![1]} resolves in a project that installed lastgood`);
  const printed = spawnSync(process.execPath, [path.join(app, 'node_modules/lastgood/bin/lastgood.js'), 'schema'], { encoding: 'utf8' });
  t.deepEqual(JSON.parse(readFileSync(file, 'utf8')), JSON.parse(printed.stdout));
});

test('"engines" is the one place the Node versions are written: the bundle is built for its lowest, which the tests run, and it admits this Node', (t) => {
  t.is(PKG.engines.node, ENGINES);
  t.is(BUNDLE_OPTIONS.target, `node${NODE_FLOOR}`);
  const lowest = JSON.parse(readFileSync(path.join(ROOT, 'test', 'node-lowest', 'package.json'), 'utf8')) as { dependencies: { node: string } };
  t.is(lowest.dependencies.node, NODE_FLOOR, 'test/node-lowest/package.json pins the lowest Node "engines" admits');
  t.is(PKG.devDependencies['node-lowest'], 'file:test/node-lowest');
  t.is(execFileSync(LOWEST, ['-p', 'process.versions.node'], { encoding: 'utf8' }).trim(), NODE_FLOOR, `${LOWEST} is that Node (npm ci installs it)`);
  t.is(PKG.devDependencies.node, process.versions.node, "the project's own Node runs the tests (node_modules/.bin/node: not test/node-lowest's)");
  t.regex(ENGINES, /(^|\|\|)\s*>=24(\s|$)/, 'and Node 24 and later');
});
