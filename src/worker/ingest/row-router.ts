import { MAX_COLUMN_NAME_CHARS, MAX_COLUMNS, type Column, type TableDefinition } from "./data-schema";
import type { RowBatch, RowsSink } from "./csv-rows";
import { RowSpans, type SureRow } from "./csv-spans";
import {
  TableInference,
  TableValidator,
  ViolationList,
  namesFromHeader,
  positionalNames,
  type RowSink,
} from "./table-check";
import { plural } from "../util/text";

// A blank line is a row with one empty field; kept as one shared value so deferring it allocates nothing.
const BLANK_ROW: readonly string[] = [""];

/**
 * Sends parsed rows where they belong: the first one to the header (when
 * the file has one), the rest to the table check or inference, counting
 * data rows from 1. Blank lines before the first row and after the last
 * are ignored; blank lines in between are rows (NULL in a one-column
 * table, a field-count violation otherwise).
 *
 * Rows come either as strings (`takeRows`, from csv-fallback.ts) or, on
 * the fast path, as ranges of the text (`takeSpans`); a plain data row of
 * the right width goes straight to the check, anything else takes the
 * string route.
 */
export class RowRouter implements RowsSink {
  /** Data rows accepted so far (header excluded). */
  rowCount = 0;
  /** Whether any non-blank line was seen. */
  sawContent = false;
  /** The header row's fields as read, once it was (for the upload's warnings). */
  header: readonly string[] | undefined;
  readonly violations: ViolationList;
  private sink: RowSink | undefined;
  private inference: TableInference | undefined;
  private headerPending: boolean;
  private blankRun = 0;
  private readonly stringRow = new RowSpans();

  constructor(
    private readonly tableDefinition: TableDefinition | undefined,
    hasHeader: boolean,
    maxViolations: number,
  ) {
    this.headerPending = hasHeader;
    this.violations = new ViolationList(maxViolations);
    if (tableDefinition) this.sink = new TableValidator(tableDefinition.Columns);
  }

  /** Routes a batch of rows; stops early, and returns false, once the violation list is full. */
  takeRows(batch: RowBatch): boolean {
    const { rows, malformedRows, quotedEmpty = [] } = batch;
    // malformedRows and quotedEmpty are ascending: walking them alongside keeps a batch of many such rows linear.
    let nextMalformed = 0;
    let nextQuotedEmpty = 0;
    for (let index = 0; index < rows.length; index++) {
      const fields = rows[index]!;
      const malformed = malformedRows[nextMalformed] === index;
      if (malformed) nextMalformed++;
      const quoted = quotedEmpty[nextQuotedEmpty]?.row === index ? quotedEmpty[nextQuotedEmpty++]!.fields : undefined;
      // A line holding only "" is a row (an empty string), not a blank line.
      if (fields.length === 1 && fields[0] === "" && !malformed && quoted === undefined) {
        // Only counted once something follows, so trailing blank lines vanish.
        if (this.sawContent) this.blankRun++;
        continue;
      }
      this.sawContent = true;
      for (; this.blankRun > 0; this.blankRun--) this.route(BLANK_ROW, false);
      this.route(fields, malformed, quoted);
      if (this.violations.full) return false;
    }
    return true;
  }

  /** Routes one row read in place; false once the violation list is full. */
  takeSpans(row: RowSpans): boolean {
    const sink = this.sink;
    const blank = row.count === 1 && row.isNull(0);
    if (sink === undefined || this.headerPending || this.blankRun > 0 || blank || row.count !== sink.width) {
      const quoted = row.quotedEmptyFields();
      this.takeRows({ rows: [row.fields()], malformedRows: [], quotedEmpty: quoted && [{ row: 0, fields: quoted }] });
    } else {
      this.sawContent = true;
      sink.accept(row, ++this.rowCount, this.violations);
    }
    return !this.violations.full;
  }

  /** The rows the sink surely takes as they are, while rows go straight to it (no header or blank lines pending). */
  sureRow(): SureRow | undefined {
    return this.sink === undefined || this.headerPending || this.blankRun > 0 ? undefined : this.sink.sureRow();
  }

  /** Counts a row that matched `sureRow`: the sink would have taken it without a problem or a change. */
  takeSureRow(): boolean {
    this.sawContent = true;
    this.rowCount++;
    return true;
  }

  /** Where the next row would be, for messages: "the header row" or "data row N". */
  nextRowDescription(): string {
    return this.headerPending ? "the header row" : `data row ${this.rowCount + this.blankRun + 1}`;
  }

  /** Columns of the table: the given ones, or the generated ones (undefined when no row defined them). */
  columns(): Column[] | undefined {
    return this.tableDefinition?.Columns ?? this.inference?.columns();
  }

  private route(fields: readonly string[], malformed: boolean, quotedEmpty?: readonly number[]): void {
    if (this.headerPending) {
      this.headerPending = false;
      this.takeHeader(fields, malformed);
      return;
    }
    if (this.sink === undefined) {
      if (fields.length > MAX_COLUMNS) return this.violations.stop(tooWide("the first row", fields.length));
      this.sink = this.startInference(positionalNames(fields.length));
    }
    const row = ++this.rowCount;
    if (malformed) {
      this.violations.add({ row, message: `row ${row}: ${MALFORMED_QUOTES}` });
    } else if (fields.length !== this.sink.width) {
      const why =
        fields === BLANK_ROW
          ? " (the line is blank)"
          : fields.some((field) => field.includes("\r") || field.includes("\n"))
            ? " (a value holds a line break: if the file mixes line endings, save it with one kind)"
            : "";
      this.violations.add({
        row,
        message: `row ${row} has ${plural(fields.length, "field")}${why}, expected ${this.sink.width}`,
      });
    } else {
      this.sink.accept(this.stringRow.fill(fields, quotedEmpty), row, this.violations);
    }
  }

  private takeHeader(fields: readonly string[], malformed: boolean): void {
    this.header = fields;
    if (malformed) this.violations.add({ row: 0, message: `the header row: ${MALFORMED_QUOTES}` });
    if (this.sink === undefined) {
      if (fields.length > MAX_COLUMNS) return this.violations.stop(tooWide("the header row", fields.length));
      const long = fields.findIndex((field) => field.trim().length > MAX_COLUMN_NAME_CHARS);
      if (long >= 0)
        return this.violations.stop({
          row: 0,
          message: `the header row's field ${long + 1} is ${plural(fields[long]!.trim().length, "character")} long, longer than a column name may be (${MAX_COLUMN_NAME_CHARS}); if the file has no header row, send a Schema with DataOptions.Header false`,
        });
      this.sink = this.startInference(namesFromHeader(fields));
    } else if (fields.length !== this.sink.width) {
      this.violations.add({
        row: 0,
        message: `the header row has ${plural(fields.length, "field")}, but the TableDefinition has ${plural(this.sink.width, "column")}`,
      });
    }
  }

  private startInference(names: string[]): TableInference {
    this.inference = new TableInference(names);
    return this.inference;
  }
}

function tooWide(where: string, fields: number): { row: number; message: string } {
  return { row: 0, message: `${where} has ${plural(fields, "field")}; a table has at most ${MAX_COLUMNS} columns` };
}

const MALFORMED_QUOTES =
  "a quoted field is not closed properly (a field that starts with a double quote must end with one, followed by the delimiter or a line break; a quote inside it is written twice)";
