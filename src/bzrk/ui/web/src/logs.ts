// The logs view of a log-shaped result (a datetime `timestamp` and a `body`): newest first,
// severity colours, a volume histogram by severity over the time range, expandable rows,
// live tail (the explorer re-runs on an interval with the range sliding) and "show context"
// (the records around one record of the same service).
import { BarChart } from 'echarts/charts';
import { GridComponent, LegendComponent, TooltipComponent } from 'echarts/components';
import * as echarts from 'echarts/core';
import { CanvasRenderer } from 'echarts/renderers';
import { clear, h, toast } from './dom';
import { currentZone, fmtDatetimeCell, fmtInstant, fmtNumber, parseDatetime } from './format';
import type { GridColumn } from './grid';
import { SEVERITIES, SEVERITY_COLORS, severityOf, type Severity } from './palette';
import { volumeQuery } from './logvolume';
import { kqlString, kqlTable, records, runQuery } from './run';
import { binStep } from './tracequeries';
import { navigateTo, readParams, traceHref } from './urlstate';

echarts.use([BarChart, GridComponent, LegendComponent, TooltipComponent, CanvasRenderer]);

const PAGE = 300;
const TAIL_SECONDS = [5, 10, 30];

/** Whether a result table reads as log records. */
export function isLogShaped(columns: GridColumn[]): boolean {
  const names = new Set(columns.map((c) => c.name));
  return columns.some((c) => c.name === 'timestamp' && c.type === 'datetime') && names.has('body');
}

interface LogRow {
  index: number;
  time: number;
  text: string;
  severity: Severity;
  severityText: string;
  service: string;
  body: string;
  record: Record<string, unknown>;
}

function serviceOf(record: Record<string, unknown>): string {
  if (typeof record.service === 'string') return record.service;
  const resource = record.resource as Record<string, unknown> | undefined;
  const fromBag = resource && typeof resource === 'object' ? (resource['service.name'] ?? (resource.service as Record<string, unknown> | undefined)?.name) : undefined;
  return typeof fromBag === 'string' ? fromBag : '';
}

export interface LogsContext {
  database: () => string;
  /** The table the query reads (for "show context"). */
  table: () => string;
  range: () => { fromMs: number; toMs: number };
  /** The query whose result is shown (its matches are what the histogram counts). */
  query: () => string;
  /** Re-runs the query with the range slid to now; resolves when the run ends. */
  rerun: () => Promise<void>;
}

export class LogsView {
  readonly element: HTMLElement;
  private histogramHost = h('div.logs-histogram', { 'data-testid': 'logs-histogram' });
  private list = h('div.logs-list', { role: 'list', 'data-testid': 'logs-list' });
  private summary = h('span.muted.logs-summary');
  private tail = h('input', { type: 'checkbox', 'data-testid': 'live-tail', 'aria-label': 'Live tail' });
  private interval = h('select', { 'aria-label': 'Live tail interval' }, ...TAIL_SECONDS.map((s) => h('option', { value: String(s) }, `every ${s} s`)));
  private tailState = h('span.muted.tail-state', { 'data-testid': 'tail-state' });
  private contextHost = h('div.logs-context', { hidden: true, 'data-testid': 'logs-context' });
  private chart: echarts.ECharts | null = null;
  private rows: LogRow[] = [];
  private shown = PAGE;
  private expanded = new Set<number>();
  private timer = 0;
  private tailing = false;
  // The histogram's counts over every record the query matches (not only the rows returned):
  // for which query, range and database, and the counts once that run answered.
  private volumeKey = '';
  private volume: { start: number; step: number; bins: number; counts: Map<Severity, number[]> } | null = null;
  private volumeAbort: AbortController | null = null;
  private dark = false;
  private shownQuery = '';

  constructor(private ctx: LogsContext) {
    this.tail.addEventListener('change', () => this.setTail(this.tail.checked));
    this.interval.addEventListener('change', () => this.tail.checked && this.setTail(true));
    this.element = h(
      'div.logs-view',
      { 'data-testid': 'logs-view' },
      h('div.logs-bar', {}, this.summary, h('span.spacer'), h('label.field', {}, this.tail, ' Live tail'), this.interval, this.tailState),
      this.histogramHost,
      this.contextHost,
      this.list,
    );
    new ResizeObserver(() => this.chart?.resize()).observe(this.histogramHost);
  }

