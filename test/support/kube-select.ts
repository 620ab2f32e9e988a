/**
 * Label and field selectors as the API server parses them for `labelSelector=` and
 * `fieldSelector=` on list and watch. Field selectors only accept the field labels the real
 * server accepts for the kind (metadata.name and metadata.namespace everywhere, a few more for
 * Events and Pods); anything else is a 400, as there.
 */

export class SelectorError extends Error {}

type Labels = Record<string, string>;

export type LabelRequirement =
  | { key: string; op: 'exists' | '!exists' }
  | { key: string; op: '=' | '!='; value: string }
  | { key: string; op: 'in' | 'notin'; values: string[] };

export function parseLabelSelector(text: string | null): LabelRequirement[] {
  if (!text) return [];
  const parts: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of text) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      parts.push(current);
      current = '';
    } else {
      current += ch;
    }
  }
  parts.push(current);
  return parts.map((raw) => {
    const p = raw.trim();
    let m: RegExpMatchArray | null;
    if ((m = p.match(/^!\s*([\w./-]+)$/))) return { key: m[1]!, op: '!exists' };
    if ((m = p.match(/^([\w./-]+)\s+(in|notin)\s+\(([^)]*)\)$/))) {
      return { key: m[1]!, op: m[2] as 'in' | 'notin', values: m[3]!.split(',').map((v) => v.trim()).filter((v) => v !== '') };
    }
    if ((m = p.match(/^([\w./-]+)\s*(==|=|!=)\s*([\w.-]*)$/))) return { key: m[1]!, op: m[2] === '!=' ? '!=' : '=', value: m[3]! };
    if ((m = p.match(/^([\w./-]+)$/))) return { key: m[1]!, op: 'exists' };
    throw new SelectorError(`unable to parse requirement: ${JSON.stringify(p)}`);
  });
}

export function labelsMatch(reqs: LabelRequirement[], labels: Labels | undefined): boolean {
  const l = labels ?? {};
  return reqs.every((r) => {
    const has = Object.hasOwn(l, r.key);
    switch (r.op) {
      case 'exists': return has;
      case '!exists': return !has;
      case '=': return has && l[r.key] === r.value;
      case '!=': return !has || l[r.key] !== r.value;
      case 'in': return has && r.values.includes(l[r.key]!);
      case 'notin': return !has || !r.values.includes(l[r.key]!);
    }
  });
}

export interface FieldRequirement {
  path: string;
  negate: boolean;
  value: string;
}

const EVENT_FIELDS = ['involvedObject.kind', 'involvedObject.namespace', 'involvedObject.name', 'involvedObject.uid', 'involvedObject.apiVersion', 'involvedObject.resourceVersion', 'involvedObject.fieldPath', 'reason', 'reportingComponent', 'source', 'type'];
const EXTRA_FIELDS: Record<string, string[]> = {
  '/v1/Event': EVENT_FIELDS,
  'events.k8s.io/v1/Event': ['regarding.kind', 'regarding.namespace', 'regarding.name', 'regarding.uid', 'regarding.apiVersion', 'reason', 'reportingController', 'type'],
  '/v1/Pod': ['spec.nodeName', 'spec.serviceAccountName', 'status.phase', 'status.podIP'],
  '/v1/Namespace': ['status.phase'],
};

/** `group/version/Kind` (core group empty) picks the extra field labels allowed. */
export function parseFieldSelector(text: string | null, typeKey: string): FieldRequirement[] {
  if (!text) return [];
  const allowed = new Set(['metadata.name', 'metadata.namespace', ...(EXTRA_FIELDS[typeKey] ?? [])]);
  return text.split(',').map((raw) => {
    const m = raw.trim().match(/^([\w.]+)\s*(==|=|!=)\s*(.*)$/);
    if (!m) throw new SelectorError(`invalid selector: '${raw}'; can't understand '${raw}'`);
    if (!allowed.has(m[1]!)) throw new SelectorError(`field label not supported: ${m[1]}`);
    return { path: m[1]!, negate: m[2] === '!=', value: m[3]! };
  });
}

export function fieldsMatch(reqs: FieldRequirement[], obj: Record<string, unknown>): boolean {
  return reqs.every((r) => {
    const path = r.path === 'source' ? 'source.component' : r.path;
    let node: unknown = obj;
    for (const part of path.split('.')) node = typeof node === 'object' && node !== null ? (node as Record<string, unknown>)[part] : undefined;
    const actual = node === undefined || node === null ? '' : String(node);
    return (actual === r.value) !== r.negate;
  });
}
