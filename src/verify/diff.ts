import { createTwoFilesPatch } from 'diff';
import { stringify } from 'yaml';
import { codeBlock, codeSpan } from '../revert/markup.ts';
import { redact } from '../scrub.ts';
import { deepEqual, type RenderedObject } from './objects.ts';

/**
 * The rendered diff of a revert: what will change in the cluster, per object (head → reverted),
 * presented as flux-local and argocd-diff-preview do (research/render.md §5, §6.2): one summary
 * line on top, then per object a unified diff (3 lines of context) of its normalised YAML, in
 * markdown inside a collapsed <details>; Secrets' values masked; the engines' own tracking
 * metadata stripped; a hard size budget (GitHub's comment limit is 65,536 characters) with
 * "N more objects not shown".
 */

/** Labels and annotations that an engine or kubectl writes on applied objects: noise in a diff. */
const TRACKING_LABELS = [
  'kustomize.toolkit.fluxcd.io/name', 'kustomize.toolkit.fluxcd.io/namespace',
  'helm.toolkit.fluxcd.io/name', 'helm.toolkit.fluxcd.io/namespace',
];
const TRACKING_ANNOTATIONS = [
  'argocd.argoproj.io/tracking-id', 'kubectl.kubernetes.io/last-applied-configuration', 'config.kubernetes.io/origin',
];

export const DEFAULT_MAX_CHARS = 60_000;

export interface RenderedDiff {
  /** one line: how many objects change, and each image that changes ("image a:1 → a:2") */
  summary: string;
  /** plain text: the summary, then per object a header and its unified diff */
  text: string;
  /** markdown: the summary, then per object a collapsed <details> with a ```diff block */
  markdown: string;
}

function isSecret(o: Record<string, unknown>): boolean {
  return o.kind === 'Secret' && (o.apiVersion === 'v1' || o.apiVersion === undefined);
}

function clone<T>(v: T): T {
  return v === undefined ? v : (JSON.parse(JSON.stringify(v)) as T);
}

function stripTracking(o: Record<string, unknown>): void {
  const meta = o.metadata as { labels?: Record<string, unknown>; annotations?: Record<string, unknown> } | undefined;
  if (!meta) return;
  for (const [field, names] of [['labels', TRACKING_LABELS], ['annotations', TRACKING_ANNOTATIONS]] as const) {
    const m = meta[field];
    if (!m) continue;
    for (const n of names) delete m[n];
    if (Object.keys(m).length === 0) delete meta[field];
  }
}

/**
 * Mask a Secret's `data`/`stringData` values on both sides. The same mask where the value is the
 * same, a different one where it changes (as Argo CD's diff does), so the diff still says which
 * keys change without saying what they hold.
 */
function maskSecrets(head: Record<string, unknown> | undefined, reverted: Record<string, unknown> | undefined): void {
  for (const field of ['data', 'stringData']) {
    const h = head?.[field] as Record<string, unknown> | undefined;
    const r = reverted?.[field] as Record<string, unknown> | undefined;
    const keys = new Set([...Object.keys(h ?? {}), ...Object.keys(r ?? {})]);
    for (const k of keys) {
      const same = h && r && Object.hasOwn(h, k) && Object.hasOwn(r, k) && deepEqual(h[k], r[k]);
      if (h && Object.hasOwn(h, k)) h[k] = same || !r || !Object.hasOwn(r, k) ? '<redacted>' : '<redacted: before>';
      if (r && Object.hasOwn(r, k)) r[k] = same || !h || !Object.hasOwn(h, k) ? '<redacted>' : '<redacted: after>';
    }
  }
}

const toYaml = (o: Record<string, unknown> | undefined) => (o ? stringify(o, { lineWidth: 0, indentSeq: false }) : '');

/** Each container image ("name=image") of a pod template or pod spec, for the summary line. */
function images(o: Record<string, unknown> | undefined): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (v: unknown, path: string) => {
    if (Array.isArray(v)) v.forEach((x, i) => walk(x, `${path}[${i}]`));
    else if (v && typeof v === 'object') {
      const rec = v as Record<string, unknown>;
      if (typeof rec.image === 'string' && typeof rec.name === 'string') out.set(`${path}/${rec.name}`, rec.image);
      for (const [k, x] of Object.entries(rec)) if (k !== 'metadata') walk(x, `${path}/${k}`);
    }
  };
  walk(o, '');
  return out;
}

interface ObjectDiff {
  key: string;
  status: 'added' | 'removed' | 'changed';
  patch: string;
}

