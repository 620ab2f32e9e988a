/**
 * Container image references, parsed the way the container runtimes do (distribution/reference:
 * `[registry[:port]/]repository[:tag][@digest]`), so that matching is exact: `ghcr.io/acme/shop`
 * never matches `ghcr.io/acme/shop-worker`, and a tag only counts together with its repository.
 */
export interface ImageRef {
  /** registry host with port, lower case; `docker.io` when none is given */
  registry: string;
  /** repository path; Docker Hub official images get their `library/` prefix */
  repository: string;
  tag?: string;
  digest?: string;
}

const DIGEST = /^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[0-9a-fA-F]{32,}$/;
const TAG = /^[\w][\w.-]{0,127}$/;
const PATH_COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;

/** Parses an image reference; undefined when the text is not one (spaces, upper case path, empty parts). */
export function parseImageRef(text: string): ImageRef | undefined {
  const s = text.trim();
  if (!s || /\s/.test(s) || s.length > 512) return undefined;
  let rest = s;
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!DIGEST.test(digest)) return undefined;
  }
  let tag: string | undefined;
  const colon = rest.lastIndexOf(':');
  if (colon > rest.lastIndexOf('/')) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!TAG.test(tag)) return undefined;
  }
  const parts = rest.split('/');
  let registry = 'docker.io';
  if (parts.length > 1 && /[.:]|^localhost$/.test(parts[0]!)) {
    registry = parts.shift()!.toLowerCase();
    if (registry === 'index.docker.io' || registry === 'registry-1.docker.io') registry = 'docker.io';
  }
  if (parts.length === 0 || !parts.every((p) => PATH_COMPONENT.test(p))) return undefined;
  if (registry === 'docker.io' && parts.length === 1) parts.unshift('library');
  return { registry, repository: parts.join('/'), ...(tag ? { tag } : {}), ...(digest ? { digest: digest.toLowerCase() } : {}) };
}

/** One spelling per image: `registry/repository[:tag][@digest]`. */
export function formatImageRef(ref: ImageRef): string {
  return `${ref.registry}/${ref.repository}${ref.tag ? `:${ref.tag}` : ''}${ref.digest ? `@${ref.digest}` : ''}`;
}

/** The canonical spelling of an image text, or undefined when it is not an image reference. */
export function canonicalImage(text: string): string | undefined {
  const ref = parseImageRef(text);
  return ref ? formatImageRef(ref) : undefined;
}

/**
 * True when a manifest's image `written` is the running image `running`: same registry and
 * repository, and the same tag and digest as far as the running one states them (a running
 * `repo:tag@digest` is the manifest's `repo:tag@digest`, `repo@digest` or `repo:tag`).
 */
export function sameImage(running: ImageRef, written: ImageRef): boolean {
  if (running.registry !== written.registry || running.repository !== written.repository) return false;
  if (running.digest && written.digest) return running.digest === written.digest && (!running.tag || !written.tag || running.tag === written.tag);
  if (running.digest && !written.digest) return running.tag !== undefined && running.tag === written.tag;
  if (!running.digest && written.digest) return false;
  return (running.tag ?? 'latest') === (written.tag ?? 'latest');
}
