import {
  AsyncByteQueue,
  Bool,
  DateDay,
  Field,
  Float64,
  Int64,
  makeData,
  RecordBatch,
  RecordBatchFileWriter,
  Schema,
  Struct,
  Utf8,
  type Data,
  type DataType,
} from "apache-arrow";
import type { DecodedArray } from "hyparquet";
import { ByteWriter, ParquetWriter, type SchemaElement } from "hyparquet-writer";
import type { RowSpans } from "../../ingest/csv-spans";
import { namesFromHeader } from "../../ingest/table-check";
import type { DataTypeName } from "../../ingest/value-types";
import { resultFormatKey, type ResultFormat } from "../../storage/keys";
import { openObjectStream } from "../../storage/object-stream";
import { R2StreamWriter } from "../../storage/r2-writer";
import { readStoredCsvSpans } from "../stored-csv";
import type { StoredResult } from "./pages";
import { jsonText, nativeValue } from "./values";

/** How each representation is served: its media type and file name extension. */
export const FORMAT_FILES: Record<ResultFormat, { contentType: string; extension: string }> = {
  csv: { contentType: "text/csv; charset=utf-8", extension: "csv" },
  ndjson: { contentType: "application/x-ndjson", extension: "ndjson" },
  parquet: { contentType: "application/vnd.apache.parquet", extension: "parquet" },
  arrow: { contentType: "application/vnd.apache.arrow.file", extension: "arrow" },
};

/** Rows are encoded in batches (a Parquet row group, an Arrow record batch) of at most this many rows or CSV bytes. */
const BATCH_ROWS = 100_000;
const BATCH_BYTES = 8 * 1024 * 1024;

/**
 * Turns result rows, read in place from the CSV, into the bytes of one file.
 * Rows are taken one at a time, so no row becomes an array of strings; bytes
 * are handed on by `flush`, which the reader calls between CSV chunks once
 * `batchRows` rows (or BATCH_BYTES of CSV) were taken.
 */
interface Encoder {
  readonly batchRows: number;
  row(row: RowSpans): void;
  /** The bytes of the rows taken since the last flush (a row group, a record batch, lines). */
  flush(): Uint8Array[];
  finish(): Uint8Array[];
}

/** The columns as a file names them: distinct names, as an upload of the CSV would name its columns. */
interface FileColumns {
  names: string[];
  types: DataTypeName[];
}

const encoder = new TextEncoder();

/** One JSON object per line, keyed by column name, values as the rows endpoint types them; handed on chunk by chunk. */
function ndjsonEncoder({ names, types }: FileColumns): Encoder {
  const keys = names.map((name, i) => `${i === 0 ? "" : ","}${JSON.stringify(name)}:`);
  let text = "";
  return {
    batchRows: 1,
    row(row) {
      let line = "{";
      for (let i = 0; i < keys.length; i++) line += keys[i] + jsonText(row.value(i), types[i]!);
      text += line + "}\n";
    },
    flush() {
      if (text === "") return [];
      const bytes = encoder.encode(text);
      text = "";
      return [bytes];
    },
    finish: () => [],
  };
}

/** Bit `index` of a bitmap, set. */
function setBit(bits: Uint8Array, index: number): void {
  bits[index >> 3]! |= 1 << (index & 7);
}

/**
 * One column of a batch (an Arrow record batch, a Parquet row group) being
 * filled, a value at a time, straight into Arrow's buffers for it: values
 * and a validity bitmap, made directly (apache-arrow's builders compile
 * their null test with `new Function`, which Workers forbid), so a batch
 * holds no object per value until the Parquet writer asks for one.
 */
class BatchColumn {
  private length = 0;
  private nullCount = 0;
  /** Rows the buffers have room for; they double when full (a chunk of CSV may hold many short rows). */
  private capacity = 0;
  private validity = new Uint8Array(0);
  // INTEGER: 64-bit values, written as two 32-bit halves where the value is a safe integer (no bigint made).
  private int64 = new BigInt64Array(0);
  private halves = new Int32Array(0);
  private float64 = new Float64Array(0);
  private int32 = new Int32Array(0);
  private bits = new Uint8Array(0);
  // Text: the values of the last rows joined in one string, encoded to UTF-8 at once every TEXT_RUN characters.
  private run = "";
  private runEnds: number[] = [];
  private bytes = new Uint8Array(0);
  private byteLength = 0;
  private offsets = new Int32Array(1);

  constructor(private readonly type: DataTypeName) {}

