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

test('an unknown field names itself and its line', (t) => {
  const error = t.throws(() => parseConfig('repo:\n  url: x\n  brnch: main\ntargets: []\n', 'c.yaml'), { instanceOf: ConfigError });
  t.regex(error!.message, /^c\.yaml:\d+: repo: unknown field "brnch"/);
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
