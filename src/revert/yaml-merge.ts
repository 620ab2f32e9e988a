import { isDeepStrictEqual } from 'node:util';
import { Document, isAlias, isDocument, isMap, isNode, isPair, isScalar, isSeq, parseAllDocuments, visit } from 'yaml';
import type { Node, Pair, Scalar, ToStringOptions, YAMLMap, YAMLSeq } from 'yaml';
import { mergeLoose, mergeText, splitLines } from './merge-lines.ts';

/**
 * Structural 3-way merge of YAML files, used when the line merge conflicts (typically two edits on
 * adjacent lines of the same manifest). The changes base→theirs are applied key by key onto ours'
 * Document; the Documents only decide what the result means, its bytes come from the files.
 *
 * - Documents of a multi-document file are matched by API group/kind/namespace/name (the version
 *   is left out so that a v1beta1→v1 bump still matches), or by index when a document has no
 *   identity or identities repeat.
 * - Maps merge key by key; lists merge item by item when every item is a map with a unique
 *   scalar `name` (containers, env, ports, volumes…), index by index when the three lists have the
 *   same length; anything else changed on both sides is a conflict. A list ours left alone takes
 *   theirs item by item where that gives theirs' list, else whole (refused where that would drop
 *   comments ours wrote in it).
 * - The same key changed differently on both sides is a conflict; the same change on both sides
 *   is not. The merge runs twice, reading the files as YAML 1.2 and as YAML 1.1 (what Kubernetes
 *   reads: `0750` is octal, `yes` a boolean): a conflict in either reading is a conflict.
 * - Comments merge node by node too: a comment theirs changed (a line comment, the comment above
 *   a key, a document's comment) replaces ours' where ours left it as in base; where both changed
 *   it, ours' stays (comments do not run: they never make a conflict).
 * - Anchors and aliases: a change that touches an anchored node, a node inside one, an alias or a
 *   merge key (`<<: *a`) is refused (it would change what other places mean); changes elsewhere
 *   merge, and the anchors and aliases stay as written.
 * - Bytes: the result is the looser line merge of the three files (adjacent edits merge, a line
 *   both changed merges word by word), else ours' Document printed with every scalar as written
 *   and ours' untouched lines put back. A result is taken only when it reads (in both YAML
 *   versions) as the merged Documents, carries their comments, and keeps every line of ours the
 *   merge did not change byte for byte (line ends, final newline, comments, spacing); a UTF-8 BOM
 *   follows ours. Otherwise the merge refuses: "the structural merge would reformat the file".
 */

export type YamlMergeResult = { clean: true; text: string } | { clean: false; conflicts: string[] };

type Value = Node | null | undefined;
type Version = '1.2' | '1.1';
const VERSIONS: readonly Version[] = ['1.2', '1.1'];

/**
 * A part of ours (character offsets) that the merge changes. `above`/`below` reach the lines next
 * to it too: its comment lines ('comments'), or its comment and blank lines ('all': a key that
 * goes takes its comment and the blank line before it along).
 */
interface Touch {
  start: number;
  end: number;
  above?: 'comments' | 'all';
  below?: 'comments';
  /** of its own lines, only the comment lines change */
  commentsOnly?: boolean;
  /** the line before it changes too (the key of a block collection) */
  keyLine?: boolean;
}

interface Ctx {
  /** key conflicts ("label: path") and reasons the structural merge cannot go on ("cannot merge structurally: …") */
  conflicts: string[];
  changed: boolean;
  label: string;
  touched: Touch[];
  /** ours' Document: only its own nodes have offsets in ours */
  doc: Document;
}

// What parsing tells about each node: its Document (to resolve aliases and merge keys), the
// anchored node it sits in, and a scalar's source text where one line holds it (with its tag
// where one is written right before it: the printer would write `!!int "12"` as `!!int 12`).
const ownerOf = new WeakMap<object, Document>();
const anchorAbove = new WeakMap<object, string>();
const sourceOf = new WeakMap<object, { text: string; tagged: boolean }>();
const detached = new Document(undefined, { logLevel: 'error' });

