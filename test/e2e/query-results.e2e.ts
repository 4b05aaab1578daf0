import { DuckDBInstance, type DuckDBConnection, type DuckDBInstance as Instance } from "@duckdb/node-api";
import { tableFromIPC } from "apache-arrow";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DqsClient, MemoryTokenStore } from "../../src/sdk";
import { buildCli, runCli, scratchDir, temporaryHome } from "./support/cli-run";
import { httpLogin } from "./support/http-login";
import { startWranglerDev, type DevServer } from "./support/wrangler-dev";

// The result formats and pages against a real `wrangler dev`: page 2 of a
// multi-page result through the SDK, and Parquet and Arrow files read back
// by DuckDB (and apache-arrow) holding exactly the CSV's rows and types.

const ACCOUNT = "e2e-results";
const ROWS = 2500;

/** Row i of the uploaded item: 64-bit integers beyond 2^53, reals, text that needs quoting, NULLs, empty strings. */
function item(i: number) {
  return {
    id: i,
    big: i % 7 === 0 ? null : (i % 2 === 0 ? 1n : -1n) * (9007199254740993n + BigInt(i)),
    ratio: i % 5 === 0 ? null : i / 8,
    label: i % 11 === 0 ? null : i % 13 === 0 ? "" : i % 3 === 0 ? `say "${i}", ok` : `row ü${i}`,
    ok: i % 4 === 0 ? null : i % 2 === 0,
    day: i % 6 === 0 ? null : new Date(Date.UTC(2024, 0, 1) + i * 86_400_000).toISOString().slice(0, 10),
  };
}

