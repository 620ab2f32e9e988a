/**
 * The credential rules of the scrubber (src/scrub.ts), in the order they run: first the contexts
 * that mark a value as a secret (a private key block, URL userinfo, an authorization header, a
 * secret-named field), then the shapes of well-known tokens.
 *
 * Token shapes are translated from gitleaks' rules, https://github.com/gitleaks/gitleaks, file
 * config/gitleaks.toml (generated from cmd/generate/config/rules/*.go), read at v8.30.0-27
 * (b58d3f1, July 2026). Each entry keeps the gitleaks rule id it translates; an id `lastgood.…` is
 * lastgood's own (a context, or a shape gitleaks has no rule for: Docker Hub, Bitbucket app
 * passwords, Azure connection-string keys and DevOps PATs, after Nosey Parker's rules np.dockerhub.1,
 * np.bitbucket.1, np.azure.1 and np.azure.3, https://github.com/praetorian-inc/noseyparker, Apache-2.0).
 *
 * How a gitleaks regex (Go RE2) becomes one here:
 * - its leading `\b` becomes WORD_START (also true right after a JSON escape such as `\n`), and its
 *   trailing context `(?:[\x60'"\s;]|\\[nr]|$)`, which gitleaks consumes, becomes a lookahead that
 *   the token does not go on, so that only the token is replaced;
 * - a final run of fixed length, `[…]{n}` or `[…]{n,m}`, becomes `[…]{n,}`: a redactor had better
 *   take a longer token whole than leave its tail (a run of one class is linear);
 * - `(?i)` over the whole regex becomes the `i` flag; a partial `(?i:…)` is spelled out
 *   (`[A-Za-z0-9]`), since Node 20 has no regexp modifiers;
 * - no character class holds a backslash or a quote, and a pattern whose first letter may be a
 *   JSON escape's (b f n r t u) starts at WORD_START_OUTSIDE_ESCAPE: a match never starts or ends
 *   inside an escape, so redacting serialised JSON leaves it valid;
 * - entropy thresholds are not computed; where a short shape needs one (Vault's legacy `s.` token)
 *   a lookahead asks for mixed classes instead.
 *
 * gitleaks' licence:
 *
 * @license MIT
 * Copyright (c) 2019 Zachary Rice
 *
 * Permission is hereby granted, free of charge, to any person obtaining a copy
 * of this software and associated documentation files (the "Software"), to deal
 * in the Software without restriction, including without limitation the rights
 * to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
 * copies of the Software, and to permit persons to whom the Software is
 * furnished to do so, subject to the following conditions:
 *
 * The above copyright notice and this permission notice shall be included in all
 * copies or substantial portions of the Software.
 *
 * THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
 * IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
 * FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
 * AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
 * LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
 * OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
 * SOFTWARE.
 *
 * This module imports nothing: src/scrub.ts, which every stage uses, is its only user.
 */

/** What a secret is replaced with. */
export const REDACTED = '***';

export interface CredentialRule {
  /** The gitleaks rule id this entry translates, or `lastgood.…` for a rule of lastgood's own. */
  readonly id: string;
  /** Further gitleaks rules whose matches this entry's (wider) pattern takes too. */
  readonly covers?: readonly string[];
  /**
   * Lower-case substrings, one of which every match contains (gitleaks' keywords): the rule runs
   * only on text that holds one, so that most strings (names, reasons, revisions) skip it.
   */
  readonly keywords: readonly string[];
  /** Global; linear-time: no nested quantifiers, and adjacent ones bounded or split by a literal. */
  readonly pattern: RegExp;
  readonly replacement: string;
}

// A word starts after a non-word character, or after a JSON escape (\n, \t …) of serialised text.
const WORD_START = String.raw`(?:(?<=\\[nrtbf])|(?<![A-Za-z0-9_]))`;
// After an escaped backslash (`\\`, up to four of them): the next letter is a letter, not an escape's.
const AFTER_ESCAPED_BACKSLASH = String.raw`(?<=(?:^|[^\\])(?:\\\\){1,4})`;
// For a pattern whose first letter may be an escape's (`\npm_…` is a newline and "pm_…"): not right
// after a backslash, unless the backslash ends a whole escape or is itself escaped.
const WORD_START_OUTSIDE_ESCAPE = String.raw`(?:(?<=\\[nrtbf])|(?<![A-Za-z0-9_\\])|${AFTER_ESCAPED_BACKSLASH})`;
// Values stop at whitespace, quotes, backslashes and separators: a match never eats a JSON escape.
// Repetitions before an anchor are bounded ({0,40}) so that a long run of text stays linear.
const VALUE = String.raw`[^\s"'\\,;|&<>]+`;
// How a value opens after `name:`: a quote, or no quote and no JSON structure. In JSON text
// `"password": 123` or `"cookie": {…}` is structure, and a quote after the colon may be the one that
// closes a string (`{"m": "Authorization: "}`); replacing what follows would leave the document
// invalid. So a quote does not open a value that starts with `,` `:` `]` or `}`, and an unquoted
// value that opens an object or array, or is a literal followed by `,` `}` or `]`, is not taken.
// (The value after it cannot start with whitespace: a `\s*` given back cannot start it elsewhere.)
const VALUE_OPENING = String.raw`(?:["'](?![,:\]}])|(?![{\[]|(?:true|false|null|-?\d[\d.eE+-]*)\s*[,}\]]))`;

