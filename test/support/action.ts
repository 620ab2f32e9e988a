import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { ROOT } from './cli.ts';
import { tempDir, writeFile } from './git.ts';

/**
 * The Action as the runner runs it (DESIGN.md "Real parts"): `node dist/action.js` with INPUT_*
 * variables (defaults from action.yml, hyphens kept: INPUT_GITHUB-TOKEN), GITHUB_EVENT_PATH at a
 * real payload, GITHUB_OUTPUT and GITHUB_STEP_SUMMARY files, GITHUB_WORKSPACE.
 */
export const DIST = path.join(ROOT, 'dist', 'action.js');

export interface ActionResult {
  code: number;
  stdout: string;
  stderr: string;
  outputs: Record<string, string>;
  summary: string;
  ms: number;
}

/** The runner sets INPUT_<NAME> for every input, from `with:` or else the default in action.yml. */
export function inputDefaults(token: string): Record<string, string> {
  const spec = parseYaml(readFileSync(path.join(ROOT, 'action.yml'), 'utf8')) as { inputs: Record<string, { default?: string }> };
  const env: Record<string, string> = {};
  for (const [name, input] of Object.entries(spec.inputs)) {
    if (input.default === undefined) continue;
    env[`INPUT_${name.replace(/ /g, '_').toUpperCase()}`] = input.default === '${{ github.token }}' ? token : String(input.default);
  }
  return env;
}

/** `name<<delimiter\nvalue\ndelimiter` records, as @actions/core writes GITHUB_OUTPUT. */
export function parseOutputs(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const m = /^([^<]+)<<(.+)$/.exec(lines[i]!);
    if (!m) continue;
    const value: string[] = [];
    for (i++; i < lines.length && lines[i] !== m[2]; i++) value.push(lines[i]!);
    out[m[1]!] = value.join('\n');
  }
  return out;
}

export interface RunActionOptions {
  workspace: string;
  /** the token the `github-token` input defaults to */
  token: string;
  /** `with:` inputs */
  with?: Record<string, string>;
  eventName?: string;
  eventPath?: string;
  /** more environment (a workflow's `env:`) */
  env?: Record<string, string>;
  /** sees stdout as it comes (the log a runner shows live) */
  onStdout?: (text: string) => void;
}

export async function runAction(opts: RunActionOptions): Promise<ActionResult> {
  const outputFile = writeFile(opts.workspace, '.runner/output', '');
  const summaryFile = writeFile(opts.workspace, '.runner/summary.md', '');
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !/^(INPUT_|GITHUB_|RUNNER_|KUBECONFIG$|KUBERNETES_)/.test(k)) env[k] = v;
  Object.assign(env, inputDefaults(opts.token));
  for (const [name, value] of Object.entries(opts.with ?? {})) env[`INPUT_${name.toUpperCase()}`] = value;
  Object.assign(env, {
    GITHUB_ACTIONS: 'true', GITHUB_WORKSPACE: opts.workspace, GITHUB_OUTPUT: outputFile, GITHUB_STEP_SUMMARY: summaryFile,
    GITHUB_EVENT_NAME: opts.eventName ?? 'repository_dispatch', GITHUB_REPOSITORY: 'acme/gitops', GITHUB_SERVER_URL: 'https://github.com',
    RUNNER_TEMP: tempDir('lastgood-runner-'),
    ...(opts.eventPath ? { GITHUB_EVENT_PATH: opts.eventPath } : {}),
    ...opts.env,
  });
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [DIST], { cwd: opts.workspace, env });
    let stdout = '';
    let stderr = '';
    // decoded by the streams: a character split between two chunks is kept whole
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
      opts.onStdout?.(stdout);
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) =>
      resolve({
        code: code ?? -1, stdout, stderr, ms: Date.now() - started,
        outputs: parseOutputs(readFileSync(outputFile, 'utf8')), summary: readFileSync(summaryFile, 'utf8'),
      }),
    );
  });
}
