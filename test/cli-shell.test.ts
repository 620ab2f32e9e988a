import test from 'ava';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import jsyaml from 'js-yaml';
import { formatReport, terminalStyle } from '../src/report/text.ts';
import type { Report } from '../src/engine/index.ts';
import { BIN, lastgood, ROOT } from './support/cli.ts';
import { tempDir } from './support/git.ts';
import { startKubeEmulator } from './support/kube-emulator.ts';
import { canary } from './support/objects.ts';

/** What users of flux and argocd reach for: --kubeconfig/--context, a readable terminal, shell completion. */

/** Runs `_lastgood` in a real bash with the words typed so far; returns what it offers. */
function complete(script: string, words: string[]): string[] {
  const file = path.join(tempDir('lastgood-completion-'), 'lastgood.bash');
  writeFileSync(file, script);
  const line = `source ${JSON.stringify(file)}; COMP_WORDS=(${words.map((w) => JSON.stringify(w)).join(' ')}); COMP_CWORD=${words.length - 1}; _lastgood; printf '%s\\n' "\${COMPREPLY[@]}"`;
  return execFileSync('bash', ['--norc', '-c', line], { encoding: 'utf8', cwd: ROOT }).split('\n').filter(Boolean);
}

test('completion bash: commands, the options of the command typed, an option\'s choices, file names after --config', async (t) => {
  const r = await lastgood(['completion', 'bash']);
  t.is(r.code, 0, r.stderr);
  t.regex(r.stdout, /^complete -o default -F _lastgood lastgood$/m);
  t.deepEqual(complete(r.stdout, ['lastgood', 'r']), ['run', 'revert']);
  t.true(complete(r.stdout, ['lastgood', '']).includes('completion'));
  t.deepEqual(complete(r.stdout, ['lastgood', 'run', '--d']), ['--dry-run']);
  t.deepEqual(complete(r.stdout, ['lastgood', 'run', '--k']), ['--kubeconfig']);
  t.deepEqual(complete(r.stdout, ['lastgood', 'install', '--ka']), []);
  t.deepEqual(complete(r.stdout, ['lastgood', 'install', '--ku']), ['--kustomize']);
  t.deepEqual(complete(r.stdout, ['lastgood', 'run', '--mode', '']), ['commit', 'pull-request']);
  t.deepEqual(complete(r.stdout, ['lastgood', 'check', '--config', 'templates/demo/lastg']), ['templates/demo/lastgood.yaml']);
  t.deepEqual(complete(r.stdout, ['lastgood', 'run', '--target', '']), [], 'no --config typed: no target names');
});

