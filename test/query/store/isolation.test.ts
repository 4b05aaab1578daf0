import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { tableStoreStub } from "../../../src/worker/query/store/store-state";
import type { StoreQuery, StoreSource, TableStore } from "../../../src/worker/query/store/table-store";
import { tableLayout } from "../../../src/worker/query/table-layout";
import { randomToken } from "../../../src/worker/util/crypto";
import { limitsWith, MemorySource, runEngine, storedSchema, type MemoryItem } from "../../support/engine";
import { storeTables } from "../../support/store";

// A table store runs SQL next to the rows it keeps: a query may read only the
// data items it names, and may never change the store. The engine checks
// both before it hands the query over; the store itself still refuses any
// statement that writes, whatever it is sent.

const ROWS = 50;
const SECRET: MemoryItem = {
  columns: [
    ["n", "INTEGER"],
    ["secret", "STRING"],
  ],
  data: "n,secret\n" + Array.from({ length: ROWS }, (_, i) => `${i + 1},s${i + 1}`).join("\n") + "\n",
};
const OTHER: MemoryItem = { columns: [["k", "INTEGER"]], data: "k\n1\n2\n" };
const ITEMS: Record<string, MemoryItem> = { "a.d.secret": SECRET, "a.d.other": OTHER };
const INTACT = `count(*),sum(n)\n${ROWS},${(ROWS * (ROWS + 1)) / 2}\n`;

/** A table store of SECRET, built from a copy put in R2. */
async function builtStore(): Promise<{ objectKey: string; source: StoreSource }> {
  const objectKey = `test-isolation/${randomToken(8)}/secret.csv`;
  await env.BUCKET.put(objectKey, SECRET.data as string);
  const source = { objectKey, layout: tableLayout(storedSchema(SECRET)), rows: ROWS, name: "secret" };
  expect(await tableStoreStub(env, objectKey).build(source, limitsWith().maxStoreBytes)).toMatchObject({
    ok: true,
    rows: ROWS,
  });
  return { objectKey, source };
}

/** A StoreQuery as the engine would send it, with its parts replaced. */
function storeQuery(sql: string, names: string[], parts: Partial<StoreQuery> = {}): StoreQuery {
  const limits = limitsWith();
  return {
    queryId: `test-${randomToken(8)}`,
    sql,
    names,
    hostAlias: "t0",
    others: [],
    limits,
    timeLeftMs: 30_000,
    maxStoreBytes: limits.maxStoreBytes,
    resultKey: `results/test-${randomToken(8)}.csv`,
    ...parts,
  };
}

/** Ends SQL smuggled after the common table expression with a statement the wrapper completes. */
const REOPEN = 'WITH "__dqs_result"("c0") AS (SELECT 1';

/** The store's answer to a request, or a failed outcome when the call itself throws (the object was reset). */
async function attempt(objectKey: string, request: StoreQuery): Promise<{ ok: boolean }> {
  return tableStoreStub(env, objectKey)
    .query(request)
    .catch((error: unknown) => ({ ok: false, thrown: String(error) }));
}

/** Sends the SQL as it is; the call must fail, write no result, and leave rows and tables as they were. */
async function expectRefusedAndIntact(sql: string): Promise<void> {
  const { objectKey } = await builtStore();
  const before = await storeTables(objectKey);
  // The attack aims at the real table, as if its random name had leaked.
  const request = storeQuery(sql.replaceAll('"data"', `"${await dataTableOf(objectKey)}"`), ["1"]);

  const outcome = await attempt(objectKey, request);

  expect(outcome.ok).toBe(false);
  expect(await contentsOf(objectKey)).toBe(INTACT);
  expect(await storeTables(objectKey)).toEqual(before);
  expect(await tableStoreStub(env, objectKey).rows()).toBe(ROWS);
  expect(await env.BUCKET.head(request.resultKey)).toBeNull();
}

/** The name of the table that holds the store's rows (random, so no query can shadow it). */
async function dataTableOf(objectKey: string): Promise<string> {
  const tables = await storeTables(objectKey);
  expect(tables).toHaveLength(1);
  return tables[0]!;
}

/** The store's rows as a query of the engine sees them: their count and sum. */
async function contentsOf(objectKey: string): Promise<string> {
  const request = storeQuery("SELECT count(*), sum(n) FROM t0", ["count(*)", "sum(n)"]);
  const outcome = await tableStoreStub(env, objectKey).query(request);
  expect(outcome.ok ? null : outcome.message).toBeNull();
  const result = await env.BUCKET.get(request.resultKey);
  return result ? result.text() : "";
}

