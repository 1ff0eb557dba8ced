// Dashboards: a named grid of saved library queries, each drawn with its `render`
// visualization (or as a table), refreshed together over one time range. Create, edit (add,
// remove, resize, reorder panels; rename), share by URL (`/dashboards/<id>?from=…&to=…`).
import { api } from './api';
import { CHART_KINDS, ResultChart } from './chart';
import { clear, copyText, h, toast } from './dom';
import { fmtInstant, fmtNumber, onZoneChange } from './format';
import { ResultGrid } from './grid';
import { listSaved, type SavedQuery } from './library';
import { runQuery } from './run';
import { TimePicker } from './timepicker';
import { DEFAULT_RANGE, fromRequest, rangeLabel, toRequest, type TimeRange } from './timerange';
import { navigateTo, readParams, writeParams } from './urlstate';

interface Panel {
  query_id: string;
  title: string;
  width: number;
  query?: Pick<SavedQuery, 'id' | 'name' | 'query' | 'database' | 'since' | 'until' | 'folder'> | null;
}

interface Dashboard {
  id: string;
  name: string;
  description: string;
  since: string | null;
  until: string | null;
  owner: string;
  owner_name?: string;
  updated_at: string;
  panels: Panel[];
}

/** The list of dashboards, with "New dashboard". */
export class DashboardListPage {
  readonly element: HTMLElement;
  private list = h('div.dash-list', { 'data-testid': 'dashboard-list' });

  constructor() {
    const name = h('input#new-dashboard-name', { placeholder: 'Dashboard name', 'aria-label': 'New dashboard name', required: true, maxlength: 256 });
    this.element = h(
      'div.dashboards',
      {},
      h('h1', {}, 'Dashboards'),
      h(
        'form.inline-form',
        {
          onsubmit: async (e: Event) => {
            e.preventDefault();
            try {
              const answer = await api<{ dashboard: Dashboard }>('POST', '/api/v1/dashboards', { name: name.value, since: '24h ago', panels: [] });
              navigateTo(`/dashboards/${answer.dashboard.id}?edit=1`);
            } catch (err) {
              toast((err as Error).message, 'error');
            }
          },
        },
        name,
        h('button.primary', { type: 'submit' }, 'New dashboard'),
      ),
      this.list,
    );
    void this.load();
  }

  private async load(): Promise<void> {
    try {
      const answer = await api<{ dashboards: Dashboard[] }>('GET', '/api/v1/dashboards');
      clear(this.list);
      if (!answer.dashboards.length) this.list.append(h('p.muted', {}, 'No dashboards yet: name one above, then add saved queries to it.'));
      const table = h('table.list', {}, h('tr', {}, h('th', {}, 'Name'), h('th', {}, 'Panels'), h('th', {}, 'Time range'), h('th', {}, 'Owner'), h('th', {}, 'Updated')));
      for (const d of answer.dashboards) {
        const range = fromRequest(d.since, d.until);
        table.append(
          h(
            'tr',
            { 'data-dashboard': d.id },
            h('td', {}, h('a', { href: `/dashboards/${d.id}`, onclick: (e: Event) => (e.preventDefault(), navigateTo(`/dashboards/${d.id}`)) }, d.name), d.description ? h('div.muted', {}, d.description) : null),
            h('td', {}, String(d.panels.length)),
            h('td', {}, range ? rangeLabel(range) : '—'),
            h('td.muted', { title: d.owner }, d.owner_name || d.owner),
            h('td.muted', {}, fmtInstant(Date.parse(d.updated_at), { seconds: false })),
          ),
        );
      }
      if (answer.dashboards.length) this.list.append(table);
    } catch (e) {
      this.list.append(h('p.error-text', {}, (e as Error).message));
    }
  }
}

/** One dashboard: its panels over one time range. */
export class DashboardPage {
  readonly element: HTMLElement;
  private grid = h('div.dash-grid', { 'data-testid': 'dashboard-grid' });
  private title = h('h1.dash-title');
  private nameInput = h('input.dash-name', { 'aria-label': 'Dashboard name', maxlength: 256 });
  private descriptionInput = h('input.dash-description', { 'aria-label': 'Dashboard description', placeholder: 'Description', maxlength: 4096 });
  private editBar = h('div.dash-edit-bar', { hidden: true });
  private picker: TimePicker;
  private dashboard: Dashboard | null = null;
  private editing = false;
  private runs: AbortController | null = null;

