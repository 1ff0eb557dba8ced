// How values read on screen, in one place: numbers, bytes, durations, KQL timespans and
// datetimes in the chosen time zone (UTC or the browser's), used by the grid, charts, the
// waterfall, the logs view and the dashboards alike.

export type Zone = 'utc' | 'local';

let zone: Zone = (localStorage.getItem('bzrk.tz') as Zone) === 'local' ? 'local' : 'utc';
const zoneListeners = new Set<(z: Zone) => void>();

export function currentZone(): Zone {
  return zone;
}

export function setZone(next: Zone): void {
  if (next === zone) return;
  zone = next;
  localStorage.setItem('bzrk.tz', next);
  for (const listener of zoneListeners) listener(next);
}

export function onZoneChange(listener: (z: Zone) => void): () => void {
  zoneListeners.add(listener);
  return () => zoneListeners.delete(listener);
}

export function fmtNumber(n: number, digits = 1): string {
  if (!Number.isFinite(n)) return String(n);
  return new Intl.NumberFormat('en', { notation: Math.abs(n) >= 1e6 ? 'compact' : 'standard', maximumFractionDigits: digits }).format(n);
}

export function fmtBytes(n: number): string {
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
}

/** A duration in milliseconds as people read it: 0.42 ms, 12.3 ms, 1.57 s, 2m 5s, 1h 4m. */
export function fmtDuration(ms: number): string {
  if (!Number.isFinite(ms)) return '';
  const a = Math.abs(ms);
  if (a === 0) return '0';
  if (a < 1) return `${(ms * 1000).toFixed(a < 0.01 ? 1 : 0)} µs`;
  if (a < 100) return `${ms.toFixed(a < 10 ? 2 : 1)} ms`;
  if (a < 1000) return `${ms.toFixed(0)} ms`;
  if (a < 60_000) return `${(ms / 1000).toFixed(2)} s`;
  if (a < 3_600_000) return `${Math.floor(ms / 60_000)}m ${Math.round((ms % 60_000) / 1000)}s`;
  return `${Math.floor(ms / 3_600_000)}h ${Math.round((ms % 3_600_000) / 60_000)}m`;
}

const TIMESPAN = /^(-)?(?:(\d+)\.)?(\d{1,2}):(\d{2}):(\d{2})(?:\.(\d{1,7}))?$/;

/** A KQL timespan as the API sends it (`[-][d.]hh:mm:ss[.fffffff]`) in milliseconds, or null. */
export function parseTimespan(value: unknown): number | null {
  if (typeof value === 'number') return value / 10_000; // 100 ns ticks
  if (typeof value !== 'string') return null;
  const m = TIMESPAN.exec(value);
  if (!m) return null;
  const fraction = m[6] ? Number(`0.${m[6]}`) : 0;
  const ms = ((Number(m[2] ?? 0) * 24 + Number(m[3])) * 3600 + Number(m[4]) * 60 + Number(m[5]) + fraction) * 1000;
  return m[1] ? -ms : ms;
}

/** A datetime cell (RFC 3339 text, 100 ns digits allowed) in epoch milliseconds, or null. */
export function parseDatetime(value: unknown): number | null {
  if (typeof value === 'number') return value;
  if (typeof value !== 'string' || !value) return null;
  // Date.parse takes at most 3 fractional digits in some engines: cut the rest.
  const ms = Date.parse(value.replace(/(\.\d{3})\d+/, '$1'));
  return Number.isNaN(ms) ? null : ms;
}

/** The sub-millisecond digits of a datetime cell (".1042799" -> 0.2799 ms), for span offsets. */
export function datetimeMicros(value: unknown): number {
  if (typeof value !== 'string') return 0;
  const m = /\.\d{3}(\d{1,4})/.exec(value);
  return m ? Number(`0.${m[1]}`) : 0;
}

const pad = (n: number, w = 2) => String(n).padStart(w, '0');

/** An instant in the chosen zone: `2026-12-01 15:30:12.104` (UTC) or local with its offset. */
export function fmtInstant(ms: number, opts: { millis?: boolean; seconds?: boolean; zone?: Zone } = {}): string {
  const z = opts.zone ?? zone;
  const d = new Date(ms);
  const utc = z === 'utc';
  const parts = utc
    ? [d.getUTCFullYear(), d.getUTCMonth() + 1, d.getUTCDate(), d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds(), d.getUTCMilliseconds()]
    : [d.getFullYear(), d.getMonth() + 1, d.getDate(), d.getHours(), d.getMinutes(), d.getSeconds(), d.getMilliseconds()];
  let text = `${parts[0]}-${pad(parts[1])}-${pad(parts[2])} ${pad(parts[3])}:${pad(parts[4])}`;
  if (opts.seconds !== false) text += `:${pad(parts[5])}`;
  if (opts.millis) text += `.${pad(parts[6], 3)}`;
  return text;
}

/** The zone's name as shown beside times: "UTC" or the browser's offset ("UTC+01:00"). */
export function zoneLabel(z: Zone = zone, at = Date.now()): string {
  if (z === 'utc') return 'UTC';
  const offset = -new Date(at).getTimezoneOffset();
  const sign = offset >= 0 ? '+' : '-';
  return `UTC${sign}${pad(Math.floor(Math.abs(offset) / 60))}:${pad(Math.abs(offset) % 60)}`;
}

/** A datetime cell for the grid: the exact text in UTC, converted (to ms) in local time. */
export function fmtDatetimeCell(value: unknown): string {
  if (typeof value !== 'string') return value === null || value === undefined ? '' : String(value);
  // The API drops trailing zeros of the 100 ns digits: pad them so that times line up.
  if (zone === 'utc') return value.replace('T', ' ').replace(/Z$/, '').replace(/(:\d{2})(?:\.(\d{1,7}))?$/, (_, s: string, f?: string) => `${s}.${(f ?? '').padEnd(7, '0')}`);
  const ms = parseDatetime(value);
  return ms === null ? value : fmtInstant(ms, { millis: true });
}