  setData(columns: GridColumn[], rows: unknown[][], dark: boolean): void {
    const recs = records({ columns, rows });
    this.rows = recs
      .map((record, index) => {
        const time = parseDatetime(record.timestamp) ?? 0;
        const severity = severityOf(record.severity_text, record.severity_number);
        const body = typeof record.body === 'string' ? record.body : JSON.stringify(record.body ?? '');
        return { index, time, text: String(record.timestamp ?? ''), severity, severityText: String(record.severity_text ?? '') || severity, service: serviceOf(record), body, record };
      })
      // Newest first; equal instants by their exact text (100 ns digits), then as received.
      .sort((a, b) => b.time - a.time || (a.text < b.text ? 1 : a.text > b.text ? -1 : a.index - b.index));
    this.element.dataset.rows = String(this.rows.length);
    this.element.dataset.newest = this.rows[0]?.text ?? '';
    this.dark = dark;
    // Another query's records: the context opened on the last one's no longer applies.
    if (this.ctx.query() !== this.shownQuery) {
      this.shownQuery = this.ctx.query();
      this.contextHost.hidden = true;
    }
    this.loadVolume();
    this.drawHistogram(dark);
    this.renderList();
  }

  /** The time bins of the histogram over the current range. */
  private bins(): { start: number; step: number; literal: string; bins: number } {
    const { fromMs, toMs } = this.ctx.range();
    const [step, literal] = binStep(toMs - fromMs, 80);
    const start = Math.floor(fromMs / step) * step;
    return { start, step, literal, bins: Math.max(1, Math.ceil((toMs - start) / step)) };
  }

  /** Counts every record the query matches by bin and severity (once per query, range and database). */
  private loadVolume(): void {
    const { fromMs, toMs } = this.ctx.range();
    const { start, step, literal, bins } = this.bins();
    const query = volumeQuery(this.ctx.query(), literal);
    const key = JSON.stringify([query, this.ctx.database(), fromMs, toMs]);
    if (key === this.volumeKey) return;
    this.volumeKey = key;
    this.volume = null;
    this.volumeAbort?.abort();
    this.element.dataset.volume = 'rows';
    delete this.element.dataset.matching;
    if (!query) return;
    const abort = new AbortController();
    this.volumeAbort = abort;
    const request = { query, database: this.ctx.database(), since: new Date(fromMs).toISOString(), until: new Date(toMs).toISOString() };
    runQuery(request, { signal: abort.signal })
      .then((result) => {
        if (abort.signal.aborted || key !== this.volumeKey || result.status !== 'complete') return;
        const counts = new Map<Severity, number[]>();
        for (const r of records(result.tables.get('PrimaryResult'))) {
          const i = Math.floor(((parseDatetime(r.t) ?? 0) - start) / step);
          if (i < 0 || i >= bins) continue;
          const severity = severityOf(r.s);
          if (!counts.has(severity)) counts.set(severity, new Array(bins).fill(0));
          counts.get(severity)![i] += Number(r.n) || 0;
        }
        this.volume = { start, step, bins, counts };
        this.drawHistogram(this.dark);
      })
      // A query the count cannot follow (e.g. no timestamp before its last stages) keeps the
      // histogram of the returned rows.
      .catch(() => undefined);
  }

  redraw(dark: boolean): void {
    this.dark = dark;
    this.drawHistogram(dark);
    this.renderList();
  }

  dispose(): void {
    this.setTail(false);
    this.volumeAbort?.abort();
    this.chart?.dispose();
    this.chart = null;
  }

  private setTail(on: boolean): void {
    window.clearTimeout(this.timer);
    this.tailing = on;
    this.element.dataset.tail = on ? 'on' : 'off';
    this.tail.checked = on;
    this.tailState.textContent = on ? 'live' : '';
    if (on) this.schedule();
  }

