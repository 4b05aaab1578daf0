import { env } from "cloudflare:workers";
import { settings, type QueryLimits } from "../../src/worker/config";
import type { StoredDataSchema } from "../../src/worker/ingest/data-schema";
import type { DataTypeName } from "../../src/worker/ingest/value-types";
import { buildColumnImages } from "../../src/worker/query/engine/build-images";
import { readStoredCsv } from "../../src/worker/query/stored-csv";
import { tableStoreStub } from "../../src/worker/query/store/store-state";
import { STORE_MAX_COLUMNS } from "../../src/worker/query/store/store-sql";
import { tableLayout } from "../../src/worker/query/table-layout";
import { resultIndexKey } from "../../src/worker/storage/keys";
import { randomToken } from "../../src/worker/util/crypto";
import { IMAGE_FORMAT, VALUES_PER_RECORD, type ColumnImages } from "../../src/worker/query/engine/column-images";
import {
  evaluateSql,
  type EngineOutcome,
  type LoadableItem,
  type QuerySource,
  type ResultTarget,
  type RunControl,
} from "../../src/worker/query/engine/evaluate-sql";
import type { Parameters } from "../../src/worker/query/sql/parameters";
import type { StoreQuery, StoreQueryOutcome } from "../../src/worker/query/store/table-store";
import type { SampleRows } from "../../src/worker/query/engine/estimate";
import { firstRows, sampleItem } from "../../src/worker/query/engine/samples";

/** A data item held in memory: its columns (name and type) and its stored bytes. */
export interface MemoryItem {
  columns: [string, DataTypeName][];
  data: string | Uint8Array<ArrayBuffer>;
  options?: { Header?: boolean; Delimiter?: string; DeliveryType?: "RAW" | "GZIP" };
}

/** The stored schema of a memory item, as the catalog would hold it. */
export function storedSchema(item: MemoryItem): StoredDataSchema {
  return {
    SchemaVersion: "1.0",
    TableDefinition: {
      Columns: item.columns.map(([Name, DataType]) => ({
        Name,
        DataType: { DataType, DataTypeOptions: { Nullable: true } },
      })),
    },
    DataSpecification: {
      FormatType: "CSV",
      DeliveryType: item.options?.DeliveryType ?? "RAW",
      DataOptions: { Header: item.options?.Header ?? true, Delimiter: item.options?.Delimiter ?? "," },
    },
  };
}

/**
 * Where a MemorySource's queries read from: the CSV, column images built
 * from it (as the queue would), or a table store (a real TableStore
 * Durable Object, filled from the CSV put in R2).
 */
export type SourceMode = "csv" | "images" | "store";

/**
 * A QuerySource over data items in memory, keyed `account.dataset.data`,
 * that remembers which names were looked up, which items were opened and
 * which column images were fetched. In "images" mode each item's column
 * images are built from its CSV by the real builder on first use.
 */
export class MemorySource implements QuerySource {
  readonly found: string[] = [];
  readonly opened: string[] = [];
  readonly imagesFetched: string[] = [];
  readonly images = new Map<string, Uint8Array>();
  private readonly built = new Map<string, ColumnImages>();
  /** Where this source's items are put in R2 for their table stores. */
  private readonly prefix = `test-store/${randomToken(8)}/`;
  private readonly stored = new Map<string, number>();

  constructor(
    private readonly items: Record<string, MemoryItem>,
    private readonly mode: SourceMode = "csv",
  ) {}

  async find(reference: { account: string; dataset: string; data: string }): Promise<LoadableItem | null> {
    const key = `${reference.account}.${reference.dataset}.${reference.data}`;
    this.found.push(key);
    const item = this.items[key];
    if (!item) return null;
    const layout = tableLayout(storedSchema(item));
    const bytes = typeof item.data === "string" ? new TextEncoder().encode(item.data).byteLength : item.data.byteLength;
    if (this.mode === "store") {
      // As prepare-item.ts decides: an item wider than a store's tables is in R2 without a store.
      const wide = layout.columns.length > STORE_MAX_COLUMNS;
      const rows = await this.store(key, item, !wide);
      return {
        objectKey: this.prefix + key,
        layout,
        rows,
        bytes,
        images: null,
        store: wide ? null : { state: "ready", rows, bytes },
      };
    }
    const images = this.mode === "images" ? await this.build(key, item) : null;
    const rows = images?.rows ?? (await countRows(this.stream(key)!, storedSchema(item)));
    return { objectKey: key, layout, rows, bytes, images, store: null };
  }

