import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { csvCell, prng } from "../../bench/generate";
import { dqsRows, expectSameRows, sqlite3Rows } from "./support/compare";
import { httpLogin } from "./support/http-login";
import { startWranglerDev, type DevServer } from "./support/wrangler-dev";

// The same CSV files and queries through dqs (wrangler dev) and through the
// sqlite3 command-line tool; the results must agree. Three times: in sql.js
// with the column images the queue builds after an upload, in sql.js with
// COLUMN_IMAGES=off, where every query reads the CSV, and in the table store
// (TABLE_STORE_MIN_ROWS=1 gives both files a store; joins bring dims in).

const ACCOUNT = "e2e-dan";
const CATEGORIES = ["north", "south", "east", "west", "ünïcode", "with,comma", 'say "hi"'];

/** Seeded, so every run compares the same data. */
function generateFacts(rows: number): string {
  const random = prng(20261122);
  const lines = ["id,ts,cat,amount,qty,note,ok,day,big"];
  for (let id = 1; id <= rows; id++) {
    const pick = <T>(items: T[]) => items[Math.floor(random() * items.length)]!;
    const day = new Date(Date.UTC(2024, 0, 1) + Math.floor(random() * 366) * 86_400_000);
    // Written as most exports write it (a space, no zone), which is also how dqs stores a TIMESTAMP.
    const ts = new Date(day.getTime() + Math.floor(random() * 86_400) * 1000)
      .toISOString()
      .slice(0, 19)
      .replace("T", " ");
    const amount = random() < 0.05 ? "" : (random() * 2000 - 500).toFixed(2);
    const note = pick(["plain", "a, b", 'quote "q"', "multi\nline", "", "ünï", "LIKE abc here"]);
    const ok = random() < 0.1 ? "" : pick(["true", "false", "1", "0"]);
    const big = String(9007199254740993n + BigInt(Math.floor(random() * 1000)));
    lines.push(
      [id, ts, pick(CATEGORIES), amount, 1 + Math.floor(random() * 100), note, ok, day.toISOString().slice(0, 10), big]
        .map((v) => csvCell(String(v)))
        .join(","),
    );
  }
  return lines.join("\n") + "\n";
}

const DIMS = "cat,label,rank\n" + CATEGORIES.map((c, i) => `${csvCell(c)},Label ${i},${i + 1}`).join("\n") + "\n";

const QUERIES = [
  "SELECT count(*), sum(qty), min(amount), max(amount), count(amount), count(ok) FROM {facts}",
  "SELECT cat, count(*), round(avg(amount), 6), sum(qty) FROM {facts} GROUP BY cat ORDER BY cat",
  "SELECT id, note FROM {facts} WHERE note LIKE '%,%' OR note LIKE '%\"%' ORDER BY id LIMIT 40",
  "SELECT id, amount, ok, note FROM {facts} WHERE amount IS NULL ORDER BY id",
  "SELECT day, count(*) FROM {facts} WHERE day >= '2024-06-01' AND day < '2024-07-01' GROUP BY day ORDER BY day",
  "SELECT ok, count(*) FROM {facts} GROUP BY ok ORDER BY ok",
  "SELECT a.cat, count(*) FROM {facts} a JOIN (SELECT cat, max(amount) m FROM {facts} GROUP BY cat) b ON a.cat = b.cat AND a.amount > b.m * 0.9 GROUP BY 1 ORDER BY 1",
  "SELECT id, cat, amount, rank() OVER (PARTITION BY cat ORDER BY amount DESC, id) AS r FROM {facts} ORDER BY cat, r, id LIMIT 60",
  "SELECT cat, sum(CASE WHEN ok = 1 THEN qty ELSE 0 END) AS yes, sum(CASE WHEN ok = 0 THEN qty ELSE 0 END) AS no FROM {facts} GROUP BY cat ORDER BY cat",
  "SELECT id, amount FROM {facts} ORDER BY amount, id LIMIT 30",
  "SELECT count(*) FROM {facts} WHERE qty > (SELECT avg(qty) FROM {facts})",
  "SELECT substr(ts, 1, 7) AS month, count(*), max(ts) FROM {facts} GROUP BY month ORDER BY month",
  "SELECT id, ts FROM {facts} WHERE ts BETWEEN '2024-03-01 00:00:00' AND '2024-03-02 23:59:59' ORDER BY ts, id",
  "SELECT count(*), min(ts), max(ts) FROM {facts} WHERE ts >= datetime('2024-05-01') AND ts < datetime('2024-05-01', '+1 month')",
  "SELECT d.label, d.rank, count(*), round(sum(f.amount), 2) FROM {facts} f JOIN {dims} d ON d.cat = f.cat GROUP BY d.label, d.rank ORDER BY d.rank",
  "SELECT typeof(amount), typeof(qty), typeof(big), count(*) FROM {facts} GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
  "SELECT max(big), min(big), sum(big - 9007199254740993) FROM {facts}",
  "WITH top AS (SELECT cat, amount FROM {facts} WHERE amount > 1400) SELECT cat, count(*) FROM top GROUP BY cat ORDER BY 2 DESC, 1",
  "SELECT upper(cat), length(note), count(*) FROM {facts} GROUP BY 1, 2 ORDER BY 1, 2",
  "VALUES (1, 'a'), (2, NULL)",
  "SELECT DISTINCT qty % 7 AS r FROM {facts} ORDER BY r",
  "SELECT id, ceil(amount), floor(amount), sign(amount), log(qty), ln(qty), pow(qty, 2) FROM {facts} ORDER BY id LIMIT 25",
];

/** One running service with the files uploaded. */
interface Target {
  server: DevServer;
  token: string;
}

