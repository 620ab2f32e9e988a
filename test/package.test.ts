import test from 'ava';
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { buildDemoRepo } from '../demo/build-repo.ts';
import { VERSION } from '../src/version.ts';
import { ROOT } from './support/cli.ts';
import { git, tempDir } from './support/git.ts';

/**
 * The npm package as a user gets it: `npm pack` (the bundle test/support/cli.ts keeps fresh; the
 * pack itself runs no build), installed from the tarball into an empty folder with no dev
 * dependencies and no network, then `lastgood` run from there — on this Node and, where the
 * machine has an older one, on that too (package.json "engines" says what is supported).
 */

interface Packed {
  filename: string;
  size: number;
  unpackedSize: number;
  files: Array<{ path: string; size: number }>;
}

const PKG = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string; engines: { node: string }; dependencies?: object; bin: Record<string, string> };

/** Nodes to run the installed package with: this one, and a system Node of another major. */
function nodes(): string[] {
  const out = [process.execPath];
  for (const candidate of ['/usr/bin/node', '/usr/local/bin/node']) {
    try {
      const major = execFileSync(candidate, ['-p', 'process.versions.node.split(".")[0]'], { encoding: 'utf8' }).trim();
      if (major !== process.versions.node.split('.')[0] && !out.includes(candidate)) out.push(candidate);
    } catch {
      // not there
    }
  }
  return out;
}

let packed: Packed;
let app = '';

test.before(() => {
  const dest = tempDir('lastgood-pack-');
  // --ignore-scripts: "prepare" would rebuild dist/cli/ under the feet of other test processes
  const out = execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', dest], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  packed = (JSON.parse(out) as Packed[])[0]!;
  app = tempDir('lastgood-user-');
  writeFileSync(path.join(app, 'package.json'), '{ "name": "gitops-tools", "private": true }\n');
  // --offline: the package has no dependencies, so installing it needs nothing from a registry
  execFileSync('npm', ['install', '--offline', '--omit=dev', '--no-audit', '--no-fund', path.join(dest, packed.filename)], { cwd: app, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
});

test('the tarball holds what a user needs and nothing else', (t) => {
  const files = packed.files.map((f) => f.path).sort();
  const outside = files.filter((f) => !/^(bin\/lastgood\.js|dist\/cli\/[^/]+\.(js|json|txt)|templates\/install\/[a-z-]+\.yaml|templates\/monitoring\/[a-z-]+\.(yaml|json)|templates\/(lastgood|log)\.schema\.json|templates\/(commit-message|pull-request)\.md|templates\/demo\/(cluster|lastgood)\.yaml|README\.md|LICENSE|package\.json)$/.test(f));
  t.deepEqual(outside, []);
  for (const f of ['bin/lastgood.js', 'dist/cli/cli.js', 'dist/cli/THIRD-PARTY-LICENSES.txt', 'templates/lastgood.schema.json', 'templates/install/deployment.yaml', 'README.md', 'LICENSE']) t.true(files.includes(f), f);
  t.false(files.some((f) => /^(src|test|\.ci|bench|demo|fixtures|scripts)\/|Dockerfile|action\.yml|dist\/action/.test(f)));
  t.is(PKG.version, VERSION, 'src/version.ts says the package version');
  t.is(PKG.dependencies, undefined, 'everything is in the bundle: nothing to install besides it');
  t.is(PKG.bin.lastgood, 'bin/lastgood.js');
  t.log(`${packed.filename}: ${(packed.size / 1024).toFixed(0)} KiB packed, ${(packed.unpackedSize / 1024).toFixed(0)} KiB unpacked, ${files.length} files`);
});

test('installed from the tarball: --version, health, run --dry-run on the demo repository, install — on every Node at hand', async (t) => {
  const installed = path.join(app, 'node_modules', 'lastgood');
  t.false(existsSync(path.join(installed, 'node_modules')), 'no dependencies were installed');
  const repo = path.join(tempDir('lastgood-user-repo-'), 'gitops');
  const shas = await buildDemoRepo(repo);
  copyFileSync(path.join(ROOT, 'templates/demo/cluster.yaml'), path.join(app, 'cluster.yaml'));
  writeFileSync(path.join(app, 'lastgood.yaml'), readFileSync(path.join(ROOT, 'templates/demo/lastgood.yaml'), 'utf8').replace('url: ./gitops', `url: ${repo}`));
  const bin = path.join(app, 'node_modules', '.bin', 'lastgood');
  for (const node of nodes()) {
    // as npm installed it: the .bin link, its `#!/usr/bin/env node` line finding this node first on PATH
    const env = { ...process.env, PATH: `${path.dirname(node)}:/usr/bin:/bin`, NODE_COMPILE_CACHE: tempDir('lastgood-cc-') };
    const run = (args: string[]) => spawnSync(bin, args, { cwd: app, env, encoding: 'utf8' });
    const version = run(['--version']);
    t.is(version.status, 0, `${node}: ${version.stderr}`);
    t.is(version.stdout.trim(), VERSION);
    const health = run(['health', 'cluster.yaml']);
    t.is(health.status, 0, health.stderr);
    t.deepEqual(health.stdout.trim().split('\n').map((l) => (JSON.parse(l) as { state: string }).state), ['failed', 'failed', 'healthy']);
    const dry = run(['run', '--config', 'lastgood.yaml', '--snapshot', 'cluster.yaml', '--now', '2026-11-21T09:52:00Z', '--dry-run']);
    t.is(dry.status, 0, `${node}: ${dry.stderr}`);
    t.regex(dry.stdout, /podinfo-prod: FAILED \(analysis\)/);
    t.regex(dry.stdout, /dry run: nothing written/);
    t.regex(dry.stdout, /\+ {4}newTag: 6\.9\.3/);
    t.is(git(repo, 'rev-parse', 'main'), shas.at(-1)!, 'a dry run writes nothing');
    const manifests = run(['install', '--config', 'lastgood.yaml', '--image', 'registry.example/lastgood:1.0.0']);
    t.is(manifests.status, 0, manifests.stderr);
    t.regex(manifests.stdout, /kind: Deployment/);
    // the monitoring templates travel with the package
    const monitoring = run(['install', '--config', 'lastgood.yaml', '--monitoring']);
    t.is(monitoring.status, 0, monitoring.stderr);
    t.regex(monitoring.stdout, /kind: PrometheusRule[\s\S]*kind: ServiceMonitor[\s\S]*"uid": "lastgood-controller"/);
  }
});

test("the README's $schema line names the schema the installed package carries, the one `lastgood schema` prints", (t) => {
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const line = /^# yaml-language-server: \$schema=(\S+)$/m.exec(readme);
  t.truthy(line, 'the README shows a $schema line');
  const file = path.join(app, line![1]!);
  t.true(existsSync(file), `${line![1]} resolves in a project that installed lastgood`);
  const printed = spawnSync(process.execPath, [path.join(app, 'node_modules/lastgood/bin/lastgood.js'), 'schema'], { encoding: 'utf8' });
  t.deepEqual(JSON.parse(readFileSync(file, 'utf8')), JSON.parse(printed.stdout));
});

test('"engines" names the oldest Node the bundle is built for', (t) => {
  const script = readFileSync(path.join(ROOT, 'scripts/build-cli.ts'), 'utf8');
  const target = /target: 'node(\d+)'/.exec(script)![1];
  t.is(PKG.engines.node, `>=${target}`);
});
