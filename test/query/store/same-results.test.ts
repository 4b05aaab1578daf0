import { describe, expect, it } from "vitest";
import type { DataItemReference } from "../../../src/worker/query/sql/table-names";
import type { LoadableItem, QuerySource } from "../../../src/worker/query/engine/evaluate-sql";
import type { StoreQuery, StoreQueryOutcome } from "../../../src/worker/query/store/table-store";
import { csvCell, MemorySource, runEngine, type MemoryItem } from "../../support/engine";

// The same query, run by sql.js and by a table store, must give the same
// result file byte for byte and the same result column types: the store
// quotes each value (quote()) and the shared result writer writes it.

const LONG_TEXT = "long ".repeat(700) + "end";

/** Rows of the host item: id, a 64-bit integer, a REAL, text, a boolean, a date. */
const WIDE_ROWS: string[][] = [
  ["1", "9223372036854775807", "5", "plain", "true", "2024-01-01"],
  ["2", "-9223372036854775808", "-0.0", "a,b", "false", "2024-01-02"],
  ["3", "9007199254740993", "1e308", 'say "hi"', "TRUE", ""],
  ["4", "0", "1e999", "multi\nline", "", "2024-02-29"],
  ["5", "-1", "-1e999", "it's", "0", "2024-03-01"],
  ["6", "", "2.5e-7", "ünïcode ✓ 日本 🎉", "1", "2024-03-02"],
  ["7", "42", "0.1", "tab\there", "false", "2024-03-03"],
  ["8", "3", "123456789.125", LONG_TEXT, "true", "2024-03-04"],
  ["9", "-9007199254740993", "1.7976931348623157e308", "crlf\r\nend", "true", "2024-03-05"],
  ["10", "7", "4.9e-324", "  spaced  ", "false", "2024-03-06"],
  ["11", "7", "", "", "", ""],
  ["12", "1099511627776", "-123.5", "'quoted'", "true", "2024-03-07"],
];

const WIDE: MemoryItem = {
  columns: [
    ["id", "INTEGER"],
    ["i64", "INTEGER"],
    ["r", "DOUBLE"],
    ["txt", "STRING"],
    ["flag", "BOOLEAN"],
    ["day", "DATE"],
  ],
  data: "id,i64,r,txt,flag,day\n" + WIDE_ROWS.map((row) => row.map(csvCell).join(",")).join("\n") + "\n",
};

/** A second item, smaller than WIDE, to join with it. */
const SMALL: MemoryItem = {
  columns: [
    ["k", "INTEGER"],
    ["label", "STRING"],
    ["w", "DOUBLE"],
  ],
  data: 'k,label,w\n1,one,1.5\n2,"tw,o",2\n3,,3e300\n7,seven,-0.0\n12,twelve,\n',
};

const ITEMS: Record<string, MemoryItem> = { "a.d.wide": WIDE, "a.d.small": SMALL };

