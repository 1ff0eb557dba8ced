// Charts for KQL `render`: timechart, linechart, areachart, columnchart, barchart, piechart,
// scatterchart — drawn with ECharts from a result table, the way the ADX web UI reads them:
// the first column is the x axis (or the slice name), numeric columns are series, and a
// string column next to them splits series (`summarize count() by bin(t, 5m), service`).
// Tooltips format numbers with their unit (timespans as durations), 24 distinct colours keep
// series apart past nine, pie labels never overlap, and a drag across a timechart zooms.
import { BarChart, LineChart, PieChart, ScatterChart } from 'echarts/charts';
import { DataZoomComponent, GridComponent, LegendComponent, TitleComponent, TooltipComponent } from 'echarts/components';
import * as echarts from 'echarts/core';
import { CanvasRenderer } from 'echarts/renderers';
import { currentZone, fmtBytes, fmtDuration, fmtInstant, fmtNumber, parseDatetime, parseTimespan } from './format';
import { dragSelect } from './dragselect';
import type { GridColumn } from './grid';
import { SERIES_COLORS, SEVERITIES, SEVERITY_COLORS, type Severity } from './palette';

echarts.use([LineChart, BarChart, PieChart, ScatterChart, GridComponent, LegendComponent, TooltipComponent, TitleComponent, DataZoomComponent, CanvasRenderer]);

export const CHART_KINDS = ['timechart', 'linechart', 'areachart', 'columnchart', 'barchart', 'piechart', 'scatterchart'];
const NUMERIC = new Set(['long', 'int', 'real', 'double', 'decimal', 'timespan']);
const MAX_SERIES = 40;
const MAX_SLICES = 12;

export interface Visualization {
  type: string;
  properties: Record<string, unknown>;
}

type Unit = 'duration' | 'bytes' | 'ms' | 'percent' | 'number';

/** The unit of a value column, from its type and name (`duration`, `bytes_sent`, `latency_ms`). */
export function unitOf(column: GridColumn | undefined): Unit {
  if (!column) return 'number';
  if (column.type === 'timespan') return 'duration';
  const name = column.name.toLowerCase();
  if (/bytes?$|_bytes?_|size$/.test(name)) return 'bytes';
  if (/(_|^)ms$|millis/.test(name)) return 'ms';
  if (/percent|pct$|_ratio$/.test(name)) return 'percent';
  return 'number';
}

export function formatValue(value: number | null | undefined, unit: Unit): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '–';
  switch (unit) {
    case 'duration':
    case 'ms':
      return fmtDuration(value);
    case 'bytes':
      return fmtBytes(value);
    case 'percent':
      return `${fmtNumber(value, 2)} %`;
    default:
      return fmtNumber(value, 2);
  }
}

function columnIndex(columns: GridColumn[], name: unknown): number {
  return typeof name === 'string' ? columns.findIndex((c) => c.name === name) : -1;
}

/** A cell as a number: timespans in ms, numeric text parsed, anything else null. */
function toNumber(value: unknown, column?: GridColumn): number | null {
  if (value === null || value === undefined || value === '') return null;
  if (column?.type === 'timespan') return parseTimespan(value);
  const n = typeof value === 'number' ? value : Number(value);
  return Number.isFinite(n) ? n : null;
}

function axisTime(ms: number): string {
  return fmtInstant(ms, { seconds: false });
}

