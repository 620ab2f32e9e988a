import type { GitAuthConfig } from './auth.ts';
import type { SigningConfig } from './signing.ts';

/** The parts of `repo` in lastgood.yaml the git backend reads (its own module: match.ts and index.ts both take it). */
export interface GitRemoteConfig {
  auth?: GitAuthConfig;
  cacheDir?: string;
  insecure?: boolean;
  transport?: 'auto' | 'api' | 'git';
  signing?: SigningConfig;
  provider?: string;
}
