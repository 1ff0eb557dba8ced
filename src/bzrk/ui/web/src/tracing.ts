// The Tracing tab: table picker, the outlier heatmap (time x duration, errors in red) whose
// brushed cells filter the list, the trace-find builder, the trace list with latency
// percentiles, and the span waterfall of one trace (`/tracing?trace=<id>`).
import { HeatmapChart } from 'echarts/charts';
import { GridComponent, TooltipComponent } from 'echarts/components';
import * as echarts from 'echarts/core';
import { CanvasRenderer } from 'echarts/renderers';
import { api } from './api';
import { clear, h, toast } from './dom';
import { dragSelect } from './dragselect';
import { currentZone, fmtDuration, fmtInstant, fmtNumber, onZoneChange, parseDatetime, parseTimespan } from './format';
import { ResultGrid } from './grid';
import { QueryFailed, records, runQuery } from './run';
import { TimePicker } from './timepicker';
import { DEFAULT_RANGE, resolveRange, toRequest, type TimeRange } from './timerange';
import { TraceBuilder } from './tracebuilder';
import {
  binStep,
  heatmapQuery,
  percentilesQuery,
  traceListQuery,
  traceOfSpanQuery,
  traceQuery,
  type Brush,
  type TraceOrder,
} from './tracequeries';
import { readParams, writeParams } from './urlstate';
import { logFrom, spanFrom, Waterfall } from './waterfall';

echarts.use([HeatmapChart, GridComponent, TooltipComponent, CanvasRenderer]);

export class TracingPage {
  readonly element: HTMLElement;
  private database = h('select#tr-database', { 'aria-label': 'Database', onchange: () => void this.onDatabase() });
  private table = h('select#tr-table', { 'aria-label': 'Traces table', onchange: () => this.onTable() });
  private order = h(
    'select',
    { 'aria-label': 'Order', onchange: () => void this.loadList() },
    h('option', { value: 'newest' }, 'Newest first'),
    h('option', { value: 'slowest' }, 'Slowest first'),
  );
  private picker: TimePicker;
  private heatHost = h('div.heatmap', { 'data-testid': 'heatmap' });
  private heatNote = h('div.muted.heat-note');
  private stats = h('div.trace-stats', { 'data-testid': 'trace-stats' });
  private listHost = h('div.trace-list', { 'data-testid': 'trace-list' });
  private overview: HTMLElement;
  private detail = h('div.trace-detail', { hidden: true });
  private builder: TraceBuilder;
  private chart: echarts.ECharts | null = null;
  private brush: Brush | null = null;
  private clearDrag: () => void = () => undefined;
  private heat: { bins: number[]; step: number; buckets: number[] } = { bins: [], step: 60_000, buckets: [] };
  private abort = new AbortController();

  constructor(private isDark: () => boolean) {
    const params = readParams();
    this.picker = new TimePicker(params.range ?? DEFAULT_RANGE, () => this.refresh(), 'tr-time-range');
    this.builder = new TraceBuilder('default', (kql) => void this.runBuilder(kql));
    this.overview = h(
      'div.trace-overview',
      {},
      h('section.card.heat-card', {}, h('div.card-title', {}, h('strong', {}, 'Outlier heatmap'), h('span.muted', {}, ' traces by start time and duration; red cells hold traces with an error span; drag to select'), h('span.spacer'), h('button.link', { type: 'button', 'data-testid': 'clear-brush', onclick: () => this.clearBrush() }, 'Clear selection')), this.heatHost, this.heatNote),
      this.builder.element,
      h('section.card', {}, h('div.card-title', {}, h('strong', {}, 'Traces'), this.stats, h('span.spacer'), this.order), this.listHost),
    );
    this.element = h(
      'div.tracing',
      {},
      h(
        'div.toolbar',
        {},
        h('label.field', {}, 'Database ', this.database),
        h('label.field', {}, 'Table ', this.table),
        h('label.field', {}, 'Time ', this.picker.element),
        h('span.spacer'),
        h('button', { type: 'button', onclick: () => this.refresh() }, 'Refresh'),
      ),
      h('div.tracing-body', {}, this.overview, this.detail),
    );
    onZoneChange(() => this.refresh());
    new ResizeObserver(() => this.chart?.resize()).observe(this.heatHost);
    void this.init(params.db, params.table, params.trace, params.span);
  }

  private get range(): TimeRange {
    return this.picker.range;
  }

