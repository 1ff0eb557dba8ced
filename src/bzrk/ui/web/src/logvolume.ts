// The query behind the logs view's volume histogram: the records the user's query matches over
// the time range, counted by time bin and severity, not only the rows its result returned.
// Pure text work (no imports): tests run it under Node.

// Stages that end a pipeline without changing which records match: row limits, order, shape and
// rendering. Dropped from the end of the query, so `| take 100` counts every match, not 100.
const TRAILING = new Set([
  'take',
  'limit',
  'sort',
  'order',
  'top',
  'project',
  'project-away',
  'project-keep',
  'project-rename',
  'project-reorder',
  'extend',
  'render',
  'serialize',
]);

/** The text split at top-level occurrences of `sep` (outside strings, brackets and comments). */
export function splitTopLevel(text: string, sep: '|' | ';'): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '/' && text[i + 1] === '/') {
      const end = text.indexOf('\n', i);
      i = end < 0 ? text.length : end + 1;
      continue;
    }
    if (c === '`' && text.startsWith('```', i)) {
      const end = text.indexOf('```', i + 3);
      i = end < 0 ? text.length : end + 3;
      continue;
    }
    if (c === '"' || c === "'") {
      // A verbatim string (@"...") has no escapes; a doubled quote is one quote in it.
      const verbatim = text[i - 1] === '@';
      i++;
      while (i < text.length && text[i] !== c) {
        if (text[i] === '\\' && !verbatim) i++;
        else if (text[i] === '\n') break;
        i++;
      }
      i++;
      continue;
    }
    if (c === '(' || c === '[' || c === '{') depth++;
    else if (c === ')' || c === ']' || c === '}') depth = Math.max(0, depth - 1);
    else if (c === sep && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
    i++;
  }
  parts.push(text.slice(start));
  return parts;
}

/**
 * The user's query with its trailing row-limiting and shaping stages removed, counted by
 * `bin(timestamp, step)` and severity; null when nothing is left to count (e.g. no pipeline).
 * `step` is a KQL timespan literal such as `5m`.
 */
export function volumeQuery(query: string, step: string): string | null {
  const statements = splitTopLevel(query, ';');
  while (statements.length > 1 && !statements[statements.length - 1].trim()) statements.pop();
  const last = statements[statements.length - 1];
  const stages = splitTopLevel(last, '|');
  while (stages.length > 1) {
    const word = /^\s*([a-z][a-z-]*)/i.exec(stages[stages.length - 1])?.[1]?.toLowerCase() ?? '';
    if (!TRAILING.has(word)) break;
    stages.pop();
  }
  const kept = stages.join('|').replace(/\s+$/, '');
  if (!kept.trim()) return null;
  const counted = `${kept}\n| summarize n = count() by t = bin(timestamp, ${step}), s = tostring(column_ifexists("severity_text", ""))`;
  return [...statements.slice(0, -1), counted].join(';');
}
