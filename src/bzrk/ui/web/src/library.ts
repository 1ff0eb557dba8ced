// The query library's save/edit dialog (name, folder, description, database, time range, text)
// and the library's API calls. Saved queries live in the gateway's metadata store.
import { api } from './api';
import { h } from './dom';
import { fromRequest, parseRange, rangeText, toRequest, type TimeRange } from './timerange';

export interface SavedQuery {
  id: string;
  folder: string;
  name: string;
  query: string;
  description: string;
  database: string | null;
  since: string | null;
  until: string | null;
  owner: string;
  created_at: string;
  updated_at: string;
}

export async function listSaved(): Promise<SavedQuery[]> {
  return (await api<{ queries: SavedQuery[] }>('GET', '/api/v1/library/queries')).queries;
}

/** A saved query's time range, when it has one that reads as a range. */
export function savedRange(q: Pick<SavedQuery, 'since' | 'until'>): TimeRange | null {
  return fromRequest(q.since, q.until);
}

export interface DialogValues {
  name: string;
  folder: string;
  description: string;
  database: string;
  query: string;
  range: TimeRange | null;
}

/**
 * Opens the save dialog. With `existing` it edits (rename, move, change text or range) and
 * PUTs; otherwise it POSTs a new query. Resolves with the saved query, or null when cancelled.
 */
export function openSaveDialog(initial: DialogValues, databases: string[], existing?: SavedQuery): Promise<SavedQuery | null> {
  return new Promise((resolve) => {
    const name = h('input#save-name', { required: true, value: initial.name, maxlength: 256, autocomplete: 'off' });
    const folder = h('input#save-folder', { value: initial.folder, list: 'save-folders', placeholder: 'team/oncall (empty: the root)', maxlength: 256, autocomplete: 'off' });
    const folders = h('datalist#save-folders');
    const description = h('textarea#save-description', { rows: 2, maxlength: 4096 });
    description.value = initial.description;
    const database = h('select#save-database', {}, ...databases.map((d) => h('option', { value: d, selected: d === initial.database }, d)));
    const keepRange = h('input#save-keep-range', { type: 'checkbox', checked: initial.range !== null });
    const range = h('input#save-range', { value: initial.range ? rangeText(initial.range) : 'now-1h', disabled: initial.range === null, spellcheck: false });
    keepRange.addEventListener('change', () => (range.disabled = !keepRange.checked));
    const query = h('textarea#save-query', { rows: 6, spellcheck: false, required: true });
    query.value = initial.query;
    const problem = h('p.error-text', { role: 'alert' });
    const dialog = h('dialog.save-dialog', { 'aria-labelledby': 'save-title' });
    const close = (value: SavedQuery | null) => {
      dialog.close();
      dialog.remove();
      resolve(value);
    };
    const form = h(
      'form',
      {
        method: 'dialog',
        onsubmit: async (e: Event) => {
          e.preventDefault();
          let chosen: TimeRange | null = null;
          if (keepRange.checked) {
            chosen = parseRange(range.value);
            if (!chosen) {
              problem.textContent = `Cannot read the time range "${range.value}" (try now-6h or 2h)`;
              return;
            }
          }
          const bounds = chosen ? toRequest(chosen) : { since: null, until: null };
          const body = {
            name: name.value.trim(),
            folder: folder.value,
            description: description.value,
            database: database.value || null,
            query: query.value,
            since: bounds.since,
            until: bounds.until ?? null,
          };
          try {
            const saved = existing
              ? await api<{ query: SavedQuery }>('PUT', `/api/v1/library/queries/${existing.id}`, body)
              : await api<{ query: SavedQuery }>('POST', '/api/v1/library/queries', body);
            close(saved.query);
          } catch (err) {
            problem.textContent = (err as Error).message;
          }
        },
      },
      h('h2#save-title', {}, existing ? `Edit “${existing.name}”` : 'Save query'),
      h('label', { for: 'save-name' }, 'Name'),
      name,
      h('label', { for: 'save-folder' }, 'Folder'),
      folder,
      folders,
      h('label', { for: 'save-description' }, 'Description'),
      description,
      h('div.form-row', {}, h('label', { for: 'save-database' }, 'Database'), database),
      h('div.form-row', {}, h('label', {}, keepRange, ' Time range'), range),
      h('label', { for: 'save-query' }, 'Query'),
      query,
      problem,
      h(
        'div.dialog-actions',
        {},
        h('button', { type: 'button', onclick: () => close(null) }, 'Cancel'),
        h('button.primary', { type: 'submit', 'data-testid': 'save-submit' }, existing ? 'Save changes' : 'Save'),
      ),
    );
    dialog.append(form);
    dialog.addEventListener('cancel', (e) => {
      e.preventDefault();
      close(null);
    });
    document.body.appendChild(dialog);
    dialog.showModal();
    name.focus();
    name.select();
    void api<{ folders: { folder: string }[] }>('GET', '/api/v1/library/folders')
      .then((answer) => folders.append(...answer.folders.filter((f) => f.folder).map((f) => h('option', { value: f.folder }))))
      .catch(() => undefined);
  });
}
