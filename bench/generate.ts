/**
 * Deterministic benchmark CSVs: the same seed gives the same bytes on every
 * run and every machine. Columns: id INTEGER, ts TIMESTAMP (ISO, no zone),
 * category STRING (50 values), amount DOUBLE (2 decimals), qty INTEGER
 * (1-100), note STRING (10-40 characters, lower case; some hold commas or
 * double quotes, so RFC 4180 quoting is exercised).
 */
import { createHash } from "node:crypto";
import {
  createReadStream,
  createWriteStream,
  existsSync,
  mkdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import { createGzip } from "node:zlib";

/** Files are regenerated whenever this source file changes. */
const GENERATOR_HASH = createHash("sha256")
  .update(readFileSync(import.meta.filename))
  .digest("hex")
  .slice(0, 16);
const SEED = 20261122;

const REGIONS = ["north", "south", "east", "west", "central", "coastal", "mountain", "island", "metro", "rural"];
const LINES = ["hardware", "software", "food", "toys", "apparel"];
/** 50 category values. */
export const CATEGORIES = REGIONS.flatMap((region) => LINES.map((line) => `${region}-${line}`));

export interface BenchFile {
  /** The label in results: "100k", "1m" or "1m.gz". */
  label: "100k" | "1m" | "1m.gz";
  path: string;
  rows: number;
  gzip: boolean;
  /** Bytes on disk (what is uploaded). */
  bytes: number;
  /** Bytes of CSV (decompressed). */
  csvBytes: number;
  /** The size the issue aims at, for the check. */
  targetCsvBytes: number;
}

/** Mulberry32: a small, fast, seeded PRNG (the differential end-to-end test draws its data from it too). */
export function prng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A CSV field, quoted (RFC 4180) when it holds a quote, comma or line break. */
export function csvCell(value: string): string {
  return /[",\n\r]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value;
}

const LETTERS = "abcdefghijklmnopqrstuvwxyz";
const START_MS = Date.UTC(2024, 0, 1);
const pad = (n: number) => (n < 10 ? `0${n}` : String(n));

function note(random: () => number): string {
  const length = 10 + Math.floor(random() * 31); // 10-40
  let text = "";
  while (text.length < length) {
    const word = 2 + Math.floor(random() * 8);
    let w = "";
    for (let i = 0; i < word; i++) w += LETTERS[Math.floor(random() * 26)];
    const r = random();
    // About 8% of words end with a comma, about 3% are in double quotes.
    const piece = r < 0.08 ? `${w},` : r < 0.11 ? `"${w}"` : w;
    text += text === "" ? piece : ` ${piece}`;
  }
  // Cut to length; never leave a trailing space (values are never trimmed, but keep them tidy).
  return text.slice(0, length).replace(/ +$/, "x");
}

function row(id: number, random: () => number): string {
  const t = new Date(START_MS + Math.floor(random() * 366 * 86_400) * 1000);
  const ts = `${t.getUTCFullYear()}-${pad(t.getUTCMonth() + 1)}-${pad(t.getUTCDate())}T${pad(t.getUTCHours())}:${pad(t.getUTCMinutes())}:${pad(t.getUTCSeconds())}`;
  const category = CATEGORIES[Math.floor(random() * CATEGORIES.length)]!;
  const amount = (Math.floor(random() * 1_000_000) / 100).toFixed(2); // 0.00-9999.99
  const qty = 1 + Math.floor(random() * 100);
  return `${id},${ts},${category},${amount},${qty},${csvCell(note(random))}\n`;
}

async function writeCsv(path: string, rows: number): Promise<void> {
  const random = prng(SEED);
  const out = createWriteStream(path);
  const write = (text: string) =>
    new Promise<void>((resolve, reject) => {
      if (out.write(text)) return resolve();
      const failed = (error: Error) => reject(error);
      out.once("error", failed).once("drain", () => {
        out.off("error", failed);
        resolve();
      });
    });
  await write("id,ts,category,amount,qty,note\n");
  let batch = "";
  for (let id = 1; id <= rows; id++) {
    batch += row(id, random);
    if (id % 10_000 === 0) {
      await write(batch);
      batch = "";
    }
  }
  if (batch) await write(batch);
  await new Promise<void>((resolve, reject) => out.end((error?: Error | null) => (error ? reject(error) : resolve())));
}

async function gzipFile(from: string, to: string): Promise<void> {
  // Level and strategy fixed, no file name or time in the header: the same bytes for the same zlib.
  await pipeline(createReadStream(from), createGzip({ level: 6 }), createWriteStream(to));
}

async function sha256(path: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

interface Checksums {
  generator: string;
  seed: number;
  files: Record<string, { sha256: string; bytes: number }>;
}

/**
 * Makes (or reuses) the three files in `dir`. Files are reused when the
 * checksum file written by the last generation matches them.
 */
export async function prepareData(dir: string, log: (line: string) => void): Promise<BenchFile[]> {
  mkdirSync(dir, { recursive: true });
  const specs = [
    { label: "100k" as const, name: "rows-100k.csv", rows: 100_000, gzip: false, target: 7.7e6 },
    { label: "1m" as const, name: "rows-1m.csv", rows: 1_000_000, gzip: false, target: 78e6 },
    { label: "1m.gz" as const, name: "rows-1m.csv.gz", rows: 1_000_000, gzip: true, target: 78e6 },
  ];
  const checksumPath = join(dir, "checksums.json");
  let recorded: Checksums | null = null;
  try {
    recorded = JSON.parse(readFileSync(checksumPath, "utf8")) as Checksums;
  } catch {
    recorded = null;
  }
  let valid = recorded !== null && recorded.generator === GENERATOR_HASH && recorded.seed === SEED;
  if (valid) {
    for (const spec of specs) {
      const path = join(dir, spec.name);
      const expected = recorded!.files[spec.name];
      if (
        !expected ||
        !existsSync(path) ||
        statSync(path).size !== expected.bytes ||
        (await sha256(path)) !== expected.sha256
      ) {
        valid = false;
        break;
      }
    }
  }
  if (valid) log(`data: reusing ${dir} (checksums match)`);
  else {
    const started = performance.now();
    log(`data: generating CSVs in ${dir} (seed ${SEED}) ...`);
    await writeCsv(join(dir, "rows-100k.csv"), 100_000);
    await writeCsv(join(dir, "rows-1m.csv"), 1_000_000);
    await gzipFile(join(dir, "rows-1m.csv"), join(dir, "rows-1m.csv.gz"));
    const files: Checksums["files"] = {};
    for (const spec of specs) {
      const path = join(dir, spec.name);
      files[spec.name] = { sha256: await sha256(path), bytes: statSync(path).size };
    }
    writeFileSync(checksumPath, JSON.stringify({ generator: GENERATOR_HASH, seed: SEED, files }, null, 2) + "\n");
    log(`data: generated in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  }

  const plain1m = statSync(join(dir, "rows-1m.csv")).size;
  return specs.map((spec) => {
    const path = join(dir, spec.name);
    const bytes = statSync(path).size;
    const csvBytes = spec.gzip ? plain1m : bytes;
    const off = Math.abs(csvBytes - spec.target) / spec.target;
    if (off > 0.05)
      log(
        `data: WARNING ${spec.name} holds ${csvBytes} bytes of CSV, ${(off * 100).toFixed(1)}% off the ~${spec.target} target`,
      );
    return { label: spec.label, path, rows: spec.rows, gzip: spec.gzip, bytes, csvBytes, targetCsvBytes: spec.target };
  });
}
