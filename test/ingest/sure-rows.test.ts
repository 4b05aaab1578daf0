import * as Papa from "papaparse";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ingestCsv, MAX_VIOLATIONS } from "../../src/worker/ingest/csv-ingest";
import type { Column, TableDefinition } from "../../src/worker/ingest/data-schema";
import { SureRows } from "../../src/worker/ingest/csv-spans";
import { RowRouter } from "../../src/worker/ingest/row-router";
import { DATA_TYPES, type DataTypeName } from "../../src/worker/ingest/value-types";
import { seeded } from "./adversarial-csv";
import { trackedStream, utf8 } from "./streams";

/*
 * Rows taken whole by one regex match (csv-spans.ts SureRows) must leave the
 * upload check exactly where reading them field by field would: the same row
 * count, inferred types and problems. The reference here is papaparse's
 * rows handed one by one to the same router as strings, which never uses
 * that fast path.
 */

type Random = ReturnType<typeof seeded>;

/** Values per kind: mostly ones the sure patterns take, some near their edges, a few that change what is inferred. */
const VALUES: Record<DataTypeName, { usual: readonly string[]; rare: readonly string[] }> = {
  INTEGER: { usual: ["0", "7", "-12", "+3", "42", "9".repeat(18), ""], rare: ["007", "9".repeat(19), "1.5", "x"] },
  DOUBLE: { usual: ["1.5", "-0.25", "3", "1.", ".5", "2e10", "0", ""], rare: ["1e999", "01.5", "9".repeat(400), "e"] },
  BOOLEAN: { usual: ["true", "FALSE", "True", "1", "0", ""], rare: ["yes", "2", "t"] },
  DATE: {
    usual: ["2024-01-31", "2023-11-30", "2024-02-29", "2000-02-29", "1999-12-31", ""],
    rare: ["2023-02-29", "2024-04-31", "2024-1-01"],
  },
  TIMESTAMP: {
    usual: [
      "2024-01-31T13:45:00",
      "2024-01-31 13:45",
      "2024-02-29T23:59:59.5Z",
      "2024-03-01T08:00:00+09:00",
      "2024-12-31 20:30:00-0430",
      "",
    ],
    rare: ["2024-01-31T24:00:00", "2024-01-31", "2024-01-31T13:45:00.1234567890"],
  },
  STRING: {
    usual: ["abc", "x y", "Zoë", "", "12", "2024-01-31"],
    rare: ["a,b", 'say "hi"', "line\nbreak", "tab\there"],
  },
};

