import initSqlJs, { type Database, type SqlJsStatic } from "sql.js";
import sqlJsWasm from "sql.js/dist/sql-wasm.wasm";
import { ImportRouter, type ProgressRoute } from "./sqlite-guard";

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
 * - A WebAssembly heap only grows. sql.js would return its first instance
 *   forever; the patch in engine/patches/ makes each `initSqlJs` call a new
 *   instance, so an instance whose heap a query grew can be retired
 *   (`retireIfGrown`) and the next query starts on a fresh one. The
 *   compiled module is shared; a new instance costs a few milliseconds.
 */

/** One SQLite instance: sql.js's API and the WebAssembly heap it runs in. */
export interface SqliteInstance {
  readonly sql: SqlJsStatic;
  readonly memory: WebAssembly.Memory;
  /** How SQLite's progress callback reaches JavaScript in this instance (sqlite-guard.ts). */
  readonly progress: ProgressRoute;
  /** Bytes of this instance's WebAssembly heap right now (it only grows). */
  heapBytes(): number;
  /** Bytes of the heap when the instance was new. */
  readonly initialHeapBytes: number;
  /** SQLite's hard heap limit in this instance, once set (`sqliteInstanceFor`); SQLite can only lower it. */
  heapLimitBytes: number | null;
}

let current: Promise<SqliteInstance> | undefined;
/** The current instance once it has loaded (`retire` compares against it). */
let loaded: SqliteInstance | undefined;
/** Every sql.js API object loaded so far: an unpatched sql.js hands out its first one again. */
const seen = new WeakSet<SqlJsStatic>();

/** The WebAssembly memory sql.js runs in: exported by the module, or handed to it among the imports. */
function findMemory(instance: WebAssembly.Instance, imports: WebAssembly.Imports): WebAssembly.Memory | undefined {
  const candidates = [
    ...Object.values(instance.exports),
    ...Object.values(imports).flatMap((group) => Object.values(group)),
  ];
  return candidates.find((value): value is WebAssembly.Memory => value instanceof WebAssembly.Memory);
}

/** The table of functions that C function pointers index into. */
function findTable(instance: WebAssembly.Instance): WebAssembly.Table | undefined {
  return Object.values(instance.exports).find(
    (value): value is WebAssembly.Table => value instanceof WebAssembly.Table,
  );
}

function loadSqlJs(): Promise<SqliteInstance> {
  return new Promise<SqliteInstance>((resolve, reject) => {
    let memory: WebAssembly.Memory | undefined;
    let table: WebAssembly.Table | undefined;
    const imports = new ImportRouter();
    // SQLite's own math functions, as in sqlite3 and a table store: sql.js's legacy extension functions would
    // shadow them (log(100) is ln there, ceil() returns an INTEGER) and add functions nothing else has. The
    // option is sql.js 1.16's own, missing from its type definitions.
    const options = { useOldExtensionFunctions: false } as Partial<EmscriptenModule>;
    const init = () =>
      initSqlJs({
        ...options,
        instantiateWasm(given, done) {
          // sql.js waits for `done` forever if instantiation fails, so failure rejects here.
          WebAssembly.instantiate(sqlJsWasm, imports.wrap(given)).then((instance) => {
            memory = findMemory(instance, given);
            table = findTable(instance);
            done(instance);
          }, reject);
          return {};
        },
      });
    withStandInLocation(init).then((sql) => {
      if (seen.has(sql))
        return reject(
          new Error("sql.js returned an instance it made before: its patch is missing (npm ci ran scripts?)"),
        );
      seen.add(sql);
      if (!memory || !table) return reject(new Error("sql.js runs in no WebAssembly memory or table that dqs can see"));
      const heap = memory;
      try {
        const progress = imports.progressRoute(sql, heap, table);
        resolve({
          sql,
          memory: heap,
          progress,
          heapBytes: () => heap.buffer.byteLength,
          initialHeapBytes: heap.buffer.byteLength,
          heapLimitBytes: null,
        });
      } catch (error) {
        reject(error instanceof Error ? error : new Error(String(error)));
      }
    }, reject);
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

/** The SQLite instance new work uses: the same one until it is retired. */
export function sqliteInstance(): Promise<SqliteInstance> {
  if (current) return current;
  const loading = loadSqlJs();
  current = loading;
  loading.then(
    (instance) => {
      if (current === loading) loaded = instance;
    },
    // A failed load is not kept: the next call tries again.
    () => {
      if (current === loading) current = undefined;
    },
  );
  return loading;
}

/**
 * The current instance, with SQLite's own allocations limited to
 * `memoryBudgetBytes` (`PRAGMA hard_heap_limit`, for every connection of the
 * instance). The pragma can lower the limit but never raise it, so an
 * instance limited to another budget is retired for a fresh one.
 */
export async function sqliteInstanceFor(memoryBudgetBytes: number): Promise<SqliteInstance> {
  let instance = await sqliteInstance();
  if (instance.heapLimitBytes !== null && instance.heapLimitBytes !== memoryBudgetBytes) {
    retire(instance);
    instance = await sqliteInstance();
  }
  if (instance.heapLimitBytes === null) {
    const db = new instance.sql.Database();
    try {
      db.run(`PRAGMA hard_heap_limit = ${Math.floor(memoryBudgetBytes)}`);
    } finally {
      db.close();
    }
    instance.heapLimitBytes = memoryBudgetBytes;
  }
  return instance;
}

/**
 * Retires `instance` when its heap has grown by more than `bytes`: new work
 * gets a fresh instance, and the old heap is freed once the work still
 * using it lets go of its databases. True when it was retired.
 */
export function retireIfGrown(instance: SqliteInstance, bytes: number): boolean {
  if (instance.heapBytes() - instance.initialHeapBytes <= bytes) return false;
  retire(instance);
  return true;
}

/** New work gets a fresh instance; `instance` lives on while work still uses it. */
function retire(instance: SqliteInstance): void {
  if (loaded === instance) {
    current = undefined;
    loaded = undefined;
  }
}

/** A new, empty in-memory SQLite database; the caller must `close()` it to free its memory. */
export async function openDatabase(): Promise<Database> {
  const { Database } = (await sqliteInstance()).sql;
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
