import test from 'ava';
import fc from 'fast-check';
import { CREDENTIAL_RULES, REDACTED } from '../src/scrub-rules.ts';
import { redact } from '../src/scrub.ts';

/**
 * Issue 35, "Secrets the scrubber does not know": every credential shape of src/scrub-rules.ts
 * (gitleaks' rules and lastgood's own) is removed from outside text wherever it lands (an event
 * message, a serialised document, a URL) and the text around it survives; ordinary text (names,
 * image tags, revisions) is left alone; redacting serialised JSON keeps it valid, and is idempotent.
 *
 * The fake values are built here from pieces (a prefix and a seeded run of characters), so that no
 * real secret is in this file and secret scanners find no whole token in it.
 */

/** A seeded run of `length` characters of `alphabet`. */
function fake(alphabet: string, length: number, seed: number): string {
  let x = (seed * 2654435761) >>> 0 || 1;
  let out = '';
  for (let i = 0; i < length; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    out += alphabet[(x >>> 16) % alphabet.length];
  }
  return out;
}

const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const LOWER = 'abcdefghijklmnopqrstuvwxyz';
const DIGITS = '0123456789';
const ALNUM = UPPER + LOWER + DIGITS;
const HEX = '0123456789abcdef';
const B64 = `${ALNUM}+/`;
const B64URL = `${ALNUM}_-`;
const BASE32 = `${LOWER}234567`;
const BECH32 = 'QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L';

// ---- the shapes --------------------------------------------------------------------------------

/** Where a shape is put: on a line of its own, inside a sentence, in a serialised document, in a URL's query. */
type Place = 'line' | 'inline' | 'json' | 'url';

interface Shape {
  name: string;
  /** The rule that takes it (an id of CREDENTIAL_RULES). */
  rule: string;
  /** The credential as it appears in outside text. */
  text: string;
  /** What the text becomes; the marker when not given. */
  redacted?: string;
  /** The part that must never be seen; the whole text when not given. */
  secret?: string;
  /** Where it is tried; everywhere when not given. */
  places?: Place[];
}

const NOT_IN_URL: Place[] = ['line', 'inline', 'json'];

// An Azure DevOps PAT (legacy: 52 characters of base32), with a digit so that it is a token-like URL user
const adoPat = `${fake(BASE32, 50, 70)}7q`;
const adoPatNew = `${fake(ALNUM, 52, 71)}JQQJ99${fake(ALNUM, 18, 72)}AZDO${fake(ALNUM, 4, 73)}`;
const pemBody = [fake(B64, 64, 80), fake(B64, 64, 81), `${fake(B64, 40, 82)}==`].join('\n');
const pemKey = `-----BEGIN ${'RSA PRIVATE'} KEY-----\n${pemBody}\n-----END ${'RSA PRIVATE'} KEY-----`;
const pgpKey = `-----BEGIN ${'PGP PRIVATE KEY'} BLOCK-----\n\n${pemBody}\n=${fake(B64, 4, 83)}\n-----END ${'PGP PRIVATE KEY'} BLOCK-----`;

