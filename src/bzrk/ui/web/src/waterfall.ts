// The span waterfall of one trace: spans nested under their parents on a shared time axis,
// coloured by service, with durations and error marks; a click shows the span's attributes,
// resource and events; the trace's correlated logs are listed beneath.
import { clear, h } from './dom';
import { datetimeMicros, fmtDuration, fmtInstant, parseDatetime, parseTimespan } from './format';
import { colorMap, SEVERITY_COLORS, severityOf } from './palette';

export interface Span {
  id: string;
  parent: string;
  name: string;
  kind: string;
  service: string;
  /** Start in epoch ms, with sub-millisecond digits. */
  start: number;
  duration: number;
  status: string;
  statusMessage: string;
  attributes: unknown;
  resource: unknown;
  events: { name?: string; timestamp?: string; attributes?: unknown }[];
}

export interface TraceLog {
  time: number;
  severity: string;
  service: string;
  body: string;
  spanId: string;
}

export interface WaterfallRow {
  span: Span;
  depth: number;
  children: number;
}

function preciseTime(value: unknown): number {
  const ms = parseDatetime(value);
  return ms === null ? NaN : ms + datetimeMicros(value);
}

/** A span from a row of the waterfall query (see tracing.ts for the projected columns). */
export function spanFrom(row: Record<string, unknown>): Span {
  const start = preciseTime(row.start_time);
  let duration = parseTimespan(row.duration) ?? NaN;
  if (!Number.isFinite(duration)) duration = preciseTime(row.end_time) - start;
  return {
    id: String(row.span_id ?? ''),
    parent: String(row.parent_span_id ?? ''),
    name: String(row.span_name ?? ''),
    kind: String(row.span_kind ?? ''),
    service: String(row.service ?? ''),
    start,
    duration: Number.isFinite(duration) ? Math.max(0, duration) : 0,
    status: String(row.status_code ?? ''),
    statusMessage: String(row.status_message ?? ''),
    attributes: row.attributes ?? {},
    resource: row.resource ?? {},
    events: Array.isArray(row.events) ? (row.events as Span['events']) : [],
  };
}

export function logFrom(row: Record<string, unknown>): TraceLog {
  return {
    time: preciseTime(row.timestamp),
    severity: String(row.severity_text ?? ''),
    service: String(row.service ?? ''),
    body: typeof row.body === 'string' ? row.body : JSON.stringify(row.body ?? ''),
    spanId: String(row.span_id ?? ''),
  };
}

/**
 * Depth-first order of the trace tree: children after their parent, siblings by start time.
 * A span whose parent is not in the trace (a root, or a parent not received) starts a tree.
 */
export function treeRows(spans: Span[]): WaterfallRow[] {
  const byId = new Map(spans.map((s) => [s.id, s]));
  const children = new Map<string, Span[]>();
  const roots: Span[] = [];
  for (const span of spans) {
    if (span.parent && byId.has(span.parent) && span.parent !== span.id) {
      const list = children.get(span.parent) ?? [];
      list.push(span);
      children.set(span.parent, list);
    } else roots.push(span);
  }
  const byStart = (a: Span, b: Span) => a.start - b.start || a.name.localeCompare(b.name);
  const out: WaterfallRow[] = [];
  const seen = new Set<string>();
  const visit = (span: Span, depth: number) => {
    if (seen.has(span.id)) return; // a cycle in bad data must not hang the page
    seen.add(span.id);
    const kids = (children.get(span.id) ?? []).sort(byStart);
    out.push({ span, depth, children: kids.length });
    for (const kid of kids) visit(kid, depth + 1);
  };
  for (const root of roots.sort(byStart)) visit(root, 0);
  // Spans only reachable through a cycle are still shown, at the top level.
  for (const span of spans) if (!seen.has(span.id)) visit(span, 0);
  return out;
}

function flatten(value: unknown, prefix = '', out: [string, unknown][] = []): [string, unknown][] {
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) flatten(v, prefix ? `${prefix}.${k}` : k, out);
  } else if (prefix) out.push([prefix, value]);
  return out;
}

function kvTable(value: unknown, emptyText: string): HTMLElement {
  const pairs = flatten(value).sort((a, b) => a[0].localeCompare(b[0]));
  if (!pairs.length) return h('p.muted', {}, emptyText);
  return h(
    'table.kv',
    {},
    ...pairs.map(([k, v]) => h('tr', {}, h('th', {}, k), h('td', {}, typeof v === 'object' ? JSON.stringify(v) : String(v)))),
  );
}

const isError = (span: Span) => span.status.toUpperCase() === 'ERROR';

