// Which of monaco-kusto's diagnostics are false alarms in Berserk's dialect. monaco-kusto checks
// against Kusto's own catalogue, so Berserk's built-ins (`otel_rate($raw)`, `log_template_hash`,
// the `asXXX` extractors), the `$raw` record and permissive names (a bare unknown field reads
// `$raw.<name>`) would all be underlined as errors in the vendor's own queries. The server's
// binder still reports real errors, located, when the query runs. Pure (no DOM): tests/ui runs it.

/** Berserk's built-ins that Kusto's catalogue lacks: the names of `bzrk/kql/catalog/berserk.py`
 * (tests/ui/test_editor_diagnostics.py checks the two lists agree). */
export const BERSERK_FUNCTIONS: readonly string[] = [
  'asbool', 'asdatetime', 'asdouble', 'asint', 'aslong', 'asreal', 'asstring', 'astimespan',
  'bin_auto', 'deriv', 'extract_log_template', 'log_template', 'log_template_hash',
  'log_template_regex', 'otel_delta', 'otel_histogram_merge', 'otel_histogram_percentile',
  'otel_increase', 'otel_rate', 'rate', 'series_avg', 'series_max', 'series_min', 'series_sum',
  'unixtime_nanoseconds_todatetime',
];

const UNKNOWN_FUNCTION = /^The name '([^']+)' does not refer to any known function\.?$/;
// Kusto's message for an unknown name where a row value is expected (a table position reads
// "… any known table, tabular variable or function" and stays an error).
const UNKNOWN_ROW_NAME = 'does not refer to any known column, table, variable or function';

/** Whether Berserk's dialect accepts what this monaco-kusto diagnostic objects to. */
export function berserkAccepts(message: string): boolean {
  if (message.includes("'$raw")) return true;
  if (message.includes(UNKNOWN_ROW_NAME)) return true;
  const unknown = UNKNOWN_FUNCTION.exec(message);
  return unknown !== null && BERSERK_FUNCTIONS.includes(unknown[1]);
}