const SHAPES: Shape[] = [
  // the shapes the scrubber knew (test/scrub.test.ts has them too)
  { name: 'GitHub classic PAT', rule: 'github-pat', text: `ghp_${fake(ALNUM, 36, 1)}` },
  { name: 'GitHub OAuth token', rule: 'github-oauth', text: `gho_${fake(ALNUM, 36, 2)}` },
  { name: 'GitHub user-to-server token', rule: 'github-app-token', text: `ghu_${fake(ALNUM, 36, 3)}` },
  { name: 'GitHub server-to-server token', rule: 'github-app-token', text: `ghs_${fake(ALNUM, 36, 4)}` },
  { name: 'GitHub refresh token', rule: 'github-refresh-token', text: `ghr_${fake(ALNUM, 36, 5)}` },
  { name: 'GitHub fine-grained PAT', rule: 'github-fine-grained-pat', text: `github_pat_${fake(ALNUM, 22, 6)}_${fake(ALNUM, 59, 7)}` },
  { name: 'GitLab PAT', rule: 'gitlab-pat', text: `glpat-${fake(B64URL, 20, 8)}` },
  { name: 'GitLab routable PAT', rule: 'gitlab-pat', text: `glpat-${fake(B64URL, 27, 9)}.01${fake(LOWER + DIGITS, 7, 10)}` },
  { name: 'GitLab deploy token', rule: 'gitlab-deploy-token', text: `gldt-${fake(B64URL, 20, 11)}` },
  { name: 'GitLab runner token', rule: 'gitlab-runner-authentication-token', text: `glrt-t1_${fake(B64URL, 27, 12)}.01${fake(LOWER + DIGITS, 7, 13)}` },
  { name: 'GitLab pipeline trigger token', rule: 'gitlab-ptt', text: `glptt-${fake(HEX, 40, 14)}` },
  { name: 'GitLab CI/CD job token', rule: 'gitlab-cicd-job-token', text: `glcbt-64_${fake(B64URL, 20, 15)}` },
  { name: 'GitLab OAuth application secret', rule: 'gitlab-oauth-app-secret', text: `gloas-${fake(HEX, 64, 16)}` },
  { name: 'Slack bot token', rule: 'lastgood.slack-token', text: `xoxb-${fake(DIGITS, 13, 17)}-${fake(DIGITS, 13, 18)}-${fake(ALNUM, 24, 19)}` },
  { name: 'Slack user token', rule: 'lastgood.slack-token', text: `xoxp-${fake(DIGITS, 10, 20)}-${fake(DIGITS, 10, 21)}-${fake(DIGITS, 13, 22)}-${fake(HEX, 32, 23)}` },
  { name: 'Slack incoming webhook', rule: 'slack-webhook-url', text: `https://hooks.slack.com/services/T${fake(UPPER + DIGITS, 8, 24)}/B${fake(UPPER + DIGITS, 8, 25)}/${fake(ALNUM, 24, 26)}`, redacted: `https://hooks.slack.com/${REDACTED}`, places: NOT_IN_URL },
  { name: 'AWS access key id', rule: 'aws-access-token', text: `AKIA${fake(UPPER + '234567', 16, 27)}` },
  { name: 'AWS secret access key (key=value)', rule: 'lastgood.secret-parameter', text: `aws_secret_access_key=${fake(B64, 40, 28)}`, redacted: `aws_secret_access_key=${REDACTED}` },
  { name: 'JWT', rule: 'jwt', text: `eyJ${fake(B64URL, 30, 29)}.eyJ${fake(B64URL, 40, 30)}.${fake(B64URL, 43, 31)}` },
  { name: 'password in a URL', rule: 'lastgood.url-userinfo', text: `https://x-access-token:${fake(ALNUM, 20, 32)}@github.com/acme/gitops.git`, redacted: `https://${REDACTED}@github.com/acme/gitops.git`, places: NOT_IN_URL },
  { name: 'token as a URL user', rule: 'lastgood.url-token-user', text: `https://${fake(ALNUM, 20, 33)}7@gitlab.example.com/acme/gitops.git`, redacted: `https://${REDACTED}@gitlab.example.com/acme/gitops.git`, places: NOT_IN_URL },
  { name: 'Authorization: Bearer', rule: 'lastgood.authorization-header', text: `Authorization: Bearer ${fake(B64URL, 32, 34)}`, redacted: `Authorization: ${REDACTED}`, places: NOT_IN_URL },
  { name: 'Authorization: Basic', rule: 'lastgood.authorization-header', text: `Authorization: Basic ${Buffer.from(`deploy:${fake(ALNUM, 16, 35)}`).toString('base64')}`, redacted: `Authorization: ${REDACTED}`, places: NOT_IN_URL },
  { name: 'Bearer credential', rule: 'lastgood.bearer', text: `Bearer ${fake(B64URL, 32, 36)}`, redacted: `Bearer ${REDACTED}`, places: NOT_IN_URL },
  { name: 'token credential', rule: 'lastgood.basic-or-token', text: `token ${fake(ALNUM, 30, 37)}9`, redacted: `token ${REDACTED}`, places: NOT_IN_URL },
  // the cookie rule takes the rest of its line, so it is not tried inside a sentence
  { name: 'Cookie header', rule: 'lastgood.cookie-header', text: `Cookie: session=${fake(ALNUM, 24, 38)}; theme=dark`, redacted: `Cookie: ${REDACTED}`, places: ['line', 'json'] },
  { name: 'password parameter', rule: 'lastgood.secret-parameter', text: `password=${fake(ALNUM, 18, 39)}`, redacted: `password=${REDACTED}` },
  { name: 'access_token parameter', rule: 'lastgood.secret-parameter', text: `access_token=${fake(ALNUM, 24, 40)}`, redacted: `access_token=${REDACTED}` },
  { name: 'client_secret field', rule: 'lastgood.secret-field', text: `client_secret: ${fake(ALNUM, 24, 41)}`, redacted: `client_secret: ${REDACTED}`, places: NOT_IN_URL },
  { name: 'PEM private key', rule: 'private-key', text: pemKey, redacted: '[redacted private key]', secret: pemBody.split('\n')[0]!, places: NOT_IN_URL },

  // the shapes that passed through (issue 35)
  { name: 'GitLab feed token', rule: 'gitlab-feed-token', text: `glft-${fake(B64URL, 20, 42)}` },
  { name: 'GitLab Kubernetes agent token', rule: 'gitlab-kubernetes-agent-token', text: `glagent-${fake(B64URL, 50, 43)}` },
  { name: 'GitLab SCIM token', rule: 'gitlab-scim-token', text: `glsoat-${fake(B64URL, 20, 44)}` },
  { name: 'Slack app-level token', rule: 'slack-app-token', text: `xapp-1-A${fake(DIGITS, 10, 45)}-${fake(DIGITS, 13, 46)}-${fake(HEX, 64, 47)}` },
  { name: 'npm access token', rule: 'npm-access-token', text: `npm_${fake(ALNUM, 36, 48)}` },
  { name: 'GCP API key', rule: 'gcp-api-key', text: `AIza${'Sy'}${fake(B64URL, 33, 49)}` },
  { name: 'Vault service token', rule: 'vault-service-token', text: `hvs.${'CAESI'}${fake(B64URL, 90, 50)}` },
  { name: 'Grafana service account token', rule: 'grafana-service-account-token', text: `glsa_${fake(ALNUM, 32, 51)}_${fake(HEX, 8, 52)}` },
  { name: 'Docker Hub PAT', rule: 'lastgood.dockerhub-token', text: `dckr_pat_${fake(B64URL, 27, 53)}` },
  { name: 'OpenAI project key', rule: 'openai-api-key', text: `sk-proj-${fake(B64URL, 74, 54)}${'T3Blbk'}FJ${fake(B64URL, 74, 55)}` },
  { name: 'Anthropic API key', rule: 'anthropic-api-key', text: `sk-ant-${'api03'}-${fake(B64URL, 93, 56)}AA` },
  { name: 'Azure AD client secret', rule: 'azure-ad-client-secret', text: `${fake(ALNUM, 3, 57)}8Q~${fake(`${ALNUM}_~.-`, 33, 58)}x` },
  {
    name: 'Azure storage connection string',
    rule: 'lastgood.azure-connection-string-key',
    text: `DefaultEndpointsProtocol=https;AccountName=lastgoodstore;AccountKey=${fake(B64, 86, 59)}==;EndpointSuffix=core.windows.net`,
    redacted: `DefaultEndpointsProtocol=https;AccountName=lastgoodstore;AccountKey=${REDACTED};EndpointSuffix=core.windows.net`,
    places: NOT_IN_URL,
  },
  { name: 'Bitbucket app password', rule: 'lastgood.bitbucket-app-password', text: `ATBB${fake(ALNUM, 32, 60)}` },
  { name: 'Stripe live secret key', rule: 'stripe-access-token', text: `sk_${'live'}_${fake(ALNUM, 24, 61)}` },
  { name: 'SendGrid API key', rule: 'sendgrid-api-token', text: `SG.${fake(B64URL, 22, 62)}.${fake(B64URL, 43, 63)}` },
  { name: 'Azure DevOps PAT in an environment variable', rule: 'lastgood.azure-devops-pat', text: `AZURE_DEVOPS_EXT_PAT=${adoPat}`, redacted: `AZURE_DEVOPS_EXT_PAT=${REDACTED}`, secret: adoPat },
  { name: 'Azure DevOps PAT in a YAML field', rule: 'lastgood.azure-devops-pat', text: `pat: ${adoPat}`, redacted: `pat: ${REDACTED}`, secret: adoPat, places: NOT_IN_URL },
  { name: 'Azure DevOps PAT in a quoted field', rule: 'lastgood.azure-devops-pat', text: `personalAccessToken: "${adoPat}"`, redacted: `personalAccessToken: "${REDACTED}"`, secret: adoPat, places: NOT_IN_URL },
  { name: 'Azure DevOps PAT (84 characters)', rule: 'lastgood.azure-devops-pat', text: `ado_pat = '${adoPatNew}'`, redacted: `ado_pat = '${REDACTED}'`, secret: adoPatNew, places: NOT_IN_URL },
  { name: 'Azure DevOps PAT as a URL password', rule: 'lastgood.url-userinfo', text: `https://build:${adoPat}@dev.azure.com/acme/gitops/_git/gitops`, redacted: `https://${REDACTED}@dev.azure.com/acme/gitops/_git/gitops`, secret: adoPat, places: NOT_IN_URL },
  { name: 'Azure DevOps PAT as a URL user', rule: 'lastgood.url-token-user', text: `https://${adoPat}@dev.azure.com/acme/_git/gitops`, redacted: `https://${REDACTED}@dev.azure.com/acme/_git/gitops`, secret: adoPat, places: NOT_IN_URL },
  { name: 'Azure DevOps PAT after Authorization: Basic', rule: 'lastgood.authorization-header', text: `Authorization: Basic ${Buffer.from(`:${adoPat}`).toString('base64')}`, redacted: `Authorization: ${REDACTED}`, places: NOT_IN_URL },

  // more of gitleaks' prefixed rules
  { name: 'PGP private key block', rule: 'private-key', text: pgpKey, redacted: '[redacted private key]', secret: pemBody.split('\n')[0]!, places: NOT_IN_URL },
  { name: 'GitLab feature flag client token', rule: 'gitlab-feature-flag-client-token', text: `glffct-${fake(B64URL, 20, 64)}` },
  { name: 'GitLab incoming mail token', rule: 'gitlab-incoming-mail-token', text: `glimt-${fake(B64URL, 25, 65)}` },
  { name: 'GitLab runner registration token', rule: 'gitlab-rrt', text: `GR1348941${fake(B64URL, 20, 66)}` },
  { name: 'GitLab session cookie', rule: 'gitlab-session-cookie', text: `_gitlab_session=${fake(HEX, 32, 67)}`, redacted: `_gitlab_session=${REDACTED}` },
  { name: 'Slack configuration access token', rule: 'slack-config-access-token', text: `xoxe.xoxp-1-${fake(ALNUM, 166, 68)}` },
  { name: 'Vault legacy service token', rule: 'vault-service-token', text: `s.Xq7${fake(ALNUM, 21, 69)}` },
  { name: 'Vault batch token', rule: 'vault-batch-token', text: `hvb.${'AAAAAQ'}${fake(B64URL, 140, 74)}` },
  { name: 'Grafana API key', rule: 'grafana-api-key', text: `eyJrIjoi${fake(ALNUM, 72, 75)}==` },
  { name: 'Grafana Cloud API token', rule: 'grafana-cloud-api-token', text: `glc_${fake(B64, 60, 76)}=` },
  { name: 'Docker organisation access token', rule: 'lastgood.dockerhub-token', text: `dckr_oat_${fake(B64URL, 32, 77)}` },
  { name: 'OpenAI legacy key', rule: 'openai-api-key', text: `sk-${fake(ALNUM, 20, 78)}${'T3Blbk'}FJ${fake(ALNUM, 20, 79)}` },
  { name: 'Anthropic admin key', rule: 'anthropic-admin-api-key', text: `sk-ant-${'admin01'}-${fake(B64URL, 93, 84)}AA` },
  {
    name: 'Service Bus connection string',
    rule: 'lastgood.azure-connection-string-key',
    text: `Endpoint=sb://lastgood.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=${fake(B64, 43, 85)}=`,
    redacted: `Endpoint=sb://lastgood.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=${REDACTED}`,
    places: NOT_IN_URL,
  },
  { name: 'Atlassian API token', rule: 'atlassian-api-token', text: `ATATT3${fake(B64URL, 186, 86)}=` },
  { name: 'Stripe restricted key', rule: 'stripe-access-token', text: `rk_${'live'}_${fake(ALNUM, 24, 87)}` },
  { name: 'age secret key', rule: 'age-secret-key', text: `AGE-SECRET-KEY-1${fake(BECH32, 58, 88)}` },
  { name: 'OpenShift user token', rule: 'openshift-user-token', text: `sha256~${fake(B64URL, 43, 89)}` },
  { name: 'Terraform Cloud API token', rule: 'hashicorp-tf-api-token', text: `${fake(ALNUM, 14, 90)}.atlasv1.${fake(B64URL, 67, 91)}` },
  { name: 'DigitalOcean PAT', rule: 'digitalocean-pat', text: `dop_v1_${fake(HEX, 64, 92)}` },
  { name: 'DigitalOcean OAuth access token', rule: 'digitalocean-access-token', text: `doo_v1_${fake(HEX, 64, 93)}` },
  { name: 'DigitalOcean OAuth refresh token', rule: 'digitalocean-refresh-token', text: `dor_v1_${fake(HEX, 64, 94)}` },
  { name: 'Pulumi access token', rule: 'pulumi-api-token', text: `pul-${fake(HEX, 40, 95)}` },
  { name: 'Doppler token', rule: 'doppler-api-token', text: `dp.pt.${fake(ALNUM, 43, 96)}` },
  { name: 'Databricks token', rule: 'databricks-api-token', text: `dapi${fake(HEX, 32, 97)}` },
  { name: 'PyPI upload token', rule: 'pypi-upload-token', text: `pypi-${'AgEIcHlwaS5vcmc'}${fake(B64URL, 70, 98)}` },
  { name: 'Sentry user token', rule: 'sentry-user-token', text: `sntryu_${fake(HEX, 64, 99)}` },
  { name: 'Hugging Face token', rule: 'huggingface-access-token', text: `hf_${fake(UPPER + LOWER, 34, 100)}` },
  { name: 'Heroku API key', rule: 'heroku-api-key-v2', text: `HRKU-AA${fake(B64URL, 58, 101)}` },
];