  async queryStore(objectKey: string, request: StoreQuery): Promise<StoreQueryOutcome> {
    this.opened.push(`store:${objectKey.slice(this.prefix.length)}`);
    return tableStoreStub(env, objectKey).query(request);
  }

  /** As the engine samples: a ready store's random rows (the real object), else the file's first rows. */
  async sample(item: LoadableItem, used: ReadonlySet<string> | null, count: number): Promise<SampleRows> {
    if (item.store?.state === "ready") return sampleItem(env, item, used, count);
    const stream = this.stream(
      item.objectKey.startsWith(this.prefix) ? item.objectKey.slice(this.prefix.length) : item.objectKey,
    );
    return stream ? firstRows(stream, item, used, count) : [];
  }

  /** Puts the item in R2 and builds its table store (unless told not to), once; its row count. */
  private async store(key: string, item: MemoryItem, withStore: boolean): Promise<number> {
    const done = this.stored.get(key);
    if (done !== undefined) return done;
    const objectKey = this.prefix + key;
    await env.BUCKET.put(objectKey, typeof item.data === "string" ? new TextEncoder().encode(item.data) : item.data);
    const rows = await countRows(this.stream(key)!, storedSchema(item));
    if (!withStore) {
      this.stored.set(key, rows);
      return rows;
    }
    const built = await tableStoreStub(env, objectKey).build(
      { objectKey, layout: tableLayout(storedSchema(item)), rows, name: key },
      limitsWith().maxStoreBytes,
    );
    if (!built.ok) throw new Error(`building the table store of ${key} failed: ${built.message}`);
    this.stored.set(key, rows);
    return rows;
  }

  async open(item: LoadableItem): Promise<ReadableStream<Uint8Array> | null> {
    this.opened.push(item.objectKey);
    return this.stream(item.objectKey);
  }

  async openImage(key: string): Promise<Uint8Array | null> {
    this.imagesFetched.push(key);
    return this.images.get(key)?.slice() ?? null;
  }

  private stream(key: string): ReadableStream<Uint8Array> | null {
    const stored = this.items[key];
    if (!stored) return null;
    const bytes = typeof stored.data === "string" ? new TextEncoder().encode(stored.data) : stored.data;
    return new Blob([bytes]).stream();
  }

  private async build(key: string, item: MemoryItem): Promise<ColumnImages> {
    const done = this.built.get(key);
    if (done) return done;
    const schema = storedSchema(item);
    const bytes = typeof item.data === "string" ? new TextEncoder().encode(item.data).byteLength : item.data.byteLength;
    const rows = await countRows(this.stream(key)!, schema);
    const outcome = await buildColumnImages(
      tableLayout(schema),
      { rows, bytes, name: key },
      {
        open: async () => this.stream(key),
        store: async (index, image) => void this.images.set(`${key}#${index}`, image),
      },
      limitsWith().memoryBudgetBytes,
    );
    if (!outcome.ok) throw new Error(`building the images of ${key} failed: ${outcome.message}`);
    const images: ColumnImages = {
      format: IMAGE_FORMAT,
      valuesPerRecord: VALUES_PER_RECORD,
      rows,
      columns: outcome.bytes.map((size, index) => ({ key: `${key}#${index}`, bytes: size })),
    };
    this.built.set(key, images);
    return images;
  }
}

/** The number of data rows of a stored CSV, as the upload would have counted them. */
async function countRows(stream: ReadableStream<Uint8Array>, schema: StoredDataSchema): Promise<number> {
  const counted = await readStoredCsv(
    stream,
    { name: "count", layout: tableLayout(schema) },
    () => null,
    () => undefined,
  );
  if (!counted.ok) throw new Error(counted.message);
  return counted.rows;
}