  constructor(
    private id: string,
    private isDark: () => boolean,
  ) {
    const params = readParams();
    this.picker = new TimePicker(params.range ?? DEFAULT_RANGE, () => this.refresh(true), 'dash-time-range');
    this.editing = new URLSearchParams(location.search).get('edit') === '1';
    const editButton = h('button', { type: 'button', 'data-testid': 'dash-edit', onclick: () => this.toggleEdit(editButton) }, this.editing ? 'Done' : '✎ Edit');
    this.element = h(
      'div.dashboard',
      { 'data-testid': 'dashboard', 'data-id': id },
      h(
        'div.toolbar',
        {},
        h('a', { href: '/dashboards', onclick: (e: Event) => (e.preventDefault(), navigateTo('/dashboards')) }, '← Dashboards'),
        this.title,
        h('span.spacer'),
        h('label.field', {}, 'Time ', this.picker.element),
        h('button', { type: 'button', 'data-testid': 'dash-refresh', onclick: () => this.refresh(false) }, 'Refresh'),
        h('button', { type: 'button', 'data-testid': 'dash-share', title: 'Copy a link to this dashboard and time range', onclick: () => void this.share() }, 'Share link'),
        editButton,
      ),
      this.editBar,
      this.grid,
    );
    onZoneChange(() => this.refresh(false));
    void this.load();
  }

  private async load(): Promise<void> {
    try {
      const answer = await api<{ dashboard: Dashboard }>('GET', `/api/v1/dashboards/${encodeURIComponent(this.id)}`);
      this.dashboard = answer.dashboard;
      if (!readParams().range) {
        const saved = fromRequest(this.dashboard.since, this.dashboard.until);
        if (saved) this.picker.range = saved;
      }
      this.render();
      this.refresh(false);
    } catch (e) {
      clear(this.grid);
      this.grid.append(h('p.error-text', {}, (e as Error).message));
    }
  }

  private toggleEdit(button: HTMLButtonElement): void {
    if (this.editing) void this.save();
    this.editing = !this.editing;
    button.textContent = this.editing ? 'Done' : '✎ Edit';
    writeParams({ edit: this.editing ? '1' : undefined }, false);
    this.render();
    this.refresh(false);
  }

  private async share(): Promise<void> {
    const p = new URLSearchParams({ from: this.picker.range.from, to: this.picker.range.to });
    const url = `${location.origin}/dashboards/${this.id}?${p}`;
    this.element.dataset.shared = url;
    await copyText(url);
    toast('Link copied');
  }

  /** Saves the dashboard; `announce` for the Save button (edits save quietly as they happen). */
  private async save(announce = false): Promise<void> {
    const d = this.dashboard;
    if (!d) return;
    const bounds = toRequest(this.picker.range);
    try {
      const answer = await api<{ dashboard: Dashboard }>('PUT', `/api/v1/dashboards/${d.id}`, {
        name: this.nameInput.value.trim() || d.name,
        description: this.descriptionInput.value,
        since: bounds.since,
        until: bounds.until ?? null,
        panels: d.panels.map((p) => ({ query_id: p.query_id, title: p.title, width: p.width })),
      });
      this.dashboard = answer.dashboard;
      this.element.dataset.saved = answer.dashboard.updated_at;
      if (announce) toast(`Saved "${answer.dashboard.name}"`);
      this.render();
    } catch (e) {
      toast((e as Error).message, 'error');
    }
  }

  private render(): void {
    const d = this.dashboard;
    if (!d) return;
    this.title.textContent = d.name;
    this.element.dataset.panels = String(d.panels.length);
    this.editBar.hidden = !this.editing;
    clear(this.editBar);
    if (this.editing) {
      this.nameInput.value = d.name;
      this.descriptionInput.value = d.description;
      // data-state says when the library's queries are listed (they load after the bar shows).
      const picker = h(
        'select#dash-add-query',
        { 'aria-label': 'Saved query to add', 'data-state': 'loading' },
        h('option', { value: '' }, 'Add a saved query…'),
      );
      void listSaved()
        .then((queries) => {
          for (const q of queries) picker.append(h('option', { value: q.id }, `${q.folder ? q.folder + '/' : ''}${q.name}`));
        })
        .finally(() => {
          picker.dataset.state = 'ready';
        });
      picker.addEventListener('change', () => {
        if (!picker.value) return;
        d.panels.push({ query_id: picker.value, title: '', width: 1 });
        void this.save().then(() => this.refresh(false));
      });
      this.editBar.append(
        h('label.field', {}, 'Name ', this.nameInput),
        h('label.field.grow', {}, 'Description ', this.descriptionInput),
        picker,
        h('button.primary', { type: 'button', 'data-testid': 'dash-save', onclick: () => void this.save(true) }, 'Save'),
        h(
          'button.danger',
          {
            type: 'button',
            onclick: async () => {
              if (!confirm(`Delete the dashboard "${d.name}"?`)) return;
              await api('DELETE', `/api/v1/dashboards/${d.id}`).catch((e) => toast((e as Error).message, 'error'));
              navigateTo('/dashboards');
            },
          },
          'Delete dashboard',
        ),
      );
    }
  }