/** Rules tested by a case of their own below, not by the table. */
const TESTED_APART = ['lastgood.private-key-unterminated'];

// ---- where they are put ----------------------------------------------------------------------

const PLACES: Record<Exclude<Place, 'json'>, (credential: string) => string> = {
  line: (c) => `Warning BackOff pod/api-7d9c4 container printed:\n${c}\nBack-off restarting failed container api`,
  inline: (c) => `Warning BackOff pod/api-7d9c4 container printed ${c} before exiting (code 1)`,
  url: (c) => `GET https://ci.example.com/api/v4/jobs/1234/trace?ref=${c}&tail=20 returned 403`,
};

/** An event as the cluster gives it, the credential in its message (after a JSON escape) and in a field. */
function eventDocument(credential: string) {
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: 'api-7d9c4.17a2b3c4d5e6f7a8', namespace: 'prod' },
    reason: 'BackOff',
    message: `container printed:\n${credential}\tthen exited`,
    data: { value: credential },
  };
}

const ruleById = new Map(CREDENTIAL_RULES.map((r) => [r.id, r]));

for (const shape of SHAPES) {
  test(`redact: ${shape.name}`, (t) => {
    const redacted = shape.redacted ?? REDACTED;
    const secret = shape.secret ?? shape.text;
    const rule = ruleById.get(shape.rule);
    t.truthy(rule, `no rule ${shape.rule}`);
    t.not(shape.text.replace(rule!.pattern, rule!.replacement), shape.text, `${shape.rule} takes it`);
    for (const place of shape.places ?? ['line', 'inline', 'json', 'url']) {
      if (place === 'json') {
        const out = redact(JSON.stringify(eventDocument(shape.text), null, 2));
        t.false(out.includes(secret), `json: ${out}`);
        t.deepEqual(JSON.parse(out), eventDocument(redacted), 'json: the document is intact around it');
      } else {
        const out = redact(PLACES[place](shape.text));
        t.is(out, PLACES[place](redacted), place);
        t.false(out.includes(secret), place);
      }
    }
  });
}

