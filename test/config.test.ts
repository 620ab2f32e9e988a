import test from 'ava';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseConfig } from '../src/config/load.ts';
import { configJsonSchema, resolveTarget } from '../src/config/schema.ts';
import { ConfigError } from '../src/errors.ts';
import { lastgood, ROOT } from './support/cli.ts';
import { tempDir, writeFile } from './support/git.ts';

const minimal = (paths: string) => `repo:
  url: ./repo
targets:
  - name: app
    paths: ${paths}
    resources:
      - { apiVersion: apps/v1, kind: Deployment, namespace: prod, name: app }
`;

test('defaults are those of DESIGN.md', (t) => {
  const config = parseConfig(minimal('[apps/app/]'), 'lastgood.yaml');
  const target = resolveTarget(config, config.targets[0]!);
  t.is(config.repo.branch, 'main');
  t.is(target.mode, 'pull-request');
  t.is(target.strategy, 'revert');
  t.is(target.confirmations, 2);
  t.is(target.stuckAfterMs, 15 * 60_000);
  // resolved once, as the pipeline reads it: durations in milliseconds
  t.deepEqual(target.onFailure, { analysis: 'revert', promotion: { waitMs: 10 * 60_000, then: 'revert' }, stuck: 'alert' });
  t.deepEqual(config.pullRequest.labels, ['lastgood', 'rollback']);
});

for (const [paths, why] of [
  ['[../etc/]', /must not contain "\.\."/],
  ['[apps/../../x]', /must not contain "\.\."/],
  ['[/etc/passwd]', /not absolute/],
  ['[""]', /must not be empty/],
  ['[./]', /must not be empty or the whole repository/],
  ['[]', /at least one path/],
] as const) {
  test(`path ${paths} is refused with the file, the field and the line`, (t) => {
    const error = t.throws(() => parseConfig(minimal(paths), 'cfg.yaml'), { instanceOf: ConfigError });
    t.regex(error!.message, /^cfg\.yaml:5: targets\[0\]\.paths/);
    t.regex(error!.message, why);
  });
}

test('an unknown field names itself and its own line (not its mapping\'s, nor its value\'s)', (t) => {
  t.throws(() => parseConfig('repo:\n  url: x\n  brnch: main\ntargets: []\n', 'c.yaml'), { instanceOf: ConfigError, message: 'c.yaml:3: repo: unknown field "brnch"' });
  // at the top level, with its value on the lines below
  t.throws(() => parseConfig(`${minimal('[a/]')}\nbogus:\n  deep: 1\n`, 'c.yaml'), { instanceOf: ConfigError, message: 'c.yaml:9: unknown field "bogus"' });
  // a key with a line break and an escape is quoted as JSON: the message stays one line
  t.throws(() => parseConfig(`${minimal('[a/]')}"x\\u001b[31m\\nlastgood: valid": 1\n`, 'c.yaml'), { instanceOf: ConfigError, message: 'c.yaml:8: unknown field "x\\u001b[31m\\nlastgood: valid"' });
});

test('a YAML syntax error names the line', (t) => {
  const error = t.throws(() => parseConfig('repo:\n  url: [x\ntargets: []\n', 'c.yaml'), { instanceOf: ConfigError });
  t.regex(error!.message, /^c\.yaml:\d+: not valid YAML/);
});

test('duplicate target names are refused', (t) => {
  const text = minimal('[a/]') + '  - name: app\n    paths: [b/]\n    resources:\n      - { apiVersion: v1, kind: Service, name: b }\n';
  t.throws(() => parseConfig(text, 'c.yaml'), { message: /duplicate target name "app"/ });
});

test('a bad duration is refused', (t) => {
  t.throws(() => parseConfig(minimal('[a/]') + 'defaults:\n  stuckAfter: soon\n', 'c.yaml'), { message: /defaults\.stuckAfter: expected a duration/ });
});