/** A ResultTarget that keeps the result in memory and remembers how it ended. */
export class MemoryTarget implements ResultTarget {
  private readonly chunks: Uint8Array[] = [];
  state: "open" | "finished" | "aborted" = "open";
  rowIndex: Uint8Array | null = null;

  async write(bytes: Uint8Array): Promise<void> {
    this.chunks.push(bytes.slice());
  }

  async finish(rowIndex: Uint8Array): Promise<void> {
    this.state = "finished";
    this.rowIndex = rowIndex.slice();
  }

  async abort(): Promise<void> {
    this.state = "aborted";
  }

  /** The bytes written, as text. */
  text(): string {
    const whole = new Uint8Array(this.chunks.reduce((sum, chunk) => sum + chunk.byteLength, 0));
    let at = 0;
    for (const chunk of this.chunks) {
      whole.set(chunk, at);
      at += chunk.byteLength;
    }
    return new TextDecoder().decode(whole);
  }
}

/** A RunControl that is never cancelled (or is, from the given moment) and records progress messages. */
export class MemoryControl implements RunControl {
  readonly messages: string[] = [];
  cancelChecks = 0;

  constructor(private readonly cancelledAfterChecks = Infinity) {}

  async cancelled(): Promise<boolean> {
    return ++this.cancelChecks > this.cancelledAfterChecks;
  }

  async progress(message: string): Promise<void> {
    this.messages.push(message);
  }

  async wait(message: string): Promise<void> {
    this.messages.push(message);
  }
}

/** The deployment's query limits with some changed. */
export function limitsWith(overrides: Partial<QueryLimits> = {}): QueryLimits {
  return { ...settings(env).query, ...overrides };
}

/** What one engine run produced. */
export interface EngineRun {
  outcome: EngineOutcome;
  csv: string;
  /** The row index stored beside the result (null when the run stored none). */
  rowIndex: Uint8Array | null;
  target: MemoryTarget;
  source: MemorySource;
  control: MemoryControl;
}

/** Runs SQL over in-memory data items through the real engine. */
export async function runEngine(
  sql: string,
  items: Record<string, MemoryItem>,
  options: {
    limits?: Partial<QueryLimits>;
    clock?: () => number;
    control?: MemoryControl;
    source?: QuerySource;
    target?: MemoryTarget;
    mode?: SourceMode;
    parameters?: Parameters;
  } = {},
): Promise<EngineRun> {
  const source = new MemorySource(items, options.mode);
  const target = options.target ?? new MemoryTarget();
  const control = options.control ?? new MemoryControl();
  const resultKey = `results/test-${randomToken(8)}.csv`;
  const outcome = await evaluateSql(
    { sql, parameters: options.parameters ?? null },
    { source: options.source ?? source, target, control, queryId: `test-${randomToken(8)}`, resultKey },
    limitsWith(options.limits),
    options.clock,
  );
  // A table store writes the result to R2 itself.
  if (outcome.engine === "store") {
    const stored = await env.BUCKET.get(resultKey);
    const csv = stored ? await stored.text() : "";
    const index = await env.BUCKET.get(resultIndexKey(resultKey));
    const rowIndex = index ? new Uint8Array(await index.arrayBuffer()) : null;
    await env.BUCKET.delete([resultKey, resultIndexKey(resultKey)]);
    return { outcome, csv, rowIndex, target, source, control };
  }
  return { outcome, csv: target.text(), rowIndex: target.rowIndex, target, source, control };
}

/** Mulberry32: a small seeded PRNG, so generated data is the same on every run. */
export function seededRandom(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** One CSV field, quoted when it must be (RFC 4180). */
export function csvCell(value: string): string {
  return /[",\r\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value;
}

/**
 * A MemorySource whose samples are empty, so every estimate lets the query
 * through: what is left to stop a misjudged query is the store's own limit.
 */
export class UnsampledSource extends MemorySource {
  override async sample(): Promise<SampleRows> {
    return [];
  }
}
