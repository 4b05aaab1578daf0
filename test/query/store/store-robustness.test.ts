import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { tableStoreStub } from "../../../src/worker/query/store/store-state";
import { tableLayout } from "../../../src/worker/query/table-layout";
import { randomToken } from "../../../src/worker/util/crypto";
import { limitsWith, MemorySource, runEngine, storedSchema, type MemoryItem } from "../../support/engine";
import { storeTables } from "../../support/store";

// What a hostile probe of the table store found (issue 12): queries that
// stop part way, wide results, builds that cannot succeed, and two queries
// on one store at once.

const BIG: MemoryItem = {
  columns: [
    ["n", "INTEGER"],
    ["label", "STRING"],
  ],
  data: "n,label\n" + Array.from({ length: 3000 }, (_, i) => `${i + 1},label ${i + 1}`).join("\n") + "\n",
};
const SMALL: MemoryItem = {
  columns: [
    ["k", "INTEGER"],
    ["note", "STRING"],
  ],
  data: "k,note\n1,one\n2,two\n",
};
const ITEMS: Record<string, MemoryItem> = { "a.d.big": BIG, "a.d.small": SMALL };
const JOIN = "SELECT count(*) FROM a.d.big JOIN a.d.small ON n = k";

function wide(columns: number): MemoryItem {
  const names = Array.from({ length: columns }, (_, i) => `c${i}`);
  return {
    columns: names.map((name) => [name, "INTEGER"] as const),
    data: `${names.join(",")}\n${names.map((_, i) => i).join(",")}\n`,
  };
}

describe("a table store after a query stopped between rows", () => {
  it("should still run a join once a query on it stopped at QUERY_MAX_RESULT_ROWS", async () => {
    const source = new MemorySource(ITEMS, "store");
    const stopped = await runEngine("SELECT n FROM a.d.big", ITEMS, { source, limits: { maxResultRows: 5 } });
    expect(stopped.outcome).toMatchObject({ engine: "store", ok: false });

    const join = await runEngine(JOIN, ITEMS, { source });

    expect(join.outcome).toMatchObject({ engine: "store", ok: true });
    expect(join.csv).toBe("count(*)\n2\n");
  });
});

describe("result width in a table store", () => {
  it("should return 60 result columns, as sql.js does", async () => {
    const items = { "a.d.wide": wide(60) };
    const inSqlJs = await runEngine("SELECT * FROM a.d.wide", items, { mode: "csv" });
    const inStore = await runEngine("SELECT * FROM a.d.wide", items, { mode: "store" });

    expect(inSqlJs.outcome).toMatchObject({ engine: "sqljs", ok: true });
    expect(inStore.outcome).toMatchObject({ engine: "store", ok: true });
    expect(inStore.csv).toBe(inSqlJs.csv);
  });

  it("should fail a result wider than a store's SQLite allows with a message naming the limit", async () => {
    const items = { "a.d.wide": wide(60) };

    const inStore = await runEngine("SELECT *, * FROM a.d.wide", items, { mode: "store" });

    expect(inStore.outcome).toMatchObject({
      engine: "store",
      ok: false,
      message:
        "Failed: a query in a table store can return at most 100 columns; this one returns 120. Select fewer columns.",
    });
  });

  it("should fail a query that uses more of another item's columns than a store's table may have, naming the limit", async () => {
    const items = { ...ITEMS, "a.d.wide": wide(150) };
    const sum = Array.from({ length: 101 }, (_, i) => `w.c${i}`).join(" + ");

    const run = await runEngine(`SELECT count(*) FROM a.d.big b JOIN a.d.wide w ON b.n = ${sum}`, items, {
      mode: "store",
    });

    expect(run.outcome).toMatchObject({
      engine: "store",
      ok: false,
      message:
        "Failed: a table store can bring in at most 100 columns of wide for a query; this one uses 101. Name fewer of its columns.",
    });
  });

  it("should keep text with a NUL, blobs, REAL and NULL values as sql.js does", async () => {
    const items = { "a.d.wide": wide(3) };
    const sql = "SELECT *, 'a' || char(0) || 'b' AS nul, x'00ff' AS blob, 1.5 AS half, NULL AS empty FROM a.d.wide";
    const inSqlJs = await runEngine(sql, items, { mode: "csv" });
    const inStore = await runEngine(sql, items, { mode: "store" });

    expect(inSqlJs.outcome).toMatchObject({ engine: "sqljs", ok: true });
    expect(inStore.outcome).toMatchObject({ engine: "store", ok: true });
    expect(inStore.csv).toBe(inSqlJs.csv);
  });
});

