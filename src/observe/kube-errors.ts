import { CoreApi, type KubeConfig } from '@kubernetes/client-node';
import { RemoteError } from '../errors.ts';
import { whyUnreachable } from '../network.ts';

/**
 * What a failed Kubernetes API call tells a person: which server, and why — as kubectl says it
 * ("dial tcp 127.0.0.1:6443: connect: connection refused"), never client-node's bare "fetch
 * failed" or an HTTP dump with the response headers — and a server that does not answer as a
 * Kubernetes API said to be one that is not, rather than every object being "not found".
 */

/** The server the kubeconfig's current context points at (what a message names). */
export function kubeServer(kc: KubeConfig): string {
  return kc.getCurrentCluster()?.server ?? 'the cluster';
}

/** The HTTP status of a client-node ApiException; undefined for anything else (a network failure). */
export function httpStatus(error: unknown): number | undefined {
  const e = error as { code?: unknown; statusCode?: unknown } | undefined;
  const code = typeof e?.code === 'number' ? e.code : e?.statusCode;
  return typeof code === 'number' ? code : undefined;
}

/** A RemoteError naming the server and the cause, when `error` is a network failure (nothing answered); else undefined. */
export function unreachable(error: unknown, server: string): RemoteError | undefined {
  // an answer with a status is the server speaking, not a failure to reach it
  if (httpStatus(error) !== undefined) return undefined;
  const why = whyUnreachable(error);
  if (!why) return undefined;
  return new RemoteError('kubernetes', `cannot reach the Kubernetes API at ${server}: ${why}`, { cause: error });
}

/** An API answer in a line: "HTTP 403 Forbidden: <the Status message>" instead of client-node's dump with headers. */
export function apiMessage(error: unknown): string {
  const status = httpStatus(error);
  const body = (error as { body?: unknown }).body;
  if (status === undefined || body === undefined) return (error as Error).message;
  let parsed: unknown = body;
  if (typeof body === 'string') {
    try {
      parsed = JSON.parse(body);
    } catch {
      // not JSON: the text itself
    }
  }
  const s = parsed as { message?: unknown; reason?: unknown } | null;
  const said = s && typeof s === 'object' && typeof s.message === 'string' ? s.message : String(typeof parsed === 'string' ? parsed : JSON.stringify(parsed)).trim();
  const reason = s && typeof s === 'object' && typeof s.reason === 'string' ? ` ${s.reason}` : '';
  return `HTTP ${status}${reason}${said ? `: ${said.length > 300 ? `${said.slice(0, 300)}…` : said}` : ''}`;
}

/**
 * Whether the server is a Kubernetes API: GET /api answers the APIVersions every API server lists
 * (kubectl's discovery starts there). Asked when an object read answered 404, which is also what any
 * web server answers for a path it does not have: without this, a kubeconfig pointing at the wrong
 * port or host read every object as "not found" and the run went on, exit 0. Resolves when it is (or
 * when /api refuses the credentials: then something there checks them, and the 404 stands); throws
 * a RemoteError (exit 3) naming the server otherwise.
 */
export async function checkKubernetesApi(kc: KubeConfig): Promise<void> {
  const server = kubeServer(kc);
  let versions: unknown;
  try {
    versions = (await kc.makeApiClient(CoreApi).getAPIVersions()).versions;
  } catch (error) {
    const down = unreachable(error, server);
    if (down) throw down;
    const status = httpStatus(error);
    if (status === 401 || status === 403) return;
    throw new RemoteError('kubernetes', `the server at ${server} is not a Kubernetes API: GET /api answered ${status !== undefined ? apiMessage(error) : (error as Error).message}; check the kubeconfig's server (or --context)`, { status, cause: error });
  }
  if (!Array.isArray(versions)) throw new RemoteError('kubernetes', `the server at ${server} is not a Kubernetes API: GET /api answered without the API versions a Kubernetes API lists; check the kubeconfig's server (or --context)`);
}

/**
 * A Kubernetes API error for a log line: the server and the cause where nothing answered, the
 * answer's status and message where one came ("HTTP 403 Forbidden: …"), never client-node's dump
 * of the response with its headers.
 */
export function kubeErrorText(error: unknown, server: string): string {
  const down = unreachable(error, server);
  if (down) return down.message;
  if (httpStatus(error) !== undefined) return apiMessage(error);
  return error instanceof Error ? error.message : String(error);
}