test('completion bash: a command\'s argument choices, folders where an option takes one, the target names of the config typed', async (t) => {
  const r = await lastgood(['completion', 'bash']);
  t.is(r.code, 0, r.stderr);
  t.deepEqual(complete(r.stdout, ['lastgood', 'completion', '']), ['bash', 'zsh', 'fish']);
  t.deepEqual(complete(r.stdout, ['lastgood', 'completion', 'f']), ['fish']);
  // install --kustomize takes a folder: folders only, not the files beside them
  t.deepEqual(complete(r.stdout, ['lastgood', 'install', '--kustomize', 'templates/d']), ['templates/demo']);
  t.deepEqual(complete(r.stdout, ['lastgood', 'install', '--kustomize', 'templates/l']), [], 'templates/lastgood.schema.json is a file');
  // --target: the names of the config given with --config (lastgood __targets, on the PATH as a user has it)
  const dir = tempDir('lastgood-completion-targets-');
  const config = path.join(dir, 'lastgood.yaml');
  writeFileSync(config, 'repo: { url: ./gitops }\ntargets:\n  - name: podinfo-prod\n    paths: [apps/podinfo/]\n    resources: [{ apiVersion: apps/v1, kind: Deployment, namespace: prod, name: podinfo }]\n  - name: podinfo-staging\n    paths: [apps/podinfo-staging/]\n    resources: [{ apiVersion: apps/v1, kind: Deployment, namespace: staging, name: podinfo }]\n');
  const bin = path.join(dir, 'bin');
  execFileSync('mkdir', ['-p', bin]);
  writeFileSync(path.join(bin, 'lastgood'), `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)} "$@"\n`, { mode: 0o755 });
  const withPath = (words: string[]) => {
    const file = path.join(dir, 'lastgood.bash');
    writeFileSync(file, r.stdout);
    const line = `export PATH=${JSON.stringify(bin)}:$PATH; source ${JSON.stringify(file)}; COMP_WORDS=(${words.map((w) => JSON.stringify(w)).join(' ')}); COMP_CWORD=${words.length - 1}; _lastgood; printf '%s\\n' "\${COMPREPLY[@]}"`;
    return execFileSync('bash', ['--norc', '-c', line], { encoding: 'utf8', cwd: ROOT }).split('\n').filter(Boolean);
  };
  t.deepEqual(withPath(['lastgood', 'revert', '--config', config, '--target', 'podinfo-p']), ['podinfo-prod']);
  t.deepEqual(withPath(['lastgood', 'revert', '--config', config, '--target', '']), ['podinfo-prod', 'podinfo-staging']);
  t.deepEqual(withPath(['lastgood', 'revert', '--config', path.join(dir, 'nope.yaml'), '--target', '']), [], 'a config it cannot read: nothing, no error');
  const fish = await lastgood(['completion', 'fish']);
  t.regex(fish.stdout, /__fish_seen_subcommand_from completion' -x -a 'bash zsh fish'/);
  t.regex(fish.stdout, /__fish_seen_subcommand_from install' -l kustomize -x -a '\(__fish_complete_directories\)'/);
  t.regex(fish.stdout, /__fish_seen_subcommand_from revert' -l target -x -a '\(__lastgood_targets\)'/);
  t.notRegex(fish.stdout + r.stdout, /__targets' -l|-a __targets /, 'the hidden command is not offered');
});

test('completion zsh and fish name every command and option; an unknown shell is bad usage', async (t) => {
  const help = await lastgood(['--help']);
  const commands = [...help.stdout.matchAll(/^ {2}([a-z]+) /gm)].map((m) => m[1]!).filter((c) => c !== 'help');
  const zsh = await lastgood(['completion', 'zsh']);
  t.is(zsh.code, 0);
  t.regex(zsh.stdout, /^#compdef lastgood\n/);
  t.regex(zsh.stdout, /bashcompinit/);
  t.regex(zsh.stdout, /complete -o default -F _lastgood lastgood/);
  const fish = await lastgood(['completion', 'fish']);
  t.is(fish.code, 0);
  for (const c of commands) t.regex(fish.stdout, new RegExp(`-n __fish_use_subcommand -a ${c} `), c);
  t.regex(fish.stdout, /__fish_seen_subcommand_from run' -l mode -x -a 'commit pull-request'/);
  t.regex(fish.stdout, /__fish_seen_subcommand_from run' -l config -r -F/);
  // zsh and fish are not installed here: their scripts are checked as text, bash's by running it
  for (const shell of ['zsh', 'fish']) {
    const found = spawnSync(shell, ['-n', '-c', 'true']);
    if (found.error) t.log(`${shell} is not installed: its script is checked as text only`);
  }
  const bad = await lastgood(['completion', 'tcsh']);
  t.is(bad.code, 2);
  t.regex(bad.stderr, /Allowed choices are bash, zsh, fish/);
});

const REPORT: Report = {
  targets: [{
    name: 'podinfo-prod', verdict: 'failed', class: 'analysis', summary: '', action: 'revert', reason: 'failed (analysis)', bad: [],
    evidence: [
      { apiVersion: 'flagger.app/v1beta1', kind: 'Canary', groupKind: 'flagger.app/Canary', namespace: 'prod', name: 'podinfo', state: 'failed', reason: 'Failed', message: 'Canary analysis failed' },
      { apiVersion: 'kustomize.toolkit.fluxcd.io/v1', kind: 'Kustomization', groupKind: 'kustomize.toolkit.fluxcd.io/Kustomization', namespace: 'flux-system', name: 'apps', state: 'healthy', reason: 'ReconciliationSucceeded', message: '' },
    ] as Report['targets'][number]['evidence'],
  }],
};

test('a terminal gets colour and aligned evidence (NO_COLOR: aligned only); a pipe gets the plain text', (t) => {
  t.is(terminalStyle({ isTTY: false }, {}), undefined);
  t.is(terminalStyle({}, { NO_COLOR: '1' }), undefined);
  t.deepEqual(terminalStyle({ isTTY: true }, {}), { color: true });
  t.deepEqual(terminalStyle({ isTTY: true }, { NO_COLOR: '1' }), { color: false });
  t.deepEqual(terminalStyle({ isTTY: true }, { NO_COLOR: '' }), { color: true }, 'an empty NO_COLOR does not count (no-color.org)');
  const plain = formatReport(REPORT);
  t.false(plain.includes('\x1b['));
  t.regex(plain, /^ {4}flagger\.app\/Canary prod\/podinfo failed \(Failed\): Canary analysis failed$/m);
  const aligned = formatReport(REPORT, { tty: { color: false } });
  t.false(aligned.includes('\x1b['));
  const rows = aligned.split('\n').filter((l) => l.startsWith('    '));
  t.is(rows[0]!.indexOf('failed'), rows[1]!.indexOf('healthy'), 'the state column is aligned');
  t.is(rows[0]!.indexOf('(Failed)'), rows[1]!.indexOf('(ReconciliationSucceeded)'));
  const coloured = formatReport(REPORT, { tty: { color: true } });
  t.regex(coloured, /podinfo-prod: \x1b\[1;31mFAILED\x1b\[0m/);
  t.regex(coloured, /decision: \x1b\[1;36mrevert\x1b\[0m/);
  t.is(coloured.replace(/\x1b\[[\d;]*m/g, ''), aligned, 'the colours are all that differ');
});

test('on a real terminal (script(1)) the CLI colours; NO_COLOR turns that off; piped it does not', (t) => {
  const args = ['check', '--config', 'templates/demo/lastgood.yaml', '--snapshot', 'templates/demo/cluster.yaml', '--now', '2026-11-21T09:52:00Z'];
  const inPty = (env: Record<string, string>) => spawnSync('script', ['-qec', [process.execPath, BIN, ...args].map((a) => `'${a}'`).join(' '), '/dev/null'], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, ...env } });
  const probe = spawnSync('script', ['--version'], { encoding: 'utf8' });
  if (probe.error) {
    t.log('script(1) is not installed: the terminal output is checked through formatReport only');
    t.pass();
    return;
  }
  const tty = inPty({});
  t.regex(tty.stdout, /\x1b\[1;31mFAILED/);
  const noColor = inPty({ NO_COLOR: '1' });
  t.false(noColor.stdout.includes('\x1b['), noColor.stdout);
  t.regex(noColor.stdout, /podinfo-prod: FAILED/);
  const piped = spawnSync(process.execPath, [BIN, ...args], { cwd: ROOT, encoding: 'utf8' });
  t.false(piped.stdout.includes('\x1b['));
});

test('--kubeconfig and --context choose the cluster, as kubectl does; an unknown context is bad usage', async (t) => {
  const kube = await startKubeEmulator({ namespaces: ['default', 'prod', 'flux-system'] });
  t.teardown(() => kube.close());
  const failed = canary({ phase: 'Failed', since: new Date(Date.now() - 60_000).toISOString() });
  const seeded = kube.apply({ ...failed, spec: { ...failed.spec, analysis: { interval: '1m', threshold: 5, maxWeight: 50, stepWeight: 10 } } });
  kube.setStatus(seeded, failed.status);
  // a kubeconfig whose current context is a cluster that is not there, and one context that is the emulator
  const config = jsyaml.load(readFileSync(kube.kubeconfigPath, 'utf8')) as { clusters: object[]; contexts: object[]; 'current-context': string };
  config.clusters.push({ name: 'gone', cluster: { server: 'http://127.0.0.1:9' } });
  config.contexts.push({ name: 'gone', context: { cluster: 'gone', user: 'lastgood-test' } });
  config['current-context'] = 'gone';
  const dir = tempDir('lastgood-kubeconfig-');
  const kubeconfig = path.join(dir, 'kubeconfig');
  writeFileSync(kubeconfig, jsyaml.dump(config));
  const check = (extra: string[]) => lastgood(['check', '--config', 'templates/demo/lastgood.yaml', '--json', '--kubeconfig', kubeconfig, ...extra], { env: { KUBECONFIG: path.join(dir, 'elsewhere') } });
  const chosen = await check(['--context', 'emulator']);
  t.is(chosen.code, 0, chosen.stderr);
  const evidence = (JSON.parse(chosen.stdout) as Report).targets[0]!.evidence;
  t.like(evidence.find((e) => e.kind === 'Canary'), { state: 'failed', reason: 'Failed' }, 'read from the emulator');
  const current = await check([]);
  t.is(current.code, 3, 'the current context is a cluster that does not answer');
  t.regex(current.stderr, /kubernetes: /);
  const unknown = await check(['--context', 'staging']);
  t.is(unknown.code, 2);
  t.regex(unknown.stderr, /--context staging: no such context in the kubeconfig \(it has: emulator, gone\)/);
});
