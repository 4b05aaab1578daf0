import { describe, expect, it } from "vitest";
import { convert, filenameOf, parseResultCsv, tokenSetFromWire } from "../../src/sdk";

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

  it("should rename repeated column names with _2, _3", () => {
    const { names, rows } = parseResultCsv("id,id,id\n1,2,3\n", []);

    expect(names).toEqual(["id", "id_2", "id_3"]);
    expect(rows).toEqual([{ id: "1", id_2: "2", id_3: "3" }]);
  });

  it("should return no rows for a result with only a header", () => {
    expect(parseResultCsv("a,b\n", []).rows).toEqual([]);
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
    ["", "STRING", null],
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
