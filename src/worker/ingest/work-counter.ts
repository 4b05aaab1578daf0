/**
 * Counts what the upload check looks at, so tests can show that its work
 * grows in proportion to the file on any input (a count, not a timing).
 * Each search or loop adds the span of text it covered, each decode the
 * bytes it decoded; production passes no counter.
 */
export interface WorkCounter {
  /** Characters and bytes looked at so far. */
  scanned: number;
}
