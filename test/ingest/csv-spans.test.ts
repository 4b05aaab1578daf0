import { describe, expect, it } from "vitest";
import * as Papa from "papaparse";
import { CsvRowReader, type ReadRows, type RowBatch, type RowsSink } from "../../src/worker/ingest/csv-rows";
import type { Newline, RowParser } from "../../src/worker/ingest/csv-fallback";
import { RowSpans, scanPlainRows } from "../../src/worker/ingest/csv-spans";

const MAX_ROW = 1024 * 1024;
const SMALL_MAX_ROW = 40;

/** papaparse's own parser: the reference every reading here is compared with. */
const papaparse = (delimiter: string, newline: Newline): RowParser =>
  new Papa.Parser({ delimiter, newline, quoteChar: '"' });

/** A row as the reader gave it, and whether papaparse flagged its quoting. */
type Seen = [fields: string[], malformed: boolean];

function take(read: ReadRows & { ok: true }, into: Seen[]): void {
  read.rows.forEach((fields, index) => into.push([fields, read.malformedRows.includes(index)]));
}

/**
 * Feeds `pieces` to a reader and returns every row in file order, with how
 * many went through the fast path, or `ok: false` once a row is longer than
 * `maxRow`. Without `fast` the reader is papaparse alone.
 */
function readAll(
  pieces: readonly string[],
  delimiter: string,
  fast: boolean,
  maxRow = MAX_ROW,
): { rows: Seen[]; fastRows: number; ok: boolean } {
  const rows: Seen[] = [];
  let fastRows = 0;
  const sink: RowsSink = {
    takeSpans(row) {
      fastRows++;
      rows.push([row.fields(), false]);
      return true;
    },
    takeRows(batch) {
      take({ ok: true, ...batch }, rows);
      return true;
    },
  };
  const reader = fast
    ? new CsvRowReader(delimiter, maxRow, sink)
    : new CsvRowReader(delimiter, maxRow, undefined, { parser: papaparse });
  const steps = [...pieces.map((piece) => () => reader.push(piece)), () => reader.end()];
  for (const step of steps) {
    const read = step();
    if (!read.ok) return { rows, fastRows, ok: false };
    take(read, rows);
  }
  return { rows, fastRows, ok: true };
}

// Seeded, so a failure names an input that can be replayed.
function generator(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
  return { next, pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]! };
}

function randomCuts(text: string, random: ReturnType<typeof generator>): string[] {
  const pieces: string[] = [];
  let at = 0;
  while (at < text.length) {
    const size = 1 + Math.floor(random.next() * (random.next() < 0.5 ? 8 : 400));
    pieces.push(text.slice(at, at + size));
    at += size;
  }
  return pieces;
}

/** Text of CSV-ish tokens: mostly plain, with every shape the fast path must leave to papaparse. */
function tokenSoup(random: ReturnType<typeof generator>, delimiter: string, newline: string): string {
  const tokens = ["a", "bc", "12", "-3.5", "2024-01-02", delimiter, delimiter, '"', '""', newline, newline];
  const rare = ["\r", "\n", "\r\n", " ", '" ', ' "', "é", "\uFEFF", ","];
  let text = "";
  const count = Math.floor(random.next() * 120);
  for (let i = 0; i < count; i++) text += random.next() < 0.9 ? random.pick(tokens) : random.pick(rare);
  return text;
}

/** Well-formed CSV: unquoted and quoted fields (with escaped quotes, delimiters and line breaks inside). */
function wellFormed(random: ReturnType<typeof generator>, delimiter: string, newline: string): string {
  const unquoted = ["", "x", "42", "3.25", "2024-05-06T07:08:09Z", "true", "hello world", "Zoë"];
  const quoted = ['""', '"a,b"', '"say ""hi"""', '"line\nbreak"', '"cr\r\nlf"', '""""', `"${delimiter}"`];
  const width = 1 + Math.floor(random.next() * 5);
  const rows: string[] = [];
  const count = Math.floor(random.next() * 30);
  for (let r = 0; r < count; r++) {
    const fields = Array.from({ length: width }, () =>
      random.next() < 0.3 ? random.pick(quoted) : random.pick(unquoted),
    );
    rows.push(fields.join(delimiter));
  }
  return rows.join(newline) + (random.next() < 0.7 ? newline : "");
}

