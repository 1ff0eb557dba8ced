// The Explore page: the sidebar (schema, history, library), the KQL editor with database and
// time-range pickers, and progressive results (grid, chart, logs view). The query, database,
// range, tab and time zone live in the URL, so a link reproduces the view.
import { openAlertDialog } from './alerts';
import { api, ApiError, streamQuery, type StreamEvent } from './api';
import { CHART_KINDS, ResultChart, type Visualization } from './chart';
import type { DiscoveredField } from './completion';
import { clear, copyText, h, toast } from './dom';
import { KqlEditor, type SchemaTable } from './editor';
import { fmtBytes, fmtNumber, onZoneChange, zoneLabel } from './format';
import { ResultGrid, type GridColumn } from './grid';
import { openSaveDialog } from './library';
import { isLogShaped, LogsView } from './logs';
import { Sidebar, type OpenRequest } from './sidebar';
import { TimePicker } from './timepicker';
import { absolute, DEFAULT_RANGE, isRelative, rangeLabel, resolveRange, toRequest, type TimeRange } from './timerange';
import { readParams, writeParams } from './urlstate';

const DEFAULT_QUERY = `default
| where severity_text == "ERROR"
| summarize count() by bin(timestamp, 15m), service = tostring(resource["service.name"])
| render timechart`;

interface TableData {
  columns: GridColumn[];
  rows: unknown[][];
}

interface Snapshot {
  iteration: string;
  tables: Map<string, unknown[][]>;
}

function storedRange(): TimeRange | null {
  try {
    const saved = JSON.parse(localStorage.getItem('bzrk.range.v2') ?? 'null');
    return saved && typeof saved.from === 'string' && typeof saved.to === 'string' ? saved : null;
  } catch {
    return null;
  }
}

export class ExplorePage {
  readonly element: HTMLElement;
  private editor!: KqlEditor;
  private database = h('select#database', { 'aria-label': 'Database', onchange: () => void this.onDatabase() });
  private picker: TimePicker;
  private runButton: HTMLButtonElement = h('button', { id: 'run', class: 'primary', type: 'button', title: 'Run the query under the cursor (Ctrl/Cmd+Enter or Shift+Enter)', onclick: () => void this.run() }, '▶ Run');
  private cancelButton: HTMLButtonElement = h('button', { id: 'cancel', type: 'button', disabled: true, onclick: () => this.cancel() }, '■ Cancel');
  private progressBar = h('div.progress-fill');
  private progress = h('div.progress', { role: 'progressbar', 'aria-label': 'Query progress', 'aria-valuemin': '0', 'aria-valuemax': '100' }, this.progressBar);
  private progressText = h('span.progress-text', {}, 'Ready');
  private stats = h('div.stats', { 'data-testid': 'stats' });
  private tabs = h('div.tabs', { role: 'tablist' });
  private panes = h('div.panes');
  private errorBox = h('div.error-box', { role: 'alert', hidden: true });
  private warnings = h('div.warnings', { hidden: true });
  private sidebar: Sidebar;
  private resultsSection: HTMLElement;
  private abort: AbortController | null = null;
  private schemas = new Map<string, GridColumn[]>();
  private pending: Snapshot | null = null;
  private shown: Map<string, TableData> = new Map();
  private grids = new Map<string, ResultGrid>();
  private chart: ResultChart | null = null;
  private logs: LogsView | null = null;
  private visualization: Visualization | null = null;
  private activeTab = '';
  private wantedTab = '';
  private snapshots = 0;
  private coverage = 0;
  private final = false;
  private lastQuery = '';
  private lastOffset = 0;
  private tables: SchemaTable[] = [];
  private fieldCache = new Map<string, Promise<DiscoveredField[]>>();

