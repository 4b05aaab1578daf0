import type { QueryLimits } from "../../config";
import type { TableStoreState } from "../store/store-state";
import type { TableLayout } from "../table-layout";
import { estimateImageBytes, type ColumnImages } from "./column-images";

/** A data item as the planner sees it: catalog figures only, nothing loaded. */
export interface PlannedItem {
  layout: TableLayout;
  rows: number;
  /** Stored bytes (gzip-compressed for a GZIP item). */
  bytes: number;
  images: ColumnImages | null;
  store: TableStoreState | null;
}

/** Which engine runs a query, decided before anything is loaded. */
export type EngineChoice = { engine: "sqljs" } | { engine: "store"; host: number } | { engine: "wait"; for: number };

/** Which columns of each item the query uses (lower-case names), or null for all. */
export type UsedColumns = (ReadonlySet<string> | null)[];

/**
 * The planner's rule, from catalog figures:
 * - A query that names an item whose table store is ready runs in that
 *   store (the largest such item's); the other items are brought in.
 * - Otherwise, when an item's store is still being built, the query runs in
 *   sql.js only if the columns it uses clearly fit the memory budget (half
 *   of it, by the column-image estimate); else it waits for the store, so
 *   it never runs in sql.js only to fail at the budget.
 * - Everything else runs in sql.js, from column images where built.
 */
export function chooseEngine(items: PlannedItem[], used: UsedColumns, limits: QueryLimits): EngineChoice {
  const largest = (indexes: number[]) => indexes.reduce((best, i) => (items[i]!.rows > items[best]!.rows ? i : best));
  const ready = items.flatMap((item, i) => (item.store?.state === "ready" ? [i] : []));
  if (ready.length > 0) return { engine: "store", host: largest(ready) };
  const building = items.flatMap((item, i) => (item.store?.state === "building" ? [i] : []));
  if (building.length === 0) return { engine: "sqljs" };
  const needed = items.reduce((sum, item, i) => sum + sqljsBytes(item, used[i]!), 0);
  if (needed <= limits.memoryBudgetBytes / 2 && needed <= limits.maxLoadBytes) return { engine: "sqljs" };
  return { engine: "wait", for: largest(building) };
}

/** Estimated bytes sql.js holds for the columns a query uses of one item. */
function sqljsBytes(item: PlannedItem, used: ReadonlySet<string> | null): number {
  const estimates = estimateImageBytes(item.layout, item.bytes, item.rows);
  const sum = item.layout.columns.reduce(
    (total, column, i) => total + (used === null || used.has(column.name.toLowerCase()) ? estimates[i]! : 0),
    0,
  );
  // A GZIP item's stored bytes undercount its rows: never estimate less than a few bytes a row.
  return Math.max(sum, item.rows * 16);
}