test('every rule has a case', (t) => {
  const tested = new Set([...SHAPES.map((s) => s.rule), ...TESTED_APART]);
  t.deepEqual(CREDENTIAL_RULES.map((r) => r.id).filter((id) => !tested.has(id)), []);
  t.is(new Set(CREDENTIAL_RULES.map((r) => r.id)).size, CREDENTIAL_RULES.length, 'ids are unique');
});

test('the 17 shapes of issue 35 each have a case', (t) => {
  const names = ['GitLab feed token', 'GitLab Kubernetes agent token', 'GitLab SCIM token', 'Slack app-level token', 'npm access token', 'GCP API key', 'Vault service token', 'Grafana service account token', 'Docker Hub PAT', 'OpenAI project key', 'Anthropic API key', 'Azure AD client secret', 'Azure storage connection string', 'Bitbucket app password', 'Stripe live secret key', 'SendGrid API key', 'Azure DevOps PAT in an environment variable'];
  t.is(names.length, 17);
  t.deepEqual(names.filter((n) => !SHAPES.some((s) => s.name === n)), []);
});

test('a rule\'s keywords are in each of its matches (they choose the rules that run)', (t) => {
  const texts = SHAPES.map((s) => s.text);
  for (const rule of CREDENTIAL_RULES) {
    t.true(rule.pattern.global, rule.id);
    t.true(rule.keywords.length > 0 && rule.keywords.every((k) => k === k.toLowerCase()), rule.id);
    for (const text of texts) {
      for (const m of text.matchAll(rule.pattern)) {
        t.true(rule.keywords.some((k) => m[0].toLowerCase().includes(k)), `${rule.id}: ${m[0]}`);
      }
    }
  }
});

