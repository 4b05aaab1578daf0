import { describe, expect, it } from "vitest";
import {
  asciiUpperCase,
  isKeyword,
  significantTokens,
  tokenize,
  type Token,
  type TokenKind,
} from "../../../src/worker/query/sql/tokenizer";

function tokensOf(sql: string): Token[] {
  const result = tokenize(sql);
  if (!result.ok) throw new Error(`expected ${sql} to tokenize, got: ${result.message}`);
  return result.tokens;
}

function kindsAndTexts(sql: string): [TokenKind, string][] {
  return tokensOf(sql).map((token) => [token.kind, token.text]);
}

function significant(sql: string): string[] {
  return significantTokens(tokensOf(sql)).map((token) => token.text);
}

function errorOf(sql: string): { message: string; offset: number } {
  const result = tokenize(sql);
  if (result.ok) throw new Error(`expected ${sql} to fail`);
  return result;
}

describe("tokenize", () => {
  it("should cover the whole input, so the tokens' texts concatenate back to it", () => {
    const sql = "SELECT a, \"b\" -- note\nFROM [t] /* c */ WHERE x >= 1.5e3 AND y = 'it''s';";

    const tokens = tokensOf(sql);

    expect(tokens.map((token) => token.text).join("")).toBe(sql);
    for (const token of tokens) expect(sql.slice(token.start, token.end)).toBe(token.text);
  });

  it("should split a simple query into keywords, identifiers, operators and numbers", () => {
    expect(kindsAndTexts("SELECT a+1 FROM t;")).toEqual([
      ["identifier", "SELECT"],
      ["whitespace", " "],
      ["identifier", "a"],
      ["operator", "+"],
      ["number", "1"],
      ["whitespace", " "],
      ["identifier", "FROM"],
      ["whitespace", " "],
      ["identifier", "t"],
      ["semicolon", ";"],
    ]);
  });

  it("should read a -- comment up to, not including, the line end", () => {
    expect(kindsAndTexts("a -- x; DROP\nb")).toEqual([
      ["identifier", "a"],
      ["whitespace", " "],
      ["comment", "-- x; DROP"],
      ["whitespace", "\n"],
      ["identifier", "b"],
    ]);
  });

  it("should read a -- comment at the end of the text", () => {
    expect(kindsAndTexts("a--")).toEqual([
      ["identifier", "a"],
      ["comment", "--"],
    ]);
  });

  it("should read a block comment, which does not nest", () => {
    expect(kindsAndTexts("a/* x /* y */b */")).toEqual([
      ["identifier", "a"],
      ["comment", "/* x /* y */"],
      ["identifier", "b"],
      ["whitespace", " "],
      ["operator", "*"],
      ["operator", "/"],
    ]);
  });

  it("should run an unterminated block comment to the end of the text, as SQLite does", () => {
    expect(kindsAndTexts("SELECT 1 /* DELETE FROM t")).toEqual([
      ["identifier", "SELECT"],
      ["whitespace", " "],
      ["number", "1"],
      ["whitespace", " "],
      ["comment", "/* DELETE FROM t"],
    ]);
  });

  it("should not close a block comment on the slash that opened it", () => {
    expect(kindsAndTexts("/*/ x")).toEqual([["comment", "/*/ x"]]);
    expect(kindsAndTexts("/**/")).toEqual([["comment", "/**/"]]);
  });

  it("should read a lone /* at the very end as slash and star, as SQLite does", () => {
    expect(kindsAndTexts("2/*")).toEqual([
      ["number", "2"],
      ["operator", "/"],
      ["operator", "*"],
    ]);
  });

  it("should read string literals with doubled quotes and give their value", () => {
    const [token] = tokensOf("'it''s -- not a comment'");

    expect(token).toMatchObject({ kind: "string", value: "it's -- not a comment", start: 0, end: 24 });
  });

  it("should read an empty string and adjacent strings as separate tokens", () => {
    expect(kindsAndTexts("'''' ''")).toEqual([
      ["string", "''''"],
      ["whitespace", " "],
      ["string", "''"],
    ]);
  });

  it("should read blob literals in either case", () => {
    expect(kindsAndTexts("x'0aFF' X''")).toEqual([
      ["blob", "x'0aFF'"],
      ["whitespace", " "],
      ["blob", "X''"],
    ]);
  });

  it("should read x not followed by a quote as an identifier", () => {
    expect(kindsAndTexts("x xy")).toEqual([
      ["identifier", "x"],
      ["whitespace", " "],
      ["identifier", "xy"],
    ]);
  });

  it('should read "..." identifiers with "" escapes and give the unquoted value', () => {
    const [token] = tokensOf('"a ""b"" c"');

    expect(token).toMatchObject({ kind: "identifier", quote: '"', value: 'a "b" c' });
  });

  it("should read `...` identifiers with `` escapes", () => {
    const [token] = tokensOf("`a``b.c`");

    expect(token).toMatchObject({ kind: "identifier", quote: "`", value: "a`b.c" });
  });

  it("should read [...] identifiers, which have no escapes", () => {
    const [token] = tokensOf('[a [b"`]');

    expect(token).toMatchObject({ kind: "identifier", quote: "[", value: 'a [b"`' });
  });

  it("should give bare identifiers and keywords their text as value", () => {
    const [token] = tokensOf("SeLeCt");

    expect(token).toMatchObject({ kind: "identifier", quote: "none", value: "SeLeCt" });
    expect(isKeyword(token, "SELECT")).toBe(true);
  });

  it("should not treat a quoted word as a keyword", () => {
    const [token] = tokensOf('"select"');

    expect(isKeyword(token, "SELECT")).toBe(false);
  });

  it("should accept non-ASCII letters, digits, _ and $ in identifiers", () => {
    expect(kindsAndTexts("größe _x a$1 名前")).toEqual([
      ["identifier", "größe"],
      ["whitespace", " "],
      ["identifier", "_x"],
      ["whitespace", " "],
      ["identifier", "a$1"],
      ["whitespace", " "],
      ["identifier", "名前"],
    ]);
  });

  it("should read characters outside the BMP as identifier characters", () => {
    expect(kindsAndTexts("a😀b")).toEqual([["identifier", "a😀b"]]);
  });

  it("should read integers, reals, exponents, hexadecimal and digit separators", () => {
    expect(significant("1 1.5 .5 1. 1e10 1E+5 2.5e-3 0x1F 0XaB 1_000")).toEqual([
      "1",
      "1.5",
      ".5",
      "1.",
      "1e10",
      "1E+5",
      "2.5e-3",
      "0x1F",
      "0XaB",
      "1_000",
    ]);
    expect(tokensOf("0x1F").every((token) => token.kind === "number")).toBe(true);
  });

  it("should read a dot not followed by a digit as an operator", () => {
    expect(kindsAndTexts("t.a")).toEqual([
      ["identifier", "t"],
      ["operator", "."],
      ["identifier", "a"],
    ]);
  });

  it("should read a dot followed by a digit as a number, as SQLite does", () => {
    expect(kindsAndTexts("t.5")).toEqual([
      ["identifier", "t"],
      ["number", ".5"],
    ]);
  });

  it("should read every parameter form", () => {
    const tokens = significantTokens(tokensOf("? ?12 :name @name $name $a::b(c) #x"));

    expect(tokens.map((token) => [token.kind, token.text])).toEqual([
      ["parameter", "?"],
      ["parameter", "?12"],
      ["parameter", ":name"],
      ["parameter", "@name"],
      ["parameter", "$name"],
      ["parameter", "$a::b(c)"],
      ["parameter", "#x"],
    ]);
  });

  it("should read every multi-character operator as one token", () => {
    expect(significant("a||b<=c>=d<>e!=f==g<<h>>i->j->>k")).toEqual([
      "a",
      "||",
      "b",
      "<=",
      "c",
      ">=",
      "d",
      "<>",
      "e",
      "!=",
      "f",
      "==",
      "g",
      "<<",
      "h",
      ">>",
      "i",
      "->",
      "j",
      "->>",
      "k",
    ]);
  });

  it("should read single-character operators and punctuation", () => {
    const tokens = significantTokens(tokensOf("( ) , . + - * / % = < > & | ~ ;"));

    expect(tokens.map((token) => token.text)).toEqual([..."(),.+-*/%=<>&|~;"]);
    expect(tokens.at(-1)?.kind).toBe("semicolon");
  });

  it("should read a minus before a number as an operator, not a comment", () => {
    expect(significant("1 - -2")).toEqual(["1", "-", "-", "2"]);
  });

  it("should read white space of every kind, a byte order mark included", () => {
    expect(kindsAndTexts("\uFEFFa\t\r\n\f b")).toEqual([
      ["whitespace", "\uFEFF"],
      ["identifier", "a"],
      ["whitespace", "\t\r\n\f "],
      ["identifier", "b"],
    ]);
  });

  it("should give offsets in the original text", () => {
    const tokens = significantTokens(tokensOf("  SELECT  x"));

    expect(tokens.map((token) => [token.start, token.end])).toEqual([
      [2, 8],
      [10, 11],
    ]);
  });

  it("should tokenize the empty text as no tokens", () => {
    expect(tokensOf("")).toEqual([]);
  });
});