describe("the fast path against papaparse", () => {
  // The fewest rows the fast path must have taken over 400 texts, or the comparison proves little.
  const cases: [string, (random: ReturnType<typeof generator>, d: string, n: string) => string, number][] = [
    ["well-formed CSV", wellFormed, 1000],
    ["random tokens", tokenSoup, 200],
  ];
  for (const [name, make, leastFast] of cases) {
    for (const [delimiter, newline] of [
      [",", "\n"],
      [",", "\r\n"],
      [";", "\r\n"],
      ["\t", "\n"],
      [",", "\r"],
    ] as const) {
      it(`should read ${name} (delimiter ${JSON.stringify(delimiter)}, line ending ${JSON.stringify(newline)}) into the same rows, however it is cut`, () => {
        let fastRows = 0;
        const cappedOutcomes = new Set<boolean>();
        for (let seed = 1; seed <= 400; seed++) {
          const random = generator(seed * 7919 + delimiter.charCodeAt(0) + newline.length);
          const text = make(random, delimiter, newline);
          const pieces = randomCuts(text, random);
          const expected = readAll([text], delimiter, false).rows;
          const fast = readAll(pieces, delimiter, true);
          expect({ seed, text, rows: fast.rows }).toEqual({ seed, text, rows: expected });
          fastRows += fast.fastRows;
          // With rows near the length limit, the text is read in many windows, and some rows are refused.
          const capped = readAll(pieces, delimiter, true, SMALL_MAX_ROW);
          const cappedExpected = readAll([text], delimiter, false, SMALL_MAX_ROW);
          expect({ seed, text, ok: capped.ok }).toEqual({ seed, text, ok: cappedExpected.ok });
          if (capped.ok) expect({ seed, text, rows: capped.rows }).toEqual({ seed, text, rows: expected });
          cappedOutcomes.add(capped.ok);
        }
        // Old Mac files never take the fast path (random tokens may well pick another line ending first).
        if (newline !== "\r") expect(fastRows).toBeGreaterThan(leastFast);
        else if (make === wellFormed) expect(fastRows).toBe(0);
        expect(cappedOutcomes).toEqual(new Set([true, false]));
      });
    }
  }
});

/** Every row's values, null for an unquoted empty field, as the fast path (RowSpans) or the fallback (RowBatch) tells. */
function readValues(pieces: readonly string[], delimiter: string, fast: boolean): (string | null)[][] {
  const rows: (string | null)[][] = [];
  const takeBatch = (batch: RowBatch) => {
    const quotedEmpty = new Set(
      (batch.quotedEmpty ?? []).flatMap(({ row, fields }) => fields.map((f) => `${row}:${f}`)),
    );
    batch.rows.forEach((fields, r) =>
      rows.push(fields.map((field, f) => (field === "" && !quotedEmpty.has(`${r}:${f}`) ? null : field))),
    );
  };
  const sink: RowsSink = {
    takeSpans(row) {
      rows.push(Array.from({ length: row.count }, (_, i) => row.value(i)));
      return true;
    },
    takeRows(batch) {
      takeBatch(batch);
      return true;
    },
  };
  const reader = new CsvRowReader(delimiter, MAX_ROW, fast ? sink : undefined);
  for (const read of [...pieces.map((piece) => reader.push(piece)), reader.end()]) {
    if (!read.ok) throw new Error("a row was refused");
    takeBatch(read);
  }
  return rows;
}

