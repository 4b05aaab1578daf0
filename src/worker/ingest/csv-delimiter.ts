import { FallbackParser, type Newline } from "./csv-fallback";
import type { WorkCounter } from "./work-counter";

/**
 * Which delimiter a file uses, when its schema does not say: read from the
 * first rows, as sqlite-utils and DuckDB detect it. A candidate fits when
 * it splits the first rows (the header and the rows after it, blank lines
 * skipped, quotes respected) into the same number of fields, more than one,
 * without a broken quote; the first that fits wins, comma first, so a file
 * that reads the same either way stays comma-separated. When none fits,
 * comma: a single-column file, or one whose rows do not agree anyway.
 */

/** The delimiters tried, in order of preference. */
export const DELIMITER_CANDIDATES: readonly string[] = [",", "\t", ";", "|"];

/** What to look for when detecting: with a TableDefinition, a candidate must also give its number of columns. */
export interface DelimiterDetection {
  fields?: number;
}

/** How many rows after the first the sample holds; each is compared with the first (blank lines skipped). */
export const DELIMITER_SAMPLE_ROWS = 20;

/**
 * The delimiter of `sample`, the start of a file whose line ending is
 * `newline`. `complete` says the sample is the whole file, so its last row
 * counts even without a line break; otherwise only complete rows do.
 * Linear: each candidate reads the sample once.
 */
export function detectDelimiter(
  sample: string,
  newline: Newline,
  complete: boolean,
  detection: DelimiterDetection,
  work?: WorkCounter,
): string {
  for (const candidate of DELIMITER_CANDIDATES) {
    const fields = sharedFieldCount(new FallbackParser(candidate, newline, work), sample, complete);
    if (fields !== undefined && fields > 1 && (detection.fields === undefined || fields === detection.fields))
      return candidate;
  }
  return ",";
}

/**
 * The first candidate other than `used` that fits `sample` (as
 * `detectDelimiter` decides, any number of fields above one), with its
 * number of fields; undefined when `used` fits as well (the file's problem
 * is elsewhere) or no other does. For saying that a file read with one
 * delimiter looks written with another.
 */
export function otherFittingDelimiter(
  sample: string,
  newline: Newline,
  complete: boolean,
  used: string,
): { delimiter: string; fields: number } | undefined {
  const fits = (delimiter: string) => {
    const fields = sharedFieldCount(new FallbackParser(delimiter, newline), sample, complete);
    return fields !== undefined && fields > 1 ? fields : undefined;
  };
  if (fits(used) !== undefined) return undefined;
  for (const candidate of DELIMITER_CANDIDATES) {
    const fields = candidate === used ? undefined : fits(candidate);
    if (fields !== undefined) return { delimiter: candidate, fields };
  }
  return undefined;
}

/** The number of fields every compared row has, or undefined when they differ or a quote is broken. */
function sharedFieldCount(parser: FallbackParser, sample: string, complete: boolean): number | undefined {
  const { data, errors } = parser.parse(sample, 0, !complete);
  const malformed = new Set(errors.map((error) => error.row));
  let fields: number | undefined;
  for (let index = 0, compared = 0; index < data.length && compared <= DELIMITER_SAMPLE_ROWS; index++) {
    const row = data[index]!;
    if (malformed.has(index)) return undefined;
    if (row.length === 1 && row[0] === "") continue;
    if (fields === undefined) fields = row.length;
    else if (row.length !== fields) return undefined;
    compared++;
  }
  return fields;
}