let work: string;

function sqlite3(sql: string): string[][] {
  return sqlite3Rows(
    [
      "CREATE TABLE facts (id INTEGER, ts TEXT, cat TEXT, amount REAL, qty INTEGER, note TEXT, ok INTEGER, day TEXT, big INTEGER);",
      "CREATE TABLE dims (cat TEXT, label TEXT, rank INTEGER);",
      `.import --csv --skip 1 ${join(work, "facts.csv")} facts`,
      `.import --csv --skip 1 ${join(work, "dims.csv")} dims`,
      // .import keeps empty fields as '', which dqs reads as NULL (docs/api.md), and booleans as text.
      ...["amount", "note", "ok"].map((c) => `UPDATE facts SET ${c} = NULL WHERE ${c} = '';`),
      "UPDATE facts SET ok = CASE lower(ok) WHEN 'true' THEN 1 WHEN 'false' THEN 0 ELSE ok END;",
    ],
    sql.replaceAll("{facts}", "facts").replaceAll("{dims}", "dims"),
  );
}

function dqs({ server, token }: Target, sql: string) {
  return dqsRows(
    server,
    token,
    sql.replaceAll("{facts}", `"${ACCOUNT}".diff.facts`).replaceAll("{dims}", `"${ACCOUNT}".diff.dims`),
  );
}

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), "dqs-diff-"));
  writeFileSync(join(work, "facts.csv"), generateFacts(3000));
  writeFileSync(join(work, "dims.csv"), DIMS);
  return () => rmSync(work, { recursive: true, force: true });
});

const FILES = ["facts", "dims"] as const;

/** The bytes of CSV a query parses when it reads no column image: each file it names, once. */
function csvBytes(sql: string): number {
  return FILES.reduce(
    (sum, name) => sum + (sql.includes(`{${name}}`) ? statSync(join(work, `${name}.csv`)).size : 0),
    0,
  );
}

/** Starts the service, logs in, uploads both files; with images on, waits until both are query-ready. */
async function serve(vars: Record<string, string>): Promise<Target> {
  const server = await startWranglerDev(vars);
  const token = (await httpLogin(server.url, ACCOUNT)).accessToken;
  const headers = { authorization: `Bearer ${token}` };
  await fetch(`${server.url}/v1/dataset/${ACCOUNT}/diff`, { method: "PUT", headers });
  for (const name of FILES) {
    const form = new FormData();
    form.append("Data", new Blob([readFileSync(join(work, `${name}.csv`))]), `${name}.csv`);
    const response = await fetch(`${server.url}/v1/data/${ACCOUNT}/diff/${name}`, {
      method: "POST",
      headers,
      body: form,
    });
    if (response.status !== 200) throw new Error(`upload of ${name} failed: ${await response.text()}`);
  }
  return { server, token };
}

/** The storage endpoint's view of each file: QueryReady and the images' sizes. */
async function storage({ server, token }: Target) {
  return Promise.all(
    FILES.map(async (name) => {
      const response = await fetch(`${server.url}/v1/data/${ACCOUNT}/diff/${name}/metadata/storage`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(response.status).toBe(200);
      return (
        (await response.json()) as {
          Data: { QueryReady: boolean; ColumnImageBytes: number[] | null; TableStore: { State: string } | null };
        }
      ).Data;
    }),
  );
}

// CI installs sqlite3; anywhere else without it this comparison is skipped, never silently in CI.
const hasSqlite3 = spawnSync("sqlite3", ["--version"]).status === 0;
const comparison = hasSqlite3 || process.env.CI ? describe : describe.skip;

comparison.each([
  { mode: "column images", vars: { COLUMN_IMAGES: "build" } as Record<string, string>, engine: "sqljs" },
  { mode: "CSV", vars: { COLUMN_IMAGES: "off" }, engine: "sqljs" },
  { mode: "table stores", vars: { COLUMN_IMAGES: "build", TABLE_STORE_MIN_ROWS: "1" }, engine: "store" },
])("dqs reading $mode against the sqlite3 command-line tool", ({ mode, vars, engine }) => {
  let target: Target;

  beforeAll(async () => {
    target = await serve(vars);
    if (vars.COLUMN_IMAGES === "off") return;
    const deadline = Date.now() + 60_000;
    while (!(await storage(target)).every((item) => item.QueryReady)) {
      if (Date.now() > deadline) throw new Error(`the ${mode} were not built within 60 s`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }, 180_000);

  afterAll(() => target?.server.stop());

  it(`should have prepared both files as ${mode}`, async () => {
    const items = await storage(target);
    if (mode === "CSV") expect(items.map((item) => item.QueryReady)).toEqual([false, false]);
    else if (mode === "column images") expect(items.map((item) => item.ColumnImageBytes?.length)).toEqual([9, 3]);
    else expect(items.map((item) => item.TableStore?.State)).toEqual(["ready", "ready"]);
  });

  it.each(QUERIES)("should agree on %s", async (sql) => {
    const answer = await dqs(target, sql);
    expectSameRows(answer.rows, sqlite3(sql));
    // A query that names no data item always runs in sql.js.
    expect(answer.engine).toBe(sql.includes("{facts}") ? engine : "sqljs");
    // BytesLoaded: reading the CSV, each file the query names, parsed whole once; reading images, the images' bytes
    // instead (test/e2e/catalog-query.e2e.ts checks that figure exactly).
    if (mode === "CSV") expect(answer.status.BytesLoaded).toBe(csvBytes(sql));
    if (mode === "column images" && csvBytes(sql) > 0) expect(answer.status.BytesLoaded).not.toBe(csvBytes(sql));
  });
});
