import { describe, expect, it } from "vitest";
import { runEngine, UnsampledSource, type MemoryItem } from "../../support/engine";

const SALES: Record<string, MemoryItem> = {
  "alice.shop.sales": {
    columns: [
      ["id", "INTEGER"],
      ["region", "STRING"],
      ["amount", "DOUBLE"],
      ["paid", "BOOLEAN"],
      ["day", "DATE"],
    ],
    data: 'id,region,amount,paid,day\n1,north,10.5,true,2024-01-02\n2,south,3,false,2024-01-03\n3,north,,true,\n4,"we,st",9007199254740993,false,2024-02-01\n',
  },
  "alice.shop.regions": {
    columns: [
      ["region", "STRING"],
      ["manager", "STRING"],
    ],
    data: "region,manager\nnorth,Ann\nsouth,Bo'b\n",
  },
};

describe("table store", () => {
  it("should give the same bytes and result schema as sql.js", async () => {
    const queries = [
      "SELECT * FROM alice.shop.sales ORDER BY id",
      "SELECT region, sum(amount), count(*), avg(id) FROM alice.shop.sales GROUP BY region ORDER BY region",
      "SELECT s.id, r.manager FROM alice.shop.sales s JOIN alice.shop.regions r ON r.region = s.region ORDER BY s.id",
      "SELECT 1, 1.0, 'x''y', NULL, x'00ff', 9223372036854775807, 1e300, -0.0, 2.5e-7, 1e999 FROM alice.shop.sales LIMIT 1",
      "SELECT rowid, id FROM alice.shop.sales WHERE paid ORDER BY rowid DESC",
      "SELECT * FROM (VALUES (1, 'a'), (2, 'b')) JOIN alice.shop.regions",
      // SQLite's own math functions in both (sql.js's legacy extension functions are off).
      "SELECT log(100), ln(100), ceil(amount), floor(amount), sign(amount), pow(2, 10), round(amount) FROM alice.shop.sales ORDER BY id",
      "WITH t AS (SELECT id FROM alice.shop.sales) SELECT count(*) FROM t;",
      "SELECT id FROM alice.shop.sales ORDER BY id DESC; -- the last ones first\n;  /* done */",
    ];
    for (const sql of queries) {
      const sqljs = await runEngine(sql, SALES);
      const store = await runEngine(sql, SALES, { mode: "store" });
      expect(sqljs.outcome.ok, sql).toBe(true);
      expect(store.outcome.engine, sql).toBe("store");
      expect(store.outcome.ok ? null : store.outcome.message, sql).toBeNull();
      expect(store.csv, sql).toBe(sqljs.csv);
      expect(store.outcome.ok && store.outcome.columns, sql).toEqual(sqljs.outcome.ok && sqljs.outcome.columns);
    }
  });

  it("should refuse writes and names of tables the query did not name", async () => {
    for (const sql of [
      "DELETE FROM alice.shop.sales",
      "SELECT * FROM sqlite_master",
      "SELECT * FROM pragma_table_list",
      "SELECT * FROM data",
      "SELECT * FROM _cf_KV",
    ]) {
      const store = await runEngine(`${sql}`, SALES, { mode: "store" });
      expect(store.outcome.ok, sql).toBe(false);
      console.log(sql, "→", !store.outcome.ok && store.outcome.message);
    }
  });
});

describe("SQLite's messages from a table store", () => {
  it("should read as sql.js's do, without the Durable Object's offset and code", async () => {
    const run = await runEngine("SELECT sqlite_version() FROM alice.shop.sales", SALES, { mode: "store" });

    expect(run.outcome).toMatchObject({
      ok: false,
      engine: "store",
      message: "Failed: not authorized to use function: sqlite_version.",
    });
  });
});

describe("limits a single step of a table store runs past", () => {
  it("should fail a query whose one long step ran past the time limit, naming it", async () => {
    const sql =
      // As long as the data makes it (max(id) is 4): the engine's check on a row of NULLs ends at once.
      "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < (SELECT max(id) FROM alice.shop.sales) * 750000) SELECT count(*) FROM c, alice.shop.sales LIMIT 1";

    // Its estimate would refuse it (limits.test.ts); without samples it reaches the store, whose own stop holds.
    const quick = await runEngine(sql, SALES, {
      mode: "store",
      source: new UnsampledSource(SALES, "store"),
      limits: { timeLimitMs: 200 },
    });
    const ample = await runEngine(sql, SALES, { mode: "store", limits: { timeLimitMs: 60_000 } });

    expect(quick.outcome).toMatchObject({
      engine: "store",
      ok: false,
      message: "Failed: the query ran longer than the time limit of 0.2 s (QUERY_TIME_LIMIT_SECONDS).",
    });
    expect(ample.csv).toBe("count(*)\n12000000\n");
  });

  it("should name the store's value limit when a value is too long for it", async () => {
    const run = await runEngine("SELECT randomblob(6000000) FROM alice.shop.sales LIMIT 1", SALES, {
      mode: "store",
    });

    expect(run.outcome).toMatchObject({
      engine: "store",
      ok: false,
      message:
        "Failed: the query makes a value longer than a table store allows (2 MB; a blob counts twice, written as hex). Select shorter values.",
    });
  });
});
