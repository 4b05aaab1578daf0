/**
 * Timing check for the ingest core (not a test): builds a CSV of about 78 MB
 * (1M rows, 6 columns) in memory and times inference, validation and gzip.
 *
 *   npx esbuild test/ingest/measure-ingest.ts --bundle --platform=node --format=esm --outfile=/tmp/measure-ingest.mjs
 *   node /tmp/measure-ingest.mjs [rows]
 */
import { ingestCsv, type IngestResult } from "../../src/worker/ingest/csv-ingest";
import type { Column, TableDefinition } from "../../src/worker/ingest/data-schema";

const rows = Number(process.argv[2] ?? 1_000_000);
const CHUNK_BYTES = 64 * 1024;

function buildCsv(count: number): Uint8Array {
  const lines = ["id,customer,amount,active,signup_day,last_seen"];
  for (let i = 0; i < count; i++) {
    const day = String(1 + (i % 28)).padStart(2, "0");
    const month = String(1 + (i % 12)).padStart(2, "0");
    lines.push(
      `${i},"Customer no. ${i % 9973}, Inc.",${((i * 37) % 100_000) / 100},${i % 3 === 0},2023-${month}-${day},2024-${month}-${day}T${String(i % 24).padStart(2, "0")}:15:30Z`,
    );
  }
  return new TextEncoder().encode(`${lines.join("\n")}\n`);
}

function streamOf(bytes: Uint8Array): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (at >= bytes.length) return controller.close();
      controller.enqueue(bytes.subarray(at, at + CHUNK_BYTES));
      at += CHUNK_BYTES;
    },
  });
}

function column(name: string, type: Column["DataType"]["DataType"]): Column {
  return { Name: name, DataType: { DataType: type, DataTypeOptions: { Nullable: false } } };
}

async function time(label: string, bytes: Uint8Array, tableDefinition?: TableDefinition): Promise<void> {
  const started = performance.now();
  const result: IngestResult = await ingestCsv(streamOf(bytes), {
    tableDefinition,
    limits: { maxDecompressedBytes: 1024 * 1024 * 1024 },
  });
  const seconds = (performance.now() - started) / 1000;
  const outcome = result.ok
    ? `${result.rowCount} rows, ${result.columns.map((c) => c.DataType.DataType).join(" ")}`
    : result.message;
  console.log(`${label}: ${seconds.toFixed(2)} s (${(bytes.length / 1e6).toFixed(1)} MB in) — ${outcome}`);
}

const csv = buildCsv(rows);
const gzipped = new Uint8Array(
  await new Response(new Blob([csv]).stream().pipeThrough(new CompressionStream("gzip"))).arrayBuffer(),
);
const table: TableDefinition = {
  Columns: [
    column("id", "INTEGER"),
    column("customer", "STRING"),
    column("amount", "DOUBLE"),
    column("active", "BOOLEAN"),
    column("signup_day", "DATE"),
    column("last_seen", "TIMESTAMP"),
  ],
};
console.log(`CSV ${(csv.length / 1e6).toFixed(1)} MB, gzip ${(gzipped.length / 1e6).toFixed(1)} MB, ${rows} rows`);
await time("raw, generate table", csv);
await time("raw, check table", csv, table);
await time("gzip, generate table", gzipped);