const REDACTED_PRIVATE_KEY = '[redacted private key]';

function rule(id: string, keywords: readonly string[], source: string, opts: { flags?: string; replacement?: string; covers?: readonly string[] } = {}): CredentialRule {
  return {
    id,
    ...(opts.covers ? { covers: opts.covers } : {}),
    keywords,
    pattern: new RegExp(source, `g${opts.flags ?? ''}`),
    replacement: opts.replacement ?? REDACTED,
  };
}

/** A token rule: WORD_START, then the token, replaced whole. */
function token(id: string, keywords: readonly string[], body: string, opts: { flags?: string; covers?: readonly string[]; start?: string } = {}): CredentialRule {
  return rule(id, keywords, `${opts.start ?? WORD_START}${body}`, opts);
}

const GITHUB_RUN = '[A-Za-z0-9]{16,}';
const GITLAB_RUN = '[A-Za-z0-9_.-]{16,}';

export const CREDENTIAL_RULES: readonly CredentialRule[] = [
  // ---- contexts (lastgood's own, except the private key block) --------------------------------

  // PEM and PGP private keys, whole blocks; an unterminated block (cut off) up to where its base64
  // ends. A block holds no quote (it stays inside one JSON string) and no `-----` but its END (a
  // search from each BEGIN stops at the next marker: many BEGINs stay linear).
  rule('private-key', ['private key'], String.raw`-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY( BLOCK)?-----(?:[^"-]|-(?!----))*?-----END \1PRIVATE KEY\2-----`, { replacement: REDACTED_PRIVATE_KEY }),
  rule('lastgood.private-key-unterminated', ['private key'], String.raw`-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:[A-Za-z0-9+/=\s:,-]|\\[nrt])*`, { replacement: REDACTED_PRIVATE_KEY }),
  // credentials in URLs: scheme://user:password@host; scheme://token@host when the user looks like a
  // token (long, with a digit) — not ssh://git@host, nor docker-pullable://alpine@sha256:… (an image)
  rule('lastgood.url-userinfo', ['://'], String.raw`${WORD_START}([a-z][a-z0-9+.-]{0,30}:\/\/)[^\s/?#@"'\\<>:]*:[^\s/?#@"'\\<>]+@`, { flags: 'i', replacement: `$1${REDACTED}@` }),
  rule('lastgood.url-token-user', ['://'], String.raw`${WORD_START}([a-z][a-z0-9+.-]{0,30}:\/\/)(?=[A-Za-z0-9_.~%-]*[0-9])[A-Za-z0-9_.~%-]{16,}@(?!sha\d+:)`, { flags: 'i', replacement: `$1${REDACTED}@` }),
  // authorization headers, with or without a scheme (Bearer, Basic, token, …)
  rule('lastgood.authorization-header', ['authorization', 'api-key', 'private-token', 'auth-token'], String.raw`${WORD_START}((?:proxy-)?authorization|x-api-key|api-key|private-token|x-auth-token)(["']?\s*[:=]\s*${VALUE_OPENING})(?:(?:bearer|basic|token|digest|negotiate|apikey|aws4-hmac-sha256)\s+)?${VALUE}`, { flags: 'i', replacement: `$1$2${REDACTED}` }),
  rule('lastgood.cookie-header', ['cookie'], String.raw`${WORD_START}((?:set-)?cookie)(["']?\s*:\s*${VALUE_OPENING})[^\s"'\\][^\r\n"'\\]*`, { flags: 'i', replacement: `$1$2${REDACTED}` }),
  rule('lastgood.bearer', ['bearer'], String.raw`${WORD_START}(Bearer)\s+[A-Za-z0-9._~+/=-]{8,}`, { flags: 'i', replacement: `$1 ${REDACTED}` }),
  // "Basic …" / "token …" only when the word after looks like a credential (has a digit or +/=), not prose
  rule('lastgood.basic-or-token', ['basic', 'token'], String.raw`${WORD_START}(Basic|token)\s+(?=[A-Za-z0-9._~+/=-]*[0-9+/=])[A-Za-z0-9._~+/=-]{12,}`, { flags: 'i', replacement: `$1 ${REDACTED}` }),
  // query parameters and key=value pairs that carry secrets
  rule('lastgood.secret-parameter', ['pass', 'pwd', 'token', 'secret', 'key', 'sig', 'credential'], String.raw`${WORD_START}([\w.-]{0,40}?(?:password|passwd|pwd|token|secret|api_?key|apikey|access_key|private_key|secret_key|signature|sig|credential))=${VALUE}`, { flags: 'i', replacement: `$1=${REDACTED}` }),
  rule('lastgood.secret-field', ['pass', 'secret', 'token'], String.raw`${WORD_START}([\w.-]{0,40}?(?:password|passwd|client_secret|secret_key|secret_access_key|session_token))(["']?\s*:\s*${VALUE_OPENING})${VALUE}`, { flags: 'i', replacement: `$1$2${REDACTED}` }),
  // Azure connection strings (storage, Service Bus, Event Hubs, IoT Hub): the key after its name;
  // after Nosey Parker np.azure.1 (a storage key is 86 base64 characters and `==`, a SAS key 44)
  rule('lastgood.azure-connection-string-key', ['accountkey', 'sharedaccesskey', 'sharedsecretvalue'], String.raw`${WORD_START}(AccountKey|SharedAccessKey|SharedSecretValue)(\s*=\s*)[A-Za-z0-9+/]{20,}={0,2}`, { flags: 'i', replacement: `$1$2${REDACTED}` }),
  // Azure DevOps personal access tokens: 52 characters of base32 (legacy) or 84 alphanumerics, with
  // no prefix of their own, so only after a name that says PAT or access token (after Nosey Parker
  // np.azure.3); in a URL's userinfo or an Authorization header the rules above take them. The
  // separator may hold escaped quotes (a JSON document serialised into a string).
  rule('lastgood.azure-devops-pat', ['pat', 'accesstoken', 'access_token'], String.raw`${WORD_START}([\w.-]{0,40}?(?:pat|personal_?access_?token|access_?token))((?:\\?["'])?\s*[:=]\s*(?:\\?["'])?)(?:[a-z2-7]{52}|[A-Za-z0-9]{84})(?![A-Za-z0-9])`, { flags: 'i', replacement: `$1$2${REDACTED}` }),

  // ---- token shapes ---------------------------------------------------------------------------

  // GitHub: lastgood takes 16 characters and more where gitleaks asks for 36 (82 fine-grained)
  token('github-pat', ['ghp_'], `ghp_${GITHUB_RUN}`),
  token('github-oauth', ['gho_'], `gho_${GITHUB_RUN}`),
  token('github-app-token', ['ghu_', 'ghs_'], `gh[us]_${GITHUB_RUN}`),
  token('github-refresh-token', ['ghr_'], `ghr_${GITHUB_RUN}`),
  token('github-fine-grained-pat', ['github_pat_'], 'github_pat_[A-Za-z0-9_]{20,}'),
  // GitLab: lastgood's wider run (with `.`) also takes the routable tokens
  token('gitlab-pat', ['glpat-'], `glpat-${GITLAB_RUN}`, { covers: ['gitlab-pat-routable'] }),
  token('gitlab-deploy-token', ['gldt-'], `gldt-${GITLAB_RUN}`),
  token('gitlab-runner-authentication-token', ['glrt-'], `glrt-${GITLAB_RUN}`, { covers: ['gitlab-runner-authentication-token-routable'] }),
  token('gitlab-ptt', ['glptt-'], `glptt-${GITLAB_RUN}`),
  token('gitlab-cicd-job-token', ['glcbt-'], `glcbt-${GITLAB_RUN}`),
  token('gitlab-oauth-app-secret', ['gloas-'], `gloas-${GITLAB_RUN}`),
  token('gitlab-feed-token', ['glft-'], 'glft-[0-9a-zA-Z_-]{20,}'),
  token('gitlab-kubernetes-agent-token', ['glagent-'], 'glagent-[0-9a-zA-Z_-]{50,}'),
  token('gitlab-scim-token', ['glsoat-'], 'glsoat-[0-9a-zA-Z_-]{20,}'),
  token('gitlab-feature-flag-client-token', ['glffct-'], 'glffct-[0-9a-zA-Z_-]{20,}'),
  token('gitlab-incoming-mail-token', ['glimt-'], 'glimt-[0-9a-zA-Z_-]{25,}'),
  token('gitlab-rrt', ['gr1348941'], 'GR1348941[\\w-]{20,}'),
  rule('gitlab-session-cookie', ['_gitlab_session='], `${WORD_START}(_gitlab_session=)[0-9a-z]{32,}`, { replacement: `$1${REDACTED}` }),
  // Slack: the config access token before the catch-all (which would leave its `xoxe.`); then
  // lastgood's `xox?-` for every other kind
  token('slack-config-access-token', ['xoxe.xoxb-', 'xoxe.xoxp-'], 'xoxe\\.xox[bp]-\\d-[A-Z0-9]{163,}', { flags: 'i' }),
  token('lastgood.slack-token', ['xox'], 'xox[a-z]-[A-Za-z0-9-]{8,}', {
    covers: ['slack-bot-token', 'slack-user-token', 'slack-legacy-bot-token', 'slack-legacy-token', 'slack-legacy-workspace-token', 'slack-config-refresh-token'],
  }),
  token('slack-app-token', ['xapp'], 'xapp-\\d-[A-Z0-9]+-\\d+-[a-z0-9]+', { flags: 'i' }),
  rule('slack-webhook-url', ['hooks.slack.com'], String.raw`${WORD_START}hooks\.slack\.com\/(?:services|workflows|triggers)\/[A-Za-z0-9/_-]+`, { replacement: `hooks.slack.com/${REDACTED}` }),
  // AWS: lastgood's prefixes (every unique-id kind) and gitleaks' A3T
  token('aws-access-token', ['a3t', 'akia', 'asia', 'agpa', 'aida', 'aroa', 'aipa', 'anpa', 'anva', 'abia', 'acca'], '(?:A3T[A-Z0-9]|AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])'),
  // lastgood's JWT shape: gitleaks' classes hold `\/` and `\\`, which could split a JSON escape
  token('jwt', ['eyj'], 'eyJ[A-Za-z0-9_-]{6,}\\.[A-Za-z0-9_-]{6,}\\.[A-Za-z0-9_-]*'),
  token('gcp-api-key', ['aiza'], 'AIza[\\w-]{35,}'),
  token('npm-access-token', ['npm_'], 'npm_[a-z0-9]{36,}', { flags: 'i', start: WORD_START_OUTSIDE_ESCAPE }),
  // Vault: the legacy `s.` token is short and its prefix common; a digit, a capital and a small
  // letter stand in for gitleaks' entropy ≥ 3.5
  token('vault-service-token', ['hvs.', 's.'], '(?:hvs\\.[\\w-]{90,}|s\\.(?=[A-Za-z0-9]{0,23}[0-9])(?=[A-Za-z0-9]{0,23}[A-Z])(?=[A-Za-z0-9]{0,23}[a-z])[A-Za-z0-9]{24}(?![\\w-]))'),
  token('vault-batch-token', ['hvb.'], 'hvb\\.[\\w-]{138,}'),
  token('grafana-service-account-token', ['glsa_'], 'glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8,}', { flags: 'i' }),
  token('grafana-api-key', ['eyjrijoi'], 'eyJrIjoi[A-Za-z0-9]{70,}={0,3}', { flags: 'i' }),
  token('grafana-cloud-api-token', ['glc_'], 'glc_[A-Za-z0-9+/]{32,}={0,3}', { flags: 'i' }),
  token('openai-api-key', ['t3blbkfj'], 'sk-(?:(?:proj|svcacct|admin)-(?:[A-Za-z0-9_-]{74}|[A-Za-z0-9_-]{58})T3BlbkFJ[A-Za-z0-9_-]{58,}|[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20,})'),
  // Anthropic: the run ends in `AA`, so it keeps its length and gitleaks' end (as a lookahead)
  token('anthropic-api-key', ['sk-ant-api03'], 'sk-ant-api03-[A-Za-z0-9_-]{93}AA(?![A-Za-z0-9_-])'),
  token('anthropic-admin-api-key', ['sk-ant-admin01'], 'sk-ant-admin01-[A-Za-z0-9_-]{93}AA(?![A-Za-z0-9_-])'),
  // Azure AD client secret: gitleaks' leading and trailing contexts as lookarounds (a backslash
  // before it only as a whole escape or escaped), the trailing one widened by `;&]}` for connection
  // strings and query strings; the run keeps gitleaks' 31–34, bounded by those contexts
  rule('azure-ad-client-secret', ['q~'], String.raw`(?:(?<=\\[nrtbf])|(?<![^'"\x60\s>=:(,)])|${AFTER_ESCAPED_BACKSLASH})[a-zA-Z0-9_~.]{3}\dQ~[a-zA-Z0-9_~.-]{31,34}(?=$|[\\'"\x60\s<),;&\]}])`),
  token('stripe-access-token', ['sk_test', 'sk_live', 'sk_prod', 'rk_test', 'rk_live', 'rk_prod'], '(?:sk|rk)_(?:test|live|prod)_[a-zA-Z0-9]{10,}', { start: WORD_START_OUTSIDE_ESCAPE }),
  token('sendgrid-api-token', ['sg.'], 'SG\\.[A-Za-z0-9=_.-]{66,}'),
  // Atlassian API tokens (Bitbucket's since app passwords): gitleaks' prefixed alternative only
  token('atlassian-api-token', ['atatt3'], 'ATATT3[A-Za-z0-9_=-]{186,}'),
  token('age-secret-key', ['age-secret-key-1'], 'AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58,}'),
  token('openshift-user-token', ['sha256~'], 'sha256~[\\w-]{43,}'),
  token('hashicorp-tf-api-token', ['atlasv1'], '[A-Za-z0-9]{14}\\.atlasv1\\.[A-Za-z0-9_=-]{60,}', { start: WORD_START_OUTSIDE_ESCAPE }),
  token('digitalocean-pat', ['dop_v1_'], 'dop_v1_[a-f0-9]{64,}'),
  token('digitalocean-access-token', ['doo_v1_'], 'doo_v1_[a-f0-9]{64,}'),
  token('digitalocean-refresh-token', ['dor_v1_'], 'dor_v1_[a-f0-9]{64,}', { flags: 'i' }),
  token('pulumi-api-token', ['pul-'], 'pul-[a-f0-9]{40,}'),
  token('doppler-api-token', ['dp.pt.'], 'dp\\.pt\\.[A-Za-z0-9]{43,}'),
  token('databricks-api-token', ['dapi'], 'dapi[a-f0-9]{32,}(?:-\\d)?'),
  token('pypi-upload-token', ['pypi-ageichlwas5vcmc'], 'pypi-AgEIcHlwaS5vcmc[\\w-]{50,}'),
  token('sentry-user-token', ['sntryu_'], 'sntryu_[a-f0-9]{64,}'),
  token('huggingface-access-token', ['hf_'], 'hf_[A-Za-z]{34,}'),
  token('heroku-api-key-v2', ['hrku-aa'], 'HRKU-AA[0-9a-zA-Z_-]{58,}'),
  // Docker Hub personal and organisation access tokens (np.dockerhub.1; gitleaks has no rule)
  token('lastgood.dockerhub-token', ['dckr_pat_', 'dckr_oat_'], 'dckr_(?:pat|oat)_[A-Za-z0-9_-]{27,}'),
  // Bitbucket app passwords (np.bitbucket.1; gitleaks has no rule)
  token('lastgood.bitbucket-app-password', ['atbb'], 'ATBB[A-Za-z0-9]{32,}'),
];

const KEYWORDS = [...new Set(CREDENTIAL_RULES.flatMap((r) => r.keywords))].sort((a, b) => b.length - a.length);
// One pass finds them all: longest first, so that where two start at one place the longer is
// found, and it brings those inside it (text that holds `hvs.` holds `s.`).
const KEYWORD_SCAN = new RegExp(KEYWORDS.map((k) => k.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&')).join('|'), 'gi');
const KEYWORDS_WITHIN = new Map(KEYWORDS.map((k) => [k, KEYWORDS.filter((inner) => k.includes(inner))]));

/** The rules that may match `text` (one of their keywords is in it), in their order. */
export function rulesFor(text: string): CredentialRule[] {
  const found = new Set<string>();
  KEYWORD_SCAN.lastIndex = 0;
  // each search starts one past the last find, so that overlapping keywords are all found
  for (let m = KEYWORD_SCAN.exec(text); m; KEYWORD_SCAN.lastIndex = m.index + 1, m = KEYWORD_SCAN.exec(text)) {
    for (const k of KEYWORDS_WITHIN.get(m[0].toLowerCase()) ?? []) found.add(k);
  }
  return found.size === 0 ? [] : CREDENTIAL_RULES.filter((r) => r.keywords.some((k) => found.has(k)));
}
