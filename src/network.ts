/**
 * Why nothing answered, in words a person can act on: which failure (Node's and undici's error
 * codes, found under the error's `cause` chain and an AggregateError's `errors`), as kubectl and
 * git say it ("connect: connection refused"), never a client's bare "fetch failed" or an HTTP
 * client's "500" for a request that never reached a server. Every door to a remote (the
 * Kubernetes API, git over HTTPS, the host APIs) names the server it could not reach with these.
 */

/** The network failures a person can act on, in words. */
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
  DEPTH_ZERO_SELF_SIGNED_CERT: "TLS: the server's certificate is self-signed and no certificate authority given names it",
  SELF_SIGNED_CERT_IN_CHAIN: "TLS: the server's certificate chain ends in a certificate authority lastgood was not given",
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: "TLS: the server's certificate is not signed by a certificate authority lastgood was given",
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: "TLS: the server's certificate is not signed by a certificate authority lastgood was given",
  CERT_HAS_EXPIRED: "TLS: the server's certificate has expired",
  ERR_TLS_CERT_ALTNAME_INVALID: "TLS: the server's certificate is not for this host name",
  ERR_SSL_WRONG_VERSION_NUMBER: 'TLS: the server does not speak TLS there (an http:// server named as https://?)',
};

/** The network failure under an error: its code (when one is given) and message; undefined when the error is not one. */
export function networkCause(error: unknown): { code: string | undefined; message: string } | undefined {
  const seen = new Set<unknown>();
  let deepest: string | undefined;
  let fetchFailed = false;
  const walk = (e: unknown): { code: string; message: string } | undefined => {
    if (!e || typeof e !== 'object' || seen.has(e)) return undefined;
    seen.add(e);
    const { code, message, cause, errors } = e as { code?: unknown; message?: unknown; cause?: unknown; errors?: unknown };
    if (typeof message === 'string' && message) {
      deepest = message;
      // undici's fetch: TypeError("fetch failed") with the reason as its cause ("bad port", ...)
      if (/^fetch failed$/.test(message) && cause !== undefined) fetchFailed = true;
    }
    if (typeof code === 'string' && /^[A-Z][A-Z0-9_]+$/.test(code)) return { code, message: typeof message === 'string' ? message : code };
    for (const inner of [cause, ...(Array.isArray(errors) ? errors : [])]) {
      const found = walk(inner);
      if (found) return found;
    }
    return undefined;
  };
  const found = walk(error);
  if (found) return found;
  if (fetchFailed) return { code: undefined, message: deepest ?? 'fetch failed' };
  return undefined;
}

/** "connection refused (ECONNREFUSED)": the words for a network failure's cause. */
export function networkWords(cause: { code: string | undefined; message: string }): string {
  return cause.code ? `${NETWORK[cause.code] ?? cause.message} (${cause.code})` : cause.message;
}

/** "connection refused (ECONNREFUSED)" when `error` is a network failure (nothing answered); undefined otherwise. */
export function whyUnreachable(error: unknown): string | undefined {
  const cause = networkCause(error);
  return cause ? networkWords(cause) : undefined;
}
