import { describe, expect, it } from "vitest";
import type { Parameters } from "../../../src/worker/query/sql/parameters";
import { runEngine, type MemoryItem, type SourceMode } from "../../support/engine";

// Parameters are bound by SQLite in both engines: sql.js (from the CSV or
// from column images) and a table store. Each query below runs in all three
// and must give the expected CSV, which follows SQLite's rules for a value
// bound with sqlite3_bind_int64 / _double / _text / _null.

const ITEMS: Record<string, MemoryItem> = {
  "a.d.sales": {
    columns: [
      ["id", "INTEGER"],
      ["region", "STRING"],
      ["amount", "DOUBLE"],
      ["code", "STRING"],
    ],
    data: "id,region,amount,code\n1,north,10.5,5\n2,south,3,05\n3,north,,x\n4,west,9007199254740991,5\n",
  },
};

const MODES: SourceMode[] = ["csv", "images", "store"];

async function csvIn(mode: SourceMode, sql: string, parameters: Parameters): Promise<string> {
  const run = await runEngine(sql, ITEMS, { mode, parameters });
  expect(run.outcome.ok ? null : run.outcome.message, `${mode}: ${sql}`).toBeNull();
  expect(run.outcome.engine).toBe(mode === "store" ? "store" : "sqljs");
  return run.csv;
}

describe.each(MODES)("parameters bound in %s", (mode) => {
  it("should bind each JSON type as its SQLite type, and name columns as the query wrote them", async () => {
    const csv = await csvIn(
      mode,
      "SELECT :i, typeof(:i), @big, typeof($big), :r, typeof(:r), :t, typeof(:t), :b, typeof(:b), :n, typeof(:n), :huge, typeof(:huge), :x / 2 FROM a.d.sales LIMIT 1",
      { i: 3_000_000_000, big: 9_007_199_254_740_991, r: 1.5, t: "007", b: true, n: null, huge: 1e20, x: 7 },
    );

    expect(csv).toBe(
      ":i,typeof(:i),@big,typeof($big),:r,typeof(:r),:t,typeof(:t),:b,typeof(:b),:n,typeof(:n),:huge,typeof(:huge),:x / 2\n" +
        "3000000000,integer,9007199254740991,integer,1.5,real,007,text,1,integer,,null,100000000000000000000.0,real,3\n",
    );
  });

  it("should filter and compare by the bound values, by name and by position", async () => {
    expect(
      await csvIn(mode, "SELECT id FROM a.d.sales WHERE region = :region AND amount > :min ORDER BY id", {
        region: "north",
        min: 10,
      }),
    ).toBe("id\n1\n");
    // SQLite's numbering: ? is 1, ?3 is 3, ?2 is 2.
    expect(
      await csvIn(mode, "SELECT id FROM a.d.sales WHERE id IN (?, ?3) OR amount = ?2 ORDER BY id", [1, 3, 4]),
    ).toBe("id\n1\n2\n4\n");
    expect(await csvIn(mode, "SELECT id FROM a.d.sales WHERE amount = ? ORDER BY id", [9_007_199_254_740_991])).toBe(
      "id\n4\n",
    );
  });

  it("should leave an integer without affinity, as a bare bound value is", async () => {
    // A TEXT column applies its affinity to the integer ('5' matches, '05' does not); a literal has none.
    const csv = await csvIn(mode, "SELECT id, code = :five, :five = '5', :five = 5 FROM a.d.sales ORDER BY id", {
      five: 5,
    });

    expect(csv).toBe("id,code = :five,:five = '5',:five = 5\n1,1,0,1\n2,0,0,1\n3,0,0,1\n4,1,0,1\n");
  });

  it("should take a string of digits as text, and a 64-bit integer sent as a string as text", async () => {
    const csv = await csvIn(mode, "SELECT ?1, typeof(?1), ?2, typeof(?2), ?1 = 5 FROM a.d.sales LIMIT 1", [
      "5",
      "9223372036854775807",
    ]);

    expect(csv).toBe("?1,typeof(?1),?2,typeof(?2),?1 = 5\n5,text,9223372036854775807,text,0\n");
  });

  it("should not take placeholders inside strings, comments or quoted identifiers", async () => {
    const csv = await csvIn(
      mode,
      "SELECT ':a ?' AS \"?x\", id AS [@b], /* $c ? */ :a AS a -- :d ?\nFROM a.d.sales WHERE id = :a",
      { a: 2 },
    );

    expect(csv).toBe("?x,@b,a\n:a ?,2,2\n");
  });
});
