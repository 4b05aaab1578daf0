import { describe, expect, it } from "vitest";
import type { Parameters } from "../../../src/worker/query/sql/parameters";
import { runEngine, type EngineRun, type MemoryItem } from "../../support/engine";

// Where a Durable Object's SQLite allows less than sql.js: each statement
// runs in sql.js and in a table store, and gets the same answer, or, where
// the store truly cannot run it, a message naming the limit and what to do.

const ROWS: MemoryItem = {
  columns: [
    ["n", "INTEGER"],
    ["label", "STRING"],
  ],
  data: "n,label\n" + Array.from({ length: 200 }, (_, i) => `${i + 1},label ${i % 7}`).join("\n") + "\n",
};
const ITEMS: Record<string, MemoryItem> = { "a.d.rows": ROWS };

async function bothEngines(sql: string, parameters?: Parameters): Promise<{ sqljs: EngineRun; store: EngineRun }> {
  const sqljs = await runEngine(sql, ITEMS, { mode: "csv", parameters });
  const store = await runEngine(sql, ITEMS, { mode: "store", parameters });
  return { sqljs, store };
}

async function expectSameAnswer(sql: string, parameters?: Parameters): Promise<string> {
  const { sqljs, store } = await bothEngines(sql, parameters);
  expect(sqljs.outcome).toMatchObject({ engine: "sqljs", ok: true });
  expect(store.outcome, JSON.stringify(store.outcome)).toMatchObject({ engine: "store", ok: true });
  expect(store.csv).toBe(sqljs.csv);
  return store.csv;
}

async function expectStoreRefuses(sql: string, message: string): Promise<void> {
  const { sqljs, store } = await bothEngines(sql);
  expect(sqljs.outcome).toMatchObject({ engine: "sqljs", ok: true });
  expect(store.outcome).toMatchObject({ engine: "store", ok: false, message });
}

const list = (count: number, item: (i: number) => string, separator = ", ") =>
  Array.from({ length: count }, (_, i) => item(i)).join(separator);

