import { describe, expect, it } from "vitest";
import { chooseEngine, type PlannedItem } from "../../../src/worker/query/engine/plan";
import type { TableStoreState } from "../../../src/worker/query/store/store-state";
import { tableLayout } from "../../../src/worker/query/table-layout";
import { storedSchema } from "../../support/engine";

// The planner decides from catalog figures alone: which items have a table store, and in what state.

function item(rows: number, store: TableStoreState | null): PlannedItem {
  return {
    layout: tableLayout(storedSchema({ columns: [["flag", "BOOLEAN"]], data: "" })),
    rows,
    bytes: rows * 6,
    images: null,
    store,
  };
}

const READY: TableStoreState = { state: "ready", rows: 1, bytes: 1 };
const BUILDING: TableStoreState = { state: "building" };
const FAILED: TableStoreState = { state: "failed", message: "the table store would hold more" };

describe("chooseEngine", () => {
  it("should run in the store of the only item whose store is ready", () => {
    expect(chooseEngine([item(10, null), item(5_000_000, READY)])).toEqual({
      engine: "store",
      host: 1,
    });
  });

  it("should host the query in the ready store of the item with the most rows, wherever it is named", () => {
    const small = item(300_000, READY);
    const large = item(900_000, READY);

    expect(chooseEngine([small, large, item(10, null)])).toEqual({
      engine: "store",
      host: 1,
    });
    expect(chooseEngine([large, item(10, null), small])).toEqual({
      engine: "store",
      host: 0,
    });
  });

  it("should host the query in a ready store even when an item without one has more rows", () => {
    expect(chooseEngine([item(50_000_000, null), item(300_000, READY)])).toEqual({
      engine: "store",
      host: 1,
    });
  });

  it("should run in a ready store rather than wait for another item's store being built", () => {
    expect(chooseEngine([item(90_000_000, BUILDING), item(300_000, READY)])).toEqual({
      engine: "store",
      host: 1,
    });
  });

  it("should run in sql.js when no item has a store, however large", () => {
    expect(chooseEngine([item(90_000_000, null)])).toEqual({ engine: "sqljs" });
  });

  it("should run in sql.js when the store could not be built, however large", () => {
    expect(chooseEngine([item(90_000_000, FAILED)])).toEqual({ engine: "sqljs" });
    expect(chooseEngine([item(90_000_000, FAILED), item(10, null)])).toEqual({
      engine: "sqljs",
    });
  });

  it("should wait while a store is built, even for an item sql.js could hold", () => {
    expect(chooseEngine([item(300_000, BUILDING)])).toEqual({ engine: "wait", for: 0 });
    expect(chooseEngine([item(10, null), item(300_000, BUILDING)])).toEqual({ engine: "wait", for: 1 });
  });

  it("should wait for the largest of the stores being built", () => {
    expect(chooseEngine([item(300_000, BUILDING), item(10, null), item(900_000, BUILDING)])).toEqual({
      engine: "wait",
      for: 2,
    });
  });

  it("should wait for a store being built beside one that could not be built", () => {
    expect(chooseEngine([item(900_000, FAILED), item(300_000, BUILDING)])).toEqual({ engine: "wait", for: 1 });
  });
});
