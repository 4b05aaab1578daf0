import type { RowSpans, SureRow } from "./csv-spans";
import { generatedColumn, type Column } from "./data-schema";
import { clipValue, quoteForMessage } from "./quote";
import {
  INFER_ALL,
  SURE_NOTHING,
  TYPE_EXPECTATIONS,
  inferredType,
  narrowCandidates,
  sureCandidatesPattern,
  surePattern,
  valueCheck,
  type ValueCheck,
} from "./value-types";

/** One problem in the file. `row` counts data rows from 1 (header excluded), 0 being the header; `value` is cut at 200 characters. */
export interface Violation {
  row: number;
  column?: string;
  value?: string;
  message: string;
}

/** Collects violations up to a limit; the ingest stops reading once it is full. */
export class ViolationList {
  readonly items: Violation[] = [];
  private stopped = false;
  constructor(private readonly limit: number) {}

  get full(): boolean {
    return this.stopped || this.atLimit;
  }

  /** As many violations as are listed: there may be more. */
  get atLimit(): boolean {
    return this.items.length >= this.limit;
  }

  add(violation: Violation): void {
    if (!this.full) this.items.push(violation);
  }

  /** A violation after which reading on would tell nothing more (the table itself cannot be). */
  stop(violation: Violation): void {
    this.add(violation);
    this.stopped = true;
  }
}

/** Receives the data rows of the file, one at a time, in order. */
export interface RowSink {
  /** Number of fields every row must have. */
  readonly width: number;
  /** Takes a row that already has `width` fields (read in place: see csv-spans.ts). */
  accept(fields: RowSpans, row: number, violations: ViolationList): void;
  /** The rows this sink surely takes as it is (no problem, nothing new inferred), which need not be passed to `accept`. */
  sureRow(): SureRow;
}

/** Checks rows against a given TableDefinition: each value convertible, NULL only where allowed. */
export class TableValidator implements RowSink {
  readonly width: number;
  private readonly names: string[];
  private readonly nullable: boolean[];
  private readonly checks: (ValueCheck | undefined)[];
  private readonly types: Column["DataType"]["DataType"][];
  private readonly sure: SureRow;

  constructor(columns: readonly Column[]) {
    this.width = columns.length;
    this.names = columns.map((column) => column.Name);
    this.nullable = columns.map((column) => column.DataType.DataTypeOptions.Nullable);
    this.types = columns.map((column) => column.DataType.DataType);
    // STRING accepts everything, so its fields are not visited at all when the column is nullable.
    this.checks = this.types.map((type) => (type === "STRING" ? undefined : valueCheck(type)));
    this.sure = {
      version: 0,
      values: this.types.map((type, column) => ({ pattern: surePattern(type), empty: this.nullable[column]! })),
    };
  }

  sureRow(): SureRow {
    return this.sure;
  }

  accept(fields: RowSpans, row: number, violations: ViolationList): void {
    const { codes, starts, ends, quoted } = fields;
    for (let column = 0; column < this.width; column++) {
      const start = starts[column]!;
      const end = ends[column]!;
      if (start === end) {
        // A quoted "" is a value in a STRING column (the empty string), NULL in any other.
        const isNull = quoted[column] === 0 || this.types[column] !== "STRING";
        if (isNull && !this.nullable[column]) {
          violations.add({
            row,
            column: this.names[column]!,
            value: "",
            message: `row ${row}, column ${quoteForMessage(this.names[column]!)}: the value is empty, but the column is not nullable`,
          });
        }
        continue;
      }
      const check = this.checks[column];
      if (check !== undefined && !check(codes, start, end)) {
        const type = this.types[column]!;
        const value = fields.field(column);
        violations.add({
          row,
          column: this.names[column]!,
          value: clipValue(value),
          message: `row ${row}, column ${quoteForMessage(this.names[column]!)}: ${quoteForMessage(value)} is not a valid ${type} (expected ${TYPE_EXPECTATIONS[type]})`,
        });
      }
    }
  }
}

/** Works out each column's narrowest type from every non-empty value it holds. */
export class TableInference implements RowSink {
  readonly width: number;
  private readonly candidates: Uint8Array;
  private readonly sawValue: Uint8Array;
  /** The columns some type besides STRING still fits, the first `openCount` entries: the only ones looked at. */
  private readonly open: Uint32Array;
  private openCount: number;
  /** `sureRow`'s answer while nothing new was inferred; undefined after a change. */
  private sure: SureRow | undefined;
  private sureVersion = 0;

  constructor(private readonly names: readonly string[]) {
    this.width = names.length;
    this.candidates = new Uint8Array(this.width).fill(INFER_ALL);
    this.sawValue = new Uint8Array(this.width);
    this.open = Uint32Array.from(names, (_, column) => column);
    this.openCount = this.width;
  }

  accept(fields: RowSpans): void {
    const { codes, starts, ends } = fields;
    const { candidates, sawValue, open } = this;
    // Backwards, so a column that becomes STRING can be replaced by the last open one without skipping it.
    for (let index = this.openCount - 1; index >= 0; index--) {
      const column = open[index]!;
      const start = starts[column]!;
      const end = ends[column]!;
      if (start === end) continue;
      const was = candidates[column]!;
      const left = narrowCandidates(was, codes, start, end);
      if (left !== was || sawValue[column] === 0) {
        sawValue[column] = 1;
        candidates[column] = left;
        this.sure = undefined;
        if (left === 0) open[index] = open[--this.openCount]!;
      }
    }
  }

  sureRow(): SureRow {
    this.sure ??= {
      version: ++this.sureVersion,
      values: Array.from(this.candidates, (candidates, column) => ({
        pattern: this.sawValue[column] === 1 ? sureCandidatesPattern(candidates) : SURE_NOTHING,
        empty: true,
      })),
    };
    return this.sure;
  }

  /** The generated TableDefinition columns, all nullable. */
  columns(): Column[] {
    return this.names.map((name, column) =>
      generatedColumn(name, inferredType(this.candidates[column]!, this.sawValue[column] === 1)),
    );
  }
}

/** Column names for a generated table: `column_1`... without a header. */
export function positionalNames(count: number): string[] {
  return Array.from({ length: count }, (_, index) => `column_${index + 1}`);
}

/**
 * Column names for a generated table from a header row. Names are trimmed
 * (`a, b` headers are common), a blank name becomes `column_N` (N its
 * position from 1), and a repeated one gets `_2`,
 * `_3`... because SQL needs distinct names, compared ignoring letter case.
 */
export function namesFromHeader(header: readonly string[]): string[] {
  const taken = new Set<string>();
  // The next suffix to try for each base name, so that many repeats of one name stay linear.
  const nextSuffix = new Map<string, number>();
  const names: string[] = [];
  header.forEach((raw, index) => {
    const base = raw.trim() || `column_${index + 1}`;
    let name = base;
    let suffix = nextSuffix.get(base.toLowerCase()) ?? 2;
    while (taken.has(name.toLowerCase())) name = `${base}_${suffix++}`;
    nextSuffix.set(base.toLowerCase(), suffix);
    taken.add(name.toLowerCase());
    names.push(name);
  });
  return names;
}
