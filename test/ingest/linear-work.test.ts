import { describe, expect, it } from "vitest";
import { ingestCsv, type IngestResult } from "../../src/worker/ingest/csv-ingest";
import { CsvRowReader } from "../../src/worker/ingest/csv-rows";
import type { WorkCounter } from "../../src/worker/ingest/work-counter";
import { ADVERSARIAL_SHAPES } from "./adversarial-csv";
import { gzip, trackedStream, utf8 } from "./streams";

/*
 * The upload check must do work in proportion to the file, whatever its
 * shape: each shape is read at two sizes and the work counted (characters
 * and bytes looked at, see work-counter.ts), never timed. Linear work grows
 * 8× from one size to the other; a search that covers the rest of the text
 * on every row grows 64×. The bound allows 2× on top of 8× because a row
 * longer than a batch is read again each time the kept text doubles, which
 * costs one to three times its length depending on where the doublings fall.
 */
const SIZE = 32 * 1024;
const GROWTH = 8;
const MOST_GROWTH = GROWTH * 2;
/** The most work per character of input on any shape. */
const MOST_WORK_PER_CHAR = 24;

/** Work of reading `text` in pieces of `piece` characters with a sink that takes every row. */
function readerWork(text: string, piece: number): number {
  const work: WorkCounter = { scanned: 0 };
  const reader = new CsvRowReader(",", 8 * 1024 * 1024, { takeSpans: () => true, takeRows: () => true }, { work });
  for (let at = 0; at < text.length; at += piece) {
    if (!reader.push(text.slice(at, at + piece)).ok) return work.scanned;
  }
  reader.end();
  return work.scanned;
}

async function ingestWork(file: Uint8Array, chunkBytes: number): Promise<{ work: number; result: IngestResult }> {
  const work: WorkCounter = { scanned: 0 };
  const result = await ingestCsv(trackedStream(file, chunkBytes).stream, {
    limits: { maxDecompressedBytes: 1024 * 1024 * 1024 },
    work,
  });
  return { work: work.scanned, result };
}

function expectLinear(small: { work: number; chars: number }, large: { work: number; chars: number }): void {
  expect(large.chars / small.chars).toBeCloseTo(GROWTH, 0);
  expect(large.work / small.work).toBeLessThan(MOST_GROWTH);
  expect(large.work / large.chars).toBeLessThan(MOST_WORK_PER_CHAR);
}

describe("the CSV reader's work", () => {
  for (const [shape, make] of Object.entries(ADVERSARIAL_SHAPES)) {
    it(`should grow linearly with the text: ${shape}`, () => {
      const small = make(SIZE);
      const large = make(SIZE * GROWTH);
      // One piece as large as the text (a decompressed chunk can be megabytes), network-sized pieces, odd ones.
      for (const piece of [large.length, 4096, 997]) {
        expectLinear(
          { work: readerWork(small, piece), chars: small.length },
          { work: readerWork(large, piece), chars: large.length },
        );
      }
    });
  }
});

describe("the upload check's work", () => {
  for (const [shape, make] of Object.entries(ADVERSARIAL_SHAPES)) {
    it(`should grow linearly with the file: ${shape}`, async () => {
      const small = utf8(make(SIZE));
      const large = utf8(make(SIZE * GROWTH));
      for (const chunkBytes of [large.length, 16 * 1024]) {
        const [smallRun, largeRun] = [await ingestWork(small, chunkBytes), await ingestWork(large, chunkBytes)];
        expectLinear({ work: smallRun.work, chars: small.length }, { work: largeRun.work, chars: large.length });
      }
    });
  }

  it("should accept a small gzip of 2.5 million one-column rows, in work linear in its 5 MB of CSV", async () => {
    const oneColumn = (rows: number) => gzip(utf8(`a\n${"1\n".repeat(rows)}`));
    const file = await oneColumn(2_499_999);
    expect(file.length).toBeLessThan(10_000);
    const large = await ingestWork(file, 4096);
    expect(large.result).toMatchObject({ ok: true, rowCount: 2_499_999, decompressedBytes: 5_000_000 });
    expect(large.result.ok && large.result.columns.map((column) => column.DataType.DataType)).toEqual(["INTEGER"]);
    const small = await ingestWork(await oneColumn(312_499), 4096);
    expect(small.result).toMatchObject({ ok: true, rowCount: 312_499 });
    expectLinear({ work: small.work, chars: 625_000 }, { work: large.work, chars: 5_000_000 });
  });
});