describe("a query run in a table store through the engine", () => {
  it.each([
    "SELECT * FROM sqlite_master",
    'SELECT name, sql FROM "sqlite_master"',
    "SELECT * FROM [SQLITE_SCHEMA]",
    "SELECT * FROM sqlite_temp_master",
    "SELECT * FROM pragma_table_list",
    "SELECT * FROM pragma_table_info('data')",
    "SELECT * FROM PRAGMA_TABLE_INFO('data')",
    "SELECT name FROM pragma_function_list",
    "SELECT * FROM _cf_KV",
    "SELECT * FROM `_cf_METADATA`",
    "SELECT * FROM dbstat",
  ])("should refuse %s, naming the table, before the store runs anything", async (sql) => {
    const source = new MemorySource(ITEMS, "store");

    const run = await runEngine(`${sql}, a.d.secret`, ITEMS, { mode: "store", source });

    expect(run.outcome.ok).toBe(false);
    expect(!run.outcome.ok && run.outcome.message).toMatch(
      /^Failed: \S+ is not a data item; a query reads only the data items it names \(account\.dataset\.data\)\.$/,
    );
    expect(source.opened).toEqual([]);
    expect(run.csv).toBe("");
  });

  it.each([
    "SELECT * FROM data, a.d.secret",
    'SELECT * FROM a.d.secret, "data"',
    "SELECT * FROM a.d.secret WHERE n IN (SELECT n FROM data)",
    "SELECT * FROM a.d.secret, t1",
    "SELECT * FROM a.d.secret, q_AAAAAAAAAAA_t1",
    "SELECT * FROM a.d.secret, __dqs_result",
  ])("should refuse %s: a table the query did not name as a data item does not exist", async (sql) => {
    const source = new MemorySource(ITEMS, "store");

    const run = await runEngine(sql, ITEMS, { mode: "store", source });

    expect(run.outcome.ok).toBe(false);
    expect(!run.outcome.ok && run.outcome.message).toMatch(/^Failed: no such table: /);
    expect(source.opened).toEqual([]);
  });

  it.each(["SELECT * FROM main.sqlite_schema, a.d.secret", "SELECT * FROM a.d.secret, main.data"])(
    "should refuse %s: a two-part name is no data item",
    async (sql) => {
      const source = new MemorySource(ITEMS, "store");

      const run = await runEngine(sql, ITEMS, { mode: "store", source });

      expect(!run.outcome.ok && run.outcome.message).toMatch(
        /^Failed: "main\.\w+" has two parts; a data item is named/,
      );
      expect(source.opened).toEqual([]);
    },
  );

  it("should refuse an item the owner may not read, in the store as in sql.js", async () => {
    const run = await runEngine("SELECT * FROM a.d.secret, a.d.hidden", ITEMS, { mode: "store" });

    expect(!run.outcome.ok && run.outcome.message).toBe(
      "Failed: table a.d.hidden does not exist, or you may not read it.",
    );
  });

  it.each([
    "DELETE FROM a.d.secret",
    "UPDATE a.d.secret SET n = 0",
    "INSERT INTO a.d.secret VALUES (1, 'x')",
    "DROP TABLE a.d.secret",
    "WITH x AS (SELECT 1) DELETE FROM a.d.secret",
    "SELECT 1 FROM a.d.secret; DELETE FROM a.d.secret",
  ])("should refuse %s as a statement that is not read-only", async (sql) => {
    const source = new MemorySource(ITEMS, "store");

    const run = await runEngine(sql, ITEMS, { mode: "store", source });

    expect(run.outcome.ok).toBe(false);
    expect(source.opened).toEqual([]);
    const after = await runEngine("SELECT count(*), sum(n) FROM a.d.secret", ITEMS, { mode: "store", source });
    expect(after.outcome.engine).toBe("store");
    expect(after.csv).toBe(INTACT);
  });
});

