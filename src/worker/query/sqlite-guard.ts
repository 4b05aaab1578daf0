import type { Database, SqlJsStatic } from "sql.js";
import type { SqliteInstance } from "./sqlite";

/**
 * Limits that hold inside a running SQLite statement, for sql.js.
 *
 * sql.js 1.16 exports neither `sqlite3_progress_handler` nor `sqlite3_limit`,
 * and its build omits neither feature: the virtual machine still calls
 * `db->xProgress` every `db->nProgressOps` steps, and still refuses values
 * longer than `db->aLimit[SQLITE_LIMIT_LENGTH]`. Both functions only store
 * their arguments in the connection's struct, so this module stores them
 * there itself, at the offsets they have in the SQLite that sql.js 1.16
 * ships (3.54, wasm32). Before writing, it checks that the words around
 * them hold what a freshly opened connection holds there, and refuses
 * (throws) otherwise, so a sql.js with another layout fails loudly instead
 * of writing into the wrong fields. The tests prove the fields work.
 *
 * The callback itself must be a WebAssembly function taking and returning
 * an i32, and Workers may not compile one for a JavaScript function (sql.js's
 * `addFunction` does). SQLite's unix VFS already holds such a function:
 * `rmdir` (its system call table), which calls straight into the JavaScript
 * import for the rmdir system call. So xProgress is set to `rmdir`, and
 * pProgressArg to a number below 1024, an address no path ever has; the
 * import is wrapped so that such a number runs the query's handler instead.
 */

/** Word (4-byte) indexes into `struct sqlite3`. */
const WORD = {
  /** `aLimit[]`: SQLITE_LIMIT_LENGTH, SQLITE_LIMIT_SQL_LENGTH, SQLITE_LIMIT_COLUMN, … */
  limits: 30,
  /** `pWalArg`: the default WAL auto-checkpoint, 1000 pages, set by sqlite3_open. */
  walArg: 71,
  /** `lookaside.pEnd` and `lookaside.pTrueEnd`, equal on a fresh connection. */
  lookasideEnd: 91,
  /** `xProgress`, `pProgressArg`, `nProgressOps`. */
  progress: 95,
} as const;

/** `sqlite3_vfs` word indexes: `zName` and `xGetSystemCall`. */
const VFS_WORD = { name: 4, getSystemCall: 20 } as const;
/** Progress arguments are handler ids from 1 up to this: addresses sql.js never gives a string (its data starts at 1024). */
const MAX_HANDLERS = 1023;
/** The rmdir import returns 0 (continue) or a negative errno, which rmdir() turns into -1: interrupt. */
const INTERRUPT = -1;
const PROBE_ARG = 1;

/** How SQLite's progress callback reaches JavaScript in one sql.js instance. */
export interface ProgressRoute {
  /** Index of `rmdir` in the instance's function table: the value for `xProgress`. */
  readonly callback: number;
  /** Registers a handler; returns the value for `pProgressArg`. */
  add(handler: () => boolean): number;
  remove(arg: number): void;
}

/**
 * Wraps an instance's imports so that the rmdir system call can be routed
 * to progress handlers, then (`progressRoute`) finds which import it is and
 * where `rmdir` sits in the function table.
 */
export class ImportRouter {
  private route: { module: string; name: string } | null = null;
  private probing = false;
  private readonly handlers = new Map<number, () => boolean>();

  wrap(imports: WebAssembly.Imports): WebAssembly.Imports {
    const wrapped: WebAssembly.Imports = {};
    for (const [module, group] of Object.entries(imports)) {
      wrapped[module] = {};
      for (const [name, value] of Object.entries(group)) {
        if (typeof value !== "function") {
          wrapped[module][name] = value;
          continue;
        }
        const original = value as (...args: unknown[]) => unknown;
        const router = this;
        wrapped[module][name] = function (this: unknown, ...args: unknown[]) {
          if (router.probing && args[0] === PROBE_ARG) {
            router.route = { module, name };
            return 0;
          }
          const route = router.route;
          if (route && route.name === name && route.module === module && typeof args[0] === "number") {
            const handler = router.handlers.get(args[0]);
            if (handler) return handler() ? INTERRUPT : 0;
          }
          return original.apply(this, args);
        };
      }
    }
    return wrapped;
  }

