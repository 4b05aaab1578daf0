import { describe, expect, it } from "vitest";
import type { DelimiterDetection } from "../../src/worker/ingest/csv-delimiter";
import { CsvRowReader, type ReadRows, type RowBatch, type RowsSink } from "../../src/worker/ingest/csv-rows";
import type { WorkCounter } from "../../src/worker/ingest/work-counter";

const MAX_ROW = 1024 * 1024;

function rowsOf(read: ReadRows): string[][] {
  if (!read.ok) throw new Error(`unexpected ${read.reason}`);
  return read.rows;
}

/** Feeds `pieces` one by one, parsing after each (flush), and returns every row. */
function readPieces(pieces: readonly string[], delimiter: string | DelimiterDetection = ",", flush = true): string[][] {
  const reader = new CsvRowReader(delimiter, MAX_ROW);
  const rows: string[][] = [];
  for (const piece of pieces) rows.push(...rowsOf(reader.push(piece, flush)));
  rows.push(...rowsOf(reader.end()));
  return rows;
}

function splitsAt(text: string, ...cuts: number[]): string[] {
  const points = [0, ...cuts, text.length];
  return points.slice(1).map((end, index) => text.slice(points[index], end));
}

const CRLF_FILE =
  'id,name,note\r\n1,"Smith, J","said ""hi""\r\nthen left"\r\n2,Zoë ✓,\r\n3,"","a\r\n\r\nb"\r\n4,"""",x\r\n';
const CRLF_ROWS = [
  ["id", "name", "note"],
  ["1", "Smith, J", 'said "hi"\r\nthen left'],
  ["2", "Zoë ✓", ""],
  ["3", "", "a\r\n\r\nb"],
  ["4", '"', "x"],
];

