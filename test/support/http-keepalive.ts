import type { Server } from 'node:http';

/**
 * The emulators' servers (the hosts', the git server, the Kubernetes API, the webhook receiver) keep an idle connection as long as a host's front does (nginx's
 * keepalive_timeout: 75 s), not Node's 5 s. With Node's, a client that reused an idle connection
 * could have its request reset unread: client and server share the test worker's event loop, and
 * when a synchronous git command stalled that loop past 5 s, the server's idle timer ran (timers
 * come before reading the socket in Node's loop) and destroyed a socket whose request was already
 * written. Seen once in CI (audit-log on gitea: ECONNRESET on a POST, which a client must not send
 * again). The client still closes its idle connections after its own few seconds.
 */
export function keepAliveAsHosts(server: Server): void {
  server.keepAliveTimeout = 75_000;
}