  /** Finds `rmdir` through the unix VFS of a throwaway connection, and its import by calling it once. */
  progressRoute(sql: SqlJsStatic, memory: WebAssembly.Memory, table: WebAssembly.Table): ProgressRoute {
    const api = sql as unknown as { stringToNewUTF8(text: string): number; UTF8ToString(pointer: number): string };
    const db = new sql.Database();
    let callback: number;
    try {
      const words = new Int32Array(memory.buffer);
      const vfs = words[connectionWord(db)]!;
      if (vfs <= 0 || api.UTF8ToString(words[vfs / 4 + VFS_WORD.name]!) !== "unix")
        throw new Error("sql.js does not use SQLite's unix VFS; the progress handler cannot be routed");
      const getSystemCall = table.get(words[vfs / 4 + VFS_WORD.getSystemCall]!) as (
        vfs: number,
        name: number,
      ) => number;
      callback = getSystemCall(vfs, api.stringToNewUTF8("rmdir"));
      this.probing = true;
      try {
        (table.get(callback) as (path: number) => number)(PROBE_ARG);
      } finally {
        this.probing = false;
      }
    } finally {
      db.close();
    }
    if (!callback || !this.route)
      throw new Error("sql.js's rmdir does not reach a JavaScript import; no progress handler");
    let next = 0;
    return {
      callback,
      add: (handler) => {
        if (this.handlers.size >= MAX_HANDLERS) throw new Error("too many guarded connections at once");
        do next = (next % MAX_HANDLERS) + 1;
        while (this.handlers.has(next));
        this.handlers.set(next, handler);
        return next;
      },
      remove: (arg) => this.handlers.delete(arg),
    };
  }
}

/** What a fresh connection holds at `WORD.limits`: SQLite's default length, SQL length and column limits. */
const DEFAULT_LIMITS = [1_000_000_000, 1_000_000_000, 2000];

export interface StatementGuardOptions {
  /** The longest string or blob (so also row) SQLite may make, in bytes. */
  maxValueBytes: number;
  /** How many virtual-machine steps between calls of `onProgress`. */
  everySteps: number;
  /** Called every `everySteps` steps while a statement runs; true interrupts it ("interrupted"). */
  onProgress(): boolean;
}

/**
 * Installs the length limit and the progress handler on `db` (a connection
 * of `instance`). Returns the function that removes the handler; call it
 * before `db.close()`, which frees the connection.
 */
export function guardStatements(instance: SqliteInstance, db: Database, options: StatementGuardOptions): () => void {
  const base = connectionWord(db);
  const words = () => new Int32Array(instance.memory.buffer);
  const at = (word: number) => words()[base + word]!;
  const layoutKnown =
    DEFAULT_LIMITS.every((value, i) => at(WORD.limits + i) === value) &&
    at(WORD.walArg) === 1000 &&
    at(WORD.lookasideEnd) !== 0 &&
    at(WORD.lookasideEnd) === at(WORD.lookasideEnd + 1) &&
    [0, 1, 2].every((i) => at(WORD.progress + i) === 0);
  if (!layoutKnown)
    throw new Error(
      "the SQLite connection is not laid out as dqs expects (was sql.js upgraded?); limits cannot be set",
    );
  if (!Number.isSafeInteger(options.everySteps) || options.everySteps < 1)
    throw new Error("everySteps must be a positive integer");

  const arg = instance.progress.add(options.onProgress);
  const view = words();
  view[base + WORD.limits] = Math.min(options.maxValueBytes, DEFAULT_LIMITS[0]!);
  view[base + WORD.progress] = instance.progress.callback;
  view[base + WORD.progress + 1] = arg;
  view[base + WORD.progress + 2] = options.everySteps;
  return () => {
    const view = words();
    view[base + WORD.progress] = 0;
    view[base + WORD.progress + 1] = 0;
    view[base + WORD.progress + 2] = 0;
    instance.progress.remove(arg);
  };
}

/** The word index of the connection's `struct sqlite3` in the heap (sql.js keeps the pointer as `db.db`). */
function connectionWord(db: Database): number {
  const pointer = (db as unknown as { db?: unknown }).db;
  if (typeof pointer !== "number" || pointer <= 0 || pointer % 8 !== 0)
    throw new Error("sql.js did not expose the connection's pointer");
  return pointer / 4;
}
