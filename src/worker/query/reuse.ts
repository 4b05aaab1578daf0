import { sha256 } from "../util/crypto";
import { isoSeconds } from "../util/time";
import { resolve, type QuerySource } from "./engine/evaluate-sql";
import { findReusable } from "./history";
import type { QueryEnd, QueryRow } from "./query-record";
import type { QueryText } from "./query-text";
import { canonicalParameters } from "./sql/parameters";
import type { DataItemReference } from "./sql/table-names";
import { asciiLowerCase, isIdentifier, isKeyword, isOperator, significantTokens, tokenize } from "./sql/tokenizer";
import { plural } from "../util/text";

/**
 * Result reuse (docs/api.md): a query with the same SQL text, the same
 * parameters and the same versions of every data item it names answers
 * from the retained result of an earlier one, if its caller may read every
 * one of those items.
 *
 * The key is computed twice, by one function: by the engine when a run
 * succeeds, from the versions it actually read (so a version replaced
 * between submit and run is never mistaken for the one read), and at submit,
 * from the versions the names resolve to now, through the caller's view of
 * the catalog (the engine's own resolver). A new version, a deleted item or
 * a revoked grant therefore never finds an earlier result.
 */

/** A data item a query read, by the name it wrote, and the stored object of the version it read. */
export interface ReadVersion {
  reference: Pick<DataItemReference, "account" | "dataset" | "data">;
  /** `data/<dataset id>/<version>`: every upload writes a new one, so it names exactly one version. */
  objectKey: string;
}

/** Raised when what a key means changes (a new result format, say), so older results are no longer found. */
const KEY_FORMAT = "dqs-reuse-2";

/**
 * Functions whose value does not follow from the query and its data: the
 * random ones, and the date and time functions, any of which reads the clock
 * when given 'now' (from the text, a parameter or a column).
 */
const VOLATILE_FUNCTIONS = new Set([
  "random",
  "randomblob",
  "date",
  "time",
  "datetime",
  "julianday",
  "unixepoch",
  "strftime",
  "timediff",
  "changes",
  "total_changes",
  "last_insert_rowid",
]);

/**
 * Whether a query's result may be reused: it calls none of the volatile
 * functions and uses no CURRENT_DATE, CURRENT_TIME or CURRENT_TIMESTAMP. SQL
 * the tokenizer refuses fails anyway, and is not reused.
 */
export function isReusable(sql: string): boolean {
  const tokenized = tokenize(sql);
  if (!tokenized.ok) return false;
  const tokens = significantTokens(tokenized.tokens);
  return !tokens.some(
    (token, k) =>
      isKeyword(token, "CURRENT_DATE", "CURRENT_TIME", "CURRENT_TIMESTAMP") ||
      (isIdentifier(token) && isOperator(tokens[k + 1], "(") && VOLATILE_FUNCTIONS.has(asciiLowerCase(token.value))),
  );
}

/** The reuse key of a query that read these versions; null when its result may not be reused. */
export async function reuseKey(query: QueryText, read: ReadVersion[]): Promise<string | null> {
  if (!isReusable(query.sql)) return null;
  const versions = read
    .map(({ reference, objectKey }) =>
      JSON.stringify([reference.account, reference.dataset, reference.data, objectKey]),
    )
    .sort();
  return sha256(JSON.stringify([KEY_FORMAT, query.sql, canonicalParameters(query.parameters), versions]));
}

/** A result kept for less than this (or half the retention time, if shorter) is not offered: it would go too soon. */
const MIN_REMAINING_SECONDS = 3600;

/**
 * The earlier query whose result a query may answer from at `now` (epoch
 * seconds), or null: its names are resolved as the engine resolves them,
 * each found by `find` as the caller may read it (one that is missing or
 * unreadable finds nothing), and the result must be kept for a while yet.
 */
export async function findReusableResult(
  db: D1Database,
  query: QueryText,
  find: QuerySource["find"],
  now: number,
  retentionSeconds: number,
): Promise<(QueryRow & { end: QueryEnd }) | null> {
  if (!isReusable(query.sql)) return null;
  const resolved = await resolve(query, { find });
  if (!resolved.ok) return null;
  const key = await reuseKey(
    query,
    resolved.references.map((reference, i) => ({ reference, objectKey: resolved.items[i]!.objectKey })),
  );
  if (!key) return null;
  const margin = Math.min(MIN_REMAINING_SECONDS, Math.floor(retentionSeconds / 2));
  const source = await findReusable(db, key, isoSeconds(now + margin));
  return source?.end ? { ...source, end: source.end } : null;
}

/**
 * How a query that reuses `source`'s result ends, at once (`now` in epoch
 * seconds): the result's figures (size, rows, columns, object), nothing
 * loaded and no timings or engine, since it did not run; kept no longer
 * than its source's result, nor than the retention time from now.
 */
export function reusedEnd(source: QueryEnd, now: number, retentionSeconds: number): QueryEnd {
  const ownExpiry = isoSeconds(now + retentionSeconds);
  const expiresAt = source.expiresAt && source.expiresAt < ownExpiry ? source.expiresAt : ownExpiry;
  return {
    status: "succeeded",
    message: `Succeeded: ${plural(source.rowCount ?? 0, "row")}, ${plural(source.size, "byte")}, reused from an identical earlier query.`,
    updatedAt: isoSeconds(now),
    size: source.size,
    rowCount: source.rowCount,
    bytesLoaded: 0,
    peakMemoryBytes: null,
    timings: null,
    engine: null,
    resultKey: source.resultKey,
    resultColumns: source.resultColumns,
    expiresAt,
    reuseKey: null,
  };
}