/** ECharts options for one visualization over one table (exported for tests and reuse). */
export function chartOptions(vis: Visualization, columns: GridColumn[], rows: unknown[][], dark: boolean): echarts.EChartsCoreOption {
  const kind = vis.type.toLowerCase();
  const props = vis.properties ?? {};
  const textColor = dark ? '#c9d1d9' : '#1f2328';
  const titleText = typeof props.title === 'string' ? props.title : '';
  // A long title wraps instead of being cut at the chart's edge; the plot starts below it.
  const title = titleText ? { text: titleText, left: 'center', top: 4, textStyle: { fontSize: 13, color: textColor, overflow: 'break', width: 900 } } : undefined;
  const top = titleText ? 36 + 16 * Math.floor(titleText.length / 110) : 16;
  let x = columnIndex(columns, props.xcolumn);
  if (x < 0) {
    x = kind === 'timechart' ? columns.findIndex((c) => c.type === 'datetime') : 0;
    if (x < 0) x = 0;
  }
  const ynames = Array.isArray(props.ycolumns) ? (props.ycolumns as unknown[]) : [];
  let ys = ynames.map((n) => columnIndex(columns, n)).filter((i) => i >= 0);
  if (!ys.length) ys = columns.map((c, i) => (i !== x && NUMERIC.has(c.type) ? i : -1)).filter((i) => i >= 0);
  const splitBy = columns.findIndex((c, i) => i !== x && !ys.includes(i) && (c.type === 'string' || c.type === 'bool'));
  const unit = unitOf(columns[ys[0]]);

  if (kind === 'piechart') {
    const label = columns.findIndex((c) => c.type === 'string');
    const value = ys[0] ?? -1;
    let slices = rows
      .map((r) => ({ name: String(r[label >= 0 ? label : 0] ?? '') || '(empty)', value: toNumber(r[value], columns[value]) ?? 0 }))
      .sort((a, b) => b.value - a.value);
    if (slices.length > MAX_SLICES) {
      const rest = slices.slice(MAX_SLICES - 1).reduce((n, s) => n + s.value, 0);
      slices = [...slices.slice(0, MAX_SLICES - 1), { name: `other (${slices.length - MAX_SLICES + 1})`, value: rest }];
    }
    return {
      title,
      color: SERIES_COLORS,
      tooltip: { trigger: 'item', valueFormatter: (v: number) => formatValue(v, unit) },
      legend: { type: 'scroll', bottom: 0, textStyle: { color: textColor } },
      series: [
        {
          type: 'pie',
          radius: ['28%', '58%'],
          center: ['50%', titleText ? '54%' : '50%'],
          avoidLabelOverlap: true,
          // Slices under ~3 % get no label (the legend and tooltip name them): no pile-up.
          minShowLabelAngle: 11,
          data: slices,
          label: { color: textColor, formatter: '{b}: {d}%', overflow: 'truncate', width: 150, alignTo: 'labelLine' },
          labelLine: { length: 8, length2: 10 },
          labelLayout: { hideOverlap: true },
        },
      ],
    };
  }

  const xType = columns[x]?.type;
  const timeAxis = xType === 'datetime';
  const numericX = NUMERIC.has(xType ?? '');
  const categoryX = !timeAxis && !(numericX && kind !== 'columnchart' && kind !== 'barchart');
  const seriesData = new Map<string, [unknown, number | null][]>();
  const categories: string[] = [];
  const seen = new Set<string>();
  for (const row of rows) {
    const xValue = categoryX ? String(row[x] ?? '') : timeAxis ? parseDatetime(row[x]) : toNumber(row[x], columns[x]);
    if (categoryX && !seen.has(xValue as string)) {
      seen.add(xValue as string);
      categories.push(xValue as string);
    }
    for (const y of ys) {
      const base = columns[y].name;
      // KQL has no null string: an empty split value is a real group, so give it a visible name.
      const group = splitBy >= 0 ? String(row[splitBy] ?? '') || '(empty)' : '';
      const name = splitBy >= 0 ? (ys.length > 1 ? `${group}:${base}` : group) : base;
      if (!seriesData.has(name)) {
        if (seriesData.size >= MAX_SERIES) continue;
        seriesData.set(name, []);
      }
      seriesData.get(name)!.push([xValue, toNumber(row[y], columns[y])]);
    }
  }
  const sorted = (points: [unknown, number | null][]) => (timeAxis ? points.sort((a, b) => Number(a[0]) - Number(b[0])) : points);
  const horizontal = kind === 'barchart';
  const stacked = props.kind === 'stacked' || props.kind === 'stacked100';
  const seriesType = kind === 'columnchart' || kind === 'barchart' ? 'bar' : kind === 'scatterchart' ? 'scatter' : 'line';
  // Series named after a log level keep that level's colour (ERROR red, WARN amber, …).
  const levelColor = (name: string) => (SEVERITIES as readonly string[]).includes(name.toUpperCase()) ? SEVERITY_COLORS[name.toUpperCase() as Severity] : undefined;
  const series = [...seriesData.entries()].map(([name, points]) => ({
    name,
    color: levelColor(name),
    type: seriesType,
    showSymbol: seriesType !== 'line' || points.length < 60,
    areaStyle: kind === 'areachart' ? { opacity: 0.35 } : undefined,
    stack: stacked || kind === 'areachart' ? 'total' : undefined,
    data: horizontal ? sorted(points).map(([a, b]) => [b, a]) : sorted(points),
  }));
  const axisLine = { lineStyle: { color: dark ? '#484f58' : '#d0d7de' } };
  const axisLabel = { color: textColor, hideOverlap: true };
  const splitLine = { lineStyle: { color: dark ? '#21262d' : '#eaeef2' } };
  const xAxis = {
    type: timeAxis ? 'time' : categoryX ? 'category' : 'value',
    data: categoryX ? categories : undefined,
    name: typeof props.xtitle === 'string' ? props.xtitle : columns[x]?.name,
    nameLocation: 'middle',
    nameGap: 28,
    nameTextStyle: { color: textColor },
    axisLine,
    axisLabel: timeAxis ? { ...axisLabel, formatter: (v: number) => axisTime(v).slice(5) } : axisLabel,
    splitLine,
  };
  const yTitle = typeof props.ytitle === 'string' ? props.ytitle : unit === 'duration' ? 'duration' : '';
  const yAxis = {
    type: 'value',
    axisLine,
    axisLabel: { ...axisLabel, formatter: (v: number) => formatValue(v, unit) },
    splitLine,
    scale: kind === 'scatterchart',
    name: yTitle || undefined,
    nameLocation: 'middle',
    nameGap: 58,
    nameTextStyle: { color: textColor },
  };
  const legendRows = series.length > 1 ? 30 : 0;
  return {
    title,
    color: SERIES_COLORS,
    animation: false,
    useUTC: currentZone() === 'utc',
    tooltip: {
      trigger: seriesType === 'scatter' ? 'item' : 'axis',
      confine: true,
      valueFormatter: (v: number) => formatValue(v, unit),
      axisPointer: { label: timeAxis ? { formatter: (p: { value: number }) => axisTime(p.value) } : undefined },
    },
    legend: series.length > 1 ? { type: 'scroll', bottom: 0, textStyle: { color: textColor } } : undefined,
    grid: { left: yTitle ? 80 : 64, right: 28, top, bottom: 44 + legendRows, containLabel: false },
    dataZoom: timeAxis ? [{ type: 'inside', moveOnMouseMove: false, zoomOnMouseWheel: 'shift' }] : undefined,
    xAxis: horizontal ? yAxis : xAxis,
    yAxis: horizontal ? { ...xAxis, nameLocation: 'end' } : yAxis,
    series,
  };
}

