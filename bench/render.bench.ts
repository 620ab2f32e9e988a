/**
 * render: lastgood's render of one Flux target (materialise the revision's files in a temporary
 * folder, fold the Kustomization spec in, run kustomize, post-build substitution, parse) vs the
 * same kustomize run alone on a folder already on disk, on repositories of the bench sizes
 * (bench/generate-repo.ts layout: apps/app-N/base + overlays/{dev,staging,prod}, padded with docs).
 *
 * ratio = lastgood / kustomize alone: the cost of rendering from a revision's files rather than a
 * checkout. Only the files the build reads are written (src/verify/confine.ts), so it should stay
 * near 1 whatever the repository's size. Medians of several repetitions, in the same run. Without
 * kustomize or kubectl: no rows (stderr says why). LASTGOOD_BENCH_SIZES=small,medium limits the
 * sizes (default: all three).
 */
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runBounded } from '../src/verify/renderer.ts';
import { detectRenderer, render } from '../src/verify/render.ts';
import { SIZES, type SizeName } from './generate-repo.ts';

export const prefix = 'render';

const REPS: Record<SizeName, number> = { small: 7, medium: 5, large: 3 };

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}
const round = (x: number) => Math.round(x * 10) / 10;

/** The generator's layout, as files in memory (deterministic; tags vary per app). */
function files(count: number): Map<string, Uint8Array> {
  const out = new Map<string, Uint8Array>();
  const put = (p: string, s: string) => out.set(p, new TextEncoder().encode(s));
  for (let i = 0; out.size + 9 <= count; i++) {
    const app = `app-${String(i).padStart(5, '0')}`;
    const dir = `apps/${app}`;
    put(`${dir}/base/deployment.yaml`, `apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: ${app}\nspec:\n  selector:\n    matchLabels: {app: ${app}}\n  template:\n    metadata:\n      labels: {app: ${app}}\n    spec:\n      containers:\n      - name: app\n        image: ghcr.io/acme/${app}:1.0.${i % 10}\n        env:\n        - name: REGION\n          value: \${region}\n`);
    put(`${dir}/base/service.yaml`, `apiVersion: v1\nkind: Service\nmetadata:\n  name: ${app}\nspec:\n  selector: {app: ${app}}\n  ports:\n  - port: 80\n`);
    put(`${dir}/base/kustomization.yaml`, 'resources:\n- deployment.yaml\n- service.yaml\n');
    for (const env of ['dev', 'staging', 'prod']) {
      put(`${dir}/overlays/${env}/kustomization.yaml`, `resources:\n- ../../base\npatches:\n- path: deployment-patch.yaml\nimages:\n- name: ghcr.io/acme/${app}\n  newTag: 1.${i % 7}.0\n`);
      put(`${dir}/overlays/${env}/deployment-patch.yaml`, `apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: ${app}\nspec:\n  replicas: ${1 + (i % 3)}\n`);
    }
  }
  for (let d = 0; out.size < count; d++) put(`docs/note-${String(d).padStart(5, '0')}.md`, `# note ${d}\n`);
  return out;
}

export default async function* bench() {
  const renderer = await detectRenderer();
  if ('unavailable' in renderer) {
    process.stderr.write(`bench render: skipped: ${renderer.unavailable}\n`);
    return;
  }
  const sizes = (process.env.LASTGOOD_BENCH_SIZES ?? 'small,medium,large').split(',').filter((s): s is SizeName => s in SIZES);
  const spec = { targetNamespace: 'prod', postBuild: { substitute: { region: 'eu-west-1' } } };
  const root = 'apps/app-00000/overlays/prod';
  for (const size of sizes) {
    const tree = files(SIZES[size].files);
    // the baseline: the same tree already on disk, the same kustomization (as lastgood writes it), kustomize alone
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'lastgood-bench-render-'));
    try {
      for (const [p, b] of tree) {
        await fs.mkdir(path.dirname(path.join(dir, p)), { recursive: true });
        await fs.writeFile(path.join(dir, p), b);
      }
      await fs.appendFile(path.join(dir, root, 'kustomization.yaml'), 'namespace: prod\nsortOptions: {order: fifo}\n');
      const ours: number[] = [];
      const theirs: number[] = [];
      let objects = 0;
      for (let i = 0; i < REPS[size]; i++) {
        let t0 = performance.now();
        const r = await render(renderer, { files: tree, root, engine: 'flux', flux: { spec } });
        ours.push(performance.now() - t0);
        if (!('objects' in r)) throw new Error(`bench render failed: ${r.failed}`);
        objects = r.objects.length;
        t0 = performance.now();
        const [file, ...args] = renderer.command;
        const b = await runBounded(file!, [...args, path.join(dir, root), '--load-restrictor', 'LoadRestrictionsNone'], { timeoutMs: 120_000, maxOutputBytes: 64 << 20 });
        theirs.push(performance.now() - t0);
        if (b.code !== 0) throw new Error(`bench baseline failed: ${b.stderr}`);
      }
      const ms = median(ours);
      const base = median(theirs);
      yield {
        bench: 'render/flux',
        size,
        files: tree.size,
        objects,
        kustomize: `${renderer.kind} ${renderer.version}`,
        lastgood: { ms: round(ms) },
        baseline: { name: `${renderer.kind === 'kubectl' ? 'kubectl kustomize' : 'kustomize build'} on a checkout`, ms: round(base) },
        ratio: round(ms / base),
      };
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  }
}