  /** Makes room for `rows` rows, keeping the values so far. */
  private grow(rows: number): void {
    const bitmap = (old: Uint8Array) => {
      const grown = new Uint8Array(Math.ceil(rows / 8));
      grown.set(old);
      return grown;
    };
    this.capacity = rows;
    this.validity = bitmap(this.validity);
    if (this.type === "INTEGER") {
      const grown = new BigInt64Array(rows);
      grown.set(this.int64);
      this.int64 = grown;
      this.halves = new Int32Array(grown.buffer);
    } else if (this.type === "DOUBLE") {
      const grown = new Float64Array(rows);
      grown.set(this.float64);
      this.float64 = grown;
    } else if (this.type === "DATE") {
      const grown = new Int32Array(rows);
      grown.set(this.int32);
      this.int32 = grown;
    } else if (this.type === "BOOLEAN") this.bits = bitmap(this.bits);
    else {
      const grown = new Int32Array(rows + 1);
      grown.set(this.offsets);
      this.offsets = grown;
    }
  }

  /** Adds the next value: null is NULL, "" the empty string (a STRING column's only). */
  add(text: string | null): void {
    if (this.length === this.capacity) this.grow(Math.max(FIRST_CAPACITY, 2 * this.capacity));
    const r = this.length++;
    if (text === null) {
      // NULL: no value, except that a text value's offset must still be given.
      this.nullCount++;
      if (isText(this.type)) this.addText("");
      return;
    }
    setBit(this.validity, r);
    switch (this.type) {
      case "INTEGER": {
        // Up to 15 digits is a safe integer; its halves are what BigInt(text) would store (little-endian, as Arrow is).
        const n = text.length <= 15 ? Number(text) : NaN;
        if (Number.isInteger(n)) {
          const high = Math.floor(n / 2 ** 32);
          this.halves[2 * r] = n - high * 2 ** 32;
          this.halves[2 * r + 1] = high;
        } else this.int64[r] = nativeValue(text, "INTEGER") as bigint;
        return;
      }
      case "DOUBLE":
        this.float64[r] = nativeValue(text, "DOUBLE") as number;
        return;
      case "DATE":
        this.int32[r] = nativeValue(text, "DATE") as number;
        return;
      case "BOOLEAN":
        if (nativeValue(text, "BOOLEAN") === true) setBit(this.bits, r);
        return;
      default:
        this.addText(text);
    }
  }

  private addText(text: string): void {
    this.run += text;
    this.runEnds.push(this.run.length);
    if (this.run.length >= TEXT_RUN) this.encodeRun();
  }

  /** Appends the run's UTF-8 bytes and each value's end offset; one encode per run, not per value. */
  private encodeRun(): void {
    const run = this.run;
    const ends = this.runEnds;
    if (ends.length === 0) return;
    // A UTF-16 unit is at most 3 bytes of UTF-8.
    const needed = this.byteLength + 3 * run.length;
    if (needed > this.bytes.byteLength) {
      const grown = new Uint8Array(Math.max(needed, 2 * this.bytes.byteLength));
      grown.set(this.bytes.subarray(0, this.byteLength));
      this.bytes = grown;
    }
    const base = this.byteLength;
    const written = encoder.encodeInto(run, this.bytes.subarray(base)).written;
    const first = this.length - ends.length;
    if (written === run.length) {
      // All ASCII: a byte per unit.
      for (let i = 0; i < ends.length; i++) this.offsets[first + i + 1] = base + ends[i]!;
    } else {
      let at = 0;
      let bytes = base;
      for (let i = 0; i < ends.length; i++) {
        for (const end = ends[i]!; at < end; at++) {
          const code = run.charCodeAt(at);
          // A surrogate pair (two units) is 4 bytes: 2 each. The result CSV was valid UTF-8, so no unit is lone.
          bytes += code < 0x80 ? 1 : code < 0x800 || (code >= 0xd800 && code < 0xe000) ? 2 : 3;
        }
        this.offsets[first + i + 1] = bytes;
      }
    }
    this.byteLength = base + written;
    this.run = "";
    this.runEnds = [];
  }

  /** The batch's values as Arrow data; the column starts over empty. */
  arrow(): Data {
    const length = this.length;
    const common = { length, nullCount: this.nullCount, nullBitmap: this.validity.subarray(0, Math.ceil(length / 8)) };
    let data: Data;
    if (this.type === "INTEGER")
      data = makeData({ ...common, type: new Int64(), data: this.int64.subarray(0, length) });
    else if (this.type === "DOUBLE")
      data = makeData({ ...common, type: new Float64(), data: this.float64.subarray(0, length) });
    else if (this.type === "DATE")
      data = makeData({ ...common, type: new DateDay(), data: this.int32.subarray(0, length) });
    else if (this.type === "BOOLEAN")
      data = makeData({ ...common, type: new Bool(), data: this.bits.subarray(0, Math.ceil(length / 8)) });
    else {
      this.encodeRun();
      data = makeData({
        ...common,
        type: new Utf8(),
        valueOffsets: this.offsets.subarray(0, length + 1),
        data: this.bytes.subarray(0, this.byteLength),
      });
    }
    this.clear();
    return data;
  }

