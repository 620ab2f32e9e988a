import test from 'ava';
import type { Observed } from '../src/observe/types.ts';
import { reportJson } from '../src/report/text.ts';
import { forgeScenario, TOKEN } from './support/forge-scenario.ts';
import { HOSTS } from './support/hosts-under-test.ts';
import { kustomization } from './support/objects.ts';

/**
 * Each host's credentials as it expects them (repo.auth names them; the same secret serves git and
 * the API), and the token in no request text, whatever the evidence carried.
 */

const host = (provider: string) => HOSTS.find((h) => h.provider === provider)!;
const schemes = (s: Awaited<ReturnType<typeof forgeScenario>>) => [...new Set(s.emulator.log.filter((r) => !r.git).map((r) => r.auth))];

test('GitLab: an access token goes in PRIVATE-TOKEN', async (t) => {
  const s = await forgeScenario(t, host('gitlab'));
  t.falsy((await s.runOnce()).targets[0]!.error);
  t.deepEqual(schemes(s), ['PRIVATE-TOKEN']);
});

test('GitLab: with scheme bearer, an OAuth token goes as Bearer', async (t) => {
  const s = await forgeScenario(t, host('gitlab'), { auth: '{ tokenEnv: LASTGOOD_GIT_TOKEN, scheme: bearer }' });
  t.falsy((await s.runOnce()).targets[0]!.error);
  t.deepEqual(schemes(s), ['Bearer']);
});

test('Bitbucket Cloud: an access token as Bearer; an app password with its user name as Basic', async (t) => {
  const token = await forgeScenario(t, host('bitbucket'));
  t.falsy((await token.runOnce()).targets[0]!.error);
  t.deepEqual(schemes(token), ['Bearer']);
  const app = await forgeScenario(t, host('bitbucket'), { auth: '{ username: lastgood-bot, passwordEnv: LASTGOOD_GIT_TOKEN }' });
  t.falsy((await app.runOnce()).targets[0]!.error);
  t.deepEqual(schemes(app), ['Basic']);
});

test('Bitbucket Data Center: an HTTP access token as Bearer', async (t) => {
  const s = await forgeScenario(t, host('bitbucket-server'), { auth: '{ tokenEnv: LASTGOOD_GIT_TOKEN, scheme: bearer }' });
  t.falsy((await s.runOnce()).targets[0]!.error);
  t.deepEqual(schemes(s), ['Bearer']);
});

test('Gitea: a token as Bearer; Azure DevOps: a personal access token as Basic', async (t) => {
  const gitea = await forgeScenario(t, host('gitea'));
  t.falsy((await gitea.runOnce()).targets[0]!.error);
  t.deepEqual(schemes(gitea), ['Bearer']);
  const azure = await forgeScenario(t, host('azure-devops'));
  t.falsy((await azure.runOnce()).targets[0]!.error);
  t.deepEqual(schemes(azure), ['Basic']);
});

for (const h of HOSTS) {
  test(`${h.provider}: a token that evidence text carries never reaches the request's title, description or comments`, async (t) => {
    const s = await forgeScenario(t, h);
    const leaky: Observed[] = [{ object: kustomization({ attempted: `main@sha1:${s.bad}`, applied: `main@sha1:${s.good}`, ready: 'False', message: `health check failed: pulling with ${TOKEN} was refused` }) as Observed['object'], source: 'test' }];
    const report = await s.runOnce(leaky);
    const outcome = report.targets[0]!;
    t.falsy(outcome.error, JSON.stringify(outcome.error));
    const [pr] = s.emulator.model.requests;
    t.regex(pr!.body, /pulling with/, 'the evidence is there');
    t.false(JSON.stringify(s.emulator.model.requests).includes(TOKEN));
    t.false(reportJson(report).includes(TOKEN), 'nor the JSON report');
  });
}
