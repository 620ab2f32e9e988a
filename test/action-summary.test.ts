import test from 'ava';
import type { TargetOutcome } from '../src/engine/index.ts';
import { primaryOutcome, renderSummary } from '../src/report/summary.ts';

const outcome = (o: Partial<TargetOutcome> & Pick<TargetOutcome, 'name' | 'verdict' | 'action'>): TargetOutcome => ({
  summary: '', reason: 'because', bad: [],
  evidence: [{ apiVersion: 'apps/v1', kind: 'Deployment', groupKind: 'apps/Deployment', namespace: 'prod', name: 'podinfo', state: 'failed', reason: 'ProgressDeadlineExceeded', message: 'a | b\nc <script>' }],
  ...o,
});

test('evidence cells stay one table row: quoted as code, pipes escaped, newlines shown, HTML neutralised', (t) => {
  const md = renderSummary({ targets: [outcome({ name: 'a', verdict: 'failed', action: 'alert' })] }, { dryRun: false });
  // inside a code span `<script>` is text; the line break shows as ␊ (revert/markup.ts)
  t.true(md.includes('| `apps/Deployment prod/podinfo` | failed | `ProgressDeadlineExceeded` |  | `a \\| b\u240ac <script>` |'), md);
  t.regex(md, /^## lastgood: `a` FAILED — not reverted$/m);
});

test('commit links use the forge URL when there is one; a dry run shows the diff', (t) => {
  const sha = 'a'.repeat(40);
  const md = renderSummary(
    { targets: [outcome({ name: 'a', verdict: 'failed', action: 'revert', bad: [sha], lastKnownGood: 'b'.repeat(40), diff: '--- a/x\n+++ b/x\n-1\n+2\n', diffStat: ' x | 2 +-' })] },
    { dryRun: true, commitUrl: (s) => `https://github.com/acme/gitops/commit/${s}` },
  );
  t.true(md.includes(`[\`${sha.slice(0, 12)}\`](https://github.com/acme/gitops/commit/${sha})`));
  t.regex(md, /would revert/);
  t.regex(md, /Dry run: nothing was written/);
  t.regex(md, /<details><summary>Diff \(dry run\)<\/summary>\n\n```diff\n--- a\/x/);
});

test('the single-valued outputs describe the target that did the most, then the worst verdict', (t) => {
  const healthy = outcome({ name: 'h', verdict: 'healthy', action: 'none' });
  const stuck = outcome({ name: 's', verdict: 'stuck', action: 'alert' });
  const failedWaiting = outcome({ name: 'w', verdict: 'failed', action: 'wait' });
  const failedAlert = outcome({ name: 'f', verdict: 'failed', action: 'alert' });
  const reverted = outcome({ name: 'r', verdict: 'failed', action: 'revert' });
  t.is(primaryOutcome({ targets: [healthy, failedWaiting, stuck] })?.name, 's');
  t.is(primaryOutcome({ targets: [stuck, failedAlert] })?.name, 'f');
  t.is(primaryOutcome({ targets: [healthy, reverted, failedAlert] })?.name, 'r');
  t.is(primaryOutcome({ targets: [] }), undefined);
  t.regex(renderSummary({ targets: [] }, { dryRun: false, event: 'x', unmatched: 'no configured target lists Kustomization a/b' }), /nothing to do[\s\S]*no configured target lists Kustomization a\/b/);
});
