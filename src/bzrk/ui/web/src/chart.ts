// Charts for KQL `render`: timechart, linechart, areachart, columnchart, barchart, piechart,
// scatterchart — drawn with ECharts from a result table, the way the ADX web UI reads them:
// the first column is the x axis (or the slice name), numeric columns are series, and a
// string column next to them splits series (`summarize count() by bin(t, 5m), service`).
import { BarChart, LineChart, PieChart, ScatterChart } from 'echarts/charts';
import { DataZoomComponent, GridComponent, LegendComponent, TitleComponent, TooltipComponent } from 'echarts/components';
import * as echarts from 'echarts/core';
import { CanvasRenderer } from 'echarts/renderers';
import type { GridColumn } from './grid';

echarts.use([LineChart, BarChart, PieChart, ScatterChart, GridComponent, LegendComponent, TooltipComponent, TitleComponent, DataZoomComponent, CanvasRenderer]);

export const CHART_KINDS = ['timechart', 'linechart', 'areachart', 'columnchart', 'barchart', 'piechart', 'scatterchart'];
const NUMERIC = new Set(['long', 'int', 'real', 'double', 'decimal']);
const MAX_SERIES = 30;

export interface Visualization {
  type: string;
  properties: Record<string, unknown>;
}

function columnIndex(columns: GridColumn[], name: unknown): number {
  return typeof name === 'string' ? columns.findIndex((c) => c.name === name) : -1;
}

function toNumber(value: unknown): number | null {
  if (value === null || value === undefined || value === '') return null;
  const n = typeof value === 'number' ? value : Number(value);
  return Number.isFinite(n) ? n : null;
}

/** ECharts options for one visualization over one table (exported for tests and reuse). */
export function chartOptions(vis: Visualization, columns: GridColumn[], rows: unknown[][], dark: boolean): echarts.EChartsCoreOption {
  const kind = vis.type.toLowerCase();
  const props = vis.properties ?? {};
  const title = typeof props.title === 'string' ? { text: props.title, left: 'center', textStyle: { fontSize: 13 } } : undefined;
  const textColor = dark ? '#c9d1d9' : '#1f2328';
  let x = columnIndex(columns, props.xcolumn);
  if (x < 0) {
    x = kind === 'timechart' ? columns.findIndex((c) => c.type === 'datetime') : 0;
    if (x < 0) x = 0;
  }
  const ynames = Array.isArray(props.ycolumns) ? (props.ycolumns as unknown[]) : [];
  let ys = ynames.map((n) => columnIndex(columns, n)).filter((i) => i >= 0);
  if (!ys.length) ys = columns.map((c, i) => (i !== x && NUMERIC.has(c.type) ? i : -1)).filter((i) => i >= 0);
  const splitBy = columns.findIndex((c, i) => i !== x && !ys.includes(i) && (c.type === 'string' || c.type === 'bool'));

  if (kind === 'piechart') {
    const label = columns.findIndex((c) => c.type === 'string');
    const value = ys[0] ?? -1;
    return {
      title,
      tooltip: { trigger: 'item' },
      legend: { type: 'scroll', bottom: 0, textStyle: { color: textColor } },
      series: [
        {
          type: 'pie',
          radius: ['30%', '65%'],
          data: rows.map((r) => ({ name: String(r[label >= 0 ? label : 0] ?? ''), value: toNumber(r[value]) })),
          label: { color: textColor },
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
    const xValue = categoryX ? String(row[x] ?? '') : timeAxis ? row[x] : toNumber(row[x]);
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
      seriesData.get(name)!.push([xValue, toNumber(row[y])]);
    }
  }
  const sorted = (points: [unknown, number | null][]) =>
    timeAxis ? points.sort((a, b) => (String(a[0]) < String(b[0]) ? -1 : String(a[0]) > String(b[0]) ? 1 : 0)) : points;
  const horizontal = kind === 'barchart';
  const stacked = props.kind === 'stacked' || props.kind === 'stacked100';
  const seriesType = kind === 'columnchart' || kind === 'barchart' ? 'bar' : kind === 'scatterchart' ? 'scatter' : 'line';
  const series = [...seriesData.entries()].map(([name, points]) => ({
    name,
    type: seriesType,
    showSymbol: seriesType !== 'line' || points.length < 60,
    areaStyle: kind === 'areachart' ? { opacity: 0.35 } : undefined,
    stack: stacked || kind === 'areachart' ? 'total' : undefined,
    data: horizontal ? sorted(points).map(([a, b]) => [b, a]) : sorted(points),
  }));
  const axisLine = { lineStyle: { color: dark ? '#484f58' : '#d0d7de' } };
  const axisLabel = { color: textColor };
  const splitLine = { lineStyle: { color: dark ? '#21262d' : '#eaeef2' } };
  const xAxis = {
    type: timeAxis ? 'time' : categoryX ? 'category' : 'value',
    data: categoryX ? categories : undefined,
    name: columns[x]?.name,
    nameLocation: 'middle',
    nameGap: 28,
    axisLine,
    axisLabel,
    splitLine,
  };
  const yAxis = { type: 'value', axisLine, axisLabel, splitLine, scale: kind === 'scatterchart', name: typeof props.ytitle === 'string' ? props.ytitle : undefined };
  return {
    title,
    animation: false,
    tooltip: { trigger: seriesType === 'scatter' ? 'item' : 'axis' },
    legend: { type: 'scroll', bottom: 0, textStyle: { color: textColor } },
    grid: { left: 60, right: 24, top: title ? 40 : 20, bottom: 70 },
    dataZoom: timeAxis ? [{ type: 'inside' }] : undefined,
    xAxis: horizontal ? yAxis : xAxis,
    yAxis: horizontal ? { ...xAxis, nameLocation: 'end' } : yAxis,
    series,
  };
}

export class ResultChart {
  readonly element: HTMLElement;
  private chart: echarts.ECharts | null = null;
  private observer: ResizeObserver;

  constructor() {
    this.element = document.createElement('div');
    this.element.className = 'chart';
    this.element.setAttribute('data-testid', 'chart');
    this.observer = new ResizeObserver(() => this.chart?.resize());
    this.observer.observe(this.element);
  }

  draw(vis: Visualization, columns: GridColumn[], rows: unknown[][], dark: boolean): void {
    if (!this.chart) this.chart = echarts.init(this.element, undefined, { renderer: 'canvas' });
    this.element.dataset.kind = vis.type;
    this.element.dataset.points = String(rows.length);
    // notMerge: a new snapshot replaces the previous series completely.
    this.chart.setOption(chartOptions(vis, columns, rows, dark), { notMerge: true, lazyUpdate: true });
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
