import { readableItemNames, type Viewer } from "../catalog/access";
import type { QueryLimits } from "../config";
import type { DataTypeName } from "../ingest/value-types";
import { imagesToFetch } from "./engine/attach-images";
import { declaredColumnTypes, keptDataType } from "./engine/declared-types";
import { createTable } from "./engine/load-table";
import { chooseEngine } from "./engine/plan";
import {
  columnNames,
  estimateSeconds,
  fromImages,
  nameOf,
  namingAsTheUserDid,
  overEstimate,
  pastTimeLimit,
  resolve,
  type LoadableItem,
} from "./engine/evaluate-sql";
import { sampleItem } from "./engine/samples";
import { findQueryItem } from "./run-claimed-query";
import { queryTextProblem, type QueryText } from "./query-text";
import { checkReadOnly } from "./sql/read-only";
import { sqliteInstanceFor } from "./sqlite";

/** A result column as validation sees it: its type where SQLite knows it before running, else null. */
export interface ValidatedColumn {
  name: string;
  type: DataTypeName | null;
}

/** A data item a query names, and the bytes the query would read of it from storage. */
export interface ValidatedItem {
  account: string;
  dataset: string;
  data: string;
  version: string;
  bytes: number;
}

export interface Validation {
  valid: boolean;
  message: string;
  columns: ValidatedColumn[];
  dataItems: ValidatedItem[];
  engine: "sqljs" | "store" | null;
  /** Seconds the run would take, estimated from samples (engine/estimate.ts); null when unknown. */
  estimatedSeconds: number | null;
}

/** A validation that found the query invalid: its message, and what it found before that. */
export function invalid(message: string, more: Partial<Validation> = {}): Validation {
  return { valid: false, message, columns: [], dataItems: [], engine: null, estimatedSeconds: null, ...more };
}

/**
 * What running the query would find, without running it: the same checks,
 * in the same order and with the same messages, as `POST /v1/query` (400)
 * and the engine before it loads anything (evaluate-sql.ts): the request, the
 * names through `viewer`'s view of the catalog, the parameters, the plan,
 * and one read-only statement prepared on empty tables of the right types;
 * then the estimate of its time, from runs on samples of its data items.
 */
export async function validateQuery(
  env: Env,
  viewer: Viewer,
  query: QueryText,
  limits: QueryLimits,
): Promise<Validation> {
  const problem = queryTextProblem(query, limits.maxSqlLength);
  if (problem) return invalid(problem);
  const versions = new Map<LoadableItem, string>();
  const resolved = await resolve(query, {
    async find(reference) {
      const item = await findQueryItem(env, viewer, reference);
      if (item) versions.set(item, item.version);
      return item;
    },
    readableNames: (reference, most) => readableItemNames(env.DB, viewer, reference.account, reference.dataset, most),
  });
  if (!resolved.ok) return invalid(resolved.message);

  const choice = chooseEngine(resolved.items);
  const host = choice.engine === "store" ? choice.host : choice.engine === "wait" ? choice.for : null;
  const images = fromImages(resolved.items, resolved.used);
  const dataItems = resolved.references.map((reference, i): ValidatedItem => {
    const item = resolved.items[i]!;
    return {
      account: reference.account,
      dataset: reference.dataset,
      data: reference.data,
      version: versions.get(item) ?? "",
      bytes: bytesToRead(item, resolved.used[i]!, host === null ? images[i]! : false, i === host),
    };
  });
  const engine = host === null ? "sqljs" : "store";
  const userFacing = namingAsTheUserDid(resolved.references, resolved.items);

  const instance = await sqliteInstanceFor(limits.memoryBudgetBytes);
  const db = new instance.sql.Database();
  try {
    resolved.references.forEach((reference, i) =>
      createTable(db, { name: reference.alias, layout: resolved.items[i]!.layout, columns: resolved.used[i]! }),
    );
    const readOnly = checkReadOnly(db, resolved.sql);
    if (!readOnly.ok) return invalid(userFacing(`Failed: ${readOnly.message}.`), { dataItems, engine });
    const names = columnNames(db, resolved.sql);
    // Types are a help; the query is valid without them.
    const types = declaredColumnTypes(db, resolved.tokens, query.parameters).map(dataTypeOf);
    const columns = names.map((name, i) => ({ name, type: types[i] ?? null }));
    const where =
      host === null
        ? "sql.js"
        : `the table store of ${nameOf(resolved.references[host]!)}${choice.engine === "wait" ? " once it is built" : ""}`;
    const bytes = dataItems.reduce((sum, item) => sum + item.bytes, 0);
    // A sample that cannot be read leaves the estimate unknown; the query is valid all the same.
    const estimate = await estimateSeconds(instance, resolved, host, (item, used, count) =>
      sampleItem(env, item, used, count),
    ).catch(() => null);
    const seconds = estimate && Math.round(estimate.seconds * 1000) / 1000;
    // As the engine: a query estimated past the time limit in a table store is not started.
    if (estimate && host !== null && pastTimeLimit(estimate, limits))
      return invalid(overEstimate(estimate, limits, nameOf(resolved.references[host]!)), {
        columns,
        dataItems,
        engine,
        estimatedSeconds: seconds,
      });
    const about = estimate
      ? `, for ${estimate.atLeast ? "at least" : "about"} ${seconds} s (estimated from samples)`
      : "";
    return {
      valid: true,
      message: `Valid: ${columns.length} column${columns.length === 1 ? "" : "s"}; it would run in ${where} and read ${bytes} bytes from storage${about}.`,
      columns,
      dataItems,
      engine,
      estimatedSeconds: seconds,
    };
  } catch (error) {
    // As the engine: SQLite's own errors on the empty tables (too many columns, …).
    return invalid(userFacing(`Failed: ${error instanceof Error ? error.message : String(error)}.`), {
      dataItems,
      engine,
    });
  } finally {
    db.close();
  }
}

/**
 * Bytes the query would read of an item from storage: in its own table
 * store none; in sql.js the column images it attaches; otherwise the stored
 * file (read into sql.js, or brought into another item's table store).
 */
function bytesToRead(
  item: LoadableItem,
  used: ReadonlySet<string> | null,
  fromImages: boolean,
  isHost: boolean,
): number {
  if (isHost) return 0;
  if (fromImages && item.images) {
    const { fetch } = imagesToFetch({ layout: item.layout, columns: used }, item.images);
    return fetch.reduce((sum, index) => sum + item.images!.columns[index]!.bytes, 0);
  }
  return item.bytes;
}

/**
 * The result type of a declared type: a data item's BOOLEAN, DATE or TIMESTAMP column as the result schema
 * keeps it, else by SQLite's affinity rules; NUMERIC and none leave it to the values.
 */
function dataTypeOf(declared: string): ValidatedColumn["type"] {
  const kept = keptDataType(declared);
  if (kept) return kept;
  const type = declared.toUpperCase();
  if (type.includes("INT")) return "INTEGER";
  if (/CHAR|CLOB|TEXT/.test(type)) return "STRING";
  if (type === "" || type.includes("BLOB")) return null;
  if (/REAL|FLOA|DOUB/.test(type)) return "DOUBLE";
  return null;
}