  constructor(private isDark: () => boolean) {
    const params = readParams();
    this.picker = new TimePicker(params.range ?? storedRange() ?? DEFAULT_RANGE, (range) => this.onRange(range));
    this.wantedTab = params.tab ?? '';
    const editorHost = h('div.editor#editor', { 'data-testid': 'editor' });
    this.resultsSection = h(
      'section.results',
      { 'aria-label': 'Results', 'data-snapshots': '0', 'data-state': 'idle' },
      this.progress,
      h('div.statusline', {}, this.progressText, this.stats),
      this.errorBox,
      this.warnings,
      this.tabs,
      this.panes,
    );
    this.sidebar = new Sidebar({
      database: () => this.database.value,
      databases: () => [...this.database.options].map((o) => o.value),
      tables: () => this.tables,
      fields: (table) => this.fieldsOf(table),
      insert: (text) => this.editor.insert(text),
      open: (request) => this.open(request),
    });
    const toolbar = h(
      'div.toolbar',
      {},
      h('label.field', {}, 'Database ', this.database),
      h('label.field', {}, 'Time ', this.picker.element),
      h('span.spacer'),
      h('button', { type: 'button', 'data-testid': 'save-open', onclick: () => void this.save() }, 'Save…'),
      h('button', { type: 'button', title: 'Copy a link to this view', onclick: () => void this.copyLink() }, 'Link'),
      h('button#alert-on-this', { type: 'button', onclick: () => openAlertDialog({ query: this.editor.value, database: this.database.value, since: toRequest(this.picker.range).since }, () => undefined) }, 'Alert on this'),
      this.cancelButton,
      this.runButton,
    );
    this.element = h('div.explore', {}, this.sidebar.element, h('main.workspace', {}, toolbar, editorHost, this.resultsSection));
    const initial = params.q ?? (sessionStorage.getItem('bzrk.query') || DEFAULT_QUERY);
    this.editor = new KqlEditor(editorHost, initial, () => void this.run(), isDark() ? 'dark' : 'light');
    // Ctrl/Cmd+Enter runs from anywhere on the page (Monaco handles it inside the editor).
    this.element.addEventListener('keydown', (e) => {
      if ((e.ctrlKey || e.metaKey) && e.key === 'Enter' && !(e.target as HTMLElement).closest('.monaco-editor')) {
        e.preventDefault();
        void this.run();
      }
    });
    onZoneChange(() => {
      this.writeUrl(false);
      this.redrawChart();
      this.logs?.redraw(this.isDark());
    });
    void this.loadDatabases(params.db).then(async () => {
      // A shared link runs its query on arrival: the link is the view, not just the text.
      if (params.q) {
        await this.editor.ready;
        void this.run();
      }
    });
    this.sidebar.show('schema');
  }

  setTheme(dark: boolean): void {
    this.editor.setTheme(dark ? 'dark' : 'light');
    this.redrawChart();
    this.logs?.redraw(dark);
  }

  // -- databases and schema ---------------------------------------------------------------
  private async loadDatabases(wanted?: string): Promise<void> {
    try {
      const answer = await api<{ databases: { name: string }[] }>('GET', '/api/v1/databases');
      clear(this.database);
      for (const db of answer.databases) this.database.appendChild(h('option', { value: db.name }, db.name));
      // The URL's database, else the last one used, else `default` (every install has it).
      const saved = [wanted, localStorage.getItem('bzrk.database'), 'default'].find((n) => n && answer.databases.some((d) => d.name === n));
      if (saved) this.database.value = saved;
      await this.onDatabase();
    } catch (e) {
      toast(`Could not list databases: ${(e as Error).message}`, 'error');
    }
  }

  private async onDatabase(): Promise<void> {
    const db = this.database.value;
    if (!db) return;
    localStorage.setItem('bzrk.database', db);
    try {
      const answer = await api<{ tables: SchemaTable[] }>('GET', `/api/v1/databases/${encodeURIComponent(db)}/tables`);
      this.tables = answer.tables;
      this.sidebar.refresh('schema');
      await this.editor.setSchema(db, this.tables);
      this.element.dataset.schemaLoaded = db;
      // Paths offered after `attributes.`: the discovered fields of the database's tables.
      const lists = await Promise.all(this.tables.slice(0, 8).map((t) => this.fieldsOf(t.name)));
      this.editor.setFields(lists.flat());
      this.element.dataset.fieldsLoaded = String(lists.flat().length);
    } catch (e) {
      toast(`Could not load the schema of ${db}: ${(e as Error).message}`, 'error');
    }
  }

  private fieldsOf(table: string): Promise<DiscoveredField[]> {
    const key = `${this.database.value}/${table}`;
    let found = this.fieldCache.get(key);
    if (!found) {
      const db = encodeURIComponent(this.database.value);
      found = api<{ fields: DiscoveredField[] }>('GET', `/api/v1/databases/${db}/tables/${encodeURIComponent(table)}/fields?since=1d%20ago&limit=300`)
        .then((a) => a.fields)
        // Field discovery is a help, not a requirement: the declared columns are shown anyway.
        .catch(() => []);
      this.fieldCache.set(key, found);
    }
    return found;
  }

  /** Opens a history entry or a saved query: its text, database and time range. */
  private open(request: OpenRequest): void {
    this.editor.value = request.query;
    if (request.database && [...this.database.options].some((o) => o.value === request.database)) {
      if (this.database.value !== request.database) {
        this.database.value = request.database;
        void this.onDatabase();
      }
    }
    if (request.range) this.picker.range = request.range;
    this.element.dataset.opened = request.source;
    this.writeUrl(true, request.query);
  }

