import { isDeepStrictEqual } from 'node:util';
import { Document, isMap, isNode, isPair, isScalar, isSeq, parseAllDocuments } from 'yaml';
import type { Node, Pair, ToStringOptions, YAMLMap, YAMLSeq } from 'yaml';
import { mergeText } from './merge-lines.ts';

/**
 * Structural 3-way merge of YAML files, used when the line merge conflicts (typically two edits on
 * adjacent lines of the same manifest). The changes base→theirs are applied key by key onto ours'
 * Document, so that ours' comments and layout survive.
 *
 * - Documents of a multi-document file are matched by API group/kind/namespace/name (the version
 *   is left out so that a v1beta1→v1 bump still matches), or by index when a document has no
 *   identity or identities repeat.
 * - Maps merge key by key; lists merge item by item when every item is a map with a unique
 *   scalar `name` (containers, env, ports, volumes…), index by index when the three lists have the
 *   same length; anything else changed on both sides is a conflict.
 * - The same key changed differently on both sides is a conflict; the same change on both sides
 *   is not.
 * - Comments merge node by node too: a comment theirs changed (a line comment, the comment above
 *   a key, a document's comment) replaces ours' where ours left it as in base; where both changed
 *   it, ours' stays (comments do not run: they never make a conflict).
 * - Layout: the merged Document is printed, then the lines that printing reformatted (comment
 *   spacing, flow padding, list indentation) are put back from ours with a line merge, so only
 *   the lines the merge changed differ from ours.
 */

export type YamlMergeResult = { clean: true; text: string } | { clean: false; conflicts: string[] };

type Value = Node | null | undefined;

interface Ctx {
  conflicts: string[];
  changed: boolean;
  label: string;
}

function js(node: unknown): unknown {
  if (isNode(node)) return node.toJS(new Document());
  return node ?? null;
}

function same(a: unknown, b: unknown): boolean {
  return isDeepStrictEqual(js(a), js(b));
}

function cloneValue(v: Value): Value {
  return isNode(v) ? (v.clone() as Node) : v;
}

/** ours becomes theirs, keeping ours' node (comments, style) where both are scalars. */
function adopt(ours: Value, theirs: Value): Value {
  if (isScalar(ours) && isScalar(theirs)) {
    ours.value = theirs.value;
    // a quoted or block style only carries over to another string
    if (typeof theirs.value !== 'string' || (ours.type?.startsWith('BLOCK') && !theirs.value.includes('\n'))) ours.type = theirs.type;
    return ours;
  }
  return cloneValue(theirs);
}

interface Commented {
  comment?: string | null;
  commentBefore?: string | null;
}

/** Theirs' change to the comments of one node (a Node or a Document), onto ours where ours kept base's. */
function carryOwnComments(ctx: Ctx, base: Commented, ours: Commented, theirs: Commented): void {
  for (const prop of ['comment', 'commentBefore'] as const) {
    const [b, o, t] = [base[prop] ?? undefined, ours[prop] ?? undefined, theirs[prop] ?? undefined];
    if (t !== b && o === b) {
      ours[prop] = t;
      ctx.changed = true;
    }
  }
}

/** carryOwnComments through a subtree whose data theirs left alone: map keys, keys' and items' nodes. */
function carryComments(ctx: Ctx, base: unknown, ours: unknown, theirs: unknown): void {
  if (!isNode(base) || !isNode(ours) || !isNode(theirs)) return;
  carryOwnComments(ctx, base, ours, theirs);
  if (isMap(base) && isMap(ours) && isMap(theirs)) {
    const [b, o, t] = [mapEntries(base), mapEntries(ours), mapEntries(theirs)];
    for (const [key, be] of b) {
      const [oe, te] = [o.get(key), t.get(key)];
      if (!oe || !te) continue;
      if (isPair(be.item) && isPair(oe.item) && isPair(te.item)) carryComments(ctx, be.item.key, oe.item.key, te.item.key);
      carryComments(ctx, be.value, oe.value, te.value);
    }
  } else if (isSeq(base) && isSeq(ours) && isSeq(theirs)) {
    const keyed = [base, ours, theirs].map((q) => seqEntriesByName(q));
    if (keyed[0] && keyed[1] && keyed[2]) {
      for (const [key, be] of keyed[0]) carryComments(ctx, be.value, keyed[1].get(key)?.value, keyed[2].get(key)?.value);
    } else if (base.items.length === ours.items.length && ours.items.length === theirs.items.length) {
      base.items.forEach((item, i) => carryComments(ctx, item, ours.items[i], theirs.items[i]));
    }
  }
}

