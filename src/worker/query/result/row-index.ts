/**
 * The row index of a result CSV: entry k is the byte offset where data row
 * k × ROW_INDEX_STRIDE starts (entry 0: just after the header), as a
 * little-endian float64 (exact to 2^53 bytes). Fixed-width entries let a
 * reader fetch the two it needs with one small range request, so a page in
 * the middle of a large result reads neither the index nor the CSV whole.
 */
export const ROW_INDEX_STRIDE = 1000;
const ENTRY_BYTES = 8;

/** Collects the offsets as the writer goes; holds 8 bytes per 1,000 rows. */
export class RowIndexBuilder {
  private offsets: number[] = [];

  /** Whether data row `row` (from 0) starts an entry. */
  static starts(row: number): boolean {
    return row % ROW_INDEX_STRIDE === 0;
  }

  add(offset: number): void {
    this.offsets.push(offset);
  }

  bytes(): Uint8Array {
    const out = new Uint8Array(this.offsets.length * ENTRY_BYTES);
    const view = new DataView(out.buffer);
    this.offsets.forEach((offset, i) => view.setFloat64(i * ENTRY_BYTES, offset, true));
    return out;
  }
}

/** The bytes of CSV that hold data rows [first, end) of a result of `rowCount` rows and `size` bytes. */
export interface RowSpan {
  /** Byte offset of the index entry at or before `first`. */
  offset: number;
  /** Byte offset just past row `end - 1` (or further, up to the next entry). */
  end: number;
  /** Rows between `offset` and row `first`, to skip. */
  skip: number;
}

/**
 * Where rows [first, end) lie, reading only the index entries around them
 * (`readEntries(byteOffset, byteLength)` is a range read of the index object).
 */
export async function rowSpan(
  first: number,
  end: number,
  result: { rowCount: number; size: number },
  readEntries: (offset: number, length: number) => Promise<Uint8Array | null>,
): Promise<RowSpan | null> {
  const entries = Math.ceil(result.rowCount / ROW_INDEX_STRIDE);
  const from = Math.floor(first / ROW_INDEX_STRIDE);
  // The entry at or after `end`, if there is one; past the last entry the rows run to the end of the file.
  const to = Math.min(Math.ceil(end / ROW_INDEX_STRIDE), entries);
  const count = (to < entries ? to : entries - 1) - from + 1;
  const bytes = await readEntries(from * ENTRY_BYTES, count * ENTRY_BYTES);
  if (!bytes || bytes.byteLength !== count * ENTRY_BYTES) return null;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const entry = (k: number) => view.getFloat64((k - from) * ENTRY_BYTES, true);
  return {
    offset: entry(from),
    end: to < entries ? entry(to) : result.size,
    skip: first - from * ROW_INDEX_STRIDE,
  };
}
