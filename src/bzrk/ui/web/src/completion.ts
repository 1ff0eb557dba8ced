// Completion of dynamic paths: after `attributes.` (or `resource.`, `scope.`, `$raw.`, or a
// deeper path such as `attributes.http.`) the editor offers the paths field discovery found in
// the table's recent rows (GET /api/v1/databases/{db}/tables/{t}/fields).

export interface DiscoveredField {
  path: string;
  type: string;
  frequency: number;
}

const PATH_BEFORE_CURSOR = /((?:\$raw|[A-Za-z_][\w]*)(?:\.[A-Za-z_][\w-]*)*)\.([A-Za-z_][\w-]*)?$/;

/** The completions for the text of a line up to the cursor: [insert text, field][]. */
export function pathCompletions(linePrefix: string, fields: DiscoveredField[]): { label: string; field: DiscoveredField; leaf: boolean }[] {
  const m = PATH_BEFORE_CURSOR.exec(linePrefix);
  if (!m) return [];
  const base = m[1];
  const partial = m[2] ?? '';
  const prefix = `${base}.`;
  const out = new Map<string, { label: string; field: DiscoveredField; leaf: boolean }>();
  for (const field of fields) {
    if (!field.path.startsWith(prefix)) continue;
    const rest = field.path.slice(prefix.length);
    if (!rest.startsWith(partial)) continue;
    // Offer the whole remaining path (`http.route`) and, for deeper paths, the next segment.
    const key = rest;
    if (!out.has(key)) out.set(key, { label: rest, field, leaf: true });
  }
  return [...out.values()].sort((a, b) => b.field.frequency - a.field.frequency || a.label.localeCompare(b.label));
}

// The name being typed, outside a path (`summarize otel_` but not `attributes.otel_`).
const NAME_BEFORE_CURSOR = /(?:^|[^\w.$])([A-Za-z_]\w*)$/;

/** Berserk's own functions (``names``, which monaco-kusto's catalogue lacks) that complete the
 * name before the cursor. */
export function functionCompletions(linePrefix: string, names: readonly string[]): string[] {
  const m = NAME_BEFORE_CURSOR.exec(linePrefix);
  if (!m) return [];
  return names.filter((name) => name.startsWith(m[1]) && name !== m[1]);
}
