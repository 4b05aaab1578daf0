/** Compares result rows from two engines: cell by cell, numbers within a relative tolerance. */

export interface RowOrder {
  /** The query orders its result by a key unique in the result: rows must come in the same order. */
  ordered: boolean;
  /**
   * The query ends with ORDER BY <column> LIMIT n on a column that may tie:
   * rows tied with the last row's value at the cut may differ between engines,
   * so only their number is compared.
   */
  tieColumn?: number;
}

const RELATIVE_TOLERANCE = 1e-9;
const TIMESTAMP = /^(\d{4}-\d\d-\d\d) (\d\d:\d\d(:\d\d(\.\d+)?)?)$/;

/** One spelling per value: dqs and DuckDB print timestamps with a space where sqlite3 keeps the file's `T`. */
function normalize(cell: string): string {
  const ts = cell.match(TIMESTAMP);
  return ts ? `${ts[1]}T${ts[2]}` : cell;
}

function isNumber(cell: string): boolean {
  return cell.trim() !== "" && Number.isFinite(Number(cell));
}

function sameCell(a: string, b: string): boolean {
  a = normalize(a);
  b = normalize(b);
  if (a === b) return true;
  if (isNumber(a) && isNumber(b)) {
    const x = Number(a);
    const y = Number(b);
    return Math.abs(x - y) <= RELATIVE_TOLERANCE * Math.max(1, Math.abs(x), Math.abs(y));
  }
  return false;
}

/** A sort key that is stable across engines' number spellings. */
function rowKey(row: string[]): string {
  return row
    .map((cell) => (isNumber(cell) ? Number(Number(cell).toPrecision(12)).toString() : normalize(cell)))
    .join("\u0001");
}

function sameRow(a: string[], b: string[]): boolean {
  return a.length === b.length && a.every((cell, i) => sameCell(cell, b[i]!));
}

/**
 * Null when `actual` and `expected` (each a header row, then data rows)
 * hold the same data rows, else a short description of the first
 * difference. Headers are not compared (engines name `count(*)` differently).
 */
export function compareRows(actual: string[][], expected: string[][], order: RowOrder): string | null {
  let a = actual.slice(1);
  let b = expected.slice(1);
  if (a.length !== b.length) return `${a.length} rows against ${b.length}`;
  if (order.tieColumn !== undefined && a.length > 0) {
    const column = order.tieColumn;
    const cut = a[a.length - 1]![column]!;
    if (!sameCell(cut, b[b.length - 1]![column]!))
      return `last ${column}th value ${cut} against ${b[b.length - 1]![column]}`;
    const tiedA = a.filter((row) => sameCell(row[column]!, cut)).length;
    const tiedB = b.filter((row) => sameCell(row[column]!, cut)).length;
    if (tiedA !== tiedB) return `${tiedA} rows tied at the cut against ${tiedB}`;
    a = a.filter((row) => !sameCell(row[column]!, cut));
    b = b.filter((row) => !sameCell(row[column]!, cut));
  }
  if (!order.ordered) {
    const byKey = (x: string[], y: string[]) => (rowKey(x) < rowKey(y) ? -1 : rowKey(x) > rowKey(y) ? 1 : 0);
    a = [...a].sort(byKey);
    b = [...b].sort(byKey);
  }
  for (let i = 0; i < a.length; i++)
    if (!sameRow(a[i]!, b[i]!)) return `row ${i + 1}: ${JSON.stringify(a[i])} against ${JSON.stringify(b[i])}`;
  return null;
}