  private async save(): Promise<void> {
    const block = this.editor.currentBlock();
    const saved = await openSaveDialog(
      { name: '', folder: '', description: '', database: this.database.value, query: block.text || this.editor.value, range: this.picker.range },
      [...this.database.options].map((o) => o.value),
    );
    if (saved) {
      toast(`Saved "${saved.name}"`);
      this.sidebar.refresh('library');
    }
  }

  private async copyLink(): Promise<void> {
    this.writeUrl(false);
    await copyText(location.href);
    toast('Link copied');
  }

  // -- time range ---------------------------------------------------------------------------
  private onRange(range: TimeRange): void {
    localStorage.setItem('bzrk.range.v2', JSON.stringify(range));
    this.writeUrl(false);
  }

  private writeUrl(push: boolean, query?: string): void {
    writeParams({ q: query ?? (this.lastQuery || undefined), db: this.database.value || undefined, range: this.picker.range, tab: this.activeTab || undefined }, push);
  }

  /** A drag across a timechart: the range narrows to the selection and the query runs again. */
  private zoom(fromMs: number, toMs: number): void {
    this.picker.range = absolute(fromMs, toMs);
    this.onRange(this.picker.range);
    void this.execute(this.lastQuery, this.lastOffset, { keepTab: true, push: true });
  }

  /** Live tail: the same query with the range slid to end now. */
  private async rerun(): Promise<void> {
    if (!isRelative(this.picker.range)) {
      const [from, to] = resolveRange(this.picker.range);
      this.picker.range = absolute(Date.now() - (to - from), Date.now());
    }
    await this.execute(this.lastQuery, this.lastOffset, { keepTab: true, push: false });
  }

  // -- running ------------------------------------------------------------------------------
  /** Runs the selection, or the blank-line-separated block under the cursor. */
  async run(): Promise<void> {
    const block = this.editor.currentBlock();
    await this.execute(block.text, block.startLine - 1, { keepTab: false, push: true });
  }

  private async execute(query: string, lineOffset: number, opts: { keepTab: boolean; push: boolean }): Promise<void> {
    if (this.abort) this.cancel();
    if (!query.trim()) return;
    this.lastQuery = query;
    this.lastOffset = lineOffset;
    sessionStorage.setItem('bzrk.query', this.editor.value);
    this.editor.clearError();
    this.errorBox.hidden = true;
    this.warnings.hidden = true;
    this.snapshots = 0;
    this.coverage = 0;
    this.final = false;
    if (!opts.keepTab) this.activeTab = this.wantedTab; // a new run opens on its first tab unless the URL names one
    this.wantedTab = '';
    this.pending = null;
    this.visualization = null;
    this.schemas.clear();
    this.resultsSection.dataset.snapshots = '0';
    this.resultsSection.dataset.state = 'running';
    this.resultsSection.dataset.query = query;
    this.setProgress(0, 'Running…');
    clear(this.stats);
    this.runButton.disabled = true;
    this.cancelButton.disabled = false;
    this.writeUrl(opts.push, query);
    const abort = new AbortController();
    this.abort = abort;
    const started = performance.now();
    try {
      await streamQuery({ query, database: this.database.value, ...toRequest(this.picker.range), timezone: 'UTC' }, (e) => this.onEvent(e, started, lineOffset), abort.signal);
      if (this.pending) this.commit();
    } catch (e) {
      if (abort.signal.aborted) {
        this.resultsSection.dataset.state = 'cancelled';
        this.setProgress(null, 'Cancelled');
      } else {
        this.showError({ type: 'error', code: e instanceof ApiError ? e.code : 'NetworkError', message: (e as Error).message }, lineOffset);
      }
    } finally {
      if (this.abort === abort) {
        this.abort = null;
        this.runButton.disabled = false;
        this.cancelButton.disabled = true;
        if (this.resultsSection.dataset.state === 'running') this.resultsSection.dataset.state = 'done';
      }
    }
  }

  cancel(): void {
    this.abort?.abort();
  }

