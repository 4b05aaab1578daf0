import * as Papa from "papaparse";
import { describe, expect, it } from "vitest";
import { ingestCsv, type IngestOptions, type IngestResult } from "../../src/worker/ingest/csv-ingest";
import type { Newline, RowParser } from "../../src/worker/ingest/csv-fallback";
import { CsvRowReader, type RowBatch } from "../../src/worker/ingest/csv-rows";
import type { Column, TableDefinition } from "../../src/worker/ingest/data-schema";
import { DATA_TYPES } from "../../src/worker/ingest/value-types";
import type { WorkCounter } from "../../src/worker/ingest/work-counter";
import { fuzzText, seeded } from "./adversarial-csv";
import { concatBytes, gzip, trackedStream, utf8 } from "./streams";

/*
 * Random and adversarial CSV through the upload check, under random size
 * limits and cuts: it must never throw, answer as the limits say, give the
 * same answer however the file is cut, and look at no more than a constant
 * times the file (work counted, see work-counter.ts).
 */
const MOST_WORK_PER_CHAR = 24;
/** Fixed costs (a parser call, a window) that dominate a file of a few characters. */
const WORK_ALLOWANCE = 256;

type Random = ReturnType<typeof seeded>;

const DELIMITERS = [",", ";", "\t", " "] as const;

function fuzzTable(random: Random, width: number): TableDefinition {
  const columns: Column[] = Array.from({ length: width }, (_, index) => ({
    Name: `c${index}`,
    DataType: { DataType: random.pick(DATA_TYPES), DataTypeOptions: { Nullable: random.next() < 0.7 } },
  }));
  return { Columns: columns };
}

/** Cut points: none, every few bytes, or at random places. */
function fuzzCuts(random: Random, length: number): number | number[] {
  const kind = random.below(3);
  if (kind === 0) return Math.max(1, length);
  if (kind === 1) return 1 + random.below(5000);
  const cuts = Array.from({ length: random.below(8) }, () => random.below(length + 1));
  return [...new Set(cuts)].sort((a, b) => a - b);
}

interface FuzzCase {
  csv: Uint8Array;
  file: Uint8Array;
  options: IngestOptions;
}

async function fuzzCase(seed: number): Promise<FuzzCase> {
  const random = seeded(seed * 2_654_435_761);
  const delimiter = random.pick(DELIMITERS);
  let csv = utf8(fuzzText(random, delimiter));
  // Now and then a byte that is not UTF-8.
  if (random.next() < 0.1) {
    const at = random.below(csv.length + 1);
    csv = concatBytes(csv.subarray(0, at), new Uint8Array([random.pick([0xff, 0xc3, 0xe6, 0x80])]), csv.subarray(at));
  }
  const file = random.next() < 0.25 ? await gzip(csv) : csv;
  const sizeLimit = random.next() < 0.3 ? 1 + random.below(csv.length * 2 + 1) : 64 * 1024 * 1024;
  const maxRowChars = random.next() < 0.5 ? 1 + random.below(4096) : undefined;
  return {
    csv,
    file,
    options: {
      tableDefinition: random.next() < 0.4 ? fuzzTable(random, 1 + random.below(4)) : undefined,
      dataOptions: { Header: random.next() < 0.7, Delimiter: delimiter },
      limits: { maxDecompressedBytes: sizeLimit, maxRowChars },
    },
  };
}

async function run(file: Uint8Array, options: IngestOptions, cuts: number | number[]) {
  const work: WorkCounter = { scanned: 0 };
  const result: IngestResult = await ingestCsv(trackedStream(file, cuts).stream, { ...options, work });
  return { result, work: work.scanned };
}

/** A row and whether its quoting is broken. */
type Seen = [fields: string[], malformed: boolean];

function collect(batch: RowBatch, into: Seen[]): true {
  batch.rows.forEach((fields, index) => into.push([fields, batch.malformedRows.includes(index)]));
  return true;
}

describe("the upload check on random and adversarial CSV", () => {
  it("should answer within its limits, in linear work, the same however the file is cut", async () => {
    const outcomes = new Map<string, number>();
    for (let seed = 1; seed <= 400; seed++) {
      const { csv, file, options } = await fuzzCase(seed);
      const random = seeded(seed);
      const whole = await run(file, options, Math.max(1, file.length));
      const cut = await run(file, options, fuzzCuts(random, file.length));
      const context = { seed, csvBytes: csv.length };

      for (const { result, work } of [whole, cut]) {
        if (result.ok) {
          expect({ ...context, decompressedBytes: result.decompressedBytes }).toEqual({
            ...context,
            decompressedBytes: csv.length,
          });
        } else {
          expect({ ...context, status: [400, 413].includes(result.status) }).toEqual({ ...context, status: true });
        }
        if (csv.length > options.limits.maxDecompressedBytes)
          expect({ ...context, ok: result.ok }).toEqual({ ...context, ok: false });
        expect({ ...context, linear: work <= MOST_WORK_PER_CHAR * csv.length + WORK_ALLOWANCE }).toEqual({
          ...context,
          linear: true,
        });
      }
      // Past the size limit, where the limit is noticed depends on the cuts; below it, nothing may.
      if (csv.length <= options.limits.maxDecompressedBytes) {
        expect({ ...context, result: cut.result }).toEqual({ ...context, result: whole.result });
      }
      const outcome = whole.result.ok ? "ok" : `${whole.result.status} ${whole.result.message.slice(0, 30)}`;
      outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
    }
    // The cases reach every kind of answer, or the run proves little.
    const kinds = [...outcomes.keys()].join("\n");
    for (const start of [
      "ok",
      "413",
      "400 The file has a row longer",
      "400 The file is not valid UTF-8",
      "400 The file does not match",
    ]) {
      expect(kinds).toContain(start);
    }
  });

  it("should read random and adversarial text as papaparse does, in linear work, under small row limits", () => {
    const papaparse = (delimiter: string, newline: Newline): RowParser =>
      new Papa.Parser({ delimiter, newline, quoteChar: '"' });
    let refused = 0;
    for (let seed = 1; seed <= 300; seed++) {
      const random = seeded(seed * 40_503);
      const delimiter = random.pick(DELIMITERS);
      const text = fuzzText(random, delimiter).slice(0, 6000);
      const maxRowChars = 1 + random.below(2000);
      const pieces: string[] = [];
      for (let at = 0; at < text.length;) {
        const size = 1 + random.below(random.next() < 0.5 ? 50 : 3000);
        pieces.push(text.slice(at, at + size));
        at += size;
      }
      const work: WorkCounter = { scanned: 0 };
      const rows: Seen[] = [];
      const fast = new CsvRowReader(
        delimiter,
        maxRowChars,
        {
          takeSpans(row) {
            rows.push([row.fields(), false]);
            return true;
          },
          takeRows(batch) {
            collect(batch, rows);
            return true;
          },
        },
        { work },
      );
      const ok = [...pieces.map((piece) => fast.push(piece)), fast.end()].every((read) => read.ok);
      const reference = new CsvRowReader(delimiter, maxRowChars, undefined, { parser: papaparse });
      const expected: Seen[] = [];
      const expectedOk = [reference.push(text), reference.end()].every((read) => read.ok && collect(read, expected));
      expect({ seed, ok }).toEqual({ seed, ok: expectedOk });
      if (ok) expect({ seed, rows }).toEqual({ seed, rows: expected });
      else refused++;
      expect({ seed, linear: work.scanned <= MOST_WORK_PER_CHAR * text.length + WORK_ALLOWANCE }).toEqual({
        seed,
        linear: true,
      });
    }
    expect(refused).toBeGreaterThan(10);
  });
});
