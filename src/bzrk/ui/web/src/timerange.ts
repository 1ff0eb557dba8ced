// Time ranges as Grafana writes them (`from=now-6h&to=now`, or absolute instants) and as the
// user types them (`2h`, `now-1d`, `now-2h..now-1h`, `2026-12-01 10:00 .. 2026-12-01 12:00`),
// turned into the query request's `since`/`until` (Berserk time expressions: "6h ago", RFC 3339).
import { currentZone, fmtInstant, type Zone } from './format';

export interface TimeRange {
  /** `now`, `now-<n><unit>` or an RFC 3339 instant (UTC, `Z`). */
  from: string;
  to: string;
}

const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };
const UNIT_NAMES: Record<string, string> = { s: 'second', m: 'minute', h: 'hour', d: 'day', w: 'week' };
const RELATIVE = /^now(?:\s*-\s*(\d+)\s*([smhdw]))?$/i;
const BARE = /^(\d+)\s*([smhdw])$/i;

export const PRESETS: string[] = ['now-15m', 'now-1h', 'now-6h', 'now-24h', 'now-7d', 'now-30d'];
export const DEFAULT_RANGE: TimeRange = { from: 'now-24h', to: 'now' };

/** A relative expression's offset from now in ms (`now` is 0), or null for an absolute one. */
function relativeMs(expr: string): number | null {
  const m = RELATIVE.exec(expr.trim());
  if (!m) return null;
  return m[1] ? Number(m[1]) * UNIT_MS[m[2].toLowerCase()] : 0;
}

function normalizeRelative(expr: string): string | null {
  const text = expr.trim().toLowerCase().replace(/\s+/g, '');
  const bare = BARE.exec(text);
  if (bare) return `now-${Number(bare[1])}${bare[2]}`;
  const m = RELATIVE.exec(text);
  if (!m) return null;
  return m[1] ? `now-${Number(m[1])}${m[2]}` : 'now';
}

/** Reads an instant typed in the chosen zone (a bare date-time is local to that zone). */
function parseInstant(text: string, zone: Zone): string | null {
  let t = text.trim().replace(' ', 'T');
  if (!t) return null;
  if (/^\d{4}-\d{2}-\d{2}$/.test(t)) t += 'T00:00';
  const hasZone = /(Z|[+-]\d{2}:?\d{2})$/i.test(t);
  if (!hasZone && zone === 'utc') t += 'Z';
  const ms = Date.parse(t.replace(/(\.\d{3})\d+/, '$1'));
  return Number.isNaN(ms) ? null : new Date(ms).toISOString();
}

function parseBound(text: string, zone: Zone): string | null {
  return normalizeRelative(text) ?? parseInstant(text, zone);
}

/** The range a user typed, or null when it cannot be read. */
export function parseRange(input: string, zone: Zone = currentZone()): TimeRange | null {
  const text = input.trim();
  if (!text) return null;
  const split = text.split(/\s*(?:\.\.|\bto\b|–)\s*/i);
  if (split.length === 2) {
    const from = parseBound(split[0], zone);
    const to = parseBound(split[1], zone);
    if (!from || !to) return null;
    const [a, b] = [resolve(from), resolve(to)];
    return a < b ? { from, to } : null;
  }
  const single = normalizeRelative(text);
  if (single && single !== 'now') return { from: single, to: 'now' };
  return null;
}

/** Epoch ms of one bound. */
export function resolve(expr: string, now = Date.now()): number {
  const offset = relativeMs(expr);
  return offset === null ? Date.parse(expr) : now - offset;
}

export function resolveRange(range: TimeRange, now = Date.now()): [number, number] {
  return [resolve(range.from, now), resolve(range.to, now)];
}

/** Berserk time expressions for the query request. */
export function toRequest(range: TimeRange): { since: string; until?: string } {
  const bound = (expr: string) => {
    const m = RELATIVE.exec(expr);
    if (!m) return expr;
    return m[1] ? `${m[1]}${m[2]} ago` : 'now';
  };
  const since = bound(range.from);
  return range.to === 'now' ? { since } : { since, until: bound(range.to) };
}

/** A Berserk `since`/`until` pair (saved queries, run history) as a range, when it reads as one. */
export function fromRequest(since: string | null | undefined, until: string | null | undefined): TimeRange | null {
  if (!since) return null;
  const bound = (expr: string): string | null => {
    const ago = /^\s*(\d+)\s*([smhdw])\s*(?:ago)?\s*$/i.exec(expr);
    if (ago) return `now-${Number(ago[1])}${ago[2].toLowerCase()}`;
    if (expr.trim().toLowerCase() === 'now') return 'now';
    const ms = Date.parse(expr);
    return Number.isNaN(ms) ? null : new Date(ms).toISOString();
  };
  const from = bound(since);
  const to = until ? bound(until) : 'now';
  return from && to ? { from, to } : null;
}

export function isRelative(range: TimeRange): boolean {
  return relativeMs(range.from) !== null && relativeMs(range.to) !== null;
}

/** What the time field shows: `now-6h` style text, or the two instants in the chosen zone. */
export function rangeText(range: TimeRange, zone: Zone = currentZone()): string {
  const one = (expr: string) => (relativeMs(expr) !== null ? expr : fmtInstant(Date.parse(expr), { zone }));
  if (range.to === 'now' && relativeMs(range.from) !== null) return range.from;
  return `${one(range.from)} .. ${one(range.to)}`;
}

/** "Last 6 hours" for presets and simple relative ranges. */
export function rangeLabel(range: TimeRange): string {
  const m = RELATIVE.exec(range.from);
  if (range.to === 'now' && m && m[1]) {
    const n = Number(m[1]);
    const unit = UNIT_NAMES[m[2].toLowerCase()];
    return n === 1 ? `Last ${unit}` : `Last ${n} ${unit}s`;
  }
  return rangeText(range);
}

/** Two ranges are the same text (URL state, re-runs). */
export function sameRange(a: TimeRange, b: TimeRange): boolean {
  return a.from === b.from && a.to === b.to;
}

/** An absolute range between two instants (chart zoom, heatmap brush). */
export function absolute(fromMs: number, toMs: number): TimeRange {
  return { from: new Date(Math.floor(fromMs)).toISOString(), to: new Date(Math.ceil(toMs)).toISOString() };
}
