// The explorer's sidebar: the schema (tables, columns, discovered fields), the run history with
// each run's recorded status, and the query library (open, edit, rename, delete).
import { api } from './api';
import type { DiscoveredField } from './completion';
import { clear, h, toast } from './dom';
import { fmtInstant } from './format';
import type { SchemaTable } from './editor';
import { listSaved, openSaveDialog, savedRange, type SavedQuery } from './library';
import { fromRequest, isRelative, rangeLabel, type TimeRange } from './timerange';

export type SidebarMode = 'schema' | 'history' | 'library';

export interface OpenRequest {
  query: string;
  database: string | null;
  range: TimeRange | null;
  source: string;
}

export interface SidebarHost {
  database(): string;
  databases(): string[];
  tables(): SchemaTable[];
  fields(table: string): Promise<DiscoveredField[]>;
  insert(text: string): void;
  open(request: OpenRequest): void;
}

interface Run {
  id: string;
  query: string;
  database: string;
  status: string;
  started_at: string;
  duration_ms: number | null;
  error: string | null;
  parameters: { since?: string | null; until?: string | null } | null;
}

export class Sidebar {
  readonly element: HTMLElement;
  private body = h('div.sidebar-body');
  private mode: SidebarMode = 'schema';
  // Open tables ("db/table") stay open, with their fields loaded, when the schema redraws.
  private expanded = new Set<string>();

  constructor(private host: SidebarHost) {
    this.element = h(
      'aside.sidebar',
      { 'aria-label': 'Schema, history and library' },
      h(
        'div.sidebar-tabs',
        { role: 'tablist' },
        ...(['schema', 'history', 'library'] as const).map((mode) =>
          h('button', { type: 'button', role: 'tab', 'data-mode': mode, onclick: () => this.show(mode) }, mode[0].toUpperCase() + mode.slice(1)),
        ),
      ),
      this.body,
    );
  }

  show(mode: SidebarMode = this.mode): void {
    this.mode = mode;
    for (const tab of this.element.querySelectorAll<HTMLElement>('.sidebar-tabs button')) tab.setAttribute('aria-selected', String(tab.dataset.mode === mode));
    if (mode === 'schema') this.renderSchema();
    if (mode === 'history') void this.renderHistory();
    if (mode === 'library') void this.renderLibrary();
  }

  refresh(mode: SidebarMode): void {
    if (this.mode === mode) this.show(mode);
  }

  private renderSchema(): void {
    clear(this.body);
    const list = h('ul.tree', { role: 'tree' });
    for (const table of this.host.tables()) {
      const key = `${this.host.database()}/${table.name}`;
      const open = this.expanded.has(key);
      const fields = h('ul.fields', { hidden: !open });
      const node = h(
        'button.tree-node',
        {
          type: 'button',
          title: 'Show columns and discovered fields',
          'aria-expanded': String(open),
          onclick: () => {
            fields.hidden = !fields.hidden;
            if (fields.hidden) this.expanded.delete(key);
            else this.expanded.add(key);
            node.setAttribute('aria-expanded', String(!fields.hidden));
            node.firstChild!.textContent = fields.hidden ? '▸ ' : '▾ ';
            if (!fields.hidden && !fields.dataset.loaded) void this.loadFields(table, fields);
          },
          ondblclick: () => this.host.insert(table.name),
        },
        open ? '▾ ' : '▸ ',
        table.name,
      );
      list.appendChild(h('li', { role: 'treeitem' }, node, fields));
      if (open) void this.loadFields(table, fields);
    }
    this.body.append(h('div.sidebar-title', {}, this.host.database() || 'Schema'), list);
  }

  private async loadFields(table: SchemaTable, into: HTMLElement): Promise<void> {
    into.dataset.loaded = '1';
    for (const column of table.columns) {
      into.appendChild(h('li', {}, h('button.field-name', { type: 'button', onclick: () => this.host.insert(column.name) }, column.name), h('span.col-type', {}, column.type)));
    }
    const found = await this.host.fields(table.name);
    const declared = new Set(table.columns.map((c) => c.name));
    const discovered = found.filter((f) => !declared.has(f.path));
    if (discovered.length) into.appendChild(h('li.sub', {}, 'Discovered fields'));
    for (const field of discovered) {
      into.appendChild(
        h(
          'li',
          { title: `${field.path}: ${field.type}, in ${(field.frequency * 100).toFixed(0)}% of sampled rows` },
          h('button.field-name', { type: 'button', onclick: () => this.host.insert(field.path) }, field.path),
          h('span.col-type', {}, `${field.type} · ${(field.frequency * 100).toFixed(0)}%`),
        ),
      );
    }
  }

