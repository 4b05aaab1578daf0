import { beforeAll, describe, expect, it } from "vitest";
import { openDatabase, type Database } from "../../../src/worker/query/sqlite";
import { nestCompounds, sameProgramIn, STORE_MAX_COMPOUND_TERMS } from "../../../src/worker/query/store/compound-terms";
import { runEngine, seededRandom, type MemoryItem } from "../../support/engine";

// A Durable Object's SQLite allows 5 terms in a compound SELECT, sql.js 500.
// The store nests longer compounds from the left; a query must give the same
// answer in both engines, whatever the size of its items.

const MONTHS = Array.from({ length: 12 }, (_, i) => `m${String(i + 1).padStart(2, "0")}`);

function month(index: number): MemoryItem {
  return {
    columns: [
      ["day", "DATE"],
      ["amount", "INTEGER"],
      ["note", "STRING"],
    ],
    data:
      "day,amount,note\n" +
      Array.from({ length: 40 }, (_, d) => {
        const day = `2024-${String(index + 1).padStart(2, "0")}-${String((d % 28) + 1).padStart(2, "0")}`;
        return `${day},${(index * 37 + d * 11) % 50},note ${d % 6}`;
      }).join("\n") +
      "\n",
  };
}

const ITEMS: Record<string, MemoryItem> = Object.fromEntries(MONTHS.map((name, i) => [`a.sales.${name}`, month(i)]));

/** Runs `sql` in sql.js and with every item in a table store; both must succeed and agree byte for byte. */
async function expectSameInStore(sql: string): Promise<string> {
  const inSqlJs = await runEngine(sql, ITEMS, { mode: "csv" });
  const inStore = await runEngine(sql, ITEMS, { mode: "store" });
  expect(inSqlJs.outcome, JSON.stringify(inSqlJs.outcome)).toMatchObject({ engine: "sqljs", ok: true });
  expect(inStore.outcome, JSON.stringify(inStore.outcome)).toMatchObject({ engine: "store", ok: true });
  expect(inStore.csv).toBe(inSqlJs.csv);
  return inStore.csv;
}

function allMonths(select: (name: string) => string, op = "UNION ALL"): string {
  return MONTHS.map((name) => select(`a.sales.${name}`)).join(` ${op} `);
}

