import * as Papa from "papaparse";
import { RowSpans, scanPlainRows, type SpanSink } from "./csv-spans";

/**
 * Splits CSV text that arrives in pieces into rows, with papaparse's
 * low-level `Papa.Parser`, so that the rows do not depend on where the
 * pieces were cut. Papa's own streamers do the same for files and Node
 * streams; this one takes text pushed by a caller that owns the byte stream.
 *
 * How: the text after the last complete row is kept and parsed again with
 * the next piece (`ignoreLastRow`), exactly as papaparse's ChunkStreamer
 * does. Pieces are batched to `MIN_PARSE_CHARS` so small network or
 * decompression chunks do not each pay a parser call, and when a batch
 * completes no row (one very long quoted field), the next attempt waits
 * until the kept text has doubled, which keeps the work linear.
 *
 * With a `SpanSink`, plain rows skip papaparse: they are read in place by
 * csv-spans.ts and handed to the sink as they are found, before (and so in
 * file order with) the rows `push` returns, which papaparse read from the
 * first row the fast path did not take.
 */

/** The shape of what `Papa.Parser.parse` returns (its typings say `any`). */
interface PapaChunkResult {
  data: string[][];
  errors: { code: string; row: number }[];
  meta: { cursor: number };
}

/** Rows completed by a piece of text; `malformedRows` lists indexes into `rows` whose quoting is broken. */
export interface RowBatch {
  rows: string[][];
  malformedRows: readonly number[];
}

export type ReadRows = ({ ok: true } & RowBatch) | { ok: false; reason: "row-too-long" };

type Newline = "\n" | "\r\n" | "\r";

const MIN_PARSE_CHARS = 64 * 1024;
const NO_ROWS: ReadRows = { ok: true, rows: [], malformedRows: [] };
const QUOTE = 34;
const LF = 10;
const CR = 13;

/** Streaming CSV row splitter over papaparse; feed it with `push` and close it with `end`. */
export class CsvRowReader {
  private parser: Papa.Parser | undefined;
  private newline: Newline | undefined;
  private pending = "";
  private parseAt = MIN_PARSE_CHARS;
  // Where the line-ending scan stopped, and the quoting state there.
  private scanAt = 0;
  private scanInQuotes = false;
  private scanAtFieldStart = true;
  private readonly spans = new RowSpans();

  /** `maxRowChars` bounds the text kept for one row, so an unclosed quote cannot hold the whole file in memory. */
  constructor(
    private readonly delimiter: string,
    private readonly maxRowChars: number,
    private readonly spanSink?: SpanSink,
  ) {}

  /** Adds text; with `flush`, parses now instead of waiting for a full batch. Returns the rows it completed. */
  push(text: string, flush = false): ReadRows {
    this.pending = this.pending === "" ? text : this.pending + text;
    if (this.parser === undefined) {
      const newline = this.detectNewline(false);
      if (newline === undefined)
        return this.pending.length > this.maxRowChars ? { ok: false, reason: "row-too-long" } : NO_ROWS;
      this.startParser(newline);
    }
    if (!flush && this.pending.length < this.parseAt) return NO_ROWS;
    return this.parsePending(false);
  }

  /**
   * Parses what is left at the end of the file: a last row without a line
   * break. A line break at the very end closes the last row; it does not
   * open an empty one, so the rows never depend on how the text was cut.
   */
  end(): ReadRows {
    if (this.parser === undefined) this.startParser(this.detectNewline(true) ?? "\n");
    const complete = this.parsePending(false);
    if (!complete.ok || this.pending === "") return complete;
    const last = this.parsePending(true);
    if (!last.ok || complete.rows.length === 0) return last;
    return {
      ok: true,
      rows: [...complete.rows, ...last.rows],
      malformedRows: [...complete.malformedRows, ...last.malformedRows.map((index) => index + complete.rows.length)],
    };
  }

  private startParser(newline: Newline): void {
    this.newline = newline;
    this.parser = new Papa.Parser({ delimiter: this.delimiter, newline, quoteChar: '"' });
  }