function mergeValue(ctx: Ctx, path: string, base: Value, ours: Value, theirs: Value): Value {
  if (same(base, theirs) || same(ours, theirs)) {
    carryComments(ctx, base, ours, theirs);
    return ours;
  }
  // maps merge key by key even where ours' data is base's, so that ours' comments and layout stay
  if (isMap(base) && isMap(ours) && isMap(theirs)) {
    carryOwnComments(ctx, base, ours, theirs);
    mergeEntries(ctx, path, mapEntries(base), mapEntries(ours), mapEntries(theirs), mapOps(ours));
    return ours;
  }
  // a list ours left alone becomes theirs whole (item order matters in a list)
  if (same(ours, base)) {
    ctx.changed = true;
    const adopted = adopt(ours, theirs);
    if (adopted === ours && isNode(base) && isNode(ours) && isNode(theirs)) carryOwnComments(ctx, base, ours, theirs);
    return adopted;
  }
  if (isSeq(base) && isSeq(ours) && isSeq(theirs)) {
    const keyed = [base, ours, theirs].map((s) => seqEntriesByName(s));
    if (keyed[0] && keyed[1] && keyed[2]) {
      mergeEntries(ctx, path, keyed[0], keyed[1], keyed[2], seqOps(ours));
      return ours;
    }
    if (base.items.length === ours.items.length && ours.items.length === theirs.items.length) {
      for (let i = 0; i < base.items.length; i++) {
        ours.items[i] = mergeValue(ctx, `${path}[${i}]`, base.items[i] as Value, ours.items[i] as Value, theirs.items[i] as Value);
      }
      return ours;
    }
  }
  ctx.conflicts.push(`${ctx.label}: ${path || '(document)'}`);
  return ours;
}

/** A keyed view of a collection: key → value, in order. */
type Entries = Map<string, { value: Value; item: unknown }>;

interface EntryOps {
  set(key: string, value: Value): void;
  remove(key: string): void;
  /** inserts theirs' item after the entry `after`: first when undefined, last when ours lacks it */
  insert(item: unknown, after: string | undefined): void;
}

function keyString(k: unknown): string {
  const v = js(k);
  return typeof v === 'string' ? v : JSON.stringify(v);
}

function mapEntries(map: YAMLMap): Entries {
  const out: Entries = new Map();
  for (const pair of map.items) out.set(keyString(pair.key), { value: pair.value as Value, item: pair });
  return out;
}

function mapOps(map: YAMLMap): EntryOps {
  const find = (key: string) => map.items.findIndex((p) => keyString(p.key) === key);
  return {
    set(key, value) {
      const pair = map.items[find(key)];
      if (pair) pair.value = value;
    },
    remove(key) {
      map.items.splice(find(key), 1);
    },
    insert(item, after) {
      const pair = item as Pair;
      const copy = isPair(pair) ? pair.clone() : pair;
      const at = after === undefined ? 0 : find(after) + 1;
      map.items.splice(at > 0 ? at : after === undefined ? 0 : map.items.length, 0, copy as Pair<unknown, unknown>);
    },
  };
}

function itemName(item: unknown): string | undefined {
  if (!isMap(item)) return undefined;
  const name = item.get('name');
  return typeof name === 'string' || typeof name === 'number' ? String(name) : undefined;
}