const QUERIES = [
  "SELECT * FROM a.d.wide ORDER BY id",
  "SELECT id, typeof(i64), typeof(r), typeof(txt), typeof(flag), typeof(day) FROM a.d.wide ORDER BY id",
  "SELECT id, hex(txt), length(txt) FROM a.d.wide ORDER BY id",
  "SELECT id, r, r * 2, -r, r / 3, CAST(r AS INTEGER) FROM a.d.wide ORDER BY id",
  "SELECT i64, i64 + 0, i64 * 1.0, CAST(i64 AS TEXT) FROM a.d.wide ORDER BY id",
  "SELECT 1, 1.0, -0.0, 1e308, 1e999, -1e999, 9223372036854775807, -9223372036854775808, 2.0 / 3 FROM a.d.wide LIMIT 1",
  "SELECT NULL, '', x'', x'00ff7f', zeroblob(3), CAST('a,b' AS BLOB), CAST(x'e697a5' AS TEXT), 'x''y' FROM a.d.wide LIMIT 1",
  "SELECT 'line1' || char(10) || 'line2', 'tab' || char(9), 'cr' || char(13), '\"', ',', '日本語', '🎉' FROM a.d.wide LIMIT 1",
  "SELECT id, txt FROM a.d.wide ORDER BY txt NULLS FIRST, id LIMIT 4 OFFSET 3",
  "SELECT id FROM a.d.wide ORDER BY r DESC NULLS LAST LIMIT 5",
  "SELECT id, r FROM a.d.wide ORDER BY r LIMIT -1 OFFSET 9",
  "SELECT id, txt FROM a.d.wide WHERE id < 4 UNION ALL SELECT k, label FROM a.d.small ORDER BY 1 DESC, 2 LIMIT 6",
  "SELECT txt FROM a.d.wide UNION SELECT label FROM a.d.small ORDER BY 1",
  "SELECT id FROM a.d.wide EXCEPT SELECT k FROM a.d.small INTERSECT SELECT id FROM a.d.wide WHERE id > 2 ORDER BY 1",
  "SELECT id, i64, sum(i64) OVER (ORDER BY id), row_number() OVER (PARTITION BY flag ORDER BY id DESC), lag(txt, 2) OVER (ORDER BY id), avg(r) OVER (ORDER BY id ROWS 1 PRECEDING) FROM a.d.wide ORDER BY id",
  "SELECT flag, group_concat(id, '|') OVER w, first_value(txt) OVER w FROM a.d.wide WINDOW w AS (PARTITION BY flag ORDER BY id) ORDER BY flag, id",
  "WITH cheap AS (SELECT id, r FROM a.d.wide WHERE r < 1) SELECT count(*), sum(r), max(id) FROM cheap",
  "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 40) SELECT x, x * 1.5, (SELECT txt FROM a.d.wide WHERE id = x) FROM n ORDER BY x DESC",
  "WITH RECURSIVE fib(a, b, i) AS (SELECT 0, 1, 0 UNION ALL SELECT b, a + b, i + 1 FROM fib WHERE i < 95) SELECT i, a, (SELECT max(i64) FROM a.d.wide) > a FROM fib",
  "SELECT id, (SELECT count(*) FROM a.d.small s WHERE s.k <= w.id) FROM a.d.wide w WHERE id IN (SELECT k FROM a.d.small) ORDER BY id",
  "SELECT * FROM (SELECT id, r FROM a.d.wide ORDER BY id DESC LIMIT 5) ORDER BY r",
  'SELECT id, id, txt AS id, i64 AS "id" FROM a.d.wide ORDER BY 1 LIMIT 3',
  "SELECT w.*, s.* FROM a.d.wide w JOIN a.d.small s ON s.k = w.id ORDER BY w.id",
  "SELECT w.id, s.label FROM a.d.wide w LEFT JOIN a.d.small s ON s.k = w.id ORDER BY w.id",
  "SELECT rowid, id FROM a.d.wide ORDER BY rowid DESC",
  "SELECT s.rowid, s.oid, s._rowid_, s.k FROM a.d.small s ORDER BY 1",
  "SELECT w.rowid, s.rowid FROM a.d.wide w, a.d.small s WHERE w.id = s.k ORDER BY 1",
  "SELECT count(*), total(r), min(i64), max(i64), sum(CASE WHEN flag THEN 1 END) FROM a.d.wide",
  "SELECT * FROM (VALUES (1, 'x'), (2.5, NULL)) JOIN a.d.wide ON id = 1",
  "SELECT * FROM a.d.wide;",
  "SELECT id FROM a.d.wide ORDER BY id /* a comment */ ;\n",
  "SELECT id FROM a.d.wide WHERE 0",
  "SELECT __dqs_result.id FROM a.d.wide AS __dqs_result ORDER BY 1 LIMIT 2",
  "SELECT printf('%.20f', r), quote(txt), quote(r), unicode(txt) FROM a.d.wide ORDER BY id",
];

/**
 * A store-mode source in which some items have no table store: the planner
 * sees them as small items, which the store brings in from their CSV.
 */
class PartlyStored implements QuerySource {
  private readonly inner: MemorySource;

  constructor(
    items: Record<string, MemoryItem>,
    private readonly withoutStore: ReadonlySet<string>,
  ) {
    this.inner = new MemorySource(items, "store");
  }

  async find(reference: DataItemReference): Promise<LoadableItem | null> {
    const item = await this.inner.find(reference);
    const key = `${reference.account}.${reference.dataset}.${reference.data}`;
    return item && this.withoutStore.has(key) ? { ...item, store: null } : item;
  }

  open(item: LoadableItem): Promise<ReadableStream<Uint8Array> | null> {
    return this.inner.open(item);
  }