  private schedule(): void {
    window.clearTimeout(this.timer);
    if (!this.tailing) return;
    this.timer = window.setTimeout(async () => {
      if (!this.tailing || !this.element.isConnected) return this.setTail(false);
      await this.ctx.rerun().catch(() => undefined);
      this.tailState.textContent = `live · updated ${fmtInstant(Date.now())}`;
      this.element.dataset.tailRuns = String(Number(this.element.dataset.tailRuns ?? 0) + 1);
      this.schedule();
    }, Number(this.interval.value) * 1000);
  }

  private drawHistogram(dark: boolean): void {
    let { start, step, bins } = this.bins();
    let counts = new Map<Severity, number[]>();
    if (this.volume) {
      ({ start, step, bins, counts } = this.volume);
    } else {
      for (const row of this.rows) {
        const i = Math.floor((row.time - start) / step);
        if (i < 0 || i >= bins) continue;
        if (!counts.has(row.severity)) counts.set(row.severity, new Array(bins).fill(0));
        counts.get(row.severity)![i]++;
      }
    }
    const textColor = dark ? '#c9d1d9' : '#1f2328';
    if (!this.chart) this.chart = echarts.init(this.histogramHost, undefined, { renderer: 'canvas' });
    const levels = SEVERITIES.filter((s) => counts.has(s)).reverse();
    this.chart.setOption(
      {
        animation: false,
        useUTC: currentZone() === 'utc',
        grid: { left: 48, right: 12, top: 8, bottom: 42 },
        legend: { bottom: 0, textStyle: { color: textColor }, itemHeight: 8 },
        tooltip: { trigger: 'axis', axisPointer: { type: 'shadow' } },
        xAxis: {
          type: 'time',
          min: start,
          max: start + bins * step,
          axisLabel: { color: textColor, hideOverlap: true, formatter: (v: number) => fmtInstant(v, { seconds: false }).slice(5) },
        },
        yAxis: { type: 'value', minInterval: 1, axisLabel: { color: textColor }, splitLine: { lineStyle: { color: dark ? '#21262d' : '#eaeef2' } } },
        series: levels.map((level) => ({
          name: level,
          type: 'bar',
          stack: 'volume',
          barWidth: '90%',
          color: SEVERITY_COLORS[level],
          data: counts.get(level)!.map((n, i) => [start + i * step + step / 2, n]),
        })),
      },
      { notMerge: true },
    );
    const totals = SEVERITIES.filter((s) => counts.has(s)).map((s) => [s, counts.get(s)!.reduce((a, b) => a + b, 0)] as const);
    const bySeverity = totals.map(([s, n]) => `${s} ${fmtNumber(n)}`).join(' · ');
    if (this.volume) {
      const matching = totals.reduce((a, [, n]) => a + n, 0);
      this.element.dataset.volume = 'matches';
      this.element.dataset.matching = String(matching);
      this.summary.textContent = `${fmtNumber(this.rows.length)} shown of ${fmtNumber(matching)} matching, newest first${bySeverity ? ' · ' + bySeverity : ''}`;
    } else {
      this.summary.textContent = `${fmtNumber(this.rows.length)} records, newest first${bySeverity ? ' · ' + bySeverity : ''}`;
    }
  }

  private renderList(): void {
    clear(this.list);
    for (const row of this.rows.slice(0, this.shown)) this.list.appendChild(this.rowView(row));
    if (this.rows.length > this.shown) {
      this.list.appendChild(
        h('button.link.more', { type: 'button', onclick: () => ((this.shown += PAGE), this.renderList()) }, `Show ${Math.min(PAGE, this.rows.length - this.shown)} more of ${fmtNumber(this.rows.length - this.shown)}`),
      );
    }
  }

