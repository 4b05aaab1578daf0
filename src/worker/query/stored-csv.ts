import { CsvRowReader, type ReadRows, type RowBatch, type RowsSink } from "../ingest/csv-rows";
import { RowSpans } from "../ingest/csv-spans";
import { openUploadBytes } from "../ingest/upload-bytes";
import { Utf8Text, type DecodedText } from "../ingest/utf8-text";
import { TransientError } from "./run-limits";
import type { TableLayout } from "./table-layout";

export const MAX_ROW_CHARS = 8 * 1024 * 1024;

/** How far a read got; `rowTooLong` when it stopped at a row over MAX_ROW_CHARS. */
export type LoadProgress =
  { ok: true; rows: number; bytes: number } | { ok: false; message: string; rowTooLong?: boolean };

/** Checked between batches: returns a message to stop loading with, or null to go on. */
export type LoadGuard = (bytesSoFar: number) => string | null;

/**
 * Streams a stored CSV (gzip decoded, header skipped) to `onRow`, one array
 * of fields per record, null for an unquoted empty field (NULL; a quoted
 * `""` is the empty string); `onRow` returning false ends the reading there. The
 * file was checked at upload, so a field that does not convert later is a
 * bug, not a user error. Storage errors are thrown as TransientError;
 * anything else wrong with the file comes back as a message. `afterChunk`
 * runs once the rows of each chunk read are taken, for a reader that hands
 * them on asynchronously (and so holds at most a chunk's rows at a time).
 */
export function readStoredCsv(
  stream: ReadableStream<Uint8Array>,
  what: { name: string; layout: Pick<TableLayout, "delimiter" | "header"> },
  guard: LoadGuard,
  onRow: (row: (string | null)[]) => void | boolean,
  afterChunk?: () => Promise<void>,
): Promise<LoadProgress> {
  return readRows(stream, what, guard, { onRow }, afterChunk);
}

/**
 * As readStoredCsv, each record read in place (csv-spans.ts: ranges of the
 * text, a string cut only for the fields asked for), which spares a string
 * per field and an array per row. The RowSpans is reused for the next record.
 */
export function readStoredCsvSpans(
  stream: ReadableStream<Uint8Array>,
  what: { name: string; layout: Pick<TableLayout, "delimiter" | "header"> },
  guard: LoadGuard,
  onRow: (row: RowSpans) => void,
  afterChunk?: () => Promise<void>,
): Promise<LoadProgress> {
  return readRows(stream, what, guard, { onSpans: onRow }, afterChunk);
}

async function readRows(
  stream: ReadableStream<Uint8Array>,
  what: { name: string; layout: Pick<TableLayout, "delimiter" | "header"> },
  guard: LoadGuard,
  to: { onRow: (row: (string | null)[]) => void | boolean } | { onSpans: (row: RowSpans) => void },
  afterChunk?: () => Promise<void>,
): Promise<LoadProgress> {
  const storageFailure = (error: unknown) =>
    new TransientError(`reading ${what.name} from storage failed: ${String(error)}`);
  // Opening reads the first bytes (to tell gzip from CSV), so a storage error can already happen here.
  const bytes = await openUploadBytes(stream).catch((error: unknown) => {
    throw storageFailure(error);
  });
  const read = async () => {
    try {
      return await bytes.read();
    } catch (error) {
      throw storageFailure(error);
    }
  };
  const utf8 = new Utf8Text();
  let skipHeader = what.layout.header;
  let rows = 0;
  let loadedBytes = 0;
  let finished = false;
  let enough = false;
  let rowTooLong = false;

  const reader = new CsvRowReader(
    what.layout.delimiter,
    MAX_ROW_CHARS,
    "onSpans" in to ? spanSink(to.onSpans) : undefined,
  );
  function spanSink(onSpans: (row: RowSpans) => void): RowsSink {
    // Rows the fast path leaves come as strings (csv-rows.ts), in file order: they are handed on the same way.
    const stringRow = new RowSpans();
    const takeSpans = (row: RowSpans): boolean => {
      if (skipHeader) skipHeader = false;
      else {
        rows++;
        onSpans(row);
      }
      return true;
    };
    return {
      takeSpans,
      takeRows: (batch: RowBatch) => {
        const quotedEmpty = batch.quotedEmpty ?? [];
        let next = 0;
        return batch.rows.every((fields, index) => {
          const quoted = quotedEmpty[next]?.row === index ? quotedEmpty[next++]!.fields : undefined;
          return takeSpans(stringRow.fill(fields, quoted));
        });
      },
    };
  }

  // With a span sink, the reader hands rows on itself and `read.rows` is empty.
  const take = (read: ReadRows): string | null => {
    if (!read.ok) {
      rowTooLong = true;
      return `a row of ${what.name} is longer than ${MAX_ROW_CHARS} characters`;
    }
    if (!("onRow" in to)) return null;
    const quotedEmpty = read.quotedEmpty ?? [];
    let nextQuoted = 0;
    for (let index = 0; index < read.rows.length; index++) {
      const quoted = quotedEmpty[nextQuoted]?.row === index ? quotedEmpty[nextQuoted++]!.fields : undefined;
      if (skipHeader) {
        skipHeader = false;
        continue;
      }
      rows++;
      if (to.onRow(withNulls(read.rows[index]!, quoted)) === false) {
        enough = true;
        break;
      }
    }
    return null;
  };
  const takeText = (decoded: DecodedText, last: boolean): string | null => {
    if (!decoded.ok) return `the stored file of ${what.name} is not valid UTF-8`;
    const problem = take(reader.push(decoded.text));
    return problem ?? (last && !enough ? take(reader.end()) : null);
  };

  try {
    for (;;) {
      const chunk = await read();
      if (chunk.kind === "bad-gzip")
        return { ok: false, message: `the stored file of ${what.name} cannot be decompressed` };
      if (chunk.kind === "end") break;
      loadedBytes += chunk.bytes.byteLength;
      const stop = guard(loadedBytes) ?? takeText(utf8.decode(chunk.bytes), false);
      if (stop) return { ok: false, message: stop, rowTooLong };
      await afterChunk?.();
      if (enough) return { ok: true, rows, bytes: loadedBytes };
    }
    finished = true;
    const problem = takeText(utf8.end(), true);
    if (problem) return { ok: false, message: problem, rowTooLong };
    await afterChunk?.();
    return { ok: true, rows, bytes: loadedBytes };
  } finally {
    if (!finished) await bytes.cancel();
  }
}

/** `fields` with each empty one that was not written `""` (`quotedEmpty`: ascending indexes) made null, in place. */
function withNulls(fields: string[], quotedEmpty: readonly number[] | undefined): (string | null)[] {
  const row: (string | null)[] = fields;
  let next = 0;
  for (let index = 0; index < row.length; index++) {
    if (row[index] !== "") continue;
    while (quotedEmpty !== undefined && quotedEmpty[next]! < index) next++;
    if (quotedEmpty?.[next] !== index) row[index] = null;
  }
  return row;
}
