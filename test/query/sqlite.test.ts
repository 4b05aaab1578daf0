import { describe, expect, it } from "vitest";
import { openDatabase, sqliteInstance } from "../../src/worker/query/sqlite";

describe("openDatabase", () => {
  it("should open an in-memory SQLite database that runs SELECT 1 in workerd", async () => {
    const db = await openDatabase();
    try {
      expect(db.exec("SELECT 1 AS one, sqlite_version() LIKE '3.%' AS v3")).toEqual([
        { columns: ["one", "v3"], values: [[1, 1]] },
      ]);
    } finally {
      db.close();
    }
  });

  it("should give independent databases that share one initialised module", async () => {
    const first = await openDatabase();
    const second = await openDatabase();
    try {
      first.run("CREATE TABLE t (a)");

      expect(second.exec("SELECT name FROM sqlite_master")).toEqual([]);
      expect(await sqliteInstance()).toBe(await sqliteInstance());
    } finally {
      first.close();
      second.close();
    }
  });

  it("should leave no stand-in location behind in the global scope", async () => {
    await openDatabase().then((db) => db.close());

    expect("location" in globalThis).toBe(false);
  });

  it("should report the size of sql.js's WebAssembly heap once SQLite is loaded", async () => {
    await openDatabase().then((db) => db.close());

    expect((await sqliteInstance()).heapBytes()).toBeGreaterThanOrEqual(64 * 1024);
  });
});
