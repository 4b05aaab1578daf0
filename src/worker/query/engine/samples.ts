import { toSqlValue } from "../../ingest/value-types";
import { openObjectStream } from "../../storage/object-stream";
import { readStoredCsv } from "../stored-csv";
import { tableStoreStub } from "../store/store-state";
import { selectColumns } from "../table-layout";
import type { SampleRows } from "./estimate";
import type { PlannedItem } from "./plan";

/** An item to sample: its catalog figures and where its bytes are. */
type Sampled = PlannedItem & { objectKey: string };

/** Samples kept in this isolate, by version and columns (a version never changes): at most this many values. */
const CACHE_VALUES = 2_000_000;
const cache = new Map<string, SampleRows>();
let cachedValues = 0;

/**
 * Up to `count` rows of an item for estimating a query's work, in the
 * columns createTable makes for `used`: random rows from its table store
 * where it has one, else the file's first rows (such items are small).
 */
export async function sampleItem(
  env: Env,
  item: Sampled,
  used: ReadonlySet<string> | null,
  count: number,
): Promise<SampleRows> {
  const { positions } = selectColumns(item.layout, used);
  // A table with no column the query uses holds only its row count.
  if (positions.length === 0) return Array.from({ length: Math.min(count, item.rows) }, () => [null]);
  const columns = positions.map((position) => item.layout.columns[position]!.name);
  const key = `${item.objectKey}\n${columns.join("\n")}\n${count}`;
  const cached = cache.get(key);
  if (cached) {
    cache.delete(key);
    cache.set(key, cached);
    return cached;
  }
  let rows: SampleRows = [];
  if (item.store?.state === "ready") rows = await tableStoreStub(env, item.objectKey).sample(columns, count);
  else {
    const stream = await openObjectStream(env.BUCKET, item.objectKey);
    if (stream) rows = await firstRows(stream, item, used, count);
  }
  remember(key, rows, columns.length);
  return rows;
}

/** The first `count` rows of a stored CSV, in the columns createTable makes for `used`. */
export async function firstRows(
  stream: ReadableStream<Uint8Array>,
  item: Pick<PlannedItem, "layout">,
  used: ReadonlySet<string> | null,
  count: number,
): Promise<SampleRows> {
  const { positions, types } = selectColumns(item.layout, used);
  const rows: SampleRows = [];
  await readStoredCsv(
    stream,
    { name: "a sample", layout: item.layout },
    () => null,
    (row) => {
      rows.push(
        positions.length === 0 ? [null] : positions.map((position, i) => toSqlValue(types[i]!, row[position] ?? null)),
      );
      return rows.length < count;
    },
  );
  return rows;
}

function remember(key: string, rows: SampleRows, width: number): void {
  cache.set(key, rows);
  cachedValues += rows.length * width;
  for (const [oldest, old] of cache) {
    if (cachedValues <= CACHE_VALUES) break;
    cache.delete(oldest);
    cachedValues -= old.length * (old[0]?.length ?? 0);
  }
}
