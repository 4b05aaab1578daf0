/** The reference engines: the sqlite3 command-line tool and DuckDB, on the same files and queries. */
import { spawn, spawnSync } from "node:child_process";
import { DuckDBInstance } from "@duckdb/node-api";
import Papa from "papaparse";

export type EngineRun =
  { ok: true; rows: string[][]; seconds: number } | { ok: false; message: string; seconds: number };

/** The benchmark table's columns, typed for SQLite as dqs types them (TIMESTAMP as ISO text). */
const SQLITE_TABLE = "CREATE TABLE t (id INTEGER, ts TEXT, category TEXT, amount REAL, qty INTEGER, note TEXT);";

export function parseCsv(text: string): string[][] {
  const parsed = Papa.parse<string[]>(text.replace(/\r\n/g, "\n"), { skipEmptyLines: true });
  return parsed.data;
}

function shellQuote(path: string): string {
  return `'${path.replace(/'/g, "'\\''")}'`;
}

/**
 * One sqlite3 process on an in-memory database: create the typed table,
 * `.import --csv --skip 1` the file (a gzipped file through `|gzip -dc`),
 * run the query; the time is the whole process, import included.
 */
export async function runSqlite3(path: string, gzip: boolean, sql: string): Promise<EngineRun> {
  const source = gzip ? `"|gzip -dc ${shellQuote(path)}"` : `"${path.replace(/"/g, '\\"')}"`;
  const script = [
    ".bail on",
    SQLITE_TABLE,
    `.import --csv --skip 1 ${source} t`,
    ".headers on",
    ".mode csv",
    `${sql};`,
    "",
  ].join("\n");
  const started = performance.now();
  return new Promise((resolve) => {
    const child = spawn("sqlite3", [":memory:"], { stdio: ["pipe", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (out += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (err += chunk));
    child.on("error", (error) =>
      resolve({ ok: false, message: `sqlite3: ${error.message}`, seconds: (performance.now() - started) / 1000 }),
    );
    child.on("close", (code) => {
      const seconds = (performance.now() - started) / 1000;
      if (code !== 0 || err.trim() !== "")
        resolve({ ok: false, message: `sqlite3 exited ${code}: ${err.trim().slice(0, 300)}`, seconds });
      else resolve({ ok: true, rows: parseCsv(out), seconds });
    });
    child.stdin.end(script);
  });
}

export function sqlite3Version(): string {
  const result = spawnSync("sqlite3", ["--version"], { encoding: "utf8" });
  return result.status === 0 ? result.stdout.trim().split(" ")[0]! : "not installed";
}

function duckValue(value: unknown): string {
  if (value === null || value === undefined) return "";
  return String(value);
}

/**
 * A fresh in-memory DuckDB: `CREATE TABLE t AS SELECT * FROM
 * read_csv_auto(file)` (gzip detected from the name), then the query; the
 * time covers opening the database, the load and the query.
 */
export async function runDuckdb(path: string, sql: string): Promise<EngineRun> {
  const started = performance.now();
  try {
    const instance = await DuckDBInstance.create(":memory:");
    const connection = await instance.connect();
    try {
      await connection.run(`CREATE TABLE t AS SELECT * FROM read_csv_auto('${path.replace(/'/g, "''")}')`);
      const reader = await connection.runAndReadAll(sql);
      const rows = [reader.columnNames(), ...reader.getRows().map((row) => row.map(duckValue))];
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
