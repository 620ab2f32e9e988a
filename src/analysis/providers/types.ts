import type { MetricValue } from '../types.ts';

/**
 * A metric provider: answers a query at an instant. One implementation per provider, in its own
 * folder beside the registry (prometheus/ now; Datadog, New Relic, CloudWatch can follow).
 *
 * - An answer is a MetricValue.
 * - A provider that cannot be reached (network, timeout, 5xx, 429, refused credentials) throws
 *   RemoteError (src/errors.ts, system = the provider): the check is `unknown`, never failed.
 * - A provider that answers with an error for this query (bad syntax, a query it cannot run)
 *   throws QueryRejected: a measurement in phase Error, as Argo Rollouts counts it.
 */
export interface MetricProvider {
  /** registry key, e.g. "prometheus" */
  readonly name: string;
  /** where it is, for messages (no credentials) */
  readonly address: string;
  query(query: string, at: number): Promise<MetricValue>;
}

export class QueryRejected extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'QueryRejected';
  }
}

/** What lastgood.yaml says about a provider (`analysis.<provider>`), as the registry passes it on. */
export interface ProviderSettings {
  address?: string;
  timeoutMs?: number;
  headers?: Record<string, string>;
  auth?: {
    tokenEnv?: string;
    tokenFile?: string;
    username?: string;
    usernameEnv?: string;
    passwordEnv?: string;
    passwordFile?: string;
  };
}

/** What a provider needs besides its settings: the config file's folder (auth files) and the environment. */
export interface ProviderContext {
  relativeTo: string;
  env: Record<string, string | undefined>;
  /** the HTTP client (tests and the benchmark pass their own dispatcher-bound fetch; default: global fetch) */
  fetch?: typeof fetch;
}
