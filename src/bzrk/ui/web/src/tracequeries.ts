// The plain-KQL queries behind the Tracing tab: one row per trace, the outlier heatmap, the
// latency percentiles, and one trace's spans and logs. One place for their text.
import { kqlString, kqlTable } from './run';

/** Spans of a table: rows that carry a trace id and a duration (log records carry no duration). */
export function spansOf(table: string): string {
  return `${kqlTable(table)}\n| where isnotempty(trace_id) and isnotnull(duration)`;
}

/**
 * One row per trace: first start, last end, span and error counts, and the earliest span's name
 * and service (the root, or the earliest received span when the root is missing).
 */
export function tracesOf(table: string): string {
  return `${spansOf(table)}
| summarize start = min(start_time), end = max(end_time), spans = count(), errors = countif(status_code == "ERROR"),
    arg_min(start_time, span_name, service = tostring(resource.service.name)) by trace_id
| extend duration = end - start`;
}

export interface Brush {
  fromMs: number;
  toMs: number;
  minDurationMs: number;
  maxDurationMs: number;
}

function brushFilter(brush: Brush | null): string {
  if (!brush) return '';
  const iso = (ms: number) => new Date(ms).toISOString();
  return `\n| where start >= datetime(${iso(brush.fromMs)}) and start < datetime(${iso(brush.toMs)})
| where todouble(duration) / 10000.0 >= ${brush.minDurationMs} and todouble(duration) / 10000.0 < ${brush.maxDurationMs}`;
}

/** Bins of time x log2(duration in ms): traces and traces with an error span per cell. */
export function heatmapQuery(table: string, step: string): string {
  return `${tracesOf(table)}
| extend ms = todouble(duration) / 10000.0
| summarize traces = count(), failed = countif(errors > 0) by t = bin(start, ${step}), b = floor(log2(ms + 0.001), 1)`;
}

export function percentilesQuery(table: string, brush: Brush | null): string {
  return `${tracesOf(table)}${brushFilter(brush)}
| summarize percentiles(duration, 50, 90, 99), traces = count(), failed = countif(errors > 0)`;
}

export type TraceOrder = 'newest' | 'slowest';

export function traceListQuery(table: string, brush: Brush | null, order: TraceOrder, limit = 100): string {
  const by = order === 'slowest' ? 'duration' : 'start';
  return `${tracesOf(table)}${brushFilter(brush)}
| top ${limit} by ${by} desc`;
}

/** Every span and correlated log record of one trace. */
export function traceQuery(table: string, traceId: string): string {
  return `${kqlTable(table)}
| where trace_id == ${kqlString(traceId)}
| project timestamp, span_id, parent_span_id, span_name, span_kind, service = tostring(resource.service.name),
    start_time, end_time, duration, status_code, status_message, attributes, events, resource, severity_text, body`;
}

export function traceOfSpanQuery(table: string, spanId: string): string {
  return `${kqlTable(table)}\n| where span_id == ${kqlString(spanId)} and isnotempty(trace_id)\n| take 1\n| project trace_id`;
}

const STEPS: [number, string][] = [
  [60_000, '1m'],
  [300_000, '5m'],
  [600_000, '10m'],
  [900_000, '15m'],
  [1_800_000, '30m'],
  [3_600_000, '1h'],
  [10_800_000, '3h'],
  [21_600_000, '6h'],
  [43_200_000, '12h'],
  [86_400_000, '1d'],
];

/** A bin size giving at most `bins` columns over a range of `widthMs`. */
export function binStep(widthMs: number, bins = 60): [number, string] {
  for (const step of STEPS) if (widthMs / step[0] <= bins) return step;
  return [7 * 86_400_000, '7d'];
}
