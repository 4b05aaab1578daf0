import { CsvRowReader, type ReadRows } from "./csv-rows";
import type { Column, DataOptions, DeliveryType, TableDefinition } from "./data-schema";
import { RowRouter } from "./row-router";
import type { Violation } from "./table-check";
import { openUploadBytes, type RawCopy } from "./upload-bytes";
import { delimiterNote, HEAD_CHARS, headerWarnings, jsonNote } from "./upload-notes";
import { Utf8Text, type DecodedText } from "./utf8-text";
import type { WorkCounter } from "./work-counter";

export type { Violation } from "./table-check";

/** How many problems are listed before the ingest stops reading. */
export const MAX_VIOLATIONS = 5;
/** Default bound on one row's text (characters), which is what an unclosed quote would otherwise buffer. */
export const DEFAULT_MAX_ROW_CHARS = 8 * 1024 * 1024;
/**
 * The most bytes decoded and read between two checks of the limits and of
 * the problems found: a decompressed chunk can be megabytes, and reading on
 * through it after a row was refused or the fifth problem found is waste.
 */
const STEP_BYTES = 64 * 1024;
/**
 * A step is stretched by at most this much to end right after a line feed,
 * so that its text usually ends where a row does and the CSV reader need
 * not join the rest of that row to the next step's text (a copy, and a
 * joined string is slower to read).
 */
const STEP_SLACK_BYTES = 4 * 1024;
const LINE_FEED = 10;

export interface IngestLimits {
  /** Bytes of CSV after gunzip (or as uploaded, for raw files); more answers 413. */
  maxDecompressedBytes: number;
  /** Longest row, in characters without its line break; a longer one answers 400. Default `DEFAULT_MAX_ROW_CHARS`. */
  maxRowChars?: number;
}

export interface IngestOptions {
  /** The table to check the file against; without it the table is generated from the file. */
  tableDefinition?: TableDefinition;
  /** Header row (default true) and delimiter (detected when absent, see csv-delimiter.ts). */
  dataOptions?: Partial<DataOptions>;
  limits: IngestLimits;
  /**
   * Where to write the upload's bytes exactly as received (gzip stays gzip), for example the writable
   * side of a FixedLengthStream whose readable goes to R2. Each chunk is written before it is parsed
   * and the write is awaited, so the slower side sets the pace and nothing piles up in memory (unlike
   * `tee()`). It is closed when the result is ok and aborted otherwise, so a store fed by it fails.
   */
  copyTo?: WritableStream<Uint8Array>;
  /** Told how much the check looked at, for tests of its work (see work-counter.ts). */
  work?: WorkCounter;
}

export type IngestResult =
  | {
      ok: true;
      rowCount: number;
      columns: Column[];
      deliveryType: DeliveryType;
      /** The delimiter the file was read with: the given one, or the one detected. */
      delimiter: string;
      decompressedBytes: number;
      /** What a person should know about how the file was read (upload-notes.ts), each a sentence. */
      warnings: string[];
    }
  | { ok: false; status: 400 | 413; message: string; violations?: Violation[] };

/**
 * Reads an uploaded CSV file (raw or gzip) and checks it against a table or generates one, in flat memory.
 * Contract: reads `stream` to its end, or cancels it on an early stop (so a `tee()` sibling never stalls),
 * and throws only when the stream itself (or `copyTo`) fails.
 */
export async function ingestCsv(stream: ReadableStream<Uint8Array>, options: IngestOptions): Promise<IngestResult> {
  const copy = options.copyTo?.getWriter();
  let result: IngestResult | undefined;
  try {
    result = await ingestStream(stream, options, copy && ((chunk) => copy.write(chunk)));
    return result;
  } finally {
    if (copy) await settleCopy(copy, result);
  }
}

// A store fed by the copy must only ever keep a file that was accepted.
async function settleCopy(copy: WritableStreamDefaultWriter<Uint8Array>, result: IngestResult | undefined) {
  if (result?.ok) return copy.close();
  const reason = new Error(result ? result.message : "The upload failed.");
  await copy.abort(reason).catch(() => undefined);
}

async function ingestStream(
  stream: ReadableStream<Uint8Array>,
  options: IngestOptions,
  copy: RawCopy | undefined,
): Promise<IngestResult> {
  const bytes = await openUploadBytes(stream, copy);
  const run = new IngestRun(options, bytes.deliveryType);
  let reachedEnd = false;
  try {
    for (;;) {
      const chunk = await bytes.read();
      if (chunk.kind === "bad-gzip")
        return fail(400, `The file starts like gzip but cannot be decompressed: ${chunk.message}.`);
      if (chunk.kind === "end") break;
      const stop = run.takeBytes(chunk.bytes);
      if (stop) return stop;
    }
    reachedEnd = true;
    return run.finish();
  } finally {
    if (!reachedEnd) await bytes.cancel();
  }
}

/** Where the step of `bytes` that starts at `at` ends: after STEP_BYTES, or after the first line feed within the slack beyond. */
function stepEnd(bytes: Uint8Array, at: number, work: WorkCounter | undefined): number {
  const end = at + STEP_BYTES;
  if (end >= bytes.length) return bytes.length;
  const slack = bytes.subarray(end, end + STEP_SLACK_BYTES);
  const lineFeed = slack.indexOf(LINE_FEED);
  if (work) work.scanned += lineFeed < 0 ? slack.length : lineFeed + 1;
  return lineFeed < 0 ? end : end + lineFeed + 1;
}

function fail(status: 400 | 413, message: string, violations?: Violation[]): IngestResult {
  return violations ? { ok: false, status, message, violations } : { ok: false, status, message };
}

