/**
 * `lastgood status --controller URL`: asks a running controller for its GET /targets. The
 * controller is an outside system here: an address that does not answer, or answers something
 * else, is a RemoteError (exit 3) that says what was asked and what came back.
 */
import { InputError, RemoteError } from '../errors.ts';
import { TARGETS_PATH, type TargetsDocument } from './status.ts';

const TIMEOUT_MS = 10_000;

export async function fetchTargets(base: string): Promise<TargetsDocument> {
  let url: URL;
  try {
    url = new URL(TARGETS_PATH, base.endsWith('/') ? base : `${base}/`);
  } catch {
    throw new InputError(`--controller ${JSON.stringify(base)}: not a URL (like http://127.0.0.1:8080)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new InputError(`--controller ${base}: expected an http:// or https:// URL`);
  let res: Response;
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(TIMEOUT_MS), headers: { accept: 'application/json' } });
  } catch (error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    throw new RemoteError('controller', `${url.href} did not answer (${cause?.code ?? cause?.message ?? (error as Error).message}); is the controller running, and the port forwarded (kubectl -n lastgood port-forward svc/lastgood-controller 8080)?`, { cause: error });
  }
  const text = await res.text();
  if (!res.ok) throw new RemoteError('controller', `${url.href} answered ${res.status}: ${text.slice(0, 200).trim()}`, { status: res.status });
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new RemoteError('controller', `${url.href} did not answer JSON: ${text.slice(0, 200).trim()}`);
  }
  if (typeof doc !== 'object' || doc === null || !Array.isArray((doc as { targets?: unknown }).targets)) throw new RemoteError('controller', `${url.href} did not answer a lastgood controller's targets document`);
  return doc as TargetsDocument;
}
