import { describe, expect, it } from "vitest";
import { CsvRowReader, type ReadRows } from "../../src/ingest/csv-rows";

const MAX_ROW = 1024 * 1024;

function rowsOf(read: ReadRows): string[][] {
  if (!read.ok) throw new Error(`unexpected ${read.reason}`);
  return read.rows;
}

/** Feeds `pieces` one by one, parsing after each (flush), and returns every row. */
function readPieces(pieces: readonly string[], delimiter = ",", flush = true): string[][] {
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
