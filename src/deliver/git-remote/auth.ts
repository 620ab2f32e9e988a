import path from 'node:path';
import { ConfigError, registerSecret } from '../../errors.ts';
import { MAX_SECRET_FILE_BYTES, readTextWithin } from '../../read-within.ts';

/**
 * Credentials for a git host over HTTPS, from the environment or from files (a mounted Kubernetes
 * secret), as `repo.auth` names them. Values are registered with the scrubber the moment they are
 * read, so that no output can carry them; only `source` (which variable or file) is ever shown.
 */

export interface GitAuthConfig {
  /** a token, sent as the password of Basic auth (or as a Bearer token with scheme: bearer) */
  tokenEnv?: string;
  tokenFile?: string;
  /** the Basic user name sent with a token (default: the host's convention) */
  username?: string;
  usernameEnv?: string;
  usernameFile?: string;
  passwordEnv?: string;
  passwordFile?: string;
  scheme?: 'basic' | 'bearer';
}

export interface GitCredentials {
  /** the Authorization header value */
  header: string;
  /** where the secret came from, for messages ("environment variable LASTGOOD_GIT_TOKEN") */
  source: string;
  /** the secret itself (registered with the scrubber), for a host API that takes it in its own header */
  secret: string;
  /** a token, or a password that goes with `username` */
  kind: 'token' | 'password';
  /** the Basic user name sent with it (undefined with scheme: bearer) */
  username?: string;
  /** the name of the environment variable it came from, when it did (GitLab's CI_JOB_TOKEN is told apart by it) */
  env?: string;
}

/** The default token variable when repo.auth is absent. */
export const DEFAULT_TOKEN_ENV = 'LASTGOOD_GIT_TOKEN';

/** The Basic user name each host expects with an access token. */
export function tokenUser(host: string, provider?: string): string {
  if (provider === 'gitlab') return 'oauth2';
  if (provider === 'bitbucket') return 'x-token-auth';
  if (provider === 'github') return 'x-access-token';
  if (/(^|\.)github\.com$/.test(host) || host.includes('github')) return 'x-access-token';
  if (/(^|\.)bitbucket\.org$/.test(host)) return 'x-token-auth';
  if (host.includes('gitlab')) return 'oauth2';
  return 'lastgood';
}

interface Where {
  configFile?: string;
  /** files are resolved against this folder (the config file's) */
  relativeTo: string;
  env: Record<string, string | undefined>;
}

function fromEnv(name: string, field: string, where: Where): { value: string; source: string } {
  const value = where.env[name];
  if (value === undefined || value.trim() === '') throw new ConfigError(`repo.auth.${field}: environment variable ${name} is not set or empty`, where.configFile ? { file: where.configFile } : {});
  return { value: value.trim(), source: `environment variable ${name}` };
}

function fromFile(file: string, field: string, where: Where): { value: string; source: string } {
  const full = path.resolve(where.relativeTo, file);
  let text: string | undefined;
  try {
    text = readTextWithin(full, MAX_SECRET_FILE_BYTES);
  } catch (error) {
    throw new ConfigError(`repo.auth.${field}: cannot read ${full} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`, { ...(where.configFile ? { file: where.configFile } : {}), cause: error });
  }
  if (text === undefined) throw new ConfigError(`repo.auth.${field}: ${full} holds more than ${MAX_SECRET_FILE_BYTES >> 10} KiB, the most lastgood reads as a credential (is it the right file?)`, where.configFile ? { file: where.configFile } : {});
  const value = text.trim();
  if (!value) throw new ConfigError(`repo.auth.${field}: ${full} is empty`, where.configFile ? { file: where.configFile } : {});
  return { value, source: `file ${full}` };
}

function pick(cfg: GitAuthConfig, envKey: keyof GitAuthConfig, fileKey: keyof GitAuthConfig, where: Where): { value: string; source: string } | undefined {
  const env = cfg[envKey] as string | undefined;
  const file = cfg[fileKey] as string | undefined;
  if (env && file) throw new ConfigError(`repo.auth: give ${envKey} or ${fileKey}, not both`, where.configFile ? { file: where.configFile } : {});
  if (env) return fromEnv(env, envKey, where);
  if (file) return fromFile(file, fileKey, where);
  return undefined;
}

/**
 * The credentials repo.auth describes; without repo.auth, the token in LASTGOOD_GIT_TOKEN when it
 * is set, else none (a public repository, or a server that needs no credentials).
 */
export function loadCredentials(cfg: GitAuthConfig | undefined, host: string, where: Where, opts: { provider?: string } = {}): GitCredentials | undefined {
  if (!cfg) {
    const token = where.env[DEFAULT_TOKEN_ENV]?.trim();
    if (!token) return undefined;
    return { ...basic(tokenUser(host, opts.provider), token, `environment variable ${DEFAULT_TOKEN_ENV}`), kind: 'token', env: DEFAULT_TOKEN_ENV };
  }
  const token = pick(cfg, 'tokenEnv', 'tokenFile', where);
  const password = pick(cfg, 'passwordEnv', 'passwordFile', where);
  const user = pick(cfg, 'usernameEnv', 'usernameFile', where);
  if (token && password) throw new ConfigError('repo.auth: give a token or a password, not both', where.configFile ? { file: where.configFile } : {});
  if (user && cfg.username) throw new ConfigError('repo.auth: give username or usernameEnv/usernameFile, not both', where.configFile ? { file: where.configFile } : {});
  const secret = token ?? password;
  if (!secret) throw new ConfigError('repo.auth: name the secret: tokenEnv or tokenFile, or passwordEnv or passwordFile (with a user name)', where.configFile ? { file: where.configFile } : {});
  const kind = token ? ('token' as const) : ('password' as const);
  const env = token ? cfg.tokenEnv : cfg.passwordEnv;
  if (cfg.scheme === 'bearer') {
    registerSecret(secret.value);
    return { header: `Bearer ${secret.value}`, source: secret.source, secret: secret.value, kind, ...(env ? { env } : {}) };
  }
  // GitLab's CI job token goes with the user name GitLab gives it
  const name = user?.value ?? cfg.username ?? (token ? (env === 'CI_JOB_TOKEN' ? 'gitlab-ci-token' : tokenUser(host, opts.provider)) : undefined);
  if (!name) throw new ConfigError('repo.auth: a password needs a user name (username, usernameEnv or usernameFile)', where.configFile ? { file: where.configFile } : {});
  return { ...basic(name, secret.value, user ? `${secret.source} and ${user.source}` : secret.source), kind, ...(env ? { env } : {}) };
}

function basic(user: string, secret: string, source: string): Omit<GitCredentials, 'kind'> {
  registerSecret(secret);
  const encoded = Buffer.from(`${user}:${secret}`).toString('base64');
  registerSecret(encoded);
  return { header: `Basic ${encoded}`, source, secret, username: user };
}
