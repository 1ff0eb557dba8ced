// The Explore page: schema sidebar (databases, tables, fields), run history and query library,
// the KQL editor with time range and database pickers, and progressive results.
import { api, ApiError, streamQuery, type StreamEvent } from './api';
import { CHART_KINDS, ResultChart, type Visualization } from './chart';
import { clear, h, toast } from './dom';
import { KqlEditor, type SchemaTable } from './editor';
import { ResultGrid, type GridColumn } from './grid';

const DEFAULT_QUERY = `default
| where severity_text == "ERROR"
| summarize count() by bin(timestamp, 15m), service = tostring(resource["service.name"])
| render timechart`;

export const RANGES: [string, string][] = [
  ['15m', 'Last 15 minutes'],
  ['1h', 'Last hour'],
  ['6h', 'Last 6 hours'],
  ['24h', 'Last 24 hours'],
  ['7d', 'Last 7 days'],
  ['30d', 'Last 30 days'],
  ['custom', 'Custom range…'],
];

interface TableData {
  columns: GridColumn[];
  rows: unknown[][];
}

interface Snapshot {
  iteration: string;
  tables: Map<string, unknown[][]>;
}

function fmtNumber(n: number): string {
  return new Intl.NumberFormat('en', { notation: n >= 1e6 ? 'compact' : 'standard', maximumFractionDigits: 1 }).format(n);
}

function fmtBytes(n: number): string {
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
}

function localInput(date: Date): string {
  return new Date(date.getTime() - date.getTimezoneOffset() * 60000).toISOString().slice(0, 16);
}

export class ExplorePage {
  readonly element: HTMLElement;
  private editor!: KqlEditor;
  private database = h('select#database', { 'aria-label': 'Database', onchange: () => this.onDatabase() });
  private range = h('select#time-range', { 'aria-label': 'Time range', onchange: () => this.onRange() });
  private fromInput = h('input', { type: 'datetime-local', 'aria-label': 'From (local time)', hidden: true });
  private toInput = h('input', { type: 'datetime-local', 'aria-label': 'To (local time)', hidden: true });
  private runButton: HTMLButtonElement = h('button', { id: 'run', class: 'primary', type: 'button', title: 'Run (Ctrl/Cmd+Enter)', onclick: () => void this.run() }, '▶ Run');
  private cancelButton: HTMLButtonElement = h('button', { id: 'cancel', type: 'button', disabled: true, onclick: () => this.cancel() }, '■ Cancel');
  private progressBar = h('div.progress-fill');
  private progressText = h('span.progress-text', {}, 'Ready');
  private stats = h('div.stats', { 'data-testid': 'stats' });
  private tabs = h('div.tabs', { role: 'tablist' });
  private panes = h('div.panes');
  private errorBox = h('div.error-box', { role: 'alert', hidden: true });
  private warnings = h('div.warnings', { hidden: true });
  private sidebarBody = h('div.sidebar-body');
  private resultsSection: HTMLElement;
  private abort: AbortController | null = null;
  private schemas = new Map<string, GridColumn[]>();
  private pending: Snapshot | null = null;
  private shown: Map<string, TableData> = new Map();
  private grids = new Map<string, ResultGrid>();
  private chart: ResultChart | null = null;
  private visualization: Visualization | null = null;
  private activeTab = '';
  private snapshots = 0;
  private sidebarMode: 'schema' | 'history' | 'library' = 'schema';

