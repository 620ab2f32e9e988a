import test from 'ava';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { VERSION } from '../src/version.ts';
import { lastgood, ROOT } from './support/cli.ts';
import { docsPage } from './support/docs.ts';
import { tempDir } from './support/git.ts';

/**
 * `lastgood version`: lastgood's version, Node's, and the renderer the render check would use,
 * found as the engine finds it (kustomize, else kubectl kustomize, on the PATH; or the config's
 * render.kustomize). And the image's kustomize: what the Dockerfile copies in.
 */

const CONFIG = `repo:
  url: https://github.com/acme/gitops
targets:
  - name: podinfo-prod
    paths: [apps/podinfo/]
    resources:
      - { apiVersion: apps/v1, kind: Deployment, namespace: prod, name: podinfo }
`;

function configFile(text: string): string {
  const file = path.join(tempDir('lastgood-version-'), 'lastgood.yaml');
  writeFileSync(file, text);
  return file;
}

const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The first of `name` on the PATH, as renderer.ts looks for it. */
function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (dir && existsSync(path.join(dir, name))) return path.join(dir, name);
  }
  return undefined;
}

test('version with the machine\'s PATH: lastgood, Node, and kustomize or kubectl kustomize with its kustomize version', async (t) => {
  const r = await lastgood(['version']);
  t.is(r.code, 0, r.stderr);
  t.is(r.stderr, '');
  const [name, node, render, ...rest] = r.stdout.split('\n');
  t.is(name, `lastgood ${VERSION}`);
  t.is(node, `node ${process.version}`);
  t.deepEqual(rest, ['']);
  const kustomize = onPath('kustomize');
  const kubectl = onPath('kubectl');
  if (kustomize) t.regex(render!, new RegExp(`^render: kustomize v5\\.\\d+\\.\\d+ \\(${esc(kustomize)}\\)$`));
  else if (kubectl) t.regex(render!, new RegExp(`^render: kubectl kustomize v5\\.\\d+\\.\\d+ \\(${esc(kubectl)}\\)$`));
  else {
    t.log('neither kustomize nor kubectl is installed here: only the "not available" line is checked');
    t.regex(render!, /^render: not available: /);
  }
  // the JSON says the same facts
  const json = await lastgood(['version', '--json']);
  t.is(json.code, 0, json.stderr);
  const doc = JSON.parse(json.stdout) as { lastgood: string; node: string; render: { available: boolean; renderer?: string; kustomize?: string; path?: string; reason?: string } };
  t.is(doc.lastgood, VERSION);
  t.is(doc.node, process.version);
  if (doc.render.available) t.is(render, `render: ${doc.render.renderer} ${doc.render.kustomize} (${doc.render.path})`);
  else t.is(render, `render: not available: ${doc.render.reason}; the render check is skipped and says so`);
});

test('version: kustomize comes before kubectl, as the render check picks it (the controller image\'s /usr/local/bin/kustomize)', async (t) => {
  const bin = tempDir('lastgood-version-bin-');
  // `kustomize version` of v5 prints the bare version
  writeFileSync(path.join(bin, 'kustomize'), '#!/bin/sh\n[ "$1" = version ] && echo v5.8.1\n');
  chmodSync(path.join(bin, 'kustomize'), 0o755);
  const r = await lastgood(['version'], { env: { PATH: `${bin}${path.delimiter}${process.env.PATH}` } });
  t.is(r.code, 0, r.stderr);
  t.regex(r.stdout, new RegExp(`^render: kustomize v5\\.8\\.1 \\(${esc(path.join(bin, 'kustomize'))}\\)$`, 'm'));
  const json = JSON.parse((await lastgood(['version', '--json'], { env: { PATH: bin } })).stdout) as { render: object };
  t.deepEqual(json.render, { available: true, renderer: 'kustomize', kustomize: 'v5.8.1', path: path.join(bin, 'kustomize') });
});

