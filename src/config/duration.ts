/** Durations as people write them in config: "90s", "15m", "1h30m", "2h", "1d". */
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const DURATION = /^(?:\d+(?:ms|s|m|h|d))+$/;

export function parseDuration(text: string): number | undefined {
  const s = text.trim();
  if (!DURATION.test(s)) return undefined;
  let ms = 0;
  for (const m of s.matchAll(/(\d+)(ms|s|m|h|d)/g)) ms += Number(m[1]) * UNIT_MS[m[2]!]!;
  return ms;
}

export function formatDuration(ms: number): string {
  const sign = ms < 0 ? '-' : '';
  let rest = Math.round(Math.abs(ms) / 1000);
  if (rest < 60) return `${sign}${rest}s`;
  const d = Math.floor(rest / 86400); rest -= d * 86400;
  const h = Math.floor(rest / 3600); rest -= h * 3600;
  const m = Math.floor(rest / 60); const s = rest - m * 60;
  return sign + [d && `${d}d`, h && `${h}h`, m && `${m}m`, !d && !h && s && `${s}s`].filter(Boolean).join('');
}
