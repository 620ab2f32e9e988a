import test from 'ava';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import yaml from 'js-yaml';
import { BIN, lastgood, ROOT } from './support/cli.ts';
import { docsPage } from './support/docs.ts';
import { forgeScenario, TOKEN } from './support/forge-scenario.ts';
import { git, writeFile } from './support/git.ts';
import { HOSTS } from './support/hosts-under-test.ts';

/**
 * lastgood as a GitLab CI/CD job (issue 23): the job of templates/gitlab-ci/lastgood.gitlab-ci.yml,
 * which docs/hosts.md shows, run as GitLab's runner runs it — its script through a shell, with the
 * variables GitLab sets for a pipeline started by a trigger webhook (CI_PIPELINE_SOURCE=trigger,
 * TRIGGER_PAYLOAD = the file holding the posted body, CI_JOB_TOKEN) — against the GitLab emulator.
 */

const GITLAB = HOSTS.find((h) => h.provider === 'gitlab')!;
const TEMPLATE = path.join(ROOT, 'templates', 'gitlab-ci', 'lastgood.gitlab-ci.yml');
const run = promisify(execFile);

/** Flux's event as its `generic` provider posts it (the body itself, no dispatch wrapper), sent `at`. */
const fluxEvent = (revision: string, at = '2026-11-01T12:00:00Z') => JSON.stringify({
  involvedObject: { kind: 'Kustomization', namespace: 'flux-system', name: 'apps', uid: '1d2e1a0c-6f0e-4c55-9d8e-6b7a9b0b1f2a', apiVersion: 'kustomize.toolkit.fluxcd.io/v1', resourceVersion: '9184213' },
  severity: 'error',
  timestamp: at,
  message: "health check failed after 5m0s: timeout waiting for: [Deployment/prod/podinfo status: 'InProgress']",
  reason: 'HealthCheckFailed',
  metadata: { revision: `main@sha1:${revision}` },
  reportingController: 'kustomize-controller',
  reportingInstance: 'kustomize-controller-7b5d9c8f4d-x2kqv',
});

test('the GitLab CI job docs/hosts.md shows is the template, and the template is a job GitLab runs on a trigger', (t) => {
  const readme = docsPage('hosts');
  const template = readFileSync(TEMPLATE, 'utf8');
  t.true(readme.includes(template.trim()), 'docs/hosts.md shows templates/gitlab-ci/lastgood.gitlab-ci.yml as it is');
  const job = (yaml.load(template) as { lastgood: { rules: Array<{ if: string }>; script: string[] } }).lastgood;
  t.regex(job.rules[0]!.if, /\$CI_PIPELINE_SOURCE == "trigger"/);
  t.true(job.script.some((line) => line.includes('--event "$TRIGGER_PAYLOAD"')));
});

test('the job, run as the runner runs it on a webhook trigger, opens the merge request from the Flux event', async (t) => {
  const s = await forgeScenario(t, GITLAB, { auth: '{ tokenEnv: LASTGOOD_GITLAB_TOKEN }' });
  // the job runs on the real clock: the event is a minute old
  const payload = writeFile(s.dir, 'trigger-payload.json', fluxEvent(s.bad, new Date(Date.now() - 60_000).toISOString().replace(/\.\d+Z$/, 'Z')));
  const job = (yaml.load(readFileSync(TEMPLATE, 'utf8')) as { lastgood: { script: string[] } }).lastgood;
  // the image's /app is this checkout
  const script = job.script.map((line) => line.replace('node /app/bin/lastgood.js', `"${process.execPath}" "${BIN}"`)).join('\n');
  const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', CI: 'true', GITLAB_CI: 'true', CI_PIPELINE_SOURCE: 'trigger', TRIGGER_PAYLOAD: payload, CI_JOB_TOKEN: 'glcbt-64_not-used-for-merge-requests', LASTGOOD_GITLAB_TOKEN: TOKEN };
  // LASTGOOD_PROGRESS: a job log is no terminal; set, the fetch's progress shows as with the git provider (threshold 0 here)
  const jobLog = await run('bash', ['-e', '-c', script], { cwd: s.dir, env: { ...env, LASTGOOD_PROGRESS: '1', LASTGOOD_PROGRESS_AFTER_MS: '0' } });
  // the job log says what happened and where the merge request is; the JSON document is the artifact
  t.regex(jobLog.stdout, /^podinfo: FAILED/m);
  t.regex(jobLog.stdout, new RegExp(`pull request: ${s.emulator.url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/acme/gitops/-/merge_requests/1`));
  t.regex(jobLog.stderr, /^lastgood: fetching from [^:]+:\d+: \d+ KiB, done in \d+\.\d s$/m, 'progress on the gitlab provider too');
  const report = JSON.parse(readFileSync(path.join(s.dir, 'lastgood-report.json'), 'utf8')) as { targets: Array<{ name: string; action: string; pullRequest?: string; bad: string[] }> };
  t.is(report.targets.length, 1);
  t.is(report.targets[0]!.action, 'revert');
  t.deepEqual(report.targets[0]!.bad, [s.bad]);
  t.is(report.targets[0]!.pullRequest, `${s.emulator.url}/acme/gitops/-/merge_requests/1`);
  t.is(s.emulator.model.requests.length, 1);
  t.deepEqual(s.emulator.violations, []);
});

test('an event about no configured target is a no-op: exit 0, nothing written', async (t) => {
  const s = await forgeScenario(t, GITLAB);
  const other = JSON.parse(fluxEvent(s.bad)) as { involvedObject: { name: string } };
  other.involvedObject.name = 'unrelated';
  const payload = writeFile(s.dir, 'other.json', JSON.stringify(other));
  const r = await lastgood(['run', '--config', s.config, '--event', payload, '--json', '--now', '2026-11-01T12:05:00Z'], { env: s.env });
  t.is(r.code, 0, r.stderr);
  t.deepEqual(JSON.parse(r.stdout), { targets: [] });
  t.regex(r.stderr, /nothing to do: no configured target lists/);
  t.is(s.emulator.log.length, 0);
});

test('CI_JOB_TOKEN cannot open merge requests: said plainly, exit 2, nothing pushed or opened', async (t) => {
  const s = await forgeScenario(t, GITLAB, { auth: '{ tokenEnv: CI_JOB_TOKEN }', env: { CI_JOB_TOKEN: TOKEN } });
  const payload = writeFile(s.dir, 'trigger-payload.json', fluxEvent(s.bad));
  const r = await lastgood(['run', '--config', s.config, '--event', payload, '--json', '--now', '2026-11-01T12:05:00Z'], { env: s.env });
  t.is(r.code, 2, r.stderr + r.stdout);
  t.regex(r.stderr, /CI job token \(CI_JOB_TOKEN\) cannot open merge requests/);
  t.regex(r.stderr, /project access token/);
  t.false(r.stderr.includes(TOKEN));
  t.is(s.emulator.model.requests.length, 0);
  t.is(s.server.log.filter((x) => x.service === 'git-receive-pack' && x.method === 'POST').length, 0, 'nothing pushed');
  t.throws(() => git(s.bare, 'rev-parse', '--verify', '-q', `refs/heads/lastgood/podinfo/${s.bad.slice(0, 12)}`));
});
