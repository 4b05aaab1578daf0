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

export type FileLabel = "100k" | "1m" | "1m.gz" | "5m" | "5m.gz";

export interface BenchFile {
  /** The label in results: "100k", "1m", "1m.gz", "5m" or "5m.gz". */
  label: FileLabel;
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

interface Spec {
  label: FileLabel;
  name: string;
  rows: number;
  gzip: boolean;
  /** The plain file a gzip file is made from. */
  from?: string;
  target: number;
}

const SPECS: Spec[] = [
  { label: "100k", name: "rows-100k.csv", rows: 100_000, gzip: false, target: 7.7e6 },
  { label: "1m", name: "rows-1m.csv", rows: 1_000_000, gzip: false, target: 78e6 },
  { label: "1m.gz", name: "rows-1m.csv.gz", rows: 1_000_000, gzip: true, from: "rows-1m.csv", target: 78e6 },
  { label: "5m", name: "rows-5m.csv", rows: 5_000_000, gzip: false, target: 390e6 },
  { label: "5m.gz", name: "rows-5m.csv.gz", rows: 5_000_000, gzip: true, from: "rows-5m.csv", target: 390e6 },
];

export const FILE_LABELS: FileLabel[] = SPECS.map((s) => s.label);

/**
 * The lookup table Q4 joins with: the 50 categories, each with a label (its
 * region: 10 labels of 5 categories each) and a weight. Written on every run
 * (a few hundred bytes).
 */
export function writeLookup(dir: string): string {
  const path = join(dir, "lookup.csv");
  const lines = ["category,label,weight"];
  CATEGORIES.forEach((category, i) =>
    lines.push(`${category},${category.split("-")[0]},${(1 + (i % 7) * 0.25).toFixed(2)}`),
  );
  writeFileSync(path, lines.join("\n") + "\n");
  return path;
}

/**
 * Makes (or reuses) the files `labels` name in `dir` (a gzip file needs its
 * plain file too). A file is reused when the checksum file written by the
 * last generation records it with the same generator and seed and it still
 * matches; otherwise it is made again.
 */
export async function prepareData(
  dir: string,
  log: (line: string) => void,
  labels: FileLabel[] = FILE_LABELS,
): Promise<BenchFile[]> {
  mkdirSync(dir, { recursive: true });
  const wanted = SPECS.filter((spec) => labels.includes(spec.label));
  const names = new Set(wanted.flatMap((spec) => (spec.from ? [spec.name, spec.from] : [spec.name])));
  const specs = SPECS.filter((spec) => names.has(spec.name));
  const checksumPath = join(dir, "checksums.json");
  let recorded: Checksums | null = null;
  try {
    recorded = JSON.parse(readFileSync(checksumPath, "utf8")) as Checksums;
  } catch {
    recorded = null;
  }
  if (!recorded || recorded.generator !== GENERATOR_HASH || recorded.seed !== SEED)
    recorded = { generator: GENERATOR_HASH, seed: SEED, files: {} };
  const valid = async (spec: Spec) => {
    const path = join(dir, spec.name);
    const expected = recorded!.files[spec.name];
    return (
      !!expected &&
      existsSync(path) &&
      statSync(path).size === expected.bytes &&
      (await sha256(path)) === expected.sha256
    );
  };
  const made = new Set<string>();
  for (const spec of specs) {
    if (!(spec.from && made.has(spec.from)) && (await valid(spec))) continue;
    const started = performance.now();
    const path = join(dir, spec.name);
    log(`data: generating ${spec.name} (seed ${SEED}) ...`);
    if (spec.from) await gzipFile(join(dir, spec.from), path);
    else await writeCsv(path, spec.rows);
    recorded.files[spec.name] = { sha256: await sha256(path), bytes: statSync(path).size };
    writeFileSync(checksumPath, JSON.stringify(recorded, null, 2) + "\n");
    made.add(spec.name);
    log(`data: ${spec.name} made in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  }
  if (made.size === 0) log(`data: reusing ${dir} (checksums match)`);

  return wanted.map((spec) => {
    const path = join(dir, spec.name);
    const bytes = statSync(path).size;
    const csvBytes = spec.from ? statSync(join(dir, spec.from)).size : bytes;
    const off = Math.abs(csvBytes - spec.target) / spec.target;
    if (off > 0.05)
      log(
        `data: WARNING ${spec.name} holds ${csvBytes} bytes of CSV, ${(off * 100).toFixed(1)}% off the ~${spec.target} target`,
      );
    return { label: spec.label, path, rows: spec.rows, gzip: spec.gzip, bytes, csvBytes, targetCsvBytes: spec.target };
  });
}