  constructor(private isDark: () => boolean) {
    for (const [value, label] of RANGES) this.range.appendChild(h('option', { value }, label));
    this.range.value = localStorage.getItem('bzrk.range') || '24h';
    const now = new Date();
    this.fromInput.value = localInput(new Date(now.getTime() - 3600_000));
    this.toInput.value = localInput(now);
    const editorHost = h('div.editor#editor', { 'data-testid': 'editor' });
    this.resultsSection = h(
      'section.results',
      { 'aria-label': 'Results', 'data-snapshots': '0', 'data-state': 'idle' },
      h('div.progress', { role: 'progressbar', 'aria-label': 'Query progress' }, this.progressBar),
      h('div.statusline', {}, this.progressText, this.stats),
      this.errorBox,
      this.warnings,
      this.tabs,
      this.panes,
    );
    const sidebar = h(
      'aside.sidebar',
      { 'aria-label': 'Schema, history and library' },
      h(
        'div.sidebar-tabs',
        { role: 'tablist' },
        ...(['schema', 'history', 'library'] as const).map((mode) =>
          h('button', { type: 'button', role: 'tab', 'data-mode': mode, onclick: () => this.showSidebar(mode) }, mode[0].toUpperCase() + mode.slice(1)),
        ),
      ),
      this.sidebarBody,
    );
    const toolbar = h(
      'div.toolbar',
      {},
      h('label.field', {}, 'Database ', this.database),
      h('label.field', {}, 'Time ', this.range),
      this.fromInput,
      this.toInput,
      h('span.spacer'),
      h('button', { type: 'button', onclick: () => void this.save() }, 'Save…'),
      this.cancelButton,
      this.runButton,
    );
    this.element = h('div.explore', {}, sidebar, h('main.workspace', {}, toolbar, editorHost, this.resultsSection));
    const initial = sessionStorage.getItem('bzrk.query') || DEFAULT_QUERY;
    this.editor = new KqlEditor(editorHost, initial, () => void this.run(), isDark() ? 'dark' : 'light');
    this.onRange();
    // Ctrl/Cmd+Enter runs from anywhere on the page (Monaco handles it inside the editor).
    this.element.addEventListener('keydown', (e) => {
      if ((e.ctrlKey || e.metaKey) && e.key === 'Enter' && !(e.target as HTMLElement).closest('.monaco-editor')) {
        e.preventDefault();
        void this.run();
      }
    });
    void this.loadDatabases();
    this.showSidebar('schema');
  }

  setTheme(dark: boolean): void {
    this.editor.setTheme(dark ? 'dark' : 'light');
    this.redrawChart();
  }

  // -- databases and schema ---------------------------------------------------------------
  private async loadDatabases(): Promise<void> {
    try {
      const answer = await api<{ databases: { name: string }[] }>('GET', '/api/v1/databases');
      clear(this.database);
      for (const db of answer.databases) this.database.appendChild(h('option', { value: db.name }, db.name));
      const saved = localStorage.getItem('bzrk.database');
      if (saved && answer.databases.some((d) => d.name === saved)) this.database.value = saved;
      await this.onDatabase();
    } catch (e) {
      toast(`Could not list databases: ${(e as Error).message}`, 'error');
    }
  }

  private tables: SchemaTable[] = [];

  private async onDatabase(): Promise<void> {
    const db = this.database.value;
    if (!db) return;
    localStorage.setItem('bzrk.database', db);
    try {
      const answer = await api<{ tables: SchemaTable[] }>('GET', `/api/v1/databases/${encodeURIComponent(db)}/tables`);
      this.tables = answer.tables;
      if (this.sidebarMode === 'schema') this.renderSchema();
      await this.editor.setSchema(db, this.tables);
      this.element.dataset.schemaLoaded = db;
    } catch (e) {
      toast(`Could not load the schema of ${db}: ${(e as Error).message}`, 'error');
    }
  }

  private showSidebar(mode: 'schema' | 'history' | 'library'): void {
    this.sidebarMode = mode;
    for (const tab of this.element.querySelectorAll<HTMLElement>('.sidebar-tabs button')) {
      tab.setAttribute('aria-selected', String(tab.dataset.mode === mode));
    }
    if (mode === 'schema') this.renderSchema();
    if (mode === 'history') void this.renderHistory();
    if (mode === 'library') void this.renderLibrary();
  }

  // Tables whose fields are shown ("db/table"): the schema is drawn again when it reloads, and
  // an open table must stay open (and its fields loaded) through that.
  private expanded = new Set<string>();