export class ResultChart {
  readonly element: HTMLElement;
  private chart: echarts.ECharts | null = null;
  private observer: ResizeObserver;
  private timeAxis = false;

  /** `onZoom` receives the instants a drag across a timechart selected (epoch ms). */
  constructor(private onZoom?: (fromMs: number, toMs: number) => void) {
    this.element = document.createElement('div');
    this.element.className = 'chart';
    this.element.setAttribute('data-testid', 'chart');
    this.observer = new ResizeObserver(() => this.chart?.resize());
    this.observer.observe(this.element);
  }

  draw(vis: Visualization, columns: GridColumn[], rows: unknown[][], dark: boolean): void {
    if (!this.chart) {
      this.chart = echarts.init(this.element, undefined, { renderer: 'canvas' });
      dragSelect(this.element, () => this.chart, 'x', ([a], [b]) => {
        if (this.timeAxis && this.onZoom && Number.isFinite(a) && Number.isFinite(b) && a !== b) this.onZoom(Math.min(a, b), Math.max(a, b));
      });
    }
    this.element.dataset.kind = vis.type;
    this.element.dataset.points = String(rows.length);
    const options = chartOptions(vis, columns, rows, dark);
    this.timeAxis = (options as { xAxis?: { type?: string } }).xAxis?.type === 'time';
    this.element.dataset.series = String(((options as { series?: unknown[] }).series ?? []).length);
    // notMerge: a new snapshot replaces the previous series completely.
    this.chart.setOption(options, { notMerge: true, lazyUpdate: false });
  }

  resize(): void {
    this.chart?.resize();
  }

  dispose(): void {
    this.observer.disconnect();
    this.chart?.dispose();
    this.chart = null;
  }
}
