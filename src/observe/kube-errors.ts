import { CoreApi, type KubeConfig } from '@kubernetes/client-node';
import { RemoteError } from '../errors.ts';

/**
 * What a failed Kubernetes API call tells a person: which server, and why — as kubectl says it
 * ("dial tcp 127.0.0.1:6443: connect: connection refused"), never client-node's bare "fetch
 * failed" or an HTTP dump with the response headers — and a server that does not answer as a
 * Kubernetes API said to be one that is not, rather than every object being "not found".
 */

/** The network failures a person can act on, in words (Node's and undici's codes). */
const NETWORK: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'the connection was reset',
  EPIPE: 'the connection was closed',
  UND_ERR_SOCKET: 'the connection was closed',
  ENOTFOUND: 'no such host',
  EAI_AGAIN: 'the host name could not be resolved (DNS did not answer)',
  ETIMEDOUT: 'the connection timed out',
  UND_ERR_CONNECT_TIMEOUT: 'the connection timed out',
  UND_ERR_HEADERS_TIMEOUT: 'the server sent no answer in time',
  EHOSTUNREACH: 'no route to host',
  ENETUNREACH: 'the network is unreachable',
  DEPTH_ZERO_SELF_SIGNED_CERT: "TLS: the server's certificate is self-signed and the kubeconfig names no certificate-authority for it",
  SELF_SIGNED_CERT_IN_CHAIN: "TLS: the server's certificate chain ends in a CA the kubeconfig does not name",
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: "TLS: the server's certificate is not signed by the kubeconfig's certificate-authority",
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: "TLS: the server's certificate is not signed by the kubeconfig's certificate-authority",
  CERT_HAS_EXPIRED: "TLS: the server's certificate has expired",
  ERR_TLS_CERT_ALTNAME_INVALID: "TLS: the server's certificate is not for this host name",
  ERR_SSL_WRONG_VERSION_NUMBER: 'TLS: the server does not speak TLS there (an http:// server named as https://?)',
};

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

/** The network cause under an error (its `cause` chain, an AggregateError's errors): its code and message. */
function networkCause(error: unknown): { code: string | undefined; message: string } | undefined {
  const seen = new Set<unknown>();
  let deepest: string | undefined;
  const walk = (e: unknown): { code: string; message: string } | undefined => {
    if (!e || typeof e !== 'object' || seen.has(e)) return undefined;
    seen.add(e);
    const { code, message, cause, errors } = e as { code?: unknown; message?: unknown; cause?: unknown; errors?: unknown };
    if (typeof message === 'string' && message) deepest = message;
    if (typeof code === 'string' && /^[A-Z][A-Z0-9_]+$/.test(code)) return { code, message: typeof message === 'string' ? message : code };
    for (const inner of [cause, ...(Array.isArray(errors) ? errors : [])]) {
      const found = walk(inner);
      if (found) return found;
    }
    return undefined;
  };
  if (httpStatus(error) !== undefined) return undefined;
  const found = walk(error);
  if (found) return found;
  // undici's fetch: TypeError("fetch failed") with the reason as its cause ("bad port", ...)
  const top = error as { message?: unknown; cause?: unknown } | undefined;
  if (top && top.cause !== undefined && typeof top.message === 'string' && /fetch failed/.test(top.message)) return { code: undefined, message: deepest ?? top.message };
  return undefined;
}

/** A RemoteError naming the server and the cause, when `error` is a network failure (nothing answered); else undefined. */
export function unreachable(error: unknown, server: string): RemoteError | undefined {
  const cause = networkCause(error);
  if (!cause) return undefined;
  const why = cause.code ? `${NETWORK[cause.code] ?? cause.message} (${cause.code})` : cause.message;
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
