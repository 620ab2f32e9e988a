import type { Revision } from './types.ts';

const GIT_SHA = /^[0-9a-f]{7,64}$/i;

/**
 * Parses a revision as GitOps engines report it (Flux RFC-0005 and older forms):
 * - `main@sha1:<sha>`, `refs/heads/main@sha1:<sha>`, `v1.0.1@sha1:<sha>` → ref + sha
 * - `sha1:<sha>` → sha
 * - legacy Flux < 2.0 `main/<sha>` → ref + sha
 * - OCI `latest@sha256:<digest>` → ref only (a digest is not a git commit)
 * - a bare 40-hex commit (Argo CD `sync.revision`) → sha
 * - anything else (a chart version "6.0.1", a tag) → raw only
 * The SHA is lower-cased; `raw` always keeps the original text.
 */
export function parseRevision(raw: string): Revision {
  const text = raw.trim();
  const revision: Revision = { raw };
  if (!text) return revision;

  // RFC-0005: "<named pointer>@<algo>:<checksum>", split on the last "@".
  const at = text.lastIndexOf('@');
  const pointer = at >= 0 ? text.slice(0, at) : '';
  const digest = at >= 0 ? text.slice(at + 1) : text;
  const algo = /^(sha1|sha256|sha384|sha512|blake3):([0-9a-f]+)$/i.exec(digest);
  if (algo) {
    if (pointer) revision.ref = shortRef(pointer);
    if (algo[1]!.toLowerCase() === 'sha1' && GIT_SHA.test(algo[2]!)) revision.sha = algo[2]!.toLowerCase();
    return revision;
  }

  // Legacy Flux: "<branch>/<sha>" (the branch may itself contain slashes).
  const slash = text.lastIndexOf('/');
  if (slash > 0) {
    const tail = text.slice(slash + 1);
    if (/^[0-9a-f]{40}$/i.test(tail)) {
      revision.ref = shortRef(text.slice(0, slash));
      revision.sha = tail.toLowerCase();
      return revision;
    }
  }

  // A bare full commit SHA (Argo CD, Kargo).
  if (/^[0-9a-f]{40}$/i.test(text) || /^[0-9a-f]{64}$/i.test(text)) {
    revision.sha = text.toLowerCase();
    return revision;
  }
  return revision;
}

/** "refs/heads/main" → "main"; tags and other refs are kept as given. */
function shortRef(ref: string): string {
  return ref.startsWith('refs/heads/') ? ref.slice('refs/heads/'.length) : ref;
}

/** parseRevision for a value that may be missing or not a string. */
export function revisionOf(value: unknown): Revision | undefined {
  return typeof value === 'string' && value.trim() !== '' ? parseRevision(value) : undefined;
}

/**
 * Where a Helm chart's `+<metadata>` build suffix came from, which decides what it means:
 * - `git`: source-controller builds charts from a GitRepository with reconcileStrategy Revision as
 *   `<version>+<first 12 hex of the commit>` (`.<generation>` appended when valuesFiles are set),
 *   fluxcd/source-controller internal/controller/helmchart_controller.go (`rev = rev[0:12]`);
 * - `not-git`: helm-controller appends the first 12 hex of an OCIRepository/ExternalArtifact digest,
 *   source-controller those of a Bucket digest, a HelmRepository chart keeps its author's metadata
 *   (fluxcd/helm-controller internal/controller/helmrelease_controller.go `mutateChartWithSourceRevision`);
 * - `unknown`: the object does not say (events, history entries alone): a 12-hex suffix is read as a
 *   commit, the common case; OCI charts leave a digest trace (`ociDigest`, `lastAttemptedRevisionDigest`,
 *   event `oci-digest`) that callers pass as `not-git`.
 */
export type ChartSuffixSource = 'git' | 'not-git' | 'unknown';

/**
 * A HelmRelease chart version as a Revision: `chart` is the version without its build metadata,
 * `sha` the commit a chart built from git carries, `raw` the original ("6.5.4+1a2b3c4d5e6f").
 */
export function parseChartVersion(raw: string, suffix: ChartSuffixSource = 'unknown', chartName?: string): Revision {
  const text = raw.trim();
  const plus = text.indexOf('+');
  const revision: Revision = { raw };
  revision.chart = plus >= 0 ? text.slice(0, plus) : text;
  if (chartName) revision.chartName = chartName;
  if (plus >= 0 && suffix !== 'not-git') {
    const first = text.slice(plus + 1).split('.')[0] ?? '';
    if (/^[0-9a-f]{12}$/i.test(first)) revision.sha = first.toLowerCase();
  }
  return revision;
}
