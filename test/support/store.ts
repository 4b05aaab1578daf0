import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { tableStoreStub } from "../../src/worker/query/store/store-state";
import type { TableStore } from "../../src/worker/query/store/table-store";

/** The tables a version's table store holds (none once emptied; its own `_cf_…` ones aside), by name, read inside it. */
export async function storeTables(objectKey: string): Promise<string[]> {
  return runInDurableObject(tableStoreStub(env, objectKey), (_instance: TableStore, state) =>
    state.storage.sql
      .exec<{ name: string }>(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_cf\\_%' ESCAPE '\\' ORDER BY name",
      )
      .toArray()
      .map((row) => row.name),
  );
}
