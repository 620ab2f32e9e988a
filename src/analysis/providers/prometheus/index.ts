/**
 * Prometheus' HTTP API (https://prometheus.io/docs/prometheus/latest/querying/api/): an instant
 * query `POST /api/v1/query` with `query` and `time`, as the client Argo Rollouts uses does
 * (prometheus/client_golang api/prometheus/v1: Query posts the form, DoGetFallback). PromQL is
 * evaluated by Prometheus; lastgood only reads the answer.
 *
 * - 200 `status: success`: the result, by `resultType` (vector, scalar, matrix, string); sample
 *   values are strings ("0.05", "NaN", "+Inf").
 * - 400 / 422 `status: error` (`bad_data`, `execution`): the query itself is wrong or cannot run:
 *   QueryRejected (a measurement in Error).
 * - anything else (connection refused, a timeout, 5xx, 429, 401/403, an answer that is not
 *   Prometheus'): RemoteError('prometheus'), after one more try for a network error or a 5xx.
 */
import path from 'node:path';
import { z } from 'zod';
import { ConfigError, RemoteError, registerSecret } from '../../../errors.ts';
import { MAX_SECRET_FILE_BYTES, readTextWithin } from '../../../read-within.ts';
import { parseGoFloat } from '../../expr.ts';
import type { MetricValue } from '../../types.ts';
import { QueryRejected, type MetricProvider, type ProviderContext, type ProviderSettings } from '../types.ts';
import { backoffDelay, sleep } from '../../../retry.ts';

const Sample = z.tuple([z.number(), z.string()]);
const Answer = z.discriminatedUnion('status', [
  z.object({
    status: z.literal('success'),
    data: z.discriminatedUnion('resultType', [
      z.object({ resultType: z.literal('vector'), result: z.array(z.object({ metric: z.record(z.string(), z.string()), value: Sample })) }),
      z.object({ resultType: z.literal('matrix'), result: z.array(z.object({ metric: z.record(z.string(), z.string()), values: z.array(Sample) })) }),
      z.object({ resultType: z.literal('scalar'), result: Sample }),
      z.object({ resultType: z.literal('string'), result: Sample }),
    ]),
    warnings: z.array(z.string()).optional(),
  }),
  z.object({ status: z.literal('error'), errorType: z.string(), error: z.string() }),
]);

/** Argo Rollouts' default query timeout (metricproviders/prometheus/prometheus.go:199). */
export const DEFAULT_TIMEOUT_MS = 30_000;
const RETRY_DELAY_MS = 250;

function secret(settings: ProviderSettings['auth'], field: 'token' | 'username' | 'password', ctx: ProviderContext): string | undefined {
  const envName = settings?.[`${field}Env` as 'tokenEnv'];
  const file = settings?.[`${field}File` as 'tokenFile'];
  if (envName) {
    const v = ctx.env[envName]?.trim();
    if (!v) throw new ConfigError(`analysis.prometheus.auth.${field}Env: environment variable ${envName} is not set or empty`);
    return v;
  }
  if (file) {
    let text: string | undefined;
    try {
      text = readTextWithin(path.resolve(ctx.relativeTo, file), MAX_SECRET_FILE_BYTES);
    } catch (error) {
      throw new ConfigError(`analysis.prometheus.auth.${field}File: cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? error}`);
    }
    if (text === undefined) throw new ConfigError(`analysis.prometheus.auth.${field}File: ${file} holds more than ${MAX_SECRET_FILE_BYTES >> 10} KiB, the most lastgood reads as a credential (is it the right file?)`);
    return text.trim();
  }
  return field === 'username' ? settings?.username : undefined;
}

function authorization(settings: ProviderSettings, ctx: ProviderContext): string | undefined {
  const token = secret(settings.auth, 'token', ctx);
  if (token) {
    registerSecret(token);
    return `Bearer ${token}`;
  }
  const password = secret(settings.auth, 'password', ctx);
  if (password === undefined) return undefined;
  registerSecret(password);
  const user = secret(settings.auth, 'username', ctx) ?? '';
  const basic = Buffer.from(`${user}:${password}`).toString('base64');
  registerSecret(basic);
  return `Basic ${basic}`;
}