export function renderedDiff(head: RenderedObject[], reverted: RenderedObject[], opts: { maxChars?: number } = {}): RenderedDiff {
  const maxChars = Math.max(200, opts.maxChars ?? DEFAULT_MAX_CHARS);
  const h = new Map(head.map((o) => [o.key, o.object]));
  const r = new Map(reverted.map((o) => [o.key, o.object]));
  const keys = [...new Set([...h.keys(), ...r.keys()])].sort();
  const diffs: ObjectDiff[] = [];
  const imageChanges = new Map<string, { from: string; to: string }>();
  for (const key of keys) {
    const ho = clone(h.get(key));
    const ro = clone(r.get(key));
    for (const o of [ho, ro]) if (o) stripTracking(o);
    if (ho && ro && deepEqual(ho, ro)) continue;
    if ((ho && isSecret(ho)) || (ro && isSecret(ro))) maskSecrets(ho, ro);
    const status = !ho ? 'added' : !ro ? 'removed' : 'changed';
    const patch = createTwoFilesPatch(ho ? `a/${key}` : '/dev/null', ro ? `b/${key}` : '/dev/null', toYaml(ho), toYaml(ro), '', '', { context: 3 })
      .replace(/^=+\n/, '');
    diffs.push({ key, status, patch: redact(patch) });
    const hi = images(h.get(key));
    const ri = images(r.get(key));
    for (const [where, img] of hi) {
      const after = ri.get(where);
      if (after && after !== img) imageChanges.set(`image ${img} → ${after}`, { from: img, to: after });
    }
  }
  const count = (s: ObjectDiff['status']) => diffs.filter((d) => d.status === s).length;
  const changes = [...imageChanges].sort(([a], [b]) => (a < b ? -1 : 1));
  const said = (images: string[]) => (diffs.length === 0
    ? 'The revert changes no rendered object.'
    : `The revert changes ${diffs.length} rendered object${diffs.length === 1 ? '' : 's'} (${count('changed')} changed, ${count('added')} added, ${count('removed')} removed)` +
      (images.length ? `: ${listed(images, 5)}` : '') + '.');
  const summary = said(changes.map(([text]) => text));
  // image names come from the repository: in Markdown, code (revert/markup.ts), never live text
  const markdownSummary = said(changes.map(([, c]) => `image ${codeSpan(c.from)} → ${codeSpan(c.to)}`));

  const fit = (header: string, parts: Array<{ full: string; clipped: (room: number) => string }>): string => {
    let out = header;
    let shown = 0;
    for (const p of parts) {
      const left = parts.length - shown - 1;
      const tail = left > 0 ? `\n${left} more objects not shown.\n` : '';
      const omitted = `\n${parts.length - shown} more objects not shown.\n`;
      if (out.length + p.full.length + tail.length <= maxChars) {
        out += p.full;
        shown++;
        continue;
      }
      // the first object that does not fit: shown clipped when there is room for a useful part of it
      const room = maxChars - out.length - tail.length;
      const clipped = room > 400 ? p.clipped(room) : '';
      if (clipped && out.length + clipped.length + tail.length <= maxChars) {
        out += clipped + tail;
      } else {
        out += omitted;
      }
      return out.length <= maxChars ? out : out.slice(0, maxChars);
    }
    return out;
  };

  const clipNote = '\n… (diff clipped: too long to show in full)\n';
  const textParts = diffs.map((d) => {
    const head = `=== ${d.key} (${d.status}) ===\n`;
    return {
      full: head + d.patch + (d.patch.endsWith('\n') ? '' : '\n'),
      clipped: (room: number) => head + d.patch.slice(0, Math.max(0, room - head.length - clipNote.length - 1)) + clipNote,
    };
  });
  const mdParts = diffs.map((d) => {
    const open = `<details><summary>${escapeHtml(d.key)} (${d.status})</summary>\n\n`;
    const close = '\n\n</details>\n';
    // the fence is longer than any run of backticks in the patch, so no line of it closes the block
    const full = codeBlock(d.patch, 'diff');
    return {
      full: open + full + close,
      clipped: (room: number) => {
        const end = '\n' + clipNote + '\n</details>\n';
        const fenceRoom = 2 * (full.indexOf('diff') + 1);
        return open + codeBlock(d.patch.slice(0, Math.max(0, room - open.length - end.length - fenceRoom - 1)), 'diff') + end;
      },
    };
  });
  return {
    summary,
    text: fit(`${summary}\n\n`, textParts),
    markdown: fit(`**Rendered diff**: ${markdownSummary}\n\n`, mdParts),
  };
}

/** the first `n` items, then "and K more" */
function listed(items: string[], n: number): string {
  return items.length <= n ? items.join(', ') : `${items.slice(0, n).join(', ')} and ${items.length - n} more`;
}

function escapeHtml(s: string): string {
  return s.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