test('version with a PATH holding neither kustomize nor kubectl: "not available", and exit 0', async (t) => {
  const empty = tempDir('lastgood-version-path-');
  const r = await lastgood(['version'], { env: { PATH: empty } });
  t.is(r.code, 0, r.stderr);
  t.is(r.stdout, `lastgood ${VERSION}\nnode ${process.version}\nrender: not available: neither kustomize nor kubectl is on the PATH; the render check is skipped and says so\n`);
  const json = await lastgood(['version', '--json'], { env: { PATH: empty } });
  t.is(json.code, 0, json.stderr);
  t.deepEqual(JSON.parse(json.stdout), { lastgood: VERSION, node: process.version, render: { available: false, reason: 'neither kustomize nor kubectl is on the PATH' } });
});

test('version --config: its render.kustomize is honoured (off, a path); a bad config exits 2 naming the file', async (t) => {
  const off = await lastgood(['version', '--config', configFile(`${CONFIG}render: { kustomize: off }\n`)]);
  t.is(off.code, 0, off.stderr);
  t.regex(off.stdout, /^render: not available: rendering is turned off \(render\.kustomize: off\); the render check is skipped and says so$/m);
  const missing = await lastgood(['version', '--config', configFile(`${CONFIG}render: { kustomize: /nonexistent/kustomize }\n`)]);
  t.is(missing.code, 0, missing.stderr);
  t.regex(missing.stdout, /^render: not available: the configured renderer \/nonexistent\/kustomize is not an executable file; /m);
  const auto = await lastgood(['version', '--json', '--config', configFile(CONFIG)]);
  t.is(auto.code, 0, auto.stderr);
  t.is(JSON.parse(auto.stdout).lastgood, VERSION, 'without render: the PATH, as without --config');
  const badFile = configFile(`${CONFIG}render: { kustomize: 3, shell: bash }\n`);
  const bad = await lastgood(['version', '--config', badFile]);
  t.is(bad.code, 2);
  t.is(bad.stdout, '');
  t.true(bad.stderr.includes(badFile), bad.stderr);
  const none = await lastgood(['version', '--config', path.join(tempDir(), 'none.yaml')]);
  t.is(none.code, 2);
  t.regex(none.stderr, /none\.yaml: cannot read the config/);
});

test('--version still prints the version alone; version is in --help and in the completion scripts', async (t) => {
  const r = await lastgood(['--version']);
  t.is(r.code, 0);
  t.is(r.stdout, `${VERSION}\n`);
  const help = await lastgood(['--help']);
  t.regex(help.stdout, /^ {2}version \[options\] /m);
  const bash = (await lastgood(['completion', 'bash'])).stdout;
  const file = path.join(tempDir('lastgood-completion-'), 'lastgood.bash');
  writeFileSync(file, bash);
  const complete = (words: string[]) => execFileSync('bash', ['--norc', '-c', `source ${JSON.stringify(file)}; COMP_WORDS=(${words.map((w) => JSON.stringify(w)).join(' ')}); COMP_CWORD=${words.length - 1}; _lastgood; printf '%s\\n' "\${COMPREPLY[@]}"`], { encoding: 'utf8', cwd: ROOT }).split('\n').filter(Boolean);
  t.deepEqual(complete(['lastgood', 've']), ['version']);
  t.deepEqual(complete(['lastgood', 'version', '--']), ['--config', '--json', '--help']);
  t.regex((await lastgood(['completion', 'fish'])).stdout, /^complete -c lastgood -n '__fish_seen_subcommand_from version' -l config -r -F /m);
});

test('the Dockerfile copies kustomize v5 into the image from the official image, pinned by digest, onto the PATH', (t) => {
  // a text check: there is no Docker engine here to build the image, nor a registry to ask for the digest
  const dockerfile = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
  const copy = /^COPY --from=(\S+) (\S+) (\S+)$/m.exec(dockerfile);
  t.truthy(copy, 'a COPY --from of the kustomize image');
  const [, from, source, dest] = copy!;
  t.regex(from!, /^registry\.k8s\.io\/kustomize\/kustomize:v5\.\d+\.\d+@sha256:[0-9a-f]{64}$/, 'the official image, a v5 tag, pinned by digest');
  t.is(source, '/app/kustomize', 'where the official image keeps the binary');
  t.is(dest, '/usr/local/bin/kustomize', 'on node:24-slim\'s PATH, where detectRenderer looks first');
  // the version docs/controller.md says the image carries
  const tag = /:(v[\d.]+)@/.exec(from!)![1]!;
  t.true(docsPage('controller').includes(`kustomize ${tag}`), `docs/controller.md names ${tag}`);
});
