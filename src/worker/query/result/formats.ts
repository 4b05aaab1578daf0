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
import { ByteWriter, ParquetWriter, type SchemaElement } from "hyparquet-writer";
import { namesFromHeader } from "../../ingest/table-check";
import type { DataTypeName } from "../../ingest/value-types";
import { resultFormatKey, type ResultFormat } from "../../storage/keys";
import { openObjectStream } from "../../storage/object-stream";
import { R2StreamWriter } from "../../storage/r2-writer";
import { readStoredCsv } from "../stored-csv";
import type { StoredResult } from "./pages";
import { jsonValue, nativeValue } from "./values";

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

/** Turns batches of result rows (CSV fields) into the bytes of one file, handing bytes on as they are made. */
interface Encoder {
  write(rows: string[][]): Uint8Array[];
  finish(): Uint8Array[];
}

/** The columns as a file names them: distinct names, as an upload of the CSV would name its columns. */
interface FileColumns {
  names: string[];
  types: DataTypeName[];
}

const encoder = new TextEncoder();

/** One JSON object per line, keyed by column name, values as the rows endpoint types them. */
function ndjsonEncoder({ names, types }: FileColumns): Encoder {
  const keys = names.map((name) => `${JSON.stringify(name)}:`);
  return {
    write(rows) {
      let text = "";
      for (const row of rows) {
        text += "{";
        for (let i = 0; i < keys.length; i++)
          text += (i === 0 ? "" : ",") + keys[i] + JSON.stringify(jsonValue(row[i]!, types[i]!));
        text += "}\n";
      }
      return [encoder.encode(text)];
    },
    finish: () => [],
  };
}

/**
 * Parquet (hyparquet-writer), all columns nullable: INTEGER as INT64, DOUBLE,
 * BOOLEAN, DATE as INT32 DATE, STRING and TIMESTAMP as UTF-8 text (a TIMESTAMP
 * column may hold both UTC and zoneless values, which no one Parquet timestamp
 * type holds); one row group per batch.
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
  return {
    write(rows) {
      if (rows.length === 0) return [];
      const columnData = names.map((name, i) => ({
        name,
        data: rows.map((row) => nativeValue(row[i]!, types[i]!)),
      }));
      void writer.write({ columnData, rowGroupSize: rows.length });
      return take();
    },
    finish() {
      void writer.finish();
      return take();
    },
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
 * One column of a batch as Arrow data: values and a validity bitmap, made
 * directly (apache-arrow's builders compile their null test with `new
 * Function`, which Workers forbid).
 */
function arrowColumn(type: DataTypeName, rows: string[][], column: number): Data {
  const length = rows.length;
  const validity = new Uint8Array(Math.ceil(length / 8));
  let nullCount = 0;
  const values = rows.map((row, r) => {
    const value = nativeValue(row[column]!, type);
    if (value === null) nullCount++;
    else validity[r >> 3]! |= 1 << (r & 7);
    return value;
  });
  const common = { length, nullCount, nullBitmap: validity };
  if (type === "INTEGER")
    return makeData({
      ...common,
      type: new Int64(),
      data: BigInt64Array.from(values, (v) => (v as bigint | null) ?? 0n),
    });
  if (type === "DOUBLE")
    return makeData({
      ...common,
      type: new Float64(),
      data: Float64Array.from(values, (v) => (v as number | null) ?? 0),
    });
  if (type === "DATE")
    return makeData({
      ...common,
      type: new DateDay(),
      data: Int32Array.from(values, (v) => (v as number | null) ?? 0),
    });
  if (type === "BOOLEAN") {
    const bits = new Uint8Array(Math.ceil(length / 8));
    values.forEach((v, r) => {
      if (v === true) bits[r >> 3]! |= 1 << (r & 7);
    });
    return makeData({ ...common, type: new Bool(), data: bits });
  }
  const texts = values.map((v) => (v === null ? new Uint8Array(0) : encoder.encode(v as string)));
  const valueOffsets = new Int32Array(length + 1);
  texts.forEach((bytes, r) => (valueOffsets[r + 1] = valueOffsets[r]! + bytes.byteLength));
  const data = new Uint8Array(valueOffsets[length]!);
  texts.forEach((bytes, r) => data.set(bytes, valueOffsets[r]));
  return makeData({ ...common, type: new Utf8(), valueOffsets, data });
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
  return {
    write(rows) {
      if (rows.length === 0) return [];
      const children = types.map((type, i) => arrowColumn(type, rows, i));
      const data = makeData({ type: new Struct(schema.fields), length: rows.length, nullCount: 0, children });
      writer.write(new RecordBatch(schema, data));
      return sink.take();
    },
    finish() {
      writer.finish();
      return sink.take();
    },
  };
}

const ENCODERS: Record<Exclude<ResultFormat, "csv">, (columns: FileColumns) => Encoder> = {
  ndjson: ndjsonEncoder,
  parquet: parquetEncoder,
  arrow: arrowEncoder,
};

export type FormatMade =
  | { ok: true; key: string; made: boolean }
  | { ok: false; reason: "gone" }
  | { ok: false; reason: "unreadable"; message: string };

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
  let batch: string[][] = [];
  let readBytes = 0;
  let batchStart = 0;
  const flush = async () => {
    const rows = batch;
    batch = [];
    batchStart = readBytes;
    await send(encode.write(rows));
  };
  try {
    const read = await readStoredCsv(
      stream,
      { name: `the result of query ${result.queryId}`, layout: { delimiter: ",", header: true } },
      (bytes) => {
        readBytes = bytes;
        return null;
      },
      (row) => void batch.push(row),
      async () => {
        if (batch.length >= BATCH_ROWS || readBytes - batchStart >= BATCH_BYTES) await flush();
      },
    );
    if (!read.ok) {
      await out.abort();
      return { ok: false, reason: "unreadable", message: read.message };
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
