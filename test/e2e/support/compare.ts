import { execFileSync } from "node:child_process";
import Papa from "papaparse";
import { expect } from "vitest";

/** What dqs answered: the result's rows (header first) and which engine ran it. */
export interface DqsAnswer {
  rows: string[][];
  engine: string;
  status: { Status: string; Message: string; Engine: string; BytesLoaded: number };
}

/**
 * Runs SQL through the service (submit with Prefer: wait, status, signed download) and parses the result CSV.
 * Each call runs it (Reuse false): the answer is the engine's, never an earlier run's result.
 */
export async function dqsRows(
  server: { url: string },
  token: string,
  sql: string,
  waitSeconds = 30,
): Promise<DqsAnswer> {
  const headers = { authorization: `Bearer ${token}` };
  const submitted = await fetch(`${server.url}/v1/query`, {
    method: "POST",
    headers: { ...headers, "content-type": "application/json", prefer: `wait=${waitSeconds}` },
    body: JSON.stringify({ Sql: sql, Reuse: false }),
  });
  const { Data } = (await submitted.json()) as { Data: { QueryId: string } };
  let status: DqsAnswer["status"];
  for (;;) {
    status = (
      (await (await fetch(`${server.url}/v1/query/${Data.QueryId}/status`, { headers })).json()) as {
        Data: DqsAnswer["status"];
      }
    ).Data;
    if (status.Status !== "queued" && status.Status !== "running") break;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  if (status.Status !== "succeeded") throw new Error(`${status.Status}: ${status.Message}`);
  const redirect = await fetch(`${server.url}/v1/query/${Data.QueryId}/results/rawdata`, {
    headers,
    redirect: "manual",
  });
  const csv = await (await fetch(redirect.headers.get("location")!)).text();
  return { rows: Papa.parse<string[]>(csv, { skipEmptyLines: true }).data, engine: status.Engine, status };
}

/** The sqlite3 command-line tool's answer: `setup` (tables, .import …) then the query, in CSV with headers. */
export function sqlite3Rows(setup: string[], sql: string): string[][] {
  const script = [...setup, ".headers on", ".mode csv", `${sql};`].join("\n");
  const output = execFileSync("sqlite3", [":memory:"], { input: script, encoding: "utf8", maxBuffer: 1 << 28 });
  return Papa.parse<string[]>(output.replace(/\r\n/g, "\n"), { skipEmptyLines: true }).data;
}

/** Equal cell by cell; numbers compare within 1e-9 relative, as the two print reals differently. */
export function expectSameRows(actual: string[][], expected: string[][]): void {
  expect(actual.length).toBe(expected.length);
  actual.forEach((row, r) => {
    expect(row.length).toBe(expected[r]!.length);
    row.forEach((cell, c) => {
      const other = expected[r]![c]!;
      const a = Number(cell);
      const b = Number(other);
      if (r > 0 && cell !== "" && other !== "" && Number.isFinite(a) && Number.isFinite(b) && !/^-?\d{16,}$/.test(cell))
        expect(Math.abs(a - b), `row ${r} column ${c}: ${cell} vs ${other}`).toBeLessThanOrEqual(
          1e-9 * Math.max(1, Math.abs(b)),
        );
      else expect(cell, `row ${r} column ${c}`).toBe(other);
    });
  });
}