/** The state of one ingest between chunks; each step returns a failure to stop at, or undefined to go on. */
class IngestRun {
  private readonly utf8 = new Utf8Text();
  private readonly rows: CsvRowReader;
  private readonly router: RowRouter;
  private readonly hasHeader: boolean;
  private readonly maxRowChars: number;
  private decompressedBytes = 0;
  /** The file's first HEAD_CHARS characters, and whether that is all of it, for the notes on how it was read. */
  private head = "";
  private headIsAll = true;

  constructor(
    private readonly options: IngestOptions,
    private readonly deliveryType: DeliveryType,
  ) {
    this.hasHeader = options.dataOptions?.Header ?? true;
    this.maxRowChars = options.limits.maxRowChars ?? DEFAULT_MAX_ROW_CHARS;
    this.router = new RowRouter(options.tableDefinition, this.hasHeader, MAX_VIOLATIONS);
    const delimiter = options.dataOptions?.Delimiter ?? { fields: options.tableDefinition?.Columns.length };
    this.rows = new CsvRowReader(delimiter, this.maxRowChars, this.router, { work: options.work });
  }

  /** Checks the size limit before looking at `bytes` at all, then reads them a step at a time. */
  takeBytes(bytes: Uint8Array): IngestResult | undefined {
    this.decompressedBytes += bytes.length;
    const limit = this.options.limits.maxDecompressedBytes;
    if (this.decompressedBytes > limit) {
      const decompressed = this.deliveryType === "GZIP" ? " once decompressed" : "";
      return fail(413, `The file is larger than the limit of ${limit} bytes${decompressed}.`);
    }
    for (let at = 0; at < bytes.length;) {
      const end = stepEnd(bytes, at, this.options.work);
      const step = bytes.subarray(at, end);
      at = end;
      if (this.options.work) this.options.work.scanned += step.length;
      const stop = this.takeText(this.utf8.decode(step)) ?? this.violationStop();
      if (stop) return stop;
    }
    return undefined;
  }

  finish(): IngestResult {
    const stop = this.takeText(this.utf8.end()) ?? this.checkRead(this.rows.end());
    if (stop) return stop;
    const router = this.router;
    if (!router.sawContent && this.hasHeader) {
      return fail(400, "The file is empty: a header row was expected (DataOptions.Header is true).");
    }
    if (router.violations.items.length > 0) return this.violationFailure();
    const columns = router.columns();
    if (columns === undefined)
      return fail(400, "The file is empty: there are no rows to generate a TableDefinition from.");
    const delimiter = this.rows.delimiterInUse ?? ",";
    return {
      ok: true,
      rowCount: router.rowCount,
      columns,
      deliveryType: this.deliveryType,
      delimiter,
      decompressedBytes: this.decompressedBytes,
      warnings: [
        jsonNote(this.head),
        columns.length === 1 ? this.delimiterNote(delimiter) : "",
        ...(router.header ? headerWarnings(router.header, columns, !this.options.tableDefinition) : []),
      ].filter((warning) => warning !== ""),
    };
  }

  private delimiterNote(used: string): string {
    const given = this.options.dataOptions?.Delimiter !== undefined;
    return delimiterNote(this.head, this.headIsAll, used, given, this.options.tableDefinition?.Columns.length);
  }

  private keepHead(text: string): void {
    const room = HEAD_CHARS - this.head.length;
    if (text.length > room) this.headIsAll = false;
    if (room > 0) this.head += text.slice(0, room);
  }

  private takeText(decoded: DecodedText): IngestResult | undefined {
    if (decoded.ok) this.keepHead(decoded.text);
    if (decoded.ok) return this.checkRead(this.rows.push(decoded.text));
    // Parse up to the bad byte so the message can name the row it is in; a problem before it comes first.
    const before = this.checkRead(this.rows.push(decoded.validText, true)) ?? this.violationStop();
    if (before) return before;
    const where = `byte offset ${decoded.offset}${this.deliveryType === "GZIP" ? " of the decompressed data" : ""}, in ${this.router.nextRowDescription()}`;
    const what =
      decoded.byte === undefined
        ? `it ends in the middle of a character (at ${where})`
        : `byte 0x${decoded.byte.toString(16).toUpperCase().padStart(2, "0")} at ${where} is not part of a valid character`;
    return fail(400, `The file is not valid UTF-8: ${what}. Save the file as UTF-8 and upload it again.`);
  }

  // The rows themselves went to the router as they were read.
  private checkRead(read: ReadRows): IngestResult | undefined {
    if (read.ok) return undefined;
    return fail(
      400,
      `The file has a row longer than ${this.maxRowChars} characters (at ${this.router.nextRowDescription()}); usually a quoted field is never closed.`,
    );
  }

  private violationStop(): IngestResult | undefined {
    return this.router.violations.full ? this.violationFailure() : undefined;
  }

  private violationFailure(): IngestResult {
    const { items, atLimit } = this.router.violations;
    const intro = this.options.tableDefinition
      ? "The file does not match the TableDefinition"
      : "Cannot generate a TableDefinition from the file";
    const list = items.map((violation) => violation.message).join("; ");
    const stopped = atLimit ? ` (only the first ${items.length} problems are listed)` : "";
    // The cause a person needs first: a file that is not CSV at all, or rows split at the wrong character.
    const json = jsonNote(this.head);
    const fieldCounts = items.some((violation) => violation.column === undefined);
    const delimiter = !json && fieldCounts ? this.delimiterNote(this.rows.delimiterInUse ?? ",") : "";
    const message = [json, `${intro}: ${list}${stopped}.`, delimiter].filter((part) => part !== "").join(" ");
    return fail(400, message, items);
  }
}
