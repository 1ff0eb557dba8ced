// Colours with meaning, in one place: 24 distinct series colours (charts with more than nine
// series, services in the waterfall) and the log severity colours.

// Tableau-20-like hues, reordered so that neighbours differ, plus four darker accents.
export const SERIES_COLORS = [
  '#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#76b7b2', '#edc948', '#b07aa1', '#ff9da7',
  '#9c755f', '#86bcb6', '#a0cbe8', '#ffbe7d', '#8cd17d', '#b6992d', '#499894', '#d37295',
  '#fabfd2', '#79706e', '#d4a6c8', '#f1ce63', '#2f6690', '#c4402b', '#3a7d44', '#6a4c93',
];

/** A stable colour per name within a set: the i-th name of the sorted set gets the i-th colour. */
export function colorMap(names: Iterable<string>): Map<string, string> {
  const sorted = [...new Set(names)].sort();
  return new Map(sorted.map((name, i) => [name, SERIES_COLORS[i % SERIES_COLORS.length]]));
}

export const SEVERITIES = ['FATAL', 'ERROR', 'WARN', 'INFO', 'DEBUG', 'TRACE', 'UNKNOWN'] as const;
export type Severity = (typeof SEVERITIES)[number];

export const SEVERITY_COLORS: Record<Severity, string> = {
  FATAL: '#a21caf',
  ERROR: '#e5484d',
  WARN: '#e5a50a',
  INFO: '#3b82f6',
  DEBUG: '#6b7280',
  TRACE: '#94a3b8',
  UNKNOWN: '#8b949e',
};

/** OTel severity text (or number 1-24) to one of the display levels. */
export function severityOf(text: unknown, number?: unknown): Severity {
  const t = typeof text === 'string' ? text.toUpperCase() : '';
  if (t.startsWith('FATAL') || t === 'CRITICAL' || t === 'EMERG' || t === 'ALERT') return 'FATAL';
  if (t.startsWith('ERR')) return 'ERROR';
  if (t.startsWith('WARN')) return 'WARN';
  if (t.startsWith('INFO') || t === 'NOTICE') return 'INFO';
  if (t.startsWith('DEBUG')) return 'DEBUG';
  if (t.startsWith('TRACE')) return 'TRACE';
  const n = typeof number === 'number' ? number : Number(number);
  if (Number.isFinite(n) && n > 0) return n >= 21 ? 'FATAL' : n >= 17 ? 'ERROR' : n >= 13 ? 'WARN' : n >= 9 ? 'INFO' : n >= 5 ? 'DEBUG' : 'TRACE';
  return 'UNKNOWN';
}