/** Items keyed by their `name` when every item has a unique one, else undefined. */
function seqEntriesByName(seq: YAMLSeq): Entries | undefined {
  const out: Entries = new Map();
  for (const item of seq.items) {
    const name = itemName(item);
    if (name === undefined || out.has(name)) return undefined;
    out.set(name, { value: item as Value, item });
  }
  return out;
}

function seqOps(seq: YAMLSeq): EntryOps {
  const find = (key: string) => seq.items.findIndex((i) => itemName(i) === key);
  return {
    set(key, value) {
      seq.items[find(key)] = value;
    },
    remove(key) {
      seq.items.splice(find(key), 1);
    },
    insert(item, after) {
      const at = after === undefined ? 0 : find(after) + 1;
      seq.items.splice(at > 0 ? at : after === undefined ? 0 : seq.items.length, 0, cloneValue(item as Value));
    },
  };
}

function mergeEntries(ctx: Ctx, path: string, base: Entries, ours: Entries, theirs: Entries, ops: EntryOps): void {
  const child = (key: string) => (path ? `${path}.${key}` : key);
  for (const [key, b] of base) {
    const o = ours.get(key);
    const t = theirs.get(key);
    if (t) {
      if (o) {
        if (isPair(b.item) && isPair(o.item) && isPair(t.item)) carryComments(ctx, b.item.key, o.item.key, t.item.key);
        const merged = mergeValue(ctx, child(key), b.value, o.value, t.value);
        if (merged !== o.value) ops.set(key, merged);
      } else if (!same(b.value, t.value)) {
        ctx.conflicts.push(`${ctx.label}: ${child(key)} (removed on one side, changed on the other)`);
      }
    } else if (o) {
      // theirs removed the key
      if (same(o.value, b.value)) {
        ops.remove(key);
        ctx.changed = true;
      } else {
        ctx.conflicts.push(`${ctx.label}: ${child(key)} (changed on one side, removed on the other)`);
      }
    }
  }
  let previous: string | undefined;
  for (const [key, t] of theirs) {
    if (!base.has(key)) {
      const o = ours.get(key);
      if (!o) {
        ops.insert(t.item, previous);
        ours.set(key, t);
        ctx.changed = true;
      } else if (!same(o.value, t.value)) {
        ctx.conflicts.push(`${ctx.label}: ${child(key)} (added differently on both sides)`);
      }
    }
    previous = key;
  }
}

interface Doc {
  doc: Document.Parsed;
  id: string;
  label: string;
}

function identify(docs: Document.Parsed[]): Doc[] {
  const out = docs.map((doc, index) => {
    const value = doc.toJS() as { apiVersion?: unknown; kind?: unknown; metadata?: { name?: unknown; namespace?: unknown } } | null;
    const kind = value && typeof value === 'object' ? value.kind : undefined;
    const name = value && typeof value === 'object' ? value.metadata?.name : undefined;
    if (typeof kind === 'string' && typeof name === 'string') {
      const group = typeof value!.apiVersion === 'string' && value!.apiVersion.includes('/') ? value!.apiVersion.split('/')[0] : '';
      const ns = typeof value!.metadata?.namespace === 'string' ? value!.metadata.namespace : '';
      return { doc, id: `${group}/${kind}/${ns}/${name}`, label: `${kind} ${ns ? `${ns}/` : ''}${name}` };
    }
    return { doc, id: `#${index}`, label: `document ${index + 1}` };
  });
  const ids = new Set(out.map((d) => d.id));
  if (ids.size !== out.length) return out.map((d, index) => ({ ...d, id: `#${index}` }));
  return out;
}

export function parseYamlDocuments(text: string): Document.Parsed[] | undefined {
  const docs = parseAllDocuments(text);
  if (!Array.isArray(docs)) return [];
  return docs.some((d) => d.errors.length > 0) ? undefined : docs;
}

