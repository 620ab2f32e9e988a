import { execFileSync } from 'node:child_process';
import { readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import type { RenderSpec } from '../src/model/types.ts';
import { cachedRender, renderKey } from '../src/verify/render-cache.ts';
import type { RenderResult } from '../src/verify/render.ts';
import type { Renderer } from '../src/verify/renderer.ts';
import { tempDir } from './support/git.ts';

/**
 * Issue 33: renders are kept by the digest of their inputs, in memory and in repo.cacheDir for the
 * next process (src/verify/render-cache.ts). No kustomize here: what is kept is what `make` gave.
 */

const MODULE = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'src', 'verify', 'render-cache.ts');
const RENDERER: Renderer = { command: ['/usr/bin/kubectl', 'kustomize'], version: 'v5.5.0', kind: 'kubectl' };
const spec = (over: Partial<RenderSpec> = {}): RenderSpec => ({ engine: 'flux', root: 'apps', files: new Map([['apps/a/kustomization.yaml', 'a'.repeat(40)], ['apps/a/deploy.yaml', 'b'.repeat(40)]]), ...over });
const OUTPUT = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: prod\ndata:\n  mode: fast\n';

/** Asks for `key` in a new process whose render would fail loudly: what it answers came from the folder. */
function askInNewProcess(dir: string, key: string): { found: boolean; output?: string } {
  const script = `import { cachedRender } from ${JSON.stringify(MODULE)};
const r = await cachedRender(${JSON.stringify(key)}, ${JSON.stringify(dir)}, async () => ({ failed: 'rendered again' }));
process.stdout.write(JSON.stringify('failed' in r ? { found: false } : { found: true, output: r.output }));`;
  return JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' })) as { found: boolean; output?: string };
}

test('a render is found again by the digest of its inputs, in this process and in the next one through repo.cacheDir; a failed one is not kept', async (t) => {
  const dir = tempDir();
  const key = renderKey(RENDERER, spec());
  let made = 0;
  const make = async (): Promise<RenderResult> => {
    made++;
    return { objects: [], output: OUTPUT, exactOutput: true, notes: ['rendered with kubectl kustomize v5.5.0'] };
  };
  const first = await cachedRender(key, dir, make);
  const again = await cachedRender(key, dir, make);
  t.is(made, 1, 'rendered once in this process');
  t.is(again, first);
  t.deepEqual(readdirSync(path.join(dir, 'renders')), [`${key}.json`]);
  t.deepEqual(askInNewProcess(dir, key), { found: true, output: OUTPUT }, 'the next process reads it from the folder');
  t.deepEqual(askInNewProcess(tempDir(), key), { found: false }, 'another folder has nothing of it');

  const failing = renderKey(RENDERER, spec({ root: 'other' }));
  let tries = 0;
  const fail = async (): Promise<RenderResult> => ({ failed: `try ${++tries}` });
  t.deepEqual(await cachedRender(failing, dir, fail), { failed: 'try 1' });
  t.deepEqual(await cachedRender(failing, dir, fail), { failed: 'try 2' }, 'a failure is rendered again');
  t.deepEqual(readdirSync(path.join(dir, 'renders')), [`${key}.json`], 'and never written');
});

test('a damaged or oversized file in the folder is rendered again, not believed', (t) => {
  const dir = tempDir();
  const key = renderKey(RENDERER, spec({ root: 'damaged' }));
  execFileSync('mkdir', ['-p', path.join(dir, 'renders')]);
  writeFileSync(path.join(dir, 'renders', `${key}.json`), '{"output": "half');
  t.deepEqual(askInNewProcess(dir, key), { found: false });
  const big = renderKey(RENDERER, spec({ root: 'big' }));
  writeFileSync(path.join(dir, 'renders', `${big}.json`), JSON.stringify({ output: 'x'.repeat(17 << 20), exactOutput: true, notes: [] }));
  t.deepEqual(askInNewProcess(dir, big), { found: false }, 'larger than lastgood writes: not read');
});

test('the digest changes with every input of a render and only with them', (t) => {
  const base = renderKey(RENDERER, spec());
  t.is(renderKey(RENDERER, spec()), base, 'the same inputs');
  t.is(renderKey(RENDERER, spec({ files: new Map([...spec().files].reverse()) })), base, 'the files in another order');
  const others = [
    renderKey({ ...RENDERER, version: 'v5.8.1' }, spec()),
    renderKey({ ...RENDERER, command: ['/usr/local/bin/kustomize', 'build'], kind: 'kustomize' }, spec()),
    renderKey(RENDERER, spec({ root: 'apps/a' })),
    renderKey(RENDERER, spec({ engine: 'argocd' })),
    renderKey(RENDERER, spec({ files: new Map([['apps/a/kustomization.yaml', 'a'.repeat(40)], ['apps/a/deploy.yaml', 'c'.repeat(40)]]) })),
    renderKey(RENDERER, spec({ files: new Map([['apps/a/kustomization.yaml', 'a'.repeat(40)]]) })),
    renderKey(RENDERER, spec({ flux: { spec: { targetNamespace: 'prod' } } })),
    renderKey(RENDERER, spec({ cut: { dropped: new Map([['apps/kustomization.yaml', ['b']]]), across: [], kept: 1, left: 1 } })),
  ];
  t.is(new Set([base, ...others]).size, others.length + 1, 'each input makes its own digest');
});