describe("compound SELECTs longer than a table store allows", () => {
  it("should run twelve monthly items joined by UNION ALL, as sql.js does", async () => {
    const csv = await expectSameInStore(
      `SELECT count(*), sum(amount), min(day), max(day) FROM (${allMonths((item) => `SELECT * FROM ${item}`)})`,
    );
    expect(csv).toBe("count(*),sum(amount),min(day),max(day)\n480,11740,2024-01-01,2024-12-28\n");
  });

  it("should keep a trailing ORDER BY, LIMIT and OFFSET outermost, ordering by name, alias and number", async () => {
    await expectSameInStore(
      `${allMonths((item) => `SELECT day, amount AS total, note FROM ${item} WHERE amount > 40`)} ORDER BY total DESC, day LIMIT 7 OFFSET 2`,
    );
    await expectSameInStore(
      `${allMonths((item) => `SELECT note, amount FROM ${item}`, "UNION")} ORDER BY 2 DESC, note NULLS LAST LIMIT 9`,
    );
    await expectSameInStore(
      `${allMonths((item) => `SELECT amount + 1, note FROM ${item}`, "UNION")} ORDER BY amount + 1, 2 DESC`,
    );
  });

  it("should keep SQL's left-to-right meaning for mixed UNION, EXCEPT, INTERSECT and UNION ALL", async () => {
    const terms = MONTHS.slice(0, 9).map((name, i) => `SELECT amount FROM a.sales.${name} WHERE amount % ${i + 2} = 0`);
    const ops = ["UNION", "EXCEPT", "UNION ALL", "INTERSECT", "UNION", "UNION ALL", "EXCEPT", "UNION ALL"];
    const sql = terms.reduce((text, term, i) => (i === 0 ? term : `${text} ${ops[i - 1]} ${term}`), "");
    const csv = await expectSameInStore(`${sql} ORDER BY 1`);
    expect(csv.split("\n").length).toBeGreaterThan(3);
  });

  it("should name the result's columns from the first SELECT, duplicate names and VALUES terms included", async () => {
    const csv = await expectSameInStore(
      `SELECT amount, amount, note AS amount FROM a.sales.m01 WHERE amount < 3 UNION ALL VALUES (-1, -2, 'v'), (-3, -4, 'w') UNION ALL ${MONTHS.slice(
        1,
        6,
      )
        .map((name) => `SELECT amount, 1, note FROM a.sales.${name} WHERE amount < 3`)
        .join(" UNION ALL ")} ORDER BY 3, 1`,
    );
    expect(csv.split("\n")[0]).toBe("amount,amount,amount");
  });

  it("should nest compounds inside subqueries, IN lists and common table expressions", async () => {
    await expectSameInStore(
      `WITH every AS (${allMonths((item) => `SELECT day, amount FROM ${item}`)}), best AS (SELECT max(amount) AS top FROM every)
       SELECT substr(day, 1, 7) AS month, count(*) FROM every, best WHERE amount = top GROUP BY month ORDER BY month`,
    );
    await expectSameInStore(
      `SELECT note, count(*) FROM a.sales.m01 WHERE amount IN (${allMonths((item) => `SELECT amount + 1 FROM ${item} WHERE note = 'note 2'`, "UNION")}) GROUP BY note ORDER BY note`,
    );
    await expectSameInStore(
      `SELECT (SELECT count(*) FROM (${allMonths((item) => `SELECT amount FROM ${item}`, "INTERSECT")})), (${allMonths((item) => `SELECT max(amount) FROM ${item}`, "UNION")} ORDER BY 1 LIMIT 1)`,
    );
  });

  it("should nest a compound that refers to the query around it", async () => {
    await expectSameInStore(
      `SELECT day, (SELECT count(*) FROM (${allMonths((item) => `SELECT amount FROM ${item} WHERE amount = o.amount`, "UNION ALL")})) FROM a.sales.m01 o ORDER BY day, 2 LIMIT 10`,
    );
  });

  it("should keep a WITH clause of the whole compound outside the nested terms", async () => {
    await expectSameInStore(
      `WITH big AS (SELECT 45 AS at_least) ${allMonths((item) => `SELECT day, amount FROM ${item}, big WHERE amount >= at_least`)} ORDER BY 1, 2`,
    );
  });

  it("should run a recursive common table expression whose recursive SELECT stays last", async () => {
    await expectSameInStore(
      `WITH RECURSIVE r(n) AS (${MONTHS.slice(0, 7)
        .map((name) => `SELECT min(amount) FROM a.sales.${name}`)
        .join(" UNION ")} UNION SELECT n + 10 FROM r WHERE n < 40) SELECT n FROM r ORDER BY n`,
    );
  });

  it("should keep COLLATE in a WHERE or ORDER BY, where it gives no result column a collation", async () => {
    await expectSameInStore(
      `${allMonths((item) => `SELECT upper(note) AS loud, amount FROM ${item} WHERE note = 'NOTE 3' COLLATE NOCASE`, "UNION")} ORDER BY loud COLLATE NOCASE DESC, 2 LIMIT 8`,
    );
  });

  it("should fail, naming the store's limit, where nesting could change the answer", async () => {
    const collate = `${allMonths((item) => `SELECT note${item.endsWith("m03") ? " COLLATE NOCASE" : ""} FROM ${item}`, "UNION")} ORDER BY 1`;
    const inSqlJs = await runEngine(collate, ITEMS, { mode: "csv" });
    const inStore = await runEngine(collate, ITEMS, { mode: "store" });

    expect(inSqlJs.outcome).toMatchObject({ engine: "sqljs", ok: true });
    expect(inStore.outcome).toMatchObject({
      engine: "store",
      ok: false,
      message:
        "Failed: a compound SELECT in a table store may have at most 5 terms (UNION, UNION ALL, INTERSECT, EXCEPT: a Durable Object's limit); this one has 12, and the store could not split it into nested ones because the query gives a result column a collation (COLLATE in a SELECT's columns or in VALUES), which could then apply differently. Nest the compound yourself (SELECT * FROM (its first terms) UNION …), or move COLLATE to the WHERE or ORDER BY.",
    });
  });
});