  private rowView(row: LogRow): HTMLElement {
    const open = this.expanded.has(row.index);
    const line = h(
      'div.log-row',
      {
        role: 'listitem',
        'data-severity': row.severity,
        'aria-expanded': String(open),
        tabindex: 0,
        onclick: (e: Event) => {
          if ((e.target as HTMLElement).closest('.log-details')) return;
          if (open) this.expanded.delete(row.index);
          else this.expanded.add(row.index);
          line.replaceWith(this.rowView(row));
        },
      },
      h('span.log-sev', { style: { background: SEVERITY_COLORS[row.severity] } }),
      h('span.log-time', {}, fmtDatetimeCell(row.text)),
      h('span.log-level', { style: { color: SEVERITY_COLORS[row.severity] } }, row.severityText),
      row.service ? h('span.log-service', {}, row.service) : null,
      h('span.log-body', {}, open ? '' : row.body.split('\n')[0]),
    );
    if (open) line.appendChild(this.detailsView(row));
    return line;
  }

  private detailsView(row: LogRow): HTMLElement {
    const traceId = typeof row.record.trace_id === 'string' && row.record.trace_id ? row.record.trace_id : '';
    const params = readParams();
    const fields = Object.entries(row.record).filter(([k, v]) => k !== 'body' && v !== null && v !== undefined && v !== '');
    return h(
      'div.log-details',
      {},
      h('pre.log-full-body', {}, row.body),
      h(
        'div.log-actions',
        {},
        h('button', { type: 'button', 'data-testid': 'show-context', disabled: !row.service, title: row.service ? `Records of ${row.service} around this one` : 'No service on this record', onclick: () => void this.showContext(row) }, 'Show context'),
        traceId ? h('button', { type: 'button', onclick: () => navigateTo(traceHref(traceId, String(row.record.span_id ?? '') || undefined, params.range, params.db)) }, 'Open trace') : null,
      ),
      h('table.kv', {}, ...fields.map(([k, v]) => h('tr', {}, h('th', {}, k), h('td', {}, typeof v === 'object' ? JSON.stringify(v) : String(v))))),
    );
  }

  /** The 25 records before and after one record, of the same service, within ±15 minutes. */
  private async showContext(row: LogRow): Promise<void> {
    clear(this.contextHost);
    this.contextHost.hidden = false;
    this.contextHost.append(h('div.details-bar', {}, h('strong', {}, `Context of ${row.service} at ${fmtDatetimeCell(row.text)}`), h('span.spacer'), h('button', { type: 'button', 'aria-label': 'Close context', onclick: () => (this.contextHost.hidden = true) }, '✕')), h('p.muted', {}, 'Loading…'));
    const at = row.text;
    const query = `${kqlTable(this.ctx.table())}
| where timestamp between (datetime(${at}) - 15m .. datetime(${at}) + 15m)
| where isnotempty(body) and tostring(resource.service.name) == ${kqlString(row.service)}
| project timestamp, severity_text, body, trace_id, span_id
| order by timestamp asc
| take 5000`;
    try {
      const result = await runQuery({ query, database: this.ctx.database(), since: new Date(row.time - 16 * 60_000).toISOString(), until: new Date(row.time + 16 * 60_000).toISOString() });
      const around = records(result.tables.get('PrimaryResult'));
      let anchor = around.findIndex((r) => r.timestamp === at && r.body === row.body);
      if (anchor < 0) anchor = around.findIndex((r) => (parseDatetime(r.timestamp) ?? 0) >= row.time);
      const slice = around.slice(Math.max(0, anchor - 25), anchor + 26).reverse();
      const table = h('table.logs-context-table', {});
      for (const r of slice) {
        const sev = severityOf(r.severity_text);
        const isAnchor = r.timestamp === at && r.body === row.body;
        table.appendChild(
          h(
            'tr',
            { 'data-anchor': isAnchor ? 'true' : undefined },
            h('td.log-time', {}, fmtDatetimeCell(r.timestamp)),
            h('td', { style: { color: SEVERITY_COLORS[sev] } }, String(r.severity_text ?? '')),
            h('td.log-body', {}, String(r.body ?? '').split('\n')[0]),
          ),
        );
      }
      this.contextHost.lastElementChild?.remove();
      this.contextHost.append(table);
      this.contextHost.dataset.rows = String(slice.length);
    } catch (e) {
      this.contextHost.lastElementChild?.remove();
      this.contextHost.append(h('p.error-text', {}, (e as Error).message));
      toast((e as Error).message, 'error');
    }
  }
}
