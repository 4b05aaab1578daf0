/** The reference engines: the sqlite3 command-line tool and DuckDB, on the same files and queries. */
import { spawn, spawnSync } from "node:child_process";
import { DuckDBInstance, type DuckDBConnection } from "@duckdb/node-api";
import { rmSync } from "node:fs";
import Papa from "papaparse";

export type EngineRun =
  { ok: true; rows: string[][]; seconds: number } | { ok: false; message: string; seconds: number };

/** The benchmark table's columns, typed for SQLite as dqs types them (TIMESTAMP as ISO text). */
const SQLITE_TABLE = "CREATE TABLE t (id INTEGER, ts TEXT, category TEXT, amount REAL, qty INTEGER, note TEXT);";
/** Q4's lookup table (bench/data/lookup.csv), as dqs types it. */
const SQLITE_LOOKUP = "CREATE TABLE lookup (category TEXT, label TEXT, weight REAL);";

/** The sqlite3 commands that create and fill `t` (and `lookup`) from the files. */
function sqliteImport(path: string, gzip: boolean, lookupPath: string): string[] {
  const source = gzip ? `"|gzip -dc ${shellQuote(path)}"` : `"${path.replace(/"/g, '\\"')}"`;
  return [
    SQLITE_TABLE,
    `.import --csv --skip 1 ${source} t`,
    SQLITE_LOOKUP,
    `.import --csv --skip 1 "${lookupPath.replace(/"/g, '\\"')}" lookup`,
  ];
}

