import test from 'ava';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hookPayload, runHook } from '../src/decide/hook.ts';
import type { Verdict } from '../src/decide/types.ts';
import { tempDir, writeFile } from './support/git.ts';

/** Recovery hooks: a URL (real HTTP server on 127.0.0.1) or a command, with a timeout; never throws. */

const verdict: Verdict = {
  target: 'podinfo-prod', verdict: 'failed', class: 'promotion', since: '2026-11-01T12:00:00Z',
  summary: 'failed (promotion): Canary prod/podinfo PromotionFailed 11m ago',
  evidence: [{ apiVersion: 'flagger.app/v1beta1', kind: 'Canary', groupKind: 'flagger.app/Canary', namespace: 'prod', name: 'podinfo', state: 'failed', reason: 'PromotionFailed', message: 'primary not ready', since: '2026-11-01T12:00:00Z', attempted: { sha: 'c'.repeat(40) } }],
};
const payload = hookPayload(verdict, { action: 'revert', reason: 'not healed within 10m, revert' }, new Date('2026-11-01T12:11:00Z'));

async function server(handler: (body: string) => { status: number; delayMs?: number }) {
  const bodies: string[] = [];
  const s = createServer((req, res) => {
    let data = '';
    req.on('data', (d) => (data += d));
    req.on('end', () => {
      bodies.push(data);
      const { status, delayMs } = handler(data);
      setTimeout(() => { res.statusCode = status; res.end(status < 300 ? 'scaled primary up' : 'nope'); }, delayMs ?? 0);
    });
  });
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(s.address() as AddressInfo).port}/heal/t0ken-abcdef`;
  return { url, bodies, close: () => new Promise<void>((r) => { s.closeAllConnections(); s.close(() => r()); }) };
}

test('URL hook: POSTs the verdict as JSON; 2xx is success', async (t) => {
  const s = await server(() => ({ status: 202 }));
  try {
    const r = await runHook({ spec: { url: s.url }, timeoutMs: 5000 }, payload);
    t.true(r.ok);
    t.is(r.detail, 'answered 202: scaled primary up');
    const body = JSON.parse(s.bodies[0]!);
    t.like(body, { kind: 'lastgood.hook/v1', target: 'podinfo-prod', verdict: 'failed', class: 'promotion', action: 'revert' });
    t.is(body.evidence[0].revision, 'c'.repeat(40));
  } finally {
    await s.close();
  }
});

test('URL hook: non-2xx, timeout and refused connections fail, without the URL in the detail', async (t) => {
  const s = await server((body) => ({ status: body.includes('slow') ? 200 : 500, delayMs: body.includes('slow') ? 1500 : 0 }));
  try {
    const bad = await runHook({ spec: { url: s.url }, timeoutMs: 5000 }, payload);
    t.false(bad.ok);
    t.regex(bad.detail, /^answered 500 Internal Server Error: nope$/);
    const slow = await runHook({ spec: { url: s.url }, timeoutMs: 200 }, { slow: true });
    t.false(slow.ok);
    t.is(slow.detail, 'no answer within 0.2s');
  } finally {
    await s.close();
  }
  const refused = await runHook({ spec: { url: s.url }, timeoutMs: 2000 }, payload);
  t.false(refused.ok);
  t.is(refused.detail, 'request failed: ECONNREFUSED');
});

test('command hook: stdin gets the verdict; exit 0 succeeds, other exits, timeouts and missing programs fail', async (t) => {
  const dir = tempDir('lastgood-hook-');
  const echo = writeFile(dir, 'echo.sh', '#!/bin/sh\nbody=$(cat)\necho "$body" | grep -q podinfo-prod && echo "target seen"\n');
  const ok = await runHook({ spec: { command: ['sh', echo] }, timeoutMs: 5000 }, payload);
  t.true(ok.ok, ok.detail);
  t.is(ok.detail, 'sh exited 0: target seen');
  const fail = await runHook({ spec: { command: ['sh', '-c', 'echo "primary still down" >&2; exit 4'] }, timeoutMs: 5000 }, payload);
  t.false(fail.ok);
  t.is(fail.detail, 'sh exited 4: primary still down');
  const hang = await runHook({ spec: { command: ['sleep', '10'] }, timeoutMs: 300 }, payload);
  t.false(hang.ok);
  t.is(hang.detail, 'sleep did not finish within 0.3s (killed)');
  t.true(hang.ms < 10_000, `${hang.ms}ms: killed, not the 10s it would take`);
  const missing = await runHook({ spec: { command: ['/nonexistent/heal'] }, timeoutMs: 1000 }, payload);
  t.false(missing.ok);
  t.regex(missing.detail, /^\/nonexistent\/heal could not start: .*ENOENT/);
  const ignoresStdin = await runHook({ spec: { command: ['true'] }, timeoutMs: 5000 }, { big: 'x'.repeat(1_000_000) });
  t.true(ignoresStdin.ok, 'a hook that does not read stdin is fine');
});