  private async init(db?: string, table?: string, trace?: string, span?: string): Promise<void> {
    try {
      const answer = await api<{ databases: { name: string }[] }>('GET', '/api/v1/databases');
      for (const d of answer.databases) this.database.appendChild(h('option', { value: d.name }, d.name));
      const chosen = [db, 'default'].find((n) => n && answer.databases.some((d) => d.name === n));
      if (chosen) this.database.value = chosen;
      await this.onDatabase(table);
    } catch (e) {
      toast(`Could not list databases: ${(e as Error).message}`, 'error');
    }
    if (trace) void this.openTrace(trace, span);
    else if (span) void this.openSpan(span);
    else this.refresh();
  }

  private async onDatabase(table?: string): Promise<void> {
    const answer = await api<{ tables: { name: string }[] }>('GET', `/api/v1/databases/${encodeURIComponent(this.database.value)}/tables`);
    clear(this.table);
    for (const t of answer.tables) this.table.appendChild(h('option', { value: t.name }, t.name));
    const wanted = table ?? 'default';
    if (answer.tables.some((t) => t.name === wanted)) this.table.value = wanted;
    this.builder.setTable(this.table.value);
    this.element.dataset.table = this.table.value;
  }

  private onTable(): void {
    this.builder.setTable(this.table.value);
    this.element.dataset.table = this.table.value;
    this.refresh();
  }

  private request(query: string) {
    return { query, database: this.database.value, ...toRequest(this.range), timezone: 'UTC' };
  }

  private saveUrl(extra: Record<string, string | undefined> = {}): void {
    writeParams({ db: this.database.value, table: this.table.value, range: this.range, ...extra }, false);
  }

  refresh(): void {
    if (!this.database.value) return;
    this.abort.abort();
    this.abort = new AbortController();
    this.detail.hidden = true;
    this.overview.hidden = false;
    this.saveUrl({ trace: undefined, span: undefined });
    void this.loadHeatmap();
    void this.loadList();
  }

  // -- heatmap ---------------------------------------------------------------------------------
  private async loadHeatmap(): Promise<void> {
    const [from, to] = resolveRange(this.range);
    const [stepMs, step] = binStep(to - from);
    this.heatNote.textContent = 'Loading…';
    this.element.dataset.heatmap = 'loading';
    try {
      const result = await runQuery(this.request(heatmapQuery(this.table.value, step)), { signal: this.abort.signal });
      const cells = records(result.tables.get('PrimaryResult'));
      this.drawHeatmap(cells, from, to, stepMs);
      const total = cells.reduce((n, c) => n + Number(c.traces ?? 0), 0);
      this.heatNote.textContent = `${fmtNumber(total)} traces in ${step} bins`;
      this.element.dataset.heatmap = 'done';
    } catch (e) {
      if (this.abort.signal.aborted) return;
      this.heatNote.textContent = `Heatmap unavailable: ${(e as Error).message}`;
      this.element.dataset.heatmap = 'error';
    }
  }

  private drawHeatmap(cells: Record<string, unknown>[], from: number, to: number, stepMs: number): void {
    const start = Math.floor(from / stepMs) * stepMs;
    const bins: number[] = [];
    for (let t = start; t < to; t += stepMs) bins.push(t);
    const buckets = [...new Set(cells.map((c) => Number(c.b)).filter(Number.isFinite))].sort((a, b) => a - b);
    if (buckets.length) for (let b = buckets[0]; b <= buckets[buckets.length - 1]; b++) if (!buckets.includes(b)) buckets.push(b);
    buckets.sort((a, b) => a - b);
    this.heat = { bins, step: stepMs, buckets };
    const max = Math.max(1, ...cells.map((c) => Number(c.traces ?? 0)));
    const data = cells.flatMap((c) => {
      const t = parseDatetime(c.t);
      const x = t === null ? -1 : Math.round((t - start) / stepMs);
      const y = buckets.indexOf(Number(c.b));
      if (x < 0 || x >= bins.length || y < 0) return [];
      const n = Number(c.traces ?? 0);
      const failed = Number(c.failed ?? 0);
      const strength = 0.25 + 0.75 * (Math.log(n + 1) / Math.log(max + 1));
      const color = failed > 0 ? `rgba(229, 72, 77, ${Math.min(1, 0.45 + failed / n)})` : `rgba(59, 130, 246, ${strength.toFixed(3)})`;
      return [{ value: [x, y, n, failed], itemStyle: { color } }];
    });
    const dark = this.isDark();
    const text = dark ? '#c9d1d9' : '#1f2328';
    if (!this.chart) {
      this.chart = echarts.init(this.heatHost, undefined, { renderer: 'canvas' });
      this.clearDrag = dragSelect(this.heatHost, () => this.chart, 'rect', (a, b) => this.onBrush(a, b));
    }
    const label = (b: number) => fmtDuration(2 ** b);
    this.chart.setOption(
      {
        animation: false,
        useUTC: currentZone() === 'utc',
        grid: { left: 64, right: 16, top: 26, bottom: 36 },
        tooltip: {
          formatter: (p: any) => {
            const [x, y, n, failed] = p.value as number[];
            return `${fmtInstant(bins[x], { seconds: false })} +${fmtDuration(stepMs)}<br>${label(buckets[y])} – ${label(buckets[y] + 1)}<br><b>${fmtNumber(n)}</b> traces${failed ? `, <b style="color:#e5484d">${failed}</b> with errors` : ''}`;
          },
        },
        xAxis: {
          type: 'category',
          data: bins.map((t) => fmtInstant(t, { seconds: false }).slice(5)),
          axisLabel: { color: text },
          axisLine: { lineStyle: { color: dark ? '#484f58' : '#d0d7de' } },
          splitArea: { show: false },
        },
        yAxis: {
          type: 'category',
          data: buckets.map(label),
          name: 'duration',
          nameTextStyle: { color: text },
          axisLabel: { color: text },
          axisLine: { lineStyle: { color: dark ? '#484f58' : '#d0d7de' } },
        },
        series: [{ type: 'heatmap', data, progressive: 0, emphasis: { itemStyle: { borderColor: text, borderWidth: 1 } } }],
      },
      { notMerge: true },
    );
    this.heatHost.dataset.cells = String(data.length);
  }