  private renderSchema(): void {
    clear(this.sidebarBody);
    const list = h('ul.tree', { role: 'tree' });
    for (const table of this.tables) {
      const key = `${this.database.value}/${table.name}`;
      const open = this.expanded.has(key);
      const fields = h('ul.fields', { hidden: !open });
      const item = h(
        'li',
        { role: 'treeitem' },
        h(
          'button.tree-node',
          {
            type: 'button',
            title: 'Show columns and discovered fields',
            'aria-expanded': String(open),
            onclick: (e: Event) => {
              fields.hidden = !fields.hidden;
              if (fields.hidden) this.expanded.delete(key);
              else this.expanded.add(key);
              const node = e.currentTarget as HTMLElement;
              node.setAttribute('aria-expanded', String(!fields.hidden));
              node.firstChild!.textContent = fields.hidden ? '▸ ' : '▾ ';
              if (!fields.hidden && !fields.dataset.loaded) void this.loadFields(table, fields);
            },
            ondblclick: () => this.editor.insert(table.name),
          },
          open ? '▾ ' : '▸ ',
          table.name,
        ),
        fields,
      );
      list.appendChild(item);
      if (open) void this.loadFields(table, fields);
    }
    this.sidebarBody.append(h('div.sidebar-title', {}, this.database.value || 'Schema'), list);
  }

  private async loadFields(table: SchemaTable, into: HTMLElement): Promise<void> {
    into.dataset.loaded = '1';
    for (const column of table.columns) {
      into.appendChild(h('li', {}, h('button.field-name', { type: 'button', onclick: () => this.editor.insert(column.name) }, column.name), h('span.col-type', {}, column.type)));
    }
    try {
      const db = encodeURIComponent(this.database.value);
      const answer = await api<{ fields: { path: string; type: string; frequency: number }[] }>(
        'GET',
        `/api/v1/databases/${db}/tables/${encodeURIComponent(table.name)}/fields?since=${encodeURIComponent(this.sinceUntil().since ?? '1d ago')}&limit=100`,
      );
      if (answer.fields.length) into.appendChild(h('li.sub', {}, 'Discovered fields'));
      for (const field of answer.fields) {
        into.appendChild(
          h(
            'li',
            { title: `${field.path}: ${field.type}, in ${(field.frequency * 100).toFixed(0)}% of sampled rows` },
            h('button.field-name', { type: 'button', onclick: () => this.editor.insert(field.path) }, field.path),
            h('span.col-type', {}, `${field.type} · ${(field.frequency * 100).toFixed(0)}%`),
          ),
        );
      }
    } catch {
      // Field discovery is a help, not a requirement: the declared columns are shown already.
    }
  }

  private async renderHistory(): Promise<void> {
    clear(this.sidebarBody);
    this.sidebarBody.appendChild(h('div.sidebar-title', {}, 'Recent runs'));
    try {
      const answer = await api<{ runs: { id: string; query: string; database: string; status: string; started_at: string; duration_ms: number | null; parameters: Record<string, unknown> }[] }>(
        'GET',
        '/api/v1/runs?limit=50',
      );
      const list = h('ul.history');
      for (const run of answer.runs) {
        list.appendChild(
          h(
            'li',
            {},
            h(
              'button.history-item',
              {
                type: 'button',
                title: run.query,
                onclick: () => {
                  this.editor.value = run.query;
                  if ([...this.database.options].some((o) => o.value === run.database)) this.database.value = run.database;
                },
              },
              h('code', {}, run.query.split('\n')[0].slice(0, 80)),
              h('span.muted', {}, `${new Date(run.started_at).toLocaleString()} · ${run.status}${run.duration_ms != null ? ` · ${Math.round(run.duration_ms)} ms` : ''}`),
            ),
          ),
        );
      }
      if (!answer.runs.length) list.appendChild(h('li.muted', {}, 'No runs yet.'));
      this.sidebarBody.appendChild(list);
    } catch (e) {
      this.sidebarBody.appendChild(h('p.muted', {}, `History unavailable: ${(e as Error).message}`));
    }
  }

