// The query block under the cursor, as Kusto.Explorer and the ADX web UI pick it: the lines
// around the cursor up to the nearest blank lines. Pure, for the editor and for tests.

export interface Block {
  text: string;
  /** 1-based first and last line of the block. */
  startLine: number;
  endLine: number;
}

/** The blank-line-separated block containing `line` (1-based); a blank line picks the next one. */
export function blockAt(text: string, line: number): Block {
  const lines = text.split('\n');
  const blank = (i: number) => lines[i] === undefined || lines[i].trim() === '';
  let at = Math.min(Math.max(line - 1, 0), lines.length - 1);
  // On a blank line: the block above when there is one directly above, else the one below.
  if (blank(at)) {
    let up = at;
    while (up >= 0 && blank(up)) up--;
    let down = at;
    while (down < lines.length && blank(down)) down++;
    at = up >= 0 && at - up <= 1 ? up : down < lines.length ? down : up;
    if (at < 0) return { text: '', startLine: line, endLine: line };
  }
  let start = at;
  while (start > 0 && !blank(start - 1)) start--;
  let end = at;
  while (end < lines.length - 1 && !blank(end + 1)) end++;
  return { text: lines.slice(start, end + 1).join('\n'), startLine: start + 1, endLine: end + 1 };
}
