// View state in the URL (Grafana style: `?q=…&db=…&from=now-6h&to=now&tab=Chart&tz=utc`), so a
// copied link reproduces the view; and in-app navigation that keeps the shell.
import { currentZone, setZone, type Zone } from './format';
import type { TimeRange } from './timerange';

export interface ViewParams {
  q?: string;
  db?: string;
  table?: string;
  range?: TimeRange;
  tab?: string;
  trace?: string;
  span?: string;
}

export function readParams(search = location.search): ViewParams {
  const p = new URLSearchParams(search);
  const tz = p.get('tz');
  if (tz === 'utc' || tz === 'local') setZone(tz as Zone);
  const from = p.get('from');
  const get = (k: string) => p.get(k) ?? undefined;
  return {
    q: get('q'),
    db: get('db'),
    table: get('table'),
    range: from ? { from, to: p.get('to') || 'now' } : undefined,
    tab: get('tab'),
    trace: get('trace'),
    span: get('span'),
  };
}

/** Merges `params` into the current URL (undefined removes a key); push adds a history entry. */
export function writeParams(params: Partial<Record<keyof ViewParams | 'edit', unknown>>, push: boolean): void {
  const p = new URLSearchParams(location.search);
  for (const [key, value] of Object.entries(params)) {
    if (key === 'range') {
      const range = value as TimeRange | undefined;
      if (range) {
        p.set('from', range.from);
        p.set('to', range.to);
      }
      continue;
    }
    if (value === undefined || value === null || value === '') p.delete(key);
    else p.set(key, String(value));
  }
  p.set('tz', currentZone());
  const url = `${location.pathname}?${p.toString()}`;
  if (url === `${location.pathname}${location.search}`) return;
  if (push) history.pushState(null, '', url);
  else history.replaceState(null, '', url);
}

/** In-app navigation: the shell (main.ts) routes without a page load. */
export function navigateTo(url: string): void {
  window.dispatchEvent(new CustomEvent('bzrk:navigate', { detail: url }));
}

/** The Tracing tab's address for a trace (and span) over a time range. */
export function traceHref(traceId: string, spanId?: string, range?: TimeRange, db?: string): string {
  const p = new URLSearchParams({ trace: traceId });
  if (spanId) p.set('span', spanId);
  if (db) p.set('db', db);
  if (range) {
    p.set('from', range.from);
    p.set('to', range.to);
  }
  return `/tracing?${p.toString()}`;
}

export function spanHref(spanId: string, range?: TimeRange, db?: string): string {
  const p = new URLSearchParams({ span: spanId });
  if (db) p.set('db', db);
  if (range) {
    p.set('from', range.from);
    p.set('to', range.to);
  }
  return `/tracing?${p.toString()}`;
}
