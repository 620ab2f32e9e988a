/** git interpret-trailers style "Key: value" lines in the last paragraph of a commit message. */
export function parseTrailers(message: string): Map<string, string[]> {
  const paragraphs = message.trimEnd().split(/\n\s*\n/);
  const last = paragraphs[paragraphs.length - 1] ?? '';
  const out = new Map<string, string[]>();
  for (const line of last.split('\n')) {
    const m = /^([A-Za-z0-9][A-Za-z0-9-]*):\s*(.*)$/.exec(line);
    if (!m) continue;
    out.set(m[1]!, [...(out.get(m[1]!) ?? []), m[2]!.trim()]);
  }
  return out;
}

/** The target a lastgood commit was made for, undefined for any other commit. */
export function lastgoodTarget(message: string): string | undefined {
  return parseTrailers(message).get('Lastgood-Target')?.[0];
}

/** The SHAs a lastgood commit says it reverts. */
export function revertedBy(message: string): string[] {
  return (parseTrailers(message).get('Lastgood-Reverts') ?? []).flatMap((v) => v.split(',')).map((s) => s.trim()).filter(Boolean);
}
