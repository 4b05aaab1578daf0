/**
 * D1 with SQLite's "database is locked" tried again. The local service's
 * processes (src/local) each open the one local database file, so a write can
 * find it locked for a moment; deployed D1 never answers so. A statement (or
 * batch) refused that way did nothing, so running it again is safe.
 */
const WAITS_MS = [5, 10, 20, 40, 80, 160, 320, 640, 1000];

const wrapped = new WeakMap<object, unknown>();
/** The real statement behind each wrapped one, for batch(). */
const statements = new WeakMap<object, D1PreparedStatement>();

export function isStorageBusy(error: unknown): boolean {
  for (let e = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++)
    if (/SQLITE_BUSY|database is locked/.test(e.message)) return true;
  return false;
}

/** Runs `work` again, after a growing wait, while it fails with an error `again` accepts (about 2.3 s at most). */
export async function retried<T>(
  work: () => Promise<T>,
  again: (error: unknown) => boolean = isStorageBusy,
): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      const wait = WAITS_MS[attempt];
      if (wait === undefined || !again(error)) throw error;
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
}

function retryingStatement(statement: D1PreparedStatement): D1PreparedStatement {
  const proxy = new Proxy(statement, {
    get(target, property) {
      if (property === "bind") return (...values: unknown[]) => retryingStatement(target.bind(...values));
      if (property === "first" || property === "all" || property === "run" || property === "raw")
        return (...args: unknown[]) =>
          retried(() => (target[property] as (...a: unknown[]) => Promise<unknown>).apply(target, args));
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  statements.set(proxy, statement);
  return proxy;
}

/** `db` with every statement, batch and exec tried again while SQLite answers that the database is locked. */
export function retryingBusy(db: D1Database): D1Database {
  const known = wrapped.get(db);
  if (known) return known as D1Database;
  const proxy = new Proxy(db, {
    get(target, property) {
      if (property === "prepare") return (sql: string) => retryingStatement(target.prepare(sql));
      if (property === "batch")
        return (list: D1PreparedStatement[]) =>
          retried(() => target.batch(list.map((statement) => statements.get(statement) ?? statement)));
      if (property === "exec") return (sql: string) => retried(() => target.exec(sql));
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  wrapped.set(db, proxy);
  return proxy;
}

/** `env` with its D1 database tried again while locked (see above); the same object for the same `env`. */
export function withStorageRetries<E extends { DB: D1Database }>(env: E): E {
  const known = wrapped.get(env);
  if (known) return known as E;
  const retrying = { ...env, DB: retryingBusy(env.DB) };
  wrapped.set(env, retrying);
  return retrying;
}
