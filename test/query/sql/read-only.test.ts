import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { checkReadOnly, type ReadOnlyCheck } from "../../../src/worker/query/sql/read-only";
import { openDatabase, type Database } from "../../../src/worker/query/sqlite";

const ONLY_READ_ONLY = "Only read-only queries (SELECT, WITH … SELECT, VALUES) are allowed";

let db: Database;

beforeEach(async () => {
  db = await openDatabase();
  db.run("CREATE TABLE t0 (id INTEGER, name TEXT); INSERT INTO t0 VALUES (1, 'a'), (2, 'b')");
});

afterEach(() => {
  db.close();
});

function check(sql: string): ReadOnlyCheck {
  return checkReadOnly(db, sql);
}

function refusal(sql: string): string {
  const result = check(sql);
  if (result.ok) throw new Error(`expected ${sql} to be refused`);
  return result.message;
}

function rowCount(): unknown {
  db.run("PRAGMA query_only = 0");
  return db.exec("SELECT count(*) FROM t0")[0]?.values[0]?.[0];
}

describe("checkReadOnly", () => {
  describe("accepted queries", () => {
    it("should accept a SELECT", () => {
      expect(check("SELECT id, name FROM t0 WHERE id > 1")).toEqual({ ok: true });
    });

    it("should accept WITH … SELECT, recursive and materialized forms included", () => {
      expect(check("WITH x AS (SELECT id FROM t0) SELECT * FROM x")).toEqual({ ok: true });
      expect(
        check(
          "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3), " +
            "m AS NOT MATERIALIZED (SELECT 2) SELECT * FROM n, m",
        ),
      ).toEqual({ ok: true });
    });

    it("should accept VALUES and WITH … VALUES", () => {
      expect(check("VALUES (1, 'a'), (2, 'b')")).toEqual({ ok: true });
      expect(check("WITH x AS (SELECT 1) VALUES (2)")).toEqual({ ok: true });
    });

    it("should accept a trailing semicolon, comments and white space", () => {
      expect(check("SELECT 1;")).toEqual({ ok: true });
      expect(check("  -- leading\n/* c */ SELECT 1 ; ;  -- trailing\n /* end */ ")).toEqual({ ok: true });
    });

    it("should accept a comment that merely mentions a second statement", () => {
      expect(check("SELECT 1 -- ; DROP TABLE t0")).toEqual({ ok: true });
      expect(check("SELECT 1 /* ; DELETE FROM t0 */")).toEqual({ ok: true });
    });

    it("should accept a string that merely mentions a second statement", () => {
      expect(check("SELECT '; DELETE FROM t0'")).toEqual({ ok: true });
    });
  });

  describe("writing statements", () => {
    it.each([
      ["DROP TABLE t0", "a DROP TABLE"],
      ["INSERT INTO t0 VALUES (3, 'c')", "an INSERT"],
      ["REPLACE INTO t0 VALUES (3, 'c')", "a REPLACE"],
      ["UPDATE t0 SET name = 'x'", "an UPDATE"],
      ["DELETE FROM t0", "a DELETE"],
      ["CREATE TEMP TABLE x (a)", "a CREATE TEMP TABLE"],
      ["CREATE INDEX i ON t0 (id)", "a CREATE INDEX"],
      ["ALTER TABLE t0 ADD COLUMN c", "an ALTER TABLE"],
      ["ATTACH ':memory:' AS other", "an ATTACH"],
      ["PRAGMA query_only = 0", "a PRAGMA"],
      ["VACUUM", "a VACUUM"],
      ["VACUUM INTO '/tmp/copy.db'", "a VACUUM"],
      ["REINDEX", "a REINDEX"],
      ["ANALYZE", "an ANALYZE"],
      ["BEGIN", "a BEGIN"],
      ["SAVEPOINT s", "a SAVEPOINT"],
      ["EXPLAIN SELECT 1", "an EXPLAIN"],
      ["EXPLAIN QUERY PLAN SELECT * FROM t0", "an EXPLAIN"],
    ])("should refuse %s", (sql, what) => {
      expect(refusal(sql)).toBe(`${ONLY_READ_ONLY}; this is ${what}`);
    });

    it("should refuse DETACH", () => {
      expect(refusal("DETACH other")).toBe(`${ONLY_READ_ONLY}; this is a DETACH`);
    });

    it("should refuse COMMIT, ROLLBACK and RELEASE where SQLite can prepare them", () => {
      expect(refusal("COMMIT")).toBe(`${ONLY_READ_ONLY}; this is a COMMIT`);
      expect(refusal("ROLLBACK")).toBe(`${ONLY_READ_ONLY}; this is a ROLLBACK`);
      expect(refusal("RELEASE s")).toBe(`${ONLY_READ_ONLY}; this is a RELEASE`);
    });

    it("should refuse WITH … DELETE, which SQLite prepares", () => {
      expect(refusal("WITH x AS (SELECT 1) DELETE FROM t0 WHERE id IN x")).toBe(
        `${ONLY_READ_ONLY}; this is a WITH … DELETE`,
      );
      expect(rowCount()).toBe(2);
    });

    it("should refuse WITH … INSERT and WITH … UPDATE", () => {
      expect(refusal("WITH x(a, b) AS (SELECT 3, 'c') INSERT INTO t0 SELECT * FROM x")).toBe(
        `${ONLY_READ_ONLY}; this is a WITH … INSERT`,
      );
      expect(refusal("WITH RECURSIVE x AS (SELECT 1), y AS (SELECT 2) UPDATE t0 SET id = 0")).toBe(
        `${ONLY_READ_ONLY}; this is a WITH … UPDATE`,
      );
    });

    it("should name a write SQLite cannot prepare as a write, not by SQLite's complaint about it", () => {
      expect(refusal("WITH x AS (SELECT 1) DELETE FROM x")).toBe(`${ONLY_READ_ONLY}; this is a WITH … DELETE`);
      expect(refusal("INSERT INTO nowhere VALUES (1)")).toBe(`${ONLY_READ_ONLY}; this is an INSERT`);
      expect(refusal("SELECT * FROM nowhere")).toMatch(/no such table: nowhere/);
      expect(refusal("SELEC 1")).toMatch(/syntax error/);
    });

    it("should refuse a keyword written in any case", () => {
      expect(refusal("dElEtE FROM t0")).toBe(`${ONLY_READ_ONLY}; this is a DELETE`);
    });
  });

  describe("more than one statement", () => {
    it("should refuse two statements", () => {
      expect(refusal("SELECT 1; SELECT 2")).toBe("Only one statement is allowed; found 2");
    });

    it("should refuse a second statement behind a comment", () => {
      expect(refusal("SELECT 1; /* */ DELETE FROM t0")).toBe("Only one statement is allowed; found 2");
      expect(refusal("SELECT 1 -- x\n; DELETE FROM t0")).toBe("Only one statement is allowed; found 2");
      expect(rowCount()).toBe(2);
    });

    it("should refuse a second statement after empty ones", () => {
      expect(refusal("SELECT 1;; ; DELETE FROM t0;")).toBe("Only one statement is allowed; found 2");
    });

    it("should count every statement", () => {
      expect(refusal("SELECT 1; SELECT 2; SELECT 3")).toBe("Only one statement is allowed; found 3");
    });

    it("should refuse a second statement that SQLite cannot prepare, with its reason", () => {
      expect(refusal("SELECT 1; DROP TABLE nowhere")).toBe(
        "Only one statement is allowed; found at least 2 (no such table: nowhere)",
      );
    });
  });

  describe("errors", () => {
    it("should report a syntax error with SQLite's message", () => {
      expect(refusal("SELEC 1")).toBe('near "SELEC": syntax error');
      expect(refusal("SELECT * FROM t0 WHERE")).toBe("incomplete input");
    });

    it("should report unknown tables and columns with SQLite's message", () => {
      expect(refusal("SELECT * FROM nowhere")).toBe("no such table: nowhere");
      expect(refusal("SELECT missing FROM t0")).toBe("no such column: missing");
    });

    it("should report a query without a statement", () => {
      expect(refusal("  -- nothing here\n")).toBe("The query holds no SQL statement");
      expect(refusal(";")).toBe("The query holds no SQL statement");
    });

    it("should report an unterminated string with SQLite's message", () => {
      expect(refusal("SELECT 'open")).toBe(`unrecognized token: "'open"`);
    });

    it("should refuse a NUL character, where SQLite would stop reading", () => {
      expect(refusal("SELECT 1\0; DELETE FROM t0")).toBe("The query contains a NUL character");
    });
  });

  describe("the connection afterwards", () => {
    it("should leave the connection unable to write, even to a temporary table", () => {
      expect(check("SELECT 1")).toEqual({ ok: true });

      expect(() => db.run("DELETE FROM t0")).toThrow("attempt to write a readonly database");
      expect(() => db.run("CREATE TEMP TABLE x (a)")).toThrow("attempt to write a readonly database");
    });

    it("should make the connection read-only even when the query is refused", () => {
      check("DELETE FROM t0");

      expect(() => db.run("DELETE FROM t0")).toThrow("attempt to write a readonly database");
      expect(rowCount()).toBe(2);
    });
  });
});