  private async renderHistory(): Promise<void> {
    clear(this.body);
    this.body.appendChild(h('div.sidebar-title', {}, 'Recent runs'));
    try {
      const answer = await api<{ runs: Run[] }>('GET', '/api/v1/runs?limit=50');
      const list = h('ul.history');
      for (const run of answer.runs) {
        const range = fromRequest(run.parameters?.since, run.parameters?.until);
        list.appendChild(
          h(
            'li',
            {},
            h(
              'button.history-item',
              {
                type: 'button',
                title: run.error ? `${run.query}\n\n${run.error}` : run.query,
                'data-run': run.id,
                onclick: () => this.host.open({ query: run.query, database: run.database, range, source: 'history' }),
              },
              h('code', {}, run.query.replace(/\s+/g, ' ').trim()),
              h(
                'span.history-meta',
                {},
                h('span.status', { 'data-status': run.status, title: run.error ?? run.status }, run.status),
                h('span.muted', {}, `${fmtInstant(Date.parse(run.started_at))}${run.duration_ms != null ? ` · ${Math.round(run.duration_ms)} ms` : ''}${range ? ` · ${isRelative(range) ? rangeLabel(range) : 'fixed range'}` : ''}`),
              ),
            ),
          ),
        );
      }
      if (!answer.runs.length) list.appendChild(h('li.muted', {}, 'No runs yet.'));
      this.body.appendChild(list);
    } catch (e) {
      this.body.appendChild(h('p.muted', {}, `History unavailable: ${(e as Error).message}`));
    }
  }

  private async renderLibrary(): Promise<void> {
    clear(this.body);
    this.body.appendChild(h('div.sidebar-title', {}, 'Query library'));
    try {
      const queries = await listSaved();
      const byFolder = new Map<string, SavedQuery[]>();
      for (const q of queries) byFolder.set(q.folder, [...(byFolder.get(q.folder) ?? []), q]);
      const tree = h('ul.tree');
      for (const [folder, items] of byFolder) {
        const list = h('ul.fields');
        for (const q of items) list.appendChild(this.libraryItem(q));
        tree.appendChild(h('li', {}, h('div.folder', {}, `▾ ${folder || '(root)'}`), list));
      }
      if (!queries.length) tree.appendChild(h('li.muted', {}, 'Nothing saved yet: use Save… above the editor.'));
      this.body.appendChild(tree);
    } catch (e) {
      this.body.appendChild(h('p.muted', {}, `Library unavailable: ${(e as Error).message}`));
    }
  }

  private libraryItem(q: SavedQuery): HTMLElement {
    const range = savedRange(q);
    return h(
      'li.library-item',
      { 'data-query-id': q.id },
      h(
        'button.field-name',
        {
          type: 'button',
          title: `${q.description ? q.description + '\n\n' : ''}${q.query}${range ? `\n\n${rangeLabel(range)}` : ''}`,
          onclick: () => this.host.open({ query: q.query, database: q.database, range, source: `library:${q.id}` }),
        },
        h('span.library-name', {}, q.name),
        range ? h('span.col-type', {}, rangeLabel(range)) : null,
      ),
      h(
        'button.link',
        {
          type: 'button',
          'aria-label': `Edit ${q.name}`,
          title: 'Edit, rename or move',
          onclick: async () => {
            const saved = await openSaveDialog(
              { name: q.name, folder: q.folder, description: q.description, database: q.database ?? this.host.database(), query: q.query, range },
              this.host.databases(),
              q,
            );
            if (saved) {
              toast(`Saved "${saved.name}"`);
              void this.renderLibrary();
            }
          },
        },
        '✎',
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
    );
  }
}