/** Runs the sqlite3 tool on `database` with `script` on its standard input. */
function sqlite3Process(
  args: string[],
  script: string,
): Promise<{ code: number | null; out: string; err: string; seconds: number; spawnError?: string }> {
  const started = performance.now();
  return new Promise((resolve) => {
    const child = spawn("sqlite3", args, { stdio: ["pipe", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (out += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (err += chunk));
    child.on("error", (error) =>
      resolve({ code: null, out, err, seconds: (performance.now() - started) / 1000, spawnError: error.message }),
    );
    child.on("close", (code) => resolve({ code, out, err, seconds: (performance.now() - started) / 1000 }));
    child.stdin.end(script);
  });
}

export function parseCsv(text: string): string[][] {
  const parsed = Papa.parse<string[]>(text.replace(/\r\n/g, "\n"), { skipEmptyLines: true });
  return parsed.data;
}

function shellQuote(path: string): string {
  return `'${path.replace(/'/g, "'\\''")}'`;
}

/**
 * One sqlite3 process on an in-memory database: create the typed table,
 * `.import --csv --skip 1` the file (a gzipped file through `|gzip -dc`) and
 * the lookup table, run the query; the time is the whole process, import included.
 */
export async function runSqlite3(path: string, gzip: boolean, sql: string, lookupPath: string): Promise<EngineRun> {
  const script = [".bail on", ...sqliteImport(path, gzip, lookupPath), ".headers on", ".mode csv", `${sql};`, ""];
  const run = await sqlite3Process([":memory:"], script.join("\n"));
  if (run.spawnError) return { ok: false, message: `sqlite3: ${run.spawnError}`, seconds: run.seconds };
  if (run.code !== 0 || run.err.trim() !== "")
    return { ok: false, message: `sqlite3 exited ${run.code}: ${run.err.trim().slice(0, 300)}`, seconds: run.seconds };
  return { ok: true, rows: parseCsv(run.out), seconds: run.seconds };
}

/**
 * The "repeat" reference: imports the file (and the lookup table) once into
 * a database file `dbPath` (replaced), for `querySqlite3File`. Returns the
 * import's seconds.
 */
export async function importSqlite3File(
  path: string,
  gzip: boolean,
  lookupPath: string,
  dbPath: string,
): Promise<{ ok: true; seconds: number } | { ok: false; message: string; seconds: number }> {
  rmSync(dbPath, { force: true });
  const run = await sqlite3Process([dbPath], [".bail on", ...sqliteImport(path, gzip, lookupPath), ""].join("\n"));
  if (run.spawnError) return { ok: false, message: `sqlite3: ${run.spawnError}`, seconds: run.seconds };
  if (run.code !== 0 || run.err.trim() !== "")
    return { ok: false, message: `sqlite3 exited ${run.code}: ${run.err.trim().slice(0, 300)}`, seconds: run.seconds };
  return { ok: true, seconds: run.seconds };
}

const RUN_TIME = /^Run Time: real ([\d.]+) user ([\d.]+) sys ([\d.]+)$/;

/**
 * The sqlite3 tool querying a database file it already imported
 * (`-readonly`): `seconds` is the statement's own time as `.timer on`
 * prints it (real), so the query alone; `processSeconds` the whole process.
 */
export async function querySqlite3File(
  dbPath: string,
  sql: string,
): Promise<
  (EngineRun & { processSeconds: number }) | { ok: false; message: string; seconds: number; processSeconds: number }
> {
  const run = await sqlite3Process(
    ["-readonly", dbPath],
    [".bail on", ".headers on", ".mode csv", ".timer on", `${sql};`, ""].join("\n"),
  );
  if (run.spawnError)
    return { ok: false, message: `sqlite3: ${run.spawnError}`, seconds: run.seconds, processSeconds: run.seconds };
  if (run.code !== 0 || run.err.trim() !== "")
    return {
      ok: false,
      message: `sqlite3 exited ${run.code}: ${run.err.trim().slice(0, 300)}`,
      seconds: run.seconds,
      processSeconds: run.seconds,
    };
  let seconds: number | null = null;
  const lines = run.out.split("\n").filter((line) => {
    const timer = line.trim().match(RUN_TIME);
    if (timer) seconds = (seconds ?? 0) + Number(timer[1]);
    return !timer;
  });
  return {
    ok: true,
    rows: parseCsv(lines.join("\n")),
    seconds: seconds ?? run.seconds,
    processSeconds: run.seconds,
  };
}

export function sqlite3Version(): string {
  const result = spawnSync("sqlite3", ["--version"], { encoding: "utf8" });
  return result.status === 0 ? result.stdout.trim().split(" ")[0]! : "not installed";
}

function duckValue(value: unknown): string {
  if (value === null || value === undefined) return "";
  return String(value);
}

const duckString = (text: string) => `'${text.replace(/'/g, "''")}'`;

async function loadDuckdb(path: string, lookupPath: string) {
  const instance = await DuckDBInstance.create(":memory:");
  const connection = await instance.connect();
  try {
    await connection.run(`CREATE TABLE t AS SELECT * FROM read_csv_auto(${duckString(path)})`);
    await connection.run(`CREATE TABLE lookup AS SELECT * FROM read_csv_auto(${duckString(lookupPath)})`);
  } catch (error) {
    connection.closeSync();
    instance.closeSync();
    throw error;
  }
  return { instance, connection };
}

async function duckRows(connection: DuckDBConnection, sql: string): Promise<string[][]> {
  const reader = await connection.runAndReadAll(sql);
  return [reader.columnNames(), ...reader.getRows().map((row) => row.map(duckValue))];
}

/**
 * A fresh in-memory DuckDB: `CREATE TABLE t AS SELECT * FROM
 * read_csv_auto(file)` (gzip detected from the name) and the lookup table,
 * then the query; the time covers opening the database, the load and the query.
 */
export async function runDuckdb(path: string, sql: string, lookupPath: string): Promise<EngineRun> {
  const started = performance.now();
  try {
    const { instance, connection } = await loadDuckdb(path, lookupPath);
    try {
      const rows = await duckRows(connection, sql);
      return { ok: true, rows, seconds: (performance.now() - started) / 1000 };
    } finally {
      connection.closeSync();
      instance.closeSync();
    }
  } catch (error) {
    return {
      ok: false,
      message: `duckdb: ${error instanceof Error ? error.message : String(error)}`,
      seconds: (performance.now() - started) / 1000,
    };
  }
}

/** The "repeat" reference: an in-memory DuckDB with `t` and `lookup` already loaded; `query` times the query only. */
export class LoadedDuckdb {
  private readonly instance: DuckDBInstance;
  private readonly connection: DuckDBConnection;
  readonly loadSeconds: number;

  private constructor(instance: DuckDBInstance, connection: DuckDBConnection, loadSeconds: number) {
    this.instance = instance;
    this.connection = connection;
    this.loadSeconds = loadSeconds;
  }

  static async load(path: string, lookupPath: string): Promise<LoadedDuckdb> {
    const started = performance.now();
    const { instance, connection } = await loadDuckdb(path, lookupPath);
    return new LoadedDuckdb(instance, connection, (performance.now() - started) / 1000);
  }

  async query(sql: string): Promise<EngineRun> {
    const started = performance.now();
    try {
      const rows = await duckRows(this.connection, sql);
      return { ok: true, rows, seconds: (performance.now() - started) / 1000 };
    } catch (error) {
      return {
        ok: false,
        message: `duckdb: ${error instanceof Error ? error.message : String(error)}`,
        seconds: (performance.now() - started) / 1000,
      };
    }
  }

  close(): void {
    this.connection.closeSync();
    this.instance.closeSync();
  }
}

export async function duckdbVersion(): Promise<string> {
  try {
    const instance = await DuckDBInstance.create(":memory:");
    const connection = await instance.connect();
    const reader = await connection.runAndReadAll("SELECT version()");
    const version = String(reader.getRows()[0]?.[0] ?? "?");
    connection.closeSync();
    instance.closeSync();
    return version;
  } catch (error) {
    return `unavailable (${error instanceof Error ? error.message : String(error)})`;
  }
}