describe('an empty field and a quoted "" (PostgreSQL\'s CSV reading)', () => {
  // Fields as written, and the value each stands for: an unquoted empty one is NULL, "" the empty string.
  const written: [string, string | null][] = [
    ["", null],
    ['""', ""],
    ["x", "x"],
    ['"a,b"', "a,b"],
    ['""""', '"'],
    ['"say ""hi"""', 'say "hi"'],
    ['"line\nbreak"', "line\nbreak"],
  ];

  for (const [delimiter, newline] of [
    [",", "\n"],
    [",", "\r\n"],
    [";", "\r\n"],
    [",", "\r"],
  ] as const) {
    it(`should tell them apart on the fast path and in the fallback, however the text is cut (${JSON.stringify(newline)})`, () => {
      let quotedEmpties = 0;
      for (let seed = 1; seed <= 300; seed++) {
        const random = generator(seed * 6007 + newline.length);
        const width = 1 + Math.floor(random.next() * 4);
        const rows = Array.from({ length: 1 + Math.floor(random.next() * 20) }, () =>
          Array.from({ length: width }, () => random.pick(written)),
        );
        const text = rows.map((row) => row.map(([field]) => field).join(delimiter) + newline).join("");
        const expected = rows.map((row) => row.map(([, value]) => value));
        quotedEmpties += expected.flat().filter((value) => value === "").length;
        const pieces = randomCuts(text, random);
        expect({ seed, text, rows: readValues(pieces, delimiter, true) }).toEqual({ seed, text, rows: expected });
        expect({ seed, text, rows: readValues(pieces, delimiter, false) }).toEqual({ seed, text, rows: expected });
      }
      expect(quotedEmpties).toBeGreaterThan(100);
    });
  }
});

describe("scanPlainRows", () => {
  function scan(text: string, newline: "\n" | "\r\n" = "\n") {
    const rows: string[][] = [];
    const result = scanPlainRows(text, ",", newline, new RowSpans(), {
      takeSpans(row) {
        rows.push(row.fields());
        return rows.length < 3;
      },
    });
    return { rows, ...result };
  }

  it("should take plain rows and stop at the start of an unfinished one", () => {
    const text = 'a,"b,c",d\n"x ""y""",,z\nlast,ro';
    expect(scan(text)).toEqual({
      rows: [
        ["a", "b,c", "d"],
        ['x "y"', "", "z"],
      ],
      consumed: text.indexOf("last"),
      stop: "incomplete",
    });
  });

  it("should leave a row with a quote inside an unquoted field to papaparse", () => {
    expect(scan('a,b\nab"c,d\n')).toEqual({ rows: [["a", "b"]], consumed: 4, stop: "unusual" });
  });

  it("should leave a row with text after a closing quote to papaparse", () => {
    expect(scan('"a" ,b\n')).toEqual({ rows: [], consumed: 0, stop: "unusual" });
  });

  it("should leave a CR LF line ending in an LF file to papaparse", () => {
    expect(scan("a,b\nc,d\r\n")).toEqual({ rows: [["a", "b"]], consumed: 4, stop: "unusual" });
  });

  it("should leave a row whose last field ends with a quoted CR in an LF file to papaparse, which drops that CR", () => {
    expect(scan('a,b\n"x\r",y\nc,"d\r"\n')).toEqual({
      rows: [
        ["a", "b"],
        ["x\r", "y"],
      ],
      consumed: 11,
      stop: "unusual",
    });
    expect(readAll(['a,"b\r"\n'], ",", true).rows).toEqual(readAll(['a,"b\r"\n'], ",", false).rows);
  });

  it("should keep a lone LF inside a field of a CRLF file as data", () => {
    expect(scan("a\nb,c\r\n", "\r\n")).toEqual({ rows: [["a\nb", "c"]], consumed: 7, stop: "incomplete" });
  });

  it("should wait for the character after a closing quote before ending the field", () => {
    expect(scan('a,"b"')).toMatchObject({ rows: [], consumed: 0, stop: "incomplete" });
    expect(scan('a,"b""')).toMatchObject({ rows: [], consumed: 0, stop: "incomplete" });
  });

  it("should stop when the sink asks, after the row it took", () => {
    expect(scan("1\n2\n3\n4\n")).toEqual({ rows: [["1"], ["2"], ["3"]], consumed: 6, stop: "stopped" });
  });
});
