import test from 'ava';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { runAction } from './support/action.ts';
import { docsPage } from './support/docs.ts';
import { commit, git, makeRepo, tempDir, writeFile } from './support/git.ts';

/**
 * A person's revert through the Action (inputs target, bad, to, reason), run as the runner runs
 * it, from docs/action.md's workflow_dispatch example: the step's `with:` is read from that page and
 * its `${{ inputs.x }}` filled from the dispatch's inputs, as the runner does.
 */

const TOKEN = 'ghs_lastgoodTestToken0123456789abcdefABCDEF';
const P = 'apps/podinfo/overlays/prod/';

interface Steps {
  jobs: Record<string, { steps: Array<{ uses?: string; with?: Record<string, string> }> }>;
  on: { workflow_dispatch: { inputs: Record<string, { required: boolean }> } };
}

/** The "Example 3" workflow of docs/action.md (the GitHub Action's page). */
function readmeWorkflow(): Steps {
  const readme = docsPage('action');
  const section = readme.slice(readme.indexOf('## Example 3: a revert by hand'));
  return parseYaml(/```yaml\n([\s\S]*?)```/.exec(section)![1]!) as Steps;
}

/** The lastgood step's inputs for this dispatch, expressions evaluated as the runner does (a missing input is ""). */
function withInputs(dispatch: Record<string, string>): Record<string, string> {
  const step = Object.values(readmeWorkflow().jobs).flatMap((j) => j.steps).find((s) => s.uses?.includes('/lastgood@'))!;
  return Object.fromEntries(Object.entries(step.with!).map(([k, v]) => [k, v.replace(/\$\{\{\s*inputs\.(\w+)\s*\}\}/g, (_, name: string) => dispatch[name] ?? '')]));
}

/** c0 a README, c1 creates the target, c2 a good change, c3 the bad release, c4 an unrelated change, c5 lastgood's revert of an earlier failure a minute ago. */
function scenario() {
  const work = makeRepo();
  commit(work, { 'README.md': 'platform\n' }, 'initial');
  const c1 = commit(work, { [`${P}kustomization.yaml`]: 'images:\n  - name: podinfo\n    newTag: 6.0.0\n', 'apps/redis/values.yaml': 'replicas: 1\n' }, 'podinfo in prod');
  const c2 = commit(work, { [`${P}replicas.yaml`]: 'replicas: 2\n' }, 'podinfo: two replicas');
  const c3 = commit(work, { [`${P}kustomization.yaml`]: 'images:\n  - name: podinfo\n    newTag: 6.1.0\n' }, 'podinfo: release 6.1.0');
  const c4 = commit(work, { 'apps/redis/values.yaml': 'replicas: 3\n' }, 'redis: three replicas');
  const c5 = commit(work, { [`${P}replicas.yaml`]: 'replicas: 3\n' }, `podinfo: three replicas\n\nLastgood-Target: podinfo-prod\nLastgood-Reverts: ${c2}\nLastgood-Restores: ${c1}\n`);
  const workspace = tempDir('lastgood-ws-');
  const repo = path.join(workspace, 'gitops.git');
  git(workspace, 'clone', '-q', '--bare', work, repo);
  // the automatic guards would hold this target: two confirmations, and a cooldown of a day after c5
  writeFile(workspace, 'lastgood.yaml', `repo:\n  url: ./gitops.git\ndefaults:\n  mode: commit\n  strategy: revert\n  confirmations: 2\n  cooldown: 24h\n  maxAge: 20m\n  onFailure: { analysis: revert, promotion: { wait: 10m, then: alert }, stuck: alert }\ntargets:\n  - name: podinfo-prod\n    paths: [${P}]\n    resources:\n      - { apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: apps }\n`);
  return { workspace, repo, c1, c2, c3, c4, c5 };
}

const dispatchEvent = (workspace: string, inputs: Record<string, string>) => writeFile(workspace, '.runner/event.json', JSON.stringify({ inputs, ref: 'refs/heads/main', repository: { full_name: 'acme/gitops' } }));