export class Waterfall {
  readonly element: HTMLElement;
  private rowsHost = h('div.wf-rows', { role: 'tree', 'aria-label': 'Spans' });
  private details = h('aside.wf-details', { 'data-testid': 'span-details', hidden: true });
  private logsHost = h('section.wf-logs', { 'aria-label': 'Correlated logs' });
  private header = h('div.wf-header');
  private collapsed = new Set<string>();
  private rows: WaterfallRow[] = [];
  private selected = '';
  private t0 = 0;
  private total = 1;
  private colors = new Map<string, string>();

  constructor(
    readonly traceId: string,
    private spans: Span[],
    private logs: TraceLog[],
  ) {
    this.element = h(
      'div.waterfall',
      { 'data-testid': 'waterfall', 'data-trace': traceId, 'data-spans': String(spans.length) },
      this.header,
      h('div.wf-main', {}, h('div.wf-chart', {}, this.axis(), this.rowsHost), this.details),
      this.logsHost,
    );
    this.rows = treeRows(spans);
    this.colors = colorMap(spans.map((s) => s.service));
    const starts = spans.map((s) => s.start).filter(Number.isFinite);
    const ends = spans.map((s) => s.start + s.duration).filter(Number.isFinite);
    this.t0 = starts.length ? Math.min(...starts) : 0;
    this.total = Math.max(ends.length ? Math.max(...ends) - this.t0 : 0, 0.001);
    this.renderHeader();
    this.renderRows();
    this.renderLogs('');
  }

  private axis(): HTMLElement {
    return h(
      'div.wf-axis',
      { 'aria-hidden': 'true' },
      h('div.wf-name-col', {}, 'Span'),
      h('div.wf-bar-col', {}, ...[0, 0.25, 0.5, 0.75, 1].map((f) => h('span.wf-tick', { style: { left: `${f * 100}%` } }, '')),),
    );
  }

  private renderHeader(): void {
    const root = this.rows[0]?.span;
    const services = new Set(this.spans.map((s) => s.service));
    const errors = this.spans.filter(isError).length;
    clear(this.header);
    this.header.append(
      h('h2', {}, root ? `${root.service}: ${root.name}` : 'Trace'),
      h(
        'div.wf-facts',
        {},
        h('span', {}, `Trace `, h('code', { 'data-testid': 'trace-id' }, this.traceId)),
        h('span', {}, fmtDuration(this.total)),
        h('span', { 'data-testid': 'span-count' }, `${this.spans.length} spans`),
        h('span', {}, `${services.size} services`),
        errors ? h('span.error-text', {}, `${errors} with errors`) : null,
        root ? h('span.muted', {}, fmtInstant(root.start, { millis: true })) : null,
      ),
      h('div.wf-legend', {}, ...[...this.colors].map(([svc, color]) => h('span.legend-item', {}, h('i.swatch', { style: { background: color } }), svc))),
    );
    // Axis tick labels: offsets from the trace's start.
    const ticks = this.element.querySelectorAll<HTMLElement>('.wf-tick');
    ticks.forEach((tick, i) => (tick.textContent = fmtDuration((this.total * i) / 4)));
  }

  private renderRows(): void {
    clear(this.rowsHost);
    const hidden = new Set<string>();
    for (const row of this.rows) {
      const span = row.span;
      if (hidden.has(span.parent)) {
        hidden.add(span.id);
        continue;
      }
      if (this.collapsed.has(span.id)) hidden.add(span.id);
      const left = ((span.start - this.t0) / this.total) * 100;
      const width = Math.max((span.duration / this.total) * 100, 0.15);
      const color = this.colors.get(span.service) ?? '#888';
      const error = isError(span);
      const toggle = row.children
        ? h(
            'button.wf-toggle',
            {
              type: 'button',
              'aria-label': this.collapsed.has(span.id) ? 'Expand' : 'Collapse',
              onclick: (e: Event) => {
                e.stopPropagation();
                if (this.collapsed.has(span.id)) this.collapsed.delete(span.id);
                else this.collapsed.add(span.id);
                this.renderRows();
              },
            },
            this.collapsed.has(span.id) ? '▸' : '▾',
          )
        : h('span.wf-toggle-space');
      this.rowsHost.appendChild(
        h(
          'div.wf-row',
          {
            role: 'treeitem',
            tabindex: 0,
            'data-span-id': span.id,
            'data-parent-id': span.parent,
            'data-depth': String(row.depth),
            'data-error': error ? 'true' : undefined,
            'aria-selected': this.selected === span.id ? 'true' : undefined,
            'aria-level': String(row.depth + 1),
            onclick: () => this.select(span.id),
            onkeydown: (e: KeyboardEvent) => e.key === 'Enter' && this.select(span.id),
          },
          h(
            'div.wf-name-col',
            { style: { paddingLeft: `${row.depth * 14 + 4}px` }, title: `${span.service} · ${span.name}` },
            toggle,
            h('i.swatch', { style: { background: color } }),
            h('span.wf-service', {}, span.service),
            h('span.wf-name', {}, span.name),
            error ? h('span.wf-error', { title: span.statusMessage || 'status ERROR' }, '⚠') : null,
          ),
          h(
            'div.wf-bar-col',
            {},
            h('div.wf-bar', { style: { left: `${left}%`, width: `${width}%`, background: error ? 'var(--danger)' : color } }),
            durationLabel(left, width, fmtDuration(span.duration)),
          ),
        ),
      );
    }
  }