  openImage(key: string): Promise<Uint8Array | null> {
    return this.inner.openImage(key);
  }

  queryStore(objectKey: string, request: StoreQuery): Promise<StoreQueryOutcome> {
    return this.inner.queryStore(objectKey, request);
  }

  sample(item: LoadableItem, used: ReadonlySet<string> | null, count: number) {
    return this.inner.sample(item, used, count);
  }

  get opened(): readonly string[] {
    return this.inner.opened;
  }
}

async function expectSameResults(sql: string, store: Awaited<ReturnType<typeof runEngine>>): Promise<void> {
  const sqljs = await runEngine(sql, ITEMS);
  if (!sqljs.outcome.ok) throw new Error(`sql.js: ${sqljs.outcome.message}`);
  expect(sqljs.outcome.engine).toBe("sqljs");
  expect(store.outcome.engine).toBe("store");
  expect(store.outcome.ok ? null : store.outcome.message).toBeNull();
  expect(store.csv).toBe(sqljs.csv);
  expect(store.outcome.ok && store.outcome.columns).toEqual(sqljs.outcome.columns);
  expect(store.outcome.ok && store.outcome.rowCount).toBe(sqljs.outcome.rowCount);
  expect(store.outcome.ok && store.outcome.size).toBe(sqljs.outcome.size);
}

