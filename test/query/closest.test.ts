import { describe, expect, it } from "vitest";
import { closest, didYouMean } from "../../src/worker/util/closest";

const one = (name: string) => [name];

describe("closest", () => {
  it("should find names a few edits away and names the written one starts, best first", () => {
    expect(closest(["temp"], ["date", "temp_max", "temp_min", "wind"], one)).toEqual(["temp_max", "temp_min"]);
    expect(closest(["amout"], ["amount", "account", "id"], one)).toEqual(["amount"]);
    expect(closest(["seatle-weather.csv"], ["seattle-weather.csv", "stocks.csv"], one)).toEqual([
      "seattle-weather.csv",
    ]);
  });

  it("should find nothing for a name far from every candidate, or one that is the candidate itself", () => {
    expect(closest(["zzz"], ["amount", "id"], one)).toEqual([]);
    expect(closest(["id"], ["id"], one)).toEqual([]);
  });

  it("should compare names part by part, counting only the parts that differ", () => {
    const items = [
      ["dana", "demo", "stocks.csv"],
      ["dana", "demo", "seattle-weather.csv"],
      ["erin", "demo", "seattle-weather.csv"],
    ];

    expect(closest(["dana", "demo", "seatle-weather.csv"], items, (parts) => parts)).toEqual([
      ["dana", "demo", "seattle-weather.csv"],
    ]);
    expect(closest(["dana", "dem", "stocks.csv"], items, (parts) => parts)).toEqual([["dana", "demo", "stocks.csv"]]);
  });

  it("should give a name differing only in letter case first", () => {
    expect(closest(["Orders"], ["order", "orders"], one)).toEqual(["orders", "order"]);
  });

  it("should keep at most three, and compare no name longer than a person types", () => {
    expect(closest(["ab_x"], ["ab_1", "ab_2", "ab_3", "ab_4"], one)).toHaveLength(3);
    expect(closest(["a".repeat(300)], ["a".repeat(299)], one)).toEqual([]);
  });
});

describe("didYouMean", () => {
  it("should list the names as a question, or say nothing", () => {
    expect(didYouMean([])).toBe("");
    expect(didYouMean(["a"])).toBe(" Did you mean a?");
    expect(didYouMean(["a", "b", "c"])).toBe(" Did you mean a, b or c?");
  });
});
