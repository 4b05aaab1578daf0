import * as Papa from "papaparse";
import { describe, expect, it } from "vitest";
import { FallbackParser, isTrimmedByJs, type Newline, type ParsedRows } from "../../src/worker/ingest/csv-fallback";
import { ADVERSARIAL_SHAPES, seeded } from "./adversarial-csv";

/** papaparse's own answer, with its errors reduced to the rows they are on, as the fallback keeps them. */
function papaparse(input: string, delimiter: string, newline: Newline, ignoreLastRow: boolean): ParsedRows {
  const parser = new Papa.Parser({ delimiter, newline, quoteChar: '"' });
  const result = parser.parse(input, 0, ignoreLastRow) as ParsedRows;
  const rows = [...new Set(result.errors.map((error) => error.row))];
  return { data: result.data, errors: rows.map((row) => ({ row })), meta: { cursor: result.meta.cursor } };
}

function fallback(input: string, delimiter: string, newline: Newline, ignoreLastRow: boolean): ParsedRows {
  const { data, errors, meta } = new FallbackParser(delimiter, newline).parse(input, 0, ignoreLastRow);
  return { data, errors, meta: { cursor: meta.cursor } };
}

/** Text of CSV-ish tokens, heavy on what papaparse decides with care: quotes, and spaces after them. */
function quoteSoup(random: ReturnType<typeof seeded>, delimiter: string, newline: string): string {
  const tokens = ["a", "12", delimiter, delimiter, '"', '"', '""', newline, newline, " ", "  "];
  const rare = ["\r", "\n", "\r\n", "\t", "\u00a0", "\u3000", "\u2028", "\ufeff", "\u200b", "x y", ",", ";"];
  let text = "";
  const count = random.below(60);
  for (let i = 0; i < count; i++) text += random.next() < 0.85 ? random.pick(tokens) : random.pick(rare);
  return text;
}

describe("FallbackParser against papaparse", () => {
  for (const [delimiter, newline] of [
    [",", "\n"],
    [",", "\r\n"],
    [",", "\r"],
    [";", "\r\n"],
    ["\t", "\n"],
    [" ", "\n"],
  ] as const) {
    it(`should give papaparse's rows, cursor and malformed rows (delimiter ${JSON.stringify(delimiter)}, line ending ${JSON.stringify(newline)})`, () => {
      for (let seed = 1; seed <= 3000; seed++) {
        const random = seeded(seed * 104_729 + delimiter.charCodeAt(0) + newline.length);
        const text = quoteSoup(random, delimiter, newline);
        for (const ignoreLastRow of [true, false]) {
          expect({ seed, ignoreLastRow, ...fallback(text, delimiter, newline, ignoreLastRow) }).toEqual({
            seed,
            ignoreLastRow,
            ...papaparse(text, delimiter, newline, ignoreLastRow),
          });
        }
      }
    });
  }

  it("should give papaparse's reading of every adversarial shape", () => {
    for (const [name, make] of Object.entries(ADVERSARIAL_SHAPES)) {
      const text = make(3000);
      for (const newline of ["\n", "\r\n", "\r"] as const) {
        for (const ignoreLastRow of [true, false]) {
          expect({ name, ...fallback(text, ",", newline, ignoreLastRow) }).toEqual({
            name,
            ...papaparse(text, ",", newline, ignoreLastRow),
          });
        }
      }
    }
  });

  it("should flag a row once however many stray quotes it has", () => {
    const text = 'a\n"x"y"z"w"\nb\n';
    const papaErrors = new Papa.Parser({ delimiter: ",", newline: "\n", quoteChar: '"' }).parse(text, 0, true).errors;
    expect(papaErrors).toHaveLength(3);
    expect(fallback(text, ",", "\n", true)).toEqual({
      data: [["a"], ['x"y"z"w'], ["b"]],
      errors: [{ row: 1 }],
      meta: { cursor: text.length },
    });
  });
});

describe("isTrimmedByJs", () => {
  it("should agree with String#trim on every UTF-16 code unit", () => {
    const differ: number[] = [];
    for (let code = 0; code <= 0xffff; code++) {
      if (isTrimmedByJs(code) !== (String.fromCharCode(code).trim() === "")) differ.push(code);
    }
    expect(differ).toEqual([]);
  });
});