function cell(random: Random, value: string, delimiter: string): string {
  const needsQuotes = /[",\r\n]/.test(value) || value.includes(delimiter);
  return needsQuotes || random.next() < 0.05 ? `"${value.replaceAll('"', '""')}"` : value;
}

function csvCase(seed: number) {
  const random = seeded(seed * 7_919);
  const delimiter = random.pick([",", ";", "\t", "|"]);
  const newline = random.pick(["\n", "\r\n"]);
  const kinds = Array.from({ length: 2 + random.below(5) }, () => random.pick(DATA_TYPES));
  // How often a row holds a rare value: often enough to change what is inferred mid-file, or hardly ever.
  const rareRate = random.pick([0, 0.001, 0.02, 0.2]);
  const lines = [kinds.map((_, index) => `c${index}`).join(delimiter)];
  for (let row = 0; row < 200 + random.below(1500); row++) {
    const fields = kinds.map((kind) => {
      const values = VALUES[kind];
      return cell(random, random.pick(random.next() < rareRate ? values.rare : values.usual), delimiter);
    });
    // Now and then a row with a field too few: a problem either way.
    if (random.next() < rareRate / 8) fields.pop();
    lines.push(fields.join(delimiter));
  }
  const text = lines.join(newline) + newline;
  const declared = random.next() < 0.4;
  const tableDefinition: TableDefinition | undefined = declared
    ? {
        Columns: kinds.map((kind, index): Column => ({
          Name: `c${index}`,
          DataType: { DataType: kind, DataTypeOptions: { Nullable: random.next() < 0.8 } },
        })),
      }
    : undefined;
  return { text, delimiter, newline, tableDefinition, chunk: 1 + random.below(100_000) };
}

function reference(text: string, delimiter: string, newline: string, tableDefinition: TableDefinition | undefined) {
  const parsed = Papa.parse<string[]>(text, { delimiter, newline: newline as "\n" | "\r\n", quoteChar: '"' });
  expect(parsed.errors).toEqual([]);
  const router = new RowRouter(tableDefinition, true, MAX_VIOLATIONS);
  router.takeRows({ rows: parsed.data, malformedRows: [] });
  const violations = router.violations.items;
  if (violations.length > 0) return { ok: false, violations };
  return {
    ok: true,
    rowCount: router.rowCount,
    types: router.columns()!.map((column) => column.DataType.DataType),
  };
}

describe("rows taken whole by the sure-row regex", () => {
  afterEach(() => vi.restoreAllMocks());

  it("should leave the check with the rows, types and problems of a field-by-field reading", async () => {
    const taken = vi.spyOn(RowRouter.prototype, "takeSureRow");
    const outcomes = new Set<string>();
    for (let seed = 1; seed <= 120; seed++) {
      const { text, delimiter, newline, tableDefinition, chunk } = csvCase(seed);
      const result = await ingestCsv(trackedStream(utf8(text), chunk).stream, {
        tableDefinition,
        dataOptions: { Header: true, Delimiter: delimiter },
        limits: { maxDecompressedBytes: 1 << 30 },
      });
      const actual = result.ok
        ? { ok: true, rowCount: result.rowCount, types: result.columns.map((column) => column.DataType.DataType) }
        : { ok: false, violations: result.violations };
      expect({ seed, ...actual }).toEqual({ seed, ...reference(text, delimiter, newline, tableDefinition) });
      outcomes.add(`${result.ok} ${tableDefinition ? "declared" : "inferred"}`);
    }
    // Both kinds of check, both answers, and most rows of the files taken whole, or this proves little.
    expect([...outcomes].sort()).toEqual(["false declared", "false inferred", "true declared", "true inferred"]);
    expect(taken.mock.calls.length).toBeGreaterThan(10_000);
  });

  it("should take nearly every row of a file whose values it knows, in every column kind, quoted or not", async () => {
    const taken = vi.spyOn(RowRouter.prototype, "takeSureRow");
    const rows = Array.from(
      { length: 5000 },
      (_, row) =>
        `${row},"${row % 7}",2024-02-${String(1 + (row % 29)).padStart(2, "0")} 10:00:0${row % 10}Z,${row % 3 === 0},${row / 8},x${row},"a ""b"", c"`,
    );
    const result = await ingestCsv(trackedStream(utf8(`a,b,c,d,e,f,g\n${rows.join("\n")}\n`), 65_536).stream, {
      limits: { maxDecompressedBytes: 1 << 30 },
    });
    expect(result).toMatchObject({ ok: true, rowCount: 5000 });
    expect(result.ok && result.columns.map((column) => column.DataType.DataType)).toEqual([
      "INTEGER",
      "INTEGER",
      "TIMESTAMP",
      "BOOLEAN",
      "DOUBLE",
      "STRING",
      "STRING",
    ]);
    expect(taken.mock.calls.length).toBeGreaterThan(4900);
  });
});

describe("SureRows: making the row regex", () => {
  /** A sink whose sure values change on every row, as a file whose inferred types keep changing would make them. */
  function changingSink(width: number) {
    let version = 0;
    return {
      get version() {
        return version;
      },
      takeSpans: () => true,
      sureRow: () => {
        version++;
        return { version, values: Array.from({ length: width }, () => ({ pattern: `v${version}`, empty: false })) };
      },
    };
  }

  it("should make the regex a logarithmic number of times when the types change on every row, never a stale one", () => {
    const sink = changingSink(3);
    const sure = new SureRows(",", "\n");
    const made = new Set<RegExp>();
    for (let row = 0; row < 100_000; row++) {
      const regex = sure.regexFor(sink);
      if (regex === undefined) continue;
      made.add(regex);
      expect(regex.source.startsWith(`(?:(?:v${sink.version})`)).toBe(true);
    }
    expect(made.size).toBeGreaterThan(5);
    expect(made.size).toBeLessThanOrEqual(Math.ceil(Math.log2(100_000 / 16)) + 1);
  });

  it("should keep one regex while the sure values stay as they are", () => {
    const values = [
      { pattern: "[0-9]+", empty: true },
      { pattern: null, empty: true },
    ];
    const sure = new SureRows(",", "\r\n");
    const sink = { takeSpans: () => true, sureRow: () => ({ version: 1, values }) };
    const first = sure.regexFor(sink);
    expect(first?.test("12,ab\r\n")).toBe(true);
    for (let row = 0; row < 100; row++) expect(sure.regexFor(sink)).toBe(first);
  });

  it("should not make a regex for rows so wide that matching them costs more than reading them field by field", () => {
    const sure = new SureRows(",", "\n");
    const wide = Array.from({ length: 1000 }, () => ({ pattern: null, empty: true }));
    expect(sure.regexFor({ takeSpans: () => true, sureRow: () => ({ version: 1, values: wide }) })).toBeUndefined();
  });
});