  private parsePending(final: boolean): ReadRows {
    if (this.pending === "") return NO_ROWS;
    if (!final && this.spanSink && this.newline !== "\r") {
      const { consumed, stop } = scanPlainRows(this.pending, this.delimiter, this.newline!, this.spans, this.spanSink);
      if (consumed > 0) {
        this.pending = this.pending.slice(consumed);
        this.parseAt = MIN_PARSE_CHARS;
      }
      if (stop === "stopped") return NO_ROWS;
      // What is left is the start of a row (no complete row, as papaparse would find too).
      if (stop === "incomplete") return consumed > 0 ? NO_ROWS : this.noCompleteRow(this.pending.length);
    }
    const result: PapaChunkResult = this.parser!.parse(this.pending, 0, !final);
    const rows = result.data;
    if (final) {
      this.pending = "";
    } else if (rows.length === 0) {
      const tooLong = this.noCompleteRow(this.pending.length - result.meta.cursor);
      if (!tooLong.ok) return tooLong;
    } else {
      this.pending = this.pending.slice(result.meta.cursor);
      this.parseAt = MIN_PARSE_CHARS;
    }
    if (this.newline === "\n") stripCarriageReturns(rows);
    return { ok: true, rows, malformedRows: malformedRowIndexes(result.errors, rows.length) };
  }

  /** The kept text holds no complete row: fail if it is already too long, else wait until it has doubled. */
  private noCompleteRow(rest: number): ReadRows {
    if (rest > this.maxRowChars) return { ok: false, reason: "row-too-long" };
    this.parseAt = Math.min(Math.max(MIN_PARSE_CHARS, rest * 2), this.maxRowChars + 1);
    return NO_ROWS;
  }

  /**
   * Picks the file's line ending from its first line break outside quotes,
   * like papaparse's own guess but without needing the whole first chunk.
   * Returns undefined while the text seen so far cannot tell yet.
   */
  private detectNewline(atEnd: boolean): Newline | undefined {
    const text = this.pending;
    const delimiter = this.delimiter.charCodeAt(0);
    let inQuotes = this.scanInQuotes;
    let atFieldStart = this.scanAtFieldStart;
    let i = this.scanAt;
    for (; i < text.length; i++) {
      const code = text.charCodeAt(i);
      if (inQuotes) {
        if (code !== QUOTE) continue;
        // A quote as the last character may be the first half of an escaped "".
        if (i + 1 === text.length) break;
        if (text.charCodeAt(i + 1) === QUOTE) i++;
        else inQuotes = false;
        continue;
      }
      if (code === QUOTE && atFieldStart) {
        inQuotes = true;
        atFieldStart = false;
        continue;
      }
      if (code === LF) return "\n";
      if (code === CR) {
        if (i + 1 < text.length) return text.charCodeAt(i + 1) === LF ? "\r\n" : "\r";
        break;
      }
      atFieldStart = code === delimiter;
    }
    this.scanAt = i;
    this.scanInQuotes = inQuotes;
    this.scanAtFieldStart = atFieldStart;
    if (!atEnd) return undefined;
    return i < text.length && text.charCodeAt(i) === CR ? "\r" : undefined;
  }
}

// A file detected as LF-separated may still end some lines with CRLF; the CR is not data.
function stripCarriageReturns(rows: string[][]): void {
  for (const row of rows) {
    const last = row.length - 1;
    const field = row[last]!;
    if (field.charCodeAt(field.length - 1) === CR) row[last] = field.slice(0, -1);
  }
}

function malformedRowIndexes(errors: PapaChunkResult["errors"], rowCount: number): readonly number[] {
  if (errors.length === 0) return [];
  const indexes = new Set<number>();
  // Errors on the unfinished last row are dropped: that row is parsed again with more text.
  for (const error of errors) if (error.row < rowCount) indexes.add(error.row);
  return [...indexes];
}
