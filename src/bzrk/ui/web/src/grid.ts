// A virtualized result grid: only the visible rows are in the DOM, so 100 k+ rows scroll
// smoothly. Sortable, resizable columns, a column filter, a details pane that follows the
// selected record through sorting and snapshots, copy cell/row, CSV export; trace_id and span_id
// cells link to the trace's waterfall; datetimes read in the chosen time zone.
import { clear, copyText, h, toast } from './dom';
import { fmtDatetimeCell, onZoneChange } from './format';
import { navigateTo, readParams, spanHref, traceHref } from './urlstate';

export interface GridColumn {
  name: string;
  type: string;
}

const ROW_HEIGHT = 24;
const OVERSCAN = 10;
const MAX_CELL_CHARS = 300;

export function formatCell(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

const TRACE_COLUMNS = /^(trace_?id|traceid)$/i;
const SPAN_COLUMNS = /^(span_?id|spanid|parent_span_id)$/i;

/** Where a cell links to: a trace id, or a span id (with its row's trace id when there is one). */
export function cellLink(columns: GridColumn[], row: unknown[], column: number): string | null {
  const value = row[column];
  if (typeof value !== 'string' || !/^[0-9a-f]{16,32}$/i.test(value)) return null;
  const name = columns[column].name;
  const params = readParams();
  if (TRACE_COLUMNS.test(name)) return traceHref(value, undefined, params.range, params.db);
  if (SPAN_COLUMNS.test(name)) {
    const traceColumn = columns.findIndex((c) => TRACE_COLUMNS.test(c.name));
    const traceId = traceColumn >= 0 ? row[traceColumn] : null;
    if (typeof traceId === 'string' && traceId) return traceHref(traceId, value, params.range, params.db);
    return spanHref(value, params.range, params.db);
  }
  return null;
}

function displayCell(column: GridColumn, value: unknown): string {
  return column.type === 'datetime' ? fmtDatetimeCell(value) : formatCell(value);
}

function compare(a: unknown, b: unknown): number {
  if (a === b) return 0;
  if (a === null || a === undefined) return -1;
  if (b === null || b === undefined) return 1;
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b);
  const sa = formatCell(a);
  const sb = formatCell(b);
  return sa < sb ? -1 : sa > sb ? 1 : 0;
}