// Issue 35: names a contributor could inject into lastgood.yaml are refused when it is read, with
// the file, the line and the field, not later by a git host or the Kubernetes API without either.
const INJECTED: Array<[string, string, RegExp]> = [
  ['repo.branch with ".."', 'repo:\n  url: ./repo\n  branch: "main..x"\n', /^c\.yaml:3: repo\.branch: not a git branch name/],
  ['repo.branch with a space', 'repo:\n  url: ./repo\n  branch: "ma in"\n', /^c\.yaml:3: repo\.branch: not a git branch name/],
  ['repo.branch starting with "-"', 'repo:\n  url: ./repo\n  branch: "-f"\n', /^c\.yaml:3: repo\.branch: not a git branch name/],
  ['repo.branch given as a ref', 'repo:\n  url: ./repo\n  branch: refs/heads/main\n', /^c\.yaml:3: repo\.branch: give the branch name \(main\), not the ref/],
  ['repo.branch ending with .lock', 'repo:\n  url: ./repo\n  branch: main.lock\n', /^c\.yaml:3: repo\.branch: not a git branch name/],
  ['repo.url read as an option', 'repo:\n  url: "--upload-pack=touch /tmp/x"\n', /^c\.yaml:2: repo\.url: a repository URL or path may not start with "-"/],
  ['repo.url through a remote helper', 'repo:\n  url: "ext::sh -c touch% /tmp/x"\n', /^c\.yaml:2: repo\.url: git remote helpers/],
  ['a label with a newline', 'repo:\n  url: ./repo\npullRequest:\n  labels: ["ok", "a\\nb"]\n', /^c\.yaml:4: pullRequest\.labels\[1\]: no control character/],
  ['a namespace with a space', 'repo:\n  url: ./repo\n', /^c\.yaml:\d+: targets\[0\]\.resources\[0\]\.namespace: a namespace is a DNS-1123 label/],
  ['an object name ".."', 'repo:\n  url: ./repo\n', /^c\.yaml:\d+: targets\[0\]\.resources\[0\]\.name: an object name may not be "\." or "\.\."/],
  ['an object name with "/"', 'repo:\n  url: ./repo\n', /^c\.yaml:\d+: targets\[0\]\.resources\[0\]\.name: an object name may not/],
  ['a controller namespace with ";"', 'repo:\n  url: ./repo\ncontroller:\n  namespace: "a;b"\n', /^c\.yaml:4: controller\.namespace: a namespace is a DNS-1123 label/],
];
const RESOURCE_OF: Record<string, string> = {
  'a namespace with a space': '{ apiVersion: apps/v1, kind: Deployment, namespace: "pr od", name: app }',
  'an object name ".."': '{ apiVersion: apps/v1, kind: Deployment, namespace: prod, name: ".." }',
  'an object name with "/"': '{ apiVersion: apps/v1, kind: Deployment, namespace: prod, name: "../secrets/x" }',
};
for (const [what, head, message] of INJECTED) {
  test(`an injected name is refused with the file and line: ${what}`, (t) => {
    const resource = RESOURCE_OF[what] ?? '{ apiVersion: apps/v1, kind: Deployment, namespace: prod, name: app }';
    const text = `${head}targets:\n  - name: app\n    paths: [apps/app/]\n    resources:\n      - ${resource}\n`;
    const e = t.throws(() => parseConfig(text, 'c.yaml'));
    t.regex(e!.message, message);
  });
}

test('names that look odd but are valid stay valid: a release branch, a colon in an object name, a Windows path', (t) => {
  const text = (branch: string, url: string, name: string) => `repo:\n  url: '${url}'\n  branch: ${branch}\ntargets:\n  - name: app\n    paths: [apps/app/]\n    resources:\n      - { apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, name: "${name}" }\n`;
  t.notThrows(() => parseConfig(text('release/1.2', 'https://github.com/acme/gitops', 'system:aggregate-to-view'), 'c.yaml'));
  t.notThrows(() => parseConfig(text('hotfix-2026.11', 'C:\\repos\\gitops', 'app.v2'), 'c.yaml'));
});

test('the committed JSON Schema is the one generated from the zod schema', (t) => {
  const committed = JSON.parse(readFileSync(path.join(ROOT, 'templates/lastgood.schema.json'), 'utf8'));
  t.deepEqual(committed, JSON.parse(JSON.stringify(configJsonSchema())));
});

test('lastgood schema and validate through the CLI', async (t) => {
  const schema = await lastgood(['schema']);
  t.is(schema.code, 0);
  t.is(JSON.parse(schema.stdout).title, 'lastgood.yaml');
  const dir = tempDir();
  const good = await lastgood(['validate', '--config', writeFile(dir, 'ok.yaml', minimal('[apps/app/]'))]);
  t.is(good.code, 0, good.stderr);
  t.regex(good.stdout, /valid \(1 target: app\)/);
  const bad = await lastgood(['validate', '--config', writeFile(dir, 'bad.yaml', minimal('[../x/]'))]);
  t.is(bad.code, 2);
  t.regex(bad.stderr, /bad\.yaml:5: targets\[0\]\.paths\[0\]/);
  const missing = await lastgood(['validate', '--config', path.join(dir, 'missing.yaml')]);
  t.is(missing.code, 2);
  t.regex(missing.stderr, /missing\.yaml: cannot read the config: ENOENT/);
});
