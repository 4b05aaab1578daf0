import { describe, expect, it } from "vitest";
import { chooseEngine, type PlannedItem } from "../../../src/query/engine/plan";
import type { TableStoreState } from "../../../src/query/store/store-state";
import { tableLayout } from "../../../src/query/table-layout";
import { limitsWith, storedSchema, type MemoryItem } from "../../support/engine";

// The planner decides from catalog figures alone. An item of narrow columns
// is estimated at 16 bytes a row (the floor for any item), so with a budget
// of 3.2 MB, 100 000 rows is exactly half of it.

const BUDGET = 3_200_000;
const LIMITS = limitsWith({ memoryBudgetBytes: BUDGET, maxLoadBytes: 1e12 });
const HALF_BUDGET_ROWS = 100_000;

const NARROW: MemoryItem["columns"] = [["flag", "BOOLEAN"]];
const WIDE: MemoryItem["columns"] = [
  ["id", "INTEGER"],
  ["note", "STRING"],
];

function item(
  rows: number,
  store: TableStoreState | null,
  columns: MemoryItem["columns"] = NARROW,
  bytesPerRow = 6,
): PlannedItem {
  return {
    layout: tableLayout(storedSchema({ columns, data: "" })),
    rows,
    bytes: rows * bytesPerRow,
    images: null,
    store,
  };
}

const READY: TableStoreState = { state: "ready", rows: 1, bytes: 1 };
const BUILDING: TableStoreState = { state: "building" };
const FAILED: TableStoreState = { state: "failed", message: "the table store would hold more" };

describe("chooseEngine", () => {
  it("should run in the store of the only item whose store is ready", () => {
    expect(chooseEngine([item(10, null), item(5_000_000, READY)], [null, null], LIMITS)).toEqual({
      engine: "store",
      host: 1,
    });
  });

  it("should host the query in the ready store of the item with the most rows, wherever it is named", () => {
    const small = item(300_000, READY);
    const large = item(900_000, READY);

    expect(chooseEngine([small, large, item(10, null)], [null, null, null], LIMITS)).toEqual({
      engine: "store",
      host: 1,
    });
    expect(chooseEngine([large, item(10, null), small], [null, null, null], LIMITS)).toEqual({
      engine: "store",
      host: 0,
    });
  });

  it("should host the query in a ready store even when an item without one has more rows", () => {
    expect(chooseEngine([item(50_000_000, null), item(300_000, READY)], [null, null], LIMITS)).toEqual({
      engine: "store",
      host: 1,
    });
  });

  it("should run in a ready store rather than wait for another item's store being built", () => {
    expect(chooseEngine([item(90_000_000, BUILDING), item(300_000, READY)], [null, null], LIMITS)).toEqual({
      engine: "store",
      host: 1,
    });
  });

  it("should run in sql.js when no item has a store, however large", () => {
    expect(chooseEngine([item(90_000_000, null)], [null], LIMITS)).toEqual({ engine: "sqljs" });
  });

  it("should run in sql.js when the store could not be built, however large", () => {
    expect(chooseEngine([item(90_000_000, FAILED)], [null], LIMITS)).toEqual({ engine: "sqljs" });
    expect(chooseEngine([item(90_000_000, FAILED), item(10, null)], [null, null], LIMITS)).toEqual({
      engine: "sqljs",
    });
  });

  it("should run in sql.js while a store is built when the used columns fit half the memory budget, else wait", () => {
    expect(chooseEngine([item(HALF_BUDGET_ROWS, BUILDING)], [null], LIMITS)).toEqual({ engine: "sqljs" });
    expect(chooseEngine([item(HALF_BUDGET_ROWS + 1, BUILDING)], [null], LIMITS)).toEqual({ engine: "wait", for: 0 });
  });

  it("should count only the columns the query uses of an item whose store is being built", () => {
    const wide = item(HALF_BUDGET_ROWS, BUILDING, WIDE, 1000);

    expect(chooseEngine([wide], [new Set(["id"])], LIMITS)).toEqual({ engine: "sqljs" });
    expect(chooseEngine([wide], [new Set(["note"])], LIMITS)).toEqual({ engine: "wait", for: 0 });
    expect(chooseEngine([wide], [null], LIMITS)).toEqual({ engine: "wait", for: 0 });
  });

  it("should add up every item the query names, and wait for the largest store being built", () => {
    const building = item(HALF_BUDGET_ROWS / 2, BUILDING);
    const larger = item(HALF_BUDGET_ROWS * 4, BUILDING);

    expect(chooseEngine([building, item(HALF_BUDGET_ROWS / 2, null)], [null, null], LIMITS)).toEqual({
      engine: "sqljs",
    });
    expect(chooseEngine([building, item(HALF_BUDGET_ROWS / 2 + 1, null)], [null, null], LIMITS)).toEqual({
      engine: "wait",
      for: 0,
    });
    expect(chooseEngine([building, item(10, null), larger], [null, null, null], LIMITS)).toEqual({
      engine: "wait",
      for: 2,
    });
  });

  it("should wait while a store is built when the used columns exceed the load limit", () => {
    const limits = limitsWith({ memoryBudgetBytes: 1e12, maxLoadBytes: 16 * 1000 });

    expect(chooseEngine([item(1000, BUILDING)], [null], limits)).toEqual({ engine: "sqljs" });
    expect(chooseEngine([item(1001, BUILDING)], [null], limits)).toEqual({ engine: "wait", for: 0 });
  });
});
