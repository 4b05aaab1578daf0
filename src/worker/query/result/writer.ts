import type { QueryLimits } from "../../config";
import { isStoredDate, isStoredTimestamp, type DataTypeName } from "../../ingest/value-types";
import type { ResultColumn } from "../query-record";
import { limitStops, transient } from "../run-limits";
import { csvField, CsvResultWriter, StorageClass } from "./csv";
import { RowIndexBuilder } from "./row-index";

/** Where the result CSV goes, as it is produced. */
export interface ResultTarget {
  write(bytes: Uint8Array): Promise<void>;
  /** Completes the result; `rowIndex` is its row index (row-index.ts), to be stored beside it. */
  finish(rowIndex: Uint8Array): Promise<void>;
  abort(): Promise<void>;
}

/** What a finished result holds. */
export interface WrittenResult {
  rowCount: number;
  size: number;
  columns: ResultColumn[];
  writeMs: number;
}

/** How often (rows) the writer checks the result's size against its limit. */
const CHECK_BYTES_EVERY_ROWS = 4096;

/**
 * The result writer both engines share: rows in, CSV out (one format, so the
 * same values give the same bytes whichever engine ran the query), the row
 * index built, and the result limits (rows, bytes) enforced as it goes. Each
 * result column is typed by the storage classes its values had, or keeps the
 * BOOLEAN, DATE or TIMESTAMP type of the data item column it comes straight
 * from (`declared`, engine/declared-types.ts) when every value fits that type. */
export class ResultWriter {
  rowCount = 0;
  writeMs = 0;
  private readonly csv: CsvResultWriter;
  private readonly seen: Set<StorageClass>[];
  // The declared type of each column while all its values fit it; null once one does not (or none was declared).
  private readonly kept: (DataTypeName | null)[];
  private readonly index = new RowIndexBuilder();
  constructor(
    private readonly names: string[],
    private readonly limits: Pick<QueryLimits, "maxResultRows" | "maxResultBytes">,
    private readonly target: ResultTarget,
    declared: readonly (DataTypeName | null)[] = [],
  ) {
    this.seen = names.map(() => new Set());
    this.kept = names.map((_, i) => declared[i] ?? null);
    this.csv = new CsvResultWriter((bytes) => this.timed(() => target.write(bytes)));
  }

  header(): Promise<void> {
    return this.csv.header(this.names);
  }

  /** One row: its values and their storage classes, position by position. */
  async row(values: readonly unknown[], classes: readonly StorageClass[]): Promise<void> {
    let line = "";
    for (let i = 0; i < values.length; i++) {
      const kept = this.kept[i];
      if (kept && !fitsStoredForm(kept, values[i], classes[i]!)) this.kept[i] = null;
      this.seen[i]!.add(classes[i]!);
      line += (i === 0 ? "" : ",") + csvField(values[i], classes[i]!);
    }
    if (this.rowCount === this.limits.maxResultRows) throw limitStops.resultRows(this.limits);
    if (RowIndexBuilder.starts(this.rowCount)) {
      // Handing on what is pending makes the offset exact without measuring the block's UTF-8 length.
      await this.csv.flush();
      this.index.add(this.csv.flushedSize);
    }
    await this.csv.line(line);
    this.rowCount++;
    if (this.rowCount % CHECK_BYTES_EVERY_ROWS === 0 && this.csv.flushedSize > this.limits.maxResultBytes)
      throw limitStops.resultBytes(this.limits);
  }

  /** Writes what is left and completes the object. */
  async finish(): Promise<WrittenResult> {
    await this.csv.flush();
    if (this.csv.size > this.limits.maxResultBytes) throw limitStops.resultBytes(this.limits);
    await this.timed(() => this.target.finish(this.index.bytes()));
    return {
      rowCount: this.rowCount,
      size: this.csv.size,
      columns: this.names.map((name, i) => ({ name, type: this.kept[i] ?? resultType(this.seen[i]!) })),
      writeMs: this.writeMs,
    };
  }

  private async timed(run: () => Promise<void>): Promise<void> {
    const started = Date.now();
    await transient("writing the result", run);
    this.writeMs += Date.now() - started;
  }
}

/** Whether a value is NULL or in the stored form of a BOOLEAN (1/0), DATE or TIMESTAMP (STORED_AS). */
function fitsStoredForm(type: DataTypeName, value: unknown, storage: StorageClass): boolean {
  switch (storage) {
    case StorageClass.Null:
      return true;
    case StorageClass.Integer: {
      // sql.js gives a bigint, a table store the integer's text.
      const text = String(value);
      return type === "BOOLEAN" && (text === "0" || text === "1");
    }
    case StorageClass.Text:
      return type === "DATE"
        ? isStoredDate(value as string)
        : type === "TIMESTAMP" && isStoredTimestamp(value as string);
    default:
      return false;
  }
}

/** A result column's type from the storage classes its values had: the narrowest that holds them all. */
function resultType(seen: Set<StorageClass>): DataTypeName {
  seen.delete(StorageClass.Null);
  if (seen.size === 0) return "STRING";
  if ([...seen].every((s) => s === StorageClass.Integer)) return "INTEGER";
  if ([...seen].every((s) => s === StorageClass.Integer || s === StorageClass.Float)) return "DOUBLE";
  return "STRING";
}
