import type { SQLNamespace } from "@codemirror/lang-sql";
import { api, ok, type CatalogEntry } from "./api";

type ItemColumns = { AccountName: string; DatasetName: string; DataName: string; Columns: string[] }[];

/** Every visible item's columns, read in one call and kept until an upload or a delete in the console. */
let itemColumns: Promise<ItemColumns> | null = null;

/**
 * The editor's completion namespace: account → dataset → item → its
 * columns, from the catalog's datasets and one call for every item's
 * columns (GET /me/catalog/columns).
 */
export async function completionSchema(catalog: CatalogEntry[]): Promise<SQLNamespace> {
  itemColumns ??= ok(api.GET("/me/catalog/columns")).then((answer) => answer.Data.ItemList);
  const items = await itemColumns.catch((): ItemColumns => {
    itemColumns = null;
    return [];
  });
  const namespace: Record<string, Record<string, Record<string, string[]>>> = {};
  for (const entry of catalog) (namespace[entry.AccountName] ??= {})[entry.DatasetName] = {};
  for (const item of items) {
    const datasets = (namespace[item.AccountName] ??= {});
    // The editor reads a dot in a key as a level of nesting; an escaped one is part of the name (orders.csv).
    (datasets[item.DatasetName] ??= {})[item.DataName.replace(/\./g, "\\.")] = item.Columns;
  }
  return namespace;
}

/** Forgets the columns read (after an upload or a delete in a dataset), so completion reads them again. */
export function forgetColumns(): void {
  itemColumns = null;
}
