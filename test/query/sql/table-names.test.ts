import { describe, expect, it } from "vitest";
import {
  columnsUsed,
  rewriteTableNames,
  type ColumnSelection,
  type DataItemReference,
} from "../../../src/worker/query/sql/table-names";
import { tokenize, type Token } from "../../../src/worker/query/sql/tokenizer";
import { openDatabase } from "../../../src/worker/query/sqlite";

function rewrite(sql: string): { sql: string; tables: DataItemReference[] } {
  const result = rewriteTableNames(sql);
  if (!result.ok) throw new Error(`expected ${sql} to rewrite, got: ${result.message}`);
  return { sql: result.sql, tables: result.tables };
}

function failure(sql: string): string {
  const result = rewriteTableNames(sql);
  if (result.ok) throw new Error(`expected ${sql} to fail, got: ${result.sql}`);
  return result.message;
}

function item(account: string, dataset: string, data: string, alias: string): DataItemReference {
  return { account, dataset, data, alias };
}

describe("rewriteTableNames", () => {
  describe("quoting forms", () => {
    it("should rewrite a bare three-part name and keep the data name as the table's name", () => {
      expect(rewrite("SELECT orders.id FROM acme.sales.orders")).toEqual({
        sql: 'SELECT orders.id FROM "t0" AS "orders"',
        tables: [item("acme", "sales", "orders", "t0")],
      });
    });

    it('should rewrite parts quoted with "..." and unquote them', () => {
      expect(rewrite('SELECT "orders.csv".id FROM "acme"."sales"."orders.csv"')).toEqual({
        sql: 'SELECT "orders.csv".id FROM "t0" AS "orders.csv"',
        tables: [item("acme", "sales", "orders.csv", "t0")],
      });
    });

    it("should rewrite parts quoted with `...` and [...]", () => {
      expect(rewrite("SELECT * FROM `my-acct`.[my-set].`q4-2025`").tables).toEqual([
        item("my-acct", "my-set", "q4-2025", "t0"),
      ]);
    });

    it("should rewrite a mix of bare and quoted parts", () => {
      expect(rewrite('SELECT * FROM acme."sales-eu".`orders.csv` o').sql).toBe('SELECT * FROM "t0" o');
    });

    it("should rewrite the whole name in one pair of backticks, the rest after two dots being the data name", () => {
      expect(rewrite("SELECT * FROM `acme.sales.orders.2025.csv`")).toEqual({
        sql: 'SELECT * FROM "t0"',
        tables: [item("acme", "sales", "orders.2025.csv", "t0")],
      });
    });

    it("should accept white space and comments between the parts of a name", () => {
      expect(rewrite("SELECT * FROM acme . sales /* x */ . orders AS o").sql).toBe('SELECT * FROM "t0" AS o');
    });

    it("should ask to quote a name part holding '-' instead of reading it as a subtraction", () => {
      expect(failure("SELECT * FROM acme.sales.q4-2025")).toBe(
        "\"acme.sales.q4-2025\" must be quoted: a name part that holds '-' or '.', or starts with a digit, " +
          "is written in backticks: acme.sales.`q4-2025`",
      );
      expect(failure("SELECT * FROM my-acct.sales.orders")).toContain("in backticks: `my-acct`.sales.orders");
      expect(failure("SELECT * FROM acme.sales.orders.csv-2")).toContain("in backticks: acme.sales.`orders.csv-2`");
    });

    it("should ask to quote a name part that starts with a digit", () => {
      expect(failure("SELECT * FROM acme.sales.2025")).toContain("in backticks: acme.sales.`2025`");
    });

    // Each suggestion must be complete: the name it gives runs as written.
    it.each([
      ["dana.vega-demo.`seattle-weather.csv`", "dana.`vega-demo`.`seattle-weather.csv`"],
      ["dana.vega-demo.seattle-weather.csv", "dana.`vega-demo`.`seattle-weather.csv`"],
      ["dana.demo.weather.csv", "dana.demo.`weather.csv`"],
      ["my-acct.sales-eu.q4-data.csv", "`my-acct`.`sales-eu`.`q4-data.csv`"],
      ["acme.sales.orders.2025.csv", "acme.sales.`orders.2025.csv`"],
      ["acme.sales.v1.5", "acme.sales.`v1.5`"],
    ])("should suggest for %s a name that runs as written, %s", (written, suggested) => {
      const message = failure(`SELECT * FROM ${written} WHERE 1`);

      expect(message).toContain(`is written in backticks: ${suggested}`);
      expect(message.endsWith(suggested)).toBe(true);
      const [account, dataset, data] = suggested
        .split(/\.(?=[^`]*(?:`[^`]*`[^`]*)*$)/)
        .map((part) => part.replaceAll("`", ""));
      expect(rewrite(`SELECT * FROM ${suggested} WHERE 1`).tables).toEqual([item(account!, dataset!, data!, "t0")]);
    });

    it("should say how data items are named for a quoted-looking name of fewer than three parts", () => {
      expect(failure("SELECT * FROM vega-demo.weather")).toContain(
        '"vega-demo.weather" must be quoted, and has fewer than three parts. A data item is named account.dataset.item',
      );
    });

    it("should keep a name with a '-' inside quotes", () => {
      expect(rewrite('SELECT * FROM "my-acct".sales."q4-2025"').tables).toEqual([
        item("my-acct", "sales", "q4-2025", "t0"),
      ]);
    });
  });

  describe("joins and repeated items", () => {
    it("should give each distinct data item its own internal table, across datasets and accounts", () => {
      const result = rewrite(
        "SELECT o.id, c.name FROM acme.sales.orders o JOIN acme.crm.customers c ON c.id = o.customer_id " +
          "LEFT JOIN other.ref.regions r ON r.code = c.region",
      );

      expect(result.sql).toBe(
        'SELECT o.id, c.name FROM "t0" o JOIN "t1" c ON c.id = o.customer_id LEFT JOIN "t2" r ON r.code = c.region',
      );
      expect(result.tables).toEqual([
        item("acme", "sales", "orders", "t0"),
        item("acme", "crm", "customers", "t1"),
        item("other", "ref", "regions", "t2"),
      ]);
    });

    it("should map the same data item named twice, however quoted, to one internal table", () => {
      const result = rewrite('SELECT * FROM acme.sales.orders a JOIN "acme".`sales`.orders b ON a.id = b.parent');

      expect(result.sql).toBe('SELECT * FROM "t0" a JOIN "t0" b ON a.id = b.parent');
      expect(result.tables).toEqual([item("acme", "sales", "orders", "t0")]);
    });

    it("should let a name glued to its alias stand, as SQLite reads it", () => {
      expect(rewrite('SELECT * FROM "a"."b"."c"x').sql).toBe('SELECT * FROM "t0"x');
    });

    it("should treat names as case-sensitive, as the catalog does", () => {
      expect(rewrite("SELECT * FROM a.b.Orders, a.b.orders").tables.map((table) => table.data)).toEqual([
        "Orders",
        "orders",
      ]);
    });

    it("should rewrite names in a comma-separated FROM list", () => {
      expect(rewrite("SELECT x.id, z.id FROM a.b.x, a.b.y AS y2, a.b.z").sql).toBe(
        'SELECT x.id, z.id FROM "t0" AS "x", "t1" AS y2, "t2" AS "z"',
      );
    });

    it("should rewrite names in subqueries, CTEs, compound selects and IN", () => {
      const result = rewrite(
        "WITH recent AS (SELECT * FROM a.b.orders WHERE d > 1) " +
          "SELECT id FROM recent WHERE id IN (SELECT id FROM a.b.keep) AND id NOT IN a.b.skip " +
          "UNION SELECT id FROM (SELECT id FROM a.b.more) m",
      );

      expect(result.sql).toBe(
        'WITH recent AS (SELECT * FROM "t0" WHERE d > 1) ' +
          'SELECT id FROM recent WHERE id IN (SELECT id FROM "t1") AND id NOT IN "t2" ' +
          'UNION SELECT id FROM (SELECT id FROM "t3") m',
      );
    });

    it("should rewrite names inside a parenthesised join", () => {
      expect(rewrite("SELECT x.id, y.id, z.id FROM (a.b.x JOIN a.b.y USING (id)), a.b.z").sql).toBe(
        'SELECT x.id, y.id, z.id FROM ("t0" AS "x" JOIN "t1" AS "y" USING (id)), "t2" AS "z"',
      );
    });

    it("should skip internal names the query already uses", () => {
      const result = rewrite("WITH t0 AS (SELECT 1) SELECT * FROM t0, a.b.c AS T1, a.b.d");

      expect(result.sql).toBe('WITH t0 AS (SELECT 1) SELECT * FROM t0, "t2" AS T1, "t3"');
    });
  });

  describe("aliases", () => {
    it("should keep an alias given with AS", () => {
      expect(rewrite("SELECT x.id FROM a.b.orders AS x").sql).toBe('SELECT x.id FROM "t0" AS x');
    });

    it("should keep an alias given without AS, bare, quoted or as a string", () => {
      expect(rewrite("SELECT * FROM a.b.orders x").sql).toBe('SELECT * FROM "t0" x');
      expect(rewrite('SELECT * FROM a.b.orders "x y"').sql).toBe('SELECT * FROM "t0" "x y"');
      expect(rewrite("SELECT * FROM a.b.orders 'x'").sql).toBe("SELECT * FROM \"t0\" 'x'");
    });

    it("should name an unaliased table after its data name, before each clause that can follow it", () => {
      for (const next of ["WHERE 1", "JOIN a.b.y ON 1", "NATURAL JOIN a.b.y", "GROUP BY 1", "ORDER BY 1", "LIMIT 1"]) {
        expect(rewrite(`SELECT x.id FROM a.b.x ${next}`).sql).toMatch(/^SELECT x.id FROM "t0" AS "x" /);
      }
      expect(rewrite("SELECT x.id FROM a.b.x;").sql).toBe('SELECT x.id FROM "t0" AS "x";');
      expect(rewrite("SELECT X.* FROM a.b.x").sql).toBe('SELECT X.* FROM "t0" AS "x"');
    });

    it("should name the table only when the query uses its data name as a qualifier", () => {
      expect(rewrite("SELECT id FROM a.b.orders").sql).toBe('SELECT id FROM "t0"');
    });

    it("should quote a data name with '.' when it becomes the table's name", () => {
      expect(rewrite('SELECT "orders.csv".id FROM `a.b.orders.csv`').sql).toBe(
        'SELECT "orders.csv".id FROM "t0" AS "orders.csv"',
      );
    });
  });

  describe("strings and comments", () => {
    it("should not rewrite a three-part name inside a string literal", () => {
      const sql = "SELECT 'a.b.c', \"x\" FROM a.b.t WHERE name = 'FROM acme.sales.orders'";

      expect(rewrite(sql).sql).toBe("SELECT 'a.b.c', \"x\" FROM \"t0\" WHERE name = 'FROM acme.sales.orders'");
    });

    it("should not rewrite a three-part name inside comments", () => {
      const sql = "SELECT 1 -- FROM a.b.c\n/* JOIN `a.b.c` */ FROM a.b.t";

      expect(rewrite(sql)).toEqual({
        sql: 'SELECT 1 -- FROM a.b.c\n/* JOIN `a.b.c` */ FROM "t0"',
        tables: [item("a", "b", "t", "t0")],
      });
    });

    it("should leave a query without data items unchanged", () => {
      expect(rewrite("SELECT 1, t.col FROM (SELECT 2 AS col) t")).toEqual({
        sql: "SELECT 1, t.col FROM (SELECT 2 AS col) t",
        tables: [],
      });
    });
  });

  describe("what is not a data item", () => {
    it("should leave two-part column references alone", () => {
      expect(rewrite("SELECT o.id, o.* FROM a.b.orders o WHERE o.total > 1").sql).toBe(
        'SELECT o.id, o.* FROM "t0" o WHERE o.total > 1',
      );
    });

    it("should read a backtick name with dots outside a FROM list as a column", () => {
      expect(rewrite("SELECT `x.y.z` FROM a.b.t").sql).toBe('SELECT `x.y.z` FROM "t0"');
    });

    it("should not take a backtick name with one dot for a data item", () => {
      expect(rewrite("SELECT * FROM `x.y`").tables).toEqual([]);
    });

    it("should leave a three-part name followed by ( to SQLite, which has no such functions", () => {
      expect(rewrite("SELECT a.b.c(1)").tables).toEqual([]);
    });

    it("should refuse a three-part name used as a column", () => {
      expect(failure("SELECT main.t.col FROM a.b.t")).toBe(
        '"main.t.col" is used where a column is expected. A three-part name (Account.Dataset.Data) names a ' +
          "data item and belongs after FROM or JOIN; a column is named with at most two parts (table.column)",
      );
    });

    it("should refuse a four-part name and show how to name the column", () => {
      expect(failure("SELECT a.b.orders.id FROM a.b.orders")).toBe(
        '"a.b.orders.id" has more than three parts. A data item is named Account.Dataset.Data, and a column ' +
          "with at most two parts: the data name (or the alias given in FROM) and the column, e.g. orders.id",
      );
      expect(failure("SELECT a.b.orders.* FROM a.b.orders")).toContain("e.g. orders.*");
      // After FROM, the parts past the second are a data name with dots, which is written in backticks.
      expect(failure("SELECT * FROM a.b.c.d.e")).toContain("in backticks: a.b.`c.d.e`");
      expect(failure("SELECT * FROM a.b.c.d.é")).toContain('"a.b.c.d.é" has more than three parts');
    });

    it("should refuse a two-part table name in a FROM list", () => {
      expect(failure("SELECT * FROM sales.orders")).toBe(
        '"sales.orders" has two parts; a data item is named with three: Account.Dataset.Data',
      );
    });

    it("should not mistake IS DISTINCT FROM for a FROM list", () => {
      expect(rewrite("SELECT a IS DISTINCT FROM b, `x.y.z` FROM a.b.t").sql).toBe(
        'SELECT a IS DISTINCT FROM b, `x.y.z` FROM "t0"',
      );
    });

    it("should not take arguments of a function in a FROM list for tables", () => {
      expect(rewrite("SELECT * FROM a.b.t JOIN json_each(t.tags, '$') j").sql).toBe(
        'SELECT * FROM "t0" AS "t" JOIN json_each(t.tags, \'$\') j',
      );
    });
  });

  describe("invalid names", () => {
    it("should name the bad account part and the rule", () => {
      expect(failure('SELECT * FROM "acme corp".sales.orders')).toBe(
        'Invalid account name "acme corp" in "acme corp".sales.orders: ' +
          "an account name is 1-64 characters of A-Z, a-z, 0-9, '_' and '-'",
      );
      expect(failure("SELECT * FROM `acme.x`.b.c")).toContain('Invalid account name "acme.x"');
    });

    it("should name the bad dataset part and the rule", () => {
      expect(failure("SELECT * FROM acme.`sales.eu`.orders")).toBe(
        'Invalid dataset name "sales.eu" in acme.`sales.eu`.orders: ' +
          "a dataset name is 1-64 characters of A-Z, a-z, 0-9, '_' and '-'",
      );
    });

    it("should name the bad data part and the rule", () => {
      expect(failure('SELECT * FROM acme.sales.".hidden"')).toBe(
        'Invalid data name ".hidden" in acme.sales.".hidden": ' +
          "a data name is 1-128 characters of A-Z, a-z, 0-9, '_', '-' and '.', not starting with '.'",
      );
    });

    it("should check the length limits", () => {
      expect(failure(`SELECT * FROM ${"a".repeat(65)}.b.c`)).toContain("Invalid account name");
      expect(rewrite(`SELECT * FROM ${"a".repeat(64)}.b.${"c".repeat(128)}`).tables).toHaveLength(1);
      expect(failure(`SELECT * FROM a.b.${"c".repeat(129)}`)).toContain("Invalid data name");
    });

    it("should refuse empty parts in the one-backtick form", () => {
      expect(failure("SELECT * FROM `acme..orders`")).toContain('Invalid dataset name ""');
      expect(failure("SELECT * FROM `.sales.orders`")).toContain('Invalid account name ""');
    });

    it("should report a tokenizer error", () => {
      expect(failure("SELECT * FROM a.b.c WHERE x = 'open")).toBe("A string literal ('...') is not closed with '");
    });
  });

  describe("rewritten SQL in SQLite", () => {
    it("should run SELECT * over two data items that share a data name", async () => {
      const db = await openDatabase();
      try {
        db.run(
          'CREATE TABLE "t0" (id); CREATE TABLE "t1" (id); INSERT INTO "t0" VALUES (1); INSERT INTO "t1" VALUES (2)',
        );
        const { sql } = rewrite("SELECT * FROM acme.eu.orders, acme.us.orders");

        expect(db.exec(sql)[0]?.values).toEqual([[1, 2]]);
      } finally {
        db.close();
      }
    });

    it("should run in SQLite with the internal tables in place, data-name qualifiers included", async () => {
      const db = await openDatabase();
      try {
        db.run('CREATE TABLE "t0" (id, customer_id); CREATE TABLE "t1" (id, name)');
        db.run("INSERT INTO \"t0\" VALUES (1, 10), (2, 20); INSERT INTO \"t1\" VALUES (10, 'Ada'), (20, 'Bo')");
        const { sql } = rewrite(
          "SELECT orders.id, customers.name FROM acme.sales.orders " +
            "JOIN `acme.crm.customers` ON customers.id = orders.customer_id ORDER BY orders.id",
        );

        expect(db.exec(sql)[0]?.values).toEqual([
          [1, "Ada"],
          [2, "Bo"],
        ]);
      } finally {
        db.close();
      }
    });
  });
});

function tokensOf(sql: string): Token[] {
  const result = tokenize(sql);
  if (!result.ok) throw new Error(result.message);
  return result.tokens;
}

function used(sql: string, tables: Record<string, string[]>): Record<string, ColumnSelection> {
  const result = columnsUsed(tokensOf(sql), new Map(Object.entries(tables)));
  return Object.fromEntries(result);
}

describe("columnsUsed", () => {
  const orders = { t0: ["id", "Total", "customer_id", "note"], t1: ["id", "name", "region"] };

  it("should keep only the columns the query names, compared case-insensitively", () => {
    expect(used('SELECT id, TOTAL FROM "t0" WHERE customer_id > 1', orders)).toEqual({
      t0: new Set(["id", "Total", "customer_id"]),
      t1: new Set(["id"]),
    });
  });

  it("should find qualified and quoted column names", () => {
    expect(used('SELECT o."note", c.[name] FROM "t0" o JOIN "t1" c ON c.`region` = 1', orders)).toEqual({
      t0: new Set(["note"]),
      t1: new Set(["name", "region"]),
    });
  });

  it("should count a name in a single-quoted string, which SQLite may read as a name", () => {
    expect(used("SELECT o.'note' FROM \"t0\" o", orders).t0).toEqual(new Set(["note"]));
  });

  it("should not count names that appear only in comments", () => {
    expect(used('SELECT id FROM "t0" -- total, note', orders).t0).toEqual(new Set(["id"]));
  });

  it("should give an empty set when the query reads no column of a table", () => {
    expect(used('SELECT count(*) FROM "t0"', orders)).toEqual({ t0: new Set(), t1: new Set() });
  });

  it("should give all columns for SELECT *, t.* and a star after a comma", () => {
    for (const sql of ['SELECT * FROM "t0"', 'SELECT o.* FROM "t0" o', 'SELECT id, * FROM "t0"']) {
      expect(used(sql, orders)).toEqual({ t0: "all", t1: "all" });
    }
    expect(used('SELECT DISTINCT * FROM "t0"', orders).t0).toBe("all");
  });

  it("should not take multiplication or count(*) for a select-list star", () => {
    expect(used('SELECT id * 2, count(*) FROM "t0"', orders).t0).toEqual(new Set(["id"]));
  });

  it("should give all columns for NATURAL JOIN and USING", () => {
    expect(used('SELECT name FROM "t0" NATURAL JOIN "t1"', orders).t0).toBe("all");
    expect(used('SELECT name FROM "t0" JOIN "t1" USING (id)', orders).t1).toBe("all");
  });

  it("should give all columns for IN a table, which reads the table's only column", () => {
    expect(used('SELECT 1 WHERE 1 IN "t0"', orders).t0).toBe("all");
    expect(used('SELECT 1 WHERE 1 IN (SELECT id FROM "t0")', orders).t0).toEqual(new Set(["id"]));
  });

  it("should work on the original SQL as well as the rewritten", () => {
    const original = "SELECT orders.total FROM acme.sales.orders";

    expect(used(original, { t0: orders.t0 }).t0).toEqual(new Set(["Total"]));
    expect(used(rewrite(original).sql, { t0: orders.t0 }).t0).toEqual(new Set(["Total"]));
  });
});