function csvField(value: unknown): string {
  const text = formatCell(value);
  return /[",\n\r]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

export function toCsv(columns: GridColumn[], rows: unknown[][]): string {
  const lines = [columns.map((c) => csvField(c.name)).join(',')];
  for (const row of rows) lines.push(row.map(csvField).join(','));
  return lines.join('\r\n') + '\r\n';
}

export class ResultGrid {
  readonly element: HTMLElement;
  private header: HTMLElement;
  private viewport: HTMLElement;
  private spacer: HTMLElement;
  private body: HTMLElement;
  private details: HTMLElement;
  private columns: GridColumn[] = [];
  private rows: unknown[][] = [];
  private order: number[] = [];
  private widths: number[] = [];
  private resized = new Set<number>();
  private sort: { column: number; descending: boolean } | null = null;
  private selected: { row: number; column: number } | null = null;
  private filterColumn = h('select.grid-filter-column', { 'aria-label': 'Filter column', onchange: () => this.refilter() });
  private filterText = h('input.grid-filter', { type: 'search', placeholder: 'Filter rows…', 'aria-label': 'Filter rows', oninput: () => this.refilter() });
  private filterCount = h('span.muted.grid-filter-count');
  private frame = 0;

  constructor(private name: string) {
    this.header = h('div.grid-header', { role: 'row' });
    this.spacer = h('div.grid-spacer');
    this.body = h('div.grid-rows', { role: 'rowgroup' });
    this.viewport = h('div.grid-viewport', { tabindex: 0, onscroll: () => this.schedule() }, this.header, this.spacer, this.body);
    this.viewport.addEventListener('keydown', (e) => this.onKey(e));
    this.details = h('div.grid-details', { hidden: true });
    const filterBar = h('div.grid-filter-bar', {}, this.filterColumn, this.filterText, this.filterCount);
    this.element = h('div.grid', { role: 'grid', 'aria-label': `result table ${name}`, 'data-table': name }, filterBar, this.viewport, this.details);
    new ResizeObserver(() => this.schedule()).observe(this.viewport);
    onZoneChange(() => this.render());
  }

  /**
   * Replaces the grid's data (a new snapshot), keeping sort, filter, selection and scroll.
   * Column widths follow the data until the user resizes a column; `final` marks the last
   * snapshot, whose rows set the widths.
   */
  setData(columns: GridColumn[], rows: unknown[][], final = false): void {
    const sameShape = columns.length === this.columns.length && columns.every((c, i) => c.name === this.columns[i]?.name);
    this.columns = columns;
    this.rows = rows;
    if (!sameShape) {
      this.sort = null;
      this.selected = null;
      this.resized.clear();
      this.details.hidden = true;
      clear(this.filterColumn);
      this.filterColumn.append(h('option', { value: '-1' }, 'All columns'), ...columns.map((c, i) => h('option', { value: String(i) }, c.name)));
    }
    if (!sameShape || final || rows.length <= 50) this.widths = columns.map((c, i) => (this.resized.has(i) && this.widths[i]) || this.measure(c, i));
    if (this.selected && this.selected.row >= rows.length) this.selected = null;
    this.renderHeader();
    this.applySort();
    this.element.dataset.rows = String(rows.length);
    this.element.dataset.final = String(final);
    this.layout();
    if (!this.details.hidden) this.showDetails();
  }

  private layout(): void {
    this.element.dataset.shown = String(this.order.length);
    this.filterCount.textContent = this.filterText.value ? `${this.order.length} of ${this.rows.length}` : '';
    this.spacer.style.height = `${this.order.length * ROW_HEIGHT}px`;
    this.spacer.style.width = `${this.totalWidth()}px`;
    this.header.style.width = `${this.totalWidth()}px`;
    this.render();
  }

  private refilter(): void {
    this.applySort();
    this.layout();
    if (!this.details.hidden) this.showDetails();
  }

  get rowCount(): number {
    return this.rows.length;
  }

  exportCsv(): void {
    const csv = toCsv(this.columns, this.order.map((i) => this.rows[i]));
    const url = URL.createObjectURL(new Blob([csv], { type: 'text/csv;charset=utf-8' }));
    const link = h('a', { href: url, download: `${this.name || 'result'}.csv` });
    document.body.appendChild(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  }

  private measure(column: GridColumn, index: number): number {
    let chars = column.name.length + column.type.length + 3;
    // The first rows and an even sample of the rest: a wide value deep in the table counts too.
    const n = this.rows.length;
    const stride = Math.max(1, Math.floor(n / 50));
    for (let r = 0; r < n; r = r < 50 ? r + 1 : r + stride) {
      chars = Math.max(chars, Math.min(displayCell(column, this.rows[r][index]).length, 60));
    }
    if (column.type === 'datetime') chars = Math.max(chars, 28);
    return Math.min(520, Math.max(70, chars * 7.5 + 18));
  }

  /** Wide enough for the largest row number (1 to 7 digits), no wider. */
  private rownumWidth(): number {
    return Math.max(32, String(Math.max(1, this.rows.length)).length * 7.5 + 18);
  }

  private totalWidth(): number {
    return this.widths.reduce((a, b) => a + b, 0) + this.rownumWidth();
  }

  private renderHeader(): void {
    clear(this.header);
    this.header.appendChild(h('div.grid-cell.grid-rownum', { style: { width: `${this.rownumWidth()}px` } }, '#'));
    this.columns.forEach((column, index) => {
      const sorted = this.sort?.column === index ? (this.sort.descending ? ' ▼' : ' ▲') : '';
      const handle = h('span.col-resize', {
        title: 'Drag to resize, double-click to fit',
        onmousedown: (e: MouseEvent) => this.startResize(e, index),
        onclick: (e: Event) => e.stopPropagation(),
        ondblclick: (e: Event) => {
          e.stopPropagation();
          this.resized.delete(index);
          this.widths[index] = this.measure(column, index);
          this.renderHeader();
          this.layout();
        },
      });
      this.header.appendChild(
        h(
          'div.grid-cell.grid-head',
          {
            role: 'columnheader',
            title: `${column.name}: ${column.type} — click to sort`,
            style: { width: `${this.widths[index]}px` },
            'data-column': column.name,
            'aria-sort': this.sort?.column === index ? (this.sort.descending ? 'descending' : 'ascending') : 'none',
            onclick: () => this.toggleSort(index),
          },
          h('span.col-name', {}, column.name),
          h('span.col-type', {}, column.type),
          sorted,
          handle,
        ),
      );
    });
    this.header.style.width = `${this.totalWidth()}px`;
  }

  private startResize(e: MouseEvent, index: number): void {
    e.preventDefault();
    e.stopPropagation();
    const startX = e.clientX;
    const startWidth = this.widths[index];
    const move = (ev: MouseEvent) => {
      this.widths[index] = Math.max(40, startWidth + ev.clientX - startX);
      this.resized.add(index);
      const head = this.header.children[index + 1] as HTMLElement | undefined;
      if (head) head.style.width = `${this.widths[index]}px`;
      this.layout();
    };
    const up = () => {
      window.removeEventListener('mousemove', move);
      window.removeEventListener('mouseup', up);
    };
    window.addEventListener('mousemove', move);
    window.addEventListener('mouseup', up);
  }

  private toggleSort(column: number): void {
    if (this.sort?.column === column) {
      this.sort = this.sort.descending ? null : { column, descending: true };
    } else {
      this.sort = { column, descending: false };
    }
    this.applySort();
    this.renderHeader();
    this.layout();
    this.revealSelected();
  }

  private applySort(): void {
    const needle = this.filterText.value.trim().toLowerCase();
    const only = Number(this.filterColumn.value ?? -1);
    this.order = [];
    for (let i = 0; i < this.rows.length; i++) {
      if (needle) {
        const row = this.rows[i];
        const hit =
          only >= 0 && only < this.columns.length
            ? displayCell(this.columns[only], row[only]).toLowerCase().includes(needle)
            : row.some((v, c) => displayCell(this.columns[c] ?? { name: '', type: '' }, v).toLowerCase().includes(needle));
        if (!hit) continue;
      }
      this.order.push(i);
    }
    const sort = this.sort;
    if (!sort) return;
    const sign = sort.descending ? -1 : 1;
    this.order.sort((a, b) => sign * compare(this.rows[a][sort.column], this.rows[b][sort.column]) || a - b);
  }

  /** Scrolls the selected record into view at its position in the current order. */
  private revealSelected(): void {
    if (!this.selected) return;
    const position = this.order.indexOf(this.selected.row);
    if (position < 0) return;
    const top = position * ROW_HEIGHT;
    if (top < this.viewport.scrollTop || top > this.viewport.scrollTop + this.viewport.clientHeight - 2 * ROW_HEIGHT) {
      this.viewport.scrollTop = Math.max(0, top - this.viewport.clientHeight / 2);
    }
    if (!this.details.hidden) this.showDetails();
  }

  private schedule(): void {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.render();
    });
  }

  private render(): void {
    const top = this.viewport.scrollTop;
    const height = this.viewport.clientHeight || 400;
    const first = Math.max(0, Math.floor(top / ROW_HEIGHT) - OVERSCAN);
    const last = Math.min(this.order.length, Math.ceil((top + height) / ROW_HEIGHT) + OVERSCAN);
    const fragment = document.createDocumentFragment();
    for (let position = first; position < last; position++) {
      const rowIndex = this.order[position];
      const row = this.rows[rowIndex];
      const line = h('div.grid-row', {
        role: 'row',
        style: { top: `${position * ROW_HEIGHT}px` },
        'data-row': String(rowIndex),
        'aria-selected': this.selected?.row === rowIndex ? 'true' : undefined,
      });
      line.appendChild(h('div.grid-cell.grid-rownum', { style: { width: `${this.rownumWidth()}px` } }, String(position + 1)));
      row.forEach((value, column) => {
        const isSelected = this.selected?.row === rowIndex && this.selected.column === column;
        const text = displayCell(this.columns[column] ?? { name: '', type: '' }, value);
        const shown = text.length > MAX_CELL_CHARS ? text.slice(0, MAX_CELL_CHARS) + '…' : text;
        const href = this.columns[column] ? cellLink(this.columns, row, column) : null;
        const cell = h(
          'div.grid-cell',
          {
            role: 'gridcell',
            style: { width: `${this.widths[column]}px` },
            'data-kind': value !== null && typeof value === 'object' ? 'dynamic' : typeof value,
            'aria-selected': isSelected ? 'true' : undefined,
            onclick: () => this.select(rowIndex, column),
            ondblclick: () => this.select(rowIndex, column, true),
          },
          href
            ? h('a.trace-link', { href, title: 'Open the trace', onclick: (e: Event) => (e.preventDefault(), e.stopPropagation(), navigateTo(href)) }, shown)
            : shown,
        );
        line.appendChild(cell);
      });
      fragment.appendChild(line);
    }
    clear(this.body);
    this.body.style.width = `${this.totalWidth()}px`;
    this.body.appendChild(fragment);
  }

  private select(row: number, column: number, expand = false): void {
    this.selected = { row, column };
    this.render();
    const value = this.rows[row]?.[column];
    if (expand || (value !== null && typeof value === 'object')) this.showDetails();
  }

  private rowObject(row: number): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    this.columns.forEach((c, i) => (out[c.name] = this.rows[row][i]));
    return out;
  }

  private showDetails(): void {
    const selected = this.selected;
    if (!selected || !this.rows[selected.row]) return;
    const column = this.columns[selected.column];
    const value = this.rows[selected.row][selected.column];
    const pretty = value !== null && typeof value === 'object' ? JSON.stringify(value, null, 2) : formatCell(value);
    const position = this.order.indexOf(selected.row);
    clear(this.details);
    this.details.hidden = false;
    this.details.dataset.row = String(selected.row);
    this.details.append(
      h(
        'div.details-bar',
        {},
        h('strong', {}, `${column.name}`),
        h('span.muted', {}, ` ${column.type}`),
        h('span.muted', { 'data-testid': 'details-position' }, position >= 0 ? ` · row ${position + 1}` : ' · filtered out'),
        h('span.spacer'),
        h('button', { type: 'button', onclick: () => this.copyCell() }, 'Copy cell'),
        h('button', { type: 'button', onclick: () => this.copyRow() }, 'Copy row'),
        h('button', { type: 'button', 'aria-label': 'Close details', onclick: () => (this.details.hidden = true) }, '✕'),
      ),
      h('pre.details-value', { 'data-testid': 'cell-details' }, pretty),
    );
  }

  private copyCell(): void {
    if (!this.selected) return;
    void copyText(formatCell(this.rows[this.selected.row][this.selected.column])).then(() => toast('Cell copied'));
  }

  private copyRow(): void {
    if (!this.selected) return;
    void copyText(JSON.stringify(this.rowObject(this.selected.row))).then(() => toast('Row copied as JSON'));
  }

  private onKey(e: KeyboardEvent): void {
    const mod = e.ctrlKey || e.metaKey;
    if (mod && e.key.toLowerCase() === 'c' && this.selected) {
      e.preventDefault();
      if (e.shiftKey) this.copyRow();
      else this.copyCell();
      return;
    }
    if (e.key === 'Enter' && this.selected) {
      this.showDetails();
      return;
    }
    if (!this.selected || !['ArrowUp', 'ArrowDown', 'ArrowLeft', 'ArrowRight'].includes(e.key)) return;
    e.preventDefault();
    const position = this.order.indexOf(this.selected.row);
    let nextPosition = position;
    let column = this.selected.column;
    if (e.key === 'ArrowUp') nextPosition = Math.max(0, position - 1);
    if (e.key === 'ArrowDown') nextPosition = Math.min(this.order.length - 1, position + 1);
    if (e.key === 'ArrowLeft') column = Math.max(0, column - 1);
    if (e.key === 'ArrowRight') column = Math.min(this.columns.length - 1, column + 1);
    this.selected = { row: this.order[nextPosition], column };
    const top = nextPosition * ROW_HEIGHT;
    if (top < this.viewport.scrollTop + ROW_HEIGHT) this.viewport.scrollTop = top - ROW_HEIGHT;
    if (top > this.viewport.scrollTop + this.viewport.clientHeight - 2 * ROW_HEIGHT)
      this.viewport.scrollTop = top - this.viewport.clientHeight + 2 * ROW_HEIGHT;
    this.render();
    if (!this.details.hidden) this.showDetails();
  }
}
