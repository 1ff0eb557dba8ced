// Running a query to its end for views that show the final answer (tracing, logs context,
// dashboards): the last complete snapshot's tables, its visualization and the run's status.
import { streamQuery, type QueryRequest, type StreamEvent } from './api';
import type { GridColumn } from './grid';

export interface ResultTable {
  columns: GridColumn[];
  rows: unknown[][];
}

export interface QueryResult {
  tables: Map<string, ResultTable>;
  visualization: { type: string; properties: Record<string, unknown>; table?: string } | null;
  status: string;
  error: Extract<StreamEvent, { type: 'error' }> | null;
}

export class QueryFailed extends Error {
  constructor(readonly event: Extract<StreamEvent, { type: 'error' }>) {
    super(`${event.title || event.code}: ${event.message}`);
  }
}

/**
 * Runs `request` and resolves with its final snapshot. `onSnapshot` sees every complete
 * snapshot on the way (progressive views); an error event rejects with QueryFailed.
 */
export async function runQuery(
  request: QueryRequest,
  options: { signal?: AbortSignal; onSnapshot?: (result: QueryResult) => void; onProgress?: (coverage: number) => void } = {},
): Promise<QueryResult> {
  const schemas = new Map<string, GridColumn[]>();
  let pending: { iteration: string; tables: Map<string, unknown[][]> } | null = null;
  const result: QueryResult = { tables: new Map(), visualization: null, status: 'complete', error: null };
  const commit = () => {
    if (!pending) return;
    const tables = new Map<string, ResultTable>();
    for (const [name, columns] of schemas) tables.set(name, { columns, rows: pending.tables.get(name) ?? [] });
    result.tables = tables;
    pending = null;
    options.onSnapshot?.(result);
  };
  await streamQuery(
    request,
    (event) => {
      if (event.type === 'schema') schemas.set(event.table, event.columns);
      else if (event.type === 'rows') {
        if (!pending || pending.iteration !== event.iteration) pending = { iteration: event.iteration, tables: new Map() };
        const rows = pending.tables.get(event.table) ?? [];
        for (const row of event.rows) rows.push(row);
        pending.tables.set(event.table, rows);
      } else if (event.type === 'metadata') {
        if (event.visualization) result.visualization = event.visualization;
        if (!pending || pending.iteration !== event.iteration) pending = { iteration: event.iteration, tables: new Map() };
        commit();
      } else if (event.type === 'progress') options.onProgress?.(event.coverage);
      else if (event.type === 'done') {
        commit();
        result.status = event.status;
      } else if (event.type === 'error') result.error = event;
    },
    options.signal ?? new AbortController().signal,
  );
  if (result.error) throw new QueryFailed(result.error);
  commit();
  return result;
}

/** The rows of a result's first table as objects keyed by column name. */
export function records(table: ResultTable | undefined): Record<string, unknown>[] {
  if (!table) return [];
  return table.rows.map((row) => Object.fromEntries(table.columns.map((c, i) => [c.name, row[i]])));
}

/** A KQL string literal for any text (escapes quotes and backslashes). */
export function kqlString(text: string): string {
  return `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;
}

/** A table name as KQL: bare when it is an identifier, else ['quoted']. */
export function kqlTable(name: string): string {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) ? name : `['${name.replace(/'/g, "\\'")}']`;
}
