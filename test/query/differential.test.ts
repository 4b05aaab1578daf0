import { beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../../src/worker/query/sqlite";
import { openDatabase } from "../../src/worker/query/sqlite";
import { SQLITE_TYPE } from "../../src/worker/query/table-layout";
import { csvCell, runEngine, seededRandom, type MemoryItem } from "../support/engine";

// The same generated rows, queried two ways: through the engine (CSV file,
// typed loading, name rewriting, column pruning, result CSV) and straight in
// sql.js after plain INSERTs of SQL literals. The answers must agree cell by
// cell when the engine loads the CSV, when it reads the column images the
// queue builds after an upload, and when it runs the query in a table store
// (workerd's own SQLite in a Durable Object, filled from the CSV). The first
// two run the same SQLite as the reference, so they check everything the
// engine adds around it; agreement with the sqlite3 tool is
// test/e2e/differential.e2e.ts.

// Not a multiple of 16, so the column images end in a partly filled record.
const ROWS = 2003;
const CATEGORIES = ["north", "south", "east", "west", "ünïcode", "with,comma", 'say "hi"'];
const NOTES = ["plain", "a, b", 'quote "q"', "multi\nline", "ünï ✓", "LIKE abc here", "  spaced  ", "100%", ""];

/** A value as an SQL literal for the reference, and as written in the file (an empty string `""`, NULL an empty field). */
type Cell = { sql: string; csv: string };

const NULL_CELL: Cell = { sql: "NULL", csv: "" };

function text(value: string): Cell {
  return { sql: `'${value.replace(/'/g, "''")}'`, csv: value === "" ? '""' : csvCell(value) };
}

const two = (n: number) => String(Math.abs(n)).padStart(2, "0");

/**
 * A TIMESTAMP written as files write them (a space and no zone, T and Z, or
 * a local time with its offset), and the UTC text SQLite's datetime() gives
 * for it, which the engine must store.
 */
function timestamp(ms: number, form: number): Cell {
  const utc = new Date(ms).toISOString();
  const stored = `${utc.slice(0, 10)} ${utc.slice(11, 19)}`;
  if (form === 0) return { sql: `'${stored}'`, csv: stored };
  if (form === 1) return { sql: `'${stored}'`, csv: `${utc.slice(0, 19)}Z` };
  const offset = [120, -330, 545][form - 2]!;
  const local = new Date(ms + offset * 60_000).toISOString().slice(0, 19);
  return {
    sql: `'${stored}'`,
    csv: `${local}${offset < 0 ? "-" : "+"}${two(Math.trunc(offset / 60))}:${two(offset % 60)}`,
  };
}

function generateFacts(): Cell[][] {
  const random = seededRandom(20261122);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const rows: Cell[][] = [];
  for (let id = 1; id <= ROWS; id++) {
    const dayMs = Date.UTC(2024, 0, 1) + Math.floor(random() * 366) * 86_400_000;
    const day = new Date(dayMs).toISOString().slice(0, 10);
    const ts = timestamp(dayMs + Math.floor(random() * 86_400) * 1000, Math.floor(random() * 5));
    const amount = (random() * 2000 - 500).toFixed(2);
    const qty = String(1 + Math.floor(random() * 100));
    const okSpelling = pick(["true", "false", "TRUE", "False", "1", "0"]);
    const ok = /^(true|1)$/i.test(okSpelling) ? "1" : "0";
    const big = String(9007199254740993n + BigInt(Math.floor(random() * 1000)) * (random() < 0.5 ? -1n : 1n));
    rows.push([
      { sql: String(id), csv: String(id) },
      ts,
      text(pick(CATEGORIES)),
      random() < 0.05 ? NULL_CELL : { sql: amount, csv: amount },
      { sql: qty, csv: qty },
      random() < 0.1 ? NULL_CELL : text(pick(NOTES)),
      random() < 0.1 ? NULL_CELL : { sql: ok, csv: okSpelling },
      random() < 0.03 ? NULL_CELL : text(day),
      { sql: big, csv: big },
    ]);
  }
  return rows;
}

const FACT_COLUMNS: MemoryItem["columns"] = [
  ["id", "INTEGER"],
  ["ts", "TIMESTAMP"],
  ["cat", "STRING"],
  ["amount", "DOUBLE"],
  ["qty", "INTEGER"],
  ["note", "STRING"],
  ["ok", "BOOLEAN"],
  ["day", "DATE"],
  ["big", "INTEGER"],
];

const DIM_COLUMNS: MemoryItem["columns"] = [
  ["cat", "STRING"],
  ["label", "STRING"],
  ["rank", "INTEGER"],
];

const DIMS: Cell[][] = CATEGORIES.slice(0, 6).map((cat, i) => [
  text(cat),
  text(`Label ${i}`),
  { sql: String(i + 1), csv: String(i + 1) },
]);

const QUERIES = [
  "SELECT count(*), sum(qty), min(amount), max(amount), count(amount), count(ok), count(note), count(day) FROM {facts}",
  "SELECT cat, count(*), round(avg(amount), 6), sum(qty), total(amount) FROM {facts} GROUP BY cat ORDER BY cat",
  "SELECT id, note FROM {facts} WHERE note LIKE '%,%' OR note LIKE '%\"%' ORDER BY id LIMIT 50",
  "SELECT id, amount, ok, note, day FROM {facts} WHERE amount IS NULL OR day IS NULL ORDER BY id",
  "SELECT day, count(*), sum(qty) FROM {facts} WHERE day >= '2024-06-01' AND day < '2024-07-01' GROUP BY day ORDER BY day",
  "SELECT ok, count(*) FROM {facts} GROUP BY ok ORDER BY ok NULLS LAST",
  "SELECT id, amount FROM {facts} ORDER BY amount NULLS FIRST, id LIMIT 120",
  "SELECT id, amount FROM {facts} ORDER BY amount DESC NULLS LAST, id LIMIT 60",
  "SELECT id, cat, amount, rank() OVER (PARTITION BY cat ORDER BY amount DESC, id) AS r FROM {facts} ORDER BY cat, r, id LIMIT 100",
  "SELECT id, qty, sum(qty) OVER (ORDER BY id ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS moving, lag(amount) OVER (ORDER BY id) AS previous FROM {facts} ORDER BY id LIMIT 80",
  "SELECT cat, sum(CASE WHEN ok = 1 THEN qty ELSE 0 END) AS yes, sum(CASE WHEN ok = 0 THEN qty ELSE 0 END) AS no, sum(CASE WHEN ok IS NULL THEN 1 END) AS unknown FROM {facts} GROUP BY cat ORDER BY cat",
  "SELECT count(*) FROM {facts} WHERE qty > (SELECT avg(qty) FROM {facts})",
  "SELECT substr(ts, 1, 7) AS month, count(*), max(ts), min(ts) FROM {facts} GROUP BY month ORDER BY month",
  "SELECT id, ts FROM {facts} WHERE ts BETWEEN '2024-03-01 00:00:00' AND '2024-03-03 23:59:59' ORDER BY ts, id",
  "SELECT count(*), min(ts), max(ts) FROM {facts} WHERE ts >= datetime('2024-05-01') AND ts < datetime('2024-05-01', '+1 month')",
  "SELECT id, note, note = '', length(note) FROM {facts} WHERE note = '' OR note IS NULL ORDER BY id LIMIT 60",
  "SELECT d.label, d.rank, count(*), round(sum(f.amount), 2) FROM {facts} f JOIN {dims} d ON d.cat = f.cat GROUP BY d.label, d.rank ORDER BY d.rank",
  "SELECT f.cat, d.label, count(*) FROM {facts} f LEFT JOIN {dims} d ON d.cat = f.cat GROUP BY f.cat, d.label ORDER BY f.cat",
  "SELECT typeof(amount), typeof(qty), typeof(big), typeof(ok), typeof(day), count(*) FROM {facts} GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5",
  "SELECT max(big), min(big), sum(big - 9007199254740993), count(DISTINCT big) FROM {facts}",
  "WITH top AS (SELECT cat, amount FROM {facts} WHERE amount > 1200) SELECT cat, count(*), max(amount) FROM top GROUP BY cat HAVING count(*) > 5 ORDER BY 2 DESC, 1",
  "SELECT upper(cat), length(note), count(*) FROM {facts} GROUP BY 1, 2 ORDER BY 1, 2 NULLS FIRST",
  "SELECT DISTINCT qty % 7 AS r FROM {facts} ORDER BY r",
  "SELECT id, CASE WHEN amount IS NULL THEN 'none' WHEN amount < 0 THEN 'refund' WHEN amount < 500 THEN 'small' ELSE 'large' END AS size, coalesce(note, '(none)') FROM {facts} WHERE id % 97 = 0 ORDER BY id",
  "SELECT strftime('%w', day) AS weekday, count(*), round(avg(julianday(ts) - julianday(day)), 9) FROM {facts} WHERE day IS NOT NULL GROUP BY weekday ORDER BY weekday",
  "SELECT cat FROM {dims} UNION SELECT cat FROM {facts} WHERE qty > 98 ORDER BY 1",
  "SELECT id, amount / qty, qty / 3, qty * 1.0 / 3, amount * 2 FROM {facts} WHERE id <= 40 ORDER BY id",
  "SELECT group_concat(id, ';') FROM (SELECT id FROM {facts} WHERE note = 'multi' || char(10) || 'line' ORDER BY id LIMIT 15)",
];

let facts: Cell[][];
let reference: Database;
let items: Record<string, MemoryItem>;

function csvOf(columns: MemoryItem["columns"], rows: Cell[][]): string {
  return [columns.map(([name]) => name).join(","), ...rows.map((row) => row.map((cell) => cell.csv).join(","))]
    .join("\n")
    .concat("\n");
}

beforeAll(async () => {
  facts = generateFacts();
  items = {
    "diff.set.facts": { columns: FACT_COLUMNS, data: csvOf(FACT_COLUMNS, facts) },
    "diff.set.dims": { columns: DIM_COLUMNS, data: csvOf(DIM_COLUMNS, DIMS) },
  };
  reference = await openDatabase();
  for (const [table, columns, rows] of [
    ["facts", FACT_COLUMNS, facts],
    ["dims", DIM_COLUMNS, DIMS],
  ] as const) {
    reference.run(
      `CREATE TABLE ${table} (${columns.map(([name, type]) => `${name} ${SQLITE_TYPE[type]}`).join(", ")})`,
    );
    reference.run(
      `INSERT INTO ${table} VALUES ${rows.map((row) => `(${row.map((cell) => cell.sql).join(", ")})`).join(",\n")}`,
    );
  }
  return () => reference.close();
});

/** RFC 4180 with \n line ends: every line, the last one included, ends with \n. An empty field is null, `""` "". */
function parseCsv(csv: string): (string | null)[][] {
  const rows: (string | null)[][] = [];
  let row: (string | null)[] = [];
  let field = "";
  let quoted = false;
  let wasQuoted = false;
  const end = () => {
    row.push(field === "" && !wasQuoted ? null : field);
    field = "";
    wasQuoted = false;
  };
  for (let i = 0; i < csv.length; i++) {
    const c = csv[i]!;
    if (quoted) {
      if (c === '"' && csv[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = wasQuoted = true;
    else if (c === ",") end();
    else if (c === "\n") {
      end();
      rows.push(row);
      row = [];
    } else field += c;
  }
  expect(field === "" && row.length === 0, "the CSV ends with a line end").toBe(true);
  return rows;
}

type Value = null | bigint | number | string;

function referenceRows(sql: string): { names: string[]; rows: Value[][] } {
  const statement = reference.prepare(sql);
  const getter = statement as unknown as { get(params: null, config: { useBigInt: boolean }): Value[] };
  try {
    const rows: Value[][] = [];
    while (statement.step()) rows.push(getter.get(null, { useBigInt: true }));
    return { names: statement.getColumnNames(), rows };
  } finally {
    statement.free();
  }
}

function expectSameCell(actual: string | null, expected: Value, where: string): void {
  if (expected === null) expect(actual, where).toBeNull();
  else if (typeof expected === "bigint") expect(actual, where).toBe(expected.toString());
  else if (typeof expected === "number") {
    expect(actual ?? "NULL", `${where}: a REAL is written as one`).toMatch(/[.e]|Infinity/);
    const difference = Math.abs(Number(actual) - expected);
    expect(difference, `${where}: ${actual} vs ${expected}`).toBeLessThanOrEqual(
      1e-12 * Math.max(1, Math.abs(expected)),
    );
  } else expect(actual, where).toBe(expected);
}

describe.each(["csv", "images", "store"] as const)(
  "the engine (reading %s) against sql.js with the same rows inserted directly",
  (mode) => {
    it("should hold the same generated data on both sides", async () => {
      const checks = "count(*), sum(qty), sum(big - 9007199254740993), max(big), count(note), count(ok), sum(ok)";

      const run = await runEngine(`SELECT ${checks} FROM diff.set.facts`, items, { mode });

      expect(run.outcome.ok).toBe(true);
      const expected = referenceRows(`SELECT ${checks} FROM facts`).rows[0]!;
      expect(expected[0]).toBe(BigInt(ROWS));
      expect(parseCsv(run.csv)[1]).toEqual(expected.map((value) => String(value)));
    });

    it.each(QUERIES)("should agree on %s", async (sql) => {
      const expected = referenceRows(sql.replaceAll("{facts}", "facts").replaceAll("{dims}", "dims"));

      const run = await runEngine(
        sql.replaceAll("{facts}", "diff.set.facts").replaceAll("{dims}", "diff.set.dims"),
        items,
        { mode },
      );

      if (!run.outcome.ok) throw new Error(run.outcome.message);
      const [header, ...rows] = parseCsv(run.csv);
      expect(header).toEqual(expected.names.map((name) => name.replaceAll("diff.set.", "")));
      expect(rows.length).toBe(expected.rows.length);
      expect(rows.length).toBeGreaterThan(0);
      if (mode === "images") expect(run.source.opened, "no CSV is read").toEqual([]);
      if (mode === "store") expect(run.outcome.engine).toBe("store");
      rows.forEach((row, r) => {
        expect(row.length).toBe(expected.names.length);
        row.forEach((cell, c) => expectSameCell(cell, expected.rows[r]![c]!, `row ${r + 1}, column ${c + 1}`));
      });
    });
  },
);