  /** Runs every panel's query over the dashboard's one time range, all at once. */
  refresh(rangeChanged: boolean): void {
    const d = this.dashboard;
    if (!d) return;
    if (rangeChanged) writeParams({ range: this.picker.range }, false);
    this.runs?.abort();
    const runs = new AbortController();
    this.runs = runs;
    clear(this.grid);
    if (!d.panels.length) {
      this.grid.append(h('p.muted.dash-empty', {}, this.editing ? 'Add saved queries with the picker above.' : 'This dashboard has no panels yet: Edit to add saved queries.'));
      return;
    }
    let pending = d.panels.length;
    this.element.dataset.state = 'running';
    d.panels.forEach((panel, index) => {
      const view = this.panelView(d, panel, index);
      this.grid.append(view.element);
      void view.run(this.picker.range, runs.signal).finally(() => {
        if (--pending === 0 && this.runs === runs) {
          this.element.dataset.state = 'done';
          this.element.dataset.refreshed = String(Number(this.element.dataset.refreshed ?? 0) + 1);
        }
      });
    });
  }

  private panelView(d: Dashboard, panel: Panel, index: number): { element: HTMLElement; run: (range: TimeRange, signal: AbortSignal) => Promise<void> } {
    const body = h('div.panel-body');
    const status = h('span.muted.panel-status');
    const q = panel.query;
    const title = panel.title || q?.name || '(deleted query)';
    const controls = this.editing
      ? h(
          'span.panel-controls',
          {},
          h(
            'select',
            {
              'aria-label': 'Panel width',
              onchange: (e: Event) => {
                panel.width = Number((e.target as HTMLSelectElement).value);
                void this.save().then(() => this.refresh(false));
              },
            },
            ...[1, 2, 3].map((w) => h('option', { value: String(w), selected: w === panel.width }, `${w} col`)),
          ),
          h('button.link', { type: 'button', 'aria-label': 'Move left', disabled: index === 0, onclick: () => this.move(index, -1) }, '←'),
          h('button.link', { type: 'button', 'aria-label': 'Move right', disabled: index === d.panels.length - 1, onclick: () => this.move(index, 1) }, '→'),
          h(
            'button.link',
            {
              type: 'button',
              'aria-label': `Remove ${title}`,
              onclick: () => {
                d.panels.splice(index, 1);
                void this.save().then(() => this.refresh(false));
              },
            },
            '✕',
          ),
        )
      : null;
    const element = h(
      'section.panel',
      { 'data-panel': String(index), 'data-query-id': panel.query_id, style: { gridColumn: `span ${panel.width}` } },
      h('div.panel-head', {}, h('strong.panel-title', { title: q?.query ?? '' }, title), status, h('span.spacer'), controls),
      body,
    );
    const run = async (range: TimeRange, signal: AbortSignal) => {
      if (!q) {
        body.append(h('p.error-text', {}, 'The saved query of this panel was deleted, or reads a database you may not query.'));
        element.dataset.state = 'error';
        return;
      }
      element.dataset.state = 'running';
      status.textContent = 'running…';
      try {
        const result = await runQuery({ query: q.query, database: q.database || 'default', ...toRequest(range), timezone: 'UTC' }, { signal });
        const vis = result.visualization && CHART_KINDS.includes(result.visualization.type.toLowerCase()) ? result.visualization : null;
        const table = (vis?.table && result.tables.get(vis.table)) || result.tables.get('PrimaryResult') || [...result.tables.values()][0];
        clear(body);
        if (vis && table) {
          const chart = new ResultChart();
          body.append(chart.element);
          chart.draw(vis, table.columns, table.rows, this.isDark());
          element.dataset.kind = vis.type;
        } else if (table) {
          const grid = new ResultGrid(title);
          grid.setData(table.columns, table.rows, true);
          body.append(grid.element);
          element.dataset.kind = 'table';
        }
        element.dataset.rows = String(table?.rows.length ?? 0);
        status.textContent = `${fmtNumber(table?.rows.length ?? 0)} rows · ${rangeLabel(range)}${result.status !== 'complete' ? ` · ${result.status}` : ''}`;
        element.dataset.state = 'done';
      } catch (e) {
        if (signal.aborted) return;
        clear(body);
        body.append(h('p.error-text', {}, (e as Error).message));
        status.textContent = '';
        element.dataset.state = 'error';
      }
    };
    return { element, run };
  }

  private move(index: number, by: number): void {
    const d = this.dashboard;
    if (!d) return;
    const [panel] = d.panels.splice(index, 1);
    d.panels.splice(index + by, 0, panel);
    void this.save().then(() => this.refresh(false));
  }
}