  private async renderLibrary(): Promise<void> {
    clear(this.sidebarBody);
    this.sidebarBody.appendChild(h('div.sidebar-title', {}, 'Query library'));
    try {
      const answer = await api<{ queries: { id: string; folder: string; name: string; query: string; database: string | null; since: string | null; owner: string }[] }>(
        'GET',
        '/api/v1/library/queries',
      );
      const byFolder = new Map<string, typeof answer.queries>();
      for (const q of answer.queries) byFolder.set(q.folder, [...(byFolder.get(q.folder) ?? []), q]);
      const tree = h('ul.tree');
      for (const [folder, queries] of byFolder) {
        const items = h('ul.fields');
        for (const q of queries) {
          items.appendChild(
            h(
              'li',
              {},
              h(
                'button.field-name',
                {
                  type: 'button',
                  title: q.query,
                  onclick: () => {
                    this.editor.value = q.query;
                    if (q.database) this.database.value = q.database;
                  },
                },
                q.name,
              ),
              h(
                'button.link',
                {
                  type: 'button',
                  'aria-label': `Delete ${q.name}`,
                  onclick: async () => {
                    if (!confirm(`Delete "${q.name}"?`)) return;
                    await api('DELETE', `/api/v1/library/queries/${q.id}`).catch((e) => toast((e as Error).message, 'error'));
                    void this.renderLibrary();
                  },
                },
                '✕',
              ),
            ),
          );
        }
        tree.appendChild(h('li', {}, h('div.folder', {}, `▾ ${folder || '(root)'}`), items));
      }
      if (!answer.queries.length) tree.appendChild(h('li.muted', {}, 'Nothing saved yet: use Save… above the editor.'));
      this.sidebarBody.appendChild(tree);
    } catch (e) {
      this.sidebarBody.appendChild(h('p.muted', {}, `Library unavailable: ${(e as Error).message}`));
    }
  }

  private async save(): Promise<void> {
    const name = prompt('Save query as (name):');
    if (!name) return;
    const folder = prompt('Folder (use / for subfolders, empty for the root):', '') ?? '';
    const { since, until } = this.sinceUntil();
    try {
      await api('POST', '/api/v1/library/queries', { name, folder, query: this.editor.value, database: this.database.value, since, until: until ?? null });
      toast(`Saved "${name}"`);
      if (this.sidebarMode === 'library') void this.renderLibrary();
    } catch (e) {
      toast((e as Error).message, 'error');
    }
  }

  // -- time range ---------------------------------------------------------------------------
  private onRange(): void {
    const custom = this.range.value === 'custom';
    this.fromInput.hidden = !custom;
    this.toInput.hidden = !custom;
    localStorage.setItem('bzrk.range', this.range.value);
  }

  private sinceUntil(): { since?: string; until?: string } {
    if (this.range.value !== 'custom') return { since: `${this.range.value} ago` };
    const from = this.fromInput.value ? new Date(this.fromInput.value).toISOString() : undefined;
    const to = this.toInput.value ? new Date(this.toInput.value).toISOString() : undefined;
    return { since: from, until: to };
  }