test('a private key block cut off before its END is removed up to where its base64 ends', (t) => {
  const cut = `-----BEGIN ${'OPENSSH PRIVATE'} KEY-----\n${pemBody}`;
  const out = redact(`container printed:\n${cut}`);
  t.is(out, 'container printed:\n[redacted private key]');
  const json = redact(JSON.stringify({ message: `printed:\n${cut}` }));
  t.deepEqual(JSON.parse(json), { message: 'printed:\n[redacted private key]' });
  t.true(ruleById.has('lastgood.private-key-unterminated'));
});

test('a token right after a JSON escape, an escaped backslash or a quote is removed; JSON stays valid', (t) => {
  for (const shape of SHAPES) {
    const secret = shape.secret ?? shape.text;
    for (const edge of ['\n', '\t', '\r', '\b', '\f', '\\', '"', ' ']) {
      const json = redact(JSON.stringify({ message: `${edge}${shape.text}${edge}` }));
      const parsed = JSON.parse(json) as { message: string };
      t.false(parsed.message.includes(secret), `${shape.name} after ${JSON.stringify(edge)}: ${json}`);
    }
    for (const edge of ['\u0001', '/', '\u2028', '\\\\\\', 'é']) t.notThrows(() => JSON.parse(redact(JSON.stringify(`${edge}${shape.text}${edge}`))), shape.name);
  }
});

