import test from 'ava';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { TargetOutcome } from '../src/engine/index.ts';
import { redact } from '../src/errors.ts';
import { eventFor, notify } from '../src/report/notify.ts';
import { lastgood } from './support/cli.ts';
import { commit, makeRepo, tempDir, writeFile } from './support/git.ts';
import { kustomization, yamlDocs } from './support/objects.ts';

/** Notifications against a real HTTP server on 127.0.0.1 (issue 7). */

interface Received {
  path: string;
  body: any;
  headers: IncomingMessage['headers'];
}

async function receiver(status = 200, delayMs = 0): Promise<{ url: (p: string) => string; received: Received[]; close: () => Promise<void>; server: Server }> {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    let data = '';
    req.on('data', (d) => (data += d));
    req.on('end', () => {
      received.push({ path: req.url ?? '', body: data ? JSON.parse(data) : undefined, headers: req.headers });
      setTimeout(() => {
        res.statusCode = status;
        res.end(status === 200 ? 'ok' : 'no');
      }, delayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (p) => `http://127.0.0.1:${port}${p}`,
    received,
    server,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

function capture() {
  const lines: Array<{ level: string; obj: unknown; msg: string }> = [];
  const at = (level: string) => (obj: unknown, msg: string) => void lines.push({ level, obj, msg });
  return { lines, log: { warn: at('warn'), info: at('info'), debug: at('debug') } as unknown as Pick<Logger, 'warn' | 'info' | 'debug'> };
}

const outcome = (o: Partial<TargetOutcome>): TargetOutcome => ({
  name: 'podinfo-prod', verdict: 'failed', class: 'analysis', summary: 'failed (analysis): Canary prod/podinfo Failed 3m ago',
  evidence: [{ apiVersion: 'flagger.app/v1beta1', kind: 'Canary', groupKind: 'flagger.app/Canary', namespace: 'prod', name: 'podinfo', state: 'failed', reason: 'Failed', message: 'Canary analysis failed, Deployment scaled to zero.', since: '2026-11-01T12:00:00Z' }],
  action: 'alert', reason: 'failed (analysis): Canary prod/podinfo Failed 3m ago, alert', bad: [], ...o,
});

const now = new Date('2026-11-01T12:03:00Z');
const SECRET_PATH = '/services/T000/B000/s3cr3t-t0ken-xyz';

test('which outcomes notify: alert, revert done, revert failed; nothing for none, wait or an existing revert', (t) => {
  t.is(eventFor(outcome({ action: 'alert' })), 'alert');
  t.is(eventFor(outcome({ action: 'revert', commit: 'a'.repeat(40), created: true })), 'reverted');
  t.is(eventFor(outcome({ action: 'revert', commit: 'a'.repeat(40), created: false })), undefined);
  t.is(eventFor(outcome({ action: 'revert' })), undefined, 'a dry run wrote nothing');
  t.is(eventFor(outcome({ action: 'alert', reason: 'revert impossible: conflict in kustomization.yaml' })), 'revert-failed');
  t.is(eventFor(outcome({ action: 'alert', reason: 'revert failed: git: push rejected' })), 'revert-failed');
  t.is(eventFor(outcome({ action: 'alert', reason: "failed (analysis): …; the revert itself failed: the failing revision abc is lastgood's own revert" })), 'revert-failed');
  t.is(eventFor(outcome({ action: 'wait' })), undefined);
  t.is(eventFor(outcome({ action: 'none' })), undefined);
});

test('generic webhook and Slack: one POST per event per channel, with the documented payloads', async (t) => {
  const server = await receiver();
  try {
    const { log } = capture();
    const report = {
      targets: [
        outcome({ name: 'a', action: 'alert' }),
        outcome({ name: 'b', action: 'revert', reason: 'failed (analysis): …, revert', commit: 'c'.repeat(40), created: true, branch: 'main', bad: ['b'.repeat(40)], lastKnownGood: 'd'.repeat(40) }),
        outcome({ name: 'c', action: 'alert', reason: 'revert impossible: the bad commit is the first commit' }),
        outcome({ name: 'd', action: 'wait', reason: 'held: another promotion is running' }),
      ],
    };
    const deliveries = await notify(report, { env: { LASTGOOD_WEBHOOK_URL: server.url('/hook'), LASTGOOD_SLACK_WEBHOOK_URL: server.url(SECRET_PATH) }, log, now });
    t.is(deliveries.length, 6);
    t.true(deliveries.every((d) => d.ok));
    const hooks = server.received.filter((r) => r.path === '/hook').map((r) => r.body).sort((x, y) => x.target.localeCompare(y.target));
    t.deepEqual(hooks.map((h) => [h.target, h.event]), [['a', 'alert'], ['b', 'reverted'], ['c', 'revert-failed']]);
    t.like(hooks[1], { kind: 'lastgood.notification/v1', time: now.toISOString(), verdict: 'failed', class: 'analysis', action: 'revert', commit: 'c'.repeat(40), branch: 'main', bad: ['b'.repeat(40)], lastKnownGood: 'd'.repeat(40) });
    t.is(hooks[0].evidence[0].reason, 'Failed');
    const slack = server.received.filter((r) => r.path === SECRET_PATH);
    t.is(slack.length, 3);
    t.is(slack[0]!.headers['content-type'], 'application/json');
    const texts = slack.map((r) => r.body.text as string).sort();
    t.regex(texts.find((x) => x.includes('*b*'))!, /^:rewind: lastgood reverted: \*b\* failed \(analysis\)\n.*\ncommit: `cccccccccccc` on main\nbad: `bbbbbbbbbbbb`, back to `dddddddddddd`$/s);
    t.regex(texts.find((x) => x.includes('*c*'))!, /^:x: lastgood could not revert/);
  } finally {
    await server.close();
  }
});

test('URLs from config: an env var it names, or a file (a mounted Secret); events filter', async (t) => {
  const server = await receiver();
  try {
    const dir = tempDir('lastgood-notify-');
    const file = writeFile(dir, 'slack-url', `${server.url('/from-file')}\n`);
    const { log } = capture();
    const report = { targets: [outcome({ action: 'alert' }), outcome({ name: 'x', action: 'revert', commit: 'c'.repeat(40), created: true })] };
    await notify(report, {
      config: { webhook: { urlFrom: { env: 'MY_HOOK' } }, slack: { urlFrom: { file } }, events: ['reverted'], timeoutMs: 5_000 },
      env: { MY_HOOK: server.url('/from-env'), LASTGOOD_WEBHOOK_URL: server.url('/ignored') },
      log, now,
    });
    t.deepEqual(server.received.map((r) => r.path).sort(), ['/from-env', '/from-file']);
    t.true(server.received.every((r) => (r.body.event ?? 'reverted') === 'reverted' && !JSON.stringify(r.body).includes('"alert"')));
  } finally {
    await server.close();
  }
});

test('failures to notify are logged without the URL and never throw: 500, refused connection, timeout, unreadable file', async (t) => {
  const failing = await receiver(500);
  const slow = await receiver(200, 2000);
  const closed = await receiver();
  const closedUrl = closed.url(SECRET_PATH);
  await closed.close();
  try {
    const { lines, log } = capture();
    const report = { targets: [outcome({ action: 'alert' })] };
    const a = await notify(report, { env: { LASTGOOD_WEBHOOK_URL: failing.url(SECRET_PATH), LASTGOOD_SLACK_WEBHOOK_URL: closedUrl }, log, now });
    t.deepEqual(a.map((d) => d.ok), [false, false]);
    t.regex(a.find((d) => d.channel === 'webhook')!.detail, /HTTP 500/);
    const b = await notify(report, { config: { webhook: { urlFrom: { env: 'SLOW' } }, slack: { urlFrom: { file: '/nonexistent/slack-url' } }, events: ['alert'], timeoutMs: 200 }, env: { SLOW: slow.url(SECRET_PATH) }, log, now });
    t.is(b.length, 1);
    t.regex(b[0]!.detail, /no answer within 0\.2s/);
    const logged = JSON.stringify(lines);
    t.regex(logged, /notification failed/);
    t.regex(logged, /cannot read the notification URL file/);
    t.false(logged.includes('s3cr3t'), logged);
    t.false(logged.includes('127.0.0.1'), 'no URL in the logs');
    t.is(redact(`see ${failing.url(SECRET_PATH)}`), 'see ***', 'the URL is registered as a secret');
  } finally {
    await failing.close();
    await slow.close();
  }
});

test('through the CLI: an alert is posted, a failing webhook does not change the exit code or leak the URL', async (t) => {
  const repo = makeRepo();
  const c1 = commit(repo, { 'apps/podinfo/prod/kustomization.yaml': 'images: []\n' }, 'initial');
  const dir = tempDir('lastgood-notify-cli-');
  const config = writeFile(dir, 'lastgood.yaml', `repo:\n  url: ${repo}\ndefaults:\n  mode: commit\ntargets:\n  - name: podinfo-prod\n    paths: [apps/podinfo/prod/]\n    resources:\n      - { apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: apps }\n`);
  const snap = writeFile(dir, 'stuck.yaml', yamlDocs(kustomization({ attempted: `main@sha1:${c1}`, ready: 'Unknown', since: '2026-11-01T12:00:00Z' })));
  const server = await receiver();
  const failing = await receiver(503);
  try {
    const ok = await lastgood(['run', '--config', config, '--snapshot', snap, '--now', '2026-11-01T12:16:00Z', '--json'], { env: { LASTGOOD_WEBHOOK_URL: server.url('/hook') } });
    t.is(ok.code, 1, ok.stderr);
    t.is(server.received.length, 1);
    t.like(server.received[0]!.body, { event: 'alert', target: 'podinfo-prod', verdict: 'stuck', action: 'alert' });

    const bad = await lastgood(['run', '--config', config, '--snapshot', snap, '--now', '2026-11-01T12:16:00Z'], { env: { LASTGOOD_SLACK_WEBHOOK_URL: failing.url(SECRET_PATH) } });
    t.is(bad.code, 1, 'the exit code is the run\'s, not the notification\'s');
    t.regex(bad.stderr, /notification failed/);
    t.false(bad.stderr.includes('s3cr3t') || bad.stdout.includes('s3cr3t'));

    const dry = await lastgood(['run', '--config', config, '--snapshot', snap, '--now', '2026-11-01T12:16:00Z', '--dry-run'], { env: { LASTGOOD_WEBHOOK_URL: server.url('/hook') } });
    t.is(dry.code, 1);
    const check = await lastgood(['check', '--config', config, '--snapshot', snap, '--now', '2026-11-01T12:16:00Z'], { env: { LASTGOOD_WEBHOOK_URL: server.url('/hook') } });
    t.is(check.code, 1);
    t.is(server.received.length, 1, 'no notification from --dry-run or check');
  } finally {
    await server.close();
    await failing.close();
  }
});