describe("TableStore.query called directly, past the engine's checks", () => {
  it.each([
    ["a DELETE after the common table expression", 'SELECT 1) DELETE FROM "data" /*'],
    ["a DELETE with RETURNING", 'SELECT 1) DELETE FROM "data" RETURNING n /*'],
    ["an UPDATE", 'SELECT 1) UPDATE "data" SET n = 0 /*'],
    ["an INSERT", 'SELECT 1) INSERT INTO "data" SELECT * FROM "data" /*'],
    ["a SELECT, then a DELETE", 'SELECT 1) SELECT 1; DELETE FROM "data" /*'],
    ["a PRAGMA", `SELECT 1) SELECT 1; PRAGMA writable_schema = 1; ${REOPEN}`],
  ])("should fail and leave the store as it was when the SQL smuggles in %s", async (_what, sql) => {
    await expectRefusedAndIntact(sql);
  });

  // More than one statement is refused before anything runs (rowsWritten would see the last one only, DDL none).
  it.each([
    ["a DELETE, then the query", `SELECT 1) SELECT 1; DELETE FROM "data"; ${REOPEN}`],
    ["a DROP TABLE, then the query", `SELECT 1) SELECT 1; DROP TABLE "data"; ${REOPEN}`],
    ["a DROP TABLE as the last statement", 'SELECT 1) SELECT 1; DROP TABLE "data" /*'],
    ["an ALTER TABLE", `SELECT 1) SELECT 1; ALTER TABLE "data" RENAME TO "gone"; ${REOPEN}`],
    ["a CREATE TABLE", `SELECT 1) SELECT 1; CREATE TABLE "data2" AS SELECT 1; ${REOPEN}`],
  ])("should fail and leave the store as it was when the SQL smuggles in %s", async (_what, sql) => {
    await expectRefusedAndIntact(sql);
  });

  // Aliases other than the engine's t0, t1, … are refused, and every table name is quoted.
  it("should leave the store as it was when an item brought in has a hostile alias", async () => {
    const { objectKey } = await builtStore();
    const before = await storeTables(objectKey);
    const otherKey = `test-isolation/${randomToken(8)}/other.csv`;
    await env.BUCKET.put(otherKey, OTHER.data as string);
    const alias = `t1"; DROP TABLE "${await dataTableOf(objectKey)}"; SELECT "`;
    const request = storeQuery(`SELECT count(*) FROM t0, "${alias.replace(/"/g, '""')}"`, ["count(*)"], {
      others: [
        {
          alias,
          source: { objectKey: otherKey, layout: tableLayout(storedSchema(OTHER)), rows: 2, name: "other" },
          columns: null,
        },
      ],
    });

    await attempt(objectKey, request);

    expect(await contentsOf(objectKey)).toBe(INTACT);
    expect(await storeTables(objectKey)).toEqual(before);
  });

  it("should fail, and drop what it brought in, when an item brought in is gone", async () => {
    const { objectKey, source } = await builtStore();
    const request = storeQuery("SELECT count(*) FROM t0, t1", ["count(*)"], {
      others: [{ alias: "t1", source: { ...source, objectKey: `${objectKey}.gone`, name: "other" }, columns: null }],
    });

    const outcome = await tableStoreStub(env, objectKey).query(request);

    expect(outcome).toEqual({
      ok: false,
      cancelled: false,
      message: "Failed: the data of other was deleted while the query ran.",
    });
    expect((await storeTables(objectKey)).filter((name) => name.startsWith("q_"))).toEqual([]);
  });

  it("should bring each item in under a table of its own query, dropped when the query ends", async () => {
    const { objectKey, source } = await builtStore();
    const request = storeQuery("SELECT count(*) FROM t0 JOIN t1 ON t1.n = t0.n", ["count(*)"], {
      others: [{ alias: "t1", source: { ...source, name: "copy" }, columns: ["n"] }],
    });

    const outcome = await tableStoreStub(env, objectKey).query(request);

    expect(outcome).toMatchObject({ ok: true, rowCount: 1 });
    expect(await (await env.BUCKET.get(request.resultKey))!.text()).toBe(`count(*)\n${ROWS}\n`);
    expect((await storeTables(objectKey)).filter((name) => name.startsWith("q_"))).toEqual([]);
  });

  it("should refuse to run before the store is built, as a failure worth retrying", async () => {
    const objectKey = `test-isolation/${randomToken(8)}/never-built.csv`;

    const outcome = await tableStoreStub(env, objectKey).query(storeQuery("SELECT count(*) FROM t0", ["count(*)"]));

    expect(outcome).toEqual({ ok: false, cancelled: false, transient: true, message: "the table store is not built" });
  });
});

describe("tables left by a query whose object stopped", () => {
  it("should be dropped by the next query", async () => {
    const { objectKey } = await builtStore();
    await runInDurableObject(tableStoreStub(env, objectKey), (_instance: TableStore, state) => {
      state.storage.sql.exec('CREATE TABLE "q_leftover_t1" ("n" INTEGER)');
    });
    expect(await storeTables(objectKey)).toContain("q_leftover_t1");

    expect(await contentsOf(objectKey)).toBe(INTACT);

    expect((await storeTables(objectKey)).filter((name) => name.startsWith("q_"))).toEqual([]);
  });
});