  /** A dragged rectangle, in cell indices (x: time bin, y: duration bucket). */
  private onBrush([x0, y0]: number[], [x1, y1]: number[]): void {
    const { bins, step, buckets } = this.heat;
    if (!bins.length || !buckets.length) return;
    const clamp = (v: number, n: number) => Math.max(0, Math.min(n - 1, Math.round(v)));
    const bx0 = clamp(Math.min(x0, x1), bins.length);
    const bx1 = clamp(Math.max(x0, x1), bins.length);
    const by0 = clamp(Math.min(y0, y1), buckets.length);
    const by1 = clamp(Math.max(y0, y1), buckets.length);
    this.brush = {
      fromMs: bins[bx0],
      toMs: bins[bx1] + step,
      minDurationMs: by0 === 0 ? 0 : 2 ** buckets[by0],
      maxDurationMs: 2 ** (buckets[by1] + 1),
    };
    this.element.dataset.brush = JSON.stringify(this.brush);
    void this.loadList();
  }

  private clearBrush(): void {
    this.brush = null;
    this.clearDrag();
    delete this.element.dataset.brush;
    void this.loadList();
  }

  // -- list --------------------------------------------------------------------------------------
  private async loadList(): Promise<void> {
    const table = this.table.value;
    this.listHost.dataset.state = 'loading';
    clear(this.stats);
    try {
      const [stats, list] = await Promise.all([
        runQuery(this.request(percentilesQuery(table, this.brush)), { signal: this.abort.signal }),
        runQuery(this.request(traceListQuery(table, this.brush, this.order.value as TraceOrder)), { signal: this.abort.signal }),
      ]);
      const s = records(stats.tables.get('PrimaryResult'))[0] ?? {};
      const chip = (label: string, value: string, testid: string) => h('span.chip', { 'data-testid': testid }, h('span.muted', {}, `${label} `), value);
      const pct = (name: string) => fmtDuration(parseTimespan(s[name]) ?? NaN) || '–';
      this.stats.append(
        chip('traces', fmtNumber(Number(s.traces ?? 0)), 'stat-traces'),
        chip('with errors', fmtNumber(Number(s.failed ?? 0)), 'stat-failed'),
        chip('p50', pct('percentile_duration_50'), 'stat-p50'),
        chip('p90', pct('percentile_duration_90'), 'stat-p90'),
        chip('p99', pct('percentile_duration_99'), 'stat-p99'),
      );
      if (this.brush) this.stats.append(h('span.chip.brushed', {}, 'selected cells only'));
      this.renderList(records(list.tables.get('PrimaryResult')));
      this.listHost.dataset.state = 'done';
    } catch (e) {
      if (this.abort.signal.aborted) return;
      clear(this.listHost);
      this.listHost.append(h('p.error-text', {}, (e as Error).message));
      this.listHost.dataset.state = 'error';
    }
  }