function register(doc: Document, text: string): void {
  visit(doc, (_key, node, path) => {
    if (!isNode(node)) return;
    ownerOf.set(node, doc);
    for (const p of path) if (isNode(p) && p.anchor) anchorAbove.set(node, p.anchor);
    if (isScalar(node) && node.range) {
      const [start, end] = node.range;
      const source = text.slice(start, end);
      const block = node.type === 'BLOCK_LITERAL' || node.type === 'BLOCK_FOLDED';
      if (source === '' || /[\r\n]/.test(source) || block) return;
      if (!node.tag) return void sourceOf.set(node, { text: source, tagged: false });
      const tag = /(?:^|[\s,[{:])(![^\s,[\]{}]*[ \t]+)$/.exec(text.slice(Math.max(0, start - 200), start))?.[1];
      if (tag !== undefined) sourceOf.set(node, { text: tag + source, tagged: true });
    }
  });
}

function parseText(text: string, version: Version): Document.Parsed[] | undefined {
  const docs = parseAllDocuments(text, { version, logLevel: 'error' });
  if (!Array.isArray(docs)) return [];
  if (docs.some((d) => d.errors.length > 0)) return undefined;
  for (const doc of docs) register(doc, text);
  return docs;
}

function js(node: unknown): unknown {
  if (isNode(node)) return node.toJS(ownerOf.get(node) ?? detached);
  return node ?? null;
}

function same(a: unknown, b: unknown): boolean {
  return isDeepStrictEqual(js(a), js(b));
}

function nodesIn(root: unknown): Node[] {
  const out: Node[] = [];
  if (isNode(root) || isPair(root)) {
    if (isNode(root)) out.push(root);
    visit(root as Node, (_key, node) => {
      if (isNode(node) && node !== root) out.push(node);
    });
  }
  return out;
}

/** A copy of theirs' node, with what parsing told about each of its nodes. */
function cloneValue<T>(v: T): T {
  if (isPair(v)) {
    const copy = v.clone();
    copy.key = cloneValue(v.key);
    copy.value = cloneValue(v.value);
    return copy as T;
  }
  if (!isNode(v)) return v;
  const copy = v.clone() as Node;
  const [from, to] = [nodesIn(v), nodesIn(copy)];
  from.forEach((node, i) => {
    const c = to[i];
    if (!c) return;
    const owner = ownerOf.get(node);
    if (owner) ownerOf.set(c, owner);
    const anchor = anchorAbove.get(node);
    if (anchor !== undefined) anchorAbove.set(c, anchor);
    const source = sourceOf.get(node);
    if (source !== undefined) sourceOf.set(c, source);
  });
  return copy as T;
}

/**
 * The anchors and aliases a change would reach: anchors and aliases in the nodes it replaces, and
 * the anchored nodes around them, or around the collection it adds to or removes from.
 */
function anchorsOf(nodes: unknown[], container?: Node): string[] {
  const out = new Set<string>();
  for (const root of [...nodes, container]) {
    const node = isPair(root) ? (root.key ?? root.value) : root;
    const above = isNode(node) ? anchorAbove.get(node) : undefined;
    if (above !== undefined) out.add(`&${above}`);
  }
  if (container?.anchor) out.add(`&${container.anchor}`);
  for (const root of nodes) {
    const inside = isPair(root) ? [...nodesIn(root.key), ...nodesIn(root.value)] : nodesIn(root);
    for (const node of inside) {
      if (node.anchor) out.add(`&${node.anchor}`);
      if (isAlias(node)) out.add(`*${node.source}`);
    }
  }
  return [...out];
}

/** False, with a conflict, where the change would reach an anchor or an alias. */
function guard(ctx: Ctx, path: string, nodes: unknown[], container?: Node): boolean {
  const anchors = anchorsOf(nodes, container);
  if (anchors.length === 0) return true;
  ctx.conflicts.push(`cannot merge structurally: ${ctx.label}: ${path || '(document)'} changes an anchored or aliased node (${anchors.join(', ')})`);
  return false;
}

/** Marks a node of ours (a Node or a Pair) as changed. */
function touch(ctx: Ctx, node: unknown, how: Pick<Touch, 'above'> = {}): void {
  if (isPair(node)) {
    const parts = [node.key, node.value].filter((n): n is Node => isNode(n) && ownerOf.get(n) === ctx.doc && !!n.range);
    if (parts.length > 0) ctx.touched.push({ start: parts[0]!.range![0], end: Math.max(...parts.map((n) => n.range![2])), ...how });
    return;
  }
  if (isNode(node) && node.range && ownerOf.get(node) === ctx.doc) ctx.touched.push({ start: node.range[0], end: Math.max(node.range[0], node.range[2]), ...how });
}

/** ours becomes theirs, keeping ours' node (comments, style) where both are scalars. */
function adopt(ours: Value, theirs: Value): Value {
  if (isScalar(ours) && isScalar(theirs)) {
    ours.value = theirs.value;
    ours.tag = theirs.tag;
    // a quoted or block style only carries over to another string
    if (typeof theirs.value !== 'string' || (ours.type?.startsWith('BLOCK') && !theirs.value.includes('\n'))) ours.type = theirs.type;
    const source = sourceOf.get(theirs);
    if (source === undefined) sourceOf.delete(ours);
    else sourceOf.set(ours, source);
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
      const range = isDocument(ours) || isNode(ours) ? ours.range : undefined;
      if (range && (isDocument(ours) || ownerOf.get(ours) === ctx.doc)) {
        // a comment before sits above the node's first line; a collection's may sit at the end of its key's line ("key: &a # comment")
        if (prop === 'commentBefore') ctx.touched.push({ start: range[0], end: range[0], above: 'comments', commentsOnly: isDocument(ours), keyLine: isNode(ours) && !isScalar(ours) });
        else if (isDocument(ours)) ctx.touched.push({ start: range[1], end: range[2], below: 'comments', commentsOnly: true });
        // a scalar's comment sits on its first line (a block scalar's header) or its last; a collection's after it
        else ctx.touched.push({ start: isScalar(ours) ? range[0] : Math.max(range[0], range[2] - 1), end: range[2], below: 'comments' });
      }
    }
  }
}

/** carryOwnComments through a subtree whose data theirs left alone: map keys, keys' and items' nodes. */
function carryComments(ctx: Ctx, base: unknown, ours: unknown, theirs: unknown): void {
  if (!isNode(base) || !isNode(ours) || !isNode(theirs)) return;
  carryOwnComments(ctx, base, ours, theirs);
  if (isMap(base) && isMap(ours) && isMap(theirs)) {
    const [b, o, t] = [mapEntries(base), mapEntries(ours), mapEntries(theirs)];
    if (!b || !o || !t) return;
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

/** Merges one value; `at` is the key whose line holds the value (it changes when the value is replaced). */
function mergeValue(ctx: Ctx, path: string, base: Value, ours: Value, theirs: Value, at?: unknown): Value {
  if (same(base, theirs) || same(ours, theirs)) {
    carryComments(ctx, base, ours, theirs);
    return ours;
  }
  // maps merge key by key even where ours' data is base's, so that ours' comments and layout stay
  if (isMap(base) && isMap(ours) && isMap(theirs)) {
    const [b, o, t] = [mapEntries(base), mapEntries(ours), mapEntries(theirs)];
    if (b && o && t) {
      carryOwnComments(ctx, base, ours, theirs);
      mergeEntries(ctx, path, b, o, t, mapOps(ctx, path, ours));
      return ours;
    }
  }
  // a list ours left alone becomes theirs: item by item where that gives theirs' list (ours'
  // comments on its items stay), else whole (item order matters in a list)
  if (same(ours, base)) {
    if (isSeq(base) && isSeq(ours) && isSeq(theirs)) {
      const trial = cloneValue(ours);
      const sub: Ctx = { ...ctx, conflicts: [], touched: [] };
      if (mergeItems(sub, path, base, trial, theirs) && sub.conflicts.length === 0 && same(trial, theirs)) {
        ctx.touched.push(...sub.touched);
        ctx.changed = true;
        return trial;
      }
    }
    if (!guard(ctx, path, [base, ours, theirs])) return ours;
    // replaced whole, ours' node goes with the comments ours wrote in it since base
    const replaced = !(isScalar(ours) && isScalar(theirs));
    if (replaced && !isDeepStrictEqual(commentsIn(ours), commentsIn(base))) {
      ctx.conflicts.push(`cannot merge structurally: ${ctx.label}: ${path || '(document)'} would be replaced whole, losing comments added or changed in it since the bad commit`);
      return ours;
    }
    ctx.changed = true;
    touch(ctx, ours);
    touch(ctx, at);
    const adopted = adopt(ours, theirs);
    if (adopted === ours && isNode(base) && isNode(ours) && isNode(theirs)) carryOwnComments(ctx, base, ours, theirs);
    return adopted;
  }
  if (isSeq(base) && isSeq(ours) && isSeq(theirs) && mergeItems(ctx, path, base, ours, theirs)) return ours;
  ctx.conflicts.push(`${ctx.label}: ${path || '(document)'}`);
  return ours;
}

/** Merges a list item by item into ours: by name, or index by index; false where neither applies. */
function mergeItems(ctx: Ctx, path: string, base: YAMLSeq, ours: YAMLSeq, theirs: YAMLSeq): boolean {
  const keyed = [base, ours, theirs].map((s) => seqEntriesByName(s));
  if (keyed[0] && keyed[1] && keyed[2]) {
    mergeEntries(ctx, path, keyed[0], keyed[1], keyed[2], seqOps(ctx, path, ours));
    return true;
  }
  if (base.items.length === ours.items.length && ours.items.length === theirs.items.length) {
    for (let i = 0; i < base.items.length; i++) {
      ours.items[i] = mergeValue(ctx, `${path}[${i}]`, base.items[i] as Value, ours.items[i] as Value, theirs.items[i] as Value);
    }
    return true;
  }
  return false;
}

/** A keyed view of a collection: key → value, in order. */
type Entries = Map<string, { value: Value; item: unknown }>;

interface EntryOps {
  set(key: string, value: Value): void;
  /** false where it may not (an anchor, an alias) */
  remove(key: string): boolean;
  /** inserts theirs' item after the entry `after`: first when undefined, last when ours lacks it */
  insert(item: unknown, after: string | undefined): boolean;
}

function keyString(k: unknown): string {
  const v = js(k);
  if (typeof v === 'string') return v;
  // a YAML 1.1 merge key reads as a symbol
  if (typeof v === 'symbol') return v.description ?? String(v);
  return JSON.stringify(v) ?? String(v);
}

/** undefined where two keys read the same (`1` and `"1"`): key by key would mix them up */
function mapEntries(map: YAMLMap): Entries | undefined {
  const out: Entries = new Map();
  for (const pair of map.items) {
    const key = keyString(pair.key);
    if (out.has(key)) return undefined;
    out.set(key, { value: pair.value as Value, item: pair });
  }
  return out;
}

function mapOps(ctx: Ctx, path: string, map: YAMLMap): EntryOps {
  const find = (key: string) => map.items.findIndex((p) => keyString(p.key) === key);
  const child = (key: string) => (path ? `${path}.${key}` : key);
  return {
    set(key, value) {
      const pair = map.items[find(key)];
      if (pair) pair.value = value;
    },
    remove(key) {
      const at = find(key);
      if (!guard(ctx, child(key), [map.items[at]], map)) return false;
      touch(ctx, map.flow ? map : map.items[at], { above: 'all' });
      map.items.splice(at, 1);
      return true;
    },
    insert(item, after) {
      const pair = item as Pair;
      if (!guard(ctx, child(keyString(isPair(pair) ? pair.key : pair)), [pair], map)) return false;
      if (map.flow) touch(ctx, map);
      const copy = cloneValue(pair);
      const at = after === undefined ? 0 : find(after) + 1;
      map.items.splice(at > 0 ? at : after === undefined ? 0 : map.items.length, 0, copy as Pair<unknown, unknown>);
      return true;
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

function seqOps(ctx: Ctx, path: string, seq: YAMLSeq): EntryOps {
  const find = (key: string) => seq.items.findIndex((i) => itemName(i) === key);
  const child = (key: string) => (path ? `${path}.${key}` : key);
  return {
    set(key, value) {
      seq.items[find(key)] = value;
    },
    remove(key) {
      const at = find(key);
      if (!guard(ctx, child(key), [seq.items[at]], seq)) return false;
      touch(ctx, seq.flow ? seq : seq.items[at], { above: 'all' });
      seq.items.splice(at, 1);
      return true;
    },
    insert(item, after) {
      if (!guard(ctx, child(itemName(item) ?? '?'), [item], seq)) return false;
      if (seq.flow) touch(ctx, seq);
      const at = after === undefined ? 0 : find(after) + 1;
      seq.items.splice(at > 0 ? at : after === undefined ? 0 : seq.items.length, 0, cloneValue(item as Value));
      return true;
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
        const merged = mergeValue(ctx, child(key), b.value, o.value, t.value, isPair(o.item) ? o.item.key : undefined);
        if (merged !== o.value) ops.set(key, merged);
      } else if (!same(b.value, t.value)) {
        ctx.conflicts.push(`${ctx.label}: ${child(key)} (removed on one side, changed on the other)`);
      }
    } else if (o) {
      // theirs removed the key
      if (same(o.value, b.value)) {
        if (ops.remove(key)) {
          ours.delete(key);
          ctx.changed = true;
        }
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
        if (ops.insert(t.item, previous)) {
          ours.set(key, t);
          ctx.changed = true;
        }
      } else if (!same(o.value, t.value)) {
        ctx.conflicts.push(`${ctx.label}: ${child(key)} (added differently on both sides)`);
      }
    }
    // theirs' next new entry goes after the last one ours has
    if (ours.has(key)) previous = key;
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
  // every document after the first needs its "---", or it would run into the one before
  docs.forEach((d, i) => {
    if (i > 0 && d.directives) d.directives.docStart = true;
  });
  return docs.map((d) => d.toString(options)).join('');
}

export function isYamlPath(path: string): boolean {
  return /\.ya?ml$/i.test(path);
}

/** One reading of the merge: its conflicts, or the merged Documents and what of ours it changes. */
interface Run {
  conflicts: string[];
  changed: boolean;
  docs: Document[];
  touched: Touch[];
}

function structural(texts: readonly [string, string, string], version: Version): Run | { invalid: string } {
  const parsed = texts.map((text) => parseText(text, version));
  const [baseDocs, oursDocs, theirsDocs] = parsed;
  if (!baseDocs || !oursDocs || !theirsDocs) {
    const which = ['base', 'ours', 'theirs'].filter((_, i) => !parsed[i]);
    return { invalid: `not valid YAML${version === '1.1' ? ' 1.1' : ''} (${which.join(', ')}): cannot merge structurally` };
  }
  const b = identify(baseDocs);
  const o = identify(oursDocs);
  const t = identify(theirsDocs);
  const byId = (docs: Doc[]) => new Map(docs.map((d) => [d.id, d]));
  const [bMap, oMap] = [byId(b), byId(o)];
  const conflicts: string[] = [];
  const touched: Touch[] = [];
  let changed = false;
  const result: Document[] = o.map((d) => d.doc);
  const tMap = byId(t);
  for (const bd of b) {
    const od = oMap.get(bd.id);
    const td = tMap.get(bd.id);
    if (td && od) {
      const ctx: Ctx = { conflicts, changed: false, label: od.label, touched, doc: od.doc };
      carryOwnComments(ctx, bd.doc, od.doc, td.doc);
      const merged = mergeValue(ctx, '', bd.doc.contents, od.doc.contents, td.doc.contents);
      if (merged !== od.doc.contents) od.doc.contents = merged as typeof od.doc.contents;
      changed ||= ctx.changed;
    } else if (td && !od) {
      if (!same(bd.doc.contents, td.doc.contents)) conflicts.push(`${bd.label}: removed on one side, changed on the other`);
    } else if (!td && od) {
      if (same(bd.doc.contents, od.doc.contents)) {
        // the whole document goes, from the end of the one before (its "---" and comments too)
        const i = o.indexOf(od);
        touched.push({ start: i > 0 ? o[i - 1]!.doc.range[2] : 0, end: od.doc.range[2] });
        result.splice(result.indexOf(od.doc), 1);
        changed = true;
      } else {
        conflicts.push(`${bd.label}: changed on one side, removed on the other`);
      }
    }
  }
  // a document theirs adds goes after the one it follows in theirs
  const placed = new Map<Document, Document>(t.flatMap((td) => (oMap.has(td.id) && result.includes(oMap.get(td.id)!.doc) ? [[td.doc, oMap.get(td.id)!.doc] as const] : [])));
  t.forEach((td, i) => {
    if (bMap.has(td.id)) return;
    const od = oMap.get(td.id);
    if (!od) {
      td.doc.directives.docStart = true;
      const before = t
        .slice(0, i)
        .reverse()
        .map((x) => placed.get(x.doc))
        .find((d) => d !== undefined);
      result.splice(before ? result.indexOf(before) + 1 : 0, 0, td.doc);
      placed.set(td.doc, td.doc);
      changed = true;
    } else if (!same(od.doc.contents, td.doc.contents)) {
      conflicts.push(`${td.label}: added differently on both sides`);
    }
  });
  return { conflicts, changed, docs: result, touched };
}

const BOM = '\uFEFF';

export function mergeYaml(base: string, ours: string, theirs: string): YamlMergeResult {
  try {
    return mergeYamlText(base, ours, theirs);
  } catch (error) {
    return { clean: false, conflicts: [`cannot merge structurally: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`] };
  }
}

function mergeYamlText(base: string, ours: string, theirs: string): YamlMergeResult {
  const boms = [base, ours, theirs].map((s) => s.startsWith(BOM));
  const texts = [base, ours, theirs].map((s) => (s.startsWith(BOM) ? s.slice(1) : s)) as [string, string, string];
  const runs: Run[] = [];
  for (const version of VERSIONS) {
    const run = structural(texts, version);
    if ('invalid' in run) return { clean: false, conflicts: [run.invalid] };
    runs.push(run);
  }
  const conflicts = [...new Set(runs.flatMap((r) => r.conflicts))];
  if (conflicts.length > 0) return { clean: false, conflicts };
  if (!runs.some((r) => r.changed)) return { clean: true, text: ours };

  const [, o] = texts;
  const bom = (boms[1] === boms[0] ? boms[2] : boms[1]) ? BOM : '';
  const kept = touchedLines(o, runs.flatMap((r) => r.touched)).map((touched) => !touched);
  const candidates = [() => mergeLoose(...texts), () => printed(texts, runs[0]!.docs)];
  let failure = '';
  for (const candidate of candidates) {
    let text: string | undefined;
    try {
      text = candidate();
      if (text === undefined) continue;
      const problem = verify(text, o, runs, kept);
      if (problem === undefined) return { clean: true, text: bom + text };
      failure ||= problem;
    } catch (error) {
      failure ||= error instanceof Error ? error.message.split('\n')[0]! : String(error);
    }
  }
  return { clean: false, conflicts: [`cannot merge structurally: the structural merge would reformat the file${failure ? ` (${failure})` : ''}`] };
}

/** For each line of `text`, whether a touch reaches it. */
function touchedLines(text: string, touches: Touch[]): boolean[] {
  const lines = splitLines(text);
  const starts: number[] = [];
  let offset = 0;
  for (const line of lines) {
    starts.push(offset);
    offset += line.length;
  }
  const lineOf = (at: number): number => {
    let lo = 0;
    let hi = lines.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid]! <= at) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  };
  const blank = (line: string) => /^[ \t]*\r?\n?$/.test(line);
  const comment = (line: string) => /^[ \t]*#/.test(line);
  const out = lines.map(() => false);
  for (const t of touches) {
    const first = lineOf(t.start);
    const last = lineOf(Math.max(t.start, t.end - 1));
    for (let i = first; i <= last; i++) {
      if (!t.commentsOnly || comment(lines[i]!)) out[i] = true;
    }
    let above = first - 1;
    for (; above >= 0 && (comment(lines[above]!) || blank(lines[above]!)); above--) {
      if (t.above === 'all' || (t.above === 'comments' && comment(lines[above]!))) out[above] = true;
    }
    if (t.keyLine && above >= 0) out[above] = true;
    for (let i = last + 1; t.below && i < lines.length && (comment(lines[i]!) || blank(lines[i]!)); i++) {
      if (comment(lines[i]!)) out[i] = true;
    }
  }
  return out;
}

/** Why `text` is not the merge the runs intend, or undefined where it is. */
function verify(text: string, ours: string, runs: Run[], kept: boolean[]): string | undefined {
  for (const [i, version] of VERSIONS.entries()) {
    const docs = parseText(text, version);
    if (!docs) return `the result would not parse as YAML ${version}`;
    const want = runs[i]!.docs;
    if (docs.length !== want.length) return `the result would have ${docs.length} documents, not ${want.length}`;
    for (const [d, doc] of docs.entries()) {
      if (!isDeepStrictEqual(doc.toJS(), want[d]!.toJS())) return `document ${d + 1} would not read as merged (YAML ${version})`;
    }
    if (i === 0 && !isDeepStrictEqual(commentsOf(docs), commentsOf(want))) return 'the comments would not be the merged ones';
  }
  // ours' untouched lines, in order, byte for byte; only the last may gain or lose its line end (like git)
  const result = splitLines(text);
  const oursLines = splitLines(ours);
  let j = 0;
  for (const [i, line] of oursLines.entries()) {
    if (!kept[i]) continue;
    const bare = line.replace(/\r?\n$/, '');
    const last = i === oursLines.length - 1;
    while (j < result.length && result[j] !== line && !(last && result[j]!.replace(/\r?\n$/, '') === bare)) j++;
    if (j === result.length) return `line ${i + 1} would change: ${JSON.stringify(bare.length > 60 ? `${bare.slice(0, 60)}…` : bare)}`;
    j++;
  }
  return undefined;
}

/** The comment lines in Documents or nodes, sorted: where the parser attaches them may differ, their text may not. */
function commentsOf(roots: Array<Document | Node>): string[] {
  const out: string[] = [];
  const add = (c: string | null | undefined) => {
    for (const line of c?.split('\n') ?? []) if (line.trim() !== '') out.push(line.trim());
  };
  for (const root of roots) {
    if (isDocument(root)) {
      add(root.commentBefore);
      add(root.comment);
    }
    visit(root, (_key, node) => {
      if (isNode(node)) {
        add(node.commentBefore);
        add(node.comment);
      }
    });
  }
  return out.sort();
}

function commentsIn(value: Value): string[] {
  return isNode(value) ? commentsOf([value]) : [];
}

/**
 * The merged Documents printed with every scalar as written (its source text, ours' or theirs'),
 * in ours' line ends, then the lines that printing alone reformats put back from ours.
 */
function printed(texts: readonly [string, string, string], docs: Document[]): string | undefined {
  const [b, o, t] = texts;
  const fresh = parseText(o, '1.2');
  if (!fresh) return undefined;
  const style = styleOf(o.replace(/\r\n/g, '\n'));
  let marker = 'lgsrc';
  while (texts.some((x) => x.includes(marker))) marker += 'x';
  const crlf = (o.match(/\r\n/g)?.length ?? 0) > (o.match(/(?<!\r)\n/g)?.length ?? 0);
  const eol = (s: string) => (crlf ? s.replace(/\n/g, '\r\n') : s);
  const merged = eol(printAsWritten(docs, style, marker));
  const reprinted = eol(printAsWritten(fresh, style, marker));
  // printing ends every file with a line end: so does ours here, until the end is settled below
  const ends = (s: string) => s.endsWith('\n');
  const terminated = ends(o) || o === '' ? o : o + (crlf ? '\r\n' : '\n');
  let text = mergeLoose(reprinted, terminated, merged, { prefer: 'theirs' }) ?? merged;
  // the final line end as git would have it: theirs' where ours kept base's
  const wanted = ends(o) === ends(b) ? ends(t) : ends(o);
  if (!wanted) text = text.replace(/\r?\n$/, '');
  else if (!ends(text)) text += crlf ? '\r\n' : '\n';
  return text;
}

function printAsWritten(docs: Document[], style: ToStringOptions, marker: string): string {
  const saved: Array<{ node: Scalar; value: unknown; type: Scalar['type']; tag: string | undefined }> = [];
  const sources: string[] = [];
  for (const doc of docs) {
    visit(doc, {
      Scalar(_key, node) {
        const source = sourceOf.get(node);
        if (source === undefined) return;
        saved.push({ node, value: node.value, type: node.type, tag: node.tag });
        node.value = `${marker}${sources.length}x`;
        node.type = 'PLAIN';
        if (source.tagged) node.tag = undefined;
        sources.push(source.text);
      },
    });
  }
  try {
    return print(docs, style).replace(new RegExp(`${marker}(\\d+)x`, 'g'), (m, i: string) => sources[Number(i)] ?? m);
  } finally {
    for (const { node, value, type, tag } of saved) {
      node.value = value;
      node.type = type;
      node.tag = tag;
    }
  }
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
