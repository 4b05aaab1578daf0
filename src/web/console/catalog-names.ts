import type { SQLNamespace } from "@codemirror/lang-sql";
import { api, ok, type CatalogEntry } from "./api";
import { storedColumns } from "./upload-file";

/** Items and their columns, by dataset, read once; an upload or a delete in the console forgets its dataset's. */
const itemsByDataset = new Map<string, Promise<Record<string, string[]>>>();

/** Runs `work` over `inputs`, at most `limit` at a time. */
async function pool<T, R>(inputs: T[], limit: number, work: (input: T) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, inputs.length) }, async () => {
      while (next < inputs.length) {
        const index = next++;
        results[index] = await work(inputs[index]!);
      }
    }),
  );
  return results;
}

async function datasetItems(account: string, dataset: string): Promise<Record<string, string[]>> {
  const path = { AccountName: account, DatasetName: dataset };
  const list = await ok(api.GET("/dataset/{AccountName}/{DatasetName}/data", { params: { path } }));
  const names = list.Data.DataList.map((item) => item.DataName);
  const columns = await pool(names, 4, async (name) => {
    const schema = await ok(
      api.GET("/data/{AccountName}/{DatasetName}/{DataName}/metadata/schema", {
        params: { path: { ...path, DataName: name } },
      }),
    ).catch(() => null);
    return schema ? storedColumns(schema.Data.Schema).map((column) => column.name) : [];
  });
  // The editor reads a dot in a key as a level of nesting; an escaped one is part of the name (orders.csv).
  return Object.fromEntries(names.map((name, i) => [name.replace(/\./g, "\\."), columns[i]!]));
}

/**
 * The editor's completion namespace from the catalog: account → dataset →
 * item → its columns, read through the same API calls as every other page.
 */
export async function completionSchema(catalog: CatalogEntry[]): Promise<SQLNamespace> {
  const namespace: Record<string, Record<string, Record<string, string[]>>> = {};
  await pool(catalog, 4, async (entry) => {
    const key = `${entry.AccountName}/${entry.DatasetName}`;
    if (!itemsByDataset.has(key)) itemsByDataset.set(key, datasetItems(entry.AccountName, entry.DatasetName));
    const items = await itemsByDataset.get(key)!.catch(() => ({}));
    (namespace[entry.AccountName] ??= {})[entry.DatasetName] = items;
  });
  return namespace;
}

/** Forgets what was read of a dataset (after an upload or a delete), so completion reads it again. */
export function forgetDataset(account: string, dataset: string): void {
  itemsByDataset.delete(`${account}/${dataset}`);
}
