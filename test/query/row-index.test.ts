import { describe, expect, it } from "vitest";
import { ROW_INDEX_STRIDE, RowIndexBuilder, rowSpan } from "../../src/worker/query/result/row-index";
import { runEngine, type MemoryItem } from "../support/engine";

const encoder = new TextEncoder();

/** Where each data row of a result CSV starts, in bytes, found by walking its bytes (quotes and LF are ASCII). */
function rowStarts(csv: string): number[] {
  const bytes = encoder.encode(csv);
  const starts: number[] = [];
  let quoted = false;
  for (let i = 0; i < bytes.length; i++) {
    if (bytes[i] === 0x22) quoted = !quoted;
    else if (bytes[i] === 0x0a && !quoted && i + 1 < bytes.length) starts.push(i + 1);
  }
  return starts;
}

/** The offsets an index holds, decoded as the format says: little-endian float64s. */
function entries(index: Uint8Array): number[] {
  const view = new DataView(index.buffer, index.byteOffset, index.byteLength);
  return Array.from({ length: index.byteLength / 8 }, (_, k) => view.getFloat64(k * 8, true));
}

const ONE: MemoryItem = { columns: [["k", "INTEGER"]], data: "k\n1\n" };

/** 2,345 rows of uneven width: multibyte text, quoted commas and line breaks, NULLs. */
const SQL = `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 2344)
  SELECT i, CASE i % 3 WHEN 0 THEN 'ü日本' || i WHEN 1 THEN 'a,"b"' || char(10) || i END AS t, k
  FROM n, a.d.one ORDER BY i`;

describe("the row index a result is stored with", () => {
  it.each(["csv", "store"] as const)(
    "should hold the byte offset of every 1,000th row of the CSV (%s engine)",
    async (mode) => {
      const run = await runEngine(SQL, { "a.d.one": ONE }, { mode });

      expect(run.outcome.ok && run.outcome.rowCount).toBe(2345);
      expect(run.outcome.engine).toBe(mode === "store" ? "store" : "sqljs");
      const starts = rowStarts(run.csv);
      expect(starts).toHaveLength(2345);
      expect(entries(run.rowIndex!)).toEqual([starts[0], starts[1000], starts[2000]]);
    },
  );

  it("should be empty for an empty result", async () => {
    const run = await runEngine("SELECT k FROM a.d.one WHERE 0", { "a.d.one": ONE });

    expect(run.outcome.ok && run.outcome.rowCount).toBe(0);
    expect(run.rowIndex).toEqual(new Uint8Array(0));
  });
});

describe("rowSpan", () => {
  // A result of 2,500 rows whose row r starts at byte 10 + 7r, and ends at byte 17,510.
  const result = { rowCount: 2500, size: 10 + 7 * 2500 };
  const index = new RowIndexBuilder();
  for (let r = 0; r < result.rowCount; r += ROW_INDEX_STRIDE) index.add(10 + 7 * r);
  const bytes = index.bytes();

  async function spanOf(first: number, end: number) {
    const reads: [number, number][] = [];
    const span = await rowSpan(first, end, result, async (offset, length) => {
      reads.push([offset, length]);
      return bytes.slice(offset, offset + length);
    });
    return { span, reads };
  }

  it.each([
    // first, end, span, the index bytes read
    [0, 1000, { offset: 10, end: 7010, skip: 0 }, [[0, 16]]],
    [1000, 2000, { offset: 7010, end: 14010, skip: 0 }, [[8, 16]]],
    [2000, 2500, { offset: 14010, end: 17510, skip: 0 }, [[16, 8]]],
    [2400, 2500, { offset: 14010, end: 17510, skip: 400 }, [[16, 8]]],
    [999, 1001, { offset: 10, end: 14010, skip: 999 }, [[0, 24]]],
    [0, 2500, { offset: 10, end: 17510, skip: 0 }, [[0, 24]]],
  ])("should find rows [%i, %i) reading only the entries around them", async (first, end, expected, reads) => {
    const found = await spanOf(first, end);

    expect(found.span).toEqual(expected);
    expect(found.reads).toEqual(reads);
  });

  it("should say so when the index is missing or short", async () => {
    expect(await rowSpan(0, 10, result, async () => null)).toBeNull();
    expect(await rowSpan(0, 10, result, async () => new Uint8Array(8))).toBeNull();
  });
});