describe("nestCompounds", () => {
  let db: Database;

  beforeAll(async () => {
    db = await openDatabase();
    db.run("CREATE TABLE t (a INTEGER, b TEXT, c REAL)");
    db.run("CREATE TABLE u (a INTEGER, b TEXT, c REAL)");
    const random = seededRandom(7);
    const value = () => (random() < 0.15 ? "NULL" : String(Math.floor(random() * 6)));
    for (const table of ["t", "u"])
      for (let i = 0; i < 30; i++)
        db.run(
          `INSERT INTO ${table} VALUES (${value()}, ${random() < 0.5 ? `'x' || ${value()}` : value()}, ${value()} * 0.5)`,
        );
    return () => db.close();
  });

  it("should leave compounds of at most 5 terms as written", () => {
    const sql = "SELECT 1 UNION SELECT 2 UNION SELECT 3 UNION SELECT 4 UNION SELECT 5 ORDER BY 1";
    expect(nestCompounds(sql, null)).toEqual({ ok: true, sql });
  });

  it("should nest from the left, keeping a WITH clause, ORDER BY (as numbers) and LIMIT outside", () => {
    const terms = Array.from({ length: 10 }, (_, i) => `SELECT ${i} AS x`);
    const sql = `WITH w AS (SELECT 1) ${terms.join(" UNION ")} ORDER BY x DESC LIMIT 3;`;

    expect(nestCompounds(sql, sameProgramIn(db))).toEqual({
      ok: true,
      sql: `WITH w AS (SELECT 1) SELECT * FROM (SELECT * FROM (${terms.slice(0, 5).join(" UNION ")} ) UNION ${terms
        .slice(5, 9)
        .join(" UNION ")} ) UNION ${terms[9]} ORDER BY 1 DESC LIMIT 3;`,
    });
  });

  // Random compounds of 6 to 14 terms over two small tables: the nested form gives the same rows in sql.js.
  it("should give the same rows as the compound as written, for generated compounds", () => {
    const random = seededRandom(20260101);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
    const ops = ["UNION", "UNION ALL", "INTERSECT", "EXCEPT"];
    const columns = ["a, b", "b, a", "a + 1, b", "c, b", "a AS b, b AS a", "DISTINCT a, b", "max(a), b"];
    for (let round = 0; round < 300; round++) {
      const shape = pick(columns.slice(0, 5));
      const count = STORE_MAX_COMPOUND_TERMS + 1 + Math.floor(random() * 9);
      const terms = Array.from({ length: count }, (_, i) => {
        const table = pick(["t", "u"]);
        const what = random() < 0.2 ? pick(columns) : shape;
        const group = what.startsWith("max") ? " GROUP BY b" : "";
        // SQLite takes no ORDER BY after a VALUES term, and names a compound's columns from its first term.
        return random() < 0.1 && i > 0 && i < count - 1
          ? `VALUES (${Math.floor(random() * 6)}, 'x1')`
          : `SELECT ${what} FROM ${table} WHERE a ${pick(["<", ">", "=", "<>"])} ${Math.floor(random() * 6)}${group}`;
      });
      let sql = terms.reduce((text, term, i) => (i === 0 ? term : `${text} ${pick(ops)} ${term}`), "");
      const order = pick([
        "",
        " ORDER BY 1, 2",
        " ORDER BY 2 DESC, 1 LIMIT 5",
        " ORDER BY a, b NULLS LAST LIMIT 4 OFFSET 1",
        " ORDER BY b COLLATE NOCASE DESC, a LIMIT 6",
      ]);
      sql += order;
      const where = pick(["top", "sub", "in"]);
      if (where === "sub") sql = `SELECT count(*), sum(length(b)) FROM (${sql})`;
      if (where === "in") sql = `SELECT a, b FROM t WHERE (a, b) IN (${sql}) ORDER BY 1, 2`;
      let expected: string;
      try {
        expected = rows(db, sql, order === "" && where === "top");
      } catch {
        continue;
      }
      const nested = nestCompounds(sql, sameProgramIn(db));
      expect(nested.ok, sql).toBe(true);
      if (!nested.ok) continue;
      expect(maxTerms(nested.sql), nested.sql).toBeLessThanOrEqual(STORE_MAX_COMPOUND_TERMS);
      expect(rows(db, nested.sql, order === "" && where === "top"), sql).toBe(expected);
    }
  });

  it("should refuse a recursive SELECT that nesting would move into a subquery, naming the limit", () => {
    const sql = `WITH RECURSIVE r(n) AS (SELECT 1 UNION SELECT n + 1 FROM r WHERE n < 3 ${" UNION SELECT 9".repeat(5)}) SELECT n FROM r`;

    expect(nestCompounds(sql, null)).toEqual({
      ok: false,
      message:
        "Failed: a compound SELECT in a table store may have at most 5 terms (UNION, UNION ALL, INTERSECT, EXCEPT: a Durable Object's limit); this one has 7, and the store could not split it into nested ones because the recursive SELECT on r would move into a subquery. Put at most 4 recursive SELECTs last, or use fewer terms.",
    });
  });
});

/** The rows of `sql` as text, sorted when the statement leaves their order open. */
function rows(db: Database, sql: string, sort: boolean): string {
  const result = db.exec(sql)[0];
  const lines = (result?.values ?? []).map((row) => JSON.stringify(row));
  return (sort ? lines.sort() : lines).join("\n");
}

/** The most terms any one compound has in `sql`, counting operators between parentheses at each depth. */
function maxTerms(sql: string): number {
  const counts: number[] = [1];
  let most = 1;
  for (const word of sql.match(/\(|\)|\bUNION ALL\b|\bUNION\b|\bINTERSECT\b|\bEXCEPT\b/g) ?? []) {
    if (word === "(") counts.push(1);
    else if (word === ")") counts.pop();
    else most = Math.max(most, ++counts[counts.length - 1]!);
  }
  return most;
}