  /**
   * The batch's values as hyparquet-writer takes them: the typed array itself
   * where no value is NULL (no object per value), else one value per row;
   * text as its UTF-8 bytes. The column starts over empty.
   */
  parquet(): DecodedArray {
    const { length, validity } = this;
    const values = <T>(typed: { subarray(start: number, end: number): T; [index: number]: unknown }) =>
      this.nullCount === 0 && this.type !== "BOOLEAN"
        ? typed.subarray(0, length)
        : Array.from({ length }, (_, r) => (validity[r >> 3]! & (1 << (r & 7)) ? typed[r] : null));
    let data: DecodedArray;
    if (this.type === "INTEGER") data = values(this.int64) as DecodedArray;
    else if (this.type === "DOUBLE") data = values(this.float64) as DecodedArray;
    else if (this.type === "DATE") data = values(this.int32) as DecodedArray;
    else if (this.type === "BOOLEAN") {
      const bits = this.bits;
      data = Array.from({ length }, (_, r) =>
        validity[r >> 3]! & (1 << (r & 7)) ? (bits[r >> 3]! & (1 << (r & 7))) !== 0 : null,
      );
    } else {
      this.encodeRun();
      const { bytes, offsets } = this;
      data = Array.from({ length }, (_, r) =>
        validity[r >> 3]! & (1 << (r & 7)) ? bytes.subarray(offsets[r]!, offsets[r + 1]!) : null,
      );
    }
    this.clear();
    return data;
  }

  /** Starts the next batch with new buffers: the last one's belong to what was made of them. */
  private clear(): void {
    this.length = 0;
    this.nullCount = 0;
    this.capacity = 0;
    this.validity = new Uint8Array(0);
    this.int64 = new BigInt64Array(0);
    this.float64 = new Float64Array(0);
    this.int32 = new Int32Array(0);
    this.bits = new Uint8Array(0);
    this.bytes = new Uint8Array(0);
    this.byteLength = 0;
    this.offsets = new Int32Array(1);
  }
}

/** Characters of text values joined before they are encoded. */
const TEXT_RUN = 64 * 1024;
/** Rows a batch's column buffers first have room for. */
const FIRST_CAPACITY = 16 * 1024;

const isText = (type: DataTypeName) => type !== "INTEGER" && type !== "DOUBLE" && type !== "DATE" && type !== "BOOLEAN";

/**
 * Parquet (hyparquet-writer), all columns nullable: INTEGER as INT64, DOUBLE,
 * BOOLEAN, DATE as INT32 DATE, STRING and TIMESTAMP as UTF-8 text (a TIMESTAMP
 * keeps its stored text, up to nine fraction digits over years 0000-9999:
 * microseconds would cut the digits, nanoseconds cannot reach before 1677);
 * one row group per batch.
 */
function parquetEncoder({ names, types }: FileColumns): Encoder {
  const schema: SchemaElement[] = [
    { name: "root", num_children: names.length },
    ...names.map((name, i): SchemaElement => {
      const type = types[i]!;
      if (type === "INTEGER") return { name, type: "INT64", repetition_type: "OPTIONAL" };
      if (type === "DOUBLE") return { name, type: "DOUBLE", repetition_type: "OPTIONAL" };
      if (type === "BOOLEAN") return { name, type: "BOOLEAN", repetition_type: "OPTIONAL" };
      if (type === "DATE") return { name, type: "INT32", converted_type: "DATE", repetition_type: "OPTIONAL" };
      return { name, type: "BYTE_ARRAY", converted_type: "UTF8", repetition_type: "OPTIONAL" };
    }),
  ];
  const bytes = new ByteWriter();
  // The writer keeps counting offsets while its buffer is emptied after each row group, as its own file writer does.
  const take = (): Uint8Array[] => {
    if (bytes.index === 0) return [];
    const chunk = bytes.getBytes().slice();
    bytes.index = 0;
    return [chunk];
  };
  const writer = new ParquetWriter({ writer: bytes, schema });
  return columnBatches(
    types,
    (columns, rows) => {
      const columnData = names.map((name, i) => ({ name, data: columns[i]!.parquet() }));
      void writer.write({ columnData, rowGroupSize: rows });
      return take();
    },
    () => {
      void writer.finish();
      return take();
    },
  );
}