describe("tokenize errors", () => {
  it("should report an unterminated string literal with its offset", () => {
    expect(errorOf("SELECT 'abc")).toMatchObject({
      message: "A string literal ('...') is not closed with '",
      offset: 7,
    });
  });

  it("should report a string whose last quote is an escaped quote as unterminated", () => {
    expect(errorOf("SELECT 'it''")).toMatchObject({ offset: 7 });
  });

  it("should report unterminated quoted identifiers of each kind", () => {
    expect(errorOf('SELECT "abc').message).toBe('A quoted identifier ("...") is not closed with "');
    expect(errorOf("SELECT `abc").message).toBe("A quoted identifier (`...`) is not closed with `");
    expect(errorOf("SELECT [abc").message).toBe("A bracket-quoted identifier ([...]) is not closed with ']'");
  });

  it("should report a malformed blob literal", () => {
    expect(errorOf("SELECT x'abc'").message).toContain("even number of hexadecimal digits");
    expect(errorOf("SELECT x'zz'").message).toContain("even number of hexadecimal digits");
  });

  it("should report a number glued to letters as SQLite does", () => {
    expect(errorOf("SELECT 1abc")).toMatchObject({ message: 'unrecognized token: "1abc"', offset: 7 });
  });

  it("should report a lone ! and other characters SQLite does not know", () => {
    expect(errorOf("SELECT !a").message).toBe('unrecognized token: "!"');
    expect(errorOf("SELECT \\").message).toBe('unrecognized token: "\\"');
  });

  it("should report a parameter prefix without a name", () => {
    expect(errorOf("SELECT :").message).toBe('unrecognized token: ":"');
    expect(errorOf("SELECT @ 1").message).toBe('unrecognized token: "@"');
  });

  it("should refuse a NUL character, after which SQLite would stop reading", () => {
    expect(errorOf("SELECT 1\0; DROP TABLE t").message).toBe("The query contains a NUL character");
  });
});

describe("asciiUpperCase", () => {
  it("should change ASCII letters only", () => {
    expect(asciiUpperCase("ſelect ä")).toBe("ſELECT ä");
  });
});