function itemCsv(): string {
  const field = (value: unknown) =>
    value === null
      ? ""
      : value === ""
        ? '""'
        : typeof value === "string" && /[",]/.test(value)
          ? `"${value.replace(/"/g, '""')}"`
          : String(value);
  const lines = ["id,big,ratio,label,ok,day"];
  for (let i = 1; i <= ROWS; i++) lines.push(Object.values(item(i)).map(field).join(","));
  return `${lines.join("\n")}\n`;
}

/** Row i as the rows endpoint types it: the 64-bit values, all beyond 2^53, as strings; dates as their text. */
function jsonRow(i: number): unknown[] {
  const { id, big, ratio, label, ok, day } = item(i);
  return [id, big === null ? null : String(big), ratio, label, ok, day];
}

const SQL = `SELECT id, big, ratio, label, ok, day FROM "${ACCOUNT}".results.items ORDER BY id`;
const DUCK_TYPES: Record<string, string> = {
  INTEGER: "BIGINT",
  DOUBLE: "DOUBLE",
  STRING: "VARCHAR",
  BOOLEAN: "BOOLEAN",
  DATE: "DATE",
  TIMESTAMP: "VARCHAR",
};

let server: DevServer;
let client: DqsClient;
let refreshToken: string;
let work: string;
let duck: Instance;
let db: DuckDBConnection;

beforeAll(async () => {
  server = await startWranglerDev();
  const tokens = await httpLogin(server.url, ACCOUNT);
  refreshToken = tokens.refreshToken;
  client = new DqsClient({
    baseUrl: server.url,
    tokens: new MemoryTokenStore({
      tokenType: "Bearer",
      accessToken: tokens.accessToken,
      accessTokenExpiresAt: new Date(Date.now() + 3_600_000),
      refreshToken: tokens.refreshToken,
      refreshTokenExpiresAt: new Date(Date.now() + 86_400_000),
    }),
  });
  await client.createDataset(ACCOUNT, "results");
  await client.upload(ACCOUNT, "results", "items", itemCsv());
  work = scratchDir("dqs-results-");
  duck = await DuckDBInstance.create(":memory:");
  db = await duck.connect();
});

afterAll(async () => {
  db?.closeSync();
  duck?.closeSync();
  await server?.stop();
});

async function saved(queryId: string, format: "csv" | "parquet" | "arrow"): Promise<string> {
  const download = await client.queryResult(queryId, format);
  const path = join(work, `${queryId}.${format}`);
  writeFileSync(path, new Uint8Array(await new Response(download.body).arrayBuffer()));
  return path;
}

async function duckRead(sql: string): Promise<{ names: string[]; types: string[]; rows: unknown[][] }> {
  const reader = await db.runAndReadAll(sql);
  return {
    names: reader.columnNames(),
    types: reader.columnTypes().map((type) => type.toString()),
    rows: reader.getRows() as unknown[][],
  };
}

/**
 * The result CSV as DuckDB reads it with the result schema's types: the reference the other formats must match.
 * Read as PostgreSQL reads CSV (allow_quoted_nulls off): an empty field is NULL, `""` the empty string.
 */
async function csvReference(queryId: string) {
  const columns = (await client.queryResultSchema(queryId)).TableDefinition!.Columns;
  const types = columns.map((column) => `'${column.Name}': '${DUCK_TYPES[column.DataType.DataType]}'`).join(", ");
  const path = await saved(queryId, "csv");
  return duckRead(`SELECT * FROM read_csv('${path}', header = true, allow_quoted_nulls = false, columns = {${types}})`);
}

describe("a multi-page result", () => {
  let queryId: string;

  beforeAll(async () => {
    queryId = (await client.query(SQL, { as: "stream", wait: 120 })).queryId;
  });

  it("should give page 2 through the SDK, typed as the upload's rows", async () => {
    const first = await client.resultPage(queryId, { limit: 1000 });
    const second = await client.resultPage(queryId, { limit: 1000, cursor: first.NextCursor! });

    expect(first.RowCount).toBe(ROWS);
    expect(second.Columns.map((column) => column.DataType)).toEqual([
      "INTEGER",
      "INTEGER",
      "DOUBLE",
      "STRING",
      "BOOLEAN",
      "DATE",
    ]);
    expect(second.Rows).toEqual(Array.from({ length: 1000 }, (_, r) => jsonRow(r + 1001)));
    expect(second.NextCursor).toEqual(expect.any(String));
  });

  it("should download Parquet that DuckDB reads with the result's types and exactly the CSV's rows", async () => {
    const csv = await csvReference(queryId);

    const parquet = await duckRead(`SELECT * FROM read_parquet('${await saved(queryId, "parquet")}')`);

    expect(parquet.names).toEqual(["id", "big", "ratio", "label", "ok", "day"]);
    expect(parquet.types).toEqual(["BIGINT", "BIGINT", "DOUBLE", "VARCHAR", "BOOLEAN", "DATE"]);
    expect(csv.types).toEqual(parquet.types);
    expect(csv.rows).toHaveLength(ROWS);
    // Row 13's label is the empty string, row 11's NULL: the CSV and Parquet keep them apart.
    expect([csv.rows[12]![3], csv.rows[10]![3]]).toEqual(["", null]);
    expect(parquet.rows).toEqual(csv.rows);
  });

  it("should download an Arrow IPC file with the result's types and exactly the CSV's rows", async () => {
    const csv = await csvReference(queryId);

    const table = tableFromIPC(readFileSync(await saved(queryId, "arrow")));

    expect(table.schema.fields.map((field) => [field.name, String(field.type)])).toEqual([
      ["id", "Int64"],
      ["big", "Int64"],
      ["ratio", "Float64"],
      ["label", "Utf8"],
      ["ok", "Bool"],
      ["day", "Date32<DAY>"],
    ]);
    // Arrow's Date32 reads as epoch milliseconds, DuckDB's DATE as a value printing YYYY-MM-DD.
    const dayText = (value: unknown) =>
      value === null ? null : typeof value === "number" ? new Date(value).toISOString().slice(0, 10) : String(value);
    const arrowRows = table.toArray().map((row) => Object.values((row as { toJSON(): object }).toJSON()));
    expect(arrowRows.map((row) => [...row.slice(0, 5), dayText(row[5])])).toEqual(
      csv.rows.map((row) => [...row.slice(0, 5), dayText(row[5])]),
    );
  });
});

describe("dqs query --format", () => {
  let cli: string;
  let home: string;

  beforeAll(async () => {
    cli = buildCli();
    home = temporaryHome();
    const login = await runCli(cli, ["login", "--no-browser"], {
      home,
      env: { DQS_URL: server.url },
      stdin: `${refreshToken}\n`,
    });
    expect(login.code, login.stderr).toBe(0);
  });

  function dqs(args: string[]) {
    return runCli(cli, args, { home, env: { DQS_URL: server.url } });
  }

  it("should write Parquet that DuckDB reads as the SDK's CSV reads", async () => {
    const path = join(work, "cli.parquet");

    const result = await dqs(["query", SQL, "--format", "parquet", "-o", path]);

    expect(result.code, result.stderr).toBe(0);
    const parquet = await duckRead(`SELECT * FROM read_parquet('${path}')`);
    expect(parquet.types).toEqual(["BIGINT", "BIGINT", "DOUBLE", "VARCHAR", "BOOLEAN", "DATE"]);
    expect(parquet.rows).toHaveLength(ROWS);
    expect(parquet.rows[2]!.slice(0, 5)).toEqual([3n, -9007199254740996n, 3 / 8, 'say "3", ok', false]);
    expect(String(parquet.rows[2]![5])).toBe("2024-01-04");
    expect(parquet.rows[6]![1]).toBeNull();
  });

  it.each([
    [
      "ndjson",
      (out: string) =>
        out
          .trimEnd()
          .split("\n")
          .map((line) => JSON.parse(line) as unknown),
    ],
    ["json", (out: string) => JSON.parse(out) as unknown[]],
  ])("should print the rows as %s", async (format, parse) => {
    const result = await dqs(["query", `${SQL} LIMIT 3`, "--format", format]);

    expect(result.code, result.stderr).toBe(0);
    const rows = parse(result.stdout) as Record<string, unknown>[];
    expect(rows.map((row) => row.id)).toEqual([1, 2, 3]);
    expect(rows[1]).toMatchObject({ id: 2, ratio: 0.25, label: "row ü2" });
  });

  it("should write Arrow and CSV files", async () => {
    const arrow = join(work, "cli.arrow");
    const csv = join(work, "cli.csv");

    expect((await dqs(["query", `${SQL} LIMIT 5`, "--format", "arrow", "-o", arrow])).code).toBe(0);
    expect((await dqs(["query", `${SQL} LIMIT 5`, "--format", "csv", "-o", csv])).code).toBe(0);

    expect(tableFromIPC(readFileSync(arrow)).numRows).toBe(5);
    expect(readFileSync(csv, "utf8").split("\n")[0]).toBe("id,big,ratio,label,ok,day");
  });
});