  // -- running ------------------------------------------------------------------------------
  async run(): Promise<void> {
    if (this.abort) this.cancel();
    const query = this.editor.value;
    if (!query.trim()) return;
    sessionStorage.setItem('bzrk.query', query);
    this.editor.clearError();
    this.errorBox.hidden = true;
    this.warnings.hidden = true;
    this.snapshots = 0;
    this.activeTab = ''; // a new run opens on its first tab (the chart when it renders one)
    this.pending = null;
    this.visualization = null;
    this.schemas.clear();
    this.resultsSection.dataset.snapshots = '0';
    this.resultsSection.dataset.state = 'running';
    this.setProgress(0, 'Running…');
    clear(this.stats);
    this.runButton.disabled = true;
    this.cancelButton.disabled = false;
    const abort = new AbortController();
    this.abort = abort;
    const started = performance.now();
    try {
      await streamQuery({ query, database: this.database.value, ...this.sinceUntil() }, (e) => this.onEvent(e, started), abort.signal);
      if (this.pending) this.commit();
    } catch (e) {
      if (abort.signal.aborted) {
        this.resultsSection.dataset.state = 'cancelled';
        this.setProgress(null, 'Cancelled');
      } else {
        this.showError({ type: 'error', code: e instanceof ApiError ? e.code : 'NetworkError', message: (e as Error).message });
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

  private onEvent(event: StreamEvent, started: number): void {
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
        this.setProgress(event.coverage, `${Math.round(event.coverage * 100)}% covered${slices}`);
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
        if (this.pending) this.commit();
        this.resultsSection.dataset.state = 'done';
        this.setProgress(event.coverage, `${event.status === 'complete' ? 'Done' : event.status} · ${((performance.now() - started) / 1000).toFixed(2)} s · ${this.snapshots} snapshot${this.snapshots === 1 ? '' : 's'}`);
        break;
      case 'error':
        this.showError(event);
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

  private setProgress(coverage: number | null, text: string): void {
    if (coverage !== null) this.progressBar.style.width = `${Math.max(0, Math.min(1, coverage)) * 100}%`;
    this.progressText.textContent = text;
  }

  private showWarnings(warnings: { kind: string; message: string }[]): void {
    clear(this.warnings);
    this.warnings.hidden = !warnings.length;
    for (const w of warnings) this.warnings.appendChild(h('div', {}, `⚠ ${w.kind}: ${w.message}`));
  }

  private showError(event: Extract<StreamEvent, { type: 'error' }>): void {
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
    const where = loc ? ` (line ${loc.start_line}, column ${loc.start_column})` : '';
    this.errorBox.append(
      h('strong', {}, `${event.title || event.code}${where}`),
      h('div', {}, event.message),
    );
    if (loc) this.errorBox.append(h('button.link', { type: 'button', onclick: () => this.editor.showError(loc, event.message) }, 'Show in editor'));
    if (loc) this.editor.showError(loc, event.message);
  }

  // -- results ------------------------------------------------------------------------------
  private renderResults(): void {
    const names = [...this.shown.keys()];
    const vis = this.visualization && CHART_KINDS.includes(this.visualization.type.toLowerCase()) ? this.visualization : null;
    const tabNames = vis ? ['Chart', ...names] : names;
    if (!tabNames.includes(this.activeTab)) this.activeTab = tabNames[0] ?? '';
    // Re-use grids and the chart between snapshots: only their data changes (no layout jump).
    const currentTabs = [...this.tabs.children].map((t) => (t as HTMLElement).dataset.tab);
    if (currentTabs.join('\u0000') !== tabNames.join('\u0000')) {
      clear(this.tabs);
      for (const name of tabNames) {
        this.tabs.appendChild(h('button.tab', { type: 'button', role: 'tab', 'data-tab': name, onclick: () => this.selectTab(name) }, name));
      }
    }
    for (const name of names) {
      let grid = this.grids.get(name);
      if (!grid) {
        grid = new ResultGrid(name);
        this.grids.set(name, grid);
        const pane = h(
          'div.pane',
          { 'data-pane': name },
          h('div.pane-bar', {}, h('span.row-count'), h('span.spacer'), h('button', { type: 'button', onclick: () => grid!.exportCsv() }, 'Export CSV')),
          grid.element,
        );
        this.panes.appendChild(pane);
      }
      const data = this.shown.get(name)!;
      grid.setData(data.columns, data.rows);
      const pane = this.panes.querySelector<HTMLElement>(`[data-pane="${CSS.escape(name)}"] .row-count`);
      if (pane) pane.textContent = `${fmtNumber(data.rows.length)} rows`;
    }
    for (const [name, grid] of this.grids) {
      if (!this.shown.has(name)) {
        grid.element.parentElement?.remove();
        this.grids.delete(name);
      }
    }
    if (vis) {
      if (!this.chart) {
        this.chart = new ResultChart();
        this.panes.prepend(h('div.pane', { 'data-pane': 'Chart' }, this.chart.element));
      }
    } else if (this.chart) {
      this.chart.element.parentElement?.remove();
      this.chart.dispose();
      this.chart = null;
    }
    this.selectTab(this.activeTab);
    if (vis) this.redrawChart();
  }

  private redrawChart(): void {
    const vis = this.visualization;
    if (!vis || !this.chart) return;
    const table = (vis as { table?: string }).table;
    const data = (table && this.shown.get(table)) || this.shown.values().next().value;
    if (data) this.chart.draw(vis, data.columns, data.rows, this.isDark());
  }

  private selectTab(name: string): void {
    this.activeTab = name;
    for (const tab of this.tabs.children) tab.setAttribute('aria-selected', String((tab as HTMLElement).dataset.tab === name));
    for (const pane of this.panes.children) (pane as HTMLElement).hidden = (pane as HTMLElement).dataset.pane !== name;
    if (name === 'Chart') this.chart?.resize();
  }
}