describe("a query in a table store", () => {
  it.each(QUERIES)("should give the bytes and column types sql.js gives for %s", async (sql) => {
    await expectSameResults(sql, await runEngine(sql, ITEMS, { mode: "store" }));
  });

  it.each(QUERIES.filter((sql) => sql.includes("a.d.small") && sql.includes("a.d.wide")))(
    "should give the same with the small item brought in from its CSV, not its store: %s",
    async (sql) => {
      const source = new PartlyStored(ITEMS, new Set(["a.d.small"]));

      const run = await runEngine(sql, ITEMS, { mode: "store", source });

      await expectSameResults(sql, run);
      expect(source.opened).toEqual(["store:a.d.wide"]);
    },
  );

  it("should run in the store of the item with more rows, bringing the other in", async () => {
    const sql = "SELECT count(*) FROM a.d.wide w JOIN a.d.small s ON s.k = w.id";
    const source = new MemorySource(ITEMS, "store");

    const run = await runEngine(sql, ITEMS, { mode: "store", source });

    expect(run.csv).toBe("count(*)\n5\n");
    expect(source.opened).toEqual(["store:a.d.wide"]);
    expect(run.outcome.bytesLoaded).toBeGreaterThan(0);
  });

  // quote() stops at the first NUL; the store sends such text itself beside it.
  it("should keep text with a NUL character whole, as sql.js does", async () => {
    const items: Record<string, MemoryItem> = {
      "a.d.nul": { columns: [["txt", "STRING"]], data: `txt\nnul\0inside\n` },
    };
    for (const sql of [
      "SELECT txt, length(txt), hex(txt) FROM a.d.nul",
      "SELECT char(0), 'a' || char(0) || 'b' FROM a.d.nul",
    ]) {
      const sqljs = await runEngine(sql, items);
      const store = await runEngine(sql, items, { mode: "store" });

      expect(sqljs.csv, sql).toContain("\0");
      expect(store.csv, sql).toBe(sqljs.csv);
    }
  });

  it.each([
    "SELECT id FROM a.d.wide ORDER BY id; -- the end",
    "SELECT id FROM a.d.wide ORDER BY id;\n;  /* done */ ;",
    "SELECT id FROM a.d.wide ORDER BY id -- the end",
  ])("should run a query that ends with semicolons and comments, as sql.js does: %j", async (sql) => {
    await expectSameResults(sql, await runEngine(sql, ITEMS, { mode: "store" }));
  });

  // The store's table has a random name, so no common table expression of the query can hide it.
  it.each([
    "WITH data AS (SELECT 1 AS id) SELECT count(*), max(w.id) FROM a.d.wide w",
    'WITH "DATA"(id) AS (VALUES (99)) SELECT d.id, w.id FROM a.d.wide w, "DATA" d WHERE w.id < 3 ORDER BY 2',
  ])("should read the item's rows when the query has a common table expression named data: %s", async (sql) => {
    await expectSameResults(sql, await runEngine(sql, ITEMS, { mode: "store" }));
  });

  describe("result column types", () => {
    const TYPED: Record<string, MemoryItem> = {
      "a.d.typed": {
        columns: [
          ["id", "INTEGER"],
          ["ok", "BOOLEAN"],
          ["day", "DATE"],
          ["at", "TIMESTAMP"],
        ],
        data: "id,ok,day,at\n1,true,2024-03-01,2024-03-01 18:07:14\n2,0,,2024-03-02T08:00:00.5+01:00\n3,,2024-03-03,\n",
      },
    };
    const cases: [string, string[]][] = [
      ["SELECT id, ok, day, at FROM a.d.typed ORDER BY id", ["INTEGER", "BOOLEAN", "DATE", "TIMESTAMP"]],
      ["SELECT * FROM a.d.typed WHERE id = 3", ["INTEGER", "BOOLEAN", "DATE", "TIMESTAMP"]],
      [
        "SELECT t.day AS d, x.at FROM a.d.typed t JOIN (SELECT id, at FROM a.d.typed) x USING (id)",
        ["DATE", "TIMESTAMP"],
      ],
      ["WITH c AS (SELECT ok, at FROM a.d.typed) SELECT at, ok FROM c WHERE ok IS NOT NULL", ["TIMESTAMP", "BOOLEAN"]],
      ["SELECT day FROM a.d.typed WHERE day IS NULL", ["DATE"]],
      [
        "SELECT (SELECT max(id) FROM a.d.typed) AS n, (SELECT day FROM a.d.typed WHERE id = 1) AS first",
        ["INTEGER", "DATE"],
      ],
      ["SELECT max(day) FROM a.d.typed", ["STRING"]],
      [
        "SELECT day || '', ok + 0, CAST(at AS TEXT), +day FROM a.d.typed WHERE id = 1",
        ["STRING", "INTEGER", "STRING", "STRING"],
      ],
      ["SELECT day FROM a.d.typed UNION ALL SELECT '2024-13-01'", ["STRING"]],
      ["SELECT at FROM a.d.typed UNION ALL SELECT '2024-03-01T18:07:14'", ["STRING"]],
      ["SELECT at FROM a.d.typed UNION ALL SELECT '2024-03-01 18:07:14.25'", ["TIMESTAMP"]],
      ["SELECT ok FROM a.d.typed UNION ALL SELECT 2", ["INTEGER"]],
      ["SELECT day FROM a.d.typed UNION ALL SELECT '2024-02-29'", ["DATE"]],
      ["SELECT 'x' UNION ALL SELECT day FROM a.d.typed", ["STRING"]],
    ];

    it.each(cases)("should type the columns of %s alike in every engine", async (sql, types) => {
      for (const mode of ["csv", "images", "store"] as const) {
        const run = await runEngine(sql, TYPED, { mode });
        expect(run.outcome.ok ? run.outcome.columns.map((c) => c.type) : run.outcome.message, mode).toEqual(types);
      }
    });

    it("should keep the types in a query with parameters, in every engine", async () => {
      for (const mode of ["csv", "images", "store"] as const) {
        const run = await runEngine("SELECT day, at, :label AS label FROM a.d.typed WHERE id > :min", TYPED, {
          mode,
          parameters: { label: "x", min: 1 },
        });
        expect(run.outcome.ok ? run.outcome.columns.map((c) => c.type) : run.outcome.message, mode).toEqual([
          "DATE",
          "TIMESTAMP",
          "STRING",
        ]);
      }
    });

    it("should hold the stored forms it names: 1/0, YYYY-MM-DD, and SQLite's YYYY-MM-DD HH:MM:SS in UTC", async () => {
      const run = await runEngine("SELECT id, ok, day, at FROM a.d.typed ORDER BY id", TYPED, { mode: "store" });
      expect(run.csv).toBe(
        "id,ok,day,at\n1,1,2024-03-01,2024-03-01 18:07:14\n2,0,,2024-03-02 07:00:00.5\n3,,2024-03-03,\n",
      );
    });
  });

  it("should read nothing but its own rows when the query names one item", async () => {
    const run = await runEngine("SELECT count(*) FROM a.d.wide", ITEMS, { mode: "store" });

    expect(run.csv).toBe("count(*)\n12\n");
    expect(run.outcome.bytesLoaded).toBe(0);
  });
});