// ---- what is not a secret --------------------------------------------------------------------

const ORDINARY = [
  'Back-off restarting failed container api in pod api-7d9c4_prod(0b9c2f6e-1d3a-4c5b-9e8f-7a6b5c4d3e2f)',
  'registry.example.com/app:1.2.3',
  'Successfully pulled image "registry.example.com/team/app:1.2.3" in 2.1s (2.1s including waiting)',
  `ghcr.io/fluxcd/source-controller:v1.4.1@sha256:${fake(HEX, 64, 200)}`,
  `main@sha1:${fake(HEX, 40, 201)}`,
  `revert ${fake(HEX, 40, 202)} (release 6.1.0)`,
  'Service sk-prod-api in namespace payments has no endpoints',
  'deployment.apps/sk-prod-api scaled to 3; configmap/sk-live-config unchanged',
  'the prefix AIza alone', 'a short AIzaSyShort key', 'AIza',
  'npm_config_cache=/home/runner/.npm',
  'hvs. alone', 'reason s.ProgressDeadlineExceeded', 'deployments.apps and statefulsets.apps',
  'glagent-prod-0 is ready', 'glft-reader', 'glsa_reader', 'xapp-config', 'dckr_pat_ alone', 'dckr_pat_short',
  'SG.example.com', 'ATBB team notes', 'sk_live_mode', 'rk_test_suite', 'sk-ant-demo', 'sk-proj-demo',
  'AccountKey=<your-account-key>', 'AccountName=store;AccountKey=;',
  'patch: {"spec":{"replicas":2}}', 'path: /var/lib/app', 'compat=true', 'pat: true', 'pat: ${{ secrets.AZURE_PAT }}',
  `configmap/${fake(BASE32, 52, 203)}`,
  'Q~ marks the spot',
  'https://p3-juejin.byteimg.com/tos-cn-i-k3u1fbpfcp/6a9e704af49b4380bb686f0c96d33b81~tplv-k3u1fbpfcp-watermark.image',
  '~'.repeat(40),
  'a bare eyJ prefix', 'sha256~ alone', 'AGE-SECRET-KEY-1 alone', 'hf_cache', 'dapi-service', 'pul-request', 'dp.pt. alone',
  'ProgressDeadlineExceeded', 'ReplicaSet "podinfo-7d9c" has timed out progressing.',
  'Liveness probe failed: HTTP probe failed with statuscode: 503',
  'Basic authentication is required for this token endpoint',
  'health check failed after 5m0s: timeout waiting for: [Deployment/prod/podinfo status: \'InProgress\']',
  'ssh://git@github.com/example/repo', 'oci://ghcr.io/stefanprodan/charts/podinfo',
];

