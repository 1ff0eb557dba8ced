// A virtualized result grid: only the visible rows are in the DOM, so 100 k+ rows scroll
// smoothly. Sortable columns, a details pane for dynamic values, copy cell/row, CSV export.
import { clear, copyText, h, toast } from './dom';

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
  private sort: { column: number; descending: boolean } | null = null;
  private selected: { row: number; column: number } | null = null;
  private frame = 0;

  constructor(private name: string) {
    this.header = h('div.grid-header', { role: 'row' });
    this.spacer = h('div.grid-spacer');
    this.body = h('div.grid-rows', { role: 'rowgroup' });
    this.viewport = h('div.grid-viewport', { tabindex: 0, onscroll: () => this.schedule() }, this.header, this.spacer, this.body);
    this.viewport.addEventListener('keydown', (e) => this.onKey(e));
    this.details = h('div.grid-details', { hidden: true });
    this.element = h('div.grid', { role: 'grid', 'aria-label': `result table ${name}`, 'data-table': name }, this.viewport, this.details);
    new ResizeObserver(() => this.schedule()).observe(this.viewport);
  }

  /** Replaces the grid's data (a new snapshot), keeping sort, scroll position and widths. */
  setData(columns: GridColumn[], rows: unknown[][]): void {
    const sameShape = columns.length === this.columns.length && columns.every((c, i) => c.name === this.columns[i]?.name);
    this.columns = columns;
    this.rows = rows;
    if (!sameShape) {
      this.sort = null;
      this.selected = null;
      this.widths = columns.map((c, i) => this.measure(c, i));
      this.renderHeader();
    }
    this.applySort();
    this.element.dataset.rows = String(rows.length);
    this.spacer.style.height = `${rows.length * ROW_HEIGHT}px`;
    this.spacer.style.width = `${this.totalWidth()}px`;
    this.render();
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
    for (let r = 0; r < Math.min(this.rows.length, 50); r++) {
      chars = Math.max(chars, Math.min(formatCell(this.rows[r][index]).length, 60));
    }
    if (column.type === 'datetime') chars = Math.max(chars, 28);
    return Math.min(520, Math.max(70, chars * 7.5 + 18));
  }

  private totalWidth(): number {
    return this.widths.reduce((a, b) => a + b, 0) + 48;
  }

  private renderHeader(): void {
    clear(this.header);
    this.header.appendChild(h('div.grid-cell.grid-rownum', {}, '#'));
    this.columns.forEach((column, index) => {
      const sorted = this.sort?.column === index ? (this.sort.descending ? ' ▼' : ' ▲') : '';
      this.header.appendChild(
        h(
          'div.grid-cell.grid-head',
          {
            role: 'columnheader',
            title: `${column.name}: ${column.type} — click to sort`,
            style: { width: `${this.widths[index]}px` },
            'aria-sort': this.sort?.column === index ? (this.sort.descending ? 'descending' : 'ascending') : 'none',
            onclick: () => this.toggleSort(index),
          },
          h('span.col-name', {}, column.name),
          h('span.col-type', {}, column.type),
          sorted,
        ),
      );
    });
    this.header.style.width = `${this.totalWidth()}px`;
  }

  private toggleSort(column: number): void {
    if (this.sort?.column === column) {
      this.sort = this.sort.descending ? null : { column, descending: true };
    } else {
      this.sort = { column, descending: false };
    }
    this.applySort();
    this.renderHeader();
    this.render();
  }

  private applySort(): void {
    this.order = this.rows.map((_, i) => i);
    const sort = this.sort;
    if (!sort) return;
    const sign = sort.descending ? -1 : 1;
    this.order.sort((a, b) => sign * compare(this.rows[a][sort.column], this.rows[b][sort.column]) || a - b);
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
      const line = h('div.grid-row', { role: 'row', style: { top: `${position * ROW_HEIGHT}px` } });
      line.appendChild(h('div.grid-cell.grid-rownum', {}, String(position + 1)));
      row.forEach((value, column) => {
        const isSelected = this.selected?.row === rowIndex && this.selected.column === column;
        const text = formatCell(value);
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
          text.length > MAX_CELL_CHARS ? text.slice(0, MAX_CELL_CHARS) + '…' : text,
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
    if (!selected) return;
    const column = this.columns[selected.column];
    const value = this.rows[selected.row][selected.column];
    const pretty = value !== null && typeof value === 'object' ? JSON.stringify(value, null, 2) : formatCell(value);
    clear(this.details);
    this.details.hidden = false;
    this.details.append(
      h(
        'div.details-bar',
        {},
        h('strong', {}, `${column.name}`),
        h('span.muted', {}, ` ${column.type}`),
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
  }
}
