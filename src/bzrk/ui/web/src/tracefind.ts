// The trace-find query the Tracing tab's builder stands for, as data, and the KQL it emits.
// A chain of span-sets `{ … }` joined by relations (`>>`, `>`, `<<`, `<`, `~`, `::`, `and`, `or`),
// an optional `within` window and an optional `summarize` over each matching trace's rows.
// Pure functions, no DOM: tests/ui/test_tracefind_kql.py runs them under Node.

export type Relation = '>>' | '>' | '<<' | '<' | '~' | '::' | 'and' | 'or';

export const RELATIONS: [Relation, string][] = [
  ['>>', 'has descendant'],
  ['>', 'has child'],
  ['<<', 'has ancestor'],
  ['<', 'has parent'],
  ['~', 'has sibling'],
  ['::', 'has correlated log'],
  ['and', 'and (same trace)'],
  ['or', 'or (same trace)'],
];

/** What a predicate tests; `attribute` and `resource` take a path (`http.route`). */
export type Field = 'service' | 'span_name' | 'status' | 'kind' | 'duration' | 'attribute' | 'resource' | 'body' | 'severity' | 'search';

export const FIELDS: [Field, string][] = [
  ['service', 'service'],
  ['span_name', 'span name'],
  ['status', 'status'],
  ['kind', 'span kind'],
  ['duration', 'duration'],
  ['attribute', 'attribute'],
  ['resource', 'resource attribute'],
  ['body', 'log body'],
  ['severity', 'log severity'],
  ['search', 'free text'],
];

export type Op = '==' | '!=' | 'contains' | 'has' | 'startswith' | '>' | '>=' | '<' | '<=';

export const TEXT_OPS: Op[] = ['==', '!=', 'contains', 'has', 'startswith'];
export const NUMBER_OPS: Op[] = ['>', '>=', '<', '<=', '==', '!='];

export interface Predicate {
  field: Field;
  path?: string;
  op: Op;
  value: string;
}

export interface SpanSet {
  predicates: Predicate[];
}

export interface Step {
  relation: Relation;
  set: SpanSet;
}

export interface TraceQuery {
  table: string;
  first: SpanSet;
  steps: Step[];
  /** A KQL timespan (`5m`), empty for the engine's default. */
  within: string;
  /** What follows `summarize` (`count() by tostring(resource.service.name)`), empty for none. */
  summarize: string;
}

export class BuilderError extends Error {}

const TIMESPAN = /^\d+(\.\d+)?(d|h|m|s|ms|microsecond|tick)$/;
const PATH = /^[A-Za-z_][\w-]*(\.[A-Za-z_][\w-]*)*$/;

export function kqlString(text: string): string {
  return `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;
}

function tableRef(name: string): string {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) ? name : `['${name.replace(/'/g, "\\'")}']`;
}

/** A bag path as KQL member access: `attributes.http.route`, with ['x-y'] for odd keys. */
function member(bag: string, path: string): string {
  if (!PATH.test(path)) throw new BuilderError(`'${path}' is not an attribute path (letters, digits, _ and - separated by dots)`);
  return bag + path.split('.').map((part) => (/^[A-Za-z_]\w*$/.test(part) ? `.${part}` : `['${part}']`)).join('');
}

function compare(left: string, op: Op, value: string): string {
  return `${left} ${op} ${kqlString(value)}`;
}

/** One predicate as a KQL boolean expression over a span (or log) row. */
export function predicateKql(p: Predicate): string {
  const value = p.value.trim();
  switch (p.field) {
    case 'search':
      if (!value) throw new BuilderError('free-text search needs some text');
      return `search ${kqlString(value)}`;
    case 'duration':
      if (!TIMESPAN.test(value)) throw new BuilderError(`duration needs a timespan such as 250ms or 2s, not '${value}'`);
      if (!NUMBER_OPS.includes(p.op)) throw new BuilderError(`duration compares with ${NUMBER_OPS.join(' ')}`);
      return `duration ${p.op} ${value}`;
    case 'service':
      return compare('tostring(resource.service.name)', p.op, value);
    case 'span_name':
      return compare('span_name', p.op, value);
    case 'status':
      return compare('status_code', p.op, value.toUpperCase());
    case 'kind':
      return compare('span_kind', p.op, value.toUpperCase());
    case 'body':
      return compare('body', p.op, value);
    case 'severity':
      return compare('severity_text', p.op, value.toUpperCase());
    case 'attribute':
    case 'resource': {
      const bag = member(p.field === 'attribute' ? 'attributes' : 'resource', (p.path ?? '').trim());
      const numeric = NUMBER_OPS.includes(p.op) && !TEXT_OPS.includes(p.op) && value !== '' && Number.isFinite(Number(value));
      if (numeric) return `toreal(${bag}) ${p.op} ${Number(value)}`;
      if (!TEXT_OPS.includes(p.op)) throw new BuilderError(`'${p.op}' needs a number, not '${value}'`);
      return compare(`tostring(${bag})`, p.op, value);
    }
  }
}

export function spanSetKql(set: SpanSet): string {
  if (!set.predicates.length) return '{}';
  return `{ ${set.predicates.map(predicateKql).join(' and ')} }`;
}

/** The pattern part: `{ a } >> { b } :: { c }`. */
export function patternKql(q: Pick<TraceQuery, 'first' | 'steps'>): string {
  let text = spanSetKql(q.first);
  for (const step of q.steps) text += ` ${step.relation} ${spanSetKql(step.set)}`;
  return text;
}

/** The whole query, ready to run; throws BuilderError naming what to fix. */
export function toKql(q: TraceQuery): string {
  if (!q.table.trim()) throw new BuilderError('choose a table');
  const within = q.within.trim();
  if (within && !TIMESPAN.test(within)) throw new BuilderError(`within needs a timespan such as 5m, not '${within}'`);
  // bzrk's parser reads operator parameters as name=value (kql/parser_berserk.py).
  let op = `| trace-find ${patternKql(q)}`;
  if (within) op += ` within=${within}`;
  const summarize = q.summarize.trim().replace(/^summarize\s+/i, '');
  if (summarize) op += `\n    summarize ${summarize}`;
  return `${tableRef(q.table.trim())}\n${op}`;
}

export function emptyQuery(table: string): TraceQuery {
  return { table, first: { predicates: [] }, steps: [], within: '', summarize: '' };
}