test("docs/action.md's workflow_dispatch example reverts the named commit: no automatic guard holds a person's revert", async (t) => {
  const s = scenario();
  const dispatch = { target: 'podinfo-prod', bad: s.c3, reason: 'INC-1234 podinfo 6.1.0 leaks memory' };
  const r = await runAction({ workspace: s.workspace, token: TOKEN, with: withInputs(dispatch), eventName: 'workflow_dispatch', eventPath: dispatchEvent(s.workspace, dispatch) });
  t.is(r.code, 0, r.stdout + r.stderr);
  const head = git(s.repo, 'rev-parse', 'main');
  t.not(head, s.c5, 'a revert was written, cooldown (24h after c5) and confirmations (2) notwithstanding');
  t.is(r.outputs.action, 'revert');
  t.is(r.outputs.commit, head);
  t.is(r.outputs['bad-revision'], s.c3);
  t.is(r.outputs['last-known-good'], s.c2);
  t.is(git(s.repo, 'show', `${head}:${P}kustomization.yaml`), 'images:\n  - name: podinfo\n    newTag: 6.0.0', 'the bad release is undone');
  t.is(git(s.repo, 'show', `${head}:${P}replicas.yaml`), 'replicas: 3', 'later changes are kept');
  t.is(git(s.repo, 'show', `${head}:apps/redis/values.yaml`), 'replicas: 3', 'nothing outside the target');
  const message = git(s.repo, 'log', '-1', '--format=%B', head);
  t.regex(message, /INC-1234 podinfo 6\.1\.0 leaks memory/);
  t.regex(message, new RegExp(`Lastgood-Reverts: ${s.c3}`));
  t.regex(r.summary, /podinfo-prod/);
});

test("a person's revert is still refused by the blast-radius guard: exit 1, nothing written", async (t) => {
  const s = scenario();
  // restoring the target as before c1 (which created it) would delete every manifest of the target
  const dispatch = { target: 'podinfo-prod', bad: s.c2, to: s.c1, reason: 'try' };
  const ok = await runAction({ workspace: s.workspace, token: TOKEN, with: { ...withInputs(dispatch), 'dry-run': 'true' }, eventName: 'workflow_dispatch', eventPath: dispatchEvent(s.workspace, dispatch) });
  t.is(ok.code, 0, ok.stdout);
  const all = { target: 'podinfo-prod', bad: s.c1, reason: 'start over' };
  const first = await runAction({ workspace: s.workspace, token: TOKEN, with: { ...withInputs(all), strategy: 'restore' }, eventName: 'workflow_dispatch', eventPath: dispatchEvent(s.workspace, all) });
  t.is(first.code, 1, first.stdout);
  t.regex(first.stdout, /::error::podinfo-prod was not reverted: refused by the blast-radius guard: .*every manifest/);
  t.is(git(s.repo, 'rev-parse', 'main'), s.c5, 'nothing written');
});

test('the revert inputs are checked before anything is read: bad without target, to without bad, not a SHA', async (t) => {
  const s = scenario();
  const cases: Array<[Record<string, string>, RegExp]> = [
    [{ bad: s.c3 }, /input bad: a revert by hand names its target/],
    [{ target: 'podinfo-prod', to: s.c1 }, /input to is for a revert by hand: give the bad commit/],
    [{ target: 'podinfo-prod', bad: 'HEAD~1' }, /input bad: "HEAD~1" is not a commit SHA/],
    [{ target: 'nope', bad: s.c3 }, /unknown target "nope"/],
  ];
  for (const [inputs, message] of cases) {
    const r = await runAction({ workspace: s.workspace, token: TOKEN, with: inputs, eventName: 'workflow_dispatch', eventPath: dispatchEvent(s.workspace, inputs) });
    t.is(r.code, 2, `${JSON.stringify(inputs)}: ${r.stdout}`);
    t.regex(r.stdout, message);
  }
  t.is(git(s.repo, 'rev-parse', 'main'), s.c5);
});