  private onEvent(event: StreamEvent, started: number, lineOffset: number): void {
    switch (event.type) {
      case 'schema':
        this.schemas.set(event.table, event.columns);
        break;
      case 'rows': {
        // A new iteration replaces every table's rows: collect it aside, show it when complete.
        if (!this.pending || this.pending.iteration !== event.iteration) this.pending = { iteration: event.iteration, tables: new Map() };
        const rows = this.pending.tables.get(event.table) ?? [];
        for (const row of event.rows) rows.push(row);
        this.pending.tables.set(event.table, rows);
        break;
      }
      case 'metadata':
        if (event.visualization) this.visualization = event.visualization;
        if (!this.pending || this.pending.iteration !== event.iteration) this.pending = { iteration: event.iteration, tables: new Map() };
        this.commit();
        this.showWarnings(event.warnings);
        break;
      case 'progress': {
        const slices = event.slices_total ? ` · slices ${event.slices_done}/${event.slices_total}` : '';
        this.setProgress(event.coverage, `${Math.round(Math.max(this.coverage, event.coverage) * 100)}% covered${slices}`);
        clear(this.stats);
        // A query faster than the server's query_chunk_counters_after_ms has no chunk figures.
        const chunks = event.chunks_total
          ? [
              h('span', { title: 'chunks (granules) scanned of total' }, `${fmtNumber(event.chunks_scanned)}/${fmtNumber(event.chunks_total)} chunks scanned`),
              h('span', { title: 'chunks skipped by time range / bloom filter' }, `${fmtNumber(event.chunks_skipped_range + event.chunks_skipped_bloom)} skipped`),
            ]
          : [];
        this.stats.append(
          h('span', { title: 'rows processed' }, `${fmtNumber(event.rows_processed)} rows`),
          ...chunks,
          h('span', {}, fmtBytes(event.bytes_scanned)),
          h('span', {}, `${((performance.now() - started) / 1000).toFixed(2)} s`),
        );
        break;
      }
      case 'done':
        this.final = true;
        if (this.pending) this.commit();
        else this.renderResults(); // the last snapshot is the final one: widths follow it
        this.resultsSection.dataset.state = 'done';
        this.setProgress(
          event.coverage,
          `${event.status === 'complete' ? 'Done' : event.status} · ${((performance.now() - started) / 1000).toFixed(2)} s · ${this.snapshots} snapshot${this.snapshots === 1 ? '' : 's'} · ${rangeLabel(this.picker.range)} (${zoneLabel()})`,
        );
        break;
      case 'error':
        this.showError(event, lineOffset);
        break;
    }
  }

  private commit(): void {
    const snapshot = this.pending;
    if (!snapshot) return;
    this.pending = null;
    const next = new Map<string, TableData>();
    for (const [name, columns] of this.schemas) next.set(name, { columns, rows: snapshot.tables.get(name) ?? [] });
    for (const [name, rows] of snapshot.tables) if (!next.has(name)) next.set(name, { columns: (rows[0] ?? []).map((_, i) => ({ name: `Column${i + 1}`, type: 'dynamic' })), rows });
    this.shown = next;
    this.snapshots++;
    this.resultsSection.dataset.snapshots = String(this.snapshots);
    this.resultsSection.dataset.iteration = snapshot.iteration;
    this.renderResults();
  }

  /** Coverage only grows within a run; the bar eases between updates (CSS transition). */
  private setProgress(coverage: number | null, text: string): void {
    if (coverage !== null) {
      const clamped = Math.min(1, Math.max(0, coverage));
      this.coverage = this.resultsSection.dataset.state === 'running' ? Math.max(this.coverage, clamped) : clamped;
      this.progressBar.style.width = `${this.coverage * 100}%`;
      this.progress.setAttribute('aria-valuenow', String(Math.round(this.coverage * 100)));
    }
    this.progress.dataset.running = String(this.resultsSection.dataset.state === 'running');
    this.progressText.textContent = text;
  }

  private showWarnings(warnings: { kind: string; message: string }[]): void {
    clear(this.warnings);
    this.warnings.hidden = !warnings.length;
    for (const w of warnings) this.warnings.appendChild(h('div', {}, `⚠ ${w.kind}: ${w.message}`));
  }

  private showError(event: Extract<StreamEvent, { type: 'error' }>, lineOffset: number): void {
    // Results of an earlier query under this error would read as this query's: drop them.
    this.pending = null;
    this.shown = new Map();
    this.visualization = null;
    this.renderResults();
    this.resultsSection.dataset.state = 'error';
    this.setProgress(null, 'Failed');
    clear(this.errorBox);
    this.errorBox.hidden = false;
    const loc = event.location;
    const where = loc ? ` (line ${loc.start_line + lineOffset}, column ${loc.start_column})` : '';
    this.errorBox.append(h('strong', {}, `${event.title || event.code}${where}`), h('div', {}, event.message));
    if (loc) this.errorBox.append(h('button.link', { type: 'button', onclick: () => this.editor.showError(loc, event.message, lineOffset) }, 'Show in editor'));
    if (loc) this.editor.showError(loc, event.message, lineOffset);
  }