/** Printing options that follow ours' style where the Document API lets us choose. */
function styleOf(text: string): ToStringOptions {
  // "key:\n- item" at the key's own indentation means lists are not indented
  const flatList = /^( *)[^\s#-][^\n]*:[ \t]*\n\1- /m.test(text);
  const indent = /^[^\s#][^\n]*:[ \t]*\n( +)\S/m.exec(text)?.[1]?.length;
  return { lineWidth: 0, indentSeq: !flatList, indent: indent && indent <= 8 ? indent : 2, flowCollectionPadding: !/[[{]\S[^\n]*\S[\]}]/.test(text) || /[[{] /.test(text) };
}

function print(docs: Document[], options: ToStringOptions): string {
  return docs.map((d) => d.toString(options)).join('');
}

export function isYamlPath(path: string): boolean {
  return /\.ya?ml$/i.test(path);
}

export function mergeYaml(base: string, ours: string, theirs: string): YamlMergeResult {
  const parsed = [parseYamlDocuments(base), parseYamlDocuments(ours), parseYamlDocuments(theirs)];
  const [baseDocs, oursDocs, theirsDocs] = parsed;
  if (!baseDocs || !oursDocs || !theirsDocs) {
    const which = ['base', 'ours', 'theirs'].filter((_, i) => !parsed[i]);
    return { clean: false, conflicts: [`not valid YAML (${which.join(', ')}): cannot merge structurally`] };
  }
  const b = identify(baseDocs);
  const o = identify(oursDocs);
  const t = identify(theirsDocs);
  const byId = (docs: Doc[]) => new Map(docs.map((d) => [d.id, d]));
  const [bMap, oMap, tMap] = [byId(b), byId(o), byId(t)];
  const conflicts: string[] = [];
  let changed = false;
  const result: Document[] = o.map((d) => d.doc);
  for (const bd of b) {
    const od = oMap.get(bd.id);
    const td = tMap.get(bd.id);
    if (td && od) {
      const ctx: Ctx = { conflicts, changed: false, label: od.label };
      carryOwnComments(ctx, bd.doc, od.doc, td.doc);
      const merged = mergeValue(ctx, '', bd.doc.contents, od.doc.contents, td.doc.contents);
      if (merged !== od.doc.contents) od.doc.contents = merged as typeof od.doc.contents;
      changed ||= ctx.changed;
    } else if (td && !od) {
      if (!same(bd.doc.contents, td.doc.contents)) conflicts.push(`${bd.label}: removed on one side, changed on the other`);
    } else if (!td && od) {
      if (same(bd.doc.contents, od.doc.contents)) {
        result.splice(result.indexOf(od.doc), 1);
        changed = true;
      } else {
        conflicts.push(`${bd.label}: changed on one side, removed on the other`);
      }
    }
  }
  for (const td of t) {
    if (bMap.has(td.id)) continue;
    const od = oMap.get(td.id);
    if (!od) {
      td.doc.directives.docStart = true;
      result.push(td.doc);
      changed = true;
    } else if (!same(od.doc.contents, td.doc.contents)) {
      conflicts.push(`${td.label}: added differently on both sides`);
    }
  }
  if (conflicts.length > 0) return { clean: false, conflicts };
  if (!changed) return { clean: true, text: ours };
  return { clean: true, text: printLike(ours, result) };
}

/**
 * Prints edited Documents parsed from `original` so that every line the edit did not change stays
 * byte for byte as it was: the Documents are printed, then the lines that printing alone
 * reformats (comment spacing, flow padding, list indentation) are put back from the original
 * with a line merge. Falls back to the plain print when that merge is not clean.
 */
export function printLike(original: string, docs: Document[]): string {
  const style = styleOf(original);
  const printed = print(docs, style);
  const reprinted = print(parseYamlDocuments(original) ?? [], style);
  const relaid = mergeText(reprinted, original, printed);
  if (relaid.clean && sameDocuments(relaid.text, printed)) return relaid.text;
  return printed;
}

function sameDocuments(a: string, b: string): boolean {
  const da = parseYamlDocuments(a);
  const db = parseYamlDocuments(b);
  return !!da && !!db && da.length === db.length && da.every((d, i) => isDeepStrictEqual(d.toJS(), db[i]!.toJS()));
}