describe("CsvRowReader", () => {
  it("should read CRLF rows with quoted commas, quotes and line breaks", () => {
    expect(readPieces([CRLF_FILE])).toEqual(CRLF_ROWS);
  });

  it("should give the same rows wherever a CRLF file is cut in two", () => {
    for (let cut = 0; cut <= CRLF_FILE.length; cut++) {
      expect(readPieces(splitsAt(CRLF_FILE, cut)), `cut at ${cut}`).toEqual(CRLF_ROWS);
    }
  });

  it("should give the same rows wherever a CRLF file is cut in three", () => {
    for (let first = 0; first <= CRLF_FILE.length; first++) {
      for (let second = first; second <= CRLF_FILE.length; second++) {
        expect(readPieces(splitsAt(CRLF_FILE, first, second)), `cuts at ${first}, ${second}`).toEqual(CRLF_ROWS);
      }
    }
  });

  it("should detect the delimiter and give the same rows wherever the file is cut, without flushing", () => {
    const file = 'id;name;note\r\n1;"Smith; J";"said ""hi""\r\nthen left"\r\n2;Zoë ✓;\r\n';
    const rows = [
      ["id", "name", "note"],
      ["1", "Smith; J", 'said "hi"\r\nthen left'],
      ["2", "Zoë ✓", ""],
    ];
    for (let cut = 0; cut <= file.length; cut++) {
      expect(readPieces(splitsAt(file, cut), {}, false), `cut at ${cut}`).toEqual(rows);
      expect(readPieces(splitsAt(file, cut), {}, true), `cut at ${cut}, flushed`).toEqual(rows);
    }
    const reader = new CsvRowReader({}, MAX_ROW);
    reader.push(file);
    expect(reader.delimiterInUse).toBeUndefined();
    reader.end();
    expect(reader.delimiterInUse).toBe(";");
  });

  it("should detect the delimiter once the first rows are in, before the file ends", () => {
    const reader = new CsvRowReader({}, MAX_ROW);
    const head = "a\tb\n" + "1\t2\n".repeat(30);
    expect(rowsOf(reader.push(head, true)).length).toBe(31);
    expect(reader.delimiterInUse).toBe("\t");
  });

  it("should give the same rows when fed one character at a time", () => {
    expect(readPieces([...CRLF_FILE])).toEqual(CRLF_ROWS);
  });

  it("should give the same rows wherever an LF file with quoted line breaks is cut", () => {
    const file = 'a,b\n"x\ny","1\n2"\n"",""\nlast,"row"';
    const expected = [
      ["a", "b"],
      ["x\ny", "1\n2"],
      ["", ""],
      ["last", "row"],
    ];
    for (let cut = 0; cut <= file.length; cut++) {
      expect(readPieces(splitsAt(file, cut)), `cut at ${cut}`).toEqual(expected);
    }
  });

  it("should read old Mac CR line endings", () => {
    expect(readPieces(["a,b\r1,2\r", "3,4"])).toEqual([
      ["a", "b"],
      ["1", "2"],
      ["3", "4"],
    ]);
  });

  it("should drop a stray CR before LF in a file that mostly ends lines with LF", () => {
    expect(readPieces(["a,b\n1,2\r\n3,4\n"])).toEqual([
      ["a", "b"],
      ["1", "2"],
      ["3", "4"],
    ]);
  });

  it("should treat a line break inside quotes in the first row as data when choosing the line ending", () => {
    expect(readPieces(['"x\ny",b\r\n1,2\r\n'])).toEqual([
      ["x\ny", "b"],
      ["1", "2"],
    ]);
  });

  it("should use the given delimiter", () => {
    expect(readPieces(['a;b\t;"c;d"\n'], ";")).toEqual([["a", "b\t", "c;d"]]);
    expect(readPieces(["a\tb,c\n1\t2\n"], "\t")).toEqual([
      ["a", "b,c"],
      ["1", "2"],
    ]);
  });

  it("should end the last row at a final line break without adding an empty row", () => {
    expect(readPieces(["a\n1\n"], ",", false)).toEqual([["a"], ["1"]]);
    expect(readPieces(["a\n1\n\n"], ",", false)).toEqual([["a"], ["1"], [""]]);
    expect(readPieces(["a\n", "1\n\n"])).toEqual([["a"], ["1"], [""]]);
  });

  it("should read a file without any line break as one row", () => {
    expect(readPieces(["a,", "b"])).toEqual([["a", "b"]]);
    expect(readPieces([""])).toEqual([]);
  });

  it("should flag rows whose quotes are malformed or never closed", () => {
    const reader = new CsvRowReader(",", MAX_ROW);
    const read = reader.push('ok,1\n"bad"x",2\nfine,3\n', true);
    expect(read.ok && read.rows).toEqual([
      ["ok", "1"],
      ['bad"x', "2"],
      ["fine", "3"],
    ]);
    expect(read.ok && read.malformedRows).toEqual([1]);
    const end = new CsvRowReader(",", MAX_ROW);
    end.push('a,b\n1,"open', true);
    const last = end.end();
    expect(last.ok && last.rows).toEqual([["1", "open"]]);
    expect(last.ok && last.malformedRows).toEqual([0]);
  });

  it("should refuse to keep a row longer than the limit", () => {
    const reader = new CsvRowReader(",", 1000);
    expect(reader.push('a,b\n1,"', true).ok).toBe(true);
    expect(reader.push("x".repeat(2000), true)).toEqual({ ok: false, reason: "row-too-long" });
    const noLineBreak = new CsvRowReader(",", 1000);
    expect(noLineBreak.push("y".repeat(1001))).toEqual({ ok: false, reason: "row-too-long" });
  });

  it("should refuse a row longer than the limit even when it comes whole in one piece, wherever it is cut", () => {
    const file = `a,b\n1,${"x".repeat(2000)}\n2,3\n`;
    for (const pieces of [[file], splitsAt(file, 10), splitsAt(file, 1500, 2004), [...file]]) {
      const reader = new CsvRowReader(",", 1000);
      const reads = [...pieces.map((piece) => reader.push(piece)), reader.end()];
      expect(reads.find((read) => !read.ok)).toEqual({ ok: false, reason: "row-too-long" });
    }
  });

  it("should accept a row of exactly the limit, not counting its line break, and refuse one character more", () => {
    const accepted = (text: string) => {
      const reader = new CsvRowReader(",", 1000);
      return [reader.push(text), reader.end()].every((read) => read.ok);
    };
    for (const newline of ["\n", "\r\n", "\r"]) {
      for (const length of [1000, 1001]) {
        const row = "1".repeat(length);
        const what = `${length} characters, line ending ${JSON.stringify(newline)}`;
        expect(accepted(`${row}${newline}1${newline}`), `first row of ${what}`).toBe(length <= 1000);
        expect(accepted(`a${newline}${row}${newline}2${newline}`), `row of ${what}`).toBe(length <= 1000);
        expect(accepted(`a${newline}${row}`), `last row of ${what}`).toBe(length <= 1000);
      }
    }
  });

  it("should refuse a row longer than the limit without looking much further than the limit", () => {
    for (const text of ["y".repeat(1_000_000), `a,b\n1,"${"x".repeat(1_000_000)}`, `a\n${"x".repeat(1_000_000)}\n`]) {
      const work: WorkCounter = { scanned: 0 };
      const reader = new CsvRowReader(",", 1000, { takeSpans: () => true, takeRows: () => true }, { work });
      expect(reader.push(text)).toEqual({ ok: false, reason: "row-too-long" });
      expect(work.scanned).toBeLessThan(10 * 1000);
    }
  });

  it("should refuse every later piece once a row was refused, without looking at it", () => {
    const work: WorkCounter = { scanned: 0 };
    const reader = new CsvRowReader(",", 1000, { takeSpans: () => true, takeRows: () => true }, { work });
    expect(reader.push(`a\n"${"x".repeat(2000)}`).ok).toBe(false);
    const spent = work.scanned;
    expect(reader.push('"\n1\n'.repeat(1000), true)).toEqual({ ok: false, reason: "row-too-long" });
    expect(reader.end()).toEqual({ ok: false, reason: "row-too-long" });
    expect(work.scanned).toBe(spent);
  });

  it("should hand a sink every row in file order, plain or not, across many windows", () => {
    const lines = Array.from({ length: 3000 }, (_, i) =>
      i % 3 === 0 ? `${i},"q ""${i}"""` : i % 3 === 1 ? `${i},stray"quote` : `${i},plain`,
    );
    const file = `id,text\n${lines.join("\n")}\n`;
    const seen: string[][] = [];
    const sink: RowsSink = {
      takeSpans(row) {
        seen.push(row.fields());
        return true;
      },
      takeRows(batch: RowBatch) {
        seen.push(...batch.rows);
        return true;
      },
    };
    const reader = new CsvRowReader(",", 40, sink);
    for (let at = 0; at < file.length; at += 5000) expect(reader.push(file.slice(at, at + 5000)).ok).toBe(true);
    expect(reader.end().ok).toBe(true);
    expect(seen).toEqual(readPieces([file]));
  });

  it("should read nothing more once the sink asks to stop", () => {
    let taken = 0;
    const sink: RowsSink = {
      takeSpans: () => ++taken < 2,
      takeRows: (batch) => (taken += batch.rows.length) < 2,
    };
    const reader = new CsvRowReader(",", MAX_ROW, sink);
    expect(reader.push("a\n1\n2\n3\n", true)).toEqual({ ok: true, rows: [], malformedRows: [] });
    expect(reader.push("4\n5\n", true).ok).toBe(true);
    expect(reader.end().ok).toBe(true);
    expect(taken).toBe(2);
  });

  it("should batch small pieces and still return every row of a long file", () => {
    const lines = Array.from({ length: 20_000 }, (_, index) => `${index},"text ""${index}""\nmore",${index % 7}`);
    const file = `id,text,n\n${lines.join("\n")}\n`;
    const pieces: string[] = [];
    for (let at = 0; at < file.length; at += 997) pieces.push(file.slice(at, at + 997));
    const rows = readPieces(pieces, ",", false);
    expect(rows).toHaveLength(20_001);
    expect(rows[12_345]).toEqual(["12344", 'text "12344"\nmore', "3"]);
  });

  it("should read a quoted field far longer than a batch without rescanning it for every piece", () => {
    const long = "z".repeat(500_000);
    const file = `a,b\n1,"${long}"\n2,x\n`;
    const pieces: string[] = [];
    for (let at = 0; at < file.length; at += 1000) pieces.push(file.slice(at, at + 1000));
    const rows = readPieces(pieces, ",", false);
    expect(rows.map((row) => row[0])).toEqual(["a", "1", "2"]);
    expect(rows[1]![1]).toHaveLength(500_000);
  });
});
