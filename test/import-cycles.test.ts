import test from 'ava';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { circles, importGraph } from '../scripts/import-cycles.ts';

/** The check `npm test` runs (scripts/import-cycles.ts) finds circles — type-only ones too — and src/ has none. */

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