  private renderList(rows: Record<string, unknown>[]): void {
    clear(this.listHost);
    if (!rows.length) {
      this.listHost.append(h('p.muted', {}, 'No traces in this time range.'));
      return;
    }
    const longest = Math.max(...rows.map((r) => parseTimespan(r.duration) ?? 0), 0.001);
    const table = h(
      'table.list.traces',
      {},
      h('tr', {}, ...['Start', 'Service', 'Root span', 'Duration', 'Spans', 'Errors', 'Trace id'].map((c) => h('th', {}, c))),
    );
    for (const r of rows) {
      const id = String(r.trace_id);
      const ms = parseTimespan(r.duration) ?? 0;
      const errors = Number(r.errors ?? 0);
      table.appendChild(
        h(
          'tr',
          { 'data-trace': id, 'data-error': errors ? 'true' : undefined, onclick: () => void this.openTrace(id) },
          h('td', {}, fmtInstant(parseDatetime(r.start) ?? 0, { millis: true })),
          h('td', {}, String(r.service ?? '')),
          h('td', {}, String(r.span_name ?? '')),
          h('td.duration-cell', {}, h('span.duration-bar', { style: { width: `${(ms / longest) * 100}%` } }), h('span', {}, fmtDuration(ms))),
          h('td.num', {}, String(r.spans ?? '')),
          h('td.num', {}, errors ? h('span.error-text', {}, `⚠ ${errors}`) : '0'),
          h('td', {}, h('a.trace-link', { href: `/tracing?trace=${id}`, onclick: (e: Event) => (e.preventDefault(), e.stopPropagation(), void this.openTrace(id)) }, id)),
        ),
      );
    }
    this.listHost.append(table);
  }

  private async runBuilder(kql: string): Promise<void> {
    clear(this.listHost);
    clear(this.stats);
    this.listHost.dataset.state = 'loading';
    this.stats.append(h('span.chip', {}, 'trace-find results'), h('button.link', { type: 'button', onclick: () => void this.loadList() }, 'back to all traces'));
    try {
      const result = await runQuery(this.request(kql), { signal: this.abort.signal });
      const table = result.tables.get('PrimaryResult') ?? [...result.tables.values()][0];
      const grid = new ResultGrid('trace-find');
      grid.setData(table?.columns ?? [], table?.rows ?? [], true);
      this.listHost.append(h('div.tf-result', { 'data-testid': 'tracefind-result', 'data-rows': String(table?.rows.length ?? 0) }, grid.element));
      this.listHost.dataset.state = 'done';
    } catch (e) {
      const message = e instanceof QueryFailed ? e.message : (e as Error).message;
      this.listHost.append(h('p.error-text', { 'data-testid': 'tracefind-error' }, message));
      this.listHost.dataset.state = 'error';
    }
  }

  // -- one trace ---------------------------------------------------------------------------------
  async openSpan(spanId: string): Promise<void> {
    try {
      const result = await runQuery(this.request(traceOfSpanQuery(this.table.value, spanId)));
      const found = records(result.tables.get('PrimaryResult'))[0];
      if (found) return this.openTrace(String(found.trace_id), spanId);
      toast(`No span ${spanId} in this time range`, 'error');
    } catch (e) {
      toast((e as Error).message, 'error');
    }
    this.refresh();
  }

  async openTrace(traceId: string, spanId?: string): Promise<void> {
    this.abort.abort();
    this.abort = new AbortController();
    this.saveUrl({ trace: traceId, span: spanId });
    this.overview.hidden = true;
    this.detail.hidden = false;
    clear(this.detail);
    const back = h('button', { type: 'button', onclick: () => this.refresh() }, '← All traces');
    this.detail.append(h('div.detail-bar', {}, back), h('p.muted', { 'data-testid': 'waterfall-loading' }, 'Loading trace…'));
    try {
      const result = await runQuery(this.request(traceQuery(this.table.value, traceId)), { signal: this.abort.signal });
      const rows = records(result.tables.get('PrimaryResult'));
      const spans = rows.filter((r) => r.duration !== null && r.duration !== undefined && r.span_id).map(spanFrom);
      // Spans carry a duration; log records carry a body (absent bodies read as '' or null).
      const logs = rows.filter((r) => (r.duration === null || r.duration === undefined) && r.body !== null && r.body !== undefined && r.body !== '').map(logFrom);
      clear(this.detail);
      this.detail.append(h('div.detail-bar', {}, back));
      if (!spans.length && !logs.length) {
        this.detail.append(h('p.muted', { 'data-testid': 'waterfall-empty' }, `No spans of trace ${traceId} in ${this.table.value} over this time range.`));
        return;
      }
      const waterfall = new Waterfall(traceId, spans, logs);
      this.detail.append(waterfall.element);
      if (spanId) waterfall.select(spanId);
    } catch (e) {
      if (this.abort.signal.aborted) return;
      clear(this.detail);
      this.detail.append(h('div.detail-bar', {}, back), h('p.error-text', {}, (e as Error).message));
    }
  }
}
