import { describe, expect, it } from "vitest";
import { convert, filenameOf, parseResultCsv, readCsvHead, rowsOfPage, tokenSetFromWire } from "../../src/sdk";

describe("parseResultCsv", () => {
  it("should keep a row whose only field is NULL, and drop only the final line end", () => {
    const { rows } = parseResultCsv("a\n1\n\n3\n\n", [{ name: "a", type: "INTEGER" }]);

    expect(rows).toEqual([{ a: 1 }, { a: null }, { a: 3 }, { a: null }]);
  });

  it("should read quoted fields with commas, quotes and line breaks", () => {
    const { rows } = parseResultCsv('s,t\n"a, ""b""","x\ny"\n', [
      { name: "s", type: "STRING" },
      { name: "t", type: "STRING" },
    ]);

    expect(rows).toEqual([{ s: 'a, "b"', t: "x\ny" }]);
  });

  it('should read an empty field as NULL and "" as the empty string, in any column and at the end of a line', () => {
    const { rows } = parseResultCsv('s,t\n"",\n,""\n"a""",""\n', [
      { name: "s", type: "STRING" },
      { name: "t", type: "STRING" },
    ]);

    expect(rows).toEqual([
      { s: "", t: null },
      { s: null, t: "" },
      { s: 'a"', t: "" },
    ]);
  });

  it("should rename repeated column names with _2, _3", () => {
    const { names, rows } = parseResultCsv("id,id,id\n1,2,3\n", []);

    expect(names).toEqual(["id", "id_2", "id_3"]);
    expect(rows).toEqual([{ id: "1", id_2: "2", id_3: "3" }]);
  });

  it("should return no rows for a result with only a header", () => {
    expect(parseResultCsv("a,b\n", []).rows).toEqual([]);
  });
});

/** `text` as a byte stream in chunks of `size` bytes, counting the chunks read and whether it was cancelled. */
function chunked(text: string, size: number) {
  const bytes = new TextEncoder().encode(text);
  const seen = { pulled: 0, cancelled: false, chunks: Math.ceil(bytes.length / size) };
  let at = 0;
  const body = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        if (at >= bytes.length) return controller.close();
        seen.pulled++;
        controller.enqueue(bytes.slice(at, at + size));
        at += size;
      },
      cancel() {
        seen.cancelled = true;
      },
    },
    { highWaterMark: 0 },
  );
  return { body, seen };
}

describe("readCsvHead", () => {
  const csv = 'id,note\n1,"line\nbreak, ""quoted"""\n2,\n3,"Ünï\n\ny"\n4,plain\n';

  it("should stop after the header and `limit` records, line ends inside quotes included, and say more follow", async () => {
    for (const size of [1, 3, 7, csv.length]) {
      const { body, seen } = chunked(`${csv}${"5,more\n".repeat(1000)}`, size);

      const head = await readCsvHead(body, 3);

      expect(head).toEqual({ text: 'id,note\n1,"line\nbreak, ""quoted"""\n2,\n3,"Ünï\n\ny"\n', more: true });
      expect(parseResultCsv(head.text, []).rows).toEqual([
        { id: "1", note: 'line\nbreak, "quoted"' },
        { id: "2", note: null },
        { id: "3", note: "Ünï\n\ny" },
      ]);
      expect(seen.cancelled).toBe(true);
      expect(seen.pulled).toBeLessThan(seen.chunks);
    }
  });

  it("should read a result with no more than `limit` rows to its end and say nothing more follows", async () => {
    for (const limit of [4, 5]) {
      const { body } = chunked(csv, 2);

      expect(await readCsvHead(body, limit)).toEqual({ text: csv, more: false });
    }
    expect(await readCsvHead(chunked("a\n1\n", 1).body, 0)).toEqual({ text: "a\n", more: true });
  });
});

describe("convert", () => {
  it.each([
    ["42", "INTEGER", 42],
    ["-9223372036854775808", "INTEGER", -9223372036854775808n],
    ["2.0", "DOUBLE", 2],
    ["1e-3", "DOUBLE", 0.001],
    ["TRUE", "BOOLEAN", true],
    ["0", "BOOLEAN", false],
    ["2024-01-02", "DATE", "2024-01-02"],
    ["007", "STRING", "007"],
    ["", "STRING", ""],
    [null, "STRING", null],
    [null, "INTEGER", null],
  ])("should read %j as %s", (field, type, value) => {
    expect(convert(field, type)).toEqual(value);
  });
});

describe("filenameOf", () => {
  it.each([
    ['attachment; filename="orders.csv"', "orders.csv"],
    ["attachment; filename=plain.csv", "plain.csv"],
    ["attachment; filename=\"x.csv\"; filename*=UTF-8''%C3%BCber.csv", "über.csv"],
    [null, null],
  ])("should read %j", (header, name) => {
    expect(filenameOf(header)).toBe(name);
  });
});

describe("tokenSetFromWire", () => {
  it("should turn a JwtResponse's Data into dates", () => {
    const tokens = tokenSetFromWire({
      TokenType: "Bearer",
      AccessToken: "a",
      AccessTokenExpiresOn: "2026-11-22T08:00:00Z",
      RefreshToken: "r",
      RefreshTokenExpiresOn: "2027-01-06T07:00:00Z",
    });

    expect(tokens.accessTokenExpiresAt.toISOString()).toBe("2026-11-22T08:00:00.000Z");
    expect(tokens.refreshTokenExpiresAt.toISOString()).toBe("2027-01-06T07:00:00.000Z");
  });
});

describe("rowsOfPage", () => {
  it('should keep the empty string "" apart from NULL', () => {
    const { rows } = rowsOfPage({
      Columns: [{ Name: "s", DataType: "STRING" }],
      Rows: [[""], [null], ["x"]],
      RowCount: 3,
      NextCursor: null,
    });

    expect(rows).toEqual([{ s: "" }, { s: null }, { s: "x" }]);
  });
});