test('ordinary text is left as it is: words, image tags, revisions, Kubernetes names, bare prefixes', (t) => {
  for (const text of ORDINARY) t.is(redact(text), text);
  t.is(redact(JSON.stringify({ items: ORDINARY })), JSON.stringify({ items: ORDINARY }));
});

test('JSON structure under a secret-named key stays JSON (a literal, an object, an array)', (t) => {
  const doc = { password: 123456, cookie: { session: 1 }, authorization: null, 'x-api-key': [1, 2], client_secret: true, 'set-cookie': -1.5e3 };
  for (const text of [JSON.stringify(doc), JSON.stringify(doc, null, 2)]) {
    const out = redact(text);
    t.deepEqual(JSON.parse(out), doc, out);
  }
  // a string value goes, as before
  t.deepEqual(JSON.parse(redact(JSON.stringify({ password: 'hunter2-but-longer', cookie: 'a=b' }))), { password: REDACTED, cookie: REDACTED });
});

// ---- properties ------------------------------------------------------------------------------

/** Text made of credentials, near-misses, escapes and separators, and arbitrary strings. */
const fragment = fc.oneof(
  fc.constantFrom(
    ...SHAPES.map((s) => s.text), ...ORDINARY,
    '\n', '\t', '\r', '\b', '\f', '\\', '\\\\', '"', "'", '/', '\u2028', '\u0000', ' ', '=', ':', ': ', '&', '@', ';', ',', '{', '}', '[', ']', '123', 'null',
    'https://', 'token ', 'Bearer ', 'Basic ', 'pat: ', 'pat=', 'password=', 'password: ', 'Authorization: ', 'Cookie: ', 'AccountKey=',
    `-----BEGIN ${'RSA PRIVATE'} KEY-----`, `-----END ${'RSA PRIVATE'} KEY-----`, 'npm_', 'Q~', 's.', 'sk_live_', 'xox', 'eyJ',
  ),
  fc.string(),
  fc.string({ unit: 'binary', maxLength: 8 }),
);
const outsideText = fc.array(fragment, { maxLength: 12 }).map((parts) => parts.join(''));

