/**
 * `npm run demo`: the embedded default. Writes the worked example (`lastgood demo .demo`: a small GitOps repository with a real history
 * in .demo/gitops — a good release, an unrelated change, a bad release of podinfo — and its cluster), then runs
 * `lastgood run` on it with the cluster snapshot .demo/cluster.yaml, and shows what it did.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import git from 'isomorphic-git';
import { writeDemo } from '../src/demo/index.ts';
import { LocalRepo } from '../src/deliver/local/index.ts';
import { diffChange, unifiedDiff } from '../src/revert/diff.ts';
import type { FileChange } from '../src/repo/types.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const demoDir = path.join(root, '.demo');
const repoDir = path.join(demoDir, 'gitops');
const bold = (s: string) => (process.stdout.isTTY ? `\x1b[1m${s}\x1b[0m` : s);
const say = (s = '') => process.stdout.write(s + '\n');

say(bold('1. The GitOps repository') + `  (${path.relative(process.cwd(), repoDir) || repoDir})`);
// what `lastgood demo .demo` writes (the package's own worked example), written again on each run
const { shas, config, snapshot, now } = await writeDemo(demoDir, { replace: true });
for (const sha of [...shas].reverse()) {
  const { commit } = await git.readCommit({ fs, dir: repoDir, oid: sha });
  say(`   ${sha.slice(0, 12)}  ${commit.message.split('\n')[0]}`);
}
say();
say(bold('2. The cluster') + `  (${path.relative(root, snapshot)}: Flux applied the last commit, Flagger's canary analysis failed)`);
const health = spawnSync(process.execPath, [path.join(root, 'bin/lastgood.js'), 'health', snapshot], { encoding: 'utf8' });
for (const line of health.stdout.trim().split('\n')) {
  const h = JSON.parse(line);
  say(`   ${h.kind} ${h.namespace}/${h.name}: ${h.state} (${h.reason})${h.message ? ` - ${h.message}` : ''}`);
}
say();
const args = ['run', '--config', path.relative(root, config), '--snapshot', path.relative(root, snapshot), '--now', now];
say(bold('3. lastgood ' + args.join(' ')));
const run = spawnSync(process.execPath, [path.join(root, 'bin/lastgood.js'), ...args], { cwd: root, encoding: 'utf8' });
process.stdout.write(run.stdout.trimEnd().replace(/^/gm, '   ') + '\n');
if (run.stderr) process.stderr.write(run.stderr);
say(`   (exit code ${run.status})`);
say();

const repo = new LocalRepo(repoDir);
const head = await repo.head('main');
if (head === shas[shas.length - 1]) {
  say('No commit was made.');
  process.exit(run.status ?? 1);
}
const commit = await repo.readCommit(head);
say(bold(`4. The new commit ${head}`));
say(commit.message.replace(/^/gm, '   '));
const parent = commit.parents[0]!;
const paths = ['apps/podinfo/overlays/prod/'];
const [before, after] = await Promise.all([repo.listFiles(parent, paths), repo.listFiles(head, paths)]);
const files: FileChange[] = [
  ...[...after].filter(([p, e]) => before.get(p)?.oid !== e.oid).map(([p, e]) => ({ path: p, mode: e.mode, oid: e.oid })),
  ...[...before.keys()].filter((p) => !after.has(p)).map((p) => ({ path: p, delete: true as const })),
];
say(bold('5. Its diff') + '  (only the target paths; the redis change made in between is untouched)');
say(unifiedDiff(await diffChange(repo, parent, files)).replace(/^/gm, '   '));
say(`Flux will now sync ${head.slice(0, 12)} and roll podinfo back to 6.9.3; git says what runs.`);
say(`Run it again: the second run finds its own revert and makes no new commit.`);
process.exit(run.status ?? 1);
