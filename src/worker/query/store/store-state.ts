import { tableStoreKey } from "../../storage/keys";
import type { StoreEmptier } from "../../storage/orphans";

/** What the catalog says of a version's table store (data_items.table_store). */
export type TableStoreState =
  { state: "building" } | { state: "ready"; rows: number; bytes: number } | { state: "failed"; message: string };

/** The catalog's JSON, or null for a version without a store. */
export function parseTableStoreState(json: string | null | undefined): TableStoreState | null {
  if (!json) return null;
  try {
    const state = JSON.parse(json) as TableStoreState;
    return ["building", "ready", "failed"].includes(state?.state) ? state : null;
  } catch {
    return null;
  }
}

/** The Durable Object of one version's table store, found by the version's object key. */
export function tableStoreStub(env: Env, objectKey: string) {
  return env.TABLE_STORE.get(env.TABLE_STORE.idFromName(tableStoreKey(objectKey)));
}

/** The sweep's way to empty a table store listed as an orphan (key `table-store/<object key>`). */
export function storeEmptier(env: Env): StoreEmptier {
  return (key) => env.TABLE_STORE.get(env.TABLE_STORE.idFromName(key)).empty();
}