describe("builds SQLite refuses as literals or at all", () => {
  /** Builds the store of `item`, stored under a new key; the outcome, or what the call threw. */
  async function build(item: MemoryItem, name: string) {
    const objectKey = `test-store/${randomToken(8)}/${name}`;
    await env.BUCKET.put(objectKey, item.data as string);
    const source = { objectKey, layout: tableLayout(storedSchema(item)), rows: 1, name };
    const built = await tableStoreStub(env, objectKey)
      .build(source, limitsWith().maxStoreBytes)
      .catch((error: unknown) => ({ thrown: String(error) }));
    return { built, objectKey };
  }

  it("should answer a failed build (not throw, which the queue retries and leaves 'building' for good) when SQLite refuses the table", async () => {
    const { built, objectKey } = await build(wide(150), "wide.csv");

    expect(built).toMatchObject({ ok: false, message: expect.stringContaining("too many columns") });
    expect(await storeTables(objectKey)).toEqual([]);
  });

  it("should build a row too long for one statement as literals, binding its text", async () => {
    const names = Array.from({ length: 50 }, (_, i) => `c${i}`);
    const item: MemoryItem = {
      columns: names.map((name) => [name, "STRING"] as const),
      data: `${names.join(",")}\n${names.map(() => "x".repeat(1999)).join(",")}\n`,
    };

    const { built } = await build(item, "long.csv");

    expect(built).toMatchObject({ ok: true, rows: 1 });
  });
});

describe("two queries on one store at once", () => {
  it("should run a join while another query on the same store streams its rows", async () => {
    const source = new MemorySource(ITEMS, "store");
    await runEngine("SELECT 1 FROM a.d.big LIMIT 1", ITEMS, { source }); // builds the stores first

    const [streaming, join] = await Promise.all([
      runEngine("SELECT a.n, b.label FROM a.d.big a JOIN a.d.big b ON b.n <= 20", ITEMS, { source }),
      runEngine(JOIN, ITEMS, { source }),
    ]);

    expect(streaming.outcome).toMatchObject({ engine: "store", ok: true, rowCount: 60_000 });
    // A query's await (R2 writes, the checkpoint's timer) lets the other one's DROP TABLE meet an open cursor.
    expect(join.outcome).toMatchObject({ engine: "store", ok: true });
  });
});

describe("the store's own SQL limits", () => {
  it("should fail a LIKE pattern longer than a store takes with a message naming the limit", async () => {
    const pattern = "%".padEnd(60, "x");
    const run = await runEngine(`SELECT count(*) FROM a.d.big WHERE label LIKE '${pattern}'`, ITEMS, { mode: "store" });

    expect(run.outcome).toMatchObject({
      engine: "store",
      ok: false,
      message:
        "Failed: a LIKE or GLOB pattern in a table store may be at most 50 bytes of UTF-8 (a Durable Object's limit). Use a shorter pattern, or instr() or substr() for a long literal.",
    });
  });
});

describe("work a table store could not stop", () => {
  it("should fail a query that never ends even without data, naming the time limit, before the store runs it", async () => {
    const source = new MemorySource(ITEMS, "store");
    const endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c, a.d.big";

    const stopped = await runEngine(endless, ITEMS, { source, limits: { timeLimitMs: 1000 } });
    const after = await runEngine("SELECT count(*) FROM a.d.big", ITEMS, { source });

    expect(stopped.outcome).toMatchObject({
      engine: "store",
      ok: false,
      message:
        "Failed: the query ran longer than the time limit of 1 s (QUERY_TIME_LIMIT_SECONDS) without its data, so it would not end in the table store either.",
    });
    expect(after.outcome).toMatchObject({ engine: "store", ok: true });
    expect(after.csv).toBe("count(*)\n3000\n");
  });

  it("should run a bounded recursive query in the store with the answer sql.js gives", async () => {
    const sql =
      "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 10) SELECT count(*) FROM c JOIN a.d.big ON n = x";
    const inSqlJs = await runEngine(sql, ITEMS, { mode: "csv" });
    const inStore = await runEngine(sql, ITEMS, { mode: "store" });

    expect(inStore.outcome).toMatchObject({ engine: "store", ok: true });
    expect(inStore.csv).toBe(inSqlJs.csv);
    expect(inStore.csv).toBe("count(*)\n10\n");
  });
});
