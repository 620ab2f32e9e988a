import test from 'ava';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { circles, importGraph, layerViolations } from '../scripts/import-cycles.ts';

/** The check `npm test` runs (scripts/import-cycles.ts) finds circles — type-only ones too — and imports into a later layer; src/ has neither. */

function tree(files: Record<string, string>): string {
  const root = mkdtempSync(path.join(tmpdir(), 'lastgood-cycles-'));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, name)), { recursive: true });
    writeFileSync(path.join(root, name), text);
  }
  return root;
}

test('a circle through a folder index and a type-only import is found, each module named once', (t) => {
  const root = tree({
    'engine/index.ts': "export { run } from './run.ts';\n",
    'engine/run.ts': "import { notify } from '../report/notify.ts';\nexport const run = () => notify();\n",
    'report/notify.ts': "import type { Report } from '../engine';\nexport const notify = (r?: Report) => r;\n",
    'report/text.ts': "import { notify } from './notify.ts';\nexport const text = notify;\n",
    'self.ts': "import './self.ts';\n",
  });
  t.deepEqual(circles(importGraph(root)), [['engine/index.ts', 'engine/run.ts', 'report/notify.ts'], ['self.ts']]);
});

test('a chain without a way back is no circle', (t) => {
  const root = tree({
    'a.ts': "import { b } from './b.ts';\nexport const a = b;\n",
    'b.ts': "import { c } from './c/index.ts';\nexport const b = c;\n",
    'c/index.ts': "import type { X } from 'pino';\nexport const c = 1 as unknown as X;\n",
  });
  t.deepEqual(circles(importGraph(root)), []);
});

test('src/ has no import circle', (t) => {
  t.deepEqual(circles(importGraph(path.resolve('src'))), []);
});

test('an import into a later layer is found: a stage above deliver that imports from it, and deliver importing the report', (t) => {
  const root = tree({
    'errors.ts': 'export class E extends Error {}\n',
    'history/locate.ts': "import { push } from '../deliver/git-remote/push.ts';\nimport { E } from '../errors.ts';\nexport const locate = () => [push, E];\n",
    'deliver/git-remote/push.ts': "import type { TransferEvent } from '../../report/progress.ts';\nexport const push = (e?: TransferEvent) => e;\n",
    'report/progress.ts': 'export interface TransferEvent { bytes: number }\n',
    'engine/run.ts': "import { locate } from '../history/locate.ts';\nimport { push } from '../deliver/git-remote/push.ts';\nexport const run = () => [locate, push];\n",
    'stray/x.ts': 'export const x = 1;\n',
  });
  t.deepEqual(layerViolations(importGraph(root)), [
    'deliver/git-remote/push.ts (deliver) imports report/progress.ts (engine), a later layer',
    'history/locate.ts (repository) imports deliver/git-remote/push.ts (deliver), a later layer',
    'stray/x.ts: in no layer (scripts/import-cycles.ts LAYERS)',
  ]);
  t.deepEqual(circles(importGraph(root)), [], 'no circle: only the layers find these');
});

test('src/ imports only from its own layer and earlier ones', (t) => {
  t.deepEqual(layerViolations(importGraph(path.resolve('src'))), []);
});