function sampleValue(s: string): number {
  return parseGoFloat(s);
}

export function createPrometheus(address: string, settings: ProviderSettings, ctx: ProviderContext): MetricProvider {
  let base: URL;
  try {
    base = new URL(address);
  } catch {
    throw new ConfigError(`prometheus address is not a URL: ${JSON.stringify(address)}`);
  }
  if (base.username || base.password) throw new ConfigError('analysis.prometheus.address: credentials in the URL are refused; use analysis.prometheus.auth');
  if (!/^https?:$/.test(base.protocol)) throw new ConfigError(`prometheus address must be http(s): ${address}`);
  const endpoint = new URL(`${base.pathname.replace(/\/$/, '')}/api/v1/query`, base);
  const auth = authorization(settings, ctx);
  // answers are a few samples: compressing them costs more than it saves (a zlib stream per query was the largest cost at 1,000 checks)
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json', 'accept-encoding': 'identity', ...(settings.headers ?? {}), ...(auth ? { authorization: auth } : {}) };
  const timeoutMs = settings.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const doFetch = ctx.fetch ?? fetch;
  const where = `${base.origin}${base.pathname.replace(/\/$/, '')}`;

  async function once(query: string, at: number): Promise<{ status: number; text: string }> {
    const body = new URLSearchParams({ query, time: (at / 1000).toFixed(3) });
    const res = await doFetch(endpoint, { method: 'POST', headers, body, signal: AbortSignal.timeout(timeoutMs), redirect: 'error' });
    return { status: res.status, text: await res.text() };
  }

  return {
    name: 'prometheus',
    address: where,
    async query(query, at) {
      let answer: { status: number; text: string } | undefined;
      let failure: unknown;
      for (let attempt = 0; attempt < 2; attempt++) {
        try {
          answer = await once(query, at);
          failure = undefined;
          if (answer.status < 500 && answer.status !== 429) break;
        } catch (error) {
          failure = error;
        }
        if (attempt === 0) await sleep(backoffDelay(attempt, { baseMs: RETRY_DELAY_MS }));
      }
      if (!answer) {
        const cause = failure as { name?: string; message?: string; cause?: { code?: string; message?: string } };
        const why = cause?.name === 'TimeoutError' ? `no answer within ${timeoutMs / 1000}s` : (cause?.cause?.code ?? cause?.cause?.message ?? cause?.message ?? String(failure));
        throw new RemoteError('prometheus', `${where} unreachable: ${why}`, { cause: failure });
      }
      let json: unknown;
      try {
        json = JSON.parse(answer.text);
      } catch {
        json = undefined;
      }
      const parsed = Answer.safeParse(json);
      if (answer.status === 400 || answer.status === 422) {
        if (parsed.success && parsed.data.status === 'error') throw new QueryRejected(`Prometheus refused the query (${parsed.data.errorType}): ${parsed.data.error}`);
      }
      if (answer.status !== 200 || !parsed.success) {
        const detail = parsed.success && parsed.data.status === 'error' ? `${parsed.data.errorType}: ${parsed.data.error}` : answer.text.slice(0, 200);
        const hint = answer.status === 401 || answer.status === 403 ? ' (check analysis.prometheus.auth)' : '';
        throw new RemoteError('prometheus', `${where} answered HTTP ${answer.status}${hint}: ${detail}`, { status: answer.status });
      }
      const data = parsed.data;
      if (data.status === 'error') throw new QueryRejected(`Prometheus refused the query (${data.errorType}): ${data.error}`);
      return toValue(data.data);
    },
  };
}

function toValue(data: Extract<z.output<typeof Answer>, { status: 'success' }>['data']): MetricValue {
  switch (data.resultType) {
    case 'vector':
      return { type: 'vector', values: data.result.map((s) => sampleValue(s.value[1])) };
    case 'matrix':
      return { type: 'matrix', values: data.result.flatMap((s) => s.values.map((v) => sampleValue(v[1]))) };
    case 'scalar':
      return { type: 'scalar', value: sampleValue(data.result[1]) };
    case 'string':
      return { type: 'string', value: data.result[1] };
  }
}
