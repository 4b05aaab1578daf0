// Long enough to recognise a value, short enough that a message stays one readable line.
const MAX_QUOTED_CHARS = 60;

/**
 * A user's value for an error message: single-quoted, cut after 60
 * characters with "…", and with line breaks and other control characters
 * escaped so a message never spans lines.
 */
export function quoteForMessage(value: string): string {
  const cut = value.length > MAX_QUOTED_CHARS ? `${value.slice(0, MAX_QUOTED_CHARS)}…` : value;
  // JSON escaping covers control characters; the surrounding double quotes are swapped for single ones.
  return `'${JSON.stringify(cut).slice(1, -1)}'`;
}

// Enough of a value to find it in the file without carrying megabytes in a report.
const MAX_REPORTED_VALUE_CHARS = 200;

/** A value as kept in a violation report: cut after 200 characters with "…". */
export function clipValue(value: string): string {
  return value.length > MAX_REPORTED_VALUE_CHARS ? `${value.slice(0, MAX_REPORTED_VALUE_CHARS)}…` : value;
}