describe("a table store's lower SQLite limits", () => {
  it("should answer an expression 90 levels deep as sql.js does, and name the limit of 100 past it", async () => {
    const csv = await expectSameAnswer(
      `SELECT count(*) FROM a.d.rows WHERE ${list(90, (i) => `n = ${i * 2}`, " OR ")}`,
    );
    expect(csv).toBe("count(*)\n89\n");

    await expectStoreRefuses(
      `SELECT count(*) FROM a.d.rows WHERE ${list(150, (i) => `n = ${i}`, " OR ")}`,
      "Failed: an expression in a table store may nest at most 100 levels deep (a Durable Object's limit; sql.js allows 1000), and each term of a chain such as a OR b OR … is a level. Use x IN (…) for a list of values, or split the expression.",
    );
  });

  it("should answer a function of 127 arguments as sql.js does, and name the limit past it", async () => {
    await expectSameAnswer(`SELECT max(${list(126, (i) => String(i))}, n) FROM a.d.rows WHERE n > 195`);

    await expectStoreRefuses(
      `SELECT max(${list(130, (i) => String(i))}, n) FROM a.d.rows`,
      "Failed: a function in a table store takes at most 127 arguments (a Durable Object's limit; sql.js allows 1000), and this call of max has more. Split it, e.g. max(max(…), max(…)).",
    );
  });

  it("should answer 100 ORDER BY and GROUP BY terms as sql.js does, and name the limit past it", async () => {
    await expectSameAnswer(`SELECT n FROM a.d.rows ORDER BY ${list(99, (i) => `n % ${i + 2}`)}, n LIMIT 5`);
    await expectSameAnswer(
      `SELECT count(*) FROM a.d.rows GROUP BY ${list(99, (i) => `n % ${i + 2}`)}, label ORDER BY 1 DESC LIMIT 3`,
    );

    await expectStoreRefuses(
      `SELECT n FROM a.d.rows ORDER BY ${list(101, (i) => `n % ${i + 2}`)} LIMIT 5`,
      "Failed: an ORDER BY in a table store may have at most 100 terms (a Durable Object's limit). Use fewer.",
    );
    await expectStoreRefuses(
      `SELECT count(*) FROM a.d.rows GROUP BY ${list(101, (i) => `n % ${i + 2}`)}`,
      "Failed: a GROUP BY in a table store may have at most 100 terms (a Durable Object's limit). Use fewer.",
    );
  });

  it("should name the limit of 100 columns for a subquery, as for the result", async () => {
    await expectStoreRefuses(
      `SELECT count(*) FROM (SELECT ${list(101, (i) => `n + ${i}`)} FROM a.d.rows)`,
      "Failed: a SELECT in a table store, a subquery's included, may have at most 100 columns (a Durable Object's limit). Select fewer columns.",
    );
  });

  it("should answer 100 bound values as sql.js does, and refuse 101 with the same message in both", async () => {
    const values = Array.from({ length: 100 }, (_, i) => i * 2);
    const csv = await expectSameAnswer(`SELECT count(*) FROM a.d.rows WHERE n IN (${list(100, () => "?")})`, values);
    expect(csv).toBe("count(*)\n99\n");

    const { sqljs, store } = await bothEngines(`SELECT count(*) FROM a.d.rows WHERE n IN (${list(101, () => "?")})`, [
      ...values,
      1,
    ]);
    // Both refuse before either engine runs anything.
    const message = "Failed: Parameters has 101 values; a query binds at most 100.";
    expect(sqljs.outcome).toMatchObject({ ok: false, message });
    expect(store.outcome).toMatchObject({ ok: false, message });
  });

  it("should name the function a store's SQLite does not offer, and what to use instead", async () => {
    await expectSameAnswer("SELECT pow(n, 2), ceil(n / 3.0), log(n), iif(n > 1, 'y', 'n') FROM a.d.rows WHERE n < 4");

    await expectStoreRefuses(
      "SELECT power(n, 2) FROM a.d.rows",
      "Failed: a table store's SQLite does not offer the function power (sql.js does); use pow instead.",
    );
  });

  it("should answer printf() with widths written in its format, and refuse widths the store would cut short", async () => {
    await expectSameAnswer(
      "SELECT printf('%.2f|%05d|%%|%-8s|', n * 1.5, n, label), format('%100000d', n) FROM a.d.rows LIMIT 3",
    );
    await expectSameAnswer("SELECT printf(?, n) FROM a.d.rows WHERE n < 4", ["%08.3f"]);

    const message =
      "Failed: printf() in a table store writes at most 100000 characters for a width or precision (a Durable Object's limit) and silently cuts longer ones, so the store runs it only when its format is written in the query (or bound) with every width and precision a number up to that ('%10d', '%.2f'; not '%*d'). Write the format so.";
    const { sqljs } = await bothEngines("SELECT length(printf('%.*c', 150000, 'x')) FROM a.d.rows LIMIT 1");
    expect(sqljs.csv).toBe("\"length(printf('%.*c', 150000, 'x'))\"\n150000\n");
    await expectStoreRefuses("SELECT length(printf('%.*c', 150000, 'x')) FROM a.d.rows LIMIT 1", message);
    await expectStoreRefuses("SELECT length(printf('%100001d', n)) FROM a.d.rows LIMIT 1", message);
  });

  it("should fail a join of more than 64 tables with the same message in both engines", async () => {
    const { sqljs, store } = await bothEngines(`SELECT count(*) FROM ${list(65, (i) => `a.d.rows r${i}`)}`);
    expect(sqljs.outcome).toMatchObject({ ok: false, message: "Failed: at most 64 tables in a join." });
    expect(store.outcome).toMatchObject({ ok: false, message: "Failed: at most 64 tables in a join." });
  });
});
