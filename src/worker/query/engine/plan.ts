import type { TableStoreState } from "../store/store-state";
import type { TableLayout } from "../table-layout";
import type { ColumnImages } from "./column-images";

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
 * - Otherwise, while an item's store is being built, the query waits for it
 *   (the largest such item's), so it never runs in sql.js only to fail at
 *   the budget; and where it would fit, reading the CSV beside the build
 *   took longer than waiting (bench/README.md).
 * - Everything else runs in sql.js, from column images where built; so does
 *   an item whose store could not be built.
 */
export function chooseEngine(items: PlannedItem[]): EngineChoice {
  const largest = (indexes: number[]) => indexes.reduce((best, i) => (items[i]!.rows > items[best]!.rows ? i : best));
  const ready = items.flatMap((item, i) => (item.store?.state === "ready" ? [i] : []));
  if (ready.length > 0) return { engine: "store", host: largest(ready) };
  const building = items.flatMap((item, i) => (item.store?.state === "building" ? [i] : []));
  if (building.length > 0) return { engine: "wait", for: largest(building) };
  return { engine: "sqljs" };
}