  select(spanId: string): void {
    this.selected = this.selected === spanId ? '' : spanId;
    this.renderRows();
    this.renderDetails();
    this.renderLogs(this.selected);
  }

  private renderDetails(): void {
    const span = this.spans.find((s) => s.id === this.selected);
    clear(this.details);
    this.details.hidden = !span;
    if (!span) return;
    const events = span.events.map((event) => {
      const at = preciseTime(event.timestamp);
      return h(
        'li',
        {},
        h('strong', {}, event.name ?? '(event)'),
        Number.isFinite(at) ? h('span.muted', {}, ` +${fmtDuration(at - span.start)}`) : null,
        kvTable(event.attributes, 'no attributes'),
      );
    });
    this.details.append(
      h('div.details-bar', {}, h('strong', {}, span.name), h('span.spacer'), h('button', { type: 'button', 'aria-label': 'Close span details', onclick: () => this.select(span.id) }, '✕')),
      h(
        'table.kv',
        {},
        ...(
          [
            ['service', span.service],
            ['kind', span.kind],
            ['status', span.statusMessage ? `${span.status} — ${span.statusMessage}` : span.status],
            ['start', fmtInstant(span.start, { millis: true })],
            ['offset', fmtDuration(span.start - this.t0)],
            ['duration', fmtDuration(span.duration)],
            ['span_id', span.id],
            ['parent_span_id', span.parent || '(root)'],
          ] as [string, string][]
        ).map(([k, v]) => h('tr', {}, h('th', {}, k), h('td', {}, v))),
      ),
      h('h3', {}, 'Attributes'),
      kvTable(span.attributes, 'no attributes'),
      h('h3', {}, `Events (${span.events.length})`),
      events.length ? h('ul.wf-events', { 'data-testid': 'span-events' }, ...events) : h('p.muted', {}, 'no events'),
      h('h3', {}, 'Resource'),
      kvTable(span.resource, 'no resource attributes'),
    );
  }

  private renderLogs(spanId: string): void {
    clear(this.logsHost);
    const shown = (spanId ? this.logs.filter((l) => l.spanId === spanId) : this.logs).slice().sort((a, b) => a.time - b.time);
    this.logsHost.append(
      h(
        'h3',
        {},
        spanId ? `Logs of the selected span (${shown.length})` : `Correlated logs (${shown.length})`,
        spanId ? h('button.link', { type: 'button', onclick: () => this.select(spanId) }, 'show all') : null,
      ),
    );
    if (!shown.length) {
      this.logsHost.append(h('p.muted', {}, 'No log records share this trace id in the time range.'));
      return;
    }
    const table = h('table.wf-log-table', { 'data-testid': 'trace-logs' });
    for (const log of shown) {
      const level = severityOf(log.severity);
      table.appendChild(
        h(
          'tr',
          { 'data-span-id': log.spanId, onclick: () => log.spanId && this.spans.some((s) => s.id === log.spanId) && this.select(log.spanId) },
          h('td.muted', {}, `+${fmtDuration(log.time - this.t0)}`),
          h('td', {}, h('span.sev', { style: { background: SEVERITY_COLORS[level] } }, log.severity || level)),
          h('td', {}, log.service),
          h('td.log-body', {}, log.body.split('\n')[0]),
        ),
      );
    }
    this.logsHost.append(table);
  }
}

/** A bar's duration: after the bar where there is room, else inside its end, else before it. */
function durationLabel(left: number, width: number, text: string): HTMLElement {
  if (left + width <= 88) return h('span.wf-duration', { style: { left: `${left + width}%` } }, text);
  if (width >= 12) return h('span.wf-duration.inside', { style: { right: `${100 - left - width}%` } }, text);
  return h('span.wf-duration', { style: { right: `${100 - left + 0.5}%` } }, text);
}
