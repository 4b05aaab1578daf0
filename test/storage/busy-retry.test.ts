import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { retryingBusy, withStorageRetries } from "../../src/worker/storage/busy-retry";

const LOCKED = new Error("D1_ERROR: database is locked: SQLITE_BUSY");

/** The test database, its statements failing as locked `times` times before they run. */
function lockedFor(times: number, error: Error = LOCKED): { db: D1Database; attempts: () => number } {
  let attempts = 0;
  const fail = <T>(run: () => Promise<T>) => {
    attempts++;
    return attempts <= times ? Promise.reject(error) : run();
  };
  const locking = (statement: D1PreparedStatement): D1PreparedStatement =>
    new Proxy(statement, {
      get(inner, name) {
        if (name === "first") return () => fail(() => inner.first());
        if (name === "bind") return (...values: unknown[]) => locking(inner.bind(...values));
        const value: unknown = Reflect.get(inner, name, inner);
        return typeof value === "function" ? value.bind(inner) : value;
      },
    });
  const db = new Proxy(env.DB, {
    get(target, property) {
      if (property === "prepare") return (sql: string) => locking(target.prepare(sql));
      if (property === "batch") return (list: D1PreparedStatement[]) => fail(() => target.batch(list));
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { db, attempts: () => attempts };
}

describe("D1 tried again while locked", () => {
  it("should run a statement refused as locked again until it runs", async () => {
    const locked = lockedFor(3);

    const row = await retryingBusy(locked.db).prepare("SELECT ? AS n").bind(7).first<{ n: number }>();

    expect(row).toEqual({ n: 7 });
    expect(locked.attempts()).toBe(4);
  });

  it("should give up after about two seconds of waiting, with SQLite's error", async () => {
    const locked = lockedFor(Infinity);

    await expect(retryingBusy(locked.db).prepare("SELECT 1").first()).rejects.toThrow("SQLITE_BUSY");
    expect(locked.attempts()).toBe(10);
  });

  it("should not run a statement again for any other error", async () => {
    const locked = lockedFor(1, new Error("D1_ERROR: no such table: nothing"));

    await expect(retryingBusy(locked.db).prepare("SELECT 1").first()).rejects.toThrow("no such table");
    expect(locked.attempts()).toBe(1);
  });

  it("should hand a batch its real statements, and run it again while locked", async () => {
    const locked = lockedFor(2);
    const db = retryingBusy(locked.db);

    const results = await db.batch([db.prepare("SELECT 1 AS a"), db.prepare("SELECT ? AS b").bind("x")]);

    expect(results.map((result) => result.results)).toEqual([[{ a: 1 }], [{ b: "x" }]]);
    expect(locked.attempts()).toBe(3);
  });

  it("should wrap an environment once, keeping its other bindings", () => {
    const wrapped = withStorageRetries(env);

    expect(withStorageRetries(env)).toBe(wrapped);
    expect(wrapped.DB).not.toBe(env.DB);
    expect(wrapped.BUCKET).toBe(env.BUCKET);
  });
});