  // -- results ------------------------------------------------------------------------------
  private renderResults(): void {
    const names = [...this.shown.keys()];
    const vis = this.visualization && CHART_KINDS.includes(this.visualization.type.toLowerCase()) ? this.visualization : null;
    const primary = this.shown.get(names[0] ?? '');
    const logShaped = primary ? isLogShaped(primary.columns) : false;
    const tabNames = [...(vis ? ['Chart'] : []), ...(logShaped ? ['Logs'] : []), ...names];
    if (!tabNames.includes(this.activeTab)) this.activeTab = tabNames[0] ?? '';
    // Re-use grids and the chart between snapshots: only their data changes (no layout jump).
    const currentTabs = [...this.tabs.children].map((t) => (t as HTMLElement).dataset.tab);
    if (currentTabs.join('\u0000') !== tabNames.join('\u0000')) {
      clear(this.tabs);
      for (const name of tabNames) this.tabs.appendChild(h('button.tab', { type: 'button', role: 'tab', 'data-tab': name, onclick: () => this.selectTab(name, true) }, name));
    }
    for (const name of names) {
      let grid = this.grids.get(name);
      if (!grid) {
        const created = new ResultGrid(name);
        grid = created;
        this.grids.set(name, created);
        this.panes.appendChild(
          h('div.pane', { 'data-pane': name }, h('div.pane-bar', {}, h('span.row-count'), h('span.spacer'), h('button', { type: 'button', onclick: () => created.exportCsv() }, 'Export CSV')), created.element),
        );
      }
      const data = this.shown.get(name)!;
      grid.setData(data.columns, data.rows, this.final);
      const pane = this.panes.querySelector<HTMLElement>(`[data-pane="${CSS.escape(name)}"] .row-count`);
      if (pane) pane.textContent = `${fmtNumber(data.rows.length)} rows`;
    }
    for (const [name, grid] of this.grids) {
      if (!this.shown.has(name)) {
        grid.element.parentElement?.remove();
        this.grids.delete(name);
      }
    }
    if (logShaped && primary) {
      if (!this.logs) {
        this.logs = new LogsView({
          database: () => this.database.value,
          table: () => this.sourceTable(),
          range: () => {
            const [fromMs, toMs] = resolveRange(this.picker.range);
            return { fromMs, toMs };
          },
          query: () => this.lastQuery,
          rerun: () => this.rerun(),
        });
        this.panes.appendChild(h('div.pane', { 'data-pane': 'Logs' }, this.logs.element));
      }
      this.logs.setData(primary.columns, primary.rows, this.isDark());
    } else if (this.logs && this.resultsSection.dataset.state !== 'running') {
      this.logs.element.parentElement?.remove();
      this.logs.dispose();
      this.logs = null;
    }
    if (vis) {
      if (!this.chart) {
        this.chart = new ResultChart((from, to) => this.zoom(from, to));
        this.panes.prepend(h('div.pane', { 'data-pane': 'Chart' }, this.chart.element));
      }
    } else if (this.chart) {
      this.chart.element.parentElement?.remove();
      this.chart.dispose();
      this.chart = null;
    }
    this.selectTab(this.activeTab, false);
    if (vis) this.redrawChart();
  }

  /** The table a query reads first (for "show context"): its first word when it names one. */
  private sourceTable(): string {
    const first = /^\s*([A-Za-z_][\w]*|\['[^']+'\])/.exec(this.lastQuery)?.[1] ?? '';
    const name = first.startsWith("['") ? first.slice(2, -2) : first;
    return this.tables.some((t) => t.name === name) ? name : (this.tables[0]?.name ?? 'default');
  }

  private redrawChart(): void {
    const vis = this.visualization;
    if (!vis || !this.chart) return;
    const table = (vis as { table?: string }).table;
    const data = (table && this.shown.get(table)) || this.shown.values().next().value;
    if (data) this.chart.draw(vis, data.columns, data.rows, this.isDark());
  }

  private selectTab(name: string, byUser: boolean): void {
    this.activeTab = name;
    for (const tab of this.tabs.children) tab.setAttribute('aria-selected', String((tab as HTMLElement).dataset.tab === name));
    for (const pane of this.panes.children) (pane as HTMLElement).hidden = (pane as HTMLElement).dataset.pane !== name;
    if (name === 'Chart') this.chart?.resize();
    if (byUser) this.writeUrl(false);
  }
}
