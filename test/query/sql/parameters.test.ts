import { describe, expect, it } from "vitest";
import {
  bindParameters,
  canonicalParameters,
  parameterProblem,
  withTypedNulls,
  type Parameters,
} from "../../../src/worker/query/sql/parameters";
import { tokenize, type Token } from "../../../src/worker/query/sql/tokenizer";

function tokens(sql: string): Token[] {
  const tokenized = tokenize(sql);
  if (!tokenized.ok) throw new Error(tokenized.message);
  return tokenized.tokens;
}

function bound(sql: string, parameters: Parameters | null) {
  return bindParameters(tokens(sql), parameters);
}

describe("bindParameters", () => {
  it("should number named placeholders in order of first use, one number per key whatever the sigil", () => {
    expect(bound("SELECT :b, @a, $b, :a, 'x'", { a: "A", b: 2.5 })).toEqual({
      ok: true,
      sql: "SELECT ?1, ?2, ?1, ?2, 'x'",
      values: [2.5, "A"],
    });
  });

  it("should number positional placeholders as SQLite does, and bind integers as text cast by SQLite", () => {
    expect(bound("SELECT ?, ?3, ?2", [true, null, 7])).toEqual({
      ok: true,
      sql: "SELECT (+CAST(?1 AS INTEGER)), (+CAST(?3 AS INTEGER)), ?2",
      values: ["1", null, "7"],
    });
    // ? after ?3 is ?4.
    expect(bound("SELECT ?, ?3, ?, ?2", [true, null, 7, "x"])).toEqual({
      ok: true,
      sql: "SELECT (+CAST(?1 AS INTEGER)), (+CAST(?3 AS INTEGER)), ?4, ?2",
      values: ["1", null, "7", "x"],
    });
  });

  it("should bind an integer within ±(2^53−1) as INTEGER and any other number as REAL", () => {
    const result = bound("SELECT ?, ?, ?, ?, ?", [-(2 ** 53 - 1), 2 ** 53, 0.5, -0, 1e300]);

    expect(result).toEqual({
      ok: true,
      sql: "SELECT (+CAST(?1 AS INTEGER)), ?2, ?3, (+CAST(?4 AS INTEGER)), ?5",
      values: ["-9007199254740991", 2 ** 53, 0.5, "0", 1e300],
    });
  });

  it("should leave placeholders in strings, comments and quoted identifiers alone", () => {
    const sql = `SELECT ':a', "?", [@a], \`$a\`, /* :a ? */ x -- @a ?\n`;

    expect(bound(sql, null)).toEqual({ ok: true, sql, values: [] });
  });

  it("should keep a Tcl-style name followed by a digit from running into the number", () => {
    expect(bound("SELECT $a(x)1", { "a(x)": "v" })).toEqual({ ok: true, sql: "SELECT ?1 1", values: ["v"] });
  });
});

describe("withTypedNulls", () => {
  it("should put a NULL of each value's type where its placeholder was", () => {
    expect(withTypedNulls(tokens("SELECT :i, :r, :t, :n, :b"), { i: 1, r: 1.5, t: "x", n: null, b: false })).toEqual({
      ok: true,
      sql: "SELECT (CAST(NULL AS INTEGER)), (CAST(NULL AS REAL)), (CAST(NULL AS TEXT)), (NULL), (CAST(NULL AS INTEGER))",
      values: [],
    });
  });
});

describe("parameterProblem", () => {
  it.each<[string, Parameters | null, string]>([
    ["SELECT :region", null, "The placeholder :region has no value: the request has no Parameters."],
    ["SELECT :region, :min", { region: "north" }, 'The placeholder :min has no value: add "min" to Parameters.'],
    [
      "SELECT :region",
      { region: "north", max: 3 },
      'Parameters has "max", but Sql has no placeholder :max, @max or $max; remove it or use it.',
    ],
    ["SELECT ?, ?", [1], "The placeholder ? (number 2) has no value: Parameters has 1 value."],
    ["SELECT ?5", [1, 2], "The placeholder ?5 has no value: Parameters has 2 values."],
    ["SELECT ?0", [1], "The placeholder ?0 has no value: Parameters has 1 value."],
    [
      "SELECT ?1, ?3",
      [1, 2, 3],
      "Parameters has a value at position 2 (?2), but Sql has no placeholder for it; remove the value or use it.",
    ],
    [
      "SELECT 1",
      [1],
      "Parameters has a value at position 1 (?1), but Sql has no placeholder for it; remove the value or use it.",
    ],
    ["SELECT :a, ?", { a: 1 }, "Sql mixes named placeholders (:a) with positional ones (?); use one kind."],
    [
      "SELECT ?",
      { a: 1 },
      "Sql has the positional placeholder ?, but Parameters is an object, which binds :name, @name and $name; send an array.",
    ],
    [
      "SELECT @a",
      [1],
      "Sql has the named placeholder @a, but Parameters is an array, which binds ? and ?NNN; send an object keyed by name (without @).",
    ],
    ["SELECT ?", Array.from({ length: 101 }, () => 1), "Parameters has 101 values; a query binds at most 100."],
    [
      Array.from({ length: 101 }, (_, i) => `:p${i}`).join(", "),
      Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`p${i}`, i])),
      "Parameters has 101 values; a query binds at most 100.",
    ],
  ])("should refuse a mismatch, naming the placeholder (%#)", (sql, parameters, message) => {
    expect(parameterProblem(sql, parameters)).toBe(message);
  });

  it("should accept matching parameters, up to 100, and none for a query without placeholders", () => {
    expect(parameterProblem("SELECT 1", null)).toBeNull();
    expect(parameterProblem("SELECT 1", {})).toBeNull();
    expect(parameterProblem("SELECT 1", [])).toBeNull();
    expect(parameterProblem(`SELECT ${Array(100).fill("?").join(", ")}`, Array(100).fill(1))).toBeNull();
  });

  it("should leave SQL the tokenizer cannot read to the query, which fails with the tokenizer's message", () => {
    expect(parameterProblem("SELECT 'open :a", { b: 1 })).toBeNull();
  });
});

describe("canonicalParameters", () => {
  it("should not depend on key order, and take none, {} and [] alike", () => {
    expect(canonicalParameters({ b: 1, a: "x" })).toBe(canonicalParameters({ a: "x", b: 1 }));
    expect(canonicalParameters({ a: 1 })).not.toBe(canonicalParameters({ a: "1" }));
    expect(canonicalParameters([1, 2])).not.toBe(canonicalParameters([2, 1]));
    expect(new Set([null, undefined, {}, []].map(canonicalParameters)).size).toBe(1);
  });
});