/** An encoder that gathers rows into typed columns and hands them to `encode` a batch at a time. */
function columnBatches(
  types: DataTypeName[],
  encode: (columns: BatchColumn[], rows: number) => Uint8Array[],
  finish: () => Uint8Array[],
): Encoder {
  const columns = types.map((type) => new BatchColumn(type));
  let rows = 0;
  return {
    batchRows: BATCH_ROWS,
    row(row) {
      for (let i = 0; i < columns.length; i++) columns[i]!.add(row.value(i));
      rows++;
    },
    flush() {
      if (rows === 0) return [];
      const taken = rows;
      rows = 0;
      return encode(columns, taken);
    },
    finish,
  };
}

/** Collects what the Arrow writer emits instead of queueing it for an async reader. */
class CollectedBytes extends AsyncByteQueue {
  chunks: Uint8Array[] = [];

  override write(value: Uint8Array): void {
    if (value.byteLength > 0) this.chunks.push(value);
  }

  take(): Uint8Array[] {
    const chunks = this.chunks;
    this.chunks = [];
    return chunks;
  }
}

/**
 * Arrow IPC file format (apache-arrow), all fields nullable: INTEGER as Int64,
 * DOUBLE as Float64, BOOLEAN as Bool, DATE as Date32 (days), STRING and
 * TIMESTAMP as Utf8 (as in Parquet); a record batch per batch.
 */
function arrowEncoder({ names, types }: FileColumns): Encoder {
  const arrowType = (type: DataTypeName): DataType =>
    type === "INTEGER"
      ? new Int64()
      : type === "DOUBLE"
        ? new Float64()
        : type === "BOOLEAN"
          ? new Bool()
          : type === "DATE"
            ? new DateDay()
            : new Utf8();
  const schema = new Schema(names.map((name, i) => new Field(name, arrowType(types[i]!), true)));
  const sink = new CollectedBytes();
  const writer = new RecordBatchFileWriter();
  writer.reset(sink, schema);
  return columnBatches(
    types,
    (columns, rows) => {
      const children = columns.map((column) => column.arrow());
      writer.write(
        new RecordBatch(schema, makeData({ type: new Struct(schema.fields), length: rows, nullCount: 0, children })),
      );
      return sink.take();
    },
    () => {
      writer.finish();
      return sink.take();
    },
  );
}

const ENCODERS: Record<Exclude<ResultFormat, "csv">, (columns: FileColumns) => Encoder> = {
  ndjson: ndjsonEncoder,
  parquet: parquetEncoder,
  arrow: arrowEncoder,
};

export type FormatMade =
  | { ok: true; key: string; made: boolean }
  | { ok: false; reason: "gone" }
  | { ok: false; reason: "unreadable"; message: string }
  | { ok: false; reason: "row too long" };

/**
 * The key of the result in `format`, made from its CSV if it is not there
 * yet (and kept: it expires with the result). The CSV is streamed through
 * in batches, so what is held is one batch, whatever the result's size.
 */
export async function resultInFormat(
  bucket: R2Bucket,
  result: StoredResult,
  format: ResultFormat,
): Promise<FormatMade> {
  if (format === "csv") return { ok: true, key: result.resultKey, made: false };
  const key = resultFormatKey(result.resultKey, format);
  if (await bucket.head(key)) return { ok: true, key, made: false };
  const stream = await openObjectStream(bucket, result.resultKey);
  if (!stream) return { ok: false, reason: "gone" };
  const encode = ENCODERS[format]({
    names: namesFromHeader(result.columns.map((column) => column.name)),
    types: result.columns.map((column) => column.type),
  });
  const out = new R2StreamWriter(bucket, key, () => ({
    httpMetadata: { contentType: FORMAT_FILES[format].contentType },
  }));
  const send = async (chunks: Uint8Array[]) => {
    for (const chunk of chunks) await out.write(chunk);
  };
  let rows = 0;
  let readBytes = 0;
  let batchStart = 0;
  const flush = async () => {
    rows = 0;
    batchStart = readBytes;
    await send(encode.flush());
  };
  try {
    const read = await readStoredCsvSpans(
      stream,
      { name: `the result of query ${result.queryId}`, layout: { delimiter: ",", header: true } },
      (bytes) => {
        readBytes = bytes;
        return null;
      },
      (row) => {
        encode.row(row);
        rows++;
      },
      async () => {
        if (rows >= encode.batchRows || readBytes - batchStart >= BATCH_BYTES) await flush();
      },
    );
    if (!read.ok) {
      await out.abort();
      return read.rowTooLong
        ? { ok: false, reason: "row too long" }
        : { ok: false, reason: "unreadable", message: read.message };
    }
    await flush();
    await send(encode.finish());
    await out.finish();
    return { ok: true, key, made: true };
  } catch (error) {
    await out.abort();
    throw error;
  }
}
