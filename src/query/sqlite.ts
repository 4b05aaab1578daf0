import initSqlJs, { type Database, type SqlJsStatic } from "sql.js";
import sqlJsWasm from "sql.js/dist/sql-wasm.wasm";

export type { Database } from "sql.js";

/**
 * sql.js (SQLite compiled to WebAssembly) made to run in a Worker.
 *
 * - The .wasm file is imported as a module: wrangler bundles a `.wasm` import
 *   as a `WebAssembly.Module` (its default CompiledWasm rule), and the
 *   Workers vitest pool does the same. Workers may not compile WebAssembly
 *   from bytes at run time, so sql.js must not fetch and compile the file
 *   itself; `instantiateWasm` hands it the precompiled module instead.
 * - `"sql.js"` resolves to the package's browser build under both wrangler
 *   and vitest (both resolve with the "browser" condition). That build, on
 *   seeing `WorkerGlobalScope`, reads `self.location.href` to find its own
 *   URL, and Workers have no `location`: init throws "Cannot read properties
 *   of undefined (reading 'href')". The read happens synchronously inside
 *   `initSqlJs`, so a stand-in `location` is defined for exactly that call
 *   and removed right after; no other code ever sees it.
 * - sql.js keeps its first init promise in a global of its own and returns
 *   it to every later call, so a failed init cannot be retried within an
 *   isolate; this module keeps the same promise, so each isolate loads
 *   SQLite once.
 */

let sqlJs: Promise<SqlJsStatic> | undefined;
let memory: WebAssembly.Memory | undefined;

/** The WebAssembly memory sql.js runs in: exported by the module, or handed to it among the imports. */
function findMemory(instance: WebAssembly.Instance, imports: WebAssembly.Imports): WebAssembly.Memory | undefined {
  const candidates = [
    ...Object.values(instance.exports),
    ...Object.values(imports).flatMap((group) => Object.values(group)),
  ];
  return candidates.find((value): value is WebAssembly.Memory => value instanceof WebAssembly.Memory);
}

/** Bytes of sql.js's WebAssembly heap right now (it only grows); 0 before SQLite is loaded. */
export function wasmHeapBytes(): number {
  return memory?.buffer.byteLength ?? 0;
}

function loadSqlJs(): Promise<SqlJsStatic> {
  return new Promise<SqlJsStatic>((resolve, reject) => {
    const init = () =>
      initSqlJs({
        instantiateWasm(imports, done) {
          // sql.js waits for `done` forever if instantiation fails, so failure rejects here.
          WebAssembly.instantiate(sqlJsWasm, imports).then((instance) => {
            memory = findMemory(instance, imports);
            done(instance);
          }, reject);
          return {};
        },
      });
    withStandInLocation(init).then(resolve, reject);
  });
}

function withStandInLocation<T>(run: () => T): T {
  if ("location" in globalThis) return run();
  Object.defineProperty(globalThis, "location", {
    value: { href: "https://sql.js.invalid/" },
    configurable: true,
  });
  try {
    return run();
  } finally {
    delete (globalThis as { location?: unknown }).location;
  }
}

/** The sql.js module, initialised once per isolate. */
export function sqlite(): Promise<SqlJsStatic> {
  sqlJs ??= loadSqlJs();
  return sqlJs;
}

/** A new, empty in-memory SQLite database; the caller must `close()` it to free its memory. */
export async function openDatabase(): Promise<Database> {
  const { Database } = await sqlite();
  return new Database();
}

/**
 * The name of a database's file in sql.js's in-memory file system (sql.js
 * sets `filename` on every Database; its type declarations omit it). Another
 * connection can ATTACH the database under this name.
 */
export function databaseFileName(db: Database): string {
  const name = (db as unknown as { filename?: unknown }).filename;
  if (typeof name !== "string" || !/^[\w.-]+$/.test(name)) throw new Error("sql.js did not name the database's file");
  return name;
}