test('property: redacting a JSON-serialised string leaves valid JSON, and a second pass changes nothing', (t) => {
  fc.assert(
    fc.property(outsideText, (text) => {
      const once = redact(JSON.stringify(text));
      const parsed: unknown = JSON.parse(once);
      const raw = redact(text);
      return typeof parsed === 'string' && redact(once) === once && redact(raw) === raw;
    }),
    { numRuns: 2000 },
  );
  t.pass();
});

test('property: redacting a JSON document with secret-named keys leaves valid JSON, idempotent', (t) => {
  const key = fc.oneof(fc.constantFrom('password', 'cookie', 'set-cookie', 'authorization', 'x-api-key', 'client_secret', 'pat', 'token', 'AccountKey', 'message', 'value'), fc.string());
  const value = fc.oneof(outsideText, fc.jsonValue({ maxDepth: 2 }));
  const doc = fc.dictionary(key, fc.oneof(value, fc.dictionary(key, value, { maxKeys: 3 }), fc.array(value, { maxLength: 3 })), { maxKeys: 6 });
  fc.assert(
    fc.property(doc, fc.boolean(), (d, pretty) => {
      const once = redact(JSON.stringify(d, null, pretty ? 2 : undefined));
      JSON.parse(once);
      return redact(once) === once;
    }),
    { numRuns: 1000 },
  );
  t.pass();
});

test('property: every shape goes wherever it is put in outside text', (t) => {
  fc.assert(
    fc.property(fc.constantFrom(...SHAPES.filter((s) => s.places === undefined && s.redacted === undefined)), fc.constantFrom(' ', '\n', '(', '"', "'", '=', ', '), fc.constantFrom(' ', '\n', ')', '"', "'", '&', ';', ', '), (shape, before, after) => {
      const out = redact(`x${before}${shape.text}${after}y`);
      return out === `x${before}${REDACTED}${after}y`;
    }),
    { numRuns: 500 },
  );
  t.pass();
});

// ---- linear time -----------------------------------------------------------------------------

// A pattern that backtracks would take seconds (or hours) on these; linear ones take milliseconds.
test('every rule stays fast on long adversarial text (its keywords repeated, long runs, many markers)', (t) => {
  const N = 50_000;
  const inputs: string[] = [
    `-----BEGIN ${'RSA PRIVATE'} KEY-----`.repeat(N / 30),
    `-----BEGIN ${'RSA PRIVATE'} KEY-----\n${'A'.repeat(N)}`,
    `https://${'a:'.repeat(N / 2)}`, `${'x://a'.repeat(N / 5)}`, `https://${'a1'.repeat(N / 2)}`,
    `token ${'a'.repeat(N)}`, `Authorization:${' '.repeat(N)}`, `password:${' '.repeat(N)}x`, `${'a.'.repeat(N / 2)}password`,
    `pat${'='.repeat(N)}`, `${'pat: '.repeat(N / 5)}`, `${'Q~'.repeat(N / 2)}`, `${'a1Q~'.repeat(N / 4)}`, `${'s.'.repeat(N / 2)}`,
    `eyJ${'a'.repeat(N)}`, `xapp-1-${'A'.repeat(N)}`, `xapp-1-A-${'1'.repeat(N)}`,
  ];
  for (const rule of CREDENTIAL_RULES) {
    for (const k of rule.keywords) {
      inputs.push(k.repeat(N / k.length), `${k}${'a1'.repeat(N / 2)}`, `${k}${'A'.repeat(N)}`, `${k}${'-'.repeat(N)}`, `${k}=${' '.repeat(N)}`, `${`${k}x `.repeat(N / (k.length + 2))}`);
    }
  }
  let slowest = { ms: 0, input: '' };
  for (const input of inputs) {
    const start = performance.now();
    redact(input);
    const ms = performance.now() - start;
    if (ms > slowest.ms) slowest = { ms, input: input.slice(0, 40) };
  }
  t.log(`${inputs.length} inputs; the slowest took ${slowest.ms.toFixed(0)} ms`);
  t.true(slowest.ms < 1000, `${slowest.ms.toFixed(0)} ms on ${JSON.stringify(slowest.input)}…`);
});
